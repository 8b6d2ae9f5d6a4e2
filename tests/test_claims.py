"""nfvlab.claims on small cases with known answers: the test, the verdicts and their reasons,
the minimum detectable effect, the sequential plan (the simulations: test_claims_simulation.py)."""
import math
import re

import numpy as np
import pytest
from scipy import stats as st

from nfvlab import claims
from nfvlab.claims import Design, Plan, Sample, equality_claim, order_claim, plan_more, sequential_verdict


def S(*values, w=0.0):
    return Sample(np.array(values, dtype=float), w)


def test_the_pair_test_is_welch_on_logs_with_the_resolution_as_uniform_variance():
    x, y = S(110.0, 120.0, 115.0, w=0.02), S(100.0, 101.0, 99.0, w=0.02)
    delta = -math.log(1 - 0.02)
    lx, ly = np.log(x.values), np.log(y.values)
    want = st.ttest_ind_from_stats(lx.mean(), math.sqrt(lx.var(ddof=1) + delta ** 2 / 12), 3,
                                   ly.mean(), math.sqrt(ly.var(ddof=1) + delta ** 2 / 12), 3,
                                   equal_var=False).pvalue
    r = order_claim({"x": x, "y": y}, [["x", "y"]])
    assert "p_different = " + f"{want:.3g}" in r["detail"]  # one pair: Holm changes nothing
    assert r["effect_size"] == pytest.approx(math.exp(lx.mean() - ly.mean()) - 1)
    # Without the resolution the same numbers are not the same test.
    assert f"{want:.3g}" not in order_claim({"x": S(110.0, 120.0, 115.0), "y": S(100.0, 101.0, 99.0)},
                                            [["x", "y"]])["detail"]


def test_identical_repetitions_are_not_zero_variance_and_separate_levels_decide():
    # The case: three identical quantized NDRs each, 188 vs 38 kpps.
    r = order_claim({"smartnic": S(188e3, 188e3, 188e3, w=0.02), "vhost": S(38e3, 38e3, 38e3, w=0.02)},
                    [["smartnic", "vhost"]])
    assert r["verdict"] == "holds" and r["p_adjusted"] < 1e-4 and r["effect_size"] == pytest.approx(188 / 38 - 1)
    # Three grid steps apart (6 %, beyond the +-5 % margin), each constant: every repetition of a
    # lies above every one of b (a search result is a lower bound within the goal width), which
    # Welch on the logs with the resolution's variance can show; mixed over the same two grid
    # points, a is not shown larger but shown within the +-5 % margin of b.
    step = 1 / (1 - 0.02)
    apart = {"a": S(*[100.0 * step ** 3] * 3, w=0.02), "b": S(100.0, 100.0, 100.0, w=0.02)}
    assert order_claim(apart, [["a", "b"]])["verdict"] == "holds"
    mixed = {"a": S(100.0 * step, 100.0, 100.0 * step, w=0.02), "b": S(100.0, 100.0 * step, 100.0, w=0.02)}
    r = order_claim(mixed, [["a", "b"]])
    assert r["verdict"] == "contradicted" and "no practical difference" in r["reason"]


def test_a_difference_shown_inside_the_margin_is_no_practical_difference():
    # One grid step apart (2 %): shown larger and shown within +-5 % at once. Equivalence is judged
    # first, so a true ratio inside the margin reads "contradicted" whether or not the run happens to
    # show the small difference too (no flip to "holds" from run to run).
    step = 1 / (1 - 0.02)
    near = {"a": S(*[100.0 * step] * 3, w=0.02), "b": S(100.0, 100.0, 100.0, w=0.02)}
    r = order_claim(near, [["a", "b"]])
    ps = {k: float(v) for k, v in re.findall(r"p_(\w+) = ([\d.e+-]+)", r["detail"])}
    assert ps["different"] < 0.05 and ps["equivalent"] < 0.05  # both shown ...
    assert r["verdict"] == "contradicted" and "no practical difference" in r["reason"]  # ... equivalence wins
    assert r["effect_size"] == pytest.approx(step - 1)


def test_reversed_order_is_contradicted_with_its_reason():
    r = order_claim({"a": S(50.0, 52.0, 51.0, w=0.02), "b": S(100.0, 101.0, 99.0, w=0.02)}, [["a", "b"]])
    assert r["verdict"] == "contradicted" and "reversed" in r["reason"] and r["effect_size"] < 0
    assert r["pair"] == "a > b" and r["p_adjusted"] < 0.05


def test_equal_within_the_margin_contradicts_an_order_claim_but_an_unknown_one_is_inconclusive():
    tight = {"a": S(100.0, 100.2, 99.9, 100.1, 99.8), "b": S(100.1, 99.9, 100.0, 100.2, 99.9)}
    r = order_claim(tight, [["a", "b"]])
    assert r["verdict"] == "contradicted" and "no practical difference" in r["reason"] and "+-5%" in r["reason"]
    # A wider margin is easier, a narrower one than the noise cannot be shown.
    assert order_claim(tight, [["a", "b"]], Design(order_margin=0.0001))["verdict"] == "inconclusive"
    noisy = {"a": S(80.0, 120.0, 100.0), "b": S(90.0, 115.0, 95.0)}
    r = order_claim(noisy, [["a", "b"]])
    assert r["verdict"] == "inconclusive" and r["n_needed"] is None or r["n_needed"] > 3
    assert r["mde"] > 0 and "detectable" in r["reason"]


