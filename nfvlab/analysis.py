"""Raw records -> the experiments' tables, claims and figures (deterministic).

:func:`tables` returns the tidy DataFrames of experiments ``a``..``d`` and ``f``;
:func:`write_experiment` writes what the DVC analysis stages publish
(``data/tables/experiment_<x>_<name>.csv`` for every name of
:data:`TABLE_NAMES`, ``figures/experiments/experiment_<x>_*.png``,
``metrics/experiment_<x>.json``). Configurations this host cannot realize
appear as rows whose ``status`` says why, with no value; a claim needing one is
"not testable on this host", never guessed. Local values describe this host
only; published values (the draft's 40 GbE testbed, the density note's
testbeds) stand beside them for comparison of *shape*, not of magnitude.
"""
from __future__ import annotations

import itertools
import json
import os
from pathlib import Path
from typing import Callable, Iterable, Optional, Sequence, Union

import numpy as np
import pandas as pd

from nfvlab import latency, linerate, reference, results, stats
from nfvlab.scenario import catalogue, density
from nfvlab.plots.bars import grouped_bars
from nfvlab.plots.heatmap import matrix_heatmap
from nfvlab.plots.latency import spectrum_figure
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


# ---------------------------------------------------------------------------
# experiments B, C, D: configuration tables with the published values beside
# ---------------------------------------------------------------------------
#: Tables of each experiment, in report order: ``experiment_<x>_<name>.csv``.
TABLE_NAMES = {
    "a": ("throughput", "claims", "published", "latency"),
    "b": ("pinning_numa", "claims", "latency"),
    "c": ("combination", "numa", "claims", "latency"),
    "d": ("mrr", "latency"),
    "f": ("throughput", "claims", "latency"),
}
#: Search goal each experiment measures.
GOALS = {"a": "ndr", "b": "ndr", "c": "ndr", "d": "mrr", "f": None}
#: Frame sizes a table shows when the records have no search at all (every
#: configuration not realizable): the experiment's published sizes.
DEFAULT_FRAME_SIZES = {"b": (1518,), "c": (64, 128, 256, 512, 1024, 1280, 1518), "d": (64, "IMIX"),
                       "f": (64, 512, 1518, 9018)}
#: The draft's Figure 16 models and the local model standing in for each.
DRAFT_C_ANALOGUES = {"userspace-vpp": "chain-userspace", "combined-sriov-vpp": "chain-combined"}
#: NUMA scenarios of the draft's claims (Figures 13 and 17) and the frame size they use.
NUMA_FRAME_SIZE = 1518
#: Published density matrices shown beside experiment D (the ratio the local lab uses).
DENSITY_PCDR4SW = "(1:1)"
#: Columns of :func:`config_table` after the configuration columns.
STAT_COLUMNS = ["status", "n", "mean_pps", "ci_low_pps", "ci_high_pps", "cv", "gbps_l1", "generator_limited",
                "n_irregular"]
#: How :func:`config_table` states the uncertainty of a throughput (figures say the same).
THROUGHPUT_INTERVAL = "95 % Student-t interval of the mean over repetitions"
CLAIM_COLUMNS = ["claim", "condition", "verdict", "pair", "test", "p_adjusted", "effect_size",
                 "effect_size_kind", "n", "detail"]
"""Columns of a claims table: one row per claim and condition; ``verdict`` is one of
:data:`nfvlab.stats.VERDICTS`; ``pair``/``test``/``p_adjusted`` (Holm over the claim's
pairs)/``effect_size`` (positive: the claimed larger level is larger)/``n`` describe the
pair that decided the verdict; ``detail`` lists every pair."""
_PUBLISHED_NOTE = "40 GbE testbed of the draft, not this host"


def _key(value):
    """Level normalized for lookups: missing -> None, integral floats -> int."""
    if value is None:
        return None
    try:
        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        return value
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)) or (isinstance(value, (float, np.floating)) and float(value).is_integer()):
        return int(value)
    return value


def _levels(*columns: Iterable, order: Sequence = (), default: Sequence = ()) -> list:
    """Distinct non-missing levels of ``columns``: ``order``'s first, the rest sorted."""
    seen = {_key(v) for col in columns for v in col} - {None}
    first = [v for v in order if v in seen]
    rest = sorted(seen - set(first), key=stats.level_sort_key)
    return (first + rest) or list(default)


#: Table ``status`` of a configuration a note explains, by the note's kind.
NOTE_STATUS = {"not-realizable": "not realizable", "search-failed": "search failed",
               "frame-too-large": "frame too large"}


