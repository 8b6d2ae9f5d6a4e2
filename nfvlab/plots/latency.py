"""Latency percentile spectra: latency against percentile, one line per load fraction.

The x axis is the HDR-histogram convention: ``1 / (1 - q)`` on a log scale, so
p50, p90, p99 and p99.9 are equally spaced and the tail is visible. Input is
:func:`nfvlab.latency.latency_percentiles`; points are the means over repetitions,
bars their confidence interval. Deterministic output (no random jitter).
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator

from nfvlab.plots.output import OUTSIDE_LEGEND, new_figure
from nfvlab.plots.throughput import MARKERS

__all__ = ["percentile_spectrum", "spectrum_figure"]


def _x(quantile_pct: float) -> float:
    return 1.0 / (1.0 - quantile_pct / 100.0)


def percentile_spectrum(df: pd.DataFrame, ax: Axes, *, hue: str = "load_fraction",
                        hue_order: Optional[Sequence] = None, palette: str = "rocket_r",
                        title: Optional[str] = None, legend: bool = True) -> Axes:
    """Mean latency (µs) per percentile, one line per ``hue`` level, CI bars.

    Parameters
    ----------
    df : pandas.DataFrame
        Rows of :func:`nfvlab.latency.latency_percentiles` for one configuration and
        frame size: ``quantile`` (50 .. 99.9), ``percentile`` (label), ``mean_ns``,
        ``ci_low_ns``, ``ci_high_ns`` and the ``hue`` column.
    ax : matplotlib.axes.Axes
        Where to draw.
    hue : str
        Column with one line per level (default: the load fraction, shown in %).
    hue_order : sequence, optional
        Level order (default: sorted).
    palette : str
        Seaborn palette name (a sequential one: heavier load, darker line).
    title : str, optional
    legend : bool

    Returns
    -------
    matplotlib.axes.Axes
    """
    for col in ("quantile", "percentile", "mean_ns", "ci_low_ns", "ci_high_ns", hue):
        if col not in df.columns:
            raise KeyError(f"column {col!r} not in data")
    data = df[pd.notna(df["mean_ns"])]
    levels = list(hue_order) if hue_order is not None else sorted(dict.fromkeys(data[hue].tolist()))
    colors = sns.color_palette(palette, n_colors=max(len(levels), 1))
    for i, level in enumerate(levels):
        sub = data[data[hue] == level].sort_values("quantile")
        if sub.empty:
            continue
        xs = np.array([_x(q) for q in sub["quantile"]])
        ys = sub["mean_ns"].to_numpy(dtype=float) / 1e3
        # A latency cannot be negative: a lower bound below 0 (small n) is drawn at 0.
        err = np.nan_to_num(np.vstack([ys - (sub["ci_low_ns"].to_numpy(dtype=float) / 1e3).clip(min=0.0),
                                       sub["ci_high_ns"].to_numpy(dtype=float) / 1e3 - ys]), nan=0.0).clip(min=0)
        label = f"{level * 100:g} %" if hue == "load_fraction" else str(level)
        color = colors[i % len(colors)]
        ax.errorbar(xs, ys, yerr=err, color=color, marker=MARKERS[i % len(MARKERS)], markersize=4.5,
                    linewidth=1.4, elinewidth=0.9, capsize=2, label=label)
    quantiles = sorted(dict.fromkeys(df["quantile"].tolist()))
    labels = dict(zip(df["quantile"], df["percentile"]))
    ax.set_xscale("log")
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticks([_x(q) for q in quantiles])
    ax.set_xticklabels([labels[q] for q in quantiles])
    ax.set_xlabel("Percentile")
    ax.set_ylabel("One-way latency [µs]")
    ax.set_ylim(bottom=0)
    if title:
        ax.set_title(title)
    if legend and ax.get_legend_handles_labels()[0]:
        ax.legend(title="load" if hue == "load_fraction" else hue, fontsize="small", title_fontsize="small",
                  **OUTSIDE_LEGEND)
    return ax


def _panel_title(panel: str, level) -> str:
    if panel != "frame_size":
        return f"{panel} {level}"
    return str(level) if isinstance(level, str) else f"{level} B"  # a named mix (IMIX) has no single size


def spectrum_figure(df: pd.DataFrame, title: str, *, panel: str = "frame_size") -> Figure:
    """One configuration's spectra, one panel per ``panel`` level (default: frame size).

    ``df`` is :func:`nfvlab.latency.latency_percentiles` restricted to one configuration
    (model and resource labels); panels are ordered numbers first, then names (IMIX).
    """
    levels = sorted(dict.fromkeys(df[panel].tolist()), key=lambda v: (isinstance(v, str), v))
    cols = max(1, min(3, len(levels)))
    rows = math.ceil(len(levels) / cols) if levels else 1
    fig = new_figure((max(6.4, 3.4 * cols + 0.6), 3.0 * rows + 0.9))  # wide enough for the title
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).ravel()
    for i, (ax, level) in enumerate(zip(axes, levels)):
        # One legend, right of the last panel: outside every panel's data.
        percentile_spectrum(df[df[panel] == level], ax, title=_panel_title(panel, level),
                            legend=i == len(levels) - 1)
    for ax in axes[len(levels):]:
        ax.set_visible(False)
    fig.suptitle(title)
    return fig
