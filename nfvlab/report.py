"""The study report: provenance, claims, then every experiment's tables and figures, in order.

``notebooks/report.ipynb`` only displays :func:`sections`; the logic lives here so
tests reach it. An experiment whose tables are not written yet gets a "not run
yet" section instead of failing. Tables are shown formatted (:func:`format_table`):
rates in kpps with their interval, CV in %, units in the headers, "—" with the
reason where there is no value, "unknown" where a flag was not recorded, no
index column; the tidy functions (:func:`provenance_table`, :func:`claims_summary`,
:func:`run_changes`) return numbers for tests and notebooks.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, NamedTuple, Optional, Sequence, Union

import pandas as pd

from nfvlab import results
from nfvlab import experiments
from nfvlab.analysis import status_kind
from nfvlab.records import runs_frame
from nfvlab.claims import EFFECT_KIND as RATIO
from nfvlab.claims import VERDICTS, current_design

PathLike = Union[str, Path]

#: What the local numbers are, whatever the host (its facts come from the records: :func:`provenance_table`).
SCOPE_NOTE = (
    "**Local numbers describe the host in the provenance table only** (its CPU, cores, links and "
    "generator ceiling), **never** the draft's 40 GbE testbed or the density note's servers. "
    "Published values stand beside them to compare the *shape* of a result (which configuration "
    "is faster), not its magnitude. A configuration this host cannot realize is listed with the "
    "reason, never with a number; a claim that needs one is *not testable on this host*."
)
#: A configuration whose mean rate changed by more than this fraction against the previous
#: completed run of the same records is flagged (:func:`run_changes`).
CHANGE_FLAG = 0.10
#: A table wider than this many columns is split into parts that repeat the key columns.
MAX_COLUMNS = 10
#: Shown for an interval lower bound below 0 that was clipped (:func:`interval_text`).
CLIPPED_MARK = "*"
CLIPPED_NOTE = (f"{CLIPPED_MARK} the 95 % t-interval reaches below 0 at this small n; a rate or latency "
                "cannot be negative, so the lower bound is shown clipped at 0 (docs/methodology.md).")
#: Key columns and their display names (units in brackets).
KEY_NAMES = {"data_path": "data path", "link_mtu_bytes": "link MTU [B]", "direction": "direction",
             "file_bytes": "file [B]", "mtu_bytes": "MTU [B]", "model": "model", "draft_model": "draft model", "section": "draft section", "pinning": "pinning",
             "numa": "NUMA", "noisy_load_pct": "noisy neighbour [% CPU]", "topology": "topology",
             "frame_size": "frame size [B]", "instances": "service instances", "nfs": "NFs per instance",
             "goal": "goal", "load_fraction": "load [% of rate]", "claim": "claim", "condition": "condition"}

#: Captions of the tables (``experiment_<x>_<name>.csv``).
CAPTIONS = {
    "throughput": "Throughput per model and frame size (this host)",
    "published": "Published values (draft Figure 10, 40 GbE testbed)",
    "pinning_numa": "Throughput per pinning mode and NUMA scenario (this host; draft Figure 13 beside)",
    "combination": "Throughput per model and frame size at NUMA s1 (this host; draft Figure 16 beside)",
    "numa": "Throughput per NUMA scenario at 1518 B (this host; draft Figure 17 beside)",
    "mrr": "MRR matrix cells (this host; density note cells and core usage beside)",
    "latency": "Latency under load (this host): one-way latency percentiles p50 .. p99.9 per model, of the "
               "probes at fractions of the rate found (0 % = probes only), mean [95 % CI] over repetitions (n), µs",
    "tcp": "TCP goodput per data path, link MTU and direction (iperf3, this host)",
    "http": "HTTP requests/s per data path, link MTU, direction and file size (wrk against nginx, this host)",
    "claims": "The draft's claims on this host (verdict: holds / contradicted / inconclusive / not testable, "
              "with its reason, the deciding pair's test, Holm-adjusted p, effect (ratio - 1) and n; for an "
              "inconclusive claim the difference detectable at this n and the repetitions that would decide it)",
}
def kubernetes_stem(letter: str) -> str:
    """Records, tables and figures of experiment ``letter`` on the Kubernetes lab (the
    ``experiment_kubernetes`` and ``analysis_kubernetes`` stages): ``experiment_<x>_kubernetes``."""
    return f"experiment_{letter}_kubernetes"


def records_names() -> dict[str, str]:
    """The records of each experiment (and of those also run on the Kubernetes lab):
    ``<records_dir>/<name>.jsonl``."""
    out = {}
    for letter, exp in experiments.REGISTRY.items():
        out[letter] = f"experiment_{letter}"
        if exp.kubernetes_table:
            out[f"{letter} (Kubernetes)"] = kubernetes_stem(letter)
    return out


class Section(NamedTuple):
    """One item of the report, displayed in order.

    ``table`` is a pandas ``Styler`` of a formatted (all-text) table without index
    column (``table.data`` is the DataFrame), or None.
    """

    title: str
    text: str
    table: Optional[Any]
    figures: list[Path]


# ---------------------------------------------------------------------------
# value formatting
# ---------------------------------------------------------------------------
def _num(v) -> Optional[float]:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


def interval_text(mean, low, high, scale: float = 1e3, digits: int = 1) -> str:
    """``"79.2 [72.0, 86.4]"``: ``mean`` and its interval divided by ``scale``.

    A lower bound below 0 is shown as 0 followed by :data:`CLIPPED_MARK` (a rate or
    latency cannot be negative; the t interval at small n can reach below 0). No
    interval (NaN bounds, n < 2) shows the mean alone; no mean shows "—".
    """
    m, lo, hi = _num(mean), _num(low), _num(high)
    if m is None:
        return "—"
    if lo is None or hi is None:
        return f"{m / scale:.{digits}f}"
    low_text = f"{max(lo, 0.0) / scale:.{digits}f}{CLIPPED_MARK if lo < 0 else ''}"
    return f"{m / scale:.{digits}f} [{low_text}, {hi / scale:.{digits}f}]"


def flag_text(v) -> str:
    """A recorded True/False flag as "yes"/"no"; missing (not recorded, not known) as "unknown"."""
    if isinstance(v, str):
        v = {"true": True, "false": False}.get(v.strip().lower())
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "unknown"
    return "yes" if bool(v) else "no"


def _plain(v, digits: int = 4) -> str:
    f = _num(v)
    if f is None:
        return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)
    return f"{int(f)}" if f == int(f) and abs(f) < 1e15 else f"{f:.{digits}g}"


def _column_name(c: str) -> str:
    """Display name with unit: ``draft11_fig13_gbps`` -> ``draft11 fig13 [Gbps]``."""
    if c in KEY_NAMES:
        return KEY_NAMES[c]
    units = {"_gbps": "[Gbps]", "_mpps": "[Mpps]", "_kpps": "[kpps]", "_pps": "[packets/s]", "_pct": "[%]",
             "_cores": "[cores]", "_cpus": "[CPUs]"}
    for suffix, unit in units.items():
        if c.endswith(suffix):
            return f"{c[:-len(suffix)].replace('_', ' ')} {unit}"
    if c.startswith("published_mrr_mpps_"):
        return f"published MRR {c[len('published_mrr_mpps_'):]} [Mpps]"
    return c.replace("_", " ")


# ---------------------------------------------------------------------------
# tables
# ---------------------------------------------------------------------------
_RATE_STATS = ("status", "n", "mean_pps", "ci_low_pps", "ci_high_pps", "cv", "gbps_l1", "generator_limited",
               "n_irregular", "gbps_l2")


def format_table(table: pd.DataFrame, rate: str = "NDR") -> pd.DataFrame:
    """A results table as text, ready to show.

    Parameters
    ----------
    table : pandas.DataFrame
        An analysis table (:func:`nfvlab.analysis.config_table` columns and any
        published / core columns beside), a claims table, or any other table.
    rate : str
        Name of the rate in the headers (``NDR``, ``MRR``).

    Returns
    -------
    pandas.DataFrame
        All cells text, a fresh RangeIndex (never shown). Rate tables: the key
        columns (display names with units), ``"<rate> [kpps] mean [95 % CI]"``
        (:func:`interval_text`; "—" where there is no value), ``"n"``,
        ``"CV [%]"``, ``"L1 [Gbps]"``, ``"generator-limited"`` (yes / no /
        unknown), ``"irregular (RFC 9971)"``, the other columns (units in the
        names, "—" where empty), and ``"why no value"`` (the reason; empty for
        measured rows) when some row has no value. Claims tables:
        ``"p (Holm)"`` and ``"effect"`` formatted, "—" where no test was run.
    """
    t = table.reset_index(drop=True)
    out = pd.DataFrame(index=t.index)
    if "mean_pps" in t.columns and "status" in t.columns:
        measured = t["status"].eq("measured")
        for c in [c for c in t.columns if c in KEY_NAMES]:
            out[KEY_NAMES[c]] = t[c].map(_plain)
        out[f"{rate} [kpps] mean [95 % CI]"] = [
            interval_text(m, lo, hi) if ok else "—"
            for m, lo, hi, ok in zip(t["mean_pps"], t["ci_low_pps"], t["ci_high_pps"], measured)]
        out["n"] = t["n"].map(_plain)
        out["CV [%]"] = [f"{float(v) * 100:.1f}" if ok and _num(v) is not None else "—"
                         for v, ok in zip(t["cv"], measured)]
        if "gbps_l1" in t.columns:
            out["L1 [Gbps]"] = [f"{float(v):.3f}" if ok and _num(v) is not None else "—"
                                for v, ok in zip(t["gbps_l1"], measured)]
        if "generator_limited" in t.columns:
            out["generator-limited"] = [flag_text(v) if ok else "—" for v, ok in zip(t["generator_limited"], measured)]
        if "n_irregular" in t.columns:
            out["irregular (RFC 9971)"] = [_plain(v) if ok else "—" for v, ok in zip(t["n_irregular"], measured)]
        for c in t.columns:
            if c not in KEY_NAMES and c not in _RATE_STATS:
                out[_column_name(c)] = t[c].map(lambda v: flag_text(v) if isinstance(v, bool) else _plain(v))
        if not measured.all():
            out["why no value"] = [("" if ok else str(s)) for s, ok in zip(t["status"], measured)]
        return out
    for c in t.columns:
        if c == "p_adjusted":
            out["p (Holm)"] = t[c].map(lambda v: "—" if _num(v) is None else f"{float(v):.3g}")
        elif c == "effect_size":
            out["effect"] = [_effect_text(v, k) for v, k in zip(t[c], t.get("effect_size_kind", [""] * len(t)))]
        elif c == "mde":
            out["detectable at this n [ratio - 1]"] = [_effect_text(v, RATIO) for v in t[c]]
        elif c == "n_needed":
            out["repetitions that would decide"] = [
                ("—" if v != "inconclusive" else f"> {current_design().n_max}" if _num(n) is None else _plain(n))
                for n, v in zip(t[c], t.get("verdict", [""] * len(t)))]
        elif c == "effect_size_kind":
            continue
        else:
            out[_column_name(c)] = t[c].map(_plain)
    return out


def _effect_text(value, kind) -> str:
    """An effect size: ``+12.3 %`` for a ratio - 1 (a factor ``x4.5`` from 2 on), else ``+0.12 (kind)``."""
    if _num(value) is None:
        return "—"
    v = float(value)
    if kind == RATIO:
        return f"{v * 100:+.1f} %" if v < 1 else f"x{1 + v:.3g}"
    return f"{v:+.2f} ({kind})"


def split_columns(table: pd.DataFrame, keys: Sequence[str], max_columns: int = MAX_COLUMNS) -> list[pd.DataFrame]:
    """Parts of a wide table, each with the ``keys`` columns and at most ``max_columns`` columns in all.

    A table no wider than ``max_columns`` is returned whole (one part).
    """
    keys = [k for k in keys if k in table.columns]
    rest = [c for c in table.columns if c not in keys]
    if len(table.columns) <= max_columns:
        return [table]
    step = max(1, max_columns - len(keys))
    return [table[keys + rest[i:i + step]] for i in range(0, len(rest), step)]


def styled(table: pd.DataFrame, uid: str):
    """A Styler that shows ``table`` without its index; deterministic HTML (fixed uuid).

    Text wraps, except models and values with their interval (a number never splits
    from its bracket).
    """
    st = (table.style.hide(axis="index").set_uuid(uid)
          .set_table_attributes('class="nfvlab-table"')
          .set_table_styles([{"selector": "th", "props": [("text-align", "left")]}])
          .set_properties(**{"text-align": "left", "white-space": "normal"}))
    nowrap = [c for c in table.columns if c == "model" or "CI]" in c or c.endswith("[µs]")]
    return st.set_properties(subset=nowrap, **{"white-space": "nowrap"}) if nowrap else st


def _read(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, keep_default_na=True)


def _own_dir(base: Path, letter: str) -> Path:
    own = base / f"experiment_{letter}"
    return own if own.is_dir() else base


def _records_dir(tables_dir: PathLike, records_dir: Optional[PathLike]) -> Path:
    # The pipeline keeps records in data/raw beside data/tables.
    return Path(records_dir) if records_dir is not None else Path(tables_dir).parent / "raw"


# ---------------------------------------------------------------------------
# provenance, claims, run-to-run changes (tidy)
# ---------------------------------------------------------------------------
def _latest_run(path: Path) -> Optional[pd.Series]:
    """The runs_frame row of the run that counts (:func:`nfvlab.results.selected_runs`), None if none."""
    chosen = results.selected_runs(path)
    if not chosen:
        return None
    run_id = chosen[-1][1][0]["run_id"]
    runs = runs_frame(path)
    return runs[runs["run_id"] == run_id].iloc[-1]


def _ceilings_text(gen: dict) -> str:
    if gen.get("tx_paths"):  # tx: auto: a ceiling per TX path
        return " | ".join(f"{tx}: {_ceilings_text(p)}" for tx, p in gen["tx_paths"].items())
    ceil = gen.get("ceilings") or {}
    if not ceil:
        return "unknown (not calibrated)"
    order = sorted(ceil, key=lambda k: (not str(k).isdigit(), int(k) if str(k).isdigit() else 0, str(k)))
    return "; ".join(f"{k}{' B' if str(k).isdigit() else ''}: {ceil[k]['ceiling_pps'] / 1e3:.1f} kpps"
                     for k in order if _num(ceil[k].get("ceiling_pps")) is not None) or "unknown"


def provenance_table(records_dir: PathLike = "data/raw") -> pd.DataFrame:
    """Where and how each experiment's latest completed run was measured, from its records.

    Parameters
    ----------
    records_dir : path
        Holds ``experiment_<x>.jsonl`` (:func:`records_names`).

    Returns
    -------
    pandas.DataFrame
        One row per records file with a completed run, columns ``experiment``,
        ``run_id``, ``date`` (UTC start), ``git_revision`` (12 hex digits,
        ``+dirty`` if the tree had changes), ``host_cpu``, ``cores`` (usable
        CPUs), ``numa_nodes``, ``kernel``, ``links`` (the generator's ports, e.g.
        ``af_packet on veth``; the NIC when it drives one), ``lab_kind``,
        ``profile`` (params file), ``repetitions``, ``generator`` (name, version,
        scheduling; experiment E: its tools' versions) and ``ceiling`` (calibrated
        ceiling per frame size, kpps per direction, or "unknown (not calibrated)";
        E: "not applicable"). Missing facts read "unknown".
    """
    rows = []
    for name, stem in records_names().items():
        path = Path(records_dir) / f"{stem}.jsonl"
        run = _latest_run(path) if path.exists() else None
        if run is None:
            continue
        prov, params = run["provenance"] or {}, run["params"] or {}
        gen, lab = prov.get("generator") or {}, prov.get("lab") or {}
        ident = gen.get("identity") or {}
        rev = prov.get("git_revision")
        unknown = "unknown"
        rows.append({
            "experiment": name.upper() if len(name) == 1 else name[0].upper() + name[1:],
            "run_id": run["run_id"],
            "date": str(run.get("started_at") or unknown)[:19].replace("T", " ") + " UTC",
            "git_revision": f"{rev[:12]}{'+dirty' if prov.get('git_dirty') else ''}" if rev else unknown,
            "host_cpu": prov.get("cpu_model") or unknown,
            "cores": prov.get("cpu_affinity_count") or prov.get("cpu_count") or unknown,
            "numa_nodes": prov.get("numa_nodes") or unknown,
            "kernel": prov.get("kernel") or unknown,
            # Experiment E has no packet generator: its tools and its lab's link stand in.
            "links": ident.get("ports") or lab.get("lab") or unknown,
            "lab_kind": lab.get("lab_kind") or (params.get("lab") or {}).get("kind") or unknown,
            "profile": params.get("source") or unknown,
            "repetitions": params.get("repetitions") or unknown,
            "generator": " ".join(str(x) for x in (ident.get("name"), ident.get("version"),
                                                   f"sched={ident['sched']}" if ident.get("sched") else None)
                                  if x) or "; ".join((lab.get("tools") or {}).values()) or unknown,
            "ceiling": _ceilings_text(gen) if gen or not lab.get("tools") else "not applicable (TCP/HTTP tools)",
        })
    cols = ["experiment", "run_id", "date", "git_revision", "host_cpu", "cores", "numa_nodes", "kernel", "links",
            "lab_kind", "profile", "repetitions", "generator", "ceiling"]
    return pd.DataFrame(rows, columns=cols)


_PROVENANCE_NAMES = {"run_id": "run id", "date": "date (run start)", "git_revision": "git revision",
                     "host_cpu": "host CPU", "cores": "cores (usable)", "numa_nodes": "NUMA nodes",
                     "kernel": "kernel", "links": "generator ports / links", "lab_kind": "lab kind",
                     "profile": "profile (params file)", "repetitions": "repetitions",
                     "generator": "traffic generator", "ceiling": "generator ceiling (calibrated) [kpps per direction]"}


def claims_table(tables_dir: PathLike = "data/tables") -> pd.DataFrame:
    """Every claim row of every experiment's ``experiment_<x>_claims.csv``.

    Returns
    -------
    pandas.DataFrame
        ``experiment`` (A, B, C, "A (Kubernetes)"), then the claims table's
        columns (:data:`nfvlab.analysis.CLAIM_COLUMNS`: ``claim``, ``condition``,
        ``verdict``, ``pair``, ``test``, ``p_adjusted``, ``effect_size``,
        ``effect_size_kind``, ``n``, ``detail``).
    """
    base = Path(tables_dir)
    frames = []
    for name, stem in records_names().items():
        letter = stem.split("_")[1]
        folder = base / stem if (base / stem).is_dir() else (_own_dir(base, letter) if stem == f"experiment_{letter}"
                                                              else None)
        p = folder / f"experiment_{letter}_claims.csv" if folder is not None else None
        if p is not None and p.exists():
            frames.append(_read(p).assign(experiment=name.upper() if len(name) == 1 else
                                          name[0].upper() + name[1:]))
    if not frames:
        return pd.DataFrame(columns=["experiment"])
    out = pd.concat(frames, ignore_index=True)
    return out[["experiment", *[c for c in out.columns if c != "experiment"]]]


def claims_summary(claims: pd.DataFrame) -> pd.DataFrame:
    """Verdict counts per experiment (:func:`claims_table` rows).

    Returns
    -------
    pandas.DataFrame
        ``experiment``, one count column per verdict of
        :data:`nfvlab.claims.VERDICTS` (``holds``, ``contradicted``,
        ``inconclusive``, ``not testable``), ``total``; a last row ``all``.
    """
    rows = []
    for exp, g in claims.groupby("experiment", sort=False) if len(claims) else ():
        rows.append({"experiment": exp, **{v: int((g["verdict"] == v).sum()) for v in VERDICTS}, "total": len(g)})
    out = pd.DataFrame(rows, columns=["experiment", *VERDICTS, "total"])
    total = {"experiment": "all", **{c: int(out[c].sum()) for c in [*VERDICTS, "total"]}}
    return pd.concat([out, pd.DataFrame([total])], ignore_index=True)


def run_changes(records: PathLike, goal: str = "ndr", threshold: float = CHANGE_FLAG) -> pd.DataFrame:
    """Each configuration's mean rate in the latest completed run against the previous one.

    Parameters
    ----------
    records : path
        A records file with one or more completed runs (earlier runs stay in the file).
    goal : str
        Search goal whose ``throughput_pps`` is compared (``ndr``, ``mrr``).
    threshold : float
        Relative change above which a row is ``flagged``.

    Returns
    -------
    pandas.DataFrame
        ``model``, the configuration labels present (``pinning``, ``numa``, ...),
        ``frame_size``, ``previous_pps``, ``latest_pps`` (means over
        repetitions, packets/s per direction), ``change`` (latest / previous -
        1), ``flagged`` (``|change| > threshold``), ``previous_run``,
        ``latest_run``. Only configurations measured in both runs; empty when
        there are fewer than two completed runs.
    """
    s = results.searches_frame(records, run="all")
    s = s[(s["goal"] == goal) & s["throughput_pps"].notna()]
    run_ids = list(dict.fromkeys(s["run_id"]))
    cols_cfg = [c for c in ["model", *results.CONFIG_LABELS, "frame_size"] if c in s.columns and s[c].notna().any()]
    cols = [*cols_cfg, "previous_pps", "latest_pps", "change", "flagged", "previous_run", "latest_run"]
    if len(run_ids) < 2:
        return pd.DataFrame(columns=cols)
    prev, last = run_ids[-2:]
    s = s.assign(frame_size=s["frame_size"].astype(str))
    means = {rid: s[s["run_id"] == rid].groupby(cols_cfg, dropna=False)["throughput_pps"].mean()
             for rid in (prev, last)}
    both = pd.concat({"previous_pps": means[prev], "latest_pps": means[last]}, axis=1).dropna().reset_index()
    both["change"] = both["latest_pps"] / both["previous_pps"] - 1.0
    both["flagged"] = both["change"].abs() > threshold
    both["previous_run"], both["latest_run"] = prev, last
    return both[cols]


def changes_text(changes: pd.DataFrame, threshold: float = CHANGE_FLAG) -> pd.DataFrame:
    """:func:`run_changes` rows that are flagged, formatted (kpps, change in %)."""
    flagged = changes[changes["flagged"].astype(bool)] if len(changes) else changes
    out = pd.DataFrame(index=range(len(flagged)))
    f = flagged.reset_index(drop=True)
    for c in [c for c in f.columns if c in KEY_NAMES]:
        out[KEY_NAMES[c]] = f[c].map(_plain)
    out["previous run [kpps]"] = (f["previous_pps"] / 1e3).map(lambda v: f"{v:.1f}")
    out["latest run [kpps]"] = (f["latest_pps"] / 1e3).map(lambda v: f"{v:.1f}")
    out["change [%]"] = (f["change"] * 100).map(lambda v: f"{v:+.1f}")
    return out


# ---------------------------------------------------------------------------
# latency
# ---------------------------------------------------------------------------
def latency_text(table: pd.DataFrame) -> pd.DataFrame:
    """Latency percentiles per model (and configuration, frame size, load), one column per percentile.

    Parameters
    ----------
    table : pandas.DataFrame
        ``experiment_<x>_latency.csv`` (:func:`nfvlab.latency.latency_percentiles`):
        one row per point and percentile, values in ns.

    Returns
    -------
    pandas.DataFrame
        Text: the key columns present that vary (``model`` always; configuration
        labels, ``frame size [B]``, ``goal``, ``load [% of rate]``), ``n``, then
        one column per percentile ``"p50 [µs]"`` .. ``"p99.9 [µs]"``: mean over
        repetitions [95 % CI] in microseconds (:func:`interval_text`). Keys with
        one value in every row are left out and named in ``attrs["fixed"]``
        (e.g. ``"goal ndr, pinning plan"``).
    """
    keys = [c for c in ["model", *results.CONFIG_LABELS, "frame_size", "goal", "load_fraction"] if c in table.columns]
    fixed = {k: table[k].iloc[0] for k in keys[1:] if table[k].nunique(dropna=False) == 1 and len(table)}
    keys = [k for k in keys if k not in fixed]
    t = table.assign(load_fraction=table["load_fraction"] * 100) if "load_fraction" in table.columns else table
    t = t.assign(cell=[interval_text(m, lo, hi) for m, lo, hi in zip(t["mean_ns"], t["ci_low_ns"], t["ci_high_ns"])])
    order = list(dict.fromkeys(t["percentile"]))
    wide = t.pivot_table(index=keys, columns="percentile", values="cell", aggfunc="first", sort=False)
    n = t.groupby(keys, sort=False, dropna=False)["n"].max()
    wide = wide.reindex(columns=order).join(n).reset_index()
    out = pd.DataFrame({KEY_NAMES.get(k, k): wide[k].map(_plain) for k in keys})
    out["n"] = wide["n"].map(_plain)
    for p in order:
        out[f"{p} [µs]"] = wide[p].fillna("—")
    out.attrs["fixed"] = ", ".join(f"{KEY_NAMES.get(k, k)} {_plain(v)}" for k, v in fixed.items())
    return out


# ---------------------------------------------------------------------------
# sections
# ---------------------------------------------------------------------------
def two_labs(tables_dir: PathLike = "data/tables", letter: str = "a") -> Optional[pd.DataFrame]:
    """Experiment ``letter`` (one with a ``kubernetes_table``) on the embedded lab and on the
    Kubernetes lab, side by side: that table of each lab.

    Returns
    -------
    pandas.DataFrame or None
        ``model``, ``frame_size``, then per lab (``embedded_``, ``kubernetes_``):
        ``status``, ``n``, ``mean_pps``, ``ci_low_pps``, ``ci_high_pps``; and
        ``kubernetes_vs_embedded`` (ratio of the means, where both were measured).
        None when either table is missing.
    """
    base, name = Path(tables_dir), f"experiment_{letter}_{experiments.get(letter).kubernetes_table}.csv"
    paths = {"embedded": _own_dir(base, letter) / name, "kubernetes": base / kubernetes_stem(letter) / name}
    if not all(p.exists() for p in paths.values()):
        return None
    cols = ["status", "n", "mean_pps", "ci_low_pps", "ci_high_pps"]
    frames = [_read(p)[["model", "frame_size", *cols]].rename(columns={c: f"{lab}_{c}" for c in cols})
              for lab, p in paths.items()]
    both = frames[0].merge(frames[1], on=["model", "frame_size"], how="outer")
    both["kubernetes_vs_embedded"] = both["kubernetes_mean_pps"] / both["embedded_mean_pps"]
    return both


def two_labs_text(both: pd.DataFrame) -> pd.DataFrame:
    """:func:`two_labs` as text: NDR [kpps] mean [95 % CI] per lab ("—" and the reason where none), ratio."""
    out = pd.DataFrame({"model": both["model"], "frame size [B]": both["frame_size"].map(_plain)})
    for lab in ("embedded", "kubernetes"):
        ok = both[f"{lab}_status"].eq("measured")
        out[f"{lab} NDR [kpps] mean [95 % CI]"] = [
            interval_text(m, lo, hi) if k else f"— ({status_kind(s)})"
            for m, lo, hi, k, s in zip(both[f"{lab}_mean_pps"], both[f"{lab}_ci_low_pps"],
                                       both[f"{lab}_ci_high_pps"], ok, both[f"{lab}_status"])]
    out["Kubernetes / embedded"] = both["kubernetes_vs_embedded"].map(lambda v: "—" if _num(v) is None
                                                                      else f"{v:.2f}")
    why = [("; ".join(f"{lab}: {s}" for lab, s in (("embedded", e), ("kubernetes", k)) if s != "measured"))
           for e, k in zip(both["embedded_status"], both["kubernetes_status"])]
    if any(why):
        out["why no value"] = why
    return out.reset_index(drop=True)


def _table_sections(caption: str, table: pd.DataFrame, uid: str, text: str = "") -> list[Section]:
    keys = [c for c in table.columns if c in KEY_NAMES.values()]
    parts = split_columns(table, keys)
    clipped = table.apply(lambda col: col.astype(str).str.contains(f"\\{CLIPPED_MARK},", regex=True)).any().any()
    fixed = f"All rows: {table.attrs['fixed']}." if table.attrs.get("fixed") else ""
    note = " ".join(x for x in (text, fixed, CLIPPED_NOTE if clipped else "") if x)
    if len(parts) == 1:
        return [Section(caption, note, styled(table, uid), [])]
    return [Section(f"{caption} (part {i} of {len(parts)})", note if i == 1 else "",
                    styled(part, f"{uid}p{i}"), []) for i, part in enumerate(parts, 1)]


def _goal_of(table_path: Path) -> str:
    """The goal an experiment's params chose (F: ``mrr`` or ``ndr``), from its first table's ``goal`` column."""
    table = _read(table_path) if table_path.exists() else pd.DataFrame()
    goals = table["goal"].dropna() if "goal" in table.columns else table
    return str(goals.iloc[0]) if len(goals) else "ndr"


def experiment_sections(letter: str, tables_dir: PathLike, figures_dir: PathLike,
                        records_dir: Optional[PathLike] = None) -> list[Section]:
    """The sections of one experiment: its text and figures, each table formatted, latency, changes, gaps."""
    exp = experiments.get(letter)
    title, text = exp.title, exp.text
    # The DVC pipeline keeps each experiment's outputs in its own folder (experiment_<x>/).
    tables_dir, fig_dir = _own_dir(Path(tables_dir), letter), _own_dir(Path(figures_dir) / "experiments", letter)
    # Latency figures go with the latency table, the experiment's own figures with its text.
    latency_figures = sorted(fig_dir.glob(f"experiment_{letter}_latency_*.png"))
    figures = [f for f in sorted(fig_dir.glob(f"experiment_{letter}_*.png")) if f not in latency_figures]
    paths = [tables_dir / f"experiment_{letter}_{name}.csv" for name in exp.table_names]
    if not any(p.exists() for p in paths):
        return [Section(title, f"{text}\n\n*Not run yet*: no `experiment_{letter}_*.csv` in `{tables_dir}`.",
                        None, [])]
    out = [Section(title, text, None, figures)]
    goal = exp.goal or _goal_of(paths[0])
    rate = goal.upper()
    frames = []
    captions = {**CAPTIONS, **exp.captions}
    for name, p in zip(exp.table_names, paths):
        if not p.exists():
            out.append(Section(captions[name], f"*Not run yet*: `{p.name}` is missing.", None, []))
            continue
        frames.append(_read(p))
        if "goal" in frames[-1].columns and frames[-1]["goal"].nunique(dropna=False) <= 1:
            frames[-1] = frames[-1].drop(columns="goal")  # said once, in the rate's header
        if name == "latency":
            if frames[-1]["mean_ns"].notna().any():
                out += _table_sections(captions[name], latency_text(frames[-1]), f"{letter}_{name}")
                out[-1] = out[-1]._replace(figures=latency_figures)
            else:
                out.append(Section(captions[name], "*No latency trials* in these records (probes off, or "
                                   "recorded before latency under load).", None, []))
            continue
        out += _table_sections(captions[name], format_table(frames[-1], rate), f"{letter}_{name}")
    records = _records_dir(tables_dir.parent if tables_dir.name == f"experiment_{letter}" else tables_dir,
                           records_dir) / f"experiment_{letter}.jsonl"
    if records.exists():
        ch = run_changes(records, goal)
        head = f"{title.split(':')[0]}: changes against the previous run"
        if ch.empty:
            out.append(Section(head, "No previous completed run in the records to compare with.", None, []))
        else:
            n_flag = int(ch["flagged"].sum())
            out.append(Section(
                head, f"{n_flag} of {len(ch)} configurations changed their mean {rate} by more than "
                      f"{CHANGE_FLAG:.0%} between run `{ch['previous_run'].iloc[0]}` and run "
                      f"`{ch['latest_run'].iloc[0]}` of `{records.name}`"
                      f"{' (listed below)' if n_flag else ''}. A large change between runs of the same code "
                      "and host says this host's numbers move more than their intervals suggest.",
                styled(changes_text(ch), f"{letter}_changes") if n_flag else None, []))
    if records.exists():
        out.append(validity_section(title.split(":")[0], records, f"{letter}_invalid"))
    missing = [f[f["status"] != "measured"] for f in frames if "status" in f.columns]
    n_missing = sum(len(m) for m in missing)
    out.append(Section(f"{title.split(':')[0]}: not realizable or not measured on this host",
                       f"{n_missing} configuration(s) without a value; the tables above show them as \"—\" "
                       "with the reason in *why no value*." if n_missing else "Every configuration was measured.",
                       None, []))
    return out


def invalid_trials_text(invalid: pd.DataFrame) -> pd.DataFrame:
    """Invalid trials counted per configuration (what :func:`nfvlab.results.invalid_trials_frame` lists)."""
    keys = [c for c in ["model", *results.CONFIG_LABELS, "frame_size"] if invalid[c].notna().any()]
    grouped = invalid.groupby(keys, dropna=False, sort=True)
    out = grouped.agg(invalid_trials=("rate_pps", "size"), longest_stall_ms=("stall_s", "max")).reset_index()
    out["longest_stall_ms"] = (out["longest_stall_ms"] * 1e3).map(lambda v: "—" if pd.isna(v) else f"{v:.1f}")
    out["last reason"] = grouped["reason"].last().values
    return out.rename(columns={c: _column_name(c) for c in keys}).rename(
        columns={"invalid_trials": "invalid trials", "longest_stall_ms": "longest stall [ms]"})


def validity_section(name: str, records: Path, uid: str) -> Section:
    """How many trials of the latest run were invalid (the generator off schedule), per configuration."""
    invalid = results.invalid_trials_frame(records)
    head = f"{name}: trial validity"
    if invalid.empty:
        return Section(head, "Every trial was valid: the generator offered each load on schedule.", None, [])
    return Section(head, f"{len(invalid)} trial(s) were invalid: the generator did not offer the load on "
                         "schedule (it stalled beyond what its schedule absorbs), so they are no measurement "
                         "of the DUT; each was recorded and repeated (`docs/methodology.md`, Invalid trials).",
                   styled(invalid_trials_text(invalid), uid), [])


def cni_table_text(table: pd.DataFrame) -> pd.DataFrame:
    """Experiment E's ``tcp`` or ``http`` table as text (:mod:`nfvlab.analysis_cni` columns).

    Key columns with units; ``"goodput [Gbit/s] mean [95 % CI]"`` (TCP) or
    ``"requests/s mean [95 % CI]"`` (HTTP), ``"n"``, ``"CV [%]"``, the other
    statistics with units (``"HTTP errors"`` only where wrk saw some); "—" and ``"why no value"`` (its kind, e.g. ``not realizable``)
    where a path was not measured.
    """
    t = table.reset_index(drop=True)
    measured = t["status"].eq("measured")
    out = pd.DataFrame({KEY_NAMES[c]: t[c].map(_plain) for c in t.columns if c in KEY_NAMES})
    if "mean_gbps" in t.columns:
        out["goodput [Gbit/s] mean [95 % CI]"] = [
            interval_text(m, lo, hi, scale=1, digits=2) if ok else "—"
            for m, lo, hi, ok in zip(t["mean_gbps"], t["ci_low_gbps"], t["ci_high_gbps"], measured)]
    else:
        out["requests/s mean [95 % CI]"] = [
            interval_text(m, lo, hi, scale=1, digits=0) if ok else "—"
            for m, lo, hi, ok in zip(t["mean_rps"], t["ci_low_rps"], t["ci_high_rps"], measured)]
    out["n"] = t["n"].map(_plain)
    out["CV [%]"] = [f"{float(v) * 100:.1f}" if ok and _num(v) is not None else "—" for v, ok in zip(t["cv"], measured)]
    names = {"pod_mtu_bytes": ("pod MTU [B]", "{:.0f}"), "retransmits_mean": ("TCP retransmits (mean)", "{:.1f}"),
             "transfer_gbps": ("transfer [Gbit/s]", "{:.2f}"), "latency_p99_us_mean": ("p99 latency [µs]", "{:.0f}"),
             "errors": ("HTTP errors", "{:.0f}")}
    for c, (name, fmt) in names.items():
        # Errors only when wrk saw some (the caption says "no errors" otherwise): keeps the table one part.
        if c in t.columns and not (c == "errors" and not (pd.to_numeric(t[c], errors="coerce").fillna(0) > 0).any()):
            out[name] = [fmt.format(float(v)) if ok and _num(v) is not None else "—" for v, ok in zip(t[c], measured)]
    if not measured.all():
        # The kind only: the reason is said once per data path in the section below the tables.
        out["why no value"] = [("" if ok else status_kind(s)) for s, ok in zip(t["status"], measured)]
    return out


def cni_sections(tables_dir: PathLike, figures_dir: PathLike) -> list[Section]:
    """Experiment E's sections: text and figures, the TCP and HTTP tables, what could not be built."""
    title, text = experiments.get("e").title, experiments.get("e").text
    tables_dir, fig_dir = _own_dir(Path(tables_dir), "e"), _own_dir(Path(figures_dir) / "experiments", "e")
    tcp, http = tables_dir / "experiment_e_tcp.csv", tables_dir / "experiment_e_http.csv"
    if not (tcp.exists() or http.exists()):
        return [Section(title, f"{text}\n\n*Not run yet*: no `experiment_e_*.csv` in `{tables_dir}`.", None, [])]
    out = [Section(title, text, None, sorted(fig_dir.glob("experiment_e_*.png")))]
    for name, path in (("tcp", tcp), ("http", http)):
        if path.exists():
            text = cni_table_text(_read(path))
            # cni_table_text shows the errors column only where wrk saw some: say "none" otherwise.
            clean = name == "http" and "HTTP errors" not in text.columns
            out += _table_sections(CAPTIONS[name], text, f"e_{name}",
                                   "wrk reported no errors (socket errors, non-2xx answers) in any run." if clean
                                   else "")
        else:
            out.append(Section(CAPTIONS[name], f"*Not run yet*: `{path.name}` is missing.", None, []))
    gaps = tables_dir / "experiment_e_not_realizable.csv"
    missing = _read(gaps) if gaps.exists() else pd.DataFrame()
    paths = missing.drop_duplicates(["data_path", "reason"]) if len(missing) else missing
    out.append(Section("Experiment E: not realizable or not measured on this host",
                       "; ".join(f"**{r.data_path}**: {r.reason}" for r in paths.itertuples()) + "."
                       if len(paths) else "Every data path was built.", None, []))
    return out


