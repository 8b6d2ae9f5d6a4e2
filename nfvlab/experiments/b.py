"""Experiment B (draft Appendix B, Figure 13): CPU pinning x NUMA alignment with a noisy neighbour."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import pandas as pd

from nfvlab import analysis_paired, claimsets, reference
from nfvlab.analysis import (CLAIM_COLUMNS, HOST_ONLY, bar_figure, beside, claim_counts, claim_rows, config_table,
                             file_part, inputs, levels, metric_values, plan_of, select, status_of)
from nfvlab.experiments.base import Experiment, PathLike

#: Frame sizes the table shows when the records have no search at all (every configuration
#: not realizable): the draft's.
DEFAULT_FRAME_SIZES = (1518,)


#: The search goal its tables show.
GOAL = "ndr"


def tables_b(records: PathLike, models: Optional[list[str]] = None) -> dict[str, pd.DataFrame]:
    """Experiment B (Appendix B, Figure 13): CPU pinning x NUMA scenario under a noisy neighbour.

    Returns
    -------
    dict
        ``pinning_numa``: :func:`config_table` over model x pinning x numa x
        frame size (ndr) plus ``draft11_fig13_gbps`` (published, Gbit/s on the
        draft's 40 GbE testbed -- not this host). ``claims``: B.2 per NUMA
        scenario ("exclusive > shared > none") and per pinning mode ("s1 best;
        s2 and s4 degrade": s1 above each of s2, s3, s4), :data:`CLAIM_COLUMNS`.
    """
    s, notes, models = inputs(records, GOAL, models)
    grid = {"model": models,
            "pinning": levels(s["pinning"], notes["pinning"], order=reference.PINNING_ORDER),
            "numa": levels(s["numa"], notes["numa"]),
            "frame_size": levels(s["frame_size"], notes["frame_size"], default=DEFAULT_FRAME_SIZES)}
    pub = reference.pinning_numa()
    table = beside(config_table(s, notes, grid, "ndr"), pub,
                    {"pinning": "pinning", "numa": "scenario", "frame_size": "frame_size"},
                    "throughput_gbps", "draft11_fig13_gbps")
    rows, plan = [], plan_of(records)
    notes, noise = analysis_paired.paired_notes(records), analysis_paired.host_noise(records)
    for spec in claimsets.pinning_numa_claims(models, grid["frame_size"], grid["numa"], grid["pinning"]):
        rows += claim_rows(spec.claim, spec.condition, spec.chains, select(s, **spec.where), spec.by,
                           status_of(table, spec.by, **spec.where), plan=plan,
                           paired=analysis_paired.paired_for(spec, notes), noise=noise)
    return {"pinning_numa": table, "claims": pd.DataFrame(rows + analysis_paired.control_rows(notes, noise), columns=CLAIM_COLUMNS)}



def figures_b(tabs: dict[str, pd.DataFrame], out: Path, dpi: int = 110) -> list[Path]:
    """``experiment_b_pinning_numa[_<model>].png``: bars per NUMA scenario, one per pinning mode, 95 % CI."""
    t = tabs["pinning_numa"]
    models = list(dict.fromkeys(t["model"]))
    return [bar_figure(t[t["model"] == m], "numa", "pinning",
                        f"Experiment B ({m}, noisy neighbour): zero-loss throughput,\n"
                        f"mean and 95 % t-interval; {HOST_ONLY}",
                        out / f"experiment_b_pinning_numa{'' if len(models) == 1 else '_' + file_part(m)}.png", dpi)
            for m in models]



def metrics(tabs: dict[str, pd.DataFrame]) -> dict:
    """Mean NDR of every measured configuration (kpps), claim counts."""
    return {**metric_values(tabs["pinning_numa"], ["model", "pinning", "numa", "frame_size"], "ndr_kpps"),
            **claim_counts(tabs["claims"])}


EXPERIMENT = Experiment(
    letter="b",
    title="Experiment B: CPU pinning x NUMA alignment with a noisy neighbour (Appendix B, Figure 13)",
    text=(
        "NDR at 1518 B of the user-space model (local stand-in for VPP) for each CPU pinning mode and "
        "NUMA scenario, with the draft's Figure 13 (Gbps) beside. Claims B.2: exclusive > shared > none; "
        "s1 best while s2 and s4 degrade."),
    notebook_title="Experiment B: CPU pinning x NUMA with a noisy neighbour (draft Appendix B, Figure 13)",
    notebook_text=(
        "One pod on the user-space vSwitch (OVS-DPDK with vhost-user, the local stand-in for the draft's "
        "VPP) next to a noisy-neighbour pod running stress-ng. CPU pinning none / shared / exclusive (the"
        " CMK modes) x NUMA scenarios s1..s4, zero-loss throughput at 1518 B."),
    table_names=("pinning_numa", "claims", "latency"),
    tables=tables_b,
    figures=figures_b,
    metrics=metrics,
    goal=GOAL,
)
