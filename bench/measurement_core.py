"""Measurement-core benchmark: prints measured figures of one run on this host.

1. the embedded generator's ceiling per frame size (direct cable, no DUT);
2. NDR found vs the configured capacity of a tbf-shaped bridge at 64/512/1518 B
   (target: within +-2 %), with a deep buffer and with a shallow one;
3. the coefficient of variation of 5 repeated NDR searches (target <= 2 %);
4. trials and trial-seconds of MLRsearch vs RFC 2544 bisection for NDR + PDR at
   0.5 % width with equal final-trial duration (target: MLRsearch <= 50 %).

Numbers describe this host (2 shared vCPUs, veth links), not a 40GbE testbed.
Run as root:  ./run bench   (or .venv/bin/python bench/measurement_core.py)
"""
from __future__ import annotations

import statistics
import sys
import time

from nfvlab import calibrate
from nfvlab.labs.embedded import EmbeddedLab
from nfvlab.params import GeneratorParams
from nfvlab.scenario import KnownPath, Scenario
from nfvlab.search import mlrsearch, ndr_pdr_bisect, total_cost
from nfvlab.traffic.embedded import EmbeddedGenerator
from nfvlab.trial import GeneratorMeasurer

FRAME_SIZES = (64, 512, 1518)
DURATION_S = 1.0
WIDTH = 0.005
SHALLOW_PPS = 30_000


def main() -> int:
    t_start = time.monotonic()
    print("== 1. generator ceiling on a direct cable (zero-loss, bidirectional, per direction)")
    ceilings = {}
    backend, gen_params = EmbeddedLab(), GeneratorParams()
    cal = calibrate.Calibration.load()
    for fs in FRAME_SIZES:
        r, identity = calibrate.generator_ceiling(backend, gen_params, fs, duration_s=DURATION_S)
        cal.put(identity, fs, r, bidirectional=True)
        cal.save()
        ceilings[fs] = r.throughput_pps
        print(f"  {fs:>5} B: {r.throughput_pps:>10,.0f} pps   ({r.n_trials} trials)")

    # A capacity well inside what the generator sends cleanly at every size.
    capacity = round(0.4 * min(ceilings.values()), -3)
    print(f"\n== 2. NDR on a tbf-shaped bridge of {capacity:,.0f} pps (unidirectional, "
          f"RFC 2544 bisection, width {WIDTH:.1%})")
    worst = 0.0
    for fs in FRAME_SIZES:
        r, err = calibrate.check_known_path(backend, gen_params, fs, capacity, duration_s=DURATION_S,
                                            relative_width=WIDTH)
        worst = max(worst, abs(err))
        print(f"  {fs:>5} B: NDR {r.throughput_pps:>10,.0f} pps  error {err:+.2%}  ({r.n_trials} trials, "
              f"{r.invalid_trials} invalid)")
    print(f"  worst |error| {worst:.2%}  (target <= 2 %: {'met' if worst <= 0.02 else 'NOT met'})")
    print(f"  shallow buffer (tbf-shallow: 6 frames of 1518 B) of {SHALLOW_PPS:,} pps:")
    worst = 0.0
    for fs in FRAME_SIZES:
        r, err = calibrate.check_known_path(backend, gen_params, fs, SHALLOW_PPS, duration_s=DURATION_S,
                                            relative_width=WIDTH, path="tbf-shallow")
        worst = max(worst, abs(err))
        print(f"  {fs:>5} B: NDR {r.throughput_pps:>10,.0f} pps  error {err:+.2%}  ({r.n_trials} trials, "
              f"{r.invalid_trials} invalid)")
    print(f"  worst |error| {worst:.2%}  (target <= 2 %: {'met' if worst <= 0.02 else 'NOT met'})")

    print("\n== 3. repeatability: 5 NDR searches at 64 B on the same tbf path")
    ndrs = []
    for _ in range(5):
        r, _err = calibrate.check_known_path(backend, gen_params, 64, capacity, duration_s=DURATION_S,
                                             relative_width=WIDTH)
        ndrs.append(r.throughput_pps)
    cv = statistics.stdev(ndrs) / statistics.mean(ndrs)
    print("  NDRs: " + ", ".join(f"{x:,.0f}" for x in ndrs))
    print(f"  CV {cv:.2%}  (target <= 2 %: {'met' if cv <= 0.02 else 'NOT met'})")

    print(f"\n== 4. NDR + PDR(0.5 %) at width {WIDTH:.1%}, final trials {DURATION_S:g} s: "
          "MLRsearch vs RFC 2544 bisection")
    cost = {}
    with backend.open(Scenario("tbf-bridge", known_path=KnownPath(capacity, 64))) as session:
        gen = EmbeddedGenerator(session.streams, tracker=session.tracker)
        meas = GeneratorMeasurer(gen, 64, bidirectional=False)
        lo, hi = capacity / 4, capacity * 2
        b = ndr_pdr_bisect(meas, lo, hi, pdr_loss_ratio=0.005, relative_width=WIDTH, duration_s=DURATION_S)
        cost["bisection"] = total_cost(b.values())
        m = mlrsearch(meas, lo, hi, goals={"ndr": 0.0, "pdr": 0.005}, relative_width=WIDTH,
                      initial_trial_duration_s=DURATION_S, final_trial_duration_s=DURATION_S,
                      duration_sum_s=DURATION_S, exceed_ratio=0.0, warmup_duration_s=0.0)
        cost["mlrsearch"] = total_cost(m.values())
        for name, res in (("bisection", b), ("mlrsearch", m)):
            n, s = cost[name]
            print(f"  {name:<10} NDR {res['ndr'].throughput_pps:>9,.0f}  PDR {res['pdr'].throughput_pps:>9,.0f} pps"
                  f"   {n} trials, {s:g} trial-s")
    ratio = cost["mlrsearch"][1] / cost["bisection"][1]
    print(f"  MLRsearch / bisection trial-seconds: {ratio:.0%}  (target <= 50 %: "
          f"{'met' if ratio <= 0.5 else 'NOT met'})")
    print(f"\nbenchmark wall time {time.monotonic() - t_start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