def _status(notes: pd.DataFrame, config: dict) -> str:
    """Why ``config`` has no value: the matching note's reason, else "not measured"."""
    for _, n in notes.iterrows():
        if all(_key(n[c]) == _key(v) or (c == "frame_size" and _key(n[c]) is None) for c, v in config.items()):
            return f"{NOTE_STATUS.get(n['kind'], 'search failed')}: {n['reason']}"
    return "not measured"


def _any_known(flags: pd.Series) -> Optional[bool]:
    """True if any flag is True, False if all are known False, else None (unknown)."""
    if flags.eq(True).any():
        return True
    return False if flags.notna().all() else None


def config_table(searches: pd.DataFrame, notes: pd.DataFrame, grid: dict[str, Sequence],
                 goal: str) -> pd.DataFrame:
    """Statistics over repetitions for every configuration of ``grid``.

    Parameters
    ----------
    searches : pandas.DataFrame
        :func:`nfvlab.results.searches_frame` rows (filter them first, e.g. to a NUMA scenario).
    notes : pandas.DataFrame
        :func:`nfvlab.results.not_realizable_frame` rows, for the reasons.
    grid : dict
        Column -> levels; one row per combination, in this order.
    goal : str
        Search goal (``ndr`` / ``mrr``).

    Returns
    -------
    pandas.DataFrame
        The grid columns, then ``status`` (``measured``, ``not realizable: <why>``,
        ``search failed: <why>`` or ``not measured``), ``n`` (repetitions),
        ``mean_pps`` (mean over repetitions of ``throughput_pps``, packets/s per
        direction), ``ci_low_pps`` / ``ci_high_pps`` (packets/s per direction: the
        :data:`THROUGHPUT_INTERVAL`, ``mean -+ t(0.975, n-1) * sd / sqrt(n)``,
        :func:`nfvlab.stats.summarize`; NaN for n < 2), ``cv`` (sd / mean),
        ``gbps_l1`` (mean at L1, Gbit/s per direction; NaN without a
        ``frame_size`` column), ``generator_limited`` (True if any repetition
        was; False only if every repetition is known not to be; else None =
        unknown, e.g. a generator without a calibrated ceiling) and
        ``n_irregular`` (repetitions whose RFC 9971 goal result is irregular,
        e.g. the maximum rate was a lower bound, so the value is a floor; 0 for
        MRR and for records without the field).

    Notes
    -----
    Why a t interval and not a bootstrap: the profiles run 2-3 (quick) or 10
    (full) repetitions. At such n a percentile bootstrap cannot reach outside
    the sample's range and covers the mean far less often than it claims (about
    77 % instead of 95 % for three normal repetitions, 88 % for ten,
    ``tests/test_stats.py``), while the t interval is exact for normal
    repetitions; repeated searches of one configuration scatter narrowly
    around a mean (CV well under 1 % on this host), for which a t interval is
    the textbook choice.
    """
    by = list(grid)
    s = searches[searches["goal"] == goal]
    summ = stats.summarize(s, by, "throughput_pps") if len(s) else pd.DataFrame(columns=[*by, "n"])
    found = {tuple(_key(r[c]) for c in by): r for _, r in summ.iterrows()}
    lim = {tuple(_key(v) for v in (k if isinstance(k, tuple) else (k,))): _any_known(g)
           for k, g in s.groupby(by, dropna=False)["generator_limited"]} if len(s) else {}
    irregular = ({tuple(_key(v) for v in (k if isinstance(k, tuple) else (k,))): int((g == False).sum())
                  for k, g in s.groupby(by, dropna=False)["regular"]}
                 if len(s) and "regular" in s.columns else {})
    rows = []
    for combo in itertools.product(*grid.values()):
        config, key = dict(zip(by, combo)), tuple(_key(v) for v in combo)
        h = found.get(key)
        if h is None or not h["n"] > 0:
            rows.append({**config, "status": _status(notes, config), "n": 0})
            continue
        fs = config.get("frame_size")
        rows.append({**config, "status": "measured", "n": int(h["n"]), "mean_pps": h["mean"],
                     "ci_low_pps": h["ci_low"], "ci_high_pps": h["ci_high"], "cv": h["cv"],
                     "gbps_l1": linerate.pps_to_gbps(h["mean"], fs, 1) if fs is not None else np.nan,
                     "generator_limited": lim.get(key), "n_irregular": irregular.get(key, 0)})
    return pd.DataFrame(rows, columns=[*by, *STAT_COLUMNS])


def status_kind(status: str) -> str:
    """``measured`` | ``search failed`` | ``not realizable`` | ``not measured`` of a table's ``status``."""
    return str(status).split(":")[0]


