"""Run an experiment notebook on the Kubernetes lab of a local single-node cluster (a DVC stage).

    python scripts/k8s/experiment.py --notebook notebooks/experiment_a.ipynb \\
        --params params/quick/experiment_a.yaml --lab params/lab.kubernetes.yaml \\
        --records data/raw/experiment_a_kubernetes.jsonl --executed data/executed/experiment_a_kubernetes.ipynb

Starts the cluster of tests/support/k8s_cluster.py (binaries from scripts/k8s/build.sh), runs
the notebook with papermill against it (the same params as the embedded lab's stage), and stops
the cluster. Where no cluster can run here (binaries not built, no Go toolchain), every model is
recorded as not realizable with that reason, so the analysis and the report say so instead of
failing.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for a in ("--notebook", "--params", "--lab", "--records", "--executed"):
        ap.add_argument(a, required=True)
    a = ap.parse_args(argv)
    from support import k8s_cluster as kc

    why = kc.unavailable_reason()
    if why:
        return _not_realizable(a, f"no local Kubernetes cluster can run here: {why}")
    import nbformat  # noqa: F401  (papermill's)
    import papermill as pm

    with kc.LocalCluster(lock=False) as k8s:
        kc._with_nad_crd(k8s)
        pm.execute_notebook(a.notebook, a.executed, parameters={
            "params_file": a.params, "lab_file": a.lab, "records": a.records}, log_output=True,
            progress_bar=False, cwd=str(REPO))
    return 0


def _not_realizable(a, reason: str) -> int:
    import nbformat

    from nfvlab import params as P
    from nfvlab.records import RecordWriter

    exp = P.load(a.params)
    with RecordWriter(a.records, exp.experiment, {**exp.model_dump(), "lab_file": a.lab}) as rec:
        for m in exp.models:
            for pin in exp.resources.pinning:
                for numa in exp.resources.numa:
                    rec.note(f"not realizable: {reason}", kind="not-realizable", model=m, pinning=pin, numa=numa)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(f"# {exp.experiment} on the Kubernetes lab\n\nNot run: {reason}.")]
    Path(a.executed).parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, a.executed)
    print(f"k8s experiment: {reason}; recorded as not realizable", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