def _provenance_sections(records_dir: Path) -> list[Section]:
    prov = provenance_table(records_dir)
    if prov.empty:
        return [Section("Provenance of the local numbers",
                        f"{SCOPE_NOTE}\n\n*Unknown*: no completed run in `{records_dir}`.", None, [])]
    # Transposed (one column per experiment) so every field fits the page.
    wide = prov.set_index("experiment").T.rename(index=_PROVENANCE_NAMES)
    wide = wide.rename_axis(None, axis=1).reset_index().rename(columns={"index": "field"}).astype(str)
    return [Section("Provenance of the local numbers", SCOPE_NOTE, styled(wide, "provenance"), [])]


def _claims_sections(tables_dir: Path) -> list[Section]:
    claims = claims_table(tables_dir)
    if claims.empty:
        return [Section("Claims summary", "*Not run yet*: no `experiment_<x>_claims.csv`.", None, [])]
    d = current_design()
    text = ("How the draft's claims fare on this host (docs/methodology.md, \"Claims\"; each claim's pairs "
            "tested with Welch's t on the log rates, the search's goal width counted as measurement "
            f"uncertainty, Holm-adjusted at {d.alpha:g}): *holds* (every pair larger in the claimed order), "
            "*contradicted* (a pair significantly reversed, or shown equal within "
            f"+-{d.order_margin:.0%}: no practical difference; \"about equal\" claims: shown beyond "
            f"+-{d.equivalence_margin:.0%}), *inconclusive* (neither, at this n: the table gives the smallest "
            f"difference detectable at this n with {d.power:.0%} power and the repetitions per configuration "
            "that would likely decide it), *not testable* (a configuration the claim needs cannot run here; "
            "the reason is in *reason* / *detail*).")
    keep = ["experiment", "claim", "condition", "verdict", "reason", "p_adjusted", "effect_size", "effect_size_kind",
            "n", "mde", "n_needed"]
    return [Section("Claims summary", text, styled(claims_summary(claims), "claims_summary"), []),
            Section("Claims: verdict, reason and what would decide it", "p (Holm): the deciding pair's "
                    "Holm-adjusted p-value; effect: its ratio of geometric means - 1; \"—\": no test or not "
                    "inconclusive.",
                    styled(format_table(claims[[c for c in keep if c in claims.columns]]), "claims_all"), [])]


