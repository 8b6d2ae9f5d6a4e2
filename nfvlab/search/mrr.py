"""Maximum receive rate (MRR): offer the maximum load, report what came out.

MRR (as in FD.io CSIT) is not a search: one or more trials at the maximum
intended rate, and the result is the mean receive rate. It is cheap and shows
where a DUT saturates, but it is not a loss-bounded throughput (NDR/PDR).
"""
from __future__ import annotations

from statistics import fmean
from typing import Optional

from nfvlab.search.result import OnTrial, SearchResult, TrialLog, fmt_pps
from nfvlab.trial import Measurer


def mrr(
    measure: Measurer,
    max_rate_pps: float,
    duration_s: float,
    repeats: int = 1,
    *,
    warmup_duration_s: float = 0.0,
    on_trial: Optional[OnTrial] = None,
    progress: bool = False,
) -> SearchResult:
    """Measure the maximum receive rate at ``max_rate_pps``.

    Parameters
    ----------
    measure : Measurer
        Runs one trial: ``measure(rate_pps, duration_s) -> TrialResult``.
    max_rate_pps : float
        Intended rate per direction for every trial, packets/s.
    duration_s : float
        Intended duration of each trial, s.
    repeats : int
        Number of trials; the result is their mean.
    warmup_duration_s : float
        If > 0, one warm-up trial of this duration first (kind ``"warmup"``),
        ignored in the result but counted in ``trial_seconds``.
    on_trial : callable, optional
        Called with each ``TrialResult`` right after its trial.
    progress : bool
        Show a progress bar on stderr.

    Returns
    -------
    SearchResult
        ``method="mrr"``, ``goal="mrr"``, ``loss_ratio=None``, no bounds, no
        search goal (RFC 9971 does not apply: ``regular`` is None);
        ``max_rate_pps`` is the rate offered;
        ``throughput_pps`` is the mean over the (non-warm-up) trials of the
        receive rate per direction (``TrialResult.forwarding_rate_pps``).
    """
    if max_rate_pps <= 0:
        raise ValueError(f"max_rate_pps must be positive, got {max_rate_pps}")
    if duration_s <= 0:
        raise ValueError(f"duration_s must be positive, got {duration_s}")
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    with TrialLog(measure, on_trial, progress, desc="mrr") as log:
        if warmup_duration_s > 0:
            log.run(max_rate_pps, warmup_duration_s, kind="warmup")
        rates = []
        for _ in range(repeats):
            rates.append(log.run(max_rate_pps, duration_s).forwarding_rate_pps)
            log.show(f"mrr ~{fmt_pps(fmean(rates))}")
        return log.result(
            method="mrr",
            goal="mrr",
            loss_ratio=None,
            lower_bound_pps=None,
            upper_bound_pps=None,
            throughput_pps=fmean(rates),
            max_rate_pps=float(max_rate_pps),
        )
