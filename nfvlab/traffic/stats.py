"""What a traffic generator reports for one trial: per-direction counters and latency.

These types are the contract between a generator (embedded or TRex), trials and
searches. Counters are read after traffic has stopped, never while it runs.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Optional


@dataclass(frozen=True)
class LatencyStats:
    """One-way latency of timestamped probe packets, in nanoseconds.

    Probes run at a fixed low rate beside the load (like TRex latency streams).
    All latency fields are ``None`` when no probe came back.
    """

    probes_sent: int
    probes_received: int
    min_ns: Optional[float] = None
    avg_ns: Optional[float] = None
    max_ns: Optional[float] = None
    p50_ns: Optional[float] = None
    p90_ns: Optional[float] = None
    p99_ns: Optional[float] = None


@dataclass(frozen=True)
class DirectionStats:
    """Counters of one traffic direction (tx port -> DUT -> rx port) in one trial.

    ``intended_packets`` is rate x duration: what should have been sent. A sender
    that the kernel slowed down (backpressure) sends fewer; the shortfall counts as
    loss, as MLRsearch's intended_count does. Counters include the latency
    probes: they are part of the load the DUT is offered.
    """

    tx_port: str
    rx_port: str
    intended_packets: int
    sent_packets: int
    received_packets: int
    duration_s: float
    latency: LatencyStats

    @property
    def offered_rate_pps(self) -> float:
        """Rate actually sent, packets/s (sent / intended duration)."""
        return self.sent_packets / self.duration_s

    @property
    def received_rate_pps(self) -> float:
        """Rate received, packets/s (received / intended duration)."""
        return self.received_packets / self.duration_s

    @property
    def lost_packets(self) -> int:
        """Intended but not received (unsent shortfall + DUT drops); never negative."""
        return max(0, self.intended_packets - self.received_packets)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["offered_rate_pps"] = self.offered_rate_pps
        d["lost_packets"] = self.lost_packets
        return d
