"""Every networking model's NDR at 64 B and 1518 B, with set-up and teardown times.

One run, printed: per model and frame size the NDR found by MLRsearch (per
direction, bidirectional, 1 s trials, 2 % width), the generator's calibrated
ceiling at that size and whether the result is generator-limited (>= 90 % of
it); per model the lab's set-up and teardown time (targets: <= 5 s, <= 3 s).
Models this host cannot realize are printed with the reason.

Numbers describe this host (2 shared vCPUs, veth links), not a 40 GbE testbed.
Run as root:  .venv/bin/python bench/models.py [MODEL ...]
"""
from __future__ import annotations

import sys
import time

from nfvlab import calibrate, measure
from nfvlab.labs.embedded import EmbeddedLab
from nfvlab.params import GeneratorParams, SearchParams, TrafficParams
from nfvlab.scenario import MODEL_NAMES, Scenario
from nfvlab.search import SearchError
from nfvlab.traffic.select import identity_for

FRAME_SIZES = (64, 1518)
SEARCH = SearchParams(method="mlrsearch", pdr_loss_ratio=None, relative_width=0.02,
                      initial_trial_duration_s=0.5, final_trial_duration_s=1.0, duration_sum_s=1.0)


def main(models: list[str]) -> int:
    t0 = time.monotonic()
    ceilings = {}
    backend, gen_params = EmbeddedLab(), GeneratorParams()
    cal = calibrate.Calibration.load()
    identity = identity_for(gen_params)
    for fs in FRAME_SIZES:  # calibrate once if this generator has no stored ceiling
        if cal.ceiling(identity, fs) is None:
            r, identity = calibrate.generator_ceiling(backend, gen_params, fs)
            cal.put(identity, fs, r, bidirectional=True)
            cal.save()
        ceilings[fs] = cal.ceiling(identity, fs)
    print(f"{'model':<16} {'size':>5} {'NDR kpps':>9} {'ceiling':>8} {'gen-lim':>7} {'setup s':>8} {'down s':>7}")
    for name in models:
        why = backend.check(Scenario(name))
        if why:
            print(f"{name:<16} not realizable: {why[0]}")
            continue
        traffic = TrafficParams(frame_sizes=list(FRAME_SIZES))
        with measure.bench(backend, gen_params, Scenario(name), traffic) as (session, gen):
            setup_s = session.info["setup_s"]
            rows = []
            for fs in FRAME_SIZES:
                meas = measure.measurer(gen, fs, traffic)
                try:
                    rows.append((fs, measure.search(meas, fs, SEARCH, progress=False, ceiling_pps=ceilings[fs],
                                                    max_rate_pps=measure.default_max_rate("10GbE", fs,
                                                                                          ceilings[fs]))[0]))
                except SearchError as err:
                    rows.append((fs, err))
            t_down = time.monotonic()
        teardown_s = time.monotonic() - t_down
        for fs, res in rows:
            found = f"search failed: {res}" if isinstance(res, SearchError) else (
                f"{res.throughput_pps / 1e3:>9.1f} {ceilings[fs] / 1e3:>8.1f} {str(res.generator_limited):>7}")
            print(f"{name:<16} {fs:>5} {found} {setup_s:>8.2f} {teardown_s:>7.2f}")
    print(f"total {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or list(MODEL_NAMES)))
