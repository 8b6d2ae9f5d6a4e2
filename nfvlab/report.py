"""The study report: every experiment's tables and figures, in order, with short text.

``notebooks/report.ipynb`` only displays :func:`sections`; the logic lives here so
tests reach it. An experiment whose tables are not written yet gets a "not run
yet" section instead of failing.
"""
from __future__ import annotations

from pathlib import Path
from typing import NamedTuple, Optional, Union

import pandas as pd

from nfvlab.analysis import TABLE_NAMES

PathLike = Union[str, Path]

HOST_NOTE = (
    "**Local numbers describe this host only** -- a 2 vCPU VM, veth links, a software traffic "
    "generator with its own ceiling -- and **never** the draft's 40 GbE testbed or the density "
    "note's servers. Published values stand beside them to compare the *shape* of a result "
    "(which configuration is faster), not its magnitude. A configuration this host cannot realize "
    "is listed with the reason, never with a number; a claim that needs one is *not testable on "
    "this host*."
)

#: Per experiment: title and the text shown above its tables.
EXPERIMENTS = {
    "a": ("Experiment A: networking models x frame sizes (draft Appendix A, Figure 10)",
          "Zero-loss throughput (NDR, packets/s per direction) of each container networking model, "
          "mean over repetitions with a 95 % t-interval, and claim A.2 checked with Welch / "
          "Mann-Whitney tests (Holm-adjusted)."),
    "b": ("Experiment B: CPU pinning x NUMA alignment with a noisy neighbour (Appendix B, Figure 13)",
          "NDR at 1518 B of the user-space model (local stand-in for VPP) for each CPU pinning mode "
          "and NUMA scenario, with the draft's Figure 13 (Gbps) beside. Claims B.2: exclusive > "
          "shared > none; s1 best while s2 and s4 degrade."),
    "c": ("Experiment C: networking model combination and multi-pod NUMA (Appendix C, Figures 16, 17)",
          "NDR of the two-pod chains (user-space only vs direct N-S + user-space E-W) over frame "
          "sizes and NUMA scenarios, with Figures 16 and 17 beside. Claims C.2: combined > "
          "user-space only; s1 best, splitting pods across NUMA nodes degrades."),
    "d": ("Experiment D: NFV service density matrix (seed 001)",
          "Maximum receive rate (MRR, packets/s per direction) per topology and frame size over "
          "service instances x NFs per instance, with the density note's published cells beside "
          "and the cores the note's formula allots each cell next to this host's CPU count."),
}
#: Captions of the tables (``experiment_<x>_<name>.csv``).
CAPTIONS = {
    "throughput": "Throughput per model and frame size (this host)",
    "published": "Published values (draft Figure 10, 40 GbE testbed)",
    "pinning_numa": "Throughput per pinning mode and NUMA scenario (this host; draft Figure 13 beside)",
    "combination": "Throughput per model and frame size at NUMA s1 (this host; draft Figure 16 beside)",
    "numa": "Throughput per NUMA scenario at 1518 B (this host; draft Figure 17 beside)",
    "mrr": "MRR matrix cells (this host; density note cells and core usage beside)",
    "latency": "Latency under load (this host): one-way latency percentiles p50 .. p99.9 of the probes at "
               "fractions of the rate found (load_fraction; 0 = probes only), mean, sd and 95 % CI over "
               "repetitions (n), ns",
    "claims": "The draft's claims on this host (verdict: holds / contradicted / inconclusive / not testable, "
              "with the deciding pair's test, Holm-adjusted p, effect size and n)",
}
#: Where experiment A's tables of the Kubernetes lab live (the ``analysis_kubernetes`` stage).
KUBERNETES_A = "experiment_a_kubernetes"


def two_labs(tables_dir: PathLike = "data/tables") -> Optional[pd.DataFrame]:
    """Experiment A on the embedded lab and on the Kubernetes lab, side by side.

    Returns
    -------
    pandas.DataFrame or None
        ``model``, ``frame_size``, then per lab (``embedded_``, ``kubernetes_``):
        ``status``, ``n``, ``mean_pps``, ``ci_low_pps``, ``ci_high_pps``; and
        ``kubernetes_vs_embedded`` (ratio of the means, where both were measured).
        None when either table is missing.
    """
    base = Path(tables_dir)
    paths = {"embedded": _own_dir(base, "a") / "experiment_a_throughput.csv",
             "kubernetes": base / KUBERNETES_A / "experiment_a_throughput.csv"}
    if not all(p.exists() for p in paths.values()):
        return None
    cols = ["status", "n", "mean_pps", "ci_low_pps", "ci_high_pps"]
    frames = [_read(p)[["model", "frame_size", *cols]].rename(columns={c: f"{lab}_{c}" for c in cols})
              for lab, p in paths.items()]
    both = frames[0].merge(frames[1], on=["model", "frame_size"], how="outer")
    both["kubernetes_vs_embedded"] = both["kubernetes_mean_pps"] / both["embedded_mean_pps"]
    return both


