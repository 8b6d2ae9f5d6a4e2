"""The code each DVC stage depends on: the import closure of its entry modules.

    .venv/bin/python scripts/code_deps.py            # print the deps every stage should list
    .venv/bin/python scripts/code_deps.py --check    # exit 1 naming what dvc.yaml misses or lists in excess
    .venv/bin/python scripts/code_deps.py --write    # rewrite the nfvlab/ deps of dvc.yaml

A stage's output can change when any module it imports (directly or not)
changes, so dvc.yaml lists exactly those files (a directory when all of its
modules are in the closure, which also covers package data such as C
sources). ``tests/test_pipeline.py`` runs the check.

The closure, the package data and the lab seams are :mod:`nfvlab.measuring_code`'s (the one
definition of measuring code, which the resume fingerprint and publishing use too). A measurement
stage (:data:`MEASURING_STAGES`) runs on the one lab its ``--lab-profile`` names (``kind``): its
closure does not follow the lazy, per-kind imports of the lab seams (``nfvlab.labs.backend_for``
imports ``nfvlab.labs.kubernetes`` only for ``kind: kubernetes``, ``nfvlab.stage`` imports
``nfvlab.labs.cluster`` only under ``--local-cluster``) and adds that lab's modules instead. So an
edit to the Kubernetes backend re-measures no embedded-lab stage, and the reverse; what both labs
import (the generator, the search, the runner) re-measures both. Every other stage follows every
import, seams included.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # this checkout's rules, whichever nfvlab is installed
from nfvlab import measuring_code as mc  # noqa: E402

#: Entry modules of each stage (the CLI command it runs, the guardian it runs notebooks under).
#: Measurement stages run `nfvlab experiment run` (nfvlab.stage): never analysis code.
ENTRIES = {
    "reference_figures": ["nfvlab.plots.reference"],
    "calibration": ["nfvlab.calibrate", "nfvlab.labs", "nfvlab.commands.calibrate"],  # the command it runs
    "experiment": ["nfvlab.stage"],
    "experiment_kubernetes": ["nfvlab.stage"],
    "experiment_e": ["nfvlab.stage"],
    "analysis": ["nfvlab.experiments", "nfvlab.notebook_run"],
    "analysis_kubernetes": ["nfvlab.experiments", "nfvlab.notebook_run"],
    "analysis_e": ["nfvlab.experiments", "nfvlab.notebook_run"],
    "report": ["nfvlab.report", "nfvlab.notebook", "nfvlab.notebook_run"],  # notebooks/report.py finds the root with it
}
#: Stages that execute experiment notebooks (their imports are entries too): the foreach
#: items of a stage, or the notebooks it runs.
NOTEBOOK_STAGES = {"analysis": None, "analysis_kubernetes": None, "analysis_e": ["experiment_e"]}
#: Stages run through the CLI also depend on it and its commands (nfvlab/commands/), but not on
#: everything they could import.
#: (The measurement stages run ``python -m nfvlab.stage``: a CLI edit never re-measures.)
CLI_STAGES = {"reference_figures", "calibration", "analysis", "analysis_kubernetes", "analysis_e"}
#: Stages that measure on one lab: their lab is the ``kind`` of the lab profile their command names
#: (``--lab-profile FILE``), and their closure holds that lab's modules, not the other labs'.
MEASURING_STAGES = ("calibration", "experiment", "experiment_kubernetes", "experiment_e")


def notebook_imports(paths) -> list[str]:
    """nfvlab modules named in ``from nfvlab import x`` / ``import nfvlab.x`` lines of notebooks
    (``.ipynb``, or the py:percent ``.py`` the stages run: its lines are the code cells' and
    the markdown cells' comments, which never start with ``from``/``import``)."""
    mods = set()
    for p in paths:
        cells = ([{"cell_type": "code", "source": Path(p).read_text()}] if str(p).endswith(".py")
                 else json.loads(Path(p).read_text())["cells"])
        for cell in cells:
            if cell["cell_type"] != "code":
                continue
            for line in "".join(cell["source"]).splitlines():
                words = line.replace(",", " ").split()
                if words[:3] == ["from", "nfvlab", "import"]:
                    names = [w for w in words[3:] if w not in ("as",)]
                    mods |= {f"nfvlab.{n}" for n in names if n.isidentifier() and n != "P"}
                elif words[:1] == ["import"] and words[1:2] and words[1].startswith("nfvlab."):
                    mods.add(words[1])
    return sorted(mods)


def compress(files: set[Path]) -> list[str]:
    """Relative paths; a directory whose files are all needed replaces them."""
    all_py = {p for p in (REPO / "nfvlab").rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    dirs = sorted({p.parent for p in all_py} - {REPO / "nfvlab"}, key=lambda d: len(d.parts))
    chosen: list[Path] = []
    covered: set[Path] = set()
    for d in dirs:
        if any(c in d.parents for c in chosen):
            continue
        mine = {p for p in all_py if d in p.parents}
        if mine and mine <= files:
            chosen.append(d)
            covered |= mine
    rest = sorted(files - covered)
    return sorted(str(p.relative_to(REPO)) for p in chosen + rest)


def lab_kind(stage: dict) -> str:
    """The lab kind a measurement stage runs on: ``kind`` of the profile its ``--lab-profile`` names."""
    words = stage.get("do", stage)["cmd"].split()
    profile = REPO / words[words.index("--lab-profile") + 1]
    return yaml.safe_load(profile.read_text())["kind"]


def expected() -> dict[str, list[str]]:
    root = REPO / "nfvlab"
    graph = mc.import_graph(root)
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    out = {}
    for stage, entries in ENTRIES.items():
        if stage in NOTEBOOK_STAGES:
            # a foreach stage runs its items' notebooks; another experiment's notebook (e.g.
            # experiment_e.py) has a stage of its own and must not add its code to these
            names = NOTEBOOK_STAGES[stage] or [f"experiment_{x}" for x in stages[stage]["foreach"]]
            entries = entries + notebook_imports([REPO / "notebooks" / f"{n}.py" for n in names])
        if stage in MEASURING_STAGES:
            mods = mc.closure(graph, [*entries, *mc.lab_entries(lab_kind(stages[stage]))], seams=False)
        else:
            mods = mc.closure(graph, entries)
        files = mc.files(mods, root)
        if stage in CLI_STAGES:
            files |= {root / "cli.py", *(root / "commands").glob("*.py")}
        out[stage] = compress(files)
    return out


def listed() -> dict[str, list[str]]:
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    out = {}
    for name, st in stages.items():
        body = st.get("do", st)
        out[name] = [d if isinstance(d, str) else next(iter(d)) for d in body.get("deps", [])]
    return out


def missing() -> dict[str, list[str]]:
    """Per stage, the needed code paths dvc.yaml does not cover."""
    have = listed()
    out = {}
    for stage, paths in expected().items():
        deps = [REPO / d for d in have.get(stage, [])]
        miss = [p for p in paths if not any((REPO / p) == d or d in (REPO / p).parents for d in deps)]
        if miss:
            out[stage] = miss
    return out


def extra() -> dict[str, list[str]]:
    """Per stage, the ``nfvlab/`` deps dvc.yaml lists that cover code the stage does not run (e.g. a
    whole ``nfvlab/labs`` for an embedded-lab stage: an edit to the Kubernetes backend would re-measure it)."""
    have = listed()
    out = {}
    for stage, paths in expected().items():
        need = [REPO / p for p in paths]

        def needed(f: Path) -> bool:
            return any(n == f or n in f.parents for n in need)

        over = []
        for d in (d for d in have.get(stage, []) if d.startswith("nfvlab/")):
            path = REPO / d
            inside = [f for f in path.rglob("*") if f.is_file() and "__pycache__" not in f.parts] \
                if path.is_dir() else [path]
            if not all(needed(f) for f in inside):
                over.append(d)
        if over:
            out[stage] = over
    return out


def write() -> None:
    """Replace each stage's ``- nfvlab/...`` dep lines in dvc.yaml with the expected ones."""
    want = expected()
    lines = (REPO / "dvc.yaml").read_text().splitlines()
    out, stage, in_deps, written = [], None, False, False
    for line in lines:
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if indent == 2 and stripped.endswith(":") and not stripped.startswith("-"):
            stage = stripped[:-1]
        if stripped == "deps:":
            in_deps, written = True, False
            out.append(line)
            continue
        if in_deps and stripped.startswith("- nfvlab/"):
            if not written:
                pad = line[: line.index("-")]
                out += [f"{pad}- {d}" for d in want.get(stage, [])]
                written = True
            continue
        if in_deps and not stripped.startswith("- "):
            in_deps = False
        out.append(line)
    (REPO / "dvc.yaml").write_text("\n".join(out) + "\n")


if __name__ == "__main__":
    if "--write" in sys.argv:
        write()
    if "--check" in sys.argv:
        miss, over = missing(), extra()
        for stage, paths in miss.items():
            print(f"dvc.yaml: stage {stage} misses code deps: {', '.join(paths)}")
        for stage, paths in over.items():
            print(f"dvc.yaml: stage {stage} lists code it does not run: {', '.join(paths)}")
        sys.exit(1 if miss or over else 0)
    if len(sys.argv) > 1:
        sys.exit(0)
    for stage, paths in expected().items():
        print(f"{stage}:")
        for p in paths:
            print(f"  - {p}")
