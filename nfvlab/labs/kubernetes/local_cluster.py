"""A real single-node Kubernetes cluster on this host (root only): the local cluster the main job,
the tests and ``nfvlab lab`` commands run the Kubernetes lab on.

``LocalCluster`` runs etcd, kube-apiserver (https://127.0.0.1:6443, token auth), kube-controller-manager,
kube-scheduler, a private containerd and a kubelet built by ``scripts/k8s/build.sh`` (binaries cached in
``${NFVLAB_CACHE:-/var/cache/nfvlab}/k8s/<key>/``). Pods get their primary interface from Multus
delegating to a bridge (no gateway, host-local IPAM in 198.18.250.0/24); services use 198.19.0.0/16.

    with LocalCluster() as k8s:
        api = k8s.api_client()                   # kubernetes.client.ApiClient
        ...

Everything the cluster creates is first recorded in a state file (``/run/nfvlab/k8s-cluster.json``):
processes (pid + start time), the run dir, links, mounts, the sysctls the kubelet rewrites (a
snapshot), hugepages, the host directories it may create, cgroups and iptables chains. Leaving the
``with`` block (normally, on an exception, Ctrl-C or SIGTERM) stops pods, then the kubelet and
containerd, then the scheduler and controller-manager, then the apiserver and last etcd, and puts
the host back as it was. After a kill -9, ``clean_leftovers()`` does the same from the state file
(``LocalCluster`` calls it first whenever it finds one).

The cluster takes the host-wide lab lock (``/run/nfvlab/lock``, the embedded lab's flock) for its
lifetime: it changes host-wide state (sysctls, hugepages, cgroups) that a lab must not see change.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Iterator, Optional

import psutil

from nfvlab.labs.kubernetes import host_images
from nfvlab.system import processes
from nfvlab.system.files import write_json_atomic

REPO = Path(__file__).resolve().parents[3]
BUILD_SH = REPO / "scripts" / "k8s" / "build.sh"

NODE_NAME = "nfvlab-k8s"
API_PORT = 6443
API_URL = f"https://127.0.0.1:{API_PORT}"
SERVICE_CIDR = "198.19.0.0/16"          # inside the benchmarking range 198.18.0.0/15
POD_SUBNET = "198.18.250.0/24"          # host-local IPAM of the primary (bridge) network
NODE_IP = "198.18.251.1"                # on one end of a veth pair (no dummy links on this kernel)
NODE_PREFIX = 30
NODE_LINK = "nk8s-node"
NODE_PEER = "nk8s-nodep"
BRIDGE = "nk8sbr0"                      # created by the bridge CNI plugin, deleted at teardown
# 2379-2381 etcd, 6443 apiserver, 10248/10250 kubelet, 10257 controller-manager, 10259 scheduler
PORTS = (2379, 2380, 2381, 6443, 10248, 10250, 10257, 10259)
REQUIRED_BINARIES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet",
                     "etcd", "multus", "pause")
HOST_TOOLS = ("containerd", "runc", "ctr", "ip", "iptables-save", "openssl", "mount", "umount")
CNI_PLUGINS_DIR = Path("/usr/lib/cni")

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


class ClusterUnavailable(RuntimeError):
    """The cluster cannot run here (not root, binaries not built, a tool missing)."""


# ---------------------------------------------------------------------------------------------------
# Paths and the pinned build


def run_root() -> Path:
    return Path(os.environ.get("NFVLAB_RUN_DIR", "/run/nfvlab"))


def state_file() -> Path:
    return run_root() / "k8s-cluster.json"


def cluster_dir() -> Path:
    return run_root() / "k8s"


def _pinned() -> Optional[dict]:
    """The NAME=value pins at the top of scripts/k8s/build.sh."""
    try:
        text = BUILD_SH.read_text()
    except OSError:
        return None
    pins = dict(re.findall(r"^(K8S_VERSION|ETCD_VERSION|MULTUS_VERSION|KWOK_VERSION|RECIPE)=(\S+)$",
                           text, re.M))
    return pins if len(pins) == 5 else None


def version_key() -> Optional[str]:
    p = _pinned()
    if p is None:
        return None
    return (f"k8s-{p['K8S_VERSION']}_etcd-{p['ETCD_VERSION']}_multus-{p['MULTUS_VERSION']}"
            f"_kwok-{p['KWOK_VERSION']}_{p['RECIPE']}")


#: CNI plugins built by scripts/k8s/cni-*.sh (binary name -> script), installed beside Multus
#: when built: the draft's user-space and AF_XDP networks.
EXTRA_CNI = {"userspace": "cni-userspace.sh", "ovs": "cni-ovs.sh", "afxdp": "cni-afxdp.sh"}


def extra_cni_binary(name: str) -> Optional[Path]:
    """The stamped binary of CNI plugin ``name`` (:data:`EXTRA_CNI`) for its script's pinned
    VERSION and RECIPE, else None. Runs nothing."""
    try:
        text = (BUILD_SH.parent / EXTRA_CNI[name]).read_text()
    except OSError:
        return None
    pins = dict(re.findall(r"^(VERSION|RECIPE)=(\S+)$", text, re.M))
    if len(pins) != 2:
        return None
    d = (Path(os.environ.get("NFVLAB_CACHE", "/var/cache/nfvlab")) / "cni"
         / f"{name}-{pins['VERSION']}_{pins['RECIPE']}")
    binary = d / "bin" / name
    return binary if (d / "stamp").is_file() and os.access(binary, os.X_OK) else None


def binaries_dir() -> Optional[Path]:
    """The build output dir (``.../k8s/<key>``, holding bin/, images/, share/) if build.sh finished
    for the pinned versions, else None. Runs nothing."""
    key = version_key()
    if key is None:
        return None
    d = Path(os.environ.get("NFVLAB_CACHE", "/var/cache/nfvlab")) / "k8s" / key
    if not (d / "stamp").is_file():
        return None
    if not all(os.access(d / "bin" / b, os.X_OK) for b in REQUIRED_BINARIES):
        return None
    if not (d / "images" / "images.json").is_file():
        return None
    return d


def unavailable_reason() -> Optional[str]:
    """Why a LocalCluster cannot start here, or None."""
    if os.geteuid() != 0:
        return "the local Kubernetes cluster needs root"
    if binaries_dir() is None:
        return ("Kubernetes binaries not built for the pinned versions: run scripts/k8s/build.sh "
                "(~20-30 min cold, cached afterwards)")
    missing = [t for t in HOST_TOOLS if shutil.which(t) is None]
    if missing:
        return f"host tools missing: {', '.join(missing)} (see scripts/k8s/debian-packages.txt)"
    plugins = [p for p in ("bridge", "host-local", "host-device", "loopback", "static")
               if not (CNI_PLUGINS_DIR / p).exists()]
    if plugins:
        return f"CNI plugins missing in {CNI_PLUGINS_DIR}: {', '.join(plugins)} (containernetworking-plugins)"
    return None


def nad_crd_manifest(build_dir: Optional[Path] = None) -> dict:
    """The NetworkAttachmentDefinition CRD as Multus ships it (share/multus-daemonset.yml)."""
    import yaml
    d = build_dir or binaries_dir()
    if d is None:
        raise ClusterUnavailable("Kubernetes binaries not built")
    for doc in yaml.safe_load_all((d / "share" / "multus-daemonset.yml").read_text()):
        if doc and doc.get("kind") == "CustomResourceDefinition" and \
                doc["metadata"]["name"] == "network-attachment-definitions.k8s.cni.cncf.io":
            return doc
    raise RuntimeError("no NetworkAttachmentDefinition CRD in Multus' multus-daemonset.yml")


def images(build_dir: Optional[Path] = None) -> dict:
    """{"pause": {"name", "tar", "id"}, "nf": {...}} from images.sh's images.json."""
    d = build_dir or binaries_dir()
    if d is None:
        raise ClusterUnavailable("Kubernetes binaries not built")
    return json.loads((d / "images" / "images.json").read_text())


