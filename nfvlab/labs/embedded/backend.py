"""The embedded lab as a :class:`~nfvlab.labs.base.LabBackend`: scenarios as network namespaces here."""
from __future__ import annotations

import os
import platform
from contextlib import contextmanager
from typing import Iterator, Optional

from nfvlab.labs.base import LabSession
from nfvlab.labs.embedded import cni, host, realize
from nfvlab.labs.embedded.lab import ROOT_NEEDED, Lab, lab_mtu, problems
from nfvlab.scenario import Scenario
from nfvlab.scenario.cni import ROLES, CniScenario, Endpoint


class EmbeddedLab:
    """Pods are network namespaces on this host, links are veths, data paths are real.

    A :class:`~nfvlab.scenario.cni.CniScenario` (experiment E) is a :class:`~nfvlab.labs.embedded.cni.CniLab`."""

    kind = "embedded"
    #: Several labs can be up at once (each has its own namespaces and cables): a paired comparison's two arms.
    parallel_labs = True

    def __init__(self, mtu: int = realize.LAB_MTU) -> None:
        self.link_mtu = mtu
        """MTU of the links the lab creates, bytes (a model's ports may carry less)."""
        self._features: Optional[dict[str, bool]] = None

    def ready(self) -> list[str]:
        return [] if os.geteuid() == 0 else [ROOT_NEEDED]

    def check(self, scenario: Scenario | CniScenario) -> list[str]:
        if isinstance(scenario, CniScenario):  # root is ready()'s; the tools and the kernel's tunnels here
            return [why for why in (cni.missing_tools(), cni.path_problem(scenario.path)) if why]
        if self._features is None:
            self._features = realize.kernel_features()
        return problems(scenario, self._features)

    def mtu(self, scenario: Scenario | CniScenario) -> int:
        if isinstance(scenario, CniScenario):
            return scenario.path.link_mtu_bytes
        return lab_mtu(scenario, self.link_mtu)

    @contextmanager
    def open(self, scenario: Scenario | CniScenario, *, persistent: bool = False) -> Iterator[LabSession]:
        if isinstance(scenario, CniScenario):
            yield from self._open_cni(scenario)
            return
        with Lab(scenario, mtu=self.link_mtu, persistent=persistent) as lab:
            busy = lab.core_plan.busy_roles(noisy=scenario.resources.noisy_load_pct is not None)
            yield LabSession(streams=lab.streams, tracker=lab, busy_roles=busy, pause=lab.pause, resume=lab.resume, info={
                "lab_kind": self.kind, "lab_id": lab.lab_id, "mtu": lab.mtu,
                "setup_s": round(lab.setup_s or 0.0, 3),
                "core_plan": lab.core_plan.describe(), "realization": realize.REALIZATIONS[scenario.model].how})

    def _open_cni(self, scenario: CniScenario) -> Iterator[LabSession]:
        with cni.CniLab(scenario.path, service=scenario.service,
                        segmentation_offload=scenario.segmentation_offload) as lab:
            ends = {r: Endpoint(None if r == "service" else lab.ns(r), lab.address(r)) for r in ROLES}
            yield LabSession(streams=[], tracker=lab, endpoints=ends, info={
                "lab_kind": self.kind, "lab_id": lab.lab_id, "mtu": scenario.path.link_mtu_bytes,
                "setup_s": round(lab.setup_s or 0.0, 3),
                "realization": "cni: two node namespaces cabled by one veth link"})

    def describe(self) -> dict:
        """Facts recorded with every run: link MTU, kernel, Intel DSA devices (seed 003's offload)."""
        return {"lab_kind": self.kind, "link_mtu": self.link_mtu, "kernel": platform.release(),
                "intel_dsa_devices": host.dsa_devices()}
