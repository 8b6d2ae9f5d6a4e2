"""The whole report in order: provenance, contents, claims, every experiment, the published reference."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from nfvlab import experiments
from nfvlab.report.anchors import contents
from nfvlab.report.claims import claims_sections
from nfvlab.report.cni import cni_sections
from nfvlab.report.experiment import experiment_sections
from nfvlab.report.files import PathLike, records_dir_for
from nfvlab.report.lab_comparison import two_labs_section
from nfvlab.report.provenance import provenance_sections
from nfvlab.report.section import Section
from nfvlab.report.tables import CAPTIONS


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
    rec_dir = records_dir_for(tables_dir, records_dir)
    body = claims_sections(Path(tables_dir))
    for letter, exp in experiments.REGISTRY.items():
        # E measures goodput and request rates with tools, not NDR searches: its own tables.
        body += (cni_sections(tables_dir, figures_dir) if exp.kind == "tools"
                 else experiment_sections(letter, tables_dir, figures_dir, rec_dir))
        if exp.kubernetes_table:
            body.append(two_labs_section(tables_dir, letter))
    ref = sorted((Path(figures_dir) / "reference").glob("*.png"))
    body.append(Section("Published reference figures (seed documents, as published)",
                        "The draft's Figures 10-17 and the density note's matrices, rendered from "
                        "`data/reference/`: the published testbeds, not this host." if ref else
                        "*Not rendered yet* (`nfvlab figures reference`).", None, ref))
    head = provenance_sections(rec_dir)
    # Contents: the headed items (experiments, claims, reference), not every table caption.
    listed = [s.title for s in head + body if s.title.startswith(("Provenance", "Claims summary", "Experiment",
                                                                   "Published"))
              and not s.title.startswith(tuple(CAPTIONS.values()))]
    return head + [Section("Contents", contents(listed), None, [])] + body
