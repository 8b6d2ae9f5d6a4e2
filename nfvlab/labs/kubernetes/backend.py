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
namespace and waits until it is gone. ``nfvlab lab clean`` removes what a killed
run left (:func:`clean`).

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
import signal
import socket
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterator, Optional

from nfvlab.labs.base import LabError, LabSession, Terminated
from nfvlab.labs.kubernetes import render
from nfvlab.params import LabParams
from nfvlab.scenario import Port, Scenario, Stream
from nfvlab.scenario.topology import default_ips
from nfvlab.system import netns as nl
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

    @property
    def path(self) -> Path:
        return labs_dir() / f"{self.run_id}.json"

    def save(self) -> None:
        write_json_atomic(self.path, asdict(self))

    def owner_alive(self) -> bool:
        return (self.owner_host == socket.gethostname() and self.owner_boot_id == boot_id()
                and process_start_time(self.owner_pid) == self.owner_start_time)


def _client(kubeconfig: Optional[str], context: Optional[str]):
    from kubernetes import client, config

    cfg = client.Configuration()
    config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=cfg)
    return client.ApiClient(cfg)


def _reason(err: Exception) -> str:
    body = getattr(err, "body", None)
    try:
        return json.loads(body)["message"]
    except (TypeError, ValueError, KeyError):
        return str(err).splitlines()[0] if str(err) else type(err).__name__


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

    def kubelet_config(self) -> dict:
        """The node's kubelet configuration (``/configz``), or {} when not readable."""
        try:
            raw = self.api().call_api(f"/api/v1/nodes/{self.params.node}/proxy/configz", "GET",
                                      auth_settings=["BearerToken"], _preload_content=False,
                                      response_type=None)
            data = raw[0] if isinstance(raw, tuple) else raw
            return json.loads(data.data).get("kubeletconfig", {})
        except Exception:
            return {}

    def ready(self) -> list[str]:
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
        p, model = self.params, scenario.model
        why = []
        if model not in render.CNI_OF and model not in p.networks:
            why.append(f"not realizable on this cluster: {model} needs secondary networks nfvlab does not "
                       f"render (name two NetworkAttachmentDefinitions in kubernetes.networks.{model})")
        if model == "linux-bridge" and p.cabling != "local" and model not in p.networks:
            why.append("not realizable on this cluster: linux-bridge needs the node's NIC ports on a bridge; "
                       "nfvlab wires that only with cabling local (else name NADs in kubernetes.networks)")
        if scenario.density is not None:
            why.append("not realizable on this cluster: service density topologies are embedded-lab only "
                       "in this nfvlab version")
        res = scenario.resources
        if res.noisy_load_pct is not None:
            why.append("not realizable on this cluster: the noisy-neighbour pod is embedded-lab only in this "
                       "nfvlab version")
        if res.numa != "s1":
            why.append(f"not realizable on this cluster: NUMA scenario {res.numa} needs the Topology Manager "
                       "and a multi-socket node (not implemented for Kubernetes in this nfvlab version)")
        if res.pcdr4sw != "1:1" or res.pcdr4nf != "1:1":
            why.append("not realizable on this cluster: core ratios need user-space NFs")
        if why:
            return why
        try:
            alloc = self.node().get("status", {}).get("allocatable", {})
        except Exception as err:
            return [f"kubernetes.node {p.node!r}: {_reason(err)}"]
        if render.CNI_OF.get(model) == "sriov" and int(alloc.get(p.sriov_resource, "0") or 0) < 2:
            why.append(f"not realizable on this cluster: node {p.node} has {alloc.get(p.sriov_resource, 0)} "
                       f"allocatable {p.sriov_resource} (a pod needs 2 VFs)")
        if res.hugepages and _quantity(alloc.get("hugepages-2Mi", "0")) < 64 * 2 ** 20:
            why.append(f"not realizable on this cluster: node {p.node} has no 64 MiB of hugepages-2Mi")
        if res.pinning == "exclusive":
            policy = self.kubelet_config().get("cpuManagerPolicy")
            if policy != "static":
                why.append(f"not realizable on this cluster: exclusive pinning needs the static CPU manager "
                           f"on {p.node} (kubelet cpuManagerPolicy: {policy or 'not readable'})")
        elif res.pinning in ("shared",):
            why.append("not realizable on this cluster: shared pinning (CMK's shared pool) is not mapped "
                       "to Kubernetes in this nfvlab version; use plan (Burstable) or exclusive (Guaranteed)")
        return why

    def mtu(self, scenario: Scenario) -> int:
        return self.link_mtu

    def describe(self) -> dict:
        out: dict = {"lab_kind": self.kind, "node": self.params.node, "cabling": self.params.cabling}
        try:
            from kubernetes import client

            out["server_version"] = client.VersionApi(self.api()).get_code().git_version
            info = self.node().get("status", {}).get("nodeInfo", {})
            out["node_info"] = {k: info.get(k) for k in ("osImage", "kernelVersion", "containerRuntimeVersion",
                                                          "kubeletVersion", "architecture")}
            kc = self.kubelet_config()
            out["kubelet"] = {k: kc.get(k) for k in ("cpuManagerPolicy", "topologyManagerPolicy",
                                                     "memoryManagerPolicy", "reservedSystemCPUs",
                                                     "allowedUnsafeSysctls")}
        except Exception as err:  # provenance never fails a run
            out["error"] = _reason(err)
        return out

    # -- a run ----------------------------------------------------------------------------------------
    @contextmanager
    def open(self, scenario: Scenario) -> Iterator[LabSession]:
        reasons = self.ready() or self.check(scenario)
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
        if lock is not None:
            lock.__enter__()
        old_term = _catch_sigterm()
        info: dict = {"lab_kind": self.kind, "run_id": run_id, "namespace": st.namespace, "node": p.node}
        try:
            st.save()
            t0 = time.monotonic()
            streams_ports, tg_macs = self._cable(st) if p.cabling == "local" else (None, p.tg_macs)
            objects = render.manifests(scenario, p, run_id, tg_macs)
            problems = [x for m in objects for x in render.validate(m, p)]
            if problems:
                raise LabError(f"rendered manifest invalid: {problems[0]}")
            timings = self._apply(objects, st.namespace)
            pod = timings.pop("pod")
            macs = _interface_macs(pod)
            info.update(timings, setup_s=round(time.monotonic() - t0, 3),
                        networks=render.network_names(scenario, p, run_id),
                        nads=[json.loads(m["spec"]["config"]) for m in objects
                              if m["kind"] == "NetworkAttachmentDefinition"],
                        placement={"pod1": pod["spec"].get("nodeName")},
                        qos_class=pod.get("status", {}).get("qosClass"))
            if streams_ports is None:
                streams_ports = [Port("generator", "0"), Port("generator", "1")]
            tx = streams_ports
            streams = [Stream(tx[0], tx[1], tg_macs[0], macs["eth1"], *default_ips(0)),
                       Stream(tx[1], tx[0], tg_macs[1], macs["eth2"], *default_ips(1))]
            yield LabSession(streams=streams, info=info)
        finally:
            masked = _mask_signals()
            try:
                info["teardown_s"] = self._teardown(st)
            finally:
                _restore_signals(masked)
                signal.signal(signal.SIGTERM, old_term) if old_term is not None else None
                if lock is not None:
                    lock.__exit__(None, None, None)

    def _cable(self, st: RunState) -> tuple[list[Port], list[str]]:
        """Generator namespace tg0/tg1 cabled by veths to the node NIC ports ``nics`` (this host)."""
        p = self.params
        st.tg_netns = f"{PREFIX}{st.run_id}-tg"
        st.host_links = list(p.nics)
        st.save()
        nl.create_namespace(st.tg_netns)
        for side, nic in enumerate(p.nics):
            nl.veth(None, nic, st.tg_netns, f"tg{side}", self.link_mtu)
        return ([Port(st.tg_netns, "tg0"), Port(st.tg_netns, "tg1")],
                [nl.mac(st.tg_netns, "tg0"), nl.mac(st.tg_netns, "tg1")])

    def _apply(self, objects: list[dict], namespace: str) -> dict:
        from kubernetes import client, utils

        api = self.api()
        core = client.CoreV1Api(api)
        custom = client.CustomObjectsApi(api)
        pod_created = None
        for obj in objects:
            if obj["kind"] == "Namespace":
                core.create_namespace(obj)
            elif obj["kind"] == "NetworkAttachmentDefinition":
                if self.params.cabling == "local" and json.loads(obj["spec"]["config"])["type"] == "bridge":
                    self._node_bridge(obj)
                custom.create_namespaced_custom_object("k8s.cni.cncf.io", "v1", namespace,
                                                       "network-attachment-definitions", obj)
            elif obj["kind"] == "Pod":
                pod_created = time.monotonic()
                core.create_namespaced_pod(namespace, obj)
            else:
                utils.create_from_dict(api, obj)
        return self._wait_ready(namespace, "pod1", pod_created)

    def _node_bridge(self, nad: dict) -> None:
        """linux-bridge, local cabling: the bridge the NAD names, with the NIC port on it."""
        cfg = json.loads(nad["spec"]["config"])
        side = int(nad["metadata"]["name"].rsplit("-", 1)[1])
        self._run.host_links.append(cfg["bridge"])
        self._run.save()
        nl.bridge(None, cfg["bridge"], [self.params.nics[side]], self.link_mtu)

    def _wait_ready(self, namespace: str, name: str, created: float) -> dict:
        from kubernetes import client

        core = client.CoreV1Api(self.api())
        deadline = created + self.params.ready_timeout_s
        attached = None
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
            time.sleep(0.1)

    def _teardown(self, st: RunState) -> float:
        t0 = time.monotonic()
        errors = delete_run(st)
        if errors:
            raise LabError("teardown incomplete (`nfvlab lab clean` retries): " + "; ".join(errors))
        return round(time.monotonic() - t0, 3)


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


