"""From validated params to search results: the one path the CLI, notebooks and pipeline share.

    backend = labs.backend_for(lab_params)
    with bench(backend, lab_params.generator, Scenario("linux-bridge"), traffic) as (session, gen):
        results = search(measurer(gen, 64, traffic), 64, SearchParams(), max_rate_pps=...)

Input checks that need no lab (rates vs line rate, frame size vs the path's
MTU, search bounds) run in :func:`check_inputs` before anything is created;
what the lab cannot realize is asked of the backend (``backend.check``).
"""
from __future__ import annotations

import math
import random
from typing import Callable, Optional

from nfvlab import linerate
from nfvlab.calibrate import mark_generator_limited
from nfvlab.linerate import FrameSize
from nfvlab.params import SearchParams, TrafficParams
from nfvlab.scenario import Scenario
from nfvlab.search import loss_sweep, mlrsearch, mrr, ndr_pdr_bisect, rfc2544_search
from nfvlab.traffic import TrafficGenerator
from nfvlab.traffic.select import bench  # noqa: F401  (measure.bench, as callers know it)
from nfvlab.trial import GeneratorMeasurer, TrialResult

OnTrial = Callable[[TrialResult], None]
#: Longest trial accepted, seconds (a day: beyond that counters and schedules stop making sense).
MAX_DURATION_S = 86_400.0


class InputError(ValueError):
    """Bad input detected before any lab resource exists (one-line message)."""


def check_inputs(frame_size: FrameSize, *, port_speed: str, mtu: int,
                 rates_pps: tuple[float, ...] = (), duration_s: Optional[float] = None) -> None:
    """Reject impossible requests before building anything (``mtu``: the path's IP MTU, bytes)."""
    try:
        largest = max(linerate.IMIX.sizes) if isinstance(frame_size, str) else frame_size
        linerate.mean_frame_bytes(frame_size)
    except ValueError as err:
        raise InputError(f"--frame-size: {err}") from None
    if largest - 18 > mtu:
        raise InputError(f"--frame-size {largest}: above the path MTU ({mtu} B + 18 B of header/FCS)")
    line = linerate.max_pps(port_speed, frame_size)
    for r in rates_pps:
        if not (r > 0 and math.isfinite(r)):
            raise InputError(f"--rate-pps {r:g}: must be above 0 and finite")
        if r > line:
            raise InputError(f"--rate-pps {r:g}: above the {port_speed} line rate at {frame_size} B "
                             f"({line:,.0f} pps)")
    if duration_s is not None and not (0 < duration_s <= MAX_DURATION_S):
        raise InputError(f"--duration-s {duration_s:g}: must be above 0 and at most {MAX_DURATION_S:g} s")


def check_scenario(backend, scenario: Scenario, frame_sizes, *, port_speed: str,
                   rates_pps: tuple[float, ...] = (), duration_s: Optional[float] = None) -> None:
    """:class:`InputError` for the first reason ``backend`` cannot run ``scenario`` at ``frame_sizes``."""
    reasons = backend.ready() or backend.check(scenario)
    if reasons:
        raise InputError(reasons[0])
    mtu = backend.mtu(scenario)
    for fs in frame_sizes:
        check_inputs(fs, port_speed=port_speed, mtu=mtu, rates_pps=rates_pps, duration_s=duration_s)


def default_max_rate(port_speed: str, frame_size: FrameSize, ceiling_pps: Optional[float] = None) -> float:
    """Line rate, capped at 1.2 x the generator's calibrated ceiling when known, packets/s."""
    line = linerate.max_pps(port_speed, frame_size)
    return min(line, 1.2 * ceiling_pps) if ceiling_pps else line


