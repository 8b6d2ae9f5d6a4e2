"""Experiment F (seed 003): memif vs a tap pod interface at MTU 1500 and 9000."""
from __future__ import annotations

import itertools
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from nfvlab import linerate, results
from nfvlab.analysis import (CLAIM_COLUMNS, HOST_ONLY, ORIGINAL_ARM, TWIN_ARM, claim_counts, claim_rows,
                             config_table, control_searches, first_goal, inputs, levels, measured_rates,
                             metric_values, select, status_kind, status_of)
from nfvlab.experiments.base import Experiment, PathLike
from nfvlab.plots.output import figure_style, new_figure, save_png
from nfvlab.plots.throughput import throughput_vs_frame_size

#: Frame sizes the table shows when the records have no search at all: the seed's.
DEFAULT_FRAME_SIZES = (64, 512, 1518, 9018)


#: The search goal its tables show (None: the one the params chose, read from the records).
GOAL = None


#: The seed's pod interfaces and the local models standing for them.
F_MEMIF, F_TAP = "ovs-dpdk-memif", "ovs-dpdk-tap"
#: "Far above": memif's rate at least this many times tap's, at the same MTU and frame size.
FAR_RATIO = 2.0
#: The A/A control's claim (params ``control``), as the claims table shows it.
CONTROL_CLAIM = "A/A control: no difference between a search and its twin (two lab instances, side by side)"
#: What the seed's DSA figures need, as the claims table says when a host lacks it.
DSA_CLAIM = "seed 003: Intel DSA offload of memif copies raises throughput further"


def _scaled(searches: pd.DataFrame, model: str, factor: float, level: str) -> pd.DataFrame:
    """``searches`` with ``model``'s rates times ``factor``, relabelled ``level`` (to test a ratio)."""
    out = measured_rates(searches)
    hit = out["model"] == model
    out.loc[hit, "throughput_pps"] = out.loc[hit, "throughput_pps"] * factor
    out.loc[hit, "model"] = level
    return out


def _as_gbps(searches: pd.DataFrame) -> pd.DataFrame:
    """:func:`nfvlab.analysis.measured_rates` with ``throughput_pps`` replaced by the L2 rate in Gbit/s
    (claims in bits, not packets; the relative resolution is the same)."""
    out = measured_rates(searches)
    return out.assign(throughput_pps=[linerate.pps_to_gbps(v, fs, 2)
                                      for v, fs in zip(out["throughput_pps"], out["frame_size"])])


def _dsa_devices(records: PathLike) -> Optional[int]:
    """Intel DSA devices the host of the records' latest completed run had (provenance), None if not recorded."""
    value = (results.run_provenance(records).get("lab") or {}).get("intel_dsa_devices")
    return None if value is None else int(value)


