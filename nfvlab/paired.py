"""Paired comparisons on a noisy host: randomized ABBA blocks and a sequential verdict on their ratio.

A virtual machine's CPUs change speed in spells of a fraction of a second to seconds
(``docs/measurement.md``, "The host's own speed"), so two configurations measured minutes apart
differ by the host's spell as much as by themselves. Trials close together in time share the
spell. The design (``docs/methodology.md``; anchors: randomized multiple interleaved trials,
Abedi & Brecht 2017; Chromium Pinpoint's paired arms; Laaber et al. 2019):

* **Blocks.** Both arms up at once; a block is four short trials, arms in ``ABBA`` or ``BAAB``
  order drawn at random (:func:`schedule`): a linear drift of the host's speed inside a block
  cancels, and the order cannot favour an arm.
* **Statistic.** A block's paired log-ratio ``d = mean(log a) - mean(log b)`` of its trials' rates
  (:func:`block_log_ratio`); the blocks' ``d`` are treated as independent (blocks are seconds
  apart, past most of the host's memory) and judged by a one-sample t on their mean.
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

__all__ = ["BlockPlan", "PairedResult", "schedule", "block_log_ratio", "paired_test", "sequential"]

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
    """

    first: int = 6
    step: int = 4
    max_blocks: int = 30
    alpha: float = 0.05
    margin: float = 0.05
    power: float = 0.80

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


@dataclass(frozen=True)
class PairedResult:
    """A paired comparison of arm A with arm B at one look.

    Attributes
    ----------
    blocks : int
        Blocks judged.
    ratio, ci_low, ci_high : float
        Geometric-mean ratio A / B of the blocks' trials and its two-sided interval at the look's level.
    p_different : float
        Two-sided p of "the ratio is 1" (one-sample t on the blocks' log-ratios).
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


def _needed(sd: float, effect: float, level: float, power: float, equivalence: Optional[float]) -> Optional[int]:
    """Blocks at which a one-sample t with this SD likely decides ``effect`` (log), or shows it inside
    +-``equivalence`` (log) when given; None beyond 1000 blocks."""
    n = np.arange(3, 1001)
    df, se = n - 1, sd / np.sqrt(n)
    if equivalence is not None:
        achieved = _st.t.cdf((equivalence - abs(effect)) / se - _st.t.ppf(1 - level, df), df)
    else:
        achieved = _st.t.cdf(abs(effect) / se - _st.t.ppf(1 - level / 2, df), df)
    hits = np.nonzero(achieved >= power)[0]
    return int(n[hits[0]]) if hits.size else None


def paired_test(log_ratios: Sequence[float], *, level: float, margin: float, power: float = 0.80) -> PairedResult:
    """The verdict on A against B from the blocks' paired log-ratios (:func:`block_log_ratio`) at ``level``."""
    d = np.asarray(log_ratios, dtype=float)
    n = d.size
    if n < 2:
        raise ValueError("paired: at least two blocks are needed")
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    sd = max(sd, 1e-12)  # identical blocks: a tiny spread, not a division by zero
    se, df = sd / math.sqrt(n), n - 1
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
        needed = _needed(sd, mean if not toward_equal else 0.0, level, power, bound if toward_equal else None)
    return PairedResult(n, math.exp(mean), math.exp(mean - half), math.exp(mean + half), p_diff, p_eq, level,
                        verdict, detectable, needed)


def sequential(measure_block: Callable[[int], float], plan: BlockPlan = BlockPlan()) -> list[PairedResult]:
    """Measure blocks (``measure_block(i)`` returns block ``i``'s paired log-ratio) look by look and
    stop at the first decided look or at the cap; returns every look's result, the last the verdict."""
    d: list[float] = []
    looks = []
    for k, n in enumerate(plan.looks):
        while len(d) < n:
            d.append(measure_block(len(d)))
        looks.append(paired_test(d, level=plan.alpha_at(k), margin=plan.margin, power=plan.power))
        if looks[-1].verdict != "undecided":
            break
    return looks
