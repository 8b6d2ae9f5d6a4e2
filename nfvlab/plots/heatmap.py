"""Annotated matrix heatmaps whose non-values are text, not colours.

Cells with a value are coloured on the colormap and annotated; cells without
one (NaN: "---" impossible, "???" not measured, ...) stay on a neutral
background and show their text, so a missing number can never be read off
the colour scale.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence, Union

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

__all__ = ["matrix_heatmap", "MISSING_COLOR"]

#: Background of cells without a value.
MISSING_COLOR = "#f2f2f2"

Formatter = Union[str, Callable[[float], str]]


def _order(series: pd.Series, order: Optional[Sequence]) -> list:
    if order is not None:
        return list(order)
    levels = list(dict.fromkeys(series.tolist()))
    try:
        return sorted(levels)
    except TypeError:  # mixed types: keep first-appearance order
        return levels


def _format(value: float, fmt: Formatter) -> str:
    if callable(fmt):
        return fmt(value)
    return format(value, fmt)


def matrix_heatmap(
    df: pd.DataFrame,
    row: str,
    col: str,
    value: str,
    *,
    text: Optional[str] = None,
    row_order: Optional[Sequence] = None,
    col_order: Optional[Sequence] = None,
    row_labels: Optional[Sequence[str]] = None,
    col_labels: Optional[Sequence[str]] = None,
    fmt: Formatter = ".2f",
    missing_text: str = "",
    cmap: str = "viridis",
    vmin: Optional[float] = None,
    vmax: Optional[float] = None,
    ax: Optional[Axes] = None,
    cbar: bool = True,
    cbar_label: Optional[str] = None,
    title: Optional[str] = None,
    xlabel: Optional[str] = None,
    ylabel: Optional[str] = None,
    annot_fontsize: Optional[float] = None,
    figsize: tuple[float, float] = (6.0, 4.5),
) -> Axes:
    """Heatmap of ``value`` over ``row`` x ``col`` with every cell annotated.

    Parameters
    ----------
    df : pandas.DataFrame
        Tidy data with at most one row per (``row``, ``col``) pair.
    row, col, value : str
        Columns for the matrix rows, columns and cell values (numeric; NaN
        marks a non-value).
    text : str, optional
        Column with each cell's display text (e.g. ``raw``: ``"6.9*"``,
        ``"---"``, ``"???"``). Without it, values are formatted with ``fmt``
        and non-values show ``missing_text``.
    row_order, col_order : sequence, optional
        Level orders (default: sorted levels).
    row_labels, col_labels : sequence of str, optional
        Tick labels replacing the level names (same length as the orders).
    fmt : str or callable
        ``format`` spec or function for numeric annotations.
    missing_text : str
        Text for NaN cells when ``text`` is not given; cells absent from
        ``df`` altogether are left blank.
    cmap : str
        Colormap for the cells that have values.
    vmin, vmax : float, optional
        Colour range (default: the finite data range).
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new ``Figure(figsize)`` is made if None.
    cbar : bool
        Draw a colour bar.
    cbar_label, title, xlabel, ylabel : str, optional
        Labels (axis labels default to ``col`` / ``row``).
    annot_fontsize : float, optional
        Font size of the annotations.
    figsize : (float, float)
        Size of the new figure when ``ax`` is None.

    Returns
    -------
    matplotlib.axes.Axes

    Raises
    ------
    ValueError
        Duplicate (row, col) pairs.
    """
    if df.duplicated([row, col]).any():
        raise ValueError(f"duplicate ({row}, {col}) pairs: one value per cell expected")
    rows = _order(df[row], row_order)
    cols = _order(df[col], col_order)
    r_idx = {r: i for i, r in enumerate(rows)}
    c_idx = {c: j for j, c in enumerate(cols)}

    values = np.full((len(rows), len(cols)), np.nan)
    labels = np.full((len(rows), len(cols)), "", dtype=object)
    texts = df[text].tolist() if text else [None] * len(df)
    for r, c, v, t in zip(df[row], df[col], df[value], texts):
        if r not in r_idx or c not in c_idx:
            continue
        i, j = r_idx[r], c_idx[c]
        v = float(v) if pd.notna(v) else np.nan
        values[i, j] = v
        if text:
            labels[i, j] = "" if pd.isna(t) else str(t)
        else:
            labels[i, j] = missing_text if np.isnan(v) else _format(v, fmt)

    mask = np.isnan(values)
    finite = values[~mask]
    lo = vmin if vmin is not None else (float(finite.min()) if finite.size else 0.0)
    hi = vmax if vmax is not None else (float(finite.max()) if finite.size else 1.0)
    if hi <= lo:
        hi = lo + 1.0

    if ax is None:
        fig = Figure(figsize=figsize, layout="constrained")
        FigureCanvasAgg(fig)
        ax = fig.subplots()
    ax.set_facecolor(MISSING_COLOR)
    ax.grid(False)
    annot_kws = {"fontsize": annot_fontsize} if annot_fontsize else {}
    sns.heatmap(
        pd.DataFrame(values),
        mask=mask,
        annot=labels,
        fmt="",
        annot_kws=annot_kws,
        cmap=cmap,
        vmin=lo,
        vmax=hi,
        cbar=cbar,
        cbar_kws={"label": cbar_label} if (cbar and cbar_label) else None,
        linewidths=0.6,
        linecolor="white",
        square=False,
        ax=ax,
    )
    # seaborn does not annotate masked cells: write their text ourselves
    for i, j in zip(*np.nonzero(mask)):
        if labels[i, j]:
            ax.text(
                j + 0.5, i + 0.5, labels[i, j], ha="center", va="center",
                color="0.35", fontsize=annot_fontsize, fontstyle="italic",
            )
    ax.set_xticks(np.arange(len(cols)) + 0.5)
    ax.set_yticks(np.arange(len(rows)) + 0.5)
    ax.set_xticklabels([str(c) for c in (col_labels if col_labels is not None else cols)], rotation=0)
    ax.set_yticklabels([str(r) for r in (row_labels if row_labels is not None else rows)], rotation=0)
    ax.set_xlabel(xlabel if xlabel is not None else col)
    ax.set_ylabel(ylabel if ylabel is not None else row)
    if title:
        ax.set_title(title)
    return ax
