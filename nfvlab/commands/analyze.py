"""``nfvlab analyze`` (an experiment's tables, claims, figures, metrics and notebook) and ``nfvlab figures``."""
from __future__ import annotations

import sys

from nfvlab import params as P
from nfvlab.commands.common import EXIT_FAILED, CliError, _check_outputs


def cmd_analyze(a) -> int:
    from nfvlab import experiments, results
    from nfvlab.records import RecordsError

    try:
        exp = experiments.get(a.experiment)
    except ValueError as err:
        raise CliError(str(err)) from None
    models = None
    if exp.kind == "tools":
        P.load(a.params, P.CniExperimentParams)  # a bad params file fails the stage, as for the others
    else:
        models = P.load(a.params).models
    _check_outputs(metrics=(a.metrics, "file"), tables=(a.tables, "dir"), figures=(a.figures, "dir"))
    _check_notebook_args(a)
    if exp.kind == "tools" and len(a.records) != 1:
        raise CliError(f"--records: experiment {a.experiment} takes one records file")
    for r in a.records:
        if not r.exists():
            raise CliError(f"--records {r}: no such file (run the experiment's measurement stage first)")
    records = a.records[0] if len(a.records) == 1 else list(a.records)
    shown = " ".join(map(str, a.records))
    try:
        empty = (results.measurements_frame(records).empty and results.notes_frame(records).empty
                 if exp.kind == "tools" else
                 results.searches_frame(records).empty and results.not_realizable_frame(records).empty)
        if empty:
            raise CliError(f"--records {shown}: no completed run with results (run the experiment's "
                           "measurement stage first)")
        paths = experiments.write_experiment(a.experiment, records, models, a.tables, a.figures, a.metrics,
                                             _claims_design(a))
    except RecordsError as err:
        raise CliError(f"--records {shown}: {err}") from None
    for p in paths:
        print(p)
    return _run_notebook(a)


def _claims_design(a):
    """The :class:`nfvlab.claims.Design` of ``--claims`` (None: the defaults, ``params/claims.yaml``'s values)."""
    from nfvlab import claims

    if a.claims is None:
        return None
    try:
        return claims.load_design(a.claims)
    except (OSError, ValueError, TypeError) as err:
        raise CliError(f"--claims {a.claims}: {err}") from None


def _check_notebook_args(a) -> None:
    if (a.notebook is None) != (a.executed is None):
        raise CliError("--notebook and --executed go together")
    if a.notebook is not None:
        if not a.notebook.is_file():
            raise CliError(f"--notebook {a.notebook}: no such file")
        if len(a.records) != 1:
            raise CliError("--notebook: give one records file")
        _check_outputs(executed=(a.executed, "file"))
    if a.lab_profile is not None and not a.lab_profile.is_file():
        raise CliError(f"--lab-profile {a.lab_profile}: no such file")


def _run_notebook(a) -> int:
    """The experiment's notebook over the records (measure False), under the papermill guardian."""
    if a.notebook is None:
        return 0
    import subprocess

    cmd = [sys.executable, "-m", "nfvlab.notebook_run", "--no-progress-bar", str(a.notebook), str(a.executed),
           "-p", "params_file", str(a.params), "-p", "records", str(a.records[0]), "-p", "measure", "False"]
    if a.lab_profile is not None:
        cmd += ["-p", "lab_file", str(a.lab_profile)]
    rc = subprocess.run(cmd).returncode
    if rc:
        print(f"nfvlab: failed: the notebook {a.notebook} did not run through (exit {rc}); "
              f"see {a.executed}", file=sys.stderr)
        return EXIT_FAILED
    print(a.executed)
    return 0


def cmd_figures(a) -> int:
    from nfvlab.plots.reference import render_reference_figures

    rp = P.load(a.params, P.ReferenceParams)
    _check_outputs(out=(a.out, "dir"))
    paths = render_reference_figures(a.out, dpi=rp.dpi)
    for p in paths:
        print(p)
    return 0
