"""The DPDK pod forwarder both labs run: ``dpdk-testpmd`` in MAC mode (the draft's l2fwd).

The embedded lab starts it in a pod namespace (:mod:`nfvlab.labs.embedded.testpmd`), the
Kubernetes lab in a DPDK pod (:mod:`nfvlab.labs.kubernetes.render`); both take its ports,
rings, buffers and readiness from here, so a model forwards the same way on either lab.

Each frame leaves with the forwarding port's MAC as source and the next hop's MAC
(``--eth-peer``) as destination. It runs non-interactively: without ``-i`` testpmd starts
forwarding at once, and ``--stats-period`` keeps it in its statistics loop instead of
reading stdin.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

TESTPMD = "dpdk-testpmd"
#: RX/TX descriptors per queue and virtio ring size: big rings absorb the time
#: slices a pod sharing the generator's CPU does not run (docs/core-plan.md).
RING_SIZE = 4096
#: Packet buffers of one testpmd (enough for its rings: 2 ports x 2 x 4096 + caches).
MBUFS = 32768
#: Memory of one testpmd, MB (mbufs ~75 MB, rings, virtio/memif state, heap).
TESTPMD_MEMORY_MB = 256
#: Largest MTU of a standard (non-jumbo) lab, bytes: above it the DPDK apps are set for jumbo frames.
STD_MTU = 1500
#: Jumbo frames (MTU above :data:`STD_MTU`): packet buffers big enough for a whole 9018 B frame
#: (no chained mbufs), fewer of them, more memory (16384 x ~16.5 kB ~ 270 MB).
JUMBO_MBUF_BYTES = 16512  # 128 B headroom + a net_af_packet jumbo ring frame (16384 B)
JUMBO_MBUFS = 16384
JUMBO_MEMORY_MB = 768
#: --stats-period, s: keeps testpmd running; each period logs a short stats block.
STATS_PERIOD_S = 10
#: What testpmd prints once its forwarding lcore runs (no "Press Ctrl+C" line in 22.11).
READY_LINE = "forwards packets on"
#: memif ring size, log2 (4096 slots, like the other rings).
MEMIF_RING_LOG2 = 12
#: memif packet buffer size for jumbo frames, bytes: one buffer per 9018 B frame.
JUMBO_MEMIF_BUFFER_BYTES = 10240


@dataclass(frozen=True)
class PodPort:
    """One port of a pod forwarder: its DPDK vdev and the MAC of the next hop."""

    vdev: str
    """``--vdev`` argument, e.g. ``net_virtio_user0,path=...,server=1``."""
    peer_mac: str
    """Destination MAC of frames this port sends (the next hop)."""


def pod_mac(pod: int, port: int) -> str:
    """MAC of a pod's DPDK port ``port`` (0: towards tg0, 1: towards tg1)."""
    return f"02:00:00:00:{pod:02x}:{port + 1:02x}"


def jumbo(mtu: int) -> bool:
    """Whether a lab of IP MTU ``mtu`` bytes needs the DPDK apps' jumbo-frame settings."""
    return mtu > STD_MTU


def memory_mb(mtu: int) -> int:
    """DPDK memory of one testpmd at IP MTU ``mtu``, MB."""
    return JUMBO_MEMORY_MB if jumbo(mtu) else TESTPMD_MEMORY_MB


def frame_args(mtu: int) -> list[str]:
    """testpmd options for frames up to ``mtu`` + 18 B: above 1500, mbufs that hold a whole frame."""
    if not jumbo(mtu):
        return [f"--total-num-mbufs={MBUFS}"]
    # No --max-pkt-len: net_af_packet (max 1518) and net_memif refuse a DPDK MTU above 1500,
    # but neither enforces it on a frame; one mbuf holding a whole frame is what counts.
    return [f"--mbuf-size={JUMBO_MBUF_BYTES}", f"--total-num-mbufs={JUMBO_MBUFS}"]


def virtio_user_vdev(port: int, path: str, mac: str) -> str:
    """A vhost-user port of a pod: testpmd's virtio_user serves the socket ``path`` (the vSwitch
    connects as the client)."""
    return f"net_virtio_user{port},path={path},server=1,queue_size={RING_SIZE},mac={mac}"


def memif_devargs(index: int, path: str, role: str, mtu: int = STD_MTU) -> str:
    """A net_memif port on socket ``path`` (``server``: the vSwitch's end, ``client``: the pod's)."""
    bsize = f",bsize={JUMBO_MEMIF_BUFFER_BYTES}" if jumbo(mtu) else ""
    return f"net_memif{index},role={role},socket={path},socket-abstract=no,rsize={MEMIF_RING_LOG2}{bsize}"


def af_xdp_vdev(port: int, iface: str) -> str:
    """A pod port on its own netdev through an AF_XDP socket (DPDK net_af_xdp)."""
    return f"net_af_xdp{port},iface={iface},start_queue=0,queue_count=1"


def eal_memory_args(hugepages: bool, huge_dir: str, memory_mb: int, prefix: str) -> list[str]:
    """EAL memory options: hugepages from ``huge_dir`` in memory (no hugepage files; virtio_user
    then needs --single-file-segments), else ``memory_mb`` MB of ordinary memory (--no-huge, which
    excludes --in-memory)."""
    if hugepages:
        mem = ["--huge-dir", huge_dir, "--in-memory", "--single-file-segments"]
    else:
        mem = ["--no-huge", "-m", str(memory_mb)]
    return mem + ["--file-prefix", prefix]


def lcores_arg(cpus: Sequence[int], host_cpus: Sequence[int]) -> str:
    """EAL ``--lcores``: main lcore 0 and forwarding lcore 1 on ``cpus`` (all CPUs if empty)."""
    where = "(" + ",".join(map(str, sorted(cpus or host_cpus))) + ")"
    return f"--lcores=0@{where},1@{where}"


def forwarding_args(ports: Sequence[PodPort], mtu: int, queues: int = 1) -> list[str]:
    """The vdevs and testpmd's own options (after ``--``): MAC forwarding port 0 <-> port 1,
    frames up to ``mtu`` + 18 B."""
    argv = [f"--vdev={p.vdev}" for p in ports]
    argv += ["--", "--forward-mode=mac", "--nb-cores=1", f"--rxq={queues}", f"--txq={queues}",
             f"--rxd={RING_SIZE}", f"--txd={RING_SIZE}", *frame_args(mtu),
             f"--stats-period={STATS_PERIOD_S}", "--no-lsc-interrupt"]
    argv += [f"--eth-peer={i},{p.peer_mac}" for i, p in enumerate(ports)]
    return argv
