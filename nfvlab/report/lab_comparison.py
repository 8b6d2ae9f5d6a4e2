"""An experiment on two labs: its table on the embedded lab beside the same table on the
Kubernetes lab (the experiments with a ``kubernetes_table``)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import pandas as pd

from nfvlab import experiments
from nfvlab.analysis import status_kind
from nfvlab.report.files import PathLike, kubernetes_stem, own_dir, read_table
from nfvlab.report.section import Section
from nfvlab.report.tables import styled
from nfvlab.report.values import interval_text, num, plain


#: The status of a configuration the profile does not measure on that lab (``frame_sizes_by_lab``).
NOT_IN_PROFILE = "not measured: not in this profile on this lab (frame_sizes_by_lab)"


def two_labs(tables_dir: PathLike = "data/tables", letter: str = "a") -> Optional[pd.DataFrame]:
    """Experiment ``letter`` (one with a ``kubernetes_table``) on the embedded lab and on the
    Kubernetes lab, side by side: that table of each lab.

    Returns
    -------
    pandas.DataFrame or None
        ``model``, ``frame_size``, then per lab (``embedded_``, ``kubernetes_``):
        ``status``, ``n``, ``mean_pps``, ``ci_low_pps``, ``ci_high_pps``; and
        ``kubernetes_vs_embedded`` (ratio of the means, where both were measured). A row only one
        lab's table has (the profile measures the other at fewer frame sizes) has status
        :data:`NOT_IN_PROFILE` on the other. None when either table is missing.
    """
    base, name = Path(tables_dir), f"experiment_{letter}_{experiments.get(letter).kubernetes_table}.csv"
    paths = {"embedded": own_dir(base, letter) / name, "kubernetes": base / kubernetes_stem(letter) / name}
    if not all(p.exists() for p in paths.values()):
        return None
    cols = ["status", "n", "mean_pps", "ci_low_pps", "ci_high_pps"]
    frames = [read_table(p)[["model", "frame_size", *cols]].rename(columns={c: f"{lab}_{c}" for c in cols})
              for lab, p in paths.items()]
    both = frames[0].merge(frames[1], on=["model", "frame_size"], how="outer")
    for lab in paths:  # a frame size one lab's profile leaves out (params: frame_sizes_by_lab)
        both[f"{lab}_status"] = both[f"{lab}_status"].fillna(NOT_IN_PROFILE)
    both["kubernetes_vs_embedded"] = both["kubernetes_mean_pps"] / both["embedded_mean_pps"]
    return both


def two_labs_text(both: pd.DataFrame) -> pd.DataFrame:
    """:func:`two_labs` as text: NDR [kpps] mean [95 % CI] per lab ("—" and the reason where none), ratio."""
    out = pd.DataFrame({"model": both["model"], "frame size [B]": both["frame_size"].map(plain)})
    for lab in ("embedded", "kubernetes"):
        ok = both[f"{lab}_status"].eq("measured")
        out[f"{lab} NDR [kpps] mean [95 % CI]"] = [
            interval_text(m, lo, hi) if k else f"— ({status_kind(s)})"
            for m, lo, hi, k, s in zip(both[f"{lab}_mean_pps"], both[f"{lab}_ci_low_pps"],
                                       both[f"{lab}_ci_high_pps"], ok, both[f"{lab}_status"])]
    out["Kubernetes / embedded"] = both["kubernetes_vs_embedded"].map(lambda v: "—" if num(v) is None
                                                                      else f"{v:.2f}")
    why = [("; ".join(f"{lab}: {s}" for lab, s in (("embedded", e), ("kubernetes", k)) if s != "measured"))
           for e, k in zip(both["embedded_status"], both["kubernetes_status"])]
    if any(why):
        out["why no value"] = why
    return out.reset_index(drop=True)


def two_labs_section(tables_dir: PathLike, letter: str) -> Section:
    """Experiment ``letter`` on the two labs (:func:`two_labs`), or "not run yet" while either table is missing."""
    both = two_labs(tables_dir, letter)
    return Section(
        f"Experiment {letter.upper()} on two labs: the embedded lab and real Kubernetes pods",
        "The same scenarios and params, realized as network namespaces (embedded lab) and as "
        "pods with Multus secondary networks on a single-node Kubernetes cluster on this host, "
        "with the same generator (`docs/kubernetes.md`). Models a lab cannot realize say why; "
        "frame sizes a profile leaves out on one lab (the quick profile measures the Kubernetes "
        "lab at 64 B only: `frame_sizes_by_lab` in its params) say so."
        if both is not None else "*Not run yet*: the `experiment_kubernetes` and "
        f"`analysis_kubernetes` stages write `data/tables/{kubernetes_stem(letter)}/`.",
        styled(two_labs_text(both), "two_labs") if both is not None else None, [])
