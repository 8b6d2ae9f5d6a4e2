"""Calibration: searches land on a path of known capacity; ceilings keyed by generator identity."""
import json

import pytest

from conftest import NO_RESIDUE, lab_residue
from nfvlab import calibrate
from nfvlab.labs.embedded import EmbeddedLab
from nfvlab.params import GeneratorParams
from nfvlab.search import SearchResult


@pytest.mark.lab
@pytest.mark.parametrize("method", ["rfc2544", "mlrsearch"])
def test_ndr_search_on_tbf_path_lands_on_its_capacity(clean_host, method):
    # One search may be repeated, for the reason the shallow-path test gives: a stall of the VM
    # longer than the slip budget (1 % of 0.5 s) is loss, and an RFC 2544 bisection trusts one
    # trial (a fresh-clone CI run once got -10 %). Both searches missing is a failure.
    errors = []
    for _ in range(2):
        result, err = calibrate.check_known_path(EmbeddedLab(), GeneratorParams(), 64, 30_000, duration_s=0.5,
                                                 relative_width=0.01, method=method)
        errors.append((result.throughput_pps, err))
        if abs(err) <= 0.03:
            break
    assert abs(errors[-1][1]) <= 0.03, errors
    assert result.n_trials >= 3 and result.trials[0].directions[0].intended_packets > 0
    assert lab_residue() == NO_RESIDUE


@pytest.mark.lab
@pytest.mark.parametrize("frame_size", [64, 512, 1518])
def test_ndr_on_a_shallow_buffer_path_lands_on_its_capacity(clean_host, frame_size):
    """The path buffers 6 frames of 1518 B: bursts of the offered traffic (a catch-up after
    the sender was preempted) are lost below capacity, so only smooth pacing finds it
    (before SCHED_FIFO pacing with bounded catch-up: -20 % at 1518 B, every time).

    One search may be repeated: this VM stalls even a SCHED_FIFO thread for 20-30 ms now
    and then (seen in 3 of 12 one-second trials under a load average of 3.5), longer than
    the generator's slip budget (1 % of the duration), and at 98 % of capacity a 6-frame
    buffer cannot absorb the catch-up. Both searches failing is a failure."""
    errors = []
    for _ in range(2):
        result, err = calibrate.check_known_path(EmbeddedLab(), GeneratorParams(), frame_size, 30_000,
                                                 duration_s=1.0, relative_width=0.005, path="tbf-shallow")
        errors.append((result.throughput_pps, err))
        if abs(err) <= 0.02:
            break
    assert abs(errors[-1][1]) <= 0.02, errors
    assert lab_residue() == NO_RESIDUE


def _result(throughput_pps):
    return SearchResult(method="rfc2544", goal="ndr", loss_ratio=0.0, lower_bound_pps=throughput_pps,
                        upper_bound_pps=throughput_pps * 1.01, throughput_pps=throughput_pps,
                        conditional_throughput_pps=None, n_trials=1, trial_seconds=1.0, trials=())


GEN_A = {"name": "nfvlab-gen", "version": "aaaa", "ports": "af_packet on veth", "cpu": "0", "host": "h x2"}
GEN_B = {**GEN_A, "version": "bbbb"}


def test_ceilings_are_keyed_by_generator_identity_and_survive_a_reload(tmp_path):
    path = tmp_path / "cal" / "embedded.json"
    cal = calibrate.Calibration.load(path)
    assert cal.ceiling(GEN_A, 64) is None
    cal.put(GEN_A, 64, _result(200_000), bidirectional=True)
    cal.put(GEN_A, "IMIX", _result(150_000), bidirectional=True)
    cal.save()
    again = calibrate.Calibration.load(path)
    assert again.ceiling(GEN_A, 64) == 200_000 and again.ceiling(GEN_A, "IMIX") == 150_000
    assert again.ceiling(GEN_A, 1518) is None
    assert again.ceiling(GEN_B, 64) is None  # another binary: not calibrated
    first = path.read_bytes()
    again.save()
    assert path.read_bytes() == first  # deterministic: a DVC output that did not change stays the same


def test_generator_limited_flag_against_the_ceiling():
    assert calibrate.mark_generator_limited(_result(185_000), 200_000).generator_limited is True
    assert calibrate.mark_generator_limited(_result(100_000), 200_000).generator_limited is False
    assert calibrate.mark_generator_limited(_result(180_000), 200_000).generator_limited is True  # 90 %
    assert calibrate.mark_generator_limited(_result(179_999), 200_000).generator_limited is False
    assert calibrate.mark_generator_limited(_result(185_000), None).generator_limited is None


def test_a_file_of_another_layout_is_refused_in_one_line(tmp_path):
    bad = tmp_path / "c.json"
    bad.write_text(json.dumps({"nfvlab-gen-1234|6.1|2": {"64": {"ceiling_pps": 1}}}))
    with pytest.raises(ValueError, match="not a calibration file") as err:
        calibrate.Calibration.load(bad)
    assert "\n" not in str(err.value)
