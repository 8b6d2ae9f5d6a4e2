"""Experiment E's analysis (nfvlab.analysis_cni) on synthetic records with known statistics.

Records are written with the real RecordWriter; every value is ``base x (1 + 0.01 (rep - 1))``
over three repetitions, so each configuration's mean is ``base``, its sd ``0.01 base`` and its
95 % t-interval ``base +- t(0.975, 2) 0.01 base / sqrt(3)``. One "world" makes every claim of
the seed true, the other makes each false, so every testable verdict is checked both ways.
"""
import json
import math

import pandas as pd
import pytest
from scipy import stats as st

from nfvlab import analysis, analysis_cni, experiments
from nfvlab import claims as nfvlab_claims
from nfvlab.records import RecordWriter

REPS = 3
IPIP_WHY = "the kernel cannot create ipip devices (Error: Unknown device type.)"
MTUS = (1500, 9000)
SMALL, LARGE = 1000, 1_000_000


def seed_world(proto, path, mtu, direction, size):
    """Every claim of the seed holds: direct 10 Gbit/s at any MTU, vxlan 4 -> 8, node-pod 25 % above pod-pod."""
    if proto == "tcp":
        base = 10.0 if path == "direct" else {1500: 4.0, 9000: 8.0}[mtu]
        return base * (1.0 if direction == "node-pod" else 0.8) * 1e9
    if size == SMALL:
        return 20_000.0
    return 1000.0 if direction == "host-pod" and mtu == 9000 else 800.0


def contrary_world(proto, path, mtu, direction, size):
    """Every claim is false: vxlan above direct, MTU 9000 worse for vxlan and 50 % better for direct, ..."""
    if proto == "tcp":
        base = {1500: 5.0, 9000: 7.5}[mtu] if path == "direct" else {1500: 9.0, 9000: 8.0}[mtu]
        return base * (0.8 if direction == "node-pod" else 1.0) * 1e9
    if size == SMALL:
        return 20_000.0 if direction == "host-pod" else 10_000.0
    return 800.0 if direction == "host-pod" else 1000.0


def write_records(path, world, *, paths=("direct", "vxlan"), ipip=True, end_completed=True, twin=None):
    """``twin``: an A/A control (label ``arm: twin``) after each node-pod run, at ``twin`` x its rate
    and a noise of its own (``1 + 0.01 ((rep + 1) % 3 - 1)``: mean 1, the repetitions' log ratios
    -0.02 .. +0.02 around ``log twin``)."""
    with RecordWriter(path, "e-cni-tcp-http", {"repetitions": REPS}, provenance={}) as rec:
        if ipip:
            for mtu in MTUS:
                rec.note(f"not realizable: {IPIP_WHY}", kind="not-realizable", data_path="ipip", link_mtu_bytes=mtu)
        for p in paths:
            for mtu in MTUS:
                for rep in range(REPS):
                    noise = 1 + 0.01 * (rep - 1)
                    labels = {"data_path": p, "link_mtu_bytes": mtu, "pod_mtu_bytes": mtu - (50 if p == "vxlan" else 0),
                              "repetition": rep, "segmentation_offload": False}
                    for d in ("node-pod", "pod-pod"):
                        bps = world("tcp", p, mtu, d, None) * noise
                        rec.measurement("iperf3", {"goodput_bps": bps, "sent_bps": bps, "received_bytes": int(bps / 8),
                                                   "duration_s": 1.0, "retransmits": rep, "parallel_streams": 4},
                                        protocol="tcp", direction=d, file_bytes=None, **labels)
                        if twin is not None and d == "node-pod":
                            t = world("tcp", p, mtu, d, None) * twin * (1 + 0.01 * ((rep + 1) % 3 - 1))
                            rec.measurement("iperf3", {"goodput_bps": t, "sent_bps": t, "received_bytes": int(t / 8),
                                                       "duration_s": 1.0, "retransmits": 0, "parallel_streams": 4},
                                            protocol="tcp", direction=d, file_bytes=None, arm="twin", **labels)
                    for d in ("host-pod", "host-service"):
                        for size in (SMALL, LARGE):
                            rps = world("http", p, mtu, d, size) * noise
                            rec.measurement("wrk", {"requests_per_s": rps, "transfer_bytes_per_s": rps * (size + 250),
                                                    "requests": int(rps), "transfer_bytes": int(rps * (size + 250)),
                                                    "duration_s": 1.0, "errors": 0, "latency_mean_us": 100.0,
                                                    "latency_p50_us": 90, "latency_p90_us": 150,
                                                    "latency_p99_us": 200 + rep, "latency_max_us": 300},
                                            protocol="http", direction=d, file_bytes=size, **labels)
    return path


