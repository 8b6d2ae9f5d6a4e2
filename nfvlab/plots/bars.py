"""Grouped bars with confidence intervals, and text (never a bar) where there is no value.

One group of bars per ``x`` level, one bar per ``hue`` level inside a group.
A cell without a value (NaN: not realizable on this host, not measured) gets
its text written where the bar would stand, so an absent number can never be
read as a zero. Deterministic (no resampling, no jitter).
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from nfvlab.plots.output import OUTSIDE_LEGEND

__all__ = ["grouped_bars"]


def grouped_bars(
    df: pd.DataFrame,
    x: str,
    y: str,
    hue: Optional[str] = None,
    *,
    ci_low: Optional[str] = None,
    ci_high: Optional[str] = None,
    missing: Optional[str] = None,
    x_order: Optional[Sequence] = None,
    hue_order: Optional[Sequence] = None,
    palette: str = "colorblind",
    ax: Optional[Axes] = None,
    title: Optional[str] = None,
    xlabel: Optional[str] = None,
    ylabel: Optional[str] = None,
    figsize: tuple[float, float] = (6.4, 4.2),
) -> Axes:
    """Bar chart of ``y`` per ``x`` (and ``hue``) level with optional CI error bars.

    Parameters
    ----------
    df : pandas.DataFrame
        At most one row per (``x``, ``hue``) pair.
    x, y, hue : str
        Group column, value column (NaN = no value), bar-colour column.
    ci_low, ci_high : str, optional
        Columns with the confidence interval of ``y`` (same unit; in the
        experiments' figures the 95 % t interval of the mean over repetitions);
        drawn as error bars, a lower bound below 0 drawn at 0; NaN: no bar.
    missing : str, optional
        Column whose text is written, rotated, in place of a NaN bar (e.g. a
        ``status`` such as ``"not realizable: ..."``; only the part before the
        first ``":"`` is shown). Default: ``"no value"``.
    x_order, hue_order : sequence, optional
        Level orders (default: order of first appearance).
    palette : str
        Seaborn palette name.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new ``Figure(figsize)`` is made if None.
    title, xlabel, ylabel : str, optional
        Labels (axis labels default to ``x`` / ``y``).

    Returns
    -------
    matplotlib.axes.Axes
        With a legend (outside the axes, right) listing every ``hue`` level,
        including levels without any value.
    """
    for col in (x, y, hue, ci_low, ci_high, missing):
        if col and col not in df.columns:
            raise KeyError(f"column {col!r} not in data")
    keys = [x, hue] if hue else [x]
    if df.duplicated(keys).any():
        raise ValueError(f"duplicate {tuple(keys)} rows: one value per bar expected")
    if ax is None:
        fig = Figure(figsize=figsize, layout="constrained")
        FigureCanvasAgg(fig)
        ax = fig.subplots()
    xs = list(x_order) if x_order is not None else list(dict.fromkeys(df[x].tolist()))
    hs = (list(hue_order) if hue_order is not None else list(dict.fromkeys(df[hue].tolist()))) if hue else [None]
    colors = sns.color_palette(palette, n_colors=max(len(hs), 1))
    width = 0.8 / max(len(hs), 1)  # no level at all (an empty table): an empty axes, not a crash
    top = float(np.nanmax(df[ci_high if ci_high else y].to_numpy(dtype=float), initial=0.0))
    top = top if top > 0 else 1.0
    for j, level in enumerate(hs):
        sub = df if hue is None else df[df[hue] == level]
        rows = {v: r for v, (_, r) in zip(sub[x], sub.iterrows())}
        for i, xv in enumerate(xs):
            if xv not in rows:
                continue
            r, pos = rows[xv], i - 0.4 + width * (j + 0.5)
            v = float(r[y]) if pd.notna(r[y]) else np.nan
            if np.isnan(v):
                text = str(r[missing]).split(":")[0] if missing and pd.notna(r[missing]) else "no value"
                ax.text(pos, 0.02 * top, text, rotation=90, ha="center", va="bottom", fontsize=7,
                        color="0.35", fontstyle="italic")
                continue
            ax.bar(pos, v, width=width * 0.95, color=colors[j % len(colors)],
                   label=None if level is None else str(level))
            if ci_low and pd.notna(r[ci_low]) and pd.notna(r[ci_high]):
                # A rate cannot be negative: a lower bound below 0 (small n) is drawn at 0.
                low = max(float(r[ci_low]), 0.0)
                ax.errorbar(pos, v, yerr=[[max(v - low, 0.0)], [max(float(r[ci_high]) - v, 0.0)]],
                            fmt="none", ecolor="0.15", elinewidth=1.0, capsize=2.5)
    ax.set_xticks(range(len(xs)))
    ax.set_xticklabels([str(v) for v in xs])
    ax.set_xlim(-0.6, len(xs) - 0.4)
    ax.set_ylim(0, top * 1.12)
    ax.set_xlabel(xlabel if xlabel is not None else x)
    ax.set_ylabel(ylabel if ylabel is not None else y)
    if title:
        ax.set_title(title)
    if hue:
        # Every level, also one without any bar (e.g. a pinning mode this host cannot realize):
        # its slot is drawn, so the legend names it.
        handles = [Patch(color=colors[j % len(colors)], label=str(level)) for j, level in enumerate(hs)]
        ax.legend(handles=handles, title=hue, fontsize="small", title_fontsize="small", **OUTSIDE_LEGEND)
    return ax
