"""Experiment A analysis on synthetic records with known statistics and orders.

A cell is one of: measured, search failed (with the reason), not measured, not
realizable (with the host's reason) -- each distinct in the table and the figure.
"""
import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

from nfvlab import analysis, claims, experiments, results
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
    t = experiments.tables("a", p, ["linux-bridge", "macvlan", "vpp", "ebpf-tc", "ebpf-xdp"])["throughput"]
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
    # Equal capacities, measured to 0.2 %: shown equal within the 5 % margin, so "smartnic-direct
    # forwards more" is contradicted (no practical difference); the old design said inconclusive.
    ({"smartnic-direct": 120_000, "afxdp-cni": 190_000, "ovs-dpdk-vhost": 120_000, "ovs-afxdp": 60_000},
     "contradicted"),
])
def test_claim_a2_verdicts_on_known_orders(tmp_path, caps, expect):
    p = tmp_path / "a.jsonl"
    write(p, caps)
    table = experiments.tables("a", p, list(caps))["claims"]
    assert len(table) == 2 and list(table.columns) == analysis.CLAIM_COLUMNS
    row = table[table["claim"].str.startswith(A2)].iloc[0]
    assert row["verdict"] == expect
    assert row["n"] == 6 and row["test"] == claims.TEST_NAME and row["p_adjusted"] < 0.05
    if expect == "holds":
        assert row["effect_size"] > 0 and "every pair larger" in row["reason"]
    elif caps["smartnic-direct"] < caps["ovs-dpdk-vhost"]:
        assert row["effect_size"] < 0 and "reversed" in row["reason"]
    else:
        assert row["pair"] == "smartnic-direct > ovs-dpdk-vhost" and "no practical difference" in row["reason"]
        assert abs(row["effect_size"]) < 0.05


def test_a_small_difference_in_noisy_repetitions_is_inconclusive_and_says_what_would_decide(tmp_path):
    # Truth: 1.1x at CV 20 %, 3 repetitions (power at n = 3 is a few percent).
    rng = np.random.default_rng(3)
    vals = {"smartnic-direct": 110_000 * np.exp(rng.normal(0, 0.2, 3)),
            "ovs-dpdk-vhost": 100_000 * np.exp(rng.normal(0, 0.2, 3)),
            "ovs-afxdp": 20_000 * np.exp(rng.normal(0, 0.2, 3))}
    p = _records(tmp_path / "a.jsonl", vals)
    row = experiments.tables("a", p, list(vals))["claims"].iloc[0]
    assert row["verdict"] == "inconclusive" and row["n"] == 3
    assert row["pair"] == "smartnic-direct > ovs-dpdk-vhost"
    assert row["mde"] > 0.2 and "detectable" in row["reason"]  # far above the true 10 %
    assert (pd.isna(row["n_needed"]) and "more than 50" in row["reason"]) or row["n_needed"] > 3


def test_claim_a2_not_testable_names_the_missing_models(tmp_path):
    p = tmp_path / "a.jsonl"
    write(p, {"linux-bridge": 90_000}, not_realizable=[("smartnic-direct", "not yet implemented")])
    table = experiments.tables("a", p, ["linux-bridge", "smartnic-direct"])["claims"]
    assert (table["verdict"] == "not testable").all()
    assert "smartnic-direct: not realizable: not yet implemented" in table["detail"].iloc[0]


def test_metrics_count_every_verdict(tmp_path):
    p = tmp_path / "a.jsonl"
    write(p, {"smartnic-direct": 200_000, "afxdp-cni": 190_000, "ovs-dpdk-vhost": 120_000, "ovs-afxdp": 60_000})
    m = experiments.get("a").metrics(experiments.tables("a", p))
    assert {k: v for k, v in m.items() if k.startswith("claims/")} == {
        "claims/holds": 2, "claims/contradicted": 0, "claims/inconclusive": 0, "claims/metric_dependent": 0,
        "claims/not_testable": 0}
    assert set(claims.VERDICTS) == {"holds", "contradicted", "inconclusive", "metric-dependent", "not testable"}


def test_outputs_are_byte_identical_when_rewritten(tmp_path):
    p = tmp_path / "a.jsonl"
    write(p, {"linux-bridge": 90_000, "macvlan": 140_000}, not_realizable=[("vpp", "real lab only")],
          failed=[(("ebpf-tc", 64), "lost frames at the minimum rate")])
    outs = []
    for d in ("one", "two"):
        paths = experiments.write_experiment("a", p, ["linux-bridge", "macvlan", "vpp", "ebpf-tc"], tmp_path / d / "t",
                                          tmp_path / d / "f", tmp_path / d / "m.json")
        outs.append([x.read_bytes() for x in paths])
    assert outs[0] == outs[1]