def _verdicts(claims: pd.DataFrame, claim: str) -> list[str]:
    rows = claims[claims["claim"].str.startswith(claim)]
    assert len(rows), claim
    return list(rows["verdict"])


def test_tcp_table_has_the_known_means_intervals_and_the_reason_for_ipip(tmp_path):
    tabs = analysis_cni.tables(write_records(tmp_path / "e.jsonl", seed_world))
    tcp = tabs["tcp"].set_index(["data_path", "link_mtu_bytes", "direction"])
    row = tcp.loc[("vxlan", 9000, "pod-pod")]
    half = st.t.ppf(0.975, REPS - 1) * 0.01 * 6.4 / math.sqrt(REPS)  # base 8 x 0.8 Gbit/s
    assert row["status"] == "measured" and row["n"] == REPS and row["pod_mtu_bytes"] == 8950
    assert row["mean_gbps"] == pytest.approx(6.4, rel=1e-12)
    assert (row["ci_low_gbps"], row["ci_high_gbps"]) == (pytest.approx(6.4 - half, rel=1e-9),
                                                         pytest.approx(6.4 + half, rel=1e-9))
    assert row["cv"] == pytest.approx(0.01, rel=1e-9) and row["retransmits_mean"] == 1.0
    ipip = tcp.loc[("ipip", 1500, "node-pod")]
    assert ipip["status"] == f"not realizable: {IPIP_WHY}" and ipip["n"] == 0 and math.isnan(ipip["mean_gbps"])
    assert list(tabs["tcp"].columns) == ["data_path", "link_mtu_bytes", "direction", *analysis_cni.TCP_STATS]
    nr = tabs["not_realizable"]
    assert list(nr.columns) == analysis_cni.NOT_REALIZABLE_COLUMNS
    assert list(zip(nr["data_path"], nr["link_mtu_bytes"], nr["reason"])) == [("ipip", m, IPIP_WHY) for m in MTUS]


def test_http_table_has_requests_per_second_transfer_and_latency_means(tmp_path):
    tabs = analysis_cni.tables(write_records(tmp_path / "e.jsonl", seed_world))
    http = tabs["http"].set_index(["data_path", "link_mtu_bytes", "direction", "file_bytes"])
    row = http.loc[("direct", 9000, "host-pod", LARGE)]
    assert row["mean_rps"] == pytest.approx(1000.0, rel=1e-12) and row["n"] == REPS
    assert row["transfer_gbps"] == pytest.approx(1000.0 * (LARGE + 250) * 8 / 1e9, rel=1e-12)
    assert row["latency_p99_us_mean"] == 201.0 and row["errors"] == 0
    assert len(tabs["http"]) == 3 * 2 * 2 * 2  # paths (ipip too) x MTUs x directions x sizes


def test_every_seed_claim_holds_in_the_seed_world(tmp_path):
    claims = analysis_cni.tables(write_records(tmp_path / "e.jsonl", seed_world))["claims"]
    assert list(claims.columns) == analysis.CLAIM_COLUMNS
    assert set(claims["verdict"]) <= set(nfvlab_claims.VERDICTS)
    testable_direct = claims[claims["claim"].str.startswith("direct routing beats overlays (TCP goodput) -- testable")]
    assert list(testable_direct["verdict"]) == ["holds"] * 4  # 2 directions x 2 MTUs, direct > vxlan
    assert _verdicts(claims, "larger MTU helps overlays") == ["holds", "holds", "not testable", "not testable"]
    assert _verdicts(claims, "MTU barely matters for direct routing") == ["holds", "holds"]
    assert _verdicts(claims, "node to pod beats pod to pod") == ["holds"] * 4
    assert _verdicts(claims, "host to pod ~ host to service for small files") == ["holds"] * 4
    assert _verdicts(claims, "host to pod beats host to service for large files") == ["holds"] * 2
    eq = claims[claims["claim"].str.startswith("MTU barely")].iloc[0]
    assert eq["test"] == nfvlab_claims.TEST_NAME and eq["effect_size"] == pytest.approx(0.0, abs=1e-12)
    assert "margin +-10%" in eq["condition"] and eq["n"] == REPS


