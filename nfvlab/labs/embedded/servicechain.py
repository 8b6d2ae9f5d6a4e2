"""NFV service density topologies (seed 001) on kernel-router NFs.

``instances`` service instances of ``nfs`` network functions each, every NF a
pod namespace that routes like the C-VNF of :mod:`nfvlab.labs.embedded.kernel`. The
worker node's kernel router is the switch (the host-routing model); traffic
from a TG port is spread over the instances by ECMP on the L4 hash (so the
generator must use many flows), as a service load balancer would.

- ``csc`` (CNF Service Chain, snake forwarding): every NF's eth1 and eth2 are
  veths to the worker, which steers each NF's output into the next NF (policy
  routing by ingress port): TG -> wk -> NF1 -> wk -> NF2 -> ... -> wk -> TG.
- ``csp`` (CNF Service Pipeline): NF j's eth2 is cabled straight to NF j+1's
  eth1; only the first and last NF of an instance touch the worker.

Addresses: link n (1-based over all NFs) uses 198.18.(10+n).0/29: worker side
.1 (eth1 link) and .5 (eth2 link), NF side .2 and .6; NF-to-NF cables in csp
use 198.18.(120+n).0/30.
"""
from __future__ import annotations

from typing import Literal

from nfvlab.system import netns as nl
from nfvlab.labs.embedded.kernel import TG_NET, Stream, tg_streams, tg_macs, cable_tg_to_worker, enable_forwarding

Topology = Literal["csc", "csp"]
TOPOLOGIES: tuple[str, ...] = ("csc", "csp")
#: Most NFs one lab may hold (address plan: 198.18.(10+n) must stay below .120).
MAX_NFS = 100


def _nf_ip(n: int, side: int, worker: bool) -> str:
    """Address of NF ``n``'s side (0 = eth1, 1 = eth2) link, worker or NF end."""
    return f"198.18.{10 + n}.{1 + 4 * side + (0 if worker else 1)}"


def build_service_matrix(lab, *, topology: Topology, instances: int, nfs: int) -> list[Stream]:
    """``instances`` x ``nfs`` kernel NFs in ``topology`` behind the worker's router."""
    if topology not in TOPOLOGIES:
        raise ValueError(f"topology {topology!r}: use one of {', '.join(TOPOLOGIES)}")
    if not 1 <= instances * nfs <= MAX_NFS:
        raise ValueError(f"{instances} x {nfs} NFs: at most {MAX_NFS} in one lab")
    cable_tg_to_worker(lab)
    wk = lab.ns("wk")
    tg = tg_macs(lab)
    chains = [[(i * nfs) + j + 1 for j in range(nfs)] for i in range(instances)]
    pods = {n: lab.add_namespace(f"pod{n}") for chain in chains for n in chain}
    worker_ports: set[str] = set()
    for chain in chains:
        for j, n in enumerate(chain):
            to_worker = [0, 1] if topology == "csc" else ([0] if j == 0 else []) + ([1] if j == len(chain) - 1 else [])
            for side in to_worker:
                port = f"p{n}{'ab'[side]}"
                worker_ports.add(port)
                nl.veth(pods[n], f"eth{side + 1}", wk, port, lab.mtu)
                nl.add_address(wk, port, f"{_nf_ip(n, side, True)}/29")
                nl.add_address(pods[n], f"eth{side + 1}", f"{_nf_ip(n, side, False)}/29")
            if topology == "csp" and j > 0:
                prev = chain[j - 1]
                nl.veth(pods[prev], "eth2", pods[n], "eth1", lab.mtu)
                nl.add_address(pods[prev], "eth2", f"198.18.{120 + n}.1/30")
                nl.add_address(pods[n], "eth1", f"198.18.{120 + n}.2/30")
    _route_nfs(lab, chains, pods, topology)
    _route_worker(lab, chains, pods, topology, tg, worker_ports)
    wk_mac = {0: nl.mac(wk, "nic0"), 1: nl.mac(wk, "nic1")}
    return tg_streams(lab, wk_mac)


