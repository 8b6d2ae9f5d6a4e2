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
"""
from __future__ import annotations

import json
import shlex
from typing import Optional

from nfvlab.params import KubernetesParams
from nfvlab.scenario import Scenario
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
CNI_OF = {"macvlan": "macvlan", "linux-bridge": "bridge", "smartnic-direct": "host-device", "sriov": "sriov"}
#: Models that are the cluster's primary CNI in eBPF mode (detected, never installed).
EBPF_MODELS = ("ebpf-tc", "ebpf-xdp")
#: Keys each CNI plugin's config knows (checked on every rendered NAD).
CNI_KEYS = {
    "macvlan": {"cniVersion", "name", "type", "master", "mode", "mtu", "ipam", "linkInContainer"},
    "bridge": {"cniVersion", "name", "type", "bridge", "isGateway", "isDefaultGateway", "forceAddress",
               "ipMasq", "mtu", "hairpinMode", "ipam", "promiscMode", "vlan", "macspoofchk", "enabledad"},
    "host-device": {"cniVersion", "name", "type", "device", "hwaddr", "kernelpath", "pciBusID", "ipam"},
    "sriov": {"cniVersion", "name", "type", "deviceID", "vlan", "spoofchk", "trust", "link_state", "ipam",
              "mac", "min_tx_rate", "max_tx_rate", "vlanQoS"},
}
IPAM_KEYS = {"type", "addresses", "routes", "dns"}


def namespace_name(params: KubernetesParams, run_id: str) -> str:
    return f"{params.namespace_prefix}-{run_id}"


def bridge_name(run_id: str, side: int) -> str:
    """Node bridge of ``linux-bridge`` (created and removed by nfvlab with local cabling)."""
    return f"nfvk{run_id}b{side}"


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
    if CNI_OF.get(scenario.model) == "sriov":
        out[params.sriov_resource] = "2"
    if scenario.resources.hugepages:
        out["hugepages-2Mi"] = "64Mi"
    return out


def guaranteed(scenario: Scenario) -> bool:
    """Exclusive pinning and NUMA scenarios: a Guaranteed pod with an integer CPU (the static CPU
    manager gives it a CPU of its own; the Topology Manager aligns only such pods)."""
    return scenario.resources.pinning == "exclusive" or scenario.resources.numa != "s1"


def network_names(scenario: Scenario, params: KubernetesParams, run_id: str) -> list[str]:
    """``namespace/name`` of the pod's two secondary networks, in eth1, eth2 order."""
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
            meta["annotations"] = {"k8s.v1.cni.cncf.io/resourceName": params.sriov_resource}
        out.append({"apiVersion": NAD_API, "kind": "NetworkAttachmentDefinition", "metadata": meta,
                    "spec": {"config": json.dumps(cni_config(scenario.model, side, params, run_id),
                                                  sort_keys=True)}})
    return out


def forwarder_script(tg_macs: list[str]) -> str:
    """The pod's start-up (busybox sh): static neighbours and routes towards the generator, then sleep.

    Forwarding itself is the kernel's (``net.ipv4.ip_forward=1`` as a pod sysctl).
    """
    lines = []
    for side, ifname in ((0, "eth1"), (1, "eth2")):
        # arp -s: busybox's ip has no "neigh add"; a permanent entry, so the pod never ARPs the generator.
        lines += [f"arp -i {ifname} -s {TG_IP[side]} {tg_macs[side]}",
                  f"ip route replace {TG_NET[side]}.0/24 via {TG_IP[side]} dev {ifname}"]
    lines.append("echo nfvlab-forwarder-ready")
    lines.append("exec sleep 2147483647")
    return "set -e; " + "; ".join(lines)


def cpu_resources(scenario: Scenario) -> tuple[dict, dict]:
    """CPU and memory requests/limits by pinning mode: Guaranteed (exclusive, NUMA: requests ==
    limits, one integer CPU), Burstable on the shared pool (shared: half a CPU requested, up to one
    used, beside the noisy neighbour), Burstable with no CPU limit (plan, none)."""
    if guaranteed(scenario):
        return {"cpu": "1", "memory": "64Mi"}, {"cpu": "1", "memory": "64Mi"}
    if scenario.resources.pinning == "shared":
        return {"cpu": "500m", "memory": "64Mi"}, {"cpu": "1", "memory": "64Mi"}
    return {"cpu": "100m", "memory": "64Mi"}, {"memory": "64Mi"}


def pod(scenario: Scenario, params: KubernetesParams, run_id: str, tg_macs: list[str],
        name: str = "pod1") -> dict:
    """The NF pod: two secondary interfaces, kernel forwarding, resources as the scenario asks."""
    res = scenario.resources
    requests, limits = cpu_resources(scenario)
    for key, qty in pod_requests(scenario, params).items():
        requests[key] = limits[key] = qty
    volumes, mounts = [], []
    if res.hugepages:
        volumes.append({"name": "hugepages", "emptyDir": {"medium": "HugePages-2Mi"}})
        mounts.append({"name": "hugepages", "mountPath": "/hugepages"})
    container = {
        "name": "forwarder", "image": params.image, "imagePullPolicy": params.image_pull_policy,
        "command": ["/bin/sh", "-c", forwarder_script(tg_macs)],
        "resources": {"requests": requests, "limits": limits},
        "securityContext": {"capabilities": {"add": ["NET_ADMIN"]}},
        "readinessProbe": {"exec": {"command": ["/bin/sh", "-c", "ip route show " + shlex.quote(
            f"{TG_NET[1]}.0/24") + " | grep -q eth2"]}, "periodSeconds": 1},
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
             for i, n in enumerate(network_names(scenario, params, run_id))])}
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
              tg_macs: Optional[list[str]] = None) -> list[dict]:
    """Every object a run of ``scenario`` creates, in creation order."""
    macs = tg_macs or params.tg_macs or ["02:00:00:00:00:01", "02:00:00:00:00:02"]
    out = [namespace(params, run_id), *nads(scenario, params, run_id), pod(scenario, params, run_id, macs)]
    if scenario.resources.noisy_load_pct is not None and params.noisy_image:
        # Offline, the noisy neighbour's node is pod1's selector's (the run uses where pod1 went).
        node = node_selector(params, "pod1").get(HOSTNAME_LABEL, params.node)
        out.append(noisy_pod(scenario, params, run_id, node))
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
