"""Experiment A analysis on synthetic records with known statistics and orders.

A cell is one of: measured, search failed (with the reason), not measured, not
realizable (with the host's reason) -- each distinct in the table and the figure.
"""
import numpy as np
import pytest

from nfvlab import analysis, stats
from nfvlab.records import RecordWriter
from nfvlab.search import SyntheticDut, rfc2544_search


def write(path, capacities, not_realizable=(), failed=(), reps=6, jitter=0.002, sizes=(64,)):
    with RecordWriter(path, "a", {}, provenance={}) as rec:
        for m, why in not_realizable:
            rec.note(f"not realizable: {why}", model=m, kind="not-realizable")
        for rep in range(reps):
            for (m, fs), why in failed:
                rec.note(f"search failed: {why}", model=m, frame_size=fs, repetition=rep, kind="search-failed")
            for fs in sizes:
                for model, cap in capacities.items():
                    dut = SyntheticDut(capacity_pps=cap, capacity_jitter=jitter, seed=rep, frame_size=fs)
                    r = rfc2544_search(dut, 1000, 2 * max(capacities.values()), relative_width=0.002,
                                       duration_s=1.0)
                    rec.search({k: v for k, v in r.to_dict().items() if k != "trials"},
                               model=model, frame_size=fs, repetition=rep, goal="ndr")


def test_table_has_stats_per_model_and_a_distinct_row_for_each_kind_of_missing_cell(tmp_path):
    p = tmp_path / "a.jsonl"
    write(p, {"linux-bridge": 90_000, "macvlan": 140_000}, not_realizable=[("vpp", "real lab only")],
          failed=[(("ebpf-tc", 64), "even the minimum rate lost frames")])
    t = analysis.tables("a", p, ["linux-bridge", "macvlan", "vpp", "ebpf-tc", "ebpf-xdp"])["throughput"]
    lb = t[t["model"] == "linux-bridge"].iloc[0]
    assert lb["status"] == "measured" and lb["n"] == 6 and lb["section"] == "4.1.1"
    assert lb["mean_pps"] == pytest.approx(90_000, rel=0.01)
    assert lb["ci_low_pps"] <= lb["mean_pps"] <= lb["ci_high_pps"]
    assert lb["gbps_l1"] == pytest.approx(lb["mean_pps"] * 84 * 8 / 1e9)
    assert lb["gbps_l2"] == pytest.approx(lb["mean_pps"] * 64 * 8 / 1e9)
    status = dict(zip(t["model"], t["status"]))
    assert status["vpp"] == "not realizable: real lab only"
    assert status["ebpf-tc"] == "search failed: even the minimum rate lost frames"
    assert status["ebpf-xdp"] == "not measured"
    for m in ("vpp", "ebpf-tc", "ebpf-xdp"):
        row = t[t["model"] == m].iloc[0]
        assert row["n"] == 0 and np.isnan(row["mean_pps"])  # never a made-up value
    assert [analysis.status_kind(s) for s in t["status"]] == [
        "measured", "measured", "not realizable", "search failed", "not measured"]


A2 = "A.2: smartnic-direct > ovs-dpdk-vhost > ovs-afxdp"


@pytest.mark.parametrize("caps,expect", [
    ({"smartnic-direct": 200_000, "afxdp-cni": 190_000, "ovs-dpdk-vhost": 120_000, "ovs-afxdp": 60_000}, "holds"),
    ({"smartnic-direct": 60_000, "afxdp-cni": 190_000, "ovs-dpdk-vhost": 120_000, "ovs-afxdp": 200_000},
     "contradicted"),
    ({"smartnic-direct": 120_000, "afxdp-cni": 190_000, "ovs-dpdk-vhost": 120_000, "ovs-afxdp": 60_000},
     "inconclusive"),
])
def test_claim_a2_verdicts_on_known_orders(tmp_path, caps, expect):
    p = tmp_path / "a.jsonl"
    write(p, caps)
    claims = analysis.tables("a", p, list(caps))["claims"]
    assert len(claims) == 2 and list(claims.columns) == analysis.CLAIM_COLUMNS
    row = claims[claims["claim"].str.startswith(A2)].iloc[0]
    assert row["verdict"] == expect
    assert row["n"] == 6 and row["test"] in ("welch", "mannwhitney")
    if expect == "holds":
        assert row["p_adjusted"] < 0.05 and row["effect_size"] > 0
    elif expect == "contradicted":
        assert row["p_adjusted"] < 0.05 and row["effect_size"] < 0
    else:
        assert row["p_adjusted"] >= 0.05 and row["pair"] == "smartnic-direct > ovs-dpdk-vhost"


def test_too_few_repetitions_make_a_true_order_inconclusive_not_a_verdict(tmp_path):
    p = tmp_path / "a.jsonl"
    caps = {"smartnic-direct": 200_000, "ovs-dpdk-vhost": 120_000, "ovs-afxdp": 60_000}
    write(p, caps, reps=2)
    row = analysis.tables("a", p, list(caps))["claims"].iloc[0]
    assert row["verdict"] == "inconclusive" and row["n"] == 2  # Holm over 2 pairs at n = 2 cannot reach 0.05


def test_claim_a2_not_testable_names_the_missing_models(tmp_path):
    p = tmp_path / "a.jsonl"
    write(p, {"linux-bridge": 90_000}, not_realizable=[("smartnic-direct", "not yet implemented")])
    claims = analysis.tables("a", p, ["linux-bridge", "smartnic-direct"])["claims"]
    assert (claims["verdict"] == "not testable").all()
    assert "smartnic-direct: not realizable: not yet implemented" in claims["detail"].iloc[0]


def test_metrics_count_every_verdict(tmp_path):
    p = tmp_path / "a.jsonl"
    write(p, {"smartnic-direct": 200_000, "afxdp-cni": 190_000, "ovs-dpdk-vhost": 120_000, "ovs-afxdp": 60_000})
    m = analysis.metrics_values("a", analysis.tables("a", p))
    assert {k: v for k, v in m.items() if k.startswith("claims/")} == {
        "claims/holds": 2, "claims/contradicted": 0, "claims/inconclusive": 0, "claims/not_testable": 0}
    assert set(stats.VERDICTS) == {"holds", "contradicted", "inconclusive", "not testable"}


def test_outputs_are_byte_identical_when_rewritten(tmp_path):
    p = tmp_path / "a.jsonl"
    write(p, {"linux-bridge": 90_000, "macvlan": 140_000}, not_realizable=[("vpp", "real lab only")],
          failed=[(("ebpf-tc", 64), "lost frames at the minimum rate")])
    outs = []
    for d in ("one", "two"):
        paths = analysis.write_experiment("a", p, ["linux-bridge", "macvlan", "vpp", "ebpf-tc"], tmp_path / d / "t",
                                          tmp_path / d / "f", tmp_path / d / "m.json")
        outs.append([x.read_bytes() for x in paths])
    assert outs[0] == outs[1]