def _interface_macs(pod: dict) -> dict[str, str]:
    status = json.loads(pod["metadata"]["annotations"][render.STATUS_ANNOTATION])
    return {s["interface"]: s["mac"] for s in status if s.get("interface") and s.get("mac")}


def _why_not_ready(core, pod: dict) -> str:
    """The most telling reason: a scheduler condition, a container waiting reason, or the last event."""
    st = pod.get("status", {})
    for c in st.get("conditions", []):
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            return c.get("message") or c.get("reason") or "not scheduled"
    for cs in st.get("containerStatuses", []) or []:
        w = (cs.get("state") or {}).get("waiting") or (cs.get("state") or {}).get("terminated")
        if w:
            why = f"{w.get('reason')}: {w.get('message') or ''}".strip(": ")
            try:  # a failed start-up script says why in its log
                log = core.read_namespaced_pod_log(pod["metadata"]["name"], pod["metadata"]["namespace"],
                                                   container=cs["name"], tail_lines=3)
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


def delete_run(st: RunState, timeout_s: float = 60.0) -> list[str]:
    """Delete the run's namespace (waiting until it is gone), then its host links and generator namespace."""
    errors = []
    try:
        from kubernetes import client
        from kubernetes.client.rest import ApiException

        core = client.CoreV1Api(_client(st.kubeconfig, st.context))
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
    if st.tg_netns:
        try:
            nl.delete_namespace(st.tg_netns)
        except Exception as err:
            errors.append(f"namespace {st.tg_netns}: {err}")
    if not errors:
        st.path.unlink(missing_ok=True)
    return errors


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


def _catch_sigterm():
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None
    owner = os.getpid()

    def on_term(signum, frame):
        if os.getpid() != owner:
            os._exit(128 + signum)
        raise Terminated("SIGTERM")

    return signal.signal(signal.SIGTERM, on_term)


def _mask_signals() -> dict:
    import threading

    if threading.current_thread() is not threading.main_thread():
        return {}
    return {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}


def _restore_signals(masked: dict) -> None:
    for s, h in masked.items():
        signal.signal(s, h)
