"""What a search returns, the errors it raises, and the trial log searches share.

Every search in :mod:`nfvlab.search` runs its trials through a :class:`TrialLog`,
which calls the injected measurer, hands each :class:`~nfvlab.trial.TrialResult`
to the caller's ``on_trial`` hook right away (so records can be appended
durably while the search is still running), keeps the trial count and the
trial-seconds, and drives an optional tqdm progress bar on stderr. It is also
the one place where invalid trials (the generator did not offer the load on
schedule) are recorded, repeated a bounded number of times and kept away from
the search.
"""
from __future__ import annotations

import dataclasses
import math
import sys
import time
from dataclasses import dataclass
from typing import Callable, Iterable, Optional

from tqdm import tqdm

from nfvlab.system import signals
from nfvlab.search.goal import GOAL_FIELDS, GoalParams
from nfvlab.trial import MAX_INVALID_REPEATS, Measurer, TrialResult

OnTrial = Callable[[TrialResult], None]
"""Hook called with each trial's result right after the trial, in order."""


class SearchError(RuntimeError):
    """A search could not produce a result.

    ``trials`` holds every trial run before the failure (they were also passed
    to ``on_trial``), so a caller can still record or inspect them.
    """

    def __init__(self, message: str, trials: Iterable[TrialResult] = ()) -> None:
        super().__init__(message)
        self.trials: tuple[TrialResult, ...] = tuple(trials)


class MinRateFailedError(SearchError):
    """Even the minimum rate fails the goal loss ratio: no lower bound exists.

    Attributes
    ----------
    min_rate_pps : float
        The minimum intended rate per direction, packets/s.
    loss_ratio : float or None
        Goal loss ratio that the minimum rate failed (None if unknown).
    """

    def __init__(
        self,
        message: str,
        min_rate_pps: float,
        loss_ratio: Optional[float] = None,
        trials: Iterable[TrialResult] = (),
    ) -> None:
        super().__init__(message, trials)
        self.min_rate_pps = min_rate_pps
        self.loss_ratio = loss_ratio


class SearchTimeoutError(SearchError):
    """The search took longer than its allowed wall-clock time."""


class GeneratorFaultError(SearchError):
    """Every repeat of a trial was invalid (the generator could not offer the rate on schedule, or the
    DUT never settled from an earlier trial: :attr:`nfvlab.trial.TrialResult.valid`).

    ``invalid`` holds those invalid trials (they were passed to ``on_trial`` too).
    """

    def __init__(self, message: str, trials: Iterable[TrialResult] = (),
                 invalid: Iterable[TrialResult] = ()) -> None:
        super().__init__(message, trials)
        self.invalid: tuple[TrialResult, ...] = tuple(invalid)


class LoadNotOfferedError(GeneratorFaultError):
    """Every repeat of the trial at one load was invalid: the generator could not offer
    ``rate_pps`` (packets/s per direction) on schedule.

    A bounded search (bisection, MLRsearch) counts such a load as failing, so it becomes an
    upper bound the generator set (:attr:`SearchResult.not_offered_pps`) and the search goes on
    below it; it ends the search only at the minimum rate, and in a search without bounds (MRR).
    """

    def __init__(self, message: str, rate_pps: float, trials: Iterable[TrialResult] = (),
                 invalid: Iterable[TrialResult] = ()) -> None:
        super().__init__(message, trials, invalid)
        self.rate_pps = float(rate_pps)


#: Flags that make a goal result irregular (RFC 9971 "Irregular Goal Result").
IRREGULAR_FLAGS = ("max-load-is-lower-bound", "width-not-reached")
#: Every flag a search result may carry; see :attr:`SearchResult.flags`.
FLAGS = (*IRREGULAR_FLAGS, "lower-bound-is-min-load")


