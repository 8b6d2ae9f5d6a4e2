"""Adaptive repetitions: measure more of what an undecided claim needs, until decided or out of budget.

The driver of an adaptive run (the sequential rule is :func:`nfvlab.claims.plan_more`): it owns
no lab. The caller injects ``measure(added) -> rate`` (one more repetition of one configuration:
a search's NDR, an MRR, a tool's rate; ``added`` is the :class:`Added` saying which, at which
look and why, for the record it writes), the claims (as :mod:`nfvlab.claims` reads them) and the
budget; :func:`run` returns every value, which repetitions were added at which look and why, and
why it stopped. The measuring side may import it (it imports :mod:`nfvlab.claims`
only, never the analysis).

Budget: never more than ``plan.max_repetitions`` repetitions of a configuration; and, with
``seconds``, whole looks: a look is started only if the time spent so far plus its repetitions
times the mean time of one (those added so far, else ``unit_seconds``, the caller's estimate from
its fixed repetitions) fits in ``seconds``, and once started it is finished (a look cut short
costs its time and decides nothing). So the budget is exceeded only by a look slower than its
estimate. With no estimate yet (no ``unit_seconds``, nothing added), the first look's repetitions
are started one by one while the time spent plus the longest so far fits. With ``give_up_above``
a claim that looks undecidable within that many repetitions gets no more
(:func:`nfvlab.claims.plan_more`: non-binding futility).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Hashable, Mapping, Optional, Sequence

import numpy as np

from nfvlab.claims import Design, Plan, Sample, plan_more, sequential_verdict

__all__ = ["Added", "Outcome", "run"]


@dataclass(frozen=True)
class Added:
    """One repetition the driver added: configuration, its 0-based repetition index, the look it
    prepares (1-based: look 0 is the run's first ``plan.first`` repetitions) and why."""

    config: Hashable
    repetition: int
    look: int
    reason: str


@dataclass
class Outcome:
    """What :func:`run` did: ``values`` per configuration (in measurement order), ``added``
    (:class:`Added`, in order), ``stopped`` (``decided``: no claim needs more; ``max repetitions``;
    ``seconds``: the next look would not fit the time budget; ``given up``: the claims left undecided
    were given up), ``seconds`` spent, each claim's final ``verdicts``
    (:func:`nfvlab.claims.sequential_verdict`) and ``given_up`` (a reason per claim given up)."""

    values: dict
    added: list = field(default_factory=list)
    stopped: str = "decided"
    seconds: float = 0.0
    verdicts: list = field(default_factory=list)
    given_up: list = field(default_factory=list)


def run(measure: Callable[[Added], float], claims: Sequence[tuple[str, Sequence]],
        initial: Mapping[Hashable, Sequence[float]], plan: Plan, resolution: Mapping[Hashable, float],
        design: Design = Design(), seconds: Optional[float] = None,
        clock: Callable[[], float] = time.monotonic, unit_seconds: Optional[float] = None,
        give_up_above: Optional[int] = None,
        order: Optional[Callable[[list[Added]], list[Added]]] = None,
        along: Optional[Mapping[Hashable, Hashable]] = None) -> Outcome:
    """Add repetitions to the configurations of undecided claims, look after look.

    Parameters
    ----------
    measure : callable
        ``(added) -> rate``: one more repetition, ``added.repetition`` (0-based) of ``added.config``
        (positive; pass the detection limit for a 0). Its record should carry ``added.look`` and
        ``added.reason``.
    claims : list of (kind, spec) or (kind, spec, paired)
        As :func:`nfvlab.claims.plan_more`: ``("order", chains)`` / ``("equality", pairs)``; a paired
        claim's pairs are judged repetition by repetition (each value's key is its repetition).
    initial : mapping
        Configuration -> the rates measured so far (the run's first ``plan.first`` repetitions).
    plan : nfvlab.claims.Plan
        Planned looks; ``max_repetitions`` caps every configuration.
    resolution : mapping
        Configuration -> relative resolution (the search's goal width; 0 for a continuous rate).
    design : nfvlab.claims.Design
        Alpha, margins, power.
    seconds : float, optional
        Time budget for the added repetitions (``clock`` seconds).
    clock : callable
        Monotonic clock (injected so a test can run on simulated time).
    unit_seconds : float, optional
        Estimated seconds of one repetition before any is added (e.g. the fixed repetitions' mean).
    give_up_above : int, optional
        Repetitions per configuration beyond which a claim is given up (:func:`nfvlab.claims.plan_more`).
    order : callable, optional
        ``(added list) -> the same, reordered``: the order a look's repetitions are measured in (default:
        configuration by configuration, in key order). It must keep each configuration's repetitions
        in ascending order. A paired claim wants its two configurations' repetitions next to each other.
    along : mapping, optional
        Configuration -> a configuration measured along with it: each repetition a look adds to the
        first adds the same repetition of the second (an A/A control's twin, so the control is judged
        on as many pairs as its original and drives no look itself: pass no claim naming the twin).
        Its added repetitions carry the reason ``along with <configuration>``.
    """
    values = {k: list(v) for k, v in initial.items()}
    out = Outcome(values)
    start, longest, took = clock(), 0.0, []

    def samples() -> dict:
        return {k: Sample(np.asarray(v, dtype=float), resolution.get(k, 0.0), np.arange(len(v)))
                for k, v in values.items()}

    look = 0
    while True:
        given_up: list = []
        want = plan_more(claims, samples(), plan, design, give_up_above, given_up)
        out.given_up = given_up
        if not want:  # every claim decided / not testable / given up, or at its last look
            break
        for config, rider in (along or {}).items():
            if config in want and rider in values:
                want[rider] = (max(want[config][0], want.get(rider, (0, ""))[0]), f"along with {config}")
        look += 1
        units = sum(max(0, min(t, plan.max_repetitions) - len(values[c])) for c, (t, _) in want.items())
        mean = sum(took) / len(took) if took else unit_seconds
        if seconds is not None and mean is not None and clock() - start + units * mean > seconds:
            out.stopped = "seconds"  # the look would not fit: not started
            break
        todo = [Added(config, r, look, want[config][1]) for config in sorted(want, key=str)  # deterministic
                for r in range(len(values[config]), min(want[config][0], plan.max_repetitions))]
        if order is not None:
            todo = order(todo)
        stopped = None
        for added in todo:
            if added.repetition != len(values[added.config]):
                raise ValueError(f"adaptive: order put repetition {added.repetition} of {added.config} out of turn")
            if seconds is not None and mean is None and clock() - start + longest > seconds:
                stopped = "seconds"
                break
            t0 = clock()
            values[added.config].append(float(measure(added)))
            took.append(clock() - t0)
            longest = max(longest, took[-1])
            out.added.append(added)
        if stopped:
            out.stopped = stopped
            break
    out.seconds = clock() - start
    out.verdicts = [sequential_verdict(kind, samples(), spec, plan, design, paired=bool(paired and paired[0]))
                    for kind, spec, *paired in claims]
    if out.stopped == "decided" and any(v["verdict"] == "inconclusive" for v in out.verdicts):
        out.stopped = "given up" if out.given_up else "max repetitions"
    return out
