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
* only this trial's test frames count as received.
"""
from __future__ import annotations

from typing import Protocol, runtime_checkable

from nfvlab.linerate import FrameSize
from nfvlab.traffic.stats import DirectionStats


class GeneratorError(RuntimeError):
    """The generator failed or refused a trial (one-line message); no counts were made up."""


@runtime_checkable
class TrafficGenerator(Protocol):
    name: str
    """Implementation name recorded with every trial (``nfvlab-gen``, ``trex``)."""

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
