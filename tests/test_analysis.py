"""Experiment A analysis on synthetic records with known statistics and orders."""
import pytest

from nfvlab import analysis, results
from nfvlab.records import RecordWriter
from nfvlab.search import SyntheticDut, rfc2544_search


def write(path, capacities, not_realizable=(), reps=6, jitter=0.002):
    with RecordWriter(path, "a", {}, provenance={}) as rec:
        for m, why in not_realizable:
            rec.note(f"not realizable: {why}", model=m, kind="not-realizable")
        for rep in range(reps):
            for model, cap in capacities.items():
                dut = SyntheticDut(capacity_pps=cap, capacity_jitter=jitter, seed=rep, frame_size=64)
                r = rfc2544_search(dut, 1000, 2 * max(capacities.values()), relative_width=0.002,
                                   duration_s=1.0)
                rec.search({k: v for k, v in r.to_dict().items() if k != "trials"},
                           model=model, frame_size=64, repetition=rep, goal="ndr")


def test_table_has_stats_per_model_and_rows_for_unrealizable_models(tmp_path):
    p = tmp_path / "a.jsonl"
    write(p, {"linux-bridge": 90_000, "macvlan": 140_000}, not_realizable=[("vpp", "real lab only")])
    t = analysis.throughput_table(p, ["linux-bridge", "macvlan", "vpp"])
    lb = t[t["model"] == "linux-bridge"].iloc[0]
    assert lb["status"] == "measured" and lb["n"] == 6
    assert lb["mean_pps"] == pytest.approx(90_000, rel=0.01)
    assert lb["ci_low_pps"] <= lb["mean_pps"] <= lb["ci_high_pps"]
    assert lb["mean_gbps_l1"] == pytest.approx(lb["mean_pps"] * 84 * 8 / 1e9)
    vpp = t[t["model"] == "vpp"].iloc[0]
    assert vpp["status"] == "not realizable: real lab only" and vpp["n"] == 0
    assert vpp["mean_pps"] != vpp["mean_pps"]  # NaN, never a made-up value


@pytest.mark.parametrize("caps,expect", [
    ({"smartnic-direct": 200_000, "afxdp-cni": 190_000, "ovs-dpdk-vhost": 120_000, "ovs-afxdp": 60_000}, True),
    ({"smartnic-direct": 60_000, "afxdp-cni": 190_000, "ovs-dpdk-vhost": 120_000, "ovs-afxdp": 200_000}, False),
])
def test_claim_a2_holds_or_not_on_known_orders(tmp_path, caps, expect):
    p = tmp_path / "a.jsonl"
    write(p, caps)
    t = analysis.throughput_table(p, list(caps))
    claims = analysis.claims_a(results.searches_frame(p), t)
    assert len(claims) == 2
    assert set(claims["holds"]) == {expect} if expect else False in set(claims["holds"])


def test_claim_a2_not_testable_names_the_missing_models(tmp_path):
    p = tmp_path / "a.jsonl"
    write(p, {"linux-bridge": 90_000}, not_realizable=[("smartnic-direct", "not yet implemented")])
    t = analysis.throughput_table(p, ["linux-bridge", "smartnic-direct"])
    claims = analysis.claims_a(results.searches_frame(p), t)
    assert claims["holds"].isna().all()
    assert "smartnic-direct: not realizable: not yet implemented" in claims["detail"].iloc[0]


def test_outputs_are_byte_identical_when_rewritten(tmp_path):
    p = tmp_path / "a.jsonl"
    write(p, {"linux-bridge": 90_000, "macvlan": 140_000})
    outs = []
    for d in ("one", "two"):
        paths = analysis.write_experiment_a(p, ["linux-bridge", "macvlan"], tmp_path / d / "t",
                                            tmp_path / d / "f", tmp_path / d / "m.json")
        outs.append([x.read_bytes() for x in paths])
    assert outs[0] == outs[1]
