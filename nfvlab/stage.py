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

from nfvlab import experiment, labs, tool_runs
from nfvlab import params as P
from nfvlab.measure import InputError
from nfvlab.records import RecordWriter

PathLike = Union[str, Path]
AnyParams = Union[P.ExperimentParams, P.CniExperimentParams]


def load(letter: str, params_file: PathLike, lab_file: Optional[PathLike] = "params/lab.yaml",
         overrides: Optional[dict] = None) -> tuple[AnyParams, P.LabParams]:
    """Experiment ``letter``'s params and the lab they run on (the profile ``lab_file``; None: the
    embedded lab); one-line :class:`nfvlab.params.ParamsError` / :class:`nfvlab.measure.InputError`.

    Experiment E's params are :class:`nfvlab.params.CniExperimentParams` (no ``lab:`` of their own:
    the profile's lab realizes its data paths); the others' are the params file with the profile
    as its ``lab:`` (:func:`nfvlab.params.load_experiment`).
    """
    if len(letter) != 1 or not "a" <= letter <= "z":
        raise InputError(f"experiment {letter!r}: give its letter (a, b, ...: its params file's experiment name "
                         "starts with it)")
    if letter == "e":
        p: AnyParams = P.load(params_file, P.CniExperimentParams, overrides)
        lab = P.load(lab_file, P.LabParams) if lab_file is not None else P.LabParams()
    else:
        p = P.load_experiment(params_file, lab_file, overrides)
        lab = p.lab
    if not p.experiment.startswith(letter):
        raise InputError(f"{params_file}: experiment: {p.experiment!r} is not experiment {letter}'s params")
    return p, lab


def run(letter: str, params_file: PathLike, records: PathLike, *, lab_file: Optional[PathLike] = "params/lab.yaml",
        local_cluster: bool = False, overrides: Optional[dict] = None) -> Optional[str]:
    """Measure experiment ``letter`` into ``records``; return the run id (None: nothing was realizable).

    Raises :class:`nfvlab.params.ParamsError` / :class:`nfvlab.measure.InputError` (one line)
    before any lab or cluster exists.
    """
    p, lab = load(letter, params_file, lab_file, overrides)
    if not local_cluster:
        return experiment.run_experiment(p, records, backend=labs.backend_for(lab), source=str(params_file))
    if lab.kind != "kubernetes":
        raise InputError(f"--local-cluster: {lab_file}: kind is {lab.kind!r}; the local cluster runs the "
                         "kubernetes lab (params/lab.kubernetes.yaml)")
    from nfvlab.labs import cluster

    why = cluster.unavailable_reason()
    if why:
        record_not_realizable(p, records, f"no local Kubernetes cluster can run here: {why}", lab_file)
        return None
    with cluster.running():
        return experiment.run_experiment(p, records, backend=labs.backend_for(lab), source=str(params_file))


def record_not_realizable(p: AnyParams, records: PathLike, reason: str, lab_file: Optional[PathLike]) -> None:
    """One completed run whose every configuration (E: every (data path, MTU)) is a ``not-realizable``
    note with ``reason``."""
    if isinstance(p, P.CniExperimentParams):
        cells = [sc.labels() for sc in tool_runs.cni_scenarios(p)]
    else:
        cells = [{"model": m, "pinning": pin, "numa": numa} for m in p.models for pin in p.resources.pinning
                 for numa in p.resources.numa]
    dump = {k: v for k, v in p.model_dump().items() if not (k == "adaptive" and v is None)}  # fixed-n: as before
    with RecordWriter(records, p.experiment, {**dump, "lab_file": str(lab_file)}) as rec:
        for labels in cells:
            rec.note(f"not realizable: {reason}", kind="not-realizable", **labels)
    print(f"nfvlab: {reason}; every configuration recorded as not realizable")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, as the nfvlab command's own errors
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def main(argv: Optional[list[str]] = None, prog: str = "python -m nfvlab.stage") -> int:
    """The measurement stage's command line; one line and exit code 2 for bad input, 1 for a
    failed measurement, 130 after an interrupt (the lab torn down)."""
    from nfvlab.labs import LabError, Terminated
    from nfvlab.records import RecordWriteError
    from nfvlab.search import SearchError
    from nfvlab.system.build import BuildError
    from nfvlab.system.hostlock import LabBusy
    from nfvlab.system.host import host_speed_s
    from nfvlab.system.paths import output_problem
    from nfvlab.traffic import GeneratorError

    ap = _Parser(prog=prog, description="measure an experiment's grid into a records file "
                                 "(resumes an interrupted run of the same params and measuring code)")
    ap.add_argument("experiment", help="the experiment's letter (a, b, ...)")
    ap.add_argument("--params", type=Path, required=True, help="the experiment's params file")
    ap.add_argument("--records", type=Path, required=True, help="records file (appended to)")
    ap.add_argument("--lab-profile", type=Path, default=Path("params/lab.yaml"), metavar="FILE",
                    help="lab profile (default params/lab.yaml): the lab the experiment runs on")
    ap.add_argument("--local-cluster", action="store_true",
                    help="run the kubernetes lab on the local single-node cluster, started for this run "
                         "(where it cannot run, every configuration is recorded as not realizable)")
    a = ap.parse_args(argv)
    try:
        if not a.params.is_file():
            raise InputError(f"--params {a.params}: no such file")
        if not a.lab_profile.is_file():
            raise InputError(f"--lab-profile {a.lab_profile}: no such file")
        problem = output_problem(a.records, "file")
        if problem:
            raise InputError(f"--records {problem}")
        try:
            host_speed_s()  # a bad value is an input error now, not after the host lock is taken
        except ValueError as err:
            raise InputError(str(err)) from None
        run_id = run(a.experiment, a.params, a.records, lab_file=a.lab_profile, local_cluster=a.local_cluster)
    except (P.ParamsError, InputError, LabError, BuildError, LabBusy) as err:
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
