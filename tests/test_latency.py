"""Latency percentiles over repetitions (nfvlab.latency) on synthetic histograms of known percentiles."""
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

from nfvlab.latency import latency_percentiles, trial_percentiles
from nfvlab.results import CONFIG_LABELS, LATENCY_NS
from nfvlab.traffic.stats import encode_histogram, histogram_of

UNIFORM = np.arange(1, 10_001)  # 1..10 000: nearest-rank p50 = 5000, p90 = 9000, p99.9 = 9990


def row(rep, fraction, scale_ns, *, model="macvlan", direction=0, hist=True, **overrides):
    """One direction of a latency trial whose probes are UNIFORM x scale_ns."""
    values = UNIFORM * scale_ns
    pct = {"p50_ns": 5000 * scale_ns, "p90_ns": 9000 * scale_ns, "p95_ns": 9500 * scale_ns,
           "p99_ns": 9900 * scale_ns, "p999_ns": 9990 * scale_ns}
    return {"model": model, **{k: None for k in CONFIG_LABELS}, "frame_size": 64, "repetition": rep,
            "goal": "pdr", "load_fraction": fraction, "rate_pps": 50_000.0 * fraction + 1000 * rep,
            "direction": f"d{direction}", "loss_ratio": 0.0, "probes_received": len(values),
            "min_ns": float(scale_ns), "avg_ns": 5000.5 * scale_ns, "max_ns": 10_000.0 * scale_ns,
            **pct, "hdr_histogram": encode_histogram(histogram_of(values)) if hist else None, **overrides}


def frame(rows):
    return pd.DataFrame(rows, columns=["model", *CONFIG_LABELS, "frame_size", "repetition", "goal", "load_fraction", "rate_pps",
               "direction", "loss_ratio", "probes_received", *LATENCY_NS, "hdr_histogram"])


def test_repetition_statistics_of_known_percentiles():
    # Three repetitions at 50 % load, scales 10, 20, 30 ns: p50 = 50, 100, 150 us.
    scales = [10, 20, 30]
    df = latency_percentiles(frame([row(r, 0.5, s) for r, s in enumerate(scales)]))
    assert list(df["percentile"]) == ["p50", "p90", "p95", "p99", "p99.9"]
    p50 = df.set_index("percentile").loc["p50"]
    assert p50["n"] == 3
    assert p50["mean_ns"] == pytest.approx(100_000, rel=1e-3)
    assert p50["sd_ns"] == pytest.approx(50_000, rel=1e-3)
    half = st.t.ppf(0.975, 2) * 50_000 / math.sqrt(3)
    assert (p50["ci_low_ns"], p50["ci_high_ns"]) == (pytest.approx(100_000 - half, rel=1e-3),
                                                     pytest.approx(100_000 + half, rel=1e-3))
    p999 = df.set_index("percentile").loc["p99.9"]
    assert p999["mean_ns"] == pytest.approx(9990 * 20, rel=1e-3) and p999["max_ns"] == pytest.approx(9990 * 30,
                                                                                                      rel=1e-3)
    assert p50["rate_pps"] == pytest.approx(26_000)  # mean of the repetitions' rates


def test_directions_are_merged_and_load_fractions_kept_apart():
    # Direction 0 at scale 10, direction 1 at scale 30: together x/10 + x/30 probes are
    # <= x ns, so the p50 (rank 10 000 of 20 000) is 75 us; the 20 largest are direction 1's.
    rows = [row(0, 0.0, 10, direction=0), row(0, 0.0, 30, direction=1), row(0, 0.9, 50, direction=0),
            row(0, 0.9, 50, direction=1)]
    per = trial_percentiles(frame(rows)).set_index(["load_fraction", "percentile"])
    assert per.loc[(0.0, "p50"), "latency_ns"] == pytest.approx(75_000, rel=1e-3)
    assert per.loc[(0.0, "p50"), "probes"] == 20_000 and per.loc[(0.0, "p50"), "source"] == "hdr"
    assert per.loc[(0.0, "p99.9"), "latency_ns"] == pytest.approx(9980 * 30, rel=1e-3)
    assert per.loc[(0.9, "p50"), "latency_ns"] == pytest.approx(5000 * 50, rel=1e-3)
    out = latency_percentiles(frame(rows))
    assert sorted(set(out["load_fraction"])) == [0.0, 0.9] and (out["n"] == 1).all() and out["sd_ns"].isna().all()


def test_records_without_histograms_use_the_worst_direction():
    rows = [row(0, 1.0, 10, direction=0, hist=False, p95_ns=None, p999_ns=None),
            row(0, 1.0, 20, direction=1, hist=False, p95_ns=None, p999_ns=None)]
    per = trial_percentiles(frame(rows)).set_index("percentile")
    assert per.loc["p50", "latency_ns"] == 5000 * 20 and per.loc["p50", "source"] == "recorded"
    assert math.isnan(per.loc["p95", "latency_ns"]) and math.isnan(per.loc["p99.9", "latency_ns"])
    out = latency_percentiles(frame(rows)).set_index("percentile")
    assert out.loc["p99", "mean_ns"] == 9900 * 20 and out.loc["p95", "n"] == 0


def test_configurations_stay_apart_and_no_trials_give_an_empty_table():
    rows = [row(r, 0.1, 10 + r, model=m) for m in ("macvlan", "linux-bridge") for r in range(2)]
    out = latency_percentiles(frame(rows))
    assert len(out) == 2 * 5 and set(out["model"]) == {"macvlan", "linux-bridge"} and (out["n"] == 2).all()
    assert latency_percentiles(frame([])).empty


def test_a_re_measured_point_counts_once_the_last_time():
    # A resumed run re-measures repetition 0 (interrupted at another rate): the last trial counts.
    rows = [row(0, 0.5, 10, rate_pps=40_000.0), row(0, 0.5, 20, rate_pps=50_000.0), row(1, 0.5, 40)]
    per = trial_percentiles(frame(rows))
    p50 = per[per["percentile"] == "p50"]
    assert list(p50["repetition"]) == [0, 1] and list(p50["latency_ns"]) == [pytest.approx(100_000, rel=1e-3),
                                                                            pytest.approx(200_000, rel=1e-3)]
    assert (latency_percentiles(frame(rows))["n"] == 2).all()
