"""Statistics over trial records: summaries per configuration, and the level order.

Functions take *tidy* :class:`pandas.DataFrame` objects (one row per trial,
one column per variable) and return tidy frames, in the style of pingouin and
:mod:`scipy.stats`; intervals come from :mod:`scipy.stats`.

* :func:`summarize` -- n, mean, std, Student-t CI of the mean, CV, median,
  min, max per configuration.
* :func:`level_sort_key` -- the deterministic order of factor levels.

Tests between configurations and the claims' verdicts are :mod:`nfvlab.claims`.
"""
from __future__ import annotations

import math
import numbers
from typing import Any, Hashable, Sequence

import numpy as np
import pandas as pd
from scipy import stats as _st

__all__ = [
    "level_sort_key",
    "summarize",
]

SUMMARY_COLUMNS = ["n", "mean", "std", "ci_low", "ci_high", "cv", "median", "min", "max"]


# ---------------------------------------------------------------------------
# ordering
# ---------------------------------------------------------------------------
def level_sort_key(value: Any) -> tuple:
    """Deterministic sort key for factor levels of mixed type.

    Numbers sort first, numerically; then strings, lexicographically; missing
    values (``None``/``NaN``) last. A string that parses as a number (``"64"``,
    as frame sizes read from CSV are) sorts with the numbers, so ``[64, 128,
    1518, "IMIX"]`` and ``["64", "128", "1518", "IMIX"]`` both keep that order.

    Parameters
    ----------
    value : object
        One level (a scalar).

    Returns
    -------
    tuple
        ``(rank, number, text)``: rank 0 numbers, 1 strings/other, 2 missing.
    """
    try:
        if pd.isna(value):
            return (2, 0.0, "")
    except (TypeError, ValueError):  # non-scalar (tuple, ...): not missing
        pass
    if isinstance(value, numbers.Number) and not isinstance(value, complex):
        return (0, float(value), type(value).__name__)
    text = str(value)
    try:
        num = float(text)
    except ValueError:
        return (1, 0.0, text)
    if math.isnan(num):
        return (1, 0.0, text)
    return (0, num, text)


def _as_list(by: Hashable | Sequence[Hashable]) -> list:
    if isinstance(by, (list, tuple)):
        return list(by)
    return [by]


# ---------------------------------------------------------------------------
# summarize
# ---------------------------------------------------------------------------
def summarize(
    df: pd.DataFrame,
    by: Hashable | Sequence[Hashable],
    value: Hashable,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Descriptive statistics of ``value`` per configuration.

    Parameters
    ----------
    df : DataFrame
        Tidy trial records, one row per trial.
    by : column name or list of column names
        Columns identifying a configuration (e.g. ``["mode", "frame_size"]``).
    value : column name
        Measured quantity (e.g. throughput in Mpps, latency in µs). NaN values
        (trials that produced no measurement) are dropped per group.
    confidence : float, default 0.95
        Confidence level of the interval of the mean.

    Returns
    -------
    DataFrame
        One row per distinct combination of ``by`` (also for a combination
        that only has NaN values: it gets ``n = 0``), sorted by
        :func:`level_sort_key` column by column (numbers first, numerically,
        then strings such as ``"IMIX"``, missing last). Columns:

        ``by...``
            The configuration.
        ``n`` : int
            Number of non-NaN values.
        ``mean`` : float
            Sample mean, in the unit of ``value``.
        ``std`` : float
            Sample standard deviation (``ddof=1``), unit of ``value``; NaN
            when ``n < 2``.
        ``ci_low``, ``ci_high`` : float
            Student-t confidence interval of the mean at ``confidence``
            (``scipy.stats.t.interval`` with ``df = n - 1`` and scale the
            standard error ``std / sqrt(n)``, i.e. ``scipy.stats.sem``), unit
            of ``value``; NaN when ``n < 2``; equal to ``mean`` when
            ``std == 0``.
        ``cv`` : float
            Coefficient of variation ``std / mean`` (dimensionless); NaN when
            ``n < 2`` or ``mean == 0``.
        ``median``, ``min``, ``max`` : float
            Unit of ``value``; NaN when ``n == 0``.
    """
    by = _as_list(by)
    missing = [c for c in [*by, value] if c not in df.columns]
    if missing:
        raise KeyError(f"columns not in the frame: {missing}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")

    vals = pd.to_numeric(df[value], errors="raise").astype(float)
    work = df[by].copy()
    work["__v"] = vals.to_numpy()
    grouped = work.groupby(by, sort=False, dropna=False, observed=True)["__v"]
    agg = grouped.agg(["count", "mean", "std", "median", "min", "max"]).reset_index()
    if agg.empty:
        return pd.DataFrame(columns=[*by, *SUMMARY_COLUMNS])

    order = sorted(
        range(len(agg)),
        key=lambda i: tuple(level_sort_key(agg.at[i, c]) for c in by),
    )
    agg = agg.iloc[order].reset_index(drop=True)

    n = agg["count"].to_numpy(dtype=np.int64)
    mean = agg["mean"].to_numpy(dtype=float)
    std = agg["std"].to_numpy(dtype=float)
    std = np.where(n >= 2, std, np.nan)
    enough = n >= 2
    sem = np.full(len(agg), np.nan)
    sem[enough] = std[enough] / np.sqrt(n[enough])
    ci_low = np.full(len(agg), np.nan)
    ci_high = np.full(len(agg), np.nan)
    positive = enough & (sem > 0)
    if positive.any():
        lo, hi = _st.t.interval(
            confidence, n[positive] - 1, loc=mean[positive], scale=sem[positive]
        )
        ci_low[positive], ci_high[positive] = lo, hi
    flat = enough & (sem == 0)
    ci_low[flat] = ci_high[flat] = mean[flat]
    with np.errstate(divide="ignore", invalid="ignore"):
        cv = np.where(enough & (mean != 0), std / np.where(mean == 0, 1.0, mean), np.nan)

    out = agg[by].copy()
    out["n"] = n
    out["mean"] = mean
    out["std"] = std
    out["ci_low"] = ci_low
    out["ci_high"] = ci_high
    out["cv"] = cv
    out["median"] = agg["median"].to_numpy(dtype=float)
    out["min"] = agg["min"].to_numpy(dtype=float)
    out["max"] = agg["max"].to_numpy(dtype=float)
    return out
