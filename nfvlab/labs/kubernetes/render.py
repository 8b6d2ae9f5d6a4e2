"""A scenario as Kubernetes objects: a namespace, NetworkAttachmentDefinitions and an NF pod.

Pure functions (no cluster needed): ``nfvlab lab render`` prints what
:func:`manifests` returns, and every manifest passes ``kubernetes-validate`` in
strict mode (:func:`validate`); a NAD's CNI config is checked against the keys
its plugin knows (:data:`CNI_KEYS`).

The pod has the shape of the draft's Figure 9 on a real node: its ``eth1``/``eth2``
come from two secondary networks (Multus) on the worker's NIC ports, and it
routes 198.19.1.0/24 <-> 198.19.2.0/24 between them like the embedded lab's
kernel C-VNF (static neighbours towards the generator's ports). Each pod goes where
``placement`` says (a node or node labels, by node selector: the scheduler decides); the
noisy neighbour is a stress-ng pod (:func:`noisy_pod`) on pod1's node.

A density cell (``csp`` pipeline, seed 001) is a chain of N such pods (:func:`chains`):
pod1's ``eth1`` and podN's ``eth2`` are on the model's networks towards the generator, and
pod j's ``eth2`` is cabled to pod j+1's ``eth1`` through a bridge of its own on the node
(:func:`link_bridge_name`, made by the ``bridge`` CNI; two NADs per link, one per end, for
their static addresses 198.18.(120+j).1/30 and .2/30, as in the embedded lab's pipeline).
"""
from __future__ import annotations

import json
import shlex
from typing import Optional

from nfvlab.labs import forwarder
from nfvlab.labs.kubernetes import userspace
from nfvlab.params import KubernetesParams
from nfvlab.scenario import Scenario
from nfvlab.scenario.resources import CorePlan
from nfvlab.scenario.topology import TG_NET

#: Label every object of a run carries (value: the run id).
RUN_LABEL = "nfvlab.io/run"
NAD_API = "k8s.cni.cncf.io/v1"
NETWORKS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"
STATUS_ANNOTATION = "k8s.v1.cni.cncf.io/network-status"
#: Calico/VPP's pod annotation asking for a memif interface (its ports go to the memif, seed 003).
CALICO_VPP_MEMIF_ANNOTATION = "cni.projectcalico.org/vppExtraMemifPorts"
HOSTNAME_LABEL = "kubernetes.io/hostname"
#: The pod's address on each side and the generator port's (its gateway), as in the embedded lab.
POD_IP = {0: "198.18.1.2/24", 1: "198.18.2.2/24"}
TG_IP = {0: "198.18.1.1", 1: "198.18.2.1"}

#: Models realized by rendered secondary networks: model -> CNI plugin.
CNI_OF = {"macvlan": "macvlan", "linux-bridge": "bridge", "host-routing": "ptp", "smartnic-direct": "host-device",
          "sriov": "sriov"}
