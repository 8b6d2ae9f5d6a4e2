"""The catalogue of networking models: name, draft section, what each needs.

One entry per containerized networking model of draft-dcn-bmwg-containerized-
infra-11 §4.1, with how the embedded local lab realizes it (or why it cannot).
Params, the CLI and the notebooks all validate model names against this list.
"""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional


@dataclass(frozen=True)
class Model:
    """A networking model of the draft and its local realization."""

    name: str
    """Stable id used in params and on the command line."""
    section: str
    """Draft section, e.g. ``4.1.1``."""
    family: str
    """kernel | user-space | ebpf | smart-nic | combination."""
    title: str
    cni_analogue: str
    """Which real CNI / data path this stands for."""
    local: Optional[str]
    """How the embedded lab builds it; ``None`` when it cannot exist locally."""
    real_lab_only_reason: Optional[str] = None
    """Why only a real lab can run it (``None`` when it runs locally)."""
    tools: tuple[str, ...] = ()
    """Executables the local realization needs on PATH (or absolute paths)."""
    kernel: tuple[str, ...] = ()
    """Kernel features it needs (names from :func:`kernel_features`)."""
    pods: int = 1
    """Pods in the service chain."""
    vswitch: bool = False
    """Has a user-space vSwitch with busy-polling PMD threads."""
    busy_pods: tuple[str, ...] = ()
    """Pods whose forwarder busy-polls (DPDK); kernel pods have no thread to pin."""
    notes: tuple[str, ...] = field(default_factory=tuple)


OVS_TOOLS = ("/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk", "/usr/share/openvswitch/vswitch.ovsschema",
             "ovsdb-tool", "ovsdb-server", "ovs-vsctl", "ovs-ofctl", "taskset", "dpdk-testpmd")
"""A private OVS-DPDK instance and testpmd pods."""
BPF_TOOLS = ("clang", "bpftool", "ethtool", "tc", "ip")
"""Compiling, loading and wiring the eBPF programs."""
#: Debian package of each tool (for the missing-tool message).
TOOL_PACKAGES = {
    "/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk": "openvswitch-switch-dpdk",
    "/usr/share/openvswitch/vswitch.ovsschema": "openvswitch-common", "ovsdb-tool": "openvswitch-switch",
    "ovsdb-server": "openvswitch-switch", "ovs-vsctl": "openvswitch-common",
    "ovs-ofctl": "openvswitch-common", "taskset": "util-linux", "dpdk-testpmd": "dpdk",
    "clang": "clang", "bpftool": "bpftool", "ethtool": "ethtool", "tc": "iproute2", "ip": "iproute2",
}

MODELS: tuple[Model, ...] = (
    Model("linux-bridge", "4.1.1", "kernel", "veth + Linux bridge",
          "Flannel / Docker bridge", "veth pairs attached to Linux bridges in the worker node",
          kernel=("veth", "bridge")),
    Model("host-routing", "4.1.1", "kernel", "veth + host routing",
          "Calico (kernel routing table)", "point-to-point veths routed by the worker's kernel",
          kernel=("veth",)),
    Model("macvlan", "4.1.1", "kernel", "MACVLAN sub-interfaces",
          "macvlan CNI", "macvlan (bridge mode) on the worker's NIC ports moved into the pod",
          kernel=("veth", "macvlan")),
    Model("ovs-dpdk-vhost", "4.1.2", "user-space", "OVS-DPDK with vhost-user",
          "Userspace CNI + OVS-DPDK", "private OVS-DPDK instance, vhost-user ports to a testpmd pod",
          tools=OVS_TOOLS, kernel=("veth",), vswitch=True, busy_pods=("pod1",)),
    Model("ovs-dpdk-memif", "4.1.2", "user-space", "OVS-DPDK with memif",
          "Userspace CNI + OVS-DPDK (memif)", "private OVS-DPDK instance, memif ports to a testpmd pod",
          tools=OVS_TOOLS, kernel=("veth",), vswitch=True, busy_pods=("pod1",)),
    Model("vpp", "4.1.2", "user-space", "VPP vSwitch with memif",
          "Userspace CNI + FD.io VPP", None,
          real_lab_only_reason="VPP is not packaged for Debian 12; the local user-space model is OVS-DPDK"),
    Model("ebpf-tc", "4.1.3", "ebpf", "tc-eBPF redirect (non-AF_XDP)",
          "Cilium / Calico eBPF", "bpf_redirect / bpf_redirect_peer at veth tc hooks",
          tools=BPF_TOOLS, kernel=("veth", "bpf")),
    Model("ebpf-xdp", "4.1.3", "ebpf", "XDP redirect (non-AF_XDP)",
          "XDP-based CNI data path", "XDP redirect between the NIC ports and the pod's veths",
          tools=BPF_TOOLS, kernel=("veth", "bpf")),
    Model("afxdp-cni", "4.1.3", "ebpf", "AF_XDP CNI",
          "AF_XDP device plugin / CNDP", "the pod's DPDK forwarder uses net_af_xdp on its own netdevs",
          tools=("dpdk-testpmd",), kernel=("veth", "bpf", "af_xdp"), busy_pods=("pod1",)),
    Model("ovs-afxdp", "4.1.3", "ebpf", "OVS with AF_XDP PMD",
          "Userspace CNI + OVS afxdp ports", "OVS afxdp ports toward the NIC, vhost-user to the pod",
          tools=OVS_TOOLS, kernel=("veth", "bpf", "af_xdp"), vswitch=True, busy_pods=("pod1",)),
    Model("sriov", "4.1.4", "smart-nic", "SR-IOV virtual functions",
          "SR-IOV CNI + device plugin", None,
          real_lab_only_reason="needs a NIC with SR-IOV virtual functions"),
    Model("smartnic-direct", "4.1.4", "smart-nic", "Direct NIC ports (local analogue of SR-IOV VF passthrough)",
          "SR-IOV VF passthrough (analogue)", "the worker's NIC ports moved straight into the pod, no switch",
          kernel=("veth",)),
    Model("chain-userspace", "4.1.5", "combination", "Two-pod chain, user-space only",
          "Userspace CNI + OVS-DPDK (VPP in the draft)", "pod1 -> OVS-DPDK -> pod2, all ports vhost-user",
          tools=OVS_TOOLS, kernel=("veth",), pods=2, vswitch=True, busy_pods=("pod1", "pod2")),
    Model("chain-combined", "4.1.5", "combination", "Two-pod chain, direct N-S + user-space E-W",
          "SR-IOV + VPP (draft Appendix C)", "N-S on direct ports (af_packet), E-W pod1 -> OVS-DPDK -> pod2",
          tools=OVS_TOOLS, kernel=("veth",), pods=2, vswitch=True,
          busy_pods=("pod1", "pod2")),
)

