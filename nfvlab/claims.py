"""The claims design: one pairwise test, four verdicts with reasons, and the sequential rule.

A claim orders configurations ("X forwards more than Y": chains ``[X, Y, Z]`` read X > Y > Z)
or says they are about equal ("MTU barely matters"). Each configuration is a handful of
repetitions of a *rate* (packets/s, Gbit/s, requests/s). The design, fixed before measuring
(:class:`Design`, ``params/claims.yaml``), is documented in ``docs/methodology.md``:

* **Test.** Welch's t on the logarithm of the rates (ratios are what the claims compare), chosen
  by design, never by a normality pre-test. A search's result is quantized by its goal width
  ``w`` (RFC 9971 ``relative_width``): the rate lies in an interval of relative width ``w``, so
  on the log scale a repetition carries a rounding error up to ``delta = -log(1 - w)``, counted as
  the variance of a uniform error, ``delta**2 / 12``, added to the sample variance of the logs.
  Identical repetitions are therefore never "zero variance". Tool measurements (iperf3, wrk) and
  MRR have ``w = 0``.
* **Equivalence.** TOST (two one-sided Welch tests on the logs) within ``+-log(1 + margin)``.
* **Paired claims** (``paired=True``: the two configurations measured in one lab, one right after the
  other in counterbalanced order, repetition by repetition; experiment E's directions): the same
  tests as a one-sample t on the per-repetition log-ratios ``log x_r - log y_r`` of the repetitions
  both sides have (:attr:`Sample.keys`), the resolutions' uniform errors added to their variance;
  ``n - 1`` degrees of freedom. The host's slow and fast spells then cancel within a repetition.
* **Multiplicity.** Holm over a claim's pairs (:func:`_adjust`); a pair's difference test
  (two-sided) and TOST need no adjustment among themselves (partitioning principle), so the
  chance of any wrong decision in a claim stays <= alpha (checked by simulation,
  ``tests/test_claims_simulation.py``).
* **Verdicts.** Order claims: *holds* when every pair is shown larger in the claimed direction;
  *contradicted* when some pair is shown equal within :attr:`Design.order_margin` (no practical
  difference, whether or not a difference is shown too) or shown larger the other way; *inconclusive*
  otherwise, with the minimum detectable effect at this n and the repetitions a run would likely
  need; *not testable* when no pair has two repetitions on each side. Equality claims: *holds*
  when every pair is shown within :attr:`Design.equivalence_margin`, *contradicted* when some pair
  is shown beyond it.
* **Sequential looks** (adaptive repetitions, :func:`sequential_verdict`, :func:`plan_more`): planned
  looks at ``n_k = first + k * step`` repetitions up to ``max_repetitions``; look ``k`` tests the
  first ``n_k`` repetitions of each configuration at the increment ``alpha(t_k) - alpha(t_{k-1})``
  of the Lan-DeMets Pocock-type spending function ``alpha(t) = alpha * ln(1 + (e - 1) t)``,
  ``t_k = n_k / max_repetitions``; the increments sum to at most alpha (a union bound over looks,
  valid whatever the looks' correlation and whichever claims stop first).

Pure :mod:`numpy` and :mod:`scipy.stats`; no pandas, no other nfvlab module: the measuring side
(the adaptive runner, :mod:`nfvlab.adaptive`) imports it as the analysis does.
"""
from __future__ import annotations

import contextlib
import contextvars
import math
from dataclasses import dataclass, field
from typing import Any, Hashable, Mapping, Optional, Sequence

import numpy as np
from scipy import stats as _st

__all__ = ["VERDICTS", "Design", "Plan", "Sample", "current_design", "use_design", "load_design", "order_claim", "equality_claim",
           "paired_log_ratios", "sequential_verdict", "plan_more"]

#: Verdicts of a claim, in report order.
VERDICTS = ("holds", "contradicted", "inconclusive", "metric-dependent", "not testable")
# ("metric-dependent": a paired comparison and the NDR searches disagree, each shown: nfvlab.analysis_paired.)
#: The test of a pair, as the claims table names it.
TEST_NAME = "Welch t on log rate (+ resolution)"
#: The test of a paired claim's pair (``paired=True``).
PAIRED_TEST_NAME = "paired t on log ratio per repetition (+ resolution)"
#: What ``effect_size`` is: the ratio of geometric means minus 1 (positive: the claimed larger is larger).
EFFECT_KIND = "ratio - 1"


