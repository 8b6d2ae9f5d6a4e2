"""nfvlab.claimsets: the claims as data, read by the analysis and by the adaptive runner alike."""
from __future__ import annotations

import json

import pandas as pd

from conftest import REPO
from nfvlab import analysis_cni, claimsets
from nfvlab import adaptive_run, tool_runs
from nfvlab import params as P
from nfvlab.scenario.cni import step_labels, steps


def _quick_e() -> P.CniExperimentParams:
    return P.load(REPO / "params/quick/experiment_e.yaml", P.CniExperimentParams)


def test_every_claim_level_of_the_quick_grid_is_a_configuration_the_runner_measures():
    """The keys the specs give are the keys the runner gives its tool runs' labels: none is a typo
    the driver would wait for forever (ipip's are the grid's too; that lab refuses them later)."""
    p = _quick_e()
    runner = {adaptive_run.cni_config(step_labels(sc, s)) for sc in tool_runs.cni_scenarios(p) for s in steps(p.grid)}
    specs = claimsets.cni_claims_of(p)
    wanted = {s.config(v) for s in specs for v in s.levels()}
    assert wanted <= runner, sorted(wanted - runner)
    assert len(wanted) >= 10
    # the driver's reasons read: labels in lab order, MTUs as whole numbers
    assert specs[0].config("direct") == "data_path=direct, link_mtu_bytes=1500, protocol=tcp, direction=node-pod"


def test_a_key_is_the_same_whatever_order_or_float_the_labels_come_in():
    a = claimsets.config_key({"direction": "node-pod", "protocol": "tcp", "link_mtu_bytes": 1500.0,
                              "data_path": "direct"})
    b = claimsets.config_key({"data_path": "direct", "link_mtu_bytes": 1500, "protocol": "tcp",
                              "direction": "node-pod"})
    assert a == b == "data_path=direct, link_mtu_bytes=1500, protocol=tcp, direction=node-pod"
    assert claimsets.config_key({"data_path": "direct", "link_mtu_bytes": 1450}) != claimsets.config_key(
        {"data_path": "direct", "link_mtu_bytes": 1500})


def test_a_claim_is_restricted_to_its_testable_part_as_the_analysis_judges_it():
    spec = next(s for s in claimsets.cni_claims_of(_quick_e()) if s.claim.startswith("direct routing"))
    direct, vxlan = spec.config("direct"), spec.config("vxlan")
    # ipip not measured: direct > vxlan is what is left (the analysis' "testable part")
    # two labs measured apart: not paired
    assert spec.spec(present={direct, vxlan}) == ("order", [[direct, vxlan]], False)
    assert spec.spec(present={direct}) is None
    assert spec.spec()[1] == [[direct, vxlan], [direct, spec.config("ipip")]]
    assert claimsets.testable_part([["a", "b", "c"], ["a", "c"]], {"b"}) == [("a", "c")]


def test_only_the_claims_comparing_directions_of_one_lab_are_paired():
    specs = claimsets.cni_claims_of(_quick_e())
    paired = {s.claim for s in specs if s.paired}
    assert paired == {"node to pod beats pod to pod (TCP goodput)",
                      "host to pod ~ host to service for small files (HTTP requests/s)",
                      "host to pod beats host to service for large files at large MTU (HTTP requests/s)",
                      claimsets.CNI_CONTROL_CLAIM}
    assert all(s.by == "direction" for s in specs if s.paired and s.claim != claimsets.CNI_CONTROL_CLAIM)
    assert all(s.by != "direction" for s in specs if not s.paired)


def test_the_aa_control_compares_a_tool_run_with_its_twin_in_every_lab_of_the_grid():
    """One A/A claim per (path, MTU) of the grid, an equality of node-pod TCP and its twin, paired;
    its original's key is the tool run's own (no ``arm``), the twin's carries ``arm=twin`` as the
    runner labels it (scenario.cni.TWIN)."""
    from nfvlab.scenario.cni import TWIN
    p = _quick_e()
    control = [s for s in claimsets.cni_claims_of(p) if s.claim == claimsets.CNI_CONTROL_CLAIM]
    assert [s.condition for s in control] == [f"{path}, link MTU {mtu} B, tcp node-pod" for path in
                                              ("direct", "vxlan", "ipip") for mtu in (1500, 9000)]
    spec = control[0]
    assert (spec.kind, spec.by, spec.chains, spec.paired) == ("equality", "arm", ((None, TWIN),), True)
    assert spec.config(None) == "data_path=direct, link_mtu_bytes=1500, protocol=tcp, direction=node-pod"
    assert spec.config(TWIN) == spec.config(None) + ", arm=twin"
    assert not list(claimsets.cni_control_claims([("direct", 1500)], None))  # no control asked for


