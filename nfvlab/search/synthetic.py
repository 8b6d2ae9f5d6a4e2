"""A synthetic device under test: a :class:`~nfvlab.trial.Measurer` with a known answer.

Used by tests, benchmarks of the search algorithms and documentation examples.
It is a *model*, not a data path: no packet is built or sent; the counters of
each :class:`~nfvlab.trial.TrialResult` are computed from a few parameters, so
the throughput a correct search must find is known in advance.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Optional

from nfvlab.trial import FrameSize, TrialResult
from nfvlab.traffic.stats import DirectionStats, LatencyStats


@dataclass
class SyntheticDut:
    """A model DUT with a known answer: forwards up to a capacity, drops the rest.

    This is a model with a known answer, not a data path. Per direction and per
    trial of intended rate ``r`` (packets/s) and duration ``d`` (s):

    * intended packets ``I = round(r * d)``;
    * sent packets ``S = min(I, round(generator_ceiling_pps * d))`` -- a
      generator that cannot keep up leaves an unsent shortfall, which counts as
      loss (``TrialResult.loss_ratio`` uses intended packets);
    * received packets ``R = min(S, round(c * d))`` where ``c`` is the trial's
      capacity: ``capacity_pps``, or with ``capacity_jitter`` > 0
      ``capacity_pps * (1 + capacity_jitter * N(0, 1))`` drawn once per trial
      from a generator seeded with ``seed``;
    * with probability ``spurious_loss_probability`` per trial, the first
      direction loses ``spurious_loss_packets`` more (loss unrelated to load).

    Without noise the known answers are :meth:`throughput_pps` (NDR for loss
    ratio 0, ``min(capacity, ceiling) / (1 - loss_ratio)`` for PDR) and
    :meth:`expected_loss_ratio` (``1 - min(capacity, ceiling) / rate``).

    Parameters
    ----------
    capacity_pps : float
        Forwarding capacity per direction, packets/s.
    directions : int
        1 (unidirectional) or 2 (bidirectional, same capacity each way).
    generator_ceiling_pps : float, optional
        Most the generator can send per direction, packets/s; None = unlimited.
    capacity_jitter : float
        Relative standard deviation of the per-trial capacity (0 = none).
    spurious_loss_probability : float
        Probability, per trial, of a burst of loss unrelated to load.
    spurious_loss_packets : int
        Packets lost in such a burst.
    seed : int or None
        Seed of the noise generator (None: not reproducible).
    frame_size : int or str
        Frame size recorded in the results, bytes (or an IMIX name).
    latency_ns : float
        Median one-way latency when not overloaded, ns.
    overload_latency_ns : float
        Latency added when the DUT drops packets (full queue), ns.
    probe_rate_pps : float
        Rate of the (modelled) latency probes, packets/s.
    """

    capacity_pps: float
    directions: int = 1
    generator_ceiling_pps: Optional[float] = None
    capacity_jitter: float = 0.0
    spurious_loss_probability: float = 0.0
    spurious_loss_packets: int = 1
    seed: Optional[int] = 0
    frame_size: FrameSize = 64
    latency_ns: float = 10_000.0
    overload_latency_ns: float = 500_000.0
    probe_rate_pps: float = 1_000.0
    n_calls: int = field(default=0, init=False)
    """Number of trials run so far."""
    _rng: random.Random = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.capacity_pps <= 0:
            raise ValueError(f"capacity_pps must be positive, got {self.capacity_pps}")
        if self.directions not in (1, 2):
            raise ValueError(f"directions must be 1 or 2, got {self.directions}")
        if self.generator_ceiling_pps is not None and self.generator_ceiling_pps <= 0:
            raise ValueError("generator_ceiling_pps must be positive or None")
        if self.capacity_jitter < 0:
            raise ValueError("capacity_jitter must be >= 0")
        if not 0.0 <= self.spurious_loss_probability <= 1.0:
            raise ValueError("spurious_loss_probability must be in [0, 1]")
        self._rng = random.Random(self.seed)

    # -- known answers -------------------------------------------------------
    @property
    def limit_pps(self) -> float:
        """Rate per direction above which packets are lost: min(capacity, ceiling)."""
        if self.generator_ceiling_pps is None:
            return float(self.capacity_pps)
        return float(min(self.capacity_pps, self.generator_ceiling_pps))

    def throughput_pps(self, loss_ratio: float = 0.0) -> float:
        """Known highest rate per direction whose loss ratio is <= ``loss_ratio``.

        Exact for the noise-free model (up to rounding to whole packets).
        """
        if not 0.0 <= loss_ratio < 1.0:
            raise ValueError(f"loss_ratio must be in [0, 1), got {loss_ratio}")
        return self.limit_pps / (1.0 - loss_ratio)

    def expected_loss_ratio(self, rate_pps: float) -> float:
        """Known loss ratio of the noise-free model at ``rate_pps`` per direction."""
        if rate_pps <= 0:
            return 0.0
        return max(0.0, 1.0 - self.limit_pps / rate_pps)

    # -- the Measurer --------------------------------------------------------
    def __call__(self, rate_pps: float, duration_s: float) -> TrialResult:
        """Model one trial at ``rate_pps`` per direction for ``duration_s`` seconds."""
        if rate_pps < 0 or duration_s <= 0:
            raise ValueError(f"bad trial inputs: rate_pps={rate_pps}, duration_s={duration_s}")
        started_at = datetime.now(timezone.utc).isoformat()
        self.n_calls += 1
        capacity = self.capacity_pps
        if self.capacity_jitter:
            capacity *= max(0.0, 1.0 + self.capacity_jitter * self._rng.gauss(0.0, 1.0))
        spurious = (
            self.spurious_loss_probability > 0
            and self._rng.random() < self.spurious_loss_probability
        )
        ports = (("p0", "p1"), ("p1", "p0"))[: self.directions]
        dirs = []
        for i, (tx, rx) in enumerate(ports):
            intended = int(round(rate_pps * duration_s))
            sent = intended
            if self.generator_ceiling_pps is not None:
                sent = min(sent, int(round(self.generator_ceiling_pps * duration_s)))
            received = min(sent, int(round(capacity * duration_s)))
            dut_dropped = received < sent
            if spurious and i == 0:
                received = max(0, received - int(self.spurious_loss_packets))
            dirs.append(
                DirectionStats(
                    tx_port=tx,
                    rx_port=rx,
                    intended_packets=intended,
                    sent_packets=sent,
                    received_packets=received,
                    duration_s=float(duration_s),
                    latency=self._latency(duration_s, sent, received, dut_dropped),
                )
            )
        return TrialResult(
            rate_pps=float(rate_pps),
            duration_s=float(duration_s),
            frame_size=self.frame_size,
            directions=tuple(dirs),
            started_at=started_at,
            extra={
                "model": "SyntheticDut",
                "capacity_pps": capacity,
                "generator_ceiling_pps": self.generator_ceiling_pps,
                "spurious_loss": spurious,
            },
        )

    measure = __call__

    def _latency(
        self, duration_s: float, sent: int, received: int, dut_dropped: bool
    ) -> LatencyStats:
        probes_sent = max(1, int(round(self.probe_rate_pps * duration_s)))
        delivered = received / sent if sent else 0.0
        probes_received = int(round(probes_sent * delivered))
        if probes_received == 0:
            return LatencyStats(probes_sent=probes_sent, probes_received=0)
        base = self.latency_ns + (self.overload_latency_ns if dut_dropped else 0.0)
        return LatencyStats(
            probes_sent=probes_sent,
            probes_received=probes_received,
            min_ns=0.8 * base,
            avg_ns=1.05 * base,
            max_ns=2.0 * base,
            p50_ns=base,
            p90_ns=1.2 * base,
            p99_ns=1.5 * base,
        )
