"""Netlink building blocks (pyroute2): namespaces, veths, addresses, sysctls.

pyroute2 0.9 drives its sockets with an asyncio loop of the calling thread, which
fails in a thread whose loop is already running (a Jupyter kernel). Every public
function here therefore runs in a short-lived worker thread in that case.
"""
from __future__ import annotations

import asyncio
import functools
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

from pyroute2 import IPRoute, netns

from nfvlab.system import signals


def _off_running_loop(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return fn(*args, **kwargs)
        with ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(fn, *args, **kwargs).result()

    return wrapper


@contextmanager
def ipr_in(ns_name: Optional[str]) -> Iterator[IPRoute]:
    """A netlink socket bound to namespace ``ns_name`` (``None``: the host's own namespace).

    Created while this thread is switched into the namespace (a socket stays in
    the namespace it was made in); cheaper and safer than pyroute2's NetNS,
    which forks a helper process per socket.
    """
    # A SIGINT/SIGTERM raised inside pyroute2's set-up would leave a half-built event loop (its
    # __del__ then fails) or this thread in the namespace: it is held until the socket exists.
    with signals.deferred():
        if ns_name is None:
            ipr = IPRoute()
        else:
            netns.pushns(ns_name)
            try:
                ipr = IPRoute()
            finally:
                netns.popns()
    try:
        signals.checkpoint()  # the held signal, now that there is a socket to close
        yield ipr
    finally:
        with signals.deferred():
            ipr.close()


@_off_running_loop
def create_namespace(name: str) -> None:
    netns.create(name)
    # No IPv6 (no router/neighbour solicitations) and no stray traffic on lab links.
    set_sysctl(name, "net/ipv6/conf/all/disable_ipv6", "1")
    set_sysctl(name, "net/ipv6/conf/default/disable_ipv6", "1")
    with ipr_in(name) as ns:
        ns.link("set", index=ns.link_lookup(ifname="lo")[0], state="up")


@contextmanager
def inside(ns_name: str) -> Iterator[None]:
    """Run the block with this thread in network namespace ``ns_name``."""
    netns.pushns(ns_name)
    try:
        yield
    finally:
        netns.popns()


@_off_running_loop
def set_sysctl(ns_name: str, key: str, value: str) -> None:
    """Write /proc/sys/<key> as seen from namespace ``ns_name``."""
    with inside(ns_name):
        Path("/proc/sys", key).write_text(value)


@_off_running_loop
def veth(ns_a: Optional[str], name_a: str, ns_b: Optional[str], name_b: str, mtu: int) -> None:
    """A veth pair with end ``name_a`` in ``ns_a`` and ``name_b`` in ``ns_b`` (``None``: the host's), both up."""
    if ns_b is None and ns_a is not None:  # create it on the host's side, the peer moved into ns_a
        ns_a, name_a, ns_b, name_b = ns_b, name_b, ns_a, name_a
    with ipr_in(ns_a) as ipr:
        peer = {"ifname": name_b} if ns_b is None else {"ifname": name_b, "net_ns_fd": ns_b}
        ipr.link("add", ifname=name_a, kind="veth", peer=peer)
    for ns, name in ((ns_a, name_a), (ns_b, name_b)):
        with ipr_in(ns) as ipr:
            idx = ipr.link_lookup(ifname=name)[0]
            ipr.link("set", index=idx, mtu=mtu, state="up")


def link_index(ipr: IPRoute, name: str) -> int:
    found = ipr.link_lookup(ifname=name)
    if not found:
        raise LookupError(f"no interface {name!r}")
    return found[0]


@_off_running_loop
def mac(ns_name: str, ifname: str) -> str:
    with ipr_in(ns_name) as ipr:
        return ipr.get_links(link_index(ipr, ifname))[0].get("IFLA_ADDRESS")


@_off_running_loop
def link_exists(ns_name: Optional[str], ifname: str) -> bool:
    if ns_name is not None and ns_name not in netns.listnetns():
        return False
    with ipr_in(ns_name) as ipr:
        return bool(ipr.link_lookup(ifname=ifname))


@_off_running_loop
def link_mtu(ns_name: str, ifname: str) -> int:
    with ipr_in(ns_name) as ipr:
        return ipr.get_links(link_index(ipr, ifname))[0].get("IFLA_MTU")


@_off_running_loop
def add_address(ns_name: Optional[str], ifname: str, cidr: str) -> None:
    addr, plen = cidr.split("/")
    with ipr_in(ns_name) as ipr:
        ipr.addr("add", index=link_index(ipr, ifname), address=addr, prefixlen=int(plen))


@_off_running_loop
def add_neighbour(ns_name: Optional[str], ifname: str, ip: str, lladdr: str, replace: bool = False) -> None:
    """A permanent ARP entry: lab links never resolve addresses on the wire. ``replace``: over an
    entry the kernel learnt (a readiness ping's)."""
    with ipr_in(ns_name) as ipr:
        ipr.neigh("replace" if replace else "add", dst=ip, lladdr=lladdr, ifindex=link_index(ipr, ifname),
                  state="permanent")


@_off_running_loop
def link_with_address(ns_name: Optional[str], ip: str) -> Optional[str]:
    """The name of the link that has address ``ip`` (a CNI-made link of unknown name), else None."""
    with ipr_in(ns_name) as ipr:
        for addr in ipr.get_addr(family=2):
            if addr.get("IFA_ADDRESS") == ip or addr.get("IFA_LOCAL") == ip:
                return ipr.get_links(addr["index"])[0].get("IFLA_IFNAME")
    return None


@_off_running_loop
def add_route(ns_name: Optional[str], dst: str, gateway: str, ifname: str, table: Optional[int] = None,
              onlink: bool = False) -> None:
    """``onlink``: the gateway is on ``ifname``'s link whatever its own route says (a CNI's host route
    of scope host makes the kernel ignore a gateway resolved through it)."""
    kw: dict = {"table": table} if table else {}
    if onlink:
        kw["flags"] = 4  # RTNH_F_ONLINK
    with ipr_in(ns_name) as ipr:
        ipr.route("add", dst=dst, gateway=gateway, oif=link_index(ipr, ifname), **kw)


@_off_running_loop
def add_multipath_route(ns_name: str, dst: str, hops: list[tuple[str, str]], table: int) -> None:
    """ECMP route to ``dst`` over ``hops`` [(gateway, ifname)]; one hop is a plain route."""
    with ipr_in(ns_name) as ipr:
        if len(hops) == 1:
            gw, ifname = hops[0]
            ipr.route("add", dst=dst, gateway=gw, oif=link_index(ipr, ifname), table=table)
            return
        ipr.route("add", dst=dst, table=table,
                  multipath=[{"gateway": gw, "oif": link_index(ipr, ifname)} for gw, ifname in hops])


@_off_running_loop
def add_rule_iif(ns_name: Optional[str], ifname: str, table: int, priority: int) -> None:
    with ipr_in(ns_name) as ipr:
        ipr.rule("add", iifname=ifname, table=table, priority=priority)


@_off_running_loop
def delete_rule_iif(ns_name: Optional[str], ifname: str, table: int, priority: int) -> None:
    """Delete the rule :func:`add_rule_iif` adds; no error if it is gone."""
    from pyroute2.netlink.exceptions import NetlinkError

    with ipr_in(ns_name) as ipr:
        try:
            ipr.rule("del", iifname=ifname, table=table, priority=priority)
        except NetlinkError as err:
            if err.code != 2:  # ENOENT
                raise


@_off_running_loop
def bridge(ns_name: str, name: str, ports: list[str], mtu: int) -> None:
    with ipr_in(ns_name) as ipr:
        # No multicast snooping: a snooping bridge joins 224.0.0.106 and sends
        # IGMP reports out of its ports, which would count as received test frames.
        ipr.link("add", ifname=name, kind="bridge", br_mcast_snooping=0)
        br = link_index(ipr, name)
        for p in ports:
            ipr.link("set", index=link_index(ipr, p), master=br)
        ipr.link("set", index=br, mtu=mtu, state="up")


@_off_running_loop
def macvlan_into(ns_parent: str, parent: str, ns_target: str, name: str, mtu: int) -> None:
    """A bridge-mode macvlan on ``parent`` moved into ``ns_target`` as ``name``."""
    tmp = f"mv{abs(hash((parent, name))) % 10**8}"
    with ipr_in(ns_parent) as ipr:
        ipr.link("add", ifname=tmp, kind="macvlan", link=link_index(ipr, parent), macvlan_mode="bridge")
        ipr.link("set", index=link_index(ipr, tmp), net_ns_fd=ns_target)
    with ipr_in(ns_target) as ipr:
        idx = link_index(ipr, tmp)
        ipr.link("set", index=idx, ifname=name)
        ipr.link("set", index=idx, mtu=mtu, state="up")


@_off_running_loop
def set_mtu(ns_name: str, ifname: str, mtu: int) -> None:
    with ipr_in(ns_name) as ipr:
        ipr.link("set", index=link_index(ipr, ifname), mtu=mtu)


@_off_running_loop
def move_link(ns_from: str, ifname: str, ns_to: str, new_name: str) -> None:
    """Move ``ifname`` into ``ns_to`` as ``new_name``, keeping its MTU, and set it up."""
    with ipr_in(ns_from) as ipr:
        ipr.link("set", index=link_index(ipr, ifname), net_ns_fd=ns_to)
    with ipr_in(ns_to) as ipr:
        idx = link_index(ipr, ifname)
        ipr.link("set", index=idx, ifname=new_name)
        ipr.link("set", index=idx, state="up")


@_off_running_loop
def shape_tbf(ns_name: str, ifname: str, rate_bytes_s: float, burst_bytes: int, limit_bytes: int) -> None:
    """Token-bucket shaper on ``ifname`` egress: ``limit_bytes`` of queue, then drops."""
    with ipr_in(ns_name) as ipr:
        ipr.tc("add", "tbf", index=link_index(ipr, ifname), rate=int(rate_bytes_s),
               burst=burst_bytes, limit=limit_bytes)


@_off_running_loop
def delete_link(ns_name: Optional[str], ifname: str) -> None:
    """Delete ``ifname`` (a veth takes its peer with it); no error if it is gone."""
    with ipr_in(ns_name) as ipr:
        found = ipr.link_lookup(ifname=ifname)
        if found:
            ipr.link("del", index=found[0])


@_off_running_loop
def delete_namespace(name: str) -> None:
    """Delete namespace ``name``, its links first (synchronously); no error if it is gone."""
    if name not in netns.listnetns():
        return
    with ipr_in(name) as ipr:
        for link in ipr.get_links():
            if link.get("IFLA_IFNAME") != "lo":
                ipr.link("del", index=link["index"])
    netns.remove(name)
