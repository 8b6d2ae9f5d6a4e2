"""A measurement run's records: the host lock over the run, its run record (params and their
fingerprint), and the resume of an interrupted run with the same fingerprint, unit by unit.

Used by both runners: :mod:`nfvlab.experiment` (searches) and :mod:`nfvlab.tool_runs` (experiment E's
tool runs). A unit is what a run records as one step: a search or a tool run (:func:`unit_key`).
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional, Union

from nfvlab.measuring_code import fingerprint  # the resume fingerprint: params and the lab's measuring code
from nfvlab.records import RecordWriter, archive_earlier_runs, records_by_run
from nfvlab.system.host import host_speed_s, speed_variation
from nfvlab.system.hostlock import HostLock


def resume_wanted(resume: Optional[bool]) -> bool:
    """``resume`` or, when None, unless ``NFVLAB_FRESH_RUN`` asks for a fresh run (pipeline, notebooks)."""
    if resume is None:
        return os.environ.get("NFVLAB_FRESH_RUN", "") not in ("1", "yes", "true")
    return resume


@contextmanager
def recording(name: str, dump: dict, records: Union[str, Path], prov_extra: dict, *, resume: bool,
               finished: tuple[str, str]) -> Iterator[tuple[RecordWriter, Optional[Interrupted]]]:
    """The run's host lock, then its records: the interrupted run with the same fingerprint continued
    (``resume``; ``finished``: what marks a unit done, see :func:`interrupted_run`) or a new run."""
    # The run holds the host lock from here: a busy lab refuses it before a record is written.
    with HostLock(f"experiment {name}", for_run=True):
        previous = interrupted_run(records, dump["fingerprint"], finished) if resume else None
        if previous is None:  # a fresh run: the file keeps the run before it (run-to-run changes), no more
            archive_earlier_runs(records)
        speed_s = host_speed_s()
        if speed_s:  # under the lock: no lab of ours runs while the CPUs are probed
            prov_extra = {**prov_extra, "host_speed": speed_variation(speed_s)}
        with RecordWriter(records, name, dump, extra_provenance=prov_extra,
                          run_id=previous.run_id if previous else None, resumed=previous is not None,
                          first_seq=previous.trials if previous else 0) as rec:
            yield rec, previous


def params_dump(params, source: Optional[str]) -> dict:
    """The run record's params: the params, their :func:`fingerprint`, the file they came from."""
    dump = params.model_dump()
    if dump.get("adaptive", 0) is None:  # a fixed-n run: its run record as before adaptive runs existed
        del dump["adaptive"]
    elif dump.get("adaptive") and dump["adaptive"].get("give_up_above", 0) is None:  # as before the choice existed
        del dump["adaptive"]["give_up_above"]
    if dump.get("control", 0) is None:  # no A/A control of the searches: as before the choice existed
        del dump["control"]
    if dump.get("lab_instance") == "per-configuration":  # the default: as before the choice existed
        del dump["lab_instance"]
    dump["fingerprint"] = fingerprint(dump)
    if source:
        dump["source"] = source
    return dump



@dataclass(frozen=True)
class Interrupted:
    """The last unfinished run of a records file with the same fingerprint."""

    run_id: str
    done: frozenset
    """Keys (:func:`unit_key`) of the units it finished (a search or tool run recorded, or its failure)."""
    trials: int
    """Trials it recorded (the resumed part numbers its trials on from there)."""


#: What marks a unit of a run finished (:func:`interrupted_run`): (record type, note kind).
SEARCH_DONE = ("search", "search-failed")
TOOL_RUN_DONE = ("measurement", "measurement-failed")


def unit_key(labels: dict) -> tuple:
    """The key of a record's unit (a search, a tool run): :func:`run_key` of its labels."""
    return run_key(labels, labels.get("frame_size"), labels.get("repetition", 0))


def run_key(labels: dict, frame_size, repetition) -> tuple:
    return (tuple(sorted((k, v) for k, v in labels.items() if k not in ("frame_size", "repetition", "kind",
                                                                     "goal", "purpose", "added_look",
                                                                     "added_reason"))),
            str(frame_size), int(repetition))


def interrupted_run(records: Union[str, Path], fp: str,
                    finished: tuple[str, str] = SEARCH_DONE) -> Optional[Interrupted]:
    """The last run of ``records`` with fingerprint ``fp`` that did not complete (None: none).

    ``finished``: the record type and note kind that mark a unit done (:data:`SEARCH_DONE`,
    :data:`TOOL_RUN_DONE`); their :func:`unit_key` are its ``done``."""
    by_run = records_by_run(records)
    for run_id in reversed(list(by_run)):
        recs = by_run[run_id]
        first = next((r for r in recs if r["type"] == "run"), None)
        if first is None or (first.get("params") or {}).get("fingerprint") != fp:
            continue
        if any(r["type"] == "end" and r.get("status") == "completed" for r in recs):
            return None  # the latest such run completed: a re-run is a new run
        done = {unit_key(r["labels"]) for r in recs if r["type"] == finished[0]
                or (r["type"] == "note" and r["labels"].get("kind") == finished[1])}
        return Interrupted(run_id, frozenset(done), sum(1 for r in recs if r["type"] == "trial"))
    return None

