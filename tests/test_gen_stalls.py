"""nfvlab-gen's stall accounting (nfvlab_gen_pacing.c, Stalls) on real namespaces: what makes a trial invalid.

A stall is time the TX loop was not running when its schedule needed it. The
test hook ``--inject-stall-ms M --inject-stall-at-s T`` stops the loop for M ms
at T s into the trial: a stall of known size, independent of the VM's own
scheduling. The VM may add stalls of its own (20-30 ms), so the assertions
bound the measured stall from below by what was injected and never rely on
the VM keeping quiet; a trial that must stay valid is repeated when its own
report shows the host spoiled it (``conftest.until_unspoiled``).
"""
from __future__ import annotations

from dataclasses import asdict

import pytest
import test_gen_binary as tgb
from conftest import skip_without_xdp_live
from test_gen_binary import clean_gen, run, run_gen, stream

from nfvlab.traffic.embedded import tx_object
from nfvlab.traffic.embedded.generator import own_lateness_fault, schedule

pytestmark = pytest.mark.lab
gen, count, pair = tgb.gen, tgb.count, tgb.pair  # the fixtures of the socket path's tests


@pytest.fixture
def xdp(request) -> list[str]:
    """The XDP path's arguments; a test of that path skips where the kernel refuses it."""
    callspec = getattr(request.node, "callspec", None)
    if callspec is not None and callspec.params.get("path") == "socket":
        return []  # the socket path's run of a test of both paths does not use them
    skip_without_xdp_live()
    return ["--tx", "xdp", "--tx-obj", str(tx_object())]


@pytest.mark.parametrize("path", ["socket", "xdp"])
def test_an_injected_stall_is_measured_and_makes_the_trial_invalid(gen, count, xdp, pair, path):
    a, b = pair
    if path == "xdp":
        run("ip", "netns", "exec", b.ns, "ethtool", "-K", b.ifname, "gro", "on")  # veth NAPI for XDP frames
    out = run_gen(gen, "--duration-s", "0.8", "--latency-pps", "100", *count, *(xdp if path == "xdp" else []),
                     "--inject-stall-ms", "60", "--inject-stall-at-s", "0.2", "--stream", stream(a, b, 20000))
    assert out["tx"] == path
    assert out["slip_budget_s"] == pytest.approx(0.008) and out["stall_threshold_s"] == pytest.approx(0.001)
    assert out["stalls"] >= 1 and out["stall_total_s"] >= out["stall_max_s"] >= 0.059, out
    sched = schedule(out)
    assert sched.stall_s == out["stall_total_s"] and sched.budget_s == pytest.approx(0.008)
    assert sched.fault is not None and "beyond the 8.0 ms its schedule absorbs" in sched.fault


@pytest.mark.parametrize("path", ["socket", "xdp"])
def test_a_stall_that_outlasts_the_trial_is_counted_inside_its_window(gen, count, xdp, pair, path):
    # 1 s at 20 kpps: the window ends at 1 s + the 10 ms budget. A 400 ms stall from 0.8 s ends
    # after it: its 210 ms inside the window count (the frames due then are never sent), so the trial
    # is invalid rather than a valid trial with the tail lost (seen: 3917 of 4000 sent, ruled valid).
    a, b = pair
    if path == "xdp":
        run("ip", "netns", "exec", b.ns, "ethtool", "-K", b.ifname, "gro", "on")  # veth NAPI for XDP frames
    # (probes on: on the XDP path the probe loop is what requests the injected stall)
    out = run_gen(gen, "--duration-s", "1", "--latency-pps", "100", *count, *(xdp if path == "xdp" else []),
                  "--inject-stall-ms", "400", "--inject-stall-at-s", "0.8", "--stream", stream(a, b, 20000))
    assert out["tx"] == path
    assert out["slip_budget_s"] == pytest.approx(0.01)
    # The injected stall's part inside the window (1.01 - 0.8 s) counts: a host that delayed the
    # injection (inside a send, where no stall is counted; on the XDP path the probe loop, which
    # requests it, running late) shortens it by that delay, hence the margin of 110 ms, several of
    # the host's stalls. No stall counts past the window.
    assert out["stall_total_s"] >= 0.1 and out["stall_max_s"] <= 1.01, out
    (st,) = out["streams"]
    assert st["sent"] < st["intended"], st  # the tail due during the stall was not sent
    sched = schedule(out)
    assert sched.fault is not None and "beyond the 10.0 ms its schedule absorbs" in sched.fault


