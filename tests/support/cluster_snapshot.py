"""Snapshots of what a local cluster could change on this host, for before/after comparisons in tests.

The cluster's lifecycle lives in nfvlab/labs/kubernetes/local_cluster/; this only checks it.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import psutil

from nfvlab.labs.kubernetes.local_cluster.components import PORTS
from nfvlab.labs.kubernetes.local_cluster.host import (HUGEPAGES_2M, _run, _watched_snapshot, cgroup_tops, link_names,
                                                       listening_ports, mountpoints, sysctl_snapshot)
from nfvlab.labs.kubernetes.local_cluster.state import cluster_dir, state_file


COMPONENT_COMMS = ("etcd", "kube-apiserver", "kube-controller", "kube-scheduler", "kubelet",
                   "containerd", "containerd-shim", "containerd-shim-runc-v2", "runc", "pause", "multus")


def ctr(k8s, *args, check: bool = True) -> subprocess.CompletedProcess:
    """ctr against the cluster's containerd (namespace k8s.io)."""
    return k8s._ctr(*args, check=check)


def component_processes() -> list:
    """(pid, comm) of running processes that look like cluster components or containers."""
    out = []
    for proc in psutil.process_iter(["name", "status"]):
        if proc.info["name"] in COMPONENT_COMMS and proc.info["status"] != psutil.STATUS_ZOMBIE:
            out.append((proc.pid, proc.info["name"]))
    return sorted(out)


def _normalized_rules(cmd: list) -> list:
    if shutil.which(cmd[0]) is None:
        return []
    r = _run(cmd, check=False)
    lines = [ln for ln in r.stdout.splitlines() if not ln.startswith("#")]
    return [re.sub(r"\[\d+:\d+\]", "[0:0]", re.sub(r"packets \d+ bytes \d+", "packets 0 bytes 0", ln))
            for ln in lines]


def host_snapshot() -> dict:
    """What a cluster could change on this host, for before/after comparisons in tests."""
    netns = Path("/run/netns")
    return {
        "processes": component_processes(),
        "listening_cluster_ports": sorted(set(PORTS) & listening_ports()),
        "mounts": sorted(set(mountpoints())),
        "links": sorted(link_names()),
        "sysctls": sysctl_snapshot(),
        "hugepages_2m": int(HUGEPAGES_2M.read_text()) if HUGEPAGES_2M.exists() else None,
        "iptables": _normalized_rules(["iptables-save"]),
        "ip6tables": _normalized_rules(["ip6tables-save"]),
        "nft": _normalized_rules(["nft", "list", "ruleset"]),
        "cgroups": cgroup_tops(),
        "paths": _watched_snapshot(),
        "run_netns": sorted(os.listdir(netns)) if netns.is_dir() else None,
        "state_file": state_file().exists(),
        "cluster_dir": cluster_dir().exists(),
    }


def snapshot_diff(before: dict, after: dict) -> dict:
    """{key: (before, after)} for what differs; sysctls and lists reported by their changed items."""
    diff = {}
    for k in sorted(set(before) | set(after)):
        b, a = before.get(k), after.get(k)
        if b == a:
            continue
        if isinstance(b, dict) and isinstance(a, dict):
            diff[k] = {x: (b.get(x), a.get(x)) for x in sorted(set(b) | set(a)) if b.get(x) != a.get(x)}
        elif isinstance(b, list) and isinstance(a, list):
            diff[k] = {"gone": [x for x in b if x not in a], "new": [x for x in a if x not in b]}
        else:
            diff[k] = (b, a)
    return diff


