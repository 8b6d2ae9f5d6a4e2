"""Teardown shared by LocalCluster.__exit__ and clean_leftovers(): undo everything a state file records."""
from __future__ import annotations

import errno
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Optional

import psutil

from nfvlab.labs.kubernetes.local_cluster.host import (CGROUP_ROOT, HUGEPAGES_2M, _alive, _run,
                                                       iptables_chains, link_names, mountpoints,
                                                       proc_start_time, sysctl_snapshot)
from nfvlab.labs.kubernetes.local_cluster.network import BRIDGE
from nfvlab.labs.kubernetes.local_cluster.state import host_lock, state_file


def _kill_pid(pid: int, start_time: Optional[int], sig: int, group: bool = False) -> None:
    if not _alive(pid, start_time):
        return
    try:
        if group:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _wait_gone(pids: list, timeout: float) -> list:
    deadline = time.monotonic() + timeout
    left = pids
    while True:
        left = [(p, st) for p, st in left if _alive(p, st)]
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.05)


def _cgroup_pids(cdir: Path) -> set:
    pids = set()
    for root in [d for d in cdir.glob("*/kubepods") if d.is_dir()]:
        for dirpath, _, files in os.walk(root):
            if "cgroup.procs" in files:
                try:
                    pids.update(int(x) for x in Path(dirpath, "cgroup.procs").read_text().split())
                except OSError:
                    pass
    return pids


def _processes_of(run_dir: str) -> list:
    """Processes whose command line names the run dir (components, containerd shims, runc) or
    that live in the kubepods cgroups (containers)."""
    found = []
    me = os.getpid()
    for proc in psutil.process_iter(["cmdline"]):
        if proc.pid != me and run_dir + "/" in " ".join(proc.info["cmdline"] or ()):
            found.append((proc.pid, proc_start_time(proc.pid)))
    for pid in _cgroup_pids(CGROUP_ROOT):
        if pid != me:
            found.append((pid, proc_start_time(pid)))
    return [(p, st) for p, st in found if st is not None]


def _rm_cgroup_tree(path: Path) -> None:
    for dirpath, dirnames, _ in sorted(os.walk(path), key=lambda t: -t[0].count("/")):
        try:
            os.rmdir(dirpath)
        except OSError as err:
            if err.errno != errno.ENOENT:
                raise


def _delete_iptables_chains(before: dict, errors: list) -> None:
    now = iptables_chains()
    for tool, tables in now.items():
        for table, chains in tables.items():
            new = [c for c in chains if c not in before.get(tool, {}).get(table, [])
                   and re.match(r"^(KUBE-|CNI-)", c)]
            if not new:
                continue
            saved = _run([f"{tool}-save", "-t", table], check=False).stdout.splitlines()
            for line in saved:
                if not line.startswith("-A "):
                    continue
                args = shlex.split(line)
                target = args[args.index("-j") + 1] if "-j" in args else None
                if args[1] in new or target in new:
                    if args[1] not in new:  # a jump from a chain we keep: delete that rule
                        r = _run([tool, "-w", "-t", table, "-D", *args[1:]], check=False)
                        if r.returncode:
                            errors.append(f"{tool} -t {table} -D {' '.join(args[1:])}: {r.stderr.strip()}")
            for c in new:
                _run([tool, "-w", "-t", table, "-F", c], check=False)
            for c in new:
                r = _run([tool, "-w", "-t", table, "-X", c], check=False)
                if r.returncode:
                    errors.append(f"{tool} -t {table} -X {c}: {r.stderr.strip()}")


