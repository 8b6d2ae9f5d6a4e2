"""The draft's claims on this host: every experiment's claim rows, the verdict counts, their sections."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from nfvlab.claims import VERDICTS, current_design
from nfvlab.report.files import PathLike, own_dir, read_table, records_names
from nfvlab.report.section import Section
from nfvlab.report.tables import format_table, styled


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
        folder = base / stem if (base / stem).is_dir() else (own_dir(base, letter) if stem == f"experiment_{letter}"
                                                             else None)
        p = folder / f"experiment_{letter}_claims.csv" if folder is not None else None
        if p is not None and p.exists():
            frames.append(read_table(p).assign(experiment=name.upper() if len(name) == 1 else
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


def claims_sections(tables_dir: Path) -> list[Section]:
    """The verdict counts (:func:`claims_summary`), then every claim: its verdict, reason and what would
    decide it."""
    claims = claims_table(tables_dir)
    if claims.empty:
        return [Section("Claims summary", "*Not run yet*: no `experiment_<x>_claims.csv`.", None, [])]
    d = current_design()
    text = ("How the draft's claims fare on this host (docs/methodology.md, \"Claims\"; each claim's pairs "
            "tested with Welch's t on the log rates, the search's goal width counted as measurement "
            f"uncertainty, Holm-adjusted at {d.alpha:g}): *holds* (every pair larger in the claimed order, none "
            f"shown within +-{d.order_margin:.0%}), *contradicted* (a pair shown equal within "
            f"+-{d.order_margin:.0%}: no practical difference, even if a difference is shown too; or one "
            "significantly reversed; \"about equal\" claims: shown beyond "
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