def test_tool_rate_is_the_column_the_analysis_compares():
    assert claimsets.tool_rate("tcp", {"goodput_bps": 2.5e9}) == 2.5
    assert claimsets.tool_rate("http", {"requests_per_s": 1234.0}) == 1234.0
    assert claimsets.tool_rate("tcp", {}) is None
    assert claimsets.tool_rate("http", {"requests_per_s": float("nan")}) is None


def _record(tmp_path, rows):
    """A completed experiment E run of tool runs ``(path, mtu, protocol, direction, size, rep, value)``."""
    recs = [{"type": "run", "format": 1, "run_id": "r1", "experiment": "e-test", "started_at": "t",
             "params": {"repetitions": 2}, "provenance": {}}]
    for path, mtu, proto, d, size, rep, v in rows:
        result = {"goodput_bps": v * 1e9, "retransmits": 0} if proto == "tcp" else {
            "requests_per_s": v, "transfer_bytes_per_s": v * 1000, "errors": 0, "latency_p99_us": 100.0}
        recs.append({"type": "measurement", "run_id": "r1", "time": "t", "tool": "iperf3" if proto == "tcp" else "wrk",
                     "labels": {"data_path": path, "link_mtu_bytes": mtu, "pod_mtu_bytes": mtu, "protocol": proto,
                                "direction": d, "file_bytes": size, "repetition": rep,
                                "segmentation_offload": False}, "result": result})
    recs.append({"type": "end", "run_id": "r1", "ended_at": "t", "status": "completed", "error": None, "trials": 0})
    f = tmp_path / "e.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return f


def test_the_analysis_rows_are_the_specs_of_the_levels_it_found(tmp_path):
    """One source of truth: every claims-table row of experiment E is a spec of claimsets.cni_claims
    over the levels of its tables, in the same order (the analysis adds the margin to equality rows
    and leaves out rows whose levels none was measured)."""
    rows = []
    for rep in (0, 1):
        for path, mtu in (("direct", 1500), ("direct", 9000), ("vxlan", 1500), ("vxlan", 9000)):
            for d in ("node-pod", "pod-pod"):
                rows.append((path, mtu, "tcp", d, None, rep, 3.0 + rep + (path == "direct") + mtu / 9000))
            for d in ("host-pod", "host-service"):
                for size in (1000, 1000000):
                    rows.append((path, mtu, "http", d, size, rep, 1000.0 + 10 * rep + (d == "host-pod")))
    tabs = analysis_cni.tables(_record(tmp_path, rows))
    got = [(r["claim"].split(" -- ")[0], r["condition"].split("; margin")[0]) for _, r in tabs["claims"].iterrows()]
    tcp, http = tabs["tcp"], tabs["http"]
    specs = list(claimsets.cni_claims(dict.fromkeys(tcp["data_path"]), dict.fromkeys(tcp["direction"]),
                                 list(dict.fromkeys(tcp["link_mtu_bytes"])), dict.fromkeys(http["data_path"]),
                                 sorted(set(http["link_mtu_bytes"])), sorted(set(http["file_bytes"]))))
    want = [(s.claim, s.condition) for s in specs]
    assert [g for g in dict.fromkeys(got)] == [w for w in want if w in got]
    assert len(set(got)) >= 12 and not (set(got) - set(want))
    assert all(s.if_measured for s in specs if (s.claim, s.condition) not in got)
    assert isinstance(tabs["claims"], pd.DataFrame)


