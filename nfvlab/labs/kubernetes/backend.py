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

With ``cabling: local`` the node is this host: nfvlab creates the generator's
namespace here (``nfvl-<id>-tg``, ports ``tg0``/``tg1``) cabled by veths to the
node's NIC ports ``nics`` (created by nfvlab, removed at teardown), and the
embedded generator drives them. With ``cabling: external`` the generator (TRex)
is wired to ``nics``.
"""
from __future__ import annotations

import glob
import json
import os
import secrets
import shutil
import socket
import subprocess
import time
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterator, Optional

from nfvlab.labs import forwarder
from nfvlab.labs.base import LabError, LabSession, Terminated
from nfvlab.labs.kubernetes import node_routing, render, userspace
from nfvlab.params import LabParams
from nfvlab.scenario import CorePlan, Port, Scenario, Stream
from nfvlab.scenario.resources import NotRealizable, plan
from nfvlab.scenario.topology import default_ips
from nfvlab.system import netns as nl
from nfvlab.system import signals
from nfvlab.system.files import write_json_atomic
from nfvlab.system.hostlock import HostLock, process_start_time, run_dir

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


def _client(kubeconfig: Optional[str], context: Optional[str]):
    from kubernetes import client, config

    cfg = client.Configuration()
    if kubeconfig and not Path(kubeconfig).expanduser().is_file():
        # The client would only say "No configuration found"; name the file (for the local
        # cluster it appears with `nfvlab cluster up`).
        raise LabError(f"kubernetes.kubeconfig {kubeconfig}: no such file (is the cluster up?)")
    config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=cfg)
    return client.ApiClient(cfg)


def _reason(err: Exception) -> str:
    body = getattr(err, "body", None)
    try:
        return json.loads(body)["message"]
    except (TypeError, ValueError, KeyError):
        return str(err).splitlines()[0] if str(err) else type(err).__name__


#: DPDK pod port kinds on a netdev of the pod's own (af_packet, af_xdp): its MAC is the netdev's.
NETDEV_PORTS = ("direct", "afxdp", "veth")
#: The DPDK pods' port kind -> the CNI binary its NADs call (in the node's CNI bin directory), its name.
CNI_BINARIES = {"vhostuser": ("userspace", "Userspace CNI"), "vpp-memif": ("userspace", "Userspace CNI"),
                "veth": ("ovs", "OVS CNI"), "afxdp": ("afxdp", "AF_XDP CNI")}


class KubernetesLab:
    """A lab backend on a Kubernetes cluster (see the module docstring)."""

    kind = "kubernetes"

    def __init__(self, lab: LabParams) -> None:
        if lab.kubernetes is None:
            raise LabError("lab kind kubernetes needs a kubernetes: block in the lab profile")
        self.params = lab.kubernetes
        self.link_mtu = lab.mtu
        self._api = None
        self._node: Optional[dict] = None
        self._run: Optional[RunState] = None
        # Cluster facts and verdicts, read once per backend: open() reuses what check() found.
        self._nodes: dict[tuple, list[dict]] = {}
        self._kubelet: dict[str, dict] = {}
        self._cni: Optional[dict] = None
        self._ready: Optional[list[str]] = None
        self._checked: dict[Scenario, list[str]] = {}

    # -- cluster facts (read-only) ------------------------------------------------------------------
    def api(self):
        if self._api is None:
            self._api = _client(self.params.kubeconfig, self.params.context)
        return self._api

    def _core(self):
        from kubernetes import client

        return client.CoreV1Api(self.api())

    def node(self) -> dict:
        if self._node is None:
            self._node = self.api().sanitize_for_serialization(self._core().read_node(self.params.node))
        return self._node

    def kubelet_config(self, node: Optional[str] = None) -> dict:
        """A node's kubelet configuration (``/configz``; default: ``node``), or {} when not readable."""
        node = node or self.params.node
        if node not in self._kubelet:
            try:
                raw = self.api().call_api(f"/api/v1/nodes/{node}/proxy/configz", "GET",
                                          auth_settings=["BearerToken"], _preload_content=False,
                                          response_type=None)
                data = raw[0] if isinstance(raw, tuple) else raw
                self._kubelet[node] = json.loads(data.data).get("kubeletconfig", {})
            except Exception:
                self._kubelet[node] = {}
        return self._kubelet[node]

    def nodes_for(self, pod_name: str, node: Optional[str] = None) -> list[dict]:
        """Ready nodes pod ``pod_name`` may go to: its node selector matches, no untolerated taint."""
        sel = render.node_selector(self.params, pod_name, node)
        key = tuple(sorted(sel.items()))
        if key not in self._nodes:
            found = self._core().list_node(label_selector=",".join(f"{k}={v}" for k, v in sorted(sel.items())))
            self._nodes[key] = [n for n in map(self.api().sanitize_for_serialization, found.items)
                                if _node_ready(n) and not _untolerated(n, self.params.tolerations)]
        return self._nodes[key]

    def primary_cni(self) -> dict:
        """The cluster's primary CNI, detected from what it installs (never installed by nfvlab).

        Returns
        -------
        dict
            ``name`` (``cilium``, ``calico``, ``calico-vpp`` or None), ``ebpf`` (its data path is
            eBPF), ``evidence`` (the objects it was read from), ``version`` (an image tag, if seen).
        """
        if self._cni is None:
            self._cni = detect_primary_cni(self.api())
        return self._cni

    def ready(self) -> list[str]:
        if self._ready is None:
            self._ready = self._ready_reasons()
        return self._ready

    def _ready_reasons(self) -> list[str]:
        p = self.params
        try:
            from kubernetes import client

            client.VersionApi(self.api()).get_code()
        except Exception as err:
            return [f"Kubernetes API not reachable ({p.kubeconfig or 'default kubeconfig'}): {_reason(err)}"]
        try:
            node = self.node()
        except Exception as err:
            return [f"kubernetes.node {p.node!r}: {_reason(err)}"]
        conds = {c["type"]: c["status"] for c in node.get("status", {}).get("conditions", [])}
        if conds.get("Ready") != "True":
            return [f"kubernetes.node {p.node!r} is not Ready"]
        try:
            from kubernetes import client

            client.ApiextensionsV1Api(self.api()).read_custom_resource_definition(
                "network-attachment-definitions.k8s.cni.cncf.io")
        except Exception:
            return ["the cluster has no NetworkAttachmentDefinition CRD: install Multus (docs/kubernetes.md)"]
        if p.cabling == "local":
            if os.geteuid() != 0:
                return ["kubernetes cabling local needs root (the generator's namespace and veths)"]
            taken = [n for n in p.nics if nl.link_exists(None, n)]
            if taken:
                return [f"kubernetes.nics: {', '.join(taken)} exist already on this host; with cabling "
                        "local nfvlab creates them: name free interface names"]
        return []

    def check(self, scenario: Scenario) -> list[str]:
        """Why this cluster cannot realize ``scenario``, each reason read once as
        ``model M cannot run on this cluster: why`` (the caller says "not realizable")."""
        if scenario not in self._checked:
            try:
                why = self._static_reasons(scenario) or self._cluster_reasons(scenario)
            except Exception as err:
                why = [f"kubernetes.node {self.params.node!r}: {_reason(err)}"]
            else:
                why = [f"{scenario.label} cannot run on this cluster: {w}" for w in why]
            self._checked[scenario] = why
        return self._checked[scenario]

    def _static_reasons(self, scenario: Scenario) -> list[str]:
        """What the profile alone rules out (no cluster call)."""
        p, model, res = self.params, scenario.model, scenario.resources
        why = []
        if render.dpdk_pods(scenario, p):
            return why + self._userspace_reasons(scenario)
        if model in render.EBPF_MODELS:
            pass  # decided by the primary CNI (cluster facts)
        elif not render.renders(scenario, p):
            because = f": {render.NOT_RENDERED_WHY[model]}" if model in render.NOT_RENDERED_WHY else ""
            why.append(f"it needs secondary networks nfvlab does not render{because} (name two "
                       f"NetworkAttachmentDefinitions the cluster has in kubernetes.networks.{model})")
        if model == "linux-bridge" and p.cabling != "local" and model not in p.networks:
            why.append("linux-bridge needs the node's NIC ports on a bridge; nfvlab wires that only with "
                       "cabling local (else name NADs in kubernetes.networks)")
        if render.routed(scenario, p) and p.cabling != "local":
            why.append("host-routing needs the node to route between its NIC ports and the pod's links (policy "
                       "rules per NIC port); nfvlab sets that up only with cabling local (else name NADs in "
                       "kubernetes.networks)")
        if scenario.density is not None:
            why += render.density_reasons(scenario, p)
        if res.noisy_load_pct is not None and not p.noisy_image:
            why.append("the noisy neighbour needs an image with stress-ng (kubernetes.noisy_image)")
        if res.pcdr4sw != "1:1" or res.pcdr4nf != "1:1":
            why.append("core ratios need user-space NFs")
        return why

    def _userspace_reasons(self, scenario: Scenario) -> list[str]:
        """What rules out a user-space model before the cluster is asked: the local node's vSwitch,
        the Userspace CNI on the node, the core plan (docs/core-plan.md)."""
        p, model, res = self.params, scenario.model, scenario.resources
        if p.cabling == "local" and model in userspace.LOCAL_WHY:
            return [userspace.LOCAL_WHY[model]]
        if p.cabling != "local" and userspace.runs_ovs(model):
            return [f"{model}'s vhost-user ports are cross-connected on the node's OVS-DPDK by flows nfvlab "
                    "programs only on a vSwitch it runs (cabling local); on a real cluster the vSwitch and its "
                    "flows are the node's own (nfvlab lab render prints the NADs and DPDK pods)"]
        why = []
        if scenario.density is not None:
            why += render.density_reasons(scenario, p)
        cni = CNI_BINARIES.get(userspace.POD_PORTS[model])
        bin_dir = Path(p.cni_conf_dir).parent / "bin" if p.cni_conf_dir else None
        if cni and bin_dir and not (bin_dir / cni[0]).exists():
            why.append(f"the node's CNI bin directory ({bin_dir}) has no {cni[1]} "
                       f"(scripts/k8s/cni-{cni[0]}.sh builds it; `nfvlab cluster up` installs it)")
        if userspace.POD_PORTS[model] == "afxdp" and p.cabling == "local" and p.afxdp_resource:
            why.append(userspace.AFXDP_POOL_WHY)
        if p.cabling == "local" and userspace.runs_ovs(model):  # nfvlab's vSwitch on this host
            taps = [t for t in userspace.ovs_taps(p) if nl.link_exists(None, t)]
            if taps:
                why.append(f"links {', '.join(taps)} exist on this host (an OVS userspace datapath's persistent "
                           "taps): nfvlab's vSwitch would take them over and its teardown delete them; remove "
                           "them (ip link del) if no OVS of yours uses them")
            if _socket_answers(Path(userspace.OVS_RUNDIR) / "db.sock"):
                why.append(f"an OVS already runs on the node ({userspace.OVS_RUNDIR}/db.sock answers): nfvlab "
                           "runs the local node's vSwitch itself and never shares one")
        if res.noisy_load_pct is not None and not p.noisy_image:
            why.append("the noisy neighbour needs an image with stress-ng (kubernetes.noisy_image)")
        try:
            self.core_plan(scenario)
        except NotRealizable as err:
            why.append(str(err))
        return why

    def core_plan(self, scenario: Scenario) -> Optional[CorePlan]:
        """The embedded lab's core plan on the local node (this host), for a model with busy-polling
        pods; None where nothing is placed (kernel pods, or the node is not this host)."""
        spec = scenario.spec
        if self.params.cabling != "local" or not (spec.vswitch or spec.busy_pods):
            return None
        cpus = tuple(sorted(os.sched_getaffinity(0)))
        return plan(vswitch=spec.vswitch, busy_pods=spec.busy_pods, resources=scenario.resources,
                    cpus=cpus, nodes={0: cpus})

    def _cluster_reasons(self, scenario: Scenario) -> list[str]:
        """What the cluster lacks: networks, a primary CNI, nodes with the resources, kubelet policies."""
        p, model, res = self.params, scenario.model, scenario.resources
        why = []
        if model in render.EBPF_MODELS:
            cni = self.primary_cni()
            if not cni["ebpf"]:
                why.append(f"{model} is the cluster's primary CNI in eBPF mode (Cilium, Calico eBPF), "
                           f"detected, never installed; found {cni['name'] or 'none'} ({cni['evidence']})")
            elif model not in p.networks:
                why.append(f"the primary CNI {cni['name']} is eBPF, but nfvlab drives traffic through two "
                           f"secondary interfaces: name the NADs that reach the pod in kubernetes.networks.{model}")
        if render.calico_vpp_memif(scenario, p):
            cni = self.primary_cni()
            why.append("the Calico/VPP memif pod renders (nfvlab lab render), but "
                       + (f"the primary CNI is {cni['name'] or 'not detected'} ({cni['evidence']}), not calico-vpp"
                          if cni["name"] != "calico-vpp" else
                          "nfvlab drives traffic through secondary interfaces eth1/eth2, not the memif"))
        for ref in p.networks.get(model, []):
            missing = self._missing_nad(ref)
            if missing:
                why.append(missing)
        if why:
            return why
        nodes = self.nodes_for("pod1")
        sel = render.node_selector(p, "pod1")
        if not nodes:
            return [f"no Ready node without an untolerated taint matches {_selector(sel)}"]
        if p.cabling == "local" and p.node not in [n["metadata"]["name"] for n in nodes]:
            return [f"with cabling local the NIC ports are on {p.node}, which the {_selector(sel)} does not "
                    f"select (it selects {', '.join(n['metadata']['name'] for n in nodes)})"]
        need = render.pod_requests(scenario, p)
        fits, lacks = [], []
        for n in nodes:
            alloc = n.get("status", {}).get("allocatable", {})
            short = [f"{alloc.get(r, 0)} allocatable {r} (a pod needs {q})" for r, q in need.items()
                     if _quantity(alloc.get(r, "0")) < _quantity(q)]
            (lacks.append(f"node {n['metadata']['name']} has " + ", ".join(short)) if short
             else fits.append(n))
        if not fits:
            return lacks
        if render.guaranteed(scenario):
            fits = [n for n in fits if self.kubelet_config(n["metadata"]["name"]).get("cpuManagerPolicy") == "static"]
            if not fits:
                names = ", ".join(n["metadata"]["name"] for n in nodes)
                policy = self.kubelet_config(nodes[0]["metadata"]["name"]).get("cpuManagerPolicy")
                return [f"{'exclusive pinning' if res.pinning == 'exclusive' else 'a NUMA scenario'} needs "
                        f"the static CPU manager on {names} (kubelet cpuManagerPolicy: {policy or 'not readable'})"]
        if res.numa != "s1":
            why += self._numa_reasons(res.numa, fits)
        if res.noisy_load_pct is not None and "noisy" in p.placement and not self.nodes_for("noisy"):
            why.append(f"no Ready node matches the noisy neighbour's {_selector(render.node_selector(p, 'noisy'))}")
        return why

    def _missing_nad(self, ref: str) -> Optional[str]:
        from kubernetes import client
        from kubernetes.client.rest import ApiException

        ns, _, name = ref.rpartition("/")
        try:
            client.CustomObjectsApi(self.api()).get_namespaced_custom_object(
                "k8s.cni.cncf.io", "v1", ns or "default", "network-attachment-definitions", name)
        except ApiException as err:
            if err.status == 404:
                return f"the cluster has no NetworkAttachmentDefinition {ns or 'default'}/{name}"
            raise
        return None

    def _numa_reasons(self, numa: str, nodes: list[dict]) -> list[str]:
        """A NUMA scenario needs the Topology Manager aligning CPUs and devices and 2+ NUMA nodes."""
        out = []
        for n in nodes:
            name = n["metadata"]["name"]
            policy = self.kubelet_config(name).get("topologyManagerPolicy")
            count, source = self.numa_nodes(n)
            if policy not in ("single-numa-node", "restricted"):
                out.append(f"NUMA scenario {numa} needs the Topology Manager policy single-numa-node or "
                           f"restricted on {name} (kubelet topologyManagerPolicy: {policy or 'not readable'})")
            elif count is None:
                out.append(f"NUMA scenario {numa} needs 2+ NUMA nodes; {name}'s NUMA count is not knowable "
                           "(label it feature.node.kubernetes.io/memory-numa=true, as node-feature-discovery does)")
            elif count < 2:
                out.append(f"NUMA scenario {numa} needs 2+ NUMA nodes; {name} has {count} ({source})")
            else:
                return []
        return out[:1]

    def numa_nodes(self, node: dict) -> tuple[Optional[int], str]:
        """NUMA nodes of ``node`` and where that was read: this host's sysfs when the node is this
        host (local cabling), node-feature-discovery's ``memory-numa`` label (2+), else unknown."""
        if self.params.cabling == "local" and node["metadata"]["name"] == self.params.node:
            return len(list(Path("/sys/devices/system/node").glob("node[0-9]*"))), "/sys/devices/system/node"
        if node["metadata"].get("labels", {}).get("feature.node.kubernetes.io/memory-numa") == "true":
            return 2, "label feature.node.kubernetes.io/memory-numa=true"
        return None, "unknown"

    def mtu(self, scenario: Scenario) -> int:
        """IP MTU of the scenario's data path: the profile's, at most what a user-space model's
        DPDK NIC ports carry (1500)."""
        return min(self.link_mtu, userspace.MTU) if render.dpdk_pods(scenario, self.params) else self.link_mtu

    def describe(self) -> dict:
        out: dict = {"lab_kind": self.kind, "node": self.params.node, "cabling": self.params.cabling}
        try:
            from kubernetes import client

            out["server_version"] = client.VersionApi(self.api()).get_code().git_version
            info = self.node().get("status", {}).get("nodeInfo", {})
            out["node_info"] = {k: info.get(k) for k in ("osImage", "kernelVersion", "containerRuntimeVersion",
                                                          "kubeletVersion", "architecture")}
            out["kubelet"] = self._kubelet_policies(self.params.node)
            out["primary_cni"] = self.primary_cni()
            out["placement_config"] = {k: v.model_dump(exclude_defaults=True)
                                       for k, v in self.params.placement.items()}
            if self.params.cni_conf_dir:
                out["node_cni_conf"] = cni_conf(self.params.cni_conf_dir)
        except Exception as err:  # provenance never fails a run
            out["error"] = _reason(err)
        return out

    def _kubelet_policies(self, node: str) -> dict:
        kc = self.kubelet_config(node)
        return {k: kc.get(k) for k in ("cpuManagerPolicy", "topologyManagerPolicy", "topologyManagerScope",
                                       "memoryManagerPolicy", "reservedSystemCPUs", "allowedUnsafeSysctls")}

    # -- a run ----------------------------------------------------------------------------------------
    @contextmanager
    def open(self, scenario: Scenario) -> Iterator[LabSession]:
        reasons = self.ready() or self.check(scenario)  # cached: the caller's check() is not repeated
        if reasons:
            raise LabError(reasons[0])
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
        pods = {}
        for name, t in ready.items():
            if name == userspace.VSWITCH_POD:
                info["vswitch"]["create_to_ready_s"] = t["pod_create_to_ready_s"]
                continue
            node = t["pod"]["spec"].get("nodeName")
            if p.cabling == "local" and node != p.node:
                raise LabError(f"{name} was placed on {node}, but with cabling local the NIC ports "
                               f"{', '.join(p.nics)} are on {p.node}: narrow kubernetes.placement.{name}")
            pods[name] = {"node": node, "node_selector": t["pod"]["spec"]["nodeSelector"],
                          "create_to_ready_s": t["pod_create_to_ready_s"],
                          "create_to_interfaces_s": t["pod_create_to_interfaces_s"]}
        chain = render.chains(scenario)[0]
        if ovs:
            info["flows"] = self._cross_connect(scenario, run_id, chain)
        if routed:
            macs = {side: _port_mac(ready["pod1"]["pod"], side) for side in (0, 1)}
            with signals.deferred():
                links = node_routing.route_to_pod(p.nics, macs)
            signals.checkpoint()
            info["node_routing"] = {"nic_addresses": dict(zip(p.nics, render.NODE_NIC_IP.values())),
                                    "pod_links": links, "rules": st.host_rules,
                                    "sysctls": node_routing.SYSCTLS}
        pod, timings = ready["pod1"]["pod"], {k: v for k, v in ready["pod1"].items() if k != "pod"}
        node = pod["spec"].get("nodeName")
        if scenario.resources.noisy_load_pct is not None:
            pods["noisy"] = self._noisy(scenario, st, node)
        info.update(timings, setup_s=round(time.monotonic() - t0, 3), chains=render.chains(scenario),
                    networks=render.network_names(scenario, p, run_id),
                    nads=[json.loads(m["spec"]["config"]) for m in objects
                          if m["kind"] == "NetworkAttachmentDefinition"],
                    placement={name: d["node"] for name, d in pods.items()},
                    pods=pods, qos_class=pod.get("status", {}).get("qosClass"),
                    node_labels=self._labels_of(node),
                    kubelet=self._kubelet_policies(node))
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
            first, last = (_port_mac(ready[name]["pod"], side)
                           if not dpdk or userspace.port_kind(scenario.model, chain, name, side) in NETDEV_PORTS
                           else forwarder.pod_mac(int(name[3:]), side)
                           for name, side in ((chain[0], 0), (chain[-1], 1)))
        streams = [Stream(tx[0], tx[1], tg_macs[0], first, *default_ips(0)),
                   Stream(tx[1], tx[0], tg_macs[1], last, *default_ips(1))]
        noisy = scenario.resources.noisy_load_pct is not None
        busy = (core_plan.busy_roles(noisy=noisy) if core_plan
                else {"noisy neighbour": frozenset()} if noisy else {})
        yield LabSession(streams=streams, info=info, busy_roles=busy)

    def _labels_of(self, node: Optional[str]) -> dict:
        """The labels of the node a pod went to (what label placement matched against)."""
        try:
            return dict(self._core().read_node(node).metadata.labels or {}) if node else {}
        except Exception as err:  # provenance never fails a run
            return {"error": _reason(err)}

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

    def _cross_connect(self, scenario: Scenario, run_id: str, chain: list[str]) -> list[str]:
        """Port-to-port flows on the local vSwitch's bridge (CSIT's xconnect), both ways per link, once
        every DPDK pod forwards (so the vhost-user ports the CNI added exist). Returns the flows."""
        br = self.params.vswitch_bridge
        flows = []
        for a, b in userspace.cross_connects(scenario.model, self.params, run_id, chain):
            pa, pb = (_ofport(x) for x in (a, b))
            for src, dst in ((pa, pb), (pb, pa)):
                flow = f"in_port={src},actions=output:{dst}"
                _ovs("ovs-ofctl", "add-flow", br, flow)
                flows.append(flow)
        return flows

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

    def _node_bridge(self, nad: dict) -> None:
        """linux-bridge, local cabling: the bridge the NAD names, with the NIC port on it."""
        cfg = json.loads(nad["spec"]["config"])
        side = int(nad["metadata"]["name"].rsplit("-", 1)[1])
        self._run.host_links.append(cfg["bridge"])
        self._run.save()
        with signals.deferred():  # as in _cable
            nl.bridge(None, cfg["bridge"], [self.params.nics[side]], self.link_mtu)
        signals.checkpoint()

    def _wait_ready(self, namespace: str, name: str, created: float, interfaces: bool = True) -> dict:
        from kubernetes import client

        core = client.CoreV1Api(self.api())
        deadline = created + self.params.ready_timeout_s
        attached = None if interfaces else created
        while True:
            pod = self.api().sanitize_for_serialization(core.read_namespaced_pod(name, namespace))
            ann = pod["metadata"].get("annotations", {})
            if attached is None and render.STATUS_ANNOTATION in ann:
                attached = time.monotonic()
            conds = {c["type"]: c for c in pod.get("status", {}).get("conditions", [])}
            if conds.get("Ready", {}).get("status") == "True" and attached is not None:
                now = time.monotonic()
                return {"pod": pod, "pod_create_to_ready_s": round(now - created, 3),
                        "pod_create_to_interfaces_s": round(attached - created, 3)}
            phase = pod.get("status", {}).get("phase")
            ended = any((cs.get("state") or {}).get("terminated")
                        for cs in pod.get("status", {}).get("containerStatuses") or [])
            if phase in ("Failed", "Succeeded") or ended or time.monotonic() > deadline:
                raise LabError(f"pod {namespace}/{name} not Ready after "
                               f"{self.params.ready_timeout_s:g} s: {_why_not_ready(core, pod)}")
            signals.checkpoint()
            time.sleep(0.1)

    def _teardown(self, st: RunState, pods: dict) -> float:
        t0 = time.monotonic()
        delete_s: dict[str, float] = {}
        errors = delete_run(st, pod_delete_s=delete_s)
        for name, s in delete_s.items():
            if name in pods:
                pods[name]["delete_s"] = s
        if errors:
            raise LabError("teardown incomplete (`nfvlab lab clean` retries): " + "; ".join(errors))
        return round(time.monotonic() - t0, 3)


