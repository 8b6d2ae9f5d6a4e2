"""Claims decided by the paired phase: the ``paired`` notes of a run (:mod:`nfvlab.pairing`) as claims rows.

An order claim "a > b > c" is decided from the paired notes of its neighbouring pairs, re-judged by Holm's
step-down over the claim's measured pairs (:func:`holm`): each pair's recorded blocks at ``alpha / m``, the
rest at ``alpha / (m - r)`` once ``r`` are decided, with that level's Pocock-type spending at the last look
the blocks reached. The measuring side (:mod:`nfvlab.pairing`) still stops each pair at its Bonferroni
share: the re-judging is valid whatever look a pair stopped at; a pair undecided at its share just has no
more blocks than that share's looks gave it. The claim is:

* **contradicted** when a pair came out *smaller* or *equivalent* (shown inside the margin: no practical
  difference, even if a difference is shown too: :func:`practical`), naming the first such pair;
* **holds** when every pair came out *larger*;
* **inconclusive** otherwise, with the detectable difference and the blocks a decision would need;
* **metric-dependent** when a pair's paired ratio and its NDR ratio (the repetitions' searches, Welch
  on log NDR, 95 %) are each shown on opposite sides of 1: the two measurements disagree, and the claim
  is not decided either way.

A pair the paired phase left out because an arm's NDR is the generator's is read from the searches as a
bound (:func:`_bound_link`: a generator-limited NDR is a lower bound of the DUT's), the claim's other
pairs staying with their paired verdicts; neither it nor a note without its blocks (which keeps its
recorded verdict) is re-judged. A claim none of whose pairs was measured in paired blocks (a lab that
realizes one scenario at a time) stays with the NDR searches (:func:`nfvlab.analysis.claim_rows`).
The A/A control (:func:`control_rows`) is a claim of its own: "no difference" holds when its ratio is
shown inside the margin (equivalence first, as for the claims: :func:`practical`), is contradicted when
it is shown different and not inside the margin, and is inconclusive otherwise.
"""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Mapping, Optional, Sequence, Union

import numpy as np
from scipy import stats as _st

from nfvlab import results
from nfvlab.paired import BlockPlan, paired_test

PathLike = Union[str, Path]

__all__ = ["PAIRED_TEST", "paired_notes", "pairs_of", "paired_for", "holm", "practical", "paired_claim",
           "control_rows", "host_noise"]

#: The test of a paired pair, as the claims table names it.
PAIRED_TEST = ("paired blocks: trimmed t on the blocks' log ratio (20 %; Pocock looks; Holm over the "
               "claim's pairs)")
#: What ``effect_size`` is for a paired row.
PAIRED_EFFECT = "paired ratio - 1"
#: What a paired note says when it was measured (any other verdict: not testable).
MEASURED = ("larger", "smaller", "equivalent", "undecided")
#: The A/A control's claim, as the claims table shows it.
CONTROL_CLAIM = "A/A control: no difference between two lab instances of one configuration"


def paired_notes(records: Union[PathLike, Sequence[PathLike]], run: str = "latest") -> dict[tuple, dict]:
    """``(a, b, control)`` configuration keys -> the labels of the run's ``paired`` note (the last one),
    with the run record's ``params.paired`` under ``paired_params`` (the looks :func:`holm` re-judges at)."""
    out = {}
    for _path, recs in results.selected_runs(records, run):
        pp = next(((r.get("params") or {}).get("paired") for r in recs if r["type"] == "run"), None)
        for r in recs:
            lab = r.get("labels") or {}
            if r["type"] == "note" and lab.get("kind") == "paired":
                out[(lab.get("a"), lab.get("b"), bool(lab.get("control")))] = {**lab, "paired_params": pp}
    return out


def pairs_of(chains: Sequence[Sequence]) -> list[tuple]:
    """An order claim's neighbouring pairs ``(a, b)``, ``a`` claimed above ``b``, once each."""
    return list(dict.fromkeys((c[i], c[i + 1]) for c in chains for i in range(len(c) - 1)))


def paired_for(spec, notes: Mapping[tuple, dict]) -> dict:
    """A claim's (:class:`nfvlab.claimsets.ClaimSpec`) pairs of levels -> their paired notes (of :func:`paired_notes`)."""
    out = {}
    for a, b in pairs_of(spec.chains):
        n = notes.get((spec.config(a), spec.config(b), False))
        if n is not None:
            out[(a, b)] = n
    return out