# --------------------------------------------------------------------------- throughput intervals
def _records(path, values, regular=None):
    """One search record per (model, value) pair of ``values`` = {model: [pps per repetition]}."""
    with RecordWriter(path, "a", {}, provenance={}) as rec:
        for model, vs in values.items():
            for rep, v in enumerate(vs):
                res = {"goal": "ndr", "method": "synthetic", "loss_ratio": 0.0, "throughput_pps": float(v),
                       "regular": None if regular is None else regular.get((model, rep), True)}
                rec.search(res, model=model, frame_size=64, repetition=rep)
    return path


def test_config_table_interval_is_the_t_interval_of_the_repetitions(tmp_path):
    p = _records(tmp_path / "a.jsonl", {"m": [100.0, 102.0, 104.0], "one": [5.0]},
                 regular={("m", 2): False})
    t = analysis.config_table(results.searches_frame(p), results.not_realizable_frame(p),
                              {"model": ["m", "one"], "frame_size": [64]}, "ndr").set_index("model")
    half = st.t.ppf(0.975, 2) * 2.0 / np.sqrt(3)  # sd 2, n 3
    assert t.loc["m", ["n", "mean_pps", "ci_low_pps", "ci_high_pps"]].tolist() == pytest.approx(
        [3, 102.0, 102.0 - half, 102.0 + half])
    assert t.loc["m", "n_irregular"] == 1 and t.loc["one", "n_irregular"] == 0
    assert t.loc["one", "n"] == 1 and np.isnan(t.loc["one", "ci_low_pps"])  # no interval from one value


def test_config_table_interval_covers_the_known_mean_at_its_level(tmp_path):
    # 300 configurations, 3 repetitions each, throughput ~ N(80 kpps, 1.5 kpps).
    rng = np.random.default_rng(11)
    values = {f"m{i}": rng.normal(80_000.0, 1_500.0, 3) for i in range(300)}
    p = _records(tmp_path / "a.jsonl", values)
    t = analysis.config_table(results.searches_frame(p), results.not_realizable_frame(p),
                              {"model": list(values), "frame_size": [64]}, "ndr")
    covered = ((t["ci_low_pps"] <= 80_000) & (80_000 <= t["ci_high_pps"])).mean()
    assert 0.92 <= covered <= 0.98, covered
    assert (t["n_irregular"] == 0).all()


# --------------------------------------------------------------------------- latency under load
def _latency_records(path, scales):
    """Throughput searches plus latency trials whose probes are 1..10 000 x scale ns (known percentiles).

    ``scales`` = {(load_fraction, repetition): scale}.
    """
    from nfvlab.traffic.stats import DirectionStats, LatencyStats, encode_histogram, histogram_of
    from nfvlab.trial import TrialResult

    with RecordWriter(path, "a", {}, provenance={}) as rec:
        for rep in range(3):
            rec.search({"goal": "ndr", "method": "synthetic", "loss_ratio": 0.0, "throughput_pps": 100_000.0},
                       model="macvlan", frame_size=64, repetition=rep, goal="ndr")
        for (fraction, rep), scale in scales.items():
            values = np.arange(1, 10_001) * scale
            lat = LatencyStats(10_000, 10_000, min_ns=float(scale), max_ns=10_000.0 * scale,
                               p50_ns=5000.0 * scale, hdr_histogram=encode_histogram(histogram_of(values)))
            d = DirectionStats("a", "b", 10_000, 10_000, 10_000, 1.0, lat)
            rec.trial(TrialResult(max(fraction * 100_000, 1000), 1.0, 64, (d,)), purpose="latency", goal="ndr",
                      load_fraction=fraction, repetition=rep, model="macvlan")
    return path


def test_latency_table_and_spectrum_figures_from_histograms(tmp_path):
    scales = {(f, rep): int((1 + 4 * f) * (10 + rep)) for f in (0.0, 0.5) for rep in range(3)}
    p = _latency_records(tmp_path / "a.jsonl", scales)
    t = experiments.tables("a", p, ["macvlan"])["latency"]
    assert list(t.columns[:5]) == ["model", "frame_size", "goal", "load_fraction", "percentile"]
    assert len(t) == 2 * 5 and (t["n"] == 3).all()
    row = t[(t["load_fraction"] == 0.5) & (t["percentile"] == "p99")].iloc[0]
    expect = [9900 * scales[(0.5, rep)] for rep in range(3)]
    assert row["mean_ns"] == pytest.approx(np.mean(expect), rel=1e-3)
    assert row["sd_ns"] == pytest.approx(np.std(expect, ddof=1), rel=1e-2)
    paths = experiments.write_experiment("a", p, ["macvlan"], tmp_path / "t", tmp_path / "f", tmp_path / "m.json")
    names = [x.name for x in paths]
    assert "experiment_a_latency.csv" in names and "experiment_a_latency_macvlan.png" in names
    again = experiments.write_experiment("a", p, ["macvlan"], tmp_path / "t2", tmp_path / "f2", tmp_path / "m2.json")
    assert [x.read_bytes() for x in paths] == [x.read_bytes() for x in again]


