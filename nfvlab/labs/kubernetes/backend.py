"""The Kubernetes lab: a scenario deployed as real pods on a cluster with the ``kubernetes`` client.

    backend = KubernetesLab(lab_params)        # lab profile with kind: kubernetes
    with backend.open(Scenario("macvlan")) as session:
        ...                                    # session.streams through the pod

Lifecycle, as strict as the embedded lab's: a state record
(``$NFVLAB_RUN_DIR/k8s-labs/<run id>.json``: kubeconfig, namespace, host links,
owner as host + boot id + pid) is written before anything is created; every
object lives in the run's own namespace, labelled with the run id; pods must be
Ready within ``ready_timeout_s`` or the run fails with the scheduler's or the
kubelet's reason; teardown (success, error, Ctrl-C, SIGTERM) deletes the
namespace and waits until it is gone, once, with signals held (:mod:`nfvlab.system.signals`:
SIGINT/SIGTERM raise and set a flag that the wait loops and object creations check; a
second signal does not abort teardown). ``nfvlab lab clean`` removes what a killed
run left (:func:`clean`).

The concepts live in modules of their own: the cluster's read-only facts (:mod:`.cluster`), what
rules a scenario out (:mod:`.checks`), a run's record and teardown (:mod:`.runs`), its pods'
readiness, MACs and the local vSwitch's flows (:mod:`.pods`); this module builds a run from them.

With ``cabling: local`` the node is this host: nfvlab creates the generator's
namespace here (``nfvl-<id>-tg``, ports ``tg0``/``tg1``) cabled by veths to the
node's NIC ports ``nics`` (created by nfvlab, removed at teardown), and the
embedded generator drives them. With ``cabling: external`` the generator (TRex)
is wired to ``nics``.
"""
from __future__ import annotations

import json
import os
import secrets
import socket
import time
from contextlib import ExitStack, contextmanager
from typing import Iterator, Optional

from nfvlab.labs import forwarder
from nfvlab.labs.base import LabError, LabSession, Terminated
from nfvlab.labs.kubernetes import node_routing, pods, render, userspace
from nfvlab.labs.kubernetes.checks import Checks
from nfvlab.labs.kubernetes.cluster import cni_conf, detect_primary_cni, nic_info, reason
from nfvlab.labs.kubernetes.runs import PREFIX, RunState, boot_id, clean, delete_run, labs_dir
from nfvlab.params import LabParams
from nfvlab.scenario import Port, Scenario, Stream
from nfvlab.scenario.cni import CniScenario
from nfvlab.scenario.topology import default_ips
from nfvlab.system import netns as nl
from nfvlab.system import signals
from nfvlab.system.hostlock import HostLock, process_start_time

#: What callers import from here (``nfvlab lab clean``, the tests), wherever it lives now.
__all__ = ["KubernetesLab", "RunState", "clean", "cni_conf", "delete_run", "detect_primary_cni", "labs_dir",
           "nic_info"]


