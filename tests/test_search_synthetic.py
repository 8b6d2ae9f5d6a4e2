"""SyntheticDut: the known-answer model the search tests rely on."""
import pytest

from nfvlab.search import SyntheticDut
from nfvlab.trial import TrialResult


def test_below_capacity_no_loss():
    dut = SyntheticDut(capacity_pps=1e6)
    t = dut(0.5e6, 2.0)
    assert isinstance(t, TrialResult)
    assert (t.intended_packets, t.sent_packets, t.received_packets) == (1_000_000,) * 3
    assert t.loss_ratio == 0.0
    assert t.forwarding_rate_pps == pytest.approx(0.5e6)


def test_above_capacity_loses_the_excess():
    dut = SyntheticDut(capacity_pps=1e6)
    t = dut(2e6, 1.0)
    assert t.received_packets == 1_000_000
    assert t.loss_ratio == pytest.approx(0.5)
    assert t.loss_ratio == pytest.approx(dut.expected_loss_ratio(2e6))
    assert t.directions[0].latency.p99_ns > dut(0.5e6, 1.0).directions[0].latency.p99_ns


def test_two_directions_sum_counters_rates_per_direction():
    dut = SyntheticDut(capacity_pps=1e6, directions=2)
    t = dut(1.5e6, 1.0)
    assert len(t.directions) == 2
    assert t.intended_packets == 3_000_000
    assert t.received_packets == 2_000_000
    assert t.forwarding_rate_pps == pytest.approx(1e6)
    assert {(d.tx_port, d.rx_port) for d in t.directions} == {("p0", "p1"), ("p1", "p0")}


def test_generator_ceiling_unsent_counts_as_loss():
    dut = SyntheticDut(capacity_pps=1e6, generator_ceiling_pps=0.8e6)
    t = dut(0.9e6, 1.0)
    assert t.sent_packets == 800_000 < t.intended_packets == 900_000
    assert t.received_packets == 800_000
    assert t.loss_ratio == pytest.approx(1 / 9)
    assert dut.limit_pps == 0.8e6
    assert dut.throughput_pps(0.0) == 0.8e6


def test_known_answers():
    dut = SyntheticDut(capacity_pps=1e6)
    assert dut.throughput_pps(0.0) == 1e6
    assert dut.throughput_pps(0.005) == pytest.approx(1e6 / 0.995)
    assert dut.expected_loss_ratio(0.9e6) == 0.0
    # The model agrees with its own known answers (up to whole packets).
    assert dut(dut.throughput_pps(0.005), 10.0).loss_ratio <= 0.005
    assert dut(dut.throughput_pps(0.005) * 1.001, 10.0).loss_ratio > 0.005


def test_seeded_noise_is_reproducible_and_noisy():
    a = SyntheticDut(capacity_pps=1e6, capacity_jitter=0.01, seed=7)
    b = SyntheticDut(capacity_pps=1e6, capacity_jitter=0.01, seed=7)
    ra = [a(1e6, 1.0).received_packets for _ in range(20)]
    rb = [b(1e6, 1.0).received_packets for _ in range(20)]
    assert ra == rb
    assert len(set(ra)) > 1
    assert a.n_calls == 20


def test_spurious_loss():
    always = SyntheticDut(capacity_pps=1e6, spurious_loss_probability=1.0,
                          spurious_loss_packets=3)
    t = always(1e3, 1.0)
    assert t.intended_packets - t.received_packets == 3
    assert t.extra["spurious_loss"] is True
    never = SyntheticDut(capacity_pps=1e6)
    assert never(1e3, 1.0).loss_ratio == 0.0


def test_measure_alias_and_validation():
    dut = SyntheticDut(capacity_pps=1e6)
    assert dut.measure(1e3, 1.0).received_packets == 1000
    with pytest.raises(ValueError):
        SyntheticDut(capacity_pps=0)
    with pytest.raises(ValueError):
        SyntheticDut(capacity_pps=1e6, directions=3)
    with pytest.raises(ValueError):
        dut(1e3, 0.0)
