"""Experiment E's lab: two "nodes" (network namespaces) cabled by one link, a pod on each, one CNI data path.

    with CniLab(CniPath("vxlan", 3000)) as lab:
        lab.address("pod2")           # where node1 / pod1 reach node2's pod
        lab.ns("node1")               # the namespace a client runs in

Addresses (all in 198.18.0.0/15, the benchmarking range):

- node link ``198.18.0.0/24``: node1 ``.1``, node2 ``.2``; SR-IOV analogue pods ``.11``, ``.12``;
- pods of node k: ``198.18.k.0/24`` (gateway ``.1`` on the node, pod ``.2``);
- VXLAN/IPIP overlay between the nodes: ``198.18.3.0/24`` (node k: ``.k``);
- the ClusterIP-style service: :data:`SERVICE_IP` port 80, DNATed to node2's pod by an nftables
  table on both nodes (kube-proxy programs every node: the client's own node does the DNAT).

The data paths (:data:`nfvlab.scenario.cni.DATA_PATHS`): ``direct`` routes each node's pod subnet
via the other node's link address (Calico without a tunnel); ``vxlan`` and ``ipip`` route it over a
kernel tunnel device per node (Flannel/Cilium-like; pod MTU = link MTU - overhead); ``sriov-analogue``
gives each pod a bridge-mode macvlan on the node link itself (a direct port, no node stack in between).

Everything is a :class:`~nfvlab.labs.embedded.lab.Lab` resource: recorded in the state record before
it exists and torn down on success, error, Ctrl-C and SIGTERM (``nfvlab lab clean`` after kill -9).
"""
from __future__ import annotations

import functools
import os
import secrets
import shutil
import subprocess

from nfvlab.labs.base import LabError
from nfvlab.labs.embedded.lab import ROOT_NEEDED, Lab
from nfvlab.scenario import Resources, Stream
from nfvlab.scenario.cni import CniPath
from nfvlab.system import netns as nl

__all__ = ["LINK_IF", "SERVICE_IP", "SERVICE_PORT", "CniLab", "path_problem", "problems"]

LINK_IF = "link0"
"""The inter-node link's interface in each node namespace."""
SERVICE_IP, SERVICE_PORT = "198.19.0.10", 80
SERVICE_NET = "198.19.0.0/24"
UNDERLAY = "198.18.0"
OVERLAY = "198.18.3"
VXLAN_ID, VXLAN_PORT = 42, 4789
#: Executables this lab and its tools need, with their Debian packages (scripts/debian-packages.txt).
TOOL_PACKAGES = {"ip": "iproute2", "ss": "iproute2", "unshare": "util-linux", "nft": "nftables",
                 "iperf3": "iperf3", "wrk": "wrk", "nginx": "nginx-light", "ethtool": "ethtool"}


def missing_tools() -> str | None:
    """One line naming missing executables and their Debian packages (None: all there)."""
    missing = [t for t in TOOL_PACKAGES if not shutil.which(t)]
    if not missing:
        return None
    packages = sorted({TOOL_PACKAGES[t] for t in missing})
    return f"missing {', '.join(missing)} (Debian package {', '.join(packages)}): run `./run setup`"


@functools.cache
def tunnel_problem(kind: str) -> str | None:
    """Why this kernel cannot make a ``kind`` tunnel device (None: it can).

    Tried in a throwaway network namespace (``unshare -n``): it vanishes with the
    probe process, so nothing is left to clean even after kill -9.
    """
    args = {"ipip": ["type", "ipip", "local", "198.18.0.1", "remote", "198.18.0.2"],
            "vxlan": ["type", "vxlan", "id", "1", "dstport", str(VXLAN_PORT), "local", "198.18.0.1",
                      "remote", "198.18.0.2"]}[kind]
    out = subprocess.run(["unshare", "-n", "ip", "link", "add", "probe0", *args],
                         check=False, capture_output=True, text=True)
    if out.returncode == 0:
        return None
    return f"the kernel cannot create {kind} devices ({out.stderr.strip() or out.returncode})"


