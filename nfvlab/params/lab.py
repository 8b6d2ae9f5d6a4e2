"""The lab profile (``params/lab.yaml``): which lab runs an experiment, and a Kubernetes lab's cluster."""
from __future__ import annotations

from typing import Annotated, Literal, Optional

from pydantic import Field, field_validator, model_validator

from nfvlab import linerate
from nfvlab.params.base import _MAC, _Strict
from nfvlab.params.generator import AnyGenerator, GeneratorParams


class K8sPlacement(_Strict):
    """Where one pod of a scenario goes: a named node or nodes carrying labels (one of the two)."""

    node: Optional[str] = Field(default=None, min_length=1)
    """Node name (``kubernetes.io/hostname``)."""
    node_labels: dict[str, str] = Field(default_factory=dict)
    """Node labels the pod's node must carry; the scheduler picks among the nodes that do."""

    @model_validator(mode="after")
    def _one(self) -> "K8sPlacement":
        if (self.node is None) == (not self.node_labels):
            raise ValueError("give node or node_labels (one of the two)")
        return self


class KubernetesParams(_Strict):
    """The ``kubernetes:`` block of a lab profile with ``kind: kubernetes`` (docs/kubernetes.md)."""

    kubeconfig: Optional[str] = None
    """Kubeconfig file; default ``$KUBECONFIG``, else ``~/.kube/config``."""
    context: Optional[str] = None
    """Kubeconfig context (default: the file's current context)."""
    namespace_prefix: str = Field(default="nfvlab", pattern=r"^[a-z0-9]([a-z0-9-]{0,40}[a-z0-9])?$")
    """Every run gets its own namespace ``<prefix>-<run id>``, labelled with the run id."""
    node: str = Field(min_length=1)
    """Worker node the scenario's pods are placed on (by node selector) unless ``placement``
    says otherwise; its kubelet configuration is the lab's provenance."""
    nics: list[str] = Field(min_length=2, max_length=2)
    """The worker node's two NIC ports (netdevs) the generator is cabled to: the macvlan
    masters, bridge ports or host-devices of the models' secondary networks."""
    cabling: Literal["local", "external"] = "external"
    """``local``: the node is this host; nfvlab creates a generator namespace here cabled by
    veths to ``nics`` (the embedded generator drives it). ``external``: the generator (TRex)
    is cabled to ``nics`` by wires; give its port MACs in ``tg_macs``."""
    tg_macs: Optional[list[str]] = None
    """MACs of the generator's two ports (``external`` cabling): the pod's static neighbours."""
    image: str = "nfvlab.local/nf:1"
    """Image of the NF pods: busybox-like, with ``ip`` (addr/route/neigh) and ``sleep``."""
    image_pull_policy: Literal["Never", "IfNotPresent", "Always"] = "IfNotPresent"
    networks: dict[str, list[str]] = Field(default_factory=dict)
    """Model -> two existing NetworkAttachmentDefinitions (``namespace/name``) to use
    instead of rendering them (e.g. a Userspace CNI or VPP network a cluster already has)."""
    sriov_mode: Literal["dpdk", "netdevice"] = "dpdk"
    """``sriov``'s pod: ``dpdk`` (the draft's Figure 10: testpmd on two vfio-pci VFs of
    ``sriov_dpdk_resource``) or ``netdevice`` (the kernel forwarder on two netdevice VFs of
    ``sriov_resource``)."""
    sriov_resource: str = "intel.com/intel_sriov_netdevice"
    """Device-plugin resource of the SR-IOV netdevice VFs (two per pod, ``sriov_mode: netdevice``)."""
    sriov_dpdk_resource: str = Field(default="intel.com/intel_sriov_dpdk",
                                     pattern=r"^[A-Za-z0-9.-]+/[A-Za-z0-9_.-]+$")
    """Device-plugin resource of the SR-IOV VFs bound to vfio-pci (two per pod, ``sriov_mode: dpdk``);
    the pod reads their PCI addresses from the plugin's ``PCIDEVICE_<RESOURCE>`` variable."""
    device_resources: dict[str, dict[str, Annotated[int, Field(ge=1)]]] = Field(default_factory=dict)
    """Model -> device-plugin resources each NF pod of it requests, e.g.
    ``{afxdp-cni: {afxdp/myPool: 2}}``; checked against node allocatable before anything exists."""
    placement: dict[Annotated[str, Field(pattern=r"^(pod[1-9]|noisy)$")], K8sPlacement] = Field(
        default_factory=dict)
    """Pod (``pod1``, ``pod2`` of a chain, ``noisy``) -> node or node labels; default: ``node``
    (the noisy neighbour: the node ``pod1`` was placed on)."""
    tolerations: list[dict[str, str]] = Field(default_factory=list)
    """Tolerations every pod carries (nodes tainted for benchmarking), as in a pod spec."""
    calico_vpp_memif_ports: Optional[str] = Field(default=None, pattern=r"^(tcp|udp):\d+(-\d+)?(,(tcp|udp):\d+(-\d+)?)*$")
    """``vpp`` through Calico/VPP's memif (seed 003): the pod annotation
    ``cni.projectcalico.org/vppExtraMemifPorts`` with these ports, e.g. ``udp:1024-65535``;
    needs Calico/VPP as the cluster's primary CNI (detected, never installed)."""
    dpdk_image: str = "nfvlab.local/dpdk:1"
    """Image of the DPDK pods (the user-space and AF_XDP models): ``dpdk-testpmd`` with the
    virtio_user, memif, af_xdp and af_packet drivers, and ``/bin/sh`` (docs/kubernetes.md has the
    recipe; the local cluster imports one built from this host's DPDK)."""
    vswitch_image: str = "nfvlab.local/ovs-dpdk:1"
    """Image of the node's OVS-DPDK vSwitch when nfvlab runs it (``cabling: local``: the local node's
    vSwitch is nfvlab's, on a real cluster it is the node's own and never installed)."""
    vswitch_bridge: str = Field(default="br0", pattern=r"^[A-Za-z0-9_.-]{1,15}$")
    """OVS bridge the Userspace CNI adds the pods' vhost-user ports to."""
    vhost_dir: str = Field(default="/run/nfvlab/k8s-vhost", pattern=r"^/\S+$")
    """Node directory holding each run's vhost-user sockets (the DPDK pods' ``shared-dir``
    hostPath volume; the Userspace CNI and OVS use the same path)."""
    vpp_bridge_id: int = Field(default=1, ge=1)
    """``vpp`` (Userspace CNI, VPP engine): the node VPP's bridge domain the pods' memif ports join
    (the node's NIC ports must be in it: the node's VPP, configured by its operator)."""
    afxdp_resource: Optional[str] = Field(default="afxdp/nfvlab", pattern=r"^[A-Za-z0-9.-]+/[A-Za-z0-9_.-]+$")
    """``afxdp-cni``: the AF_XDP device plugin's pool resource a DPDK pod asks two netdevs of; ``null``:
    no device plugin, the AF_XDP CNI moves the node's ``nics`` into the pod (its NADs name them as
    ``deviceID``, which the plugin would pass): the local cluster, whose veth NIC ports no pool takes."""
    userspace_cni_kubeconfig: Optional[str] = None
    """Kubeconfig on the node the Userspace CNI reads the pod with (its ``kubeconfig`` key);
    default: ``kubeconfig`` (right for ``cabling: local``, where the node is this host)."""
    noisy_image: Optional[str] = None
    """Image with ``stress-ng`` for the noisy-neighbour pod; unset: the noisy neighbour is not
    realizable."""
    cni_conf_dir: Optional[str] = None
    """The node's CNI configuration directory, recorded when readable from here (the node is
    this host, ``cabling: local``)."""
    ready_timeout_s: float = Field(default=60.0, gt=0, le=3600)
    """How long pods may take to become Ready before the run fails with the scheduler's reason."""
    schema_version: str = Field(default="1.37.0", pattern=r"^1\.\d+\.\d+$")
    """Kubernetes version whose OpenAPI schemas manifests are validated against (strict)."""

    @field_validator("tg_macs")
    @classmethod
    def _tg_macs(cls, v: Optional[list[str]]) -> Optional[list[str]]:
        if v is not None and (len(v) != 2 or not all(_MAC.match(m) for m in v)):
            raise ValueError("tg_macs: two MAC addresses aa:bb:cc:dd:ee:ff, one per generator port")
        return [m.lower() for m in v] if v else v

    @model_validator(mode="after")
    def _cabling(self) -> "KubernetesParams":
        if self.cabling == "external" and self.tg_macs is None:
            raise ValueError("cabling external: give tg_macs (the generator ports' MACs)")
        return self


