"""This host's CPUs, NUMA nodes and hugepages, as the embedded lab's core plan needs them."""
from __future__ import annotations

import gzip
import os
from pathlib import Path
from typing import Optional

from nfvlab.scenario import CorePlan, Resources
from nfvlab.scenario import catalogue
from nfvlab.scenario.resources import plan

HUGEPAGE_DIR = Path("/sys/kernel/mm/hugepages/hugepages-2048kB")


def host_cpus() -> tuple[int, ...]:
    """CPUs this process may use."""
    return tuple(sorted(os.sched_getaffinity(0)))


def numa_nodes() -> dict[int, tuple[int, ...]]:
    """NUMA node -> its CPUs (one node 0 with every CPU when sysfs has none)."""
    out = {}
    for d in sorted(Path("/sys/devices/system/node").glob("node[0-9]*")):
        cpus = parse_cpulist((d / "cpulist").read_text())
        if cpus:
            out[int(d.name[4:])] = cpus
    return out or {0: host_cpus()}


def parse_cpulist(text: str) -> tuple[int, ...]:
    """``"0-2,5"`` -> ``(0, 1, 2, 5)``."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        cpus.extend(range(int(lo), int(hi or lo) + 1))
    return tuple(cpus)


def core_plan(model: catalogue.Model, resources: Resources = Resources()) -> CorePlan:
    """The core plan of ``model`` on this host (NotRealizable if there is none)."""
    return plan(vswitch=model.vswitch, busy_pods=model.busy_pods, resources=resources,
                cpus=host_cpus(), nodes=numa_nodes())


def free_hugepages_2m() -> int:
    p = HUGEPAGE_DIR / "free_hugepages"
    return int(p.read_text()) if p.exists() else 0


def kernel_config() -> Optional[dict[str, str]]:
    """The running kernel's build configuration (``CONFIG_X`` -> ``y``/``m``/...), if readable."""
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


#: Where the kernel's idxd driver lists Intel DSA devices (absent without DSA or the driver).
DSA_BUS = Path("/sys/bus/dsa/devices")


def dsa_devices() -> int:
    """Intel Data Streaming Accelerator devices (``dsa<N>``) on this host; 0 when there is no DSA bus."""
    return sum(1 for d in DSA_BUS.glob("dsa*")) if DSA_BUS.is_dir() else 0