def path_problem(path: CniPath) -> str | None:
    """Why this host cannot realize ``path`` (None: it can); creates nothing that outlives the call."""
    if path.data_path in ("vxlan", "ipip"):
        return tunnel_problem(path.data_path)
    return None


def problems(path: CniPath) -> list[str]:
    """Why this host cannot build the lab for ``path`` (empty: it can); creates nothing."""
    if os.geteuid() != 0:
        return [ROOT_NEEDED]
    missing = missing_tools()
    if missing:
        return [missing]
    why = path_problem(path)
    return [f"data path {path.data_path}: not realizable here: {why}"] if why else []


class CniLab(Lab):
    """Two nodes, a pod on each, one data path and the service, as one embedded lab."""

    def __init__(self, path: CniPath, *, service: bool = True, segmentation_offload: bool = True) -> None:
        """LabError with the first reason this host cannot build ``path``, before anything exists.

        ``segmentation_offload=False`` switches TSO and GSO off on every interface of the nodes and
        pods (``ethtool -K IF tso off gso off``), so the stack handles packets of at most the MTU and
        per-packet costs scale with it, as on a real NIC link (docs/experiment-e.md, "Offloads").
        """
        if not isinstance(path, CniPath):
            raise LabError(f"path={path!r}: give a nfvlab.scenario.cni.CniPath")
        reasons = problems(path)
        if reasons:
            raise LabError(reasons[0])
        # Lab.__init__ realizes a catalogue scenario; this lab has its own builder, so set its fields here.
        self.scenario = None
        self.core_plan = None
        self.model = f"cni-{path.data_path}"
        self.resources = Resources()
        self.mtu = path.link_mtu_bytes
        self.persistent = False
        self.label = f"cni {path.label}"
        self._builder = CniLab._build
        self.lab_id = secrets.token_hex(3)
        self.streams: list[Stream] = []
        self.state = None
        self._lock = None
        self._signals = None
        self.setup_s = None
        self.teardown_s = None
        self.path = path
        self.service = service
        self.segmentation_offload = segmentation_offload

    # -- where things are -------------------------------------------------
    def address(self, where: str) -> str:
        """IPv4 address of ``node1``, ``node2``, ``pod1``, ``pod2`` or ``service``."""
        if where == "service":
            return SERVICE_IP
        k = int(where[-1])
        if where.startswith("node"):
            return f"{UNDERLAY}.{k}"
        if self.path.data_path == "sriov-analogue":
            return f"{UNDERLAY}.{10 + k}"
        return f"198.18.{k}.2"

    def shape_link(self, rate_bits_s: float, burst_bytes: int = 32_768, limit_bytes: int = 262_144) -> None:
        """A token-bucket shaper of ``rate_bits_s`` on node1's end of the node link (node1 -> node2)."""
        nl.shape_tbf(self.ns("node1"), LINK_IF, rate_bits_s / 8, burst_bytes, limit_bytes)

    # -- building ---------------------------------------------------------
    def _build(self) -> list[Stream]:
        p = self.path
        nodes = [self.add_namespace(f"node{k}") for k in (1, 2)]
        pods = [self.add_namespace(f"pod{k}") for k in (1, 2)]
        # The link is created inside node1 and its peer moved into node2: one netlink call.
        nl.veth(nodes[0], LINK_IF, nodes[1], LINK_IF, p.link_mtu_bytes)
        for k, node in enumerate(nodes, 1):
            nl.add_address(node, LINK_IF, f"{UNDERLAY}.{k}/24")
            nl.set_sysctl(node, "net/ipv4/ip_forward", "1")
        if p.data_path == "sriov-analogue":
            for k, (node, pod) in enumerate(zip(nodes, pods), 1):
                nl.macvlan_into(node, LINK_IF, pod, "eth0", p.pod_mtu_bytes)
                nl.add_address(pod, "eth0", f"{self.address(f'pod{k}')}/24")
        else:
            for k, (node, pod) in enumerate(zip(nodes, pods), 1):
                nl.veth(node, f"vpod{k}", pod, "eth0", p.pod_mtu_bytes)
                nl.add_address(node, f"vpod{k}", f"198.18.{k}.1/24")
                nl.add_address(pod, "eth0", f"198.18.{k}.2/24")
                _ip(pod, "route", "add", "default", "via", f"198.18.{k}.1")
            self._routes(nodes)
        # Node1 sends the service range towards node2 (a cluster's default route), rule or not.
        _ip(nodes[0], "route", "add", SERVICE_NET, "via", f"{UNDERLAY}.2")
        if self.service:
            for node in nodes:
                self._service_rule(node)
        if not self.segmentation_offload:
            for ns in (*nodes, *pods):
                _offloads_off(ns)
        return []

    def _routes(self, nodes: list[str]) -> None:
        p = self.path
        for k, node in enumerate(nodes, 1):
            other = 3 - k
            pod_net = f"198.18.{other}.0/24"
            if p.data_path == "direct":
                _ip(node, "route", "add", pod_net, "via", f"{UNDERLAY}.{other}")
                continue
            dev = "vxlan0" if p.data_path == "vxlan" else "ipip0"
            kind = (["type", "vxlan", "id", str(VXLAN_ID), "dstport", str(VXLAN_PORT), "dev", LINK_IF]
                    if p.data_path == "vxlan" else ["type", "ipip"])
            _ip(node, "link", "add", dev, *kind, "local", f"{UNDERLAY}.{k}", "remote", f"{UNDERLAY}.{other}")
            _ip(node, "link", "set", dev, "mtu", str(p.pod_mtu_bytes), "up")
            _ip(node, "addr", "add", f"{OVERLAY}.{k}/24", "dev", dev)
            _ip(node, "route", "add", pod_net, "via", f"{OVERLAY}.{other}", "dev", dev, "onlink")

    def _service_rule(self, node: str) -> None:
        """The ClusterIP: DNAT of SERVICE_IP:80 to node2's pod, for locally sent and forwarded packets."""
        table = f"nfvl-{self.lab_id}"
        rules = (f"table ip {table} {{\n"
                 f" chain output {{ type nat hook output priority -100; "
                 f"ip daddr {SERVICE_IP} tcp dport {SERVICE_PORT} dnat to {self.address('pod2')}:80; }}\n"
                 f" chain prerouting {{ type nat hook prerouting priority -100; "
                 f"ip daddr {SERVICE_IP} tcp dport {SERVICE_PORT} dnat to {self.address('pod2')}:80; }}\n"
                 f"}}\n")
        # The table lives in the node's namespace and goes with it at teardown.
        out = subprocess.run(["ip", "netns", "exec", node, "nft", "-f", "-"], input=rules,
                             check=False, capture_output=True, text=True)
        if out.returncode != 0:
            raise LabError(f"nft in {node}: {out.stderr.strip()}")


def _offloads_off(ns: str) -> None:
    """TSO and GSO off on every interface of ``ns`` but lo (one LabError naming the one that refuses)."""
    out = subprocess.run(["ip", "-n", ns, "-o", "link", "show"], check=True, capture_output=True, text=True)
    for line in out.stdout.splitlines():
        ifname = line.split(":", 2)[1].strip().split("@")[0]
        if ifname == "lo":
            continue
        r = subprocess.run(["ip", "netns", "exec", ns, "ethtool", "-K", ifname, "tso", "off", "gso", "off"],
                           check=False, capture_output=True, text=True)
        if r.returncode != 0:
            raise LabError(f"ethtool -K {ifname} tso off gso off in {ns}: {r.stderr.strip() or r.returncode}")


def _ip(ns: str, *args: str) -> None:
    out = subprocess.run(["ip", "-n", ns, *args], check=False, capture_output=True, text=True)
    if out.returncode != 0:
        raise LabError(f"ip -n {ns} {' '.join(args)}: {out.stderr.strip()}")