@dataclass(frozen=True)
class SearchResult:
    """Outcome of one search for one goal (an RFC 9971 Goal Result and what it rests on).

    Units: every rate and load is *per direction* (RFC 9971's per-interface
    Trial Load), in packets/s, like ``TrialResult.rate_pps``; multiply by
    ``directions`` for the aggregate over directions. Durations are in
    seconds, ratios in 0..1. Counts, and so loss ratios, are summed over
    directions (RFC 9971's Trial Forwarding Ratio).
    """

    method: str
    """``"mrr"``, ``"rfc2544"`` (binary search) or ``"mlrsearch"``."""
    goal: str
    """``"ndr"`` (zero loss), ``"pdr"`` (loss ratio > 0) or ``"mrr"``."""
    loss_ratio: Optional[float]
    """Goal loss ratio, 0..1 (0 for NDR); None for MRR, which has no goal."""
    lower_bound_pps: Optional[float]
    """RFC 9971 Relevant Lower Bound, packets/s per direction: for bisection the
    highest rate whose trial met the goal; None where undefined (MRR)."""
    upper_bound_pps: Optional[float]
    """RFC 9971 Relevant Upper Bound, packets/s per direction: the lowest rate
    classified as failing the goal; None when no rate failed (the maximum rate
    is a lower bound: flag ``max-load-is-lower-bound``) or for MRR."""
    throughput_pps: Optional[float]
    """The headline number, packets/s per direction: the lower bound for
    bisection (RFC 2544 throughput); the conditional throughput for MLRsearch
    when defined, else its relevant lower bound; the mean receive rate for MRR."""
    conditional_throughput_pps: Optional[float]
    """RFC 9971 Conditional Throughput at the relevant lower bound, packets/s per
    direction (lower bound x (1 - the goal's quantile loss ratio),
    :func:`nfvlab.search.goal.conditional_throughput_pps`). For RFC 2544
    bisection (goal: one trial decides, exceed ratio 0) it is the lower bound x
    (1 - that trial's loss ratio): equal to the lower bound for NDR. None for MRR
    or without a lower bound."""
    n_trials: int
    """Number of trials in ``trials`` (warm-up included)."""
    trial_seconds: float
    """Sum of the intended durations of ``trials``, seconds (warm-up included);
    traffic time only, without set-up overheads."""
    trials: tuple[TrialResult, ...]
    """Every trial this result rests on, in the order they ran."""
    generator_limited: Optional[bool] = None
    """Whether the traffic generator, not the DUT, limited the result; searches
    leave it None and callers fill it in with :func:`dataclasses.replace`."""
    search_goal: Optional[GoalParams] = None
    """The RFC 9971 Search Goal the search applied (all attributes, also those
    not tweaked); None for MRR. Records flatten it to ``goal_*`` fields."""
    min_rate_pps: Optional[float] = None
    """RFC 9971 Min Load: lowest intended rate the search could use, packets/s per direction."""
    max_rate_pps: Optional[float] = None
    """RFC 9971 Max Load: highest intended rate the search could use, packets/s per direction."""
    directions: Optional[int] = None
    """Traffic directions of the trials (1 or 2): the factor from per-direction
    rates to the aggregate over directions."""
    flags: tuple[str, ...] = ()
    """Notable situations, from :data:`FLAGS`: ``max-load-is-lower-bound`` (no
    relevant upper bound was found: irregular), ``width-not-reached`` (the
    bounds are farther apart than the goal width: irregular),
    ``lower-bound-is-min-load`` (the lower bound is the search's minimum rate)."""
    invalid_trials: int = 0
    """Trials the generator ruled invalid and the search repeated (not in ``trials``,
    not in ``n_trials``; the records keep them with ``valid: false``)."""
    not_offered_pps: Optional[float] = None
    """Lowest rate per direction, packets/s, the generator could not offer in this search
    (every repeat of its trial invalid: :class:`LoadNotOfferedError`); the search counted it
    as failing, so an upper bound there is the generator's (``generator_limited``). None when
    every load was offered. No trial at this rate is in ``trials``."""

    @property
    def regular(self) -> Optional[bool]:
        """RFC 9971: a Regular Goal Result (no irregular flag); None for MRR (no goal)."""
        if self.search_goal is None:
            return None
        return not any(f in IRREGULAR_FLAGS for f in self.flags)

    @property
    def bounds_relative_width(self) -> Optional[float]:
        """``(upper - lower) / upper`` of the relevant bounds (the goal width's measure); None without both."""
        lo, hi = self.lower_bound_pps, self.upper_bound_pps
        if lo is None or hi is None or hi <= 0:
            return None
        return (hi - lo) / hi

    def to_dict(self) -> dict:
        """Return a JSON-ready dict; trials become dicts via ``TrialResult.to_dict``.

        The search goal is flattened to ``goal_loss_ratio``, ``goal_exceed_ratio``,
        ``goal_final_trial_duration_s``, ``goal_duration_sum_s``,
        ``goal_relative_width``, ``goal_initial_trial_duration_s`` (all None for
        MRR); ``flags`` becomes a list; ``regular`` and ``bounds_relative_width``
        are added.
        """
        d = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name not in ("trials", "search_goal")
        }
        goal = self.search_goal
        d.update(goal.to_dict() if goal is not None else dict.fromkeys(GOAL_FIELDS))
        d["flags"] = list(self.flags)
        d["regular"] = self.regular
        d["bounds_relative_width"] = self.bounds_relative_width
        d["trials"] = [t.to_dict() for t in self.trials]
        return d