def _beside(table: pd.DataFrame, published: pd.DataFrame, on: dict[str, str], value: str,
            name: str) -> pd.DataFrame:
    """``table`` with ``published[value]`` as column ``name``, matched on ``on`` (table -> published column)."""
    lookup = {tuple(_key(r[c]) for c in on.values()): r[value] for _, r in published.iterrows()}
    out = table.copy()
    out[name] = [lookup.get(tuple(_key(r[c]) for c in on), np.nan) for _, r in table.iterrows()]
    return out


def _chains_text(chains: Sequence[Sequence]) -> str:
    return "; ".join(" > ".join(map(str, c)) for c in chains)


def _verdict(searches: pd.DataFrame, by: str, chains: Sequence[Sequence]) -> dict:
    """The claim's verdict from one :func:`nfvlab.stats.compare` over its adjacent pairs (Holm over them)."""
    pairs = list(dict.fromkeys((hi, lo) for c in chains for hi, lo in zip(c, c[1:])))
    levels = list(dict.fromkeys(v for c in chains for v in c))
    sub = searches[searches[by].isin(levels)]
    comp = stats.compare(sub, by, "throughput_pps", groups=pairs)
    v = stats.claim_verdict(comp, chains)
    return {k: v[k] for k in CLAIM_COLUMNS if k in v}


def claim_rows(claim: str, condition: str, chains: Sequence[Sequence], searches: pd.DataFrame, by: str,
               status: dict) -> list[dict]:
    """Rows of the claims table for one claim under one condition.

    Parameters
    ----------
    claim : str
        The draft's claim, as shown.
    condition : str
        The fixed factors, e.g. ``"numa=s1, 1518 B"``.
    chains : list of level lists
        Orders the claim asserts, each from the expected largest to the smallest
        (``[["exclusive", "shared", "none"]]``; ``[["s1", "s2"], ["s1", "s4"]]``).
    searches : pandas.DataFrame
        Search rows under ``condition`` (goal already chosen).
    by : str
        The factor column the levels belong to.
    status : dict
        Level -> ``status`` of the table (``measured`` or why not).

    Returns
    -------
    list of dict
        :data:`CLAIM_COLUMNS` rows. When a level is not measured: one row with
        verdict ``not testable`` ("on this host: <level>: <why>; ...") and,
        if at least two levels of a chain were measured, one row for the
        testable part of the claim (the chains restricted to measured levels),
        judged like a full claim.
    """
    levels = list(dict.fromkeys(v for c in chains for v in c))
    missing = [v for v in levels if status.get(v) != "measured"]
    rows = []
    if missing:
        why = "; ".join(f"{v}: {status.get(v, 'not in the experiment')}" for v in missing)
        rows.append({"claim": claim, "condition": condition, "verdict": "not testable", "n": 0,
                     "detail": f"on this host: {why}"})
        chains = list(dict.fromkeys(tuple(v for v in c if v not in missing) for c in chains))
        chains = [c for c in chains if len(c) >= 2]
        if not chains:
            return rows
        claim = f"{claim} -- testable part: {_chains_text(chains)}"
    rows.append({"claim": claim, "condition": condition, **_verdict(searches, by, chains)})
    return rows


def _select(df: pd.DataFrame, **conditions) -> pd.DataFrame:
    """Rows whose columns equal ``conditions`` (normalized; a list value: any of them)."""
    mask = np.ones(len(df), dtype=bool)
    for col, want in conditions.items():
        want = {_key(w) for w in want} if isinstance(want, (list, tuple, set)) else {_key(want)}
        mask &= np.array([_key(v) in want for v in df[col]], dtype=bool)
    return df[mask]


def _inputs(records: PathLike, letter: str, models: Optional[list[str]]):
    """Search rows of the experiment's goal and models, notes, and the models."""
    s = results.searches_frame(records)
    notes = results.not_realizable_frame(records)
    if models is None:
        models = _levels(s["model"], notes["model"])
    goal = GOALS[letter] or _first_goal(s)
    return (_select(s, goal=goal, model=list(models)), _select(notes, model=list(models)),
            list(models))


def _first_goal(searches: pd.DataFrame) -> str:
    """The goal of an experiment whose params choose it (F: ``mrr`` quick, ``ndr`` full): the first recorded."""
    goals = [g for g in searches["goal"] if isinstance(g, str)]
    return goals[0] if goals else "ndr"


