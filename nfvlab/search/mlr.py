"""MLRsearch (RFC 9971, draft-ietf-bmwg-mlrsearch-15) through the PyPI ``MLRsearch`` package.

:func:`mlrsearch` adapts an nfvlab :class:`~nfvlab.trial.Measurer` to
``MLRsearch.AbstractMeasurer`` and searches several goals (by default NDR and
PDR at 0.5 % loss) at once, the way FD.io CSIT does. Each goal is an RFC 9971
Search Goal (:class:`~nfvlab.search.goal.GoalParams`; ``docs/methodology.md``
maps the parameters), and each result an RFC 9971 Goal Result with its flags.

Loads and counts
----------------
MLRsearch's *intended load* is our intended rate **per direction**
(``rate_pps``), the same unit as ``min_rate_pps`` / ``max_rate_pps`` and as every
bound it returns. Its counts are passed **summed over directions**, unscaled:

* ``intended_count``  = ``TrialResult.intended_packets``
* ``offered_count``   = ``TrialResult.sent_packets``
* ``forwarding_count`` = ``TrialResult.received_packets``

MLRsearch uses counts only through ratios (loss ratio = bad / overall count)
and turns them into rates as ``intended_load * (1 - loss_ratio)``, so
aggregate counts with a per-direction load are consistent: the resulting
forwarding rates and conditional throughput are per direction too. To keep
MLRsearch's loss ratio *identical* to ``TrialResult.loss_ratio``
(``max(0, intended - received) / intended``), counts are clamped before they
are handed over: ``forwarding = min(received, intended)`` and
``offered = max(min(sent, intended), forwarding)``. Without the clamp a
generator overshooting by a packet (sent > intended) would be counted as loss
by MLRsearch but not by the other searches.

Loads the generator could not offer
-----------------------------------
When every repeat of a trial is invalid (:class:`~nfvlab.search.result.LoadNotOfferedError`),
MLRsearch is told that the load failed: a result with nothing offered and nothing
forwarded (MLRsearch counts unsent frames as bad: loss ratio 1). That load and every
higher one then fail at once, without another trial, for the rest of the search
(``TrialLog.not_offered``), so the search goes on below them and the result's
``not_offered_pps`` says where the generator stopped it. Only MLRsearch sees these
stand-in results; the records keep the invalid trials as they were.
"""
from __future__ import annotations

import logging
from types import MappingProxyType
from typing import Mapping, Optional

from MLRsearch import (
    AbstractMeasurer,
    Config,
    MeasurementResult,
    MultipleLossRatioSearch,
    SearchGoal,
)

from nfvlab.search.goal import GoalParams, measurement_result

from nfvlab.search.result import (
    GeneratorFaultError,
    LoadNotOfferedError,
    MinRateFailedError,
    OnTrial,
    SearchError,
    SearchResult,
    SearchTimeoutError,
    TrialLog,
    fmt_pps,
)
from nfvlab.trial import Measurer

log = logging.getLogger(__name__)

#: Default goals: name -> goal loss ratio (NDR, and PDR at 0.5 % loss).
DEFAULT_GOALS: Mapping[str, float] = MappingProxyType({"ndr": 0.0, "pdr": 0.005})


class _Adapter(AbstractMeasurer):
    """Runs MLRsearch's trials through a :class:`TrialLog`."""

    def __init__(self, log_: TrialLog, goals: Mapping[str, float],
                 final_trial_duration_s: float, warmup: bool) -> None:
        self.log = log_
        self.goals = goals
        self.final_trial_duration_s = final_trial_duration_s
        self.warmup_pending = warmup
        self.error: Optional[BaseException] = None
        """An exception the measurer raised (re-raised unchanged, not translated)."""

    def measure(self, intended_duration: float, intended_load: float) -> MeasurementResult:
        kind = "warmup" if self.warmup_pending else None
        self.warmup_pending = False
        lowest = self.log.lowest_not_offered()
        if lowest is not None and intended_load >= lowest * (1 - 1e-9):
            return self._not_offered(intended_duration, intended_load)
        try:
            trial = self.log.run(intended_load, intended_duration, kind=kind)
        except LoadNotOfferedError:
            return self._not_offered(intended_duration, intended_load)
        except BaseException as exc:
            self.error = exc
            raise
        self._show()
        return measurement_result(trial, float(intended_load), float(intended_duration))

    def _not_offered(self, intended_duration: float, intended_load: float) -> MeasurementResult:
        """A failing result for a load the generator could not offer: nothing offered, nothing
        forwarded (a stand-in MLRsearch alone sees; see the module's docstring)."""
        directions = len(self.log.invalid[-1].directions) if self.log.invalid else 1
        intended = max(1, round(float(intended_load) * float(intended_duration))) * max(1, directions)
        self.log.show(f"not offered: {fmt_pps(intended_load)} and above")
        return MeasurementResult(intended_duration=float(intended_duration), intended_load=float(intended_load),
                                 intended_count=intended, offered_count=0, forwarding_count=0)

    def _show(self) -> None:
        """Naive per-goal bounds for the progress bar (final-duration trials only)."""
        final = [t for t in self.log.trials
                 if t.kind != "warmup" and t.duration_s >= self.final_trial_duration_s]
        parts = []
        for name, ratio in self.goals.items():
            hi = min((t.rate_pps for t in final if t.loss_ratio > ratio), default=None)
            lo = max((t.rate_pps for t in final if t.loss_ratio <= ratio
                      and (hi is None or t.rate_pps < hi)), default=None)
            parts.append(f"{name}~[{fmt_pps(lo)},{fmt_pps(hi)}]")
        self.log.show(" ".join(parts))


