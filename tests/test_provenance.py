"""Tests of nfvlab.provenance.collect against the real machine."""
from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from nfvlab import provenance
from nfvlab.provenance import collect, debian_package_versions, git_state

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")


def _git(repo: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.org",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.org")
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True, env=env).stdout.strip()


def test_collect_is_json_ready_and_keeps_params():
    # (How long collect() takes, against its 1 s target: bench/accuracy.py.)
    params = {"frame_size": 64, "rates": [1, 2]}
    prov = collect(params)
    assert prov["params"] == params
    assert json.loads(json.dumps(prov)) == prov
    assert collect()["params"] is None
    assert prov["schema"] == provenance.SCHEMA_VERSION


def test_collect_machine_facts():
    prov = collect()
    u = platform.uname()
    assert prov["kernel"] == u.release == os.uname().release
    assert prov["kernel_version"] == u.version
    assert prov["machine"] == u.machine
    assert prov["hostname"] == socket.gethostname()
    assert prov["python"] == platform.python_version()
    assert prov["python"].startswith(f"{sys.version_info.major}.{sys.version_info.minor}.")
    assert prov["cpu_count"] == os.cpu_count()
    assert prov["cpu_affinity_count"] == len(os.sched_getaffinity(0))
    assert prov["collected_at"].endswith("Z")
    from importlib.metadata import version

    assert prov["nfvlab_version"] == version("nfvlab")
    meminfo = Path("/proc/meminfo").read_text()
    kb = int(next(x for x in meminfo.splitlines() if x.startswith("MemTotal:")).split()[1])
    assert prov["mem_total_bytes"] == kb * 1024
    node_dir = Path("/sys/devices/system/node")
    if node_dir.is_dir():
        nodes = [p for p in node_dir.iterdir() if p.name.startswith("node") and p.name[4:].isdigit()]
        assert prov["numa_nodes"] == len(nodes) >= 1
    models = [ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
              if ln.startswith("model name")]
    if models:
        assert prov["cpu_model"] == models[0]
    assert prov["kernel_cmdline"] == (Path("/proc/cmdline").read_text().strip() or None)


def test_collect_package_versions():
    prov = collect()
    assert set(prov["packages"]) == set(provenance.PACKAGES)
    if shutil.which("dpkg-query") is None:
        assert all(v is None for v in prov["packages"].values())
        return
    for pkg, ver in prov["packages"].items():
        proc = subprocess.run(["dpkg-query", "-W", "-f", "${Version} ${db:Status-Status}", pkg],
                              capture_output=True, text=True)
        installed = proc.returncode == 0 and proc.stdout.endswith(" installed")
        assert ver == (proc.stdout.split()[0] if installed else None), pkg


def test_missing_package_is_none():
    if shutil.which("dpkg-query") is None:
        pytest.skip("no dpkg-query")
    v = debian_package_versions(["dpkg", "nfvlab-no-such-package"])
    assert v["nfvlab-no-such-package"] is None
    assert v["dpkg"] and v["dpkg"][0].isdigit()


def test_generator_hash_covers_every_generator_source(tmp_path, monkeypatch):
    here = Path(provenance.__file__).parent / "traffic" / "embedded"
    assert collect()["generator_source_sha256"] == provenance.sources_sha256(here)
    for name in ("nfvlab_gen.c", "nfvlab_gen_pacing.c", "nfvlab_gen.h", "nfvlab_tx.bpf.c"):
        (tmp_path / name).write_bytes((here / name).read_bytes())
    (tmp_path / "README").write_text("not a source")
    monkeypatch.setattr(provenance, "_GENERATOR_DIR", tmp_path)
    before = collect()["generator_source_sha256"]
    expected = hashlib.sha256(b"".join(
        name.encode() + b"\0" + hashlib.sha256((tmp_path / name).read_bytes()).hexdigest().encode() + b"\n"
        for name in sorted(("nfvlab_gen.c", "nfvlab_gen_pacing.c", "nfvlab_gen.h", "nfvlab_tx.bpf.c")))).hexdigest()
    assert before == expected
    (tmp_path / "README").write_text("still not a source")     # not a source: the same hash
    assert collect()["generator_source_sha256"] == before
    with open(tmp_path / "nfvlab_gen_pacing.c", "a") as f:      # a source other than main's: changed
        f.write("/* edit */\n")
    assert collect()["generator_source_sha256"] != before
    monkeypatch.setattr(provenance, "_GENERATOR_DIR", tmp_path / "absent")
    assert collect()["generator_source_sha256"] is None