def _status_of(table: pd.DataFrame, by: str, **conditions) -> dict:
    sub = _select(table, **conditions)
    return {_key(k): v for k, v in zip(sub[by], sub["status"])}


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
    s, notes, models = _inputs(records, "b", models)
    grid = {"model": models,
            "pinning": _levels(s["pinning"], notes["pinning"], order=reference.PINNING_ORDER),
            "numa": _levels(s["numa"], notes["numa"]),
            "frame_size": _levels(s["frame_size"], notes["frame_size"], default=DEFAULT_FRAME_SIZES["b"])}
    pub = reference.pinning_numa()
    table = _beside(config_table(s, notes, grid, "ndr"), pub,
                    {"pinning": "pinning", "numa": "scenario", "frame_size": "frame_size"},
                    "throughput_gbps", "draft11_fig13_gbps")
    rows = []
    for m, fs in itertools.product(models, grid["frame_size"]):
        for numa in grid["numa"]:
            rows += claim_rows("B.2: exclusive > shared > none (CPU pinning mitigates the noisy neighbour)",
                               f"{m}, numa={numa}, {fs} B", [["exclusive", "shared", "none"]],
                               _select(s, model=m, numa=numa, frame_size=fs), "pinning",
                               _status_of(table, "pinning", model=m, numa=numa, frame_size=fs))
        for pin in grid["pinning"]:
            rows += claim_rows("B.2: s1 best; s2 and s4 degrade (vSwitch and pod on different NUMA nodes)",
                               f"{m}, pinning={pin}, {fs} B", [["s1", "s2"], ["s1", "s3"], ["s1", "s4"]],
                               _select(s, model=m, pinning=pin, frame_size=fs), "numa",
                               _status_of(table, "numa", model=m, pinning=pin, frame_size=fs))
    return {"pinning_numa": table, "claims": pd.DataFrame(rows, columns=CLAIM_COLUMNS)}


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
        nodes (s2, s3, s5, s6) degrades" (s1 above each of s2..s6) per model.
    """
    s, notes, models = _inputs(records, "c", models)
    sizes = _levels(s["frame_size"], notes["frame_size"], default=DEFAULT_FRAME_SIZES["c"])
    s1, s1_notes = _select(s, numa=["s1", None]), _select(notes, numa=["s1", None])
    draft = {v: k for k, v in DRAFT_C_ANALOGUES.items()}
    comb = config_table(s1, s1_notes, {"model": models, "frame_size": sizes}, "ndr")
    comb.insert(1, "draft_model", comb["model"].map(draft))
    comb = _beside(comb, reference.combination_throughput(), {"draft_model": "model", "frame_size": "frame_size"},
                   "throughput_gbps", "draft11_fig16_gbps")
    numa = config_table(_select(s, frame_size=NUMA_FRAME_SIZE), notes,
                        {"model": models, "numa": _levels(s["numa"], notes["numa"]),
                         "frame_size": [NUMA_FRAME_SIZE]}, "ndr")
    numa = _beside(numa, reference.multipod_numa(), {"numa": "scenario", "frame_size": "frame_size"},
                   "throughput_gbps", "draft11_fig17_gbps")
    order = [DRAFT_C_ANALOGUES["combined-sriov-vpp"], DRAFT_C_ANALOGUES["userspace-vpp"]]
    rows = []
    for fs in sizes:
        rows += claim_rows(f"C.2: combined > user-space only ({order[0]} > {order[1]})", f"numa=s1, {fs} B",
                           [order], _select(s1, frame_size=fs), "model",
                           _status_of(comb, "model", frame_size=fs))
    for m in models:
        rows += claim_rows("C.2: s1 best; splitting pods across NUMA nodes (s2, s3, s5, s6) degrades",
                           f"{m}, {NUMA_FRAME_SIZE} B", [["s1", f"s{i}"] for i in range(2, 7)],
                           _select(s, model=m, frame_size=NUMA_FRAME_SIZE), "numa",
                           _status_of(numa, "numa", model=m))
    return {"combination": comb, "numa": numa, "claims": pd.DataFrame(rows, columns=CLAIM_COLUMNS)}


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
    s, notes, models = _inputs(records, "d", models)
    grid = {"model": models, "topology": _levels(s["topology"], notes["topology"]),
            "frame_size": _levels(s["frame_size"], notes["frame_size"], default=DEFAULT_FRAME_SIZES["d"]),
            "instances": _levels(s["instances"], notes["instances"]),
            "nfs": _levels(s["nfs"], notes["nfs"])}
    table = config_table(s, notes, grid, "mrr")
    pub = reference.density_mrr()
    pub = pub[pub["pcdr4sw"] == DENSITY_PCDR4SW].assign(topology=lambda d: d["topology"].str.lower())
    on = {"topology": "topology", "frame_size": "frame_size", "instances": "instances", "nfs": "nfs_per_instance"}
    for tb, g in pub.groupby("testbed_id", sort=True):
        table = _beside(table, g, on, "mrr_mpps", f"published_mrr_mpps_{tb}")
        table = _beside(table, g, on, "raw", f"published_raw_{tb}")
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


# ---------------------------------------------------------------------------
# experiment F (seed 003): memif vs tap pod interface, MTU 1500 / 9000
# ---------------------------------------------------------------------------
#: The seed's pod interfaces and the local models standing for them.
F_MEMIF, F_TAP = "ovs-dpdk-memif", "ovs-dpdk-tap"
#: "Far above": memif's rate at least this many times tap's, at the same MTU and frame size.
FAR_RATIO = 2.0
#: What the seed's DSA figures need, as the claims table says when a host lacks it.
DSA_CLAIM = "seed 003: Intel DSA offload of memif copies raises throughput further"


def _scaled(searches: pd.DataFrame, model: str, factor: float, level: str) -> pd.DataFrame:
    """``searches`` with ``model``'s rates times ``factor``, relabelled ``level`` (to test a ratio)."""
    out = searches.copy()
    hit = out["model"] == model
    out.loc[hit, "throughput_pps"] = out.loc[hit, "throughput_pps"] * factor
    out.loc[hit, "model"] = level
    return out