class Section(NamedTuple):
    """One item of the report, displayed in order."""

    title: str
    text: str
    table: Optional[pd.DataFrame]
    figures: list[Path]


def _read(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, keep_default_na=True)


def _not_realizable(frames: list[pd.DataFrame]) -> Optional[pd.DataFrame]:
    """Rows of the experiment's tables without a value, with their status (the reason)."""
    parts = [f[f["status"] != "measured"] for f in frames if "status" in f.columns]
    parts = [p.dropna(axis=1, how="all") for p in parts if len(p)]
    return pd.concat(parts, ignore_index=True) if parts else None


def _own_dir(base: Path, letter: str) -> Path:
    own = base / f"experiment_{letter}"
    return own if own.is_dir() else base


def experiment_sections(letter: str, tables_dir: PathLike, figures_dir: PathLike) -> list[Section]:
    """The sections of one experiment: its text, each table, its figures, what was not realizable."""
    title, text = EXPERIMENTS[letter]
    # The DVC pipeline keeps each experiment's outputs in its own folder (experiment_<x>/).
    tables_dir, fig_dir = _own_dir(Path(tables_dir), letter), _own_dir(Path(figures_dir) / "experiments", letter)
    figures = sorted(fig_dir.glob(f"experiment_{letter}_*.png"))
    paths = [tables_dir / f"experiment_{letter}_{name}.csv" for name in TABLE_NAMES[letter]]
    if not any(p.exists() for p in paths):
        return [Section(title, f"{text}\n\n*Not run yet*: no `experiment_{letter}_*.csv` in `{tables_dir}`.",
                        None, [])]
    out = [Section(title, text, None, figures)]
    frames = []
    for name, p in zip(TABLE_NAMES[letter], paths):
        if not p.exists():
            out.append(Section(CAPTIONS[name], f"*Not run yet*: `{p.name}` is missing.", None, []))
            continue
        frames.append(_read(p))
        if name == "latency" and frames[-1].empty:
            out.append(Section(CAPTIONS[name], "*No latency trials* in these records (probes off, or "
                               "recorded before latency under load).", None, []))
            continue
        out.append(Section(CAPTIONS[name], "", frames[-1], []))
    nr = _not_realizable(frames)
    out.append(Section(f"{title.split(':')[0]}: not realizable or not measured on this host",
                       "Each row says why (the `status` column)." if nr is not None else
                       "Every configuration was measured.", nr, []))
    return out


def sections(tables_dir: PathLike = "data/tables", figures_dir: PathLike = "figures") -> list[Section]:
    """The whole report, in order.

    Parameters
    ----------
    tables_dir : path
        Where ``nfvlab analyze`` wrote ``experiment_<x>_<name>.csv``.
    figures_dir : path
        Holds ``experiments/experiment_<x>_*.png`` and ``reference/*.png``.

    Returns
    -------
    list of Section
        ``(title, text (Markdown), table or None, [png paths])``: the host note,
        the published reference figures, then experiments A to D (each: text and
        figures, every table, the rows not realizable with reasons; or "not run
        yet").
    """
    ref = sorted((Path(figures_dir) / "reference").glob("*.png"))
    out = [Section("Scope of the local numbers", HOST_NOTE, None, []),
           Section("Published reference figures (seed documents, as published)",
                   "The draft's Figures 10-17 and the density note's matrices, rendered from "
                   "`data/reference/`." if ref else "*Not rendered yet* (`nfvlab figures reference`).",
                   None, ref)]
    for letter in EXPERIMENTS:
        out += experiment_sections(letter, tables_dir, figures_dir)
        if letter == "a":
            both = two_labs(tables_dir)
            out.append(Section(
                "Experiment A on two labs: the embedded lab and real Kubernetes pods",
                "The same scenarios and params, realized as network namespaces (embedded lab) and as "
                "pods with Multus secondary networks on a single-node Kubernetes cluster on this host, "
                "with the same generator (`docs/kubernetes.md`). Models a lab cannot realize say why."
                if both is not None else "*Not run yet*: the `experiment_kubernetes` and "
                "`analysis_kubernetes` stages write `data/tables/experiment_a_kubernetes/`.", both, []))
    return out
