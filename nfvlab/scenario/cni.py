"""Experiment E (seed 002, CNI TCP and HTTP benchmarks) as pure data: data paths, MTUs, directions, tools.

Two "nodes" are cabled by one link whose MTU is swept; a pod on each node is reached
over one of the CNI data paths below. Nothing here touches the host: a lab backend
(:mod:`nfvlab.labs`) realizes a :class:`CniScenario` (the embedded one as
:mod:`nfvlab.labs.embedded.cni`), :mod:`nfvlab.traffic.tcp` drives iperf3 and wrk over it.

Every check raises :class:`CniConfigError` with one line naming the field and what
is allowed, so bad input is refused before anything is created.
"""
from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, Optional

__all__ = [
    "DATA_PATHS",
    "HTTP_DIRECTIONS",
    "MTU_MAX_BYTES",
    "MTU_MIN_BYTES",
    "OVERHEAD_BYTES",
    "TCP_DIRECTIONS",
    "CniConfigError",
    "CniGrid",
    "CniPath",
    "CniScenario",
    "Endpoint",
    "IperfParams",
    "ROLES",
    "Step",
    "WrkParams",
    "TWIN",
    "paired_order",
    "step_labels",
    "steps",
]

#: Bytes a data path adds below the link MTU (outer headers), so pods get ``link MTU - overhead``.
#: VXLAN: outer IPv4 20 + UDP 8 + VXLAN 8 + inner Ethernet 14; IPIP: outer IPv4 20.
OVERHEAD_BYTES: dict[str, int] = {"direct": 0, "vxlan": 50, "ipip": 20, "sriov-analogue": 0}
DATA_PATHS: tuple[str, ...] = tuple(OVERHEAD_BYTES)
#: IPv6's minimum link MTU (every pod interface must carry it) and the usual jumbo frame.
MTU_MIN_BYTES, MTU_MAX_BYTES = 1280, 9000
#: Who talks to whom: node = node1's own namespace, pod = a pod on node2 (pod-pod: from node1's pod);
#: host = the client host (node1), service = a ClusterIP-style address DNATed to node2's pod.
TCP_DIRECTIONS: tuple[str, ...] = ("node-pod", "pod-pod")
HTTP_DIRECTIONS: tuple[str, ...] = ("pod-pod", "host-pod", "host-service")


class CniConfigError(ValueError):
    """A bad experiment-E parameter (one line: the field, the value, what is allowed)."""


