"""Experiment E (seed 002): records -> TCP and HTTP tables, the seed's claims, figures, metrics (deterministic).

:func:`tables` returns the tidy DataFrames (:data:`TABLE_NAMES`), :func:`figures` draws
``experiment_e_tcp_goodput.png`` and ``experiment_e_http_requests.png``, :func:`metrics_values`
gives the DVC metrics; :mod:`nfvlab.experiments.e` registers them and
:func:`nfvlab.experiments.write_experiment` writes what the DVC analysis stage publishes. Statistics over repetitions are those of experiments A-D (:mod:`nfvlab.stats`: n,
mean, 95 % Student-t interval of the mean, CV); the claims table has the columns of
:data:`nfvlab.analysis.CLAIM_COLUMNS` and the same verdicts.

Claims are judged as A-D's (:func:`nfvlab.analysis.claim_rows`, :mod:`nfvlab.claims`): Welch's t
on log rates (iperf3 and wrk give continuous values: resolution 0), Holm over a claim's tests;
"about equal" claims are TOST within the design's ``equivalence_margin`` (``params/claims.yaml``).
"""
from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Optional
from pathlib import Path

import numpy as np
import pandas as pd

from nfvlab import claimsets, results, stats
from nfvlab.analysis import CLAIM_COLUMNS, ORIGINAL_ARM, THROUGHPUT_INTERVAL, claim_counts, claim_rows, plan_of
from nfvlab.claims import Plan, current_design
from nfvlab.plots.output import figure_style, new_figure, save_png
from nfvlab.scenario.cni import TWIN

PathLike = str | Path

__all__ = ["TABLE_NAMES", "claims", "figures", "metrics_values", "tables"]

#: Tables of experiment E, in report order: ``experiment_e_<name>.csv``.
TABLE_NAMES = ("tcp", "http", "not_realizable", "claims")
#: Level orders (claims read them; tables sort by them).
PATH_ORDER = ("direct", "sriov-analogue", "ipip", "vxlan")
TCP_ORDER = ("node-pod", "pod-pod")
HTTP_ORDER = ("pod-pod", "host-pod", "host-service")
#: Columns of the tcp and http tables after their configuration columns.
TCP_STATS = ["status", "pod_mtu_bytes", "n", "mean_gbps", "ci_low_gbps", "ci_high_gbps", "cv", "retransmits_mean"]
HTTP_STATS = ["status", "n", "mean_rps", "ci_low_rps", "ci_high_rps", "cv", "transfer_gbps", "latency_p99_us_mean",
              "errors"]
NOT_REALIZABLE_COLUMNS = ["data_path", "link_mtu_bytes", "protocol", "direction", "file_bytes", "repetition", "kind",
                          "reason"]
_HOST_ONLY = "measured on this host only (veth links, 2 CPUs), not the seed's Arm testbed"


def _ordered(values, order: Sequence = ()) -> list:
    seen = {v for v in values if v is not None and not (isinstance(v, float) and np.isnan(v))}
    first = [v for v in order if v in seen]
    return first + sorted(seen - set(first), key=stats.level_sort_key)


def _int(v):
    return None if v is None or (isinstance(v, float) and np.isnan(v)) else int(v)


