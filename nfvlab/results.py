"""Raw records -> tidy tables of search results and of what could not be measured.

The analysis, the notebooks and the figures read results only through these
functions, so "which run counts" is decided in one place: by default the latest
*completed* run of each records file (earlier runs stay in the file, untouched).
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Union

import pandas as pd

from nfvlab import linerate
from nfvlab.records import read_records

PathLike = Union[str, Path]

#: Labels that identify a configuration besides the model (resources, density cell);
#: missing ones are None (experiment A's records have only the model).
CONFIG_LABELS = ["pinning", "numa", "noisy_load_pct", "topology", "instances", "nfs", "mtu_bytes"]


def selected_runs(paths: Union[PathLike, Iterable[PathLike]], run: str = "latest") -> list[tuple[Path, list[dict]]]:
    """The runs that count, as ``(file, records of the run)``: the one place that decides it.

    ``run``: ``latest`` (each file's latest *completed* run), ``all`` (every completed run,
    in order) or a run id (that run, completed or not). Failed, interrupted and incomplete
    runs never count unless named.
    """
    paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
    out = []
    for p in paths:
        recs = read_records(p)
        by_run: dict[str, list[dict]] = {}
        for r in recs:
            by_run.setdefault(r["run_id"], []).append(r)
        done = [rid for rid, rs in by_run.items() if any(x["type"] == "end" and x["status"] == "completed"
                                                         for x in rs)]
        if run == "latest":
            chosen = done[-1:]
        elif run == "all":
            chosen = done
        else:
            chosen = [run] if run in by_run else []
        for rid in chosen:
            out.append((Path(p), by_run[rid]))
    return out


def run_provenance(paths: Union[PathLike, Iterable[PathLike]], run: str = "latest") -> dict:
    """Provenance of the last of the :func:`selected_runs` (``{}`` when no run counts)."""
    prov = [r.get("provenance") or {} for _p, recs in selected_runs(paths, run) for r in recs if r["type"] == "run"]
    return prov[-1] if prov else {}


#: RFC 9971 fields of a search record that :func:`searches_frame` keeps as columns (besides ``flags``).
SEARCH_RFC9971 = ("conditional_throughput_pps", "regular", "min_rate_pps", "max_rate_pps", "directions",
                  "goal_exceed_ratio", "goal_final_trial_duration_s", "goal_duration_sum_s", "goal_relative_width",
                  "goal_initial_trial_duration_s")


def searches_frame(paths: Union[PathLike, Iterable[PathLike]], run: str = "latest") -> pd.DataFrame:
    """One row per search result.

    Parameters
    ----------
    paths : path or list of paths
        Records files (JSON Lines).
    run : {"latest", "all"} or a run id
        Which completed runs of each file to use.

    Returns
    -------
    pandas.DataFrame
        ``experiment``, ``run_id``, ``model``, the :data:`CONFIG_LABELS` (``pinning``,
        ``numa``, ``noisy_load_pct``, ``topology``, ``instances``, ``nfs``, ``mtu_bytes``),
        ``frame_size`` (int or "IMIX"), ``repetition``, ``arm`` (``twin``: an A/A control's second search of its
        cell in the repetition, ``ExperimentParams.control``; else None), ``goal`` (ndr/pdr/mrr), ``method``,
        ``loss_ratio``,
        ``throughput_pps`` (per direction), ``lower_bound_pps``, ``upper_bound_pps``,
        ``throughput_gbps_l1`` / ``throughput_gbps_l2`` (per direction, at the frame
        size), ``n_trials``, ``trial_seconds``, ``invalid_trials`` (trials the generator ruled
        invalid and the search repeated; 0 in older records), ``not_offered_pps`` (the lowest rate per
        direction the generator could not offer, an upper bound it set; None when none or in older
        records), ``generator_limited`` (True/False/None);
        the RFC 9971 fields of :class:`nfvlab.search.SearchResult`: ``conditional_throughput_pps``
        (per direction), ``regular`` (True/False; None for MRR and older records),
        ``flags`` (``;``-joined, e.g. ``max-load-is-lower-bound``; empty when none),
        ``min_rate_pps`` / ``max_rate_pps`` (per direction), ``directions`` and the
        goal attributes ``goal_exceed_ratio``, ``goal_final_trial_duration_s``,
        ``goal_duration_sum_s``, ``goal_relative_width``, ``goal_initial_trial_duration_s``
        (None in records written before they existed).
    """
    rows = []
    for _path, recs in selected_runs(paths, run):
        exp = next((r["experiment"] for r in recs if r["type"] == "run"), None)
        for r in recs:
            if r["type"] != "search":
                continue
            res, lab = r["result"], r["labels"]
            fs = lab.get("frame_size")
            tp = res.get("throughput_pps")
            rows.append({
                "experiment": exp, "run_id": r["run_id"], "model": lab.get("model"),
                **{k: lab.get(k) for k in CONFIG_LABELS}, "frame_size": fs,
                "repetition": lab.get("repetition"), "arm": lab.get("arm"), "goal": res.get("goal"),
                "method": res.get("method"),
                "loss_ratio": res.get("loss_ratio"), "throughput_pps": tp,
                "lower_bound_pps": res.get("lower_bound_pps"), "upper_bound_pps": res.get("upper_bound_pps"),
                "throughput_gbps_l1": linerate.pps_to_gbps(tp, fs, 1) if tp is not None else None,
                "throughput_gbps_l2": linerate.pps_to_gbps(tp, fs, 2) if tp is not None else None,
                "n_trials": res.get("n_trials"), "trial_seconds": res.get("trial_seconds"),
                "invalid_trials": int(res.get("invalid_trials") or 0),
                "not_offered_pps": res.get("not_offered_pps"),
                "generator_limited": res.get("generator_limited"),
                **{k: res.get(k) for k in SEARCH_RFC9971}, "flags": ";".join(res.get("flags") or ()),
            })
    cols = ["experiment", "run_id", "model", *CONFIG_LABELS, "frame_size", "repetition", "arm", "goal", "method",
            "loss_ratio",
            "throughput_pps", "lower_bound_pps", "upper_bound_pps", "throughput_gbps_l1",
            "throughput_gbps_l2", "n_trials", "trial_seconds", "invalid_trials", "not_offered_pps", "generator_limited",
            *SEARCH_RFC9971,
            "flags"]
    return pd.DataFrame(rows, columns=cols)


#: Latency columns of :func:`latency_frame` (one-way, nanoseconds).
LATENCY_NS = ("min_ns", "avg_ns", "p50_ns", "p90_ns", "p95_ns", "p99_ns", "p999_ns", "max_ns")


def latency_frame(paths: Union[PathLike, Iterable[PathLike]], run: str = "latest") -> pd.DataFrame:
    """One row per direction of each valid latency trial (at a fraction of the rate a search found).

    Returns
    -------
    pandas.DataFrame
        ``model``, the :data:`CONFIG_LABELS`, ``frame_size``, ``repetition``, ``goal``,
        ``load_fraction`` (of the goal's rate, 0..1; 0 = probes only; 1.0 for records
        written before latency under load, which measured at the rate found),
        ``rate_pps``, ``direction`` (``tx -> rx``), ``loss_ratio`` of that trial,
        ``probes_received``, ``min_ns`` / ``avg_ns`` / ``p50_ns`` / ``p90_ns`` / ``p95_ns`` /
        ``p99_ns`` / ``p999_ns`` / ``max_ns`` (one-way latency, nanoseconds; NaN where
        a record lacks one) and ``hdr_histogram`` (base64 HDR histogram,
        :func:`nfvlab.traffic.stats.decode_histogram`; None in older records).
    """
    rows = []
    for _path, recs in selected_runs(paths, run):
        for r in recs:
            if r["type"] != "trial" or r["labels"].get("purpose") != "latency":
                continue
            if not r["result"].get("valid", True):  # the generator was off schedule: no measurement
                continue
            t, lab = r["result"], r["labels"]
            for d in t["directions"]:
                lat = d["latency"]
                rows.append({"model": lab.get("model"), **{k: lab.get(k) for k in CONFIG_LABELS},
                             "frame_size": t["frame_size"],
                             "repetition": lab.get("repetition"), "goal": lab.get("goal"),
                             "load_fraction": float(lab.get("load_fraction", 1.0)),
                             "rate_pps": t["rate_pps"], "direction": f"{d['tx_port']} -> {d['rx_port']}",
                             "loss_ratio": t["loss_ratio"], "probes_received": lat["probes_received"],
                             **{k: lat.get(k) for k in LATENCY_NS}, "hdr_histogram": lat.get("hdr_histogram")})
    df = pd.DataFrame(rows, columns=["model", *CONFIG_LABELS, "frame_size", "repetition", "goal",
                                     "load_fraction", "rate_pps", "direction", "loss_ratio", "probes_received",
                                     *LATENCY_NS, "hdr_histogram"])
    for col in LATENCY_NS:
        df[col] = pd.to_numeric(df[col], errors="coerce").astype("float64")
    return df


def invalid_trials_frame(paths: Union[PathLike, Iterable[PathLike]], run: str = "latest") -> pd.DataFrame:
    """One row per invalid trial: the generator did not offer the load on schedule (not a measurement).

    Returns
    -------
    pandas.DataFrame
        ``model``, the :data:`CONFIG_LABELS`, ``frame_size``, ``repetition``, ``purpose``
        (``search`` / ``latency`` / ...), ``rate_pps`` (per direction), ``stall_s`` (the
        generator's total stall, seconds; NaN if not reported) and ``reason`` (one line).
        Empty when every trial was valid.
    """
    rows = []
    for _path, recs in selected_runs(paths, run):
        for r in recs:
            if r["type"] != "trial" or r["result"].get("valid", True):
                continue
            t, lab = r["result"], r["labels"]
            stall = (t.get("extra") or {}).get("schedule", {}).get("stall_s")
            rows.append({"model": lab.get("model"), **{k: lab.get(k) for k in CONFIG_LABELS},
                         "frame_size": t["frame_size"], "repetition": lab.get("repetition"),
                         "purpose": lab.get("purpose"), "rate_pps": t["rate_pps"],
                         "stall_s": stall, "reason": t.get("invalid_reason")})
    df = pd.DataFrame(rows, columns=["model", *CONFIG_LABELS, "frame_size", "repetition", "purpose", "rate_pps",
                                     "stall_s", "reason"])
    df["stall_s"] = pd.to_numeric(df["stall_s"], errors="coerce").astype("float64")
    return df


def not_realizable_frame(paths: Union[PathLike, Iterable[PathLike]], run: str = "latest") -> pd.DataFrame:
    """What could not be measured here and why.

    Returns
    -------
    pandas.DataFrame
        ``model``, the :data:`CONFIG_LABELS`, ``frame_size`` (set for a failed
        search), ``kind`` (``not-realizable`` / ``search-failed`` / ``frame-too-large``: a frame
        size above the configuration's ``mtu_bytes``, not sent), ``reason``.
    """
    rows = []
    for _path, recs in selected_runs(paths, run):
        for r in recs:
            if r["type"] == "note" and r["labels"].get("kind") in ("not-realizable", "search-failed",
                                                                    "frame-too-large"):
                lab = r["labels"]
                rows.append({"model": lab.get("model"), **{k: lab.get(k) for k in CONFIG_LABELS},
                             "frame_size": lab.get("frame_size"), "kind": lab["kind"],
                             "reason": r["text"].split(": ", 1)[-1]})
    cols = ["model", *CONFIG_LABELS, "frame_size", "kind", "reason"]
    return pd.DataFrame(rows, columns=cols).drop_duplicates()


def measurements_frame(paths: Union[PathLike, Iterable[PathLike]], run: str = "latest") -> pd.DataFrame:
    """One row per ``measurement`` record (a benchmark tool's run, experiment E).

    ``paths`` and ``run`` as for :func:`searches_frame` (default: each file's latest completed run).

    Returns
    -------
    pandas.DataFrame
        ``experiment``, ``run_id``, ``tool`` (``iperf3`` / ``wrk``), then one column per label
        key (experiment E: ``data_path``, ``link_mtu_bytes``, ``pod_mtu_bytes``, ``protocol``,
        ``direction``, ``file_bytes``, ``repetition``, ``segmentation_offload``; missing -> NaN),
        then one column per result field (iperf3: ``goodput_bps``, ``sent_bps``, ``received_bytes``,
        ``duration_s``, ``retransmits``, ``parallel_streams``; wrk: ``requests_per_s``,
        ``transfer_bytes_per_s``, ``requests``, ``transfer_bytes``, ``duration_s``, ``errors``,
        ``latency_mean_us``, ``latency_p50_us``, ``latency_p90_us``, ``latency_p99_us``,
        ``latency_max_us``), in order of first appearance.
    """
    rows, labels, fields = [], {}, {}
    for _path, recs in selected_runs(paths, run):
        exp = next((r["experiment"] for r in recs if r["type"] == "run"), None)
        for r in recs:
            if r["type"] != "measurement":
                continue
            labels.update(dict.fromkeys(r["labels"]))
            fields.update(dict.fromkeys(r["result"]))
            rows.append({"experiment": exp, "run_id": r["run_id"], "tool": r.get("tool"), **r["labels"],
                         **r["result"]})
    return pd.DataFrame(rows, columns=["experiment", "run_id", "tool", *labels,
                                       *(f for f in fields if f not in labels)])


def notes_frame(paths: Union[PathLike, Iterable[PathLike]], run: str = "latest") -> pd.DataFrame:
    """One row per ``note`` record whose labels carry a ``kind`` (e.g. ``not-realizable``).

    Returns
    -------
    pandas.DataFrame
        ``kind``, one column per other label key (missing -> NaN), ``reason`` (the text after
        its first ``": "``), duplicates dropped.
    """
    rows, labels = [], {}
    for _path, recs in selected_runs(paths, run):
        for r in recs:
            if r["type"] == "note" and r["labels"].get("kind"):
                labels.update(dict.fromkeys(k for k in r["labels"] if k != "kind"))
                rows.append({**r["labels"], "reason": r["text"].split(": ", 1)[-1]})
    return pd.DataFrame(rows, columns=["kind", *labels, "reason"]).drop_duplicates(ignore_index=True)
