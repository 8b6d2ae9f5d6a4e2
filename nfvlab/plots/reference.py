"""One PNG per published reference table (:mod:`nfvlab.reference`).

Every title says the numbers are the *published* ones of their source, so the
figures cannot be mistaken for reproductions. Rendering is deterministic:
matplotlib defaults plus a fixed seaborn style (user rc files are ignored),
fixed figure sizes and dpi, no timestamps, ``Software`` metadata dropped, and
sorted iteration -- two runs write byte-identical files.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import seaborn as sns
import pandas as pd

from nfvlab import reference as ref
from nfvlab.plots.heatmap import matrix_heatmap
from nfvlab.plots.output import DPI, OUTSIDE_LEGEND, PNG_METADATA, figure_style, new_figure, save_png
from nfvlab.plots.throughput import throughput_vs_frame_size

__all__ = ["render_reference_figures", "reference_style", "DPI", "PNG_METADATA"]

DRAFT = "draft-11"
NOTE = "density note"
TESTBED_40G = "40GbE testbed"


reference_style = figure_style


def _throughput_figure(df: pd.DataFrame, title: str, path: Path) -> Path:
    """Published zero-loss throughput vs frame size, one line per model."""
    fig = new_figure((7.0, 4.4))
    throughput_vs_frame_size(
        df, hue="model_label", ax=fig.subplots(), title=title,
        ylabel="Zero-loss throughput [Gbps]", reference_line=40.0, reference_label="40GbE nominal",
    ).legend(title="Model", fontsize="small", title_fontsize="small", **OUTSIDE_LEGEND)
    return save_png(fig, path)


def _fig10(out: Path) -> Path:
    return _throughput_figure(
        ref.models_throughput(),
        f"{DRAFT} Figure 10 (published, {TESTBED_40G}):\nzero-loss throughput by networking model",
        out / "draft11_fig10_models_throughput.png")


def _fig16(out: Path) -> Path:
    return _throughput_figure(
        ref.combination_throughput(),
        f"{DRAFT} Figure 16 (published, {TESTBED_40G}):\nmodel combination, multi-pod",
        out / "draft11_fig16_combination_throughput.png")


def _scenario_labels(scen: pd.DataFrame, cols: list[str]) -> dict[str, str]:
    return {
        s: f"{s}\n" + "/".join(str(int(v)) for v in vals)
        for s, *vals in scen[["scenario", *cols]].itertuples(index=False)
    }


def _fig13(out: Path) -> Path:
    df = ref.pinning_numa()
    scen = ref.numa_scenarios("single")
    col_order = list(scen["scenario"])
    lab = _scenario_labels(scen, ["nic_numa", "vswitch_numa", "pod_numa"])
    row_names = dict(zip(df["pinning"], df["pinning_label"]))
    rows = [p for p in ref.PINNING_ORDER if p in row_names]
    fig = new_figure((6.6, 3.6))
    matrix_heatmap(
        df, row="pinning", col="scenario", value="throughput_gbps", ax=fig.subplots(),
        row_order=rows, col_order=col_order,
        row_labels=[row_names[p] for p in rows], col_labels=[lab[s] for s in col_order],
        cmap="viridis", vmin=0.0, cbar_label="Zero-loss throughput [Gbps]",
        xlabel="NUMA scenario (NUMA node of NIC/vSwitch/pod)", ylabel="CPU pinning",
        title=f"{DRAFT} Figure 13 (published, {TESTBED_40G}):\nCPU pinning x NUMA, single pod, 1518 B",
    )
    return save_png(fig, out / "draft11_fig13_pinning_numa.png")


def _fig17(out: Path) -> Path:
    df = ref.multipod_numa()
    scen = ref.numa_scenarios("multi")
    lab = _scenario_labels(scen, ["nic_numa", "vswitch_numa", "pod1_numa", "pod2_numa"])
    order = list(scen["scenario"])
    vals = df.set_index("scenario").loc[order, "throughput_gbps"].to_numpy(dtype=float)
    fig = new_figure((6.6, 4.0))
    ax = fig.subplots()
    color = sns.color_palette("colorblind", 1)[0]
    bars = ax.bar(np.arange(len(order)), vals, color=color, width=0.65)
    ax.bar_label(bars, labels=[f"{v:.2f}" for v in vals], fontsize=8, padding=-12, color="white")
    ax.axhline(40.0, color="0.4", linestyle="--", linewidth=1.0, label="40GbE nominal")
    ax.set_xticks(np.arange(len(order)))
    ax.set_xticklabels([lab[s] for s in order])
    ax.set_ylim(0, 45)
    ax.set_xlabel("NUMA scenario (NUMA node of NIC/vSwitch/pod1/pod2; Figure 15 prints s5, s6 as 's4')")
    ax.set_ylabel("Zero-loss throughput [Gbps]")
    ax.legend(fontsize="small", **OUTSIDE_LEGEND)
    ax.set_title(f"{DRAFT} Figure 17 (published, {TESTBED_40G}):\nNUMA alignment, multi-pod, 1518 B")
    return save_png(fig, out / "draft11_fig17_multipod_numa.png")


def _numa_table(out: Path, kind: str) -> Path:
    scen = ref.numa_scenarios(kind)
    comps = [c for c in scen.columns if c.endswith("_numa")]
    long = scen.melt(id_vars=["scenario", "label_in_draft"], value_vars=comps, var_name="component", value_name="numa")
    long["text"] = "NUMA" + long["numa"].astype(str)
    rows = list(scen["scenario"])
    row_labels = [
        s if s == printed else f"{s} (printed '{printed}')"
        for s, printed in zip(scen["scenario"], scen["label_in_draft"])
    ]
    fig_no = "12" if kind == "single" else "15"
    what = "single pod" if kind == "single" else "multi-pod"
    fig = new_figure((6.0, 1.2 + 0.45 * len(rows)))
    matrix_heatmap(
        long, row="scenario", col="component", value="numa", text="text", ax=fig.subplots(),
        row_order=rows, col_order=comps, row_labels=row_labels,
        col_labels=[c.removesuffix("_numa").replace("vswitch", "vSwitch").replace("nic", "NIC") for c in comps],
        cmap="Pastel1", vmin=0, vmax=8, cbar=False, xlabel="", ylabel="Scenario",
        title=f"{DRAFT} Figure {fig_no} (published):\nNUMA alignment scenarios, {what}",
    )
    return save_png(fig, out / f"draft11_fig{fig_no}_numa_scenarios_{kind}.png")


def _density_mrr(out: Path) -> list[Path]:
    df = ref.density_mrr()
    vmax = float(np.ceil(df["mrr_mpps"].max()))
    paths = []
    topologies = ["VSC", "CSC", "CSP"]
    frames = [64, "IMIX"]
    for (tb, sw), g in sorted(df.groupby(["testbed_id", "pcdr4sw"], sort=True), key=lambda kv: kv[0]):
        fig = new_figure((9.0, 10.5))
        axes = fig.subplots(len(topologies), len(frames))
        for i, topo in enumerate(topologies):
            for j, frame in enumerate(frames):
                cell = g[(g["topology"] == topo) & (g["frame_size"].map(lambda f: f == frame))]
                matrix_heatmap(
                    cell, row="instances", col="nfs_per_instance", value="mrr_mpps", text="raw",
                    ax=axes[i, j], row_order=list(ref.DENSITY_AXIS), col_order=list(ref.DENSITY_AXIS),
                    cmap="viridis", vmin=0.0, vmax=vmax, cbar=False, annot_fontsize=7.5,
                    xlabel="NFs per service instance" if i == len(topologies) - 1 else "",
                    ylabel="Service instances" if j == 0 else "",
                    title=f"{topo}, {frame if isinstance(frame, str) else f'{frame}B'}",
                )
        fig.colorbar(axes[0, 0].collections[0], ax=axes, shrink=0.6, label="MRR [Mpps]")
        first = g.iloc[0]
        fig.suptitle(
            f"{NOTE} MRR matrices (published): {first['testbed']} ({first['testbed_hosts']}), "
            f"pcdr4sw = {sw}\n"
            f"pcmr4sw = {first['pcmr4sw']}, pcdr4nf = {first['pcdr4nf']}, pcmr4nf = {first['pcmr4nf']}\n"
            "'*' = warm-up retries, '???' = to be measured, '---' = impossible (out of physical cores)"
        )
        ratio = sw.strip("()").replace(":", "-")
        paths.append(save_png(fig, out / f"density_mrr_{tb}_pcdr4sw-{ratio}.png"))
    return paths


def _density_view(out: Path, name: str) -> Path:
    df = ref.load(name)
    value = "total_nfs" if name == "density_nf_view" else "physical_cores"
    label = "Total NFs on the node" if value == "total_nfs" else "Physical cores used"
    extra = ""
    if value == "physical_cores":
        r = df.iloc[0]
        extra = (f"\npcdr4sw = {r['pcdr4sw']}, pcmr4sw = {r['pcmr4sw']}, pcdr4nf = {r['pcdr4nf']}, "
                 f"pcmr4nf = {r['pcmr4nf']}\n(values = ceil(1.5 x NFs): the switch's cores are not included)")
    view = "Network Function View" if value == "total_nfs" else "Core Usage View"
    fig = new_figure((6.4, 5.0))
    matrix_heatmap(
        df, row="instances", col="nfs_per_instance", value=value, ax=fig.subplots(),
        row_order=list(ref.DENSITY_AXIS), col_order=list(ref.DENSITY_AXIS), fmt="g",
        cmap="mako_r", vmin=0.0, cbar_label=label,
        xlabel="NFs per service instance", ylabel="Service instances",
        title=f"{NOTE} {view} (published){extra}",
    )
    return save_png(fig, out / f"{name}.png")


def render_reference_figures(out_dir: Path, dpi: int = DPI) -> list[Path]:
    """Write one PNG per reference table into ``out_dir``.

    Files: ``draft11_fig10_models_throughput.png``, ``draft11_fig12_numa_scenarios_single.png``,
    ``draft11_fig13_pinning_numa.png``, ``draft11_fig15_numa_scenarios_multi.png``,
    ``draft11_fig16_combination_throughput.png``, ``draft11_fig17_multipod_numa.png``,
    ``density_mrr_<testbed_id>_pcdr4sw-<a>-<b>.png`` (one per testbed x pcdr4sw, panels
    VSC/CSC/CSP x 64B/IMIX), ``density_nf_view.png``, ``density_core_view.png``.

    Parameters
    ----------
    out_dir : pathlib.Path
        Created if missing; existing files of the same names are overwritten.
    dpi : int
        Resolution of the PNGs (``params/reference.yaml``).

    Returns
    -------
    list of pathlib.Path
        The written files, sorted. Re-running produces byte-identical files.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    with reference_style(dpi):
        paths.append(_fig10(out))
        paths.append(_numa_table(out, "single"))
        paths.append(_fig13(out))
        paths.append(_numa_table(out, "multi"))
        paths.append(_fig16(out))
        paths.append(_fig17(out))
        paths.extend(_density_mrr(out))
        paths.append(_density_view(out, "density_nf_view"))
        paths.append(_density_view(out, "density_core_view"))
    return sorted(paths)
