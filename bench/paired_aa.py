"""A/A benchmark: does pairing trials close in time cancel this host's noise?

Issue 41's first step ("measure before building"). One configuration (model, frame size) is compared
with itself, so every true ratio is 1:

- ``self``: one lab instance against itself;
- ``twin``: that instance against a second instance of the same model, up at the same time (the
  idle one sends nothing, and a kernel or eBPF model's lab uses no CPU without traffic).

After one NDR search on the first instance, every trial is offered a fixed moderate overload
(``--overload`` x the NDR) for ``--trial-s`` seconds and measured by its forwarding rate (frames
received per second, per direction, both directions summed). Trials come in blocks of four, arms in
ABBA or BAAB order at random; a block's paired log-ratio is ``log(A1 A2) / 2 - log(B1 B2) / 2``.
The unpaired comparison takes the same trials, A from one block and B from a block half the run
away (minutes apart, as two configurations measured one after the other are).

Printed per comparison: the blocks, the SD of the paired and of the unpaired log-ratio and their
quotient (pairing helps as the issue needs when it is at most 0.5), the mean ratio with its 95 %
interval (an A/A interval must hold 1), the difference detectable at 80 % power with the blocks
measured, and the share of windows of 8 blocks whose paired t-test says "different" at 5 % (the
false positive rate; about 0.05 expected). Also the host probe's figures before the blocks.

    .venv/bin/python bench/paired_aa.py [--model ebpf-tc] [--frame-size 64] [--blocks 24]
        [--trial-s 1.0] [--overload 1.1] [--seed 1]
"""
from __future__ import annotations

import argparse
import contextlib
import math
import random
import statistics
import time
from pathlib import Path

import nfvlab
from nfvlab.calibrate import Calibration
from nfvlab.measure import default_max_rate, measurer, search
from nfvlab.paired import PAIRED_VERDICTS, block_log_ratio, paired_test, schedule
from nfvlab.params.measurement import TrafficParams
from nfvlab.system.host import speed_variation
from nfvlab.system.hostlock import HostLock
from nfvlab.trial import run_trial

REPO = Path(__file__).resolve().parents[1]
WINDOW_BLOCKS = 8

if __package__ in (None, ""):
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
from interleave import SEARCH  # noqa: E402  (experiment A's quick search, as bench/interleave.py runs it)


def forwarding_pps(gen, rate_pps: float, trial_s: float, frame_size: int, tries: int = 3) -> float:
    """Frames received per second over both directions in one trial at ``rate_pps`` (per direction);
    an invalid trial (the generator stalled beyond its budget) is repeated, up to ``tries`` times."""
    for _ in range(tries):
        result = run_trial(gen, rate_pps, trial_s, frame_size, bidirectional=True)
        if result.valid:
            return sum(d.received_packets for d in result.directions) / trial_s
    return float("nan")


