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