def _as_gbps(searches: pd.DataFrame) -> pd.DataFrame:
    """Searches with ``throughput_pps`` replaced by the L2 rate in Gbit/s (claims in bits, not packets)."""
    return searches.assign(throughput_pps=searches["throughput_gbps_l2"].astype(float))


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
    s, notes, models = _inputs(records, "f", models)
    goal = _first_goal(s)
    mtus = _levels(s["mtu_bytes"], notes["mtu_bytes"], default=(1500, 9000))
    sizes = _levels(s["frame_size"], notes["frame_size"], default=DEFAULT_FRAME_SIZES["f"])
    table = config_table(s, notes, {"model": models, "mtu_bytes": mtus, "frame_size": sizes}, goal)
    table["gbps_l2"] = [linerate.pps_to_gbps(v, fs, 2) if pd.notna(v) else np.nan
                        for v, fs in zip(table["mean_pps"], table["frame_size"])]
    table["goal"] = goal
    rows = []
    tap_far = f"{F_TAP} x{FAR_RATIO:g}"
    for mtu, fs in itertools.product(mtus, sizes):
        st = _status_of(table, "model", mtu_bytes=mtu, frame_size=fs)
        if all(status_kind(st.get(m, "")) == "frame too large" for m in (F_MEMIF, F_TAP)):
            continue  # nothing was sent at this size: no claim to test
        st[tap_far] = st.get(F_TAP, "not in the experiment")
        rows += claim_rows(f"seed 003: memif far above tap at every size ({F_MEMIF} >= {FAR_RATIO:g} x {F_TAP})",
                           f"MTU {mtu}, {fs} B", [[F_MEMIF, tap_far]],
                           _scaled(_select(s, mtu_bytes=mtu, frame_size=fs), F_TAP, FAR_RATIO, tap_far),
                           "model", st)
    if 1500 in mtus and 9000 in mtus:
        big = {9000: max((f for f in sizes if f != "IMIX" and f <= 9018), default=9018),
               1500: max((f for f in sizes if f != "IMIX" and f <= 1518), default=1518)}
        level = {m: f"MTU {m} at {big[m]} B" for m in big}
        for model in models:
            parts = [_select(s, model=model, mtu_bytes=m, frame_size=big[m]).assign(cell=level[m]) for m in big]
            sub = _as_gbps(pd.concat(parts, ignore_index=True))
            st = {level[m]: _status_of(table, "mtu_bytes", model=model, frame_size=big[m]).get(m, "not measured")
                  for m in big}
            rows += claim_rows("seed 003: MTU 9000 better than 1500 for large frames (L2 Gbit/s at the largest "
                               "frame each MTU carries)", model, [[level[9000], level[1500]]], sub, "cell", st)
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
                     f"mean and 95 % t-interval; {_HOST_ONLY}", fontsize=9)
        return [save_png(fig, out / "experiment_f_throughput.png")]


# ---------------------------------------------------------------------------
# figures, metrics, the generic writer
# ---------------------------------------------------------------------------
_HOST_ONLY = "measured on this host only, not the draft's testbed"


def _kpps(table: pd.DataFrame) -> pd.DataFrame:
    out = table.copy()
    for c in ("mean", "ci_low", "ci_high"):
        out[f"{c}_kpps"] = out[f"{c}_pps"] / 1e3
    return out


def irregular_note(table: pd.DataFrame, keys: Sequence[str]) -> Optional[str]:
    """One line naming the configurations with irregular RFC 9971 results, or None.

    RFC 9971 asks that values coming from irregular goal results be marked; the
    figures show this line under the plot. ``keys`` name a configuration (e.g.
    ``["model", "frame_size"]``); a row counts when ``n_irregular > 0``.
    """
    if "n_irregular" not in table.columns:
        return None
    rows = table[table["n_irregular"].fillna(0) > 0]
    if rows.empty:
        return None
    cells = [f"{' '.join(str(r[k]) for k in keys)} ({int(r['n_irregular'])} of {int(r['n'])})"
             for _, r in rows.iterrows()]
    return "irregular (RFC 9971; e.g. the maximum rate met the goal, so a floor): " + ", ".join(cells)