#: host-routing (Calico-like): per side, the pod's end of its point-to-point link and the node's end (the
#: ptp CNI puts the gateway on the node's veth as a /32 and routes the pod's address to it), as in the
#: embedded lab's worker. The node routes between its NIC ports and these links (node routing).
ROUTED_LINK = {0: ("198.18.11.2/30", "198.18.11.1"), 1: ("198.18.12.2/30", "198.18.12.1")}
#: host-routing: the node's address on its NIC port towards generator port ``side`` (the generator's gateway).
NODE_NIC_IP = {0: "198.18.1.254/24", 1: "198.18.2.254/24"}
#: Models that are the cluster's primary CNI in eBPF mode (detected, never installed).
EBPF_MODELS = ("ebpf-tc", "ebpf-xdp")
#: Keys each CNI plugin's config knows (checked on every rendered NAD).
CNI_KEYS = {
    "macvlan": {"cniVersion", "name", "type", "master", "mode", "mtu", "ipam", "linkInContainer"},
    "bridge": {"cniVersion", "name", "type", "bridge", "isGateway", "isDefaultGateway", "forceAddress",
               "ipMasq", "mtu", "hairpinMode", "ipam", "promiscMode", "vlan", "macspoofchk", "enabledad"},
    "host-device": {"cniVersion", "name", "type", "device", "hwaddr", "kernelpath", "pciBusID", "ipam"},
    "ptp": {"cniVersion", "name", "type", "ipMasq", "mtu", "ipam", "dns"},
    # SR-IOV CNI (k8snetworkplumbingwg/sriov-cni v2.1.0, pkg/types NetConf and CNI v0.6.0's; its DPDKMode,
    # Master, VFID, HostIFNames and ContIFNames are state the plugin derives from deviceID, not config).
    "sriov": {"cniVersion", "name", "type", "capabilities", "ipam", "dns", "deviceID", "vlan"},
    # Userspace CNI (pkg/types NetConf of the pinned version).
    "userspace": {"cniVersion", "name", "type", "kubeconfig", "sharedDir", "logFile", "logLevel", "host",
                  "container", "ipam"},
    # OVS CNI (k8snetworkplumbingwg/ovs-cni v0.39.0, pkg/types NetConf and the CNI library's).
    "ovs": {"cniVersion", "name", "type", "capabilities", "ipam", "dns", "prevResult", "cni.dev/valid-attachments",
            "bridge", "vlan", "mtu", "trunk", "deviceID", "ofport_request", "interface_type", "configuration_path",
            "socket_file", "link_state_check_retries", "link_state_check_interval"},
    # AF_XDP CNI (intel/afxdp-plugins-for-kubernetes v0.0.3, internal/cni/cni.go).
    "afxdp": {"cniVersion", "name", "type", "mode", "deviceID", "ipam", "skipUnloadBpf", "queues", "logFile",
              "logLevel"},
}
IPAM_KEYS = {"type", "addresses", "routes", "dns"}


#: Why nfvlab renders no networks for a model (it then takes the cluster's, named in ``networks``).
NOT_RENDERED_WHY = {
    "ebpf-tc": "its data path is the cluster's primary CNI in eBPF mode (Cilium, Calico eBPF: detected, never "
               "installed); the pod's eth1/eth2 come from networks the cluster has",
    "ebpf-xdp": "its data path is the cluster's primary CNI in eBPF mode (Cilium, Calico eBPF: detected, never "
                "installed); the pod's eth1/eth2 come from networks the cluster has",
}


def rendered_models() -> list[str]:
    """Models whose networks nfvlab renders (kernel CNIs, and the DPDK pods' CNIs)."""
    return list(dict.fromkeys([*CNI_OF, *userspace.NIC_PORTS]))


def dpdk_pods(scenario: Scenario, params: KubernetesParams) -> bool:
    """Does nfvlab render ``scenario`` as the draft's DPDK pods (:mod:`userspace`)? Not when the
    profile names the cluster's own networks for it (or Calico/VPP's memif annotation), nor for
    ``sriov`` with ``sriov_mode: netdevice`` (the kernel pod on netdevice VFs)."""
    return (userspace.is_userspace(scenario.model) and scenario.model not in params.networks
            and not calico_vpp_memif(scenario, params)
            and not (scenario.model == "sriov" and params.sriov_mode == "netdevice"))


def routed(scenario: Scenario, params: KubernetesParams) -> bool:
    """host-routing on networks nfvlab renders: the pod routes via the node's end of its point-to-point
    links, and the node routes between its NIC ports and them (nfvlab sets that up with cabling local,
    :mod:`.node_routing`; other cabling is refused)."""
    return CNI_OF.get(scenario.model) == "ptp" and scenario.model not in params.networks


def renders(scenario: Scenario, params: KubernetesParams) -> bool:
    """Are ``scenario``'s networks rendered (or named in the profile)?"""
    return (scenario.model in rendered_models() or scenario.model in params.networks
            or bool(calico_vpp_memif(scenario, params)))


def namespace_name(params: KubernetesParams, run_id: str) -> str:
    return f"{params.namespace_prefix}-{run_id}"


