"""User-named ports as a lab: two existing interfaces cabled to a DUT built outside nfvlab.

Traffic goes only to interfaces the user named (draft §5). Frames go from the
first port to the second and back; each direction's destination MAC is the
receiving port's MAC unless ``dmacs`` says otherwise (e.g. a routing DUT's
ingress MAC).

Ports are ``NS:IFACE`` (an interface in a network namespace of this host, for
the embedded generator) or ``trex:N`` (TRex's port N, wired to the DUT; then
``dmacs``, the DUT's MACs, are required and the frames' source MACs are
locally administered ``02:00:00:00:00:0N``).
"""
from __future__ import annotations

import os
import re
from contextlib import contextmanager
from typing import Iterator, Optional

from nfvlab.labs.base import LabError, LabSession
from nfvlab.scenario import Port, Scenario, Stream
from nfvlab.scenario.cni import CniScenario
from nfvlab.scenario.topology import default_ips
from nfvlab.system import netns as nl

_PORT = re.compile(r"^([A-Za-z0-9_.-]+):([A-Za-z0-9_.@-]{1,15})$")
_MAC = re.compile(r"^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$")
#: ``trex:N`` names TRex's port N; what its wire carries is the DUT's business (jumbo allowed).
GENERATOR_NS = "trex"
GENERATOR_PORT_MTU = 9000


def parse_port(text: str) -> Port:
    """``NS:IFACE`` -> :class:`Port`; LabError naming the argument otherwise."""
    m = _PORT.match(text)
    if not m:
        raise LabError(f"--port {text!r}: use NS:IFACE (a named network namespace and an interface in it) "
                       "or trex:N (TRex's port N)")
    if m.group(1) == GENERATOR_NS and not (m.group(2).isdigit() and int(m.group(2)) < 256):
        raise LabError(f"--port {text!r}: TRex ports are trex:N with N a port number 0..255")
    return Port(m.group(1), m.group(2))


class ExternalPorts:
    """A lab of two user-named ports; ``scenario`` is only recorded (``model: external``)."""

    kind = "external"

    def __init__(self, ports: list[str], dmacs: Optional[list[str]] = None) -> None:
        if len(ports) != 2:
            raise LabError(f"--port: give exactly two ports (got {len(ports)})")
        self.ports = [parse_port(p) for p in ports]
        if len({p.ns == GENERATOR_NS for p in self.ports}) > 1:
            raise LabError("--port: give two TRex ports (trex:N) or two host interfaces (NS:IFACE), not one of each")
        if dmacs is not None and (len(dmacs) != 2 or not all(_MAC.match(m) for m in dmacs)):
            raise LabError("--dmac: give two MAC addresses aa:bb:cc:dd:ee:ff, one per direction")
        self.dmacs = dmacs

    @property
    def generator_ports(self) -> bool:
        """The ports are TRex's own (``trex:N``), not interfaces of this host."""
        return all(p.ns == GENERATOR_NS for p in self.ports)

    def ready(self) -> list[str]:
        if self.generator_ports:
            return [] if self.dmacs else ["--dmac: with TRex ports give the DUT's two MACs, one per direction"]
        if os.geteuid() != 0:
            return ["traffic needs root (raw sockets in network namespaces): run as root or with sudo"]
        return []

    def check(self, scenario: Scenario | CniScenario) -> list[str]:
        if isinstance(scenario, CniScenario):
            return [f"{scenario.label}: user-named ports are a data path built outside nfvlab; experiment E's two "
                    "nodes, pods and CNI data path are built by the embedded lab (or a cluster)"]
        not_ready = self.ready()
        if not_ready or self.generator_ports:
            return not_ready
        return [f"--port {p}: no interface {p.iface!r} in network namespace {p.ns!r}"
                for p in self.ports if not nl.link_exists(p.ns, p.iface)]

    def mtu(self, scenario: Scenario) -> int:  # never asked for a CniScenario: check() refuses every one
        if self.generator_ports:
            return GENERATOR_PORT_MTU
        return min(nl.link_mtu(p.ns, p.iface) for p in self.ports)

    def streams(self) -> list[Stream]:
        if self.generator_ports:
            macs = [f"02:00:00:00:00:{int(p.iface) + 1:02x}" for p in self.ports]
        else:
            macs = [nl.mac(p.ns, p.iface) for p in self.ports]
        d = self.dmacs or [macs[1], macs[0]]
        p = self.ports
        return [Stream(p[0], p[1], macs[0], d[0], *default_ips(0)),
                Stream(p[1], p[0], macs[1], d[1], *default_ips(1))]

    @contextmanager
    def open(self, scenario: Scenario) -> Iterator[LabSession]:
        reasons = self.check(scenario)
        if reasons:
            raise LabError(reasons[0])
        yield LabSession(streams=self.streams(), info=self.describe())

    def describe(self) -> dict:
        return {"lab_kind": self.kind, "ports": [str(p) for p in self.ports], "dmacs": self.dmacs}
