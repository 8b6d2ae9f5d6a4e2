"""What a traffic generator reports for one trial: per-direction counters and latency.

These types are the contract between a generator (embedded or TRex), trials and
searches. Counters are read after traffic has stopped, never while it runs.
"""
from __future__ import annotations

import base64
import itertools
from dataclasses import asdict, dataclass, fields
from typing import Iterable, Optional, Union

from hdrh.histogram import HdrHistogram

#: Range and precision of every latency histogram nfvlab stores: 1 ns .. 1 h,
#: 3 significant decimal digits (a recorded value is kept within 0.1 %).
#: Samples outside the range are clamped into it (a probe cannot take longer
#: than its trial; a clock step can make a sample <= 0).
HDR_LOWEST_NS = 1
HDR_HIGHEST_NS = 3_600_000_000_000
HDR_SIGNIFICANT_DIGITS = 3

#: The latency percentiles nfvlab reports: field name -> percentile (0..100).
PERCENTILES = {"p50_ns": 50.0, "p90_ns": 90.0, "p95_ns": 95.0, "p99_ns": 99.0, "p999_ns": 99.9}


def new_histogram() -> HdrHistogram:
    """An empty HDR histogram with nfvlab's range and precision."""
    return HdrHistogram(HDR_LOWEST_NS, HDR_HIGHEST_NS, HDR_SIGNIFICANT_DIGITS)


def histogram_of(values_ns: Iterable[float], counts: Optional[Iterable[int]] = None) -> HdrHistogram:
    """An HDR histogram of ``values_ns`` (each ``counts`` times, default once), clamped to the range."""
    h = new_histogram()
    counts = counts if counts is not None else itertools.repeat(1)
    for v, c in zip(values_ns, counts):
        if c > 0:
            h.record_value(min(max(int(round(v)), HDR_LOWEST_NS), HDR_HIGHEST_NS), int(c))
    return h


def encode_histogram(h: HdrHistogram) -> Optional[str]:
    """The HdrHistogram V2 compressed encoding in base64 (``HISTF...``), None when empty."""
    return h.encode().decode("ascii") if h.get_total_count() > 0 else None


def decode_histogram(text: Union[str, bytes]) -> HdrHistogram:
    """Inverse of :func:`encode_histogram` (also reads any HdrHistogram V2 base64 encoding)."""
    raw = text.encode("ascii") if isinstance(text, str) else text
    base64.b64decode(raw, validate=True)  # a clear error for text that is not base64
    return HdrHistogram.decode(raw)


def histogram_percentiles(h: HdrHistogram) -> dict:
    """``{p50_ns: ..., p999_ns: ...}`` of ``h`` (:data:`PERCENTILES`; each value within 0.1 %), None if empty."""
    if h.get_total_count() == 0:
        return {k: None for k in PERCENTILES}
    return {k: float(h.get_value_at_percentile(q)) for k, q in PERCENTILES.items()}


@dataclass(frozen=True)
class LatencyStats:
    """One-way latency of timestamped probe packets, in nanoseconds.

    Probes run at a fixed low rate beside the load (like TRex latency streams).
    All latency fields are ``None`` when no probe came back.

    ``hdr_histogram`` holds every probe's latency as an HDR histogram
    (:data:`HDR_LOWEST_NS` .. :data:`HDR_HIGHEST_NS`, :data:`HDR_SIGNIFICANT_DIGITS`
    significant digits) in the ``hdrhistogram`` package's base64 compressed
    encoding (:func:`decode_histogram`); None when no probe came back and in
    records written before it existed. nfvlab-gen's percentiles are exact
    (nearest rank over the samples); TRex's are interpolated in its buckets.
    ``jitter_ns`` is TRex's jitter (None for nfvlab-gen).
    """

    probes_sent: int
    probes_received: int
    min_ns: Optional[float] = None
    avg_ns: Optional[float] = None
    max_ns: Optional[float] = None
    p50_ns: Optional[float] = None
    p90_ns: Optional[float] = None
    p99_ns: Optional[float] = None
    p95_ns: Optional[float] = None
    p999_ns: Optional[float] = None
    jitter_ns: Optional[float] = None
    hdr_histogram: Optional[str] = None

    @classmethod
    def from_dict(cls, d: dict) -> "LatencyStats":
        """From a record's ``latency`` dict; keys it does not know (a newer writer's) are ignored."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})

    def histogram(self) -> Optional[HdrHistogram]:
        """The decoded HDR histogram, or None when there is none."""
        return decode_histogram(self.hdr_histogram) if self.hdr_histogram else None


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
    * ``stale_packets``: the part of ``foreign_packets`` that carries an earlier
      trial's signature: the DUT was still delivering that trial's backlog
      (:func:`nfvlab.trial.backlog_fault`). None when the generator cannot tell
      (TRex, records written before it existed).

    The three counts default to 0 for records written before they existed and for
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
    stale_packets: Optional[int] = None

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