def bridge_name(run_id: str, side: int) -> str:
    """Node bridge of ``linux-bridge`` (created and removed by nfvlab with local cabling)."""
    return f"nfvk{run_id}b{side}"


#: Models whose chains (density cells) are mapped: kernel forwarders on kernel secondary networks.
CHAIN_MODELS = ("macvlan", "linux-bridge", "smartnic-direct")


def link_bridge_name(run_id: str, link: int) -> str:
    """Node bridge of the pod-to-pod link after pod ``link`` of a chain (made by the bridge CNI)."""
    return f"nfvk{run_id}l{link}"


def chains(scenario: Scenario) -> list[list[str]]:
    """Pod names of each chain, in forwarding order: a density cell's ``instances`` chains of ``nfs``
    pods (``pod1`` .. ``podN`` numbered over all chains), else one chain of ``pod1``."""
    d = scenario.density
    instances, nfs = (d.instances, d.nfs) if d is not None else (1, scenario.spec.pods)
    return [[f"pod{i * nfs + j + 1}" for j in range(nfs)] for i in range(instances)]


def density_reasons(scenario: Scenario, params: KubernetesParams) -> list[str]:
    """Why a density cell is not mapped to Kubernetes (empty: it is): csp, one instance, a kernel
    model of :data:`CHAIN_MODELS`, every pod of the chain placed alike (its links are node bridges)."""
    d = scenario.density
    if d is None:
        return []
    if d.topology == "csc":
        return ["csc steers each NF's output back through the worker's router (policy routing), which "
                "nfvlab maps to no Kubernetes object; csp (pod-to-pod links) is mapped"]
    if scenario.model not in CHAIN_MODELS:
        return [f"density chains are mapped for the kernel models {', '.join(CHAIN_MODELS)}, not {scenario.model}"]
    if d.instances > 1:
        return [f"{d.instances} instances need the worker's ECMP router to spread flows over the chains; "
                "nfvlab maps one instance (a chain of nfs pods) per run on Kubernetes"]
    names = [n for chain in chains(scenario) for n in chain]
    if len({tuple(sorted(node_selector(params, n).items())) for n in names}) > 1:
        return ["a chain's pod-to-pod links are bridges on one node: give " + ", ".join(names)
                + " the same kubernetes.placement"]
    return []


def _link_ip(link: int, end: int) -> str:
    """Address of end ``end`` (0: pod ``link``'s eth2, 1: pod ``link + 1``'s eth1) of a chain link."""
    return f"198.18.{120 + link}.{1 + end}"


def link_nads(scenario: Scenario, params: KubernetesParams, run_id: str) -> list[dict]:
    """The pod-to-pod links of the chains: per link, one bridge and two NADs (one per end's address)."""
    ns = namespace_name(params, run_id)
    out = []
    for chain in chains(scenario):
        for pod_name in chain[:-1]:
            link = int(pod_name[3:])
            for end in (0, 1):
                cfg = {"cniVersion": "0.3.1", "type": "bridge", "bridge": link_bridge_name(run_id, link),
                       "isGateway": False, "ipMasq": False,
                       "ipam": {"type": "static", "addresses": [{"address": f"{_link_ip(link, end)}/30"}]}}
                out.append({"apiVersion": NAD_API, "kind": "NetworkAttachmentDefinition",
                            "metadata": {"name": f"link{link}-{'ab'[end]}", "namespace": ns,
                                         "labels": {RUN_LABEL: run_id}},
                            "spec": {"config": json.dumps(cfg, sort_keys=True)}})
    return out


def cni_config(model: str, side: int, params: KubernetesParams, run_id: str) -> dict:
    """The CNI config of the secondary network towards generator port ``side``."""
    plugin = CNI_OF[model]
    cfg: dict = {"cniVersion": "0.3.1", "type": plugin,
                 "ipam": {"type": "static", "addresses": [{"address": POD_IP[side]}]}}
    if plugin == "macvlan":
        cfg.update(master=params.nics[side], mode="bridge")
    elif plugin == "bridge":
        cfg.update(bridge=bridge_name(run_id, side), isGateway=False, ipMasq=False)
    elif plugin == "host-device":
        cfg.update(device=params.nics[side])
    elif plugin == "ptp":
        address, gateway = ROUTED_LINK[side]
        cfg.update(ipMasq=False, ipam={"type": "static", "addresses": [{"address": address, "gateway": gateway}]})
    return cfg


