"""Run an experiment notebook on the Kubernetes lab of a local single-node cluster (a DVC stage).

    python scripts/k8s/experiment.py --notebook notebooks/experiment_a.py \\
        --params params/quick/experiment_a.yaml --lab params/lab.kubernetes.yaml \\
        --records data/raw/experiment_a_kubernetes.jsonl --executed data/executed/experiment_a_kubernetes.ipynb

Starts the cluster of tests/support/k8s_cluster.py (binaries from scripts/k8s/build.sh), runs
the notebook against it under the papermill guardian scripts/run_notebook.py, as the embedded
lab's stages do (the same params), and stops the cluster. A SIGTERM/SIGINT (a cancelled ``dvc
repro``, a CI timeout) is handed to the guardian, whose kernel tears its Kubernetes lab down;
then the cluster stops and the exit code is 128 + the signal. Where no cluster can run here (binaries not built, no Go toolchain), every model is
recorded as not realizable with that reason, so the analysis and the report say so instead of
failing.
"""
from __future__ import annotations

import argparse
import signal
import subprocess
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
    with kc.LocalCluster(lock=False) as k8s:
        kc._with_nad_crd(k8s)
        return _guarded(a)


def _guarded(a) -> int:
    """The notebook under the guardian; a signal here is handed on once and waited out."""
    cmd = [sys.executable, str(REPO / "scripts/run_notebook.py"), "--no-progress-bar", "--log-output",
           a.notebook, a.executed, "-p", "params_file", a.params, "-p", "lab_file", a.lab,
           "-p", "records", a.records, "-p", "measure", "True"]
    child = subprocess.Popen(cmd, cwd=REPO)
    received: list[int] = []

    def on_signal(signum, frame):  # only hand on: the guardian has the kernel tear down, then exits
        if not received:
            child.send_signal(signum)
        received.append(signum)

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        rc = child.wait()
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    return 128 + received[0] if received else rc


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
