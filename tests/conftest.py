"""Shared fixtures: lab tests need root and leave nothing behind."""
import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from nfvlab.labs.embedded import state

REPO = Path(__file__).resolve().parents[1]


def _bpf_programs() -> int:
    """Loaded BPF programs of the kinds the lab attaches (XDP, tc)."""
    try:
        out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True).stdout
        return sum(1 for p in json.loads(out or "[]") if p.get("type") in ("xdp", "sched_cls"))
    except (OSError, ValueError):
        return 0


def _hugepages() -> int:
    p = state.HUGEPAGES_2M
    return int(p.read_text()) if p.exists() else 0


def lab_residue() -> dict:
    """What nfvlab labs (not test-owned fixtures) left on this host."""
    ns = [n for n in state.existing_namespaces() if state.NS_PATTERN.match(n)]
    files = sorted(p.name for p in state.labs_dir().glob("*.json")) if state.labs_dir().exists() else []
    out = subprocess.run(["pgrep", "-af", "nfvl"], capture_output=True, text=True).stdout
    # Processes driving or serving lab resources (nfvl-<6 hex>-... names, lab run dirs).
    # "pid command" (the command cut at 160 characters): a failure says what was left.
    procs = [line[:160] for line in out.splitlines()
             if re.search(r"nfvl-[0-9a-f]{6}|/nfvlab/lab-[0-9a-f]{6}", line) and "pytest" not in line]
    other = sorted(str(p) for pat in ("/sys/fs/cgroup/cpuset/nfvl-*", "/run/nfvlab/lab-*",
                                      "/var/run/dpdk/nfvl-*", "/dev/hugepages/nfvl-*")
                   for p in Path("/").glob(pat.lstrip("/")))
    return {"namespaces": ns, "state_files": files, "generator_pids": procs, "other": other}


NO_RESIDUE = {"namespaces": [], "state_files": [], "generator_pids": [], "other": []}


def pytest_collection_modifyitems(items):
    # A test that starts from a clean host uses the lab: `-m "not lab"` leaves it out.
    for item in items:
        if "clean_host" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.lab)


@pytest.fixture
def clean_host():
    """Start from, and insist on ending with, a host without lab residue.

    Checks run under the host lock, so a lab of another process (which holds
    the lock while it lives) is never mistaken for residue.
    """
    if os.geteuid() != 0:
        pytest.skip("lab tests need root")
    with state.HostLock("test clean-up"):
        state.clean(include_persistent=True)
        assert lab_residue() == NO_RESIDUE
        before = {"bpf_programs": _bpf_programs(), "hugepages_2m": _hugepages()}
    yield
    with state.HostLock("test clean-up"):
        residue = lab_residue()
        # The kernel frees a removed namespace's links (and their BPF programs) ~50 ms later.
        for _ in range(30):
            after = {"bpf_programs": _bpf_programs(), "hugepages_2m": _hugepages()}
            if after == before:
                break
            time.sleep(0.1)
        state.clean(include_persistent=True)
    assert residue == NO_RESIDUE, f"the test left lab residue: {residue}"
    assert after == before, f"the test left BPF programs or hugepages behind: {before} -> {after}"


#: git may refuse a checkout owned by another user (tests run as root or not): trust it.
# Experiment runs probe the host's CPU speed for 6 s first (nfvlab.system.host.speed_variation);
# tests that run experiments skip it unless they ask (tests/test_system_host.py checks the probe).
os.environ.setdefault("NFVLAB_HOST_SPEED_S", "0")

GIT_ENV = {**os.environ, "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "safe.directory", "GIT_CONFIG_VALUE_0": "*"}


def copy_checkout(dest: Path, skip: tuple[str, ...] = ("data/raw/", "data/executed/")) -> Path:
    """Copy the repository's tracked and new (not ignored) files to ``dest``; returns ``dest``."""
    import shutil

    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                           capture_output=True, text=True, check=True, env=GIT_ENV).stdout
    for rel in filter(None, files.split("\0")):
        src = REPO / rel
        if src.is_file() and not rel.startswith(skip):
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def nfvlab_cli(*args, timeout=120, check=False):
    """Run the real CLI in a subprocess (as a user would)."""
    cmd = [str(REPO / ".venv/bin/nfvlab"), *args]
    if not Path(cmd[0]).exists():
        cmd = ["python", "-m", "nfvlab", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=check, cwd=REPO)


def interface_counters(ns_name: str, ifnames: list[str]) -> dict[str, dict[str, int]]:
    """The kernel's 64-bit counters (rx/tx packets, bytes, dropped) of interfaces in ``ns_name``:
    an account of the traffic independent of the generator's own, for known-answer tests."""
    out = {}
    for name in ifnames:
        link = json.loads(subprocess.run(["ip", "-n", ns_name, "-s", "-j", "link", "show", "dev", name],
                                         capture_output=True, text=True, check=True).stdout)[0]
        rx, tx = link["stats64"]["rx"], link["stats64"]["tx"]
        out[name] = {"rx_packets": rx["packets"], "tx_packets": tx["packets"], "rx_bytes": rx["bytes"],
                     "tx_bytes": tx["bytes"], "rx_dropped": rx["dropped"], "tx_dropped": tx["dropped"]}
    return out


def require_cluster():
    """pytest.skip with the reason unless a local cluster can start here; returns its binaries' directory."""
    from nfvlab.labs.kubernetes import local_cluster

    reason = local_cluster.unavailable_reason()
    if reason:
        pytest.skip(reason)
    return local_cluster.binaries_dir()


def clean_trial(gen, rate_pps, duration_s, frame_size, *, tries=6, before_each=None, lossless=False, **kw):
    """A trial that the host let the generator send whole: one that was invalid (a stall beyond
    its slip budget) or sent short (the deadline dropped a tail the host held up) is repeated, as a
    search repeats an invalid one, up to ``tries`` times; the last is returned. Exact counts are
    then asked of a trial whose every frame left, never of the VM's scheduling luck.
    ``lossless``: a trial the data path lost frames in is repeated too, for a DUT whose poller
    shares the generator's CPU (a stall of it longer than its rings hold drops frames: the host's
    doing, not the path's). ``before_each()`` runs before every try (e.g. to read counters the
    last one is judged by)."""
    from nfvlab.trial import run_trial

    for _ in range(tries):
        if before_each is not None:
            before_each()
        result = run_trial(gen, rate_pps, duration_s, frame_size, **kw)
        if (result.valid and all(d.sent_packets == d.intended_packets for d in result.directions)
                and not (lossless and any(d.received_packets < d.sent_packets for d in result.directions))):
            break
    return result
