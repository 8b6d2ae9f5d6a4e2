"""Deterministic figure output: a fixed style and metadata-free PNGs.

Every figure nfvlab writes goes through :func:`new_figure` and :func:`save_png`,
so re-rendering the same data gives byte-identical files (what DVC compares).
"""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator

import matplotlib as mpl
import seaborn as sns
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

#: Default resolution, dots per inch.
DPI = 110
#: PNG metadata: drop matplotlib's "Software" entry (keeps files version-independent).
PNG_METADATA = {"Software": None}


@contextlib.contextmanager
def figure_style(dpi: int = DPI) -> Iterator[None]:
    """Matplotlib defaults + seaborn "whitegrid"/"paper" at ``dpi``, restored on exit."""
    with mpl.rc_context():
        mpl.rcdefaults()
        mpl.rcParams["figure.dpi"] = dpi
        mpl.rcParams.update(sns.axes_style("whitegrid"))
        mpl.rcParams.update(sns.plotting_context("paper"))
        mpl.rcParams.update({"axes.titlesize": 9.5, "figure.titlesize": 11})
        yield


def new_figure(size: tuple[float, float]) -> Figure:
    """A figure drawn with Agg whatever pyplot's backend is (inside :func:`figure_style`)."""
    fig = Figure(figsize=size, dpi=mpl.rcParams["figure.dpi"], layout="constrained")
    FigureCanvasAgg(fig)
    return fig


#: Legend placement outside the axes (right of the plot), so a legend never covers data;
#: the figures' constrained layout makes room for it.
OUTSIDE_LEGEND = {"loc": "upper left", "bbox_to_anchor": (1.02, 1.0), "borderaxespad": 0.0}


def save_png(fig: Figure, path: Path) -> Path:
    fig.savefig(path, format="png", dpi=fig.dpi, metadata=PNG_METADATA)
    return path
