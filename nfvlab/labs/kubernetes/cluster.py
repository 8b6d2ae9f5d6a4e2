"""What a Kubernetes cluster is, read-only: the client, its nodes, kubelets and primary CNI.

:class:`ClusterFacts` reads each fact once per backend (``open()`` reuses what ``check()``
read); the functions read objects (nodes, DaemonSets, ConfigMaps) or this host (the node's
CNI configuration and NIC ports when the node is this host). Nothing here changes a cluster.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Optional

from nfvlab.labs.base import LabError
from nfvlab.labs.kubernetes import render
from nfvlab.params import KubernetesParams
from nfvlab.system import netns as nl


def api_client(kubeconfig: Optional[str], context: Optional[str]):
    """A ``kubernetes`` API client for ``kubeconfig``/``context`` (default: the client's own default)."""
    from kubernetes import client, config

    cfg = client.Configuration()
    if kubeconfig and not Path(kubeconfig).expanduser().is_file():
        # The client would only say "No configuration found"; name the file (for the local
        # cluster it appears with `nfvlab cluster up`).
        raise LabError(f"kubernetes.kubeconfig {kubeconfig}: no such file (is the cluster up?)")
    config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=cfg)
    return client.ApiClient(cfg)


def reason(err: Exception) -> str:
    """The API server's message of ``err`` (else its first line): one line for the user."""
    body = getattr(err, "body", None)
    try:
        return json.loads(body)["message"]
    except (TypeError, ValueError, KeyError):
        return str(err).splitlines()[0] if str(err) else type(err).__name__


class ClusterFacts:
    """The cluster a lab profile's ``kubernetes:`` block names, read once per instance."""

    def __init__(self, params: KubernetesParams) -> None:
        self.params = params
        self._api = None
        self._node: Optional[dict] = None
        self._nodes: dict[tuple, list[dict]] = {}
        self._kubelet: dict[str, dict] = {}
        self._cni: Optional[dict] = None
        self._ready: Optional[list[str]] = None

    def api(self):
        if self._api is None:
            self._api = api_client(self.params.kubeconfig, self.params.context)
        return self._api

    def core(self):
        from kubernetes import client

        return client.CoreV1Api(self.api())

    def node(self) -> dict:
        if self._node is None:
            self._node = self.api().sanitize_for_serialization(self.core().read_node(self.params.node))
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
            found = self.core().list_node(label_selector=",".join(f"{k}={v}" for k, v in sorted(sel.items())))
            self._nodes[key] = [n for n in map(self.api().sanitize_for_serialization, found.items)
                                if node_ready(n) and not untolerated(n, self.params.tolerations)]
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
            return [f"Kubernetes API not reachable ({p.kubeconfig or 'default kubeconfig'}): {reason(err)}"]
        try:
            node = self.node()
        except Exception as err:
            return [f"kubernetes.node {p.node!r}: {reason(err)}"]
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

    def kubelet_policies(self, node: str) -> dict:
        kc = self.kubelet_config(node)
        return {k: kc.get(k) for k in ("cpuManagerPolicy", "topologyManagerPolicy", "topologyManagerScope",
                                       "memoryManagerPolicy", "reservedSystemCPUs", "allowedUnsafeSysctls")}

    def labels_of(self, node: Optional[str]) -> dict:
        """The labels of the node a pod went to (what label placement matched against)."""
        try:
            return dict(self.core().read_node(node).metadata.labels or {}) if node else {}
        except Exception as err:  # provenance never fails a run
            return {"error": reason(err)}


def node_ready(node: dict) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in node.get("status", {}).get("conditions", []))


def untolerated(node: dict, tolerations: list[dict]) -> bool:
    """Has ``node`` a NoSchedule/NoExecute taint none of ``tolerations`` tolerates?"""
    def tolerates(t: dict, taint: dict) -> bool:
        if t.get("effect") and t["effect"] != taint.get("effect"):
            return False
        if t.get("operator") == "Exists":
            return not t.get("key") or t["key"] == taint.get("key")
        return t.get("key") == taint.get("key") and t.get("value", "") == taint.get("value", "")

    return any(taint.get("effect") in ("NoSchedule", "NoExecute") and not any(tolerates(t, taint) for t in tolerations)
               for taint in node.get("spec", {}).get("taints") or [])


def selector(sel: dict) -> str:
    return "node selector " + ",".join(f"{k}={v}" for k, v in sorted(sel.items()))


def quantity(q: str) -> float:
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