def mlrsearch(
    measure: Measurer,
    min_rate_pps: float,
    max_rate_pps: float,
    goals: Mapping[str, float] = DEFAULT_GOALS,
    relative_width: float = 0.005,
    initial_trial_duration_s: float = 1.0,
    final_trial_duration_s: float = 1.0,
    duration_sum_s: float = 21.0,
    exceed_ratio: float = 0.5,
    search_duration_max_s: float = 1200.0,
    warmup_duration_s: float = 1.0,
    *,
    preceding_targets: int = 2,
    expansion_coefficient: int = 2,
    on_trial: Optional[OnTrial] = None,
    progress: bool = False,
) -> dict[str, SearchResult]:
    """Search conditional throughput for several loss-ratio goals with MLRsearch.

    Parameters
    ----------
    measure : Measurer
        Runs one trial: ``measure(rate_pps, duration_s) -> TrialResult``.
    min_rate_pps, max_rate_pps : float
        Intended rates per direction MLRsearch may use, packets/s (MLRsearch's
        ``min_load`` / ``max_load``; its own min_load default of 9001 is not used).
    goals : mapping of str to float
        Goal name -> goal loss ratio (0..1); distinct ratios. Default
        ``{"ndr": 0.0, "pdr": 0.005}``.
    relative_width : float
        Target relative width of the final [lower, upper] interval, per goal.
    initial_trial_duration_s, final_trial_duration_s : float
        Shortest and longest trial duration, s (short trials for the coarse
        preceding targets, final ones for the goal itself).
    duration_sum_s : float
        Trial-seconds at one load needed to classify it as a bound, s.
    exceed_ratio : float
        Share of those trial-seconds that may exceed the goal loss ratio while
        the load still counts as a lower bound (0 = conservative).
    search_duration_max_s : float
        Wall-clock limit of the whole search, s.
    warmup_duration_s : float
        Duration of one warm-up trial at ``max_rate_pps`` whose result is
        ignored (0 = no warm-up), s. Counted in ``trial_seconds``.
    preceding_targets, expansion_coefficient : int
        MLRsearch tuning knobs, passed through to each ``SearchGoal``.
    on_trial : callable, optional
        Called with each ``TrialResult`` right after its trial (warm-up
        included, with ``kind="warmup"``).
    progress : bool
        Show a progress bar on stderr: trial count and, per goal, naive bounds
        seen in final-duration trials (single-trial view, ignores the exceed
        ratio; the result uses MLRsearch's relevant bounds).

    Returns
    -------
    dict of str to SearchResult
        One result per goal name, ``method="mlrsearch"`` (RFC 9971 Goal
        Results). ``lower_bound_pps`` / ``upper_bound_pps`` are the relevant
        bounds (upper None when the max rate is a lower bound: flag
        ``max-load-is-lower-bound``, irregular), ``conditional_throughput_pps``
        the conditional throughput and ``throughput_pps`` that value (or the
        lower bound when it is undefined); ``search_goal`` holds the goal
        attributes applied (as MLRsearch read them back), ``min_rate_pps`` /
        ``max_rate_pps`` the Min / Max Load. The goals are searched together,
        so every result holds the same ``trials`` and ``trial_seconds`` of the
        whole search.

    Raises
    ------
    MinRateFailedError
        If ``min_rate_pps`` is an upper bound for some goal (no lower bound).
    GeneratorFaultError
        If the generator could not offer ``min_rate_pps`` (every repeat of its trial invalid);
        a higher load it could not offer is an upper bound (``not_offered_pps``), not an error.
    SearchTimeoutError
        If the search runs longer than ``search_duration_max_s``.
    SearchError
        For any other failure reported by MLRsearch (the original exception is
        chained as ``__cause__``). Exceptions raised by ``measure`` itself
        propagate unchanged.
    """
    if not goals:
        raise ValueError("at least one goal is needed")
    ratios = [float(r) for r in goals.values()]
    if len(set(ratios)) != len(ratios):
        raise ValueError(f"goal loss ratios must be distinct, got {dict(goals)}")
    if not 0 < min_rate_pps < max_rate_pps:
        raise ValueError(
            f"need 0 < min_rate_pps < max_rate_pps, got {min_rate_pps}, {max_rate_pps}"
        )
    search_goals = {
        name: SearchGoal(
            loss_ratio=float(ratio),
            exceed_ratio=exceed_ratio,
            relative_width=relative_width,
            initial_trial_duration=initial_trial_duration_s,
            final_trial_duration=final_trial_duration_s,
            duration_sum=duration_sum_s,
            preceding_targets=preceding_targets,
            expansion_coefficient=expansion_coefficient,
            fail_fast=True,
        )
        for name, ratio in goals.items()
    }
    config = Config(
        goals=tuple(search_goals.values()),
        min_load=float(min_rate_pps),
        max_load=float(max_rate_pps),
        search_duration_max=float(search_duration_max_s),
        warmup_duration=float(warmup_duration_s) if warmup_duration_s else None,
    )
    with TrialLog(measure, on_trial, progress, desc="mlrsearch") as tlog:
        adapter = _Adapter(tlog, dict(goals), final_trial_duration_s,
                           warmup=bool(warmup_duration_s))
        try:
            raw = MultipleLossRatioSearch(config=config).search(
                measurer=adapter, debug=log.debug
            )
        except Exception as exc:
            if exc is adapter.error:
                raise
            raise _translate(exc, min_rate_pps, goals, tlog) from exc
        results = {}
        for name, goal in search_goals.items():
            gr = raw[goal]
            lower = _float(gr.relevant_lower_bound)
            cond = _float(gr.conditional_throughput)
            results[name] = tlog.result(
                method="mlrsearch",
                goal=name,
                loss_ratio=goal.loss_ratio,
                lower_bound_pps=lower,
                upper_bound_pps=_float(gr.relevant_upper_bound),
                throughput_pps=cond if cond is not None else lower,
                conditional_throughput_pps=cond,
                search_goal=GoalParams(
                    loss_ratio=goal.loss_ratio, exceed_ratio=goal.exceed_ratio,
                    final_trial_duration_s=goal.final_trial_duration,
                    duration_sum_s=goal.duration_sum, relative_width=goal.relative_width,
                    initial_trial_duration_s=goal.initial_trial_duration),
                min_rate_pps=float(min_rate_pps),
                max_rate_pps=float(max_rate_pps),
            )
    return results