def goal_flags(lower_bound_pps: Optional[float], upper_bound_pps: Optional[float],
               min_rate_pps: Optional[float], relative_width: Optional[float]) -> tuple[str, ...]:
    """The :data:`FLAGS` that apply to a goal result with these bounds (rates in packets/s per direction)."""
    flags = []
    if lower_bound_pps is not None and upper_bound_pps is None:
        flags.append("max-load-is-lower-bound")
    if (lower_bound_pps is not None and upper_bound_pps is not None and relative_width is not None
            and (upper_bound_pps - lower_bound_pps) / upper_bound_pps > relative_width * (1 + 1e-6)):
        flags.append("width-not-reached")
    if (lower_bound_pps is not None and min_rate_pps is not None
            and math.isclose(lower_bound_pps, min_rate_pps, rel_tol=1e-9)):
        flags.append("lower-bound-is-min-load")
    return tuple(flags)


def total_cost(results: Iterable[SearchResult]) -> tuple[int, float]:
    """Count the distinct trials behind several results.

    Results of one combined search share trials (MLRsearch's NDR and PDR hold
    the same trials; bisection's PDR holds NDR's trials too), so summing
    ``n_trials`` would count some twice. Trials are told apart by identity.

    Parameters
    ----------
    results : iterable of SearchResult
        Results whose trials to count.

    Returns
    -------
    tuple of (int, float)
        Number of distinct trials and the sum of their intended durations, s.
    """
    seen: dict[int, TrialResult] = {}
    for result in results:
        for trial in result.trials:
            seen.setdefault(id(trial), trial)
    return len(seen), float(sum(t.duration_s for t in seen.values()))


