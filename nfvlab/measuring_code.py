"""What measures: the one definition of nfvlab's measuring code, per lab.

A measurement runs :data:`ENTRY` (``python -m nfvlab.stage``, = ``nfvlab experiment run``) on one
lab backend; its code is the static import closure of that entry and of the lab's modules
(:data:`LABS`), with the package data its modules read (:data:`DATA`). Three users derive from
this module, so they cannot disagree:

- the DVC pipeline's code deps (``scripts/code_deps.py``: a stage reruns when its closure changes);
- the resume fingerprint of a run (:func:`fingerprint`: an interrupted run resumes only under the
  same params and the same measuring code of its lab);
- publishing (:func:`measuring_changes`, used by :func:`nfvlab.provenance.measuring_code_changes`:
  a run measured while its measuring code differed from its commit is refused).

The closure is computed from the sources (``ast``, no import is executed), so a new module is
measuring code as soon as a measuring module imports it, and analysing code otherwise.

Lab seams: :func:`nfvlab.labs.backend_for` imports each backend inside the function, only for the
lab kind it was asked for, and :mod:`nfvlab.stage` imports :mod:`nfvlab.labs.cluster` (the local
Kubernetes cluster) only under ``--local-cluster``. A per-lab closure does not follow these
:data:`SEAMS` and adds the lab's own modules instead, so an embedded-lab measurement does not
depend on the Kubernetes backend nor the reverse. A seam import moved to module level is followed
again (it then runs for every lab): the closure stays honest.

Standard library only, imports no other nfvlab module: every layer may use it.
"""
from __future__ import annotations

import ast
import hashlib
import json
from pathlib import Path
from typing import Mapping, Optional

PACKAGE_DIR = Path(__file__).resolve().parent
#: What a measurement stage runs.
ENTRY = "nfvlab.stage"
#: The modules of each lab kind (``LabParams.kind``) that a measurement on it runs.
LABS: Mapping[str, tuple[str, ...]] = {
    "embedded": ("nfvlab.labs.embedded",),
    "kubernetes": ("nfvlab.labs.kubernetes", "nfvlab.labs.cluster"),
    "external": ("nfvlab.labs.external",),  # backend_for(ports=...): the generator on given ports
}
#: Importer -> the lab modules it imports lazily, only for the lab it runs on (see the module docstring).
SEAMS: Mapping[str, tuple[str, ...]] = {
    "nfvlab.labs": ("nfvlab.labs.embedded", "nfvlab.labs.kubernetes", "nfvlab.labs.external"),
    "nfvlab.stage": ("nfvlab.labs.cluster",),
}
#: Package data a module reads (C and BPF sources it compiles, a script another interpreter runs):
#: package-relative glob patterns.
DATA: Mapping[str, tuple[str, ...]] = {
    "nfvlab.traffic.embedded.binary": ("traffic/embedded/nfvlab_*.c", "traffic/embedded/nfvlab_*.h"),
    "nfvlab.labs.embedded.bpf": ("labs/embedded/bpf_src/*",),
    "nfvlab.traffic.trex.generator": ("traffic/trex/worker.py",),  # run by the TRex venv's python
}
#: Packages that import their modules by discovery (importlib), which no import statement shows:
#: importing the package imports every module in it.
DISCOVERING = ("nfvlab.experiments",)
#: Repository paths outside the package that measure (files, or folders ending in ``/``): the params,
#: the notebooks and scripts the pipeline runs, the pipeline and the pinned dependencies.
REPO_MEASURING: tuple[str, ...] = ("params/", "notebooks/", "scripts/", "dvc.yaml", "pyproject.toml",
                                   "requirements.lock", "run")

#: Importer -> {imported module: imported at module level (True) or only inside functions (False)}.
Graph = dict[str, dict[str, bool]]


def modules(root: Path = PACKAGE_DIR) -> dict[str, Path]:
    """Module name -> file, for every module of the package at ``root``."""
    out = {}
    for p in sorted(root.rglob("*.py")):
        if "__pycache__" in p.parts:
            continue
        parts = list(p.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(["nfvlab", *parts])] = p
    return out