def _hop(lab, pods, topology, n: int, j: int, chain: list[int], side: int) -> tuple[str, str, str]:
    """Where NF ``n`` (position ``j``) sends traffic leaving through eth(side+1):
    (namespace of the next hop's MAC, its interface, its IP)."""
    wk = lab.ns("wk")
    if topology == "csp":
        nxt = j + 1 if side == 1 else j - 1
        if 0 <= nxt < len(chain):
            m = chain[nxt]
            link = max(n, m)
            return pods[m], "eth1" if side == 1 else "eth2", f"198.18.{120 + link}.{2 if side == 1 else 1}"
    return wk, f"p{n}{'ab'[side]}", _nf_ip(n, side, True)


def _route_nfs(lab, chains, pods, topology) -> None:
    """Each NF routes 198.19.2/24 out eth2 and 198.19.1/24 out eth1 to its next hop."""
    for chain in chains:
        for j, n in enumerate(chain):
            for side, net in ((1, TG_NET[1]), (0, TG_NET[0])):
                ns, ifname, ip = _hop(lab, pods, topology, n, j, chain, side)
                nl.add_neighbour(pods[n], f"eth{side + 1}", ip, nl.mac(ns, ifname))
                nl.add_route(pods[n], f"{net}.0/24", ip, f"eth{side + 1}")
            enable_forwarding(pods[n])


def _route_worker(lab, chains, pods, topology, tg: dict[int, str], worker_ports: set[str]) -> None:
    """Worker: ECMP into the instances, then steer by ingress port (policy routing)."""
    wk = lab.ns("wk")
    nl.add_address(wk, "nic0", "198.18.1.254/24")
    nl.add_address(wk, "nic1", "198.18.2.254/24")
    nl.add_neighbour(wk, "nic0", "198.18.1.1", tg[0])
    nl.add_neighbour(wk, "nic1", "198.18.2.1", tg[1])
    for chain in chains:
        for n in chain:
            for side in (0, 1):
                port = f"p{n}{'ab'[side]}"
                if port in worker_ports:
                    nl.add_neighbour(wk, port, _nf_ip(n, side, False), nl.mac(pods[n], f"eth{side + 1}"))
    table = iter(range(1000, 100000))
    # Forward (to 198.19.2/24): nic0 -> first NFs; reverse: nic1 -> last NFs.
    for nic, entry_side, net in (("nic0", 0, TG_NET[1]), ("nic1", 1, TG_NET[0])):
        hops = [(_nf_ip(c[0 if entry_side == 0 else -1], entry_side, False),
                 f"p{c[0 if entry_side == 0 else -1]}{'ab'[entry_side]}") for c in chains]
        t = next(table)
        nl.add_multipath_route(wk, f"{net}.0/24", hops, t)
        nl.add_rule_iif(wk, nic, t, t)
    # A frame an NF hands back to the worker goes to the next NF or out to the TG.
    for chain in chains:
        for j, n in enumerate(chain):
            for side in (0, 1):
                port = f"p{n}{'ab'[side]}"
                if port not in worker_ports:
                    continue
                nxt = j + (1 if side == 1 else -1)
                if 0 <= nxt < len(chain) and topology == "csc":
                    m = chain[nxt]
                    gw, dev = _nf_ip(m, 1 - side, False), f"p{m}{'ab'[1 - side]}"
                else:
                    gw, dev = ("198.18.2.1", "nic1") if side == 1 else ("198.18.1.1", "nic0")
                t = next(table)
                nl.add_route(wk, "0.0.0.0/0", gw, dev, table=t)
                nl.add_rule_iif(wk, port, t, t)
    enable_forwarding(wk)
    nl.set_sysctl(wk, "net/ipv4/fib_multipath_hash_policy", "1")  # spread flows by L4 ports

