"""Statistics over trial records: summaries, pairwise comparisons, claims.

Functions take *tidy* :class:`pandas.DataFrame` objects (one row per trial,
one column per variable) and return tidy frames, in the style of pingouin and
:mod:`scipy.stats`. All tests and intervals come from :mod:`scipy.stats`; the
only hand-written statistics are the Holm step-down adjustment (not in SciPy,
and statsmodels is not a dependency), Hedges' g and the rank-biserial
correlation, each a one-line textbook formula documented where it is defined.

* :func:`summarize` -- n, mean, std, Student-t CI of the mean, CV, median,
  min, max per configuration.
* :func:`compare` -- pairwise Welch t / Mann-Whitney U tests between the levels
  of one factor, with multiple-comparison correction and effect sizes.
* :func:`adjust_pvalues` -- Holm, Bonferroni or Benjamini-Hochberg adjustment.

Everything is deterministic: group and pair order are fixed by
:func:`level_sort_key`.
"""
from __future__ import annotations

import itertools
import math
import numbers
from typing import Any, Callable, Hashable, Iterable, Sequence

import numpy as np
import pandas as pd
from scipy import stats as _st

__all__ = [
    "level_sort_key",
    "summarize",
    "compare",
    "adjust_pvalues",
]

SUMMARY_COLUMNS = ["n", "mean", "std", "ci_low", "ci_high", "cv", "median", "min", "max"]
COMPARE_COLUMNS = [
    "a", "b", "n_a", "n_b", "mean_a", "mean_b", "diff", "test", "statistic",
    "p_value", "p_adjusted", "significant", "effect_size", "effect_size_kind", "direction",
]
CORRECTIONS = ("holm", "bonferroni", "fdr_bh", "none")
TESTS = ("auto", "welch", "mannwhitney")
#: Significance level of the Shapiro-Wilk normality pre-test of ``test="auto"``.
NORMALITY_ALPHA = 0.05


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


def _sorted_levels(values: Iterable) -> list:
    uniq: list = []
    for v in values:
        if not any(_same_level(v, u) for u in uniq):
            uniq.append(v)
    return sorted(uniq, key=level_sort_key)


def _same_level(x: Any, y: Any) -> bool:
    """Equality of levels, with all missing values equal to each other."""
    mx, my = level_sort_key(x)[0] == 2, level_sort_key(y)[0] == 2
    if mx or my:
        return mx and my
    try:
        return bool(x == y)
    except (TypeError, ValueError):
        return False


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


# ---------------------------------------------------------------------------
# multiple comparisons
# ---------------------------------------------------------------------------
def adjust_pvalues(p_values: Sequence[float], method: str = "holm") -> np.ndarray:
    """Adjust p-values for multiple comparisons.

    Parameters
    ----------
    p_values : sequence of float
        Raw p-values; NaN entries (no test) are kept as NaN and do not count
        towards the number of comparisons ``m``.
    method : {"holm", "bonferroni", "fdr_bh", "none"}
        ``"holm"``: Holm's step-down family-wise error control: with the
        ``m`` p-values sorted ascending, ``p_adj(i) = min(1, max_{j <= i}
        (m - j + 1) p(j))`` (i, j 1-based). ``"bonferroni"``: ``min(1, m p)``.
        ``"fdr_bh"``: Benjamini-Hochberg false discovery rate, via
        :func:`scipy.stats.false_discovery_control`. ``"none"``: unchanged.

    Returns
    -------
    ndarray of float
        Adjusted p-values in the input order (dimensionless, in [0, 1]).
    """
    if method not in CORRECTIONS:
        raise ValueError(f"correction must be one of {CORRECTIONS}, got {method!r}")
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = ~np.isnan(p)
    q = p[ok]
    m = q.size
    if m == 0:
        return out
    if np.any((q < 0) | (q > 1)):
        raise ValueError("p-values must lie in [0, 1]")
    if method == "none":
        adj = q.copy()
    elif method == "bonferroni":
        adj = np.minimum(1.0, q * m)
    elif method == "fdr_bh":
        adj = _st.false_discovery_control(q, method="bh")
    else:  # holm
        order = np.argsort(q, kind="stable")
        stepped = np.maximum.accumulate(q[order] * (m - np.arange(m)))
        adj = np.empty(m)
        adj[order] = np.minimum(1.0, stepped)
    out[ok] = adj
    return out


