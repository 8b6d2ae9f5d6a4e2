"""run_experiment on the real embedded lab with a tiny grid."""
import pytest

from conftest import NO_RESIDUE, lab_residue
from nfvlab import params as P
from nfvlab import results as R
from nfvlab.experiment import run_experiment
from nfvlab.measure import InputError
from nfvlab.records import read_records

TINY = {"experiment": "tiny", "models": ["macvlan", "vpp"], "repetitions": 2,
        "traffic": {"frame_sizes": [128], "latency_pps": 200},
        "trial": {"duration_s": 0.3},
        "search": {"method": "rfc2544", "pdr_loss_ratio": None, "relative_width": 0.1,
                   "min_rate_pps": 2000, "max_rate_pps": 20000, "final_trial_duration_s": 0.3,
                   "initial_trial_duration_s": 0.3, "duration_sum_s": 0.3}}


@pytest.mark.lab
def test_grid_is_measured_recorded_and_unrealizable_models_are_notes(clean_host, tmp_path):
    rec = tmp_path / "raw.jsonl"
    run_experiment(P.validate(P.ExperimentParams, TINY), rec, progress=False)
    s = R.searches_frame(rec)
    assert list(s["model"]) == ["macvlan", "macvlan"] and list(s["repetition"]) == [0, 1]
    # 20 kpps is far below what macvlan forwards here: the search ends at max.
    assert (s["throughput_pps"] == 20000).all()
    lat = R.latency_frame(rec)
    assert len(lat) == 4 and (lat["p50_ns"] > 0).all() and (lat["loss_ratio"] == 0).all()
    nr = R.not_realizable_frame(rec)
    assert list(nr["model"]) == ["vpp"] and "VPP" in nr["reason"].iloc[0]
    types = [r["type"] for r in read_records(rec)]
    assert types[0] == "run" and types[-1] == "end"
    assert lab_residue() == NO_RESIDUE


def test_impossible_inputs_fail_before_any_lab(tmp_path):
    bad = {**TINY, "traffic": {"frame_sizes": [64]}, "search": {**TINY["search"], "max_rate_pps": 2e7}}
    with pytest.raises(InputError, match="above the 10GbE line rate"):
        run_experiment(P.validate(P.ExperimentParams, bad), tmp_path / "x.jsonl", progress=False)
    assert not (tmp_path / "x.jsonl").exists()
