"""Packet loss versus offered load: a sweep from 0.1 % to 100 % of a maximum rate.

Instead of searching for one rate, run one trial at each of several fractions
of ``max_rate_pps`` and tabulate loss, offered and forwarding rates and latency
(like the loss-vs-load curves of the ITRI lab method). The table shows where
loss starts and how it grows past saturation.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

import pandas as pd

from nfvlab.search.result import OnTrial, TrialLog
from nfvlab.trial import Measurer, TrialResult

#: Fractions of the maximum rate swept by default: 0.1 % to 100 %.
DEFAULT_FRACTIONS: tuple[float, ...] = (
    0.001, 0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0,
)

COLUMNS: tuple[str, ...] = (
    "fraction", "rate_pps", "duration_s", "intended_packets", "sent_packets",
    "received_packets", "loss_ratio", "offered_rate_pps", "forwarding_rate_pps",
    "latency_p50_ns", "latency_p99_ns",
)


def _worst(trial: TrialResult, attr: str) -> float:
    values = [getattr(d.latency, attr) for d in trial.directions]
    values = [v for v in values if v is not None]
    return float(max(values)) if values else math.nan


def loss_sweep(
    measure: Measurer,
    max_rate_pps: float,
    fractions: Sequence[float] = DEFAULT_FRACTIONS,
    duration_s: float = 10.0,
    *,
    on_trial: Optional[OnTrial] = None,
    progress: bool = False,
) -> pd.DataFrame:
    """Measure packet loss at each fraction of ``max_rate_pps``, in the given order.

    Parameters
    ----------
    measure : Measurer
        Runs one trial: ``measure(rate_pps, duration_s) -> TrialResult``.
    max_rate_pps : float
        Rate per direction that fraction 1.0 stands for, packets/s.
    fractions : sequence of float
        Fractions of ``max_rate_pps`` to offer, each in (0, 1]; default 0.1 %,
        1 %, 5 %, 10 %, 20 %, ... 100 %.
    duration_s : float
        Intended duration of each trial, s.
    on_trial : callable, optional
        Called with each ``TrialResult`` right after its trial.
    progress : bool
        Show a progress bar on stderr.

    Returns
    -------
    pandas.DataFrame
        One row per trial (tidy), columns:

        - ``fraction``: fraction of ``max_rate_pps`` offered (0..1).
        - ``rate_pps``: intended rate per direction, packets/s.
        - ``duration_s``: intended trial duration, s.
        - ``intended_packets``, ``sent_packets``, ``received_packets``: counts
          summed over directions.
        - ``loss_ratio``: (intended - received) / intended, 0..1 (unsent
          packets count as lost).
        - ``offered_rate_pps``, ``forwarding_rate_pps``: achieved send and
          receive rates per direction, packets/s.
        - ``latency_p50_ns``, ``latency_p99_ns``: one-way latency percentiles,
          ns, the worst direction; NaN when no latency probe came back.
    """
    if max_rate_pps <= 0:
        raise ValueError(f"max_rate_pps must be positive, got {max_rate_pps}")
    if duration_s <= 0:
        raise ValueError(f"duration_s must be positive, got {duration_s}")
    fractions = [float(f) for f in fractions]
    bad = [f for f in fractions if not 0.0 < f <= 1.0]
    if not fractions or bad:
        raise ValueError(f"fractions must be non-empty and in (0, 1], got {bad or fractions}")
    rows = []
    with TrialLog(measure, on_trial, progress, desc="loss sweep") as log:
        for fraction in fractions:
            rate_pps = fraction * max_rate_pps
            log.show(f"loss sweep {fraction:.1%}")
            t = log.run(rate_pps, duration_s)
            rows.append((
                fraction, rate_pps, float(duration_s), t.intended_packets,
                t.sent_packets, t.received_packets, t.loss_ratio,
                t.offered_rate_pps, t.forwarding_rate_pps,
                _worst(t, "p50_ns"), _worst(t, "p99_ns"),
            ))
    return pd.DataFrame(rows, columns=list(COLUMNS))