# ---------------------------------------------------------------------------------------------------
# Host lock (shared with the embedded lab: flock on /run/nfvlab/lock), re-entrant within a process

_lock_mutex = threading.Lock()
_lock_state: dict = {"fd": None, "depth": 0}


@contextlib.contextmanager
def host_lock(purpose: str = "local Kubernetes cluster", wait_s: Optional[float] = None) -> Iterator[None]:
    if wait_s is None:
        wait_s = float(os.environ.get("NFVLAB_K8S_LOCK_WAIT_S", "900"))
    with _lock_mutex:
        if _lock_state["fd"] is not None:
            _lock_state["depth"] += 1
        else:
            run_root().mkdir(parents=True, exist_ok=True)
            fd = os.open(run_root() / "lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            deadline = time.monotonic() + wait_s
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as err:
                    if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                        os.close(fd)
                        raise
                    if time.monotonic() >= deadline:
                        holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
                        os.close(fd)
                        raise RuntimeError(f"host lock {run_root() / 'lock'} held by {holder} "
                                           f"for more than {wait_s:.0f} s")
                    time.sleep(0.5)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()}: {purpose}".encode(), 0)
            _lock_state.update(fd=fd, depth=1)
    try:
        yield
    finally:
        with _lock_mutex:
            _lock_state["depth"] -= 1
            if _lock_state["depth"] == 0:
                fd = _lock_state["fd"]
                _lock_state["fd"] = None
                os.ftruncate(fd, 0)
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)


