"""Experiment E's sections: goodput and request-rate tables (tool runs, not searches), what could
not be built."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from nfvlab import experiments
from nfvlab.analysis import status_kind
from nfvlab.report.files import PathLike, own_dir, read_table
from nfvlab.report.section import Section, table_sections
from nfvlab.report.tables import CAPTIONS
from nfvlab.report.values import KEY_NAMES, interval_text, num, plain


def cni_table_text(table: pd.DataFrame) -> pd.DataFrame:
    """Experiment E's ``tcp`` or ``http`` table as text (:mod:`nfvlab.analysis_cni` columns).

    Key columns with units; ``"goodput [Gbit/s] mean [95 % CI]"`` (TCP) or
    ``"requests/s mean [95 % CI]"`` (HTTP), ``"n"``, ``"CV [%]"``, the other
    statistics with units (``"HTTP errors"`` only where wrk saw some); "—" and ``"why no value"`` (its kind, e.g. ``not realizable``)
    where a path was not measured.
    """
    t = table.reset_index(drop=True)
    measured = t["status"].eq("measured")
    out = pd.DataFrame({KEY_NAMES[c]: t[c].map(plain) for c in t.columns if c in KEY_NAMES})
    if "mean_gbps" in t.columns:
        out["goodput [Gbit/s] mean [95 % CI]"] = [
            interval_text(m, lo, hi, scale=1, digits=2) if ok else "—"
            for m, lo, hi, ok in zip(t["mean_gbps"], t["ci_low_gbps"], t["ci_high_gbps"], measured)]
    else:
        out["requests/s mean [95 % CI]"] = [
            interval_text(m, lo, hi, scale=1, digits=0) if ok else "—"
            for m, lo, hi, ok in zip(t["mean_rps"], t["ci_low_rps"], t["ci_high_rps"], measured)]
    out["n"] = t["n"].map(plain)
    out["CV [%]"] = [f"{float(v) * 100:.1f}" if ok and num(v) is not None else "—" for v, ok in zip(t["cv"], measured)]
    names = {"pod_mtu_bytes": ("pod MTU [B]", "{:.0f}"), "retransmits_mean": ("TCP retransmits (mean)", "{:.1f}"),
             "transfer_gbps": ("transfer [Gbit/s]", "{:.2f}"), "latency_p99_us_mean": ("p99 latency [µs]", "{:.0f}"),
             "errors": ("HTTP errors", "{:.0f}")}
    for c, (name, fmt) in names.items():
        # Errors only when wrk saw some (the caption says "no errors" otherwise): keeps the table one part.
        if c in t.columns and not (c == "errors" and not (pd.to_numeric(t[c], errors="coerce").fillna(0) > 0).any()):
            out[name] = [fmt.format(float(v)) if ok and num(v) is not None else "—" for v, ok in zip(t[c], measured)]
    if not measured.all():
        # The kind only: the reason is said once per data path in the section below the tables.
        out["why no value"] = [("" if ok else status_kind(s)) for s, ok in zip(t["status"], measured)]
    return out


def cni_sections(tables_dir: PathLike, figures_dir: PathLike) -> list[Section]:
    """Experiment E's sections: text and figures, the TCP and HTTP tables, what could not be built."""
    title, text = experiments.get("e").title, experiments.get("e").text
    tables_dir, fig_dir = own_dir(Path(tables_dir), "e"), own_dir(Path(figures_dir) / "experiments", "e")
    tcp, http = tables_dir / "experiment_e_tcp.csv", tables_dir / "experiment_e_http.csv"
    if not (tcp.exists() or http.exists()):
        return [Section(title, f"{text}\n\n*Not run yet*: no `experiment_e_*.csv` in `{tables_dir}`.", None, [])]
    out = [Section(title, text, None, sorted(fig_dir.glob("experiment_e_*.png")))]
    for name, path in (("tcp", tcp), ("http", http)):
        if path.exists():
            text = cni_table_text(read_table(path))
            # cni_table_text shows the errors column only where wrk saw some: say "none" otherwise.
            clean = name == "http" and "HTTP errors" not in text.columns
            out += table_sections(CAPTIONS[name], text, f"e_{name}",
                                  "wrk reported no errors (socket errors, non-2xx answers) in any run." if clean
                                  else "")
        else:
            out.append(Section(CAPTIONS[name], f"*Not run yet*: `{path.name}` is missing.", None, []))
    gaps = tables_dir / "experiment_e_not_realizable.csv"
    missing = read_table(gaps) if gaps.exists() else pd.DataFrame()
    paths = missing.drop_duplicates(["data_path", "reason"]) if len(missing) else missing
    out.append(Section("Experiment E: not realizable or not measured on this host",
                       "; ".join(f"**{r.data_path}**: {r.reason}" for r in paths.itertuples()) + "."
                       if len(paths) else "Every data path was built.", None, []))
    return out