def _ndr_interval(x: Sequence[float], y: Sequence[float], level: float = 0.05) -> Optional[tuple[float, float]]:
    """Two-sided ``1 - level`` Welch interval of the ratio of geometric means x / y (None below 2 values each)."""
    lx, ly = np.log(np.asarray(x, float)), np.log(np.asarray(y, float))
    lx, ly = lx[np.isfinite(lx)], ly[np.isfinite(ly)]
    if lx.size < 2 or ly.size < 2:
        return None
    vx, vy = lx.var(ddof=1) / lx.size, ly.var(ddof=1) / ly.size
    se = math.sqrt(vx + vy)
    if se == 0:
        return None
    df = (vx + vy) ** 2 / (vx ** 2 / (lx.size - 1) + vy ** 2 / (ly.size - 1))
    half = float(_st.t.ppf(1 - level / 2, df)) * se
    d = float(lx.mean() - ly.mean())
    return math.exp(d - half), math.exp(d + half)


def _plan_of(notes: Sequence[Optional[dict]]) -> Optional[BlockPlan]:
    """The look plan of a claim's pairs, its alpha the claim's: from the run's ``paired`` params that
    :func:`paired_notes` attaches (None without them). The claim's alpha is read there, not as a note's
    ``alpha`` x the claim's pairs: a note's share is ``alpha / family``, ``family`` the most pairs of any
    claim the pair belongs to among the configurations the runner measured (:func:`nfvlab.claimsets.
    compared_pairs`), which need not be this claim's pairs as the analysis counts them."""
    pp = next((n["paired_params"] for n in notes if n is not None and n.get("paired_params")), None)
    if not pp:
        return None
    return BlockPlan(int(pp["first_blocks"]), int(pp["step"]), int(pp["max_blocks"]), alpha=float(pp["alpha"]),
                     margin=float(pp["margin"]))


def _last_look(note: dict, plan: BlockPlan) -> Optional[int]:
    """The last look (0-based) ``note``'s recorded blocks reach (None: no blocks, or fewer than the first look)."""
    n = len(note.get("block_log_ratios") or ())
    looks = [k for k, at in enumerate(plan.looks) if at <= n]
    return looks[-1] if looks else None


def _judged(note: dict, plan: BlockPlan, level: float) -> dict:
    """``note`` re-judged at ``level`` (the pair's alpha): every recorded block, at the last look they reach,
    at ``level``'s Pocock share of that look. Valid whichever look is last (the looks' shares sum to at
    most ``level``), so blocks measured past a look where a larger level would have stopped count too."""
    k = _last_look(note, plan)
    r = paired_test(note["block_log_ratios"], level=dataclasses.replace(plan, alpha=level).alpha_at(k),
                    margin=plan.margin, power=plan.power)
    return {**note, **dataclasses.asdict(r), "holm_alpha": level}


def holm(notes: Sequence[Optional[dict]], plan: Optional[BlockPlan], others: int = 0) -> list[Optional[dict]]:
    """A claim's pairs' notes (in its pairs' order) re-judged by Holm's step-down at ``plan.alpha`` (the
    claim's alpha; ``plan``: the run's looks, :func:`_plan_of`): the ``m`` measured notes (verdict in
    :data:`MEASURED`) each judged at ``alpha / m`` (:func:`_judged`); a pair decided there (larger, smaller,
    equivalent) is rejected and keeps that verdict, the rest are judged again at ``alpha / (m - r)``, ``r``
    the pairs decided so far, until a step decides none (an open pair's entry: its last step's). A measured
    note without blocks keeps its recorded verdict (decided at its Bonferroni share, at most ``alpha / m``:
    a first-step rejection); so does every note when ``plan`` is None. Other entries (None, not testable,
    bound links) are returned as they are. ``others``: the claim's pairs judged elsewhere at ``alpha / m`` at
    most (bound links, :func:`_bound_link`); they count in ``m`` and are never released (a subset of the
    rejections of a Holm over all of them: still within alpha)."""
    out = list(notes)
    if plan is None:
        return out
    idx = [i for i, n in enumerate(notes) if n is not None and n.get("verdict") in MEASURED]
    m = len(idx) + others
    open_ = [i for i in idx if _last_look(notes[i], plan) is not None]
    decided = sum(notes[i]["verdict"] != "undecided" for i in idx if i not in open_)
    while open_:
        level = plan.alpha / (m - decided)
        for i in open_:
            out[i] = _judged(notes[i], plan, level)
        new = [i for i in open_ if out[i]["verdict"] != "undecided"]
        if not new:
            break
        decided += len(new)
        open_ = [i for i in open_ if i not in new]
    return out


