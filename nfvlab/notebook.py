"""What the notebooks call: the repository root, progress kept out of saved notebooks, an experiment's outputs.

The notebooks (``notebooks/*.py``, paired with ``.ipynb`` by jupytext; written by
``scripts/make_notebooks.py``) hold no logic of their own. Whatever directory the
kernel starts in (``jupyter lab notebooks/`` starts it in ``notebooks/``; papermill
and ``dvc repro`` in the repository), :func:`enter_repo_root` moves it to the
directory holding ``dvc.yaml``, so every default path (``params/lab.yaml``,
``data/raw/...``, and the relative paths inside the params files) means the same.
"""
from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Iterator, Optional, Union

import pandas as pd

from nfvlab import experiments, latency, notebook_run

PathLike = Union[str, Path]

#: The file that marks the repository root.
ROOT_MARKER = "dvc.yaml"
#: Environment variable naming a file that takes an experiment's progress lines instead of the
#: notebook (set by ``nfvlab/notebook_run.py``, which copies the file to its own stderr).
PROGRESS_ENV = notebook_run.PROGRESS_ENV


def repo_root(start: Optional[PathLike] = None) -> Path:
    """The nearest directory at or above ``start`` (default: the working directory) holding ``dvc.yaml``.

    Raises
    ------
    FileNotFoundError
        One line naming ``start`` when no directory above it holds ``dvc.yaml``.
    """
    here = Path(start if start is not None else os.getcwd()).resolve()
    for d in (here, *here.parents):
        if (d / ROOT_MARKER).is_file():
            return d
    raise FileNotFoundError(f"{here}: no {ROOT_MARKER} here or in a parent directory "
                            f"(start the notebook inside the nfvlab repository)")


def enter_repo_root(start: Optional[PathLike] = None) -> Path:
    """Change the working directory to :func:`repo_root` and return it."""
    root = repo_root(start)
    os.chdir(root)
    return root


@contextlib.contextmanager
def progress_elsewhere(environ: Optional[dict] = None) -> Iterator[Optional[Path]]:
    """While inside, standard output goes to the file :data:`PROGRESS_ENV` names (appended).

    Without that variable (JupyterLab, a plain papermill run) nothing changes and the
    progress lines appear in the notebook as they come. Yields the file (or None).
    """
    name = (environ if environ is not None else os.environ).get(PROGRESS_ENV)
    if not name:
        yield None
        return
    path = Path(name)
    with path.open("a", buffering=1) as f, contextlib.redirect_stdout(f):
        yield path
    sys.stdout.flush()


def _claims_last(letter: str) -> list[str]:
    table_names = experiments.get(letter).table_names
    names = [n for n in table_names if n not in ("latency", "published", "claims")]
    return names + [n for n in ("latency", "published") if n in table_names]


def experiment_outputs(letter: str, records: PathLike, models: Optional[list[str]],
                       figures_dir: Optional[PathLike] = None) -> list[tuple[str, Union[pd.DataFrame, Path, str]]]:
    """What an executed experiment notebook ends with: its tables, then its figures, then its claims.

    Parameters
    ----------
    letter : str
        An experiment of :data:`nfvlab.experiments.REGISTRY` (``"a"``, ...).
    records : path
        The records file (the analysis uses its latest completed run).
    models : list of str or None
        The params file's models (None: every model in the records; ignored for ``"e"``).
    figures_dir : path, optional
        Where the PNGs are written (default: a new temporary directory, removed when
        the kernel exits: a notebook embeds the images it displays).

    Returns
    -------
    list of (str, object)
        ``(heading, item)`` in display order; ``item`` is a DataFrame without
        meaningful index (the analysis tables as :func:`nfvlab.experiments.tables`
        returns them, except ``latency``, shown as :func:`nfvlab.latency.percentiles_us`),
        a PNG path, or a sentence (for an experiment without claims).
    """
    if figures_dir is None:
        figures_dir = tempfile.mkdtemp(prefix=f"nfvlab-{letter}-")
        atexit.register(shutil.rmtree, figures_dir, True)  # displayed images are embedded in the notebook
    figures_dir = Path(figures_dir)
    if experiments.get(letter).kind == "tools":
        return _outputs_tools(letter, records, figures_dir)
    tabs = experiments.tables(letter, records, models)
    out: list[tuple[str, Union[pd.DataFrame, Path, str]]] = []
    for name in _claims_last(letter):
        table = tabs[name]
        if name == "latency":
            out.append(("latency under load: one-way percentiles, mean over repetitions [µs]",
                        latency.percentiles_us(table)))
        else:
            out.append((name.replace("_", " "), table.reset_index(drop=True)))
    with tempfile.TemporaryDirectory() as scratch:
        written = experiments.write_experiment(letter, records, models, Path(scratch) / "tables", figures_dir,
                                               Path(scratch) / "metrics.json")
    out += [(f"figure: {p.stem}", p) for p in written if p.suffix == ".png"]
    if "claims" in tabs:
        out.append(("claims (holds / contradicted / inconclusive / not testable here)",
                    tabs["claims"].reset_index(drop=True)))
    else:
        out.append(("claims", f"experiment {letter.upper()} tests no claim of the draft (seed 001 states none)."))
    return out


def _outputs_tools(letter: str, records: PathLike,
                   figures_dir: Path) -> list[tuple[str, Union[pd.DataFrame, Path, str]]]:
    """A tool experiment's (E's) tables but the claims, its figures, then its claims."""
    exp = experiments.get(letter)
    tabs = experiments.tables(letter, records)
    out: list[tuple[str, Union[pd.DataFrame, Path, str]]] = [
        (name.replace("_", " "), tabs[name].reset_index(drop=True)) for name in exp.table_names
        if name != "claims"]
    out += [(f"figure: {p.stem}", p) for p in exp.figures(tabs, figures_dir, 110)]
    out.append(("claims (holds / contradicted / inconclusive / not testable here)",
                tabs["claims"].reset_index(drop=True)))
    return out


def show(items: list[tuple[str, Union[pd.DataFrame, Path, str]]]) -> None:
    """Display :func:`experiment_outputs` in a notebook: a heading, then the table, image or text."""
    from IPython.display import Image, Markdown, display

    for heading, item in items:
        display(Markdown(f"### {heading}"))
        if isinstance(item, Path):
            display(Image(filename=str(item)))
        elif isinstance(item, pd.DataFrame):
            display(item.style.hide(axis="index").format(precision=3, na_rep="—") if not item.empty
                    else Markdown("(no rows)"))
        else:
            display(Markdown(item))
