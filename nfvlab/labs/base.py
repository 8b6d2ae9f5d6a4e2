"""The lab-backend protocol: realize a scenario, hand out its ports (or its endpoints).

    backend = nfvlab.labs.backend_for(lab_params)
    reasons = backend.check(scenario)          # creates nothing
    with backend.open(scenario) as session:    # builds, yields, always tears down
        generator = nfvlab.traffic.select.generator_for(..., session.streams, traffic, session.tracker,
                                                        session.busy_roles)

Implementations: the embedded lab (:mod:`nfvlab.labs.embedded`: network
namespaces on this host), user-named ports (:mod:`nfvlab.labs.external`), and a
Kubernetes cluster (:mod:`nfvlab.labs.kubernetes`). A scenario is a catalogue model's
:class:`~nfvlab.scenario.Scenario` (a generator's streams through it) or experiment E's
:class:`~nfvlab.scenario.cni.CniScenario` (two nodes, a pod on each, one CNI data path: its
session hands out :attr:`LabSession.endpoints` and a tracker that runs tools). SIGTERM is
:class:`nfvlab.system.signals.Terminated` (re-exported here). Measurement code only ever sees this protocol.
"""
from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Callable, Optional, Protocol, Union, runtime_checkable

from nfvlab.scenario import Scenario, Stream
from nfvlab.scenario.cni import CniScenario, Endpoint
from nfvlab.system.signals import Terminated

__all__ = ["AnyScenario", "LabBackend", "LabError", "LabSession", "ProcessTracker", "Terminated"]

AnyScenario = Union[Scenario, CniScenario]
"""What a backend realizes: a model's data path for a generator, or experiment E's two-node CNI data path."""


class LabError(RuntimeError):
    """The lab cannot be built or failed while building (one-line reason and fix)."""


class ProcessTracker(Protocol):
    """Records processes a generator starts, so a killed run's leftovers can be found."""

    def track_process(self, pid: int, cmd: str): ...
    def untrack_process(self, rec) -> None: ...


@dataclass
class LabSession:
    """What an open lab hands to the traffic side."""

    streams: list[Stream]
    """One per direction: the ports and the headers test frames carry."""
    tracker: Optional[ProcessTracker] = None
    info: dict = field(default_factory=dict)
    """Provenance of this realization (lab kind and id, set-up time, core plan, placement)."""
    busy_roles: dict[str, frozenset[int]] = field(default_factory=dict)
    """The lab's own threads that compete for CPU (pod forwarders, vSwitch control threads, a
    noisy neighbour), role -> CPUs (empty: any CPU); a generator that never yields its CPU
    (the XDP TX path) is used only where none of them may run."""
    pause: Optional[Callable[[], None]] = None
    """Stop the lab's processes while another lab is measured (a paired comparison's idle arm), so that
    its poll-mode threads leave the CPUs to the measured one; None: this lab cannot pause."""
    resume: Optional[Callable[[], None]] = None
    """Continue what :attr:`pause` stopped."""
    endpoints: dict[str, Endpoint] = field(default_factory=dict)
    """A :class:`~nfvlab.scenario.cni.CniScenario`'s roles (:data:`~nfvlab.scenario.cni.ROLES`): where
    tools run and what they connect to; ``tracker`` then also spawns them (make_run_dir, spawn)."""


@runtime_checkable
class LabBackend(Protocol):
    kind: str
    """``embedded``, ``external`` or ``kubernetes``: recorded with every run."""

    def ready(self) -> list[str]:
        """What keeps this lab from running anything now (no root, cluster unreachable):
        an error of the invocation, not a property of a scenario; creates nothing."""
        ...

    def check(self, scenario: AnyScenario) -> list[str]:
        """Why this lab cannot realize ``scenario`` (empty: it can); creates nothing."""
        ...

    def mtu(self, scenario: AnyScenario) -> int:
        """Largest IP MTU every port of ``scenario``'s data path carries here, bytes."""
        ...

    def open(self, scenario: AnyScenario) -> AbstractContextManager[LabSession]:
        """Build ``scenario``; yield its session; tear everything down on exit (any exit)."""
        ...

    def describe(self) -> dict:
        """Static facts about this lab (kind, host or cluster) for provenance."""
        ...
