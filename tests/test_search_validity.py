"""Invalid trials (the generator off schedule) in every search's trial loop (nfvlab.search.result.TrialLog).

The DUT is :class:`SyntheticDut` (a model with a known answer). A wrapper stands in for a
generator that stalls on chosen trials: such a trial comes back with ``valid=False`` and a
loss far beyond the DUT's, as a stalled generator's shortfall would look. The searches must
record it, repeat it and never let it decide a bound; a load that stays invalid is one the
generator could not offer: an upper bound it set, never a measurement of the DUT.
"""
import dataclasses

import pytest

from nfvlab.calibrate import mark_generator_limited
from nfvlab.search import GeneratorFaultError, LoadNotOfferedError, SyntheticDut, mlrsearch, rfc2544_search
from nfvlab.search.result import TrialLog
from nfvlab.trial import GeneratorMeasurer, invalid_repeat_pause_s

CAPACITY_PPS = 50_000


class StallingGenerator:
    """Measures through ``dut``; the trials whose index is in ``stalled`` come back invalid with
    most of their frames unsent (what a stalled sender leaves)."""

    def __init__(self, dut, stalled, max_invalid_repeats=3):
        self.dut, self.stalled, self.calls = dut, set(stalled), 0
        self.max_invalid_repeats = max_invalid_repeats

    def __call__(self, rate_pps, duration_s):
        result = self.dut(rate_pps, duration_s)
        index, self.calls = self.calls, self.calls + 1
        if index not in self.stalled:
            return result
        dirs = tuple(dataclasses.replace(d, sent_packets=d.intended_packets // 3,
                                         received_packets=min(d.received_packets, d.intended_packets // 3))
                     for d in result.directions)
        return dataclasses.replace(result, directions=dirs, valid=False,
                                   invalid_reason=f"generator stalled (test double, trial {index})")


def _search(method, measure, on_trial):
    if method == "rfc2544":
        return rfc2544_search(measure, 1000, 200_000, loss_ratio=0.0, relative_width=0.01, duration_s=1.0,
                              on_trial=on_trial)
    return mlrsearch(measure, 1000, 200_000, goals={"ndr": 0.0}, relative_width=0.01, initial_trial_duration_s=1.0,
                     final_trial_duration_s=1.0, duration_sum_s=1.0, on_trial=on_trial)["ndr"]


@pytest.mark.parametrize("method", ["rfc2544", "mlrsearch"])
def test_invalid_trials_are_recorded_repeated_and_never_decide(method):
    clean = _search(method, SyntheticDut(capacity_pps=CAPACITY_PPS, directions=2), None)
    seen = []
    # Trials 0, 1, 4 and 5 stall: the first load is repeated twice, another once.
    result = _search(method, StallingGenerator(SyntheticDut(capacity_pps=CAPACITY_PPS, directions=2), {0, 1, 4, 5}),
                     seen.append)
    invalid = [t for t in seen if not t.valid]
    assert len(invalid) == 4 and all("test double" in t.invalid_reason for t in invalid)
    assert result.invalid_trials == 4
    assert all(t.valid for t in result.trials) and result.n_trials == len(seen) - 4
    # The same loads were measured again, so the answer is the one without stalls.
    assert result.throughput_pps == clean.throughput_pps
    assert [t.rate_pps for t in result.trials] == [t.rate_pps for t in clean.trials]


class CeilingGenerator:
    """Measures through ``dut``, but every trial at ``ceiling_pps`` or above comes back invalid
    (a generator that cannot offer those rates on schedule). Logs ``(rate_pps, valid)`` per call."""

    def __init__(self, dut, ceiling_pps, max_invalid_repeats=2):
        self.dut, self.ceiling_pps, self.calls = dut, ceiling_pps, []
        self.max_invalid_repeats = max_invalid_repeats
        self.invalid_pause_s = lambda _repeat: 0.0

    def __call__(self, rate_pps, duration_s):
        result = self.dut(rate_pps, duration_s)
        valid = rate_pps < self.ceiling_pps
        self.calls.append((rate_pps, valid))
        if valid:
            return result
        return dataclasses.replace(result, valid=False, invalid_reason="off schedule (test double)")


def _bounded_search(method, measure, on_trial=None, min_rate_pps=1000):
    if method == "rfc2544":
        return rfc2544_search(measure, min_rate_pps, 200_000, loss_ratio=0.0, relative_width=0.01, duration_s=1.0,
                              on_trial=on_trial)
    return mlrsearch(measure, min_rate_pps, 200_000, goals={"ndr": 0.0}, relative_width=0.01,
                     initial_trial_duration_s=0.5, final_trial_duration_s=1.0, duration_sum_s=2.0,
                     exceed_ratio=0.5, warmup_duration_s=0.0, on_trial=on_trial)["ndr"]


@pytest.mark.parametrize("method", ["rfc2544", "mlrsearch"])
@pytest.mark.parametrize("repeats", [0, 2])
def test_a_load_the_generator_cannot_offer_is_an_upper_bound_it_set(method, repeats):
    """The DUT forwards 50 kpps, the generator cannot offer 30 kpps: the NDR lands just below
    30 kpps, its upper bound is the unoffered rate, and the result is generator-limited whatever
    the ceiling says (before, the search ended with no result)."""
    seen = []
    measure = CeilingGenerator(SyntheticDut(capacity_pps=CAPACITY_PPS, directions=2), 30_000, repeats)
    result = _bounded_search(method, measure, seen.append)
    assert 0.99 * 30_000 <= result.throughput_pps < 30_000
    assert result.not_offered_pps >= 30_000 and result.upper_bound_pps == result.not_offered_pps
    assert all(t.valid and t.rate_pps < 30_000 for t in result.trials)
    # Each unoffered rate was tried once plus its repeats, and nothing at or above the lowest
    # one known was tried again.
    lowest, run = float("inf"), []
    for rate, valid in measure.calls:
        assert rate < lowest
        run = run + [rate] if not valid else []
        if len(run) == repeats + 1:
            assert set(run) == {rate}
            lowest, run = min(lowest, rate), []
    invalid = [t for t in seen if not t.valid]
    assert len(invalid) == result.invalid_trials == sum(not v for _, v in measure.calls)
    assert mark_generator_limited(result, ceiling_pps=1e6).generator_limited is True
    clean = _bounded_search(method, SyntheticDut(capacity_pps=CAPACITY_PPS, directions=2))
    assert clean.not_offered_pps is None and clean.throughput_pps >= 0.99 * CAPACITY_PPS
    assert mark_generator_limited(clean, ceiling_pps=1e6).generator_limited is False


@pytest.mark.parametrize("method", ["rfc2544", "mlrsearch"])
def test_a_minimum_rate_the_generator_cannot_offer_ends_the_search_saying_so(method):
    seen = []
    measure = CeilingGenerator(SyntheticDut(capacity_pps=CAPACITY_PPS), 0, max_invalid_repeats=1)
    with pytest.raises(GeneratorFaultError, match="1,000 pps|min_rate_pps=1000") as err:
        _bounded_search(method, measure, seen.append)
    assert seen and not any(t.valid for t in seen)
    assert measure.calls[-2:] == [(1000, False), (1000, False)]
    assert len(err.value.invalid) == len(seen)


def test_the_trial_log_raises_when_a_load_stays_invalid():
    seen = []
    log = TrialLog(StallingGenerator(SyntheticDut(capacity_pps=CAPACITY_PPS), range(100), max_invalid_repeats=2),
                   on_trial=seen.append, invalid_pause_s=lambda _repeat: 0.0)
    with pytest.raises(LoadNotOfferedError, match=r"no valid trial at 200,000 pps: 3 invalid trial\(s\) in a row") as err:
        log.run(200_000, 1.0)
    assert err.value.rate_pps == 200_000 and log.not_offered == [200_000] and log.lowest_not_offered() == 200_000
    assert len(seen) == len(err.value.invalid) == 3 and not any(t.valid for t in seen)


def test_the_trial_log_takes_the_bound_from_the_measurer_or_its_argument():
    dut = SyntheticDut(capacity_pps=CAPACITY_PPS)
    assert TrialLog(dut).max_invalid_repeats == 8  # the default (params: search.max_invalid_repeats)
    assert TrialLog(StallingGenerator(dut, (), max_invalid_repeats=7)).max_invalid_repeats == 7
    assert TrialLog(StallingGenerator(dut, (), max_invalid_repeats=7), max_invalid_repeats=1).max_invalid_repeats == 1


def test_repeats_of_an_invalid_trial_wait_longer_each_time_up_to_a_cap():
    pauses = []

    class Pausing(StallingGenerator):
        def invalid_pause_s(self, repeat):
            pauses.append(repeat)
            return 0.0

    measure = Pausing(SyntheticDut(capacity_pps=CAPACITY_PPS), range(100), max_invalid_repeats=4)
    with pytest.raises(LoadNotOfferedError):
        TrialLog(measure).run(200_000, 1.0)
    # A pause before each of the 4 repeats, none after the last invalid trial.
    assert pauses == [1, 2, 3, 4] and measure.calls == 5
    assert [invalid_repeat_pause_s(k) for k in range(1, 9)] == [0.25, 0.5, 1.0, 2.0, 2.0, 2.0, 2.0, 2.0]
    assert GeneratorMeasurer.invalid_pause_s(3) == 1.0
