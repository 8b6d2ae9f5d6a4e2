"""Tests of nfvlab.records: round trip, durability against SIGKILL, torn lines."""
from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pandas as pd
import pytest

from nfvlab import records
from nfvlab.records import (
    RecordsError,
    RecordWriter,
    read_records,
    records_by_run,
    runs_frame,
    trials_frame,
)
from nfvlab.traffic.stats import DirectionStats, LatencyStats
from nfvlab.trial import TrialResult

REPO = Path(__file__).resolve().parents[1]
PROV = {"hostname": "testhost", "kernel": "6.1.0-test", "git_revision": "abc123", "git_dirty": False}


def make_trial(rate: float = 1000.0, received: tuple[int, int] = (990, 1000), probes: bool = True) -> TrialResult:
    def lat(p50, p99):
        if not probes:
            return LatencyStats(probes_sent=10, probes_received=0)
        return LatencyStats(10, 10, min_ns=1000.0, avg_ns=p50, max_ns=p99 + 1, p50_ns=p50, p90_ns=p50 + 1, p99_ns=p99)

    dirs = (
        DirectionStats("p0", "p1", 1000, 1000, received[0], 1.0, lat(5000.0, 9000.0)),
        DirectionStats("p1", "p0", 1000, 995, received[1], 1.0, lat(6000.0, 8000.0)),
    )
    return TrialResult(rate_pps=rate, duration_s=1.0, frame_size=64, directions=dirs,
                       started_at="2025-01-02T03:04:05.000001Z", extra={"gen": "embedded"})


def write_run(path, n=3, **kw):
    with RecordWriter(path, "exp", {"frame_size": 64, "vnf": "ovs"}, PROV, **kw) as w:
        for i in range(n):
            w.trial(make_trial(rate=1000.0 * (i + 1)), search="mlr", phase=i)
        w.search({"ndr": 1234.5, "pdr": [1, 2]}, search="mlr")
        w.note("not realizable: no SR-IOV", case="sriov")
    return w


# -- writing and round trip ------------------------------------------------------
def test_records_by_run_groups_runs_in_order(tmp_path):
    path = tmp_path / "r.jsonl"
    assert records_by_run(path) == {}  # no file yet: no run
    first, second = write_run(path, n=2), write_run(path, n=1)
    runs = records_by_run(path)
    assert list(runs) == [first.run_id, second.run_id]
    assert [r["type"] for r in runs[first.run_id]] == ["run", "trial", "trial", "search", "note", "end"]
    assert [r["type"] for r in runs[second.run_id]] == ["run", "trial", "search", "note", "end"]
    assert runs[first.run_id] + runs[second.run_id] == read_records(path)


def test_round_trip(tmp_path):
    path = tmp_path / "r.jsonl"
    w = write_run(path)
    recs = read_records(path)
    assert [r["type"] for r in recs] == ["run", "trial", "trial", "trial", "search", "note", "end"]
    assert all(r["run_id"] == w.run_id for r in recs)
    run = recs[0]
    assert run["experiment"] == "exp"
    assert run["params"] == {"frame_size": 64, "vnf": "ovs"}
    assert run["provenance"] == PROV
    assert run["format"] == records.FORMAT_VERSION
    trials = [r for r in recs if r["type"] == "trial"]
    assert [t["seq"] for t in trials] == [0, 1, 2]
    assert trials[1]["labels"] == {"search": "mlr", "phase": 1}
    for i, t in enumerate(trials):
        assert TrialResult.from_dict(t["result"]) == make_trial(rate=1000.0 * (i + 1))
        assert t["result"] == make_trial(rate=1000.0 * (i + 1)).to_dict()
    assert recs[4]["result"] == {"ndr": 1234.5, "pdr": [1, 2]}
    assert recs[4]["labels"] == {"search": "mlr"}
    assert recs[5]["text"] == "not realizable: no SR-IOV"
    assert recs[5]["labels"] == {"case": "sriov"}
    end = recs[-1]
    assert end["status"] == "completed" and end["error"] is None and end["trials"] == 3
    assert pd.Timestamp(end["ended_at"]) >= pd.Timestamp(run["started_at"])
    # one JSON object per line, UTF-8
    lines = path.read_text("utf-8").splitlines()
    assert len(lines) == 7 and all(isinstance(json.loads(x), dict) for x in lines)