def calico_vpp_memif(scenario: Scenario, params: KubernetesParams) -> bool:
    """``vpp`` realized by Calico/VPP's memif annotation instead of secondary networks."""
    return (scenario.model == "vpp" and params.calico_vpp_memif_ports is not None
            and "vpp" not in params.networks)


def node_selector(params: KubernetesParams, pod_name: str, node: Optional[str] = None) -> dict[str, str]:
    """The node selector of pod ``pod_name``: its ``placement`` (a node or node labels), else
    ``node`` (the noisy neighbour: where pod1 went), else the profile's ``node``."""
    pl = params.placement.get(pod_name)
    if pl is not None:
        return {HOSTNAME_LABEL: pl.node} if pl.node else dict(pl.node_labels)
    return {HOSTNAME_LABEL: node or params.node}


def pod_requests(scenario: Scenario, params: KubernetesParams) -> dict[str, str]:
    """Device-plugin and hugepage requests of the NF pod (what node allocatable must have)."""
    out = {name: str(n) for name, n in params.device_resources.get(scenario.model, {}).items()}
    dpdk = dpdk_pods(scenario, params)
    if scenario.model == "sriov":  # two VFs: bound to vfio-pci for the DPDK pod, netdevices for the kernel's
        out[params.sriov_dpdk_resource if dpdk else params.sriov_resource] = "2"
    if dpdk and userspace.POD_PORTS[scenario.model] == "afxdp" and params.afxdp_resource:
        out[params.afxdp_resource] = "2"
    # A DPDK pod's memory is its testpmd's (as in the embedded lab); a kernel pod's a token.
    if dpdk and userspace.hugepages(scenario):
        out["hugepages-2Mi"] = f"{forwarder.memory_mb(userspace.MTU)}Mi"
    elif not dpdk and scenario.resources.hugepages:
        out["hugepages-2Mi"] = "64Mi"
    return out


def guaranteed(scenario: Scenario) -> bool:
    """Exclusive pinning and NUMA scenarios: a Guaranteed pod with an integer CPU (the static CPU
    manager gives it a CPU of its own; the Topology Manager aligns only such pods)."""
    return scenario.resources.pinning == "exclusive" or scenario.resources.numa != "s1"


def network_names(scenario: Scenario, params: KubernetesParams, run_id: str) -> list[str]:
    """``namespace/name`` of the model's two secondary networks towards generator ports 0 and 1 (a
    chain's first pod has the first as eth1, its last pod the second as eth2)."""
    if calico_vpp_memif(scenario, params):
        return []
    given = params.networks.get(scenario.model)
    if given:
        return list(given)
    ns = namespace_name(params, run_id)
    return [f"{ns}/{scenario.model}-{side}" for side in (0, 1)]


def nads(scenario: Scenario, params: KubernetesParams, run_id: str) -> list[dict]:
    """NetworkAttachmentDefinitions nfvlab renders for ``scenario`` (none when the cluster's are named)."""
    if scenario.model in params.networks or scenario.model not in CNI_OF:
        return []
    ns = namespace_name(params, run_id)
    out = []
    for side in (0, 1):
        meta: dict = {"name": f"{scenario.model}-{side}", "namespace": ns, "labels": {RUN_LABEL: run_id}}
        if CNI_OF[scenario.model] == "sriov":
            meta["annotations"] = {userspace.RESOURCE_ANNOTATION: params.sriov_resource}
        out.append({"apiVersion": NAD_API, "kind": "NetworkAttachmentDefinition", "metadata": meta,
                    "spec": {"config": json.dumps(cni_config(scenario.model, side, params, run_id),
                                                  sort_keys=True)}})
    return out


