"""A real single-node Kubernetes cluster (nfvlab/labs/kubernetes/local_cluster/) on this host.

Needs root and the binaries of scripts/k8s/build.sh (skipped with the reason otherwise). Every test
holds the host lab lock from its "before" snapshot to its "after" snapshot, so no lab of another
process changes the host in between, and asserts that the host ends as it began.
"""
import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import require_cluster
from nfvlab.labs.kubernetes import local_cluster as kc
from nfvlab.labs.kubernetes.local_cluster import build, host, network, teardown
from support import cluster_snapshot as snap

pytestmark = [pytest.mark.lab, pytest.mark.k8s]

TESTS_DIR = Path(__file__).resolve().parent
VF = "nk8s-vf0"          # host side of the SR-IOV-VF stand-in, moved into the pod by host-device
VF_PEER = "nk8s-vf0p"
VF_IP = "198.18.252.2"
HUGEPAGES = 4            # 2 MB pages reserved on the host for the node (given back at teardown)


#: Give-up guards (seconds), far above what this host takes (bench/k8s_timing.py prints the figures:
#: a pod Running in a few seconds, a cluster up in well under a minute): reaching one is a failure
#: that says what it waited for, never a measured duration.
POD_WAIT_S = 120
CLUSTER_START_WAIT_S = 300


def _wait(what, cond, timeout):
    """Poll ``cond`` until it is true (returned); give up after ``timeout`` s with what it waited for."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = cond()
            if last:
                return last
        except Exception as err:  # noqa: BLE001 - report the last error on time-out
            last = err
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what} (last: {last!r})")


def _mac(link: str) -> str:
    return Path(f"/sys/class/net/{link}/address").read_text().strip()


def _assert_host_unchanged(before: dict, after: dict) -> None:
    diff = snap.snapshot_diff(before, after)
    assert diff == {}, "the cluster left the host changed:\n" + json.dumps(diff, indent=1, default=str)


def _container_pid(k8s, pod: str, container: str) -> int:
    """PID of a running container of the pod, from containerd's labels (ctr, no crictl needed)."""
    for cid in snap.ctr(k8s, "containers", "ls", "-q").stdout.split():
        info = json.loads(snap.ctr(k8s, "containers", "info", cid).stdout)
        labels = info.get("Labels", {})
        if labels.get("io.kubernetes.pod.name") == pod and \
                labels.get("io.kubernetes.container.name") == container:
            for line in snap.ctr(k8s, "tasks", "ls").stdout.splitlines()[1:]:
                f = line.split()
                if f and f[0] == cid and f[2] == "RUNNING":
                    return int(f[1])
    raise AssertionError(f"no running container {container} of pod {pod} in containerd")


def _nad_crd(api):
    from kubernetes import client
    ext = client.ApiextensionsV1Api(api)
    crd = kc.nad_crd_manifest()
    ext.create_custom_resource_definition(crd)

    def established():
        got = ext.read_custom_resource_definition(crd["metadata"]["name"])
        return any(c.type == "Established" and c.status == "True" for c in got.status.conditions or [])
    _wait("NAD CRD established", established, 30)


def _nad(api, ns, name):
    """A NetworkAttachmentDefinition moving the host veth VF into the pod (host-device)."""
    from kubernetes import client
    nad = {
        "apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"config": json.dumps({
            "cniVersion": "0.3.1", "name": name, "type": "host-device", "device": VF,
            "ipam": {"type": "static", "addresses": [{"address": f"{VF_IP}/24"}]}})},
    }
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        "k8s.cni.cncf.io", "v1", ns, "network-attachment-definitions", nad)


def _namespace(api, name):
    from kubernetes import client
    core = client.CoreV1Api(api)
    core.create_namespace({"metadata": {"name": name}})
    # pods need the namespace's default ServiceAccount (made by the controller-manager)
    _wait("default ServiceAccount", lambda: core.read_namespaced_service_account("default", name), 30)


def _gone(fn):
    from kubernetes.client.exceptions import ApiException
    try:
        fn()
    except ApiException as err:
        if err.status == 404:
            return True
        raise
    return False


