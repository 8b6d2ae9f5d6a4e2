"""Per-trial overhead of the embedded generator: one-shot nfvlab-gen vs one persistent process.

On one lab per model (linux-bridge, ebpf-xdp), runs ``TRIALS`` short trials (``DURATION_S``,
64 B, bidirectional, at a rate every model carries without loss) in each mode, the two
modes alternated trial by trial, and PRINTS per model and mode: the overhead per trial
(wall time of ``run_trial`` minus the trial's traffic duration; median and mean), the
trials ruled invalid, and the ratio persistent / one-shot of the median overhead, with
the target (persistent overhead at most a third of one-shot's). The persistent
generator's first trial (which starts the process) is counted, as a lab's would be.
Holds the host lock while the labs are open (EmbeddedLab takes it).

Run as root:  .venv/bin/python bench/trial_overhead.py [TRIALS]
"""
from __future__ import annotations

import statistics
import sys
import time

from nfvlab.labs.embedded import EmbeddedLab
from nfvlab.scenario import Scenario
from nfvlab.traffic.embedded import EmbeddedGenerator
from nfvlab.trial import run_trial

MODELS = ("linux-bridge", "ebpf-xdp")
TRIALS = 30
DURATION_S = 0.2
RATE_PPS = 20_000
FRAME_SIZE = 64
TARGET_RATIO = 1 / 3


def one_trial(gen: EmbeddedGenerator) -> tuple[float, bool]:
    """One trial's wall time beyond its traffic, seconds, and whether it was valid."""
    t0 = time.monotonic()
    r = run_trial(gen, RATE_PPS, DURATION_S, FRAME_SIZE, bidirectional=True)
    return time.monotonic() - t0 - DURATION_S, r.valid


def main() -> int:
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else TRIALS
    print(f"{trials} trials per mode, {DURATION_S:g} s each at {RATE_PPS:,} pps, {FRAME_SIZE} B, bidirectional; "
          "modes alternated")
    for model in MODELS:
        with EmbeddedLab().open(Scenario(model)) as session:
            gens = {"one-shot": EmbeddedGenerator(session.streams, tracker=session.tracker, persistent=False),
                    "persistent": EmbeddedGenerator(session.streams, tracker=session.tracker, persistent=True)}
            seen: dict[str, list[float]] = {m: [] for m in gens}
            invalid = dict.fromkeys(gens, 0)
            try:
                for _ in range(trials):
                    for mode, gen in gens.items():
                        extra_s, valid = one_trial(gen)
                        seen[mode].append(extra_s)
                        invalid[mode] += not valid
            finally:
                for gen in gens.values():
                    gen.close()
        print(f"\n== {model}")
        for mode, xs in seen.items():
            print(f"  {mode:<10} overhead per trial: median {statistics.median(xs) * 1e3:6.1f} ms, "
                  f"mean {statistics.mean(xs) * 1e3:6.1f} ms, max {max(xs) * 1e3:6.1f} ms   "
                  f"({invalid[mode]} of {len(xs)} trials invalid)")
        ratio = statistics.median(seen["persistent"]) / statistics.median(seen["one-shot"])
        print(f"  persistent / one-shot (median): {ratio:.2f}  (target <= {TARGET_RATIO:.2f}: "
              f"{'met' if ratio <= TARGET_RATIO else 'NOT met'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
