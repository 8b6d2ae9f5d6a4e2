"""Measurement stages (`nfvlab experiment run`, nfvlab/stage.py) and the analysis stage's notebook run.

The pipeline's measurement stages produce records only; the analysis stages execute the
notebooks over those records (measure False). Real lab, real papermill, no doubles.
"""
import json
import os
import subprocess
import sys

import pytest
import yaml

from conftest import REPO, nfvlab_cli
from nfvlab import results
from nfvlab.records import read_records, runs_frame, trials_frame

# One frame size on either lab kind (the profile's frame_sizes_by_lab names sizes this grid has not).
TINY = {"models": ["host-routing", "sriov"], "repetitions": 1, "adaptive": None, "traffic": {"frame_sizes": [256]},
        "frame_sizes_by_lab": {},
        "trial": {"duration_s": 0.3}, "latency_load_fractions": [0.0],
        "search": {"method": "rfc2544", "ndr": True, "pdr_loss_ratio": None, "relative_width": 0.2, "min_rate_pps": 2000, "max_rate_pps": 10000,
                   "final_trial_duration_s": 0.3, "initial_trial_duration_s": 0.3, "duration_sum_s": 0.3}}


def tiny_params(tmp_path, **changes):
    data = yaml.safe_load((REPO / "params/quick/experiment_a.yaml").read_text())
    data.update({**TINY, **changes})
    path = tmp_path / "experiment_a.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize("args, says", [
    (["b", "--params", "params/quick/experiment_a.yaml"], "is not experiment b's params"),
    (["ab", "--params", "params/quick/experiment_a.yaml"], "experiment 'ab': give its letter"),
    (["a", "--params", "params/quick/experiment_a.yaml", "--local-cluster"],
     "--local-cluster: params/lab.yaml: kind is 'embedded'"),
    (["e", "--params", "params/quick/experiment_e.yaml", "--local-cluster"],
     "--local-cluster: params/lab.yaml: kind is 'embedded'"),
    (["e", "--params", "params/quick/experiment_a.yaml"], "params/quick/experiment_a.yaml: models: unknown key"),
    (["a", "--params", "params/nope.yaml"], "--params params/nope.yaml: no such file"),
    (["a", "--params", "params/quick/experiment_a.yaml", "--lab-profile", "params/nope.yaml"],
     "--lab-profile params/nope.yaml: no such file"),
])
def test_bad_input_is_one_line_and_records_nothing(tmp_path, args, says):
    records = tmp_path / "r.jsonl"
    r = nfvlab_cli("experiment", "run", *args, "--records", str(records))
    assert r.returncode == 2, r.stderr
    assert says in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert not records.exists()


def test_without_a_local_cluster_every_configuration_is_recorded_not_realizable(tmp_path):
    # An empty cache: the cluster's binaries are not built there, so no cluster can start.
    env = {**os.environ, "NFVLAB_CACHE": str(tmp_path / "cache")}
    records = tmp_path / "k.jsonl"
    params = tiny_params(tmp_path, models=["macvlan", "vpp"])
    r = subprocess.run([sys.executable, "-m", "nfvlab", "experiment", "run", "a", "--params", str(params),
                        "--lab-profile", "params/lab.kubernetes.yaml", "--local-cluster", "--records", str(records)],
                       cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    nr = results.not_realizable_frame(records)
    assert sorted(nr["model"]) == ["macvlan", "vpp"]
    assert all(x.startswith("no local Kubernetes cluster can run here: ") for x in nr["reason"]), list(nr["reason"])
    assert results.searches_frame(records).empty


def test_without_a_local_cluster_every_path_and_mtu_of_e_is_recorded_not_realizable(tmp_path):
    env = {**os.environ, "NFVLAB_CACHE": str(tmp_path / "cache")}  # no cluster binaries: no cluster
    records = tmp_path / "e.jsonl"
    r = subprocess.run([sys.executable, "-m", "nfvlab", "experiment", "run", "e", "--params",
                        "params/quick/experiment_e.yaml", "--lab-profile", "params/lab.kubernetes.yaml",
                        "--local-cluster", "--records", str(records)],
                       cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    recs = read_records(records)
    assert [r["type"] for r in recs] == ["run", *["note"] * 6, "end"]  # quick: direct, vxlan, ipip x 1500, 9000
    assert [(n["labels"]["data_path"], n["labels"]["link_mtu_bytes"]) for n in recs[1:-1]] == [
        (p, m) for p in ("direct", "vxlan", "ipip") for m in (1500, 9000)]
    for n in recs[1:-1]:
        assert n["labels"]["kind"] == "not-realizable", n
        assert n["text"].startswith("not realizable: no local Kubernetes cluster can run here: "), n["text"]


@pytest.mark.lab
def test_a_stage_measures_records_only_and_the_analysis_runs_the_notebook_over_them(tmp_path, clean_host):
    params, records = tiny_params(tmp_path), tmp_path / "a.jsonl"
    r = nfvlab_cli("experiment", "run", "a", "--params", str(params), "--records", str(records), timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "a-networking-models: 1/1 " in r.stdout            # one progress line per search
    s = results.searches_frame(records)
    # The NDR is the highest rate of a valid zero-loss search trial in the records (10 kpps, the
    # maximum, unless host noise spoiled that trial: a plumbing test must not depend on it).
    t = trials_frame(records)
    clean = t[(t["purpose"] == "search") & t["valid"] & (t["loss_ratio"] == 0)]
    assert list(s["model"]) == ["host-routing"] and s["throughput_pps"].iloc[0] == clean["rate_pps"].max()
    assert 2000 <= s["throughput_pps"].iloc[0] <= 10000
    assert list(results.not_realizable_frame(records)["model"]) == ["sriov"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "experiment_a.yaml"]  # records, nothing else

    out = tmp_path / "out"
    r = nfvlab_cli("analyze", "a", "--params", str(params), "--records", str(records),
                   "--tables", str(out / "tables"), "--figures", str(out / "figures"),
                   "--metrics", str(out / "metrics.json"), "--notebook", "notebooks/experiment_a.py",
                   "--executed", str(out / "a.ipynb"), timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    nb = json.loads((out / "a.ipynb").read_text())
    params_cell = next(c for c in nb["cells"] if "injected-parameters" in c["metadata"].get("tags", []))
    assert "measure = False" in "".join(params_cell["source"])
    text = json.dumps([c.get("outputs", []) for c in nb["cells"]])
    assert "host-routing" in text and "image/png" in text and '"output_type": "error"' not in text
    # the notebook only showed the records: no new run was measured
    assert len(runs_frame(records)) == 1


def test_the_stage_command_is_the_cli_command(tmp_path):
    r = subprocess.run([sys.executable, "-m", "nfvlab.stage", "a"], cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--params, --records" in r.stderr, r.stderr
    r = nfvlab_cli("experiment", "run", "--help")
    assert r.returncode == 0 and r.stdout.startswith("usage: nfvlab experiment run")


def test_the_notebook_flags_go_together(tmp_path):
    r = nfvlab_cli("analyze", "a", "--params", "params/quick/experiment_a.yaml", "--records", str(tmp_path / "x"),
                   "--metrics", str(tmp_path / "m.json"), "--notebook", "notebooks/experiment_a.py")
    assert r.returncode == 2 and "--notebook and --executed go together" in r.stderr
