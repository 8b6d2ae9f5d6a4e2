"""The OVS-DPDK vSwitch both labs run for the user-space models: memory, PMD placement, NIC ports.

The embedded lab runs it in the worker namespace (:mod:`nfvlab.labs.embedded.ovs`), the
Kubernetes lab as the local node's vSwitch (:mod:`nfvlab.labs.kubernetes.render`); both size
and place it from here, so a model's vSwitch is the same on either lab.
"""
from __future__ import annotations

from typing import Sequence

from nfvlab.labs import forwarder

VSWITCHD = "/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk"
SCHEMA = "/usr/share/openvswitch/vswitch.ovsschema"
#: DPDK memory of ovs-vswitchd, MB (one mempool of 1500 B MTU mbufs, rings, heap).
MEMORY_MB = 512
#: ... with jumbo frames (per-port mempools of 9000 B MTU mbufs, ~125 MB per port).
JUMBO_MEMORY_MB = 2048
#: Longest sleep of an idle PMD thread, us (``pmd-maxsleep``). 0: never sleep.
#: The PMD has its own CPU, so sleeping saves nothing we need and adds jitter.
PMD_MAXSLEEP_US = 0
BRIDGE = "br0"
#: OVS OpenFlow port numbers of the NIC ports (pod ports follow).
NIC_OFPORT = {0: 1, 1: 2}
#: PACKET_MMAP ring frame (= block) size for jumbo frames, bytes: a 9018 B frame plus the
#: TPACKET header, a power-of-two number of pages (DPDK assumes frames back to back, so a
#: block holds whole frames; the kernel allocates blocks in powers of two pages).
JUMBO_PACKET_FRAME_BYTES = 16384


def memory_mb(mtu: int) -> int:
    """DPDK memory of ovs-vswitchd for ports of IP MTU ``mtu``, MB."""
    return JUMBO_MEMORY_MB if forwarder.jumbo(mtu) else MEMORY_MB


def cpu_mask(cpus: Sequence[int]) -> str:
    """Hex CPU mask of ``cpus`` (``pmd-cpu-mask``)."""
    return hex(sum(1 << c for c in cpus))


def af_packet_devargs(port: int, iface: str, mtu: int = forwarder.STD_MTU) -> str:
    """DPDK net_af_packet on ``iface``: PACKET_MMAP rings of 4096 frames, no qdisc.

    Above MTU 1500 each ring frame holds a whole jumbo frame (the default 2048 B would not).
    """
    size = (f",framesz={JUMBO_PACKET_FRAME_BYTES},blocksz={JUMBO_PACKET_FRAME_BYTES}"
            if forwarder.jumbo(mtu) else "")
    return f"net_af_packet{port},iface={iface},qpairs=1,qdisc_bypass=1,framecnt={forwarder.RING_SIZE}{size}"
