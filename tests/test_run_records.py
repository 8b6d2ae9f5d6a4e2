"""A run's records and resume (nfvlab.run_records): which run is resumed, and which of its units count as done."""
import json

from nfvlab import run_records as RR

LB = {"model": "macvlan", "pinning": "plan", "numa": "s1"}


def _line(**rec) -> str:
    return json.dumps(rec) + "\n"


def _run(run_id, fp, *, units=(), failed=(), trials=0, completed=False) -> str:
    """A run of fingerprint ``fp``: a search per (frame size, repetition) of ``units``, a search-failed note per
    one of ``failed``, ``trials`` trials, and its end record when ``completed``."""
    at = "2026-12-07T10:00:00.000000Z"
    out = [_line(type="run", format=1, run_id=run_id, experiment="x", started_at=at, params={"fingerprint": fp},
                 provenance={})]
    out += [_line(type="trial", run_id=run_id, time=at, labels={**LB, "repetition": 0, "purpose": "search"},
                  result={"frame_size": 64}) for _ in range(trials)]
    out += [_line(type="search", run_id=run_id, time=at, labels={**LB, "goal": "ndr", "frame_size": fs,
                                                                  "repetition": rep}, result={}) for fs, rep in units]
    out += [_line(type="note", run_id=run_id, time=at, labels={**LB, "kind": "search-failed", "frame_size": fs,
                                                                "repetition": rep}, text="failed") for fs, rep in failed]
    if completed:
        out.append(_line(type="end", run_id=run_id, ended_at=at, status="completed", error=None, trials=trials))
    return "".join(out)


def test_the_last_unfinished_run_of_the_fingerprint_is_resumed_with_its_searches_and_failures_done(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text(_run("r1", "A", units=[(64, 0)], trials=3, completed=True)
                    + _run("r2", "A", units=[(64, 0), (1518, 0)], failed=[(64, 1)], trials=5)
                    + _run("r3", "B", units=[(64, 0)], trials=1))
    got = RR.interrupted_run(path, "A")
    assert got.run_id == "r2" and got.trials == 5
    assert got.done == {RR.run_key(LB, 64, 0), RR.run_key(LB, 1518, 0), RR.run_key(LB, 64, 1)}
    assert RR.interrupted_run(path, "B").run_id == "r3"
    assert RR.interrupted_run(path, "C") is None  # no run of these params and code
    assert RR.interrupted_run(tmp_path / "none.jsonl", "A") is None


def test_a_completed_run_ends_the_resume_a_later_run_of_the_same_fingerprint_is_new(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text(_run("r1", "A", units=[(64, 0)], trials=2) + _run("r2", "A", units=[(64, 0)], completed=True))
    assert RR.interrupted_run(path, "A") is None


def test_added_labels_leave_the_resume_key_alone():
    labels = {"data_path": "direct", "link_mtu_bytes": 1500, "protocol": "tcp", "repetition": 2}
    assert RR.unit_key({**labels, "added_look": 1, "added_reason": "look 1: x undecided"}) == RR.unit_key(labels)
    assert RR.unit_key({**labels, "repetition": 3}) != RR.unit_key(labels)
