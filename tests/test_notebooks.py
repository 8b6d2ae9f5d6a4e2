"""Notebooks run top to bottom under papermill with injected parameters (really executed)."""
from pathlib import Path

import nbformat
import papermill as pm
import pytest

from conftest import clean_host  # noqa: F401  (fixture)

REPO = Path(__file__).resolve().parents[1]


def test_reference_notebook_executes_with_parameters(tmp_path):
    out_nb = tmp_path / "reference.out.ipynb"
    fig_dir = tmp_path / "figs"
    pm.execute_notebook(str(REPO / "notebooks/reference.ipynb"), str(out_nb),
                        parameters={"out_dir": str(fig_dir), "dpi": 60}, cwd=str(REPO),
                        kernel_name="python3", progress_bar=False)
    nb = nbformat.read(out_nb, as_version=4)
    assert any("injected-parameters" in c.metadata.get("tags", []) for c in nb.cells)
    assert len(list(fig_dir.glob("*.png"))) == 12
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors


def test_every_notebook_has_a_tagged_parameters_cell():
    for path in sorted((REPO / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        assert any("parameters" in c.metadata.get("tags", []) for c in nb.cells), path.name


def test_experiment_a_notebook_runs_a_tiny_grid_on_the_embedded_lab(tmp_path, clean_host):
    out_nb = tmp_path / "a.out.ipynb"
    records = tmp_path / "a.jsonl"
    tiny = {"models": ["host-routing", "sriov"], "repetitions": 1, "traffic": {"frame_sizes": [256]},
            "trial": {"duration_s": 0.3},
            "search": {"method": "rfc2544", "relative_width": 0.2, "min_rate_pps": 2000,
                       "max_rate_pps": 10000, "final_trial_duration_s": 0.3, "initial_trial_duration_s": 0.3,
                       "duration_sum_s": 0.3}}
    pm.execute_notebook(str(REPO / "notebooks/experiment_a.ipynb"), str(out_nb),
                        parameters={"records": str(records), "overrides": tiny}, cwd=str(REPO),
                        kernel_name="python3", progress_bar=False)
    from nfvlab import results

    s = results.searches_frame(records)
    assert list(s["model"]) == ["host-routing"] and s["throughput_pps"].iloc[0] == 10000
    assert list(results.not_realizable_frame(records)["model"]) == ["sriov"]
