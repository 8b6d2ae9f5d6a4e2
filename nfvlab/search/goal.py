"""RFC 9971 (MLRsearch) terms: search goals, load classification, conditional throughput.

RFC 9971 (the draft-ietf-bmwg-mlrsearch-15 text) defines a *Search Goal* by
its Goal Loss Ratio, Goal Exceed Ratio, Goal Final Trial Duration, Goal
Duration Sum and, optionally, Goal Width and Goal Initial Trial Duration.
:class:`GoalParams` holds those for one goal, in nfvlab's units, and every
search result carries the goal it applied (:meth:`GoalParams.to_dict`).

:func:`classify_load` (RFC 9971 Appendix A) and :func:`conditional_throughput_pps`
(Appendix B) apply a goal to the trials measured at one load. Both delegate to
the PyPI ``MLRsearch`` package's ``TargetStat`` -- the implementation RFC 9971
cites and the one :func:`~nfvlab.search.mlrsearch` runs -- so the numbers
nfvlab reports for RFC 2544 bisection and for MLRsearch come from one code
path. The Trial Effective Duration is the intended Trial Duration (nfvlab's
measurers return no other), as in the RFC's worked examples (Appendix C).

Units: loads and rates in packets/s **per direction** (RFC 9971's per-interface
Trial Load), durations in seconds, ratios in 0..1; counts (and so the Trial
Loss Ratio) are summed over directions, as RFC 9971's Trial Forwarding Ratio is.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Iterable, Optional

from MLRsearch import MeasurementResult
from MLRsearch.target_spec import TargetSpec
from MLRsearch.target_stat import TargetStat

from nfvlab.trial import TrialResult

#: Record fields of a search goal (:meth:`GoalParams.to_dict`), after RFC 9971's goal attributes.
GOAL_FIELDS = ("goal_loss_ratio", "goal_exceed_ratio", "goal_final_trial_duration_s", "goal_duration_sum_s",
               "goal_relative_width", "goal_initial_trial_duration_s")


@dataclass(frozen=True)
class GoalParams:
    """One RFC 9971 Search Goal, as applied by a search.

    Parameters
    ----------
    loss_ratio : float
        Goal Loss Ratio, 0 <= ratio < 1 (0: NDR).
    exceed_ratio : float
        Goal Exceed Ratio, 0 <= ratio < 1: share of the (effective) duration sum
        at a load that may exceed ``loss_ratio`` while the load is still a
        lower bound.
    final_trial_duration_s : float
        Goal Final Trial Duration, s (> 0): trials at least this long are
        full-length.
    duration_sum_s : float
        Goal Duration Sum, s (> 0): trial-seconds at one load that classify it.
    relative_width : float or None
        Goal Width as a relative width, ``(upper - lower) / upper`` of the
        relevant bounds (> 0); None when the search has no width goal.
    initial_trial_duration_s : float or None
        Goal Initial Trial Duration, s: shortest trial the search uses for this
        goal; None when not applicable (one fixed duration).
    """

    loss_ratio: float
    exceed_ratio: float
    final_trial_duration_s: float
    duration_sum_s: float
    relative_width: Optional[float] = None
    initial_trial_duration_s: Optional[float] = None

    def __post_init__(self) -> None:
        for name in ("loss_ratio", "exceed_ratio"):
            v = getattr(self, name)
            if not 0.0 <= v < 1.0:
                raise ValueError(f"goal {name} must be in [0, 1), got {v}")
        for name in ("final_trial_duration_s", "duration_sum_s", "relative_width",
                     "initial_trial_duration_s"):
            v = getattr(self, name)
            if v is not None and not v > 0:
                raise ValueError(f"goal {name} must be positive, got {v}")

    def to_dict(self) -> dict:
        """The goal as record fields, named after RFC 9971's goal attributes.

        Keys: :data:`GOAL_FIELDS` (``goal_`` + the attribute name).
        """
        return {f"goal_{f.name}": getattr(self, f.name) for f in fields(self)}


def rfc2544_goal(loss_ratio: float, duration_s: float, relative_width: Optional[float] = None) -> GoalParams:
    """The goal RFC 2544 bisection applies: one trial of ``duration_s`` decides a load.

    RFC 9971 section "MLRsearch Compliant with RFC 2544": final trial duration =
    duration sum = the trial duration, exceed ratio 0 (unconditionally compliant
    at 60 s and loss ratio 0).
    """
    return GoalParams(loss_ratio=loss_ratio, exceed_ratio=0.0, final_trial_duration_s=duration_s,
                      duration_sum_s=duration_s, relative_width=relative_width,
                      initial_trial_duration_s=duration_s)


def measurement_result(
    trial: TrialResult,
    intended_load: Optional[float] = None,
    intended_duration: Optional[float] = None,
) -> MeasurementResult:
    """Convert a trial into MLRsearch's ``MeasurementResult``.

    The load is the per-direction intended rate (``trial.rate_pps`` unless
    ``intended_load`` is given: MLRsearch needs back exactly the load it asked
    for); counts are summed over directions and clamped so that MLRsearch's
    loss ratio equals ``trial.loss_ratio`` (see :mod:`nfvlab.search.mlr`).
    """
    intended = trial.intended_packets
    forwarding = min(trial.received_packets, intended)
    offered = max(min(trial.sent_packets, intended), forwarding)
    return MeasurementResult(
        intended_duration=trial.duration_s if intended_duration is None else intended_duration,
        intended_load=trial.rate_pps if intended_load is None else intended_load,
        intended_count=intended,
        offered_count=offered,
        forwarding_count=forwarding,
    )


def _stat(trials: Iterable[TrialResult], goal: GoalParams) -> TargetStat:
    # The search-steering fields of TargetSpec (width, expansion, fail-fast,
    # preceding target) play no part in classification or conditional throughput.
    spec = TargetSpec(loss_ratio=goal.loss_ratio, exceed_ratio=goal.exceed_ratio, discrete_width=None,
                      trial_duration=goal.final_trial_duration_s, duration_sum=goal.duration_sum_s,
                      expansion_coefficient=1, fail_fast=False, preceding=None)
    stat = TargetStat(target=spec)
    for t in trials:
        if t.kind != "warmup":
            stat.add(measurement_result(t))
    return stat


@dataclass(frozen=True)
class LoadClassification:
    """RFC 9971 Appendix A's sums and verdict for one load and one goal (durations in s)."""

    full_length_low_loss_s: float
    full_length_high_loss_s: float
    short_low_loss_s: float
    short_high_loss_s: float
    optimistic_is_lower: bool
    pessimistic_is_lower: bool

    @property
    def classification(self) -> str:
        """``"lower bound"``, ``"upper bound"`` or ``"undecided"``."""
        if self.optimistic_is_lower and self.pessimistic_is_lower:
            return "lower bound"
        if not self.optimistic_is_lower and not self.pessimistic_is_lower:
            return "upper bound"
        return "undecided"


