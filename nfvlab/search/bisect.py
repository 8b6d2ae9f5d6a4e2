"""RFC 2544 throughput: binary search for the highest rate meeting a loss goal.

RFC 2544 section 26.1 defines throughput as the fastest rate at which no
offered frame is lost; the usual search is a bisection. This module keeps that
classic form (one fixed trial duration, arithmetic midpoints) as the baseline
MLRsearch is compared with:

1. one trial at ``max_rate_pps``; if it passes, the throughput is the maximum;
2. otherwise bisect ``[min_rate_pps, max_rate_pps]`` until
   ``(hi - lo) / hi <= relative_width``;
3. if no trial ever passed, confirm ``min_rate_pps`` itself (and raise
   :class:`~nfvlab.search.result.MinRateFailedError` if it fails).

A trial *passes* when ``trial.loss_ratio <= loss_ratio`` (unsent packets count
as lost, see :class:`~nfvlab.trial.TrialResult`). A rate the generator could not
offer (every repeat of its trial invalid:
:class:`~nfvlab.search.result.LoadNotOfferedError`) fails like a lossy trial, so
the search goes on below it; only the minimum rate not offered ends the search. A loss ratio of 0 gives the
NDR (non-drop rate), a positive one a PDR (partial drop rate).

In RFC 9971 terms this is a search with one goal whose final trial duration
and duration sum are the trial duration and whose exceed ratio is 0 (RFC 9971
"MLRsearch Compliant with RFC 2544"); results carry that goal, the relevant
bounds, the conditional throughput and the irregular-result flags like
MLRsearch's do.
"""
from __future__ import annotations

import math
from typing import Iterable, Optional

from nfvlab.search.goal import conditional_throughput_pps, rfc2544_goal
from nfvlab.search.result import (
    LoadNotOfferedError,
    MinRateFailedError,
    OnTrial,
    SearchResult,
    TrialLog,
    fmt_pps,
    goal_name,
)
from nfvlab.trial import Measurer, TrialResult

#: RFC 2544 section 24: trials should last at least 60 s.
RFC2544_TRIAL_DURATION_S = 60.0


def _check(min_rate_pps: float, max_rate_pps: float, loss_ratio: float,
           relative_width: float, duration_s: float) -> None:
    if not 0 < min_rate_pps < max_rate_pps:
        raise ValueError(
            f"need 0 < min_rate_pps < max_rate_pps, got {min_rate_pps}, {max_rate_pps}"
        )
    if not 0.0 <= loss_ratio < 1.0:
        raise ValueError(f"loss_ratio must be in [0, 1), got {loss_ratio}")
    if not 0.0 < relative_width < 1.0:
        raise ValueError(f"relative_width must be in (0, 1), got {relative_width}")
    if duration_s <= 0:
        raise ValueError(f"duration_s must be positive, got {duration_s}")