def test_c_claims_are_the_claims_table_rows_in_order(tmp_path):
    """Experiment C's claims C.2 as data: per frame size at s1, then per model at 1518 B; tables_c's
    claims table lists exactly these claims and conditions, in this order."""
    from nfvlab.experiments.c import tables_c
    from nfvlab.records import RecordWriter

    specs = list(claimsets.chain_claims(["chain-userspace", "chain-combined"], [64, 1518]))
    assert [(s.claim, s.condition, s.by, s.where) for s in specs] == [
        ("C.2: combined > user-space only (chain-combined > chain-userspace)", "numa=s1, 64 B", "model",
         {"numa": "s1", "frame_size": 64}),
        ("C.2: combined > user-space only (chain-combined > chain-userspace)", "numa=s1, 1518 B", "model",
         {"numa": "s1", "frame_size": 1518}),
        ("C.2: s1 best; splitting pods across NUMA nodes (s2, s3, s5, s6) degrades", "chain-userspace, 1518 B",
         "numa", {"model": "chain-userspace", "frame_size": 1518}),
        ("C.2: s1 best; splitting pods across NUMA nodes (s2, s3, s5, s6) degrades", "chain-combined, 1518 B",
         "numa", {"model": "chain-combined", "frame_size": 1518})]
    assert specs[0].chains == (("chain-combined", "chain-userspace"),)
    assert specs[2].chains == tuple(("s1", f"s{i}") for i in range(2, 7))
    with RecordWriter(tmp_path / "c.jsonl", "c-test", {}) as rec:
        for rep in range(3):
            for m, pps in (("chain-userspace", 50_000.0), ("chain-combined", 60_000.0)):
                for fs in (64, 1518):
                    rec.search({"goal": "ndr", "method": "synthetic", "throughput_pps": pps * (1 + rep / 100)},
                               model=m, pinning="plan", numa="s1", frame_size=fs, repetition=rep)
    claims = tables_c(tmp_path / "c.jsonl", ["chain-userspace", "chain-combined"])["claims"]
    got = list(dict.fromkeys((r["claim"].split(" -- ")[0], r["condition"]) for _, r in claims.iterrows()))
    assert got == [(s.claim, s.condition) for s in specs]


def test_a_claims_are_the_claims_table_rows_in_order(tmp_path):
    """Experiment A's claim A.2 as data: two chains (smartnic-direct, afxdp-cni above ovs-dpdk-vhost above
    ovs-afxdp), per frame size; tables_a's claims table lists exactly these, in this order, and judges
    each chain as the spec says (a synthetic run where the chain holds at 64 B and is reversed at 1518 B)."""
    from nfvlab.experiments.a import tables_a
    from nfvlab.records import RecordWriter

    specs = list(claimsets.model_claims([64, 1518]))
    assert [(s.condition, s.chains, s.where) for s in specs] == [
        ("64 B", (("smartnic-direct", "ovs-dpdk-vhost", "ovs-afxdp"),), {"frame_size": 64}),
        ("1518 B", (("smartnic-direct", "ovs-dpdk-vhost", "ovs-afxdp"),), {"frame_size": 1518}),
        ("64 B", (("afxdp-cni", "ovs-dpdk-vhost", "ovs-afxdp"),), {"frame_size": 64}),
        ("1518 B", (("afxdp-cni", "ovs-dpdk-vhost", "ovs-afxdp"),), {"frame_size": 1518})]
    rates = {"smartnic-direct": 400e3, "afxdp-cni": 300e3, "ovs-dpdk-vhost": 100e3, "ovs-afxdp": 50e3}
    with RecordWriter(tmp_path / "a.jsonl", "a-test", {}) as rec:
        for rep in range(3):
            for m, pps in rates.items():
                for fs in (64, 1518):
                    pps_fs = pps if fs == 64 or m != "ovs-afxdp" else 200e3  # reversed at 1518 B
                    rec.search({"goal": "ndr", "method": "synthetic", "throughput_pps": pps_fs * (1 + rep / 100)},
                               model=m, pinning="plan", numa="s1", frame_size=fs, repetition=rep)
    claims = tables_a(tmp_path / "a.jsonl")["claims"]
    assert list(zip(claims["claim"], claims["condition"])) == [(s.claim, s.condition) for s in specs]
    assert list(claims["verdict"]) == ["holds", "contradicted"] * 2


def test_the_search_claims_of_a_grid_a_b_and_c_only():
    b = P.load_experiment(REPO / "params/quick/experiment_b.yaml", REPO / "params/lab.yaml")
    c = P.load_experiment(REPO / "params/quick/experiment_c.yaml", REPO / "params/lab.yaml")
    assert [s.condition for s in claimsets.search_claims_of(b)][:2] == ["ovs-dpdk-vhost, numa=s1, 1518 B",
                                                                       "ovs-dpdk-vhost, numa=s2, 1518 B"]
    assert claimsets.key_labels(claimsets.search_claims_of(b)) == ("pinning", "model", "numa", "frame_size")
    assert [s.condition for s in claimsets.search_claims_of(c)] == [
        "numa=s1, 64 B", "numa=s1, 1518 B", "chain-userspace, 1518 B", "chain-combined, 1518 B"]
    a = P.load_experiment(REPO / "params/quick/experiment_a.yaml", REPO / "params/lab.yaml")
    assert [s.condition for s in claimsets.search_claims_of(a)] == ["64 B", "1518 B"] * 2
    assert claimsets.key_labels(claimsets.search_claims_of(a)) == ("model", "frame_size")
    for letter in "df":
        p = P.load_experiment(REPO / f"params/quick/experiment_{letter}.yaml", REPO / "params/lab.yaml")
        assert claimsets.search_claims_of(p) is None
