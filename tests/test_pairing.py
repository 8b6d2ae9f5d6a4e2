"""The paired phase (nfvlab.pairing): which comparisons, the arms' trials taking turns, and on real
packets, two tbf data paths of known capacities up at once, the idle one paused."""
import math
import threading
import time
from contextlib import contextmanager

import pytest

from nfvlab import claimsets, pairing
from nfvlab import params as P
from nfvlab.labs.embedded import EmbeddedLab
from nfvlab.labs.embedded.kernel import TBF_FRAMES
from nfvlab.records import RecordWriter, read_records
from nfvlab.scenario import KnownPath, Scenario
from nfvlab.system import processes
from nfvlab.system.hostlock import HostLock


def _state(pid: int) -> str:
    """The process's state letter (/proc/PID/stat field 3; T: stopped)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def _arms(*configs, limited=()):
    return {c: pairing.Arm(c, Scenario("linux-bridge"), 64, 1000.0, c in limited) for c in configs}


def test_comparisons_are_the_claims_pairs_once_each_after_one_control_of_the_most_compared():
    specs = list(claimsets.model_claims([64]))  # two chains: smartnic > vhost > afxdp, afxdp-cni > vhost > afxdp
    keys = {m: claimsets.config_key({"model": m, "frame_size": 64})
            for m in ("smartnic-direct", "afxdp-cni", "ovs-dpdk-vhost", "ovs-afxdp")}
    comps = pairing.plan_comparisons(specs, _arms(*keys.values()), alpha=0.05, control=True)
    assert comps[0].control and comps[0].a == comps[0].b and comps[0].a.config == keys["ovs-dpdk-vhost"]
    pairs = [(c.a.config, c.b.config) for c in comps[1:]]
    assert sorted(pairs) == sorted([(keys["smartnic-direct"], keys["ovs-dpdk-vhost"]),
                                    (keys["ovs-dpdk-vhost"], keys["ovs-afxdp"]), (keys["afxdp-cni"], keys["ovs-dpdk-vhost"])])
    # every pair belongs to a claim of two pairs: Bonferroni halves the alpha; the shared pair names both claims
    assert [c.alpha for c in comps[1:]] == [0.025] * 3
    shared = next(c for c in comps if (c.a.config, c.b.config) == (keys["ovs-dpdk-vhost"], keys["ovs-afxdp"]))
    assert len(shared.claims) == 2 and comps[0].alpha == 0.05


def test_the_pairs_whose_ndrs_differ_most_come_first():
    specs = list(claimsets.model_claims([64]))
    ndr = {"smartnic-direct": 400.0, "afxdp-cni": 120.0, "ovs-dpdk-vhost": 100.0, "ovs-afxdp": 50.0}
    arms = {claimsets.config_key({"model": m, "frame_size": 64}): pairing.Arm(
        claimsets.config_key({"model": m, "frame_size": 64}), Scenario(m), 64, v) for m, v in ndr.items()}
    comps = pairing.plan_comparisons(specs, arms, alpha=0.05, control=False)
    assert [(c.a.scenario.model, c.b.scenario.model) for c in comps] == [
        ("smartnic-direct", "ovs-dpdk-vhost"), ("ovs-dpdk-vhost", "ovs-afxdp"), ("afxdp-cni", "ovs-dpdk-vhost")]


def test_a_missing_configuration_leaves_the_claims_testable_part_and_a_limited_arm_no_control():
    specs = list(claimsets.model_claims([64]))
    vhost, afxdp = (claimsets.config_key({"model": m, "frame_size": 64}) for m in ("ovs-dpdk-vhost", "ovs-afxdp"))
    comps = pairing.plan_comparisons(specs, _arms(vhost, afxdp, limited=(vhost, afxdp)), alpha=0.05, control=True)
    # only vhost > afxdp is left, a claim of one pair now: the full alpha; no arm to control with
    assert [(c.a.config, c.b.config, c.alpha, c.control) for c in comps] == [(vhost, afxdp, 0.05, False)]
    assert pairing.plan_comparisons(specs, _arms(vhost), alpha=0.05, control=True) == []


def test_two_searches_trials_take_turns_and_one_that_ended_leaves_the_other_alone():
    switched, order = [], []
    turns = pairing._Turns("b", lambda name: switched.append(name))
    counts = {"a": 3, "b": 5}

    def arm(name):
        try:
            for _ in range(counts[name]):
                turns.take(name)
                order.append(name)
                time.sleep(0.001)
                turns.give(name)
        finally:
            turns.leave(name)

    threads = [threading.Thread(target=arm, args=(n,)) for n in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert order == ["b", "a", "b", "a", "b", "a", "b", "b"]
    assert switched == order  # the switch is asked before every trial (it skips a lab already running)


def test_an_aborted_turn_ends_the_waiting_search():
    turns = pairing._Turns("a", lambda name: None)
    out = []

    def waiting():
        try:
            turns.take("b")  # never its turn: a holds it
        except pairing._Aborted:
            out.append("aborted")

    t = threading.Thread(target=waiting)
    t.start()
    turns.abort()
    t.join(30)
    assert out == ["aborted"]


def test_paired_params_refuse_a_cap_below_the_first_look_naming_the_field():
    with pytest.raises(Exception, match="max_blocks: 3 is below first_blocks"):
        P.PairedParams(first_blocks=4, max_blocks=3)
    with pytest.raises(Exception, match="metric"):
        P.PairedParams(metric="mrr")


# ---------------------------------------------------------------------------------------------------
# real packets
# ---------------------------------------------------------------------------------------------------
FRAME = 128


class TwoCapacities(EmbeddedLab):
    """The embedded lab; a scenario of model ``m`` is a tbf bridge of ``capacities[m]`` pps."""

    def __init__(self, capacities):
        super().__init__()
        self.capacities = capacities

    @contextmanager
    def open(self, scenario, **kw):
        with super().open(Scenario("tbf-bridge", known_path=KnownPath(self.capacities[scenario.model], FRAME))) as s:
            yield s


def _run_paired(params, backend, comp, tmp_path):
    """Run one comparison as a run does (nfvlab.experiment: the host lock for the run, under which its
    labs may be two); its paired trials' records and its ``paired`` note's labels."""
    records = tmp_path / "r.jsonl"
    bar = type("Bar", (), {"note": lambda self, s: None, "trial": lambda self: None})()
    with HostLock("pairing test", for_run=True), \
            RecordWriter(records, "pairing-test", {"experiment": "pairing-test"}) as rec:
        pairing.run_paired(params, backend, lambda gen, fs: None, [comp], rec, bar)
    recs = read_records(records)
    trials = [r for r in recs if r["type"] == "trial" and r["labels"]["purpose"] == "paired"]
    note, = [r for r in recs if r["type"] == "note" and r["labels"].get("kind") == "paired"]
    return trials, note["labels"]


@pytest.mark.lab
def test_a_paired_comparison_of_two_known_paths_takes_turns_and_finds_the_faster(clean_host, tmp_path):
    """Arm a: a tbf path of 16 kpps, arm b: 4 kpps; NDR searches in lockstep, two blocks."""
    params = P.ExperimentParams(
        experiment="pairing-test", traffic={"frame_sizes": [FRAME], "latency_pps": 0, "bidirectional": False},
        search={"method": "mlrsearch", "pdr_loss_ratio": None, "relative_width": 0.05, "min_rate_pps": 1000,
                "initial_trial_duration_s": 0.3, "final_trial_duration_s": 0.3, "duration_sum_s": 0.3},
        paired={"metric": "ndr", "first_blocks": 2, "step": 1, "max_blocks": 2, "relative_width": 0.05})
    backend = TwoCapacities({"macvlan": 16_000, "host-routing": 4_000})
    a = pairing.Arm("model=macvlan", Scenario("macvlan"), FRAME, 15_000.0)
    b = pairing.Arm("model=host-routing", Scenario("host-routing"), FRAME, 3_800.0)
    comp = pairing.Comparison("model=macvlan | model=host-routing", a, b, 0.05, False, ("a claim",))
    trials, lab = _run_paired(params, backend, comp, tmp_path)
    assert {r["labels"]["block"] for r in trials} == {0, 1}
    for block in (0, 1):
        arms = [r["labels"]["arm"] for r in trials if r["labels"]["block"] == block]
        # while both searches run, their trials alternate; the one still going runs alone at the end
        both = min(arms.count("a"), arms.count("b"))
        assert all(x != y for x, y in zip(arms[:2 * both], arms[1:2 * both])), arms
    for r in trials:  # each arm's searches start at span (2) x its NDR
        assert r["result"]["rate_pps"] <= 2 * (15_000.0 if r["labels"]["arm"] == "a" else 3_800.0) + 1
    assert (lab["comparison"], lab["blocks"], lab["metric"], lab["control"]) == (comp.key, 2, "ndr", False)
    # 16 kpps against 4 kpps: the block's NDR ratio, whatever the host did, is far above 1 (each NDR is at
    # most its path's capacity over the trial plus the buffer; the slower path's at most ~4.3 kpps)
    assert lab["ratio"] > 1 and lab["ci_low"] <= lab["ratio"] <= lab["ci_high"]
    # every block's figure kept; two blocks: nothing trimmed, the ratio their mean's exp
    assert len(lab["block_log_ratios"]) == 2
    assert lab["ratio"] == pytest.approx(math.exp(sum(lab["block_log_ratios"]) / 2), rel=1e-4)
    # each block's searches start at a top lowered at random within one goal width (the load grid dithered)
    for arm, ndr in (("a", 15_000.0), ("b", 3_800.0)):
        tops = [max(r["result"]["rate_pps"] for r in trials if r["labels"]["arm"] == arm and r["labels"]["block"] == k)
                for k in (0, 1)]
        assert all(2 * ndr / 1.05 - 1 <= t <= 2 * ndr + 1 for t in tops) and tops[0] != tops[1], tops


def test_the_common_load_is_the_highest_ndr_either_arm_reached_below_the_generators_limit():
    a = pairing.Arm("x", Scenario("macvlan"), 64, 10_000.0, ndr_max_pps=12_000.0)
    b = pairing.Arm("y", Scenario("host-routing"), 64, 11_000.0)  # no maximum recorded: its median
    comp = pairing.Comparison("x | y", a, b, 0.05, False, ())
    assert pairing.common_load_pps(comp, 1.0, {"a": None, "b": None}) == 12_000.0
    assert pairing.common_load_pps(comp, 0.5, {"a": None, "b": None}) == 6_000.0
    assert pairing.common_load_pps(comp, 1.0, {"a": 100_000.0, "b": 12_500.0}) == pytest.approx(0.9 * 12_500)
    assert pairing.common_load_pps(pairing.Comparison("y | y", b, b, 0.05, True, ()), 1.0, {"a": 0}) == 11_000.0
    with pytest.raises(Exception, match="common_load"):
        P.PairedParams(common_load=0.2)


@pytest.mark.lab
def test_a_common_load_comparison_offers_both_arms_one_load_and_the_slower_forwards_its_capacity(clean_host,
                                                                                                  tmp_path):
    """Arm a: a tbf path of 16 kpps, arm b: 4 kpps; ABBA/BAAB trials, both at the highest NDR found (15 kpps)."""
    params = P.ExperimentParams(
        experiment="pairing-test", traffic={"frame_sizes": [FRAME], "latency_pps": 0, "bidirectional": False},
        paired={"metric": "common", "first_blocks": 2, "step": 1, "max_blocks": 2, "trial_duration_s": 0.5})
    backend = TwoCapacities({"macvlan": 16_000, "host-routing": 4_000})
    a = pairing.Arm("model=macvlan", Scenario("macvlan"), FRAME, 14_000.0, ndr_max_pps=15_000.0)
    b = pairing.Arm("model=host-routing", Scenario("host-routing"), FRAME, 3_800.0, ndr_max_pps=3_900.0)
    comp = pairing.Comparison("model=macvlan | model=host-routing", a, b, 0.05, False, ("a claim",))
    trials, lab = _run_paired(params, backend, comp, tmp_path)
    assert {r["result"]["rate_pps"] for r in trials} == {15_000.0}
    for block in {r["labels"]["block"] for r in trials}:  # a valid block: ABBA or BAAB
        order = "".join(r["labels"]["arm"] for r in trials if r["labels"]["block"] == block and r["result"]["valid"])
        assert order in ("abba", "baab"), order
    for r in trials:  # the 4 kpps path forwards at most its rate plus its queue, whatever the host does
        if r["labels"]["arm"] == "b":
            assert r["result"]["received_packets"] <= 4_000 * 1.05 * (r["result"]["duration_s"] + 0.1) + 2 * TBF_FRAMES
    assert (lab["metric"], lab["load_pps"], lab["blocks"]) == ("common", 15_000.0, 2)
    assert lab["ratio"] == pytest.approx(math.exp(sum(lab["block_log_ratios"]) / 2), rel=1e-4)


@pytest.mark.lab
def test_a_paused_lab_is_stopped_continued_and_torn_down_whole(clean_host):
    """Lab.pause stops every process of the lab (state T); resume continues them; a lab closed while
    paused still ends them (its teardown continues them first)."""
    backend = EmbeddedLab()
    with backend.open(Scenario("ovs-dpdk-vhost")) as session:
        procs = list(session.tracker.state.processes)
        assert procs
        session.pause()
        assert {_state(p.pid) for p in procs} == {"T"}
        session.resume()
        assert "T" not in {_state(p.pid) for p in procs}
        session.pause()
    for p in procs:
        assert processes.exited(p.pid, p.start_time)
