"""Shared fixtures: lab tests need root and leave nothing behind."""
import os
import re
import subprocess
from pathlib import Path

import pytest

from nfvlab.lab import state

REPO = Path(__file__).resolve().parents[1]


def lab_residue() -> dict:
    """What nfvlab labs (not test-owned fixtures) left on this host."""
    ns = [n for n in state.existing_namespaces() if state.NS_PATTERN.match(n)]
    files = sorted(p.name for p in state.labs_dir().glob("*.json")) if state.labs_dir().exists() else []
    out = subprocess.run(["pgrep", "-af", "nfvlab-gen-"], capture_output=True, text=True).stdout
    # Only generators driving lab namespaces (nfvl-<6 hex>-...), not other tests' own.
    procs = [line.split()[0] for line in out.splitlines() if re.search(r"nfvl-[0-9a-f]{6}-", line)]
    return {"namespaces": ns, "state_files": files, "generator_pids": procs}


NO_RESIDUE = {"namespaces": [], "state_files": [], "generator_pids": []}


@pytest.fixture
def clean_host():
    """Start from, and insist on ending with, a host without lab residue."""
    if os.geteuid() != 0:
        pytest.skip("lab tests need root")
    with state.HostLock("test clean-up"):
        state.clean(include_persistent=True)
    assert lab_residue() == NO_RESIDUE
    yield
    residue = lab_residue()
    with state.HostLock("test clean-up"):
        state.clean(include_persistent=True)
    assert residue == NO_RESIDUE, f"the test left lab residue: {residue}"


def nfvlab_cli(*args, timeout=120, check=False):
    """Run the real CLI in a subprocess (as a user would)."""
    cmd = [str(REPO / ".venv/bin/nfvlab"), *args]
    if not Path(cmd[0]).exists():
        cmd = ["python", "-m", "nfvlab", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=check, cwd=REPO)
