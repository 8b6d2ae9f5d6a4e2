"""Lab resources on the real host: cpusets, noisy neighbour, hugepages — all given back."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import NO_RESIDUE, REPO, lab_residue
from test_lab import locked_hugepages, locked_residue
from nfvlab.labs.embedded import state
from nfvlab.labs.embedded import Lab
from nfvlab.scenario import Resources, Scenario

pytestmark = pytest.mark.lab


def _allowed_cpus(pid: int) -> str:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Cpus_allowed_list:"):
            return line.split(":")[1].strip()
    raise AssertionError("no Cpus_allowed_list")


def _until(check, what: str, timeout_s: float = 60.0) -> None:
    """Poll ``check`` until true; fail with ``what`` after ``timeout_s`` (a give-up guard only)."""
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def _live_group_members(pgid: int) -> list[str]:
    """Processes of group ``pgid`` that are not zombies (a zombie has exited; only
    its new parent, init, has yet to reap it)."""
    out = subprocess.run(["ps", "-o", "pid=,stat=", "-g", str(pgid)], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if not line.split()[1].startswith("Z")]


def test_spawned_process_is_confined_to_its_cpuset_and_both_go_away(clean_host):
    with Lab("linux-bridge") as lab:
        proc = lab.spawn("sleeper", ["sleep", "60"], ns=lab.ns("pod1"), cpus=[1])
        # The child joins its cpuset before it execs: from the moment it runs sleep on, it is confined.
        _until(lambda: Path(f"/proc/{proc.pid}/exe").resolve().name == "sleep", "the sleeper never ran sleep")
        assert _allowed_cpus(proc.pid) == "1"
        cg = Path(lab.state.cgroups[0])
        assert str(proc.pid) in (cg / "tasks").read_text().split()
    proc.wait(timeout=60)  # teardown stopped it (a give-up guard only)
    assert not cg.exists()
    assert locked_residue() == NO_RESIDUE


def test_noisy_neighbour_runs_stress_ng_in_its_own_pod(clean_host):
    with Lab(Scenario("linux-bridge", Resources(noisy_load_pct=30))) as lab:
        assert any(ns.endswith("-noisy") for ns in lab.state.namespaces)
        rec = lab.state.processes[-1]
        assert "stress-ng" in rec.cmd
        noisy = next(ns for ns in lab.state.namespaces if ns.endswith("-noisy"))
        # the group gets workers (stress-ng forks them once it runs), all in the noisy namespace
        _until(lambda: len(_live_group_members(rec.pid)) >= 2, "stress-ng started no worker")
        members = _live_group_members(rec.pid)
        inside = subprocess.run(["ip", "netns", "pids", noisy], capture_output=True, text=True).stdout.split()
        assert set(members) <= set(inside), (members, inside)
    assert _live_group_members(rec.pid) == []
    assert locked_residue() == NO_RESIDUE


def test_hugepages_reserved_by_a_lab_are_given_back(clean_host):
    before = locked_hugepages()
    with Lab("linux-bridge") as lab:
        lab.reserve_hugepages(before + 8)  # more than exist: the lab must add some
        assert int(state.HUGEPAGES_2M.read_text()) >= before + 8
        assert lab.state.hugepages_2m >= 8
    assert locked_hugepages() == before


def test_kill_9_with_a_noisy_neighbour_is_recoverable(clean_host, spawn):
    code = ("import time\nfrom nfvlab.labs.embedded import Lab\nfrom nfvlab.scenario import Resources, Scenario\n"
            "with Lab(Scenario('macvlan', Resources(noisy_load_pct=20))) as lab:\n"
            "    print('up', flush=True)\n    time.sleep(60)\n")
    p = spawn([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=REPO)
    assert p.stdout.readline().strip() == "up"
    (st,) = [s for s in state.all_states() if s.owner_pid == p.pid]
    pgid = st.processes[-1].pid
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    # Taken at once: another run waiting for the lock would otherwise clean the leftover first.
    with state.HostLock("test"):
        assert set(st.namespaces) <= set(lab_residue()["namespaces"])  # the lab is still there ...
        removed = state.clean()
        assert any(line.startswith(f"lab {st.lab_id} ") for line in removed), removed
        assert lab_residue() == NO_RESIDUE  # ... until clean removes it all
    assert _live_group_members(pgid) == []
