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
from nfvlab.lab import catalogue
from nfvlab.lab.core import Lab
from nfvlab.params import SearchParams, TrafficParams
from nfvlab.search import SearchError

FRAME_SIZES = (64, 1518)
SEARCH = SearchParams(method="mlrsearch", pdr_loss_ratio=None, relative_width=0.02,
                      initial_trial_duration_s=0.5, final_trial_duration_s=1.0, duration_sum_s=1.0)


def main(models: list[str]) -> int:
    t0 = time.monotonic()
    ceilings = {}
    for fs in FRAME_SIZES:  # calibrate once if this host has no stored ceiling
        if calibrate.ceiling_for(fs) is None:
            r = calibrate.generator_ceiling(fs)
            calibrate.save_ceiling(fs, r, bidirectional=True)
        ceilings[fs] = calibrate.ceiling_for(fs)
    print(f"{'model':<16} {'size':>5} {'NDR kpps':>9} {'ceiling':>8} {'gen-lim':>7} {'setup s':>8} {'down s':>7}")
    for name in models:
        ok, why = catalogue.realizable(catalogue.get(name))
        if not ok:
            print(f"{name:<16} not realizable: {why}")
            continue
        traffic = TrafficParams(frame_sizes=list(FRAME_SIZES))
        lab = Lab(name)
        with lab:
            gen = measure.generator(lab.streams, traffic, lab)
            rows = []
            for fs in FRAME_SIZES:
                meas = measure.measurer(gen, fs, traffic)
                try:
                    rows.append((fs, measure.search(meas, fs, SEARCH, progress=False,
                                                    max_rate_pps=measure.default_max_rate("10GbE", fs))[0]))
                except SearchError as err:
                    rows.append((fs, err))
        for fs, res in rows:
            found = f"search failed: {res}" if isinstance(res, SearchError) else (
                f"{res.throughput_pps / 1e3:>9.1f} {ceilings[fs] / 1e3:>8.1f} {str(res.generator_limited):>7}")
            print(f"{name:<16} {fs:>5} {found} {lab.setup_s:>8.2f} {lab.teardown_s:>7.2f}")
    print(f"total {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or list(catalogue.MODEL_NAMES)))
