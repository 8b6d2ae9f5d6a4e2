"""How the embedded lab realizes each model of the catalogue, and whether this host can.

Per model: how namespaces build it (one line), the executables and kernel
features it needs, the largest MTU its ports carry, or why only a real lab can
run it. :func:`problems` answers "can this host realize it?" without creating
anything; :func:`builders` maps model names to the functions that build them.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from nfvlab.labs.embedded import host
from nfvlab.scenario import catalogue

#: MTU of every link the embedded lab creates by default, bytes (fits 9018 B jumbo frames).
LAB_MTU = 9000
#: Largest MTU of ports with an XDP program or an OVS/DPDK port (frames up to 1518 B).
SMALL_MTU = 1500

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
    "stress-ng": "stress-ng",
}


@dataclass(frozen=True)
class Realization:
    """How the embedded lab builds one model."""

    how: Optional[str]
    """One line; ``None`` when the model cannot exist in the embedded lab."""
    real_lab_only: Optional[str] = None
    """Why only a real lab can run it."""
    tools: tuple[str, ...] = ()
    """Executables it needs on PATH (or absolute paths)."""
    kernel: tuple[str, ...] = ()
    """Kernel features it needs (names of :func:`kernel_features`)."""
    max_mtu: int = LAB_MTU
    """Largest IP MTU its ports carry by default, bytes."""
    jumbo_mtu: Optional[int] = None
    """Largest IP MTU a scenario may ask for (``mtu_bytes``), bytes; default :attr:`max_mtu`."""


REALIZATIONS: dict[str, Realization] = {
    "linux-bridge": Realization("veth pairs attached to Linux bridges in the worker namespace",
                                kernel=("veth", "bridge")),
    "host-routing": Realization("point-to-point veths routed by the worker namespace's kernel",
                                kernel=("veth",)),
    "macvlan": Realization("macvlan (bridge mode) on the worker's veth NIC ports moved into the pod",
                           kernel=("veth", "macvlan")),
    "ovs-dpdk-vhost": Realization("private OVS-DPDK instance, vhost-user ports to a testpmd pod",
                                  tools=OVS_TOOLS, kernel=("veth",), max_mtu=SMALL_MTU),
    "ovs-dpdk-memif": Realization("private OVS-DPDK instance, memif ports to a testpmd pod",
                                  tools=OVS_TOOLS, kernel=("veth",), max_mtu=SMALL_MTU, jumbo_mtu=LAB_MTU),
    "ovs-dpdk-tap": Realization("private OVS-DPDK instance, OVS tap ports moved into a testpmd pod that "
                                "reads them with net_af_packet", tools=OVS_TOOLS, kernel=("veth", "tun"),
                                max_mtu=SMALL_MTU, jumbo_mtu=LAB_MTU),
    "vpp": Realization(None, "VPP is not packaged for Debian 12; the local user-space model is OVS-DPDK"),
    "ebpf-tc": Realization("bpf_redirect / bpf_redirect_peer at veth tc hooks",
                           tools=BPF_TOOLS, kernel=("veth", "bpf")),
    "ebpf-xdp": Realization("XDP redirect between the NIC ports and the pod's veths",
                            tools=BPF_TOOLS, kernel=("veth", "bpf"), max_mtu=SMALL_MTU),
    "afxdp-cni": Realization("the pod's DPDK testpmd uses net_af_xdp on its own veths",
                             tools=("dpdk-testpmd",), kernel=("veth", "bpf", "af_xdp"), max_mtu=SMALL_MTU),
    "ovs-afxdp": Realization("OVS afxdp ports toward the NIC, vhost-user to the pod",
                             tools=OVS_TOOLS, kernel=("veth", "bpf", "af_xdp"), max_mtu=SMALL_MTU),
    "sriov": Realization(None, "needs a NIC with SR-IOV virtual functions"),
    "smartnic-direct": Realization("the worker's veth NIC ports moved straight into the pod, no switch",
                                   kernel=("veth",)),
    "chain-userspace": Realization("pod1 -> OVS-DPDK -> pod2, all ports vhost-user",
                                   tools=OVS_TOOLS, kernel=("veth",), max_mtu=SMALL_MTU),
    "chain-combined": Realization("N-S on direct ports (af_packet), E-W pod1 -> OVS-DPDK -> pod2",
                                  tools=OVS_TOOLS, kernel=("veth",), max_mtu=SMALL_MTU),
    "direct-cable": Realization("tg0 and tg1 cabled to each other", kernel=("veth",)),
    "tbf-bridge": Realization("a bridge shaped by tbf to a known capacity", kernel=("veth", "bridge")),
    "tbf-shallow": Realization("a bridge shaped by tbf to a known capacity, buffering a few 1518 B frames",
                               kernel=("veth", "bridge")),
}


def builders() -> dict[str, Callable]:
    """Model name -> builder ``(lab) -> list[Stream]``, for every model this lab builds."""
    from nfvlab.labs.embedded import ebpf, kernel, userspace

    return {**kernel.BUILDERS, **ebpf.BUILDERS, **userspace.BUILDERS}


def kernel_features() -> dict[str, bool]:
    """Kernel features present on this host (checked without creating anything)."""
    proc_fs = Path("/proc/filesystems").read_text() if Path("/proc/filesystems").exists() else ""
    cfg = host.kernel_config()

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
        "tun": Path("/dev/net/tun").exists(),
    }


def missing_tools(tools: tuple[str, ...]) -> Optional[str]:
    """One line naming missing executables and their Debian packages (None: all there)."""
    missing = [t for t in tools if not (Path(t).exists() if t.startswith("/") else shutil.which(t))]
    if not missing:
        return None
    packages = sorted({TOOL_PACKAGES.get(t, "?") for t in missing})
    return f"missing {', '.join(missing)} (Debian package {', '.join(packages)}): run `./run setup`"


def model_problem(name: str, features: Optional[dict[str, bool]] = None) -> Optional[str]:
    """Why this host cannot build model ``name`` in the embedded lab (None: it can)."""
    r = REALIZATIONS.get(name)
    if r is None or r.how is None:
        return f"real lab only: {r.real_lab_only}" if r else "not realized by the embedded lab"
    if name not in builders():
        return "not yet implemented in the embedded lab of this nfvlab version"
    features = kernel_features() if features is None else features
    missing_k = [k for k in r.kernel if not features.get(k, False)]
    if missing_k:
        return f"kernel lacks {', '.join(missing_k)}"
    return missing_tools(r.tools)


def realizable(name: str, features: Optional[dict[str, bool]] = None) -> tuple[bool, str]:
    """``(True, "")`` or ``(False, why)`` for model ``name`` on this host."""
    why = model_problem(name, features)
    return why is None, why or ""


def max_mtu(name: str) -> int:
    """Largest IP MTU model ``name``'s ports carry unless a scenario asks for more, bytes."""
    return REALIZATIONS[name].max_mtu if name in REALIZATIONS else LAB_MTU


def settable_mtu(name: str) -> int:
    """Largest IP MTU a scenario of model ``name`` may ask for (``mtu_bytes``), bytes."""
    r = REALIZATIONS.get(name)
    return (r.jumbo_mtu or r.max_mtu) if r else LAB_MTU


assert set(REALIZATIONS) >= set(catalogue.MODEL_NAMES), "every catalogue model needs a realization entry"