MODEL_NAMES: tuple[str, ...] = tuple(m.name for m in MODELS)

#: The model used when none is named (CLI, measure.open_streams).
DEFAULT_MODEL = "linux-bridge"


def get(name: str) -> Model:
    """The model called ``name``; ``KeyError`` with the allowed names otherwise."""
    for m in MODELS:
        if m.name == name:
            return m
    raise KeyError(f"unknown model {name!r}: use one of {', '.join(MODEL_NAMES)}")


def kernel_features() -> dict[str, bool]:
    """Kernel features present on this host (checked without creating anything)."""
    proc_fs = Path("/proc/filesystems").read_text() if Path("/proc/filesystems").exists() else ""
    cfg = _kernel_config()

    def has(opt: str, module: str) -> bool:
        if cfg is not None and cfg.get(opt) in ("y", "m"):
            return True
        return Path(f"/sys/module/{module}").exists()

    return {
        "veth": has("CONFIG_VETH", "veth"),
        "bridge": has("CONFIG_BRIDGE", "bridge"),
        "macvlan": has("CONFIG_MACVLAN", "macvlan"),
        "bpf": Path("/sys/fs/bpf").exists() or (cfg or {}).get("CONFIG_BPF_SYSCALL") == "y",
        "af_xdp": (cfg or {}).get("CONFIG_XDP_SOCKETS") == "y" or Path("/proc/net/xdp").exists(),
        "hugetlbfs": "hugetlbfs" in proc_fs,
    }


def _kernel_config() -> Optional[dict[str, str]]:
    import gzip

    for p in (Path("/proc/config.gz"), Path(f"/boot/config-{os.uname().release}")):
        if p.exists():
            text = gzip.decompress(p.read_bytes()).decode() if p.suffix == ".gz" else p.read_text()
            out = {}
            for line in text.splitlines():
                if line.startswith("CONFIG_") and "=" in line:
                    k, v = line.split("=", 1)
                    out[k] = v
            return out
    return None


def core_plan(model: Model, resources=None, **host):
    """The :class:`~nfvlab.lab.resources.CorePlan` of ``model`` here (NotRealizable if none)."""
    from nfvlab.lab.resources import Resources, plan

    return plan(vswitch=model.vswitch, busy_pods=model.busy_pods,
                resources=resources or Resources(), **host)


def realizable(model: Model, features: Optional[dict[str, bool]] = None) -> tuple[bool, str]:
    """Whether this host can run ``model`` in the embedded lab, and if not, why."""
    if model.local is None:
        return False, f"real lab only: {model.real_lab_only_reason}"
    from nfvlab.lab.core import builders

    if model.name not in builders():
        return False, "not yet implemented in the embedded lab of this nfvlab version"
    features = kernel_features() if features is None else features
    missing_k = [k for k in model.kernel if not features.get(k, False)]
    if missing_k:
        return False, f"kernel lacks {', '.join(missing_k)}"
    missing = [t for t in model.tools if not (Path(t).exists() if t.startswith("/") else shutil.which(t))]
    if missing:
        packages = sorted({TOOL_PACKAGES.get(t, "?") for t in missing})
        return False, (f"missing {', '.join(missing)} (Debian package {', '.join(packages)}): "
                       "run `./run setup`")
    return True, ""