def next_hops(scenario: Scenario, name: str) -> dict[int, Optional[str]]:
    """Side (0: eth1, towards generator port 0; 1: eth2) -> the address pod ``name`` routes that
    side's traffic to: ``None`` where it is the generator's port (a static neighbour), else the
    neighbouring pod's end of the chain link."""
    for chain in chains(scenario):
        if name in chain:
            j, n = chain.index(name), int(name[3:])
            return {0: None if j == 0 else _link_ip(n - 1, 0),
                    1: None if j == len(chain) - 1 else _link_ip(n, 1)}
    raise KeyError(f"no pod {name} in {scenario.label}")


#: How the kernel pod's shell stays up: PID 1 of its container, exiting on SIGTERM. A PID 1 without a
#: handler (an exec'd sleep) ignores SIGTERM, so each pod deletion waited out the grace period and
#: the kill after it (~2 s of a lab instance's teardown).
STAY_UP = "trap 'exit 0' TERM INT; sleep 2147483647 & wait"


def forwarder_script(tg_macs: list[str], hops: Optional[dict[int, Optional[str]]] = None,
                     routed: bool = False) -> str:
    """The pod's start-up (busybox sh): static neighbours and routes towards the generator (or the next
    pod of its chain, per :func:`next_hops`), then sleep. ``routed`` (host-routing): the generator's
    networks are behind the node, the gateway of each side's point-to-point link (:data:`ROUTED_LINK`).

    Forwarding itself is the kernel's (``net.ipv4.ip_forward=1`` as a pod sysctl).
    """
    hops = hops or {0: None, 1: None}
    lines = []
    for side, ifname in ((0, "eth1"), (1, "eth2")):
        via = hops[side] or (ROUTED_LINK[side][1] if routed else TG_IP[side])
        if hops[side] is None and not routed:
            # arp -s: busybox's ip has no "neigh add"; a permanent entry, so the pod never ARPs the generator.
            lines.append(f"arp -i {ifname} -s {TG_IP[side]} {tg_macs[side]}")
        lines.append(f"ip route replace {TG_NET[side]}.0/24 via {via} dev {ifname}")
    lines.append("echo nfvlab-forwarder-ready")
    lines.append(STAY_UP)
    return "set -e; " + "; ".join(lines)


def readiness_script(hops: dict[int, Optional[str]], routed: bool = False) -> str:
    """Ready when the routes are in and every neighbouring pod (``routed``: the node's end of each
    link) answers, so its ARP entry exists before the first test frame; the generator's ports are
    static neighbours."""
    checks = ["ip route show " + shlex.quote(f"{TG_NET[1]}.0/24") + " | grep -q eth2"]
    gateways = [ROUTED_LINK[side][1] for side in (0, 1)] if routed else []
    checks += [f"ping -c 1 -W 1 {ip} >/dev/null" for ip in [*gateways, *hops.values()] if ip]
    return " && ".join(checks)


def cpu_resources(scenario: Scenario) -> tuple[dict, dict]:
    """CPU and memory requests/limits by pinning mode: Guaranteed (exclusive, NUMA: requests ==
    limits, one integer CPU), Burstable on the shared pool (shared: half a CPU requested, up to one
    used, beside the noisy neighbour), Burstable with no CPU limit (plan, none)."""
    if guaranteed(scenario):
        return {"cpu": "1", "memory": "64Mi"}, {"cpu": "1", "memory": "64Mi"}
    if scenario.resources.pinning == "shared":
        return {"cpu": "500m", "memory": "64Mi"}, {"cpu": "1", "memory": "64Mi"}
    return {"cpu": "100m", "memory": "64Mi"}, {"memory": "64Mi"}