def search(measure, frame_size: FrameSize, sp: SearchParams, *, max_rate_pps: float,
           ceiling_pps: Optional[float] = None, on_trial: Optional[OnTrial] = None,
           progress: bool = True, warmup_s: float = 0.0):
    """Run the search ``sp`` asks for; return ``list[SearchResult]`` (a DataFrame for sweeps).

    ``min_rate_pps`` is used as given; a maximum rate not above it is an
    :class:`InputError`. Results carry ``generator_limited`` against ``ceiling_pps``
    (None: the generator is not calibrated at this frame size).
    """
    goals = {}
    if sp.ndr:
        goals["ndr"] = 0.0
    if sp.pdr_loss_ratio is not None:
        goals["pdr"] = sp.pdr_loss_ratio
    lo = sp.min_rate_pps
    if sp.method in ("rfc2544", "mlrsearch") and not max_rate_pps > lo:
        raise InputError(f"search: max_rate_pps {max_rate_pps:,.0f} must be above min_rate_pps {lo:,.0f}")
    if sp.method == "mrr":
        results = [mrr(measure, max_rate_pps, sp.final_trial_duration_s, warmup_duration_s=warmup_s,
                       on_trial=on_trial, progress=progress)]
    elif sp.method == "sweep":
        return loss_sweep(measure, max_rate_pps, sp.sweep_fractions, sp.final_trial_duration_s,
                          on_trial=on_trial, progress=progress)
    elif sp.method == "rfc2544":
        if not goals:
            raise InputError("search: ask for ndr and/or pdr")
        if set(goals) == {"ndr", "pdr"}:
            got = ndr_pdr_bisect(measure, lo, max_rate_pps, pdr_loss_ratio=goals["pdr"],
                                 relative_width=sp.relative_width, duration_s=sp.final_trial_duration_s,
                                 warmup_duration_s=warmup_s, on_trial=on_trial, progress=progress)
            results = list(got.values()) if isinstance(got, dict) else list(got)
        else:
            (name, ratio), = goals.items()
            results = [rfc2544_search(measure, lo, max_rate_pps, loss_ratio=ratio,
                                      relative_width=sp.relative_width,
                                      duration_s=sp.final_trial_duration_s, warmup_duration_s=warmup_s,
                                      on_trial=on_trial, progress=progress)]
    else:
        if not goals:
            raise InputError("search: ask for ndr and/or pdr")
        got = mlrsearch(measure, lo, max_rate_pps, goals=goals, relative_width=sp.relative_width,
                        initial_trial_duration_s=sp.initial_trial_duration_s,
                        final_trial_duration_s=sp.final_trial_duration_s,
                        duration_sum_s=sp.duration_sum_s, exceed_ratio=sp.exceed_ratio,
                        search_duration_max_s=sp.search_duration_max_s,
                        warmup_duration_s=warmup_s, on_trial=on_trial, progress=progress)
        results = list(got.values())
    return [mark_generator_limited(r, ceiling_pps) for r in results]


def dithered_top(max_rate_pps: float, relative_width: float, seed: str) -> float:
    """``max_rate_pps`` lowered at random within one goal width: ``max x (1 + w)^-u``, ``u`` uniform in
    [0, 1) drawn from ``seed`` (the same seed, e.g. run id and a search's labels, the same top: a
    resumed run searches as it would have).

    A search's loads lie on a grid anchored at its top rate; with one top every repetition rounds the
    NDR to the same grid points, an error of up to one goal width that no number of repetitions
    averages out (three repetitions read 56,338 pps three times against 55,214 three times). A top
    shifted per repetition moves the grid, so the rounding error varies and averages out."""
    return max_rate_pps * (1 + relative_width) ** -random.Random(seed).random()


def measurer(gen: TrafficGenerator, frame_size: FrameSize, traffic: TrafficParams,
             extra: Optional[dict] = None, search: Optional[SearchParams] = None) -> GeneratorMeasurer:
    """The measurer of ``gen`` at ``frame_size``; ``search`` sets how often invalid trials are repeated."""
    repeats = search.max_invalid_repeats if search is not None else SearchParams().max_invalid_repeats
    return GeneratorMeasurer(gen, frame_size, bidirectional=traffic.bidirectional, extra=extra,
                             max_invalid_repeats=repeats)


__all__ = ["InputError", "bench", "check_inputs", "check_scenario", "default_max_rate", "dithered_top", "measurer",
           "search"]
