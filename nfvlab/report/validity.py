"""Trial validity: the latest run's invalid trials (the generator off schedule), per configuration,
and the loads the generator could not offer at all."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import pandas as pd

from nfvlab import results
from nfvlab.report.section import Section
from nfvlab.report.tables import styled
from nfvlab.report.values import column_name


def invalid_trials_text(invalid: pd.DataFrame, searches: Optional[pd.DataFrame] = None) -> pd.DataFrame:
    """Invalid trials counted per configuration (what :func:`nfvlab.results.invalid_trials_frame` lists).

    With ``searches`` (:func:`nfvlab.results.searches_frame`), a column ``searches stopped by
    an unoffered load`` counts the configuration's search results whose ``not_offered_pps`` is set.
    """
    keys = [c for c in ["model", *results.CONFIG_LABELS, "frame_size"] if invalid[c].notna().any()]
    grouped = invalid.groupby(keys, dropna=False, sort=True)
    out = grouped.agg(invalid_trials=("rate_pps", "size"), longest_stall_ms=("stall_s", "max")).reset_index()
    out["longest_stall_ms"] = (out["longest_stall_ms"] * 1e3).map(lambda v: "—" if pd.isna(v) else f"{v:.1f}")
    out["last reason"] = grouped["reason"].last().values
    if searches is not None:
        # One search writes a result per goal: count searches (a repetition), not goal results.
        hit = searches[searches["not_offered_pps"].notna()].drop_duplicates([*keys, "repetition"])
        counts = hit.groupby(keys, dropna=False).size().rename("not_offered")
        out = out.merge(counts.reset_index(), on=keys, how="left")
        out["not_offered"] = out["not_offered"].fillna(0).astype(int)
    return out.rename(columns={c: column_name(c) for c in keys}).rename(
        columns={"invalid_trials": "invalid trials", "longest_stall_ms": "longest stall [ms]",
                 "not_offered": "searches stopped by an unoffered load"})


def validity_section(name: str, records: Path, uid: str) -> Section:
    """How many trials of the latest run were invalid (the generator off schedule), per configuration."""
    invalid = results.invalid_trials_frame(records)
    head = f"{name}: trial validity"
    if invalid.empty:
        return Section(head, "Every trial was valid: the generator offered each load on schedule.", None, [])
    searches = results.searches_frame(records)
    stopped = int(searches.drop_duplicates(
        ["model", *results.CONFIG_LABELS, "frame_size", "repetition"])["not_offered_pps"].notna().sum())
    text = (f"{len(invalid)} trial(s) were invalid: the generator did not offer the load on schedule (it "
            "stalled beyond what its schedule absorbs), so they are no measurement of the DUT; each was "
            "recorded and repeated (`docs/methodology.md`, Invalid trials).")
    if stopped:
        text += (f" In {stopped} search(es) every repeat at one load was invalid: that load is an upper "
                 "bound the generator set, and the result is flagged generator-limited.")
    return Section(head, text, styled(invalid_trials_text(invalid, searches), uid), [])