def test_every_testable_claim_is_contradicted_in_the_contrary_world(tmp_path):
    claims = analysis_cni.tables(write_records(tmp_path / "e.jsonl", contrary_world))["claims"]
    testable = claims[claims["verdict"] != "not testable"]
    assert set(testable["verdict"]) == {"contradicted"}, testable[["claim", "condition", "verdict", "detail"]]
    assert len(testable) == 4 + 2 + 2 + 4 + 4 + 2
    eq = claims[claims["claim"].str.startswith("MTU barely")].iloc[0]
    assert eq["effect_size"] == pytest.approx(0.5, rel=1e-9)  # 7.5 vs 5 Gbit/s: 50 % apart


def test_ipip_claims_are_not_testable_with_the_hosts_reason(tmp_path):
    claims = analysis_cni.tables(write_records(tmp_path / "e.jsonl", seed_world))["claims"]
    ipip = claims[claims["claim"].str.startswith("IPIP slightly beats VXLAN")]
    assert len(ipip) == 4 and set(ipip["verdict"]) == {"not testable"}
    assert all(d == f"on this host: ipip: not realizable: {IPIP_WHY}" for d in ipip["detail"])
    # Without ipip in the experiment at all, the claim says so instead of a kernel reason.
    bare = analysis_cni.tables(write_records(tmp_path / "b.jsonl", seed_world, ipip=False))["claims"]
    assert set(bare.loc[bare["claim"].str.startswith("IPIP"), "detail"]) == {
        "on this host: ipip: not in the experiment"}


def test_equivalence_is_inconclusive_when_the_noise_is_wider_than_the_margin():
    a = pd.DataFrame({"mtu": [1500] * 3 + [9000] * 3, "v": [10.0, 11.0, 9.0, 12.0, 8.0, 10.0]})
    rows = analysis.claim_rows("c", "x", [(9000, 1500)], a, "mtu", {1500: "measured", 9000: "measured"},
                               kind="equality", value="v")
    assert [r["verdict"] for r in rows] == ["inconclusive"]
    assert "neither shown within nor beyond +-10%" in rows[0]["reason"] and rows[0]["n_needed"] > 3


def test_write_experiment_is_deterministic_and_its_metrics_count_the_verdicts(tmp_path):
    records = write_records(tmp_path / "e.jsonl", seed_world)
    first = experiments.write_experiment("e", records, None, tmp_path / "t1", tmp_path / "f1", tmp_path / "m1.json")
    second = experiments.write_experiment("e", records, None, tmp_path / "t2", tmp_path / "f2", tmp_path / "m2.json")
    assert [p.name for p in first] == ["experiment_e_tcp.csv", "experiment_e_http.csv",
                                       "experiment_e_not_realizable.csv", "experiment_e_claims.csv",
                                       "experiment_e_tcp_goodput.png", "experiment_e_http_requests.png", "m1.json"]
    for a, b in zip(first, second):
        assert a.read_bytes() == b.read_bytes(), a.name
    metrics = json.loads((tmp_path / "m1.json").read_text())
    claims = pd.read_csv(tmp_path / "t1/experiment_e_claims.csv")
    assert {k: v for k, v in metrics.items() if k.startswith("claims/")} == {
        f"claims/{v.replace(' ', '_').replace('-', '_')}": int((claims["verdict"] == v).sum()) for v in nfvlab_claims.VERDICTS}
    assert metrics["tcp/vxlan/9000/pod-pod/goodput_gbps"] == 6.4
    assert metrics["http/direct/9000/host-pod/1000000/requests_per_s"] == 1000.0


def test_nfvlab_analyze_e_writes_the_stage_outputs_and_refuses_records_without_results(tmp_path, capsys):
    from conftest import REPO

    from nfvlab import cli

    records = write_records(tmp_path / "e.jsonl", seed_world)
    args = ["analyze", "e", "--params", str(REPO / "params/quick/experiment_e.yaml"), "--tables",
            str(tmp_path / "tables"), "--figures", str(tmp_path / "figs"), "--metrics", str(tmp_path / "m.json")]
    assert cli.main([*args, "--records", str(records)]) == 0
    assert capsys.readouterr().out.split() == [
        str(tmp_path / "tables" / f"experiment_e_{n}.csv") for n in analysis_cni.TABLE_NAMES] + [
        str(tmp_path / "figs/experiment_e_tcp_goodput.png"), str(tmp_path / "figs/experiment_e_http_requests.png"),
        str(tmp_path / "m.json")]
    with RecordWriter(tmp_path / "empty.jsonl", "e", {}, provenance={}):
        pass
    assert cli.main([*args, "--records", str(tmp_path / "empty.jsonl")]) == 2
    assert "no completed run with results" in capsys.readouterr().err


