"""MRR: trials at max load, throughput = mean receive rate per direction."""
import json

import pytest

from nfvlab.search import SyntheticDut, mrr
from nfvlab.search.goal import GOAL_FIELDS


@pytest.mark.parametrize("rate_pps", [0.3e6, 1e6, 2.5e6])
@pytest.mark.parametrize("directions", [1, 2])
def test_mrr_is_min_of_capacity_and_rate(rate_pps, directions):
    dut = SyntheticDut(capacity_pps=1e6, directions=directions)
    r = mrr(dut, rate_pps, duration_s=2.0, repeats=3)
    assert r.throughput_pps == pytest.approx(min(1e6, rate_pps))
    assert (r.method, r.goal, r.loss_ratio) == ("mrr", "mrr", None)
    assert r.lower_bound_pps is None and r.upper_bound_pps is None
    assert r.conditional_throughput_pps is None
    assert r.n_trials == 3 and r.trial_seconds == 6.0


def test_mrr_generator_ceiling_limits_receive_rate():
    dut = SyntheticDut(capacity_pps=1e6, generator_ceiling_pps=0.7e6)
    assert mrr(dut, 2e6, 1.0).throughput_pps == pytest.approx(0.7e6)


def test_mrr_mean_of_noisy_repeats():
    dut = SyntheticDut(capacity_pps=1e6, capacity_jitter=0.02, seed=1)
    seen = []
    r = mrr(dut, 5e6, 1.0, repeats=5, on_trial=seen.append)
    assert r.throughput_pps == pytest.approx(
        sum(t.forwarding_rate_pps for t in seen) / 5)


def test_mrr_warmup_on_trial_order_and_to_dict():
    dut = SyntheticDut(capacity_pps=1e6)
    seen = []
    r = mrr(dut, 2e6, 1.0, repeats=2, warmup_duration_s=0.5, on_trial=seen.append)
    assert [t.kind for t in seen] == ["warmup", "trial", "trial"]
    assert list(r.trials) == seen
    assert r.trial_seconds == 2.5 and r.n_trials == 3
    d = json.loads(json.dumps(r.to_dict()))
    assert d["method"] == "mrr" and len(d["trials"]) == 3
    assert d["trials"][1]["forwarding_rate_pps"] == pytest.approx(1e6)


def test_mrr_validation():
    dut = SyntheticDut(capacity_pps=1e6)
    with pytest.raises(ValueError):
        mrr(dut, 0, 1.0)
    with pytest.raises(ValueError):
        mrr(dut, 1e6, 1.0, repeats=0)


def test_mrr_has_no_rfc9971_goal():
    r = mrr(SyntheticDut(capacity_pps=1e5, directions=2), 2e5, 1.0)
    d = r.to_dict()
    assert r.search_goal is None and r.regular is None and r.flags == ()
    assert (r.max_rate_pps, r.min_rate_pps, r.directions) == (2e5, None, 2)
    assert all(d[k] is None for k in GOAL_FIELDS) and d["regular"] is None
