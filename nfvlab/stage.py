"""A measurement stage: one experiment's records from its params, on the lab its profile names.

    nfvlab experiment run a --params params/quick/experiment_a.yaml --records data/raw/experiment_a.jsonl
    nfvlab experiment run a --params ... --lab-profile params/lab.kubernetes.yaml --local-cluster ...

Measuring is apart from analysing: this module (what the pipeline's measurement
stages run) imports no analysis, plot, report or notebook code, so an edit there
re-runs only the analysis and report stages (import contract in pyproject.toml,
staleness test in tests/test_pipeline.py). With ``local_cluster`` the Kubernetes
lab runs on the local single-node cluster (:mod:`nfvlab.labs.kubernetes.local_cluster`),
started for the run and stopped after it; where that cluster cannot run here, every
configuration is recorded as not realizable with the reason, never measured elsewhere.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Union

from nfvlab import experiment, experiment_cni
from nfvlab import params as P
from nfvlab.measure import InputError
from nfvlab.records import RecordWriter

PathLike = Union[str, Path]



def run(letter: str, params_file: PathLike, records: PathLike, *, lab_file: Optional[PathLike] = "params/lab.yaml",
        local_cluster: bool = False, overrides: Optional[dict] = None) -> Optional[str]:
    """Measure experiment ``letter`` into ``records``; return the run id (None: nothing was realizable).

    Raises :class:`nfvlab.params.ParamsError` / :class:`nfvlab.measure.InputError` (one line)
    before any lab or cluster exists.
    """
    if len(letter) != 1 or not "a" <= letter <= "z":
        raise InputError(f"experiment {letter!r}: give its letter (a, b, ...: its params file's experiment name "
                         "starts with it)")
    if letter == "e":  # E (CNI TCP/HTTP) has params and a driver of its own
        if local_cluster:
            raise InputError("--local-cluster: experiment e runs on the embedded CNI lab only")
        exp = experiment_cni.load(params_file, overrides)
        if not exp.experiment.startswith("e"):
            raise InputError(f"{params_file}: experiment: {exp.experiment!r} is not experiment e's params")
        return experiment_cni.run_cni_experiment(exp, records, source=str(params_file))
    p = P.load_experiment(params_file, lab_file, overrides)
    if not p.experiment.startswith(letter):
        raise InputError(f"{params_file}: experiment: {p.experiment!r} is not experiment {letter}'s params")
    if not local_cluster:
        return experiment.run_experiment(p, records, source=str(params_file))
    if p.lab.kind != "kubernetes":
        raise InputError(f"--local-cluster: {lab_file}: kind is {p.lab.kind!r}; the local cluster runs the "
                         "kubernetes lab (params/lab.kubernetes.yaml)")
    from nfvlab.labs.kubernetes import local_cluster as lc

    why = lc.unavailable_reason()
    if why:
        record_not_realizable(p, records, f"no local Kubernetes cluster can run here: {why}", lab_file)
        return None
    # The Kubernetes lab takes the host lock for each run (it cables this host), so the cluster must not hold it.
    with lc.LocalCluster(lock=False) as k8s:
        lc.install_nad_crd(k8s)
        return experiment.run_experiment(p, records, source=str(params_file))


def record_not_realizable(p: P.ExperimentParams, records: PathLike, reason: str,
                          lab_file: Optional[PathLike]) -> None:
    """One completed run whose every configuration is a ``not-realizable`` note with ``reason``."""
    with RecordWriter(records, p.experiment, {**p.model_dump(), "lab_file": str(lab_file)}) as rec:
        for m in p.models:
            for pin in p.resources.pinning:
                for numa in p.resources.numa:
                    rec.note(f"not realizable: {reason}", kind="not-realizable", model=m, pinning=pin, numa=numa)
    print(f"nfvlab: {reason}; every configuration recorded as not realizable")
