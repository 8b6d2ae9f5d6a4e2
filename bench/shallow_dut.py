"""Shallow-buffer DUT benchmark: is a catch-up burst of the generator ever blamed on the DUT?

The DUT is hidden from the generator: the embedded lab's tbf bridge (tg0 -> nic0 -> br0 -> nic1
-> tg1 and back) with both egresses re-shaped to CAPACITY_BPS (300 Mbit/s: 24.8 kpps at 1518 B)
by a tbf whose bucket holds BUCKET_FRAMES frames and whose queue holds QUEUE_FRAMES (4) frames of
the size under test. At 64 and 512 B the same packet rate as at 1518 B is set, so the shaper is the
bottleneck at every size. A burst the generator sends beyond those few frames is dropped although
the offered rate is within the capacity: only a generator that never bursts finds it.

Search: as the experiments run it (nfvlab.measure.search), with the quick profile's search
parameters (params/quick/experiment_a.yaml: MLRsearch NDR, 2 % width, 0.5/1 s trials, 2 s sum,
exceed ratio 0.5; minimum load its min_rate_pps, maximum MAX_RATE_X x the capacity) and its traffic (bidirectional, 1 flow, probes at 1000 pps), generator
``tx`` TX (default ``auto``: the XDP path here, as the kernel models use; ``socket``: AF_PACKET).

Prints, per round (ROUNDS, default 2, back to back) and frame size 64 / 512 / 1518 B: the NDR, the
capacity, NDR / capacity - 1 (target: within +-2 %), the trials and how many were invalid (with
the first invalid reason). Asserts nothing. Run as root (holds the host lock; waits up to
$NFVLAB_LOCK_WAIT_S):

    .venv/bin/python bench/shallow_dut.py [ROUNDS] [TX]
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import yaml

from nfvlab import measure
from nfvlab.labs.embedded import EmbeddedLab
from nfvlab.labs.embedded import state
from nfvlab.params import GeneratorParams, SearchParams, TrafficParams
from nfvlab.scenario import KnownPath, Scenario
from nfvlab.system.hostlock import HostLock

REPO = Path(__file__).resolve().parents[1]
FRAME_SIZES = (64, 512, 1518)
CAPACITY_BPS = 300e6
#: One packet rate for every size: 300 Mbit/s of 1518 B frames (1514 B on a veth).
CAPACITY_PPS = CAPACITY_BPS / 8 / 1514
BUCKET_FRAMES, QUEUE_FRAMES = 2, 4
TARGET = 0.02
#: The search's maximum load, x capacity (its minimum: the profile's min_rate_pps).
MAX_RATE_X = 3


def quick_search() -> tuple[SearchParams, dict]:
    spec = yaml.safe_load((REPO / "params/quick/experiment_a.yaml").read_text())
    return SearchParams(**spec["search"]), spec["traffic"]


def reshape(lab_id: str, frame_size: int) -> None:
    """Both egresses of the bridge: CAPACITY_PPS, a bucket and a queue of a few frames of ``frame_size``."""
    wire = frame_size - 4
    bucket = BUCKET_FRAMES * wire + 64  # slack for tbf's rounding of bytes to time
    for ifname in ("nic0", "nic1"):
        subprocess.run(["ip", "netns", "exec", f"{state.PREFIX}{lab_id}-wk", "tc", "qdisc", "replace", "dev",
                        ifname, "root", "tbf", "rate", f"{CAPACITY_PPS * wire * 8:.0f}bit",
                        "burst", str(bucket), "limit", str(bucket + QUEUE_FRAMES * wire)], check=True)


def ndr(frame_size: int, sp: SearchParams, traffic: dict, tx: str) -> tuple[float, int, int, str, str]:
    tp = TrafficParams(**{**traffic, "frame_sizes": [frame_size]})
    scenario = Scenario("tbf-bridge", known_path=KnownPath(CAPACITY_PPS, frame_size))
    with measure.bench(EmbeddedLab(), GeneratorParams(tx=tx), scenario, tp) as (session, gen):
        reshape(session.info["lab_id"], frame_size)
        meas = measure.measurer(gen, frame_size, tp, search=sp)
        reasons: list[str] = []
        (r,) = measure.search(meas, frame_size, sp, max_rate_pps=MAX_RATE_X * CAPACITY_PPS, progress=False,
                              on_trial=lambda t: reasons.extend([] if t.valid else [t.invalid_reason or ""]))
        return r.throughput_pps or 0.0, r.n_trials, r.invalid_trials, gen.tx, (reasons[0] if reasons else "")


def main(rounds: int = 2, tx: str = "auto") -> int:
    sp, traffic = quick_search()
    t0 = time.monotonic()
    print(f"shallow DUT: tbf {CAPACITY_BPS / 1e6:.0f} Mbit/s at 1518 B = {CAPACITY_PPS:,.0f} pps at every size, "
          f"bucket {BUCKET_FRAMES} + queue {QUEUE_FRAMES} frames; quick profile's search ({sp.method}, "
          f"width {sp.relative_width:.0%}); target |NDR / capacity - 1| <= {TARGET:.0%}")
    with HostLock("bench/shallow_dut.py", for_run=True):
        for rnd in range(1, rounds + 1):
            for fs in FRAME_SIZES:
                pps, n, bad, used, why = ndr(fs, sp, traffic, tx)
                err = pps / CAPACITY_PPS - 1
                print(f"  round {rnd} {fs:>5} B: NDR {pps:>9,.0f} pps / {CAPACITY_PPS:,.0f}  {err:+.1%} "
                      f"({'met' if abs(err) <= TARGET else 'NOT met'}); tx {used}, {n} trials, {bad} invalid"
                      + (f" (first: {why[:160]})" if why else ""), flush=True)
    print(f"wall time {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(*(int(a) for a in sys.argv[1:2]), *sys.argv[2:3]))
