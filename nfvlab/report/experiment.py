"""The sections of one searched experiment (NDR / MRR: A-D, F): its text and figures, each table
formatted, latency, changes against the previous run, trial validity, what has no value."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import pandas as pd

from nfvlab import experiments
from nfvlab.report.changes import changes_section
from nfvlab.report.files import PathLike, own_dir, read_table, records_dir_for
from nfvlab.report.latency import latency_text
from nfvlab.report.section import Section, table_sections
from nfvlab.report.tables import CAPTIONS, format_table
from nfvlab.report.validity import validity_section


def _goal_of(table_path: Path) -> str:
    """The goal an experiment's params chose (F: ``mrr`` or ``ndr``), from its first table's ``goal`` column."""
    table = read_table(table_path) if table_path.exists() else pd.DataFrame()
    goals = table["goal"].dropna() if "goal" in table.columns else table
    return str(goals.iloc[0]) if len(goals) else "ndr"


def experiment_sections(letter: str, tables_dir: PathLike, figures_dir: PathLike,
                        records_dir: Optional[PathLike] = None) -> list[Section]:
    """The sections of one experiment: its text and figures, each table formatted, latency, changes, gaps."""
    exp = experiments.get(letter)
    title, text = exp.title, exp.text
    # The DVC pipeline keeps each experiment's outputs in its own folder (experiment_<x>/).
    tables_dir, fig_dir = own_dir(Path(tables_dir), letter), own_dir(Path(figures_dir) / "experiments", letter)
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
        frames.append(read_table(p))
        if "goal" in frames[-1].columns and frames[-1]["goal"].nunique(dropna=False) <= 1:
            frames[-1] = frames[-1].drop(columns="goal")  # said once, in the rate's header
        if name == "latency":
            if frames[-1]["mean_ns"].notna().any():
                out += table_sections(captions[name], latency_text(frames[-1]), f"{letter}_{name}")
                out[-1] = out[-1]._replace(figures=latency_figures)
            else:
                out.append(Section(captions[name], "*No latency trials* in these records (probes off, or "
                                   "recorded before latency under load).", None, []))
            continue
        out += table_sections(captions[name], format_table(frames[-1], rate), f"{letter}_{name}")
    records = records_dir_for(tables_dir.parent if tables_dir.name == f"experiment_{letter}" else tables_dir,
                              records_dir) / f"experiment_{letter}.jsonl"
    if records.exists():
        out.append(changes_section(title.split(":")[0], records, goal, f"{letter}_changes"))
        out.append(validity_section(title.split(":")[0], records, f"{letter}_invalid"))
    missing = [f[f["status"] != "measured"] for f in frames if "status" in f.columns]
    n_missing = sum(len(m) for m in missing)
    out.append(Section(f"{title.split(':')[0]}: not realizable or not measured on this host",
                       f"{n_missing} configuration(s) without a value; the tables above show them as \"—\" "
                       "with the reason in *why no value*." if n_missing else "Every configuration was measured.",
                       None, []))
    return out
