"""What a search returns, the errors it raises, and the trial log searches share.

Every search in :mod:`nfvlab.search` runs its trials through a :class:`TrialLog`,
which calls the injected measurer, hands each :class:`~nfvlab.trial.TrialResult`
to the caller's ``on_trial`` hook right away (so records can be appended
durably while the search is still running), keeps the trial count and the
trial-seconds, and drives an optional tqdm progress bar on stderr.
"""
from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from typing import Callable, Iterable, Optional

from tqdm import tqdm

from nfvlab.trial import Measurer, TrialResult

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


@dataclass(frozen=True)
class SearchResult:
    """Outcome of one search for one goal.

    All rates are *per direction*, in packets/s, like ``TrialResult.rate_pps``.
    """

    method: str
    """``"mrr"``, ``"rfc2544"`` (binary search) or ``"mlrsearch"``."""
    goal: str
    """``"ndr"`` (zero loss), ``"pdr"`` (loss ratio > 0) or ``"mrr"``."""
    loss_ratio: Optional[float]
    """Goal loss ratio, 0..1 (0 for NDR); None for MRR, which has no goal."""
    lower_bound_pps: Optional[float]
    """Highest rate known to meet the goal (relevant lower bound for MLRsearch),
    packets/s per direction; None where undefined (MRR)."""
    upper_bound_pps: Optional[float]
    """Lowest rate known to fail the goal, packets/s per direction; None when no
    rate failed (the maximum rate passed) or for MRR."""
    throughput_pps: Optional[float]
    """The headline number, packets/s per direction: the lower bound for
    bisection; the conditional throughput for MLRsearch when defined, else its
    relevant lower bound; the mean receive rate for MRR."""
    conditional_throughput_pps: Optional[float]
    """MLRsearch's conditional throughput (lower bound x (1 - the quantile loss
    ratio)), packets/s per direction; None for other methods."""
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

    def to_dict(self) -> dict:
        """Return a JSON-ready dict; trials become dicts via ``TrialResult.to_dict``."""
        d = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name != "trials"
        }
        d["trials"] = [t.to_dict() for t in self.trials]
        return d


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
    """

    def __init__(
        self,
        measure: Measurer,
        on_trial: Optional[OnTrial] = None,
        progress: bool = False,
        desc: str = "search",
    ) -> None:
        if not callable(measure) and callable(getattr(measure, "measure", None)):
            measure = measure.measure  # an object with a .measure(rate_pps, duration_s)
        self._measure = measure
        self._on_trial = on_trial
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
        """
        result = self._measure(float(rate_pps), float(duration_s))
        if kind is not None and result.kind != kind:
            result = dataclasses.replace(result, kind=kind)
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
    ) -> SearchResult:
        """Build a :class:`SearchResult` holding all trials logged so far."""
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
        )


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
