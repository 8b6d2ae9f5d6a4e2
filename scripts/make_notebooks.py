"""Write every notebook of notebooks/ (the single source of their code; output is committed).

    python scripts/make_notebooks.py           # write notebooks/<name>.py and notebooks/<name>.ipynb
    python scripts/make_notebooks.py --check   # exit 1 naming each notebook that differs

Each notebook is a jupytext pair (notebooks/jupytext.toml): ``<name>.py`` in the
py:percent format, with no notebook metadata and only the ``tags`` of cells, is what
the DVC stages depend on and run (nfvlab/notebook_run.py); ``<name>.ipynb`` is what
JupyterLab opens. Saving in JupyterLab rewrites both, and the ``.py`` stays byte for
byte the same unless a cell's code or text changed, so opening, running or saving a
notebook never makes a stage stale.

The notebooks are deliberately thin: parameters, a move to the repository root
(:func:`nfvlab.notebook.enter_repo_root`: JupyterLab starts the kernel in notebooks/),
library calls, and displays of library-made tables and figures, so everything they
do is reachable by tests.
"""
from __future__ import annotations

import sys
from pathlib import Path

import jupytext
import nbformat as nbf

from nfvlab import experiments

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
#: The py:percent text the stages depend on: cells and their tags, nothing volatile.
TEXT_FORMAT = {"extension": ".py", "format_name": "percent"}
TEXT_FILTERS = {"notebook_metadata_filter": "-all", "cell_metadata_filter": "tags,-all"}
KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}

NOTE = ("**Local numbers describe this host** (a few vCPUs, veth links, the generator's calibrated "
        "ceiling), never the draft's 40 GbE testbed. Configurations this host cannot realize are "
        "listed with the reason instead of a value.")
RUNNING = ("Run as is (JupyterLab, papermill) it measures a new run into `data/interactive/`, outside the "
           "pipeline; `measure = False` with `records = \"data/raw/experiment_{x}.jsonl\"` shows the "
           "pipeline's last run instead. `dvc repro` passes its own records file. Paths are relative to "
           "the repository root, whatever directory the kernel started in.")
ROOT = "root = notebook.enter_repo_root()  # JupyterLab starts the kernel in notebooks/: paths are the repository's"


def _parameters(lines: list[str]) -> nbf.NotebookNode:
    cell = nbf.v4.new_code_cell("\n".join(["# Parameters (papermill overrides these)", *lines]))
    cell.metadata["tags"] = ["parameters"]
    return cell


def experiment(letter: str) -> nbf.NotebookNode:
    """Experiment ``letter``: measure (or not), then its tables, figures and claims."""
    exp = experiments.get(letter)
    title, text = exp.notebook_title, exp.notebook_text
    nb = nbf.v4.new_notebook()
    nb.cells = [
        nbf.v4.new_markdown_cell(f"# {title}\n\n{text}\n\n{NOTE}\n\n{RUNNING.format(x=letter)}"),
        _parameters([
            f'params_file = "params/quick/experiment_{letter}.yaml"',
            'lab_file = "params/lab.yaml"  # the lab profile',
            f'records = "data/interactive/experiment_{letter}.jsonl"',
            "measure = True  # False: only show what `records` holds",
            'overrides = {}  # merged into the params file, e.g. {"repetitions": 1, "adaptive": None} (fixed n)']),
        nbf.v4.new_code_cell(
            "from nfvlab import experiment, notebook, results\n"
            "from nfvlab import params as P\n\n"
            f"{ROOT}\n"
            "p = P.load_experiment(params_file, lab_file, overrides)\n"
            "if measure:\n"
            "    # Under dvc repro the progress lines go to the stage's log, not into the saved notebook.\n"
            "    with notebook.progress_elsewhere():\n"
            "        run_id = experiment.run_experiment(p, records, source=params_file)"),
        nbf.v4.new_markdown_cell("## Not realizable on this host (and failed searches)"),
        nbf.v4.new_code_cell("results.not_realizable_frame(records)"),
        nbf.v4.new_markdown_cell("## Results: tables (statistics over repetitions; published values beside), "
                                 "figures, claims"),
        nbf.v4.new_code_cell(f'notebook.show(notebook.experiment_outputs("{letter}", records, p.models))'),
    ]
    return nb


#: Experiment E (seed 002): tool measurements, not searches (its own params model and outputs).
E_NOTE = ("**Local numbers describe this host** (2 vCPUs, veth links), never the seed's Arm testbed. Data paths "
          "this host cannot build are listed with the reason instead of a value.")


def experiment_e() -> nbf.NotebookNode:
    nb = nbf.v4.new_notebook()
    exp = experiments.get("e")
    title, text = exp.notebook_title, exp.notebook_text
    nb.cells = [
        nbf.v4.new_markdown_cell(f"# {title}\n\n{text}\n\n{E_NOTE}\n\n{RUNNING.format(x='e')}"),
        _parameters([
            'params_file = "params/quick/experiment_e.yaml"',
            'lab_file = "params/lab.yaml"  # the lab profile: the lab that realizes the data paths',
            'records = "data/interactive/experiment_e.jsonl"',
            "measure = True  # False: only show what `records` holds",
            'overrides = {}  # merged into the params file, e.g. {"repetitions": 1, "adaptive": None} (fixed n)']),
        nbf.v4.new_code_cell(
            "from nfvlab import experiment, labs, notebook\n"
            "from nfvlab import params as P\n\n"
            f"{ROOT}\n"
            "p = P.load(params_file, P.CniExperimentParams, overrides)  # a bad grid fails here, before any lab exists\n"
            "if measure:\n"
            "    # Under dvc repro the progress lines go to the stage's log, not into the saved notebook.\n"
            "    with notebook.progress_elsewhere():\n"
            "        backend = labs.backend_for(P.load(lab_file, P.LabParams))\n"
            "        run_id = experiment.run_experiment(p, records, backend=backend, source=params_file)"),
        nbf.v4.new_markdown_cell("## Results: tables (statistics over repetitions; what could not be measured), "
                                 "figures, claims"),
        nbf.v4.new_code_cell('notebook.show(notebook.experiment_outputs("e", records, None))'),
    ]
    return nb