def pod_networks(scenario: Scenario, params: KubernetesParams, run_id: str, name: str) -> list[str]:
    """``namespace/name`` of pod ``name``'s eth1 and eth2 networks: the model's towards the generator
    at the ends of its chain, the chain links' in between."""
    ends = network_names(scenario, params, run_id)
    if not ends:
        return []
    ns, hops, n = namespace_name(params, run_id), next_hops(scenario, name), int(name[3:])
    return [ends[0] if hops[0] is None else f"{ns}/link{n - 1}-b",
            ends[1] if hops[1] is None else f"{ns}/link{n}-a"]


def pod(scenario: Scenario, params: KubernetesParams, run_id: str, tg_macs: list[str],
        name: str = "pod1") -> dict:
    """An NF pod: two secondary interfaces, kernel forwarding, resources as the scenario asks."""
    res = scenario.resources
    hops = next_hops(scenario, name)
    is_routed = routed(scenario, params)
    requests, limits = cpu_resources(scenario)
    for key, qty in pod_requests(scenario, params).items():
        requests[key] = limits[key] = qty
    volumes, mounts = [], []
    if res.hugepages:
        volumes.append({"name": "hugepages", "emptyDir": {"medium": "HugePages-2Mi"}})
        mounts.append({"name": "hugepages", "mountPath": "/hugepages"})
    container = {
        "name": "forwarder", "image": params.image, "imagePullPolicy": params.image_pull_policy,
        "command": ["/bin/sh", "-c", forwarder_script(tg_macs, hops, is_routed)],
        "resources": {"requests": requests, "limits": limits},
        "securityContext": {"capabilities": {"add": ["NET_ADMIN"]}},
        "readinessProbe": {"exec": {"command": ["/bin/sh", "-c", readiness_script(hops, is_routed)]},
                           "periodSeconds": 1},
    }
    if mounts:
        container["volumeMounts"] = mounts
    spec: dict = {
        # A node selector, not nodeName: the scheduler admits the pod or says why not
        # (e.g. "Insufficient intel.com/intel_sriov_netdevice").
        "nodeSelector": node_selector(params, name),
        "restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
        "automountServiceAccountToken": False,
        "securityContext": {"sysctls": [{"name": "net.ipv4.ip_forward", "value": "1"}]},
        "containers": [container],
    }
    if volumes:
        spec["volumes"] = volumes
    if params.tolerations:
        spec["tolerations"] = [dict(t) for t in params.tolerations]
    if calico_vpp_memif(scenario, params):
        annotations = {CALICO_VPP_MEMIF_ANNOTATION: params.calico_vpp_memif_ports}
    else:
        annotations = {NETWORKS_ANNOTATION: json.dumps(
            [{"name": n.split("/")[1], "namespace": n.split("/")[0], "interface": f"eth{i + 1}"}
             for i, n in enumerate(pod_networks(scenario, params, run_id, name))])}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace_name(params, run_id),
                         "labels": {RUN_LABEL: run_id, "nfvlab.io/model": scenario.model},
                         "annotations": annotations},
            "spec": spec}