def _bar_figure(table: pd.DataFrame, x: str, hue: str, title: str, path: Path, dpi: int) -> Path:
    with figure_style(dpi):
        fig = new_figure((7.0, 4.4))
        ax = fig.subplots()
        grouped_bars(_kpps(table), x=x, y="mean_kpps", hue=hue, ci_low="ci_low_kpps", ci_high="ci_high_kpps",
                     missing="status", ax=ax, title=title, ylabel="NDR [kpps per direction]")
        note = irregular_note(table, [hue, x])
        if note:
            ax.set_xlabel(f"{ax.get_xlabel()}\n{note}", fontsize=8)
        return save_png(fig, path)


def _file_part(value) -> str:
    return str(value).replace("/", "-").replace(" ", "")


def figures_b(tabs: dict[str, pd.DataFrame], out: Path, dpi: int = 110) -> list[Path]:
    """``experiment_b_pinning_numa[_<model>].png``: bars per NUMA scenario, one per pinning mode, 95 % CI."""
    t = tabs["pinning_numa"]
    models = list(dict.fromkeys(t["model"]))
    return [_bar_figure(t[t["model"] == m], "numa", "pinning",
                        f"Experiment B ({m}, noisy neighbour): zero-loss throughput,\n"
                        f"mean and 95 % t-interval; {_HOST_ONLY}",
                        out / f"experiment_b_pinning_numa{'' if len(models) == 1 else '_' + _file_part(m)}.png", dpi)
            for m in models]


def figures_c(tabs: dict[str, pd.DataFrame], out: Path, dpi: int = 110) -> list[Path]:
    """``experiment_c_combination.png`` (NDR vs frame size per model, 95 % CI) and ``experiment_c_numa.png``."""
    first = throughput_figure(tabs["combination"], "Experiment C, NUMA s1: zero-loss throughput, mean and "
                              f"95 % t-interval\n{_HOST_ONLY}", out / "experiment_c_combination.png", dpi)
    return [first, _bar_figure(tabs["numa"], "numa", "model",
                               f"Experiment C, {NUMA_FRAME_SIZE} B: zero-loss throughput per NUMA scenario,\n"
                               f"mean and 95 % t-interval; {_HOST_ONLY}", out / "experiment_c_numa.png", dpi)]


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
        name = f"experiment_d_mrr_{_file_part(m) + '_' if several else ''}{_file_part(topo)}_{_file_part(fs)}.png"
        with figure_style(dpi):
            fig = new_figure((6.4, 4.6))
            matrix_heatmap(g, "instances", "nfs", "mean_kpps", text="cell", ax=fig.subplots(),
                           cbar_label="MRR [kpps per direction]", annot_fontsize=7, vmin=0.0, vmax=vmax_kpps,
                           xlabel="NFs per service instance", ylabel="service instances",
                           title=f"Experiment D {topo.upper()} {fs} B ({m}): MRR per direction,\n"
                                 f"mean [95 % t-interval], kpps; {_HOST_ONLY}")
            paths.append(save_png(fig, out / name))
    return paths


def _metric_values(table: pd.DataFrame, keys: list[str], unit: str, prefix: str = "") -> dict:
    return {prefix + "/".join(str(getattr(r, k)) for k in keys) + f"/{unit}": round(r.mean_pps / 1e3, 3)
            for r in table.itertuples() if r.status == "measured" and not np.isnan(r.mean_pps)}


def _claim_counts(claims: pd.DataFrame) -> dict:
    v = claims["verdict"]
    return {f"claims/{name.replace(' ', '_')}": int((v == name).sum()) for name in stats.VERDICTS}


def metrics_values(letter: str, tabs: dict[str, pd.DataFrame]) -> dict:
    """The DVC metrics of an experiment: mean rate of every measured configuration, kpps (and claim counts)."""
    if letter == "a":
        return {**_metric_values(tabs["throughput"], ["model", "frame_size"], "ndr_kpps"),
                **_claim_counts(tabs["claims"])}
    if letter == "b":
        return {**_metric_values(tabs["pinning_numa"], ["model", "pinning", "numa", "frame_size"], "ndr_kpps"),
                **_claim_counts(tabs["claims"])}
    if letter == "c":
        return {**_metric_values(tabs["combination"], ["model", "frame_size"], "ndr_kpps"),
                **_metric_values(tabs["numa"], ["model", "numa", "frame_size"], "ndr_kpps", prefix="numa/"),
                **_claim_counts(tabs["claims"])}
    if letter == "f":
        goal = str(tabs["throughput"]["goal"].iloc[0]) if len(tabs["throughput"]) else "ndr"
        return {**_metric_values(tabs["throughput"], ["model", "mtu_bytes", "frame_size"], f"{goal}_kpps"),
                **_claim_counts(tabs["claims"])}
    return _metric_values(tabs["mrr"], ["model", "topology", "frame_size", "instances", "nfs"], "mrr_kpps")