def _imports(name: str, path: Path, known: set[str]) -> dict[str, bool]:
    """The nfvlab modules ``name`` (file ``path``) imports -> whether at module level."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: dict[str, bool] = {}

    def resolve(mod: str) -> Optional[str]:
        while mod and mod not in known:
            mod = mod.rpartition(".")[0]
        return mod or None

    def add(mod: Optional[str], eager: bool) -> None:
        if mod and mod.startswith("nfvlab.") and mod != name:
            found[mod] = found.get(mod, False) or eager

    def visit(node: ast.AST, eager: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                for alias in child.names:
                    add(resolve(alias.name), eager)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    up = package.split(".")[: len(package.split(".")) - (child.level - 1)]
                    base = ".".join(up + ([base] if base else []))
                for alias in child.names:
                    full = f"{base}.{alias.name}"
                    add(full if full in known else resolve(base), eager)
            visit(child, eager and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(ast.parse(path.read_text(), str(path)), True)
    return found


def import_graph(root: Path = PACKAGE_DIR) -> Graph:
    """Every module's imports of other nfvlab modules (``TYPE_CHECKING`` ones included)."""
    mods = modules(root)
    known = set(mods) | {"nfvlab"}
    return {m: _imports(m, p, known) for m, p in mods.items()}


def closure(graph: Graph, entries, *, seams: bool = True) -> set[str]:
    """Modules run when ``entries`` are imported: what they import, directly or not, every package
    ``__init__`` on the way (it runs whenever a submodule is imported) and the ``__main__`` of such a
    package (its ``python -m``, counted with it). ``seams`` False: a lazy import of a lab module by a
    :data:`SEAMS` importer is not followed (a per-lab closure, which names its lab in ``entries``)."""
    out: set[str] = set()
    todo = set(entries)
    while todo:
        m = todo.pop()
        if m in out or not m.startswith("nfvlab."):
            continue
        out.add(m)
        parts = m.split(".")
        todo |= {".".join(parts[:i]) for i in range(2, len(parts))}
        skipped = () if seams else SEAMS.get(m, ())
        todo |= {i for i, eager in graph.get(m, {}).items()
                 if eager or not any(i == s or i.startswith(s + ".") for s in skipped)}
        if m in DISCOVERING:
            todo |= {x for x in graph if x.startswith(m + ".")}
        if f"{m}.__main__" in graph:
            todo.add(f"{m}.__main__")
    return out


def lab_entries(kind: Optional[str]) -> tuple[str, ...]:
    """The lab modules a measurement on lab ``kind`` runs (None, or a kind not in :data:`LABS`: every lab's)."""
    if kind in LABS:
        return LABS[kind]
    return tuple(m for mods in LABS.values() for m in mods)


def files(mods, root: Path = PACKAGE_DIR) -> set[Path]:
    """The files of ``mods`` (modules of the package at ``root``) and the package data they read, with
    the package's ``__init__`` (it runs on every import)."""
    paths = {root / "__init__.py"}
    for m in mods:
        rel = Path(*m.split(".")[1:])
        paths.add(root / rel / "__init__.py" if (root / rel).is_dir() else (root / rel).with_suffix(".py"))
        for pattern in DATA.get(m, ()):
            paths |= {p for p in root.glob(pattern) if p.is_file() and "__pycache__" not in p.parts}
    return paths


def measuring_files(kind: Optional[str] = None, root: Path = PACKAGE_DIR) -> set[Path]:
    """The files a measurement on lab ``kind`` runs (None: on any lab)."""
    mods = closure(import_graph(root), (ENTRY, *lab_entries(kind)), seams=False)
    return files(mods, root)


def digest(kind: Optional[str] = None, root: Path = PACKAGE_DIR) -> str:
    """SHA-256 (16 hex digits) of the measuring code of lab ``kind`` (:func:`measuring_files`)."""
    h = hashlib.sha256()
    for p in sorted(measuring_files(kind, root)):
        h.update(p.relative_to(root).as_posix().encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:16]


def _lab_kind(params: dict) -> Optional[str]:
    lab = params.get("lab")
    return lab.get("kind") if isinstance(lab, dict) else None


def fingerprint(dump: dict) -> str:
    """What makes two runs the same measurement: the params (without ``source``) and the measuring
    code (:func:`digest`) of the lab they name (``lab.kind``; params without a lab, as E's: every lab's)."""
    data = json.dumps({k: v for k, v in dump.items() if k not in ("source", "fingerprint")}, sort_keys=True,
                      default=str)
    return hashlib.sha256((data + digest(_lab_kind(dump))).encode()).hexdigest()[:16]


def measuring_changes(paths, params: Optional[dict] = None, root: Path = PACKAGE_DIR) -> list[str]:
    """Those of repository ``paths`` that are measuring code for a run of ``params`` (its ``lab.kind``;
    None or no lab: any lab): :data:`REPO_MEASURING`, or a file of :func:`measuring_files`."""
    folders = tuple(m for m in REPO_MEASURING if m.endswith("/"))
    package = {p.relative_to(root.parent).as_posix() for p in measuring_files(_lab_kind(params or {}), root)}
    return [p for p in paths if p in REPO_MEASURING or p.startswith(folders) or p in package]
