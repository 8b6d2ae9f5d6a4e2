"""MLRsearch adapter: known answers, errors, count scaling, cost vs bisection."""
import json

import pytest

from nfvlab.search import (
    MinRateFailedError,
    SearchTimeoutError,
    SyntheticDut,
    mlrsearch,
    ndr_pdr_bisect,
    total_cost,
)
from nfvlab.search.goal import (
    GOAL_FIELDS,
    GoalParams,
    classify_load,
    conditional_throughput_pps,
)
from nfvlab.search.mlr import measurement_result
from nfvlab.traffic.stats import DirectionStats, LatencyStats
from nfvlab.trial import TrialResult

WIDTH = 0.005
LINE_RATE_64B_10G = 14_880_952.0


def _check_goal(result, truth, width=WIDTH):
    lo, hi = result.lower_bound_pps, result.upper_bound_pps
    assert lo <= truth * (1 + 1e-9)
    assert hi is None or hi >= truth * (1 - 1e-9)
    assert (truth - lo) / truth <= width * 1.001
    if hi is not None:
        assert (hi - lo) / hi <= width * 1.001
    assert result.conditional_throughput_pps is not None
    assert result.throughput_pps == result.conditional_throughput_pps
    assert result.conditional_throughput_pps <= lo


@pytest.mark.parametrize("cap", [1e6, 3.3e6, 7.77e6])
@pytest.mark.parametrize("directions", [1, 2])
def test_ndr_pdr_within_width_of_known_answers(cap, directions):
    dut = SyntheticDut(capacity_pps=cap, directions=directions)
    res = mlrsearch(dut, 1e4, LINE_RATE_64B_10G, relative_width=WIDTH)
    assert set(res) == {"ndr", "pdr"}
    assert res["ndr"].method == "mlrsearch" and res["ndr"].loss_ratio == 0.0
    assert res["pdr"].loss_ratio == 0.005
    _check_goal(res["ndr"], dut.throughput_pps(0.0))
    _check_goal(res["pdr"], dut.throughput_pps(0.005))
    # Goals were searched together: both results hold the same trials.
    assert res["ndr"].trials == res["pdr"].trials
    json.dumps(res["pdr"].to_dict())


def test_noisy_dut_with_spurious_loss_still_brackets_capacity():
    dut = SyntheticDut(capacity_pps=5e5, capacity_jitter=0.002,
                       spurious_loss_probability=0.05, seed=3)
    res = mlrsearch(dut, 1e4, 1e6)
    assert res["ndr"].lower_bound_pps == pytest.approx(5e5, rel=0.02)
    assert res["pdr"].lower_bound_pps == pytest.approx(5e5 / 0.995, rel=0.02)


def test_max_rate_is_lower_bound():
    res = mlrsearch(SyntheticDut(capacity_pps=5e6), 1e4, 1e6)
    for r in res.values():
        assert r.lower_bound_pps == 1e6 and r.upper_bound_pps is None


def test_on_trial_once_per_trial_in_order_with_warmup():
    dut = SyntheticDut(capacity_pps=2e6)
    seen = []
    res = mlrsearch(dut, 1e4, 1e7, warmup_duration_s=2.0, on_trial=seen.append)
    assert list(res["ndr"].trials) == seen
    assert len(seen) == dut.n_calls == res["ndr"].n_trials
    assert seen[0].kind == "warmup" and seen[0].duration_s == 2.0
    assert seen[0].rate_pps == 1e7
    assert all(t.kind == "trial" for t in seen[1:])
    assert res["ndr"].trial_seconds == pytest.approx(sum(t.duration_s for t in seen))


def test_min_rate_fails_raises_clear_error():
    seen = []
    with pytest.raises(MinRateFailedError, match="min_rate_pps=10000") as info:
        mlrsearch(SyntheticDut(capacity_pps=5e3), 1e4, 1e6, on_trial=seen.append)
    assert isinstance(info.value.__cause__, RuntimeError)
    assert list(info.value.trials) == seen and seen


def test_timeout_raises_search_timeout():
    with pytest.raises(SearchTimeoutError):
        mlrsearch(SyntheticDut(capacity_pps=5e5), 1e4, 1e6,
                  search_duration_max_s=1e-9)


def test_measurer_errors_propagate_unchanged():
    class Boom(RuntimeError):
        pass

    def broken(rate_pps, duration_s):
        raise Boom("generator died")

    with pytest.raises(Boom):
        mlrsearch(broken, 1e4, 1e6)


def test_goal_validation():
    dut = SyntheticDut(capacity_pps=1e6)
    with pytest.raises(ValueError):
        mlrsearch(dut, 1e4, 1e6, goals={"a": 0.0, "b": 0.0})
    with pytest.raises(ValueError):
        mlrsearch(dut, 1e6, 1e4)


def _trial(intended, sent, received, rate_pps=1000.0, directions=2):
    d = DirectionStats("p0", "p1", intended, sent, received, 1.0, LatencyStats(0, 0))
    return TrialResult(rate_pps=rate_pps, duration_s=1.0, frame_size=64,
                       directions=(d,) * directions)