# ---------------------------------------------------------------------------------------------------
# Small host helpers


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


# ---------------------------------------------------------------------------------------------------
# Teardown shared by LocalCluster.__exit__ and clean_leftovers()


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


# ---------------------------------------------------------------------------------------------------
# The cluster


#: The noisy neighbour's image (kept here: profiles and tests name it through this module).
STRESS_IMAGE = host_images.STRESS_IMAGE


class LocalCluster:
    """Context manager running a real single-node cluster; see the module docstring.

    hugepages_2m: 2 MB pages to reserve on the host for the node (given back at teardown).
    lock: take the host lab lock (False only when the caller holds it for this process tree).
    """

    def __init__(self, hugepages_2m: int = 0, lock: bool = True, log=None,
                 ready_timeout: float = 90.0, kubelet_config: Optional[dict] = None) -> None:
        self.build_dir = binaries_dir()
        self.bin = self.build_dir / "bin" if self.build_dir else None
        self.dir = cluster_dir()
        self.kubeconfig = self.dir / "kubeconfig"
        self.node_name = NODE_NAME
        self.api_url = API_URL
        self.ca_file = self.dir / "apiserver-certs" / "apiserver.crt"
        self.containerd_socket = self.dir / "containerd" / "containerd.sock"
        self.hugepages_2m = hugepages_2m
        self.lock = lock
        self.ready_timeout = ready_timeout
        self.kubelet_extra = dict(kubelet_config or {})
        """Kubelet configuration keys set on top of the working ones (e.g. topologyManagerPolicy)."""
        self.cni_conf_dir = self.dir / "cni" / "net.d"
        self.timings: dict = {}
        self._log = log or (lambda msg: print(msg, flush=True))
        self._token = ""
        self._procs: dict = {}
        self._state: dict = {}
        self._lock_cm = None
        self._old_sigterm = None
        self._ssl: Optional[ssl.SSLContext] = None

    # -- state file ------------------------------------------------------------------------------
    def _save(self) -> None:
        write_json_atomic(state_file(), self._state)

    # -- lifecycle ---------------------------------------------------------------------------------
    def __enter__(self) -> "LocalCluster":
        reason = unavailable_reason()
        if reason:
            raise ClusterUnavailable(reason)
        t0 = time.monotonic()
        if self.lock:
            self._lock_cm = host_lock("local Kubernetes cluster")
            self._lock_cm.__enter__()
        if threading.current_thread() is threading.main_thread():
            self._old_sigterm = signal.signal(signal.SIGTERM, self._on_sigterm)
        try:
            if state_file().exists():
                clean_leftovers(log=self._log)
            self._start()
        except BaseException:
            self._stop(graceful=False)
            raise
        self.timings["start_s"] = round(time.monotonic() - t0, 2)
        self._log(f"k8s-cluster: ready in {self.timings['start_s']} s ({self.timings})")
        return self

    def __exit__(self, *exc) -> None:
        self._stop(graceful=True)

    def _on_sigterm(self, signum, frame):
        raise SystemExit(128 + signum)

    def _release(self) -> None:
        if self._old_sigterm is not None:
            signal.signal(signal.SIGTERM, self._old_sigterm)
            self._old_sigterm = None
        if self._lock_cm is not None:
            self._lock_cm.__exit__(None, None, None)
            self._lock_cm = None

    # -- starting ----------------------------------------------------------------------------------
    def _start(self) -> None:
        busy = sorted(set(PORTS) & listening_ports())
        if busy:
            raise RuntimeError(f"TCP ports in use (another cluster or etcd running?): {busy}")
        if NODE_LINK in link_names() or BRIDGE in link_names():
            raise RuntimeError(f"links {NODE_LINK}/{BRIDGE} exist but no state file records them")
        if self.dir.exists():
            raise RuntimeError(f"{self.dir} exists but no state file records it")
        hugetlb_needed = not os.path.ismount(HUGETLB_MOUNT) and "hugetlb" in Path("/proc/cgroups").read_text()
        # Record everything before creating anything.
        self._state = {
            "version": 1,
            "owner": {"pid": os.getpid(), "start_time": proc_start_time(os.getpid())},
            "cluster_dir": str(self.dir),
            "build_dir": str(self.build_dir),
            "created_at": time.time(),
            "processes": [],
            "links": [NODE_LINK, BRIDGE],
            "hugetlb_mount": ({"path": str(HUGETLB_MOUNT), "made_dir": not HUGETLB_MOUNT.exists()}
                              if hugetlb_needed else None),
            "sysctls": sysctl_snapshot(),
            "hugepages_2m_before": (int(HUGEPAGES_2M.read_text())
                                    if self.hugepages_2m and HUGEPAGES_2M.exists() else None),
            "watched_paths": _watched_snapshot(),
            "cgroup_tops": cgroup_tops(),
            "iptables_chains": iptables_chains(),
        }
        self._save()

        d = self.dir
        for sub in ("logs", "etcd", "pki", "apiserver-certs", "containerd", "cni/bin", "cni/net.d",
                    "cni/cache", "cni/ipam", "kubelet", "kubelet-certs", "pod-logs", "flexvolume",
                    "runc"):
            (d / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(d, 0o700)

        # host set-up: hugepages, hugetlb hierarchy, node veth
        if self._state["hugepages_2m_before"] is not None:
            want = self._state["hugepages_2m_before"] + self.hugepages_2m
            HUGEPAGES_2M.write_text(str(want))
            got = int(HUGEPAGES_2M.read_text())
            if got < want:
                raise RuntimeError(f"could reserve only {got - self._state['hugepages_2m_before']} "
                                   f"of {self.hugepages_2m} 2 MB hugepages")
        if hugetlb_needed:
            HUGETLB_MOUNT.mkdir(exist_ok=True)
            _run(["mount", "-t", "cgroup", "-o", "hugetlb", "cgroup", HUGETLB_MOUNT])
        _run(["ip", "link", "add", NODE_LINK, "type", "veth", "peer", "name", NODE_PEER])
        _run(["ip", "addr", "add", f"{NODE_IP}/{NODE_PREFIX}", "dev", NODE_LINK])
        _run(["ip", "link", "set", NODE_LINK, "up"])
        _run(["ip", "link", "set", NODE_PEER, "up"])

        # credentials
        self._token = secrets.token_hex(16)
        pki = d / "pki"
        (pki / "tokens.csv").write_text(f'{self._token},admin,admin,"system:masters"\n')
        _run(["openssl", "genrsa", "-out", pki / "sa.key", "2048"])
        _run(["openssl", "rsa", "-in", pki / "sa.key", "-pubout", "-out", pki / "sa.pub"])

        t = time.monotonic()
        self._spawn("etcd", [
            self.bin / "etcd", "--name", "nfvlab", "--data-dir", d / "etcd",
            "--listen-client-urls", "http://127.0.0.1:2379",
            "--advertise-client-urls", "http://127.0.0.1:2379",
            "--listen-peer-urls", "http://127.0.0.1:2380",
            "--initial-advertise-peer-urls", "http://127.0.0.1:2380",
            "--initial-cluster", "nfvlab=http://127.0.0.1:2380",
            "--listen-metrics-urls", "http://127.0.0.1:2381",
            "--unsafe-no-fsync", "--log-level", "warn"])
        self._start_containerd()
        self._wait("etcd", lambda: self._http_ok("http://127.0.0.1:2379/health", b'"health":"true"'), 30)
        self.timings["etcd_s"] = round(time.monotonic() - t, 2)

        self._spawn("kube-apiserver", [
            self.bin / "kube-apiserver",
            "--etcd-servers=http://127.0.0.1:2379", "--bind-address=127.0.0.1",
            f"--secure-port={API_PORT}", "--advertise-address=127.0.0.1",
            f"--cert-dir={d / 'apiserver-certs'}", f"--token-auth-file={pki / 'tokens.csv'}",
            "--authorization-mode=Node,RBAC",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={pki / 'sa.pub'}",
            f"--service-account-signing-key-file={pki / 'sa.key'}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--endpoint-reconciler-type=none", "--allow-privileged=true",
            "--kubelet-preferred-address-types=InternalIP", "--profiling=false"])
        self._wait("containerd", lambda: self.containerd_socket.is_socket() and self._ctr_ok(), 30)
        self._import_images()
        self._wait("kube-apiserver", lambda: self.ca_file.exists() and self._readyz(), 60)
        self.timings["apiserver_ready_s"] = round(time.monotonic() - t, 2)
        self._write_kubeconfig()

        common = [f"--kubeconfig={self.kubeconfig}", f"--authentication-kubeconfig={self.kubeconfig}",
                  f"--authorization-kubeconfig={self.kubeconfig}", "--bind-address=127.0.0.1",
                  "--leader-elect=false"]
        self._spawn("kube-controller-manager", [
            self.bin / "kube-controller-manager", *common,
            f"--service-account-private-key-file={pki / 'sa.key'}",
            f"--root-ca-file={self.ca_file}", "--controllers=*",
            f"--flex-volume-plugin-dir={d / 'flexvolume'}",
            f"--cert-dir={d / 'controller-manager-certs'}"])
        self._spawn("kube-scheduler", [self.bin / "kube-scheduler", *common,
                                        f"--cert-dir={d / 'scheduler-certs'}"])
        self._write_cni()
        self._start_kubelet()
        self._wait("node Ready", self._node_ready, self.ready_timeout)
        if "strict decoding error" in self.log_tail("kubelet", 10_000):
            raise RuntimeError("kubelet ignored part of its configuration:\n" + "\n".join(
                ln for ln in self.log_tail("kubelet", 10_000).splitlines() if "strict decoding" in ln))
        self._wait("default ServiceAccount",
                   lambda: self._get("/api/v1/namespaces/default/serviceaccounts/default") is not None, 30)
        self.timings["node_ready_s"] = round(time.monotonic() - t, 2)

    def _spawn(self, name: str, cmd: list, env: Optional[dict] = None) -> subprocess.Popen:
        logf = open(self.dir / "logs" / f"{name}.log", "ab")
        p = subprocess.Popen([str(c) for c in cmd], stdout=logf, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, start_new_session=True, close_fds=True,
                             env=env, cwd=self.dir)
        logf.close()
        self._procs[name] = p
        self._state["processes"].append({"name": name, "pid": p.pid, "start_time": proc_start_time(p.pid)})
        self._save()
        return p

    def _start_containerd(self) -> None:
        d = self.dir / "containerd"
        img = images(self.build_dir)
        cfg = f"""version = 2
root = "{d / 'root'}"
state = "{d / 'state'}"
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.aufs", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = "{self.containerd_socket}"

[ttrpc]
  address = "{self.containerd_socket}.ttrpc"

[debug]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{img['pause']['name']}"
  restrict_oom_score_adj = true
  disable_hugetlb_controller = false
  tolerate_missing_hugetlb_controller = true
  disable_apparmor = true
  enable_selinux = false
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "{shutil.which('runc')}"
        Root = "{self.dir / 'runc'}"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{self.dir / 'cni' / 'bin'}"
    conf_dir = "{self.dir / 'cni' / 'net.d'}"
    max_conf_num = 1
"""
        (d / "config.toml").write_text(cfg)
        self._spawn("containerd", ["containerd", "--config", d / "config.toml", "--log-level", "warn"])

    def _ctr(self, *args, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
        return _run(["ctr", "--address", self.containerd_socket, "-n", "k8s.io", *args],
                    check=check, timeout=timeout)

    def _ctr_ok(self) -> bool:
        return self._ctr("version", check=False, timeout=5).returncode == 0

    def _import_images(self) -> None:
        t = time.monotonic()
        for key, im in images(self.build_dir).items():
            self._ctr("images", "import", "--platform", "linux/amd64",
                      self.build_dir / "images" / im["tar"])
        # Images of the host's own programs (the node is this host): the noisy neighbour, the
        # DPDK pod and the node's vSwitch, each only where its program is installed.
        for image in (host_images.stress_image(), host_images.dpdk_image(), host_images.ovs_image()):
            if not os.path.exists(image.programs[0]):
                continue
            tar = self.dir / (image.name.split("/")[-1].replace(":", "-") + ".tar")
            host_images.write_archive(image, tar)
            self._ctr("images", "import", "--platform", "linux/amd64", tar)
            tar.unlink()
        listed = self._ctr("images", "ls", "-q").stdout.split()
        for im in images(self.build_dir).values():
            if im["name"] not in listed:
                raise RuntimeError(f"image {im['name']} not in containerd after import: {listed}")
        self.timings["images_import_s"] = round(time.monotonic() - t, 2)

    def _write_kubeconfig(self) -> None:
        import base64
        ca = base64.b64encode(self.ca_file.read_bytes()).decode()
        self.kubeconfig.write_text(f"""apiVersion: v1
kind: Config
clusters:
- name: nfvlab
  cluster:
    server: {API_URL}
    certificate-authority-data: {ca}
users:
- name: admin
  user:
    token: {self._token}
contexts:
- name: nfvlab
  context: {{cluster: nfvlab, user: admin}}
current-context: nfvlab
""")
        os.chmod(self.kubeconfig, 0o600)

    def _write_cni(self) -> None:
        cni = self.dir / "cni"
        for p in CNI_PLUGINS_DIR.iterdir():
            (cni / "bin" / p.name).symlink_to(p)
        (cni / "bin" / "multus").symlink_to(self.bin / "multus")
        for name in EXTRA_CNI:
            built = extra_cni_binary(name)
            if built is not None:
                (cni / "bin" / name).symlink_to(built)
        conf = {
            "cniVersion": "0.3.1",
            "name": "multus-cni-network",
            "type": "multus",
            "kubeconfig": str(self.kubeconfig),
            "binDir": str(cni / "bin"),
            "cniDir": str(cni / "cache" / "multus"),
            "confDir": str(cni / "net.d"),
            "logFile": str(self.dir / "logs" / "multus.log"),
            "logLevel": "verbose",
            "delegates": [{
                "cniVersion": "0.3.1",
                "name": "nfvlab-primary",
                "type": "bridge",
                "bridge": BRIDGE,
                "isGateway": False,
                "ipMasq": False,
                "ipam": {"type": "host-local", "ranges": [[{"subnet": POD_SUBNET}]],
                         "dataDir": str(cni / "ipam")},
            }],
        }
        (cni / "net.d" / "00-multus.conf").write_text(json.dumps(conf, indent=1))

    def _start_kubelet(self) -> None:
        d = self.dir
        cfg = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "address": NODE_IP,
            "port": 10250,
            "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1",
            "healthzPort": 10248,
            "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False},
                               "x509": {}},
            "authorization": {"mode": "AlwaysAllow"},
            "cgroupDriver": "cgroupfs",
            "failCgroupV1": False,
            "failSwapOn": False,
            "cpuManagerPolicy": "static",
            "kubeReserved": {"cpu": "100m"},
            "allowedUnsafeSysctls": ["net.ipv4.ip_forward"],
            "makeIPTablesUtilChains": False,
            "containerRuntimeEndpoint": f"unix://{self.containerd_socket}",
            "podLogsDir": str(d / "pod-logs"),
            "volumePluginDir": str(d / "flexvolume"),
            "staticPodPath": "",
            "registerNode": True,
            "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%",
                             "imagefs.available": "1%", "nodefs.inodesFree": "1%"},
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "nodeStatusUpdateFrequency": "2s",
            "syncFrequency": "5s",
            "fileCheckFrequency": "5s",
            "serializeImagePulls": False,
            **self.kubelet_extra,
        }
        (d / "kubelet-config.json").write_text(json.dumps(cfg, indent=1))
        self._spawn("kubelet", [
            self.bin / "kubelet", f"--config={d / 'kubelet-config.json'}",
            f"--kubeconfig={self.kubeconfig}", f"--root-dir={d / 'kubelet'}",
            f"--cert-dir={d / 'kubelet-certs'}", f"--node-ip={NODE_IP}",
            f"--hostname-override={NODE_NAME}", "--v=1"])

    # -- API helpers (plain urllib: the cluster itself needs no kubernetes package) ----------------------
    def _ctx(self) -> ssl.SSLContext:
        if self._ssl is None:
            self._ssl = ssl.create_default_context(cafile=str(self.ca_file))
        return self._ssl

    def request(self, method: str, path: str, body: Any = None, timeout: float = 10) -> Any:
        """JSON request to the apiserver as admin; returns the decoded body, None on 404."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(API_URL + path, data=data, method=method, headers={
            "Authorization": f"Bearer {self._token}", "Content-Type": "application/json",
            "Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, context=self._ctx(), timeout=timeout) as r:
                return json.loads(r.read() or b"null")
        except urllib.error.HTTPError as err:
            if err.code == 404:
                return None
            raise RuntimeError(f"{method} {path}: {err.code} {err.read()[:500]!r}") from None

    def _get(self, path: str) -> Any:
        return self.request("GET", path)

    def _http_ok(self, url: str, expect: bytes) -> bool:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                return expect in r.read()
        except (OSError, urllib.error.URLError):
            return False

    def _readyz(self) -> bool:
        req = urllib.request.Request(API_URL + "/readyz",
                                     headers={"Authorization": f"Bearer {self._token}"})
        try:
            with urllib.request.urlopen(req, context=self._ctx(), timeout=2) as r:
                return r.read().strip() == b"ok"
        except (OSError, urllib.error.URLError, ssl.SSLError):
            return False

    def _node_ready(self) -> bool:
        try:
            node = self._get(f"/api/v1/nodes/{NODE_NAME}")
        except (OSError, RuntimeError):
            return False
        if not node:
            return False
        ready = any(c["type"] == "Ready" and c["status"] == "True"
                    for c in node.get("status", {}).get("conditions", []))
        tainted = any(t["key"].startswith("node.kubernetes.io/")
                      for t in node.get("spec", {}).get("taints", []) or [])
        return ready and not tainted

    def node(self) -> dict:
        return self._get(f"/api/v1/nodes/{NODE_NAME}")

    def _wait(self, what: str, cond, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            for name, p in self._procs.items():
                if p.poll() is not None:
                    raise RuntimeError(f"{name} exited ({p.returncode}) while waiting for {what}:\n"
                                       + self.log_tail(name))
            try:
                if cond():
                    return
            except Exception:
                pass
            if time.monotonic() >= deadline:
                raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what}")
            time.sleep(0.1)

    def log_tail(self, name: str, lines: int = 30) -> str:
        try:
            return "\n".join((self.dir / "logs" / f"{name}.log").read_text(errors="replace")
                             .splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def api_client(self):
        """A kubernetes.client.ApiClient for this cluster (needs the `kubernetes` package)."""
        from kubernetes import client, config
        cfg = client.Configuration()
        config.load_kube_config(config_file=str(self.kubeconfig), client_configuration=cfg)
        return client.ApiClient(cfg)

    # -- stopping ------------------------------------------------------------------------------------------
    def _stop_proc(self, name: str, timeout: float) -> None:
        p = self._procs.get(name)
        if p is None or p.poll() is not None:
            return
        p.terminate()
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)

    def _delete_pods(self, timeout: float = 30) -> None:
        """Delete every pod and wait until the kubelet has torn their sandboxes down (CNI DEL runs,
        so host-device links go back to the host)."""
        pods = self._get("/api/v1/pods") or {"items": []}
        for pod in pods["items"]:
            m = pod["metadata"]
            self.request("DELETE", f"/api/v1/namespaces/{m['namespace']}/pods/{m['name']}",
                         {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            out = self._ctr("tasks", "ls", check=False).stdout.splitlines()[1:]
            # Stopped tasks are not enough: CNI DEL (which hands host-device links back) runs when
            # the sandbox's network namespace is torn down, so wait until those are gone too.
            # containerd keeps them under its state dir (netns_mounts_under_state_dir).
            netns = list((self.dir / "containerd" / "state").glob("**/netns/cni-*"))
            if not [line for line in out if "RUNNING" in line] and not netns:
                return
            time.sleep(0.2)
        self._log("k8s-cluster: pods still running after deletion; killing them")

    def _stop(self, graceful: bool) -> None:
        t = time.monotonic()
        # A second Ctrl-C/SIGTERM must not cut the teardown (~1.5 s) short and leave the host half done.
        masked = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                masked[sig] = signal.signal(sig, signal.SIG_IGN)
        try:
            if not self._state:
                return
            if graceful and self._procs:
                try:
                    if self._procs.get("kube-apiserver") and self._procs["kube-apiserver"].poll() is None \
                            and self._procs.get("kubelet") and self._procs["kubelet"].poll() is None:
                        self._delete_pods()
                except Exception as err:
                    self._log(f"k8s-cluster: deleting pods failed: {err}")
                for name, timeout in (("kubelet", 10), ("containerd", 10), ("kube-scheduler", 5),
                                      ("kube-controller-manager", 5), ("kube-apiserver", 15),
                                      ("etcd", 10)):
                    self._stop_proc(name, timeout)
            errors = teardown_from_state(self._state, log=self._log)
            for p in self._procs.values():  # reap
                with contextlib.suppress(Exception):
                    p.wait(1)
            if errors:
                raise RuntimeError("local cluster teardown incomplete (state file kept for "
                                   "clean_leftovers()): " + "; ".join(errors))
            state_file().unlink(missing_ok=True)
            self._state = {}
        finally:
            self.timings["stop_s"] = round(time.monotonic() - t, 2)
            for sig, handler in masked.items():
                signal.signal(sig, handler)
            self._release()


def install_nad_crd(k8s: "LocalCluster") -> None:
    """Install Multus' NetworkAttachmentDefinition CRD and wait until it is served."""
    from kubernetes import client, utils

    utils.create_from_dict(k8s.api_client(), nad_crd_manifest())
    ext = client.ApiextensionsV1Api(k8s.api_client())
    for _ in range(100):
        crd = ext.read_custom_resource_definition("network-attachment-definitions.k8s.cni.cncf.io")
        if any(c.type == "Established" and c.status == "True" for c in (crd.status.conditions or [])):
            return
        time.sleep(0.1)


