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

DVC = str(Path(sys.executable).with_name("dvc"))
MEASURE = {f"experiment@{x}" for x in "abcd"}
EXPERIMENTS = MEASURE | {"experiment_kubernetes"}  # A again, on the Kubernetes lab
ANALYSES = {f"analysis@{x}" for x in "abcd"} | {"analysis_kubernetes"}


def test_every_stage_lists_the_import_closure_of_its_code():
    assert code_deps.missing() == {}


def test_the_closure_follows_imports_and_package_data():
    want = code_deps.expected()
    assert "nfvlab/labs" in want["experiment"] and "nfvlab/traffic" in want["calibration"]
    assert not any(p.startswith("nfvlab/labs") for p in want["analysis"])  # analysis never needs a lab
    assert "nfvlab/stats.py" in want["report"] and "nfvlab/stats.py" not in want["calibration"]


def _run(args, cwd, **kw):
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, check=True, timeout=300, env=GIT_ENV,
                          **kw)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    root = copy_checkout(tmp_path_factory.mktemp("pipeline") / "repo")
    _run(["git", "init", "-q"], root)
    # A lock matching these files (outputs absent): what a finished `dvc repro` would leave.
    code = ("from dvc.repo import Repo\nrepo = Repo('.')\nwith repo.lock:\n"
            "    for st in repo.index.stages:\n        st.save_deps(allow_missing=True)\n"
            "        st.dump(update_pipeline=False)\n")
    _run([sys.executable, "-c", code], root)
    return root


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


@pytest.mark.parametrize("path,expected", [
    # The experiment notebooks show analysis tables, so their executed copies depend on stats too.
    ("nfvlab/stats.py", ANALYSES | EXPERIMENTS | {"report"}),
    ("nfvlab/cli.py", ANALYSES | {"calibration", "reference_figures"}),
    ("nfvlab/labs/embedded/kernel.py", EXPERIMENTS | {"calibration"}),
    ("nfvlab/traffic/embedded/nfvlab_gen.c", EXPERIMENTS | {"calibration"}),
    ("nfvlab/labs/embedded/bpf_src/tc_redirect.c", EXPERIMENTS | {"calibration"}),
    ("nfvlab/report.py", {"report"}),
    ("nfvlab/plots/heatmap.py", ANALYSES | EXPERIMENTS | {"report", "reference_figures"}),
    ("notebooks/experiment_c.ipynb", {"experiment@c"}),
    ("notebooks/experiment_a.ipynb", {"experiment@a", "experiment_kubernetes"}),
    ("scripts/k8s/experiment.py", {"experiment_kubernetes"}),
])
def test_editing_code_makes_exactly_the_stages_that_use_it_stale(scratch, path, expected):
    edit = _append("\n// edited\n" if path.endswith(".c") else "\n# edited\n")
    if path.endswith(".ipynb"):
        def edit(p):
            nb = json.loads(p.read_text())
            nb["cells"].append({"cell_type": "markdown", "metadata": {}, "source": ["edited"], "id": "edited"})
            p.write_text(json.dumps(nb))
    assert _delta(scratch, path, edit) == expected


def test_editing_params_makes_exactly_the_stages_that_read_them_stale(scratch):
    def more_reps(p):
        p.write_text(p.read_text().replace("repetitions: 2", "repetitions: 5"))

    assert "repetitions: 2" in (scratch / "params/quick/experiment_d.yaml").read_text()
    assert _delta(scratch, "params/quick/experiment_d.yaml", more_reps) == {"experiment@d"}
    def faster_ports(p):
        p.write_text(p.read_text().replace("port_speed: 10GbE", "port_speed: 25GbE"))

    assert _delta(scratch, "params/lab.yaml", faster_ports) == MEASURE | {"calibration"}
    assert _delta(scratch, "params/lab.kubernetes.yaml", faster_ports) == {"experiment_kubernetes"}
    def longer(p):
        p.write_text(p.read_text().replace("duration_s: 1.0", "duration_s: 2.0"))

    assert _delta(scratch, "params/quick/calibration.yaml", longer) == {"calibration"}