def tables_a(records: PathLike, models: Optional[list[str]] = None) -> dict[str, pd.DataFrame]:
    """Experiment A (Appendix A, Figure 10): zero-loss throughput of each model over frame sizes.

    Returns
    -------
    dict
        ``throughput``: :func:`config_table` over model x frame size (ndr), with
        ``section`` (draft) after ``model`` and ``gbps_l2`` (mean at L2, per direction)
        at the end; ``claims``: A.2 per frame size on the local analogues
        (:data:`DRAFT_A_ANALOGUES`), :data:`CLAIM_COLUMNS`; ``published``: the
        draft's Figure 10 values (40 GbE testbed, not this host) with ``local_analogue``.
    """
    s, notes, models = _inputs(records, "a", models)
    sizes = _levels(s["frame_size"], notes["frame_size"], default=(64, 1518))
    table = config_table(s, notes, {"model": models, "frame_size": sizes}, "ndr")
    table.insert(1, "section", [catalogue.get(m).section for m in table["model"]])
    table["gbps_l2"] = [linerate.pps_to_gbps(v, fs, 2) if pd.notna(v) else np.nan
                        for v, fs in zip(table["mean_pps"], table["frame_size"])]
    a = DRAFT_A_ANALOGUES
    rows = []
    for best in (a["smartnic-sriov"], a["ebpf-afxdp-cni"]):
        order = [best, a["userspace-vpp"], a["ebpf-ovs-afxdp"]]
        claim = f"A.2: {order[0]} > {order[1]} > {order[2]} (draft: SR-IOV/AFXDP-CNI > VPP > OVS-AFXDP)"
        for fs in sizes:
            rows += claim_rows(claim, f"{fs} B", [order], _select(s, frame_size=fs), "model",
                               _status_of(table, "model", frame_size=fs))
    pub = reference.models_throughput()
    pub["local_analogue"] = pub["model"].map(DRAFT_A_ANALOGUES)
    return {"throughput": table, "claims": pd.DataFrame(rows, columns=CLAIM_COLUMNS), "published": pub}


def figure_a(table: pd.DataFrame, path: PathLike, dpi: int = 110) -> Path:
    """Measured zero-loss throughput vs frame size per model (per direction), 95 % CI bars."""
    return throughput_figure(table, "Experiment A (measured on this host, embedded lab):\n"
                                    "zero-loss throughput per direction, mean and 95 % t-interval over repetitions",
                             Path(path), dpi)


def throughput_figure(table: pd.DataFrame, title: str, path: Path, dpi: int = 110) -> Path:
    """NDR (kpps per direction) vs frame size, one line per model, CI error bars, of a table's measured rows.

    Configurations without a value are listed under the plot by kind (not
    realizable, search failed, not measured), so each stays visible; those with
    irregular RFC 9971 results too (:func:`irregular_note`).
    """
    data = table[table["status"] == "measured"]
    missing = table[table["status"] != "measured"]
    with figure_style(dpi):
        fig = new_figure((7.0, 4.4))
        ax = fig.subplots()
        if data.empty:
            ax.text(0.5, 0.5, "no configuration measured", ha="center", va="center")
        else:
            throughput_vs_frame_size(_kpps(data), y="mean_kpps", hue="model", ax=ax, x_scale="log2",
                                     ci_low="ci_low_kpps", ci_high="ci_high_kpps", title=title,
                                     ylabel="NDR [kpps per direction]")
        if not missing.empty:
            lines = []
            for kind, g in missing.groupby(missing["status"].map(status_kind), sort=True):
                cells = sorted({f"{m} ({fs} B)" if g["model"].eq(m).sum() < len(set(table["frame_size"])) else m
                                for m, fs in zip(g["model"], g["frame_size"])})
                lines.append(f"{kind}: {', '.join(cells)}")
            # In the x label, so the layout engine makes room for it.
            ax.set_xlabel("\n".join([ax.get_xlabel() or "frame size [B]", *lines]), fontsize=8)
        note = irregular_note(data, ["model", "frame_size"])
        if note:
            ax.set_xlabel(f"{ax.get_xlabel() or 'frame size [B]'}\n{note}", fontsize=8)
        return save_png(fig, Path(path))


