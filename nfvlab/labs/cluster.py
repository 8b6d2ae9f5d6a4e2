"""The local single-node Kubernetes cluster as the measurement stages ask for it (``--local-cluster``).

A seam module, like :func:`nfvlab.labs.backend_for`: the stage names no backend package; this
starts the cluster of :mod:`nfvlab.labs.kubernetes.local_cluster` on which the Kubernetes lab runs.
Apart from :mod:`nfvlab.labs` itself, so that what imports the seam alone (the calibration stage)
does not depend on the cluster's code.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Optional

from nfvlab.labs.kubernetes import local_cluster as lc

__all__ = ["running", "unavailable_reason"]


def unavailable_reason() -> Optional[str]:
    """Why the local cluster cannot run here (None: it can); starts nothing."""
    return lc.unavailable_reason()


@contextmanager
def running() -> Iterator[None]:
    """The local cluster, started with the NetworkAttachmentDefinition CRD for the block and stopped
    after it (any exit)."""
    # The Kubernetes lab takes the host lock for each run (it cables this host), so the cluster must not hold it.
    with lc.LocalCluster(lock=False) as k8s:
        lc.install_nad_crd(k8s)
        yield
