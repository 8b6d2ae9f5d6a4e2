"""The report's trial-validity section on records with a known content: invalid trials counted per
configuration, and the searches a load the generator could not offer stopped."""
import dataclasses

from nfvlab.records import RecordWriter
from nfvlab.report.validity import validity_section
from nfvlab.search import SyntheticDut, rfc2544_search


class OffSchedule:
    """A stand-in generator over a synthetic DUT: trials in ``stalled`` (by index) and every trial at
    ``ceiling_pps`` or above come back invalid."""

    def __init__(self, ceiling_pps=float("inf"), stalled=()):
        self.dut, self.ceiling_pps, self.stalled, self.calls = SyntheticDut(capacity_pps=50_000), ceiling_pps, set(stalled), 0
        self.max_invalid_repeats, self.invalid_pause_s = 1, (lambda _repeat: 0.0)
        self.invalid = 0

    def __call__(self, rate_pps, duration_s):
        result = self.dut(rate_pps, duration_s)
        index, self.calls = self.calls, self.calls + 1
        if rate_pps < self.ceiling_pps and index not in self.stalled:
            return result
        self.invalid += 1
        return dataclasses.replace(result, valid=False, invalid_reason="stalled 40 ms (test double)")


def _record(rec, model, measure):
    rfc2544 = rfc2544_search(measure, 1000, 200_000, relative_width=0.01, duration_s=1.0,
                       on_trial=lambda t: rec.trial(t, purpose="search", model=model, repetition=0))
    rec.search({k: v for k, v in rfc2544.to_dict().items() if k != "trials"}, model=model, frame_size=64,
               repetition=0, goal="ndr")
    return rfc2544, measure.invalid


def test_invalid_trials_and_unoffered_loads_per_configuration(tmp_path):
    path = tmp_path / "raw.jsonl"
    with RecordWriter(path, "exp", {}, provenance={}) as rec:
        capped, capped_invalid = _record(rec, "capped", OffSchedule(ceiling_pps=30_000))
        once, once_invalid = _record(rec, "once", OffSchedule(stalled={0}))
        _record(rec, "clean", OffSchedule())
    assert capped.not_offered_pps is not None and once.not_offered_pps is None
    section = validity_section("X", path, "u")
    table = section.table.data.set_index("model")
    assert list(table.index) == ["capped", "once"]  # the clean configuration had no invalid trial
    # every unoffered load: a trial and its one repeat
    assert table.loc["capped", "invalid trials"] == capped_invalid and capped_invalid % 2 == 0 and capped_invalid >= 6
    assert table.loc["once", "invalid trials"] == once_invalid == 1
    assert table.loc["capped", "searches stopped by an unoffered load"] == 1
    assert table.loc["once", "searches stopped by an unoffered load"] == 0
    assert f"{capped_invalid + 1} trial(s) were invalid" in section.text
    assert "In 1 search(es) every repeat at one load was invalid" in section.text


def test_a_run_without_invalid_trials_says_so(tmp_path):
    path = tmp_path / "raw.jsonl"
    with RecordWriter(path, "exp", {}, provenance={}) as rec:
        _record(rec, "clean", OffSchedule())
    section = validity_section("X", path, "u")
    assert section.table is None and section.text.startswith("Every trial was valid")
