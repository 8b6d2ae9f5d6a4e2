"""Refuse to publish a run whose measuring code differed from its commit.

    .venv/bin/python scripts/publish_check.py            # the records files dvc.lock lists
    .venv/bin/python scripts/publish_check.py FILE ...    # these records files

Reads the ``run`` records' provenance (:func:`nfvlab.provenance.measuring_code_changes`) and
exits 1 with one line per offending run, naming its file, run id, commit and the changed files;
exit 0 when every run was measured from the code of its commit (docs, tests, benchmarks and the
pipeline's own outputs may differ). scripts/publish.sh calls it first.
"""
from __future__ import annotations

import sys
from pathlib import Path

import yaml

from nfvlab.provenance import measuring_code_changes
from nfvlab.records import runs_frame



def records_files(lock: Path) -> list[Path]:
    """The ``*.jsonl`` outputs of every stage in ``lock`` (a dvc.lock) that exist."""
    stages = (yaml.safe_load(lock.read_text()) or {}).get("stages", {})
    paths = {out["path"] for stage in stages.values() for out in stage.get("outs", [])
             if out["path"].endswith(".jsonl")}
    return [Path(p) for p in sorted(paths) if (lock.parent / p).exists()]


def refusals(paths: list[Path]) -> list[str]:
    """One line per run in ``paths`` whose measuring code differed from its commit."""
    lines = []
    for row in runs_frame(paths).itertuples():
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
    lines = refusals(paths)
    for line in lines:
        print(f"publish: refused: {line}", file=sys.stderr)
    if lines:
        print("publish: measure again from a clean checkout (commit the change first); the records are "
              "append-only, so start from records without these runs", file=sys.stderr)
        return 1
    print(f"publish: {len(paths)} records files, every run measured from its commit's code")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
