"""Paired comparisons (nfvlab.paired): known statistics, and by simulation with the host's spells in
the noise, alpha held under the null and a 10 % difference decided in the blocks the design claims."""
import math
import random

import numpy as np
import pytest

from nfvlab import paired
from nfvlab.paired import BlockPlan, block_log_ratio, paired_test, schedule, sequential, trimmed_t


def test_schedule_is_abba_or_baab_at_random_and_reproducible():
    orders = schedule(200, random.Random(7))
    assert set(orders) == {"ABBA", "BAAB"}
    assert 70 <= orders.count("ABBA") <= 130  # Binomial(200, 1/2): 7 SD either side
    assert orders == schedule(200, random.Random(7))


def test_block_log_ratio_of_known_rates():
    assert block_log_ratio([200.0, 200.0], [100.0, 100.0]) == pytest.approx(math.log(2))
    # geometric means: sqrt(100 * 400) = 200 against 100
    assert block_log_ratio([100.0, 400.0], [100.0, 100.0]) == pytest.approx(math.log(2))
    with pytest.raises(ValueError, match="positive rates of both arms"):
        block_log_ratio([0.0, 1.0], [1.0, 1.0])


def test_known_blocks_larger_and_equivalent():
    # mean 0.1, SD sqrt(0.0008 / 3) = 0.01633, t = 0.1 / (0.01633 / 2) = 12.25 on 3 df
    r = paired_test([0.10, 0.12, 0.08, 0.10], level=0.05, margin=0.05)
    assert r.verdict == "larger" and r.blocks == 4 and r.blocks_needed is None
    assert r.ratio == pytest.approx(math.exp(0.1))
    assert r.p_different == pytest.approx(2 * 0.000583, rel=0.05)
    half = 3.182446 * math.sqrt(0.0008 / 3) / 2  # t(0.975, 3) * SE
    assert (r.ci_low, r.ci_high) == pytest.approx((math.exp(0.1 - half), math.exp(0.1 + half)))
    assert paired_test([-x for x in (0.10, 0.12, 0.08, 0.10)], level=0.05, margin=0.05).verdict == "smaller"
    eq = paired_test([0.01, -0.01, 0.0, 0.005, -0.005], level=0.05, margin=0.05)
    assert eq.verdict == "equivalent" and eq.p_equivalent < 0.05 < eq.p_different
    wide = paired_test([0.2, -0.2, 0.1, -0.1], level=0.05, margin=0.05)
    assert wide.verdict == "undecided" and wide.blocks_needed > 4 and wide.detectable > 0.1


def test_trimmed_t_of_known_blocks():
    # n = 5: one cut from each end; kept 0.01, 0.02, 0.03 (mean 0.02); winsorized 0.01, 0.01, 0.02,
    # 0.03, 0.03: SD 0.01; SE 0.01 * sqrt(4 / (3 * 2)); h - 2 = 1 degree of freedom
    mean, se, df, sw = trimmed_t([0.5, 0.0, 0.02, 0.03, 0.01])
    assert (mean, sw, df) == pytest.approx((0.02, 0.01, 1)) and se == pytest.approx(0.01 * math.sqrt(4 / 6))
    # below 5 blocks nothing is cut: the plain mean, s / sqrt(n), n - 1
    d = [0.1, 0.12, 0.08, 0.3]
    assert trimmed_t(d) == pytest.approx((np.mean(d), np.std(d, ddof=1) / 2, 3, np.std(d, ddof=1)))
    assert trimmed_t(d + [0.0] * 6, trim=0.0)[2] == 9


def test_slow_spells_on_one_arm_in_two_of_ten_blocks_do_not_decide_the_comparison():
    # Eight blocks within +-3 % of each other and two in which one arm's search landed in a slow spell
    # (NDR -35 %, -40 %): the trimmed mean shows the arms within the 5 % margin; the mean cannot.
    d = [0.02, 0.01, 0.03, -0.43, 0.015, -0.51, 0.02, 0.0, 0.025, 0.01]
    robust = paired_test(d, level=0.05, margin=0.05)
    assert robust.verdict == "equivalent" and robust.ratio == pytest.approx(math.exp(0.0125))
    assert paired_test(d, level=0.05, margin=0.05, trim=0.0).verdict == "undecided"


def test_looks_spend_at_most_alpha_and_stop_when_decided():
    plan = BlockPlan(first=4, step=4, max_blocks=20, alpha=0.05)
    assert plan.looks == [4, 8, 12, 16, 20]
    assert sum(plan.alpha_at(k) for k in range(len(plan.looks))) == pytest.approx(0.05)
    seen = []
    looks = sequential(lambda i: seen.append(i) or 0.2, plan)  # every block says +22 %: decided at once
    assert [x.blocks for x in looks] == [4] and looks[-1].verdict == "larger" and seen == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="margin"):
        BlockPlan(margin=0.0)


# ------------------------------------------------------------------ simulation: spells in the noise
def _host(rng, windows: int, sd: float, lag1: float) -> np.ndarray:
    """Log speed of a CPU per 0.5 s window: AR(1) with stationary SD ``sd`` and lag-1 correlation
    ``lag1`` (this project's VMs: SD ~0.22, lag-1 0.4-0.7 per 0.5 s window)."""
    shocks = rng.normal(0.0, sd * math.sqrt(1 - lag1 ** 2), windows)
    h = np.empty(windows)
    h[0] = rng.normal(0.0, sd)
    for i in range(1, windows):
        h[i] = lag1 * h[i - 1] + shocks[i]
    return h


