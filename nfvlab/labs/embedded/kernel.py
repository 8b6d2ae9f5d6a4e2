"""Kernel-space networking models (draft §4.1.1) and the calibration paths.

Every topology has the shape of the draft's Figure 9: a traffic-generator node
(namespace ``tg``, ports ``tg0``/``tg1``) cabled by veth pairs to a worker node
(namespace ``wk``, NIC ports ``nic0``/``nic1``), whose networking model leads to
the pod's ``eth1``/``eth2``. The pod is a kernel IPv4 forwarder (the C-VNF):
it routes between eth1 and eth2 with static neighbours, like an l3fwd.

Addressing uses the RFC 2544 benchmarking range 198.18.0.0/15. The generator's
traffic goes from 198.19.1.0/24 ("behind" tg0) to 198.19.2.0/24 ("behind" tg1);
TG ports have no IP address, so a received test frame is dropped silently by
the TG namespace (no ICMP, no ARP, no IPv6); the generator counts only frames
with its trial's signature (docs/measurement.md), whatever else arrives.

Each builder returns the per-direction L2/L3 headers the generator must use.
"""
from __future__ import annotations

from nfvlab.scenario.topology import TG_NET, Port, Stream
from nfvlab.system import netns as nl


def _tg_ports(lab) -> tuple[Port, Port]:
    return Port(lab.ns("tg"), "tg0"), Port(lab.ns("tg"), "tg1")


def cable_tg_to_worker(lab) -> None:
    """TG node and worker node with two 'cables' tg0-nic0 and tg1-nic1."""
    tg, wk = lab.add_namespace("tg"), lab.add_namespace("wk")
    nl.veth(tg, "tg0", wk, "nic0", lab.mtu)
    nl.veth(tg, "tg1", wk, "nic1", lab.mtu)


def enable_forwarding(ns: str) -> None:
    """Make namespace ``ns`` an IPv4 router that never second-guesses static routes."""
    for key, val in (("net/ipv4/ip_forward", "1"), ("net/ipv4/conf/all/rp_filter", "0"),
                     ("net/ipv4/conf/default/rp_filter", "0"),
                     ("net/ipv4/conf/all/send_redirects", "0")):
        nl.set_sysctl(ns, key, val)


def pod_on_veths(lab) -> str:
    """Figure 9 plus pod1, its eth1/eth2 on veths to the worker's vp1a/vp1b; returns pod1's namespace."""
    cable_tg_to_worker(lab)
    wk, pod = lab.ns("wk"), lab.add_namespace("pod1")
    nl.veth(pod, "eth1", wk, "vp1a", lab.mtu)
    nl.veth(pod, "eth2", wk, "vp1b", lab.mtu)
    return pod


def pod_router(lab, pod: str, gw_mac: dict[int, str], gw_ip: dict[int, str], own: dict[int, str]) -> None:
    """Make ``pod`` forward 198.19.1/24 <-> 198.19.2/24 between eth1 and eth2."""
    for side, ifname in ((0, "eth1"), (1, "eth2")):
        nl.add_address(pod, ifname, own[side])
        nl.add_neighbour(pod, ifname, gw_ip[side], gw_mac[side])
        nl.add_route(pod, f"{TG_NET[side]}.0/24", gw_ip[side], ifname)
    enable_forwarding(pod)


def pod_routes_to_tg(lab, pod: str) -> list[Stream]:
    """Pod on the TG's L2 segments (198.18.1/24, 198.18.2/24): route, and send frames to it."""
    pod_router(lab, pod, gw_mac=tg_macs(lab), gw_ip={0: "198.18.1.1", 1: "198.18.2.1"},
                own={0: "198.18.1.2/24", 1: "198.18.2.2/24"})
    return tg_streams(lab, {0: nl.mac(pod, "eth1"), 1: nl.mac(pod, "eth2")})


