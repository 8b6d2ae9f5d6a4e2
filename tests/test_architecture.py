"""Architecture contracts: the data flow runs one way and has no cycles.

The contracts live in pyproject.toml ([tool.importlinter]); these tests run
import-linter on the package, prove that a forbidden import would be caught,
and look for import cycles between nfvlab's modules with grimp.
"""
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

from conftest import REPO

LINT = str(Path(sys.executable).with_name("lint-imports"))


def _lint(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([LINT, "--config", str(root / "pyproject.toml"), "--no-cache"], cwd=root,
                          capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})


def test_the_contracts_hold():
    out = _lint(REPO)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "0 broken" in out.stdout


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(REPO / "nfvlab", root / "nfvlab", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    return root


@pytest.mark.parametrize("module, line, contract, chain", [
    ("trial.py", "from nfvlab.labs.embedded import Lab", "measurement and analysis never import a lab backend",
     "nfvlab.trial -> nfvlab.labs"),
    # A runner names the seam (nfvlab.labs), never a backend: else it could only run on that lab.
    ("experiment.py", "from nfvlab.labs.embedded.cni import CniLab",
     "the experiment runners ask the lab-backend seam, never a backend",
     "nfvlab.experiment -> nfvlab.labs.embedded.cni"),
])
def test_importing_a_lab_backend_breaks_the_contracts(tmp_path, module, line, contract, chain):
    root = _copy(tmp_path)
    path = root / "nfvlab" / module
    path.write_text(path.read_text() + f"\n{line}  # forbidden\n")
    out = _lint(root)
    assert out.returncode != 0
    assert f"{contract} BROKEN" in out.stdout
    assert chain in out.stdout


def test_the_scenario_layer_importing_params_breaks_the_layers(tmp_path):
    root = _copy(tmp_path)
    cat = root / "nfvlab" / "scenario" / "catalogue.py"
    cat.write_text(cat.read_text() + "\nfrom nfvlab import params  # upward edge\n")
    out = _lint(root)
    assert out.returncode != 0 and "one-way layers BROKEN" in out.stdout


def _cycles(graph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), i.e. import cycles."""
    modules = sorted(m for m in graph.modules if m != "nfvlab")
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.find_modules_directly_imported_by(v)):
            if w == "nfvlab" or w not in graph.modules:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for m in modules:
        if m not in index:
            visit(m)
    return out


def test_no_import_cycles():
    assert _cycles(grimp.build_graph("nfvlab", cache_dir=None)) == []


def test_a_cycle_would_be_found():
    graph = grimp.ImportGraph()
    for m in ("nfvlab", "nfvlab.a", "nfvlab.b", "nfvlab.c", "nfvlab.d"):
        graph.add_module(m)
    graph.add_import(importer="nfvlab.a", imported="nfvlab.b")
    graph.add_import(importer="nfvlab.b", imported="nfvlab.c")
    graph.add_import(importer="nfvlab.c", imported="nfvlab.a")
    graph.add_import(importer="nfvlab.d", imported="nfvlab.a")
    assert _cycles(graph) == [["nfvlab.a", "nfvlab.b", "nfvlab.c"]]


def test_every_name_a_module_exports_exists():
    """``__all__`` is what ``from module import *`` and the docs read: a name left behind when its
    definition moved (as ``analysis_cni.write_experiment`` was) makes that import fail."""
    import importlib
    import pkgutil

    import nfvlab

    missing = []
    for info in pkgutil.walk_packages(nfvlab.__path__, "nfvlab."):
        if info.name.endswith(".__main__"):  # runs the command line when imported
            continue
        module = importlib.import_module(info.name)
        missing += [f"{info.name}.{name}" for name in getattr(module, "__all__", ()) if not hasattr(module, name)]
    assert missing == []