# ---------------------------------------------------------------------------
# compare
# ---------------------------------------------------------------------------
def _hedges_g(x: np.ndarray, y: np.ndarray) -> float:
    """Hedges' g: Cohen's d with the pooled SD, times J = 1 - 3 / (4(nx+ny) - 9)."""
    nx, ny = x.size, y.size
    pooled = ((nx - 1) * x.var(ddof=1) + (ny - 1) * y.var(ddof=1)) / (nx + ny - 2)
    if not pooled > 0:
        return math.nan
    d = (x.mean() - y.mean()) / math.sqrt(pooled)
    return float(d * (1.0 - 3.0 / (4.0 * (nx + ny) - 9.0)))


def _normal(x: np.ndarray) -> bool:
    """Shapiro-Wilk does not reject normality (constant samples count as not normal)."""
    if x.size < 3 or np.ptp(x) == 0:
        return False
    return bool(_st.shapiro(x).pvalue >= NORMALITY_ALPHA)


def compare(
    df: pd.DataFrame,
    by: Hashable,
    value: Hashable,
    groups: Sequence[tuple[Any, Any]] | None = None,
    test: str = "auto",
    correction: str = "holm",
    alpha: float = 0.05,
) -> pd.DataFrame:
    """Pairwise two-sample tests between the levels of one factor.

    Filter ``df`` to one value of every other factor first (e.g. one frame
    size): all rows with the same ``by`` level are pooled into one sample.

    Parameters
    ----------
    df : DataFrame
        Tidy trial records.
    by : column name
        The factor whose levels are compared (e.g. ``"cpu_isolation"``).
    value : column name
        Measured quantity; NaN values are dropped.
    groups : list of (a, b) pairs, optional
        Pairs to compare, in this order. Default: all pairs of the levels
        present in ``df[by]`` (missing levels excluded), in
        :func:`level_sort_key` order, as ``itertools.combinations`` yields them.
    test : {"auto", "welch", "mannwhitney"}
        ``"welch"``: Welch's t test (``scipy.stats.ttest_ind(equal_var=False)``).
        ``"mannwhitney"``: two-sided Mann-Whitney U (``scipy.stats.mannwhitneyu``).
        ``"auto"``: per pair, Welch when both samples have ``n >= 3``, are not
        constant, and Shapiro-Wilk (``scipy.stats.shapiro``) does not reject
        normality at 0.05 for either; Mann-Whitney otherwise.
    correction : {"holm", "bonferroni", "fdr_bh", "none"}
        Multiple-comparison adjustment over the rows that have a p-value
        (see :func:`adjust_pvalues`).
    alpha : float, default 0.05
        Significance level applied to ``p_adjusted``.

    Returns
    -------
    DataFrame
        One row per pair. Columns:

        ``a``, ``b``
            The two levels.
        ``n_a``, ``n_b`` : int
            Non-NaN sample sizes.
        ``mean_a``, ``mean_b`` : float
            Sample means, unit of ``value`` (NaN for an empty sample).
        ``diff`` : float
            ``mean_a - mean_b``, unit of ``value``.
        ``test`` : str
            ``"welch"``, ``"mannwhitney"``, or ``"insufficient-data"`` when
            either sample has ``n < 2`` (then p-values and effect size are NaN).
        ``statistic`` : float
            Welch's t (dimensionless) or the Mann-Whitney U of sample ``a``.
        ``p_value`` : float
            Two-sided raw p-value.
        ``p_adjusted`` : float
            ``p_value`` after ``correction``.
        ``significant`` : bool
            ``p_adjusted < alpha`` (False when NaN).
        ``effect_size`` : float
            Dimensionless, positive when ``a`` is larger. Welch: Hedges' g
            (mean difference over the pooled SD, small-sample corrected; NaN
            when both samples are constant). Mann-Whitney: rank-biserial
            correlation ``2 U_a / (n_a n_b) - 1`` in [-1, 1].
        ``effect_size_kind`` : str or None
            ``"hedges_g"``, ``"rank_biserial"``, or None.
        ``direction`` : str
            ``"a>b"`` / ``"a<b"`` when significant, else ``"n.s."``. The sign
            is that of ``diff`` for Welch and of the rank-biserial correlation
            (stochastic dominance, the hypothesis Mann-Whitney tests) for
            Mann-Whitney.
    """
    if isinstance(by, (list, tuple)):
        if len(by) != 1:
            raise ValueError("compare() takes one factor column in `by`")
        by = by[0]
    if test not in TESTS:
        raise ValueError(f"test must be one of {TESTS}, got {test!r}")
    if correction not in CORRECTIONS:
        raise ValueError(f"correction must be one of {CORRECTIONS}, got {correction!r}")
    for c in (by, value):
        if c not in df.columns:
            raise KeyError(f"column not in the frame: {c!r}")

    vals = pd.to_numeric(df[value], errors="raise").astype(float).to_numpy()
    keys = df[by].to_numpy(dtype=object)

    def sample(level: Any) -> np.ndarray:
        mask = np.fromiter((_same_level(k, level) for k in keys), dtype=bool, count=keys.size)
        x = vals[mask]
        return x[~np.isnan(x)]

    if groups is None:
        levels = [v for v in _sorted_levels(keys) if level_sort_key(v)[0] != 2]
        pairs = list(itertools.combinations(levels, 2))
    else:
        pairs = [tuple(p) for p in groups]
        if any(len(p) != 2 for p in pairs):
            raise ValueError("groups must be a list of (a, b) pairs")

    rows = []
    for a, b in pairs:
        xa, xb = sample(a), sample(b)
        na, nb = xa.size, xb.size
        mean_a = float(xa.mean()) if na else math.nan
        mean_b = float(xb.mean()) if nb else math.nan
        row = {
            "a": a, "b": b, "n_a": na, "n_b": nb,
            "mean_a": mean_a, "mean_b": mean_b, "diff": mean_a - mean_b,
            "test": "insufficient-data", "statistic": math.nan, "p_value": math.nan,
            "effect_size": math.nan, "effect_size_kind": None,
        }
        if na >= 2 and nb >= 2:
            kind = test
            if kind == "auto":
                kind = "welch" if (_normal(xa) and _normal(xb)) else "mannwhitney"
            if kind == "welch":
                res = _st.ttest_ind(xa, xb, equal_var=False)
                row.update(test="welch", effect_size=_hedges_g(xa, xb),
                           effect_size_kind="hedges_g")
            else:
                res = _st.mannwhitneyu(xa, xb, alternative="two-sided")
                row.update(test="mannwhitney",
                           effect_size=float(2.0 * res.statistic / (na * nb) - 1.0),
                           effect_size_kind="rank_biserial")
            row.update(statistic=float(res.statistic), p_value=float(res.pvalue))
        rows.append(row)

    out = pd.DataFrame(rows, columns=[c for c in COMPARE_COLUMNS
                                      if c not in ("p_adjusted", "significant", "direction")])
    out["n_a"] = out["n_a"].astype(np.int64)
    out["n_b"] = out["n_b"].astype(np.int64)
    for c in ("mean_a", "mean_b", "diff", "statistic", "p_value", "effect_size"):
        out[c] = out[c].astype(float)
    out["p_adjusted"] = adjust_pvalues(out["p_value"].to_numpy(), correction)
    out["significant"] = (out["p_adjusted"] < alpha).fillna(False).astype(bool)
    sign = np.where(out["test"] == "mannwhitney", out["effect_size"], out["diff"])
    out["direction"] = np.where(
        ~out["significant"], "n.s.", np.where(sign > 0, "a>b", np.where(sign < 0, "a<b", "n.s."))
    )
    out["effect_size_kind"] = out["effect_size_kind"].astype(object)
    return out[COMPARE_COLUMNS]