def stamp_text() -> str:
    """One line: ``available <version key>`` or ``unavailable: <reason>``. The pipeline's Kubernetes
    stage depends on a file holding it, so a result recorded without a cluster is re-measured
    once one can run (and one measured with these binaries is not)."""
    why = unavailable_reason()
    return f"unavailable: {why}\n" if why else f"available {version_key()}\n"


def write_stamp(path: Path) -> int:
    """Write :func:`stamp_text` to ``path`` (unchanged content: file untouched); say so when unavailable."""
    text = stamp_text()
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    if text.startswith("unavailable"):
        print(f"nfvlab cluster: no local Kubernetes cluster can run here ({text.split(': ', 1)[1].strip()}): "
              "the Kubernetes lab's configurations will be recorded as not realizable")
    return 0


def main(argv: Optional[list] = None) -> int:
    """nfvlab cluster {up|run -- CMD ...|clean|status|stamp FILE} (also: python -m nfvlab.labs.kubernetes.local_cluster)

    ``up`` keeps a cluster (with the NAD CRD) until Ctrl-C; ``run`` starts one, runs CMD,
    stops it and exits with CMD's status. Neither holds the host lab lock: nfvlab's
    Kubernetes lab takes it for each run (``params/lab.kubernetes.yaml`` fits this cluster).
    """
    import argparse
    ap = argparse.ArgumentParser(prog="nfvlab cluster", description=main.__doc__)
    ap.add_argument("command", choices=("up", "run", "clean", "status", "stamp"))
    ap.add_argument("--hugepages-2m", type=int, default=0)
    ap.add_argument("cmd", nargs=argparse.REMAINDER, help="with run: the command (after --); with stamp: the file")
    args = ap.parse_args(argv)
    if args.command in ("up", "clean", "status") and args.cmd:
        # (REMAINDER would swallow them, --help included, and start a cluster.)
        ap.error(f"{args.command} takes no arguments besides --hugepages-2m: got {' '.join(args.cmd)}")
    if args.command == "stamp":
        if len(args.cmd) != 1:
            ap.error("stamp: give the file to write")
        return write_stamp(Path(args.cmd[0]))
    if args.command == "clean":
        print("cleaned" if clean_leftovers() else "nothing to clean")
        return 0
    if args.command == "status":
        print(json.dumps({"binaries_dir": str(binaries_dir()), "unavailable": unavailable_reason(),
                          "state_file": str(state_file()) if state_file().exists() else None},
                         indent=1))
        return 0
    cmd = [c for c in args.cmd if c != "--"] if args.cmd[:1] == ["--"] else list(args.cmd)
    if args.command == "run" and not cmd:
        ap.error("run: give the command after --")
    with LocalCluster(hugepages_2m=args.hugepages_2m, lock=False) as k8s:
        install_nad_crd(k8s)
        if args.command == "run":
            return subprocess.run(cmd, env={**os.environ, "KUBECONFIG": str(k8s.kubeconfig)}).returncode
        print(f"cluster up: KUBECONFIG={k8s.kubeconfig} node={k8s.node_name} api={k8s.api_url}; "
              "Ctrl-C to stop", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
