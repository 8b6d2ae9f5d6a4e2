"""What measures (nfvlab.measuring_code): per-lab closures, the resume fingerprint, new modules.

Edits go to a copy of the package (tmp_path), never to the checkout.
"""
import shutil

import pytest

from conftest import REPO
from nfvlab import measuring_code as mc
from nfvlab import provenance


@pytest.fixture
def pkg(tmp_path):
    root = tmp_path / "nfvlab"
    shutil.copytree(REPO / "nfvlab", root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _append(path, text="\n# edited\n"):
    path.write_text(path.read_text() + text)


def _rel(paths, root):
    return {p.relative_to(root).as_posix() for p in paths}


def test_the_import_graph_reads_lazy_and_module_level_imports():
    graph = mc.import_graph()
    assert graph["nfvlab.labs"]["nfvlab.labs.kubernetes"] is False  # inside backend_for
    assert graph["nfvlab.labs"]["nfvlab.labs.base"] is True
    assert graph["nfvlab.stage"]["nfvlab.experiment"] is True and graph["nfvlab.stage"]["nfvlab.labs.cluster"] is False


def test_each_lab_measures_with_its_own_backend_only():
    embedded = _rel(mc.measuring_files("embedded"), mc.PACKAGE_DIR)
    k8s = _rel(mc.measuring_files("kubernetes"), mc.PACKAGE_DIR)
    assert "labs/embedded/lab.py" in embedded and not any(p.startswith("labs/kubernetes/") for p in embedded)
    assert "labs/cluster.py" not in embedded and "labs/cluster.py" in k8s
    assert "labs/kubernetes/pods.py" in k8s and not any(p.startswith("labs/embedded/") for p in k8s)
    shared = {"traffic/embedded/generator.py", "traffic/embedded/nfvlab_gen.c", "search/__init__.py", "stage.py",
              "experiment.py", "measuring_code.py", "labs/__init__.py"}
    assert shared <= embedded & k8s
    assert not {"analysis.py", "stats.py", "plots/bars.py", "report/assemble.py", "cli.py"} & (embedded | k8s)
    assert _rel(mc.measuring_files(None), mc.PACKAGE_DIR) == embedded | k8s | _rel(
        mc.measuring_files("external"), mc.PACKAGE_DIR)
    assert "labs/external.py" in _rel(mc.measuring_files(None), mc.PACKAGE_DIR) - embedded - k8s


def test_the_digest_of_a_lab_changes_with_its_code_only(pkg):
    before = {k: mc.digest(k, pkg) for k in ("embedded", "kubernetes", None)}
    _append(pkg / "labs" / "kubernetes" / "pods.py")
    after_k8s = {k: mc.digest(k, pkg) for k in before}
    assert after_k8s["embedded"] == before["embedded"]
    assert after_k8s["kubernetes"] != before["kubernetes"] and after_k8s[None] != before[None]
    _append(pkg / "traffic" / "embedded" / "generator.py")
    after_gen = {k: mc.digest(k, pkg) for k in before}
    assert all(after_gen[k] != after_k8s[k] for k in before)
    _append(pkg / "stats.py")  # analysing code
    assert {k: mc.digest(k, pkg) for k in before} == after_gen


def test_the_fingerprint_is_the_params_and_their_labs_code():
    a = {"experiment": "a", "lab": {"kind": "embedded"}, "source": "x.yaml"}
    assert mc.fingerprint(a) == mc.fingerprint({**a, "source": "y.yaml"})
    assert mc.fingerprint(a) != mc.fingerprint({**a, "lab": {"kind": "kubernetes"}})
    assert len(mc.fingerprint({"experiment": "e"})) == 16


def test_a_seam_made_eager_drags_its_lab_in(pkg):
    """The closure skips a seam only while it is lazy: at module level it runs for every lab."""
    init = pkg / "labs" / "__init__.py"
    assert "from nfvlab.labs.kubernetes import KubernetesLab" in init.read_text()
    _append(init, "\nfrom nfvlab.labs.kubernetes import KubernetesLab  # noqa\n")
    assert "labs/kubernetes/pods.py" in _rel(mc.measuring_files("embedded", pkg), pkg)


def test_a_new_module_is_measuring_code_once_measuring_code_imports_it(pkg):
    (pkg / "newstats.py").write_text('"""Pure statistics, imported by nothing yet."""\n')
    assert "newstats.py" not in _rel(mc.measuring_files("embedded", pkg), pkg)
    (pkg / "newphase.py").write_text('"""A new phase of the runner."""\nfrom nfvlab import newstats\n')
    assert "newstats.py" not in _rel(mc.measuring_files("embedded", pkg), pkg)  # nothing measuring imports it yet
    _append(pkg / "experiment.py", "\nfrom nfvlab import newphase  # noqa\n")
    files = _rel(mc.measuring_files("embedded", pkg), pkg)
    assert {"newphase.py", "newstats.py"} <= files
    assert {"pairing.py", "paired.py"} <= files  # the paired phase's modules, so


@pytest.mark.parametrize("kind, refused", [
    ("embedded", ["nfvlab/traffic/embedded/generator.py"]),
    ("kubernetes", ["nfvlab/labs/kubernetes/pods.py", "nfvlab/traffic/embedded/generator.py"]),
    (None, ["nfvlab/labs/kubernetes/pods.py", "nfvlab/traffic/embedded/generator.py"]),
])
def test_publishing_refuses_the_runs_own_measuring_code_only(kind, refused):
    changed = ["nfvlab/labs/kubernetes/pods.py", "nfvlab/analysis.py", "nfvlab/traffic/embedded/generator.py"]
    prov = {"git_dirty": True, "git_changed": changed, **({"params": {"lab": {"kind": kind}}} if kind else {})}
    assert provenance.measuring_code_changes(prov) == refused
