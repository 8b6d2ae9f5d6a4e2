"""Experiment A (draft Appendix A, Figure 10): networking models x frame sizes."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from nfvlab import analysis_paired, claimsets, linerate, reference
from nfvlab.analysis import (CLAIM_COLUMNS, claim_rows, claim_counts, config_table, inputs, levels,
                             metric_values, plan_of, select, status_of, throughput_figure)
from nfvlab.experiments.base import Experiment, PathLike
from nfvlab.scenario import catalogue


#: The search goal its tables show.
GOAL = "ndr"




def tables_a(records: PathLike, models: Optional[list[str]] = None) -> dict[str, pd.DataFrame]:
    """Experiment A (Appendix A, Figure 10): zero-loss throughput of each model over frame sizes.

    Returns
    -------
    dict
        ``throughput``: :func:`config_table` over model x frame size (ndr), with
        ``section`` (draft) after ``model`` and ``gbps_l2`` (mean at L2, per direction)
        at the end; ``claims``: A.2 per frame size on the local analogues
        (:func:`nfvlab.claimsets.model_claims`; an adaptive run's judged with its plan,
        :func:`~nfvlab.analysis.plan_of`), :data:`CLAIM_COLUMNS`; ``published``: the
        draft's Figure 10 values (40 GbE testbed, not this host) with ``local_analogue``.
    """
    s, notes, models = inputs(records, GOAL, models)
    sizes = levels(s["frame_size"], notes["frame_size"], default=(64, 1518))
    table = config_table(s, notes, {"model": models, "frame_size": sizes}, "ndr")
    table.insert(1, "section", [catalogue.get(m).section for m in table["model"]])
    table["gbps_l2"] = [linerate.pps_to_gbps(v, fs, 2) if pd.notna(v) else np.nan
                        for v, fs in zip(table["mean_pps"], table["frame_size"])]
    rows, plan = [], plan_of(records)
    notes, noise = analysis_paired.paired_notes(records), analysis_paired.host_noise(records)
    for spec in claimsets.model_claims(sizes):
        rows += claim_rows(spec.claim, spec.condition, spec.chains, select(s, **spec.where), spec.by,
                           status_of(table, spec.by, **spec.where), plan=plan,
                           paired=analysis_paired.paired_for(spec, notes), noise=noise)
    pub = reference.models_throughput()
    pub["local_analogue"] = pub["model"].map(claimsets.DRAFT_A_ANALOGUES)
    return {"throughput": table, "claims": pd.DataFrame(rows + analysis_paired.control_rows(notes, noise), columns=CLAIM_COLUMNS), "published": pub}



def figure_a(table: pd.DataFrame, path: PathLike, dpi: int = 110) -> Path:
    """Measured zero-loss throughput vs frame size per model (per direction), 95 % CI bars."""
    return throughput_figure(table, "Experiment A (measured on this host, embedded lab):\n"
                                    "zero-loss throughput per direction, mean and 95 % t-interval over repetitions",
                             Path(path), dpi)



def figures(tabs: dict[str, pd.DataFrame], out: Path, dpi: int = 110) -> list[Path]:
    """``experiment_a_throughput.png`` (:func:`figure_a`)."""
    return [figure_a(tabs["throughput"], out / "experiment_a_throughput.png", dpi)]


def metrics(tabs: dict[str, pd.DataFrame]) -> dict:
    """Mean NDR of every measured model and frame size (kpps), claim counts."""
    return {**metric_values(tabs["throughput"], ["model", "frame_size"], "ndr_kpps"), **claim_counts(tabs["claims"])}


EXPERIMENT = Experiment(
    letter="a",
    title="Experiment A: networking models x frame sizes (draft Appendix A, Figure 10)",
    text=(
        "Zero-loss throughput (NDR, packets/s per direction) of each container networking model, mean "
        "over repetitions with a 95 % t-interval, and claim A.2 checked with Welch's t on log NDR, the "
        "search's goal width counted as measurement uncertainty (Holm-adjusted; docs/methodology.md)."),
    notebook_title="Experiment A: networking models x frame sizes (draft Appendix A, Figure 10)",
    notebook_text=(
        "Zero-loss throughput (NDR) of each container networking model over frame sizes, and one-way "
        "latency under load, on the lab named by the params (the embedded local lab by default)."),
    table_names=("throughput", "claims", "published", "latency"),
    tables=tables_a,
    figures=figures,
    metrics=metrics,
    goal=GOAL,
    kubernetes_table="throughput",
)
