"""RFC 2544 binary search: NDR, PDR, min-rate failure, trial bookkeeping."""
import json

import pytest

from nfvlab.search import (
    MinRateFailedError,
    SyntheticDut,
    ndr_pdr_bisect,
    rfc2544_search,
    total_cost,
)

WIDTH = 0.005


def _within(result, truth, width=WIDTH):
    lo, hi = result.lower_bound_pps, result.upper_bound_pps
    assert lo <= truth * (1 + 1e-9)
    assert hi is None or hi >= truth * (1 - 1e-9)
    assert (truth - lo) / truth <= width
    if hi is not None:
        assert (hi - lo) / hi <= width


@pytest.mark.parametrize("cap", [1e6, 3.3e6, 7.77e6, 12.345e6])
@pytest.mark.parametrize("directions", [1, 2])
def test_ndr_within_width_of_capacity(cap, directions):
    dut = SyntheticDut(capacity_pps=cap, directions=directions)
    r = rfc2544_search(dut, 1e4, 14.88e6, loss_ratio=0.0, relative_width=WIDTH,
                       duration_s=1.0)
    assert (r.method, r.goal, r.loss_ratio) == ("rfc2544", "ndr", 0.0)
    assert r.throughput_pps == r.lower_bound_pps
    _within(r, cap)
    assert r.trials[0].rate_pps == 14.88e6  # RFC 2544: first trial at max


def test_pdr_near_capacity_over_one_minus_loss():
    cap = 3.3e6
    dut = SyntheticDut(capacity_pps=cap)
    r = rfc2544_search(dut, 1e4, 14.88e6, loss_ratio=0.005, duration_s=1.0)
    assert r.goal == "pdr"
    _within(r, cap / (1 - 0.005))
    assert r.lower_bound_pps > cap  # PDR is above NDR here


def test_max_rate_passes_is_one_trial():
    dut = SyntheticDut(capacity_pps=20e6)
    r = rfc2544_search(dut, 1e4, 14.88e6, duration_s=1.0)
    assert r.n_trials == 1
    assert r.throughput_pps == r.lower_bound_pps == 14.88e6
    assert r.upper_bound_pps is None


def test_min_rate_fails_raises():
    dut = SyntheticDut(capacity_pps=5e3)
    seen = []
    with pytest.raises(MinRateFailedError, match="min_rate_pps") as info:
        rfc2544_search(dut, 1e4, 1e6, duration_s=1.0, on_trial=seen.append)
    assert info.value.min_rate_pps == 1e4
    assert list(info.value.trials) == seen
    assert seen[-1].rate_pps == 1e4  # min rate was actually measured


def test_min_rate_fails_pdr_in_combined_search():
    with pytest.raises(MinRateFailedError):
        ndr_pdr_bisect(SyntheticDut(capacity_pps=5e3), 1e4, 1e6, duration_s=1.0)


def test_on_trial_called_once_per_trial_in_order():
    dut = SyntheticDut(capacity_pps=1e6)
    seen = []
    r = rfc2544_search(dut, 1e4, 14.88e6, duration_s=2.0, warmup_duration_s=1.0,
                       on_trial=seen.append)
    assert list(r.trials) == seen
    assert [t.kind for t in seen][:2] == ["warmup", "trial"]
    assert r.n_trials == len(seen) == dut.n_calls
    assert r.trial_seconds == pytest.approx(1.0 + 2.0 * (len(seen) - 1))
    json.dumps(r.to_dict())


def test_ndr_pdr_bisect_reuses_ndr_trials():
    cap = 7.77e6
    dut = SyntheticDut(capacity_pps=cap, directions=2)
    seen = []
    res = ndr_pdr_bisect(dut, 1e4, 14.88e6, pdr_loss_ratio=0.005, duration_s=1.0,
                         on_trial=seen.append)
    ndr, pdr = res["ndr"], res["pdr"]
    _within(ndr, cap)
    _within(pdr, cap / 0.995)
    assert pdr.trials[: ndr.n_trials] == ndr.trials
    assert list(pdr.trials) == seen
    assert total_cost(res.values()) == (len(seen), pdr.trial_seconds)
    # Without reuse PDR would start again at max; it must not repeat that trial.
    assert [t.rate_pps for t in seen].count(14.88e6) == 1
    alone = rfc2544_search(SyntheticDut(capacity_pps=cap), 1e4, 14.88e6,
                           loss_ratio=0.005, duration_s=1.0)
    assert pdr.n_trials - ndr.n_trials < alone.n_trials


def test_progress_bar_goes_to_stderr(capsys):
    rfc2544_search(SyntheticDut(capacity_pps=1e6), 1e4, 2e6, duration_s=1.0,
                   progress=True)
    out, err = capsys.readouterr()
    assert out == ""
    assert "trial" in err and "ndr" in err


def test_validation():
    dut = SyntheticDut(capacity_pps=1e6)
    with pytest.raises(ValueError):
        rfc2544_search(dut, 2e6, 1e6)
    with pytest.raises(ValueError):
        rfc2544_search(dut, 1e3, 1e6, relative_width=0.0)
    with pytest.raises(ValueError):
        ndr_pdr_bisect(dut, 1e3, 1e6, pdr_loss_ratio=0.0)


# --------------------------------------------------------------------------- RFC 9971 terms
def test_results_carry_the_rfc9971_goal_bisection_applies():
    dut = SyntheticDut(capacity_pps=2e5, directions=2)
    res = ndr_pdr_bisect(dut, 1e4, 1e6, pdr_loss_ratio=0.01, relative_width=0.002, duration_s=2.0)
    for name, ratio in (("ndr", 0.0), ("pdr", 0.01)):
        r = res[name]
        assert (r.search_goal.loss_ratio, r.search_goal.exceed_ratio) == (ratio, 0.0)
        assert r.search_goal.final_trial_duration_s == r.search_goal.duration_sum_s == 2.0
        assert r.search_goal.relative_width == 0.002
        assert (r.min_rate_pps, r.max_rate_pps, r.directions) == (1e4, 1e6, 2)
        assert r.regular is True and r.flags == ()
        assert r.bounds_relative_width <= 0.002
        d = json.loads(json.dumps(r.to_dict()))
        assert (d["goal_loss_ratio"], d["goal_duration_sum_s"], d["regular"]) == (ratio, 2.0, True)
    # NDR: the lower bound's trial lost nothing, so the conditional throughput is the bound.
    assert res["ndr"].conditional_throughput_pps == res["ndr"].lower_bound_pps
    # PDR: the lower bound's trial lost 1 - capacity / rate, so the conditional
    # throughput is what the DUT forwarded there: its capacity.
    pdr = res["pdr"]
    assert pdr.lower_bound_pps > 2e5 * 1.005
    assert pdr.conditional_throughput_pps == pytest.approx(2e5, rel=1e-5)
    assert pdr.throughput_pps == pdr.lower_bound_pps  # RFC 2544 reports the bound


def test_irregular_and_min_load_flags():
    top = rfc2544_search(SyntheticDut(capacity_pps=5e6), 1e4, 1e6, duration_s=1.0)
    assert top.flags == ("max-load-is-lower-bound",) and top.regular is False
    assert top.upper_bound_pps is None and top.lower_bound_pps == 1e6
    floor = rfc2544_search(SyntheticDut(capacity_pps=1.001e4), 1e4, 1e6, relative_width=0.005, duration_s=1.0)
    assert floor.lower_bound_pps == 1e4 and floor.flags == ("lower-bound-is-min-load",)
    assert floor.regular is True
