"""Claims from paired notes (nfvlab.analysis_paired): each verdict from synthetic notes of known verdicts."""

import pytest

from nfvlab import analysis_paired as AP
from nfvlab.analysis import CLAIM_COLUMNS, claim_rows
from nfvlab.claims import VERDICTS

import pandas as pd


def note(verdict, ratio, half=0.02, blocks=4, **kw):
    return {"verdict": verdict, "ratio": ratio, "ci_low": ratio / (1 + half), "ci_high": ratio * (1 + half),
            "blocks": blocks, "p_different": 0.01, "p_equivalent": 0.5, "detectable": 0.08, "blocks_needed": None,
            **kw}


CHAINS = [["x", "y", "z"]]


def test_every_pair_larger_holds_naming_the_weakest():
    row = AP.paired_claim("c", "64 B", CHAINS, {("x", "y"): note("larger", 1.5), ("y", "z"): note("larger", 1.2)}, {})
    assert (row["verdict"], row["pair"], row["n"]) == ("holds", "y > z", 4)
    assert row["effect_size"] == pytest.approx(0.2) and row["test"] == AP.PAIRED_TEST
    assert set(row) <= set(CLAIM_COLUMNS)


@pytest.mark.parametrize("second", ["smaller", "equivalent"])
def test_a_pair_shown_smaller_or_within_the_margin_contradicts(second):
    row = AP.paired_claim("c", "64 B", CHAINS, {("x", "y"): note("larger", 1.5), ("y", "z"): note(second, 0.97)}, {})
    assert (row["verdict"], row["pair"]) == ("contradicted", "y > z")


def test_an_undecided_pair_leaves_the_claim_inconclusive_with_its_detectable_difference():
    row = AP.paired_claim("c", "64 B", CHAINS, {("x", "y"): note("larger", 1.5), ("y", "z"): note("undecided", 1.02)},
                          {})
    assert (row["verdict"], row["pair"], row["mde"]) == ("inconclusive", "y > z", 0.08)


def test_a_paired_ratio_against_an_ndr_ratio_shown_the_other_way_is_metric_dependent():
    notes = {("x", "y"): note("larger", 1.5), ("y", "z"): note("larger", 1.2)}
    ndr = {"y": [100.0, 101.0, 99.0], "z": [150.0, 151.0, 149.0]}  # NDR says z is far above y
    row = AP.paired_claim("c", "64 B", CHAINS, notes, ndr)
    assert (row["verdict"], row["pair"]) == ("metric-dependent", "y > z") and "metric-dependent" in VERDICTS
    # an NDR ratio whose interval holds 1 does not contradict the paired verdict
    assert AP.paired_claim("c", "64 B", CHAINS, notes, {"y": [100.0, 150.0], "z": [150.0, 100.0]})["verdict"] == "holds"


def test_a_pair_without_a_measured_note_leaves_the_claim_to_the_searches():
    assert AP.paired_claim("c", "64 B", CHAINS, {("x", "y"): note("larger", 1.5)}, {}) is None
    untestable = {("x", "y"): note("larger", 1.5), ("y", "z"): {"verdict": "not testable", "reason": "generator"}}
    assert AP.paired_claim("c", "64 B", CHAINS, untestable, {}) is None


def test_claim_rows_take_the_paired_verdict_over_the_searches_when_every_pair_was_paired():
    searches = pd.DataFrame({"model": ["x"] * 3 + ["y"] * 3, "throughput_pps": [100.0, 101, 99, 100, 101, 99],
                             "resolution": [0.02] * 6, "repetition": [0, 1, 2] * 2})
    status = {"x": "measured", "y": "measured"}
    by_ndr = claim_rows("c", "64 B", [["x", "y"]], searches, "model", status)
    by_pairs = claim_rows("c", "64 B", [["x", "y"]], searches, "model", status,
                          paired={("x", "y"): note("larger", 1.3)}, noise="host probe: CPU 0 CV 20 %")
    assert by_ndr[-1]["verdict"] != "holds" and by_pairs[-1]["verdict"] == "holds"
    assert "host probe: CPU 0 CV 20 %" in by_pairs[-1]["detail"]


