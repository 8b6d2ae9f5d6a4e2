"""The pipeline is honest: every stage depends on the code that can change its output.

A scratch copy of the repository (tracked and new files, no data) gets a dvc.lock
that matches its files; then one edit at a time must make exactly the expected
stages stale in the real `dvc status`.
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import GIT_ENV, REPO, copy_checkout

sys.path.insert(0, str(REPO / "scripts"))
import code_deps  # noqa: E402

from nfvlab import measuring_code as mc  # noqa: E402

DVC = str(Path(sys.executable).with_name("dvc"))
MEASURE = {f"experiment@{x}" for x in "abcdf"}
# A and C again, on the Kubernetes lab; E (CNI, tool runs) has a stage of its own.
KUBERNETES = {f"experiment_kubernetes@{x}" for x in "ac"}
EXPERIMENTS = MEASURE | KUBERNETES | {"experiment_e"}
ANALYSES = {f"analysis@{x}" for x in "abcdf"} | {f"analysis_kubernetes@{x}" for x in "ac"} | {"analysis_e"}


def test_every_stage_lists_the_import_closure_of_its_code():
    assert code_deps.missing() == {}


def test_the_closure_follows_imports_and_package_data():
    want = code_deps.expected()
    # A directory when all of it is needed, else its files (a module no stage imports stays out).
    assert "nfvlab/labs/embedded" in want["experiment"] and "nfvlab/labs/base.py" in want["experiment"]
    assert "nfvlab/traffic" in want["calibration"] or "nfvlab/traffic/embedded" in want["calibration"]
    assert "nfvlab/stats.py" in want["report"] and "nfvlab/stats.py" not in want["calibration"]
    # the experiments' modules are imported by discovery, invisible to the import graph: all counted
    assert "nfvlab/experiments" in want["analysis"] and "nfvlab/analysis_cni.py" in want["analysis"]
    # measuring never needs analysis code; the analysis code itself never needs a lab (the analysis
    # stages do, through the notebooks they execute, which can also measure)
    assert not {"nfvlab/stats.py", "nfvlab/analysis.py", "nfvlab/plots", "nfvlab/notebook.py"} & set(want["experiment"])
    analysing = mc.closure(mc.import_graph(), ["nfvlab.analysis", "nfvlab.report"])
    assert "nfvlab.stats" in analysing and not any(m.startswith("nfvlab.labs") for m in analysing)


def test_a_measurement_stage_depends_on_its_own_lab_only():
    """backend_for imports each backend lazily for its kind: an embedded stage lists no Kubernetes
    code, the Kubernetes stage no embedded backend; what both run (generator, search) is in both."""
    want = code_deps.expected()
    for stage in ("experiment", "experiment_e", "calibration"):
        assert not [p for p in want[stage] if p.startswith(("nfvlab/labs/kubernetes", "nfvlab/labs/cluster.py"))], stage
        assert "nfvlab/labs/embedded" in want[stage] and "nfvlab/labs" not in want[stage], stage
    k8s = want["experiment_kubernetes"]
    assert "nfvlab/labs/kubernetes" in k8s and "nfvlab/labs/cluster.py" in k8s
    assert not [p for p in k8s if p.startswith("nfvlab/labs/embedded")] and "nfvlab/labs" not in k8s
    for stage in ("experiment", "experiment_kubernetes", "experiment_e"):
        assert {"nfvlab/traffic", "nfvlab/search", "nfvlab/labs/forwarder.py"} <= set(want[stage]), stage


def test_the_check_fails_on_a_missing_or_an_excess_dep(monkeypatch):
    real = code_deps.listed()
    assert code_deps.missing() == {} and code_deps.extra() == {}
    without = {**real, "experiment": [d for d in real["experiment"] if d != "nfvlab/traffic"]}
    monkeypatch.setattr(code_deps, "listed", lambda: without)
    assert code_deps.missing() == {"experiment": ["nfvlab/traffic"]}
    # the whole labs folder: covers every need, but drags the Kubernetes backend into an embedded stage
    whole = {**real, "experiment": [d for d in real["experiment"] if not d.startswith("nfvlab/labs")] + ["nfvlab/labs"]}
    monkeypatch.setattr(code_deps, "listed", lambda: whole)
    assert code_deps.missing() == {} and code_deps.extra() == {"experiment": ["nfvlab/labs"]}


def _files(paths) -> set[str]:
    out = set()
    for p in paths:
        path = REPO / p
        out |= {f.relative_to(REPO).as_posix() for f in path.rglob("*") if f.is_file() and "__pycache__" not in f.parts} \
            if path.is_dir() else {p}
    return out


@pytest.mark.parametrize("stage,kind", [("experiment", "embedded"), ("experiment_e", "embedded"),
                                        ("experiment_kubernetes", "kubernetes")])
def test_the_resume_fingerprint_covers_exactly_the_stage_deps(stage, kind):
    """One definition of measuring code: what a stage's run fingerprints is what DVC re-runs it for."""
    deps = _files(code_deps.expected()[stage])
    assert {f.relative_to(REPO).as_posix() for f in mc.measuring_files(kind, REPO / "nfvlab")} == deps
    # and publishing counts the same files
    package = sorted(f.relative_to(REPO).as_posix() for f in (REPO / "nfvlab").rglob("*")
                     if f.is_file() and "__pycache__" not in f.parts)
    assert set(mc.measuring_changes(package, {"lab": {"kind": kind}}, REPO / "nfvlab")) == deps


