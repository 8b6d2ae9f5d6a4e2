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

from tqdm import tqdm

from nfvlab import measure
from nfvlab.lab import catalogue
from nfvlab.lab.core import LAB_MTU, Lab
from nfvlab.params import ExperimentParams
from nfvlab.records import RecordWriter
from nfvlab.search import SearchError
from nfvlab.trial import run_trial

def realizability(models: list[str]) -> dict[str, tuple[bool, str]]:
    """``{model: (realizable here, reason if not)}`` for the embedded lab."""
    feats = catalogue.kernel_features()
    return {m: catalogue.realizable(catalogue.get(m), feats) for m in models}


def check(params: ExperimentParams) -> None:
    """Raise :class:`nfvlab.measure.InputError` for anything impossible, creating nothing."""
    if params.lab.kind != "local":
        raise measure.InputError(f"lab.kind {params.lab.kind!r}: only the embedded lab ('local') "
                                 "is implemented in this version")
    for fs in params.traffic.frame_sizes:
        rates = (params.search.max_rate_pps,) if params.search.max_rate_pps else ()
        measure.check_inputs(fs, port_speed=params.lab.port_speed, mtu=LAB_MTU, rates_pps=rates,
                             duration_s=params.trial.duration_s)


def run_experiment(params: ExperimentParams, records: Union[str, Path], *,
                   progress: bool = True, source: Optional[str] = None) -> str:
    """Measure every configuration of ``params``; append records; return the run id.

    Labels: ``model`` and ``repetition`` on every record, ``purpose``
    (``search`` or ``latency``) on trials (whose frame size is in the result),
    ``frame_size`` and ``goal`` on search results.
    """
    check(params)
    real = realizability(params.models)
    configs = [(m, fs, rep) for rep in range(params.repetitions) for m in params.models
               if real[m][0] for fs in params.traffic.frame_sizes]
    dump = params.model_dump()
    if source:
        dump["source"] = source
    with RecordWriter(records, params.experiment, dump) as rec:
        for m, (ok, why) in real.items():
            if not ok:
                rec.note(f"not realizable: {why}", model=m, kind="not-realizable")
        bar = tqdm(total=len(configs), desc=params.experiment, unit="search", disable=not progress)
        try:
            for rep in range(params.repetitions):
                for model in params.models:
                    if real[model][0]:
                        _measure_model(params, model, rep, rec, bar)
        finally:
            bar.close()
        return rec.run_id


def _measure_model(params: ExperimentParams, model: str, rep: int, rec: RecordWriter, bar) -> None:
    with Lab(model) as lab:
        gen = measure.generator(lab.streams, params.traffic, lab, cpu=params.lab.generator_cpu)
        for fs in params.traffic.frame_sizes:
            labels = {"model": model, "frame_size": fs, "repetition": rep}
            bar.set_postfix_str(f"{model} {fs} B rep {rep}")
            meas = measure.measurer(gen, fs, params.traffic, extra={"model": model})
            max_rate = params.search.max_rate_pps or measure.default_max_rate(params.lab.port_speed, fs)
            try:
                results = measure.search(
                    meas, fs, params.search, max_rate_pps=max_rate, progress=False,
                    warmup_s=params.trial.warmup_s,
                    on_trial=lambda t: rec.trial(t, purpose="search", model=model, repetition=rep))
            except SearchError as err:
                rec.note(f"search failed: {err}", kind="search-failed", **labels)
                bar.update(1)
                continue
            if not isinstance(results, list):  # a sweep's DataFrame: no rate to take latency at
                bar.update(1)
                continue
            for r in results:
                rec.search({k: v for k, v in r.to_dict().items() if k != "trials"},
                           goal=r.goal, **labels)
            # Latency at the rate found (the first goal: NDR when searched).
            found = results[0].throughput_pps
            if found and found > 0:
                t = run_trial(gen, found, params.trial.duration_s, fs,
                              bidirectional=params.traffic.bidirectional, kind="trial",
                              extra={"model": model})
                rec.trial(t, purpose="latency", goal=results[0].goal, model=model, repetition=rep)
            bar.update(1)
