"""Paired comparisons on a noisy host: randomized ABBA blocks and a sequential verdict on their ratio.

A virtual machine's CPUs change speed in spells of a fraction of a second to seconds
(``docs/measurement.md``, "The host's own speed"), so two configurations measured minutes apart
differ by the host's spell as much as by themselves. Trials close together in time share the
spell. The design (``docs/methodology.md``; anchors: randomized multiple interleaved trials,
Abedi & Brecht 2017; Chromium Pinpoint's paired arms; Laaber et al. 2019):

* **Blocks.** Both arms up at once; a block is four short trials, arms in ``ABBA`` or ``BAAB``
  order drawn at random (:func:`schedule`): a linear drift of the host's speed inside a block
  cancels, and the order cannot favour an arm.
* **Statistic.** A block's paired log-ratio ``d`` (:func:`block_log_ratio`: ``mean(log a) -
  mean(log b)`` of its trials' rates; or ``log(NDR_a / NDR_b)`` of its two searches); the blocks' ``d``
  are treated as independent (blocks are seconds apart, past most of the host's memory) and judged
  by their 20 % trimmed mean (:func:`trimmed_t`: Tukey-McLaughlin's standard error from the
  winsorized SD, ``h - 2`` degrees of freedom, ``h`` the blocks kept; Wilcox, *Introduction to
  Robust Estimation and Hypothesis Testing*, 4.4): a block that a spell of the host hit on one arm
  only (an NDR search of one arm landing in a slow spell) moves a mean, not a trimmed mean. Below 5
  blocks nothing is trimmed (a plain one-sample t).
* **Verdict** (:func:`paired_test`): *larger* / *smaller* when the two-sided test rejects a ratio of
  1, *equivalent* when TOST shows the ratio inside ``[1/(1+m), 1+m]``, else *undecided*, with the
  difference detectable at this n and the blocks a decision would likely need.
* **Sequential looks** (:func:`sequential`): blocks are added in looks ``first, first + step, ...``
  up to ``max_blocks``; look ``k`` spends the increment of the Pocock-type function
  ``alpha ln(1 + (e - 1) t)`` (:class:`nfvlab.claims.Plan`), so the chance of any wrong decision
  over all looks stays within alpha (checked by simulation with spells in the noise,
  ``tests/test_paired.py``).

Pure numpy and scipy.stats, like :mod:`nfvlab.claims`; the measuring side passes the blocks in.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import numpy as np
from scipy import stats as _st

from nfvlab.claims import Plan

__all__ = ["BlockPlan", "PairedResult", "schedule", "block_log_ratio", "trimmed_t", "paired_test", "sequential"]

#: Share of the blocks trimmed from each end before the mean (Wilcox's default for the trimmed t).
TRIM = 0.2

#: What :func:`paired_test` can say of arm A against arm B.
PAIRED_VERDICTS = ("larger", "smaller", "equivalent", "undecided")


@dataclass(frozen=True)
class BlockPlan:
    """Looks of a paired comparison: ``first``, ``first + step``, ... blocks, at most ``max_blocks``.

    Attributes
    ----------
    first, step, max_blocks : int
        Blocks at the first look, added per look, and the cap (a block is four trials).
    alpha : float
        The chance of any wrong verdict over all looks.
    margin : float
        Equivalence margin: the ratio shown inside ``[1/(1+margin), 1+margin]`` is "equivalent".
    power : float
        Power the detectable difference and the blocks needed refer to.
    give_up_above : int, optional
        Non-binding futility (:meth:`futile`): from the second look on, an undecided comparison
        needing more blocks than this is given up. None: never.
    """

    first: int = 6
    step: int = 4
    max_blocks: int = 30
    alpha: float = 0.05
    margin: float = 0.05
    power: float = 0.80
    give_up_above: Optional[int] = None

    def __post_init__(self):
        Plan(self.first, self.step, self.max_blocks)  # its checks: 2 <= first <= max, step >= 1
        for name in ("alpha", "margin", "power"):
            if not 0.0 < getattr(self, name) < 1.0:
                raise ValueError(f"{name}: {getattr(self, name)!r}: give a number in (0, 1)")

    @property
    def looks(self) -> list[int]:
        return Plan(self.first, self.step, self.max_blocks).looks()

    def alpha_at(self, look: int) -> float:
        """The level look ``look`` (0-based) spends."""
        return Plan(self.first, self.step, self.max_blocks).alpha_at(look, self.alpha)

    def futile(self, look: int, result: "PairedResult") -> bool:
        """Whether look ``look`` (0-based) gives the comparison up: undecided at its second look or
        later, with looks still to come, needing more than :attr:`give_up_above` blocks (or more than
        can be counted). One look alone is not trusted with it (its SD from a handful of blocks); the
        last look is the cap, not futility (a comparison capped at two looks, the A/A control's, ends
        there as ``cap``)."""
        return (self.give_up_above is not None and 1 <= look < len(self.looks) - 1
                and result.verdict == "undecided"
                and (result.blocks_needed is None or result.blocks_needed > self.give_up_above))


@dataclass(frozen=True)
class PairedResult:
    """A paired comparison of arm A with arm B at one look.

    Attributes
    ----------
    blocks : int
        Blocks judged.
    ratio, ci_low, ci_high : float
        Ratio A / B (the exp of the blocks' trimmed mean log-ratio) and its two-sided interval at the
        look's level.
    p_different : float
        Two-sided p of "the ratio is 1" (trimmed t on the blocks' log-ratios, :func:`trimmed_t`).
    p_equivalent : float
        TOST p of "the ratio lies outside the margin" (the larger of the two one-sided p).
    level : float
        The alpha this look spent.
    verdict : str
        One of :data:`PAIRED_VERDICTS`.
    detectable : float
        Ratio - 1 detectable (two-sided, at the plan's power) with these blocks at this level.
    blocks_needed : Optional[int]
        Blocks an undecided comparison would likely need to be decided (difference or equivalence,
        whichever its ratio points to) at the full alpha; None when decided or beyond 1000.
    """

    blocks: int
    ratio: float
    ci_low: float
    ci_high: float
    p_different: float
    p_equivalent: float
    level: float
    verdict: str
    detectable: float
    blocks_needed: Optional[int]


def schedule(blocks: int, rng: random.Random) -> list[str]:
    """The order of each block's four trials, ``"ABBA"`` or ``"BAAB"``, drawn at random."""
    return [rng.choice(("ABBA", "BAAB")) for _ in range(blocks)]


def block_log_ratio(a: Sequence[float], b: Sequence[float]) -> float:
    """``mean(log a) - mean(log b)``: one block's paired log-ratio of arm A's and arm B's rates (> 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):  # a zero or negative rate: refused below
        la, lb = np.log(np.asarray(a, dtype=float)), np.log(np.asarray(b, dtype=float))
    if not (np.all(np.isfinite(la)) and np.all(np.isfinite(lb))) or la.size == 0 or lb.size == 0:
        raise ValueError(f"paired: a block needs positive rates of both arms, got {list(a)} and {list(b)}")
    return float(la.mean() - lb.mean())


def _kept(n, trim: float):
    """Blocks kept of ``n`` after trimming ``floor(trim n)`` from each end (works on arrays of n)."""
    return n - 2 * np.floor(trim * np.asarray(n) + 1e-9).astype(int)


def trimmed_t(d: Sequence[float], trim: float = TRIM) -> tuple[float, float, float, float]:
    """The trimmed mean of ``d``, its standard error, degrees of freedom and the winsorized SD.

    ``g = floor(trim n)`` values are cut from each end; the standard error is Tukey-McLaughlin's
    ``sqrt((n - 1) s_w^2 / (h (h - 1)))`` with ``s_w`` the SD of ``d`` winsorized at the same ``g``
    and ``h = n - 2 g`` the values kept; ``h - 2`` degrees of freedom, one fewer than the textbook's
    ``h - 1``: at the few blocks kept here that t runs liberal (simulated with the host's spells, looks
    at 6, 10, 14, 18 blocks: 5.4 % false positives at alpha 5 %, against 2.8 % with ``h - 2`` and
    3.9 % for the plain t; tests/test_paired.py). ``g = 0``: the mean, ``s / sqrt(n)`` and ``n - 1``
    (a plain one-sample t)."""
    x = np.sort(np.asarray(d, dtype=float))
    n = x.size
    h = int(_kept(n, trim))
    g = (n - h) // 2
    if h < 2:
        raise ValueError(f"paired: trimming {trim} of {n} blocks leaves fewer than two")
    sw = float(np.clip(x, x[g], x[n - g - 1]).std(ddof=1))
    sw = max(sw, 1e-12)  # identical blocks: a tiny spread, not a division by zero
    return float(x[g:n - g].mean()), sw * math.sqrt((n - 1) / (h * (h - 1))), (h - 1 if g == 0 else h - 2), sw


def _needed(sw: float, effect: float, level: float, power: float, equivalence: Optional[float],
            trim: float = TRIM) -> Optional[int]:
    """Blocks at which a trimmed t (:func:`trimmed_t`) with this winsorized SD likely decides
    ``effect`` (log), or shows it inside +-``equivalence`` (log) when given; None beyond 1000 blocks."""
    n = np.arange(3, 1001)
    h = _kept(n, trim)
    df, se = np.where(h == n, h - 1, h - 2), sw * np.sqrt((n - 1) / (h * (h - 1)))
    if equivalence is not None:
        achieved = _st.t.cdf((equivalence - abs(effect)) / se - _st.t.ppf(1 - level, df), df)
    else:
        achieved = _st.t.cdf(abs(effect) / se - _st.t.ppf(1 - level / 2, df), df)
    hits = np.nonzero(achieved >= power)[0]
    return int(n[hits[0]]) if hits.size else None


def paired_test(log_ratios: Sequence[float], *, level: float, margin: float, power: float = 0.80,
                trim: float = TRIM) -> PairedResult:
    """The verdict on A against B from the blocks' paired log-ratios (:func:`block_log_ratio`) at
    ``level``, by their trimmed mean (:func:`trimmed_t`; ``trim=0``: the plain mean and t)."""
    d = np.asarray(log_ratios, dtype=float)
    n = d.size
    if n < 2:
        raise ValueError("paired: at least two blocks are needed")
    mean, se, df, sw = trimmed_t(d, trim)
    t = mean / se
    p_diff = float(2 * _st.t.sf(abs(t), df))
    bound = math.log1p(margin)
    p_eq = float(max(_st.t.sf((mean + bound) / se, df), _st.t.cdf((mean - bound) / se, df)))
    half = float(_st.t.ppf(1 - level / 2, df)) * se
    if p_diff < level:
        verdict = "larger" if mean > 0 else "smaller"
    elif p_eq < level:
        verdict = "equivalent"
    else:
        verdict = "undecided"
    detectable = math.expm1((_st.t.ppf(1 - level / 2, df) + _st.t.ppf(power, df)) * se)
    needed = None
    if verdict == "undecided":
        toward_equal = abs(mean) < bound / 2
        needed = _needed(sw, mean if not toward_equal else 0.0, level, power, bound if toward_equal else None, trim)
    return PairedResult(n, math.exp(mean), math.exp(mean - half), math.exp(mean + half), p_diff, p_eq, level,
                        verdict, detectable, needed)


def sequential(measure_block: Callable[[int], float], plan: BlockPlan = BlockPlan()) -> list[PairedResult]:
    """Measure blocks (``measure_block(i)`` returns block ``i``'s paired log-ratio) look by look and
    stop at the first decided look, a futile one (:meth:`BlockPlan.futile`) or the cap; returns every
    look's result, the last the verdict."""
    d: list[float] = []
    looks = []
    for k, n in enumerate(plan.looks):
        while len(d) < n:
            d.append(measure_block(len(d)))
        looks.append(paired_test(d, level=plan.alpha_at(k), margin=plan.margin, power=plan.power))
        if looks[-1].verdict != "undecided" or plan.futile(k, looks[-1]):
            break
    return looks