@dataclass(frozen=True)
class Design:
    """What decides a claim; fixed before measuring (``params/claims.yaml``).

    Attributes
    ----------
    alpha : float
        Family-wise error rate of a claim: the chance of any wrong decision among its pairs.
    order_margin : float
        Order claims: a pair whose ratio is shown inside ``[1/(1+m), 1+m]`` (TOST) contradicts
        "X > Y" (no practical difference), even if it is shown larger too. A fraction, e.g. 0.05 = 5 %.
    equivalence_margin : float
        Equality claims ("about the same"): holds when every ratio is shown inside
        ``[1/(1+m), 1+m]``.
    power : float
        Power the minimum detectable effect and the repetitions needed refer to.
    n_max : int
        Largest number of repetitions per configuration the "repetitions needed" search tries;
        beyond it the table says ``> n_max``.
    """

    alpha: float = 0.05
    order_margin: float = 0.05
    equivalence_margin: float = 0.10
    power: float = 0.80
    n_max: int = 50

    def __post_init__(self):
        for name in ("alpha", "order_margin", "equivalence_margin", "power"):
            v = getattr(self, name)
            # bool is an int: `true` is no probability
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 < v < 1.0:
                raise ValueError(f"{name}: {v!r}: give a number in (0, 1)")
        if isinstance(self.n_max, bool) or not isinstance(self.n_max, int) or self.n_max < 3:
            raise ValueError(f"n_max: {self.n_max!r}: give a whole number >= 3")


_DESIGN: contextvars.ContextVar = contextvars.ContextVar("nfvlab_claims_design", default=Design())


def current_design() -> Design:
    """The design in force (:func:`use_design`); by default ``Design()``, ``params/claims.yaml``'s values."""
    return _DESIGN.get()


@contextlib.contextmanager
def use_design(design: Design):
    """Put ``design`` in force for the claims judged inside the ``with`` block (``nfvlab analyze --claims``)."""
    token = _DESIGN.set(design)
    try:
        yield design
    finally:
        _DESIGN.reset(token)


def load_design(path) -> Design:
    """The :class:`Design` of a params file (``params/claims.yaml``: its keys are the attributes)."""
    import yaml

    with open(path) as fh:
        data = yaml.safe_load(fh) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: give a mapping of {', '.join(Design.__dataclass_fields__)}")
    unknown = sorted(set(data) - set(Design.__dataclass_fields__))
    if unknown:
        raise ValueError(f"{path}: {unknown[0]}: unknown key; allowed: {', '.join(Design.__dataclass_fields__)}")
    try:
        return Design(**data)
    except ValueError as err:  # one line naming the file and the field
        raise ValueError(f"{path}: {err}") from None


@dataclass(frozen=True)
class Plan:
    """Planned looks of an adaptive run: ``first``, ``first + step``, ... repetitions, at most ``max_repetitions``.

    A fixed-n run is ``Plan(first=n, step=1, max_repetitions=n)``: one look at the full alpha.
    """

    first: int
    step: int
    max_repetitions: int

    def __post_init__(self):
        if not 2 <= self.first <= self.max_repetitions or self.step < 1:
            raise ValueError(f"plan: need 2 <= first <= max_repetitions and step >= 1, got {self}")

    @classmethod
    def fixed(cls) -> "Plan":
        """A fixed-n run: one look, at every repetition the data have, at the full alpha."""
        return cls(2, 1, 2)

    def looks(self) -> list[int]:
        """Repetitions per configuration at each look (the last is ``max_repetitions``)."""
        ns = list(range(self.first, self.max_repetitions + 1, self.step))
        return ns if ns[-1] == self.max_repetitions else [*ns, self.max_repetitions]

    def alpha_at(self, look: int, alpha: float) -> float:
        """Level of look ``look`` (0-based): the increment of the Pocock-type spending function."""
        ns = self.looks()

        def spent(n: float) -> float:
            return alpha * math.log(1.0 + (math.e - 1.0) * n / self.max_repetitions)

        return spent(ns[look]) - (spent(ns[look - 1]) if look else 0.0)


