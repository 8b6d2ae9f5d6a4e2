"""Experiment C (draft Appendix C, Figures 16 and 17): model combination and multi-pod NUMA."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import pandas as pd

from nfvlab import analysis_paired, claimsets, reference
from nfvlab.analysis import (CLAIM_COLUMNS, HOST_ONLY, bar_figure, beside, claim_counts, claim_rows, config_table,
                             inputs, levels, metric_values, plan_of, select, status_of, throughput_figure)
from nfvlab.experiments.base import Experiment, PathLike

#: Frame sizes the tables show when the records have no search at all: the draft's.
DEFAULT_FRAME_SIZES = (64, 128, 256, 512, 1024, 1280, 1518)


#: The search goal its tables show.
GOAL = "ndr"


#: The draft's Figure 16 models and the local model standing in for each.
DRAFT_C_ANALOGUES = {"userspace-vpp": claimsets.USERSPACE_CHAIN, "combined-sriov-vpp": claimsets.COMBINED_CHAIN}
#: NUMA scenarios of the draft's claims (Figures 13 and 17) and the frame size they use.
NUMA_FRAME_SIZE = claimsets.CHAIN_NUMA_FRAME_SIZE


def tables_c(records: PathLike, models: Optional[list[str]] = None) -> dict[str, pd.DataFrame]:
    """Experiment C (Appendix C, Figures 16 and 17): model combination and multi-pod NUMA.

    Returns
    -------
    dict
        ``combination``: model x frame size at NUMA scenario s1 (ndr) with
        ``draft_model`` and ``draft11_fig16_gbps`` beside; ``numa``: model x NUMA
        scenario at 1518 B with ``draft11_fig17_gbps`` beside (published, Gbit/s,
        the draft's 40 GbE testbed -- not this host); ``claims``: C.2 "combined >
        user-space only" per frame size and "s1 best; splitting pods across NUMA
        nodes (s2, s3, s5, s6) degrades" (s1 above each of s2..s6) per model
        (:func:`nfvlab.claimsets.chain_claims`; an adaptive run's judged with its plan, :func:`plan_of`).
    """
    s, notes, models = inputs(records, GOAL, models)
    sizes = levels(s["frame_size"], notes["frame_size"], default=DEFAULT_FRAME_SIZES)
    s1, s1_notes = select(s, numa=["s1", None]), select(notes, numa=["s1", None])
    draft = {v: k for k, v in DRAFT_C_ANALOGUES.items()}
    comb = config_table(s1, s1_notes, {"model": models, "frame_size": sizes}, "ndr")
    comb.insert(1, "draft_model", comb["model"].map(draft))
    comb = beside(comb, reference.combination_throughput(), {"draft_model": "model", "frame_size": "frame_size"},
                   "throughput_gbps", "draft11_fig16_gbps")
    numa = config_table(select(s, frame_size=NUMA_FRAME_SIZE), notes,
                        {"model": models, "numa": levels(s["numa"], notes["numa"]),
                         "frame_size": [NUMA_FRAME_SIZE]}, "ndr")
    numa = beside(numa, reference.multipod_numa(), {"numa": "scenario", "frame_size": "frame_size"},
                   "throughput_gbps", "draft11_fig17_gbps")
    rows, plan = [], plan_of(records)
    notes, noise = analysis_paired.paired_notes(records), analysis_paired.host_noise(records)
    for spec in claimsets.chain_claims(models, sizes):
        data, table, where = _claim_data(spec, s, s1, comb, numa)
        rows += claim_rows(spec.claim, spec.condition, spec.chains, select(data, **where), spec.by,
                           status_of(table, spec.by, **where), plan=plan,
                           paired=analysis_paired.paired_for(spec, notes), noise=noise)
    return {"combination": comb, "numa": numa, "claims": pd.DataFrame(rows + analysis_paired.control_rows(notes, noise), columns=CLAIM_COLUMNS)}


def _claim_data(spec: claimsets.ClaimSpec, searches: pd.DataFrame, s1: pd.DataFrame, comb: pd.DataFrame,
                numa: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """The rows a claim reads, the table its levels' status comes from, and the fixed labels to select
    them by: a claim at NUMA scenario s1 reads the s1 rows (records without a ``numa`` label count as
    s1) and the combination table; the others the NUMA table."""
    where = dict(spec.where)
    if where.pop("numa", None) == "s1":
        return s1, comb, where
    return searches, numa, where


def figures_c(tabs: dict[str, pd.DataFrame], out: Path, dpi: int = 110) -> list[Path]:
    """``experiment_c_combination.png`` (NDR vs frame size per model, 95 % CI) and ``experiment_c_numa.png``."""
    first = throughput_figure(tabs["combination"], "Experiment C, NUMA s1: zero-loss throughput, mean and "
                              f"95 % t-interval\n{HOST_ONLY}", out / "experiment_c_combination.png", dpi)
    return [first, bar_figure(tabs["numa"], "numa", "model",
                               f"Experiment C, {NUMA_FRAME_SIZE} B: zero-loss throughput per NUMA scenario,\n"
                               f"mean and 95 % t-interval; {HOST_ONLY}", out / "experiment_c_numa.png", dpi)]



def metrics(tabs: dict[str, pd.DataFrame]) -> dict:
    """Mean NDR of every measured chain and frame size, and per NUMA scenario (kpps), claim counts."""
    return {**metric_values(tabs["combination"], ["model", "frame_size"], "ndr_kpps"),
            **metric_values(tabs["numa"], ["model", "numa", "frame_size"], "ndr_kpps", prefix="numa/"),
            **claim_counts(tabs["claims"])}


EXPERIMENT = Experiment(
    letter="c",
    title="Experiment C: networking model combination and multi-pod NUMA (Appendix C, Figures 16, 17)",
    text=(
        "NDR of the two-pod chains (user-space only vs direct N-S + user-space E-W) over frame sizes and "
        "NUMA scenarios, with Figures 16 and 17 beside. Claims C.2: combined > user-space only; s1 best, "
        "splitting pods across NUMA nodes degrades."),
    notebook_title=(
        "Experiment C: two-pod chains, user-space only vs combined (draft Appendix C, Figures 16 and 17)"),
    notebook_text=(
        "pod1 -> vSwitch -> pod2. User-space only: every pod port is a vhost-user port of OVS-DPDK. "
        "Combined: north-south traffic on direct ports (the local analogue of SR-IOV VFs), east-west "
        "through OVS-DPDK. Zero-loss throughput over frame sizes and NUMA scenarios s1..s6."),
    table_names=("combination", "numa", "claims", "latency"),
    tables=tables_c,
    figures=figures_c,
    metrics=metrics,
    goal=GOAL,
    kubernetes_table="combination",
)
