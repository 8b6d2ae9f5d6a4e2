"""Loss sweep: loss vs offered load from 0.1 % to 100 %."""
import math

import pytest

from nfvlab.search import DEFAULT_FRACTIONS, SyntheticDut, loss_sweep


def test_sweep_zero_loss_below_capacity_and_known_loss_above():
    cap = 1e6
    dut = SyntheticDut(capacity_pps=cap, directions=2)
    seen = []
    df = loss_sweep(dut, max_rate_pps=2e6, duration_s=1.0, on_trial=seen.append)
    assert list(df["fraction"]) == list(DEFAULT_FRACTIONS)
    assert len(seen) == len(df) == 13
    assert list(df["rate_pps"]) == pytest.approx([f * 2e6 for f in DEFAULT_FRACTIONS])
    below = df[df["rate_pps"] <= cap]
    above = df[df["rate_pps"] > cap]
    assert len(below) and len(above)
    assert (below["loss_ratio"] == 0).all()
    assert (below["received_packets"] == below["intended_packets"]).all()
    expected = 1 - cap / above["rate_pps"]
    assert list(above["loss_ratio"]) == pytest.approx(list(expected), abs=1e-6)
    assert list(above["forwarding_rate_pps"]) == pytest.approx([cap] * len(above))
    for col in ("fraction", "rate_pps", "duration_s", "intended_packets",
                "sent_packets", "received_packets", "loss_ratio",
                "offered_rate_pps", "forwarding_rate_pps",
                "latency_p50_ns", "latency_p99_ns"):
        assert col in df.columns
    assert (df["latency_p99_ns"] >= df["latency_p50_ns"]).all()


def test_sweep_generator_ceiling_shows_as_unsent_loss():
    dut = SyntheticDut(capacity_pps=1e6, generator_ceiling_pps=0.5e6)
    df = loss_sweep(dut, 1e6, fractions=(0.25, 1.0), duration_s=1.0)
    last = df.iloc[-1]
    assert last["sent_packets"] == 500_000 < last["intended_packets"]
    assert last["loss_ratio"] == pytest.approx(0.5)
    assert last["offered_rate_pps"] == pytest.approx(0.5e6)


def test_sweep_latency_nan_without_probes():
    from dataclasses import replace

    from nfvlab.traffic.stats import LatencyStats

    dut = SyntheticDut(capacity_pps=1e6)

    def no_probes(rate_pps, duration_s):
        t = dut(rate_pps, duration_s)
        dirs = tuple(replace(d, latency=LatencyStats(10, 0)) for d in t.directions)
        return replace(t, directions=dirs)

    df = loss_sweep(no_probes, 1e6, fractions=(0.5,), duration_s=1.0)
    assert math.isnan(df["latency_p50_ns"].iloc[0])


@pytest.mark.parametrize("fractions", [(), (0.0,), (1.5,)])
def test_sweep_rejects_bad_fractions(fractions):
    with pytest.raises(ValueError):
        loss_sweep(SyntheticDut(capacity_pps=1e6), 1e6, fractions=fractions)
