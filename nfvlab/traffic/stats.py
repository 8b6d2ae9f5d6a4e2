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

    ``received_packets`` counts each test frame of this trial once: a frame
    carrying this trial's signature and a sequence number not seen before on
    this direction. So received <= sent <= intended, and loss = intended -
    received (:attr:`lost_packets`) is never negative for a generator that
    keeps that invariant; no clamp hides one that does not.

    * ``duplicate_packets``: further copies of test frames already received (a
      DUT that duplicates). Reported, never hidden, and never part of received.
    * ``reordered_packets``: test frames received after one with a higher
      sequence number of the same stream (counted in received too).
    * ``foreign_packets``: frames at the rx port without this trial's signature
      (the DUT's own ARP/ND/LLDP/STP/IGMP, other traffic, frames of an earlier
      trial arriving late). Never counted as received.

    The three default to 0 for records written before they existed and for
    generators that do not count them.
    """

    tx_port: str
    rx_port: str
    intended_packets: int
    sent_packets: int
    received_packets: int
    duration_s: float
    latency: LatencyStats
    foreign_packets: int = 0
    duplicate_packets: int = 0
    reordered_packets: int = 0

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
        """Intended but not received: unsent shortfall + DUT drops (intended - received).

        Not clamped: nfvlab-gen guarantees received <= sent <= intended (it
        fails the trial otherwise), so a negative value means a generator sent
        and delivered more than it intended (an overshoot, which TRex can do) or
        counted a frame twice, and is shown rather than hidden.
        """
        return self.intended_packets - self.received_packets

    def to_dict(self) -> dict:
        d = asdict(self)
        d["offered_rate_pps"] = self.offered_rate_pps
        d["lost_packets"] = self.lost_packets
        return d