def test_binaries_dir_runs_nothing_and_matches_build_sh():
    """binaries_dir() derives the cache dir from build.sh's pins (what build.sh --print-dir says)."""
    out = subprocess.run([str(build.BUILD_SH), "--print-dir"], capture_output=True, text=True,
                         env={**os.environ}, check=True).stdout.strip()
    assert out.endswith("/k8s/" + build.version_key())
    d = kc.binaries_dir()
    if d is not None:
        assert str(d) == out
        assert (d / "stamp").read_text().startswith(build.version_key())


def test_nf_pod_two_interfaces_hugepages_exclusive_cpu_and_host_restored():
    require_cluster()
    pytest.importorskip("kubernetes", reason="the Python package `kubernetes` (37.0.2) is not installed")
    hugepages = HUGEPAGES if host.HUGEPAGES_2M.exists() else 0
    with kc.host_lock("test_k8s_cluster: NF pod"):
        before = snap.host_snapshot()
        try:
            _nf_pod_scenario(hugepages)
        finally:
            # Deleting the host-side peer removes the pair wherever the other end is.
            subprocess.run(["ip", "link", "del", VF_PEER], capture_output=True)
        after = snap.host_snapshot()
    _assert_host_unchanged(before, after)


def _nf_pod_scenario(hugepages: int) -> None:
    from kubernetes import client
    with kc.LocalCluster(hugepages_2m=hugepages) as k8s:
        assert k8s.kubeconfig.is_file() and k8s.api_url == "https://127.0.0.1:6443"
        api = k8s.api_client()
        core = client.CoreV1Api(api)

        node = core.read_node(k8s.node_name)
        assert node.status.node_info.kubelet_version == "v1.37.2"
        ips = [a.address for a in node.status.addresses if a.type == "InternalIP"]
        assert ips == [network.NODE_IP]
        alloc = node.status.allocatable
        assert alloc["cpu"] == "1900m", alloc          # 2 CPUs minus kubeReserved 100m
        if hugepages:
            assert alloc["hugepages-2Mi"] == f"{2 * hugepages}Mi", alloc
        svc = core.read_namespaced_service("kubernetes", "default")
        assert svc.spec.cluster_ip.startswith("198.19."), svc.spec.cluster_ip
        host_forward = Path("/proc/sys/net/ipv4/ip_forward").read_text()

        subprocess.run(["ip", "link", "add", VF, "type", "veth", "peer", "name", VF_PEER], check=True)
        vf_mac = _mac(VF)
        _nad_crd(api)
        ns = "nfvlab-k8s-test"
        _namespace(api, ns)
        _nad(api, ns, "vf0")
        limits = {"cpu": "1", "memory": "64Mi"}
        if hugepages:
            limits["hugepages-2Mi"] = "2Mi"
        pod = {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "nf", "namespace": ns,
                         "annotations": {"k8s.v1.cni.cncf.io/networks": "vf0"}},
            "spec": {
                "terminationGracePeriodSeconds": 2,
                "securityContext": {"sysctls": [{"name": "net.ipv4.ip_forward", "value": "1"}]},
                "containers": [{
                    "name": "nf", "image": kc.images()["nf"]["name"], "imagePullPolicy": "Never",
                    "resources": {"requests": limits, "limits": limits},
                }],
            },
        }
        core.create_namespaced_pod(ns, pod)
        running = _wait("pod Running",
                        lambda: (p := core.read_namespaced_pod("nf", ns)).status.phase == "Running" and p,
                        POD_WAIT_S)
        assert running.status.qos_class == "Guaranteed"
        assert running.status.pod_ip.startswith("198.18.250.")

        status = json.loads(running.metadata.annotations["k8s.v1.cni.cncf.io/network-status"])
        by_if = {s.get("interface"): s for s in status}
        assert set(by_if) == {"eth0", "net1"}, status
        assert by_if["eth0"]["ips"] == [running.status.pod_ip]
        assert by_if["net1"]["ips"] == [VF_IP] and by_if["net1"]["name"] == f"{ns}/vf0"
        assert VF not in host.link_names()                 # moved into the pod

        pid = _container_pid(k8s, "nf", "nf")
        addrs = subprocess.run(["nsenter", "-t", str(pid), "-n", "ip", "-o", "-4", "addr"],
                               capture_output=True, text=True, check=True).stdout
        assert any(ln.split()[1] == "eth0" and f"{running.status.pod_ip}/24" in ln
                   for ln in addrs.splitlines()), addrs
        assert any(ln.split()[1] == "net1" and f"{VF_IP}/24" in ln for ln in addrs.splitlines()), addrs
        link = subprocess.run(["nsenter", "-t", str(pid), "-n", "ip", "-o", "link", "show", "net1"],
                              capture_output=True, text=True, check=True).stdout
        assert f"link/ether {vf_mac} " in link, link
        fwd = subprocess.run(["nsenter", "-t", str(pid), "-n", "cat", "/proc/sys/net/ipv4/ip_forward"],
                             capture_output=True, text=True, check=True).stdout.strip()
        assert fwd == "1"
        assert Path("/proc/sys/net/ipv4/ip_forward").read_text() == host_forward

        cgroups = dict(ln.split(":", 2)[1:] for ln in Path(f"/proc/{pid}/cgroup").read_text().splitlines())
        cpus = Path("/sys/fs/cgroup/cpuset", cgroups["cpuset"].lstrip("/"), "cpuset.cpus").read_text().strip()
        assert cpus == "1", f"Guaranteed 1-CPU container should own CPU 1 exclusively, has {cpus}"
        if hugepages:
            hl = Path("/sys/fs/cgroup/hugetlb", cgroups["hugetlb"].lstrip("/"), "..",
                      "hugetlb.2MB.limit_in_bytes")
            assert int(hl.read_text()) == 2 * 1024 * 1024, hl

        core.delete_namespaced_pod("nf", ns)
        _wait("pod gone", lambda: _gone(lambda: core.read_namespaced_pod("nf", ns)), POD_WAIT_S)
        _wait(f"{VF} back on the host", lambda: VF in host.link_names(), 30)
        assert _mac(VF) == vf_mac
        core.delete_namespace(ns)
        _wait("namespace gone", lambda: _gone(lambda: core.read_namespace(ns)), POD_WAIT_S)