@dataclass(frozen=True)
class Sample:
    """One configuration's repetitions: positive rates and the relative resolution of each value.

    ``resolution`` is the search's goal width ``w`` (0 for a continuous measurement): the value is
    known to within a factor ``1 / (1 - w)``. ``keys``: each value's repetition (what a paired claim
    matches two configurations by); None when the values carry none. A NaN value is dropped with its key.
    """

    values: np.ndarray
    resolution: float = 0.0
    keys: Optional[np.ndarray] = None
    _log: tuple = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        v = np.asarray(self.values, dtype=float)
        keep = ~np.isnan(v)
        if self.keys is not None:
            k = np.asarray(self.keys, dtype=object)
            if k.shape != v.shape:
                raise ValueError(f"claims: {k.size} keys for {v.size} values")
            object.__setattr__(self, "keys", k[keep])
        v = v[keep]
        if np.any(v <= 0):
            raise ValueError("claims: rates must be positive (a zero-loss rate of 0 has no ratio)")
        object.__setattr__(self, "values", v)
        w = float(self.resolution or 0.0)
        if not 0.0 <= w < 1.0:
            raise ValueError(f"claims: resolution must be in [0, 1), got {w}")
        logs = np.log(v)
        var = float(logs.var(ddof=1)) if v.size >= 2 else math.nan
        delta = -math.log1p(-w)
        object.__setattr__(self, "_log", (v.size, float(logs.mean()) if v.size else math.nan,
                                          var + delta * delta / 12.0))

    @property
    def n(self) -> int:
        return self._log[0]

    def head(self, n: int) -> "Sample":
        """The first ``n`` repetitions (a look of a sequential run)."""
        return Sample(self.values[:n], self.resolution, None if self.keys is None else self.keys[:n])

    @property
    def delta2(self) -> float:
        """The variance of one value's rounding error on the log scale, ``delta**2 / 12``."""
        return math.log1p(-self.resolution) ** 2 / 12.0


def paired_log_ratios(x: Sample, y: Sample) -> np.ndarray:
    """``log x_r - log y_r`` for each repetition ``r`` both samples have (:attr:`Sample.keys`), in ``x``'s
    order; a sample without keys pairs by position."""
    kx = x.keys if x.keys is not None else np.arange(x.n)
    ky = y.keys if y.keys is not None else np.arange(y.n)
    at = {k: i for i, k in enumerate(ky)}
    both = [(i, at[k]) for i, k in enumerate(kx) if k in at]
    return np.array([math.log(x.values[i]) - math.log(y.values[j]) for i, j in both], dtype=float)


# ---------------------------------------------------------------------------
# one pair
# ---------------------------------------------------------------------------
def _welch(x: Sample, y: Sample, shift: float = 0.0, alternative: str = "two-sided") -> float:
    """p-value of Welch's t on the logs, ``mean(log x) + shift - mean(log y)`` (scipy's from-stats test)."""
    (nx, mx, vx), (ny, my, vy) = x._log, y._log
    return float(_st.ttest_ind_from_stats(mx + shift, math.sqrt(vx), nx, my, math.sqrt(vy), ny,
                                          equal_var=False, alternative=alternative).pvalue)


def _se_df(vx: float, nx, vy: float, ny):
    """Standard error of the difference of mean logs and its Welch-Satterthwaite degrees of freedom
    (``nx``, ``ny`` may be arrays)."""
    a, b = vx / nx, vy / ny
    return np.sqrt(a + b), (a + b) ** 2 / (a * a / (nx - 1) + b * b / (ny - 1))


def _power(effect: float, se, df, level: float):
    """Power of a two-sided level-``level`` t test at a true log ratio ``effect`` (noncentral t;
    ``se`` and ``df`` may be arrays)."""
    return _st.nct.sf(_st.t.ppf(1.0 - level / 2.0, df), df, abs(effect) / se)


def _mde(se: float, df: float, level: float, power: float) -> float:
    """Smallest |log ratio| a two-sided level-``level`` test detects with ``power``:
    ``(t_{1-level/2, df} + t_{power, df}) * se``, the usual closed form of the noncentral-t root."""
    return float((_st.t.ppf(1.0 - level / 2.0, df) + _st.t.ppf(power, df)) * se)


def _tost_power(effect: float, bound: float, se, df, level: float):
    """Power of TOST within ``+-bound`` at a true log ratio ``effect`` (its nearer side, noncentral t)."""
    if abs(effect) >= bound:
        return np.zeros_like(np.asarray(se, dtype=float))
    return _st.nct.sf(_st.t.ppf(1.0 - level, df), df, (bound - abs(effect)) / se)