def tables_f(records: PathLike, models: Optional[list[str]] = None) -> dict[str, pd.DataFrame]:
    """Experiment F (seed 003): memif vs tap pod interface over frame sizes at MTU 1500 and 9000.

    The goal is the one the params chose (``mrr`` in the quick profile, ``ndr`` in the full one).

    Returns
    -------
    dict
        ``throughput``: :func:`config_table` over model x ``mtu_bytes`` x frame size (a frame
        above a cell's MTU + 18 B has status ``frame too large``), then ``gbps_l2`` (mean at L2,
        Gbit/s per direction, as the seed plots) and ``goal``. ``claims`` (:data:`CLAIM_COLUMNS`):
        "memif far above tap" per MTU and frame size, tested as memif > :data:`FAR_RATIO` x tap
        (tap's repetitions scaled, the pair ``ovs-dpdk-memif > ovs-dpdk-tap x2``); "MTU 9000
        better than 1500 for large frames" per model, defined as the L2 rate in Gbit/s at the
        largest frame each MTU carries (9018 B at 9000 against 1518 B at 1500; the level names
        say so); and the seed's DSA-offload figures, ``not testable`` unless the records' host
        had Intel DSA devices (provenance ``lab.intel_dsa_devices``).
    """
    s, notes, models = inputs(records, GOAL, models)
    goal = first_goal(s)
    mtus = levels(s["mtu_bytes"], notes["mtu_bytes"], default=(1500, 9000))
    sizes = levels(s["frame_size"], notes["frame_size"], default=DEFAULT_FRAME_SIZES)
    table = config_table(s, notes, {"model": models, "mtu_bytes": mtus, "frame_size": sizes}, goal)
    table["gbps_l2"] = [linerate.pps_to_gbps(v, fs, 2) if pd.notna(v) else np.nan
                        for v, fs in zip(table["mean_pps"], table["frame_size"])]
    table["goal"] = goal
    rows = []
    tap_far = f"{F_TAP} x{FAR_RATIO:g}"
    for mtu, fs in itertools.product(mtus, sizes):
        st = status_of(table, "model", mtu_bytes=mtu, frame_size=fs)
        if all(status_kind(st.get(m, "")) == "frame too large" for m in (F_MEMIF, F_TAP)):
            continue  # nothing was sent at this size: no claim to test
        st[tap_far] = st.get(F_TAP, "not in the experiment")
        rows += claim_rows(f"seed 003: memif far above tap at every size ({F_MEMIF} >= {FAR_RATIO:g} x {F_TAP})",
                           f"MTU {mtu}, {fs} B", [[F_MEMIF, tap_far]],
                           _scaled(select(s, mtu_bytes=mtu, frame_size=fs), F_TAP, FAR_RATIO, tap_far),
                           "model", st)
    if 1500 in mtus and 9000 in mtus:
        big = {9000: max((f for f in sizes if f != "IMIX" and f <= 9018), default=9018),
               1500: max((f for f in sizes if f != "IMIX" and f <= 1518), default=1518)}
        level = {m: f"MTU {m} at {big[m]} B" for m in big}
        for model in models:
            parts = [select(s, model=model, mtu_bytes=m, frame_size=big[m]).assign(cell=level[m]) for m in big]
            sub = _as_gbps(pd.concat(parts, ignore_index=True))
            st = {level[m]: status_of(table, "mtu_bytes", model=model, frame_size=big[m]).get(m, "not measured")
                  for m in big}
            rows += claim_rows("seed 003: MTU 9000 better than 1500 for large frames (L2 Gbit/s at the largest "
                               "frame each MTU carries)", model, [[level[9000], level[1500]]], sub, "cell", st)
    rows += control_rows(records, goal)
    dsa = _dsa_devices(records)
    if not dsa:
        why = ("this host has no Intel DSA (no /sys/bus/dsa devices when the run was recorded)" if dsa == 0
               else "the records do not say whether the host had Intel DSA")
        rows.append({"claim": DSA_CLAIM, "condition": "all sizes", "verdict": "not testable", "n": 0,
                     "detail": f"on this host: {why}"})
    else:
        rows.append({"claim": DSA_CLAIM, "condition": "all sizes", "verdict": "not testable", "n": 0,
                     "detail": f"{dsa} DSA device(s) present, but nfvlab has no DSA-offloaded memif model"})
    return {"throughput": table, "claims": pd.DataFrame(rows, columns=CLAIM_COLUMNS)}



def control_rows(records: PathLike, goal: str) -> list[dict]:
    """The A/A control's claims rows (params ``control``): per controlled cell, its search and its twin's
    (label ``arm: twin``, measured side by side on two lab instances) about equal, judged on the
    per-repetition log-ratios (paired) with the design's equivalence margin; a difference shown there
    is the design's, since none exists. Empty without a control."""
    c = control_searches(records, goal)
    rows = []
    for (model, mtu, fs), cell in c.groupby(["model", "mtu_bytes", "frame_size"], sort=False):
        status = {arm: ("measured" if cell.loc[cell["arm"] == arm, "throughput_pps"].notna().any() else
                        "search failed") for arm in (ORIGINAL_ARM, TWIN_ARM)}
        rows += claim_rows(CONTROL_CLAIM, f"{model}, MTU {mtu:g}, {fs} B", [(ORIGINAL_ARM, TWIN_ARM)],
                           measured_rates(cell), "arm", status, kind="equality", by_repetition=True)
    return rows