# ---------------------------------------------------------------------------
# claims
# ---------------------------------------------------------------------------
def _find_pair(compare_df: pd.DataFrame, hi: Any, lo: Any) -> tuple[pd.Series | None, bool]:
    """Row of ``compare_df`` comparing ``hi`` with ``lo`` and whether it is (a=hi, b=lo)."""
    for _, row in compare_df.iterrows():
        if _same_level(row["a"], hi) and _same_level(row["b"], lo):
            return row, True
        if _same_level(row["a"], lo) and _same_level(row["b"], hi):
            return row, False
    return None, True


#: Verdicts of a claim, in report order.
VERDICTS = ("holds", "contradicted", "inconclusive", "not testable")


def claim_verdict(compare_df: pd.DataFrame, chains: Sequence[Sequence[Any]]) -> dict:
    """Judge a claim "each chain is in decreasing order" from pairwise tests.

    Every adjacent pair ``(hi, lo)`` of every chain is looked up in
    ``compare_df`` (:func:`compare` over the claim's pairs, so its
    ``p_adjusted`` is already corrected over them). A pair *supports* the claim
    when it is significant in the claimed direction, *contradicts* it when it
    is significant the other way, and is *undecided* otherwise (not
    significant, or not comparable: ``n < 2``).

    Returns
    -------
    dict
        ``verdict``: ``holds`` (every pair supports), ``contradicted`` (some
        pair contradicts), ``inconclusive`` (neither, at this n), or ``not
        testable`` (no pair could be tested); and for the deciding pair (the
        least significant supporting pair for ``holds``, the most significant
        contradicting pair for ``contradicted``, the least significant
        undecided pair otherwise): ``pair`` ("hi > lo"), ``test``,
        ``p_adjusted``, ``effect_size`` (positive: hi larger), ``effect_size_kind``,
        ``n`` (the smaller sample of the pair); ``detail`` spells out every pair.
    """
    evidence = []
    for chain in chains:
        for hi, lo in zip(chain, chain[1:]):
            row, forward = _find_pair(compare_df, hi, lo)
            if row is None or row["test"] == "insufficient-data" or pd.isna(row["p_adjusted"]):
                n = (min(int(row["n_a"]), int(row["n_b"])) if row is not None else 0)
                evidence.append({"pair": f"{hi} > {lo}", "state": "untestable", "test": None,
                                 "p_adjusted": np.nan, "effect_size": np.nan, "effect_size_kind": None, "n": n})
                continue
            sign = 1.0 if forward else -1.0
            claimed = "a>b" if forward else "a<b"
            if bool(row["significant"]):
                state = "supports" if row["direction"] == claimed else "contradicts"
            else:
                state = "undecided"
            evidence.append({"pair": f"{hi} > {lo}", "state": state, "test": row["test"],
                             "p_adjusted": float(row["p_adjusted"]),
                             "effect_size": sign * float(row["effect_size"]) if pd.notna(row["effect_size"])
                             else np.nan,
                             "effect_size_kind": row.get("effect_size_kind"),
                             "n": min(int(row["n_a"]), int(row["n_b"]))})
    states = [e["state"] for e in evidence]
    if not evidence or all(s == "untestable" for s in states):
        verdict, pick = "not testable", (evidence[0] if evidence else None)
    elif "contradicts" in states:
        verdict = "contradicted"
        pick = min((e for e in evidence if e["state"] == "contradicts"), key=lambda e: e["p_adjusted"])
    elif all(s == "supports" for s in states):
        verdict = "holds"
        pick = max(evidence, key=lambda e: e["p_adjusted"])
    else:
        verdict = "inconclusive"
        open_pairs = [e for e in evidence if e["state"] in ("undecided", "untestable")]
        pick = max(open_pairs, key=lambda e: (e["state"] == "undecided", np.nan_to_num(e["p_adjusted"])))

    def fmt(e):
        if e["state"] == "untestable":
            return f"{e['pair']}: not testable (n = {e['n']})"
        return (f"{e['pair']}: {e['state']} ({e['test']}, p_adj = {e['p_adjusted']:.3g}, "
                f"effect {e['effect_size']:+.2f}, n = {e['n']})")

    out = {"verdict": verdict, "pair": None, "test": None, "p_adjusted": np.nan, "effect_size": np.nan,
           "effect_size_kind": None, "n": 0, "detail": "; ".join(fmt(e) for e in evidence) or "no pair"}
    if pick is not None:
        out.update({k: pick[k] for k in ("pair", "test", "p_adjusted", "effect_size", "effect_size_kind", "n")})
    return out