def anchor(title: str) -> str:
    """The id nbconvert gives the ``## title`` heading (spaces -> ``-``), percent-encoded for a link."""
    return "#" + title.replace("%", "%25").replace(" ", "-").replace("(", "%28").replace(")", "%29")


def contents(titles: Sequence[str]) -> str:
    """The contents list (Markdown): one numbered link per section title."""
    return "\n".join(f"{i}. [{t}]({anchor(t)})" for i, t in enumerate(titles, 1))


def sections(tables_dir: PathLike = "data/tables", figures_dir: PathLike = "figures",
             records_dir: Optional[PathLike] = None) -> list[Section]:
    """The whole report, in order.

    Parameters
    ----------
    tables_dir : path
        Where ``nfvlab analyze`` wrote ``experiment_<x>_<name>.csv``.
    figures_dir : path
        Holds ``experiments/experiment_<x>_*.png`` and ``reference/*.png``.
    records_dir : path, optional
        The raw records (``experiment_<x>.jsonl``), for the provenance and the
        run-to-run changes; default ``<tables_dir>/../raw`` (``data/raw``).

    Returns
    -------
    list of Section
        ``(title, text (Markdown), table (Styler) or None, [png paths])``: the
        provenance (from the records) with the scope note, the contents, the
        claims summary and every claim's verdict, reason and what would decide it, experiments A to
        D (each: text and figures, every table formatted, latency percentiles,
        changes against the previous run, the count of what has no value; or
        "not run yet"), experiments A and C on two labs, then the published reference
        figures last.
    """
    rec_dir = _records_dir(tables_dir, records_dir)
    body = _claims_sections(Path(tables_dir))
    for letter, exp in experiments.REGISTRY.items():
        # E measures goodput and request rates with tools, not NDR searches: its own tables.
        body += (cni_sections(tables_dir, figures_dir) if exp.kind == "tools"
                 else experiment_sections(letter, tables_dir, figures_dir, rec_dir))
        if exp.kubernetes_table:
            both = two_labs(tables_dir, letter)
            body.append(Section(
                f"Experiment {letter.upper()} on two labs: the embedded lab and real Kubernetes pods",
                "The same scenarios and params, realized as network namespaces (embedded lab) and as "
                "pods with Multus secondary networks on a single-node Kubernetes cluster on this host, "
                "with the same generator (`docs/kubernetes.md`). Models a lab cannot realize say why."
                if both is not None else "*Not run yet*: the `experiment_kubernetes` and "
                f"`analysis_kubernetes` stages write `data/tables/{kubernetes_stem(letter)}/`.",
                styled(two_labs_text(both), "two_labs") if both is not None else None, []))
    ref = sorted((Path(figures_dir) / "reference").glob("*.png"))
    body.append(Section("Published reference figures (seed documents, as published)",
                        "The draft's Figures 10-17 and the density note's matrices, rendered from "
                        "`data/reference/`: the published testbeds, not this host." if ref else
                        "*Not rendered yet* (`nfvlab figures reference`).", None, ref))
    head = _provenance_sections(rec_dir)
    # Contents: the headed items (experiments, claims, reference), not every table caption.
    listed = [s.title for s in head + body if s.title.startswith(("Provenance", "Claims summary", "Experiment",
                                                                   "Published"))
              and not s.title.startswith(tuple(CAPTIONS.values()))]
    return head + [Section("Contents", contents(listed), None, [])] + body
