"""Notebooks run top to bottom under papermill with injected parameters (really executed).

They run as JupyterLab runs them: the kernel starts in notebooks/ (nfvlab/notebook_run.py
does the same for a .py), and every default path still means the repository's.
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

import jupytext
import nbformat
import papermill as pm

from conftest import clean_host, failed_searches, host_spoiled, until_unspoiled  # noqa: F401  (clean_host: a fixture)
from test_analysis import _latency_records

REPO = Path(__file__).resolve().parents[1]
NAMES = ["experiment_a", "experiment_b", "experiment_c", "experiment_d", "experiment_e", "experiment_f", "reference",
         "report"]
sys.path.insert(0, str(REPO / "scripts"))
import make_notebooks  # noqa: E402


def _scratch(tmp_path) -> Path:
    """A repository root with the notebooks and params (the kernel imports nfvlab from the checkout)."""
    root = tmp_path / "repo"
    for d in ("notebooks", "params"):
        shutil.copytree(REPO / d, root / d)
    shutil.copy2(REPO / "dvc.yaml", root / "dvc.yaml")
    return root


def _guarded(source: Path, out: Path, *params: str, cwd=REPO) -> subprocess.CompletedProcess:
    """nfvlab/notebook_run.py on a notebook's .py, as the DVC stages run it."""
    args = [a for k, v in zip(params[::2], params[1::2]) for a in ("-p", k, v)]
    return subprocess.run([sys.executable, "-m", "nfvlab.notebook_run", "--no-progress-bar", str(source),
                           str(out), *args], cwd=cwd, capture_output=True, text=True, timeout=600)


def _outputs(nb_path: Path) -> tuple[str, list[str], list[dict]]:
    """(every text and HTML output joined, MIME types in order, error outputs) of an executed notebook."""
    nb = nbformat.read(nb_path, as_version=4)
    outs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    text = "".join(str(o.get("text", "")) + "".join(str(v) for k, v in o.get("data", {}).items()
                                                     if k in ("text/plain", "text/html", "text/markdown"))
                   for o in outs)
    mimes = [k for o in outs for k in o.get("data", {}) if k in ("image/png", "text/html")]
    return text, mimes, [o for o in outs if o.get("output_type") == "error"]


def test_committed_notebooks_are_what_make_notebooks_writes():
    assert make_notebooks.main(["--check"]) == 0
    assert sorted(p.stem for p in (REPO / "notebooks").glob("*.py")) == sorted(NAMES)
    assert sorted(p.stem for p in (REPO / "notebooks").glob("*.ipynb")) == sorted(NAMES)


def test_the_text_the_stages_depend_on_holds_no_volatile_metadata():
    for name in NAMES:
        text = (REPO / f"notebooks/{name}.py").read_text()
        assert text.startswith("# %% [markdown]\n"), name  # no jupytext/kernelspec header
        # The same code and tags as the .ipynb JupyterLab opens.
        ipynb = nbformat.read(REPO / f"notebooks/{name}.ipynb", as_version=4)
        assert make_notebooks.text_of(ipynb) == text, name


def test_every_notebook_has_a_tagged_parameters_cell():
    for name in NAMES:
        for nb in (nbformat.read(REPO / f"notebooks/{name}.ipynb", as_version=4),
                   jupytext.read(REPO / f"notebooks/{name}.py")):
            assert any("parameters" in c.metadata.get("tags", []) for c in nb.cells), name


def test_reference_notebook_executes_with_parameters(tmp_path):
    out_nb = tmp_path / "reference.out.ipynb"
    fig_dir = tmp_path / "figs"
    pm.execute_notebook(str(REPO / "notebooks/reference.ipynb"), str(out_nb),
                        parameters={"out_dir": str(fig_dir), "dpi": 60}, cwd=str(REPO),
                        kernel_name="python3", progress_bar=False)
    nb = nbformat.read(out_nb, as_version=4)
    assert any("injected-parameters" in c.metadata.get("tags", []) for c in nb.cells)
    assert len(list(fig_dir.glob("*.png"))) == 12
    assert not _outputs(out_nb)[2]


