"""The catalogue of networking models: what each model of the draft *is*.

One entry per containerized networking model of draft-dcn-bmwg-containerized-
infra-11 §4.1 (and the two-pod combinations of §4.1.5): its draft section, its
family, the real CNI / data path it stands for, and the shape of its data path
(pods in the chain, a user-space vSwitch, busy-polling pods). Pure data: how a
lab realizes a model, and whether it can, is the lab backend's business
(:meth:`nfvlab.labs.base.LabBackend.check`).
"""
from __future__ import annotations

from dataclasses import dataclass

Family = str
"""``kernel`` | ``user-space`` | ``ebpf`` | ``smart-nic`` | ``combination`` | ``reference``."""


@dataclass(frozen=True)
class Model:
    """A networking model of the draft."""

    name: str
    """Stable id used in params and on the command line."""
    section: str
    """Draft section, e.g. ``4.1.1``."""
    family: Family
    title: str
    cni_analogue: str
    """Which real CNI / data path it stands for."""
    data_path: str
    """What the data path is made of, in one line."""
    pods: int = 1
    """Pods in the service chain."""
    vswitch: bool = False
    """Has a user-space vSwitch with busy-polling PMD threads."""
    busy_pods: tuple[str, ...] = ()
    """Pods whose forwarder busy-polls (DPDK); kernel pods have no thread to pin."""


MODELS: tuple[Model, ...] = (
    Model("linux-bridge", "4.1.1", "kernel", "veth + Linux bridge", "Flannel / Docker bridge",
          "veth pairs attached to Linux bridges in the worker node"),
    Model("host-routing", "4.1.1", "kernel", "veth + host routing", "Calico (kernel routing table)",
          "point-to-point veths routed by the worker's kernel"),
    Model("macvlan", "4.1.1", "kernel", "MACVLAN sub-interfaces", "macvlan CNI",
          "macvlan (bridge mode) on the worker's NIC ports moved into the pod"),
    Model("ovs-dpdk-vhost", "4.1.2", "user-space", "OVS-DPDK with vhost-user", "Userspace CNI + OVS-DPDK",
          "OVS-DPDK vSwitch, vhost-user ports to a DPDK pod", vswitch=True, busy_pods=("pod1",)),
    Model("ovs-dpdk-memif", "4.1.2", "user-space", "OVS-DPDK with memif", "Userspace CNI + OVS-DPDK (memif)",
          "OVS-DPDK vSwitch, memif ports to a DPDK pod", vswitch=True, busy_pods=("pod1",)),
    Model("ovs-dpdk-tap", "4.1.2", "user-space", "OVS-DPDK with tap pod interfaces",
          "Calico/VPP tun pod interface (seed 003)",
          "OVS-DPDK vSwitch, kernel tap interfaces to a pod that reads them through the kernel",
          vswitch=True, busy_pods=("pod1",)),
    Model("vpp", "4.1.2", "user-space", "VPP vSwitch with memif", "Userspace CNI + FD.io VPP",
          "FD.io VPP vSwitch, memif ports to a DPDK pod", vswitch=True, busy_pods=("pod1",)),
    Model("ebpf-tc", "4.1.3", "ebpf", "tc-eBPF redirect (non-AF_XDP)", "Cilium / Calico eBPF",
          "bpf_redirect / bpf_redirect_peer at veth tc hooks"),
    Model("ebpf-xdp", "4.1.3", "ebpf", "XDP redirect (non-AF_XDP)", "XDP-based CNI data path",
          "XDP redirect between the NIC ports and the pod's veths"),
    Model("afxdp-cni", "4.1.3", "ebpf", "AF_XDP CNI", "AF_XDP device plugin / CNDP",
          "the pod's DPDK forwarder uses AF_XDP sockets on its own netdevs", busy_pods=("pod1",)),
    Model("ovs-afxdp", "4.1.3", "ebpf", "OVS with AF_XDP PMD", "Userspace CNI + OVS afxdp ports",
          "OVS afxdp ports toward the NIC, vhost-user to the pod", vswitch=True, busy_pods=("pod1",)),
    Model("sriov", "4.1.4", "smart-nic", "SR-IOV virtual functions", "SR-IOV CNI + device plugin",
          "NIC virtual functions passed into the pod, switched by the NIC's embedded switch"),
    Model("smartnic-direct", "4.1.4", "smart-nic", "Direct NIC ports (analogue of SR-IOV VF passthrough)",
          "SR-IOV VF passthrough (analogue)", "the worker's NIC ports moved straight into the pod, no switch"),
    Model("chain-userspace", "4.1.5", "combination", "Two-pod chain, user-space only",
          "Userspace CNI + OVS-DPDK (VPP in the draft)", "pod1 -> vSwitch -> pod2, all ports vhost-user",
          pods=2, vswitch=True, busy_pods=("pod1", "pod2")),
    Model("chain-combined", "4.1.5", "combination", "Two-pod chain, direct N-S + user-space E-W",
          "SR-IOV + VPP (draft Appendix C)", "N-S on direct ports, E-W pod1 -> vSwitch -> pod2",
          pods=2, vswitch=True, busy_pods=("pod1", "pod2")),
)

#: Data paths of known behaviour that calibrate the generator and check searches
#: (not models of the draft; never in an experiment's params).
KNOWN_PATHS: tuple[Model, ...] = (
    Model("direct-cable", "-", "reference", "generator ports cabled to each other", "-",
          "no DUT: the generator's own ceiling", pods=0),
    Model("tbf-bridge", "-", "reference", "bridge shaped to a known capacity", "-",
          "a bridge whose egress is a token bucket of known rate and depth", pods=0),
    Model("tbf-shallow", "-", "reference", "shallow-buffer bridge shaped to a known capacity", "-",
          "a bridge whose egress is a token bucket of known rate that buffers a few 1518 B frames", pods=0),
    Model("external", "-", "external", "a DUT built outside nfvlab", "-",
          "two interfaces the user named (draft §5)", pods=0),
)

MODEL_NAMES: tuple[str, ...] = tuple(m.name for m in MODELS)

#: Known paths shaped to a capacity: a scenario of one needs a ``KnownPath``.
SHAPED_PATHS: tuple[str, ...] = ("tbf-bridge", "tbf-shallow")

#: The model used when none is named.
DEFAULT_MODEL = "linux-bridge"


def get(name: str) -> Model:
    """The model (or known path) called ``name``; ``KeyError`` naming the allowed ones otherwise."""
    for m in MODELS + KNOWN_PATHS:
        if m.name == name:
            return m
    raise KeyError(f"unknown model {name!r}: use one of {', '.join(MODEL_NAMES)}")
