"""DPDK processes of the embedded lab: EAL memory options and the pod forwarder.

A pod's forwarder is :mod:`nfvlab.labs.forwarder`'s ``dpdk-testpmd`` in MAC mode between its
port 0 and port 1 (the C-VNF of the user-space models), spawned in the pod's namespace.

Memory (``lab.resources.hugepages``): without hugepages every DPDK process runs
``--no-huge`` with ``-m`` MB of ordinary memory; with hugepages the lab reserves
2 MB pages up front (:func:`reserve_hugepages`) and mounts a private hugetlbfs
that each process uses through ``--huge-dir``. Every process has the file
prefix ``nfvl-<lab id>-<role>``; with hugepages it runs ``--in-memory`` (no
hugepage files), without them DPDK refuses ``--in-memory`` and leaves a runtime
dir ``/var/run/dpdk/<prefix>``: both globs are recorded for teardown.
"""
from __future__ import annotations

import glob
import subprocess
from pathlib import Path
from typing import Sequence

from nfvlab.labs.embedded import state
from nfvlab.labs.base import LabError
from nfvlab.labs import forwarder
from nfvlab.labs.forwarder import (  # noqa: F401 (re-exported: the embedded lab's names)
    JUMBO_MBUF_BYTES, JUMBO_MBUFS, JUMBO_MEMORY_MB, MBUFS, READY_LINE, RING_SIZE, STATS_PERIOD_S, STD_MTU,
    TESTPMD, TESTPMD_MEMORY_MB, PodPort, forwarding_args, frame_args, jumbo, lcores_arg, memory_mb)

#: Debian package of each DPDK driver a model may load (for error messages).
PMD_PACKAGES = {
    "net_af_packet": "librte-net-af-packet23", "net_af_xdp": "librte-net-af-xdp23",
    "net_memif": "librte-net-memif23", "net_virtio_user": "librte-net-virtio23",
    "net_vhost": "librte-net-vhost23", "net_pcap": "librte-net-pcap23",
}


def require_pmds(*drivers: str) -> None:
    """LabError naming a DPDK driver (``net_memif``...) whose shared library is absent."""
    for drv in drivers:
        lib = "librte_net_virtio" if drv == "net_virtio_user" else f"librte_{drv}"
        if not glob.glob(f"/usr/lib/*/dpdk/pmds-*/{lib}.so*"):
            raise LabError(f"missing DPDK driver {drv} (Debian package {PMD_PACKAGES[drv]}): "
                           "run `./run setup`")


def file_prefix(lab, role: str) -> str:
    """DPDK file prefix of ``role``: carries the lab id (leaks are detectable)."""
    return f"{state.PREFIX}{lab.lab_id}-{role}"


def reserve_hugepages(lab, memory_mb: Sequence[int]) -> None:
    """With hugepages: reserve pages for DPDK processes of ``memory_mb`` each, mount hugetlbfs.

    One reservation for the whole lab, before anything else exists, so a host
    without enough memory fails with one line and nothing to clean.
    """
    if not lab.resources.hugepages:
        return
    pages = sum(-(-mb // 2) for mb in memory_mb)
    available_mb = _mem_available_mb()
    if 2 * pages > available_mb // 2:  # never take more than half of what is free
        raise LabError(f"model {lab.model} needs {pages} 2 MB hugepages ({2 * pages} MB); this host "
                       f"has {available_mb} MB available: free memory or run without hugepages")
    lab.reserve_hugepages(pages)
    lab.make_run_dir()
    lab.add_mount("hugetlbfs", lab.run_dir / "huge", "pagesize=2M")


def _mem_available_mb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) // 1024
    return 0


def eal_memory_args(lab, role: str, memory_mb: int) -> list[str]:
    """EAL options for memory, file prefix and runtime dir of DPDK process ``role``."""
    prefix = file_prefix(lab, role)
    lab.add_path(f"/var/run/dpdk/{prefix}")
    lab.add_path(f"/dev/hugepages/{prefix}*")
    return forwarder.eal_memory_args(lab.resources.hugepages, str(lab.run_dir / "huge"), memory_mb, prefix)


def testpmd_argv(lab, role: str, ports: Sequence[PodPort], cpus: Sequence[int],
                 queues: int = 1) -> list[str]:
    """The testpmd command line of pod ``role``: MAC forwarding port 0 <-> port 1, frames up to ``lab.mtu`` + 18."""
    return [TESTPMD, lcores_arg(cpus, lab.core_plan.host_cpus), "--no-pci",
            *eal_memory_args(lab, role, memory_mb(lab.mtu)), *forwarding_args(ports, lab.mtu, queues)]


def with_bpffs(argv: Sequence[str]) -> list[str]:
    """Wrap ``argv`` to mount bpffs first: ``ip netns exec`` hides /sys/fs/bpf (libxdp needs it)."""
    return ["sh", "-c", 'mount -t bpf bpf /sys/fs/bpf && exec "$@"', "sh", *argv]


def start_pod_forwarder(lab, role: str, ports: Sequence[PodPort], *, ns: str,
                        cpus: Sequence[int], queues: int = 1, bpffs: bool = False) -> subprocess.Popen:
    """Spawn pod ``role``'s testpmd in ``ns`` on ``cpus`` (not waiting for it: see wait_forwarding)."""
    argv = testpmd_argv(lab, role, ports, cpus, queues)
    return lab.spawn(role, with_bpffs(argv) if bpffs else argv, ns=ns, cpus=cpus)


def wait_forwarding(lab, role: str, proc: subprocess.Popen, timeout_s: float = 10.0) -> None:
    """Wait until pod ``role``'s testpmd forwards (LabError with its log tail otherwise)."""
    log = lab.run_dir / f"{role}.log"
    lab.wait_until(lambda: READY_LINE in log.read_text(errors="replace"),
                   f"{role} testpmd", timeout_s=timeout_s, proc=proc, log=role)
