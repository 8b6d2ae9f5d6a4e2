"""Facts about this host that results depend on (for identities and provenance)."""
from __future__ import annotations

import os
import platform
from functools import lru_cache


@lru_cache(maxsize=1)
def cpu_model() -> str:
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8", errors="replace"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def host_identity() -> str:
    """``<CPU model> x<usable CPUs>, Linux <release>``: what a generator's ceiling depends on here."""
    return f"{cpu_model()} x{len(os.sched_getaffinity(0))}, Linux {platform.release()}"