def tg_streams(lab, dmac: dict[int, str]) -> list[Stream]:
    p0, p1 = _tg_ports(lab)
    smac = {0: nl.mac(p0.ns, p0.iface), 1: nl.mac(p1.ns, p1.iface)}
    return [
        Stream(p0, p1, smac[0], dmac[0], f"{TG_NET[0]}.1", f"{TG_NET[1]}.1"),
        Stream(p1, p0, smac[1], dmac[1], f"{TG_NET[1]}.1", f"{TG_NET[0]}.1"),
    ]


def tg_macs(lab) -> dict[int, str]:
    return {0: nl.mac(lab.ns("tg"), "tg0"), 1: nl.mac(lab.ns("tg"), "tg1")}


def build_linux_bridge(lab) -> list[Stream]:
    """Flannel-like: worker bridges br1 (nic0 + pod eth1) and br2 (nic1 + pod eth2)."""
    pod, wk = pod_on_veths(lab), lab.ns("wk")
    nl.bridge(wk, "br1", ["nic0", "vp1a"], lab.mtu)
    nl.bridge(wk, "br2", ["nic1", "vp1b"], lab.mtu)
    return pod_routes_to_tg(lab, pod)


def build_host_routing(lab) -> list[Stream]:
    """Calico-like: the worker's kernel routes nic0 -> pod -> nic1 (policy routing by iif)."""
    pod, wk = pod_on_veths(lab), lab.ns("wk")
    tg = tg_macs(lab)
    wk_addr = {"nic0": "198.18.1.254/24", "nic1": "198.18.2.254/24",
               "vp1a": "198.18.11.1/30", "vp1b": "198.18.12.1/30"}
    for ifname, cidr in wk_addr.items():
        nl.add_address(wk, ifname, cidr)
    # Towards the TG "remote" networks and, per ingress port, towards the pod.
    nl.add_neighbour(wk, "nic0", "198.18.1.1", tg[0])
    nl.add_neighbour(wk, "nic1", "198.18.2.1", tg[1])
    nl.add_route(wk, f"{TG_NET[0]}.0/24", "198.18.1.1", "nic0")
    nl.add_route(wk, f"{TG_NET[1]}.0/24", "198.18.2.1", "nic1")
    nl.add_neighbour(wk, "vp1a", "198.18.11.2", nl.mac(pod, "eth1"))
    nl.add_neighbour(wk, "vp1b", "198.18.12.2", nl.mac(pod, "eth2"))
    nl.add_route(wk, "0.0.0.0/0", "198.18.11.2", "vp1a", table=101)
    nl.add_route(wk, "0.0.0.0/0", "198.18.12.2", "vp1b", table=102)
    nl.add_rule_iif(wk, "nic0", 101, 1001)
    nl.add_rule_iif(wk, "nic1", 102, 1002)
    enable_forwarding(wk)
    pod_router(lab, pod, gw_mac={0: nl.mac(wk, "vp1a"), 1: nl.mac(wk, "vp1b")},
                gw_ip={0: "198.18.11.1", 1: "198.18.12.1"},
                own={0: "198.18.11.2/30", 1: "198.18.12.2/30"})
    return tg_streams(lab, {0: nl.mac(wk, "nic0"), 1: nl.mac(wk, "nic1")})


def build_macvlan(lab) -> list[Stream]:
    """MACVLAN: bridge-mode macvlans on nic0/nic1 become the pod's eth1/eth2."""
    cable_tg_to_worker(lab)
    wk, pod = lab.ns("wk"), lab.add_namespace("pod1")
    nl.macvlan_into(wk, "nic0", pod, "eth1", lab.mtu)
    nl.macvlan_into(wk, "nic1", pod, "eth2", lab.mtu)
    return pod_routes_to_tg(lab, pod)


def build_smartnic_direct(lab) -> list[Stream]:
    """Local analogue of SR-IOV VF passthrough (§4.1.4): the worker's NIC ports
    nic0/nic1 are moved into the pod as eth1/eth2; no switch in the path."""
    cable_tg_to_worker(lab)
    wk, pod = lab.ns("wk"), lab.add_namespace("pod1")
    nl.move_link(wk, "nic0", pod, "eth1")
    nl.move_link(wk, "nic1", pod, "eth2")
    return pod_routes_to_tg(lab, pod)