_TABLES: dict[str, Callable[..., dict[str, pd.DataFrame]]] = {
    "a": tables_a, "b": tables_b, "c": tables_c, "d": tables_d, "f": tables_f}
_FIGURES: dict[str, Callable[..., list[Path]]] = {
    "a": lambda tabs, out, dpi=110: [figure_a(tabs["throughput"], out / "experiment_a_throughput.png", dpi)],
    "b": figures_b, "c": figures_c, "d": figures_d, "f": figures_f}


def _letter(letter: str) -> str:
    if letter not in _TABLES:
        raise ValueError(f"experiment {letter!r}: use one of {sorted(_TABLES)}")
    return letter


def tables(letter: str, records: PathLike, models: Optional[list[str]] = None) -> dict[str, pd.DataFrame]:
    """The tables of experiment ``letter`` ("a".."d", "f"), named as in :data:`TABLE_NAMES`.

    ``models``: the params file's models (default: every model in the records).
    See :func:`tables_a`, :func:`tables_b`, :func:`tables_c`, :func:`tables_d`, :func:`tables_f`, and
    :func:`latency_table` (``latency``, every experiment).
    """
    return {**_TABLES[_letter(letter)](records, models), "latency": latency_table(records, models)}


def latency_table(records: PathLike, models: Optional[list[str]] = None) -> pd.DataFrame:
    """Latency under load: :func:`nfvlab.latency.latency_percentiles` of the records' latest run.

    Rows of the ``models`` given (default: all), configuration columns without a
    value in any row dropped (e.g. experiment A's resources); columns as
    :func:`nfvlab.latency.latency_percentiles` returns them.
    """
    lat = results.latency_frame(records)
    if models is not None:
        lat = lat[lat["model"].isin(models)]
    table = latency.latency_percentiles(lat)
    return table.drop(columns=[c for c in results.CONFIG_LABELS if table[c].isna().all()])


def latency_figures(letter: str, table: pd.DataFrame, out: Path, dpi: int = 110) -> list[Path]:
    """``experiment_<x>_latency_<model>[_<config>].png``: percentile spectra per load fraction.

    One figure per model and resource configuration, one panel per frame size
    (:func:`nfvlab.plots.latency.spectrum_figure`); none for a configuration without a
    latency value (no latency trial, or probes off).
    """
    configs = [c for c in ["model", *results.CONFIG_LABELS] if c in table.columns]
    paths = []
    for key, g in table.groupby(configs, sort=False, dropna=False):
        if g["mean_ns"].isna().all():  # e.g. probes off: nothing to draw
            continue
        key = key if isinstance(key, tuple) else (key,)
        parts = [str(v) for v in key if pd.notna(v)]
        knobs = ", ".join(f"{c} {v}" for c, v in zip(configs[1:], key[1:]) if pd.notna(v))
        goal = "/".join(str(x).upper() for x in dict.fromkeys(g["goal"]))
        with figure_style(dpi):
            fig = spectrum_figure(g, f"Experiment {letter.upper()}: {key[0]}{f' ({knobs})' if knobs else ''}\n"
                                     f"one-way latency at fractions of the {goal}, mean over repetitions, "
                                     f"95 % CI\n{_HOST_ONLY}")
            paths.append(save_png(fig, out / f"experiment_{letter}_latency_{'_'.join(map(_file_part, parts))}.png"))
    return paths


def write_experiment(letter: str, records: PathLike, params_models: Optional[list[str]], out_tables: PathLike,
                     out_figures: PathLike, metrics: PathLike) -> list[Path]:
    """Write an experiment's tables, figures and metrics; return the paths written.

    Files: ``<out_tables>/experiment_<x>_<name>.csv`` for each name of
    :data:`TABLE_NAMES` ``[x]``, the PNGs of ``figures_<x>`` under
    ``out_figures``, and ``metrics`` (JSON, :func:`metrics_values`). Same
    records -> byte-identical files.
    """
    out_tables, out_figures = Path(out_tables), Path(out_figures)
    out_tables.mkdir(parents=True, exist_ok=True)
    out_figures.mkdir(parents=True, exist_ok=True)
    tabs = tables(letter, records, params_models)
    paths = []
    for name in TABLE_NAMES[letter]:
        paths.append(out_tables / f"experiment_{letter}_{name}.csv")
        tabs[name].to_csv(paths[-1], index=False, float_format="%.6g")
    paths += _FIGURES[letter](tabs, out_figures)
    paths += latency_figures(letter, tabs["latency"], out_figures)
    Path(metrics).parent.mkdir(parents=True, exist_ok=True)
    Path(metrics).write_text(json.dumps(metrics_values(letter, tabs), indent=1, sort_keys=True) + "\n")
    paths.append(Path(metrics))
    return paths
