"""Calibration: searches land on a path of known capacity; generator-limited flag."""
import pytest

from conftest import NO_RESIDUE, lab_residue
from nfvlab import calibrate
from nfvlab.search import SearchResult


@pytest.mark.lab
@pytest.mark.parametrize("method", ["rfc2544", "mlrsearch"])
def test_ndr_search_on_tbf_path_lands_on_its_capacity(clean_host, method):
    result, err = calibrate.check_known_path(64, 30_000, duration_s=0.5, relative_width=0.01,
                                             method=method)
    assert abs(err) <= 0.03, (result.throughput_pps, err)
    assert result.n_trials >= 3 and result.trials[0].directions[0].intended_packets > 0
    assert lab_residue() == NO_RESIDUE


def _result(throughput_pps):
    return SearchResult(method="rfc2544", goal="ndr", loss_ratio=0.0, lower_bound_pps=throughput_pps,
                        upper_bound_pps=throughput_pps * 1.01, throughput_pps=throughput_pps,
                        conditional_throughput_pps=None, n_trials=1, trial_seconds=1.0, trials=())


def test_generator_limited_flag_uses_the_calibrated_ceiling(tmp_path, monkeypatch):
    monkeypatch.setenv("NFVLAB_STATE", str(tmp_path))
    assert calibrate.mark_generator_limited(_result(1e5), 64).generator_limited is None
    calibrate.save_ceiling(64, _result(200_000), bidirectional=True)
    assert calibrate.ceiling_for(64) == 200_000
    assert calibrate.ceiling_for(1518) is None
    assert calibrate.mark_generator_limited(_result(185_000), 64).generator_limited is True
    assert calibrate.mark_generator_limited(_result(100_000), 64).generator_limited is False
    assert calibrate.mark_generator_limited(_result(185_000), 1518).generator_limited is None