@pytest.mark.parametrize("adaptive, verdict", [(None, "holds"), ({"max_repetitions": 8, "step": 1}, "inconclusive")])
def test_an_adaptive_run_is_judged_at_its_looks_level_a_fixed_n_run_at_the_full_alpha(tmp_path, adaptive, verdict):
    """direct [10, 10.5] vs vxlan [8, 8.3] Gbit/s: p = 0.021 (Welch on logs, 2 repetitions). A fixed-n run
    tests it at alpha = 0.05 (holds); an adaptive run's first look of Plan(2, 1, 8) spends only
    0.05 ln(1 + (e - 1) 2/8) = 0.018 of it (inconclusive: the runner would have added repetitions)."""
    params = {"repetitions": 2, **({"adaptive": adaptive} if adaptive else {})}
    path = tmp_path / "e.jsonl"
    with RecordWriter(path, "e-cni-tcp-http", params, provenance={}) as rec:
        for rep in range(2):
            for p, gbps in (("direct", (10.0, 10.5)), ("vxlan", (8.0, 8.3))):
                rec.measurement("iperf3", {"goodput_bps": gbps[rep] * 1e9, "retransmits": 0}, data_path=p,
                                link_mtu_bytes=1500, pod_mtu_bytes=1500, protocol="tcp", direction="node-pod",
                                file_bytes=None, repetition=rep, segmentation_offload=False)
    assert analysis.plan_of(path) == (nfvlab_claims.Plan(2, 1, 8) if adaptive else None)
    rows = analysis_cni.tables(path)["claims"]
    row = rows[rows["claim"].str.startswith("direct routing beats overlays")].iloc[-1]  # the testable part
    assert row["condition"] == "node-pod, link MTU 1500 B" and row["pair"] == "direct > vxlan"
    assert row["verdict"] == verdict


@pytest.mark.parametrize("twin, verdict", [(1.0, "holds"), (1.3, "contradicted")])
def test_the_aa_control_is_judged_on_its_twin_alone_and_leaves_tables_and_other_claims_as_they_were(
        tmp_path, twin, verdict):
    """Twin runs at the original's rate (own noise): every lab's A/A row holds (paired TOST within the
    10 % margin: log ratios -0.02..0.02, se 0.01 at n = 3); at 1.3 x it: shown beyond, contradicted.
    Either way the tables and the seed's claims are those of the same records without twins."""
    plain = analysis_cni.tables(write_records(tmp_path / "plain.jsonl", seed_world))
    got = analysis_cni.tables(write_records(tmp_path / "twin.jsonl", seed_world, twin=twin))
    for name in ("tcp", "http", "not_realizable"):
        pd.testing.assert_frame_equal(got[name], plain[name])
    control = got["claims"]["claim"] == "A/A control: no difference between a tool run and its twin (one lab, side by side)"
    pd.testing.assert_frame_equal(got["claims"][~control].reset_index(drop=True), plain["claims"])
    rows = got["claims"][control]
    assert list(rows["condition"]) == [f"{p}, link MTU {m} B, tcp node-pod; margin +-10%"
                                       for p in ("direct", "vxlan") for m in MTUS]
    assert list(rows["verdict"]) == [verdict] * 4 and list(rows["n"]) == [REPS] * 4
    assert list(rows["pair"]) == ["original ~ twin"] * 4  # the original named, not "None"
    assert all("paired t" in t for t in rows["test"])
    # the ratio twin / original, paired by repetition: the known log ratios' mean
    logs = [math.log(twin * (1 + 0.01 * ((r + 1) % 3 - 1)) / (1 + 0.01 * (r - 1))) for r in range(REPS)]
    assert rows["effect_size"].iloc[0] == pytest.approx(1 / math.exp(sum(logs) / REPS) - 1, rel=1e-6) or \
        rows["effect_size"].iloc[0] == pytest.approx(math.exp(sum(logs) / REPS) - 1, rel=1e-6)
