"""Trial validity: the latest run's invalid trials (the generator off schedule), per configuration."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from nfvlab import results
from nfvlab.report.section import Section
from nfvlab.report.tables import styled
from nfvlab.report.values import column_name


def invalid_trials_text(invalid: pd.DataFrame) -> pd.DataFrame:
    """Invalid trials counted per configuration (what :func:`nfvlab.results.invalid_trials_frame` lists)."""
    keys = [c for c in ["model", *results.CONFIG_LABELS, "frame_size"] if invalid[c].notna().any()]
    grouped = invalid.groupby(keys, dropna=False, sort=True)
    out = grouped.agg(invalid_trials=("rate_pps", "size"), longest_stall_ms=("stall_s", "max")).reset_index()
    out["longest_stall_ms"] = (out["longest_stall_ms"] * 1e3).map(lambda v: "—" if pd.isna(v) else f"{v:.1f}")
    out["last reason"] = grouped["reason"].last().values
    return out.rename(columns={c: column_name(c) for c in keys}).rename(
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
