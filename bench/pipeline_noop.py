"""Pipeline budget benchmark: time of `dvc repro` when nothing changed (target <= 3 s).

Prints the wall time of one up-to-date check of the whole pipeline (after
bringing it up to date once). Run from the repository root: ./run bench
"""
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    # Stages call `nfvlab`: make the venv's commands visible as ./run does.
    os.environ["PATH"] = f"{REPO / '.venv/bin'}{os.pathsep}{os.environ['PATH']}"
    dvc = shutil.which("dvc")
    subprocess.run([dvc, "repro", "-q"], cwd=REPO, check=True)
    runs = []
    for _ in range(3):
        t0 = time.monotonic()
        out = subprocess.run([dvc, "repro"], cwd=REPO, check=True, capture_output=True, text=True)
        runs.append(time.monotonic() - t0)
        if "up to date" not in out.stdout:
            print(f"not a no-op: {out.stdout.strip()}")
            return 1
    best = min(runs)
    print(f"no-op dvc repro: {best:.2f} s (best of 3; runs {', '.join(f'{r:.2f}' for r in runs)}); "
          f"target <= 3 s: {'met' if best <= 3 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