def _needed(pair: "_Pair", bound: Optional[float], level: float, design: Design) -> Optional[int]:
    """Repetitions per configuration at which a fixed-n run would likely (``design.power``) decide the
    pair, if the observed log ratio and variances are the truth: by the difference test or, when the
    ratio lies inside ``bound``, by TOST (paired: with the log-ratios' variance). None: not within
    ``design.n_max``."""
    ns = np.arange(2, design.n_max + 1)
    if pair.paired:
        se, df = np.sqrt(pair.var_d / ns), ns - 1
    else:
        se, df = _se_df(pair.x._log[2], ns, pair.y._log[2], ns)
    effect = pair.effect
    ok = _power(effect, se, df, level) >= design.power
    if bound is not None:
        ok |= _tost_power(effect, bound, se, df, level) >= design.power
    return int(ns[ok][0]) if ok.any() else None


@dataclass
class _Pair:
    label: str
    x: Sample
    y: Sample
    tests: dict  # name -> raw p-value (Holm over the claim's tests)
    adjusted: dict = field(default_factory=dict)
    state: str = "untestable"
    effect: float = math.nan  # log ratio x / y
    n: int = 0
    levels: tuple = ()  # the two levels compared (x's, y's)
    var_d: float = math.nan  # paired: the variance of the per-repetition log-ratios (resolution included)

    @property
    def paired(self) -> bool:
        return not math.isnan(self.var_d)

    def se_df(self):
        """Standard error of the estimated log ratio and its degrees of freedom."""
        if self.paired:
            return math.sqrt(self.var_d / self.n), self.n - 1
        (_, _, vx), (_, _, vy) = self.x._log, self.y._log
        return _se_df(vx, self.x.n, vy, self.y.n)

    @property
    def ratio(self) -> float:
        return math.expm1(self.effect) if not math.isnan(self.effect) else math.nan


def _pair(label: str, x: Sample, y: Sample, bound: float, kind: str, levels: tuple = (), paired: bool = False) -> _Pair:
    if paired:
        return _paired_pair(label, x, y, bound, kind, levels)
    n = min(x.n, y.n)
    p = _Pair(label, x, y, {}, n=n, levels=levels)
    if n < 2:
        return p
    p.effect = x._log[1] - y._log[1]
    p.tests["equivalent"] = max(_welch(x, y, bound, "greater"), _welch(x, y, -bound, "less"))
    if kind == "order":
        p.tests["different"] = _welch(x, y)
    else:  # shown beyond the margin, on either side
        p.tests["beyond"] = min(1.0, 2.0 * min(_welch(x, y, -bound, "greater"), _welch(x, y, bound, "less")))
    return p


def _paired_pair(label: str, x: Sample, y: Sample, bound: float, kind: str, levels: tuple) -> _Pair:
    """:func:`_pair` on the per-repetition log-ratios (:func:`paired_log_ratios`): one-sample t tests."""
    d = paired_log_ratios(x, y)
    p = _Pair(label, x, y, {}, n=int(d.size), levels=levels)
    if d.size < 2:
        return p
    p.effect = float(d.mean())
    p.var_d = float(d.var(ddof=1)) + x.delta2 + y.delta2
    se, df = p.se_df()
    se = max(se, 1e-12)  # identical ratios, continuous rates: a tiny spread, not a division by zero

    def t_p(shift: float, alternative: str) -> float:  # H0: the mean log ratio + shift is 0
        t = (p.effect + shift) / se
        return float({"greater": _st.t.sf(t, df), "less": _st.t.cdf(t, df)}.get(alternative, 2 * _st.t.sf(abs(t), df)))

    p.tests["equivalent"] = max(t_p(bound, "greater"), t_p(-bound, "less"))
    if kind == "order":
        p.tests["different"] = t_p(0.0, "two-sided")
    else:
        p.tests["beyond"] = min(1.0, 2.0 * min(t_p(-bound, "greater"), t_p(bound, "less")))
    return p


