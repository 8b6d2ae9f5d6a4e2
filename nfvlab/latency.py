"""Latency under load: percentiles per configuration and load fraction, over repetitions.

The input is :func:`nfvlab.results.latency_frame` (one row per direction of each
latency trial). A trial's percentiles are those of all its probes, both
directions together: the directions' HDR histograms are added and read at
p50/p90/p95/p99/p99.9 (within 0.1 %, :data:`nfvlab.traffic.stats.HDR_SIGNIFICANT_DIGITS`).
A trial recorded before histograms existed has only per-direction percentiles;
it contributes the worst (largest) direction's value, and NaN for p95/p99.9,
which such records lack (``source`` says which).
"""
from __future__ import annotations

import math

import pandas as pd

from nfvlab.results import CONFIG_LABELS
from nfvlab.stats import summarize
from nfvlab.traffic.stats import (
    PERCENTILES,
    decode_histogram,
    histogram_percentiles,
    new_histogram,
)

#: Percentile column of a latency record -> its label in tables and figures.
PERCENTILE_LABELS = {"p50_ns": "p50", "p90_ns": "p90", "p95_ns": "p95", "p99_ns": "p99", "p999_ns": "p99.9"}

#: What identifies one measured configuration and load point (besides the repetition).
POINT_KEYS = ["model", *CONFIG_LABELS, "frame_size", "goal", "load_fraction"]

_TRIAL_KEYS = [*POINT_KEYS, "repetition", "rate_pps"]


def _trial_values(rows: pd.DataFrame) -> tuple[dict, str, int]:
    """Percentiles (ns) of one trial's probes, where they came from, and how many probes."""
    hists = rows["hdr_histogram"].tolist()
    if rows.empty or not all(isinstance(h, str) and h for h in hists):
        worst = {k: (float(rows[k].max()) if rows[k].notna().any() else math.nan) for k in PERCENTILES}
        return worst, "recorded", int(rows["probes_received"].sum())
    merged = new_histogram()
    for h in hists:
        merged.add(decode_histogram(h))
    return histogram_percentiles(merged), "hdr", int(merged.get_total_count())


def trial_percentiles(latency: pd.DataFrame) -> pd.DataFrame:
    """One row per latency trial and percentile.

    Parameters
    ----------
    latency : pandas.DataFrame
        :func:`nfvlab.results.latency_frame`.

    Returns
    -------
    pandas.DataFrame
        :data:`POINT_KEYS` (``model``, the config labels, ``frame_size``, ``goal``,
        ``load_fraction``), ``repetition``, ``rate_pps`` (the trial's rate per
        direction), ``percentile`` (``p50`` .. ``p99.9``), ``quantile`` (50 .. 99.9),
        ``latency_ns`` (one-way, both directions' probes; NaN where unknown),
        ``probes`` (probes received, both directions) and ``source`` (``hdr``: from
        the histograms; ``recorded``: worst direction's recorded value). Of several
        trials of one point and repetition (a resumed run), the last.
    """
    cols = [*_TRIAL_KEYS, "percentile", "quantile", "latency_ns", "probes", "source"]
    rows = []
    if not latency.empty:
        for key, group in latency.groupby(_TRIAL_KEYS, sort=False, dropna=False):
            values, source, probes = _trial_values(group)
            for name, label in PERCENTILE_LABELS.items():
                v = values[name]
                rows.append([*key, label, PERCENTILES[name], math.nan if v is None else float(v), probes, source])
    out = pd.DataFrame(rows, columns=cols)
    out["latency_ns"] = out["latency_ns"].astype("float64")
    # A resumed run re-measures a search whose latency trials were cut short: the
    # last trial of a point and repetition (file order) is the one that counts.
    key = [*POINT_KEYS, "repetition", "percentile"]
    return out[~out.astype({k: str for k in key})[key].duplicated(keep="last")].reset_index(drop=True)


def latency_percentiles(latency: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """Latency percentiles per configuration, frame size, goal and load fraction, over repetitions.

    Parameters
    ----------
    latency : pandas.DataFrame
        :func:`nfvlab.results.latency_frame`.
    confidence : float
        Level of the Student-t interval of the mean over repetitions.

    Returns
    -------
    pandas.DataFrame
        One row per :data:`POINT_KEYS` and percentile: ``model``, the config labels,
        ``frame_size``, ``goal``, ``load_fraction`` (0..1 of the goal's rate; 0 = probes
        only), ``percentile`` (``p50``, ``p90``, ``p95``, ``p99``, ``p99.9``), ``quantile``
        (50 .. 99.9), ``n`` (repetitions with a value), ``mean_ns``, ``sd_ns`` (NaN for n < 2),
        ``ci_low_ns`` / ``ci_high_ns`` (t interval of the mean at ``confidence``; NaN
        for n < 2), ``median_ns``, ``min_ns``, ``max_ns`` (over repetitions of each
        trial's percentile, ns) and ``rate_pps`` (mean rate of the trials, per direction).
    """
    per_trial = trial_percentiles(latency)
    by = [*POINT_KEYS, "percentile", "quantile"]
    summary = summarize(per_trial, by, "latency_ns", confidence=confidence)
    summary = summary.rename(columns={"mean": "mean_ns", "std": "sd_ns", "ci_low": "ci_low_ns",
                                      "ci_high": "ci_high_ns", "median": "median_ns", "min": "min_ns",
                                      "max": "max_ns"}).drop(columns=["cv"])
    rates = per_trial.groupby(by, sort=False, dropna=False)["rate_pps"].mean().rename("rate_pps").reset_index()
    out = summary.merge(rates, on=by, how="left")
    return out[[*by, "n", "mean_ns", "sd_ns", "ci_low_ns", "ci_high_ns", "median_ns", "min_ns", "max_ns",
                "rate_pps"]]


def percentiles_us(table: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration and load point, one column per percentile, microseconds.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`latency_percentiles` (or the ``latency`` table of :func:`nfvlab.experiments.tables`).

    Returns
    -------
    pandas.DataFrame
        The point's key columns present in ``table`` (``model``, config labels,
        ``frame_size``, ``goal``, ``load_fraction``), ``n`` (fewest repetitions
        behind any of its percentiles), then ``p50_us``, ``p90_us``, ``p95_us``,
        ``p99_us``, ``p999_us``: the mean over repetitions of each trial's
        percentile, one-way, in microseconds (NaN where unknown). The column names
        carry the unit of the values: ``_ns`` columns are never divided in place.
    """
    keys = [k for k in POINT_KEYS if k in table.columns]
    names = {label: f"{col[:-3]}_us" for col, label in PERCENTILE_LABELS.items()}
    cols = [*keys, "n", *names.values()]
    if table.empty:
        return pd.DataFrame(columns=cols)
    wide = table.pivot_table(index=keys, columns="percentile", values="mean_ns", aggfunc="first", dropna=False,
                             observed=True, sort=False)
    wide = (wide.reindex(columns=list(names)) / 1e3).rename(columns=names)
    n = table.groupby(keys, sort=False, dropna=False, observed=True)["n"].min().rename("n")
    out = wide.join(n).reset_index()
    return out[cols]
