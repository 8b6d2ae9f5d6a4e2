"""The plan before a run (nfvlab.plan, `nfvlab experiment run X --dry-run`): units, the time the
records' last run took for each, what it found not realizable; nothing measured."""
import json
import subprocess
import sys

import pytest

from conftest import REPO
from nfvlab import params as P
from nfvlab import plan

PARAMS = """experiment: a-plan-test
models: [linux-bridge, macvlan]
repetitions: 2
traffic: {frame_sizes: [64, 1518]}
latency_load_fractions: []
"""


def _line(**rec):
    return json.dumps(rec) + "\n"


def _records(path, run_id="20261128T100000Z-0000abcd"):
    """One completed run: linux-bridge searched at 64 B (10 s each) and 1518 B (20 s each) in two
    repetitions, 3 and 5 trials each (2 s of traffic each); macvlan not realizable; 5 s from the last
    search to the end."""
    def at(s):
        return f"2026-11-28T10:{s // 60:02d}:{s % 60:02d}.000000Z"

    lb = {"model": "linux-bridge", "pinning": "plan", "numa": "s1"}
    lines = [_line(type="run", format=1, run_id=run_id, experiment="a-plan-test", started_at=at(0),
                   params={}, provenance={}),
             _line(type="note", run_id=run_id, time=at(0), labels={"kind": "not-realizable", "model": "macvlan",
                                                                    "pinning": "plan", "numa": "s1"}, text="no")]
    t = 0
    for rep in (0, 1):
        for fs, took, trials in ((64, 10, 3), (1518, 20, 5)):
            for _ in range(trials):
                lines.append(_line(type="trial", run_id=run_id, time=at(t + 1), labels={**lb, "repetition": rep},
                                   result={"frame_size": fs, "duration_s": 2.0}))
            t += took
            for goal in ("ndr", "pdr"):  # one unit, two goals
                lines.append(_line(type="search", run_id=run_id, time=at(t),
                                   labels={**lb, "goal": goal, "frame_size": fs, "repetition": rep}, result={}))
    lines.append(_line(type="end", run_id=run_id, ended_at=at(t + 5), status="completed", error=None, trials=16))
    path.write_text("".join(lines))


def test_the_plan_takes_each_units_time_from_the_last_run_and_leaves_out_what_it_could_not_realize(tmp_path):
    (tmp_path / "a.yaml").write_text(PARAMS)
    p = P.load_experiment(tmp_path / "a.yaml", None)
    assert len(plan.planned_units(p)) == 8  # 2 models x 2 frame sizes x 2 repetitions
    _records(tmp_path / "a.jsonl")
    sp = plan.stage_plan("experiment a", p, tmp_path / "a.jsonl")
    assert (sp.configurations, sp.units, sp.known_units) == (1, 4, 4)
    assert sp.expected_s == pytest.approx(2 * (10 + 20) + 5)
    assert sp.expected_trials == 2 * (3 + 5)
    assert sp.traffic_s == pytest.approx(2 * (3 + 5) * 2.0)  # the whole run repeated: its traffic as it was
    assert sp.grid == ("model=linux-bridge numa=s1 pinning=plan frame_size=64",
                       "model=linux-bridge numa=s1 pinning=plan frame_size=1518")
    none = plan.stage_plan("experiment a", p, tmp_path / "nothing.jsonl")
    assert none.expected_s is None and none.units == 8 and "no completed run" in none.basis


def test_dry_run_prints_the_plan_and_measures_nothing(tmp_path):
    (tmp_path / "a.yaml").write_text(PARAMS)
    _records(tmp_path / "a.jsonl")
    before = (tmp_path / "a.jsonl").read_bytes()
    out = subprocess.run([sys.executable, "-m", "nfvlab", "experiment", "run", "a", "--params", str(tmp_path / "a.yaml"),
                          "--records", str(tmp_path / "a.jsonl"), "--dry-run"], capture_output=True, text=True,
                         cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("experiment a: 1 configurations, 4 searches (~16 trials); expected 1 min 05 s, traffic 0 min 32 s of it")
    assert "  model=linux-bridge numa=s1 pinning=plan frame_size=1518" in out.stdout
    assert (tmp_path / "a.jsonl").read_bytes() == before
    bad = subprocess.run([sys.executable, "-m", "nfvlab", "experiment", "run", "a", "--dry-run"], capture_output=True, text=True,
                         cwd=REPO)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "needs --params and --records" in bad.stderr


def test_the_profile_plan_covers_every_measurement_stage_of_the_pipeline():
    stages = dict(plan.profile_stages(REPO))
    assert set(stages) == {"experiment@a", "experiment@b", "experiment@c", "experiment@d", "experiment@f",
                           "experiment_e", "experiment_kubernetes@a", "experiment_kubernetes@c"}
    assert stages["experiment_kubernetes@c"] == ["c", "--params", "params/quick/experiment_c.yaml", "--lab-profile",
                                                 "params/lab.kubernetes.yaml", "--local-cluster", "--records",
                                                 "data/raw/experiment_c_kubernetes.jsonl"]
    out = subprocess.run([sys.executable, "-m", "nfvlab", "experiment", "run", "all", "--dry-run"], capture_output=True, text=True,
                         cwd=REPO)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    # A total line only where some stage has records to learn from (a fresh clone has none).
    per_stage = [ln for ln in lines if not ln.startswith("measurement stages: expected")]
    assert [ln.split(":")[0] for ln in per_stage] == list(stages)
    assert len(lines) == len(per_stage) + (not all("time unknown" in ln for ln in per_stage))


def test_experiment_e_leaves_out_the_tool_runs_of_a_lab_noted_not_realizable(tmp_path):
    """E notes a lab not realizable once (its data path and MTU), not per tool run: the plan counts none of
    that lab's runs (the quick profile's ipip: 28 of 84)."""
    from test_analysis_cni import seed_world, write_records

    p = P.load(REPO / "params/quick/experiment_e.yaml", P.CniExperimentParams)
    records = write_records(tmp_path / "e.jsonl", seed_world, twin=1.0)
    per_lab = len(plan.planned_units(p)) // 6  # direct, vxlan, ipip at two MTUs
    sp = plan.stage_plan("experiment_e", p, records)
    assert (sp.configurations, sp.units) == (4, 4 * per_lab)
    assert not any("ipip" in cell for cell in sp.grid)