def _bisect(
    log: TrialLog,
    min_rate_pps: float,
    max_rate_pps: float,
    loss_ratio: float,
    relative_width: float,
    duration_s: float,
    known: Iterable[TrialResult] = (),
) -> SearchResult:
    """Bisect for one goal, starting from bounds implied by ``known`` trials.

    Known trials (same duration, not warm-up) seed the bounds: the lowest
    failing rate is an upper bound, the highest passing rate below it a lower
    bound. That is how the PDR search reuses the NDR search's trials.
    """
    goal = goal_name(loss_ratio)

    def passes(trial: TrialResult) -> bool:
        return trial.loss_ratio <= loss_ratio

    def passes_at(rate_pps: float) -> bool:
        try:
            return passes(log.run(rate_pps, duration_s))
        except LoadNotOfferedError:
            return False  # an upper bound the generator set: log.not_offered keeps it

    def show() -> None:
        log.show(f"{goal} [{fmt_pps(lo if lo_verified else None)}, {fmt_pps(hi)}]")

    usable = [t for t in known if t.kind != "warmup"
              and math.isclose(t.duration_s, duration_s, rel_tol=1e-3)]
    hi: Optional[float] = min((*(t.rate_pps for t in usable if not passes(t)), *log.not_offered), default=None)
    lo: Optional[float] = max(
        (t.rate_pps for t in usable if passes(t) and (hi is None or t.rate_pps < hi)),
        default=None,
    )
    lo_verified = lo is not None
    show()

    search_goal = rfc2544_goal(loss_ratio, duration_s, relative_width)

    def done() -> SearchResult:
        at_lo = [t for t in log.trials if lo is not None and math.isclose(t.rate_pps, lo, rel_tol=1e-9)
                 and math.isclose(t.duration_s, duration_s, rel_tol=1e-3)]
        cond = None if lo is None else conditional_throughput_pps(at_lo, search_goal, lo)
        return log.result(
            method="rfc2544",
            goal=goal,
            loss_ratio=loss_ratio,
            lower_bound_pps=lo,
            upper_bound_pps=hi,
            throughput_pps=lo,
            conditional_throughput_pps=cond,
            search_goal=search_goal,
            min_rate_pps=float(min_rate_pps),
            max_rate_pps=float(max_rate_pps),
        )

    if hi is None:
        if lo is not None and lo >= max_rate_pps:
            return done()
        if passes_at(max_rate_pps):
            lo, lo_verified = max_rate_pps, True
            show()
            return done()
        hi = max_rate_pps
    if hi <= min_rate_pps:
        raise MinRateFailedError(
            f"{goal.upper()} search: a trial at {hi} pps <= min_rate_pps="
            f"{min_rate_pps} already exceeded loss ratio {loss_ratio}",
            min_rate_pps=min_rate_pps, loss_ratio=loss_ratio, trials=log.trials,
        )
    if lo is None:
        lo = min_rate_pps  # assumed until a trial passes or it is confirmed below
    show()
    while (hi - lo) / hi > relative_width:
        mid = 0.5 * (lo + hi)
        if passes_at(mid):
            lo, lo_verified = mid, True
        else:
            hi = mid
        show()
    if not lo_verified:
        trial = log.run(min_rate_pps, duration_s)
        if not passes(trial):
            raise MinRateFailedError(
                f"{goal.upper()} search: min_rate_pps={min_rate_pps} fails the goal:"
                f" loss ratio {trial.loss_ratio:.6g} > {loss_ratio}; lower min_rate_pps",
                min_rate_pps=min_rate_pps, loss_ratio=loss_ratio, trials=log.trials,
            )
        lo_verified = True
        show()
    return done()


def rfc2544_search(
    measure: Measurer,
    min_rate_pps: float,
    max_rate_pps: float,
    loss_ratio: float = 0.0,
    relative_width: float = 0.005,
    duration_s: float = RFC2544_TRIAL_DURATION_S,
    *,
    warmup_duration_s: float = 0.0,
    on_trial: Optional[OnTrial] = None,
    progress: bool = False,
) -> SearchResult:
    """RFC 2544 binary search for the highest rate with loss ratio <= ``loss_ratio``.

    Parameters
    ----------
    measure : Measurer
        Runs one trial: ``measure(rate_pps, duration_s) -> TrialResult``.
    min_rate_pps, max_rate_pps : float
        Search interval of intended rates per direction, packets/s.
    loss_ratio : float
        Goal loss ratio, 0..1: 0 for NDR, e.g. 0.005 for PDR at 0.5 %.
    relative_width : float
        Stop when ``(upper - lower) / upper <= relative_width``.
    duration_s : float
        Intended duration of every trial, s (RFC 2544 asks for >= 60 s).
    warmup_duration_s : float
        If > 0, one warm-up trial at ``max_rate_pps`` of this duration first;
        its result is ignored, its duration counted in ``trial_seconds``.
    on_trial : callable, optional
        Called with each ``TrialResult`` right after its trial.
    progress : bool
        Show a progress bar on stderr with the current bounds.

    Returns
    -------
    SearchResult
        ``method="rfc2544"``; ``throughput_pps == lower_bound_pps`` (the RFC 2544
        throughput); ``upper_bound_pps`` is None when ``max_rate_pps`` passed
        (flag ``max-load-is-lower-bound``); ``search_goal`` is the RFC 9971 goal
        bisection applies (:func:`~nfvlab.search.goal.rfc2544_goal`: final trial
        duration = duration sum = ``duration_s``, exceed ratio 0, width
        ``relative_width``) and ``conditional_throughput_pps`` the lower bound x
        (1 - its trial's loss ratio).

    Raises
    ------
    MinRateFailedError
        If ``min_rate_pps`` itself does not meet the goal.
    LoadNotOfferedError
        If the generator could not offer ``min_rate_pps`` (every repeat of its trial invalid);
        a higher rate it could not offer is an upper bound (``not_offered_pps``), not an error.
    """
    _check(min_rate_pps, max_rate_pps, loss_ratio, relative_width, duration_s)
    with TrialLog(measure, on_trial, progress, desc=goal_name(loss_ratio)) as log:
        if warmup_duration_s > 0:
            log.run(max_rate_pps, warmup_duration_s, kind="warmup")
        return _bisect(log, min_rate_pps, max_rate_pps, loss_ratio,
                       relative_width, duration_s)