def test_unicode_and_numpy_values(tmp_path):
    np = pytest.importorskip("numpy")
    path = tmp_path / "u.jsonl"
    with RecordWriter(path, "exp", {"n": np.int64(3), "x": np.float64(0.5), "p": tmp_path}, PROV) as w:
        w.note("µs latency\nsecond line", who="Zoë")
    recs = read_records(path)
    assert recs[0]["params"] == {"n": 3, "x": 0.5, "p": str(tmp_path)}
    assert recs[1]["text"] == "µs latency\nsecond line"
    assert recs[1]["labels"] == {"who": "Zoë"}
    assert len(path.read_bytes().splitlines()) == 3


def test_unserializable_label_raises_and_writes_nothing(tmp_path):
    path = tmp_path / "x.jsonl"
    with RecordWriter(path, "exp", {}, PROV) as w:
        with pytest.raises(RecordsError):
            w.note("x", obj=object())
    assert [r["type"] for r in read_records(path)] == ["run", "end"]


def test_label_clashing_with_column_rejected(tmp_path):
    with RecordWriter(tmp_path / "x.jsonl", "exp", {}, PROV) as w:
        with pytest.raises(ValueError, match="rate_pps"):
            w.trial(make_trial(), rate_pps=3)


def test_each_record_is_one_write_and_fsynced(tmp_path, monkeypatch):
    writes, syncs = [], []
    real_write, real_fsync = os.write, os.fsync

    def spy_write(fd, data):
        writes.append(bytes(data))
        return real_write(fd, data)

    def spy_fsync(fd):
        syncs.append(len(writes))
        return real_fsync(fd)

    monkeypatch.setattr(records.os, "write", spy_write)
    monkeypatch.setattr(records.os, "fsync", spy_fsync)
    path = tmp_path / "w.jsonl"
    with RecordWriter(path, "exp", {}, PROV) as w:
        w.trial(make_trial())
        w.note("hello")
    file_writes = [b for b in writes if b.startswith(b"{")]
    assert len(file_writes) == 4  # run, trial, note, end
    assert all(b.endswith(b"\n") and b.count(b"\n") == 1 for b in file_writes)
    assert b"".join(file_writes) == path.read_bytes()
    # an fsync follows every write
    for i in range(1, len(writes) + 1):
        assert i in syncs


def test_append_keeps_previous_run(tmp_path):
    path = tmp_path / "a.jsonl"
    w1 = write_run(path, n=2)
    before = path.read_bytes()
    w2 = write_run(path, n=1)
    assert path.read_bytes().startswith(before)
    recs = read_records(path)
    assert [r["run_id"] for r in recs if r["type"] == "run"] == [w1.run_id, w2.run_id]
    runs = runs_frame(path)
    assert list(runs["run_id"]) == [w1.run_id, w2.run_id]
    assert list(runs["trials"]) == [2, 1]
    assert list(runs["status"]) == ["completed", "completed"]


def test_exception_marks_failed_and_reraises(tmp_path):
    path = tmp_path / "f.jsonl"
    with pytest.raises(ZeroDivisionError):
        with RecordWriter(path, "exp", {}, PROV) as w:
            w.trial(make_trial())
            1 / 0
    end = read_records(path)[-1]
    assert end["type"] == "end"
    assert end["status"] == "failed"
    assert "ZeroDivisionError" in end["error"] and "division by zero" in end["error"]
    runs = runs_frame(path)
    assert runs.loc[0, "status"] == "failed"
    assert "ZeroDivisionError" in runs.loc[0, "error"]


