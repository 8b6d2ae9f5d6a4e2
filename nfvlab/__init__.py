"""nfvlab: benchmarking network performance in containerized infrastructure.

The data flow, one way: a :class:`Scenario` (what is benchmarked) is realized by a
lab backend (:func:`backend_for`: the embedded lab, user-named ports, or a
Kubernetes cluster), a traffic generator drives its streams (embedded ``nfvlab-gen`` or TRex),
trials and searches measure it, records keep every trial with provenance, and
``results`` / ``experiments`` (one module per experiment, on the ``analysis`` core) /
``report`` turn records into tables, claims and figures.

What a notebook author uses::

    import nfvlab
    p = nfvlab.load_experiment("params/quick/experiment_a.yaml", "params/lab.yaml")
    nfvlab.run_experiment(p, "data/raw/experiment_a.jsonl")
    tables = nfvlab.experiments.tables("a", "data/raw/experiment_a.jsonl")

Names are imported on first use, so ``import nfvlab`` stays cheap for the CLI.
"""
from __future__ import annotations

import importlib
from typing import Any

#: Public name -> "module:attribute" (or "module" for a submodule).
_API = {
    # what is benchmarked
    "Scenario": "nfvlab.scenario:Scenario",
    "Resources": "nfvlab.scenario:Resources",
    "DensityCell": "nfvlab.scenario:DensityCell",
    "MODELS": "nfvlab.scenario:MODELS",
    "CniScenario": "nfvlab.scenario.cni:CniScenario",
    # where and with what
    "backend_for": "nfvlab.labs:backend_for",
    "generator_for": "nfvlab.traffic.select:generator_for",
    # parameters
    "load_experiment": "nfvlab.params:load_experiment",
    "ExperimentParams": "nfvlab.params:ExperimentParams",
    "CniExperimentParams": "nfvlab.params:CniExperimentParams",
    "LabParams": "nfvlab.params:LabParams",
    "SearchParams": "nfvlab.params:SearchParams",
    "TrafficParams": "nfvlab.params:TrafficParams",
    # measuring
    "run_trial": "nfvlab.trial:run_trial",
    "run_experiment": "nfvlab.experiment:run_experiment",
    "Calibration": "nfvlab.calibrate:Calibration",
    # results
    "read_records": "nfvlab.records:read_records",
    "searches_frame": "nfvlab.results:searches_frame",
    "latency_frame": "nfvlab.results:latency_frame",
    "latency_percentiles": "nfvlab.latency:latency_percentiles",
    # modules a notebook uses as namespaces
    "analysis": "nfvlab.analysis",
    "experiment": "nfvlab.experiment",
    "experiments": "nfvlab.experiments",
    "params": "nfvlab.params",
    "reference": "nfvlab.reference",
    "report": "nfvlab.report",
    "results": "nfvlab.results",
    "stats": "nfvlab.stats",
}

__all__ = sorted(_API)


def __getattr__(name: str) -> Any:
    target = _API.get(name)
    if target is None:
        raise AttributeError(f"module 'nfvlab' has no attribute {name!r}")
    module, _, attr = target.partition(":")
    value = importlib.import_module(module)
    return getattr(value, attr) if attr else value


def __dir__() -> list[str]:
    return __all__
