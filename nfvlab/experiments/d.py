"""Experiment D (seed 001): the NFV service density matrix."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from nfvlab import reference, results
from nfvlab.analysis import HOST_ONLY, beside, config_table, file_part, inputs, levels, metric_values
from nfvlab.experiments.base import Experiment, PathLike
from nfvlab.plots.heatmap import matrix_heatmap
from nfvlab.plots.output import figure_style, new_figure, save_png
from nfvlab.scenario import density

#: Frame sizes the table shows when the records have no search at all: the note's.
DEFAULT_FRAME_SIZES = (64, "IMIX")


#: The search goal its tables show.
GOAL = "mrr"


#: Published density matrices shown beside experiment D (the ratio the local lab uses).
DENSITY_PCDR4SW = "(1:1)"



def host_cpus(records: PathLike) -> int:
    """CPUs of the host that wrote the records (provenance of the latest completed run), else of this host."""
    prov = results.run_provenance(records)
    for key in ("cpu_affinity_count", "cpu_count"):
        if prov.get(key):
            return int(prov[key])
    return int(os.cpu_count() or 1)



def tables_d(records: PathLike, models: Optional[list[str]] = None) -> dict[str, pd.DataFrame]:
    """Experiment D (seed 001): MRR service-density matrix, published cells and core usage beside.

    Returns
    -------
    dict
        ``mrr``: :func:`config_table` over model x topology x frame size x
        instances x nfs (goal mrr; ``mean_pps`` is the receive rate per
        direction), then per published testbed ``published_mrr_mpps_<testbed_id>``
        / ``published_raw_<testbed_id>`` (density note, pcdr4sw (1:1); ``---`` =
        out of cores there, ``???`` = not measured), ``total_nfs``,
        ``seed_nf_cores`` (the note's core-usage view, :func:`nfvlab.scenario.density.core_usage_view`),
        ``seed_total_cores`` (with the switch, :func:`nfvlab.scenario.density.core_plan`),
        ``userspace_dataplane_cores`` (one core per dataplane thread set at
        pcdr4nf = pcdr4sw = (1:1): each NF plus the switch), ``host_cpus`` and
        ``userspace_fits_host`` (``userspace_dataplane_cores <= host_cpus``).
    """
    s, notes, models = inputs(records, GOAL, models)
    grid = {"model": models, "topology": levels(s["topology"], notes["topology"]),
            "frame_size": levels(s["frame_size"], notes["frame_size"], default=DEFAULT_FRAME_SIZES),
            "instances": levels(s["instances"], notes["instances"]),
            "nfs": levels(s["nfs"], notes["nfs"])}
    table = config_table(s, notes, grid, "mrr")
    pub = reference.density_mrr()
    pub = pub[pub["pcdr4sw"] == DENSITY_PCDR4SW].assign(topology=lambda d: d["topology"].str.lower())
    on = {"topology": "topology", "frame_size": "frame_size", "instances": "instances", "nfs": "nfs_per_instance"}
    for tb, g in pub.groupby("testbed_id", sort=True):
        table = beside(table, g, on, "mrr_mpps", f"published_mrr_mpps_{tb}")
        table = beside(table, g, on, "raw", f"published_raw_{tb}")
    cpus = host_cpus(records)
    table["total_nfs"] = table["instances"] * table["nfs"]
    table["seed_nf_cores"] = [density.core_usage_view(i, n) for i, n in zip(table["instances"], table["nfs"])]
    table["seed_total_cores"] = [density.core_plan(i, n).total_cores for i, n in zip(table["instances"], table["nfs"])]
    table["userspace_dataplane_cores"] = [  # pcdr4nf per NF dataplane + pcdr4sw for the switch's
        int(np.ceil(density.physical_cores("(1:1)", "(1:2)", t, 0)
                    + density.physical_cores(DENSITY_PCDR4SW, "(1:1)", 1, 0))) for t in table["total_nfs"]]
    table["host_cpus"] = cpus
    table["userspace_fits_host"] = table["userspace_dataplane_cores"] <= cpus
    return {"mrr": table}



def figures_d(tabs: dict[str, pd.DataFrame], out: Path, dpi: int = 110) -> list[Path]:
    """``experiment_d_mrr_<topology>_<frame size>.png`` (model prefix if several): MRR heatmaps in kpps.

    All heatmaps share one colour scale (0 to the largest mean of the table), so
    equal colours mean equal rates across them; interval bounds below 0 (small
    n) are shown as 0.
    """
    t = tabs["mrr"].assign(mean_kpps=lambda d: d["mean_pps"] / 1e3)
    vmax_kpps = float(np.nanmax(t["mean_kpps"].to_numpy(dtype=float), initial=0.0)) or 1.0
    t["cell"] = [f"{v:.1f}\n[{max(lo, 0.0) / 1e3:.1f}, {hi / 1e3:.1f}]" if r == "measured" and pd.notna(lo) else
                 (f"{v:.1f}" if r == "measured" else r.split(":")[0])
                 for v, lo, hi, r in zip(t["mean_kpps"], t["ci_low_pps"], t["ci_high_pps"], t["status"])]
    several = t["model"].nunique() > 1
    paths = []
    for (m, topo, fs), g in t.groupby(["model", "topology", "frame_size"], sort=False):
        name = f"experiment_d_mrr_{file_part(m) + '_' if several else ''}{file_part(topo)}_{file_part(fs)}.png"
        with figure_style(dpi):
            fig = new_figure((6.4, 4.6))
            matrix_heatmap(g, "instances", "nfs", "mean_kpps", text="cell", ax=fig.subplots(),
                           cbar_label="MRR [kpps per direction]", annot_fontsize=7, vmin=0.0, vmax=vmax_kpps,
                           xlabel="NFs per service instance", ylabel="service instances",
                           title=f"Experiment D {topo.upper()} {fs} B ({m}): MRR per direction,\n"
                                 f"mean [95 % t-interval], kpps; {HOST_ONLY}")
            paths.append(save_png(fig, out / name))
    return paths



def metrics(tabs: dict[str, pd.DataFrame]) -> dict:
    """Mean MRR of every measured matrix cell (kpps)."""
    return metric_values(tabs["mrr"], ["model", "topology", "frame_size", "instances", "nfs"], "mrr_kpps")


EXPERIMENT = Experiment(
    letter="d",
    title="Experiment D: NFV service density matrix (seed 001)",
    text=(
        "Maximum receive rate (MRR, packets/s per direction) per topology and frame size over service "
        "instances x NFs per instance, with the density note's published cells beside and the cores the "
        "note's formula allots each cell next to this host's CPU count."),
    notebook_title="Experiment D: NFV service density (seed 001)",
    notebook_text=(
        "Service instances x network functions per instance, CNF service chain (csc, snake forwarding "
        "through the switch) vs CNF service pipeline (csp), MRR at 64 B and IMIX. NFs are kernel routers;"
        " the worker's router is the switch and spreads flows over instances by ECMP."),
    table_names=("mrr", "latency"),
    tables=tables_d,
    figures=figures_d,
    metrics=metrics,
    goal=GOAL,
)
