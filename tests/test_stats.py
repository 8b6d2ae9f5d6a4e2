"""nfvlab.stats on synthetic data with known answers."""
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

from nfvlab.stats import (
    adjust_pvalues,
    compare,
    level_sort_key,
    summarize,
)


def two_groups(mu_a, mu_b, sd=2.0, n=10, seed=0, dist="normal", levels=("a", "b")):
    rng = np.random.default_rng(seed)
    if dist == "normal":
        xa, xb = rng.normal(mu_a, sd, n), rng.normal(mu_b, sd, n)
    else:
        xa, xb = mu_a * rng.exponential(1.0, n), mu_b * rng.exponential(1.0, n)
    return pd.DataFrame({"g": [levels[0]] * n + [levels[1]] * n, "v": np.r_[xa, xb]})


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


# --------------------------------------------------------------------------- compare
def test_known_difference_is_significant():
    df = two_groups(100, 90, sd=2, n=10, seed=0)
    r = compare(df, "g", "v").iloc[0]
    assert (r["a"], r["b"], r["n_a"], r["n_b"]) == ("a", "b", 10, 10)
    assert r["test"] == "welch"
    assert r["significant"] and r["p_value"] < 1e-6
    assert r["direction"] == "a>b"
    assert r["diff"] == pytest.approx(r["mean_a"] - r["mean_b"])
    assert 8 < r["diff"] < 12
    assert r["effect_size_kind"] == "hedges_g" and r["effect_size"] > 2
    # the reversed pair flips direction and sign
    rev = compare(df, "g", "v", groups=[("b", "a")]).iloc[0]
    assert rev["direction"] == "a<b" and rev["effect_size"] == pytest.approx(-r["effect_size"])
    assert rev["p_value"] == pytest.approx(r["p_value"])


def test_hedges_g_and_welch_match_hand_computation():
    a, b = [10.0, 12.0, 11.0, 13.0], [8.0, 9.0, 7.0, 8.5, 9.5]
    df = pd.DataFrame({"g": ["a"] * 4 + ["b"] * 5, "v": a + b})
    r = compare(df, "g", "v", test="welch").iloc[0]
    sp = math.sqrt((3 * np.var(a, ddof=1) + 4 * np.var(b, ddof=1)) / 7)
    g = (np.mean(a) - np.mean(b)) / sp * (1 - 3 / (4 * 9 - 9))
    assert r["effect_size"] == pytest.approx(g)
    assert r["statistic"] == pytest.approx(st.ttest_ind(a, b, equal_var=False).statistic)


def test_known_non_difference_is_not_significant():
    df = two_groups(100, 100, sd=2, n=10, seed=7)
    r = compare(df, "g", "v").iloc[0]
    assert not r["significant"] and r["direction"] == "n.s."
    assert r["p_value"] > 0.05


def test_false_positive_rate_under_the_null():
    hits = 0
    for seed in range(200):
        r = compare(two_groups(100, 100, sd=2, n=10, seed=1000 + seed), "g", "v",
                    alpha=0.05).iloc[0]
        hits += bool(r["significant"])
    assert hits / 200 <= 0.1, hits


def test_non_normal_data_uses_mann_whitney():
    df = two_groups(10, 30, n=30, seed=2, dist="exponential")
    r = compare(df, "g", "v").iloc[0]
    assert r["test"] == "mannwhitney" and r["effect_size_kind"] == "rank_biserial"
    assert r["significant"] and r["direction"] == "a<b"
    assert -1 <= r["effect_size"] < 0
    # a single outlier also defeats normality
    out = pd.DataFrame({"g": ["a"] * 7 + ["b"] * 7,
                        "v": [10, 10.1, 9.9, 10.2, 9.8, 10, 50, 8, 8.1, 7.9, 8.2, 7.8, 8, 8.05]})
    r = compare(out, "g", "v").iloc[0]
    assert r["test"] == "mannwhitney"
    # complete separation (every a above every b): U = n_a n_b, rank-biserial 1
    assert r["statistic"] == 49 and r["effect_size"] == 1.0 and r["direction"] == "a>b"