def _run(args, cwd, **kw):
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, check=True, timeout=300, env=GIT_ENV,
                          **kw)


def locked_copy(root: Path) -> Path:
    """A copy of the checkout at ``root`` with a dvc.lock matching its files (outputs absent):
    what a finished `dvc repro` would leave."""
    copy_checkout(root)
    _run(["git", "init", "-q"], root)
    code = ("from dvc.repo import Repo\nrepo = Repo('.')\nwith repo.lock:\n"
            "    for st in repo.index.stages:\n        st.save_deps(allow_missing=True)\n"
            "        st.dump(update_pipeline=False)\n")
    _run([sys.executable, "-c", code], root)
    return root


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return locked_copy(tmp_path_factory.mktemp("pipeline") / "repo")


def _stale(root) -> dict[str, set]:
    """Stage -> dependency paths/params dvc status reports changed (missing data deps included)."""
    out = json.loads(_run([DVC, "status", "--json"], root).stdout or "{}")
    stale = {}
    for stage, changes in out.items():
        for ch in changes:
            if isinstance(ch, dict):
                for key in ("changed deps", "changed params"):
                    if key in ch:
                        stale.setdefault(stage, set()).update(ch[key])
    return stale


def _delta(root, path, edit) -> set:
    before = _stale(root)
    target = root / path
    original = target.read_bytes()
    try:
        edit(target)
        after = _stale(root)
    finally:
        target.write_bytes(original)
    return {s for s, deps in after.items() if deps - before.get(s, set())}


def _append(text):
    return lambda p: p.write_text(p.read_text() + text)


# Measurement stages run `nfvlab experiment run` (nfvlab/stage.py): no analysis code. The analysis
# stages execute the experiment notebooks, whose imports include the measuring code (a notebook run
# in JupyterLab measures), so a lab or traffic edit re-runs them too.
MEASURING = EXPERIMENTS | {"calibration"} | ANALYSES


@pytest.mark.parametrize("path,expected", [
    ("nfvlab/stats.py", ANALYSES | {"report"}),
    ("nfvlab/cli.py", ANALYSES | {"calibration", "reference_figures"}),  # measuring runs python -m nfvlab.stage
    # a lab backend: the stages measuring on that lab (and the analyses, whose notebooks can measure on either)
    ("nfvlab/labs/embedded/kernel.py", MEASURING - KUBERNETES),
    ("nfvlab/labs/kubernetes/pods.py", KUBERNETES | ANALYSES),
    ("nfvlab/labs/kubernetes/local_cluster/cluster.py", KUBERNETES),  # only under --local-cluster
    ("nfvlab/labs/cluster.py", KUBERNETES),
    ("nfvlab/traffic/embedded/nfvlab_gen.c", MEASURING),
    ("nfvlab/labs/embedded/bpf_src/tc_redirect.c", MEASURING - KUBERNETES),
    ("nfvlab/report/assemble.py", {"report"}),
    ("nfvlab/plots/heatmap.py", ANALYSES | {"report", "reference_figures"}),
    ("nfvlab/notebook.py", ANALYSES | {"report"}),
    # The analysis stages run the notebooks' jupytext text; the .ipynb JupyterLab saves is no dependency.
    ("notebooks/experiment_c.py", {"analysis@c", "analysis_kubernetes@c"}),
    ("notebooks/experiment_e.py", {"analysis_e"}),
    ("nfvlab/labs/embedded/cni.py", MEASURING - KUBERNETES),  # E's data paths, realized by the embedded backend
    ("nfvlab/analysis_cni.py", ANALYSES | {"report"}),
    ("notebooks/experiment_a.py", {"analysis@a", "analysis_kubernetes@a"}),
    ("notebooks/report.py", {"report"}),
    ("notebooks/experiment_a.ipynb", set()),
    ("notebooks/report.ipynb", set()),
    ("nfvlab/stage.py", EXPERIMENTS),
    ("nfvlab/notebook_run.py", ANALYSES | {"report"}),
])
def test_editing_code_makes_exactly_the_stages_that_use_it_stale(scratch, path, expected):
    edit = _append("\n// edited\n" if path.endswith(".c") else "\n# edited\n")
    if path.endswith(".ipynb"):
        def edit(p):  # what JupyterLab's autosave adds after a run
            nb = json.loads(p.read_text())
            nb["metadata"]["language_info"] = {"name": "python", "version": "3.11.2"}
            for cell in nb["cells"]:
                if cell["cell_type"] == "code":
                    cell["outputs"], cell["execution_count"] = [{"output_type": "stream", "name": "stdout",
                                                                 "text": ["x\n"]}], 1
            p.write_text(json.dumps(nb))
    assert _delta(scratch, path, edit) == expected


