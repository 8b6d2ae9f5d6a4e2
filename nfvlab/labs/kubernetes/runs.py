"""A Kubernetes run's record and its teardown: what a run created, and removing all of it.

The record (``$NFVLAB_RUN_DIR/k8s-labs/<run id>.json``: kubeconfig, namespace, host links, host
paths, node rules and sysctls, owner as host + boot id + pid) is written before each thing is
created; :func:`delete_run` removes what it names (the run's namespace, waiting until it is gone,
then this host's links, paths, rules and the generator's namespace), and :func:`clean` does that
for the runs whose owner is dead (``nfvlab lab clean`` after a kill -9).
"""
from __future__ import annotations

import glob
import json
import os
import shutil
import socket
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

from nfvlab.labs.kubernetes import node_routing, userspace
from nfvlab.labs.kubernetes.cluster import api_client, reason
from nfvlab.system import netns as nl
from nfvlab.system import signals
from nfvlab.system.files import write_json_atomic
from nfvlab.system.hostlock import process_start_time, run_dir

PREFIX = "nfvl-"


def labs_dir() -> Path:
    return run_dir() / "k8s-labs"


def boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "unknown"


@dataclass
class RunState:
    """What a Kubernetes run created (written before each thing is created)."""

    run_id: str
    kubeconfig: Optional[str]
    context: Optional[str]
    namespace: str
    owner_host: str
    owner_boot_id: str
    owner_pid: int
    owner_start_time: int
    tg_netns: Optional[str] = None
    host_links: list[str] = field(default_factory=list)
    """Links nfvlab created in the node's (this host's) root namespace."""
    host_paths: list[str] = field(default_factory=list)
    """Files and directories (globs) on the node (this host) the run's pods create: the vhost-user
    sockets' directory, the local vSwitch's database and sockets."""
    host_dirs: list[str] = field(default_factory=list)
    """Directories on the node the run's pods may create (hostPath DirectoryOrCreate) that did not
    exist before: removed when empty, after :attr:`host_paths`."""
    host_rules: list[dict] = field(default_factory=list)
    """Policy routing rules on the node (host-routing, :mod:`.node_routing`): deleted at teardown."""
    host_sysctls: dict[str, str] = field(default_factory=dict)
    """Host-wide sysctls the run changed (host-routing) and their values before: restored at teardown."""

    @property
    def path(self) -> Path:
        return labs_dir() / f"{self.run_id}.json"

    def save(self) -> None:
        with signals.deferred():  # a signal between write and rename would leave a stray .tmp
            write_json_atomic(self.path, asdict(self))

    def owner_alive(self) -> bool:
        return (self.owner_host == socket.gethostname() and self.owner_boot_id == boot_id()
                and process_start_time(self.owner_pid) == self.owner_start_time)


def delete_run(st: RunState, timeout_s: float = 60.0, pod_delete_s: Optional[dict] = None,
               wait_namespace: bool = True) -> list[str]:
    """Delete the run's pods (waiting until they are gone) and namespace, then its host links and
    generator namespace.

    With ``pod_delete_s``, the pods are deleted one request each, and the dict gets each pod's
    deletion time (delete request -> the API server no longer has it), seconds. ``wait_namespace``:
    wait until the namespace is gone too. A lab's own teardown does not: once its pods are gone
    (their CNI DEL done, devices and hugepages released) what is left in the namespace is API objects
    the API server's namespace controller removes on its own, which took ~5 s of the ~9 s a teardown
    took here (`nfvlab lab clean` waits, as do the tests' residue checks).
    """
    errors = []
    try:
        from kubernetes import client
        from kubernetes.client.rest import ApiException

        core = client.CoreV1Api(api_client(st.kubeconfig, st.context))
        # Pods before the namespace, the vSwitch last: a DPDK pod's CNI DEL asks the vSwitch to
        # remove its port, which a vSwitch already gone cannot answer.
        _delete_pods(core, st.namespace, pod_delete_s if pod_delete_s is not None else {}, timeout_s)
        try:
            core.delete_namespace(st.namespace, grace_period_seconds=0, propagation_policy="Foreground")
        except ApiException as err:
            if err.status != 404:
                raise
        deadline = time.monotonic() + timeout_s
        while wait_namespace:
            try:
                core.read_namespace(st.namespace)
            except ApiException as err:
                if err.status == 404:
                    break
                raise
            if time.monotonic() > deadline:
                errors.append(f"namespace {st.namespace} still terminating after {timeout_s:g} s")
                break
            time.sleep(0.2)
    except Exception as err:
        errors.append(f"namespace {st.namespace}: {reason(err)}")
    for link in st.host_links:
        try:
            if nl.link_exists(None, link):
                nl.delete_link(None, link)
        except Exception as err:
            errors.append(f"link {link}: {err}")
    errors += node_routing.undo(st.host_rules, st.host_sysctls)
    for pattern in st.host_paths:
        for path in glob.glob(pattern):
            try:
                shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.unlink(path)
            except FileNotFoundError:
                pass
            except OSError as err:
                errors.append(f"{path}: {err}")
    for d in st.host_dirs:
        try:
            os.rmdir(d)
        except FileNotFoundError:
            pass
        except OSError:
            pass  # not empty: something else uses it now
    if st.tg_netns:
        try:
            nl.delete_namespace(st.tg_netns)
        except Exception as err:
            errors.append(f"namespace {st.tg_netns}: {err}")
    if not errors:
        st.path.unlink(missing_ok=True)
    return errors


def _delete_pods(core, namespace: str, out: dict, timeout_s: float) -> None:
    """Delete every pod of ``namespace`` and time each until it is gone (the CNI benchmarking
    draft's deletion time); a pod still there at the timeout is left to the namespace deletion."""
    from kubernetes.client.rest import ApiException

    try:
        pods = core.list_namespaced_pod(namespace).items
    except ApiException as err:
        if err.status == 404:
            return
        raise
    last = [p for p in pods if (p.metadata.labels or {}).get(userspace.ROLE_LABEL) == "vswitch"]
    deadline = time.monotonic() + timeout_s
    for group in ([p for p in pods if p not in last], last):
        _delete_pod_group(core, namespace, group, out, deadline)


def _delete_pod_group(core, namespace: str, pods: list, out: dict, deadline: float) -> None:
    from kubernetes.client.rest import ApiException

    started = {}
    for pod in pods:
        started[pod.metadata.name] = time.monotonic()
        try:
            core.delete_namespaced_pod(pod.metadata.name, namespace)
        except ApiException as err:
            if err.status != 404:
                raise
    while started and time.monotonic() < deadline:
        for name in list(started):
            try:
                core.read_namespaced_pod(name, namespace)
            except ApiException as err:
                if err.status != 404:
                    raise
                out[name] = round(time.monotonic() - started.pop(name), 3)
        time.sleep(0.05)


def all_runs() -> list[RunState]:
    out = []
    for p in sorted(labs_dir().glob("*.json")) if labs_dir().exists() else []:
        try:
            out.append(RunState(**json.loads(p.read_text())))
        except (OSError, ValueError, TypeError):
            continue
    return out


def clean() -> list[str]:
    """Remove what Kubernetes runs of dead owners left (namespaces, links, generator namespaces)."""
    removed = []
    for st in all_runs():
        if st.owner_alive():
            continue
        errors = delete_run(st)
        removed.append(f"kubernetes run {st.run_id} (namespace {st.namespace})"
                       + (f": incomplete: {'; '.join(errors)}" if errors else ""))
    return removed