def test_forced_test_and_insufficient_data():
    df = pd.DataFrame({"g": ["a"] * 5 + ["b"] * 5 + ["c"] + ["d"] * 2,
                       "v": [1.0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 3, np.nan, np.nan]})
    r = compare(df, "g", "v", test="mannwhitney")
    assert list(zip(r["a"], r["b"])) == [("a", "b"), ("a", "c"), ("a", "d"),
                                        ("b", "c"), ("b", "d"), ("c", "d")]
    ab = r.iloc[0]
    assert ab["test"] == "mannwhitney" and ab["statistic"] == 0.0 and ab["effect_size"] == -1.0
    bad = r[r["test"] == "insufficient-data"]
    assert len(bad) == 5
    assert bad["p_value"].isna().all() and bad["p_adjusted"].isna().all()
    assert not bad["significant"].any() and (bad["direction"] == "n.s.").all()
    assert list(bad["n_b"]) == [1, 0, 1, 0, 0]
    # correction only counts real tests: one test, so Holm leaves it alone
    assert ab["p_adjusted"] == pytest.approx(ab["p_value"])
    assert compare(df, "g", "v", test="welch").iloc[0]["test"] == "welch"
    with pytest.raises(ValueError):
        compare(df, "g", "v", test="ttest")


def test_compare_all_pairs_with_holm_is_deterministic():
    rng = np.random.default_rng(5)
    df = pd.DataFrame({"fs": ["IMIX"] * 8 + [1518] * 8 + [64] * 8,
                       "v": np.r_[rng.normal(5, 1, 8), rng.normal(6, 1, 8), rng.normal(9, 1, 8)]})
    r = compare(df, "fs", "v")
    assert list(zip(r["a"], r["b"])) == [(64, 1518), (64, "IMIX"), (1518, "IMIX")]
    assert (r["p_adjusted"] >= r["p_value"]).all()
    assert np.allclose(r["p_adjusted"], adjust_pvalues(r["p_value"], "holm"))
    pd.testing.assert_frame_equal(r, compare(df.sample(frac=1, random_state=1), "fs", "v"))
    bonf = compare(df, "fs", "v", correction="bonferroni")
    assert np.allclose(bonf["p_adjusted"], np.minimum(1, 3 * bonf["p_value"]))


# --------------------------------------------------------------------------- p-value adjustment
def test_holm_hand_computed():
    assert np.allclose(adjust_pvalues([0.01, 0.04, 0.03], "holm"), [0.03, 0.06, 0.06])
    assert np.allclose(adjust_pvalues([0.01, 0.04, 0.03], "bonferroni"), [0.03, 0.12, 0.09])
    assert np.allclose(adjust_pvalues([0.5, 0.9], "holm"), [1.0, 1.0])
    got = adjust_pvalues([0.01, np.nan, 0.04, 0.03], "holm")
    assert math.isnan(got[1]) and np.allclose(got[[0, 2, 3]], [0.03, 0.06, 0.06])


def test_holm_monotone_and_bounded():
    p = np.random.default_rng(0).uniform(0, 0.2, 25)
    adj = adjust_pvalues(p, "holm")
    order = np.argsort(p)
    assert np.all(np.diff(adj[order]) >= 0)
    assert np.all(adj >= p) and np.all(adj <= 1)
    # Holm is never more conservative than Bonferroni
    assert np.all(adj <= adjust_pvalues(p, "bonferroni") + 1e-15)


def test_fdr_bh_is_scipy():
    p = [0.01, 0.04, 0.03, 0.2]
    assert np.allclose(adjust_pvalues(p, "fdr_bh"), st.false_discovery_control(p, method="bh"))
    assert np.allclose(adjust_pvalues(p, "none"), p)