def test_teardown_on_error_deletes_pods_first_and_restores_host():
    """An exception inside the block still stops everything in order: pods are deleted while the
    kubelet still runs (CNI DEL gives the host-device link back to the host), then the rest."""
    require_cluster()
    pytest.importorskip("kubernetes", reason="the Python package `kubernetes` (37.0.2) is not installed")
    from kubernetes import client
    with kc.host_lock("test_k8s_cluster: error teardown"):
        before = snap.host_snapshot()
        try:
            with pytest.raises(ZeroDivisionError):
                with kc.LocalCluster() as k8s:
                    assert k8s.node()["metadata"]["name"] == k8s.node_name
                    assert kc.state_file().exists()
                    subprocess.run(["ip", "link", "add", VF, "type", "veth", "peer", "name", VF_PEER],
                                   check=True)
                    vf_mac = _mac(VF)
                    api = k8s.api_client()
                    core = client.CoreV1Api(api)
                    _nad_crd(api)
                    _nad(api, "default", "vf0")
                    pod = {"apiVersion": "v1", "kind": "Pod",
                           "metadata": {"name": "left-running",
                                        "annotations": {"k8s.v1.cni.cncf.io/networks": "vf0"}},
                           "spec": {"terminationGracePeriodSeconds": 2, "containers": [{
                               "name": "nf", "image": kc.images()["nf"]["name"], "imagePullPolicy": "Never"}]}}
                    core.create_namespaced_pod("default", pod)
                    _wait("pod Running", lambda: core.read_namespaced_pod(
                        "left-running", "default").status.phase == "Running", POD_WAIT_S)
                    assert VF not in host.link_names()
                    1 / 0
            assert VF in host.link_names(), "the host-device link did not come back at teardown"
            assert _mac(VF) == vf_mac
        finally:
            subprocess.run(["ip", "link", "del", VF_PEER], capture_output=True)
        after = snap.host_snapshot()
    _assert_host_unchanged(before, after)


