"""How long the local Kubernetes cluster and the Kubernetes lab take on this host: one run, printed.

The tests assert none of these durations (a busy 2-vCPU VM stretches them at random); they only
give up, with a message, after generous waits (tests/test_k8s_cluster.py: POD_WAIT_S,
CLUSTER_START_WAIT_S; the lab's own ready_timeout_s). Printed, each measured once, with the bound
the tests used to assert as the target:

1. the local cluster's start (LocalCluster: etcd, API server ready, images imported, node Ready);
   target < 150 s (the kill -9 test's old limit for a cluster with a Running pod);
2. a pod (the nf image, no secondary interface) created -> Running and deleted -> gone, through the
   API; target < 60 s each;
3. the Kubernetes lab (params/lab.kubernetes.yaml): macvlan's pod created -> interfaces -> Ready and
   the run's teardown (target: Ready < 30 s); ovs-dpdk-vhost's node vSwitch pod created -> Ready
   (target < 60 s);
4. a pod that cannot start (an image the node lacks, readiness time-out 30 s): the lab's error with
   its teardown; target < 40 s;
5. the cluster's stop;
6. kill -9 of a process driving a cluster with a running pod (its components left running):
   clean_leftovers() restoring the host; no target (the test asserts only that it does).

Numbers describe this host (2 shared vCPUs), not a real cluster.
Run as root, with scripts/k8s/build.sh's binaries:  .venv/bin/python bench/k8s_timing.py
"""
from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time

import yaml

from nfvlab.labs import LabError
from nfvlab.labs.kubernetes import KubernetesLab
from nfvlab.labs.kubernetes import local_cluster as kc
from nfvlab.params import LabParams, validate
from nfvlab.scenario import Scenario

LAB_PROFILE = "params/lab.kubernetes.yaml"
GIVE_UP_S = 300  # any wait here: far beyond what it takes, then the bench says so and goes on

#: The driver kill -9 hits: a cluster (not holding the host lock, which the bench holds) with a pod
#: Running, then "READY" and sleep.
DRIVER = r"""
import sys, time
from nfvlab.labs.kubernetes import local_cluster as kc
k8s = kc.LocalCluster(lock=False, log=lambda m: None).__enter__()
k8s.request("POST", "/api/v1/namespaces/default/pods", {
    "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "victim"},
    "spec": {"terminationGracePeriodSeconds": 2, "containers": [{
        "name": "nf", "image": kc.images()["nf"]["name"], "imagePullPolicy": "Never"}]}})
while (k8s.request("GET", "/api/v1/namespaces/default/pods/victim") or {}).get(
        "status", {}).get("phase") != "Running":
    time.sleep(0.05)
print("READY", flush=True)
time.sleep(3600)
"""


def line(name: str, seconds: float | None, target: str = "") -> None:
    shown = "   (not measured)" if seconds is None else f"{seconds:8.2f} s"
    print(f"  {name:<44} {shown}" + (f"   (target {target})" if target else ""))


