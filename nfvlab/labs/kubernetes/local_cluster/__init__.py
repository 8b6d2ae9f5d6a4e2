"""A real single-node Kubernetes cluster on this host (root only): the local cluster the main job,
the tests and ``nfvlab lab`` commands run the Kubernetes lab on.

``LocalCluster`` runs etcd, kube-apiserver (https://127.0.0.1:6443, token auth), kube-controller-manager,
kube-scheduler, a private containerd and a kubelet built by ``scripts/k8s/build.sh`` (binaries cached in
``${NFVLAB_CACHE:-/var/cache/nfvlab}/k8s/<key>/``). Pods get their primary interface from Multus
delegating to a bridge (no gateway, host-local IPAM in 198.18.250.0/24); services use 198.19.0.0/16.

    with LocalCluster() as k8s:
        api = k8s.api_client()                   # kubernetes.client.ApiClient
        ...

Everything the cluster creates is first recorded in a state file (``/run/nfvlab/k8s-cluster.json``):
processes (pid + start time), the run dir, links, mounts, the sysctls the kubelet rewrites (a
snapshot), hugepages, the host directories it may create, cgroups and iptables chains. Leaving the
``with`` block (normally, on an exception, Ctrl-C or SIGTERM) stops pods, then the kubelet and
containerd, then the scheduler and controller-manager, then the apiserver and last etcd, and puts
the host back as it was. After a kill -9, ``clean_leftovers()`` does the same from the state file
(``LocalCluster`` calls it first whenever it finds one).

The cluster takes the host-wide lab lock (``/run/nfvlab/lock``, the embedded lab's flock) for its
lifetime: it changes host-wide state (sysctls, hugepages, cgroups) that a lab must not see change.

Modules: :mod:`.build` (the pinned binaries, whether a cluster can run), :mod:`.state` (run dir, state
file, host lock), :mod:`.host` (host helpers and the snapshots taken before start), :mod:`.network`
(node veth, CNI), :mod:`.credentials` (token, service-account keys, kubeconfig), :mod:`.components`
(the control plane's and the kubelet's command lines), :mod:`.containerd` (its config, ``ctr``, images),
:mod:`.cluster` (:class:`LocalCluster`), :mod:`.teardown` (undoing a state file) and :mod:`.command`
(``nfvlab cluster``, also ``python -m nfvlab.labs.kubernetes.local_cluster``).
"""
from nfvlab.labs.kubernetes.local_cluster.build import (ClusterUnavailable, binaries_dir, images, nad_crd_manifest,
                                                        unavailable_reason)
from nfvlab.labs.kubernetes.local_cluster.cluster import LocalCluster, install_nad_crd
from nfvlab.labs.kubernetes.local_cluster.command import main
from nfvlab.labs.kubernetes.local_cluster.state import host_lock, state_file
from nfvlab.labs.kubernetes.local_cluster.teardown import clean_leftovers

__all__ = ["ClusterUnavailable", "LocalCluster", "binaries_dir", "clean_leftovers", "host_lock", "images",
           "install_nad_crd", "main", "nad_crd_manifest", "state_file", "unavailable_reason"]
