"""A scenario: everything that says *what* is benchmarked, and nothing about *where*.

    Scenario("ovs-dpdk-vhost", Resources(pinning="shared", noisy_load_pct=50))

A lab backend (:mod:`nfvlab.labs`) is asked whether it can realize a scenario
and then realizes it; the same scenario runs on the embedded lab or on a
Kubernetes cluster.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional

from nfvlab.scenario import catalogue
from nfvlab.scenario.resources import Resources

DensityTopology = Literal["csc", "csp"]


@dataclass(frozen=True)
class DensityCell:
    """One cell of the service density matrix (seed 001)."""

    topology: DensityTopology
    """``csc``: CNF service chain (snake through the switch); ``csp``: pipeline."""
    instances: int
    """Service instances (matrix row)."""
    nfs: int
    """Network functions per service instance (matrix column)."""

    def __str__(self) -> str:
        return f"{self.topology} {self.instances}x{self.nfs}"


@dataclass(frozen=True)
class KnownPath:
    """Parameters of a data path of known behaviour (``tbf-bridge``)."""

    capacity_pps: float
    """Forwarding capacity per direction, packets/s."""
    frame_size: int
    """The one frame size the shaper is set for, bytes incl. FCS."""


@dataclass(frozen=True)
class Scenario:
    """A networking model with its resource knobs (and a density cell or known path)."""

    model: str
    """A name of :data:`nfvlab.scenario.catalogue.MODELS` (or of ``KNOWN_PATHS``)."""
    resources: Resources = Resources()
    density: Optional[DensityCell] = None
    """Set: the service density topology (the model is the cell's switch)."""
    known_path: Optional[KnownPath] = None
    """Set for ``tbf-bridge``: its capacity."""
    mtu_bytes: Optional[int] = None
    """Set: the IP MTU of every link and port of the data path (cables, vSwitch ports,
    DPDK apps, pod interfaces), bytes; frames up to ``mtu_bytes + 18`` cross it.
    ``None``: the lab's own (its link MTU, capped by what the model's ports carry)."""

    def __post_init__(self) -> None:
        catalogue.get(self.model)  # KeyError naming the allowed models

    @property
    def spec(self) -> catalogue.Model:
        return catalogue.get(self.model)

    @property
    def label(self) -> str:
        """Short human label, e.g. ``host-routing csc 2x1``, ``ovs-dpdk-tap MTU 9000`` or ``macvlan``."""
        label = f"{self.model} {self.density}" if self.density else self.model
        return f"{label} MTU {self.mtu_bytes}" if self.mtu_bytes is not None else label

    def labels(self) -> dict:
        """Record labels: model, pinning, numa (noisy load, density cell, ``mtu_bytes`` when set)."""
        out = {"model": self.model, "pinning": self.resources.pinning, "numa": self.resources.numa}
        if self.resources.noisy_load_pct is not None:
            out["noisy_load_pct"] = self.resources.noisy_load_pct
        if self.density is not None:
            out.update(topology=self.density.topology, instances=self.density.instances,
                       nfs=self.density.nfs)
        if self.mtu_bytes is not None:
            out["mtu_bytes"] = self.mtu_bytes
        return out
