"""Lab backends: where a scenario is realized. :func:`backend_for` picks one from the lab profile."""
from __future__ import annotations

from typing import Optional

from nfvlab.labs.base import LabBackend, LabError, LabSession, Terminated
from nfvlab.params import LabParams


def backend_for(lab: LabParams = LabParams(), *, ports: Optional[list[str]] = None,
                dmacs: Optional[list[str]] = None) -> LabBackend:
    """The backend the lab profile names, or :class:`~nfvlab.labs.external.ExternalPorts` for ``ports``."""
    if ports:
        from nfvlab.labs.external import ExternalPorts

        return ExternalPorts(ports, dmacs)
    if lab.kind == "embedded":
        from nfvlab.labs.embedded import EmbeddedLab

        return EmbeddedLab(mtu=lab.mtu)
    if lab.kind == "kubernetes":
        from nfvlab.labs.kubernetes import KubernetesLab

        return KubernetesLab(lab)
    raise LabError(f"lab kind {lab.kind!r}: not implemented in this nfvlab version")


__all__ = ["LabBackend", "LabError", "LabSession", "Terminated", "backend_for"]