def practical(note: dict) -> dict:
    """Equivalence first: a pair shown *larger* or *smaller* whose ratio is also shown inside the margin
    (TOST at the same level, ``p_equivalent < level``) is *equivalent*: no practical difference, as the
    unpaired claims judge it (:func:`nfvlab.claims.order_claim`). Else a true ratio inside the margin would
    read "holds" in a run that happens to show the small difference and "contradicted" in one that does
    not. Within a pair the two tests need no adjustment (partitioning principle)."""
    if note.get("bound") or note.get("verdict") not in ("larger", "smaller"):
        return note
    level = note.get("level")
    if level is not None and note.get("p_equivalent", math.inf) < level:
        return {**note, "verdict": "equivalent", "shown_different_too": True}
    return note


def _bound_link(a, b, note: dict, ndr: Mapping, level: float) -> Optional[dict]:
    """A pair the paired phase left out because an arm's NDR is the generator's (``note``'s
    ``generator_limited``: ``"a"``, ``"b"``), read from the searches where that is sound: a
    generator-limited NDR is a lower bound of the DUT's, so ``a`` limited and shown above ``b`` is
    *larger*, ``b`` limited and shown above ``a`` is *smaller*; else *undecided*. None for any other
    not-testable pair (the claim then stays with the NDR searches)."""
    limited = note.get("generator_limited")
    if note.get("verdict") != "not testable" or not limited:
        return None
    x, y = ndr.get(a, ()), ndr.get(b, ())
    nd = _ndr_interval(x, y, level)
    verdict = "undecided"
    if nd and limited == ["a"] and nd[0] > 1:
        verdict = "larger"
    elif nd and limited == ["b"] and nd[1] < 1:
        verdict = "smaller"
    ratio = math.exp(float(np.mean(np.log(x)) - np.mean(np.log(y)))) if len(x) and len(y) else float("nan")
    lo, hi = nd or (float("nan"), float("nan"))
    return {"verdict": verdict, "ratio": ratio, "ci_low": lo, "ci_high": hi, "blocks": min(len(x), len(y)),
            "p_different": float("nan"), "p_equivalent": float("nan"), "detectable": float("nan"),
            "blocks_needed": None, "bound": f"{', '.join(a if arm == 'a' else b for arm in limited)} "
                                         f"generator-limited: its NDR a lower bound"}


def _pair_text(a, b, n: dict) -> str:
    if n.get("bound"):
        return (f"{a} / {b}: NDR ratio {n['ratio']:.3f} [{n['ci_low']:.3f}, {n['ci_high']:.3f}] (searches, "
                f"{n['bound']}; {n['verdict']})")
    at = f" at Holm's alpha {n['holm_alpha']:.3g}" if "holm_alpha" in n else ""
    return (f"{a} / {b}: {n['ratio']:.3f} [{n['ci_low']:.3f}, {n['ci_high']:.3f}] ({n['blocks']} blocks, "
            f"{n['verdict']}{at}, detectable {100 * n['detectable']:.0f} %)")


