"""What every adaptive run's records show, whatever the rates (the lab tests of experiments B and E)."""
from __future__ import annotations


def check_added_and_outcome(recs: list[dict], unit: str, first: int, repetitions: int) -> list[dict]:
    """Assert that the run ``recs`` has ``first`` units (record type ``unit``: ``search``, ``measurement``)
    of its ``repetitions`` fixed repetitions, that every added one is repetition ``repetitions``, labelled
    with look 1 and the reason, and that the run ends with its ``adaptive`` note and completed; the
    added units."""
    units = [r for r in recs if r["type"] == unit]
    fixed = [r for r in units if "added_look" not in r["labels"]]
    added = [r for r in units if "added_look" in r["labels"]]
    assert len(fixed) == first and all(r["labels"]["repetition"] < repetitions for r in fixed)
    for r in added:
        assert r["labels"]["repetition"] == repetitions and r["labels"]["added_look"] == 1
        assert r["labels"]["added_reason"].startswith("look 1: ") and "undecided" in r["labels"]["added_reason"]
    note = recs[-2]
    assert note["type"] == "note" and note["labels"]["kind"] == "adaptive"
    assert note["labels"]["added"] == len(added) and note["labels"]["stopped"] in (
        "decided", "max repetitions", "seconds")
    assert recs[-1]["type"] == "end" and recs[-1]["status"] == "completed"
    return added
