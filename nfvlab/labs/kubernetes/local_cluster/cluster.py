"""The running cluster: :class:`LocalCluster` starts the processes in order, waits for each, talks to the
apiserver and stops it all; see the package docstring."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Optional

from nfvlab.labs.kubernetes.local_cluster import components, containerd, credentials, network
from nfvlab.labs.kubernetes.local_cluster.build import ClusterUnavailable, binaries_dir, images, nad_crd_manifest, \
    unavailable_reason
from nfvlab.labs.kubernetes.local_cluster.components import API_URL, NODE_NAME, PORTS
from nfvlab.labs.kubernetes.local_cluster.host import (HUGEPAGES_2M, HUGETLB_MOUNT, _run, _watched_snapshot,
                                                       cgroup_tops, iptables_chains, link_names,
                                                       listening_ports, proc_start_time, sysctl_snapshot)
from nfvlab.labs.kubernetes.local_cluster.network import BRIDGE, NODE_LINK
from nfvlab.labs.kubernetes.local_cluster.state import cluster_dir, host_lock, state_file
from nfvlab.labs.kubernetes.local_cluster.teardown import clean_leftovers, teardown_from_state
from nfvlab.system.files import write_json_atomic


class LocalCluster:
    """Context manager running a real single-node cluster; see the package docstring.

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
        network.add_node_link()

        self._token = credentials.make_credentials(d / "pki")

        t = time.monotonic()
        self._spawn("etcd", components.etcd_cmd(self.bin, d))
        self._start_containerd()
        self._wait("etcd", lambda: self._http_ok("http://127.0.0.1:2379/health", b'"health":"true"'), 30)
        self.timings["etcd_s"] = round(time.monotonic() - t, 2)

        self._spawn("kube-apiserver", components.apiserver_cmd(self.bin, d))
        self._wait("containerd", lambda: self.containerd_socket.is_socket() and self._ctr_ok(), 30)
        self._import_images()
        self._wait("kube-apiserver", lambda: self.ca_file.exists() and self._readyz(), 60)
        self.timings["apiserver_ready_s"] = round(time.monotonic() - t, 2)
        credentials.write_kubeconfig(self.kubeconfig, self.ca_file, self._token)

        self._spawn("kube-controller-manager",
                    components.controller_manager_cmd(self.bin, d, self.kubeconfig, self.ca_file))
        self._spawn("kube-scheduler", components.scheduler_cmd(self.bin, d, self.kubeconfig))
        network.write_cni(d / "cni", self.bin / "multus", self.kubeconfig, d / "logs")
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
        (d / "config.toml").write_text(containerd.config_text(self.dir, self.containerd_socket,
                                                              images(self.build_dir)["pause"]["name"]))
        self._spawn("containerd", ["containerd", "--config", d / "config.toml", "--log-level", "warn"])

    def _ctr(self, *args, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
        return containerd.ctr(self.containerd_socket, *args, check=check, timeout=timeout)

    def _ctr_ok(self) -> bool:
        return self._ctr("version", check=False, timeout=5).returncode == 0

    def _import_images(self) -> None:
        t = time.monotonic()
        containerd.import_images(self._ctr, self.build_dir, self.dir)
        self.timings["images_import_s"] = round(time.monotonic() - t, 2)

    def _start_kubelet(self) -> None:
        d = self.dir
        cfg = components.kubelet_config(d, self.containerd_socket, self.kubelet_extra)
        (d / "kubelet-config.json").write_text(json.dumps(cfg, indent=1))
        self._spawn("kubelet", components.kubelet_cmd(self.bin, d, self.kubeconfig))

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