def teardown_from_state(st: dict, log=print) -> list:
    """Undo everything recorded in a state dict; returns a list of problems (empty when clean)."""
    errors: list = []
    run_dir = st["cluster_dir"]

    def step(name, fn):
        try:
            fn()
        except Exception as err:  # keep going: every later step still runs
            errors.append(f"{name}: {err}")

    # 1. processes: recorded components, anything naming the run dir, container processes
    def kill_all():
        recorded = [(p["pid"], p["start_time"]) for p in reversed(st.get("processes", []))]
        for sig, wait in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 5.0)):
            targets = [t for t in recorded if _alive(*t)] + _processes_of(run_dir)
            for pid, stt in targets:
                _kill_pid(pid, stt, sig)
            left = _wait_gone(targets, wait)
            if not left:
                break
        # container processes may be respawned by nothing now; sweep until none are left
        for _ in range(50):
            rest = _processes_of(run_dir)
            if not rest:
                break
            for pid, stt in rest:
                _kill_pid(pid, stt, signal.SIGKILL)
            _wait_gone(rest, 0.5)
        rest = _processes_of(run_dir)
        if rest:
            raise RuntimeError(f"processes still alive: {rest}")
    step("processes", kill_all)

    # 2. mounts under the run dir (container rootfs, shm, netns, kubelet volumes), deepest first
    def unmount():
        for _ in range(3):
            mps = [m for m, _ in mountpoints() if m == run_dir or m.startswith(run_dir + "/")]
            if not mps:
                return
            for m in sorted(set(mps), key=lambda x: -x.count("/")):
                if subprocess.run(["umount", m], capture_output=True).returncode != 0:
                    subprocess.run(["umount", "-l", m], capture_output=True)
        left = [m for m, _ in mountpoints() if m.startswith(run_dir + "/")]
        if left:
            raise RuntimeError(f"still mounted: {left}")
    step("mounts", unmount)

    # 3. cgroups the kubelet/containerd created (top-level dirs that were not there before)
    def cgroups():
        before = st.get("cgroup_tops", {})
        for h, old in before.items():
            hp = Path(h)
            if not hp.is_dir():
                continue
            for c in hp.iterdir():
                if c.is_dir() and c.name not in old and c.name.startswith("kubepods"):
                    _rm_cgroup_tree(c)
    step("cgroups", cgroups)

    # 4. the hugetlb cgroup v1 hierarchy we mounted
    def hugetlb():
        h = st.get("hugetlb_mount")
        if not h:
            return
        if os.path.ismount(h["path"]):
            for c in Path(h["path"]).iterdir():
                if c.is_dir():
                    _rm_cgroup_tree(c)
            _run(["umount", h["path"]])
        if h.get("made_dir") and os.path.isdir(h["path"]):
            os.rmdir(h["path"])
    step("hugetlb mount", hugetlb)

    # 5. links: the node veth, the CNI bridge
    def links():
        # pod veths on the bridge go away with their netns (freed asynchronously once unmounted)
        brif = Path(f"/sys/class/net/{BRIDGE}/brif")
        deadline = time.monotonic() + 5
        while brif.is_dir() and os.listdir(brif) and time.monotonic() < deadline:
            time.sleep(0.1)
        for port in (os.listdir(brif) if brif.is_dir() else []):
            _run(["ip", "link", "del", port], check=False)
        present = link_names()
        for name in st.get("links", []):
            if name in present:
                _run(["ip", "link", "del", name])
    step("links", links)

    # 6. iptables chains that appeared (KUBE-*, CNI-*)
    step("iptables", lambda: _delete_iptables_chains(st.get("iptables_chains", {}), errors))

    # 7. sysctls back to the snapshot
    def sysctls():
        snap = st.get("sysctls", {})
        now = sysctl_snapshot()
        for key, val in snap.items():
            if now.get(key) != val:
                try:
                    Path("/proc/sys", key).write_text(val)
                    log(f"k8s-cluster: restored sysctl {key.replace('/', '.')} = {val.strip()}")
                except OSError as err:
                    errors.append(f"sysctl {key}: {err}")
    step("sysctls", sysctls)

    # 8. hugepages reserved for the cluster
    def hugepages():
        before = st.get("hugepages_2m_before")
        if before is not None and HUGEPAGES_2M.exists() and int(HUGEPAGES_2M.read_text()) != before:
            HUGEPAGES_2M.write_text(str(before))
    step("hugepages", hugepages)

    # 9. host directories created by the components
    def paths():
        for p, old in st.get("watched_paths", {}).items():
            path = Path(p)
            if not path.exists():
                continue
            if old is None:
                shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
            elif path.is_dir():
                for child in os.listdir(path):
                    if child not in old:
                        c = path / child
                        shutil.rmtree(c) if c.is_dir() and not c.is_symlink() else c.unlink()
    step("host paths", paths)

    # 10. the run dir itself
    def rundir():
        if os.path.isdir(run_dir):
            shutil.rmtree(run_dir)
    step("run dir", rundir)
    return errors


def clean_leftovers(log=print) -> bool:
    """Undo a cluster that died without tearing down (kill -9), from its state file.

    Returns True when there was something to clean. Raises if a live process still owns the
    state file or if something could not be undone."""
    with host_lock("cleaning local Kubernetes cluster leftovers"):
        path = state_file()
        if not path.exists():
            return False
        st = json.loads(path.read_text())
        owner = st.get("owner", {})
        if owner.get("pid") not in (None, os.getpid()) and _alive(owner["pid"], owner.get("start_time")):
            raise RuntimeError(f"state file {path} belongs to a live process (pid {owner['pid']})")
        log(f"k8s-cluster: cleaning leftovers of the cluster recorded in {path}")
        errors = teardown_from_state(st, log=log)
        if errors:
            raise RuntimeError("could not undo everything: " + "; ".join(errors))
        path.unlink()
        return True
