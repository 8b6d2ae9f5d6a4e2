"""What nfvlab created, written down before it is created, so nothing leaks.

Every lab resource carries the ``nfvl-<lab id>-`` name prefix and is listed in a
state record (``/run/nfvlab/labs/<id>.json``) *before* it is created. After a
kill -9, :func:`clean` reads those records and removes exactly what they list
(processes it started, namespaces it made), never anything else. A process
cannot be recorded before it exists (its pid is not known), so every process a
lab spawns also carries ``NFVLAB_LAB_ID=<lab id>`` in its environment, and
:func:`destroy` and :func:`clean` look for it in the process table too.

A host-wide lock (``/run/nfvlab/lock``, flock) keeps two runs from building or
driving labs at once: they would share the same CPUs and falsify each other.
"""
from __future__ import annotations

import json
import os
import re
import signal
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from nfvlab.system.files import write_json_atomic
from nfvlab.system import processes
from nfvlab.system.hostlock import HostLock, LabBusy, process_start_time, run_dir

__all__ = ["HostLock", "LabBusy", "LabState", "ProcessRecord", "clean", "destroy", "process_start_time",
           "run_dir"]

PREFIX = "nfvl-"
#: Environment variable marking every process a lab spawns (and their children) with its lab id.
LAB_ENV = "NFVLAB_LAB_ID"
#: Names of namespaces nfvlab creates: nfvl-<6 hex>-<role>.
NS_PATTERN = re.compile(r"^nfvl-([0-9a-f]{6})-(tg|wk|pod\d+|noisy\d*|node\d+)$")
#: Any other named lab resource (cgroup, DPDK file prefix): nfvl-<6 hex>-...
LAB_ID_PATTERN = re.compile(r"^nfvl-([0-9a-f]{6})(-|$)")


def labs_dir() -> Path:
    return run_dir() / "labs"


@dataclass
class ProcessRecord:
    pid: int
    start_time: int
    """Process start time in clock ticks since boot (/proc/PID/stat field 22):
    with the pid it identifies the process, so a recycled pid is never killed."""
    cmd: str
    group: bool = False
    """Started as a process-group leader: stopping it stops its whole group
    (stress-ng workers, ``ip netns exec`` children)."""


@dataclass
class LabState:
    """The state record of one lab."""

    lab_id: str
    model: str
    owner_pid: int
    owner_start_time: int
    created_at: float
    status: str = "building"
    """building | up | tearing-down."""
    persistent: bool = False
    """Created by ``nfvlab lab up`` and meant to outlive its creator."""
    namespaces: list[str] = field(default_factory=list)
    processes: list[ProcessRecord] = field(default_factory=list)
    mounts: list[str] = field(default_factory=list)
    """Mount points (hugetlbfs, bpffs) to unmount, innermost last."""
    cgroups: list[str] = field(default_factory=list)
    """cpuset cgroup directories to remove once their processes are gone."""
    paths: list[str] = field(default_factory=list)
    """Files and directories (globs allowed) to remove: run dirs, DPDK runtime
    dirs, hugepage files, sockets. Only under :data:`REMOVABLE_ROOTS`."""
    hugepages_2m: int = 0
    """2 MB hugepages this lab added to the host's reservation (given back)."""
    info: dict = field(default_factory=dict)
    """Model-specific facts (ports, MACs, addresses) for ``lab status`` and reuse."""

    @property
    def path(self) -> Path:
        return labs_dir() / f"{self.lab_id}.json"

    def save(self) -> None:
        """Write atomically and durably (tmp file + fsync + rename)."""
        write_json_atomic(self.path, asdict(self))

    @classmethod
    def load(cls, path: Path) -> "LabState":
        d = json.loads(path.read_text())
        d["processes"] = [ProcessRecord(**p) for p in d.get("processes", [])]
        return cls(**d)

    def owner_alive(self) -> bool:
        return process_start_time(self.owner_pid) == self.owner_start_time


def all_states() -> list[LabState]:
    out = []
    if labs_dir().exists():
        for p in sorted(labs_dir().glob("*.json")):
            try:
                out.append(LabState.load(p))
            except (ValueError, TypeError, OSError):
                continue
    return out


def _exited(rec: ProcessRecord) -> bool:
    """Gone, replaced by another process under that pid, or a zombie.

    A zombie has exited; it waits only for its parent (the lab's own process,
    which holds no Popen.wait for spawned daemons) to reap it.
    """
    return processes.exited(rec.pid, rec.start_time)


def signal_process(rec: ProcessRecord, sig: int) -> None:
    """Send ``sig`` to a process nfvlab started (its whole group when it leads one)."""
    if rec.group:
        os.killpg(rec.pid, sig)
    else:
        os.kill(rec.pid, sig)


def kill_process(rec: ProcessRecord, timeout_s: float = 3.0) -> bool:
    """Stop a process nfvlab started (only if pid and start time still match); one that leads a group,
    with its group: done when no member is alive (the workers a leader forked, e.g. stress-ng's,
    may outlive it by moments)."""
    if _exited(rec):
        return False

    def gone() -> bool:
        return _exited(rec) and not (rec.group and processes.group_alive(rec.pid))

    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            signal_process(rec, sig)
            if sig == signal.SIGTERM:  # a paused lab (a paired comparison's idle arm) acts on it only when continued
                signal_process(rec, signal.SIGCONT)
        except ProcessLookupError:
            return True
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if gone():
                return True
            time.sleep(0.02)
    return gone()


