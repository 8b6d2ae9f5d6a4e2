"""Throughput vs frame size: one line (with markers) per ``hue`` level.

Pure matplotlib artists on a :class:`matplotlib.figure.Figure` (no pyplot
state), coloured with a seaborn palette; output is deterministic (no
bootstrapped confidence intervals, no random jitter).
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator

from nfvlab.plots.output import OUTSIDE_LEGEND

__all__ = ["throughput_vs_frame_size", "MARKERS"]

#: Marker cycle, one per hue level (wraps around).
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")

_X_SCALES = ("log2", "categorical", "linear")


def _levels(series: pd.Series, order: Optional[Sequence]) -> list:
    if order is not None:
        return list(order)
    # first-appearance order keeps the published (stable) order of the table
    return list(dict.fromkeys(series.tolist()))


def _mean_or_nan(values: np.ndarray) -> float:
    values = values[~np.isnan(values)]
    return float(values.mean()) if values.size else float("nan")


def _size_key(v):
    # numeric sizes first in ascending order, then strings (e.g. "IMIX")
    return (0, float(v), "") if not isinstance(v, str) else (1, 0.0, v)


def throughput_vs_frame_size(
    df: pd.DataFrame,
    x: str = "frame_size",
    y: str = "throughput_gbps",
    hue: Optional[str] = None,
    ax: Optional[Axes] = None,
    *,
    hue_order: Optional[Sequence] = None,
    x_scale: str = "log2",
    palette: str = "colorblind",
    title: Optional[str] = None,
    xlabel: Optional[str] = "Frame size [B]",
    ylabel: Optional[str] = None,
    reference_line: Optional[float] = None,
    reference_label: Optional[str] = None,
    ci_low: Optional[str] = None,
    ci_high: Optional[str] = None,
    legend: bool = True,
    figsize: tuple[float, float] = (6.4, 4.2),
) -> Axes:
    """Line + marker plot of a rate against frame size, one line per ``hue`` level.

    Parameters
    ----------
    df : pandas.DataFrame
        Tidy data, one row per value (e.g. :func:`nfvlab.reference.models_throughput`).
        Several rows per (hue, x) are allowed (e.g. repeated trials): the line
        goes through their mean and every row is also drawn as a faint dot.
    x, y : str
        Columns with the frame size (bytes) and the rate. NaN rates are skipped.
    hue : str, optional
        Column whose levels get one line each; None draws a single line.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new ``Figure(figsize)`` is made if None.
    hue_order : sequence, optional
        Level order (default: order of first appearance in ``df``).
    x_scale : {"log2", "categorical", "linear"}
        ``"log2"``: log base 2 axis, ticks at the sizes present;
        ``"categorical"``: equally spaced sizes (allows ``"IMIX"``);
        ``"linear"``: plain numeric axis.
    palette : str
        Seaborn palette name.
    title, xlabel, ylabel : str, optional
        Labels (``ylabel`` defaults to ``y``).
    reference_line : float, optional
        Draw a dashed horizontal line at this ``y`` (e.g. a nominal line rate).
    reference_label : str, optional
        Legend label of the reference line.
    ci_low, ci_high : str, optional
        Columns with the lower / upper bound of each value's confidence interval
        (same unit as ``y``; in the experiments' figures the 95 % t interval of
        the mean over repetitions, ``config_table``'s ``ci_low_pps`` /
        ``ci_high_pps``): drawn as error bars around the line's points (mean of
        the bounds when several rows share a point; no bar where NaN; a lower
        bound below 0 is drawn at 0, as a rate cannot be negative).
    legend : bool
        Draw a legend when there is a ``hue`` or reference line, outside the axes (right).
    figsize : (float, float)
        Size of the new figure when ``ax`` is None.

    Returns
    -------
    matplotlib.axes.Axes
    """
    if x_scale not in _X_SCALES:
        raise ValueError(f"x_scale must be one of {_X_SCALES}, not {x_scale!r}")
    for col in (x, y) + ((hue,) if hue else ()):
        if col not in df.columns:
            raise KeyError(f"column {col!r} not in data")
    if ax is None:
        fig = Figure(figsize=figsize, layout="constrained")
        FigureCanvasAgg(fig)
        ax = fig.subplots()

    if (ci_low is None) != (ci_high is None):
        raise ValueError("give both ci_low and ci_high, or neither")
    for col in (ci_low, ci_high):
        if col and col not in df.columns:
            raise KeyError(f"column {col!r} not in data")
    data = df[[c for c in dict.fromkeys((x, y, hue, ci_low, ci_high)) if c]].copy()
    data = data[pd.notna(data[y])]
    sizes = sorted(dict.fromkeys(data[x].tolist()), key=_size_key)
    if x_scale == "categorical":
        pos = {s: float(i) for i, s in enumerate(sizes)}
    else:
        bad = [s for s in sizes if isinstance(s, str)]
        if bad:
            raise ValueError(f"non-numeric frame sizes {bad} need x_scale='categorical'")
        pos = {s: float(s) for s in sizes}

    levels = _levels(data[hue], hue_order) if hue else [None]
    colors = sns.color_palette(palette, n_colors=max(len(levels), 1))
    for i, level in enumerate(levels):
        sub = data if hue is None else data[data[hue] == level]
        if sub.empty:
            continue
        xs = np.array([pos[v] for v in sub[x]], dtype=float)
        ys = sub[y].to_numpy(dtype=float)
        ux = np.array(sorted(set(xs.tolist())))
        my = np.array([ys[xs == u].mean() for u in ux])
        color = colors[i % len(colors)]
        ax.plot(
            ux, my, marker=MARKERS[i % len(MARKERS)], color=color, linewidth=1.6,
            markersize=5.5, label=None if level is None else str(level),
        )
        if ci_low is not None:
            # A rate cannot be negative: a t-interval reaching below 0 (small n) is drawn clipped at 0.
            lo = np.array([_mean_or_nan(sub[ci_low].to_numpy(dtype=float)[xs == u]) for u in ux]).clip(min=0.0)
            hi = np.array([_mean_or_nan(sub[ci_high].to_numpy(dtype=float)[xs == u]) for u in ux])
            err = np.nan_to_num(np.vstack([my - lo, hi - my]), nan=0.0).clip(min=0.0)
            ax.errorbar(ux, my, yerr=err, fmt="none", ecolor=color, elinewidth=1.0, capsize=0, zorder=2)
        if len(ux) != len(xs):  # repeated measurements: show every point
            ax.scatter(xs, ys, s=9, color=color, alpha=0.35, linewidths=0, zorder=1)

    ticks = [pos[s] for s in sizes]
    if x_scale == "log2":
        ax.set_xscale("log", base=2)
        ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticks(ticks)
    # Rotated: on a log axis 1280 and 1518 sit too close for horizontal labels.
    ax.set_xticklabels([str(s) for s in sizes], rotation=45 if x_scale == "log2" else 0)
    if x_scale == "categorical" and ticks:
        ax.set_xlim(ticks[0] - 0.4, ticks[-1] + 0.4)

    if reference_line is not None:
        ax.axhline(reference_line, color="0.4", linestyle="--", linewidth=1.0, label=reference_label)
    ax.set_ylim(bottom=0)
    if xlabel is not None:
        ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel if ylabel is not None else y)
    if title:
        ax.set_title(title)
    handles, _ = ax.get_legend_handles_labels()
    if legend and handles:
        ax.legend(title=hue if hue else None, fontsize="small", title_fontsize="small", **OUTSIDE_LEGEND)
    return ax
