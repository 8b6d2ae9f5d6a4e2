"""What rules a scenario out on a cluster, said in one line each before anything is created.

:meth:`Checks.check` reads first what the lab profile alone rules out (networks nfvlab does not
render, cabling, density cells, the DPDK pods' CNIs on the node, the local node's vSwitch and
core plan), then what the cluster lacks (a NAD, the primary CNI, a Ready node the placement
selects with the resources the pod requests, the kubelet's CPU and Topology Manager policies).
A backend checks a scenario once: ``open()`` reuses the verdict.
"""
from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Optional

from nfvlab.labs.kubernetes import render, userspace
from nfvlab.labs.kubernetes.cluster import ClusterFacts, quantity, reason, selector
from nfvlab.params import KubernetesParams
from nfvlab.scenario import CorePlan, Scenario
from nfvlab.scenario.cni import CniScenario
from nfvlab.scenario.resources import NotRealizable, plan
from nfvlab.system import netns as nl

#: The DPDK pods' port kind -> the CNI binary its NADs call (in the node's CNI bin directory), its name.
CNI_BINARIES = {"vhostuser": ("userspace", "Userspace CNI"), "vpp-memif": ("userspace", "Userspace CNI"),
                "veth": ("ovs", "OVS CNI"), "afxdp": ("afxdp", "AF_XDP CNI")}


class Checks(ClusterFacts):
    """The realizability checks of a cluster (its facts read through :class:`ClusterFacts`)."""

    def __init__(self, params: KubernetesParams) -> None:
        super().__init__(params)
        self._checked: dict[Scenario, list[str]] = {}

    def check(self, scenario: Scenario | CniScenario) -> list[str]:
        """Why this cluster cannot realize ``scenario``, each reason read once as
        ``model M cannot run on this cluster: why`` (the caller says "not realizable")."""
        if scenario not in self._checked:
            try:
                why = (self._cni_reasons() if isinstance(scenario, CniScenario)
                       else self._static_reasons(scenario) or self._cluster_reasons(scenario))
            except Exception as err:
                why = [f"kubernetes.node {self.params.node!r}: {reason(err)}"]
            else:
                why = [f"{scenario.label} cannot run on this cluster: {w}" for w in why]
            self._checked[scenario] = why
        return self._checked[scenario]

    def _cni_reasons(self) -> list[str]:
        """Experiment E's two nodes: pod1 and pod2 on two different Ready nodes, their data path the
        cluster's own primary CNI over the nodes' link."""
        one, two = ([n["metadata"]["name"] for n in self.nodes_for(pod)] for pod in ("pod1", "pod2"))
        if not any(a != b for a in one for b in two):
            return [f"it needs pod1 and pod2 on two different Ready nodes; pod1 may go to {', '.join(one) or 'none'}, "
                    f"pod2 to {', '.join(two) or 'none'} (kubernetes.node, kubernetes.placement)"]
        # Two nodes exist: what is missing is nfvlab's, said as such (never measured as something else).
        return ["on a cluster the data path and the link MTU are the primary CNI's and the NICs' (detected, never "
                "configured), and nfvlab does not run iperf3/wrk/nginx in cluster pods (docs/experiment-e.md)"]

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
            return [f"no Ready node without an untolerated taint matches {selector(sel)}"]
        if p.cabling == "local" and p.node not in [n["metadata"]["name"] for n in nodes]:
            return [f"with cabling local the NIC ports are on {p.node}, which the {selector(sel)} does not "
                    f"select (it selects {', '.join(n['metadata']['name'] for n in nodes)})"]
        need = render.pod_requests(scenario, p)
        fits, lacks = [], []
        for n in nodes:
            alloc = n.get("status", {}).get("allocatable", {})
            short = [f"{alloc.get(r, 0)} allocatable {r} (a pod needs {q})" for r, q in need.items()
                     if quantity(alloc.get(r, "0")) < quantity(q)]
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
            why.append(f"no Ready node matches the noisy neighbour's {selector(render.node_selector(p, 'noisy'))}")
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
