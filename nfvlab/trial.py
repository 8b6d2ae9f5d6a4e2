"""A trial: traffic at one intended rate for one duration, and what came of it.

A search only needs a :class:`Measurer`: a callable that runs one trial at an
intended per-direction rate for an intended duration and returns a
:class:`TrialResult`. The embedded lab, a TRex lab and synthetic DUTs in tests all
provide one; searches never know which.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Iterable, Optional, Protocol, Union

from nfvlab.traffic.stats import DirectionStats, LatencyStats

FrameSize = Union[int, str]


@dataclass(frozen=True)
class TrialResult:
    """Inputs and outputs of one trial.

    ``rate_pps`` is the intended rate *per direction* (packets/s); counters are
    summed over the directions. ``loss_ratio`` is (intended - received) /
    intended, so packets the generator could not send count as lost. Received
    counts each test frame of the trial once; duplicates and foreign frames
    (see :class:`~nfvlab.traffic.stats.DirectionStats`) are summed beside it.
    """

    rate_pps: float
    duration_s: float
    frame_size: FrameSize
    directions: tuple[DirectionStats, ...]
    started_at: str = ""
    """UTC ISO-8601 time the traffic started."""
    kind: str = "trial"
    """``trial`` or ``warmup``."""
    extra: dict = field(default_factory=dict)
    """Free-form details (generator, lab, model) recorded with the trial."""
    valid: bool = True
    """False when the generator did not offer the intended load on schedule through its own
    fault (a stall beyond its slip budget, a stretched duration), or when the trial lost frames
    while the DUT was still delivering an earlier trial's backlog (:func:`backlog_fault`): not a
    measurement of the DUT at this rate. Searches never use an invalid trial; records keep it
    (docs/methodology.md)."""
    invalid_reason: Optional[str] = None
    """One line: why the trial is invalid (with the stall figures); None for a valid trial."""

    @property
    def intended_packets(self) -> int:
        return sum(d.intended_packets for d in self.directions)

    @property
    def sent_packets(self) -> int:
        return sum(d.sent_packets for d in self.directions)

    @property
    def received_packets(self) -> int:
        return sum(d.received_packets for d in self.directions)

    @property
    def foreign_packets(self) -> int:
        """Frames at the rx ports without the trial's signature (never received test frames)."""
        return sum(d.foreign_packets or 0 for d in self.directions)

    @property
    def duplicate_packets(self) -> int:
        """Extra copies of test frames already received (not part of received)."""
        return sum(d.duplicate_packets or 0 for d in self.directions)

    @property
    def loss_ratio(self) -> float:
        """Fraction of intended packets not received, 0..1.

        The floor at 0 only matters for a generator that overshoots (sends and
        delivers more than intended, as TRex can: not loss for MLRsearch);
        nfvlab-gen's counts keep received <= sent <= intended.
        """
        intended = self.intended_packets
        if intended <= 0:
            return 0.0
        return max(0, intended - self.received_packets) / intended

    @property
    def offered_rate_pps(self) -> float:
        """Achieved offered rate per direction, packets/s (mean over directions)."""
        return self.sent_packets / self.duration_s / max(1, len(self.directions))

    @property
    def forwarding_rate_pps(self) -> float:
        """Received rate per direction, packets/s (mean over directions)."""
        return self.received_packets / self.duration_s / max(1, len(self.directions))

    def to_dict(self) -> dict:
        """A JSON-ready dict with the derived rates and loss included."""
        d = asdict(self)
        d["directions"] = [x.to_dict() for x in self.directions]
        d.update(
            intended_packets=self.intended_packets,
            sent_packets=self.sent_packets,
            received_packets=self.received_packets,
            foreign_packets=self.foreign_packets,
            duplicate_packets=self.duplicate_packets,
            loss_ratio=self.loss_ratio,
            offered_rate_pps=self.offered_rate_pps,
            forwarding_rate_pps=self.forwarding_rate_pps,
        )
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "TrialResult":
        dirs = tuple(
            DirectionStats(
                tx_port=x["tx_port"],
                rx_port=x["rx_port"],
                intended_packets=x["intended_packets"],
                sent_packets=x["sent_packets"],
                received_packets=x["received_packets"],
                duration_s=x["duration_s"],
                latency=LatencyStats.from_dict(x["latency"]),
                foreign_packets=x.get("foreign_packets", 0),
                duplicate_packets=x.get("duplicate_packets", 0),
                reordered_packets=x.get("reordered_packets", 0),
                stale_packets=x.get("stale_packets"),
            )
            for x in d["directions"]
        )
        return cls(
            rate_pps=d["rate_pps"],
            duration_s=d["duration_s"],
            frame_size=d["frame_size"],
            directions=dirs,
            started_at=d.get("started_at", ""),
            kind=d.get("kind", "trial"),
            extra=d.get("extra", {}),
            valid=d.get("valid", True),  # records written before validity existed
            invalid_reason=d.get("invalid_reason"),
        )


