"""Pipeline budget benchmark: wall time of `./run repro`, per stage (target <= 45 min, quick profile,
every build included).

Runs `./run repro` (set-up, the local Kubernetes and CNI builds, `dvc repro`, `dvc push`) in
the repository, passes its output through, and times the set-up and builds (from the start to
dvc's first stage: on a fresh machine the Debian packages, the venvs and the Go builds; cached,
a few seconds) and each stage from the moment dvc announces it ("Running stage '<name>'") to
the next announcement (the last stage: to the end of `dvc repro`). Then prints one line per
stage and the total against the budget. Stages dvc skips (up to date) take no time: pass
``--force`` to re-run every stage, which is what "the quick pipeline after a code change" means.
Numbers describe this host; other jobs on its 2 vCPUs make them longer.

Run as root from anywhere:  .venv/bin/python bench/pipeline.py [--force] [dvc repro args]
"""
from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BUDGET_S = 45 * 60
_STAGE = re.compile(r"^Running stage '([^']+)'")


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {seconds % 60:04.1f} s"


def stage_times(lines_with_time: list[tuple[float, str]], end_s: float) -> list[tuple[str, float]]:
    """(stage, seconds) from ``(monotonic time, output line)`` pairs; a stage ends where the next begins."""
    starts = [(t, m.group(1)) for t, line in lines_with_time if (m := _STAGE.match(line))]
    ends = [t for t, _ in starts[1:]] + [end_s]
    return [(name, end - start) for (start, name), end in zip(starts, ends)]


def main(argv: list[str]) -> int:
    t0 = time.monotonic()
    proc = subprocess.Popen([str(REPO / "run"), "repro", *argv], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, bufsize=1)
    seen: list[tuple[float, str]] = []
    repro_end = None
    assert proc.stdout is not None
    for line in proc.stdout:
        sys.stdout.write(line)
        now = time.monotonic()
        # `dvc push` follows the last stage: its time is not the last stage's.
        if repro_end is None and ("Use `dvc push`" in line or "files pushed" in line
                                  or line.startswith(("Everything is up to date", "Data and pipelines are up to date"))):
            repro_end = now
        seen.append((now, line.rstrip("\n")))
    rc = proc.wait()
    total_s = time.monotonic() - t0
    times = stage_times(seen, repro_end if repro_end is not None else time.monotonic())
    print("\n== ./run repro, per stage (this host)")
    if times:
        first_stage_s = next(t for t, line in seen if _STAGE.match(line)) - t0
        print(f"  {'set-up and builds':28s} {_minutes(first_stage_s):>14s}")
    for name, seconds in times:
        print(f"  {name:28s} {_minutes(seconds):>14s}")
    verdict = "within" if total_s <= BUDGET_S else "OVER"
    print(f"  {'total (set-up, stages, push)':28s} {_minutes(total_s):>14s}   {verdict} the "
          f"{BUDGET_S // 60} min budget; {len(times)} stage(s) ran; exit {rc}")
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
