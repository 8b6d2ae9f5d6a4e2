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

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

from tqdm import tqdm

from nfvlab import measure
from nfvlab.lab import catalogue
from nfvlab.lab.core import LAB_MTU, Lab, resource_problem
from nfvlab.lab.resources import Resources
from nfvlab.lab.servicechain import build_service_matrix
from nfvlab.params import ExperimentParams
from nfvlab.records import RecordWriter
from nfvlab.search import SearchError
from nfvlab.trial import run_trial

def realizability(models: list[str]) -> dict[str, tuple[bool, str]]:
    """``{model: (realizable here, reason if not)}`` for the embedded lab."""
    feats = catalogue.kernel_features()
    return {m: catalogue.realizable(catalogue.get(m), feats) for m in models}


@dataclass(frozen=True)
class Config:
    """One lab configuration of an experiment's grid (frame sizes are swept inside)."""

    model: str
    resources: Resources
    topology: Optional[str] = None
    """Density grid only: ``csc`` / ``csp``, with ``instances`` x ``nfs``."""
    instances: Optional[int] = None
    nfs: Optional[int] = None

    def labels(self) -> dict:
        """Record labels: model, pinning, numa (and density cell when set)."""
        out = {"model": self.model, "pinning": self.resources.pinning, "numa": self.resources.numa}
        if self.resources.noisy_load_pct is not None:
            out["noisy_load_pct"] = self.resources.noisy_load_pct
        if self.topology is not None:
            out.update(topology=self.topology, instances=self.instances, nfs=self.nfs)
        return out

    def lab(self) -> Lab:
        if self.topology is None:
            return Lab(self.model, resources=self.resources)
        build = functools.partial(build_service_matrix, topology=self.topology,
                                  instances=self.instances, nfs=self.nfs)
        return Lab(self.model, builder=build, resources=self.resources,
                   label=f"{self.topology} {self.instances}x{self.nfs}")


def configurations(params: ExperimentParams) -> list[Config]:
    """The grid: models x pinning x NUMA scenarios (x density cells)."""
    r = params.resources
    out = []
    for model in params.models:
        for pin in r.pinning:
            for numa in r.numa:
                res = Resources(pinning=pin, numa=numa, noisy_load_pct=r.noisy_load_pct,
                                hugepages=r.hugepages, pcdr4sw=r.pcdr4sw, pcdr4nf=r.pcdr4nf)
                if params.density is None:
                    out.append(Config(model, res))
                    continue
                d = params.density
                out += [Config(model, res, t, i, n) for t in d.topologies for i in d.instances
                        for n in d.nfs_per_instance]
    return out


def not_realizable_reason(config: Config, model_ok: tuple[bool, str]) -> Optional[str]:
    """Why this host cannot run ``config`` (``None`` if it can); creates nothing."""
    if not model_ok[0]:
        return model_ok[1]
    return resource_problem(catalogue.get(config.model), config.resources)


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

    Labels: those of :meth:`Config.labels` and ``repetition`` on every record,
    ``purpose`` (``search`` or ``latency``) on trials (whose frame size is in
    the result), ``frame_size`` and ``goal`` on search results. A configuration
    this host cannot realize gets one ``not-realizable`` note with the reason.
    """
    check(params)
    model_ok = realizability(params.models)
    configs = configurations(params)
    why = {c: not_realizable_reason(c, model_ok[c.model]) for c in configs}
    runnable = [c for c in configs if why[c] is None]
    dump = params.model_dump()
    if source:
        dump["source"] = source
    with RecordWriter(records, params.experiment, dump) as rec:
        for c in configs:
            if why[c] is not None:
                rec.note(f"not realizable: {why[c]}", kind="not-realizable", **c.labels())
        total = len(runnable) * params.repetitions * len(params.traffic.frame_sizes)
        bar = tqdm(total=total, desc=params.experiment, unit="search", disable=not progress)
        try:
            for rep in range(params.repetitions):
                for c in runnable:
                    _measure_config(params, c, rep, rec, bar)
        finally:
            bar.close()
        return rec.run_id


def _measure_config(params: ExperimentParams, config: Config, rep: int, rec: RecordWriter, bar) -> None:
    cl = config.labels()
    with config.lab() as lab:
        gen = measure.generator(lab.streams, params.traffic, lab, cpu=params.lab.generator_cpu)
        for fs in params.traffic.frame_sizes:
            labels = {**cl, "frame_size": fs, "repetition": rep}
            bar.set_postfix_str(" ".join(str(v) for v in cl.values()) + f" {fs} B rep {rep}")
            meas = measure.measurer(gen, fs, params.traffic, extra={"model": config.model})
            max_rate = params.search.max_rate_pps or measure.default_max_rate(params.lab.port_speed, fs)
            try:
                results = measure.search(
                    meas, fs, params.search, max_rate_pps=max_rate, progress=False,
                    warmup_s=params.trial.warmup_s,
                    on_trial=lambda t: rec.trial(t, purpose="search", repetition=rep, **cl))
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
                              extra={"model": config.model})
                rec.trial(t, purpose="latency", goal=results[0].goal, repetition=rep, **cl)
            bar.update(1)
