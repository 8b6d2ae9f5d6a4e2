"""A report item (:class:`Section`), and the items of one table: the table, or its parts when it is wide."""
from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple, Optional

import pandas as pd

from nfvlab.report.tables import split_columns, styled
from nfvlab.report.values import CLIPPED_MARK, CLIPPED_NOTE, KEY_NAMES


class Section(NamedTuple):
    """One item of the report, displayed in order.

    ``table`` is a pandas ``Styler`` of a formatted (all-text) table without index
    column (``table.data`` is the DataFrame), or None.
    """

    title: str
    text: str
    table: Optional[Any]
    figures: list[Path]


def table_sections(caption: str, table: pd.DataFrame, uid: str, text: str = "") -> list[Section]:
    """A formatted table under ``caption`` with ``text``: one section, or one per part when it is wide
    (:func:`~nfvlab.report.tables.split_columns`); the clipped-interval note where a bound was clipped."""
    keys = [c for c in table.columns if c in KEY_NAMES.values()]
    parts = split_columns(table, keys)
    clipped = table.apply(lambda col: col.astype(str).str.contains(f"\\{CLIPPED_MARK},", regex=True)).any().any()
    fixed = f"All rows: {table.attrs['fixed']}." if table.attrs.get("fixed") else ""
    note = " ".join(x for x in (text, fixed, CLIPPED_NOTE if clipped else "") if x)
    if len(parts) == 1:
        return [Section(caption, note, styled(table, uid), [])]
    return [Section(f"{caption} (part {i} of {len(parts)})", note if i == 1 else "",
                    styled(part, f"{uid}p{i}"), []) for i, part in enumerate(parts, 1)]