def _ofport(port: str | int) -> str:
    """The OpenFlow port of a vSwitch port named ``port``, or of the port that asked for number ``port``
    (the OVS CNI's veth: checked, since a port OVS could not give that number gets another)."""
    if isinstance(port, str):
        return _ovs("ovs-vsctl", "--timeout=10", "get", "Interface", port, "ofport")
    got = _ovs("ovs-vsctl", "--timeout=10", "--bare", "--columns=ofport", "find", "Interface",
               f"ofport_request={port}").split()
    if got != [str(port)]:
        raise LabError(f"no vSwitch port has OpenFlow port {port} (the OVS CNI's ofport_request): {got}")
    return str(port)


def _socket_answers(path: Path) -> bool:
    """Does a server listen on the unix socket ``path``?"""
    if not path.exists():
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(1.0)
        try:
            s.connect(str(path))
        except OSError:
            return False
    return True


def _ovs(*argv: str) -> str:
    """An OVS tool on this host against the local node's vSwitch (its default database and bridge
    sockets in /var/run/openvswitch); LabError with its message on failure."""
    out = subprocess.run(list(argv), capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        raise LabError(f"{' '.join(argv)}: {out.stderr.strip()}")
    return out.stdout.strip().strip('"')


def _quantity(q: str) -> float:
    """Bytes of a Kubernetes quantity such as ``64Mi`` or ``1Gi`` (0 if unparseable)."""
    units = {"Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "k": 1e3, "M": 1e6, "G": 1e9}
    q = str(q)
    for u, f in units.items():
        if q.endswith(u):
            try:
                return float(q[: -len(u)]) * f
            except ValueError:
                return 0.0
    try:
        return float(q)
    except ValueError:
        return 0.0


def _port_mac(pod: dict, side: int) -> str:
    """The MAC of ``pod``'s port ``side``: its ``eth1``/``eth2``, or the network it asked for as that
    interface (the AF_XDP CNI keeps the netdev's own name)."""
    status = json.loads(pod["metadata"]["annotations"][render.STATUS_ANNOTATION])
    ifname = f"eth{side + 1}"
    asked = {n["interface"]: f"{n['namespace']}/{n['name']}"
             for n in json.loads(pod["metadata"]["annotations"].get(render.NETWORKS_ANNOTATION, "[]"))}
    for s in status:
        if s.get("mac") and (s.get("interface") == ifname or s.get("name") == asked.get(ifname)):
            return s["mac"]
    raise LabError(f"pod {pod['metadata']['name']}: no MAC for {ifname} in its network status")


#: Lines of a failed pod's log in its error (a DPDK app's reason is a few lines above its exit).
LOG_LINES = 6


def _why_not_ready(core, pod: dict) -> str:
    """The most telling reason: a scheduler condition, a container waiting reason, or the last event."""
    st = pod.get("status", {})
    for c in st.get("conditions", []):
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            return c.get("message") or c.get("reason") or "not scheduled"
    for cs in st.get("containerStatuses", []) or []:
        state = cs.get("state") or {}
        w = state.get("waiting") or state.get("terminated")
        if w or (state.get("running") and not cs.get("ready")):
            why = f"{w.get('reason')}: {w.get('message') or ''}".strip(": ") if w else "running, not Ready"
            try:  # a failed (or stuck) start-up says why in its log
                log = core.read_namespaced_pod_log(pod["metadata"]["name"], pod["metadata"]["namespace"],
                                                   container=cs["name"], tail_lines=LOG_LINES)
                why += f" ({' | '.join(log.strip().splitlines())})" if log.strip() else ""
            except Exception:
                pass
            return why
    try:
        ev = core.list_namespaced_event(pod["metadata"]["namespace"],
                                        field_selector=f"involvedObject.name={pod['metadata']['name']}")
        if ev.items:
            last = sorted(ev.items, key=lambda e: str(e.last_timestamp or e.event_time or ""))[-1]
            return f"{last.reason}: {last.message}"
    except Exception:
        pass
    return f"phase {st.get('phase')}"


def delete_run(st: RunState, timeout_s: float = 60.0, pod_delete_s: Optional[dict] = None) -> list[str]:
    """Delete the run's namespace (waiting until it is gone), then its host links and generator namespace.

    With ``pod_delete_s``, the pods are deleted first, one request each, and the dict gets each
    pod's deletion time (delete request -> the API server no longer has it), seconds.
    """
    errors = []
    try:
        from kubernetes import client
        from kubernetes.client.rest import ApiException

        core = client.CoreV1Api(_client(st.kubeconfig, st.context))
        # Pods before the namespace, the vSwitch last: a DPDK pod's CNI DEL asks the vSwitch to
        # remove its port, which a vSwitch already gone cannot answer.
        _delete_pods(core, st.namespace, pod_delete_s if pod_delete_s is not None else {}, timeout_s)
        try:
            core.delete_namespace(st.namespace, grace_period_seconds=0, propagation_policy="Foreground")
        except ApiException as err:
            if err.status != 404:
                raise
        deadline = time.monotonic() + timeout_s
        while True:
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
        errors.append(f"namespace {st.namespace}: {_reason(err)}")
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


def _node_ready(node: dict) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in node.get("status", {}).get("conditions", []))


def _untolerated(node: dict, tolerations: list[dict]) -> bool:
    """Has ``node`` a NoSchedule/NoExecute taint none of ``tolerations`` tolerates?"""
    def tolerates(t: dict, taint: dict) -> bool:
        if t.get("effect") and t["effect"] != taint.get("effect"):
            return False
        if t.get("operator") == "Exists":
            return not t.get("key") or t["key"] == taint.get("key")
        return t.get("key") == taint.get("key") and t.get("value", "") == taint.get("value", "")

    return any(taint.get("effect") in ("NoSchedule", "NoExecute") and not any(tolerates(t, taint) for t in tolerations)
               for taint in node.get("spec", {}).get("taints") or [])


def _selector(sel: dict) -> str:
    return "node selector " + ",".join(f"{k}={v}" for k, v in sorted(sel.items()))


def detect_primary_cni(api) -> dict:
    """The primary CNI from what it installs: Cilium's ``cilium-config`` ConfigMap (``kube-system``),
    Calico's ``calico-node`` DaemonSet (``FELIX_BPFENABLED``, else the default FelixConfiguration's
    ``bpfEnabled``), Calico/VPP's ``calico-vpp-node`` DaemonSet. See :meth:`KubernetesLab.primary_cni`."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    core, apps = client.CoreV1Api(api), client.AppsV1Api(api)

    def daemonset(name: str):
        items = apps.list_daemon_set_for_all_namespaces(field_selector=f"metadata.name={name}").items
        return items[0] if items else None

    def tag(ds) -> Optional[str]:
        image = ds.spec.template.spec.containers[0].image if ds is not None else ""
        return image.rsplit(":", 1)[1] if ":" in image.rsplit("/", 1)[-1] else None

    try:
        cm = core.read_namespaced_config_map("cilium-config", "kube-system")
        ds = daemonset("cilium")
        return {"name": "cilium", "ebpf": True, "version": tag(ds),
                "evidence": "ConfigMap kube-system/cilium-config"
                            + (f" (kube-proxy-replacement: {cm.data.get('kube-proxy-replacement')})"
                               if cm.data and cm.data.get("kube-proxy-replacement") else "")}
    except ApiException as err:
        if err.status != 404:
            raise
    vpp = daemonset("calico-vpp-node")
    if vpp is not None:
        return {"name": "calico-vpp", "ebpf": False, "version": tag(vpp),
                "evidence": f"DaemonSet {vpp.metadata.namespace}/calico-vpp-node"}
    ds = daemonset("calico-node")
    if ds is not None:
        env = {e.name: e.value for c in ds.spec.template.spec.containers for e in c.env or []}
        where = f"DaemonSet {ds.metadata.namespace}/calico-node"
        if "FELIX_BPFENABLED" in env:
            ebpf = str(env["FELIX_BPFENABLED"]).lower() == "true"
            where += f" FELIX_BPFENABLED={env['FELIX_BPFENABLED']}"
        else:
            try:
                felix = client.CustomObjectsApi(api).get_cluster_custom_object(
                    "crd.projectcalico.org", "v1", "felixconfigurations", "default")
                ebpf = bool(felix.get("spec", {}).get("bpfEnabled"))
                where += f", FelixConfiguration default bpfEnabled={ebpf}"
            except ApiException:
                ebpf = False
                where += " (no FELIX_BPFENABLED, no readable FelixConfiguration default)"
        return {"name": "calico", "ebpf": ebpf, "version": tag(ds), "evidence": where}
    return {"name": None, "ebpf": False, "version": None,
            "evidence": "no ConfigMap kube-system/cilium-config, no calico-node or calico-vpp-node DaemonSet"}


def cni_conf(conf_dir: str) -> dict:
    """The node's CNI configuration files (``*.conf``, ``*.conflist``, ``*.json``), parsed; or why
    they are not readable from here."""
    d = Path(conf_dir)
    try:
        files = sorted(f for f in d.iterdir() if f.suffix in (".conf", ".conflist", ".json"))
    except OSError as err:
        return {"error": f"{conf_dir}: {err.strerror}"}
    out = {}
    for f in files:
        try:
            out[f.name] = json.loads(f.read_text())
        except (OSError, ValueError) as err:
            out[f.name] = {"error": str(err)}
    return out


def nic_info(nic: str) -> dict:
    """Driver (``ethtool -i``) and offloads that can be switched (``ethtool -k``, not ``[fixed]``) of a
    node NIC port on this host; ``error`` when ethtool cannot say."""
    import subprocess

    try:
        drv = subprocess.run(["ethtool", "-i", nic], capture_output=True, text=True, timeout=5, check=False)
        off = subprocess.run(["ethtool", "-k", nic], capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        return {"error": f"ethtool: {err}"}
    if drv.returncode != 0:
        return {"error": f"{nic}: " + (drv.stderr.strip() or "ethtool -i failed").splitlines()[0]}
    info = dict(line.split(": ", 1) for line in drv.stdout.splitlines() if ": " in line)
    offloads = {}
    for line in off.stdout.splitlines()[1:]:
        name, _, state = line.strip().partition(": ")
        if state and "[fixed]" not in state:
            offloads[name] = state.split()[0]
    return {"driver": info.get("driver"), "version": info.get("version"),
            "firmware": info.get("firmware-version"), "bus": info.get("bus-info"), "offloads": offloads}


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
