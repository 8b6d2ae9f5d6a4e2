"""What an experiment is to the analysis, the report and the notebooks: :class:`Experiment`."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Union

import pandas as pd

PathLike = Union[str, Path]
Tables = dict[str, pd.DataFrame]


@dataclass(frozen=True)
class Experiment:
    """One experiment: its name, texts, tables, figures and metrics (one module of
    :mod:`nfvlab.experiments` each; the grid it measures is its params file)."""

    letter: str
    """``a``, ``b``, ...: names its params (``params/<profile>/experiment_<x>.yaml``), records,
    tables (``experiment_<x>_<name>.csv``), figures, metrics and notebook."""
    title: str
    """The report's heading (``Experiment X: ...``)."""
    text: str
    """The report's text above its tables (Markdown)."""
    notebook_title: str
    """The notebook's heading."""
    notebook_text: str
    """The notebook's introduction (Markdown)."""
    table_names: tuple[str, ...]
    """Its tables in report order (``latency`` among them for a search experiment)."""
    tables: Callable[[PathLike, Optional[list[str]]], Tables]
    """``(records, models) -> {name: DataFrame}``: every table but ``latency``."""
    figures: Callable[[Tables, Path, int], list[Path]]
    """``(tables, out_dir, dpi) -> PNG paths written``."""
    metrics: Callable[[Tables], dict]
    """``tables -> {key: value}``: the DVC metrics."""
    goal: Optional[str] = "ndr"
    """The search goal its tables show (None: the one its params chose, read from the records)."""
    kind: str = "search"
    """``search``: rate searches on a lab (latency under load, the report's generic sections);
    ``tools``: tool measurements with sections and a notebook of their own (experiment E)."""
    kubernetes_table: Optional[str] = None
    """Its table keyed by ``model`` and ``frame_size`` that the report puts beside the same table of
    its run on the Kubernetes lab (``experiment_<x>_kubernetes``: the ``experiment_kubernetes`` and
    ``analysis_kubernetes`` stages); None: the pipeline does not run it on the Kubernetes lab."""
    captions: dict[str, str] = field(default_factory=dict)
    """Captions of its own tables, beside the report's shared ones."""