def summary(name: str, paired: list[float], unpaired: list[float]) -> None:
    """Print one comparison's figures from its per-block paired and unpaired log-ratios."""
    paired = [d for d in paired if math.isfinite(d)]
    unpaired = [d for d in unpaired if math.isfinite(d)]
    sd_p, sd_u = statistics.stdev(paired), statistics.stdev(unpaired)
    r = paired_test(paired, level=0.05, margin=0.05)
    windows = [paired[i:i + WINDOW_BLOCKS] for i in range(0, len(paired) - WINDOW_BLOCKS + 1, WINDOW_BLOCKS)]
    different = PAIRED_VERDICTS[:2]  # "larger", "smaller"
    positives = sum(paired_test(w, level=0.05, margin=0.05).verdict in different for w in windows)
    print(f"  {name:5s} blocks {r.blocks:3d}   SD paired {sd_p:.4f}   SD unpaired {sd_u:.4f}   "
          f"paired / unpaired {sd_p / sd_u:.2f} (target <= 0.5)")
    print(f"        ratio {r.ratio:.4f} [{r.ci_low:.4f}, {r.ci_high:.4f}] (95 %; holds 1: {r.ci_low <= 1 <= r.ci_high}; "
          f"verdict: {r.verdict}, p different {r.p_different:.3f}, p outside +-5 % {r.p_equivalent:.3f}, "
          f"blocks needed {r.blocks_needed or '-'})   detectable at n={r.blocks}: {100 * r.detectable:.1f} %   "
          f"windows of {WINDOW_BLOCKS} saying 'different': {positives} of {len(windows)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="ebpf-tc", help="a model without a busy poller (kernel or eBPF)")
    ap.add_argument("--frame-size", type=int, default=64)
    ap.add_argument("--blocks", type=int, default=24, help="blocks per comparison (4 trials each)")
    ap.add_argument("--trial-s", type=float, default=1.0)
    ap.add_argument("--overload", type=float, default=1.1, help="offered load as a multiple of the NDR")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    lab = nfvlab.params.load(REPO / "params/lab.yaml", nfvlab.LabParams)  # the pipeline's lab and calibration
    backend = nfvlab.backend_for(lab)
    traffic = TrafficParams(frame_sizes=[args.frame_size])
    t0 = time.monotonic()
    with HostLock("bench/paired_aa.py", for_run=True), contextlib.ExitStack() as stack:
        speed = speed_variation()
        for cpu, f in sorted(speed["cpus"].items()):
            print(f"host probe CPU {cpu}: CV {100 * f['cv']:.1f} %, lag-1 r {f['lag1']:.2f}, "
                  f"{f['min_ratio']:.2f}-{f['max_ratio']:.2f}x")
        print(f"host probe: across CPUs r {speed['cross_cpu_r']:.2f}, steal {speed['steal_share']:.2%}")
        gens = []
        for _ in range(2):
            session = stack.enter_context(backend.open(nfvlab.Scenario(args.model)))
            gens.append(nfvlab.generator_for(lab.generator, session.streams, traffic, session.tracker,
                                             session.busy_roles))
        calibration = Calibration.load(REPO / lab.calibration if lab.calibration else None)
        ceiling = calibration.ceiling(gens[0].identity(), args.frame_size)
        meas = measurer(gens[0], args.frame_size, traffic, search=SEARCH)
        ndr = search(meas, args.frame_size, SEARCH, ceiling_pps=ceiling, progress=False,
                     max_rate_pps=default_max_rate(lab.port_speed, args.frame_size, ceiling))[0].throughput_pps
        rate = args.overload * ndr
        print(f"{args.model} {args.frame_size} B: NDR {ndr / 1e3:.1f} kpps per direction "
              f"(ceiling {ceiling / 1e3 if ceiling else float('nan'):.1f}); trials at {rate / 1e3:.1f} kpps, "
              f"{args.trial_s:g} s ({time.monotonic() - t0:.0f} s)", flush=True)
        arms = {"self": (gens[0], gens[0]), "twin": (gens[0], gens[1])}
        blocks: dict[str, list[tuple[float, float, float, float]]] = {k: [] for k in arms}
        orders = {name: schedule(args.blocks, rng) for name in arms}
        for b in range(args.blocks):
            for name in (("self", "twin") if b % 2 == 0 else ("twin", "self")):
                a_gen, b_gen = arms[name]
                order = orders[name][b]
                got = {"A": [], "B": []}
                for arm in order:
                    got[arm].append(forwarding_pps(a_gen if arm == "A" else b_gen, rate, args.trial_s,
                                                   args.frame_size))
                blocks[name].append((*got["A"], *got["B"]))
            print(f"block {b + 1}/{args.blocks} ({time.monotonic() - t0:.0f} s)", flush=True)
    print(f"\n== A/A: {args.model} {args.frame_size} B, {args.trial_s:g} s trials at {args.overload:g}x NDR "
          f"(this host, one run)")
    for name, rows in blocks.items():
        ok = [row for row in rows if all(math.isfinite(x) and x > 0 for x in row)]  # no block with a lost trial
        n = len(ok)
        paired = [block_log_ratio(row[:2], row[2:]) for row in ok]
        far = [block_log_ratio(ok[i][:2], ok[(i + n // 2) % n][2:]) for i in range(n)]
        summary(name, paired, far)


if __name__ == "__main__":
    main()