@pytest.mark.parametrize("path", ["nfvlab/analysis.py", "nfvlab/analysis_cni.py", "nfvlab/plots/bars.py",
                                  "nfvlab/plots/output.py", "nfvlab/report/assemble.py", "nfvlab/results.py"])
def test_an_analysis_edit_re_measures_nothing(scratch, path):
    stale = _delta(scratch, path, _append("\n# edited\n"))
    assert stale and not stale & (EXPERIMENTS | {"calibration"}), stale


@pytest.mark.parametrize("path", ["nfvlab/traffic/base.py", "nfvlab/traffic/embedded/generator.py",
                                  "nfvlab/traffic/trex/generator.py"])
def test_a_traffic_edit_re_measures_every_experiment(scratch, path):
    assert EXPERIMENTS <= _delta(scratch, path, _append("\n# edited\n"))


@pytest.mark.parametrize("path", ["nfvlab/labs/kubernetes/backend.py", "nfvlab/labs/kubernetes/pods.py",
                                  "nfvlab/labs/kubernetes/local_cluster/build.py", "nfvlab/labs/cluster.py"])
def test_a_kubernetes_only_edit_re_measures_no_embedded_stage(scratch, path):
    stale = _delta(scratch, path, _append("\n# edited\n"))
    assert stale & KUBERNETES == KUBERNETES and not stale & (MEASURE | {"experiment_e", "calibration"}), stale


def test_an_embedded_generator_edit_re_measures_every_embedded_stage(scratch):
    stale = _delta(scratch, "nfvlab/traffic/embedded/generator.py", _append("\n# edited\n"))
    assert MEASURE | {"experiment_e", "calibration"} <= stale


def test_editing_params_makes_exactly_the_stages_that_read_them_stale(scratch):
    def more_reps(p):
        p.write_text(p.read_text().replace("repetitions: 2", "repetitions: 5"))

    assert "repetitions: 2" in (scratch / "params/quick/experiment_d.yaml").read_text()
    assert _delta(scratch, "params/quick/experiment_d.yaml", more_reps) == {"experiment@d"}
    def faster_ports(p):
        p.write_text(p.read_text().replace("port_speed: 10GbE", "port_speed: 25GbE"))

    assert _delta(scratch, "params/lab.yaml", faster_ports) == MEASURE | {"calibration"}
    assert _delta(scratch, "params/lab.kubernetes.yaml", faster_ports) == KUBERNETES
    def longer(p):
        p.write_text(p.read_text().replace("duration_s: 1.0", "duration_s: 2.0"))

    assert _delta(scratch, "params/quick/calibration.yaml", longer) == {"calibration"}


# --------------------------------------------------------------------------- plots
def _write_table(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    cols = "model,frame_size,status,n,mean_pps,ci_low_pps,ci_high_pps"
    path.write_text("\n".join([cols, *rows]) + "\n")


def test_data_plots_draw_one_line_per_model(scratch):
    """`dvc plots show` on tables of two models: a vega spec coloured by model, missing cells filtered out."""
    table = scratch / "data/tables/experiment_a/experiment_a_throughput.csv"
    _write_table(table, ["macvlan,64,measured,3,120000,110000,130000", "macvlan,1518,measured,3,110000,-5000,150000",
                         "host-routing,64,measured,3,80000,70000,90000", "sriov,64,not realizable: no VFs,0,,,"])
    try:
        out = json.loads(_run([DVC, "plots", "show", "--json"], scratch).stdout)
    finally:
        table.unlink()
    spec = out["data"]["Experiment A, embedded lab - NDR per model"][0]["content"]
    assert spec["encoding"]["color"]["field"] == "model"
    assert {r["model"] for r in spec["data"]["values"]} == {"macvlan", "host-routing", "sriov"}
    assert "datum.status == 'measured'" in spec["transform"][0]["filter"]
    assert "max(0, " in json.dumps(spec["transform"])  # an interval bar never reaches below 0


def test_image_plots_are_every_figure_directory_the_stages_write():
    import yaml

    pipeline = yaml.safe_load((REPO / "dvc.yaml").read_text())
    written = set()
    for stage in pipeline["stages"].values():
        body = stage.get("do", stage)
        for item in stage.get("foreach", [None]):
            outs = [o if isinstance(o, str) else next(iter(o)) for o in body.get("outs", [])]
            written |= {o.replace("${item}", str(item)) for o in outs if o.startswith("figures")}
    assert "figures/experiments/experiment_f" in written and "figures/experiments/experiment_e" in written
    assert {p for p in pipeline["plots"] if isinstance(p, str)} == written


def test_offline_plots_template_inlines_the_versions_dvc_loads_from_the_cdn(tmp_path):
    import shutil

    import plots_offline

    names = [n for n, _ in plots_offline.cdn_packages()]
    assert names == ["vega", "vega-lite", "vega-embed"]
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed: the offline template cannot be built here")
    page = plots_offline.build(tmp_path / "offline.html").read_text()
    assert "{plot_divs}" in page and "{scripts}" not in page and "cdn.jsdelivr" not in page
    assert all(f"/* {n}@{v} */" in page for n, v in plots_offline.cdn_packages())
