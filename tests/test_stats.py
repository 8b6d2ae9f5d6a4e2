"""nfvlab.stats on synthetic data with known answers (the claims' tests: tests/test_claims*.py)."""
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

from nfvlab.stats import level_sort_key, summarize


# --------------------------------------------------------------------------- summarize
def test_ci_coverage_of_the_mean():
    rng = np.random.default_rng(20240601)
    reps, n = 2000, 10
    df = pd.DataFrame({"rep": np.repeat(np.arange(reps), n), "v": rng.normal(100, 5, reps * n)})
    s = summarize(df, ["rep"], "v", confidence=0.95)
    assert len(s) == reps and (s["n"] == n).all()
    covered = ((s["ci_low"] <= 100) & (100 <= s["ci_high"])).mean()
    assert 0.93 <= covered <= 0.97, covered
    # and a 50 % interval covers about half as often: the level is really used
    s50 = summarize(df, ["rep"], "v", confidence=0.5)
    covered50 = ((s50["ci_low"] <= 100) & (100 <= s50["ci_high"])).mean()
    assert 0.46 <= covered50 <= 0.54, covered50


@pytest.mark.parametrize("n, bootstrap_at_most", [(3, 0.85), (10, 0.92)])
def test_t_interval_keeps_its_level_at_few_repetitions_where_a_bootstrap_does_not(n, bootstrap_at_most):
    # Why the throughput tables use the t interval (nfvlab.analysis.config_table):
    # with the profiles' 3 or 10 repetitions of a normal quantity, the t interval
    # covers the known mean 95 % of the time, a percentile bootstrap far less.
    rng = np.random.default_rng(7)
    reps = 400
    x = rng.normal(100.0, 5.0, (reps, n))
    s = summarize(pd.DataFrame({"rep": np.repeat(np.arange(reps), n), "v": x.ravel()}), ["rep"], "v")
    t_covered = ((s["ci_low"] <= 100) & (100 <= s["ci_high"])).mean()
    assert 0.92 <= t_covered <= 0.98, t_covered
    boot = [st.bootstrap((row,), np.mean, n_resamples=999, method="percentile",
                         rng=np.random.default_rng(i)).confidence_interval for i, row in enumerate(x)]
    boot_covered = np.mean([lo <= 100 <= hi for lo, hi in boot])
    assert boot_covered <= bootstrap_at_most, boot_covered


def test_summarize_exact_values():
    df = pd.DataFrame({"mode": ["x"] * 4 + ["y"] * 3, "v": [1.0, 2.0, 3.0, 4.0, 10.0, 10.0, 40.0]})
    s = summarize(df, ["mode"], "v")
    assert list(s.columns) == ["mode", "n", "mean", "std", "ci_low", "ci_high", "cv",
                               "median", "min", "max"]
    x = s.set_index("mode")
    assert x.loc["x", "n"] == 4
    assert x.loc["x", "mean"] == pytest.approx(2.5)
    assert x.loc["x", "std"] == pytest.approx(math.sqrt(5 / 3))  # ddof=1
    assert x.loc["x", "cv"] == pytest.approx(math.sqrt(5 / 3) / 2.5)
    assert x.loc["x", "median"] == 2.5
    assert (x.loc["x", "min"], x.loc["x", "max"]) == (1.0, 4.0)
    half = st.t.ppf(0.975, 3) * math.sqrt(5 / 3) / 2  # t(0.975, 3) * s / sqrt(n)
    assert x.loc["x", "ci_low"] == pytest.approx(2.5 - half)
    assert x.loc["x", "ci_high"] == pytest.approx(2.5 + half)
    assert x.loc["y", "mean"] == pytest.approx(20.0)
    assert x.loc["y", "median"] == 10.0
    assert x.loc["y", "std"] == pytest.approx(math.sqrt(300.0))
    assert s["n"].dtype == np.int64


def test_summarize_frame_size_order_ints_then_imix():
    sizes = ["IMIX", 1518, 64, 512, 128, "IMIX", 64]
    df = pd.DataFrame({"mode": ["b", "a", "b", "a", "a", "a", "a"], "fs": sizes,
                       "v": [1.0, 2, 3, 4, 5, 6, 7]})
    s = summarize(df, ["fs"], "v")
    assert list(s["fs"]) == [64, 128, 512, 1518, "IMIX"]
    s2 = summarize(df, ["mode", "fs"], "v")
    assert list(zip(s2["mode"], s2["fs"])) == [
        ("a", 64), ("a", 128), ("a", 512), ("a", 1518), ("a", "IMIX"), ("b", 64), ("b", "IMIX")]
    # the same sizes as strings (read back from CSV) keep numeric order, not "1518" < "512"
    df["fs"] = df["fs"].astype(str)
    assert list(summarize(df, ["fs"], "v")["fs"]) == ["64", "128", "512", "1518", "IMIX"]
    # input order does not matter
    shuffled = df.sample(frac=1, random_state=3)
    pd.testing.assert_frame_equal(summarize(shuffled, ["mode", "fs"], "v"),
                                  summarize(df, ["mode", "fs"], "v"))


def test_level_sort_key():
    levels = ["IMIX", 1518, None, "64", 64.5, "abc", np.int64(9), float("nan")]
    ordered = sorted(levels, key=level_sort_key)
    assert ordered[:4] == [np.int64(9), "64", 64.5, 1518]
    assert ordered[4:6] == ["IMIX", "abc"]
    assert all(pd.isna(v) for v in ordered[6:])


def test_summarize_nan_and_small_groups():
    df = pd.DataFrame({
        "cfg": ["ok", "ok", "ok", "one", "one", "dead", "dead", "zero", "zero"],
        "v": [1.0, np.nan, 3.0, 5.0, np.nan, np.nan, np.nan, -1.0, 1.0],
    })
    s = summarize(df, "cfg", "v").set_index("cfg")
    assert list(s.index) == ["dead", "ok", "one", "zero"]
    assert s.loc["ok", "n"] == 2 and s.loc["ok", "mean"] == 2.0
    assert s.loc["ok", "std"] == pytest.approx(math.sqrt(2))
    # n = 1: a mean but no spread, no CI, no CV
    assert s.loc["one", "n"] == 1 and s.loc["one", "mean"] == 5.0
    for c in ("std", "ci_low", "ci_high", "cv"):
        assert math.isnan(s.loc["one", c]), c
    assert s.loc["one", "median"] == 5.0
    # a configuration measured as NaN only keeps its row with n = 0
    assert s.loc["dead", "n"] == 0
    assert s.loc[["dead"], ["mean", "std", "ci_low", "ci_high", "cv", "median", "min", "max"]] \
        .isna().all(axis=None)
    # mean 0: CV undefined
    assert s.loc["zero", "mean"] == 0 and math.isnan(s.loc["zero", "cv"])


def test_summarize_constant_group_has_degenerate_ci():
    df = pd.DataFrame({"g": ["c"] * 5, "v": [7.0] * 5})
    s = summarize(df, ["g"], "v").iloc[0]
    assert (s["ci_low"], s["ci_high"], s["std"], s["cv"]) == (7.0, 7.0, 0.0, 0.0)