class TrialLog:
    """Runs trials for a search: measure, record, call ``on_trial``, show progress.

    Parameters
    ----------
    measure : Measurer
        Called as ``measure(rate_pps, duration_s)``; returns a ``TrialResult``.
    on_trial : callable, optional
        Called with each ``TrialResult`` right after its trial, in order.
    progress : bool
        Show a tqdm bar on stderr (trial count plus what the search reports
        through :meth:`show`).
    desc : str
        Label of the progress bar.
    max_invalid_repeats : int, optional
        How often an invalid trial (``TrialResult.valid`` False) is repeated before
        :class:`LoadNotOfferedError`; default: the measurer's ``max_invalid_repeats``
        attribute, else :data:`nfvlab.trial.MAX_INVALID_REPEATS`.
    invalid_pause_s : callable, optional
        Seconds to wait before repeat k (1, 2, ...) of an invalid trial, so a burst of host
        noise can pass; default: the measurer's ``invalid_pause_s`` attribute
        (:func:`nfvlab.trial.invalid_repeat_pause_s` for a generator), else no pause.
    """

    def __init__(
        self,
        measure: Measurer,
        on_trial: Optional[OnTrial] = None,
        progress: bool = False,
        desc: str = "search",
        max_invalid_repeats: Optional[int] = None,
        invalid_pause_s: Optional[Callable[[int], float]] = None,
    ) -> None:
        if max_invalid_repeats is None:
            max_invalid_repeats = getattr(measure, "max_invalid_repeats", MAX_INVALID_REPEATS)
        self.max_invalid_repeats = int(max_invalid_repeats)
        if invalid_pause_s is None:
            invalid_pause_s = getattr(measure, "invalid_pause_s", None) or (lambda _repeat: 0.0)
        self._invalid_pause_s = invalid_pause_s
        if not callable(measure) and callable(getattr(measure, "measure", None)):
            measure = measure.measure  # an object with a .measure(rate_pps, duration_s)
        self._measure = measure
        self._on_trial = on_trial
        self.invalid: list[TrialResult] = []
        """Invalid trials, in order (recorded through ``on_trial``, never given to the search)."""
        self.not_offered: list[float] = []
        """Rates (packets/s per direction) whose every repeat was invalid, in order."""
        self.trials: list[TrialResult] = []
        self.trial_seconds = 0.0
        """Sum of intended durations of the trials run so far, s."""
        self._bar = tqdm(
            desc=desc, unit="trial", file=sys.stderr, disable=not progress,
            dynamic_ncols=True,
        )

    def run(
        self, rate_pps: float, duration_s: float, kind: Optional[str] = None
    ) -> TrialResult:
        """Run one trial at ``rate_pps`` per direction for ``duration_s`` seconds.

        ``kind`` (e.g. ``"warmup"``) overrides the result's ``kind`` when given.
        A SIGINT/SIGTERM swallowed since the last trial is raised here, before
        the trial (:func:`nfvlab.system.signals.checkpoint`). Raises
        :class:`LoadNotOfferedError` when the trial and its repeats were all invalid.
        """
        invalid_here = []
        while True:
            signals.checkpoint()
            result = self._measure(float(rate_pps), float(duration_s))
            if kind is not None and result.kind != kind:
                result = dataclasses.replace(result, kind=kind)
            if result.valid:
                break
            # Not a measurement of the DUT: keep it in the records, repeat it (bounded).
            self.invalid.append(result)
            invalid_here.append(result)
            if self._on_trial is not None:
                self._on_trial(result)
            self._bar.set_postfix_str(f"invalid trial at {rate_pps:,.0f} pps: repeated", refresh=False)
            if len(invalid_here) > self.max_invalid_repeats:
                self.not_offered.append(float(rate_pps))
                raise LoadNotOfferedError(
                    f"no valid trial at {rate_pps:,.0f} pps: {len(invalid_here)} "
                    f"invalid trial(s) in a row, the last: {result.invalid_reason}",
                    rate_pps, trials=self.trials, invalid=self.invalid)
            time.sleep(self._invalid_pause_s(len(invalid_here)))
        self.trials.append(result)
        self.trial_seconds += float(result.duration_s)  # intended duration, s
        if self._on_trial is not None:
            self._on_trial(result)
        self._bar.update(1)
        self._bar.set_postfix_str(
            f"last {rate_pps:,.0f} pps x {duration_s:g} s loss {result.loss_ratio:.3g}",
            refresh=False,
        )
        return result

    def show(self, text: str) -> None:
        """Show what the search knows (e.g. current bounds) on the progress bar."""
        self._bar.set_description_str(text, refresh=True)

    def close(self) -> None:
        """Close the progress bar."""
        self._bar.close()

    def __enter__(self) -> "TrialLog":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def result(
        self,
        *,
        method: str,
        goal: str,
        loss_ratio: Optional[float],
        lower_bound_pps: Optional[float],
        upper_bound_pps: Optional[float],
        throughput_pps: Optional[float],
        conditional_throughput_pps: Optional[float] = None,
        search_goal: Optional[GoalParams] = None,
        min_rate_pps: Optional[float] = None,
        max_rate_pps: Optional[float] = None,
    ) -> SearchResult:
        """Build a :class:`SearchResult` holding all trials logged so far.

        ``flags`` follow from the bounds, the minimum rate and the goal's width
        (:func:`goal_flags`; none without ``search_goal``); ``directions`` from
        the trials.
        """
        flags = () if search_goal is None else goal_flags(
            lower_bound_pps, upper_bound_pps, min_rate_pps, search_goal.relative_width)
        return SearchResult(
            method=method,
            goal=goal,
            loss_ratio=loss_ratio,
            lower_bound_pps=lower_bound_pps,
            upper_bound_pps=upper_bound_pps,
            throughput_pps=throughput_pps,
            conditional_throughput_pps=conditional_throughput_pps,
            n_trials=len(self.trials),
            trial_seconds=self.trial_seconds,
            trials=tuple(self.trials),
            search_goal=search_goal,
            min_rate_pps=min_rate_pps,
            max_rate_pps=max_rate_pps,
            directions=max((len(t.directions) for t in self.trials), default=None),
            flags=flags,
            invalid_trials=len(self.invalid),
            not_offered_pps=self.lowest_not_offered(),
        )

    def lowest_not_offered(self) -> Optional[float]:
        """The lowest rate the generator could not offer so far, packets/s per direction (None: none)."""
        return min(self.not_offered, default=None)


def goal_name(loss_ratio: float) -> str:
    """``"ndr"`` for a zero goal loss ratio, else ``"pdr"``."""
    return "ndr" if loss_ratio == 0 else "pdr"


def fmt_pps(rate_pps: Optional[float]) -> str:
    """Short human form of a rate for progress bars and messages."""
    if rate_pps is None:
        return "?"
    for div, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(rate_pps) >= div:
            return f"{rate_pps / div:.4g}{unit}pps"
    return f"{rate_pps:.4g}pps"
