"""A run's pods on the cluster: waiting until they are Ready (or why not), their ports' MACs, and the
local vSwitch's flows between their ports.
"""
from __future__ import annotations

import json
import subprocess
import time

from nfvlab.labs.base import LabError
from nfvlab.labs.kubernetes import render, userspace
from nfvlab.params import KubernetesParams
from nfvlab.system import signals

#: DPDK pod port kinds on a netdev of the pod's own (af_packet, af_xdp): its MAC is the netdev's.
NETDEV_PORTS = ("direct", "afxdp", "veth")


def wait_ready(api, namespace: str, name: str, created: float, timeout_s: float, interfaces: bool = True) -> dict:
    """Wait until pod ``name`` (created at monotonic time ``created``) is Ready and, with ``interfaces``,
    has its secondary interfaces (Multus' network-status); its dict, the create -> Ready and create ->
    interfaces times. LabError with the scheduler's or kubelet's reason after ``timeout_s``."""
    from kubernetes import client

    core = client.CoreV1Api(api)
    deadline = created + timeout_s
    attached = None if interfaces else created
    while True:
        pod = api.sanitize_for_serialization(core.read_namespaced_pod(name, namespace))
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
                           f"{timeout_s:g} s: {why_not_ready(core, pod)}")
        signals.checkpoint()
        time.sleep(0.1)


#: Lines of a failed pod's log in its error (a DPDK app's reason is a few lines above its exit).
LOG_LINES = 6


def why_not_ready(core, pod: dict) -> str:
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


def port_mac(pod: dict, side: int) -> str:
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


def cross_connect(params: KubernetesParams, model: str, run_id: str, chain: list[str]) -> list[str]:
    """Port-to-port flows on the local vSwitch's bridge (CSIT's xconnect), both ways per link, once
    every DPDK pod forwards (so the vhost-user ports the CNI added exist). Returns the flows."""
    br = params.vswitch_bridge
    flows = []
    for a, b in userspace.cross_connects(model, params, run_id, chain):
        pa, pb = (ofport(x) for x in (a, b))
        for src, dst in ((pa, pb), (pb, pa)):
            flow = f"in_port={src},actions=output:{dst}"
            ovs("ovs-ofctl", "add-flow", br, flow)
            flows.append(flow)
    return flows


def ofport(port: str | int) -> str:
    """The OpenFlow port of a vSwitch port named ``port``, or of the port that asked for number ``port``
    (the OVS CNI's veth: checked, since a port OVS could not give that number gets another)."""
    if isinstance(port, str):
        return ovs("ovs-vsctl", "--timeout=10", "get", "Interface", port, "ofport")
    got = ovs("ovs-vsctl", "--timeout=10", "--bare", "--columns=ofport", "find", "Interface",
               f"ofport_request={port}").split()
    if got != [str(port)]:
        raise LabError(f"no vSwitch port has OpenFlow port {port} (the OVS CNI's ofport_request): {got}")
    return str(port)


def ovs(*argv: str) -> str:
    """An OVS tool on this host against the local node's vSwitch (its default database and bridge
    sockets in /var/run/openvswitch); LabError with its message on failure."""
    out = subprocess.run(list(argv), capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        raise LabError(f"{' '.join(argv)}: {out.stderr.strip()}")
    return out.stdout.strip().strip('"')
