"""A trial's arithmetic: unsent frames are loss, rates per direction, records round-trip."""
import dataclasses

import pytest

from nfvlab.traffic.stats import DirectionStats, LatencyStats
from nfvlab.trial import GeneratorMeasurer, TrialResult, backlog_fault, run_trial


def _dir(intended, sent, received, duration_s=2.0):
    return DirectionStats(tx_port="a:0", rx_port="b:0", intended_packets=intended, sent_packets=sent,
                          received_packets=received, duration_s=duration_s,
                          latency=LatencyStats(probes_sent=10, probes_received=10, min_ns=1.0, avg_ns=2.0,
                                               max_ns=3.0, p50_ns=2.0, p90_ns=2.5, p99_ns=3.0))


def test_unsent_frames_count_as_loss_and_rates_are_per_direction():
    r = TrialResult(rate_pps=1000.0, duration_s=2.0, frame_size=64,
                    directions=(_dir(2000, 1900, 1900), _dir(2000, 2000, 1990)))
    assert (r.intended_packets, r.sent_packets, r.received_packets) == (4000, 3900, 3890)
    assert r.loss_ratio == pytest.approx(110 / 4000)  # 100 never sent + 10 dropped by the DUT
    assert r.offered_rate_pps == pytest.approx(3900 / 2.0 / 2)
    assert r.forwarding_rate_pps == pytest.approx(3890 / 2.0 / 2)


def test_a_trial_record_round_trips():
    r = TrialResult(rate_pps=500.0, duration_s=2.0, frame_size="IMIX", directions=(_dir(1000, 1000, 999),),
                    started_at="2026-11-23T00:00:00.000+00:00", extra={"model": "macvlan"})
    back = TrialResult.from_dict(r.to_dict())
    assert back == r and back.loss_ratio == pytest.approx(0.001)


def test_records_without_and_with_histograms_load():
    from nfvlab.traffic.stats import encode_histogram, histogram_of

    old = TrialResult(rate_pps=500.0, duration_s=2.0, frame_size=64, directions=(_dir(1000, 1000, 1000),)).to_dict()
    for key in ("p95_ns", "p999_ns", "jitter_ns", "hdr_histogram"):  # fields older records lack
        del old["directions"][0]["latency"][key]
    assert TrialResult.from_dict(old).directions[0].latency.hdr_histogram is None
    hist = encode_histogram(histogram_of([1.0, 2.0, 3.0] * 3 + [3.0]))
    lat = LatencyStats(10, 10, 1.0, 2.0, 3.0, 2.0, 3.0, 3.0, p95_ns=3.0, p999_ns=3.0, hdr_histogram=hist)
    r = TrialResult(500.0, 2.0, 64, (DirectionStats("a:0", "b:0", 1000, 1000, 1000, 2.0, lat),))
    back = TrialResult.from_dict(r.to_dict())
    assert back == r and back.directions[0].latency.histogram().get_total_count() == 10


class _Generator:
    """A stand-in generator (no packets): it returns what a DUT of ``capacity_pps`` would let through."""

    name = "stand-in"

    def __init__(self, capacity_pps):
        self.capacity_pps = capacity_pps
        self.calls = []

    def identity(self):
        return {"name": self.name}

    def describe(self):
        return {}

    def run(self, rate_pps, duration_s, frame_size, bidirectional=True):
        self.calls.append((rate_pps, duration_s, frame_size, bidirectional))
        n = round(rate_pps * duration_s)
        got = min(n, round(self.capacity_pps * duration_s))
        return tuple(_dir(n, n, got, duration_s) for _ in range(2 if bidirectional else 1))


def test_run_trial_and_the_measurer_pass_everything_through_and_label_the_generator():
    gen = _Generator(capacity_pps=800)
    r = run_trial(gen, 1000, 1.0, 128, bidirectional=False, extra={"model": "x"})
    assert gen.calls == [(1000, 1.0, 128, False)] and r.loss_ratio == pytest.approx(0.2)
    assert r.extra == {"generator": "stand-in", "model": "x"} and r.started_at
    m = GeneratorMeasurer(gen, 64, bidirectional=True)
    assert len(m(500, 0.5).directions) == 2 and gen.calls[-1] == (500, 0.5, 64, True)


def _stale(intended, received, stale):
    return dataclasses.replace(_dir(intended, intended, received), stale_packets=stale, foreign_packets=stale)


@pytest.mark.parametrize("received, stale, invalid", [
    (1000, 900, False),   # lossless: the DUT carried the backlog and this trial's frames
    (400, 600, True),     # lossy behind 600 frames of an earlier trial
    (400, 2, True),       # 2 frames > 0.1 % of 1000
    (400, 1, False),      # 1 frame = 0.1 %: a straggler, no backlog
    (400, 0, False),
    (400, None, False),   # a generator that cannot tell (TRex)
])
def test_a_lossy_trial_on_an_earlier_trials_backlog_is_invalid(received, stale, invalid):
    fault = backlog_fault([_dir(1000, 1000, 1000), _stale(1000, received, stale)])
    assert (fault is not None) == invalid
    if invalid:
        assert fault == (f"the DUT delivered {stale} frames of an earlier trial during this one (a:0 -> b:0, "
                         f"{1000 - received} of 1000 lost): it had not settled")


def test_run_trial_rules_a_backlog_invalid_and_the_record_keeps_the_stale_count():
    class Backlogged(_Generator):
        def run(self, rate_pps, duration_s, frame_size, bidirectional=True):
            return (_stale(1000, 100, 500),)

    r = run_trial(Backlogged(0), 1000, 1.0, 64, bidirectional=False)
    assert not r.valid and r.invalid_reason.startswith("the DUT delivered 500 frames of an earlier trial")
    back = TrialResult.from_dict(r.to_dict())
    assert back == r and back.directions[0].stale_packets == 500
    old = r.to_dict()
    del old["directions"][0]["stale_packets"]  # records written before the count existed
    assert TrialResult.from_dict(old).directions[0].stale_packets is None