def test_the_xdp_loops_softirq_gaps_are_short_and_an_injected_stall_is_never_one(gen, count, xdp, pair):
    """Between two batches the kernel runs the softirqs that became pending (on veth the receive
    work of what the loop sent): gaps there of 1-5 ms are that work (softirq_gap_s), not stalls.
    The injected stall happens outside the kernel loop (it restarts after it): always a stall.
    (End to end, on a tbf path at twice its capacity: tests/test_calibrate.py.)"""
    a, b = pair
    run("ip", "netns", "exec", b.ns, "ethtool", "-K", b.ifname, "gro", "on")  # veth NAPI for XDP frames
    out = run_gen(gen, "--duration-s", "0.5", "--latency-pps", "100", *count, *xdp,
                  "--inject-stall-ms", "30", "--inject-stall-at-s", "0.2", "--stream", stream(a, b, 20000))
    gaps, gap_s = out["softirq_gaps"], out["softirq_gap_s"]
    assert 0.001 * gaps <= gap_s <= 0.005 * gaps, out  # each one between the stall threshold and 5 ms
    assert out["stall_max_s"] >= 0.029, out  # the injected 30 ms: a stall, never softirq work
    sched = schedule(out)
    assert sched.softirq_gap_s == gap_s and sched.fault is not None


@pytest.mark.parametrize("path", ["socket", "xdp"])
def test_after_an_injected_stall_no_send_exceeds_a_burst_and_the_unsent_are_the_generators(
        gen, count, xdp, pair, path):
    """A stall beyond the slip budget is never caught up in a burst: no send of more than ``burst``
    frames (the XDP loop: no run of more than ``burst`` frames in a row), the schedule slips by the
    whole lag, and the frames not sent when the window ends (0.5 s + 5 ms) are counted unsent, the
    generator's fault, not loss. (Before: batches of 64 frames, which a shallow-buffer DUT drops.)"""
    a, b = pair
    if path == "xdp":
        run("ip", "netns", "exec", b.ns, "ethtool", "-K", b.ifname, "gro", "on")  # veth NAPI for XDP frames
    out = run_gen(gen, "--duration-s", "0.5", "--latency-pps", "100", *count, *(xdp if path == "xdp" else []),
                  "--inject-stall-ms", "40", "--inject-stall-at-s", "0.2", "--stream", stream(a, b, 20000))
    (s,) = out["streams"]
    assert out["tx"] == path and s["burst"] == 2
    assert 1 <= s["max_batch"] <= s["burst"], s
    assert s["sent"] + s["send_errors"] + s["unsent"] == s["intended"] == 10000, s
    assert s["received_load"] == s["sent"], s  # the pair lost nothing: the shortfall is all unsent
    assert s["unsent"] >= 0.9 * (0.04 - 0.005) * 20000, s  # the stall less the budget, never sent
    assert s["slip_own_s"] >= 0.035, s
    sched = schedule(out)
    assert sched.slip_own_s == s["slip_own_s"]
    assert sched.fault is not None and sched.fault.startswith("generator "), sched.fault


def _late(unsent, own_s):
    return {"slip_budget_s": 0.005, "streams": [{"unsent": unsent, "slip_own_s": own_s}]}


@pytest.mark.parametrize("report, fault", [
    (_late(120, 0.0051), "generator off its CPU 5.1 ms while frames were due (its own lateness), beyond the "
                         "5.0 ms its schedule absorbs: 120 frames left unsent rather than sent as a burst"),
    (_late(120, 0.005), None),   # within the budget: the lag grew inside sends (backpressure): loss
    (_late(0, 0.030), None),     # every frame sent: nothing to blame on anyone
    ({"slip_budget_s": 0.005, "streams": [{"unsent": 0, "slip_own_s": 0.03},
                                          {"unsent": 7, "slip_own_s": 0.006}]},
     "generator off its CPU 6.0 ms while frames were due (its own lateness), beyond the "
     "5.0 ms its schedule absorbs: 7 frames left unsent rather than sent as a burst"),
])
def test_unsent_frames_are_the_generators_only_when_its_own_lateness_exceeds_the_budget(report, fault):
    assert own_lateness_fault(report) == fault
    assert schedule(report).fault == fault


def test_the_schedule_rule_reads_the_softirq_gaps_apart_from_the_stalls():
    report = {"stall_total_s": 0.004, "stall_max_s": 0.002, "stalls": 2, "slip_budget_s": 0.005,
              "stall_threshold_s": 0.001, "softirq_gap_s": 0.030, "softirq_gaps": 12, "streams": []}
    sched = schedule(report)
    assert sched.fault is None and sched.softirq_gap_s == 0.030 and sched.stall_s == 0.004
    sched = schedule({**report, "stall_total_s": 0.006})
    assert sched.fault is not None and "generator stalled 6.0 ms in 2 stall(s)" in sched.fault


def _report(tx, *streams):
    return {"tx": tx, "stall_total_s": 0.0, "slip_budget_s": 0.005,
            "streams": [{"intended": i, "sent": s, "received_load": r} for i, s, r in streams]}


