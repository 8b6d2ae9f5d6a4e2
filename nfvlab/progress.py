"""Progress lines of a run: one per finished unit (a search, a tool run), with the estimate of what is left."""
from __future__ import annotations

import sys
import time
from typing import Optional, TextIO

from nfvlab.scenario.cni import TWIN


def duration_text(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    return f"{m} min {s:02d} s" if m else f"{s} s"


class Progress:
    """One line per finished search (tool run): ``i/N``, what was measured, trials, elapsed, estimate left.

    Plain lines (no carriage returns) so they read the same in a terminal, in
    ``papermill --log-output`` (``dvc repro``) and in a log file.
    """

    def __init__(self, name: str, total: int, *, enabled: bool = True, stream: Optional[TextIO] = None,
                 count_trials: bool = True) -> None:
        self.name, self.total, self.enabled = name, total, enabled
        self.count_trials = count_trials
        """Lines say the trials so far (searches; not tool runs, which have none)."""
        self.stream = stream
        self.done = 0
        self.trials = 0
        self.t0 = time.monotonic()

    def note(self, text: str) -> None:
        if self.enabled:
            print(f"{self.name}: {text}", file=self.stream or sys.stdout, flush=True)

    def trial(self) -> None:
        self.trials += 1

    def unit_seconds(self) -> Optional[float]:
        """Mean seconds of the units (searches, tool runs) counted so far; None before the first."""
        return (time.monotonic() - self.t0) / self.done if self.done else None

    def update(self, what: str, outcome: str) -> None:
        self.done += 1
        elapsed = time.monotonic() - self.t0
        left = elapsed / self.done * (self.total - self.done)
        trials = f"{self.trials} trials, " if self.count_trials else ""
        self.note(f"{self.done}/{self.total} {what}: {outcome}; {trials}"
                  f"elapsed {duration_text(elapsed)}, about {duration_text(left)} left")



def report_unit(bar: Progress, what: str, outcome: str, extra: Optional[dict]) -> None:
    """A unit's progress line: counted (:meth:`Progress.update`), or, for an added repetition
    (``extra``: its labels), a line saying so and why."""
    if extra and extra.get("arm") == TWIN:
        bar.update(f"{what} (A/A twin)", outcome)
    elif extra:
        bar.note(f"added {what} ({extra['added_reason']}): {outcome}")
    else:
        bar.update(what, outcome)

