"""The node's networking: its address plan, the node veth (the kubelet's node IP) and the CNI set-up
(Multus delegating pods' primary interface to a bridge, beside the built extra CNI plugins)."""
from __future__ import annotations

import json
from pathlib import Path

from nfvlab.labs.kubernetes.local_cluster.build import CNI_PLUGINS_DIR, EXTRA_CNI, extra_cni_binary
from nfvlab.labs.kubernetes.local_cluster.host import _run

SERVICE_CIDR = "198.19.0.0/16"          # inside the benchmarking range 198.18.0.0/15
POD_SUBNET = "198.18.250.0/24"          # host-local IPAM of the primary (bridge) network
NODE_IP = "198.18.251.1"                # on one end of a veth pair (no dummy links on this kernel)
NODE_PREFIX = 30
NODE_LINK = "nk8s-node"
NODE_PEER = "nk8s-nodep"
BRIDGE = "nk8sbr0"                      # created by the bridge CNI plugin, deleted at teardown


def add_node_link() -> None:
    """The node's address, on one end of a veth pair (both ends up)."""
    _run(["ip", "link", "add", NODE_LINK, "type", "veth", "peer", "name", NODE_PEER])
    _run(["ip", "addr", "add", f"{NODE_IP}/{NODE_PREFIX}", "dev", NODE_LINK])
    _run(["ip", "link", "set", NODE_LINK, "up"])
    _run(["ip", "link", "set", NODE_PEER, "up"])


def write_cni(cni: Path, multus: Path, kubeconfig: Path, log_dir: Path) -> None:
    """containerd's CNI bin dir (the host's plugins, Multus, the built extra plugins) and config under
    ``cni``: Multus delegating to the bridge."""
    for p in CNI_PLUGINS_DIR.iterdir():
        (cni / "bin" / p.name).symlink_to(p)
    (cni / "bin" / "multus").symlink_to(multus)
    for name in EXTRA_CNI:
        built = extra_cni_binary(name)
        if built is not None:
            (cni / "bin" / name).symlink_to(built)
    conf = {
        "cniVersion": "0.3.1",
        "name": "multus-cni-network",
        "type": "multus",
        "kubeconfig": str(kubeconfig),
        "binDir": str(cni / "bin"),
        "cniDir": str(cni / "cache" / "multus"),
        "confDir": str(cni / "net.d"),
        "logFile": str(log_dir / "multus.log"),
        "logLevel": "verbose",
        "delegates": [{
            "cniVersion": "0.3.1",
            "name": "nfvlab-primary",
            "type": "bridge",
            "bridge": BRIDGE,
            "isGateway": False,
            "ipMasq": False,
            "ipam": {"type": "host-local", "ranges": [[{"subnet": POD_SUBNET}]],
                     "dataDir": str(cni / "ipam")},
        }],
    }
    (cni / "net.d" / "00-multus.conf").write_text(json.dumps(conf, indent=1))
