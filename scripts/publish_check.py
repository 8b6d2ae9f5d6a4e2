"""Refuse to publish a run whose measuring code differed from its commit.

    .venv/bin/python scripts/publish_check.py            # the records files dvc.lock lists
    .venv/bin/python scripts/publish_check.py FILE ...    # these records files

Reads the ``run`` records' provenance (:func:`nfvlab.provenance.measuring_code_changes`) and
exits 1 with one line per offending run, naming its file, run id, commit and the changed files;
exit 0 when every run the tables read (each file's latest completed run) was measured from the code
of its commit (docs, tests, benchmarks and the pipeline's own outputs may differ; earlier runs of
the append-only files are history, counted but not refused). scripts/publish.sh calls it first.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import yaml

from nfvlab.provenance import measuring_code_changes
from nfvlab.records import runs_frame
from nfvlab.results import selected_runs



def records_files(lock: Path) -> list[Path]:
    """The ``*.jsonl`` outputs of every stage in ``lock`` (a dvc.lock) that exist."""
    stages = (yaml.safe_load(lock.read_text()) or {}).get("stages", {})
    paths = {out["path"] for stage in stages.values() for out in stage.get("outs", [])
             if out["path"].endswith(".jsonl")}
    return [Path(p) for p in sorted(paths) if (lock.parent / p).exists()]


def published_runs(paths: list[Path]) -> set[tuple[str, str]]:
    """``(file, run id)`` of the runs the tables read: each file's latest completed run
    (:func:`nfvlab.results.selected_runs`), what publishing a file publishes as its run."""
    return {(str(p), recs[0]["run_id"]) for p, recs in selected_runs(paths, "latest")}


def refusals(paths: list[Path], runs: Optional[set] = None) -> list[str]:
    """One line per run in ``paths`` (only ``runs``, ``(file, run id)``, when given) whose measuring code
    differed from its commit."""
    lines = []
    for row in runs_frame(paths).itertuples():
        if runs is not None and (str(row.file), row.run_id) not in runs:
            continue
        changed = measuring_code_changes(row.provenance if isinstance(row.provenance, dict) else {})
        if changed == []:
            continue
        what = ("the records do not say which files (dirty, schema < 3)" if changed is None
                else "changed: " + ", ".join(changed))
        lines.append(f"{row.file}: run {row.run_id} ({row.experiment}) measured from "
                     f"{str(row.git_revision)[:12]}+dirty; {what}")
    return lines


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or records_files(Path("dvc.lock"))
    latest = published_runs(paths)
    lines = refusals(paths, latest)
    for line in lines:
        print(f"publish: refused: {line}", file=sys.stderr)
    if lines:
        print("publish: measure again from a clean checkout (commit the change first)", file=sys.stderr)
        return 1
    # The records are append-only: earlier runs stay in them as history (the tables never read them).
    earlier = len(refusals(paths)) - len(lines)
    print(f"publish: {len(paths)} records files; the {len(latest)} runs the tables read were measured from their "
          f"commits' code" + (f" ({earlier} earlier runs in the files, history only, were not)" if earlier else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