class Measurer(Protocol):
    """Runs one trial at ``rate_pps`` per direction for ``duration_s`` seconds."""

    def __call__(self, rate_pps: float, duration_s: float) -> TrialResult: ...


#: Frames of an earlier trial a direction may receive, as a share of its intended frames, before a
#: lossy trial is ruled invalid (:func:`backlog_fault`): a frame or two arriving late is no backlog.
BACKLOG_MIN_SHARE = 0.001


def backlog_fault(directions: Iterable[DirectionStats]) -> Optional[str]:
    """Why a trial is invalid because the DUT had not settled, or None.

    A direction that lost frames while it received more than :data:`BACKLOG_MIN_SHARE` of its
    intended frames' worth of an earlier trial's frames (``stale_packets``) spent DUT capacity on
    that backlog: its loss may be the earlier trial's, not this rate's. RFC 2544 (section 23) lets
    the DUT settle between trials; a DUT that holds frames until new traffic pushes them out (a
    packet-socket TX ring kicked only by the next send) never does, and every trial after an
    overloaded one then measures the backlog.
    """
    for d in directions:
        stale = d.stale_packets or 0
        if d.lost_packets > 0 and stale > BACKLOG_MIN_SHARE * d.intended_packets:
            return (f"the DUT delivered {stale} frames of an earlier trial during this one ({d.tx_port} -> "
                    f"{d.rx_port}, {d.lost_packets} of {d.intended_packets} lost): it had not settled")
    return None


def run_trial(
    generator,
    rate_pps: float,
    duration_s: float,
    frame_size: FrameSize,
    *,
    bidirectional: bool = True,
    kind: str = "trial",
    extra: dict | None = None,
) -> TrialResult:
    """One trial: traffic at ``rate_pps`` per direction for ``duration_s``, then counters.

    ``generator`` is a :class:`nfvlab.traffic.base.TrafficGenerator`.
    """
    from datetime import datetime, timezone

    started = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
    dirs = generator.run(rate_pps, duration_s, frame_size, bidirectional=bidirectional)
    schedule = getattr(generator, "last_schedule", None)
    details = {"generator": generator.name, **(extra or {})}
    if getattr(generator, "tx_requested", None) is not None:  # the embedded generator's TX path
        details["tx"] = {"path": generator.tx, "requested": generator.tx_requested, "why": generator.tx_why}
    if schedule is not None:
        details["schedule"] = asdict(schedule)
    faults = [f for f in (None if schedule is None else schedule.fault, backlog_fault(dirs)) if f]
    return TrialResult(
        rate_pps=float(rate_pps), duration_s=float(duration_s), frame_size=frame_size,
        directions=tuple(dirs), started_at=started, kind=kind, extra=details,
        valid=not faults, invalid_reason="; ".join(faults) or None,
    )