def _float(value) -> Optional[float]:
    return None if value is None else float(value)


def _translate(exc: Exception, min_rate_pps: float, goals: Mapping[str, float],
               tlog: TrialLog) -> SearchError:
    """Turn an MLRsearch failure into an nfvlab exception with a clear message."""
    text = str(exc)
    lowest = tlog.lowest_not_offered()
    if "No lower bound" in text and lowest is not None and lowest <= min_rate_pps * (1 + 1e-9):
        return GeneratorFaultError(
            f"MLRsearch: the generator could not offer min_rate_pps={min_rate_pps}: every repeat"
            " of its trial was invalid, so no lower bound exists", trials=tlog.trials, invalid=tlog.invalid)
    if "No lower bound" in text:
        at_min = [t for t in tlog.trials
                  if t.kind != "warmup" and t.rate_pps <= min_rate_pps * (1 + 1e-9)]
        losses = sorted(t.loss_ratio for t in at_min)
        seen = (f"{len(losses)} trial(s) there, loss ratio {losses[0]:.6g}..{losses[-1]:.6g}"
                if losses else "no trial there")
        failed = [n for n, r in goals.items() if any(t.loss_ratio > r for t in at_min)]
        return MinRateFailedError(
            f"MLRsearch: min_rate_pps={min_rate_pps} fails goal(s)"
            f" {', '.join(failed) or '?'} ({seen}), so no lower bound exists;"
            " lower min_rate_pps (MLRsearch's own message is the __cause__)",
            min_rate_pps=min_rate_pps,
            loss_ratio=min((goals[n] for n in failed), default=None),
            trials=tlog.trials,
        )
    if "too long" in text:
        return SearchTimeoutError(
            f"MLRsearch exceeded its search_duration_max after {len(tlog.trials)}"
            f" trials ({tlog.trial_seconds:g} trial-seconds): {text}",
            trials=tlog.trials,
        )
    return SearchError(f"MLRsearch failed: {type(exc).__name__}: {text}",
                       trials=tlog.trials)
