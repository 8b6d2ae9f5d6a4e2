"""Run an experiment's grid (models x frame sizes x repetitions) and record it all.

    params = nfvlab.params.load("params/experiment_a.yaml")
    run_experiment(params, "data/raw/experiment_a.jsonl")

Every configuration gets a fresh lab per repetition (so repetitions are
independent), a throughput search, and one latency trial at the rate found.
Every trial and search result is appended to the records file as it completes;
a model this host cannot realize is recorded as a ``not-realizable`` note with
the reason, never as a number. Input problems are found before any lab exists.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Union

import sys
import time
from typing import TextIO

from nfvlab import labs, measure
from nfvlab.calibrate import Calibration
from nfvlab.params import ExperimentParams
from nfvlab.records import RecordWriter
from nfvlab.scenario import DensityCell, Resources, Scenario
from nfvlab.search import SearchError
from nfvlab.traffic.select import identity_for
from nfvlab.trial import run_trial


def scenarios(params: ExperimentParams) -> list[Scenario]:
    """The grid: models x pinning x NUMA scenarios (x density cells)."""
    r = params.resources
    out = []
    for model in params.models:
        for pin in r.pinning:
            for numa in r.numa:
                res = Resources(pinning=pin, numa=numa, noisy_load_pct=r.noisy_load_pct,
                                hugepages=r.hugepages, pcdr4sw=r.pcdr4sw, pcdr4nf=r.pcdr4nf)
                if params.density is None:
                    out.append(Scenario(model, res))
                    continue
                d = params.density
                out += [Scenario(model, res, density=DensityCell(t, i, n)) for t in d.topologies
                        for i in d.instances for n in d.nfs_per_instance]
    return out


def check(params: ExperimentParams, backend=None) -> None:
    """Raise :class:`nfvlab.measure.InputError` for anything impossible, creating nothing.

    Per-scenario realizability is not an input error (it is recorded as a
    ``not-realizable`` note); impossible frame sizes, rates and durations are.
    """
    backend = backend or labs.backend_for(params.lab)
    rates = (params.search.max_rate_pps,) if params.search.max_rate_pps else ()
    for fs in params.traffic.frame_sizes:  # what no lab can carry
        measure.check_inputs(fs, port_speed=params.lab.port_speed, mtu=params.lab.mtu, rates_pps=rates,
                             duration_s=params.trial.duration_s)
    not_ready = backend.ready()
    if not_ready:
        raise measure.InputError(not_ready[0])
    for sc in scenarios(params):
        if backend.check(sc):
            continue
        mtu = backend.mtu(sc)
        for fs in params.traffic.frame_sizes:
            try:
                measure.check_inputs(fs, port_speed=params.lab.port_speed, mtu=mtu, rates_pps=rates,
                                     duration_s=params.trial.duration_s)
            except measure.InputError as err:
                raise measure.InputError(f"{sc.label}: {err}") from None


def run_experiment(params: ExperimentParams, records: Union[str, Path], *, backend=None,
                   progress: bool = True, source: Optional[str] = None) -> str:
    """Measure every scenario of ``params`` on ``backend``; append records; return the run id.

    ``backend`` defaults to the one the lab profile names (:func:`nfvlab.labs.backend_for`).
    Labels: those of :meth:`Scenario.labels` and ``repetition`` on every record,
    ``purpose`` (``search`` or ``latency``) on trials (whose frame size is in
    the result), ``frame_size`` and ``goal`` on search results. A scenario the
    lab cannot realize gets one ``not-realizable`` note with the reason.
    """
    backend = backend or labs.backend_for(params.lab)
    check(params, backend)
    grid = scenarios(params)
    why = {sc: backend.check(sc) for sc in grid}
    runnable = [sc for sc in grid if not why[sc]]
    calibration = Calibration.load(params.lab.calibration)
    identity = identity_for(params.lab.generator)
    entry = calibration.entry(identity)
    dump = params.model_dump()
    if source:
        dump["source"] = source
    prov_extra = {"lab": backend.describe(),
                  "generator": {"identity": identity, "calibration_file": str(calibration.path),
                                "ceilings": (entry or {}).get("ceilings")}}
    with RecordWriter(records, params.experiment, dump, extra_provenance=prov_extra) as rec:
        for sc in grid:
            if why[sc]:
                rec.note(f"not realizable: {why[sc][0]}", kind="not-realizable", **sc.labels())
        total = len(runnable) * params.repetitions * len(params.traffic.frame_sizes)
        bar = Progress(params.experiment, total, enabled=progress)
        bar.note(f"{len(runnable)} of {len(grid)} configurations realizable on this {backend.kind} lab, "
                 f"{params.repetitions} repetition(s), {len(params.traffic.frame_sizes)} frame size(s): "
                 f"{total} searches")
        for rep in range(params.repetitions):
            for sc in runnable:
                _measure(params, backend, calibration, sc, rep, rec, bar)
        bar.note(f"done: {bar.done} searches, {bar.trials} trials in {_duration(time.monotonic() - bar.t0)}")
        return rec.run_id


def _duration(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    return f"{m} min {s:02d} s" if m else f"{s} s"


class Progress:
    """One line per finished search: ``i/N``, what was measured, trials, elapsed, estimate left.

    Plain lines (no carriage returns) so they read the same in a terminal, in
    ``papermill --log-output`` (``dvc repro``) and in a log file.
    """

    def __init__(self, name: str, total: int, *, enabled: bool = True, stream: Optional[TextIO] = None) -> None:
        self.name, self.total, self.enabled = name, total, enabled
        self.stream = stream
        self.done = 0
        self.trials = 0
        self.t0 = time.monotonic()

    def note(self, text: str) -> None:
        if self.enabled:
            print(f"{self.name}: {text}", file=self.stream or sys.stdout, flush=True)

    def trial(self) -> None:
        self.trials += 1

    def update(self, what: str, outcome: str) -> None:
        self.done += 1
        elapsed = time.monotonic() - self.t0
        left = elapsed / self.done * (self.total - self.done)
        self.note(f"{self.done}/{self.total} {what}: {outcome}; {self.trials} trials, "
                  f"elapsed {_duration(elapsed)}, about {_duration(left)} left")


def _measure(params: ExperimentParams, backend, calibration: Calibration, scenario: Scenario, rep: int,
             rec: RecordWriter, bar) -> None:
    cl = scenario.labels()
    with measure.bench(backend, params.lab.generator, scenario, params.traffic) as (session, gen):
        for fs in params.traffic.frame_sizes:
            labels = {**cl, "frame_size": fs, "repetition": rep}
            knobs = str(scenario.resources)
            what = f"{scenario.label}{'' if knobs == 'default resources' else f' ({knobs})'} {fs} B rep {rep}"

            def on_trial(t, cl=cl, rep=rep):
                bar.trial()
                rec.trial(t, purpose="search", repetition=rep, **cl)

            meas = measure.measurer(gen, fs, params.traffic, extra={"model": scenario.model})
            ceiling = calibration.ceiling(gen.identity(), fs)
            max_rate = params.search.max_rate_pps or measure.default_max_rate(params.lab.port_speed, fs, ceiling)
            try:
                results = measure.search(
                    meas, fs, params.search, max_rate_pps=max_rate, ceiling_pps=ceiling, progress=False,
                    warmup_s=params.trial.warmup_s, on_trial=on_trial)
            except SearchError as err:
                rec.note(f"search failed: {err}", kind="search-failed", **labels)
                bar.update(what, f"search failed: {err}")
                continue
            if not isinstance(results, list):  # a sweep's DataFrame: no rate to take latency at
                bar.update(what, "sweep done")
                continue
            for r in results:
                rec.search({k: v for k, v in r.to_dict().items() if k != "trials"},
                           goal=r.goal, **labels)
            # Latency at the rate found (the first goal: NDR when searched).
            found = results[0].throughput_pps
            if found and found > 0:
                t = run_trial(gen, found, params.trial.duration_s, fs,
                              bidirectional=params.traffic.bidirectional, kind="trial",
                              extra={"model": scenario.model})
                rec.trial(t, purpose="latency", goal=results[0].goal, repetition=rep, **cl)
            bar.update(what, ", ".join(f"{r.goal} {r.throughput_pps:,.0f} pps" for r in results
                                       if r.throughput_pps is not None) or "no rate found")
