"""Raw records -> the experiments' tables, claims and figures (deterministic).

Each ``table_*`` function returns a tidy DataFrame; :func:`write_experiment_a`
writes what the DVC analysis stage publishes. Models this host cannot realize
appear as rows whose ``status`` says why, with no value.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Union

import numpy as np
import pandas as pd

from nfvlab import linerate, reference, results, stats
from nfvlab.lab import catalogue
from nfvlab.plots.output import figure_style, new_figure, save_png
from nfvlab.plots.throughput import throughput_vs_frame_size

PathLike = Union[str, Path]

#: The draft's Figure 10 models and the local model standing in for each.
DRAFT_A_ANALOGUES = {
    "smartnic-sriov": "smartnic-direct",
    "ebpf-afxdp-cni": "afxdp-cni",
    "userspace-vpp": "ovs-dpdk-vhost",
    "ebpf-ovs-afxdp": "ovs-afxdp",
}


def throughput_table(records: PathLike, models: list[str], goal: str = "ndr",
                     searches: pd.DataFrame | None = None) -> pd.DataFrame:
    """Throughput per model and frame size with statistics over repetitions.

    Returns
    -------
    pandas.DataFrame
        ``model``, ``section`` (draft), ``frame_size``, ``status`` (``measured`` or
        ``not realizable: <why>``), ``n``, ``mean_pps`` / ``ci_low_pps`` /
        ``ci_high_pps`` (per direction, 95 % t-interval), ``cv``, ``mean_gbps_l1``
        / ``mean_gbps_l2`` (per direction), ``generator_limited`` (any repetition).
    """
    s = results.searches_frame(records) if searches is None else searches
    s = s[s["goal"] == goal]
    summ = stats.summarize(s, ["model", "frame_size"], "throughput_pps")
    lim = s.groupby(["model", "frame_size"])["generator_limited"].agg(lambda v: bool(v.fillna(False).any()))
    nr = results.not_realizable_frame(records)
    reasons = dict(zip(nr["model"], nr["reason"]))
    sizes = sorted(set(s["frame_size"]), key=stats.level_sort_key) if len(s) else []
    rows = []
    for m in models:
        for fs in sizes:
            hit = summ[(summ["model"] == m) & (summ["frame_size"] == fs)]
            base = {"model": m, "section": catalogue.get(m).section, "frame_size": fs}
            if hit.empty:
                rows.append({**base, "status": f"not realizable: {reasons.get(m, 'not measured')}", "n": 0})
                continue
            h = hit.iloc[0]
            rows.append({**base, "status": "measured", "n": int(h["n"]), "mean_pps": h["mean"],
                         "ci_low_pps": h["ci_low"], "ci_high_pps": h["ci_high"], "cv": h["cv"],
                         "mean_gbps_l1": linerate.pps_to_gbps(h["mean"], fs, 1),
                         "mean_gbps_l2": linerate.pps_to_gbps(h["mean"], fs, 2),
                         "generator_limited": bool(lim.get((m, fs), False))})
    cols = ["model", "section", "frame_size", "status", "n", "mean_pps", "ci_low_pps", "ci_high_pps",
            "cv", "mean_gbps_l1", "mean_gbps_l2", "generator_limited"]
    return pd.DataFrame(rows, columns=cols)


def claims_a(searches: pd.DataFrame, table: pd.DataFrame) -> pd.DataFrame:
    """The draft's A.2 claim, evaluated per frame size on the local analogues.

    A.2: "SR-IOV and eBPF using AFXDP-CNI have the best performances, followed by
    VPP vSwitch and eBPF using OVS-AFXDP" -> for each of SR-IOV and AFXDP-CNI the
    order (it, VPP, OVS-AFXDP) must hold with significant adjacent differences.

    ``searches`` is :func:`nfvlab.results.searches_frame` of the records and
    ``table`` is :func:`throughput_table` of them.

    Returns
    -------
    pandas.DataFrame
        ``claim``, ``frame_size``, ``holds`` (True / False / None = not testable),
        ``detail``.
    """
    s = searches[searches["goal"] == "ndr"]
    status = dict(zip(table["model"], table["status"]))
    a = DRAFT_A_ANALOGUES
    rows = []
    for best in (a["smartnic-sriov"], a["ebpf-afxdp-cni"]):
        order = [best, a["userspace-vpp"], a["ebpf-ovs-afxdp"]]
        claim = f"A.2: {order[0]} > {order[1]} > {order[2]} (draft: SR-IOV/AFXDP-CNI > VPP > OVS-AFXDP)"
        missing = [m for m in order if not str(status.get(m, "")).startswith("measured")]
        sizes = sorted(set(table["frame_size"]), key=stats.level_sort_key)
        for fs in sizes:
            if missing:
                why = "; ".join(f"{m}: {status.get(m, 'not in the experiment')}" for m in missing)
                rows.append({"claim": claim, "frame_size": fs, "holds": None,
                             "detail": f"not testable on this host ({why})"})
                continue
            sub = s[(s["frame_size"] == fs) & s["model"].isin(order)]
            summ = stats.summarize(sub, "model", "throughput_pps")
            comp = stats.compare(sub, "model", "throughput_pps")
            verdict = stats.claim_order(summ, "model", order, compare_df=comp)
            rows.append({"claim": claim, "frame_size": fs, "holds": verdict["holds"], "detail": verdict["detail"]})
    return pd.DataFrame(rows, columns=["claim", "frame_size", "holds", "detail"])


def figure_a(table: pd.DataFrame, path: PathLike, dpi: int = 110) -> Path:
    """Measured zero-loss throughput vs frame size per realizable model (per direction)."""
    data = table[table["status"] == "measured"].copy()
    data["mean_kpps"] = data["mean_pps"] / 1e3
    with figure_style(dpi):
        fig = new_figure((7.0, 4.4))
        ax = fig.subplots()
        if data.empty:
            ax.text(0.5, 0.5, "no model realizable on this host", ha="center", va="center")
        else:
            throughput_vs_frame_size(
                data, y="mean_kpps", hue="model", ax=ax, x_scale="log2",
                title="Experiment A (measured on this host, embedded lab):\n"
                      "zero-loss throughput per direction, mean of repetitions",
                ylabel="NDR [kpps per direction]")
        return save_png(fig, Path(path))


def write_experiment_a(records: PathLike, params_models: list[str], out_tables: PathLike,
                       out_figures: PathLike, metrics: PathLike) -> list[Path]:
    """Write table, claims, reference-beside table, figure and metrics of experiment A."""
    out_tables, out_figures = Path(out_tables), Path(out_figures)
    out_tables.mkdir(parents=True, exist_ok=True)
    out_figures.mkdir(parents=True, exist_ok=True)
    searches = results.searches_frame(records)
    table = throughput_table(records, params_models, searches=searches)
    paths = [out_tables / "experiment_a_throughput.csv", out_tables / "experiment_a_claims.csv",
             out_tables / "experiment_a_published.csv"]
    table.to_csv(paths[0], index=False, float_format="%.6g")
    claims_a(searches, table).to_csv(paths[1], index=False)
    pub = reference.models_throughput()
    pub["local_analogue"] = pub["model"].map(DRAFT_A_ANALOGUES)
    pub.to_csv(paths[2], index=False)
    paths.append(figure_a(table, out_figures / "experiment_a_throughput.png"))
    m = {f"{r.model}/{r.frame_size}/ndr_kpps": round(r.mean_pps / 1e3, 3)
         for r in table.itertuples() if r.status == "measured" and not np.isnan(r.mean_pps)}
    Path(metrics).parent.mkdir(parents=True, exist_ok=True)
    Path(metrics).write_text(json.dumps(m, indent=1, sort_keys=True) + "\n")
    paths.append(Path(metrics))
    return paths
