"""Interleaved searches benchmark: do searches whose trials are spread over time scatter less?

On a VM whose CPUs change speed in seconds-long spells (``bench/host_speed.py``), a search's
trials near its NDR fall into one or two spells, and the NDR is that spell's. This benchmark
measures, in one run, the NDR of each model two ways, alternating which goes first per round:

- ``seq``: one search after another, each on its own lab (as ``nfvlab experiment run`` does);
- ``inter``: every model's lab up at once and their searches run together, one trial at a time,
  the searches taking turns; each search's trials are then as far apart as the others' take.

Only models without a busy poller (the kernel and eBPF ones) can be up at once: a spinning OVS
PMD or testpmd would take the CPU the other labs' trials need. Same search as experiment A's quick
profile (MLRsearch NDR, 2 % width, 1 s final trials, 2 s sum, exceed ratio 0.5). Printed: every
search's NDR as it ends, then per model and way the CV over the rounds and the mean.

    .venv/bin/python bench/interleave.py [--models linux-bridge,macvlan,...] [--rounds 4] [--frame-size 64]
"""
from __future__ import annotations

import argparse
import contextlib
import statistics
import threading
import time
from pathlib import Path

import nfvlab
from nfvlab.calibrate import Calibration
from nfvlab.measure import default_max_rate, measurer, search
from nfvlab.params.measurement import SearchParams, TrafficParams
from nfvlab.system.hostlock import HostLock

REPO = Path(__file__).resolve().parents[1]
KERNEL_AND_EBPF = "linux-bridge,host-routing,macvlan,smartnic-direct,ebpf-tc,ebpf-xdp"
SEARCH = SearchParams(method="mlrsearch", ndr=True, pdr_loss_ratio=None, relative_width=0.02,
                      initial_trial_duration_s=0.5, final_trial_duration_s=1.0, duration_sum_s=2.0,
                      exceed_ratio=0.5)


class Turns:
    """One trial at a time, the searches in a fixed order, each leaving when it ends."""

    def __init__(self, keys: list[str]) -> None:
        self._cv = threading.Condition()
        self._order = list(keys)
        self._next = 0

    def run(self, key: str, trial, *args):
        with self._cv:
            self._cv.wait_for(lambda: self._order[self._next] == key)
        try:
            return trial(*args)
        finally:
            with self._cv:
                self._next = (self._order.index(key) + 1) % len(self._order)
                self._cv.notify_all()

    def leave(self, key: str) -> None:
        with self._cv:
            at = self._order.index(key)
            self._order.remove(key)
            if self._order:
                self._next = (self._next - (at < self._next)) % len(self._order)
            self._cv.notify_all()


def ndr_pps(lab: nfvlab.LabParams, session, frame_size: int, turns: Turns | None = None,
            key: str = "") -> float:
    """One NDR search on an open lab session (trials taking turns when ``turns`` is given)."""
    traffic = TrafficParams(frame_sizes=[frame_size])
    gen = nfvlab.generator_for(lab.generator, session.streams, traffic, session.tracker, session.busy_roles)
    meas = measurer(gen, frame_size, traffic, search=SEARCH)
    calibration = Calibration.load(REPO / lab.calibration if lab.calibration else None)
    ceiling = calibration.ceiling(gen.identity(), frame_size)
    trial = meas if turns is None else (lambda rate, duration: turns.run(key, meas, rate, duration))
    result = search(trial, frame_size, SEARCH, max_rate_pps=default_max_rate(lab.port_speed, frame_size, ceiling),
                    ceiling_pps=ceiling, progress=False)[0]
    return result.throughput_pps or 0.0


def cv_pct(values: list[float]) -> float:
    """Coefficient of variation, %, of ``values`` (NaN under two values or a zero mean)."""
    mean = statistics.mean(values)
    return statistics.stdev(values) / mean * 100 if len(values) > 1 and mean else float("nan")


def sequential(lab, backend, models: list[str], frame_size: int) -> dict[str, float]:
    out = {}
    for m in models:
        with backend.open(nfvlab.Scenario(m)) as session:
            out[m] = ndr_pps(lab, session, frame_size)
    return out


def interleaved(lab, backend, models: list[str], frame_size: int) -> dict[str, float]:
    out: dict[str, float] = {}
    errors: list[BaseException] = []
    with contextlib.ExitStack() as stack:
        sessions = {m: stack.enter_context(backend.open(nfvlab.Scenario(m))) for m in models}
        turns = Turns(models)

        def one(m: str) -> None:
            try:
                out[m] = ndr_pps(lab, sessions[m], frame_size, turns, m)
            except BaseException as err:  # re-raised in the main thread, after every search ended
                errors.append(err)
            finally:
                turns.leave(m)

        threads = [threading.Thread(target=one, args=(m,)) for m in models]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    if errors:
        raise errors[0]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=KERNEL_AND_EBPF, help="models without a busy poller, comma-separated")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--frame-size", type=int, default=64)
    args = ap.parse_args()
    models = args.models.split(",")
    lab = nfvlab.params.load(REPO / "params/lab.yaml", nfvlab.LabParams)  # the pipeline's lab and calibration
    backend = nfvlab.backend_for(lab)
    ways = {"seq": sequential, "inter": interleaved}
    ndrs: dict[tuple[str, str], list[float]] = {(w, m): [] for w in ways for m in models}
    t0 = time.monotonic()
    with HostLock("bench/interleave.py", for_run=True):  # the labs of one run share the host lock
        for rnd in range(args.rounds):
            for way in (("seq", "inter") if rnd % 2 == 0 else ("inter", "seq")):
                for m, pps in ways[way](lab, backend, models, args.frame_size).items():
                    ndrs[way, m].append(pps)
                    print(f"round {rnd} {way:5s} {m:16s} NDR {pps / 1e3:8.1f} kpps "
                          f"({time.monotonic() - t0:5.0f} s)", flush=True)
    print(f"\n== NDR over {args.rounds} rounds, {args.frame_size} B, per direction (this host)")
    for m in models:
        for way in ways:
            print(f"  {m:16s} {way:5s} CV {cv_pct(ndrs[way, m]):5.1f} %   "
                  f"mean {statistics.mean(ndrs[way, m]) / 1e3:7.1f} kpps")
    for way in ways:
        print(f"  median CV {way:5s} {statistics.median(cv_pct(ndrs[way, m]) for m in models):5.1f} %")


if __name__ == "__main__":
    main()