def test_the_control_holds_only_when_shown_equal_and_is_contradicted_when_shown_different():
    rows = AP.control_rows({("k", "k", True): note("equivalent", 1.0), ("m", "m", True): note("larger", 1.1),
                            ("u", "u", True): note("undecided", 1.01), ("v", "w", False): note("larger", 2.0),
                            ("g", "g", True): {"verdict": "not testable", "reason": "generator-limited"}})
    assert [(r["condition"], r["verdict"]) for r in rows] == [
        ("k", "holds"), ("m", "contradicted"), ("u", "inconclusive"), ("g", "not testable")]
    assert all(r["claim"] == AP.CONTROL_CLAIM for r in rows)


def test_pairs_of_a_chain_are_its_neighbours_once():
    assert AP.pairs_of([["s1", "s2"], ["s1", "s3"], ["a", "b", "c"], ["a", "b"]]) == [
        ("s1", "s2"), ("s1", "s3"), ("a", "b"), ("b", "c")]


def test_a_generator_limited_pair_is_read_from_the_searches_as_a_lower_bound():
    limited_a = {"verdict": "not testable", "reason": "generator-limited NDR: x", "generator_limited": ["a"]}
    ndr = {"x": [400.0, 410.0, 405.0], "y": [56.0, 57.0, 58.0]}  # x's NDR (a lower bound of its DUT's) is ~7 x y's
    holds = AP.paired_claim("c", "64 B", CHAINS, {("x", "y"): limited_a, ("y", "z"): note("larger", 1.2)}, ndr)
    assert (holds["verdict"], holds["pair"]) == ("holds", "y > z") and "lower bound" in holds["reason"]
    assert "x / y: NDR ratio 7.106" in holds["detail"]
    eq = AP.paired_claim("c", "64 B", CHAINS, {("x", "y"): limited_a, ("y", "z"): note("equivalent", 1.01)}, ndr)
    assert (eq["verdict"], eq["pair"]) == ("contradicted", "y > z")
    # the bound says nothing when the limited arm comes out below: its DUT may be faster still
    below = {"x": [50.0, 51.0, 52.0], "y": [56.0, 57.0, 58.0]}
    open_ = AP.paired_claim("c", "64 B", CHAINS, {("x", "y"): limited_a, ("y", "z"): note("larger", 1.2)}, below)
    assert (open_["verdict"], open_["pair"]) == ("inconclusive", "x > y")
    # the claimed-smaller arm limited and still shown above: contradicted by the searches
    limited_b = {**limited_a, "generator_limited": ["b"]}
    row = AP.paired_claim("c", "64 B", CHAINS, {("x", "y"): limited_b, ("y", "z"): note("larger", 1.2)}, below)
    assert (row["verdict"], row["pair"]) == ("contradicted", "x > y") and "lower bound" in row["reason"]
    # nothing paired at all: the claim stays with the searches
    assert AP.paired_claim("c", "64 B", CHAINS, {("x", "y"): limited_a}, ndr) is None


def test_the_bound_is_read_at_the_alpha_the_claims_measured_pairs_were_tested_at():
    limited_a = {"verdict": "not testable", "reason": "generator-limited NDR: x", "generator_limited": ["a"]}
    ndr = {"x": [90.0, 95.0, 100.0], "y": [56.0, 57.0, 58.0]}  # Welch on 3 v 3: above 1 at 0.025, not at 0.0005
    at = {alpha: AP.paired_claim("c", "64 B", CHAINS, {("x", "y"): limited_a,
                                                       ("y", "z"): note("larger", 1.2, alpha=alpha)}, ndr)
          for alpha in (0.025, 0.0005)}
    assert at[0.025]["verdict"] == "holds" and (at[0.0005]["verdict"], at[0.0005]["pair"]) == ("inconclusive", "x > y")
