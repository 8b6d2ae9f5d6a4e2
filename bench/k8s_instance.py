"""Where one Kubernetes lab instance's set-up and teardown time goes, per phase: printed, one run.

Experiment A on the Kubernetes lab opens a fresh lab instance per model and repetition (the runner's
order is repetition-major on purpose), so each instance's set-up and teardown is paid ~24 times a
run. This bench opens ``--instances`` instances of each model in ``--models`` (experiment A's
resources: pinning plan, NUMA s1; params/lab.kubernetes.yaml on a local cluster it starts), one
after the other as the runner does, each held ``--hold-s`` before its teardown (the runner's trials
run meanwhile), holding the host lock, and prints per model the median of:

- ``setup`` (``open()`` until the session is yielded) and ``teardown`` (the ``with`` block's exit);
- set-up phases: the generator's cabling, the objects' creation (namespace, NADs, pods) and the wait
  for them, from the lab's own record (``setup_s``, pod create -> interfaces / Ready, the vSwitch
  pod's create -> Ready);
- each pod's steps as a watch on the API server sees them, from its creation: scheduled, network
  status (Multus' annotation: the CNI ADDs done), Running, Ready; then delete requested -> gone;
- teardown phases: deleting the pods (until the API server has none), the namespace delete request,
  removing the host's links, its rules and paths, the generator's namespace.

The target: set-up + teardown per instance as small as the pods' own start allows (the quick
experiment A pays it 24 times; C 6 times). Numbers describe this host (2 shared vCPUs).
Run as root, with scripts/k8s/build.sh's binaries:
    .venv/bin/python bench/k8s_instance.py [--instances 3] [--models macvlan ovs-dpdk-vhost afxdp-cni]
"""
from __future__ import annotations

import argparse
import functools
import statistics
import sys
import threading
import time
from collections import defaultdict

from k8s_timing import LAB_PROFILE, lab_profile  # bench/k8s_timing.py: the same profile and checks
from nfvlab.labs import LabError
from nfvlab.labs.kubernetes import KubernetesLab, render, runs
from nfvlab.labs.kubernetes import local_cluster as kc
from nfvlab.params import LabParams, validate
from nfvlab.scenario import Scenario
from nfvlab.scenario.resources import Resources
from nfvlab.system.hostlock import HostLock

MODELS = ["macvlan", "ovs-dpdk-vhost", "afxdp-cni"]


class PodWatch:
    """A watch on the API server's pods of lab runs (label :data:`render.RUN_LABEL`): for each
    (namespace, pod), the monotonic time each step was first seen."""

    def __init__(self, api) -> None:
        self.api = api
        self.seen: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "PodWatch":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        from kubernetes import client, watch

        core = client.CoreV1Api(self.api)
        while not self._stop.is_set():
            w = watch.Watch()
            try:
                for ev in w.stream(core.list_pod_for_all_namespaces, label_selector=render.RUN_LABEL,
                                   timeout_seconds=2):
                    self._note(ev["type"], self.api.sanitize_for_serialization(ev["object"]))
                    if self._stop.is_set():
                        break
            except Exception:
                time.sleep(0.1)

    def _note(self, kind: str, pod: dict) -> None:
        now = time.monotonic()
        meta, st = pod["metadata"], pod.get("status") or {}
        steps = self.seen[(meta["namespace"], meta["name"])]
        conds = {c["type"]: c.get("status") for c in st.get("conditions") or []}
        states = [cs.get("state") or {} for cs in st.get("containerStatuses") or []]
        for step, true in (("added", True), ("scheduled", conds.get("PodScheduled") == "True"),
                           ("interfaces", render.STATUS_ANNOTATION in (meta.get("annotations") or {})),
                           ("running", any(s.get("running") for s in states)),
                           ("ready", conds.get("Ready") == "True"),
                           ("delete", bool(meta.get("deletionTimestamp"))),
                           ("terminated", bool(states) and all(s.get("terminated") for s in states)),
                           ("gone", kind == "DELETED")):
            if true:
                steps.setdefault(step, now)


def timed(fn, into: dict, name: str):
    """``fn`` adding its run time (seconds) to ``into[name]``."""
    @functools.wraps(fn)
    def wrapper(*a, **kw):
        t = time.monotonic()
        try:
            return fn(*a, **kw)
        finally:
            into[name] = into.get(name, 0.0) + time.monotonic() - t
    return wrapper


