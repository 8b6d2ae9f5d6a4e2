"""The report: sections from written analysis outputs, and the notebook run + rendered to HTML."""
import subprocess
import sys
from pathlib import Path

import nbformat
import papermill as pm
import pytest

from nfvlab import analysis, report
from test_analysis_bcd import D_MEANS, b_records, c_records, d_records

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """Tables and figures of B, C and D from synthetic records; A and the reference figures absent."""
    root = tmp_path_factory.mktemp("report")
    b_records(root / "b.jsonl", {"shared": 90_000, "none": 80_000})
    c_records(root / "c.jsonl", 120_000, 100_000)
    d_records(root / "d.jsonl", D_MEANS)
    for letter in "bcd":
        analysis.write_experiment(letter, root / f"{letter}.jsonl", None, root / "tables",
                                  root / "figures" / "experiments", root / f"metrics_{letter}.json")
    return root


def test_sections_in_order_with_not_run_yet_and_not_realizable_rows(outputs):
    secs = report.sections(outputs / "tables", outputs / "figures")
    titles = [s.title for s in secs]
    assert titles[0] == "Scope of the local numbers" and "never" in secs[0].text
    a = next(s for s in secs if s.title.startswith("Experiment A"))
    assert "Not run yet" in a.text and a.table is None
    order = [next(i for i, t in enumerate(titles) if t.startswith(f"Experiment {x}")) for x in "ABCD"]
    assert order == sorted(order)
    b_claims = next(s for s in secs if s.table is not None and "claim" in s.table.columns
                    and s.table["claim"].str.startswith("B.2").all())
    assert (b_claims.table["verdict"] == "not testable").any()
    assert b_claims.table["detail"].str.contains("on this host: ").any()
    b_nr = next(s for s in secs if s.title.startswith("Experiment B: not realizable"))
    assert len(b_nr.table) == 10 and b_nr.table["status"].str.startswith("not realizable: ").all()
    b_lat = [s for s in secs if s.title.startswith("Latency under load")]
    assert len(b_lat) == 3 and all("No latency trials" in s.text and s.table is None for s in b_lat)  # B, C, D
    figs = [f.name for s in secs for f in s.figures]
    assert "experiment_b_pinning_numa.png" in figs and "experiment_d_mrr_csc_64.png" in figs
    assert all(Path(f).exists() for s in secs for f in s.figures)


def test_notebook_runs_and_renders_html_without_code(outputs, tmp_path):
    out_nb = tmp_path / "report.out.ipynb"
    pm.execute_notebook(str(REPO / "notebooks/report.ipynb"), str(out_nb),
                        parameters={"tables_dir": str(outputs / "tables"), "figures_dir": str(outputs / "figures")},
                        cwd=str(REPO), kernel_name="python3", progress_bar=False)
    nb = nbformat.read(out_nb, as_version=4)
    assert not [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
                if o.get("output_type") == "error"]
    subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", "--no-input",
                    "--output-dir", str(tmp_path), str(out_nb)], check=True, capture_output=True)
    html = (tmp_path / "report.out.html").read_text()
    assert "Experiment B: CPU pinning x NUMA alignment" in html and "<th" in html
    assert "data:image/png;base64," in html
    assert "Not run yet" in html  # experiment A
    assert "report.sections" not in html and "display(Markdown" not in html


def test_two_labs_table_puts_the_same_scenarios_side_by_side(tmp_path):
    from test_analysis import write

    for sub, caps in (("experiment_a", {"macvlan": 100_000, "smartnic-direct": 120_000}),
                      ("experiment_a_kubernetes", {"macvlan": 90_000})):
        rec = tmp_path / f"{sub}.jsonl"
        write(rec, caps, not_realizable=[("smartnic-direct", "on this cluster: no free NIC")]
              if sub.endswith("kubernetes") else ())
        analysis.write_experiment("a", rec, ["macvlan", "smartnic-direct"], tmp_path / "tables" / sub,
                                  tmp_path / "figures" / sub, tmp_path / f"{sub}.json")
    both = report.two_labs(tmp_path / "tables")
    mv = both[both["model"] == "macvlan"].iloc[0]
    assert mv["kubernetes_vs_embedded"] == pytest.approx(0.9, rel=0.01)
    sd = both[both["model"] == "smartnic-direct"].iloc[0]
    assert sd["embedded_status"] == "measured" and sd["kubernetes_status"].startswith("not realizable: on this")
    assert sd["kubernetes_vs_embedded"] != sd["kubernetes_vs_embedded"]  # NaN: nothing to compare
    secs = report.sections(tmp_path / "tables", tmp_path / "figures")
    two = next(s for s in secs if s.title.startswith("Experiment A on two labs"))
    assert two.table is not None and len(two.table) == 2
    assert report.two_labs(tmp_path / "nowhere") is None