def _holm(pvals: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjustment: sorted ascending, ``p_adj(i) = min(1, max_{j<=i} (m - j + 1) p(j))``."""
    q = np.asarray(pvals, dtype=float)
    m = q.size
    order = np.argsort(q, kind="stable")
    out = np.empty(m)
    out[order] = np.minimum(1.0, np.maximum.accumulate(q[order] * (m - np.arange(m))))
    return out


def _adjust(pairs: list[_Pair]) -> None:
    """Holm over the claim's pairs; within a pair its tests share the pair's Holm multiplier.

    A pair's p-value is the smallest of its tests' (the difference test and TOST): within a pair
    the tests are one level-``a`` test by the partitioning principle (the true log ratio lies in
    exactly one of ``<= -L``, ``(-L, 0)``, ``0``, ``(0, L)``, ``>= L``, and each of these is
    rejected wrongly with probability <= ``a``), so they need no adjustment among themselves.
    """
    testable = [p for p in pairs if p.tests]
    if not testable:
        return
    best = np.array([min(p.tests.values()) for p in testable])
    for p, b, a in zip(testable, best, _holm(best)):
        factor = a / b if b > 0 else 1.0
        p.adjusted = {k: float(min(1.0, v * factor)) for k, v in p.tests.items()}


# ---------------------------------------------------------------------------
# claims
# ---------------------------------------------------------------------------
def _fmt_ratio(r: float) -> str:
    """``+12.3%`` below a factor 2, else the factor (``x9.1``, ``x1.2e+04``)."""
    return f"{r:+.1%}" if r < 1.0 else f"x{1.0 + r:.3g}"


def _result(verdict: str, reason: str, pick: Optional[_Pair], p: float, pairs: list[_Pair], detail: str,
            mde: float = math.nan, n_needed: Optional[int] = None) -> dict:
    return {"verdict": verdict, "reason": reason, "pair": pick.label if pick else None,
            "test": ((PAIRED_TEST_NAME if pick.paired else TEST_NAME)
                     if pick is not None and pick.state != "untestable" else None),
            "p_adjusted": p, "effect_size": pick.ratio if pick else math.nan,
            "effect_size_kind": EFFECT_KIND if pick is not None and pick.state != "untestable" else None,
            "n": pick.n if pick else 0, "mde": mde, "n_needed": n_needed, "detail": detail}


def _inconclusive(open_pairs: list[_Pair], m_pairs: int, alpha: float, design: Design, bound: Optional[float],
                  what: str, pairs: list[_Pair], detail: str, explain: bool = True) -> dict:
    """Inconclusive: the open pair needing the most repetitions; its MDE at this n and the n it needs.

    Both at level ``alpha / m_pairs`` (Holm's first step: what deciding any pair of the claim
    surely suffices for), two-sided, at :attr:`Design.power`, from the pair's observed variances
    (resolution included).
    """
    level = alpha / max(m_pairs, 1)
    info = []
    for p in open_pairs:
        if p.state == "untestable" or not explain:
            info.append((math.inf, p, math.nan, None))
            continue
        se, df = p.se_df()
        mde = math.expm1(_mde(se, df, level, design.power))
        need = _needed(p, bound, level, design)
        info.append((need if need is not None else design.n_max + 1, p, mde, need))
    _, pick, mde, need = max(info, key=lambda t: (t[0], -open_pairs.index(t[1])))
    if pick.state == "untestable":
        reason = f"{pick.label}: fewer than 2 repetitions on a side (n = {pick.n})"
    else:
        reason = (f"{what}; {pick.label}: ratio {_fmt_ratio(pick.ratio)} at n = {pick.n}; detectable "
                  f"(power {design.power:.0%}): {_fmt_ratio(mde)} either way; "
                  + (f"about {need} repetitions per configuration would likely decide it" if need
                     else f"more than {design.n_max} repetitions per configuration would be needed"))
    p_adj = min((v for v in pick.adjusted.values()), default=math.nan)
    out = _result("inconclusive", reason, pick, p_adj, pairs, detail, mde, need)
    # The open pairs, for the sequential rule (:func:`plan_more`): levels, state, repetitions needed
    # (None: beyond design.n_max, or not estimated: untestable, or ``explain`` off).
    out["open"] = [(p.levels, p.state, nd) for _, p, _, nd in info]
    return out


def _detail(pairs: list[_Pair]) -> str:
    def one(p: _Pair) -> str:
        if p.state == "untestable":
            return f"{p.label}: not testable (n = {p.n})"
        ps = ", ".join(f"p_{k} = {v:.3g}" for k, v in p.adjusted.items())
        return f"{p.label}: {p.state} (ratio {_fmt_ratio(p.ratio)}, {ps}, n = {p.n})"
    return "; ".join(one(p) for p in pairs) or "no pair"


def _tested(samples: Mapping[Hashable, Sample], pairs: Sequence[tuple], sep: str, bound: float,
            kind: str, paired: bool = False) -> list[_Pair]:
    """The claim's distinct pairs, tested and Holm-adjusted (a level without a sample has ``n = 0``)."""
    empty = Sample(np.array([]))
    out = [_pair(f"{a}{sep}{b}", samples.get(a, empty), samples.get(b, empty), bound, kind, (a, b), paired)
           for a, b in dict.fromkeys(pairs)]
    _adjust(out)
    return out


def _untestable(pairs: list[_Pair], detail: str) -> dict:
    return _result("not testable", "no pair has 2 repetitions on each side", pairs[0] if pairs else None,
                   math.nan, pairs, detail)


def _holds_or_open(pairs: list[_Pair], holds: tuple[str, str, str], what: str, alpha: float, design: Design,
                   bound: float, detail: str, explain: bool) -> dict:
    """*holds* when every pair is in state ``holds[0]`` (deciding pair: the largest adjusted p of test
    ``holds[1]``, reason starting ``holds[2]``), else *inconclusive* (:func:`_inconclusive`)."""
    state, test, text = holds
    if all(p.state == state for p in pairs):
        pick = max(pairs, key=lambda p: p.adjusted[test])
        return _result("holds", f"{text} {pick.label}: ratio {_fmt_ratio(pick.ratio)}", pick, pick.adjusted[test],
                       pairs, detail)
    open_pairs = [p for p in pairs if p.state in ("undecided", "untestable")]
    return _inconclusive(open_pairs, sum(bool(p.tests) for p in pairs), alpha, design, bound, what, pairs, detail,
                         explain)


def order_claim(samples: Mapping[Hashable, Sample], chains: Sequence[Sequence[Any]], design: Design = Design(),
                alpha: Optional[float] = None, explain: bool = True, paired: bool = False) -> dict:
    """Judge "each chain is in decreasing order" (``[[X, Y, Z]]``: X > Y > Z; adjacent pairs tested).

    Parameters
    ----------
    samples : mapping
        Level -> :class:`Sample` (a level missing from it counts as ``n = 0``).
    chains : list of level lists
        Each from the claimed largest to the smallest.
    design : Design
        Margins, power, ``n_max``; ``design.alpha`` unless ``alpha`` is given (a sequential look's level).
    explain : bool
        False: an inconclusive verdict without ``mde`` / ``n_needed`` (a sequential look's replay).
    paired : bool
        The levels were measured repetition by repetition side by side: each pair is judged on its
        per-repetition log-ratios (:func:`paired_log_ratios`, ``n`` = the repetitions both sides have).

    Returns
    -------
    dict
        ``verdict`` (:data:`VERDICTS`), ``reason`` (one sentence), for the deciding pair ``pair``
        (``"X > Y"``), ``test``, ``p_adjusted`` (Holm over the claim's tests), ``effect_size`` (ratio
        of geometric means - 1, positive: the claimed larger is larger), ``effect_size_kind``, ``n``
        (the smaller sample); ``mde`` (inconclusive: smallest ratio - 1 detectable at this n) and
        ``n_needed`` (inconclusive: repetitions per configuration that would likely decide, None if
        more than ``design.n_max``); ``detail`` spells out every pair.
    """
    alpha = design.alpha if alpha is None else alpha
    bound = math.log1p(design.order_margin)
    pairs = _tested(samples, [(hi, lo) for c in chains for hi, lo in zip(c, c[1:])], " > ", bound, "order", paired)
    for p in pairs:
        if p.n < 2:
            continue
        sig = p.adjusted["different"] < alpha
        # Equivalence first: a ratio shown inside the margin is no practical difference even when a
        # difference is shown too; else a true ratio inside the margin flips between "holds" (a small
        # difference shown) and "contradicted" (only equivalence shown) from run to run.
        p.state = ("no practical difference" if p.adjusted["equivalent"] < alpha
                   else "supports" if sig and p.effect > 0 else "contradicts" if sig and p.effect < 0
                   else "undecided")
    detail, states, margin = _detail(pairs), [p.state for p in pairs], f"+-{design.order_margin:.0%}"
    if not pairs or all(s == "untestable" for s in states):
        return _untestable(pairs, detail)
    against = [p for p in pairs if p.state in ("contradicts", "no practical difference")]
    if against:
        pick = min(against, key=lambda p: (p.state != "contradicts",
                                           p.adjusted["different" if p.state == "contradicts" else "equivalent"]))
        if pick.state == "contradicts":
            reason = f"{pick.label} is reversed: ratio {_fmt_ratio(pick.ratio)}, significant"
            p_adj = pick.adjusted["different"]
        else:
            reason = (f"{pick.label}: no practical difference, ratio {_fmt_ratio(pick.ratio)} shown within "
                      f"{margin} (TOST)")
            p_adj = pick.adjusted["equivalent"]
        return _result("contradicted", reason, pick, p_adj, pairs, detail)
    return _holds_or_open(pairs, ("supports", "different", "every pair larger in the claimed order; weakest"),
                          f"neither shown larger nor within {margin}", alpha, design, bound, detail, explain)


def equality_claim(samples: Mapping[Hashable, Sample], pairs: Sequence[tuple[Any, Any]], design: Design = Design(),
                   alpha: Optional[float] = None, explain: bool = True, paired: bool = False) -> dict:
    """Judge "each pair is about equal": ratio within ``[1/(1+m), 1+m]``, ``m`` = :attr:`Design.equivalence_margin`.

    *holds*: every pair shown inside (TOST); *contradicted*: some pair shown outside (one-sided
    Welch tests beyond each bound, the smaller doubled); Holm over all of them. Pairs are
    ``(a, b)``, labelled ``"a ~ b"``; ``paired`` and the returned dict are :func:`order_claim`'s.
    """
    alpha = design.alpha if alpha is None else alpha
    bound = math.log1p(design.equivalence_margin)
    ps = _tested(samples, [tuple(p) for p in pairs], " ~ ", bound, "equality", paired)
    for p in ps:
        if p.n >= 2:
            p.state = ("equivalent" if p.adjusted["equivalent"] < alpha else
                       "different" if p.adjusted["beyond"] < alpha else "undecided")
    detail, states, margin = _detail(ps), [p.state for p in ps], f"+-{design.equivalence_margin:.0%}"
    if not ps or all(s == "untestable" for s in states):
        return _untestable(ps, detail)
    if "different" in states:
        pick = min((p for p in ps if p.state == "different"), key=lambda p: p.adjusted["beyond"])
        return _result("contradicted", f"{pick.label}: ratio {_fmt_ratio(pick.ratio)}, shown beyond {margin}",
                       pick, pick.adjusted["beyond"], ps, detail)
    return _holds_or_open(ps, ("equivalent", "equivalent", f"every pair shown within {margin}; widest"),
                          f"neither shown within nor beyond {margin}", alpha, design, bound, detail, explain)


# ---------------------------------------------------------------------------
# sequential looks (adaptive repetitions)
# ---------------------------------------------------------------------------
def _judge(kind: str, samples: Mapping[Hashable, Sample], spec: Sequence, design: Design, alpha: float,
           explain: bool, paired: bool = False) -> dict:
    if kind == "order":
        return order_claim(samples, spec, design, alpha, explain, paired)
    if kind == "equality":
        return equality_claim(samples, spec, design, alpha, explain, paired)
    raise ValueError(f"claims: kind must be 'order' or 'equality', got {kind!r}")


def sequential_verdict(kind: str, samples: Mapping[Hashable, Sample], spec: Sequence, plan: Plan,
                       design: Design = Design(), explain: bool = True, paired: bool = False) -> dict:
    """The verdict of a claim measured with planned looks (:class:`Plan`), replaying the looks.

    Look ``k`` judges the first ``n_k`` repetitions of each configuration at
    :meth:`Plan.alpha_at`; the first look that decides (holds / contradicted) gives the verdict.
    Looks the data do not reach (no level has ``n_k`` repetitions) are not taken; at a look taken, a
    level with fewer than ``n_k`` enters with all it has (the runner adds repetitions only to the
    levels of undecided pairs: :func:`plan_more`). Each look's test keeps its level whatever data
    it reads, so the spending bound holds as for complete looks. The
    result is :func:`order_claim`'s dict plus ``look`` (0-based; the last look taken when undecided)
    and ``alpha_look`` (its level). A fixed-n run (one look) is judged at the full alpha, exactly as
    :func:`order_claim` / :func:`equality_claim`. ``explain``: as theirs, for the look returned;
    ``paired``: as theirs.
    """
    levels = list(dict.fromkeys(v for s in spec for v in s))
    have = max((samples[v].n if v in samples else 0) for v in levels) if levels else 0
    looks = plan.looks()
    if len(looks) == 1:  # a fixed-n run: every repetition, the full alpha
        return {**_judge(kind, samples, spec, design, design.alpha, explain, paired), "look": 0,
                "alpha_look": design.alpha}
    last = max([0] + [k for k, n_k in enumerate(looks) if n_k <= have])
    for k in range(last + 1):
        a_k = plan.alpha_at(k, design.alpha)
        out = _judge(kind, {v: s.head(looks[k]) for v, s in samples.items()}, spec, design, a_k,
                     explain and k == last, paired)
        if out["verdict"] in ("holds", "contradicted", "not testable") or k == last:
            return {**out, "look": k, "alpha_look": a_k}


def plan_more(claims: Sequence[tuple[str, Sequence]], samples: Mapping[Hashable, Sample], plan: Plan,
              design: Design = Design(), give_up_above: Optional[int] = None,
              given_up: Optional[list] = None) -> dict:
    """Which configurations need more repetitions, and why: the sequential rule of an adaptive run.

    Only the levels of a claim's open pairs get more (a pair already decided needs none). With
    ``give_up_above``, a claim none of whose open pairs looks decidable within that many repetitions
    per configuration (each pair's ``n_needed`` from the data so far at this look's level, as its
    inconclusive row gives it) gets no more: non-binding futility, which never raises the chance of
    a wrong decision (it only forgoes looks; every look keeps its level).

    Parameters
    ----------
    claims : list of (kind, spec) or (kind, spec, paired)
        ``("order", chains)`` or ``("equality", pairs)``; levels are configuration keys; ``paired``
        (default False) as :func:`sequential_verdict`'s.
    samples : mapping
        Configuration -> :class:`Sample` measured so far.
    plan : Plan
        The planned looks.
    give_up_above : int, optional
        Repetitions per configuration beyond which a claim is given up (None: never).
    given_up : list, optional
        Appended with one reason per claim given up (``"<pair>: about N repetitions needed"``).

    Returns
    -------
    dict
        Configuration -> ``(target_n, reason)``: repetitions it should have before the next look
        (the next planned ``n_k`` above what its undecided claims have) and which claims need them.
        Empty: every claim is decided, not testable, given up or at its last look.
    """
    want: dict = {}
    looks = plan.looks()
    for kind, spec, *paired in claims:
        v = sequential_verdict(kind, samples, spec, plan, design, explain=give_up_above is not None,
                               paired=bool(paired and paired[0]))
        if v["verdict"] in ("holds", "contradicted", "not testable") or v["look"] + 1 >= len(looks):
            continue
        open_pairs = v.get("open") or [(tuple(pair), "undecided", None) for pair in _pairs_of(kind, spec)]
        if give_up_above is not None:
            # an untestable pair (n < 2 on a side) has no estimate: it is never the reason to give up
            hopeful = [x for x in open_pairs if x[1] == "untestable" or (x[2] is not None and x[2] <= give_up_above)]
            if not hopeful:
                if given_up is not None:
                    given_up.append(f"{v['pair']}: " + (f"about {v['n_needed']} repetitions needed"
                                                        if v.get("n_needed") else
                                                        f"more than {design.n_max} repetitions needed"))
                continue
            open_pairs = hopeful
        target = looks[v["look"] + 1]
        why = f"look {v['look'] + 1}: {v['pair']} undecided"
        for lvl in dict.fromkeys(x for levels, _, _ in open_pairs for x in levels):
            if samples[lvl].n < target if lvl in samples else False:
                n0, reasons = want.get(lvl, (0, []))
                want[lvl] = (max(n0, target), [*reasons, why])
    return {k: (n, "; ".join(dict.fromkeys(r))) for k, (n, r) in want.items()}


def _pairs_of(kind: str, spec: Sequence) -> list[tuple]:
    """The pairs a claim tests: adjacent levels of each chain (order), the pairs themselves (equality)."""
    if kind == "order":
        return list(dict.fromkeys((hi, lo) for c in spec for hi, lo in zip(c, c[1:])))
    return list(dict.fromkeys(tuple(p) for p in spec))