@needs_git
def test_git_state_of_temp_repo(tmp_path):
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / "pkg" / "mod.py").write_text("x = 1\n")
    assert git_state(repo / "pkg") == (None, True)  # no commit yet, untracked file
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "one")
    head = _git(repo, "rev-parse", "HEAD")
    assert git_state(repo / "pkg") == (head, False)
    assert git_state(repo / "pkg" / "mod.py") == (head, False)
    (repo / "pkg" / "mod.py").write_text("x = 2\n")
    assert git_state(repo / "pkg") == (head, True)
    _git(repo, "commit", "-q", "-am", "two")
    head2 = _git(repo, "rev-parse", "HEAD")
    assert head2 != head and git_state(repo) == (head2, False)
    (repo / "new.txt").write_text("untracked\n")
    assert git_state(repo) == (head2, True)
    (repo / ".gitignore").write_text("new.txt\n.gitignore\n")
    assert git_state(repo) == (head2, False)


@needs_git
def test_collect_reports_git_of_package_checkout(tmp_path, monkeypatch):
    repo = tmp_path / "checkout"
    pkg = repo / "nfvlab"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "c")
    monkeypatch.setattr(provenance, "_PACKAGE_DIR", pkg)
    prov = collect()
    assert prov["git_revision"] == _git(repo, "rev-parse", "HEAD")
    assert prov["git_dirty"] is False


@needs_git
def test_what_the_pipeline_writes_does_not_make_a_checkout_dirty(tmp_path, monkeypatch):
    """A later stage of one ``dvc repro`` sees dvc.lock and an earlier stage's outputs changed: its
    checkout is still its commit's. Any other change still makes it dirty, and says which path."""
    repo = tmp_path / "checkout"
    pkg = repo / "nfvlab"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (repo / "metrics").mkdir()
    (repo / "metrics" / "a.json").write_text("{}\n")
    (repo / "metrics" / "a.json.txt").write_text("a file beside an output, not one\n")
    (repo / "dvc.lock").write_text("schema: '2.0'\nstages:\n  measure@a:\n    cmd: x\n    outs:\n"
                                   "    - path: metrics/a.json\n    - path: reports\n")
    (repo / "reports").mkdir()
    (repo / "reports" / "r.md").write_text("report\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "c")
    monkeypatch.setattr(provenance, "_PACKAGE_DIR", pkg)
    (repo / "metrics" / "a.json").write_text('{"ndr": 1}\n')
    with open(repo / "dvc.lock", "a") as f:
        f.write("  measure@b:\n    cmd: y\n")
    (repo / "reports" / "r.md").write_text("report of this run\n")  # in an output folder
    prov = collect()
    assert (prov["git_dirty"], prov["git_changed"]) == (False, [])
    assert prov["git_pipeline_changed"] == ["dvc.lock", "metrics/a.json", "reports/r.md"]
    (repo / "metrics" / "a.json.txt").write_text("edited\n")
    (pkg / "__init__.py").write_text("x = 1\n")
    prov = collect()
    assert (prov["git_dirty"], prov["git_changed"]) == (True, ["metrics/a.json.txt", "nfvlab/__init__.py"])
    assert provenance.measuring_code_changes(prov) == ["nfvlab/__init__.py"]
    (repo / "dvc.lock").unlink()  # no lock: nothing is known to be the pipeline's but dvc.lock itself
    prov = collect()
    assert "metrics/a.json" in prov["git_changed"] and prov["git_pipeline_changed"] == []


@needs_git
def test_git_state_inherited_git_dir_is_ignored(tmp_path, monkeypatch):
    other = tmp_path / "other"
    other.mkdir()
    _git(other, "init", "-q")
    _git(other, "commit", "-q", "--allow-empty", "-m", "c")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    plain = tmp_path / "plain"
    plain.mkdir()
    assert git_state(plain) == (None, None)


def test_not_a_checkout_is_none(tmp_path):
    d = tmp_path / "nogit"
    d.mkdir()
    assert git_state(d) == (None, None)


def test_collect_never_raises(monkeypatch):
    def boom(*a, **k):
        raise OSError("nope")

    monkeypatch.setattr(provenance, "_run", boom)
    monkeypatch.setattr(provenance, "_cpuinfo", boom)
    monkeypatch.setattr(provenance, "_meminfo", boom)
    monkeypatch.setattr(provenance, "_numa_nodes", boom)
    monkeypatch.setattr(provenance.platform, "uname", boom)
    monkeypatch.setattr(provenance.socket, "gethostname", boom)
    prov = collect({"a": 1})
    assert prov["git_revision"] is None and prov["git_dirty"] is None
    assert all(v is None for v in prov["packages"].values())
    assert prov["kernel"] is None and prov["hostname"] is None and prov["cpu_model"] is None
    assert prov["cpu_count"] == os.cpu_count()  # falls back to os.cpu_count()
    assert prov["mem_total_bytes"] is None and prov["numa_nodes"] is None
    assert prov["params"] == {"a": 1}