class LabParams(_Strict):
    """Which lab runs the experiment (the lab profile, ``params/lab.yaml``)."""

    kind: Literal["embedded", "kubernetes"] = "embedded"
    """``embedded``: network namespaces on this host; ``kubernetes``: a cluster (docs/kubernetes.md)."""
    port_speed: Literal["1GbE", "10GbE", "25GbE", "40GbE", "100GbE"] = "10GbE"
    """Nominal speed of the traffic ports (bounds requested rates)."""
    mtu: int = Field(default=9000, ge=1280, le=linerate.MAX_FRAME_BYTES - 18)
    """MTU of every link the lab creates, bytes. A model whose ports carry less
    (XDP and OVS/DPDK ports: 1500) uses its own; frames above MTU + 18 B are rejected."""
    generator: AnyGenerator = Field(default_factory=GeneratorParams)
    calibration: Optional[str] = None
    """Calibration file (``nfvlab calibrate --out``) the generator-limited flag is
    judged against; default ``$NFVLAB_STATE/calibration.json``."""
    kubernetes: Optional[KubernetesParams] = None
    """The cluster, with ``kind: kubernetes``."""

    @model_validator(mode="after")
    def _kind_settings(self) -> "LabParams":
        if self.kind == "kubernetes" and self.kubernetes is None:
            raise ValueError("kind kubernetes needs a kubernetes: block (node, nics, ...)")
        if self.kind != "kubernetes" and self.kubernetes is not None:
            raise ValueError(f"a kubernetes: block goes with kind kubernetes, not {self.kind}")
        return self