#: How often a search repeats an invalid trial before it gives up (params: search.max_invalid_repeats).
#: Host noise comes in bursts (CI saw 4 invalid 0.5 s trials in a row on a quiet 2-vCPU VM), so
#: repeats are many and spaced out (:func:`invalid_repeat_pause_s`).
MAX_INVALID_REPEATS = 8

#: Pause before the first repeat of an invalid trial, s; it doubles per repeat up to
#: :data:`INVALID_PAUSE_MAX_S` so a burst of host noise can pass (8 repeats wait 11.75 s in all).
INVALID_PAUSE_S = 0.25
INVALID_PAUSE_MAX_S = 2.0


def invalid_repeat_pause_s(repeat: int) -> float:
    """Seconds to wait before repeat number ``repeat`` (1, 2, ...) of an invalid trial."""
    return min(INVALID_PAUSE_MAX_S, INVALID_PAUSE_S * 2 ** (max(1, repeat) - 1))


#: The flush before a trial behind a backlog (:class:`GeneratorMeasurer`): at most this rate,
#: packets/s per direction (half the trial's if lower), for this long, s. Measured on the tap path
#: (F's ``ovs-dpdk-tap``, 64 B): after a trial at 30 kpps the pod's ring held ~4,000 frames per
#: direction and the trials behind it received none of their own; one flush of 500 frames at
#: 1 kpps pushed them out and the next trial at 30 kpps was valid (7 Dec 2026).
FLUSH_RATE_PPS = 1000.0
FLUSH_DURATION_S = 0.5


class GeneratorMeasurer:
    """A :class:`Measurer` over a traffic generator at a fixed frame size.

    ``max_invalid_repeats``: how often the search's trial loop repeats a trial the
    generator ruled invalid (:class:`nfvlab.search.result.TrialLog`).

    A trial right after one ruled invalid for the DUT's backlog (:func:`backlog_fault`) is preceded
    by a flush: traffic at :data:`FLUSH_RATE_PPS` for :data:`FLUSH_DURATION_S`, not counted, that
    pushes out the frames a DUT holds until new traffic arrives (a packet-socket TX ring kicked by
    the next send), which no pause clears: without it every repeat starts behind the frames of the
    one before. The trial's ``extra.flushed_before`` says so (rate, duration, the earlier trials'
    frames the flush received).
    """

    def __init__(self, generator, frame_size: FrameSize, *, bidirectional: bool = True,
                 extra: dict | None = None, max_invalid_repeats: int = MAX_INVALID_REPEATS) -> None:
        self.generator = generator
        self.frame_size = frame_size
        self.bidirectional = bidirectional
        self.extra = extra or {}
        self.max_invalid_repeats = max_invalid_repeats
        self._behind_backlog = False

    @staticmethod
    def invalid_pause_s(repeat: int) -> float:
        """Pause before repeat ``repeat`` of an invalid trial, s (:func:`invalid_repeat_pause_s`)."""
        return invalid_repeat_pause_s(repeat)

    def __call__(self, rate_pps: float, duration_s: float) -> TrialResult:
        extra = self.extra
        if self._behind_backlog:
            extra = {**extra, "flushed_before": self.flush(min(FLUSH_RATE_PPS, rate_pps / 2))}
        result = run_trial(self.generator, rate_pps, duration_s, self.frame_size,
                           bidirectional=self.bidirectional, extra=extra)
        self._behind_backlog = not result.valid and backlog_fault(result.directions) is not None
        return result

    def flush(self, rate_pps: float, duration_s: float = FLUSH_DURATION_S) -> dict:
        """Uncounted traffic at ``rate_pps`` per direction for ``duration_s``: what it pushed out of
        the DUT (``stale_packets``: frames of earlier trials it received), for the record."""
        dirs = self.generator.run(rate_pps, duration_s, self.frame_size, bidirectional=self.bidirectional)
        return {"rate_pps": float(rate_pps), "duration_s": float(duration_s),
                "stale_packets": int(sum(d.stale_packets or 0 for d in dirs)),
                "lost_packets": int(sum(d.lost_packets for d in dirs))}
