"""Tables as text, ready to show: results and claims tables formatted (:func:`format_table`),
wide tables split into parts, a Styler without index column; the tables' captions."""
from __future__ import annotations

from typing import Sequence

import pandas as pd

from nfvlab.claims import EFFECT_KIND as RATIO
from nfvlab.claims import current_design
from nfvlab.report.values import KEY_NAMES, column_name, flag_text, interval_text, num, plain

#: A table wider than this many columns is split into parts that repeat the key columns.
MAX_COLUMNS = 10
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
            out[KEY_NAMES[c]] = t[c].map(plain)
        out[f"{rate} [kpps] mean [95 % CI]"] = [
            interval_text(m, lo, hi) if ok else "—"
            for m, lo, hi, ok in zip(t["mean_pps"], t["ci_low_pps"], t["ci_high_pps"], measured)]
        out["n"] = t["n"].map(plain)
        out["CV [%]"] = [f"{float(v) * 100:.1f}" if ok and num(v) is not None else "—"
                         for v, ok in zip(t["cv"], measured)]
        if "gbps_l1" in t.columns:
            out["L1 [Gbps]"] = [f"{float(v):.3f}" if ok and num(v) is not None else "—"
                                for v, ok in zip(t["gbps_l1"], measured)]
        if "generator_limited" in t.columns:
            out["generator-limited"] = [flag_text(v) if ok else "—" for v, ok in zip(t["generator_limited"], measured)]
        if "n_irregular" in t.columns:
            out["irregular (RFC 9971)"] = [plain(v) if ok else "—" for v, ok in zip(t["n_irregular"], measured)]
        for c in t.columns:
            if c not in KEY_NAMES and c not in _RATE_STATS:
                out[column_name(c)] = t[c].map(lambda v: flag_text(v) if isinstance(v, bool) else plain(v))
        if not measured.all():
            out["why no value"] = [("" if ok else str(s)) for s, ok in zip(t["status"], measured)]
        return out
    for c in t.columns:
        if c == "p_adjusted":
            out["p (Holm)"] = t[c].map(lambda v: "—" if num(v) is None else f"{float(v):.3g}")
        elif c == "effect_size":
            out["effect"] = [_effect_text(v, k) for v, k in zip(t[c], t.get("effect_size_kind", [""] * len(t)))]
        elif c == "mde":
            out["detectable at this n [ratio - 1]"] = [_effect_text(v, RATIO) for v in t[c]]
        elif c == "n_needed":
            out["repetitions that would decide"] = [
                ("—" if v != "inconclusive" else f"> {current_design().n_max}" if num(n) is None else plain(n))
                for n, v in zip(t[c], t.get("verdict", [""] * len(t)))]
        elif c == "effect_size_kind":
            continue
        else:
            out[column_name(c)] = t[c].map(plain)
    return out


def _effect_text(value, kind) -> str:
    """An effect size: ``+12.3 %`` for a ratio - 1 (a factor ``x4.5`` from 2 on), else ``+0.12 (kind)``."""
    if num(value) is None:
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
