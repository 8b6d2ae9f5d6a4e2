"""The traffic-generator interface: ports, streams, a rate in pps, a duration.

It is shaped like TRex's STL API (ports, streams, rate in packets/s, duration,
per-port stats, latency streams) so a TRex implementation fits beside the
embedded one. Implementations return per-direction :class:`DirectionStats`
read after traffic has stopped.
"""
from __future__ import annotations

from typing import Protocol

from nfvlab.linerate import FrameSize
from nfvlab.traffic.stats import DirectionStats


class TrafficGenerator(Protocol):
    name: str
    """Implementation name recorded with every trial (e.g. ``nfvlab-gen``, ``trex``)."""

    def run(self, rate_pps: float, duration_s: float, frame_size: FrameSize,
            bidirectional: bool = True) -> tuple[DirectionStats, ...]:
        """Send ``rate_pps`` per direction for ``duration_s``; return counters per direction."""
        ...

    def describe(self) -> dict:
        """Static facts (ports, flows, probe rate, binary) for trial records."""
        ...