def _block_source(seed: int, ratio: float, lag1: float, blocks: int, sd: float = 0.22, slump: float = 0.0):
    """Block i's paired log-ratio on a simulated host: 1 s trials (two windows each) in the
    schedule's order, arm A ``ratio`` times arm B, plus 3 % trial noise; with chance ``slump`` a
    block has one arm (either, at random) 35 % slower throughout (a search that a long slow spell hit)."""
    rng, orders = np.random.default_rng(seed), schedule(blocks, random.Random(seed))
    h = _host(rng, blocks * 8 + 2, sd, lag1)

    def block(i: int) -> float:
        rates = {"A": [], "B": []}
        slow = rng.choice(["A", "B"]) if rng.random() < slump else None
        for j, arm in enumerate(orders[i]):
            w = (4 * i + j) * 2
            log_rate = h[w:w + 2].mean() + rng.normal(0.0, 0.03) + (math.log(ratio) if arm == "A" else 0.0)
            rates[arm].append(math.exp(log_rate + (math.log(0.65) if arm == slow else 0.0)))
        return block_log_ratio(rates["A"], rates["B"])

    return block


@pytest.mark.parametrize("lag1, slump", [(0.4, 0.0), (0.7, 0.0), (0.9, 0.0), (0.7, 0.2)])
@pytest.mark.parametrize("looks", [(6, 4, 30), (4, 4, 20), (3, 3, 12)])  # the class's, the params', short looks
def test_the_sequential_design_holds_alpha_under_the_null_with_spells(lag1, slump, looks):
    plan = BlockPlan(*looks)
    n = 600
    verdicts = [sequential(_block_source(seed, 1.0, lag1, plan.max_blocks, slump=slump), plan)[-1].verdict
                for seed in range(n)]
    false_positive = sum(v in ("larger", "smaller") for v in verdicts) / n
    assert false_positive <= plan.alpha, false_positive


def test_a_ten_percent_difference_is_decided_in_the_blocks_the_design_claims():
    # The design claims blocks from a look's winsorized SD, which depends on the look's size (floor(0.2 n)
    # cut from each end): the claim made from n A/A blocks, n its own claim (a few rounds settle it).
    claimed = 10
    for _ in range(3):
        sw = float(np.median([trimmed_t([_block_source(seed * 100 + i, 1.0, 0.7, 1)(0) for i in range(claimed)])[3]
                              for seed in range(300)]))
        claimed = paired._needed(sw, math.log(1.10), 0.05, 0.80, None)
    assert claimed is not None and claimed >= 3
    n = 400
    sources = [_block_source(10_000 + s, 1.10, 0.7, claimed) for s in range(n)]
    decided = sum(paired_test([block(i) for i in range(claimed)], level=0.05, margin=0.05).verdict == "larger"
                  for block in sources) / n
    # 80 % power claimed; 3 standard errors of a proportion of 400 below it
    assert decided >= 0.80 - 3 * math.sqrt(0.8 * 0.2 / n), (claimed, decided)


def test_futility_gives_up_a_comparison_that_cannot_be_decided_within_the_cap_and_keeps_alpha():
    """``give_up_above``: from the second look, an undecided comparison needing more blocks than that is
    given up (the OVS-against-OVS pairs of the published runs needed 69-999 blocks at 8-20 blocks).
    Never at the first look; under the null with spells the false positive rate stays within alpha and
    the blocks spent fall by far; a 10 % difference loses little of its power."""
    noisy = [0.6, -0.5, 0.4, -0.7, 0.5, -0.4, 0.7, -0.6] * 3  # a ratio near 1, SD ~0.6: hopeless in 20 blocks
    capped = sequential(lambda i: noisy[i], BlockPlan(4, 4, 20))
    assert [x.blocks for x in capped] == [4, 8, 12, 16, 20]
    gave_up = sequential(lambda i: noisy[i], BlockPlan(4, 4, 20, give_up_above=80))
    assert [x.blocks for x in gave_up] == [4, 8] and gave_up[-1].verdict == "undecided"
    assert gave_up[0].blocks_needed is None or gave_up[0].blocks_needed > 80  # the first look alone: not trusted
    assert gave_up[-1].blocks_needed is None or gave_up[-1].blocks_needed > 80
    two_looks = BlockPlan(4, 4, 8, give_up_above=80)  # the A/A control's: its last look is the cap, not futility
    assert [two_looks.futile(k, gave_up[-1]) for k in range(2)] == [False, False]
    assert BlockPlan(4, 4, 12, give_up_above=80).futile(1, gave_up[-1])
    decided_at_once = sequential(lambda i: 0.2, BlockPlan(4, 4, 20, give_up_above=5))
    assert [x.blocks for x in decided_at_once] == [4] and decided_at_once[-1].verdict == "larger"

    n = 400
    for ratio in (1.0, 1.10):
        runs = {g: [sequential(_block_source(20_000 + s, ratio, 0.7, 20), BlockPlan(4, 4, 20, give_up_above=g))
                    for s in range(n)] for g in (None, 80)}
        shown = {g: sum(r[-1].verdict in ("larger", "smaller") for r in rs) / n for g, rs in runs.items()}
        blocks = {g: float(np.mean([r[-1].blocks for r in rs])) for g, rs in runs.items()}
        assert blocks[80] < 0.8 * blocks[None], (ratio, blocks)
        if ratio == 1.0:
            assert shown[80] <= shown[None] and shown[80] <= 0.05, shown
        else:
            assert shown[80] >= shown[None] - 0.05, shown  # the power it costs