CHILD = r"""
import json, sys, time
sys.path.insert(0, {tests!r})
from nfvlab.labs.kubernetes import local_cluster as kc
k8s = kc.LocalCluster(hugepages_2m={hugepages}, lock=False).__enter__()
pod = {{"apiVersion": "v1", "kind": "Pod", "metadata": {{"name": "victim"}},
       "spec": {{"terminationGracePeriodSeconds": 2, "containers": [{{"name": "nf",
                "image": kc.images()["nf"]["name"], "imagePullPolicy": "Never"}}]}}}}
k8s.request("POST", "/api/v1/namespaces/default/pods", pod)
deadline = time.monotonic() + {pod_wait}
while (k8s.request("GET", "/api/v1/namespaces/default/pods/victim") or {{}}).get("status", {{}}).get("phase") != "Running":
    assert time.monotonic() < deadline, "pod not Running after {pod_wait} s"
    time.sleep(0.1)
print("READY", flush=True)
time.sleep(3600)
"""


def _read_until(proc, marker: str, timeout: float) -> list[str]:
    """Lines of ``proc``'s stdout (a pipe, read unbuffered) up to the line ``marker`` (included), or
    all it wrote when it ends or ``timeout`` s pass without it: a give-up guard that holds even if
    the process goes silent."""
    fd, data = proc.stdout.fileno(), b""
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0 and select.select([fd], [], [], left)[0]:
        chunk = os.read(fd, 65536)
        if not chunk:  # it ended
            break
        data += chunk
        lines = data.decode(errors="replace").splitlines()
        if marker in lines:
            return lines[:lines.index(marker) + 1]
    return data.decode(errors="replace").splitlines()


@pytest.mark.parametrize("what", ["driver", "everything"])
def test_kill_9_then_clean_leftovers(what, spawn):
    """kill -9 the process driving a cluster (with a running pod), or that process and every
    cluster process (components, shims, containers): clean_leftovers() restores the host."""
    require_cluster()
    hugepages = 2 if host.HUGEPAGES_2M.exists() else 0
    with kc.host_lock(f"test_k8s_cluster: kill -9 {what}"):
        before = snap.host_snapshot()
        # Its own session (spawn): the cluster's components, started by the child, outlive it.
        child = spawn([sys.executable, "-c", CHILD.format(tests=str(TESTS_DIR), hugepages=hugepages,
                                                          pod_wait=POD_WAIT_S)],
                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            out = _read_until(child, "READY", CLUSTER_START_WAIT_S)
            assert out and out[-1] == "READY", (
                f"child cluster not started with a Running pod after {CLUSTER_START_WAIT_S} s (or it ended):\n"
                + "\n".join(out[-40:]))
            st = json.loads(kc.state_file().read_text())
            live = teardown._processes_of(st["cluster_dir"])
            comms = {c for _, c in snap.component_processes()}
            assert {"etcd", "kube-apiserver", "kubelet", "containerd", "pause"} <= comms, comms
            assert network.NODE_LINK in host.link_names()

            os.kill(child.pid, signal.SIGKILL)
            child.wait(10)
            if what == "everything":
                for pid, _ in live + teardown._processes_of(st["cluster_dir"]):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                # (a give-up guard: SIGKILLed, they are gone in well under a second unless the host stalls)
                _wait("cluster processes dead", lambda: not teardown._processes_of(st["cluster_dir"]), 60)
            else:
                assert teardown._processes_of(st["cluster_dir"]), "components should outlive their driver"
            assert kc.state_file().exists()

            assert kc.clean_leftovers() is True
            assert kc.clean_leftovers() is False      # nothing left to do the second time
        finally:
            if child.poll() is None:
                child.kill()
                child.wait(10)
            if kc.state_file().exists():
                kc.clean_leftovers()
        after = snap.host_snapshot()
    _assert_host_unchanged(before, after)