def test_mde_and_repetitions_needed_are_consistent_with_the_power_they_claim():
    rng = np.random.default_rng(7)
    a, b = S(*(100 * np.exp([0.12, -0.02, 0.08]))), S(*(100 * np.exp([0.0, 0.05, -0.06])))
    r = order_claim({"a": a, "b": b}, [["a", "b"]])
    assert r["verdict"] == "inconclusive" and r["n_needed"] is not None and r["n_needed"] > 3
    # At the repetitions it names, a run with the observed ratio and spread decides in >= ~80 %.
    n, sd, eff = r["n_needed"], math.sqrt((a._log[2] + b._log[2]) / 2), math.log1p(r["effect_size"])
    hits = sum(order_claim({"a": S(*(100 * np.exp(rng.normal(eff, sd, n)))),
                            "b": S(*(100 * np.exp(rng.normal(0, sd, n))))}, [["a", "b"]])["verdict"] == "holds"
               for _ in range(300))
    assert 0.70 <= hits / 300 <= 0.95, hits
    # And an effect of the stated MDE at n = 3 is found about as often as the design's power says.
    mde, sd3 = math.log1p(r["mde"]), sd
    hits = sum(order_claim({"a": S(*(100 * np.exp(rng.normal(mde, sd3, 3)))),
                            "b": S(*(100 * np.exp(rng.normal(0, sd3, 3))))}, [["a", "b"]])["verdict"] == "holds"
               for _ in range(300))
    assert 0.65 <= hits / 300 <= 0.95, hits


def test_not_testable_and_holm_over_the_pairs():
    r = order_claim({"a": S(1.0), "b": S(2.0, 3.0)}, [["a", "b"]])
    assert r["verdict"] == "not testable" and r["n"] == 1
    three = {"a": S(400.0, 410.0, 405.0), "b": S(200.0, 204.0, 199.0), "c": S(100.0, 99.0, 101.0)}
    one = order_claim(three, [["a", "b"]])
    both = order_claim(three, [["a", "b", "c"]])
    assert one["verdict"] == both["verdict"] == "holds"
    assert both["p_adjusted"] >= one["p_adjusted"]  # two pairs: the weaker pair pays Holm
    assert claims._holm([0.01, 0.04, 0.03]).tolist() == pytest.approx([0.03, 0.06, 0.06])


def test_equality_claims_hold_within_the_margin_and_are_contradicted_beyond_it():
    same = {"a": S(100.0, 100.5, 99.5, 100.2), "b": S(101.0, 100.5, 101.5, 100.8)}
    assert equality_claim(same, [("a", "b")])["verdict"] == "holds"
    far = {"a": S(150.0, 151.0, 149.0), "b": S(100.0, 101.0, 99.0)}
    r = equality_claim(far, [("a", "b")])
    assert r["verdict"] == "contradicted" and "beyond +-10%" in r["reason"]
    assert equality_claim({"a": S(80.0, 120.0), "b": S(90.0, 110.0)}, [("a", "b")])["verdict"] == "inconclusive"


def test_the_design_comes_from_params_claims_yaml(tmp_path):
    from conftest import REPO

    assert claims.load_design(REPO / "params" / "claims.yaml") == Design()
    bad = tmp_path / "c.yaml"
    bad.write_text("alpha: 0.05\nmargin: 0.1\n")
    with pytest.raises(ValueError, match="margin"):
        claims.load_design(bad)
    with pytest.raises(ValueError, match="alpha"):
        Design(alpha=1.5)
    # a value of the wrong type: one line naming the file and the field, not a comparison error
    for text, field in (("alpha: x\n", "alpha"), ("power: true\n", "power"), ("n_max: 2.5\n", "n_max")):
        bad.write_text(text)
        with pytest.raises(ValueError) as err:
            claims.load_design(bad)
        assert str(err.value).startswith(f"{bad}: {field}: ") and "\n" not in str(err.value)


def test_plan_spends_at_most_alpha_and_a_fixed_n_run_is_one_look_at_full_alpha():
    p = Plan(first=3, step=2, max_repetitions=10)
    assert p.looks() == [3, 5, 7, 9, 10]
    spent = [p.alpha_at(k, 0.05) for k in range(5)]
    assert all(a > 0 for a in spent) and sum(spent) == pytest.approx(0.05)
    fixed = Plan(first=3, step=1, max_repetitions=3)
    assert fixed.looks() == [3] and fixed.alpha_at(0, 0.05) == pytest.approx(0.05)
    s = {"a": S(120.0, 121.0, 119.0), "b": S(100.0, 101.0, 99.0)}
    seq = sequential_verdict("order", s, [["a", "b"]], fixed)
    plain = order_claim(s, [["a", "b"]])
    assert {k: seq[k] for k in plain} == plain and seq["look"] == 0


