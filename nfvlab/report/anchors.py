"""The contents list: a link per section title to the heading nbconvert anchors it at."""
from __future__ import annotations

from typing import Sequence


def anchor(title: str) -> str:
    """The id nbconvert gives the ``## title`` heading (spaces -> ``-``), percent-encoded for a link."""
    return "#" + title.replace("%", "%25").replace(" ", "-").replace("(", "%28").replace(")", "%29")


def contents(titles: Sequence[str]) -> str:
    """The contents list (Markdown): one numbered link per section title."""
    return "\n".join(f"{i}. [{t}]({anchor(t)})" for i, t in enumerate(titles, 1))