def ndr_pdr_bisect(
    measure: Measurer,
    min_rate_pps: float,
    max_rate_pps: float,
    pdr_loss_ratio: float = 0.005,
    relative_width: float = 0.005,
    duration_s: float = RFC2544_TRIAL_DURATION_S,
    *,
    warmup_duration_s: float = 0.0,
    on_trial: Optional[OnTrial] = None,
    progress: bool = False,
) -> dict[str, SearchResult]:
    """NDR then PDR by RFC 2544 bisection; the PDR search reuses NDR's trials.

    Every NDR trial also informs the PDR goal (a trial with loss <=
    ``pdr_loss_ratio`` is a PDR lower bound, one with more loss an upper
    bound), so the PDR bisection starts from those bounds instead of from
    ``[min_rate_pps, max_rate_pps]``.

    Parameters
    ----------
    measure : Measurer
        Runs one trial: ``measure(rate_pps, duration_s) -> TrialResult``.
    min_rate_pps, max_rate_pps : float
        Search interval of intended rates per direction, packets/s.
    pdr_loss_ratio : float
        PDR goal loss ratio, 0 < ratio < 1 (0.005 = 0.5 %).
    relative_width : float
        Stop each search when ``(upper - lower) / upper <= relative_width``.
    duration_s : float
        Intended duration of every trial, s.
    warmup_duration_s : float
        If > 0, one warm-up trial at ``max_rate_pps`` before the NDR search.
    on_trial : callable, optional
        Called with each ``TrialResult`` right after its trial.
    progress : bool
        Show a progress bar on stderr with the current bounds.

    Returns
    -------
    dict of str to SearchResult
        ``{"ndr": ..., "pdr": ...}``. ``ndr.trials`` holds the warm-up and NDR
        trials; ``pdr.trials`` holds *all* trials (NDR's included, as PDR's
        bounds rest on them), so ``pdr.trial_seconds`` is the cost of both.

    Raises
    ------
    MinRateFailedError
        If ``min_rate_pps`` fails the NDR (or PDR) goal.
    """
    if not 0.0 < pdr_loss_ratio < 1.0:
        raise ValueError(f"pdr_loss_ratio must be in (0, 1), got {pdr_loss_ratio}")
    _check(min_rate_pps, max_rate_pps, 0.0, relative_width, duration_s)
    with TrialLog(measure, on_trial, progress, desc="ndr+pdr") as log:
        if warmup_duration_s > 0:
            log.run(max_rate_pps, warmup_duration_s, kind="warmup")
        ndr = _bisect(log, min_rate_pps, max_rate_pps, 0.0, relative_width, duration_s)
        pdr = _bisect(log, min_rate_pps, max_rate_pps, pdr_loss_ratio,
                      relative_width, duration_s, known=list(log.trials))
    return {"ndr": ndr, "pdr": pdr}