def _choice(field_name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise CniConfigError(f"{field_name}={value!r}: unknown; allowed: {', '.join(allowed)}")


def _positive_int(field_name: str, value, low: int = 1, high: int | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        bound = f"{low}..{high}" if high is not None else f">= {low}"
        raise CniConfigError(f"{field_name}={value!r}: give an integer {bound}")


def _positive_seconds(field_name: str, value, high_s: float = 3600.0) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= high_s:
        raise CniConfigError(f"{field_name}={value!r}: give seconds in (0, {high_s:g}]")


@dataclass(frozen=True)
class CniPath:
    """One data path between the two nodes at one link MTU."""

    data_path: str
    """``direct`` (routes via the node link), ``vxlan``, ``ipip`` or ``sriov-analogue`` (a direct port)."""
    link_mtu_bytes: int = 1500
    """MTU of the inter-node link."""

    def __post_init__(self) -> None:
        _choice("data_path", self.data_path, DATA_PATHS)
        _positive_int("link_mtu_bytes", self.link_mtu_bytes, MTU_MIN_BYTES, MTU_MAX_BYTES)
        overhead = OVERHEAD_BYTES[self.data_path]
        if self.pod_mtu_bytes < MTU_MIN_BYTES:
            raise CniConfigError(
                f"link_mtu_bytes={self.link_mtu_bytes}: {self.data_path} needs {overhead} B of overhead below "
                f"the link MTU, leaving {self.pod_mtu_bytes} B for pods; give >= {MTU_MIN_BYTES + overhead}")

    @property
    def overhead_bytes(self) -> int:
        return OVERHEAD_BYTES[self.data_path]

    @property
    def pod_mtu_bytes(self) -> int:
        """MTU of the pods' interfaces (what a CNI configures: link MTU minus tunnel overhead)."""
        return self.link_mtu_bytes - self.overhead_bytes

    @property
    def label(self) -> str:
        return f"{self.data_path}@{self.link_mtu_bytes}"


@dataclass(frozen=True)
class IperfParams:
    """iperf3 TCP throughput runs (the seed used multi-threaded iperf: several parallel streams)."""

    parallel_streams: int = 4
    duration_s: float = 2.0

    def __post_init__(self) -> None:
        _positive_int("iperf.parallel_streams", self.parallel_streams, 1, 128)
        _positive_seconds("iperf.duration_s", self.duration_s)


#: The seed's file sizes: 1 KB .. 10 MB in decades.
DEFAULT_FILE_BYTES: tuple[int, ...] = (1_000, 10_000, 100_000, 1_000_000, 10_000_000)
#: Files larger than this are not served (they would fill the run directory's tmpfs).
MAX_FILE_BYTES = 100_000_000


@dataclass(frozen=True)
class WrkParams:
    """wrk HTTP runs against nginx in the pod (the seed's 5 threads, 10 connections)."""

    threads: int = 5
    connections: int = 10
    duration_s: float = 2.0
    file_bytes: tuple[int, ...] = DEFAULT_FILE_BYTES

    def __post_init__(self) -> None:
        _positive_int("wrk.threads", self.threads, 1, 64)
        _positive_int("wrk.connections", self.connections, 1, 10_000)
        if self.connections < self.threads:  # wrk itself refuses this
            raise CniConfigError(f"wrk.connections={self.connections}: give at least wrk.threads={self.threads}")
        _positive_seconds("wrk.duration_s", self.duration_s)
        if not isinstance(self.file_bytes, tuple) or not self.file_bytes:
            raise CniConfigError(f"wrk.file_bytes={self.file_bytes!r}: give a non-empty list of sizes in bytes")
        for size in self.file_bytes:
            _positive_int("wrk.file_bytes", size, 1, MAX_FILE_BYTES)


@dataclass(frozen=True)
class CniGrid:
    """The experiment-E grid: data paths x link MTUs, with TCP and HTTP directions and tool settings."""

    data_paths: tuple[str, ...] = ("direct", "vxlan", "ipip", "sriov-analogue")
    link_mtus_bytes: tuple[int, ...] = (1500, 3000, 6000, 9000)
    tcp_directions: tuple[str, ...] = TCP_DIRECTIONS
    http_directions: tuple[str, ...] = HTTP_DIRECTIONS
    iperf: IperfParams = field(default_factory=IperfParams)
    wrk: WrkParams = field(default_factory=WrkParams)
    repetitions: int = 3
    control: bool = False
    """The A/A control: each repetition runs :meth:`control_step` twice, side by side, the second
    labelled ``arm: twin`` (the design's own noise floor: the two must not come out different)."""

    def __post_init__(self) -> None:
        for name in ("data_paths", "link_mtus_bytes", "tcp_directions", "http_directions"):
            if not isinstance(getattr(self, name), tuple):
                raise CniConfigError(f"{name}={getattr(self, name)!r}: give a list")
        if not isinstance(self.control, bool):
            raise CniConfigError(f"control={self.control!r}: give true or false")
        for d in self.tcp_directions:
            _choice("tcp_directions", d, TCP_DIRECTIONS)
        for d in self.http_directions:
            _choice("http_directions", d, HTTP_DIRECTIONS)
        _positive_int("repetitions", self.repetitions, 1, 1000)
        if not self.data_paths or not self.link_mtus_bytes:
            raise CniConfigError("data_paths, link_mtus_bytes: give at least one of each")
        list(self.paths())  # every (path, MTU) must be carriable: fails on the first that is not

    def control_step(self) -> Optional[tuple[str, str, Optional[int]]]:
        """``(protocol, direction, file_bytes)`` the A/A control repeats: the first TCP direction, else
        the first HTTP direction at the smallest file size; None without :attr:`control`."""
        if not self.control:
            return None
        if self.tcp_directions:
            return ("tcp", self.tcp_directions[0], None)
        return ("http", self.http_directions[0], min(self.wrk.file_bytes)) if self.http_directions else None

    def paths(self) -> Iterator[CniPath]:
        """Every data path at every link MTU, in grid order."""
        for dp in self.data_paths:
            for mtu in self.link_mtus_bytes:
                yield CniPath(dp, mtu)

    @classmethod
    def from_dict(cls, d: Mapping, source: str = "params") -> CniGrid:
        """Build from a params mapping (YAML); errors name ``source`` and the field."""
        known = {"data_paths", "link_mtus_bytes", "tcp_directions", "http_directions", "iperf", "wrk",
                 "repetitions", "control"}
        unknown = sorted(set(d) - known)
        try:
            if unknown:
                raise CniConfigError(f"{unknown[0]}: unknown key; allowed: {', '.join(sorted(known))}")
            kw = {k: tuple(v) if isinstance(v, list) else v for k, v in d.items() if k not in ("iperf", "wrk")}
            iperf = _sub(IperfParams, "iperf", d.get("iperf", {}))
            wrk_d = dict(d.get("wrk", {}) or {})
            if isinstance(wrk_d.get("file_bytes"), list):
                wrk_d["file_bytes"] = tuple(wrk_d["file_bytes"])
            wrk = _sub(WrkParams, "wrk", wrk_d)
            return cls(iperf=iperf, wrk=wrk, **kw)
        except CniConfigError as err:
            raise CniConfigError(f"{source}: {err}") from None


def _sub(cls, name: str, d: Mapping):
    if not isinstance(d, Mapping):
        raise CniConfigError(f"{name}={d!r}: give a mapping")
    allowed = set(cls.__dataclass_fields__)
    unknown = sorted(set(d) - allowed)
    if unknown:
        raise CniConfigError(f"{name}.{unknown[0]}: unknown key; allowed: {', '.join(sorted(allowed))}")
    return cls(**d)


@dataclass(frozen=True)
class CniScenario:
    """What a lab backend realizes for experiment E: two nodes, a pod on each, one data path, the service."""

    path: CniPath
    segmentation_offload: bool = False
    """TSO/GSO stay on (True) or are switched off on every node and pod interface (docs/experiment-e.md)."""
    service: bool = True
    """A ClusterIP-style service (:data:`ROLES` ``service``) DNATed to node2's pod."""

    @property
    def label(self) -> str:
        return self.path.label

    def labels(self) -> dict:
        """Labels of its ``not-realizable`` note (the records' (path, MTU) key)."""
        return {"data_path": self.path.data_path, "link_mtu_bytes": self.path.link_mtu_bytes}


#: Where a realized :class:`CniScenario`'s tools run and connect: the client host, the two pods,
#: node2 and the service address.
ROLES: tuple[str, ...] = ("node1", "node2", "pod1", "pod2", "service")


@dataclass(frozen=True)
class Endpoint:
    """One role of a realized :class:`CniScenario`: the network namespace a tool for it runs in
    (None: nothing runs there, e.g. the service) and its IPv4 address."""

    ns: str | None
    address: str


#: The ``arm`` label of an A/A control's second run (:attr:`CniGrid.control`).
TWIN = "twin"


class Step(NamedTuple):
    """One tool run of a lab."""

    repetition: int
    protocol: str
    """``tcp`` (iperf3) or ``http`` (wrk)."""
    direction: str
    file_bytes: Optional[int]
    """The HTTP file size, bytes; None for TCP."""
    twin: bool = False
    """The A/A control's second run of :meth:`CniGrid.control_step` in its repetition."""


def steps(grid: CniGrid) -> list[Step]:
    """The tool runs of one (path, MTU) lab, in order: per repetition, TCP directions, then HTTP x sizes;
    with the A/A control, :meth:`CniGrid.control_step`'s twin right after it."""
    twin = grid.control_step()
    out: list[Step] = []
    for rep in range(grid.repetitions):
        for s in ([Step(rep, "tcp", d, None) for d in grid.tcp_directions]
                  + [Step(rep, "http", d, size) for d in grid.http_directions for size in grid.wrk.file_bytes]):
            out += [s, Step(*s[:4], True)] if s[1:4] == twin else [s]
    return out


def paired_order(todo: Sequence[Step], seed: str) -> list[Step]:
    """``todo`` (one lab's tool runs) in the order they are measured: repetition by repetition; in each,
    TCP, then HTTP file size by file size; the directions of a protocol (and size) one right after the
    other, so that the claims comparing them (node-pod / pod-pod, host-pod / host-service) see the host
    in the same spell of speed.

    Counterbalanced: repetitions ``2k`` and ``2k + 1`` form a block whose directions run ``AB BA`` or
    ``BA AB`` (drawn from ``seed`` and ``k``: the run id makes it reproducible, resume included), so an
    advantage of going first or second cancels over a block and no direction is always first. An A/A
    twin runs next to its original, on the side away from the other directions (before it in one
    repetition of a block, after it in the other): the compared directions stay adjacent.
    """
    def flipped(rep: int) -> bool:
        return (random.Random(f"{seed}:{rep // 2}").random() < 0.5) != bool(rep % 2)

    def rank(step: Step) -> tuple:
        order = (TCP_DIRECTIONS if step.protocol == "tcp" else HTTP_DIRECTIONS)
        pos = (order.index(step.direction) if step.direction in order else len(order)) - 0.5 * step.twin
        return (step.repetition, step.protocol != "tcp", step.file_bytes or 0, -pos if flipped(step.repetition) else pos)

    return sorted(todo, key=rank)


def step_labels(scenario: CniScenario, step: Step) -> dict:
    """The labels of one tool run's ``measurement`` record (docs/records.md); an A/A twin's with
    ``arm: twin``."""
    p = scenario.path
    return {"data_path": p.data_path, "link_mtu_bytes": p.link_mtu_bytes, "pod_mtu_bytes": p.pod_mtu_bytes,
            "protocol": step.protocol, "direction": step.direction, "file_bytes": step.file_bytes,
            "repetition": step.repetition, "segmentation_offload": scenario.segmentation_offload,
            **({"arm": TWIN} if step.twin else {})}
