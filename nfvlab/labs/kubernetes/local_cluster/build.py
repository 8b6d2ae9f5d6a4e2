"""The pinned build of the local cluster's binaries: where ``scripts/k8s/build.sh`` put them, whether a
cluster can run here, and what the build ships (images.json, Multus' NetworkAttachmentDefinition CRD)."""
from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Optional

REPO = Path(__file__).resolve().parents[4]
BUILD_SH = REPO / "scripts" / "k8s" / "build.sh"

REQUIRED_BINARIES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet",
                     "etcd", "multus", "pause")
HOST_TOOLS = ("containerd", "runc", "ctr", "ip", "iptables-save", "openssl", "mount", "umount")
CNI_PLUGINS_DIR = Path("/usr/lib/cni")


class ClusterUnavailable(RuntimeError):
    """The cluster cannot run here (not root, binaries not built, a tool missing)."""


def _pinned() -> Optional[dict]:
    """The NAME=value pins at the top of scripts/k8s/build.sh."""
    try:
        text = BUILD_SH.read_text()
    except OSError:
        return None
    pins = dict(re.findall(r"^(K8S_VERSION|ETCD_VERSION|MULTUS_VERSION|KWOK_VERSION|RECIPE)=(\S+)$",
                           text, re.M))
    return pins if len(pins) == 5 else None


def version_key() -> Optional[str]:
    p = _pinned()
    if p is None:
        return None
    return (f"k8s-{p['K8S_VERSION']}_etcd-{p['ETCD_VERSION']}_multus-{p['MULTUS_VERSION']}"
            f"_kwok-{p['KWOK_VERSION']}_{p['RECIPE']}")


#: CNI plugins built by scripts/k8s/cni-*.sh (binary name -> script), installed beside Multus
#: when built: the draft's user-space and AF_XDP networks.
EXTRA_CNI = {"userspace": "cni-userspace.sh", "ovs": "cni-ovs.sh", "afxdp": "cni-afxdp.sh"}


def extra_cni_binary(name: str) -> Optional[Path]:
    """The stamped binary of CNI plugin ``name`` (:data:`EXTRA_CNI`) for its script's pinned
    VERSION and RECIPE, else None. Runs nothing."""
    try:
        text = (BUILD_SH.parent / EXTRA_CNI[name]).read_text()
    except OSError:
        return None
    pins = dict(re.findall(r"^(VERSION|RECIPE)=(\S+)$", text, re.M))
    if len(pins) != 2:
        return None
    d = (Path(os.environ.get("NFVLAB_CACHE", "/var/cache/nfvlab")) / "cni"
         / f"{name}-{pins['VERSION']}_{pins['RECIPE']}")
    binary = d / "bin" / name
    return binary if (d / "stamp").is_file() and os.access(binary, os.X_OK) else None


def binaries_dir() -> Optional[Path]:
    """The build output dir (``.../k8s/<key>``, holding bin/, images/, share/) if build.sh finished
    for the pinned versions, else None. Runs nothing."""
    key = version_key()
    if key is None:
        return None
    d = Path(os.environ.get("NFVLAB_CACHE", "/var/cache/nfvlab")) / "k8s" / key
    if not (d / "stamp").is_file():
        return None
    if not all(os.access(d / "bin" / b, os.X_OK) for b in REQUIRED_BINARIES):
        return None
    if not (d / "images" / "images.json").is_file():
        return None
    return d


def unavailable_reason() -> Optional[str]:
    """Why a LocalCluster cannot start here, or None."""
    if os.geteuid() != 0:
        return "the local Kubernetes cluster needs root"
    if binaries_dir() is None:
        return ("Kubernetes binaries not built for the pinned versions: run scripts/k8s/build.sh "
                "(~20-30 min cold, cached afterwards)")
    missing = [t for t in HOST_TOOLS if shutil.which(t) is None]
    if missing:
        return f"host tools missing: {', '.join(missing)} (see scripts/k8s/debian-packages.txt)"
    plugins = [p for p in ("bridge", "host-local", "host-device", "loopback", "static")
               if not (CNI_PLUGINS_DIR / p).exists()]
    if plugins:
        return f"CNI plugins missing in {CNI_PLUGINS_DIR}: {', '.join(plugins)} (containernetworking-plugins)"
    return None


def nad_crd_manifest(build_dir: Optional[Path] = None) -> dict:
    """The NetworkAttachmentDefinition CRD as Multus ships it (share/multus-daemonset.yml)."""
    import yaml
    d = build_dir or binaries_dir()
    if d is None:
        raise ClusterUnavailable("Kubernetes binaries not built")
    for doc in yaml.safe_load_all((d / "share" / "multus-daemonset.yml").read_text()):
        if doc and doc.get("kind") == "CustomResourceDefinition" and \
                doc["metadata"]["name"] == "network-attachment-definitions.k8s.cni.cncf.io":
            return doc
    raise RuntimeError("no NetworkAttachmentDefinition CRD in Multus' multus-daemonset.yml")


def images(build_dir: Optional[Path] = None) -> dict:
    """{"pause": {"name", "tar", "id"}, "nf": {...}} from images.sh's images.json."""
    d = build_dir or binaries_dir()
    if d is None:
        raise ClusterUnavailable("Kubernetes binaries not built")
    return json.loads((d / "images" / "images.json").read_text())