@pytest.mark.parametrize("tx, streams, short", [
    ("xdp", [(1000, 900, 900), (1000, 1000, 1000)], True),    # an unsent tail, nothing lost downstream
    ("xdp", [(1000, 900, 899), (1000, 1000, 1000)], False),   # the data path lost one: the DUT's loss too
    ("xdp", [(1000, 1000, 990)], False),                      # all sent: loss is the DUT's
    ("xdp", [(1000, 1000, 1000)], False),
    ("socket", [(1000, 900, 900)], False),                    # may be the DUT's backpressure
    ("xdp", [(1000, 900, None)], False),                      # nothing counted: no judgement
])
def test_the_xdp_paths_shortfall_is_the_generators_only_when_it_is_all_the_loss(tx, streams, short):
    sched = schedule(_report(tx, *streams))
    assert sched.sent_short is short and sched.fault is None


def test_a_search_bounded_by_an_xdp_shortfall_is_generator_limited():
    from nfvlab.calibrate import mark_generator_limited
    from nfvlab.search import rfc2544_search
    from nfvlab.traffic.stats import DirectionStats, LatencyStats
    from nfvlab.trial import TrialResult

    def measure(rate_pps, duration_s):
        """A DUT that forwards everything it gets from an XDP loop that cannot send above 50 kpps."""
        intended, sent = round(rate_pps * duration_s), round(min(rate_pps, 50_000) * duration_s)
        report = _report("xdp", (intended, sent, sent))
        d = DirectionStats("a", "b", intended, sent, sent, duration_s, LatencyStats(0, 0))
        return TrialResult(rate_pps, duration_s, 64, (d,), extra={"schedule": asdict(schedule(report))})

    result = rfc2544_search(measure, 1000, 100_000, loss_ratio=0.0, relative_width=0.01, duration_s=1.0)
    assert 49_000 <= result.throughput_pps <= 50_000
    assert mark_generator_limited(result, None).generator_limited is True
    assert mark_generator_limited(result, 1e6).generator_limited is True  # whatever the ceiling


def test_a_stall_within_the_slip_budget_leaves_the_trial_valid(gen, count, pair):
    # 3 s at 10 kpps: a 30 ms budget. 5 ms injected is absorbed by slipping; the frames keep their
    # spacing and all arrive. The VM's own stalls may add to it beyond the budget: that trial is
    # spoiled and repeated (the rule itself is checked on whichever trial counts).
    a, b = pair
    out, _ = clean_gen(gen, "--duration-s", "3", "--latency-pps", "0", *count, "--inject-stall-ms", "5",
                       "--inject-stall-at-s", "1", "--stream", stream(a, b, 10000))
    (s,) = out["streams"]
    assert out["stall_total_s"] >= 0.0049
    sched = schedule(out)
    assert sched.fault is None and out["stall_total_s"] <= 0.03
    assert s["sent"] == s["received"] == s["intended"] == 30000


def test_backpressure_is_loss_not_a_stall(gen, count, pair):
    """A shaped path holding the sender back (sendmmsg blocks on a full socket buffer) is the DUT's
    doing: the frames not sent are loss, and the time the sends were blocked is not a stall."""
    a, b = pair
    # tbf at 5 kpps of 64 B frames, a deep queue: the socket's buffer fills and sends block.
    run("ip", "netns", "exec", a.ns, "tc", "qdisc", "add", "dev", a.ifname, "root", "tbf",
        "rate", "2400kbit", "burst", "1600", "limit", "1000000")
    # Blocked for most of the second, the sender still counts as on schedule: the trial is valid
    # unless the host stalled it beyond the slip budget (its own stalls, spoiling it: repeated).
    # Were the blocked time counted, every try would be invalid and the test fail.
    out, _ = clean_gen(gen, "--duration-s", "1", "--latency-pps", "0", *count, "--stream", stream(a, b, 20000),
                       spoiled=lambda o: schedule(o).fault)
    (s,) = out["streams"]
    assert s["sent"] <= 0.35 * s["intended"]  # held back to about a quarter
    assert s["send_errors"] == 0  # held back, not refused
    # Stalls within the 10 ms budget, the ~0.75 s the sends were blocked not among them.
    assert out["stall_total_s"] <= out["slip_budget_s"] and schedule(out).fault is None, out


@pytest.mark.parametrize("case, message", [
    (["--inject-stall-ms", "0"], "--inject-stall-ms '0' is invalid"),
    (["--inject-stall-ms", "20000"], "--inject-stall-ms '20000' is invalid"),
    (["--inject-stall-at-s", "-1"], "--inject-stall-at-s '-1' is invalid"),
])
def test_bad_stall_hook_arguments_fail_in_one_line(gen, pair, case, message):
    a, b = pair
    proc = run(gen, "--duration-s", "1", *case, "--stream", stream(a, b, 1000), check=False)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and message in proc.stderr
