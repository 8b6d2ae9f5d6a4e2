"""Traffic topology of a scenario: ports, streams and the benchmarking addresses.

Pure data: what the generator sends (per direction) and between which ports.
A lab backend produces the streams (it knows the DUT's MACs); a generator
consumes them. Addresses stay in the RFC 2544 benchmarking range 198.18.0.0/15.
"""
from __future__ import annotations

from dataclasses import dataclass

TG_NET = {0: "198.19.1", 1: "198.19.2"}
"""Traffic source/destination networks (/24) behind generator port 0 and port 1."""


@dataclass(frozen=True)
class Port:
    """A traffic port: interface ``iface`` in network namespace ``ns``.

    For a generator that owns its ports (TRex), ``ns`` names the generator and
    ``iface`` its port number, e.g. ``Port("trex", "0")``.
    """

    ns: str
    iface: str

    def __str__(self) -> str:
        return f"{self.ns}:{self.iface}"


@dataclass(frozen=True)
class Stream:
    """One traffic direction: ports and the L2/L3 headers its frames carry."""

    tx: Port
    rx: Port
    smac: str
    dmac: str
    sip: str
    dip: str

    def describe(self) -> dict:
        """JSON-ready form for records and state files."""
        return {"tx": str(self.tx), "rx": str(self.rx), "smac": self.smac, "dmac": self.dmac,
                "sip": self.sip, "dip": self.dip}


def default_ips(side: int) -> tuple[str, str]:
    """(source, destination) IPv4 of the stream sent from generator port ``side`` (0 or 1)."""
    return f"{TG_NET[side]}.1", f"{TG_NET[1 - side]}.1"
