"""Trial validity through a real lab (linux-bridge): an injected generator stall makes trials invalid,
the records keep them with the reason, and a search repeats them, takes a load that stays invalid
as an upper bound the generator set, and ends saying so when even its minimum rate was not offered. The stall is nfvlab-gen's test hook, so nothing depends on the VM's luck."""
import pytest

from conftest import NO_RESIDUE
from test_lab import locked_residue
from nfvlab import measure
from nfvlab.labs.embedded import Lab
from nfvlab.params import SearchParams, TrafficParams
from nfvlab.records import RecordWriter, read_records
from nfvlab.results import invalid_trials_frame, searches_frame
from nfvlab.search import GeneratorFaultError
from nfvlab.traffic.embedded import EmbeddedGenerator
from nfvlab.trial import run_trial

pytestmark = pytest.mark.lab


def test_stalled_trials_are_invalid_in_the_records_and_end_the_search(clean_host, tmp_path):
    path = tmp_path / "raw.jsonl"
    # A wide goal and no repeats: a few loads, each tried once, down to the minimum rate.
    sp = SearchParams(method="rfc2544", pdr_loss_ratio=None, relative_width=0.3, min_rate_pps=2000,
                      final_trial_duration_s=0.5, max_invalid_repeats=0)
    with Lab("linux-bridge") as lab, RecordWriter(path, "validity", {}, provenance={}) as rec:
        gen = EmbeddedGenerator(lab.streams, latency_pps=100, tracker=lab)
        gen.inject_stall = (40.0, 0.1)  # every trial: 40 ms at 0.1 s, beyond a 0.5 s trial's 5 ms budget
        t = run_trial(gen, 5000, 0.5, 64)
        assert not t.valid and "beyond the 5.0 ms its schedule absorbs" in t.invalid_reason
        assert t.extra["schedule"]["stall_s"] >= 0.039
        meas = measure.measurer(gen, 64, TrafficParams(), search=sp)
        with pytest.raises(GeneratorFaultError, match="no valid trial at 2,000 pps: 1 invalid") as err:
            measure.search(meas, 64, sp, max_rate_pps=20_000, progress=False,
                           on_trial=lambda tr: rec.trial(tr, purpose="search", model="linux-bridge"))
        # 20000, then bisection to 2562 (width 0.3), then the minimum: each an upper bound the generator set
        stalled = [t.rate_pps for t in err.value.invalid]
        assert stalled == [20_000, 11_000, 6_500, 4_250, 3_125, 2_562.5, 2_000]
        gen.inject_stall = None  # the same lab, the generator on schedule again: the search completes
        # With a search's usual repeats: without any, one VM stall beyond the 5 ms budget in each of
        # its few trials (a burst, as right after a lab is built) would end it as the injection did.
        sp = sp.model_copy(update={"max_invalid_repeats": SearchParams().max_invalid_repeats})
        meas = measure.measurer(gen, 64, TrafficParams(), search=sp)
        (result,) = measure.search(meas, 64, sp, max_rate_pps=20_000, progress=False,
                                   on_trial=lambda tr: rec.trial(tr, purpose="search", model="linux-bridge"))
        rec.search({k: v for k, v in result.to_dict().items() if k != "trials"}, model="linux-bridge",
                   frame_size=64, repetition=0, goal="ndr")
    assert locked_residue() == NO_RESIDUE
    trials = [r["result"] for r in read_records(path) if r["type"] == "trial"]
    assert [t["valid"] for t in trials[:7]] == [False] * 7
    assert all(t["invalid_reason"] for t in trials[:7])
    # Whatever the VM did during the second search, its record counts exactly its invalid trials.
    later_invalid = sum(not t["valid"] for t in trials[7:])
    assert searches_frame(path)["invalid_trials"].tolist() == [later_invalid]
    assert len(invalid_trials_frame(path)) == 7 + later_invalid


def test_a_trial_behind_a_held_backlog_is_flushed_first_and_counts_its_own_frames(clean_host):
    """Known path: F's tap pod (``ovs-dpdk-tap``) keeps an overloaded trial's frames in its
    packet-socket TX ring until new traffic pushes them out (docs/experiment-f.md). At 30 kpps
    (the tap forwards ~9 kpps) trial 1 leaves ~4,000 frames there; trial 2 receives them, not its
    own, and is invalid for the backlog, which no pause clears; the measurer then flushes before
    trial 3 (uncounted, 1 kpps), which counts its own frames with no backlog."""
    from nfvlab.scenario import Scenario
    from nfvlab.trial import FLUSH_RATE_PPS, GeneratorMeasurer, backlog_fault

    with Lab(Scenario("ovs-dpdk-tap")) as lab:
        gen = EmbeddedGenerator(lab.streams, flows=1, latency_pps=0, tracker=lab)
        try:
            m = GeneratorMeasurer(gen, 64)
            first, behind, after = (m(30_000, 0.5) for _ in range(3))
        finally:
            gen.close()
    assert locked_residue() == NO_RESIDUE
    assert "flushed_before" not in first.extra and "flushed_before" not in behind.extra
    assert not behind.valid and "had not settled" in behind.invalid_reason
    assert backlog_fault(behind.directions) is not None
    flushed = after.extra["flushed_before"]
    assert flushed["rate_pps"] == FLUSH_RATE_PPS and flushed["duration_s"] == 0.5
    assert flushed["stale_packets"] > 100  # trial 2's frames, pushed out by the flush
    # a generator stall may still make trial 3 invalid (the host's), never the backlog
    assert backlog_fault(after.directions) is None
    assert all(d.received_packets > 0 and (d.stale_packets or 0) <= 0.001 * d.intended_packets
               for d in after.directions)
