"""Facts about this host that results depend on (for identities and provenance)."""
from __future__ import annotations

import os
import platform
from functools import lru_cache
from typing import Optional


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


#: The probe each CPU runs: a fixed loop counted per window, pinned to one CPU; prints the counts.
SPEED_PROBE = """
import json, os, sys, time
cpu, window_s, n = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
os.sched_setaffinity(0, {cpu})
counts = []
for _ in range(n):
    end, c = time.perf_counter() + window_s, 0
    while time.perf_counter() < end:
        for _i in range(1000):
            pass
        c += 1
    counts.append(c)
print(json.dumps(counts))
"""

#: Length of :func:`speed_variation`'s probe before an experiment run, s (``NFVLAB_HOST_SPEED_S``; 0: none).
HOST_SPEED_S = 6.0
#: Window of :func:`speed_variation`, s: about a trial's length (experiment A's quick trials are 0.5-1 s).
HOST_SPEED_WINDOW_S = 0.5


def host_speed_s() -> float:
    """The probe length an experiment run asks for: ``NFVLAB_HOST_SPEED_S`` or :data:`HOST_SPEED_S`."""
    text = os.environ.get("NFVLAB_HOST_SPEED_S", "")
    try:
        value = float(text) if text else HOST_SPEED_S
    except ValueError:
        raise ValueError(f"NFVLAB_HOST_SPEED_S={text!r}: a number of seconds >= 0 is allowed") from None
    if not value >= 0:
        raise ValueError(f"NFVLAB_HOST_SPEED_S={text!r}: a number of seconds >= 0 is allowed")
    return value


def speed_figures(counts: list[int]) -> dict:
    """``cv``, ``min_ratio``, ``max_ratio``, ``lag1`` and ``windows`` of one CPU's per-window loop
    counts (2 or more). ``lag1``: the correlation of each window's count with the next one's (how
    long the host's slow and fast spells last against a window: near 0, shorter; near 1, longer;
    None under 3 windows or for constant counts)."""
    import statistics

    mean = statistics.fmean(counts)
    return {"cv": statistics.stdev(counts) / mean, "min_ratio": min(counts) / mean,
            "max_ratio": max(counts) / mean, "lag1": _correlation(counts[:-1], counts[1:]),
            "windows": len(counts)}


def _correlation(x: list[float], y: list[float]) -> Optional[float]:
    """Pearson's r of ``x`` and ``y``; None under 2 pairs or when either is constant."""
    import statistics

    if len(x) < 2 or len(set(x)) < 2 or len(set(y)) < 2:
        return None
    return statistics.correlation(x, y)


#: A CPU whose loop rate varies more than this (CV per window) makes the host unstable for rate
#: measurements: pyperf warns from 10 % on, and a rate measured here varies at least as much.
UNSTABLE_CV = 0.10


def _cpu_ticks() -> tuple[int, int]:
    """``(steal, total)`` clock ticks of all CPUs since boot (``/proc/stat``'s ``cpu`` line)."""
    with open("/proc/stat", encoding="ascii") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal [guest guest_nice: already inside user/nice]
    return fields[7], sum(fields[:8])


def speed_variation(duration_s: float = HOST_SPEED_S, window_s: float = HOST_SPEED_WINDOW_S) -> dict:
    """How steadily this host's CPUs work: the same loop counted per window on every CPU at once.

    A virtual machine's CPU may run slower or faster by tens of percent for seconds at a time (its
    host's other tenants, frequency); every CPU-bound rate measured here inherits that, so a rate's
    coefficient of variation cannot be expected below this one.

    Returns
    -------
    dict
        ``window_s``, ``duration_s`` and ``cpus``: per CPU (str) ``cv`` (coefficient of variation
        of the per-window counts), ``min_ratio`` / ``max_ratio`` (slowest / fastest window over the
        mean), ``lag1`` (:func:`speed_figures`) and ``windows`` (their number); empty ``cpus`` when
        ``duration_s`` is under two windows. With two or more CPUs, ``cross_cpu_r``: the mean
        correlation of the CPUs' per-window counts, pair by pair (near 0: the CPUs' spells are their
        own, so only trials sharing one CPU's moment share its speed). ``steal_share``: the share of
        all CPUs' time the hypervisor took during the probe (``/proc/stat``), None where unknown.
        ``unstable``: some CPU's ``cv`` is at least :data:`UNSTABLE_CV`.
    """
    import json
    import subprocess
    import sys

    n = int(duration_s / window_s)
    out = {"window_s": window_s, "duration_s": n * window_s, "cpus": {}}
    if n < 2:
        return out
    procs = {}
    series: dict[str, list[int]] = {}
    try:
        steal0, total0 = _cpu_ticks()
    except (OSError, ValueError, IndexError):
        steal0 = total0 = None
    try:
        for cpu in sorted(os.sched_getaffinity(0)):
            procs[cpu] = subprocess.Popen([sys.executable, "-c", SPEED_PROBE, str(cpu), str(window_s), str(n)],
                                          stdout=subprocess.PIPE, text=True)
        for cpu, proc in procs.items():
            series[str(cpu)] = json.loads(proc.communicate(timeout=duration_s + 60)[0])
            out["cpus"][str(cpu)] = speed_figures(series[str(cpu)])
    finally:
        for proc in procs.values():  # on an error or Ctrl-C: no probe outlives the call
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    pairs = [_correlation(series[a], series[b]) for i, a in enumerate(series) for b in list(series)[i + 1:]]
    pairs = [r for r in pairs if r is not None]
    out["cross_cpu_r"] = sum(pairs) / len(pairs) if pairs else None
    try:
        steal1, total1 = _cpu_ticks()
        out["steal_share"] = ((steal1 - steal0) / (total1 - total0)
                              if total0 is not None and total1 > total0 else None)
    except (OSError, ValueError, IndexError):
        out["steal_share"] = None
    out["unstable"] = any(f["cv"] >= UNSTABLE_CV for f in out["cpus"].values())
    return out