def test_keyboard_interrupt_marks_interrupted(tmp_path):
    path = tmp_path / "k.jsonl"
    with pytest.raises(KeyboardInterrupt):
        with RecordWriter(path, "exp", {}, PROV):
            raise KeyboardInterrupt
    end = read_records(path)[-1]
    assert end["type"] == "end" and end["status"] == "interrupted"
    assert runs_frame(path).loc[0, "status"] == "interrupted"


def test_writing_outside_context_raises(tmp_path):
    w = RecordWriter(tmp_path / "o.jsonl", "exp", {}, PROV)
    with pytest.raises(RuntimeError):
        w.note("too early")
    with w:
        pass
    with pytest.raises(RuntimeError):
        w.note("too late")


def test_default_provenance_is_collected(tmp_path):
    path = tmp_path / "p.jsonl"
    with RecordWriter(path, "exp", {"a": 1}):
        pass
    prov = read_records(path)[0]["provenance"]
    assert prov["params"] == {"a": 1}
    assert prov["cpu_count"] == os.cpu_count()


# -- durability ----------------------------------------------------------------
KILLER = textwrap.dedent(
    """
    import os, signal, sys
    sys.path.insert(0, {repo!r})
    from nfvlab.records import RecordWriter
    from nfvlab.traffic.stats import DirectionStats, LatencyStats
    from nfvlab.trial import TrialResult

    n = int(sys.argv[2])
    lat = LatencyStats(5, 5, 1.0, 2.0, 3.0, 2.0, 3.0, 3.0)
    with RecordWriter(sys.argv[1], "killed", {{"n": n}}, {{"hostname": "h"}}) as w:
        for i in range(n):
            d = DirectionStats("a", "b", 100, 100, 100 - i, 1.0, lat)
            w.trial(TrialResult(100.0, 1.0, 64, (d,)), i=i)
        os.kill(os.getpid(), signal.SIGKILL)
        w.note("never written")
    """
)