def test_reference_notebook_started_in_notebooks_writes_under_the_repository_root(tmp_path):
    root = _scratch(tmp_path)
    r = _guarded(root / "notebooks/reference.py", tmp_path / "out.ipynb", "dpi", "40", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert len(list((root / "data/interactive/reference").glob("*.png"))) == 12
    assert not (root / "notebooks/figures").exists() and not (root / "notebooks/data").exists()


def _synthetic_a(root: Path) -> Path:
    scales = {(f, rep): int((1 + 4 * f) * (10 + rep)) for f in (0.0, 0.5) for rep in range(3)}
    return _latency_records(root / "data/raw/experiment_a.jsonl", scales)


def test_experiment_notebook_from_notebooks_shows_tables_figures_and_claims_last(tmp_path):
    root = _scratch(tmp_path)
    _synthetic_a(root)
    out = tmp_path / "a.ipynb"
    # Relative paths are the repository's, though the kernel starts in notebooks/.
    r = _guarded(root / "notebooks/experiment_a.py", out, "records", "data/raw/experiment_a.jsonl",
                 "measure", "False", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    text, mimes, errors = _outputs(out)
    assert not errors
    assert "image/png" in mimes and mimes[-1] == "text/html"  # figures, then the claims table
    last = nbformat.read(out, as_version=4).cells[-1].outputs
    headings = [o["data"]["text/markdown"] for o in last if "text/markdown" in o.get("data", {})]
    assert headings[0] == "### throughput" and headings[-1].startswith("### claims")
    assert "p99_us" in text and "p99_ns" not in text  # the unit the values are in


def test_report_notebook_started_in_notebooks_finds_the_tables(tmp_path):
    from nfvlab import experiments

    root = _scratch(tmp_path)
    records = _synthetic_a(root)
    experiments.write_experiment("a", records, ["macvlan"], root / "data/tables/experiment_a",
                              root / "figures/experiments/experiment_a", root / "metrics/experiment_a.json")
    out = tmp_path / "report.ipynb"
    r = _guarded(root / "notebooks/report.py", out, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    text, mimes, errors = _outputs(out)
    assert not errors and "image/png" in mimes  # experiment A's figures, found from notebooks/
    assert "macvlan" in text


def test_experiment_a_notebook_runs_a_tiny_grid_on_the_embedded_lab(tmp_path, clean_host):
    out_nb = tmp_path / "a.out.ipynb"
    records = tmp_path / "a.jsonl"
    tiny = {"models": ["host-routing", "sriov"], "repetitions": 1, "adaptive": None,  # one repetition: fixed n
            "traffic": {"frame_sizes": [256]},
            "trial": {"duration_s": 0.3}, "latency_load_fractions": [0.0],
            "search": {"method": "rfc2544", "relative_width": 0.2, "min_rate_pps": 2000,
                       "max_rate_pps": 10000, "final_trial_duration_s": 0.3, "initial_trial_duration_s": 0.3,
                       "duration_sum_s": 0.3}}
    # As the experiment@a stage runs it: the .py through the guardian.
    r = subprocess.run([sys.executable, "-m", "nfvlab.notebook_run", "--no-progress-bar",
                        str(REPO / "notebooks/experiment_a.py"), str(out_nb), "-p", "records", str(records),
                        "-y", json.dumps({"overrides": tiny})], cwd=REPO, capture_output=True, text=True,
                       timeout=600, env={**os.environ})
    assert r.returncode == 0, r.stderr[-3000:]
    from nfvlab import results
    from nfvlab.records import trials_frame

    s = results.searches_frame(records)
    # The NDR is the highest rate of a valid zero-loss search trial in the records (10 kpps, the
    # maximum, unless host noise spoiled that trial: a plumbing test must not depend on it).
    t = trials_frame(records)
    clean = t[(t["purpose"] == "search") & t["valid"] & (t["loss_ratio"] == 0)]
    assert list(s["model"]) == ["host-routing"] and s["throughput_pps"].iloc[0] == clean["rate_pps"].max()
    assert 2000 <= s["throughput_pps"].iloc[0] <= 10000
    assert list(results.not_realizable_frame(records)["model"]) == ["sriov"]
    # Progress lines reach the guardian's stderr (the stage's log), not the saved notebook.
    assert "a-networking-models: 1/1 " in r.stderr
    text, mimes, errors = _outputs(out_nb)
    assert not errors and "a-networking-models:" not in text and "image/png" in mimes


TINY_SEARCH = {"method": "rfc2544", "relative_width": 0.2, "min_rate_pps": 2000, "max_rate_pps": 10000,
               "final_trial_duration_s": 0.3, "initial_trial_duration_s": 0.3, "duration_sum_s": 0.3}


def _run(letter, tmp_path, overrides):
    out_nb, records = tmp_path / f"{letter}.out.ipynb", tmp_path / f"{letter}.jsonl"
    pm.execute_notebook(str(REPO / f"notebooks/experiment_{letter}.ipynb"), str(out_nb),
                        parameters={"records": str(records), "overrides": overrides}, cwd=str(REPO),
                        kernel_name="python3", progress_bar=False)
    from nfvlab import results

    return results.searches_frame(records), results.not_realizable_frame(records)


def _backed_by_a_lossless_trial(records, model, ndr):
    """The NDR a search reports is the rate of one of its own recorded trials that lost nothing."""
    from nfvlab.records import trials_frame

    t = trials_frame(records)
    t = t[(t["model"] == model) & (t["purpose"] == "search")]
    return bool(((t["rate_pps"] - ndr).abs() < 1e-6 * ndr)[t["loss_ratio"] == 0].any())


def _host_spoiled_run(records) -> Optional[str]:
    """Why the host spoiled a notebook's run, from its records (:func:`conftest.host_spoiled` of
    every valid search trial: an invalid one the search repeated itself), or None."""
    from nfvlab.records import read_records
    from nfvlab.trial import TrialResult

    reasons = []
    for r in read_records(records):
        if r["type"] == "note" and r["labels"].get("kind") == "search-failed":  # every repeat invalid
            reasons.append(r["text"])
        elif r["type"] == "trial" and r["labels"].get("purpose") == "search" and r["result"].get("valid", True):
            why = host_spoiled(TrialResult.from_dict(r["result"]))
            if why:
                reasons.append(f"{r['labels'].get('topology')} trial: {why}")
    return "; ".join(reasons) or None


def _realizable(model):
    from nfvlab.labs.embedded import realize

    return realize.realizable(model)[0]


def _run_unspoiled(letter, tmp_path, overrides):
    """:func:`_run` in a fresh directory per try, repeated while a search failed (busy pollers starved
    of the CPUs they share with the generator in a slow spell: conftest.failed_searches); the last
    try's directory, searches and notes."""
    tries = iter(range(100))

    def attempt():
        where = tmp_path / f"try{next(tries)}"
        where.mkdir()
        return where, _run(letter, where, overrides)

    where, (s, nr) = until_unspoiled(attempt, lambda done: failed_searches(done[0] / f"{letter}.jsonl"),
                                     what=f"experiment {letter.upper()}'s notebook run")
    return where, s, nr


def test_experiment_b_notebook_runs_pinning_with_a_noisy_neighbour(tmp_path, clean_host):
    tiny = {"repetitions": 1, "adaptive": None,  # one repetition: a fixed-n run
            "resources": {"pinning": ["none", "exclusive"], "numa": ["s1", "s2"], "noisy_load_pct": 20},
            "traffic": {"frame_sizes": [1518]}, "trial": {"duration_s": 0.3}, "search": TINY_SEARCH}
    where, s, nr = _run_unspoiled("b", tmp_path, tiny)
    if not _realizable("ovs-dpdk-vhost"):
        assert list(nr["model"].unique()) == ["ovs-dpdk-vhost"] and s.empty
        return
    # 2 CPUs, 1 NUMA node: only (none, s1) runs; the rest are notes with their reasons.
    assert list(zip(s["pinning"], s["numa"])) == [("none", "s1")]
    # Busy pollers and a floating stress-ng share 2 CPUs: the NDR is unknown, but it must be
    # the rate of a recorded lossless trial.
    assert _backed_by_a_lossless_trial(where / "b.jsonl", "ovs-dpdk-vhost", s["throughput_pps"].iloc[0])
    reasons = dict(zip(zip(nr["pinning"], nr["numa"]), nr["reason"]))
    assert "NUMA node" in reasons[("none", "s2")]
    assert "exclusive pinning needs" in reasons[("exclusive", "s1")] or len(os.sched_getaffinity(0)) > 3


def test_experiment_c_notebook_runs_the_chains(tmp_path, clean_host):
    tiny = {"repetitions": 1, "adaptive": None, "resources": {"numa": ["s1", "s4"]}, "traffic": {"frame_sizes": [64]},
            "trial": {"duration_s": 0.3}, "search": TINY_SEARCH}
    where, s, nr = _run_unspoiled("c", tmp_path, tiny)
    for model in ("chain-userspace", "chain-combined"):
        if _realizable(model):
            got = s[s["model"] == model]
            # Spinning pods share the generator's CPU: the NDR is unknown, but it must be the
            # rate of a recorded lossless trial.
            assert list(got["numa"]) == ["s1"]
            assert _backed_by_a_lossless_trial(where / "c.jsonl", model, got["throughput_pps"].iloc[0])
        assert model in set(nr["model"])  # s4 (or the model) is not realizable here


def test_experiment_d_notebook_measures_a_density_corner(tmp_path, clean_host):
    tiny = {"repetitions": 1, "density": {"topologies": ["csc", "csp"], "instances": [2], "nfs_per_instance": [2]},
            "traffic": {"frame_sizes": [64], "flows": 16}, "trial": {"duration_s": 0.3},
            "search": {"method": "mrr", "initial_trial_duration_s": 0.3, "final_trial_duration_s": 0.3,
                       "max_rate_pps": 5000}}
    tries = iter(range(100))

    def attempt():
        where = tmp_path / f"try{next(tries)}"  # a fresh records file: a repeat is a new run
        where.mkdir()
        return where, _run("d", where, tiny)

    # Everything arrives (exact) only of trials the host let the generator send whole: a run is
    # repeated only when its records say the host spoiled it.
    _, (s, nr) = until_unspoiled(attempt, lambda done: _host_spoiled_run(done[0] / "d.jsonl"),
                                 what="experiment D's notebook run")
    assert sorted(s["topology"]) == ["csc", "csp"] and set(s["goal"]) == {"mrr"}
    assert set(s["instances"]) == {2} and set(s["nfs"]) == {2}
    assert (s["throughput_pps"] == 5000).all()  # far below the kernel NFs' capacity: everything arrives
    assert nr.empty


def test_experiment_f_notebook_sends_jumbo_frames_only_where_the_mtu_carries_them(tmp_path, clean_host):
    tiny = {"repetitions": 1, "mtu_bytes": [1500, 9000], "traffic": {"frame_sizes": [9018]}, "control": None,
            "trial": {"duration_s": 0.5},
            "search": {"method": "mrr", "initial_trial_duration_s": 0.5, "final_trial_duration_s": 0.5,
                       "min_rate_pps": 100, "max_rate_pps": 1000}}
    s, nr = _run("f", tmp_path, tiny)
    models = [m for m in ("ovs-dpdk-memif", "ovs-dpdk-tap") if _realizable(m)]
    assert sorted(zip(s["model"], s["mtu_bytes"], s["frame_size"])) == [(m, 9000, 9018) for m in models]
    # 500 frames of 9018 B per direction, far below either path's capacity: they cross (a jumbo frame
    # the path cannot carry arrives never). Not "all" of them: OVS's PMD and the pod's forwarder share
    # the generator's CPUs, and a busy host starves them for tens of ms (seen: 947 pps at load 7-8).
    assert ((s["throughput_pps"] > 0) & (s["throughput_pps"] <= 1000)).all(), s["throughput_pps"]
    big = nr[nr["kind"] == "frame-too-large"]
    assert sorted(zip(big["model"], big["mtu_bytes"], big["frame_size"])) == [(m, 1500, 9018) for m in models]


def test_the_guardian_runs_a_py_as_its_notebook_from_its_directory_and_copies_whole_progress_lines(tmp_path):
    import io

    from nfvlab import notebook_run as run_notebook

    args = run_notebook.prepare(["--no-progress-bar", str(REPO / "notebooks/report.py"), "out.ipynb",
                                 "-p", "tables_dir", "x.py"], tmp_path)
    assert args[1] == str(tmp_path / "report.ipynb") and args[2:6] == ["out.ipynb", "-p", "tables_dir", "x.py"]
    assert args[-2:] == ["--cwd", str(REPO / "notebooks")]
    nb = nbformat.read(args[1], as_version=4)
    assert nb.metadata["kernelspec"]["name"] == "python3" and "jupytext" not in nb.metadata
    assert [c.source for c in nb.cells] == [c.source for c in jupytext.read(REPO / "notebooks/report.py").cells]
    assert run_notebook.prepare(["in.ipynb", "out.ipynb", "--cwd", "/"], tmp_path) == ["in.ipynb", "out.ipynb",
                                                                                       "--cwd", "/"]
    log, err = tmp_path / "progress.log", io.StringIO()
    tail = run_notebook.Tail(log, err)
    tail.pump()  # nothing written yet
    log.write_text("a: 1/2 done\na: 2/")
    tail.pump()
    assert err.getvalue() == "a: 1/2 done\n"
    with log.open("a") as f:
        f.write("2 done\n")
    tail.pump()
    assert err.getvalue() == "a: 1/2 done\na: 2/2 done\n"
