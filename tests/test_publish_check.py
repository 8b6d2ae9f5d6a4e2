"""Publishing refuses a run measured from measuring code its commit does not hold
(scripts/publish_check.py over nfvlab.provenance.measuring_code_changes)."""
import subprocess
import sys

import pytest

from conftest import REPO
from nfvlab import provenance
from nfvlab.records import RecordWriter

CHECK = REPO / "scripts" / "publish_check.py"


def _run_with(path, experiment, **prov):
    base = {"git_revision": "ab" * 20, "git_dirty": False, "git_changed": []}
    with RecordWriter(path, experiment, provenance={**base, **prov}):
        pass


def _check(*paths):
    return subprocess.run([sys.executable, str(CHECK), *map(str, paths)], capture_output=True, text=True,
                          cwd=REPO)


@pytest.mark.parametrize("changed, refused", [
    (["README.md", "docs/methodology.md", "tests/test_x.py", "bench/pipeline.py", "metrics/experiment_a.json",
      "dvc.lock"], []),
    (["nfvlab/traffic/embedded/nfvlab_gen.c", "README.md"], ["nfvlab/traffic/embedded/nfvlab_gen.c"]),
    (["params/quick/experiment_a.yaml", "dvc.yaml", "run", "runbook.md", "notebooks/experiment_a.py"],
     ["params/quick/experiment_a.yaml", "dvc.yaml", "run", "notebooks/experiment_a.py"]),
])
def test_measuring_code_changes_are_the_changed_paths_that_measure(changed, refused):
    assert provenance.measuring_code_changes({"git_dirty": True, "git_changed": changed}) == refused
    assert provenance.measuring_code_changes({"git_dirty": False, "git_changed": []}) == []
    assert provenance.measuring_code_changes({"git_dirty": True}) is None  # a record of schema < 3


def test_git_changes_names_what_makes_a_checkout_dirty(tmp_path):
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(tmp_path)]
    subprocess.run([*git, "init", "-q"], check=True)
    for name in ("a.txt", "b.txt"):
        (tmp_path / name).write_text("x")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "c"], check=True)
    assert provenance.git_changes(tmp_path) == []
    (tmp_path / "a.txt").write_text("y")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "new.py").write_text("")
    subprocess.run([*git, "mv", "b.txt", "c.txt"], check=True)
    assert provenance.git_changes(tmp_path) == ["a.txt", "c.txt", "sub/"]
    assert provenance.git_state(tmp_path)[1] is True


def test_publishing_refuses_a_dirty_measuring_run_and_names_its_files(tmp_path):
    clean, dirty = tmp_path / "experiment_a.jsonl", tmp_path / "experiment_b.jsonl"
    _run_with(clean, "a", git_dirty=True, git_changed=["README.md"])
    _run_with(dirty, "b")
    _run_with(dirty, "b", git_dirty=True, git_changed=["nfvlab/trial.py", "tests/test_trial.py"])
    ok = _check(clean)
    assert ok.returncode == 0 and "were measured from their commits' code" in ok.stdout, ok.stderr
    refused = _check(clean, dirty)
    assert refused.returncode == 1
    lines = [ln for ln in refused.stderr.splitlines() if ln.startswith("publish: refused:")]
    assert len(lines) == 1 and "experiment_b.jsonl" in lines[0] and "(b)" in lines[0], refused.stderr
    assert lines[0].endswith("changed: nfvlab/trial.py") and "abababababab+dirty" in lines[0]


def test_an_earlier_dirty_run_is_history_and_only_the_run_the_tables_read_counts(tmp_path):
    path = tmp_path / "experiment_a.jsonl"
    _run_with(path, "a", git_dirty=True, git_changed=["nfvlab/trial.py"])
    _run_with(path, "a")  # the latest completed run: what the tables read and publishing publishes
    out = _check(path)
    assert out.returncode == 0 and "(1 earlier runs in the files, history only, were not)" in out.stdout, out.stderr


def test_a_dirty_record_that_does_not_say_which_files_is_refused(tmp_path):
    old = tmp_path / "experiment_c.jsonl"
    _run_with(old, "c", git_dirty=True, git_changed=None)
    out = _check(old)
    assert out.returncode == 1 and "do not say which files" in out.stderr


def test_collect_records_the_changed_paths():
    prov = provenance.collect()
    assert prov["schema"] == 4
    assert sorted(prov["git_changed"] + prov["git_pipeline_changed"]) == provenance.git_changes(REPO)
    assert prov["git_dirty"] == bool(prov["git_changed"])