def figures_f(tabs: dict[str, pd.DataFrame], out: Path, dpi: int = 110) -> list[Path]:
    """``experiment_f_throughput.png``: L2 Gbit/s vs frame size, memif vs tap, one panel per MTU, 95 % CI."""
    t = tabs["throughput"]
    data = t[t["status"] == "measured"].copy()
    for c in ("ci_low", "ci_high"):
        data[f"{c}_gbps"] = [linerate.pps_to_gbps(v, fs, 2) if pd.notna(v) else np.nan
                             for v, fs in zip(data[f"{c}_pps"], data["frame_size"])]
    mtus = list(dict.fromkeys(t["mtu_bytes"])) or [None]
    goal = str(t["goal"].iloc[0]).upper() if len(t) else "NDR"
    with figure_style(dpi):
        fig = new_figure((5.2 * len(mtus), 4.4))
        axes = np.atleast_1d(fig.subplots(1, len(mtus), sharey=True))
        for ax, mtu in zip(axes, mtus):
            d = data[data["mtu_bytes"] == mtu]
            if d.empty:
                ax.text(0.5, 0.5, "no configuration measured", ha="center", va="center")
                continue
            throughput_vs_frame_size(d, y="gbps_l2", hue="model", ax=ax, x_scale="log2", ci_low="ci_low_gbps",
                                     ci_high="ci_high_gbps", title=f"MTU {mtu}",
                                     ylabel=f"{goal} [Gbit/s L2 per direction]")
        fig.suptitle(f"Experiment F (seed 003): memif vs tap pod interface, {goal} per direction,\n"
                     f"mean and 95 % t-interval; {HOST_ONLY}", fontsize=9)
        return [save_png(fig, out / "experiment_f_throughput.png")]



def metrics(tabs: dict[str, pd.DataFrame]) -> dict:
    """Mean rate (the params' goal) of every measured configuration (kpps), claim counts."""
    goal = str(tabs["throughput"]["goal"].iloc[0]) if len(tabs["throughput"]) else "ndr"
    return {**metric_values(tabs["throughput"], ["model", "mtu_bytes", "frame_size"], f"{goal}_kpps"),
            **claim_counts(tabs["claims"])}


EXPERIMENT = Experiment(
    letter="f",
    title="Experiment F: memif vs a tap pod interface, MTU 1500 and 9000 (seed 003)",
    text=(
        "A single-core forwarding pod (DPDK testpmd) behind OVS-DPDK (the local stand-in for Calico/VPP) "
        "with memif interfaces or kernel tap interfaces it reads through the kernel (the seed's tun), "
        "frame-size scaling at MTU 1500 and 9000 with jumbo frames end to end (`docs/experiment-f.md`). "
        "The rate is the params' goal (column *goal*): the quick profile's MRR offers a fixed rate "
        "(`search.max_rate_pps`), so memif's value there is a floor of its capacity; the full profile "
        "searches the NDR. Frames larger than a cell's MTU are not sent (\"frame too large\"). \"Far above\" "
        "means at least 2x; \"MTU 9000 better\" compares L2 Gbit/s at the largest frame each MTU carries. "
        "The seed's Intel DSA figures need hardware this host lacks."),
    notebook_title="Experiment F: memif vs a tap pod interface, MTU 1500 and 9000 (seed 003)",
    notebook_text=(
        "A single-core forwarding pod (DPDK testpmd) behind the user-space vSwitch (OVS-DPDK, the local "
        "stand-in for Calico/VPP) gets either memif interfaces or kernel tap interfaces it reads through "
        "the kernel (the seed's tun). Frame-size scaling at MTU 1500 and MTU 9000 (jumbo frames up to "
        "9018 B end to end; larger-than-MTU frames are skipped with a note). The seed's DSA-offload "
        "figures need hardware the claims table says this host lacks."),
    table_names=("throughput", "claims", "latency"),
    tables=tables_f,
    figures=figures_f,
    metrics=metrics,
    goal=GOAL,
)
