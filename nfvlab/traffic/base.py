"""The traffic-generator protocol: what trials and searches need of a generator.

It is shaped like TRex's STL API (ports, streams, an absolute rate in packets/s,
a duration, per-stream counters read after traffic stops, latency streams) so
the embedded generator and TRex are interchangeable. Implementations:
:class:`nfvlab.traffic.embedded.EmbeddedGenerator` (``nfvlab-gen`` on lab
ports) and the TRex driver. Nothing here knows which lab built the DUT.

Trial semantics every implementation keeps (docs/measurement.md):

* ``rate_pps`` is the intended rate *per direction*, latency probes included;
* ``intended_packets`` = rate x duration; frames not sent count as loss;
* counters are read only after traffic has stopped and in-flight frames landed;
* only this trial's test frames count as received;
* a trial whose load did not leave on schedule through the generator's own fault
  (its sender stalled, its traffic took longer than the duration) is not a
  measurement of the DUT: the generator says so in :attr:`TrafficGenerator.last_schedule`
  (:class:`Schedule`), and the trial is recorded as invalid and repeated.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Protocol, runtime_checkable

from nfvlab.linerate import FrameSize
from nfvlab.traffic.stats import DirectionStats


@dataclass(frozen=True)
class Schedule:
    """How well a generator kept its schedule in one trial (the facts that make a trial valid).

    A generator sets ``fault`` when the offered load deviated from the intended
    through its own fault: the trial is then no measurement of the DUT
    (docs/methodology.md, "Invalid trials"). Loss while the generator was on
    schedule, and frames the kernel held back (backpressure from the DUT), are
    not faults: they are loss.
    """

    stall_s: float = 0.0
    """Total time the sender was not running when its schedule needed it (stalls
    longer than ``stall_threshold_s`` each), seconds."""
    stall_max_s: float = 0.0
    """Longest single stall, seconds."""
    stalls: int = 0
    """Number of stalls."""
    budget_s: float = 0.0
    """Stall time the schedule absorbs without changing the offered load (it slips;
    frames keep their spacing), seconds."""
    stall_threshold_s: float = 0.0
    """A gap off schedule is a stall from this long on, seconds."""
    softirq_gap_s: float = 0.0
    """Gaps of the XDP path's loop between two batches (up to 5 ms each) that were the kernel's
    softirq work, the DUT's on veth, not stalls, seconds: what they kept from leaving on time
    is loss (docs/measurement.md, "Two TX paths")."""
    slip_own_s: float = 0.0
    """How far the schedule slipped through the sender's own time off its CPU (nfvlab-gen:
    the most of any stream), seconds: beyond ``budget_s`` with frames left unsent, a fault."""
    elapsed_s: Optional[float] = None
    """Time the traffic actually took, seconds (None: not measured)."""
    fault: Optional[str] = None
    """One line: why this trial is not a measurement; None when the load went out on schedule."""
    sent_short: bool = False
    """The generator had not sent every intended frame through its own limit (a TRex server
    still sending at the stop deadline; nfvlab-gen's XDP loop behind at the deadline while the data
    path lost nothing it sent): the shortfall counts as loss, so a search whose upper bound rests
    on such a trial is generator-limited. Never set for frames the DUT held back."""


class GeneratorError(RuntimeError):
    """The generator failed or refused a trial (one-line message); no counts were made up."""


@runtime_checkable
class TrafficGenerator(Protocol):
    name: str
    """Implementation name recorded with every trial (``nfvlab-gen``, ``trex``)."""

    last_schedule: Optional[Schedule]
    """How the last :meth:`run` kept its schedule (None before the first, or for a generator
    that cannot tell: its trials count as valid)."""

    def identity(self) -> dict:
        """What the generator's ceiling depends on: ``name``, ``version`` (binary hash or
        server version), ``ports`` and ``host``. Calibration is keyed by it."""
        ...

    def describe(self) -> dict:
        """Static facts (ports, flows, probe rate, binary or server) for trial records."""
        ...

    def run(self, rate_pps: float, duration_s: float, frame_size: FrameSize,
            bidirectional: bool = True) -> tuple[DirectionStats, ...]:
        """Send ``rate_pps`` per direction for ``duration_s`` s; counters per direction."""
        ...


def identity_key(identity: dict) -> str:
    """A stable text key of a generator identity (sorted ``key=value`` pairs)."""
    return "|".join(f"{k}={identity[k]}" for k in sorted(identity))