def noisy_pod(scenario: Scenario, params: KubernetesParams, run_id: str, node: str) -> dict:
    """The noisy neighbour: stress-ng, one CPU worker at ``noisy_load_pct`` percent, on ``node``
    (where pod1 went, unless ``placement.noisy`` says otherwise), sharing the pod's CPU pool."""
    load = scenario.resources.noisy_load_pct
    container = {"name": "stress", "image": params.noisy_image, "imagePullPolicy": params.image_pull_policy,
                 "command": ["stress-ng", "--cpu", "1", "--cpu-load", str(load), "--timeout", "0"],
                 "resources": {"requests": {"cpu": "100m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}}}
    spec: dict = {"nodeSelector": node_selector(params, "noisy", node), "restartPolicy": "Never",
                  "terminationGracePeriodSeconds": 1, "automountServiceAccountToken": False,
                  "containers": [container]}
    if params.tolerations:
        spec["tolerations"] = [dict(t) for t in params.tolerations]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "noisy", "namespace": namespace_name(params, run_id),
                         "labels": {RUN_LABEL: run_id, "nfvlab.io/role": "noisy-neighbour"}},
            "spec": spec}


def namespace(params: KubernetesParams, run_id: str) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": namespace_name(params, run_id), "labels": {RUN_LABEL: run_id}}}


def manifests(scenario: Scenario, params: KubernetesParams, run_id: str = "000000",
              tg_macs: Optional[list[str]] = None, core_plan: Optional[CorePlan] = None) -> list[dict]:
    """Every object a run of ``scenario`` creates, in creation order (the user-space models: the
    vSwitch pod, when nfvlab runs it, before the DPDK pods whose ports it serves)."""
    macs = tg_macs or params.tg_macs or ["02:00:00:00:00:01", "02:00:00:00:00:02"]
    if dpdk_pods(scenario, params):
        out = [namespace(params, run_id), *_userspace_objects(scenario, params, run_id, macs, core_plan)]
    else:
        out = [namespace(params, run_id), *nads(scenario, params, run_id), *link_nads(scenario, params, run_id),
               *(pod(scenario, params, run_id, macs, name) for chain in chains(scenario) for name in chain)]
    if scenario.resources.noisy_load_pct is not None and params.noisy_image:
        # Offline, the noisy neighbour's node is pod1's selector's (the run uses where pod1 went).
        node = node_selector(params, "pod1").get(HOSTNAME_LABEL, params.node)
        out.append(noisy_pod(scenario, params, run_id, node))
    return out


def _userspace_objects(scenario: Scenario, params: KubernetesParams, run_id: str, macs: list[str],
                       core_plan: Optional[CorePlan]) -> list[dict]:
    """NADs, the local node's vSwitch pod (``cabling: local``) and the DPDK pods of a user-space model."""
    ns, chain = namespace_name(params, run_id), chains(scenario)[0]
    labels = {RUN_LABEL: run_id}
    out = userspace.nads(scenario, params, run_id, ns, chain, labels)
    if params.cabling == "local" and userspace.runs_ovs(scenario.model):
        out.append(userspace.vswitch_pod(scenario, params, run_id, ns, core_plan, labels,
                                         node_selector(params, "pod1"), chain))
    peers = userspace.peer_macs(chain, macs)
    for name in chain:
        base = pod(scenario, params, run_id, macs, name)
        nets = userspace.networks(scenario.model, ns, chain, name)
        if nets:
            base["metadata"]["annotations"] = {NETWORKS_ANNOTATION: json.dumps(nets)}
        else:  # memif: the pod's sockets only (nfvlab's OVS ports), no Multus network
            base["metadata"].pop("annotations", None)
        out.append(userspace.dpdk_pod(scenario, params, run_id, ns, name, peers[name], core_plan, base, chain))
    return out


def validate(manifest: dict, params: KubernetesParams) -> list[str]:
    """Problems of one manifest: strict OpenAPI validation (kubernetes-validate) and, for a NAD,
    its CNI config's keys (the schema cannot see inside that JSON string)."""
    import kubernetes_validate

    problems = []
    if manifest.get("kind") == "NetworkAttachmentDefinition":
        try:
            cfg = json.loads(manifest["spec"]["config"])
        except (KeyError, ValueError) as err:
            return [f"NAD {manifest['metadata'].get('name')}: config is not JSON ({err})"]
        known = CNI_KEYS.get(cfg.get("type"))
        if known is None:
            problems.append(f"NAD {manifest['metadata']['name']}: unknown CNI plugin {cfg.get('type')!r}")
        else:
            problems += [f"NAD {manifest['metadata']['name']}: {cfg['type']} has no key {k!r}"
                         for k in sorted(set(cfg) - known)]
        problems += [f"NAD {manifest['metadata']['name']}: ipam has no key {k!r}"
                     for k in sorted(set(cfg.get("ipam", {})) - IPAM_KEYS)]
        return problems
    try:
        kubernetes_validate.validate(manifest, params.schema_version, strict=True)
    except kubernetes_validate.ValidationError as err:
        problems.append(f"{manifest['kind']} {manifest['metadata'].get('name')}: {err.message} "
                        f"at {'.'.join(map(str, err.path))}")
    return problems