class KubernetesLab(Checks):
    """A lab backend on a Kubernetes cluster (see the module docstring)."""

    kind = "kubernetes"

    def __init__(self, lab: LabParams) -> None:
        if lab.kubernetes is None:
            raise LabError("lab kind kubernetes needs a kubernetes: block in the lab profile")
        super().__init__(lab.kubernetes)
        self.link_mtu = lab.mtu
        self._run: Optional[RunState] = None

    def mtu(self, scenario: Scenario | CniScenario) -> int:
        """IP MTU of the scenario's data path: the profile's, at most what a user-space model's
        DPDK NIC ports carry (1500); a CNI scenario's link MTU."""
        if isinstance(scenario, CniScenario):
            return scenario.path.link_mtu_bytes
        return min(self.link_mtu, userspace.MTU) if render.dpdk_pods(scenario, self.params) else self.link_mtu

    def describe(self) -> dict:
        out: dict = {"lab_kind": self.kind, "node": self.params.node, "cabling": self.params.cabling}
        try:
            from kubernetes import client

            out["server_version"] = client.VersionApi(self.api()).get_code().git_version
            info = self.node().get("status", {}).get("nodeInfo", {})
            out["node_info"] = {k: info.get(k) for k in ("osImage", "kernelVersion", "containerRuntimeVersion",
                                                          "kubeletVersion", "architecture")}
            out["kubelet"] = self.kubelet_policies(self.params.node)
            out["primary_cni"] = self.primary_cni()
            out["placement_config"] = {k: v.model_dump(exclude_defaults=True)
                                       for k, v in self.params.placement.items()}
            if self.params.cni_conf_dir:
                out["node_cni_conf"] = cni_conf(self.params.cni_conf_dir)
        except Exception as err:  # provenance never fails a run
            out["error"] = reason(err)
        return out

    # -- a run ----------------------------------------------------------------------------------------
    @contextmanager
    def open(self, scenario: Scenario | CniScenario) -> Iterator[LabSession]:
        reasons = self.ready() or self.check(scenario)  # cached: the caller's check() is not repeated
        if reasons:
            raise LabError(reasons[0])
        if isinstance(scenario, CniScenario):  # check() always has a reason for one (_cni_reasons)
            raise LabError(f"{scenario.label}: not realizable on a cluster")
        p = self.params
        run_id = secrets.token_hex(3)
        me = os.getpid()
        st = RunState(run_id=run_id, kubeconfig=p.kubeconfig, context=p.context,
                      namespace=render.namespace_name(p, run_id), owner_host=socket.gethostname(),
                      owner_boot_id=boot_id(), owner_pid=me, owner_start_time=process_start_time(me) or 0)
        self._run = st
        lock = HostLock(f"kubernetes lab {run_id} ({scenario.label})") if p.cabling == "local" else None
        info: dict = {"lab_kind": self.kind, "run_id": run_id, "namespace": st.namespace, "node": p.node}
        # SIGINT/SIGTERM raise (and are flagged, for signals.checkpoint() in the wait loops); teardown
        # runs once under signals.deferred(), so a second signal cannot abort it half-way.
        with signals.guard(sigterm=Terminated), ExitStack() as stack:
            if lock is not None:
                stack.enter_context(lock)
            stack.push(lambda *exc: self._teardown_once(st, info, exc[1]))
            st.save()
            yield from self._build(scenario, st, info)

    def _teardown_once(self, st: RunState, info: dict, failure: Optional[BaseException]) -> None:
        """Teardown, with signals held until it is done; then, on an otherwise clean exit, the
        signal that came meanwhile (or was swallowed) fails the run. A teardown error after a
        failure names both (the failure is what the user must see first)."""
        with signals.deferred():
            try:
                info["teardown_s"] = self._teardown(st, info.get("pods", {}))
            except LabError as err:
                if isinstance(failure, Exception):
                    raise LabError(f"{failure}; then {err}") from failure
                raise
        if failure is None:
            signals.checkpoint()

    def _build(self, scenario: Scenario, st: RunState, info: dict) -> Iterator[LabSession]:
        """Create the run's objects (recorded in ``st`` first), wait for them, yield the session."""
        p, run_id = self.params, st.run_id
        t0 = time.monotonic()
        streams_ports, tg_macs = self._cable(st, self.mtu(scenario)) if p.cabling == "local" else (None, p.tg_macs)
        if p.cabling == "local":  # the node's NIC ports are this host's links until a pod takes them
            info["node_nics"] = {nic: nic_info(nic) for nic in p.nics}
        core_plan = self.core_plan(scenario)
        routed = render.routed(scenario, p)  # (check() refused it unless cabling is local)
        if routed:
            st.host_rules, st.host_sysctls = node_routing.rules(p.nics), node_routing.sysctl_values()
            st.save()
            with signals.deferred():  # as in _cable
                node_routing.prepare(p.nics, tg_macs)
            signals.checkpoint()
        dpdk = render.dpdk_pods(scenario, p)
        ovs = dpdk and userspace.runs_ovs(scenario.model)
        if dpdk and p.cabling == "local":
            # What the pods will create on the node (this host), recorded before they exist.
            st.host_paths += [f"{p.vhost_dir}/{run_id}",
                              *(f"{userspace.OVS_RUNDIR}/{f}" for f in userspace.OVS_RUN_FILES)]
            st.host_dirs += [d for d in (userspace.OVS_RUNDIR, p.vhost_dir) if not os.path.exists(d)]
            if userspace.runs_ovs(scenario.model):  # the taps its OVS leaves behind (persistent)
                st.host_links += userspace.ovs_taps(p)
            st.save()
        if dpdk:
            info.update(core_plan=core_plan.describe() if core_plan else None, mtu=self.mtu(scenario),
                        forwarder="dpdk-testpmd --forward-mode=mac (the draft's l2fwd)")
        if scenario.model == "sriov":
            info["sriov"] = ({"mode": "dpdk", "vf_driver": "vfio-pci", "resource": p.sriov_dpdk_resource}
                             if dpdk else {"mode": "netdevice", "resource": p.sriov_resource})
        if ovs:
            info["vswitch"] = {"kind": "ovs-dpdk", "run_by": "nfvlab (the run's vswitch pod)",
                               "bridge": p.vswitch_bridge, "nic_ports": userspace.NIC_PORTS[scenario.model],
                               "pod_ports": userspace.POD_PORT_WHAT[userspace.POD_PORTS[scenario.model]]}
        elif dpdk and userspace.NIC_PORTS[scenario.model] == "vpp":
            info["vswitch"] = {"kind": "vpp", "run_by": "the node (never installed by nfvlab)",
                               "bridge_id": p.vpp_bridge_id}
        objects = render.manifests(scenario, p, run_id, tg_macs, core_plan)
        problems = [x for m in objects for x in render.validate(m, p)]
        if problems:
            raise LabError(f"rendered manifest invalid: {problems[0]}")
        # The noisy neighbour comes once pod1 runs, on pod1's node (self._noisy).
        ready = self._apply([o for o in objects if o["metadata"]["name"] != "noisy"], st.namespace)
        placed = {}
        for name, t in ready.items():
            if name == userspace.VSWITCH_POD:
                info["vswitch"]["create_to_ready_s"] = t["pod_create_to_ready_s"]
                continue
            node = t["pod"]["spec"].get("nodeName")
            if p.cabling == "local" and node != p.node:
                raise LabError(f"{name} was placed on {node}, but with cabling local the NIC ports "
                               f"{', '.join(p.nics)} are on {p.node}: narrow kubernetes.placement.{name}")
            placed[name] = {"node": node, "node_selector": t["pod"]["spec"]["nodeSelector"],
                          "create_to_ready_s": t["pod_create_to_ready_s"],
                          "create_to_interfaces_s": t["pod_create_to_interfaces_s"]}
        chain = render.chains(scenario)[0]
        if ovs:
            info["flows"] = pods.cross_connect(p, scenario.model, run_id, chain)
        if routed:
            macs = {side: pods.port_mac(ready["pod1"]["pod"], side) for side in (0, 1)}
            with signals.deferred():
                links = node_routing.route_to_pod(p.nics, macs)
            signals.checkpoint()
            info["node_routing"] = {"nic_addresses": dict(zip(p.nics, render.NODE_NIC_IP.values())),
                                    "pod_links": links, "rules": st.host_rules,
                                    "sysctls": node_routing.SYSCTLS}
        pod, timings = ready["pod1"]["pod"], {k: v for k, v in ready["pod1"].items() if k != "pod"}
        node = pod["spec"].get("nodeName")
        if scenario.resources.noisy_load_pct is not None:
            placed["noisy"] = self._noisy(scenario, st, node)
        info.update(timings, setup_s=round(time.monotonic() - t0, 3), chains=render.chains(scenario),
                    networks=render.network_names(scenario, p, run_id),
                    nads=[json.loads(m["spec"]["config"]) for m in objects
                          if m["kind"] == "NetworkAttachmentDefinition"],
                    placement={name: d["node"] for name, d in placed.items()},
                    pods=placed, qos_class=pod.get("status", {}).get("qosClass"),
                    node_labels=self.labels_of(node),
                    kubelet=self.kubelet_policies(node))
        if p.cni_conf_dir:
            info["node_cni_conf"] = cni_conf(p.cni_conf_dir)
        if streams_ports is None:
            streams_ports = [Port("generator", "0"), Port("generator", "1")]
        tx = streams_ports
        # Frames enter the chain at its first pod's eth1 and, the other way, at its last pod's eth2
        # (a DPDK pod's socket ports and VFs are no netdevs: their MACs are the forwarder's plan; a port
        # on the pod's own netdev, af_packet or af_xdp, has the netdev's).
        if routed:  # the generator's gateway is the node (its NIC ports), which routes to the pod
            first, last = nl.mac(None, p.nics[0]), nl.mac(None, p.nics[1])
        else:
            first, last = (pods.port_mac(ready[name]["pod"], side) if not dpdk or userspace.port_kind(
                scenario.model, chain, name, side) in pods.NETDEV_PORTS else forwarder.pod_mac(int(name[3:]), side)
                for name, side in ((chain[0], 0), (chain[-1], 1)))
        streams = [Stream(tx[0], tx[1], tg_macs[0], first, *default_ips(0)),
                   Stream(tx[1], tx[0], tg_macs[1], last, *default_ips(1))]
        noisy = scenario.resources.noisy_load_pct is not None
        busy = (core_plan.busy_roles(noisy=noisy) if core_plan
                else {"noisy neighbour": frozenset()} if noisy else {})
        yield LabSession(streams=streams, info=info, busy_roles=busy)

    def _noisy(self, scenario: Scenario, st: RunState, node: str) -> dict:
        """The noisy neighbour, created once pod1 runs, on pod1's node (unless ``placement.noisy``)."""
        from kubernetes import client

        obj = render.noisy_pod(scenario, self.params, st.run_id, node)
        problems = render.validate(obj, self.params)
        if problems:
            raise LabError(f"rendered manifest invalid: {problems[0]}")
        created = time.monotonic()
        client.CoreV1Api(self.api()).create_namespaced_pod(st.namespace, obj)
        t = self._wait_ready(st.namespace, "noisy", created, interfaces=False)
        return {"node": t["pod"]["spec"].get("nodeName"), "node_selector": obj["spec"]["nodeSelector"],
                "create_to_ready_s": t["pod_create_to_ready_s"], "load_pct": scenario.resources.noisy_load_pct,
                "qos_class": t["pod"].get("status", {}).get("qosClass")}

    def _cable(self, st: RunState, mtu: int) -> tuple[list[Port], list[str]]:
        """Generator namespace tg0/tg1 cabled by veths to the node NIC ports ``nics`` (this host)."""
        p = self.params
        st.tg_netns = f"{PREFIX}{st.run_id}-tg"
        st.host_links = list(p.nics)
        st.save()
        # Netlink calls run with signals held: pyroute2 interrupted inside its asyncio loop can hang
        # the next call (teardown's), and a namespace must not appear after teardown looked.
        with signals.deferred():
            nl.create_namespace(st.tg_netns)
            for side, nic in enumerate(p.nics):
                nl.veth(None, nic, st.tg_netns, f"tg{side}", mtu)
            macs = [nl.mac(st.tg_netns, "tg0"), nl.mac(st.tg_netns, "tg1")]
        signals.checkpoint()
        return [Port(st.tg_netns, "tg0"), Port(st.tg_netns, "tg1")], macs

    def _apply(self, objects: list[dict], namespace: str) -> dict[str, dict]:
        """Create ``objects`` in order, then wait for every pod: pod name -> :meth:`_wait_ready`'s dict."""
        from kubernetes import client, utils

        api = self.api()
        core = client.CoreV1Api(api)
        custom = client.CustomObjectsApi(api)
        created: dict[str, float] = {}
        vswitch = None
        for obj in objects:
            signals.checkpoint()  # between creations: a swallowed signal stops here
            if obj["kind"] == "Namespace":
                core.create_namespace(obj)
            elif obj["kind"] == "NetworkAttachmentDefinition":
                cfg = json.loads(obj["spec"]["config"])
                if obj["metadata"]["name"].startswith("link") and cfg["type"] == "bridge":
                    # The bridge CNI makes a chain link's bridge on the node but never removes it.
                    if self.params.cabling == "local" and cfg["bridge"] not in self._run.host_links:
                        self._run.host_links.append(cfg["bridge"])
                        self._run.save()
                elif self.params.cabling == "local" and cfg["type"] == "bridge":
                    self._node_bridge(obj)
                custom.create_namespaced_custom_object("k8s.cni.cncf.io", "v1", namespace,
                                                       "network-attachment-definitions", obj)
            elif obj["kind"] == "Pod" and obj["metadata"]["name"] == userspace.VSWITCH_POD:
                # The vSwitch serves the DPDK pods' CNI calls: Ready before they are created.
                t = time.monotonic()
                core.create_namespaced_pod(namespace, obj)
                vswitch = self._wait_ready(namespace, userspace.VSWITCH_POD, t, interfaces=False)
            elif obj["kind"] == "Pod":
                created[obj["metadata"]["name"]] = time.monotonic()
                core.create_namespaced_pod(namespace, obj)
            else:
                utils.create_from_dict(api, obj)
        ready = {name: self._wait_ready(namespace, name, t) for name, t in created.items()}
        return {userspace.VSWITCH_POD: vswitch, **ready} if vswitch is not None else ready

    def _wait_ready(self, namespace: str, name: str, created: float, interfaces: bool = True) -> dict:
        """:func:`.pods.wait_ready` within the profile's ``ready_timeout_s``."""
        return pods.wait_ready(self.api(), namespace, name, created, self.params.ready_timeout_s, interfaces)

    def _node_bridge(self, nad: dict) -> None:
        """linux-bridge, local cabling: the bridge the NAD names, with the NIC port on it."""
        cfg = json.loads(nad["spec"]["config"])
        side = int(nad["metadata"]["name"].rsplit("-", 1)[1])
        self._run.host_links.append(cfg["bridge"])
        self._run.save()
        with signals.deferred():  # as in _cable
            nl.bridge(None, cfg["bridge"], [self.params.nics[side]], self.link_mtu)
        signals.checkpoint()

    def _teardown(self, st: RunState, placed: dict) -> float:
        t0 = time.monotonic()
        delete_s: dict[str, float] = {}
        errors = delete_run(st, pod_delete_s=delete_s, wait_namespace=False)
        for name, s in delete_s.items():
            if name in placed:
                placed[name]["delete_s"] = s
        if errors:
            raise LabError("teardown incomplete (`nfvlab lab clean` retries): " + "; ".join(errors))
        return round(time.monotonic() - t0, 3)
