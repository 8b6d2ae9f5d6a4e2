"""Latency histograms (nfvlab.traffic.stats): HDR arithmetic on synthetic samples of known percentiles."""
import numpy as np
import pytest

from nfvlab.traffic.stats import (
    HDR_HIGHEST_NS,
    HDR_LOWEST_NS,
    PERCENTILES,
    LatencyStats,
    decode_histogram,
    encode_histogram,
    histogram_of,
    histogram_percentiles,
    new_histogram,
)


def nearest_rank(values, q):
    v = np.sort(np.asarray(values))
    return float(v[max(1, int(np.ceil(q * len(v) / 100 - 1e-9))) - 1])  # - 1e-9: 99.9 * n is inexact


def test_percentiles_of_a_known_distribution_within_the_documented_precision():
    # 1..100 000 us in 1 us steps: p50 = 50 000 us, p99.9 = 99 900 us exactly (nearest rank).
    values = np.arange(1, 100_001) * 1000
    got = histogram_percentiles(decode_histogram(encode_histogram(histogram_of(values))))
    for name, q in PERCENTILES.items():
        exact = nearest_rank(values, q)
        assert got[name] == pytest.approx(exact, rel=1e-3), name  # 3 significant digits
    assert got["p50_ns"] == pytest.approx(50_000_000, rel=1e-3)
    assert got["p999_ns"] == pytest.approx(99_900_000, rel=1e-3)


def test_skewed_samples_keep_their_tail():
    rng = np.random.default_rng(7)
    values = rng.lognormal(mean=np.log(40_000), sigma=0.6, size=20_000)  # ns
    h = decode_histogram(encode_histogram(histogram_of(values)))
    assert h.get_total_count() == 20_000
    got = histogram_percentiles(h)
    for name, q in PERCENTILES.items():
        assert got[name] == pytest.approx(nearest_rank(np.round(values), q), rel=1e-3), name
    assert got["p999_ns"] > 3 * got["p50_ns"]  # lognormal sigma 0.6: p99.9/p50 = e^(0.6*3.09) = 6.4


def test_counts_weights_and_out_of_range_values_are_clamped_not_lost():
    h = histogram_of([0, -5, 2_000, HDR_HIGHEST_NS * 10], [1, 2, 3, 4])
    assert h.get_total_count() == 10
    assert h.get_min_value() == HDR_LOWEST_NS
    assert h.get_max_value() == h.get_highest_equivalent_value(HDR_HIGHEST_NS)
    assert h.get_count_at_value(2_000) == 3


def test_empty_histogram_has_no_encoding_and_no_percentiles():
    assert encode_histogram(new_histogram()) is None
    assert set(histogram_percentiles(new_histogram()).values()) == {None}


def test_encoding_is_base64_and_bad_text_is_refused():
    text = encode_histogram(histogram_of([1000, 2000]))
    assert text.startswith("HISTF") and text.isascii()
    with pytest.raises(ValueError):
        decode_histogram("not base64 !")


def test_latency_stats_from_old_and_newer_records():
    old = {"probes_sent": 5, "probes_received": 5, "min_ns": 1.0, "avg_ns": 2.0, "max_ns": 3.0,
           "p50_ns": 2.0, "p90_ns": 3.0, "p99_ns": 3.0}
    lat = LatencyStats.from_dict(old)
    assert lat.p99_ns == 3.0 and lat.p95_ns is None and lat.hdr_histogram is None and lat.histogram() is None
    text = encode_histogram(histogram_of([10, 20, 30]))
    newer = LatencyStats.from_dict({**old, "hdr_histogram": text, "p999_ns": 3.0, "from_the_future": 1})
    assert newer.histogram().get_total_count() == 3 and newer.p999_ns == 3.0