def classify_load(trials: Iterable[TrialResult], goal: GoalParams) -> LoadClassification:
    """Classify the load at which ``trials`` ran, for ``goal`` (RFC 9971 Appendix A).

    Parameters
    ----------
    trials : iterable of TrialResult
        Every trial measured at that one load (any duration); warm-up trials
        are ignored.
    goal : GoalParams
        The search goal.

    Returns
    -------
    LoadClassification
        Duration sums of full-length / short, low-loss / high-loss trials (s)
        and the optimistic / pessimistic estimates; ``.classification`` is the
        verdict.
    """
    stat = _stat(trials, goal)
    optimistic, pessimistic = stat.estimates()
    return LoadClassification(
        full_length_low_loss_s=stat.good_long, full_length_high_loss_s=stat.bad_long,
        short_low_loss_s=stat.good_short, short_high_loss_s=stat.bad_short,
        optimistic_is_lower=bool(optimistic), pessimistic_is_lower=bool(pessimistic),
    )


def quantile_loss_ratio(trials: Iterable[TrialResult], goal: GoalParams) -> float:
    """The loss ratio the conditional throughput uses (RFC 9971 Appendix B).

    The ``(1 - exceed_ratio)`` quantile, by duration, of the full-length trials'
    loss ratios, with the duration missing to ``duration_sum_s`` counted as
    trials of loss ratio 1 (ties take the lower value).
    """
    return float(_stat(trials, goal).pessimistic_loss_ratio)


def conditional_throughput_pps(trials: Iterable[TrialResult], goal: GoalParams,
                               load_pps: Optional[float] = None) -> Optional[float]:
    """Conditional throughput at one load (RFC 9971 Appendix B), packets/s per direction.

    ``load_pps * (1 - quantile_loss_ratio(trials, goal))``. RFC 9971 calls the
    value at the relevant lower bound *the* conditional throughput; any load
    with trials can be evaluated.

    Parameters
    ----------
    trials : iterable of TrialResult
        Every trial measured at that load; warm-up trials are ignored.
    goal : GoalParams
        The search goal.
    load_pps : float, optional
        The load (intended rate per direction), packets/s; default: the
        trials' common ``rate_pps``.

    Returns
    -------
    float or None
        None when there is no (non-warm-up) trial.
    """
    trials = [t for t in trials if t.kind != "warmup"]
    if not trials:
        return None
    if load_pps is None:
        rates = {t.rate_pps for t in trials}
        if len(rates) != 1:
            raise ValueError(f"trials at several loads {sorted(rates)}: pass load_pps")
        (load_pps,) = rates
    return float(load_pps) * (1.0 - quantile_loss_ratio(trials, goal))
