"""The cluster's private containerd: its configuration, ``ctr`` against it, and the images it is given
(the build's, and those of this host's own programs)."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Callable

from nfvlab.labs.kubernetes import host_images
from nfvlab.labs.kubernetes.local_cluster.build import images
from nfvlab.labs.kubernetes.local_cluster.host import _run


def config_text(cluster_dir: Path, socket: Path, sandbox_image: str) -> str:
    """containerd's config.toml: state under ``cluster_dir``/containerd, CRI with runc and the cluster's CNI."""
    d = cluster_dir / "containerd"
    return f"""version = 2
root = "{d / 'root'}"
state = "{d / 'state'}"
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.aufs", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = "{socket}"

[ttrpc]
  address = "{socket}.ttrpc"

[debug]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{sandbox_image}"
  restrict_oom_score_adj = true
  disable_hugetlb_controller = false
  tolerate_missing_hugetlb_controller = true
  disable_apparmor = true
  enable_selinux = false
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "{shutil.which('runc')}"
        Root = "{cluster_dir / 'runc'}"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{cluster_dir / 'cni' / 'bin'}"
    conf_dir = "{cluster_dir / 'cni' / 'net.d'}"
    max_conf_num = 1
"""


def ctr(socket: Path, *args, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
    return _run(["ctr", "--address", socket, "-n", "k8s.io", *args], check=check, timeout=timeout)


def import_images(run_ctr: Callable[..., subprocess.CompletedProcess], build_dir: Path, work_dir: Path) -> None:
    """Import the build's images and, where installed, the host programs' into containerd (with
    ``run_ctr``, :func:`ctr` on its socket); ``work_dir`` holds the archives meanwhile."""
    for key, im in images(build_dir).items():
        run_ctr("images", "import", "--platform", "linux/amd64",
                build_dir / "images" / im["tar"])
    # Images of the host's own programs (the node is this host): the noisy neighbour, the
    # DPDK pod and the node's vSwitch, each only where its program is installed.
    for image in (host_images.stress_image(), host_images.dpdk_image(), host_images.ovs_image()):
        if not os.path.exists(image.programs[0]):
            continue
        tar = work_dir / (image.name.split("/")[-1].replace(":", "-") + ".tar")
        host_images.write_archive(image, tar)
        run_ctr("images", "import", "--platform", "linux/amd64", tar)
        tar.unlink()
    listed = run_ctr("images", "ls", "-q").stdout.split()
    for im in images(build_dir).values():
        if im["name"] not in listed:
            raise RuntimeError(f"image {im['name']} not in containerd after import: {listed}")
