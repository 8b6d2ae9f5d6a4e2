"""Experiment E (seed 002): CNI data paths, TCP and HTTP (tool runs, not rate searches).

Its tables, claims, figures and metrics are :mod:`nfvlab.analysis_cni`; its report sections
(:func:`nfvlab.report.cni_sections`) and notebook are its own (``kind="tools"``).
"""
from __future__ import annotations

from typing import Optional

from nfvlab import analysis_cni
from nfvlab.experiments.base import Experiment, PathLike, Tables


def tables(records: PathLike, models: Optional[list[str]] = None) -> Tables:
    """:func:`nfvlab.analysis_cni.tables` (E's grid is data paths x MTUs, not models)."""
    return analysis_cni.tables(records)


EXPERIMENT = Experiment(
    letter="e",
    title="Experiment E: CNI data paths, TCP and HTTP (seed 002)",
    text=(
        "Two \"nodes\" (network namespaces) cabled by one link whose MTU is swept, a pod on each, one CNI "
        "data path between them: direct routing (Calico without a tunnel), VXLAN (Flannel/Cilium-like), "
        "IPIP where the kernel has it, the SR-IOV analogue (a direct port). TCP goodput with iperf3 (node"
        " to pod, pod to pod) and HTTP with wrk (5 threads, 10 connections) against nginx in the pod, to "
        "the pod and to a ClusterIP-style service (nftables DNAT). Segmentation offloads off, so that "
        "per-packet costs scale with the MTU as on the seed's NIC (`docs/experiment-e.md`). The seed "
        "publishes figures without tables: only its qualitative claims are compared. Claims are judged as A-D's: "
        "Welch's t on log rates (orders) and TOST within +/-10 % (\"about equal\", \"barely matters\"), "
        "Holm-adjusted."),
    notebook_title="Experiment E: CNI data paths, TCP and HTTP (seed 002)",
    notebook_text=(
        "Two \"nodes\" (network namespaces) cabled by one link whose MTU is swept, a pod on each, one CNI "
        "data path between them: direct routing (Calico without a tunnel), VXLAN (Flannel/Cilium-like), "
        "IPIP where the kernel has it, and the SR-IOV analogue (a direct port). TCP goodput with iperf3 "
        "(node to pod, pod to pod) and HTTP with wrk (5 threads, 10 connections) against nginx in the "
        "pod, pod to pod, host to pod and host to a ClusterIP-style service (nftables DNAT). Segmentation"
        " offloads are off unless the params say otherwise (docs/experiment-e.md)."),
    table_names=analysis_cni.TABLE_NAMES,
    tables=tables,
    figures=analysis_cni.figures,
    metrics=analysis_cni.metrics_values,
    goal=None,
    kind="tools",
)