def test_sigkill_mid_run_keeps_all_written_trials(tmp_path):
    path = tmp_path / "killed.jsonl"
    script = tmp_path / "killer.py"
    script.write_text(KILLER.format(repo=str(REPO)))
    n = 7
    proc = subprocess.run([sys.executable, str(script), str(path), str(n)], capture_output=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing torn: every record was complete
        recs = read_records(path)
    assert [r["type"] for r in recs] == ["run"] + ["trial"] * n
    assert [r["labels"]["i"] for r in recs[1:]] == list(range(n))
    assert not any(r["type"] == "end" for r in recs)
    runs = runs_frame(path)
    assert list(runs["status"]) == ["incomplete"]
    assert runs.loc[0, "trials"] == n
    assert pd.isna(runs.loc[0, "ended_at"]) and math.isnan(runs.loc[0, "elapsed_s"])
    df = trials_frame(path)
    assert len(df) == n and list(df["received_packets"]) == [100 - i for i in range(n)]
    assert set(df["experiment"]) == {"killed"}

    # a later run appended to the same file keeps the killed one
    write_run(path, n=1)
    runs = runs_frame(path)
    assert list(runs["status"]) == ["incomplete", "completed"]
    assert len(trials_frame(path)) == n + 1


def test_a_fresh_run_archives_all_but_the_latest_completed_run_byte_for_byte(tmp_path):
    path = tmp_path / "a.jsonl"
    first, second = write_run(path, n=2), write_run(path, n=3)
    with pytest.raises(KeyboardInterrupt):  # an interrupted run after them: not resumed by a fresh run
        with RecordWriter(path, "exp", {}, PROV) as w3:
            w3.trial(make_trial())
            raise KeyboardInterrupt
    lines = {r: [ln for ln in path.read_bytes().splitlines(keepends=True) if r.encode() in ln]
             for r in (first.run_id, second.run_id, w3.run_id)}
    assert records.archive_earlier_runs(path) == [first.run_id, w3.run_id]
    assert path.read_bytes() == b"".join(lines[second.run_id])
    history = records.history_dir(path)
    assert history == tmp_path / "a.jsonl.history"
    for run_id in (first.run_id, w3.run_id):
        assert (history / f"{run_id}.jsonl").read_bytes() == b"".join(lines[run_id])
    # nothing more to move: a second call changes nothing; keep=0 moves the last one too
    assert records.archive_earlier_runs(path) == []
    assert records.archive_earlier_runs(path, keep=0) == [second.run_id] and path.read_bytes() == b""
    assert records.archive_earlier_runs(tmp_path / "missing.jsonl") == []


def test_archiving_refuses_a_corrupt_file_before_moving_anything(tmp_path):
    path = tmp_path / "c.jsonl"
    write_run(path, n=1)
    write_run(path, n=1)
    lines = path.read_bytes().splitlines(keepends=True)
    lines[1] = b'{"type":"trial", broken\n'
    path.write_bytes(b"".join(lines))
    with pytest.raises(RecordsError, match=r"c\.jsonl:2\b"):
        records.archive_earlier_runs(path)
    assert path.read_bytes() == b"".join(lines) and not records.history_dir(path).exists()


def test_archiving_drops_a_torn_line_and_keeps_the_run_after_it(tmp_path):
    path = tmp_path / "t.jsonl"
    write_run(path, n=1)
    with open(path, "ab") as f:
        f.write(b'{"type":"trial","run_id":"dead","se')
    kept = write_run(path, n=2)
    with pytest.warns(RuntimeWarning, match="truncated"):
        moved = records.archive_earlier_runs(path)
    assert len(moved) == 1 and moved[0] != kept.run_id
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the torn line is gone
        assert {r["run_id"] for r in read_records(path)} == {kept.run_id}


# -- torn and corrupt lines ------------------------------------------------------
def test_truncated_final_line_skipped_with_warning(tmp_path):
    path = tmp_path / "t.jsonl"
    write_run(path, n=2)
    whole = read_records(path)
    line = json.dumps({"type": "trial", "run_id": "x", "seq": 9, "result": {"rate_pps": 1}})
    with open(path, "ab") as f:
        f.write(line[: len(line) // 2].encode())
    with pytest.warns(RuntimeWarning, match=r"t\.jsonl:7.*truncated"):
        recs = read_records(path)
    assert recs == whole


def test_truncated_multibyte_final_line(tmp_path):
    path = tmp_path / "t.jsonl"
    write_run(path, n=1)
    with open(path, "ab") as f:
        f.write('{"type":"note","text":"µ'.encode()[:-1])  # cut inside a UTF-8 char
    with pytest.warns(RuntimeWarning):
        recs = read_records(path)
    assert recs[-1]["type"] == "end"


def test_torn_line_then_new_run_appended(tmp_path):
    path = tmp_path / "t.jsonl"
    with RecordWriter(path, "exp", {}, PROV) as w:
        w.trial(make_trial())
    # simulate a second writer killed mid-record (no end, torn line, no newline)
    with open(path, "ab") as f:
        f.write(b'{"type":"trial","run_id":"dead","se')
    w2 = write_run(path, n=2)
    with pytest.warns(RuntimeWarning, match="truncated"):
        recs = read_records(path)
    assert [r["type"] for r in recs].count("run") == 2
    assert recs[-1]["run_id"] == w2.run_id and recs[-1]["type"] == "end"
    with pytest.warns(RuntimeWarning):
        assert len(trials_frame(path)) == 3


@pytest.mark.parametrize(
    "bad",
    [b'{"type":"trial", broken', b"[1, 2, 3]", b'{"type":"bogus"}', b"\xff\xfe"],
)
def test_mid_file_corruption_raises_with_file_and_line(tmp_path, bad):
    path = tmp_path / "c.jsonl"
    write_run(path, n=3)
    lines = path.read_bytes().splitlines(keepends=True)
    lines[2] = bad + b"\n"  # third line
    path.write_bytes(b"".join(lines))
    with pytest.raises(RecordsError, match=rf"{path.name}:3\b"):
        read_records(path)
    with pytest.raises(RecordsError, match=rf"{path.name}:3\b"):
        trials_frame(path)


def test_two_bad_lines_at_end_raise(tmp_path):
    path = tmp_path / "c.jsonl"
    write_run(path, n=1)
    with open(path, "ab") as f:
        f.write(b"{garbage\n{more")
    with pytest.raises(RecordsError, match=r"c\.jsonl:6\b"):
        read_records(path)


# -- frames ------------------------------------------------------------------------
def test_trials_frame_columns_and_values(tmp_path):
    p1, p2 = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    w1 = write_run(p1, n=2)
    with RecordWriter(p2, "other", {}, PROV) as w2:
        w2.trial(make_trial(probes=False), vnf="vpp")
    df = trials_frame([p1, p2])
    assert len(df) == 3
    for col in records.TRIAL_COLUMNS:
        assert col in df.columns
    for col in ("search", "phase", "vnf", "d0_tx", "d1_rx", "d0_p50_ns", "d1_p99_ns", "d1_loss_ratio"):
        assert col in df.columns
    assert list(df["run_id"]) == [w1.run_id, w1.run_id, w2.run_id]
    assert list(df["experiment"]) == ["exp", "exp", "other"]
    assert list(df["file"]) == [str(p1), str(p1), str(p2)]
    assert list(df["seq"]) == [0, 1, 0]
    assert list(df["rate_pps"]) == [1000.0, 2000.0, 1000.0]
    t = make_trial()
    r = df.iloc[0]
    assert r["intended_packets"] == t.intended_packets == 2000
    assert r["sent_packets"] == t.sent_packets == 1995
    assert r["received_packets"] == t.received_packets == 1990
    assert r["lost_packets"] == 10
    assert r["loss_ratio"] == pytest.approx(t.loss_ratio)
    assert r["offered_rate_pps"] == pytest.approx(t.offered_rate_pps)
    assert r["forwarding_rate_pps"] == pytest.approx(t.forwarding_rate_pps)
    assert r["directions"] == 2
    assert r["latency_p50_ns"] == 6000.0  # worst direction
    assert r["latency_p99_ns"] == 9000.0
    assert r["d0_p50_ns"] == 5000.0 and r["d1_p99_ns"] == 8000.0
    assert r["d0_tx"] == "p0" and r["d0_rx"] == "p1"
    assert r["d0_loss_ratio"] == pytest.approx(0.01) and r["d1_loss_ratio"] == 0.0
    assert r["probes_sent"] == 20 and r["probes_received"] == 20
    assert r["search"] == "mlr" and r["phase"] == 0
    assert pd.isna(r["vnf"]) and df.iloc[2]["vnf"] == "vpp"
    assert r["started_at"] == pd.Timestamp("2025-01-02T03:04:05.000001Z")
    assert str(df["time"].dtype) .startswith("datetime64") and str(df["time"].dt.tz) == "UTC"
    assert r["extra"] == {"gen": "embedded"}
    assert r["valid"] and r["invalid_reason"] is None
    # no probe came back -> NaN latency
    assert math.isnan(df.iloc[2]["latency_p99_ns"]) and math.isnan(df.iloc[2]["d0_p50_ns"])
    assert df["loss_ratio"].dtype == "float64" and df["seq"].dtype == "int64"


def test_frames_of_file_without_trials(tmp_path):
    path = tmp_path / "e.jsonl"
    with RecordWriter(path, "exp", {}, PROV):
        pass
    df = trials_frame(path)
    assert len(df) == 0 and "loss_ratio" in df.columns
    runs = runs_frame(path)
    assert len(runs) == 1 and runs.loc[0, "trials"] == 0
    assert runs.loc[0, "elapsed_s"] >= 0
    assert runs.loc[0, "hostname"] == "testhost" and runs.loc[0, "git_revision"] == "abc123"
    assert list(runs.columns) == list(records.RUN_COLUMNS)
