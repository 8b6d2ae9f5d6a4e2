"""Fault injection (issue 15): SIGINT/SIGTERM at random points of real searches leave nothing behind.

Each run starts ``nfvlab search`` on a real embedded lab and signals it at a
seeded random moment from the first imports through set-up into the search.
Whatever the moment, the run must end non-zero, and the host must be as before:
no process carrying ``NFVLAB_LAB_ID`` and no new process of the model's
binaries (the process table, not the state records), no ``nfvl-*`` namespace,
no state record, the hugepage reservation back where it was (``clean_host``).
Bounded: about a minute per model on 2 cores when the lab is free; each case fails after 14 min
(the suite's rule: every test fails within 15), waits for other runs' labs included.
"""
import random
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import NO_RESIDUE, REPO, lab_residue
from nfvlab.labs.embedded import state

pytestmark = pytest.mark.lab

#: Binaries the lab's models run: a new one after a run is residue.
BINARIES = r"ovs-vswitchd|ovsdb-server|dpdk-testpmd|stress-ng|nfvlab-gen"
SEED = 20261123
#: (model, extra arguments, runs, latest signal in s after start). The latest
#: moment lies inside the search: set-up takes ~1 s (linux-bridge), ~3 s (OVS-DPDK).
CASES = [
    ("linux-bridge", [], 6, 4.0),
    ("ovs-dpdk-vhost", ["--hugepages"], 6, 7.0),
    ("ovs-dpdk-tap", [], 4, 7.0),  # OVS tap ports moved into the pod
]


def _binaries() -> set[int]:
    # Process names (comm), not command lines: a compiler building nfvlab-gen is no residue.
    # Zombies are left out: they hold nothing but a pid, until their parent (after the lab
    # process exits: PID 1, which here reaps when it gets to it) collects them.
    out = subprocess.run(["pgrep", BINARIES], capture_output=True, text=True).stdout
    return {int(x) for x in out.split() if _state(int(x)) not in ("Z", None) and not _foreign(int(x))}


#: What names a lab in a command line: its namespaces (nfvl-<id>-<role>) or run directory.
LAB_MARK = re.compile(r"nfvl-[0-9a-f]{6}|/nfvlab/lab-[0-9a-f]{6}")


def _foreign(pid: int) -> bool:
    """Whether ``pid`` is surely no lab's: its command line names no lab and its environment carries no
    lab id (another test's generator on its own ports, run without the host lock). A process whose
    exit has already emptied both (a daemon unmapping its hugepages) is not foreign: it may be a lab's."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    return (cmdline != b"" and not LAB_MARK.search(cmdline.decode(errors="replace"))
            and f"{state.LAB_ENV}=".encode() not in environ)


def _as_if_from_a_terminal() -> None:
    """SIGINT's default action in the child, as for a command a user runs in a terminal: a test
    started in the background (``cmd &`` in a script) inherits SIGINT ignored, and Python then
    ignores it until the lab installs its handlers (a signal before that was lost: seen in CI)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _state(pid: int):
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def _describe(pids) -> str:
    return "; ".join(subprocess.run(["ps", "-o", "pid=,stat=,etimes=,args=", "-p", str(p)], capture_output=True,
                                    text=True).stdout.strip() or f"{p} (gone)" for p in sorted(pids))


@pytest.mark.timeout(840)  # ~1 min per model when the lab is free; other runs may hold its lock
@pytest.mark.parametrize("model,extra,runs,latest_s", CASES, ids=[c[0] for c in CASES])
def test_signals_at_random_points_leave_no_residue(clean_host, spawn, model, extra, runs, latest_s):
    rng = random.Random(f"{SEED}-{model}")
    with state.HostLock("fault-injection baseline"):
        before = _binaries()
    for i in range(runs):
        sig = rng.choice([signal.SIGINT, signal.SIGTERM])
        delay_s = rng.uniform(0.05, latest_s)
        where = f"run {i}: {signal.Signals(sig).name} at {delay_s:.2f} s on {model}"
        p = spawn([str(REPO / ".venv/bin/nfvlab"), "search", "--model", model, "--frame-size", "64",
                   "--goal", "ndr", "--no-progress", *extra],
                  cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                  preexec_fn=_as_if_from_a_terminal)
        time.sleep(delay_s)
        p.send_signal(sig)
        try:
            _, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{where}: still running 60 s after the signal")
        assert p.returncode != 0, f"{where}: the run ended as a success"
        assert "Exception ignored" not in err, f"{where}: {err}"
        with state.HostLock("fault-injection check"):  # no other run's lab is up meanwhile
            # A lab helper command the signal orphaned (ovs-vsctl --timeout=10 on a socket whose
            # server teardown stopped; seen once in CI) ends by itself within its timeout: wait
            # that long and a slow spell's worth more (30 s), no longer. Giving such commands
            # PDEATHSIG is noted in issue 15. Likewise a daemon still in its exit path (SIGKILLed,
            # unmapping its hugepages): its environment is already gone, so only the process name
            # still shows it (seen once in CI).
            deadline = time.monotonic() + 30
            while (lab_residue() != NO_RESIDUE or not _binaries() <= before) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert state.marked_processes() == {}, f"{where}: processes of a lab are left"
            left = _binaries() - before
            assert not left, f"{where}: new {BINARIES} processes are left: {_describe(left)}"
            assert lab_residue() == NO_RESIDUE, f"{where}: {lab_residue()}"