def paired_claim(claim: str, condition: str, chains: Sequence[Sequence], notes: Mapping[tuple, dict],
                 ndr: Mapping, noise: str = "") -> Optional[dict]:
    """The claims row of an order claim from its pairs' paired notes (``notes``: ``(a, b)`` levels ->
    note labels), or None when a pair has no measured paired note (the claim stays with the NDR
    searches). ``ndr``: level -> the repetitions' NDRs (the metric-dependence check); ``noise``: the
    run's host noise, for the detail."""
    pairs = pairs_of(chains)
    got = [notes.get(p) for p in pairs]
    if not pairs or all(n is None or n.get("verdict") not in MEASURED for n in got):
        return None
    plan = _plan_of(got)
    bounds = sum(n is not None and n.get("verdict") == "not testable" and bool(n.get("generator_limited"))
                 for n in got)
    # a bound is read at Holm's first level (its pairs count in m), or without the run's params at the alpha
    # share its claim's measured pairs were tested at (their notes' ``alpha``)
    level = (plan.alpha / (bounds + sum(n is not None and n.get("verdict") in MEASURED for n in got)) if plan else
             min((n["alpha"] for n in got if n is not None and n.get("verdict") in MEASURED and "alpha" in n),
                 default=0.05 / len(pairs)))
    got = [n if n is None or n.get("verdict") in MEASURED else _bound_link(a, b, n, ndr, level)
           for (a, b), n in zip(pairs, holm(got, plan, others=bounds))]
    if any(n is None for n in got):
        return None
    got = [practical(n) for n in got]
    detail = "; ".join(_pair_text(a, b, n) for (a, b), n in zip(pairs, got)) + (f"; {noise}" if noise else "")
    row = {"claim": claim, "condition": condition, "test": PAIRED_TEST, "effect_size_kind": PAIRED_EFFECT,
           "detail": detail}

    def pick(i: int, verdict: str, reason: str) -> dict:
        n = got[i]
        return {**row, "verdict": verdict, "reason": reason, "pair": f"{pairs[i][0]} > {pairs[i][1]}",
                "p_adjusted": n["p_different"] if n["verdict"] != "equivalent" else n["p_equivalent"],
                "effect_size": n["ratio"] - 1, "n": n["blocks"], "mde": n["detectable"],
                "n_needed": n.get("blocks_needed")}

    for i, ((a, b), n) in enumerate(zip(pairs, got)):
        nd = _ndr_interval(ndr.get(a, ()), ndr.get(b, ()))
        if nd and not n.get("bound") and n["verdict"] in ("larger", "smaller") and (
                (n["ci_low"] > 1 and nd[1] < 1) or (n["ci_high"] < 1 and nd[0] > 1)):
            return pick(i, "metric-dependent", f"the paired ratio of {a} / {b} ({n['ratio']:.3f}) and its NDR "
                                               f"ratio [{nd[0]:.3f}, {nd[1]:.3f}] are shown on opposite sides of 1")

    def how(n: dict) -> str:
        return "by its searches (a generator-limited NDR as a lower bound)" if n.get("bound") else "in paired blocks"

    for i, n in enumerate(got):
        if n["verdict"] == "smaller":
            return pick(i, "contradicted", f"{pairs[i][1]} is shown above {pairs[i][0]} {how(n)}")
        if n["verdict"] == "equivalent":
            return pick(i, "contradicted", f"{pairs[i][0]} and {pairs[i][1]} are shown within the margin of each "
                                           f"other in paired blocks (no practical difference)")
    if all(n["verdict"] == "larger" for n in got):
        worst = min(range(len(got)), key=lambda i: got[i]["ratio"])
        return pick(worst, "holds", "every pair is shown in the claimed order in paired blocks"
                    + ("" if not any(n.get("bound") for n in got) else
                       " (a pair with a generator-limited arm by its searches, that NDR a lower bound)"))
    open_ = [i for i, n in enumerate(got) if n["verdict"] == "undecided"]
    return pick(open_[0], "inconclusive", "a pair is not decided within the paired phase's blocks")


def control_rows(notes: Mapping[tuple, dict], noise: str = "") -> list[dict]:
    """The claims rows of the run's A/A controls (:data:`CONTROL_CLAIM`)."""
    rows = []
    for (a, _b, control), n in notes.items():
        if not control:
            continue
        base = {"claim": CONTROL_CLAIM, "condition": str(a), "test": PAIRED_TEST, "effect_size_kind": PAIRED_EFFECT,
                "pair": f"{a} / its twin"}
        if n.get("verdict") not in ("larger", "smaller", "equivalent", "undecided"):
            rows.append({**base, "verdict": "not testable", "n": 0, "reason": n.get("reason", "not measured"),
                         "detail": n.get("reason", "")})
            continue
        # Equivalence first, as the claims it controls are judged (:func:`practical`): a difference shown
        # inside the margin (two instances a hair apart) is no practical difference, not a false positive.
        n = practical(n)
        verdict, reason = {"equivalent": ("holds", "the ratio is shown inside the margin" + (
                               " (a smaller difference is shown too: no practical difference)"
                               if n.get("shown_different_too") else "")),
                           "undecided": ("inconclusive", "neither a difference nor equivalence is shown"),
                           }.get(n["verdict"], ("contradicted", "the design shows a difference where none exists"))
        rows.append({**base, "verdict": verdict, "reason": reason,
                     "p_adjusted": n["p_equivalent"] if n["verdict"] != "larger" and n["verdict"] != "smaller"
                     else n["p_different"], "effect_size": n["ratio"] - 1, "n": n["blocks"], "mde": n["detectable"],
                     "n_needed": n.get("blocks_needed"),
                     "detail": _pair_text(a, "twin", n) + (f"; {noise}" if noise else "")})
    return rows


def host_noise(records: Union[PathLike, Sequence[PathLike]], run: str = "latest") -> str:
    """The run's host probe (per-CPU CV of a fixed loop per window, lag-1 correlation) in a few words."""
    hs = (results.run_provenance(records, run) or {}).get("host_speed") or {}
    cpus = hs.get("cpus") or {}
    if not cpus:
        return ""
    figs = ", ".join(f"CPU {c} CV {100 * f['cv']:.0f} %" + (f" (lag-1 r {f['lag1']:.2f})" if f.get("lag1") is not None
                                                            else "") for c, f in sorted(cpus.items()))
    return f"host probe: {figs}" + ("; unstable" if hs.get("unstable") else "")
