"""The experiments, one module each, found here: adding one is a module plus its params and stage.

Each module of this package with an ``EXPERIMENT`` (:class:`~nfvlab.experiments.base.Experiment`)
is registered under its letter, in module-name order (the report's order): its texts, its
tables, claims and figures (built on :mod:`nfvlab.analysis`), its metrics. The report
(:mod:`nfvlab.report`), the ``nfvlab analyze`` command and the notebook generator
(``scripts/make_notebooks.py``) take every experiment from :data:`REGISTRY`.

    from nfvlab import experiments
    experiments.tables("a", "data/raw/experiment_a.jsonl")          # {name: DataFrame}
    experiments.write_experiment("a", records, models, "data/tables/experiment_a", figures_dir, metrics)
"""
from __future__ import annotations

import importlib
import json
import pkgutil
from pathlib import Path
from typing import Optional

import pandas as pd

from nfvlab import analysis
from nfvlab.claims import Design, current_design, use_design
from nfvlab.experiments.base import Experiment, PathLike

__all__ = ["Experiment", "REGISTRY", "get", "register", "tables", "write_experiment"]

#: Letter -> experiment, in report order.
REGISTRY: dict[str, Experiment] = {}


def register(exp: Experiment) -> Experiment:
    """Add ``exp`` to :data:`REGISTRY` (its letter must be new); return it."""
    if exp.letter in REGISTRY:
        raise ValueError(f"experiment {exp.letter!r} is registered already")
    REGISTRY[exp.letter] = exp
    return exp


def get(letter: str) -> Experiment:
    """The experiment ``letter``; ValueError (one line, naming the letters there are) otherwise."""
    try:
        return REGISTRY[letter]
    except KeyError:
        raise ValueError(f"experiment {letter!r}: use one of {', '.join(REGISTRY)}") from None


def tables(letter: str, records: PathLike, models: Optional[list[str]] = None,
           design: Optional[Design] = None) -> dict[str, pd.DataFrame]:
    """The tables of experiment ``letter``, named as its ``table_names``.

    ``models``: the params file's models (default: every model in the records). ``design``: what
    decides its claims (:class:`nfvlab.claims.Design`; default: :func:`nfvlab.claims.current_design`,
    i.e. the values of ``params/claims.yaml``), in force while its tables are built.
    A search experiment's ``latency`` table is :func:`nfvlab.analysis.latency_table`.
    """
    exp = get(letter)
    with use_design(design or current_design()):
        out = exp.tables(records, models)
    if "latency" in exp.table_names:
        out = {**out, "latency": analysis.latency_table(records, models)}
    return out


def write_experiment(letter: str, records: PathLike, params_models: Optional[list[str]], out_tables: PathLike,
                     out_figures: PathLike, metrics: PathLike, design: Optional[Design] = None) -> list[Path]:
    """Write an experiment's tables, figures and metrics; return the paths written.

    Files: ``<out_tables>/experiment_<x>_<name>.csv`` for each of its ``table_names``, its
    figures (and the latency spectra of a search experiment) under ``out_figures``, and
    ``metrics`` (JSON). Same records (and ``design``) -> byte-identical files.
    """
    exp = get(letter)
    out_tables, out_figures = Path(out_tables), Path(out_figures)
    out_tables.mkdir(parents=True, exist_ok=True)
    out_figures.mkdir(parents=True, exist_ok=True)
    tabs = tables(letter, records, params_models, design)
    paths = []
    for name in exp.table_names:
        paths.append(out_tables / f"experiment_{letter}_{name}.csv")
        tabs[name].to_csv(paths[-1], index=False, float_format="%.6g")
    paths += exp.figures(tabs, out_figures)
    if "latency" in exp.table_names:
        paths += analysis.latency_figures(letter, tabs["latency"], out_figures)
    Path(metrics).parent.mkdir(parents=True, exist_ok=True)
    Path(metrics).write_text(json.dumps(exp.metrics(tabs), indent=1, sort_keys=True) + "\n")
    paths.append(Path(metrics))
    return paths


def _discover() -> None:
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name != "base":
            exp = getattr(importlib.import_module(f"{__name__}.{info.name}"), "EXPERIMENT", None)
            if exp is not None:
                register(exp)


_discover()
