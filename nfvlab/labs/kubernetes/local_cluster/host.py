"""The host as the cluster changes it: small helpers (commands, processes, ports, mounts, links) and the
snapshots recorded before a cluster creates anything (sysctls, iptables chains, cgroups, host paths)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Optional

import psutil

from nfvlab.system import processes

# Host paths the components may create outside the run dir: removed at teardown when they did not
# exist before (or, for those that did, the entries that appeared in them).
WATCHED_PATHS = (
    "/var/lib/kubelet",          # the kubelet always uses /var/lib/kubelet/device-plugins
    "/var/lib/cni",              # containerd's CNI result cache, Multus' cache
    "/run/containerd",           # containerd shims' sockets (/run/containerd/s)
    "/usr/libexec/kubernetes",   # flex volume dirs (controller-manager, kubelet) unless overridden
    "/var/log/pods", "/var/log/containers",
    "/etc/cni", "/opt/cni", "/opt/containerd", "/var/lib/containerd",
    "/etc/kubernetes", "/run/kubernetes", "/var/lib/etcd",
)
CGROUP_ROOT = Path("/sys/fs/cgroup")
HUGETLB_MOUNT = CGROUP_ROOT / "hugetlb"
HUGEPAGES_2M = Path("/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages")

# sysctl snapshot: writable keys under these /proc/sys subtrees (per-interface conf/neigh excluded).
SYSCTL_TREES = ("kernel", "vm", "fs", "user", "net/core", "net/ipv4", "net/ipv6", "net/bridge",
                "net/netfilter", "net/unix")
SYSCTL_VOLATILE = re.compile(
    r"^(kernel/random/|kernel/ns_last_pid$|kernel/tainted$|kernel/perf_event_max_sample_rate$|"
    r"vm/drop_caches$|vm/compact_memory$|vm/nr_hugepages|vm/nr_overcommit_hugepages$|"
    r"fs/binfmt_misc|kernel/usermodehelper/|vm/stat_refresh$|net/ipv4/route/flush$|"
    r"net/ipv6/route/flush$|kernel/sched_domain/)")


def _run(cmd: list, check: bool = True, timeout: float = 60, **kw) -> subprocess.CompletedProcess:
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, **kw)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({r.returncode}): "
                           f"{(r.stderr or r.stdout).strip()[-800:]}")
    return r


proc_start_time = processes.start_time


def _alive(pid: int, start_time: Optional[int]) -> bool:
    found = processes.identity(pid)
    return (found is not None and (start_time is None or found[1] == start_time)
            and found[0] != psutil.STATUS_ZOMBIE)


def listening_ports() -> set:
    """TCP ports in LISTEN state (IPv4 and IPv6) on this host's network namespace."""
    ports = set()
    for f in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(f).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            if parts[3] == "0A":
                ports.add(int(parts[1].rsplit(":", 1)[1], 16))
    return ports


def mountpoints() -> list:
    out = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        mp = fields[4].encode().decode("unicode_escape")
        fstype = fields[fields.index("-") + 1]
        out.append((mp, fstype))
    return out


def link_names() -> set:
    return set(os.listdir("/sys/class/net"))


def sysctl_snapshot() -> dict:
    """Writable sysctls (as /proc/sys relative paths) of the subtrees the cluster may touch."""
    snap = {}
    base = Path("/proc/sys")
    for tree in SYSCTL_TREES:
        root = base / tree
        if not root.exists():
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            rel_dir = os.path.relpath(dirpath, base)
            # per-interface settings come and go with links: keep only all/default
            if re.match(r"^net/ipv[46]/(conf|neigh)$", rel_dir):
                dirnames[:] = [d for d in dirnames if d in ("all", "default")]
            for fn in filenames:
                rel = f"{rel_dir}/{fn}"
                if SYSCTL_VOLATILE.match(rel):
                    continue
                p = os.path.join(dirpath, fn)
                try:
                    if not os.stat(p).st_mode & 0o200:
                        continue
                    with open(p) as fh:
                        snap[rel] = fh.read()
                except OSError:
                    continue
    return snap


def iptables_chains() -> dict:
    """{"iptables": {table: [chains]}, "ip6tables": {...}} as iptables-save reports them."""
    out: dict = {}
    for tool in ("iptables", "ip6tables"):
        tables: dict = {}
        if shutil.which(f"{tool}-save"):
            r = _run([f"{tool}-save"], check=False)
            table = None
            for line in r.stdout.splitlines():
                if line.startswith("*"):
                    table = line[1:]
                    tables[table] = []
                elif line.startswith(":") and table:
                    tables[table].append(line[1:].split()[0])
        out[tool] = tables
    return out


def cgroup_tops() -> dict:
    """Top-level cgroup dirs of each mounted hierarchy under /sys/fs/cgroup."""
    tops = {}
    for h in sorted(CGROUP_ROOT.iterdir()) if CGROUP_ROOT.is_dir() else []:
        if h.is_dir() and os.path.ismount(h):
            tops[str(h)] = sorted(c.name for c in h.iterdir() if c.is_dir())
    if os.path.ismount(CGROUP_ROOT) and (CGROUP_ROOT / "cgroup.controllers").exists():  # pure v2
        tops[str(CGROUP_ROOT)] = sorted(c.name for c in CGROUP_ROOT.iterdir() if c.is_dir())
    return tops


def _watched_snapshot() -> dict:
    snap = {}
    for p in WATCHED_PATHS:
        path = Path(p)
        snap[p] = sorted(os.listdir(path)) if path.is_dir() else (None if not path.exists() else [])
    # the shims' socket dir inside /run/containerd, when that exists already
    s = Path("/run/containerd/s")
    if s.is_dir():
        snap["/run/containerd/s"] = sorted(os.listdir(s))
    return snap
