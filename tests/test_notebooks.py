"""Notebooks run top to bottom under papermill with injected parameters (really executed)."""
from pathlib import Path

import nbformat
import papermill as pm

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
