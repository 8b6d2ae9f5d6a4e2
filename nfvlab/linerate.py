"""Line-rate arithmetic: frame size <-> packets/s <-> L1 and L2 bit rates.

Conventions (RFC 2544 / RFC 1242):

* A *frame size* is the Ethernet frame from destination MAC to FCS inclusive
  (64 B is the minimum frame: 60 B of headers and payload plus the 4 B FCS).
* On the wire every frame also costs 20 B of layer-1 overhead: 7 B preamble,
  1 B start-of-frame delimiter and a 12 B minimum inter-frame gap.
* *L1 rate* counts frame + 20 B (what fills a link); *L2 rate* counts the frame
  only (what most tools report as "Gbps at frame size X").
* IMIX is the "simple IMIX" 7:4:1 of 64/570/1518 B frames (the classic
  Agilent/Spirent mix and the one TRex's ``imix`` profile uses). Seed 001's
  nfvbench runs used nfvbench's IMIX, which is also 7:4:1 of 64/570/1518 B,
  so one definition serves both.

Rates are in packets/s (``_pps``) and bits/s (``_bps``); helper names say which.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Union

#: Preamble (7) + SFD (1) + minimum inter-frame gap (12), bytes.
L1_OVERHEAD_BYTES = 20
#: Smallest and largest frame sizes nfvlab accepts (jumbo up to 9018 B with FCS).
MIN_FRAME_BYTES = 64
MAX_FRAME_BYTES = 9018

#: Nominal Ethernet line rates, bits/s, by name.
LINE_RATES_BPS: dict[str, float] = {
    "1GbE": 1e9,
    "10GbE": 10e9,
    "25GbE": 25e9,
    "40GbE": 40e9,
    "100GbE": 100e9,
}


@dataclass(frozen=True)
class Imix:
    """A traffic mix: frame sizes (bytes, with FCS) and their relative weights."""

    name: str
    sizes: tuple[int, ...]
    weights: tuple[int, ...]

    @property
    def mean_frame_bytes(self) -> float:
        """Average frame size in bytes, weighted by packet count."""
        total = sum(self.weights)
        return sum(s * w for s, w in zip(self.sizes, self.weights)) / total


#: The 7:4:1 simple IMIX (64/570/1518 B); mean frame 353.83 B.
IMIX = Imix(name="IMIX", sizes=(64, 570, 1518), weights=(7, 4, 1))

FrameSize = Union[int, str]
"""A frame size in bytes, or the string ``"IMIX"``."""


def mean_frame_bytes(frame_size: FrameSize) -> float:
    """Average frame size in bytes (with FCS) of a fixed size or ``"IMIX"``."""
    if isinstance(frame_size, str):
        if frame_size.upper() != IMIX.name:
            raise ValueError(f"unknown frame size {frame_size!r}: use 64..9018 or 'IMIX'")
        return IMIX.mean_frame_bytes
    if not MIN_FRAME_BYTES <= frame_size <= MAX_FRAME_BYTES:
        raise ValueError(
            f"frame size {frame_size} B is outside {MIN_FRAME_BYTES}..{MAX_FRAME_BYTES}"
        )
    return float(frame_size)


def line_rate_bps(link: Union[str, float]) -> float:
    """Nominal line rate in bits/s: a name from :data:`LINE_RATES_BPS` or a number of Gbit/s."""
    if isinstance(link, str):
        try:
            return LINE_RATES_BPS[link]
        except KeyError:
            raise ValueError(f"unknown link {link!r}: use one of {sorted(LINE_RATES_BPS)}") from None
    return float(link) * 1e9


def max_pps(link: Union[str, float], frame_size: FrameSize) -> float:
    """Maximum frames/s one direction of ``link`` carries at ``frame_size`` (L1 line rate)."""
    return line_rate_bps(link) / ((mean_frame_bytes(frame_size) + L1_OVERHEAD_BYTES) * 8)


def pps_to_l1_bps(rate_pps: float, frame_size: FrameSize) -> float:
    """L1 bit rate (frame + 20 B preamble/IFG) of ``rate_pps`` frames/s."""
    return rate_pps * (mean_frame_bytes(frame_size) + L1_OVERHEAD_BYTES) * 8


def pps_to_l2_bps(rate_pps: float, frame_size: FrameSize) -> float:
    """L2 bit rate (frame incl. FCS, no preamble/IFG) of ``rate_pps`` frames/s."""
    return rate_pps * mean_frame_bytes(frame_size) * 8


def l1_bps_to_pps(rate_bps: float, frame_size: FrameSize) -> float:
    """Frames/s that make an L1 bit rate of ``rate_bps`` at ``frame_size``."""
    return rate_bps / ((mean_frame_bytes(frame_size) + L1_OVERHEAD_BYTES) * 8)


def l2_bps_to_pps(rate_bps: float, frame_size: FrameSize) -> float:
    """Frames/s that make an L2 bit rate of ``rate_bps`` at ``frame_size``."""
    return rate_bps / (mean_frame_bytes(frame_size) * 8)


def gbps_to_pps(rate_gbps: float, frame_size: FrameSize, layer: int = 1) -> float:
    """Frames/s for a rate in Gbit/s at ``frame_size``; ``layer`` 1 (default) or 2."""
    fn = {1: l1_bps_to_pps, 2: l2_bps_to_pps}[layer]
    return fn(rate_gbps * 1e9, frame_size)


def pps_to_gbps(rate_pps: float, frame_size: FrameSize, layer: int = 1) -> float:
    """Gbit/s of ``rate_pps`` frames/s at ``frame_size``; ``layer`` 1 (default) or 2."""
    fn = {1: pps_to_l1_bps, 2: pps_to_l2_bps}[layer]
    return fn(rate_pps, frame_size) / 1e9
