"""Run-to-run changes: each configuration's mean rate in the latest completed run against the
previous run of the same records, those that moved more than :data:`CHANGE_FLAG` listed."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from nfvlab import results
from nfvlab.report.files import PathLike
from nfvlab.report.section import Section
from nfvlab.report.tables import styled
from nfvlab.report.values import KEY_NAMES, plain

#: A configuration whose mean rate changed by more than this fraction against the previous
#: completed run of the same records is flagged (:func:`run_changes`).
CHANGE_FLAG = 0.10


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
        out[KEY_NAMES[c]] = f[c].map(plain)
    out["previous run [kpps]"] = (f["previous_pps"] / 1e3).map(lambda v: f"{v:.1f}")
    out["latest run [kpps]"] = (f["latest_pps"] / 1e3).map(lambda v: f"{v:.1f}")
    out["change [%]"] = (f["change"] * 100).map(lambda v: f"{v:+.1f}")
    return out


def changes_section(name: str, records: Path, goal: str, uid: str) -> Section:
    """How the latest run's mean rates moved against the previous run's (:func:`run_changes`), the
    configurations that moved more than :data:`CHANGE_FLAG` listed."""
    ch = run_changes(records, goal)
    head = f"{name}: changes against the previous run"
    if ch.empty:
        return Section(head, "No previous completed run in the records to compare with.", None, [])
    n_flag = int(ch["flagged"].sum())
    return Section(
        head, f"{n_flag} of {len(ch)} configurations changed their mean {goal.upper()} by more than "
              f"{CHANGE_FLAG:.0%} between run `{ch['previous_run'].iloc[0]}` and run "
              f"`{ch['latest_run'].iloc[0]}` of `{records.name}`"
              f"{' (listed below)' if n_flag else ''}. A large change between runs of the same code "
              "and host says this host's numbers move more than their intervals suggest.",
        styled(changes_text(ch), uid) if n_flag else None, [])