def instance(lab: KubernetesLab, model: str, watch: PodWatch, hold_s: float) -> dict[str, float]:
    """One lab instance of ``model`` opened, held ``hold_s`` (as trials would) and closed: its phases,
    seconds."""
    out: dict[str, float] = {}
    # Teardown's parts, timed where runs.delete_run calls them (restored after).
    saved = {n: getattr(runs, n) for n in ("_delete_pods",)}
    saved_nl = {n: getattr(runs.nl, n) for n in ("delete_link", "delete_namespace")}
    saved_nr = runs.node_routing.undo
    runs._delete_pods = timed(saved["_delete_pods"], out, "td: pods deleted -> gone")
    runs.nl.delete_link = timed(saved_nl["delete_link"], out, "td: host links removed")
    runs.nl.delete_namespace = timed(saved_nl["delete_namespace"], out, "td: generator netns removed")
    runs.node_routing.undo = timed(saved_nr, out, "td: host rules undone")
    sc = Scenario(model, Resources(pinning="plan", numa="s1"))
    try:
        t0 = time.monotonic()
        cm = lab.open(sc)
        session = cm.__enter__()
        out["setup"] = time.monotonic() - t0
        info = session.info
        time.sleep(hold_s)
        t1 = time.monotonic()
        cm.__exit__(None, None, None)
        out["teardown"] = time.monotonic() - t1
    finally:
        runs._delete_pods = saved["_delete_pods"]
        runs.nl.delete_link, runs.nl.delete_namespace = saved_nl["delete_link"], saved_nl["delete_namespace"]
        runs.node_routing.undo = saved_nr
    out["setup: lab's own setup_s"] = info["setup_s"]
    out["setup: pod1 create -> interfaces"] = info["pod_create_to_interfaces_s"]
    out["setup: pod1 create -> Ready"] = info["pod_create_to_ready_s"]
    if "create_to_ready_s" in info.get("vswitch", {}):
        out["setup: vswitch create -> Ready"] = info["vswitch"]["create_to_ready_s"]
    time.sleep(0.5)  # the watch's last events
    for (ns, pod), steps in list(watch.seen.items()):
        if ns != info["namespace"] or "added" not in steps:
            continue
        t = steps["added"]
        for step in ("scheduled", "interfaces", "running", "ready"):
            if step in steps:
                out[f"pod {pod}: created -> {step}"] = steps[step] - t
        for step in ("terminated", "gone"):
            if "delete" in steps and step in steps:
                out[f"pod {pod}: delete -> {step}"] = steps[step] - steps["delete"]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", type=int, default=3, help="instances per model (median printed)")
    ap.add_argument("--models", nargs="+", default=MODELS)
    ap.add_argument("--hold-s", type=float, default=3.0,
                    help="seconds each instance stays up before its teardown (the runner's trials: the "
                         "kubelet is idle by then; a pod deleted right after Ready waits for its sync)")
    args = ap.parse_args()
    profile = lab_profile("bench/k8s_instance.py")
    if profile is None:
        return 1
    t_start = time.monotonic()
    # The whole bench is one "run": its labs take this lock as theirs; the cluster takes none.
    with HostLock("bench/k8s_instance", for_run=True), kc.LocalCluster(lock=False, log=lambda m: None) as k8s:
        kc.install_nad_crd(k8s)
        lab = KubernetesLab(validate(LabParams, profile, LAB_PROFILE))
        with PodWatch(lab.api()) as watch:
            for model in args.models:
                why = lab.check(Scenario(model, Resources(pinning="plan", numa="s1")))
                if why:
                    print(f"\n== {model}: not realizable here: {why[0]}")
                    continue
                rows: dict[str, list[float]] = defaultdict(list)
                try:
                    for _ in range(args.instances):
                        for k, v in instance(lab, model, watch, args.hold_s).items():
                            rows[k].append(v)
                except LabError as err:
                    print(f"\n== {model}: failed: {err}")
                    continue
                n = len(rows["setup"])
                total = [s + t for s, t in zip(rows["setup"], rows["teardown"])]
                print(f"\n== {model}: median of {n} instances, seconds (min..max)")
                print(f"  {'set-up + teardown per instance':<48} {statistics.median(total):7.2f}"
                      f"   ({min(total):.2f}..{max(total):.2f})")
                for k, v in rows.items():
                    print(f"  {k:<48} {statistics.median(v):7.2f}   ({min(v):.2f}..{max(v):.2f})"
                          + ("" if len(v) == n else f"   [{len(v)} of {n}]"))
    print(f"\nbenchmark wall time {time.monotonic() - t_start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