def reference() -> nbf.NotebookNode:
    """The seed documents' published tables and figures."""
    nb = nbf.v4.new_notebook()
    nb.cells = [
        nbf.v4.new_markdown_cell(
            "# Reference data: what the seed documents published\n\n"
            "The numbers every nfvlab reproduction is compared against: the draft's Figures 10-17 (40GbE "
            "testbed, TRex) and the NFV service density note's MRR matrices (10GbE, nfvbench). They are "
            "*published* values, transcribed in `data/reference/` (see `docs/reference-data.md`); nothing "
            "here is measured on this host. The figures go to `out_dir` (default outside the pipeline's "
            "`figures/reference`, which the `reference_figures` stage writes)."),
        _parameters(['out_dir = "data/interactive/reference"', "dpi = 100"]),
        nbf.v4.new_code_cell(
            "from IPython.display import Image, display\n\n"
            "from nfvlab import notebook, reference\n"
            "from nfvlab.plots.reference import render_reference_figures\n\n"
            f"{ROOT}\n"
            "reference.table_names()"),
        nbf.v4.new_markdown_cell("## Draft Figure 10: zero-loss throughput per networking model (Gbps)"),
        nbf.v4.new_code_cell(
            'reference.models_throughput().pivot(index="frame_size", columns="model", values="throughput_gbps")'),
        nbf.v4.new_markdown_cell("## Draft Figure 13: CPU pinning x NUMA scenario at 1518 B (Gbps)"),
        nbf.v4.new_code_cell(
            'reference.pinning_numa().pivot(index="pinning", columns="scenario", values="throughput_gbps")'),
        nbf.v4.new_markdown_cell("## Density note: which cells were measured, not measured, impossible"),
        nbf.v4.new_code_cell(
            'reference.density_mrr().groupby(["testbed", "status"]).size().unstack(fill_value=0)'),
        nbf.v4.new_markdown_cell("## All reference figures"),
        nbf.v4.new_code_cell(
            "paths = render_reference_figures(root / out_dir, dpi=dpi)\n"
            "for p in paths[:3]:\n"
            "    display(Image(filename=str(p)))\n"
            "[p.name for p in paths]"),
    ]
    return nb


def report() -> nbf.NotebookNode:
    """Every table and figure of the analyses (``nfvlab.report.sections``)."""
    nb = nbf.v4.new_notebook()
    nb.cells = [
        nbf.v4.new_markdown_cell(
            "# nfvlab report: experiments A-F beside the published results\n\n"
            "Every experiment's tables, claims and figures, assembled from `data/tables`, `figures` and the "
            "raw records' provenance (written by `nfvlab analyze`, `nfvlab figures reference` and the "
            "experiment stages)."),
        _parameters(['tables_dir = "data/tables"', 'figures_dir = "figures"', 'records_dir = "data/raw"']),
        nbf.v4.new_code_cell(
            "from IPython.display import Image, Markdown, display\n\n"
            "from nfvlab import notebook, report\n\n"
            f"{ROOT}\n"
            "for title, text, table, figures in report.sections(tables_dir, figures_dir, records_dir):\n"
            '    display(Markdown(f"## {title}\\n\\n{text}"))\n'
            "    if table is not None:\n"
            "        display(table)\n"
            "    for png in figures:\n"
            "        display(Image(filename=str(png)))"),
    ]
    return nb


def notebooks() -> dict[str, nbf.NotebookNode]:
    """Name -> notebook, every notebook of notebooks/."""
    # a tool experiment (E) has a notebook of its own; the others share one form
    out = {f"experiment_{x}": experiment_e() if exp.kind == "tools" else experiment(x)
           for x, exp in experiments.REGISTRY.items()}
    out["reference"] = reference()
    out["report"] = report()
    for nb in out.values():
        nb.metadata["kernelspec"] = dict(KERNELSPEC)
    return out


def text_of(nb: nbf.NotebookNode) -> str:
    """The py:percent text of ``nb`` as the pairing writes it (what the stages depend on)."""
    return jupytext.writes(nb, fmt={**TEXT_FORMAT, **TEXT_FILTERS})


def _ipynb_of(nb: nbf.NotebookNode, name: str) -> str:
    nb = nbf.from_dict(nb)
    # Stable cell ids, so regenerating an unchanged notebook rewrites the same bytes.
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"{name.replace('_', '-')}-{i}"
    return nbf.writes(nb) + "\n"


def main(argv: list[str]) -> int:
    check = argv[:1] == ["--check"]
    differ = []
    for name, nb in notebooks().items():
        for path, text in ((NOTEBOOKS / f"{name}.py", text_of(nb)), (NOTEBOOKS / f"{name}.ipynb", _ipynb_of(nb, name))):
            if check:
                if not path.exists() or path.read_text() != text:
                    differ.append(path.name)
            else:
                path.write_text(text)
    if differ:
        print(f"make_notebooks: differ from scripts/make_notebooks.py: {', '.join(differ)} "
              f"(run python scripts/make_notebooks.py)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