# ---------------------------------------------------------------------------
# tables
# ---------------------------------------------------------------------------
def _inputs(records: PathLike) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Measurements with ``goodput_gbps`` / ``transfer_gbps`` added, and the notes of the latest run."""
    m = results.measurements_frame(records)
    for col in ("goodput_bps", "requests_per_s", "transfer_bytes_per_s", "retransmits", "errors", "latency_p99_us",
                "file_bytes", "protocol", "direction", "data_path", "link_mtu_bytes", "pod_mtu_bytes"):
        if col not in m.columns:
            m[col] = np.nan
    m["goodput_gbps"] = pd.to_numeric(m["goodput_bps"], errors="coerce") / 1e9
    m["transfer_gbps"] = pd.to_numeric(m["transfer_bytes_per_s"], errors="coerce") * 8 / 1e9
    notes = results.notes_frame(records)
    for col in NOT_REALIZABLE_COLUMNS:
        if col not in notes.columns:
            notes[col] = None
    return m, notes


def _status(notes: pd.DataFrame, config: dict) -> str:
    """``not realizable: <why>`` (a note for its path and MTU), ``measurement failed: <why>`` or ``not measured``."""
    for kind, prefix in (("not-realizable", "not realizable"), ("measurement-failed", "measurement failed")):
        for _, n in notes[notes["kind"] == kind].iterrows():
            if all(_int(n[c]) == _int(v) if c in ("link_mtu_bytes", "file_bytes") else n[c] == v
                   for c, v in config.items() if kind == "measurement-failed" or c in ("data_path", "link_mtu_bytes")):
                return f"{prefix}: {n['reason']}"
    return "not measured"


def _stat_table(m: pd.DataFrame, notes: pd.DataFrame, grid: dict, value: str, unit: str,
                extra: dict) -> pd.DataFrame:
    """One row per combination of ``grid``: status, n, mean/CI/CV of ``value`` (columns ``*_<unit>``), extras."""
    by = list(grid)
    summ = stats.summarize(m, by, value) if len(m) else pd.DataFrame(columns=[*by, "n"])
    found = {tuple(_int(r[c]) if c in ("link_mtu_bytes", "file_bytes") else r[c] for c in by): r
             for _, r in summ.iterrows()}
    means = {k if isinstance(k, tuple) else (k,): g for k, g in m.groupby(by, dropna=False)} if len(m) else {}
    rows = []
    for combo in itertools.product(*grid.values()):
        config = dict(zip(by, combo))
        h = found.get(combo)
        if h is None or not h["n"] > 0:
            rows.append({**config, "status": _status(notes, config), "n": 0})
            continue
        g = means[combo]
        rows.append({**config, "status": "measured", "n": int(h["n"]), f"mean_{unit}": h["mean"],
                     f"ci_low_{unit}": h["ci_low"], f"ci_high_{unit}": h["ci_high"], "cv": h["cv"],
                     **{name: fn(g) for name, fn in extra.items()}})
    return pd.DataFrame(rows)


def tcp_table(m: pd.DataFrame, notes: pd.DataFrame) -> pd.DataFrame:
    """TCP goodput (iperf3, all streams) per data path x link MTU x direction.

    Returns
    -------
    pandas.DataFrame
        ``data_path``, ``link_mtu_bytes``, ``direction`` (``node-pod``, ``pod-pod``), ``status``
        (``measured``, ``not realizable: <why>``, ``measurement failed: <why>``, ``not measured``),
        ``pod_mtu_bytes``, ``n`` (repetitions), ``mean_gbps`` (payload Gbit/s the receiver got, mean
        over repetitions), ``ci_low_gbps`` / ``ci_high_gbps`` (:data:`nfvlab.analysis.THROUGHPUT_INTERVAL`;
        NaN for n < 2), ``cv`` (sd / mean), ``retransmits_mean`` (TCP retransmissions per run).
    """
    t = m[m["protocol"] == "tcp"]
    paths = _ordered([*t["data_path"], *notes["data_path"]], PATH_ORDER)
    grid = {"data_path": paths,
            "link_mtu_bytes": _ordered([_int(v) for v in [*t["link_mtu_bytes"], *notes["link_mtu_bytes"]]]),
            "direction": _ordered(t["direction"], TCP_ORDER) or list(TCP_ORDER)}
    table = _stat_table(t, notes, grid, "goodput_gbps", "gbps",
                        {"pod_mtu_bytes": lambda g: _int(g["pod_mtu_bytes"].iloc[0]),
                         "retransmits_mean": lambda g: float(pd.to_numeric(g["retransmits"]).mean())})
    return table.reindex(columns=[*grid, *TCP_STATS])


def http_table(m: pd.DataFrame, notes: pd.DataFrame) -> pd.DataFrame:
    """HTTP (wrk against nginx in node2's pod) per data path x link MTU x direction x file size.

    Returns
    -------
    pandas.DataFrame
        ``data_path``, ``link_mtu_bytes``, ``direction`` (``pod-pod``, ``host-pod``, ``host-service``),
        ``file_bytes``, ``status`` (as :func:`tcp_table`), ``n``, ``mean_rps`` (requests/s, mean over
        repetitions), ``ci_low_rps`` / ``ci_high_rps`` (95 % t-interval), ``cv``, ``transfer_gbps``
        (response bytes read, Gbit/s, mean), ``latency_p99_us_mean`` (wrk's p99 request latency, µs,
        mean) and ``errors`` (wrk's socket errors and non-2xx/3xx responses, summed).
    """
    h = m[m["protocol"] == "http"]
    grid = {"data_path": _ordered([*h["data_path"], *notes["data_path"]], PATH_ORDER),
            "link_mtu_bytes": _ordered([_int(v) for v in [*h["link_mtu_bytes"], *notes["link_mtu_bytes"]]]),
            "direction": _ordered(h["direction"], HTTP_ORDER) or list(HTTP_ORDER),
            "file_bytes": _ordered([_int(v) for v in h["file_bytes"]])}
    table = _stat_table(h, notes, grid, "requests_per_s", "rps",
                        {"transfer_gbps": lambda g: float(g["transfer_gbps"].mean()),
                         "latency_p99_us_mean": lambda g: float(pd.to_numeric(g["latency_p99_us"]).mean()),
                         "errors": lambda g: int(pd.to_numeric(g["errors"]).sum())})
    return table.reindex(columns=[*grid, *HTTP_STATS])


def not_realizable_table(notes: pd.DataFrame) -> pd.DataFrame:
    """What could not be measured and why: :data:`NOT_REALIZABLE_COLUMNS` (``kind``: ``not-realizable`` or
    ``measurement-failed``; the tool-run columns are empty for a whole path)."""
    out = notes[notes["kind"].isin(["not-realizable", "measurement-failed"])]
    return out.reindex(columns=NOT_REALIZABLE_COLUMNS).reset_index(drop=True)


# ---------------------------------------------------------------------------
# claims
# ---------------------------------------------------------------------------
def _status_map(table: pd.DataFrame, by: str, **conditions) -> dict:
    sub = table
    for c, v in conditions.items():
        sub = sub[sub[c] == v]
    return dict(zip(sub[by], sub["status"]))


def _sel(df: pd.DataFrame, **conditions) -> pd.DataFrame:
    for c, v in conditions.items():
        df = df[[(_int(x) == v) if c in ("link_mtu_bytes", "file_bytes") else x == v for x in df[c]]]
    return df


def _twin(df: pd.DataFrame) -> np.ndarray:
    """Which rows are an A/A control's twin runs (label ``arm: twin``): the control's claims rows read
    them, no table nor other claim does."""
    return (df["arm"] == TWIN).to_numpy(bool) if "arm" in df.columns else np.zeros(len(df), dtype=bool)


def control_rows(m: pd.DataFrame, tcp: pd.DataFrame, http: pd.DataFrame, plan: Optional[Plan] = None) -> list[dict]:
    """The claims rows of the A/A control (:func:`nfvlab.claimsets.cni_control_claims`), one per lab whose
    records hold twin runs: the tool run against its twin, paired by repetition, TOST within the
    design's ``equivalence_margin`` as E's other "about equal" claims. "contradicted" (a ratio shown
    beyond the margin) is the design finding a difference where none exists."""
    twins = m[_twin(m)]
    if twins.empty:
        return []
    first = twins.iloc[0]
    step = (first["protocol"], first["direction"], _int(first["file_bytes"]) if first["protocol"] == "http" else None)
    labs = list(dict.fromkeys(zip(twins["data_path"], (_int(v) for v in twins["link_mtu_bytes"]))))
    margin = current_design().equivalence_margin
    rows: list[dict] = []
    for spec in claimsets.cni_control_claims(labs, step):
        where = {k: v for k, v in spec.where.items() if k != "protocol"}
        data = _sel(m[m["protocol"] == spec.where["protocol"]], **where)
        data = data.assign(arm=np.where(_twin(data), TWIN, ORIGINAL_ARM))  # the original's level named, not None
        original = _status_map(tcp if spec.where["protocol"] == "tcp" else http, "direction", **where)
        status = {ORIGINAL_ARM: original.get(spec.where["direction"], "not measured"),
                  TWIN: "measured" if _twin(data).any() else "not measured"}
        chains = [tuple(ORIGINAL_ARM if level is None else level for level in c) for c in spec.chains]
        rows += claim_rows(spec.claim, f"{spec.condition}; margin +-{margin:.0%}", chains, data, spec.by,
                           status, kind="equality", value=spec.value, plan=plan, by_repetition=True)
    return rows


def claims(m: pd.DataFrame, tcp: pd.DataFrame, http: pd.DataFrame, plan: Optional[Plan] = None) -> pd.DataFrame:
    """The seed's claims (slides "Observation for TCP performance" and the HTTP ones), :data:`CLAIM_COLUMNS`.

    Which claims, in which order: :func:`nfvlab.claimsets.cni_claims` (the adaptive runner reads the
    same definitions), over the levels of the tcp and http tables:

    1. Direct routing beats overlays: TCP goodput direct > vxlan and direct > ipip, per direction and MTU.
    2. Larger MTU helps overlays: goodput increases with the link MTU (adjacent MTUs), per overlay and direction.
    3. MTU barely matters for direct routing: every MTU within the design's ``equivalence_margin`` (``params/claims.yaml``) of the
       smallest one (TOST), per direction.
    4. IPIP slightly beats VXLAN: ipip > vxlan per direction and MTU (not testable where the kernel
       has no ipip: the reason is in the row).
    5. Node to pod beats pod to pod: TCP node-pod > pod-pod per path and MTU.
    6. Host to pod ~ host to service for small files (requests/s at the smallest file size, TOST),
       and host to pod > host to service for large files at large MTU (largest file, largest MTU).

    Claims 5 and 6 compare two directions of one lab, measured side by side in each repetition in
    counterbalanced order: they are judged on the per-repetition log-ratios (paired t). Then the A/A
    control's rows (:func:`control_rows`); the control's twin runs enter no other claim.

    ``plan``: the planned looks of an adaptive run (:func:`plan_of`); None: a fixed-n run.
    """
    control = control_rows(m, tcp, http, plan)
    m = m[~_twin(m)]
    sizes = sorted(x for x in dict.fromkeys(http["file_bytes"]) if x is not None and not pd.isna(x))
    specs = claimsets.cni_claims(tcp_paths=dict.fromkeys(tcp["data_path"]),
                                 tcp_directions=dict.fromkeys(tcp["direction"]),
                                 tcp_mtus=list(dict.fromkeys(tcp["link_mtu_bytes"])),
                                 http_paths=dict.fromkeys(http["data_path"]),
                                 http_mtus=sorted(x for x in dict.fromkeys(http["link_mtu_bytes"])), file_sizes=sizes)
    rows: list[dict] = []
    for spec in specs:
        where = {k: v for k, v in spec.where.items() if k != "protocol"}
        table = tcp if spec.where["protocol"] == "tcp" else http
        st_ = _status_map(table, spec.by, **where)
        if spec.if_measured and not any(v == "measured" for v in st_.values()):
            continue  # the configuration's own status is in the other claims' rows
        data = _sel(m[m["protocol"] == spec.where["protocol"]], **where)
        if spec.kind == "order":
            rows += claim_rows(spec.claim, spec.condition, spec.chains, data, spec.by, st_, kind="order",
                               value=spec.value, plan=plan, by_repetition=spec.paired)
        else:  # about equal within the design's equivalence_margin (TOST); the margin is added to the condition
            margin = current_design().equivalence_margin
            rows += claim_rows(spec.claim, f"{spec.condition}; margin +-{margin:.0%}", spec.chains, data, spec.by,
                               st_, kind="equality", value=spec.value, plan=plan, by_repetition=spec.paired)
    return pd.DataFrame(rows + control, columns=CLAIM_COLUMNS)


def tables(records: PathLike) -> dict[str, pd.DataFrame]:
    """The tables of experiment E from the records' latest completed run, named as in :data:`TABLE_NAMES`.

    ``tcp`` (:func:`tcp_table`), ``http`` (:func:`http_table`), ``not_realizable``
    (:func:`not_realizable_table`), ``claims`` (:func:`claims`).
    """
    m, notes = _inputs(records)
    main = m[~_twin(m)]  # the A/A control's twins are in its claims rows only
    tcp, http = tcp_table(main, notes[~_twin(notes)]), http_table(main, notes[~_twin(notes)])
    return {"tcp": tcp, "http": http, "not_realizable": not_realizable_table(notes),
            "claims": claims(m, tcp, http, plan_of(records))}


# ---------------------------------------------------------------------------
# figures, metrics, the writer
# ---------------------------------------------------------------------------
def _errorbar(ax, x, data: pd.DataFrame, unit: str, **kw) -> None:
    y = data[f"mean_{unit}"].to_numpy(float)
    lo = np.clip(y - data[f"ci_low_{unit}"].to_numpy(float), 0, None)
    hi = np.clip(data[f"ci_high_{unit}"].to_numpy(float) - y, 0, None)
    ax.errorbar(x, y, yerr=[np.nan_to_num(lo), np.nan_to_num(hi)], marker="o", capsize=3, **kw)


def _missing_text(table: pd.DataFrame) -> str:
    gone = table[table["status"] != "measured"]
    kinds = {}
    for p, s in zip(gone["data_path"], gone["status"]):
        kinds.setdefault(s.split(":")[0], set()).add(p)
    return "\n".join(f"{k}: {', '.join(sorted(v))}" for k, v in sorted(kinds.items()))


def figures(tabs: dict[str, pd.DataFrame], out: PathLike, dpi: int = 110) -> list[Path]:
    """``experiment_e_tcp_goodput.png`` (goodput vs link MTU per data path, a panel per direction) and
    ``experiment_e_http_requests.png`` (requests/s vs file size per direction, a panel per data path; solid:
    the largest link MTU, dashed: the smallest), means with 95 % t-interval bars."""
    out = Path(out)
    paths = []
    tcp = tabs["tcp"]
    dirs = list(dict.fromkeys(tcp["direction"])) or ["node-pod"]
    with figure_style(dpi):
        fig = new_figure((4.0 * len(dirs) + 1.5, 4.2))
        axes = np.atleast_1d(fig.subplots(1, len(dirs), sharey=True))
        for ax, d in zip(axes, dirs):
            for p, g in tcp[(tcp["direction"] == d) & (tcp["status"] == "measured")].groupby("data_path", sort=False):
                _errorbar(ax, g["link_mtu_bytes"].to_numpy(float), g, "gbps", label=p)
            ax.set_title(f"TCP {d} (iperf3)")
            ax.set_xlabel("link MTU [B]")
            ax.set_ylim(bottom=0)
        axes[0].set_ylabel("goodput [Gbit/s]")
        handles, labels = axes[0].get_legend_handles_labels()
        if handles:
            fig.legend(handles, labels, loc="outside right upper", title="data path")
        note = _missing_text(tcp)
        fig.suptitle(f"Experiment E: TCP goodput vs link MTU, mean and {THROUGHPUT_INTERVAL}\n{_HOST_ONLY}"
                     + (f"\n{note}" if note else ""), fontsize=9)
        paths.append(save_png(fig, out / "experiment_e_tcp_goodput.png"))
    http = tabs["http"]
    pths = [p for p in dict.fromkeys(http["data_path"]) if (http[http["data_path"] == p]["status"] == "measured").any()]
    pths = pths or ["direct"]
    mtus = sorted(dict.fromkeys(http.loc[http["status"] == "measured", "link_mtu_bytes"]))
    with figure_style(dpi):
        fig = new_figure((4.0 * len(pths) + 1.5, 4.2))
        axes = np.atleast_1d(fig.subplots(1, len(pths), sharey=True))
        for ax, p in zip(axes, pths):
            for i, d in enumerate(dict.fromkeys(http["direction"])):
                for mtu, style in ((mtus[-1], "-"), (mtus[0], "--")) if mtus else ():
                    g = http[(http["data_path"] == p) & (http["direction"] == d) & (http["link_mtu_bytes"] == mtu)
                             & (http["status"] == "measured")]
                    if len(g):
                        _errorbar(ax, g["file_bytes"].to_numpy(float), g, "rps", linestyle=style, color=f"C{i}",
                                  label=f"{d}, MTU {mtu}")
                    if len(mtus) == 1:
                        break
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(f"HTTP, {p} (wrk -> nginx)")
            ax.set_xlabel("file size [B]")
        axes[0].set_ylabel("requests/s")
        handles, labels = axes[0].get_legend_handles_labels()
        if handles:
            fig.legend(handles, labels, loc="outside right upper", title="direction, link MTU")
        fig.suptitle(f"Experiment E: HTTP requests/s vs file size, mean and 95 % t-interval\n{_HOST_ONLY}",
                     fontsize=9)
        paths.append(save_png(fig, out / "experiment_e_http_requests.png"))
    return paths


def metrics_values(tabs: dict[str, pd.DataFrame]) -> dict:
    """DVC metrics: mean goodput (Gbit/s) and requests/s of every measured configuration, claim counts."""
    out = {}
    for r in tabs["tcp"].itertuples():
        if r.status == "measured":
            out[f"tcp/{r.data_path}/{r.link_mtu_bytes}/{r.direction}/goodput_gbps"] = round(float(r.mean_gbps), 4)
    for r in tabs["http"].itertuples():
        if r.status == "measured":
            out[f"http/{r.data_path}/{r.link_mtu_bytes}/{r.direction}/{r.file_bytes}/requests_per_s"] = round(
                float(r.mean_rps), 1)
    out.update(claim_counts(tabs["claims"]))
    return out
