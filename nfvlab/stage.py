"""A measurement stage: one experiment's records from its params, on the lab its profile names.

    nfvlab experiment run a --params params/quick/experiment_a.yaml --records data/raw/experiment_a.jsonl
    nfvlab experiment run a --params ... --lab-profile params/lab.kubernetes.yaml --local-cluster ...
    python -m nfvlab.stage a --params ... --records ...      # the same, as the DVC stages run it

Measuring is apart from analysing: this module (what the pipeline's measurement
stages run) imports no analysis, plot, report or notebook code, so an edit there
re-runs only the analysis and report stages (import contract in pyproject.toml,
staleness test in tests/test_pipeline.py); the DVC stages run it as ``python -m
nfvlab.stage`` so that not even an edit to the ``nfvlab`` command line re-measures. With ``local_cluster`` the Kubernetes
lab runs on the local single-node cluster (:mod:`nfvlab.labs.kubernetes.local_cluster`),
started for the run and stopped after it; where that cluster cannot run here, every
configuration is recorded as not realizable with the reason, never measured elsewhere.
"""
from __future__ import annotations

import argparse
import sys
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


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, as the nfvlab command's own errors
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def main(argv: Optional[list[str]] = None, prog: str = "python -m nfvlab.stage") -> int:
    """The measurement stage's command line; one line and exit code 2 for bad input, 1 for a
    failed measurement, 130 after an interrupt (the lab torn down)."""
    from nfvlab.labs import LabError, Terminated
    from nfvlab.labs.embedded.state import LabBusy
    from nfvlab.records import RecordWriteError
    from nfvlab.scenario.cni import CniConfigError
    from nfvlab.search import SearchError
    from nfvlab.system.build import BuildError
    from nfvlab.system.paths import output_problem
    from nfvlab.traffic import GeneratorError

    ap = _Parser(prog=prog, description="measure an experiment's grid into a records file "
                                 "(resumes an interrupted run of the same params and measuring code)")
    ap.add_argument("experiment", help="the experiment's letter (a, b, ...)")
    ap.add_argument("--params", type=Path, required=True, help="the experiment's params file")
    ap.add_argument("--records", type=Path, required=True, help="records file (appended to)")
    ap.add_argument("--lab-profile", type=Path, default=Path("params/lab.yaml"), metavar="FILE",
                    help="lab profile (default params/lab.yaml; not used by e)")
    ap.add_argument("--local-cluster", action="store_true",
                    help="run the kubernetes lab on the local single-node cluster, started for this run "
                         "(where it cannot run, every configuration is recorded as not realizable)")
    a = ap.parse_args(argv)
    try:
        if not a.params.is_file():
            raise InputError(f"--params {a.params}: no such file")
        if a.experiment != "e" and not a.lab_profile.is_file():
            raise InputError(f"--lab-profile {a.lab_profile}: no such file")
        problem = output_problem(a.records, "file")
        if problem:
            raise InputError(f"--records {problem}")
        run_id = run(a.experiment, a.params, a.records, lab_file=a.lab_profile, local_cluster=a.local_cluster)
    except (P.ParamsError, InputError, LabError, BuildError, LabBusy, CniConfigError) as err:
        print(f"nfvlab: error: {err}", file=sys.stderr)
        return 2
    except (GeneratorError, SearchError, RecordWriteError) as err:
        print(f"nfvlab: failed: {err}", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, Terminated):
        print("nfvlab: interrupted; the lab was torn down", file=sys.stderr)
        return 130
    print(f"{a.records}: run {run_id}" if run_id else f"{a.records}: nothing realizable here (see its notes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