def test_plan_more_names_the_configurations_of_undecided_claims_only():
    s = {"a": S(100.0, 130.0, 90.0), "b": S(95.0, 120.0, 85.0), "c": S(400.0, 401.0, 399.0),
         "d": S(100.0, 101.0, 99.0)}
    want = plan_more([("order", [["a", "b"]]), ("order", [["c", "d"]])], s, Plan(3, 2, 9))
    assert set(want) == {"a", "b"} and want["a"][0] == 5 and "a > b undecided" in want["a"][1]
    assert plan_more([("order", [["c", "d"]])], s, Plan(3, 2, 9)) == {}
    assert plan_more([("order", [["a", "b"]])], s, Plan(3, 1, 3)) == {}  # no look left


# ---------------------------------------------------------------------------
# paired claims: per-repetition log-ratios (experiment E's directions of one lab)
# ---------------------------------------------------------------------------
def K(values, keys, w=0.0):
    return Sample(np.array(values, dtype=float), w, np.array(keys))


def test_a_paired_pair_is_scipys_paired_t_on_the_logs_of_the_repetitions_both_sides_have():
    # y's repetitions come in another order and x lacks repetition 4: pairs are matched by key
    x = K([110.0, 130.0, 90.0, 121.0], [0, 1, 2, 3])
    y = K([80.0, 101.0, 118.0, 100.0, 50.0], [2, 0, 1, 3, 4])
    lx, ly = np.log([110.0, 130.0, 90.0, 121.0]), np.log([101.0, 118.0, 80.0, 100.0])
    assert list(claims.paired_log_ratios(x, y)) == pytest.approx(list(lx - ly))
    want = st.ttest_rel(lx, ly).pvalue
    r = order_claim({"x": x, "y": y}, [["x", "y"]], paired=True)
    assert f"p_different = {want:.3g}" in r["detail"] and r["n"] == 4
    assert r["test"] == claims.PAIRED_TEST_NAME
    assert r["effect_size"] == pytest.approx(math.exp((lx - ly).mean()) - 1)
    # TOST within +-10 %: the larger of the two one-sided paired tests
    b = math.log(1.1)
    tost = max(st.ttest_1samp(lx - ly, -b, alternative="greater").pvalue,
               st.ttest_1samp(lx - ly, b, alternative="less").pvalue)
    e = equality_claim({"x": x, "y": y}, [("x", "y")], Design(equivalence_margin=0.10), paired=True)
    assert f"p_equivalent = {tost:.3g}" in e["detail"]


def test_a_nan_value_is_dropped_with_its_key_and_head_keeps_the_keys():
    s = K([1.0, float("nan"), 3.0, 4.0], [0, 1, 2, 3])
    assert list(s.keys) == [0, 2, 3] and list(s.head(2).keys) == [0, 2]
    with pytest.raises(ValueError, match="3 keys for 4 values"):
        K([1.0, 2.0, 3.0, 4.0], [0, 1, 2])


def test_pairing_decides_what_a_shared_spell_hides_from_welch():
    """Known statistics: each repetition's host speed (lognormal, SD 0.3 on the log scale) hits both
    configurations alike; x is 10 % above y, each with its own noise of SD 0.02. Unpaired, the spell is
    noise (Welch cannot tell); paired, it cancels and the ratio is found within its interval."""
    rng = np.random.default_rng(7)
    spell = rng.normal(0.0, 0.3, 6)
    x = np.exp(math.log(110.0) + spell + rng.normal(0, 0.02, 6))
    y = np.exp(math.log(100.0) + spell + rng.normal(0, 0.02, 6))
    keys = np.arange(6)
    unpaired = order_claim({"x": Sample(x), "y": Sample(y)}, [["x", "y"]])
    paired = order_claim({"x": Sample(x, 0.0, keys), "y": Sample(y, 0.0, keys)}, [["x", "y"]], paired=True)
    assert unpaired["verdict"] == "inconclusive" and paired["verdict"] == "holds"
    assert 0.05 < paired["effect_size"] < 0.15  # 10 % +- a few standard errors of 0.028 / sqrt(6)
    # the repetitions needed follow the paired spread: an undecided paired pair asks for few
    few = order_claim({"x": Sample(x[:2], 0.0, keys[:2]), "y": Sample(y[:2], 0.0, keys[:2])}, [["x", "y"]],
                      paired=True)
    assert few["verdict"] == "inconclusive" and few["n_needed"] is not None and few["n_needed"] <= 6
    assert unpaired["n_needed"] is None or unpaired["n_needed"] > 6


def test_plan_more_reads_a_paired_claim_as_paired():
    keys = np.arange(3)
    s = {"a": Sample(np.array([100.0, 150.0, 80.0]), 0.0, keys), "b": Sample(np.array([90.0, 136.0, 73.0]), 0.0, keys)}
    plan = Plan(3, 2, 9)
    assert set(plan_more([("order", [["a", "b"]])], s, plan)) == {"a", "b"}  # unpaired: undecided, more wanted
    assert plan_more([("order", [["a", "b"]], True)], s, plan) == {}  # paired: +10 % each time, decided
