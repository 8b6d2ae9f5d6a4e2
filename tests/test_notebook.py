"""nfvlab.notebook: the repository root from any directory, progress kept out, an experiment's outputs."""
import io
import os
import sys
from pathlib import Path

import pandas as pd
import pytest

from nfvlab import notebook
from test_analysis import _latency_records

REPO = Path(__file__).resolve().parents[1]


def test_repo_root_is_the_nearest_directory_holding_dvc_yaml(tmp_path):
    (tmp_path / "outer/repo/notebooks/deep").mkdir(parents=True)
    (tmp_path / "outer/dvc.yaml").write_text("stages: {}\n")
    (tmp_path / "outer/repo/dvc.yaml").write_text("stages: {}\n")
    assert notebook.repo_root(tmp_path / "outer/repo/notebooks/deep") == (tmp_path / "outer/repo").resolve()
    assert notebook.repo_root(tmp_path / "outer/repo") == (tmp_path / "outer/repo").resolve()
    assert notebook.repo_root(tmp_path / "outer") == (tmp_path / "outer").resolve()
    # A directory named dvc.yaml is not the marker.
    (tmp_path / "lone/dvc.yaml").mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match=r"lone: no dvc.yaml here or in a parent directory"):
        notebook.repo_root(tmp_path / "lone")


def test_enter_repo_root_moves_the_kernel_from_notebooks_to_the_repository(monkeypatch):
    monkeypatch.chdir(REPO / "notebooks")
    assert notebook.enter_repo_root() == REPO
    assert Path(os.getcwd()) == REPO
    assert Path("params/lab.yaml").is_file()  # the notebooks' default paths now resolve


def test_progress_goes_to_the_named_file_and_nothing_reaches_the_notebook(tmp_path, monkeypatch):
    shown = io.StringIO()  # stands for the kernel's stdout (what the notebook saves)
    monkeypatch.setattr(sys, "stdout", shown)
    log = tmp_path / "progress.log"
    log.write_text("earlier\n")
    with notebook.progress_elsewhere({notebook.PROGRESS_ENV: str(log)}) as where:
        print("a: 1/2 macvlan 64 B: ndr 10 kpps")
    assert where == log
    assert log.read_text() == "earlier\na: 1/2 macvlan 64 B: ndr 10 kpps\n"
    assert shown.getvalue() == ""
    with notebook.progress_elsewhere({}) as where:  # JupyterLab: lines appear as they come
        print("b: 1/1")
    assert where is None and shown.getvalue() == "b: 1/1\n"


def test_experiment_outputs_end_with_tables_then_figures_then_claims(tmp_path):
    scales = {(f, rep): int((1 + 4 * f) * (10 + rep)) for f in (0.0, 0.5) for rep in range(3)}
    records = _latency_records(tmp_path / "a.jsonl", scales)
    items = notebook.experiment_outputs("a", records, ["macvlan"], tmp_path / "figs")
    kinds = ["table" if isinstance(i, pd.DataFrame) else "figure" if isinstance(i, Path) else "text"
             for _, i in items]
    assert kinds == ["table", "table", "table", "figure", "figure", "table"]
    headings = [h for h, _ in items]
    assert headings[0] == "throughput" and headings[-1].startswith("claims")
    assert sorted(p.name for _, p in items if isinstance(p, Path)) == [
        "experiment_a_latency_macvlan.png", "experiment_a_throughput.png"]
    assert all(p.parent == tmp_path / "figs" and p.stat().st_size > 0 for _, p in items if isinstance(p, Path))
    # Latency in microseconds under names that say so: p99 of probes 1..10 000 x scale ns.
    lat = items[1][1]
    assert "[µs]" in headings[1] and not [c for c in lat.columns if c.endswith("_ns")]
    row = lat[lat["load_fraction"] == 0.5].iloc[0]
    assert row["p99_us"] == pytest.approx(sum(9900 * scales[(0.5, r)] for r in range(3)) / 3 / 1e3, rel=1e-3)
    assert row["n"] == 3


def test_an_experiment_without_claims_says_so(tmp_path):
    from nfvlab.records import RecordWriter

    with RecordWriter(tmp_path / "d.jsonl", "d", {}, provenance={}) as rec:
        for rep in range(2):
            rec.search({"goal": "mrr", "method": "mrr", "loss_ratio": 0.0, "throughput_pps": 5000.0 + rep},
                       model="kernel-nf", topology="csc", instances=1, nfs=1, frame_size=64, repetition=rep,
                       goal="mrr")
    items = notebook.experiment_outputs("d", tmp_path / "d.jsonl", None, tmp_path / "figs")
    assert items[-1] == ("claims", "experiment D tests no claim of the draft (seed 001 states none).")
