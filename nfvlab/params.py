"""Typed, validated parameters: YAML params files -> pydantic models.

Every params file (``params/*.yaml``) and every CLI invocation goes through these
models, so bad input is rejected in one place, before any lab resource exists,
with a one-line message naming the file, the key and what is allowed::

    params/a.yaml: traffic.frame_sizes.2: 63 is outside 64..9018 (or "IMIX")

Unknown keys, wrong types and out-of-range values are all errors.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal, Optional, Union

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)

from nfvlab import linerate
from nfvlab.scenario.catalogue import MODEL_NAMES
from nfvlab.scenario.cni import (DATA_PATHS, HTTP_DIRECTIONS, MTU_MAX_BYTES, MTU_MIN_BYTES, TCP_DIRECTIONS,
                                 CniConfigError, CniGrid, CniPath, IperfParams, WrkParams)


class ParamsError(ValueError):
    """Invalid parameters; ``str(err)`` is the one-line message for the user."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def parse_frame_size(v: Any) -> Union[int, str]:
    """A frame size (64..9018 B, or "IMIX") from YAML or CLI text; ``ValueError`` otherwise."""
    if isinstance(v, bool):
        raise ValueError(f"{v!r} is not a frame size (use 64..9018 or \"IMIX\")")
    if isinstance(v, str):
        if v.strip().upper() == "IMIX":
            return "IMIX"
        if not v.strip().isdigit():
            raise ValueError(f"{v!r} is not a frame size (use 64..9018 or \"IMIX\")")
        v = int(v)
    if isinstance(v, float):
        if not v.is_integer():
            raise ValueError(f"{v} is not a whole number of bytes")
        v = int(v)
    if not isinstance(v, int):
        raise ValueError(f"{v!r} is not a frame size (use 64..9018 or \"IMIX\")")
    if not linerate.MIN_FRAME_BYTES <= v <= linerate.MAX_FRAME_BYTES:
        raise ValueError(
            f"{v} is outside {linerate.MIN_FRAME_BYTES}..{linerate.MAX_FRAME_BYTES} (or \"IMIX\")"
        )
    return v


def _check_model(v: Any) -> str:
    if v not in MODEL_NAMES:
        raise ValueError(f"unknown model {v!r} (allowed: {', '.join(MODEL_NAMES)})")
    return v


FrameSize = Annotated[Union[int, str], BeforeValidator(parse_frame_size)]
"""A frame size in bytes incl. FCS (64..9018) or ``"IMIX"``."""
ModelName = Annotated[str, BeforeValidator(_check_model)]
"""A model name from :mod:`nfvlab.labs.embedded.catalogue`."""
PositiveFloat = Annotated[float, Field(gt=0)]


class TrafficParams(_Strict):
    """What the generator sends."""

    frame_sizes: list[FrameSize] = Field(default_factory=lambda: [64], min_length=1)
    """Frame sizes, bytes incl. FCS (64..9018), or ``"IMIX"`` (7:4:1 of 64/570/1518)."""
    flows: int = Field(default=1, ge=1, le=65535)
    """Number of UDP flows (distinct source ports) per direction."""
    bidirectional: bool = True
    latency_pps: int = Field(default=1000, ge=0, le=100_000)
    """Rate of timestamped latency probes per direction, packets/s (0 disables)."""


class TrialParams(_Strict):
    """How long one trial lasts."""

    duration_s: PositiveFloat = 1.0
    """Traffic duration of one trial, seconds."""
    warmup_s: float = Field(default=0.0, ge=0)
    """Traffic before the first trial of a search (not counted), seconds."""


