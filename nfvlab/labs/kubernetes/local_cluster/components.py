"""The cluster's processes: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and the kubelet,
as command lines (and the kubelet's configuration) over the run dir ``d``; containerd is in
:mod:`~nfvlab.labs.kubernetes.local_cluster.containerd`."""
from __future__ import annotations

from pathlib import Path

from nfvlab.labs.kubernetes.local_cluster.network import NODE_IP, SERVICE_CIDR

NODE_NAME = "nfvlab-k8s"
API_PORT = 6443
API_URL = f"https://127.0.0.1:{API_PORT}"
# 2379-2381 etcd, 6443 apiserver, 10248/10250 kubelet, 10257 controller-manager, 10259 scheduler
PORTS = (2379, 2380, 2381, 6443, 10248, 10250, 10257, 10259)


def etcd_cmd(bin_dir: Path, d: Path) -> list:
    return [
        bin_dir / "etcd", "--name", "nfvlab", "--data-dir", d / "etcd",
        "--listen-client-urls", "http://127.0.0.1:2379",
        "--advertise-client-urls", "http://127.0.0.1:2379",
        "--listen-peer-urls", "http://127.0.0.1:2380",
        "--initial-advertise-peer-urls", "http://127.0.0.1:2380",
        "--initial-cluster", "nfvlab=http://127.0.0.1:2380",
        "--listen-metrics-urls", "http://127.0.0.1:2381",
        "--unsafe-no-fsync", "--log-level", "warn"]


def apiserver_cmd(bin_dir: Path, d: Path) -> list:
    pki = d / "pki"
    return [
        bin_dir / "kube-apiserver",
        "--etcd-servers=http://127.0.0.1:2379", "--bind-address=127.0.0.1",
        f"--secure-port={API_PORT}", "--advertise-address=127.0.0.1",
        f"--cert-dir={d / 'apiserver-certs'}", f"--token-auth-file={pki / 'tokens.csv'}",
        "--authorization-mode=Node,RBAC",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-account-key-file={pki / 'sa.pub'}",
        f"--service-account-signing-key-file={pki / 'sa.key'}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--endpoint-reconciler-type=none", "--allow-privileged=true",
        "--kubelet-preferred-address-types=InternalIP", "--profiling=false"]


def _common(kubeconfig: Path) -> list:
    """The controller-manager's and the scheduler's flags: the admin's kubeconfig, no leader election."""
    return [f"--kubeconfig={kubeconfig}", f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}", "--bind-address=127.0.0.1",
            "--leader-elect=false"]


def controller_manager_cmd(bin_dir: Path, d: Path, kubeconfig: Path, ca_file: Path) -> list:
    return [
        bin_dir / "kube-controller-manager", *_common(kubeconfig),
        f"--service-account-private-key-file={d / 'pki' / 'sa.key'}",
        f"--root-ca-file={ca_file}", "--controllers=*",
        f"--flex-volume-plugin-dir={d / 'flexvolume'}",
        f"--cert-dir={d / 'controller-manager-certs'}"]


def scheduler_cmd(bin_dir: Path, d: Path, kubeconfig: Path) -> list:
    return [bin_dir / "kube-scheduler", *_common(kubeconfig), f"--cert-dir={d / 'scheduler-certs'}"]


def kubelet_config(d: Path, containerd_socket: Path, extra: dict) -> dict:
    """The kubelet's configuration: the working keys, then ``extra`` on top."""
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": NODE_IP,
        "port": 10250,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": 10248,
        "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False},
                           "x509": {}},
        "authorization": {"mode": "AlwaysAllow"},
        "cgroupDriver": "cgroupfs",
        "failCgroupV1": False,
        "failSwapOn": False,
        "cpuManagerPolicy": "static",
        "kubeReserved": {"cpu": "100m"},
        "allowedUnsafeSysctls": ["net.ipv4.ip_forward"],
        "makeIPTablesUtilChains": False,
        "containerRuntimeEndpoint": f"unix://{containerd_socket}",
        "podLogsDir": str(d / "pod-logs"),
        "volumePluginDir": str(d / "flexvolume"),
        "staticPodPath": "",
        "registerNode": True,
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%",
                         "imagefs.available": "1%", "nodefs.inodesFree": "1%"},
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "nodeStatusUpdateFrequency": "2s",
        "syncFrequency": "5s",
        "fileCheckFrequency": "5s",
        "serializeImagePulls": False,
        **extra,
    }


def kubelet_cmd(bin_dir: Path, d: Path, kubeconfig: Path) -> list:
    return [
        bin_dir / "kubelet", f"--config={d / 'kubelet-config.json'}",
        f"--kubeconfig={kubeconfig}", f"--root-dir={d / 'kubelet'}",
        f"--cert-dir={d / 'kubelet-certs'}", f"--node-ip={NODE_IP}",
        f"--hostname-override={NODE_NAME}", "--v=1"]
