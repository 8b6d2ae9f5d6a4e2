"""Records -> result tables: run selection and columns, on records with known content."""
import pytest

from nfvlab import results as R
from nfvlab.records import RecordWriter
from nfvlab.search import SyntheticDut, rfc2544_search


def write_run(path, capacity, fail=False):
    dut = SyntheticDut(capacity_pps=capacity, frame_size=64)
    with pytest.raises(RuntimeError) if fail else _null():
        with RecordWriter(path, "exp", {"x": 1}, provenance={}) as rec:
            r = rfc2544_search(dut, 1000, 10 * capacity, relative_width=0.01, duration_s=1.0,
                               on_trial=lambda t: rec.trial(t, purpose="search", model="m"))
            rec.search({k: v for k, v in r.to_dict().items() if k != "trials"},
                       model="m", frame_size=64, repetition=0, goal="ndr")
            rec.note("not realizable: kernel lacks x", model="n", kind="not-realizable")
            if fail:
                raise RuntimeError("killed midway")


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def test_latest_completed_run_is_used_and_earlier_runs_are_kept(tmp_path):
    p = tmp_path / "raw.jsonl"
    write_run(p, 50_000)
    write_run(p, 80_000)
    write_run(p, 10_000, fail=True)  # a failed run never counts
    latest = R.searches_frame(p)
    assert len(latest) == 1 and latest["throughput_pps"].iloc[0] == pytest.approx(80_000, rel=0.01)
    both = R.searches_frame(p, run="all")
    assert sorted(round(x, -3) for x in both["throughput_pps"]) == [50_000, 80_000]
    row = latest.iloc[0]
    assert row["throughput_gbps_l1"] == pytest.approx(row["throughput_pps"] * 84 * 8 / 1e9)
    assert row["throughput_gbps_l2"] == pytest.approx(row["throughput_pps"] * 64 * 8 / 1e9)
    nr = R.not_realizable_frame(p)
    assert list(nr["model"]) == ["n"] and nr["reason"].iloc[0] == "kernel lacks x"


def test_rfc9971_columns_and_records_written_before_them(tmp_path):
    p = tmp_path / "raw.jsonl"
    write_run(p, 50_000)
    row = R.searches_frame(p).iloc[0]
    assert row["regular"] == True and row["flags"] == ""  # numpy bool: not "is True"
    assert row["conditional_throughput_pps"] == row["lower_bound_pps"]  # NDR bisection
    assert (row["goal_exceed_ratio"], row["goal_duration_sum_s"], row["goal_relative_width"]) == (0.0, 1.0, 0.01)
    assert (row["min_rate_pps"], row["max_rate_pps"], row["directions"]) == (1000, 500_000, 1)
    # A record of the old format (no RFC 9971 fields) still loads, with None there.
    old = tmp_path / "old.jsonl"
    with RecordWriter(old, "exp", {}, provenance={}) as rec:
        rec.search({"goal": "ndr", "method": "rfc2544", "loss_ratio": 0.0, "throughput_pps": 7e4,
                    "lower_bound_pps": 7e4, "upper_bound_pps": 7.1e4}, model="m", frame_size=64, repetition=0)
    o = R.searches_frame(old).iloc[0]
    assert o["throughput_pps"] == 7e4 and o["flags"] == ""
    assert o[list(R.SEARCH_RFC9971)].isna().all()


def test_provenance_comes_from_the_run_that_counts_not_the_last_written(tmp_path):
    # The host facts an analysis reads (CPUs, devices) must describe the run its numbers come from.
    from nfvlab.experiments import d as exp_d

    p = tmp_path / "raw.jsonl"
    with RecordWriter(p, "exp", {"x": 1}, provenance={"cpu_count": 3}) as rec:
        rec.note("ran", model="m", kind="info")
    with pytest.raises(RuntimeError):
        with RecordWriter(p, "exp", {"x": 1}, provenance={"cpu_count": 64}):
            raise RuntimeError("killed midway")
    assert R.run_provenance(p)["cpu_count"] == 3
    assert exp_d.host_cpus(p) == 3
    empty = tmp_path / "empty.jsonl"
    empty.touch()
    assert R.run_provenance(empty) == {}