@pytest.mark.parametrize("counts", [
    (1000, 1000, 1000),   # clean
    (1000, 900, 850),     # unsent shortfall + DUT loss
    (1000, 1002, 1000),   # generator overshoot: not loss
    (1000, 1002, 1001),   # overshoot, more received than intended
    (1000, 990, 995),     # received > sent (duplicates)
])
def test_counts_scaled_so_loss_ratios_agree(counts):
    t = _trial(*counts)
    m = measurement_result(t)
    assert m.intended_load == 1000.0  # per-direction rate, not the 2-direction sum
    assert m.intended_count == 2 * counts[0]  # counts summed over directions
    assert m.loss_ratio == pytest.approx(t.loss_ratio)
    assert m.relative_forwarding_rate == pytest.approx(1000.0 * (1 - t.loss_ratio))


def test_cost_vs_bisection_ndr_pdr_equal_final_duration(capsys):
    """Print trials / trial-seconds of both methods; assert only correctness."""
    cap, final_s = 3.3e6, 60.0
    bis = ndr_pdr_bisect(SyntheticDut(capacity_pps=cap, directions=2), 1e4,
                         LINE_RATE_64B_10G, pdr_loss_ratio=0.005,
                         relative_width=WIDTH, duration_s=final_s)
    configs = {
        # One final trial decides a load, like RFC 2544 (exceed ratio 0).
        "single-trial": dict(final_trial_duration_s=final_s, duration_sum_s=final_s,
                             exceed_ratio=0.0, warmup_duration_s=0.0),
        # CSIT-like: 1 s warm-up, exceed ratio 0.5.
        "csit-like": dict(final_trial_duration_s=final_s, duration_sum_s=final_s,
                          exceed_ratio=0.5, warmup_duration_s=1.0),
    }
    mlr = {}
    for name, kw in configs.items():
        dut = SyntheticDut(capacity_pps=cap, directions=2)
        mlr[name] = mlrsearch(dut, 1e4, LINE_RATE_64B_10G, relative_width=WIDTH,
                              initial_trial_duration_s=1.0, **kw)
    with capsys.disabled():
        n, s = total_cost(bis.values())
        print(f"\nNDR+PDR @ {WIDTH:.1%} width, final trials {final_s:g} s,"
              f" capacity {cap:g} pps/direction:")
        print(f"  bisection            : {n:3d} trials, {s:8.1f} trial-s")
        for name, res in mlr.items():
            n, s = total_cost(res.values())
            print(f"  mlrsearch {name:<11}: {n:3d} trials, {s:8.1f} trial-s")
    dut = SyntheticDut(capacity_pps=cap)
    for res in (bis, *mlr.values()):
        lo, hi = res["ndr"].lower_bound_pps, res["ndr"].upper_bound_pps
        assert lo <= dut.throughput_pps(0.0) <= hi
        assert (hi - lo) / hi <= WIDTH * 1.001
        lo, hi = res["pdr"].lower_bound_pps, res["pdr"].upper_bound_pps
        assert lo <= dut.throughput_pps(0.005) <= hi
        assert (hi - lo) / hi <= WIDTH * 1.001


# --------------------------------------------------------------------------- RFC 9971 terms
def test_results_carry_every_goal_attribute_applied():
    res = mlrsearch(SyntheticDut(capacity_pps=3e5, directions=2), 1e4, 1e6, goals={"ndr": 0.0, "pdr": 0.002},
                    relative_width=0.01, initial_trial_duration_s=0.5, final_trial_duration_s=2.0,
                    duration_sum_s=4.0, exceed_ratio=0.25)
    for name, ratio in (("ndr", 0.0), ("pdr", 0.002)):
        r = res[name]
        assert r.search_goal == GoalParams(loss_ratio=ratio, exceed_ratio=0.25, final_trial_duration_s=2.0,
                                           duration_sum_s=4.0, relative_width=0.01,
                                           initial_trial_duration_s=0.5)
        assert (r.min_rate_pps, r.max_rate_pps, r.directions) == (1e4, 1e6, 2)
        assert r.regular is True and r.flags == ()
        assert r.bounds_relative_width <= 0.01 * (1 + 1e-6)
        d = json.loads(json.dumps(r.to_dict()))
        assert {k: d[k] for k in GOAL_FIELDS} == r.search_goal.to_dict()


def test_max_rate_lower_bound_is_flagged_irregular():
    for r in mlrsearch(SyntheticDut(capacity_pps=5e6), 1e4, 1e6).values():
        assert r.flags == ("max-load-is-lower-bound",) and r.regular is False


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_reported_conditional_throughput_is_appendix_b_at_the_lower_bound(seed):
    # A noisy DUT, several trials per load: what MLRsearch reports must be RFC 9971
    # Appendix B applied to the trials at the relevant lower bound (nfvlab.search.goal).
    dut = SyntheticDut(capacity_pps=4e5, capacity_jitter=0.003, spurious_loss_probability=0.2,
                       spurious_loss_packets=300, seed=seed)
    res = mlrsearch(dut, 1e4, 1e6, goals={"ndr": 0.0, "pdr": 0.005}, duration_sum_s=5.0)
    for r in res.values():
        at_lo = [t for t in r.trials if t.kind != "warmup" and t.rate_pps == r.lower_bound_pps]
        assert classify_load(at_lo, r.search_goal).classification == "lower bound"
        assert r.conditional_throughput_pps == pytest.approx(
            conditional_throughput_pps(at_lo, r.search_goal, r.lower_bound_pps), rel=1e-12)
        assert r.conditional_throughput_pps <= r.lower_bound_pps