def until(cond, timeout: float = GIVE_UP_S, poll: float = 0.05) -> float | None:
    """Seconds until ``cond()`` is true, polling; None if it was not within ``timeout``."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if cond():
            return time.monotonic() - t0
        time.sleep(poll)
    return None


def pod_timings(k8s) -> None:
    path = "/api/v1/namespaces/default/pods"
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bench-timing"},
           "spec": {"terminationGracePeriodSeconds": 2, "containers": [{
               "name": "nf", "image": kc.images()["nf"]["name"], "imagePullPolicy": "Never"}]}}
    k8s.request("POST", path, pod)
    line("pod created -> Running", until(lambda: (k8s.request("GET", f"{path}/bench-timing") or {}).get(
        "status", {}).get("phase") == "Running"), "< 60 s")
    k8s.request("DELETE", f"{path}/bench-timing")
    line("pod deleted -> gone", until(lambda: k8s.request("GET", f"{path}/bench-timing") is None), "< 60 s")


def lab_timings(profile: dict) -> None:
    lab = KubernetesLab(validate(LabParams, profile, LAB_PROFILE))
    with lab.open(Scenario("macvlan")) as session:
        info = session.info
    line("macvlan pod created -> interfaces", info["pod_create_to_interfaces_s"])
    line("macvlan pod created -> Ready", info["pod_create_to_ready_s"], "< 30 s")
    line("macvlan run set-up (namespace ... pod Ready)", info["setup_s"])
    line("macvlan run teardown", info["teardown_s"])
    why = lab.check(Scenario("ovs-dpdk-vhost"))
    if why:
        print(f"  ovs-dpdk-vhost not realizable here: {why[0]}")
    else:
        try:
            with lab.open(Scenario("ovs-dpdk-vhost")) as session:
                info = session.info
        except LabError as err:
            print(f"  ovs-dpdk-vhost failed: {err}")
        else:
            line("ovs-dpdk-vhost node vSwitch created -> Ready", info["vswitch"]["create_to_ready_s"], "< 60 s")
            line("ovs-dpdk-vhost pod1 created -> Ready", info["pods"]["pod1"]["create_to_ready_s"])
            line("ovs-dpdk-vhost run teardown", info["teardown_s"])
    missing = {**profile, "kubernetes": {**profile["kubernetes"], "image": "nfvlab.local/no-such-image:1",
                                         "ready_timeout_s": 30}}
    t = time.monotonic()
    try:
        with KubernetesLab(validate(LabParams, missing, LAB_PROFILE)).open(Scenario("macvlan")):
            print("  a pod of a missing image became Ready?!")
    except LabError as err:
        line("missing image: LabError and teardown", time.monotonic() - t, "< 40 s, time-out 30 s")
        print(f"    ({str(err)[:110]})")


def kill_9_timing() -> None:
    """A cluster driven by a child process, the child killed with SIGKILL, then clean_leftovers()."""
    with kc.host_lock("bench/k8s_timing: kill -9"):
        t0 = time.monotonic()
        child = subprocess.Popen([sys.executable, "-c", DRIVER], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, start_new_session=True)
        try:
            out = b""
            while b"READY\n" not in out and time.monotonic() - t0 < GIVE_UP_S:
                if not select.select([child.stdout], [], [], GIVE_UP_S)[0]:
                    break
                chunk = os.read(child.stdout.fileno(), 65536)
                if not chunk:
                    break
                out += chunk
            if b"READY\n" not in out:
                print("  the driver's cluster did not start: " + out.decode(errors="replace")[-500:])
                return
            line("driver: cluster start + pod Running", time.monotonic() - t0)
            os.kill(child.pid, signal.SIGKILL)
            child.wait(10)
            t = time.monotonic()
            cleaned = kc.clean_leftovers()
            line("clean_leftovers() after kill -9 of the driver", time.monotonic() - t)
            print(f"    (it found leftovers to clean: {cleaned})")
        finally:
            if child.poll() is None:
                child.kill()
                child.wait(10)
            if kc.state_file().exists():
                kc.clean_leftovers()


def lab_profile(bench: str) -> dict | None:
    """The lab profile :data:`LAB_PROFILE`, or None after printing why ``bench`` cannot run here
    (not root, no local cluster)."""
    if os.geteuid() != 0:
        print(f"{bench} needs root")
        return None
    why = kc.unavailable_reason()
    if why:
        print(f"no local Kubernetes cluster: {why}")
        return None
    with open(LAB_PROFILE) as f:
        return yaml.safe_load(f)


def main() -> int:
    t_start = time.monotonic()
    profile = lab_profile("bench/k8s_timing.py")
    if profile is None:
        return 1
    print("== the local cluster and the Kubernetes lab (one run)")
    t = time.monotonic()
    # The Kubernetes lab takes the host lock for each run (it cables this host): the cluster must not.
    with kc.LocalCluster(lock=False, log=lambda m: None) as k8s:
        line("cluster start (LocalCluster enter)", time.monotonic() - t, "< 150 s")
        phases = ", ".join(f"{k} {v:g} s" for k, v in k8s.timings.items() if k != "start_s")
        print(f"    (its phases: {phases})")
        kc.install_nad_crd(k8s)
        pod_timings(k8s)
        lab_timings(profile)
        t = time.monotonic()
    line("cluster stop (LocalCluster exit)", time.monotonic() - t)
    print("\n== kill -9 of the process driving a cluster")
    kill_9_timing()
    print(f"\nbenchmark wall time {time.monotonic() - t_start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
