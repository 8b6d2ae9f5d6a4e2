"""measure: input checks before any lab, search dispatch, no silent clamps, the generator-limited flag.

Searches run against a synthetic DUT of known capacity (nfvlab.search.SyntheticDut).
"""
import math

import pandas as pd
import pytest

from nfvlab import measure
from nfvlab.params import SearchParams
from nfvlab.search import SyntheticDut

CAP = 50_000


def _dut():
    return SyntheticDut(capacity_pps=CAP, frame_size=64)


@pytest.mark.parametrize("method,goals", [("rfc2544", ["ndr"]), ("mlrsearch", ["ndr"]),
                                          ("rfc2544", ["ndr", "pdr"]), ("mlrsearch", ["ndr", "pdr"])])
def test_search_dispatch_finds_the_known_capacity_for_each_method_and_goal(method, goals):
    sp = SearchParams(method=method, ndr="ndr" in goals, pdr_loss_ratio=0.01 if "pdr" in goals else None,
                      relative_width=0.005, min_rate_pps=1000)
    out = measure.search(_dut(), 64, sp, max_rate_pps=200_000, progress=False)
    assert [r.goal for r in out] == goals and {r.method for r in out} == {method}
    ndr = out[0]
    assert CAP * 0.99 <= ndr.throughput_pps <= CAP * 1.001
    if "pdr" in goals:  # 1 % loss allowed: at least the NDR, at most 1/(1-0.01) of capacity
        assert ndr.throughput_pps <= out[1].throughput_pps <= CAP / 0.99 * 1.001


def test_mrr_and_sweep_dispatch():
    (mrr,) = measure.search(_dut(), 64, SearchParams(method="mrr"), max_rate_pps=80_000, progress=False)
    assert mrr.goal == "mrr" and mrr.throughput_pps == pytest.approx(CAP, rel=0.001)
    sweep = measure.search(_dut(), 64, SearchParams(method="sweep", sweep_fractions=[0.25, 1.0]),
                           max_rate_pps=80_000, progress=False)
    assert isinstance(sweep, pd.DataFrame) and len(sweep) == 2


def test_min_rate_is_used_as_given_and_a_max_not_above_it_is_refused():
    sp = SearchParams(method="rfc2544", pdr_loss_ratio=None, min_rate_pps=40_000, relative_width=0.01)
    (r,) = measure.search(_dut(), 64, sp, max_rate_pps=60_000, progress=False)
    assert min(t.rate_pps for t in r.trials) >= 40_000  # no silent clamp to max/10
    with pytest.raises(measure.InputError, match="max_rate_pps 30,000 must be above min_rate_pps 40,000"):
        measure.search(_dut(), 64, sp, max_rate_pps=30_000, progress=False)


def test_generator_limited_is_judged_against_the_ceiling_given():
    sp = SearchParams(method="rfc2544", pdr_loss_ratio=None, relative_width=0.005)
    (near,) = measure.search(_dut(), 64, sp, max_rate_pps=200_000, ceiling_pps=52_000, progress=False)
    (far,) = measure.search(_dut(), 64, sp, max_rate_pps=200_000, ceiling_pps=200_000, progress=False)
    (unknown,) = measure.search(_dut(), 64, sp, max_rate_pps=200_000, progress=False)
    assert (near.generator_limited, far.generator_limited, unknown.generator_limited) == (True, False, None)


def test_default_max_rate_is_line_rate_capped_by_the_ceiling():
    assert measure.default_max_rate("10GbE", 64) == pytest.approx(14_880_952, rel=1e-6)
    assert measure.default_max_rate("10GbE", 64, 200_000) == pytest.approx(240_000)


@pytest.mark.parametrize("kwargs,match", [
    ({"frame_size": 63}, "--frame-size"),
    ({"frame_size": 1518, "mtu": 1400}, r"above the path MTU \(1400 B"),
    ({"rates_pps": (0.0,)}, "must be above 0"),
    ({"rates_pps": (2e7,)}, "above the 10GbE line rate"),
    ({"duration_s": 0.0}, "--duration-s 0: must be above 0"),
])
def test_impossible_inputs_are_one_line(kwargs, match):
    args = {"frame_size": 64, "port_speed": "10GbE", "mtu": 9000, **kwargs}
    fs = args.pop("frame_size")
    with pytest.raises(measure.InputError, match=match) as err:
        measure.check_inputs(fs, **args)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("exceed_ratio", [0.0, 0.5])
def test_the_exceed_ratio_of_the_params_is_the_goal_applied(exceed_ratio):
    """RFC 9971: the result reports the Goal Exceed Ratio MLRsearch applied, the one asked for."""
    sp = SearchParams(method="mlrsearch", pdr_loss_ratio=None, relative_width=0.01, exceed_ratio=exceed_ratio)
    (ndr,) = measure.search(_dut(), 64, sp, max_rate_pps=200_000, progress=False)
    assert ndr.to_dict()["goal_exceed_ratio"] == exceed_ratio
    with pytest.raises(ValueError, match="exceed_ratio"):
        SearchParams(exceed_ratio=1.0)


def test_a_dithered_top_is_below_the_rate_by_at_most_one_width_uniformly_and_fixed_by_its_seed():
    tops = [measure.dithered_top(100_000.0, 0.02, f"run:{i}") for i in range(2000)]
    u = [math.log(100_000.0 / t) / math.log(1.02) for t in tops]  # the fraction of a width each was lowered by
    assert all(0.0 <= x < 1.0 for x in u)
    assert min(u) < 0.01 and max(u) > 0.99 and abs(sum(u) / len(u) - 0.5) < 0.02  # uniform: sd of the mean 0.0065
    assert measure.dithered_top(100_000.0, 0.02, "run:7") == tops[7]