class SearchParams(_Strict):
    """Which throughput search to run and its precision."""

    method: Literal["mrr", "rfc2544", "mlrsearch", "sweep"] = "mlrsearch"
    ndr: bool = True
    """Search the no-drop rate (loss ratio 0)."""
    pdr_loss_ratio: Optional[float] = Field(default=0.005, ge=0, lt=1)
    """Loss-ratio goal of the partial-drop rate (``null`` for no PDR)."""
    relative_width: float = Field(default=0.005, gt=0, lt=1)
    """Search precision: (upper - lower) / upper at the end, 0..1."""
    min_rate_pps: PositiveFloat = 1000.0
    """Lowest rate a search tries, packets/s per direction (used as given: a
    search whose maximum rate is not above it is refused)."""
    max_rate_pps: Optional[PositiveFloat] = None
    """Highest rate, packets/s per direction; default: the port line rate, capped
    by 1.2 x the calibrated generator ceiling when one is known."""
    initial_trial_duration_s: PositiveFloat = 0.5
    final_trial_duration_s: PositiveFloat = 1.0
    duration_sum_s: PositiveFloat = 1.0
    """MLRsearch: trial-seconds needed at the final duration to decide a load."""
    exceed_ratio: float = Field(default=0.5, ge=0, lt=1)
    """MLRsearch (RFC 9971 Goal Exceed Ratio): share of those trial-seconds that may
    exceed the goal loss ratio while the load still counts as a lower bound, 0..1."""
    search_duration_max_s: PositiveFloat = 600.0
    max_invalid_repeats: int = Field(default=8, ge=0, le=20)
    """How often a trial the generator ruled invalid (it did not offer the load on
    schedule) is repeated before the search ends saying so, 0..20 (docs/methodology.md).
    8: host noise comes in bursts (CI saw 4 invalid trials in a row); the repeats are spaced
    0.25, 0.5, 1, 2, 2, ... s apart, 11.75 s in all."""
    sweep_fractions: list[Annotated[float, Field(gt=0, le=1)]] = Field(
        default_factory=lambda: [0.001, 0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    )
    """Loss sweep: offered loads as fractions of ``max_rate_pps``."""

    @model_validator(mode="after")
    def _bounds(self) -> "SearchParams":
        if self.max_rate_pps is not None and self.max_rate_pps <= self.min_rate_pps:
            raise ValueError(
                f"max_rate_pps ({self.max_rate_pps}) must be above min_rate_pps ({self.min_rate_pps})"
            )
        if self.initial_trial_duration_s > self.final_trial_duration_s:
            raise ValueError("initial_trial_duration_s must not exceed final_trial_duration_s")
        return self


class GeneratorParams(_Strict):
    """The embedded generator (``generator: {kind: embedded}``)."""

    kind: Literal["embedded"] = "embedded"
    """``embedded``: nfvlab-gen (C, AF_PACKET) on the lab's ports."""
    cpu: Optional[int] = Field(default=0, ge=0)
    """CPU the generator's TX thread is pinned to (``null``: not pinned)."""
    tx: Literal["auto", "socket", "xdp"] = "auto"
    """How load frames leave: ``xdp`` (an XDP program run in the kernel's live-frames mode: no
    sk_buff on the sending side, 2-3x the frames per second; frames of at most 1518 B, every tx
    port a veth or NIC in one namespace, veth peers switched to NAPI (GRO on) for the trial, and
    the TX CPU its own), ``socket`` (AF_PACKET, sendmmsg), or ``auto`` (default): ``xdp`` wherever
    the ports, frame sizes and the core plan allow it, else ``socket``, with the reason recorded
    (``docs/measurement.md``, "Two TX paths")."""


_MAC = re.compile(r"^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$")


class TrexParams(_Strict):
    """How to reach a TRex server (stateless mode) and how to drive its two ports."""

    kind: Literal["trex"] = "trex"
    server: str = Field(min_length=1)
    """Host name or address of the TRex server (``t-rex-64 -i``)."""
    sync_port: int = Field(default=4501, ge=1, le=65535)
    """TCP port of TRex's JSON-RPC (ZMQ REQ/REP) channel."""
    async_port: int = Field(default=4500, ge=1, le=65535)
    """TCP port of TRex's event (ZMQ PUB) channel."""
    ports: list[int] = Field(default_factory=lambda: [0, 1], min_length=2, max_length=2)
    """The two TRex port ids: direction 0 sends on ``ports[0]`` towards the DUT and is
    received on ``ports[1]``; direction 1 the other way round."""
    client: Literal["auto", "v3", "v2"] = "auto"
    """Client library: ``v3`` lbr-trex-client in ``.venv-trex`` (servers v2.88..v3.0.x, STL API
    5.x), ``v2`` trex-stl-lib in ``.venv-trex-v2`` (old servers, STL API 4.x), ``auto`` v3 and,
    if the server answers with an older API and ``.venv-trex-v2`` exists, v2."""
    client_path: Optional[str] = None
    """A TRex server's ``automation/trex_control_plane/interactive`` directory, used (with
    ``.venv-trex``'s python) instead of lbr-trex-client: the client that ships with the server."""
    latency_pps: int = Field(default=1000, ge=0, le=1_000_000)
    """Latency probes per second and direction (at most a tenth of the trial rate; part of
    the rate, as in the embedded generator). 0 disables probes."""
    flows: int = Field(default=1, ge=1, le=65535)
    """UDP flows per direction: source ports 1024 .. 1024 + flows - 1 (a field-engine variable;
    the first port moves below 1024 when more than 64512 flows would not fit)."""
    core_mask: Optional[int] = Field(default=None, ge=1)
    """TRex DP core mask per tx port (bit n = core n); None lets TRex split over all cores."""
    timeout_s: float = Field(default=10.0, gt=0, le=600)
    """Seconds to wait for the server to answer one RPC (and the worker to start)."""
    settle_s: float = Field(default=0.5, ge=0, le=10)
    """Seconds waited after the last frame left for frames still in flight, before counters
    are read (TRex removes its RX filters only then)."""
    stop_tolerance_s: float = Field(default=0.05, ge=0, le=1)
    """Seconds past the intended duration (plus 1 % of it) the server may take to finish
    sending; then nfvlab stops it and the frames it had not sent count as loss, as CSIT does
    (a server sending late would otherwise turn "sent late" into "no loss"). A trial whose
    traffic still ran after that (the stop itself was late) is invalid
    (docs/methodology.md, "Invalid trials")."""
    l2_dst_macs: Optional[list[str]] = None
    """Destination MAC per TRex port (same order as ``ports``): puts the ports in L2 mode
    towards the DUT at connect time. None keeps the server's own port configuration."""

    @field_validator("ports")
    @classmethod
    def _distinct(cls, v: list[int]) -> list[int]:
        if v[0] == v[1] or min(v) < 0:
            raise ValueError(f"ports {v}: two distinct TRex port ids >= 0")
        return v

    @field_validator("l2_dst_macs")
    @classmethod
    def _macs(cls, v: Optional[list[str]]) -> Optional[list[str]]:
        if v is None:
            return v
        if len(v) != 2 or not all(_MAC.match(m) for m in v):
            raise ValueError("l2_dst_macs: two MAC addresses aa:bb:cc:dd:ee:ff, one per port")
        return [m.lower() for m in v]

    @model_validator(mode="after")
    def _client_path_is_v3(self) -> "TrexParams":
        if self.client_path and self.client == "v2":
            raise ValueError("client_path is a v3 client directory: use client: v3 or auto")
        return self


def _generator_kind(v: Any) -> str:
    return (v.get("kind", "embedded") if isinstance(v, dict) else getattr(v, "kind", "embedded"))


AnyGenerator = Annotated[Union[Annotated[GeneratorParams, Tag("embedded")], Annotated[TrexParams, Tag("trex")]],
                         Discriminator(_generator_kind)]
"""``generator:`` of a lab profile: ``kind: embedded`` (the default) or ``kind: trex`` (docs/trex.md)."""


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


def _check_ratio(v: Any) -> str:
    from nfvlab.scenario.resources import ratio

    ratio(str(v))  # ValueError names what is allowed
    return str(v)


Ratio = Annotated[str, BeforeValidator(_check_ratio)]
"""Physical cores : thread sets, e.g. ``"1:1"``, ``"2:1"``, ``"1:2"``."""
NumaScenario = Annotated[str, Field(pattern=r"^s[1-6]$")]


class ResourceParams(_Strict):
    """Resource knobs (draft §4.2); lists are grid axes."""

    pinning: list[Literal["plan", "none", "shared", "exclusive"]] = Field(
        default_factory=lambda: ["plan"], min_length=1)
    """CPU pinning modes: ``plan`` (the documented core plan), or the CMK modes
    ``none`` / ``shared`` / ``exclusive`` of Appendix B."""
    numa: list[NumaScenario] = Field(default_factory=lambda: ["s1"], min_length=1)
    """NUMA placement scenarios (Figure 12: s1..s4 one pod; Figure 15: s1..s6 two pods)."""
    noisy_load_pct: Optional[int] = Field(default=None, ge=1, le=100)
    """A noisy-neighbour pod (stress-ng) at this CPU load, percent; ``null``: none."""
    hugepages: bool = False
    """DPDK processes use 2 MB hugepages (reserved per lab, given back)."""
    pcdr4sw: Ratio = "1:1"
    """Physical cores : vSwitch dataplane thread sets (seed 001)."""
    pcdr4nf: Ratio = "1:1"
    """Physical cores : NF dataplane thread sets (seed 001)."""


class DensityParams(_Strict):
    """NFV service density grid (seed 001): kernel-router NFs behind the worker's router."""

    topologies: list[Literal["csc", "csp"]] = Field(default_factory=lambda: ["csc", "csp"], min_length=1)
    """``csc``: CNF service chain (snake through the switch); ``csp``: pipeline."""
    instances: list[Annotated[int, Field(ge=1, le=10)]] = Field(default_factory=lambda: [1, 2], min_length=1)
    """Service instances (matrix rows)."""
    nfs_per_instance: list[Annotated[int, Field(ge=1, le=10)]] = Field(
        default_factory=lambda: [1, 2], min_length=1)
    """Network functions per service instance (matrix columns)."""


class AdaptiveParams(_Strict):
    """Adaptive repetitions (docs/methodology.md, "Claims"): after the ``repetitions`` every
    configuration gets (the plan's first look), the runner adds repetitions to the configurations
    an undecided claim compares, ``step`` at a time (the planned looks), until every claim is decided
    or the budget is spent: ``max_repetitions`` per configuration and, if given, ``seconds`` of
    added measurement. Absent (null): a fixed-n run."""

    max_repetitions: int = Field(strict=True, ge=2, le=1000)
    """Most repetitions of any configuration (the last planned look); at least ``repetitions``."""
    step: int = Field(default=1, strict=True, ge=1, le=1000)
    """Repetitions added between two looks."""
    seconds: Optional[Annotated[float, Field(gt=0, le=86400)]] = None
    """Time budget of the added repetitions (null: only ``max_repetitions`` bounds them)."""

    @field_validator("seconds", mode="before")
    @classmethod
    def _seconds_number(cls, v: Any) -> Any:
        if isinstance(v, bool) or not (v is None or isinstance(v, (int, float))):
            raise ValueError(f"{v!r}: give a number of seconds")
        return v


def _adaptive_fits(v: Optional[AdaptiveParams], info) -> Optional[AdaptiveParams]:
    """``adaptive`` against the experiment's ``repetitions`` (the plan's first look)."""
    reps = info.data.get("repetitions")
    if v is None or reps is None:
        return v
    if reps < 2:
        raise ValueError(f"needs repetitions >= 2 (the first look tests them), got {reps}")
    if v.max_repetitions < reps:
        raise ValueError(f"max_repetitions: {v.max_repetitions} is below repetitions ({reps})")
    return v


#: The ``adaptive:`` field of an experiment's params (one line in each model).
Adaptive = Annotated[Optional[AdaptiveParams], AfterValidator(_adaptive_fits)]


class ExperimentParams(_Strict):
    """One experiment: models x resources (x density) x traffic x search, repeated."""

    experiment: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    models: list[ModelName] = Field(default_factory=lambda: ["linux-bridge"], min_length=1)
    repetitions: int = Field(default=1, ge=1, le=1000)
    """Independent measurements of every configuration (for statistics)."""
    lab: LabParams = Field(default_factory=LabParams)
    resources: ResourceParams = Field(default_factory=ResourceParams)
    density: Optional[DensityParams] = None
    """Set: measure the service density matrix; ``models`` must then be
    ``[host-routing]`` (the worker's router is the switch)."""
    traffic: TrafficParams = Field(default_factory=TrafficParams)
    trial: TrialParams = Field(default_factory=TrialParams)
    search: SearchParams = Field(default_factory=SearchParams)
    latency_load_fractions: list[Annotated[float, Field(ge=0, le=1)]] = Field(
        default_factory=lambda: [0.0, 0.1, 0.5, 0.9])
    """Latency under load: after each search, one latency trial at each of these fractions
    (0..1) of the rate found for ``latency_goal``, as FD.io CSIT does; 0 = probes only (a
    trial at ``traffic.latency_pps``). Empty: no latency trials."""
    latency_goal: Literal["ndr", "pdr"] = "pdr"
    """Goal whose rate the load fractions apply to (the search's first goal when it has no such goal)."""
    mtu_bytes: Optional[list[Annotated[int, Field(ge=1280, le=linerate.MAX_FRAME_BYTES - 18)]]] = Field(
        default=None, min_length=1)
    """IP MTU grid axis, bytes (1280..9000): every model is measured at each MTU, set on the
    whole data path (cables, vSwitch ports, DPDK apps, pod interfaces) and recorded as the
    ``mtu_bytes`` label; a frame size above a cell's MTU + 18 B is skipped with a
    ``frame-too-large`` note. ``null``: the lab's MTU (``lab.mtu``), capped by each model's ports."""
    adaptive: Adaptive = None  # adaptive repetitions (AdaptiveParams); null: a fixed-n run

    @field_validator("latency_load_fractions")
    @classmethod
    def _unique_fractions(cls, v: list[float]) -> list[float]:
        if len(set(v)) != len(v):
            raise ValueError("each load fraction once")
        return v

    @field_validator("mtu_bytes")
    @classmethod
    def _unique_mtus(cls, v: Optional[list[int]]) -> Optional[list[int]]:
        if v is not None and len(set(v)) != len(v):
            raise ValueError("each MTU once")
        return v

    @model_validator(mode="after")
    def _mtus_fit(self) -> "ExperimentParams":
        if self.mtu_bytes is None:
            return self
        too_big = [m for m in self.mtu_bytes if m > self.lab.mtu]
        if too_big:
            raise ValueError(f"mtu_bytes: {too_big[0]} is above the lab's link MTU lab.mtu ({self.lab.mtu})")
        largest = max(self.mtu_bytes) + 18
        sizes = [f for f in self.traffic.frame_sizes if f != "IMIX" and f > largest]
        if sizes:
            raise ValueError(f"traffic.frame_sizes: {sizes[0]} is above the largest mtu_bytes + 18 ({largest})")
        return self

    @model_validator(mode="after")
    def _density_switch(self) -> "ExperimentParams":
        if self.density is not None and self.models != ["host-routing"]:
            raise ValueError("with density, models must be [host-routing] (the switch of the "
                             "service matrix)")
        return self


class CalibrationParams(_Strict):
    """The calibration stage (``params/<profile>/calibration.yaml``)."""

    frame_sizes: list[FrameSize] = Field(default_factory=lambda: [64, 512, 1518], min_length=1)
    """Frame sizes to find the generator's ceiling at (those the experiments use)."""
    duration_s: PositiveFloat = 1.0
    """Trial duration of the ceiling search, seconds."""
    bidirectional: bool = True


class ProfileParams(_Strict):
    """Which params profile the pipeline measures (``params/profile.yaml``)."""

    profile: Literal["quick", "full"] = "quick"


class ReferenceParams(_Strict):
    """The reference-figures stage (``params/reference.yaml``)."""

    dpi: int = Field(default=100, ge=50, le=300)
    """Resolution of the rendered PNGs, dots per inch."""


def format_error(err: ValidationError, source: str) -> str:
    """One line: ``source: key.path: message[; more ...]``."""
    parts = []
    for e in err.errors():
        loc = ".".join(str(x) for x in e["loc"]) or "(top level)"
        msg = e["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        if e["type"] == "extra_forbidden":
            msg = "unknown key"
        elif e["type"] == "missing":
            msg = "required key missing"
        elif "input" in e and e["type"] not in ("value_error",) and not isinstance(e["input"], (dict, list)):
            msg = f"{msg} (got {e['input']!r})"
        parts.append(f"{loc}: {msg}")
    return f"{source}: " + "; ".join(parts)


def validate(model: type[BaseModel], data: Any, source: str = "params") -> Any:
    """Validate ``data`` as ``model``; raise :class:`ParamsError` with a one-line message."""
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise ParamsError(format_error(err, source)) from None


def _merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


#: Largest params file read, bytes (ours are a few kB).
MAX_PARAMS_BYTES = 1 << 20
#: Deepest nesting of mappings/sequences in a params file (ours: 4).
MAX_PARAMS_DEPTH = 32


def _read_text(path: Path) -> str:
    """The text of a params file: a regular file, at most :data:`MAX_PARAMS_BYTES`, UTF-8, no NUL."""
    try:
        if path.exists() and not path.is_file():
            raise ParamsError(f"{path}: not a regular file (give a YAML params file)")
        with open(path, "rb") as f:
            raw = f.read(MAX_PARAMS_BYTES + 1)
    except OSError as err:
        raise ParamsError(f"{path}: cannot read ({err.strerror or err})") from None
    if len(raw) > MAX_PARAMS_BYTES:
        raise ParamsError(f"{path}: larger than {MAX_PARAMS_BYTES} bytes; a params file is a few kB of YAML")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ParamsError(f"{path}: not UTF-8 text (byte {err.start}); a params file is YAML") from None
    if "\0" in text:
        raise ParamsError(f"{path}: contains NUL bytes; a params file is YAML text")
    return text


def _check_yaml_shape(text: str) -> None:
    """Nesting depth, tags and aliases, from the event stream (iterative: no recursion on deep input)."""
    depth = 0
    for ev in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(ev, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_PARAMS_DEPTH:
                raise ValueError(f"nested deeper than {MAX_PARAMS_DEPTH} levels",
                                 ev.start_mark.line)
        elif isinstance(ev, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
        if isinstance(ev, yaml.AliasEvent) or getattr(ev, "anchor", None):
            raise ValueError("anchors and aliases (&, *) are not allowed", ev.start_mark.line)
        tag = getattr(ev, "tag", None)
        # Only an explicit tag in the text sets it (plain scalars leave it None).
        if tag is not None and not (isinstance(ev, yaml.ScalarEvent) and ev.implicit[0]):
            raise ValueError(f"YAML tags ({tag}) are not allowed", ev.start_mark.line)


def _read_mapping(path: Path) -> dict:
    """A params file's top-level mapping; one-line ParamsError if it cannot be read or is not one.

    Read safely: a regular file of at most :data:`MAX_PARAMS_BYTES`, UTF-8, nested
    at most :data:`MAX_PARAMS_DEPTH` deep, without YAML tags, anchors or aliases.
    """
    text = _read_text(path)
    try:
        _check_yaml_shape(text)
    except ValueError as err:
        raise ParamsError(f"{path}: line {err.args[1] + 1}: {err.args[0]}") from None
    except yaml.YAMLError:
        pass  # safe_load below reports it with its line
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise ParamsError(f"{path}:{where} not valid YAML ({getattr(err, 'problem', err)})") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ParamsError(f"{path}: top level must be a mapping of keys, got {type(data).__name__}")
    return data


def load(path: Union[str, Path], model: type[BaseModel] = ExperimentParams,
         overrides: Optional[dict] = None) -> Any:
    """Read a YAML params file into ``model``; one-line :class:`ParamsError` on any problem.

    ``overrides`` (nested dict, e.g. papermill parameters) is merged into the
    file's data before validation, so errors still name the file and key.
    """
    path = Path(path)
    data = _read_mapping(path)
    if overrides:
        data = _merge(data, overrides)
    return validate(model, data, str(path) + (" (with overrides)" if overrides else ""))


def load_experiment(path: Union[str, Path], lab_profile: Optional[Union[str, Path]] = "params/lab.yaml",
                    overrides: Optional[dict] = None) -> ExperimentParams:
    """An experiment's params file with the lab profile as its ``lab:``.

    Precedence: ``overrides`` (papermill parameters) > the experiment file's own
    ``lab:`` keys > the lab profile. A key the experiment file and the profile
    both set to *different* values is an error naming both files (the profile
    says where experiments run; an experiment that disagrees must say so
    explicitly, through ``overrides``). Every error is one line naming the file and key.
    """
    merged: dict = {}
    if lab_profile is not None:
        lab = load(lab_profile, LabParams)
        profile = lab.model_dump(exclude_unset=True)
        own = _read_mapping(Path(path)).get("lab") or {}
        if isinstance(own, dict):
            clash = [k for k in own if k in profile and own[k] != profile[k]]
            if clash:
                k = clash[0]
                raise ParamsError(f"{path}: lab.{k}: {own[k]!r} disagrees with the lab profile "
                                  f"{lab_profile} ({profile[k]!r}): remove it from one of them")
        merged = {"lab": _merge(profile, own) if isinstance(own, dict) else profile}
    return load(path, ExperimentParams, overrides=_merge(merged, overrides or {}) or None)


# -- experiment E (seed 002): CNI data paths x link MTUs, TCP and HTTP tool runs ---------------------

def _cni_tool(cls: type, name: str):
    """A BeforeValidator building ``iperf``/``wrk`` as :mod:`nfvlab.scenario.cni`'s dataclass (its checks,
    no coercion: ``true`` is no stream count); one message naming the key."""
    def build(v: Any):
        if isinstance(v, cls):
            return v
        if not isinstance(v, dict):
            raise ValueError(f"{v!r}: give a mapping")
        allowed = sorted(cls.__dataclass_fields__)
        unknown = sorted(set(v) - set(allowed))
        if unknown:
            raise ValueError(f"{unknown[0]}: unknown key; allowed: {', '.join(allowed)}")
        try:
            return cls(**{k: tuple(x) if isinstance(x, list) else x for k, x in v.items()})
        except CniConfigError as err:  # its message names "<name>.<field>"; the location names <name>
            raise ValueError(str(err).removeprefix(f"{name}.")) from None
    return BeforeValidator(build)


_CniInt = Annotated[int, Field(strict=True)]


class CniExperimentParams(_Strict):
    """Experiment E's params file (``params/<profile>/experiment_e.yaml``): the grid of
    :class:`nfvlab.scenario.cni.CniGrid` (its checks) and whether segmentation offloads stay on."""

    experiment: str = Field(default="e-cni", min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    segmentation_offload: bool = Field(default=False, strict=True)
    """TSO/GSO on every node and pod interface (default off: per-packet costs scale with the MTU as
    on the seed's NIC link, docs/experiment-e.md "Offloads"); a label of every measurement."""
    data_paths: tuple[Literal[DATA_PATHS], ...] = CniGrid.data_paths
    link_mtus_bytes: tuple[Annotated[_CniInt, Field(ge=MTU_MIN_BYTES, le=MTU_MAX_BYTES)], ...] = CniGrid.link_mtus_bytes
    tcp_directions: tuple[Literal[TCP_DIRECTIONS], ...] = TCP_DIRECTIONS
    http_directions: tuple[Literal[HTTP_DIRECTIONS], ...] = HTTP_DIRECTIONS
    repetitions: _CniInt = Field(default=CniGrid.repetitions, ge=1, le=1000)
    iperf: Annotated[IperfParams, _cni_tool(IperfParams, "iperf")] = Field(default_factory=IperfParams)
    wrk: Annotated[WrkParams, _cni_tool(WrkParams, "wrk")] = Field(default_factory=WrkParams)
    adaptive: Adaptive = None  # adaptive repetitions (AdaptiveParams); null: a fixed-n run

    @field_validator("data_paths", "link_mtus_bytes")
    @classmethod
    def _not_empty(cls, v: tuple) -> tuple:
        if not v:
            raise ValueError("give at least one")
        return v

    @field_validator("link_mtus_bytes")
    @classmethod
    def _every_path_carries_pods(cls, v: tuple, info) -> tuple:
        for data_path in info.data.get("data_paths", ()):  # every (path, MTU) must leave pods >= 1280 B
            for mtu in v:
                try:
                    CniPath(data_path, mtu)
                except CniConfigError as err:
                    raise ValueError(str(err)) from None
        return v

    @property
    def grid(self) -> CniGrid:
        return CniGrid(self.data_paths, self.link_mtus_bytes, self.tcp_directions, self.http_directions,
                       self.iperf, self.wrk, self.repetitions)