def marked_processes() -> dict[str, list[ProcessRecord]]:
    """Processes carrying ``NFVLAB_LAB_ID`` in their environment, by lab id (the process table, not records)."""
    found: dict[str, list[ProcessRecord]] = {}
    for pid, start, lab_id in processes.with_environment(LAB_ENV):
        if re.fullmatch(r"[0-9a-f]{6}", lab_id):
            found.setdefault(lab_id, []).append(
                ProcessRecord(pid=pid, start_time=start, cmd=f"pid {pid} of lab {lab_id}"))
    return found


def existing_namespaces() -> list[str]:
    d = Path("/var/run/netns")
    return sorted(p.name for p in d.iterdir()) if d.exists() else []


def remove_namespace(name: str) -> None:
    from pyroute2 import netns

    if name in existing_namespaces():
        # Links first, synchronously: a namespace itself dies asynchronously, and
        # with it the XDP/tc programs on its links (they would outlive teardown).
        import subprocess

        out = subprocess.run(["ip", "-n", name, "-j", "link", "show"], capture_output=True, text=True)
        for link in json.loads(out.stdout or "[]"):
            if link.get("ifname") != "lo":
                subprocess.run(["ip", "-n", name, "link", "del", "dev", link["ifname"]], capture_output=True)
        netns.remove(name)


#: Where a lab may create files; :func:`destroy` removes nothing outside these.
REMOVABLE_ROOTS = ("/run/nfvlab/", "/var/run/dpdk/nfvl-", "/run/dpdk/nfvl-",
                   "/dev/hugepages/nfvl-", "/sys/fs/cgroup/cpuset/nfvl-", "/tmp/nfvl-")

CPUSET_ROOT = Path("/sys/fs/cgroup/cpuset")
HUGEPAGES_2M = Path("/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages")


def _removable(path: str) -> bool:
    p = os.path.normpath(path)
    return ".." not in Path(path).parts and any(
        (p + "/").startswith(r) or p.startswith(r) for r in REMOVABLE_ROOTS)


def remove_path(pattern: str) -> None:
    """Remove files/dirs matching ``pattern`` (only under :data:`REMOVABLE_ROOTS`)."""
    import glob
    import shutil

    for path in sorted(glob.glob(pattern), reverse=True):
        if not _removable(path):
            continue
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass


def unmount(path: str) -> None:
    import subprocess

    if os.path.ismount(path):
        subprocess.run(["umount", "-l", path], capture_output=True)


def remove_cgroup(path: str) -> None:
    """rmdir a cpuset cgroup, first moving any straggler task to the root."""
    p = Path(path)
    if not p.is_dir() or not _removable(str(p)):
        return
    for child in sorted(p.iterdir(), reverse=True):  # nested groups first
        if child.is_dir():
            remove_cgroup(str(child))
    for _ in range(50):
        try:
            for pid in (p / "tasks").read_text().split():
                try:
                    (CPUSET_ROOT / "tasks").write_text(pid)
                except OSError:
                    pass
            p.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.05)


def release_hugepages(count: int) -> None:
    """Give back ``count`` 2 MB hugepages a lab added to the reservation."""
    if count <= 0 or not HUGEPAGES_2M.exists():
        return
    now = int(HUGEPAGES_2M.read_text())
    HUGEPAGES_2M.write_text(str(max(0, now - count)))


def destroy(state: LabState) -> None:
    """Remove everything ``state`` lists: processes first (they pin the rest)."""
    state.status = "tearing-down"
    state.save()
    for rec in state.processes:
        kill_process(rec)
    for rec in marked_processes().get(state.lab_id, []):  # started but never recorded (kill -9)
        kill_process(rec)
    for cg in reversed(state.cgroups):
        remove_cgroup(cg)
    for m in reversed(state.mounts):
        remove_path(f"{m}/*")  # hugetlbfs files: their pages return to the pool
        unmount(m)
    for ns in reversed(state.namespaces):
        remove_namespace(ns)
    for pattern in reversed(state.paths):
        remove_path(pattern)
    release_hugepages(state.hugepages_2m)
    state.hugepages_2m = 0
    state.path.unlink(missing_ok=True)


def is_leftover(st: LabState, include_persistent: bool = False) -> bool:
    """A lab whose creator is gone and that nobody meant to keep (or any kept one, if asked)."""
    if include_persistent and st.persistent:
        return True
    return not st.owner_alive() and not (st.persistent and st.status == "up")


def clean(include_persistent: bool = False) -> list[str]:
    """Remove what killed runs left behind; return a line per removed item.

    Touches only resources listed in state records of dead owners,
    ``nfvl-<id>-<role>`` namespaces and cgroups whose lab has no live state
    record, and processes carrying ``NFVLAB_LAB_ID`` of such a lab (found in
    the process table: a kill -9 between fork and record leaves no record).
    """
    removed = []
    for st in all_states():
        if not is_leftover(st, include_persistent):
            continue
        destroy(st)
        removed.append(f"lab {st.lab_id} ({st.model}, {st.status}): {', '.join(st.namespaces) or 'no namespaces'}")
    kept_ids = {st.lab_id for st in all_states()}
    for lab_id, recs in sorted(marked_processes().items()):
        if lab_id not in kept_ids:
            for rec in recs:
                if kill_process(rec):
                    removed.append(f"orphan process {rec.pid} of lab {lab_id}")
    for ns in existing_namespaces():
        m = NS_PATTERN.match(ns)
        if m and m.group(1) not in kept_ids:
            remove_namespace(ns)
            removed.append(f"orphan namespace {ns}")
    for cg in sorted(CPUSET_ROOT.glob("nfvl-*")) if CPUSET_ROOT.exists() else []:
        m = LAB_ID_PATTERN.match(cg.name)
        if m and m.group(1) not in kept_ids:
            remove_cgroup(str(cg))
            removed.append(f"orphan cgroup {cg}")
    return removed
