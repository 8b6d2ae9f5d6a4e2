"""eBPF networking models (draft §4.1.3, non-AF_XDP): the worker forwards with BPF programs.

Both models have host-routing's cabling (Figure 9; pod1's eth1/eth2 are veths
whose worker ends are vp1a/vp1b) but no bridge and no routing table in the
worker: a BPF program at each worker port hands every frame, untouched, to one
fixed device - an L2 patch nic0 <-> vp1a, nic1 <-> vp1b. The pod stays the
kernel router and, as with linux-bridge, routes straight to the TG ports'
MACs; the generator addresses the pod's MACs.

- ``ebpf-tc`` (Cilium-like): tc programs at clsact ingress. NIC ingress uses
  ``bpf_redirect_peer`` into the pod's namespace (Cilium's fast path: the frame
  skips the host veth's transmit and the backlog queue); host-veth ingress uses
  ``bpf_redirect`` to the NIC port's egress.
- ``ebpf-xdp``: native XDP programs redirecting through a devmap. A veth drops
  XDP-redirected frames unless the receiving peer has NAPI, so GRO is turned on
  at the far ends of the targets (pod eth1/eth2, TG tg0/tg1).

Programs learn their target ifindex from a map written after loading
(:mod:`nfvlab.labs.embedded.bpf`); objects are compiled once and cached. Programs die
with the worker namespace's devices: teardown needs nothing extra.
"""
from __future__ import annotations

from pathlib import Path

from nfvlab.labs.embedded import bpf
from nfvlab.labs.embedded.kernel import Stream, pod_on_veths, pod_routes_to_tg

#: Worker NIC port -> the worker end of the pod veth it is patched to.
PATCH = {"nic0": "vp1a", "nic1": "vp1b"}
#: Keys of tc_redirect.c's ``cfg`` map.
CFG_IFINDEX, CFG_PEER = 0, 1


def _patch_pairs(lab) -> list[tuple[str, int, bool]]:
    """(worker port, target ifindex, towards the pod?) for every worker port."""
    idx = {name: ln["ifindex"] for name, ln in bpf.links(lab.ns("wk")).items()}
    return [pair for nic, veth in PATCH.items()
            for pair in ((nic, idx[veth], True), (veth, idx[nic], False))]


def _tc_redirect(ns: str, ifname: str, obj: Path, target: int, peer: bool) -> None:
    prog = bpf.attach_tc_ingress(ns, ifname, obj)
    cfg = bpf.prog_maps(prog)["cfg"]
    bpf.map_set_u32(cfg, CFG_PEER, int(peer), ns)
    bpf.map_set_u32(cfg, CFG_IFINDEX, target, ns)  # last: until now the program drops


def build_ebpf_tc(lab, peer: bool = True) -> list[Stream]:
    """Cilium-like tc-eBPF forwarding; ``peer=False``: plain bpf_redirect towards the pod too."""
    obj = bpf.compile_object("tc_redirect")  # first: a compile error creates nothing
    pod = pod_on_veths(lab)
    for port, target, to_pod in _patch_pairs(lab):
        _tc_redirect(lab.ns("wk"), port, obj, target, peer=peer and to_pod)
    return pod_routes_to_tg(lab, pod)


def build_ebpf_xdp(lab) -> list[Stream]:
    """XDP devmap redirect between the worker's NIC ports and the pod's veths."""
    obj = bpf.compile_object("xdp_redirect")
    pod = pod_on_veths(lab)
    tg = lab.ns("tg")
    # The receiving peers of redirect targets: without NAPI they drop redirected frames.
    for ns, ifname in ((pod, "eth1"), (pod, "eth2"), (tg, "tg0"), (tg, "tg1")):
        bpf.gro_on(ns, ifname)
    for port, target, _ in _patch_pairs(lab):
        prog = bpf.attach_xdp(lab.ns("wk"), port, obj)
        bpf.map_set_u32(bpf.prog_maps(prog)["tx_port"], 0, target, lab.ns("wk"))
    return pod_routes_to_tg(lab, pod)


BUILDERS = {
    "ebpf-tc": build_ebpf_tc,
    "ebpf-xdp": build_ebpf_xdp,
}
