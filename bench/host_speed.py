"""Host benchmark: how steadily this machine's CPUs work, the floor under every rate's scatter.

The same fixed loop runs pinned on every CPU at once, counted per window (0.5 s and 1 s, about a
search trial's length), for ``--seconds`` (default 30). Printed per CPU and window: the coefficient
of variation (CV) of the per-window counts, the slowest and fastest window over the mean, and the
windows in order (as ratios to the mean), so plateaus (seconds-long slow or fast spells) show.

A CPU-bound data path measured here forwards more in a fast window than in a slow one; an NDR over
1 s trials then scatters about as much from one search to the next, whatever the search does
(docs/measurement.md, "The host's own speed"). Run it on a quiet host (no lab, no build).

    .venv/bin/python bench/host_speed.py [--seconds 30]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from nfvlab.system.host import SPEED_PROBE, speed_figures


def series(window_s: float, seconds: float) -> dict[int, list[int]]:
    """Per CPU, the loop's counts per window, every CPU probed at once."""
    n = int(seconds / window_s)
    procs = {cpu: subprocess.Popen([sys.executable, "-c", SPEED_PROBE, str(cpu), str(window_s), str(n)],
                                   stdout=subprocess.PIPE, text=True) for cpu in sorted(os.sched_getaffinity(0))}
    try:
        return {cpu: json.loads(p.communicate(timeout=seconds + 60)[0]) for cpu, p in procs.items()}
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=30.0, help="length of each window size's probe, s")
    a = ap.parse_args()
    for window_s in (0.5, 1.0):
        for cpu, counts in series(window_s, a.seconds).items():
            f = speed_figures(counts)
            mean = sum(counts) / len(counts)
            print(f"CPU {cpu}, {window_s:g} s windows x {f['windows']}: CV {100 * f['cv']:.1f} %, "
                  f"slowest {f['min_ratio']:.2f}x, fastest {f['max_ratio']:.2f}x the mean "
                  f"(fastest / slowest {f['max_ratio'] / f['min_ratio']:.2f})")
            print("   " + " ".join(f"{c / mean:.2f}" for c in counts))


if __name__ == "__main__":
    main()