def build_direct_cable(lab) -> list[Stream]:
    """No DUT: tg0 and tg1 cabled to each other (the generator's own ceiling)."""
    tg = lab.add_namespace("tg")
    nl.veth(tg, "tg0", tg, "tg1", lab.mtu)
    macs = tg_macs(lab)
    return tg_streams(lab, {0: macs[1], 1: macs[0]})


#: Frames of token bucket and, again, of queue on the known-capacity path.
TBF_FRAMES = 64
#: Bytes of token bucket and of queue on the shallow known path: three 1518 B
#: frames each (1514 B on a veth; the bucket has slack for tbf's rounding of
#: bytes to time), 6 frames of 1518 B in all (18 of 512 B, 150 of 64 B), as a
#: small switch's port buffer holds. (A one-frame bucket is no known capacity
#: on a VM: tokens are capped while tbf's timer fires late, seen: -20 %.)
SHALLOW_BUCKET_BYTES, SHALLOW_QUEUE_BYTES = 3 * 1514 + 64, 3 * 1514


def build_tbf_bridge(lab, capacity_pps: float, frame_size: int) -> list[Stream]:
    """A bridge whose egress towards each TG port is shaped to ``capacity_pps``.

    A data path of known capacity for checking searches. tbf counts skb bytes,
    which on a veth is the frame without its 4 B FCS. The bucket holds 64
    frames: a smaller one turns ~1 ms scheduler hiccups of a shared VM into
    losses near capacity (seen: -1.2 % at 1518 B with 8 frames, -0.15 % with
    64). The queue holds 64 more frames, then tbf drops. Frames still queued
    when traffic stops are forwarded and counted, so a trial of D seconds can
    pass at up to capacity + 128 / D packets/s: the path's NDR for that trial
    duration is at most capacity x (1 + 128 / (capacity x D)), e.g. +0.17 % at
    74 kpps and 1 s. (A 20 ms queue made that +6 % at 30 kpps and 0.5 s.)
    """
    wire_bytes = frame_size - 4
    return _shaped_bridge(lab, capacity_pps * wire_bytes, TBF_FRAMES * wire_bytes, TBF_FRAMES * wire_bytes)


def build_tbf_shallow(lab, capacity_pps: float, frame_size: int) -> list[Stream]:
    """Like :func:`build_tbf_bridge`, but with a bucket and a queue of three 1518 B frames each.

    Bucket and queue are sized in bytes, not frames: at 1518 B the path holds
    six frames, so a burst of the offered traffic beyond that is lost even
    below capacity; only smooth pacing finds its capacity.
    """
    wire_bytes = frame_size - 4
    return _shaped_bridge(lab, capacity_pps * wire_bytes, SHALLOW_BUCKET_BYTES, SHALLOW_QUEUE_BYTES)


def _shaped_bridge(lab, rate_bytes_s: float, burst_bytes: int, queue_bytes: int) -> list[Stream]:
    cable_tg_to_worker(lab)
    wk = lab.ns("wk")
    nl.bridge(wk, "br0", ["nic0", "nic1"], lab.mtu)
    for ifname in ("nic0", "nic1"):
        nl.shape_tbf(wk, ifname, rate_bytes_s=rate_bytes_s, burst_bytes=burst_bytes,
                     limit_bytes=burst_bytes + queue_bytes)
    macs = tg_macs(lab)
    return tg_streams(lab, {0: macs[1], 1: macs[0]})


BUILDERS = {
    "direct-cable": build_direct_cable,
    "tbf-bridge": build_tbf_bridge,  # called with the scenario's known path (capacity, frame size)
    "tbf-shallow": build_tbf_shallow,
    "linux-bridge": build_linux_bridge,
    "host-routing": build_host_routing,
    "macvlan": build_macvlan,
    "smartnic-direct": build_smartnic_direct,
}