def test_irregular_results_are_named_for_the_figures(tmp_path):
    p = _records(tmp_path / "a.jsonl", {"m": [100.0, 102.0, 104.0], "ok": [90.0, 91.0]},
                 regular={("m", 0): False, ("m", 2): False})
    t = analysis.config_table(results.searches_frame(p), results.not_realizable_frame(p),
                              {"model": ["m", "ok"], "frame_size": [64]}, "ndr")
    note = analysis.irregular_note(t, ["model", "frame_size"])
    assert note.startswith("irregular (RFC 9971") and note.endswith(": m 64 (2 of 3)")
    assert analysis.irregular_note(t[t["model"] == "ok"], ["model"]) is None
    fig = analysis.throughput_figure(t, "t", tmp_path / "f.png", dpi=50)
    assert fig.stat().st_size > 0


def test_nfvlab_analyze_judges_with_the_claims_design_it_is_given(tmp_path, capsys):
    from conftest import REPO

    from nfvlab import cli

    p = tmp_path / "a.jsonl"
    caps = {"smartnic-direct": 120_000, "afxdp-cni": 190_000, "ovs-dpdk-vhost": 120_000, "ovs-afxdp": 60_000}
    write(p, caps)
    narrow = tmp_path / "claims.yaml"
    narrow.write_text((REPO / "params/claims.yaml").read_text().replace("order_margin: 0.05", "order_margin: 0.0001"))
    verdicts = {}
    for name, design in (("default", REPO / "params/claims.yaml"), ("narrow", narrow)):
        assert cli.main(["analyze", "a", "--params", str(REPO / "params/quick/experiment_a.yaml"), "--records", str(p),
                         "--tables", str(tmp_path / name), "--figures", str(tmp_path / f"{name}f"),
                         "--metrics", str(tmp_path / f"{name}.json"), "--claims", str(design)]) == 0
        table = pd.read_csv(tmp_path / name / "experiment_a_claims.csv")
        verdicts[name] = table.loc[table["claim"].str.startswith(A2), "verdict"].iloc[0]
    # Equal capacities: shown equal within 5 %, not within 0.01 % (the search's width is 0.2 %).
    assert verdicts == {"default": "contradicted", "narrow": "inconclusive"}
    bad = tmp_path / "bad.yaml"
    bad.write_text("alpha: 2\n")
    assert cli.main(["analyze", "a", "--params", str(REPO / "params/quick/experiment_a.yaml"), "--records", str(p),
                     "--tables", str(tmp_path / "b"), "--metrics", str(tmp_path / "b.json"),
                     "--claims", str(bad)]) != 0
    assert "--claims" in capsys.readouterr().err


def _bounded(rates: dict, limited: set) -> pd.DataFrame:
    """Search rows (3 repetitions, goal width 2 %) of each model's ``rates``; ``limited``: the models
    whose every search is flagged generator-limited (a lower bound of the DUT's NDR)."""
    rows = [{"model": m, "throughput_pps": r * f, "resolution": 0.02, "repetition": i, "generator_limited": m in limited}
            for m, r in rates.items() for i, f in enumerate((0.99, 1.0, 1.01))]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("rates, limited, verdict", [
    # two searches that stopped at the same top: as values "no practical difference", but both are
    # lower bounds (seen: the OVS models capped by a low generator ceiling)
    ({"x": 14_000.0, "y": 14_000.0}, {"x", "y"}, "inconclusive"),
    ({"x": 14_000.0, "y": 14_000.0}, {"y"}, "contradicted"),  # x a value, y at least 14 k: x > y false
    ({"x": 14_000.0, "y": 14_000.0}, set(), "contradicted"),
    ({"x": 30_000.0, "y": 14_000.0}, {"x"}, "holds"),         # a bound above a value: above all the more
    ({"x": 30_000.0, "y": 14_000.0}, {"y"}, "inconclusive"),  # above a bound: y may be higher
    ({"x": 10_000.0, "y": 14_000.0}, {"x"}, "inconclusive"),  # a bound below: x may be higher
])
def test_an_order_claim_never_reads_a_lower_bound_as_equal_or_below_nor_claims_above_one(rates, limited, verdict):
    status = {m: "measured" for m in rates}
    (row,) = analysis.claim_rows("c", "64 B", [["x", "y"]], _bounded(rates, limited), "model", status)
    assert row["verdict"] == verdict, row
    if verdict == "inconclusive" and limited:
        assert "a lower bound (generator-limited)" in row["reason"], row["reason"]
