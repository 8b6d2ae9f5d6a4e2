"""Which claims an experiment makes, as data: one source the analysis and the adaptive runner both read.

A claim is judged on the analysis side (:func:`nfvlab.analysis.claim_rows`, tables and verdicts)
and, in an adaptive run (docs/methodology.md, "Claims"), on the measuring side too: the runner
(:mod:`nfvlab.experiment`) must know which configurations an undecided claim compares to add
repetitions to them. The measuring side may not import the analysis (the import contract
"measuring never imports analysing": an analysis edit must never re-measure), so the claims'
*definitions* -- kind, the factor compared, the chains or pairs of its levels, the fixed factors
of each condition, the rate compared -- live here, in a low layer both import:

* the analysis (:mod:`nfvlab.analysis_cni`, :mod:`nfvlab.experiments.b`, :mod:`nfvlab.experiments.c`) iterates over a
  function of this module, passing the factor levels it found in the records, and only adds
  what is analysis (selecting the rows, the tables' status of each level, the claims table);
* the runner calls the same function with the levels of the params' grid and turns each
  :class:`ClaimSpec` into configuration keys (:meth:`ClaimSpec.spec`) for
  :func:`nfvlab.adaptive.run`.

So a claim added, removed or re-worded here changes both at once; they cannot drift. Pure
Python (no pandas, no other nfvlab module): a change here is a change of what an adaptive run
measures, so this file is in the measurement stages' code (the runner imports it:
:mod:`nfvlab.measuring_code`).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Iterator, Optional, Sequence

__all__ = ["ClaimSpec", "ComparedPair", "chain_claims", "compared_pairs", "cni_claims", "cni_claims_of", "cni_control_claims", "config_key", "key_labels", "level_key",
           "model_claims", "pinning_numa_claims", "search_claims_of", "testable_part", "tool_rate"]


@dataclass(frozen=True)
class ClaimSpec:
    """One claim under one condition.

    ``kind`` is ``order`` (``chains``: level lists from the claimed largest to the smallest) or
    ``equality`` (``chains``: the ``(a, b)`` pairs claimed about equal); ``by`` the factor (a record
    label) whose levels the chains name; ``fixed`` the other labels of the condition, as
    ``((label, value), ...)``; ``value`` the rate compared (a column of the analysis' frame);
    ``if_measured``: the analysis leaves the row out when none of its levels was measured (another
    claim's rows already say why); ``paired``: its levels are measured in one lab, one right after the
    other, repetition by repetition, so it is judged on per-repetition ratios (:func:`nfvlab.claims.order_claim`).
    """

    claim: str
    condition: str
    kind: str
    by: str
    chains: tuple
    fixed: tuple
    value: str
    if_measured: bool = False
    paired: bool = False

    @property
    def where(self) -> dict:
        """The fixed labels, as a dict (``select(rows, **spec.where)``)."""
        return dict(self.fixed)

    @property
    def labels(self) -> tuple:
        """The labels its configuration keys name: the factor ``by``, then the fixed labels."""
        return (self.by, *self.where)

    def levels(self) -> list:
        """The levels the claim compares, in order of first appearance."""
        return list(dict.fromkeys(v for c in self.chains for v in c))

    def config(self, level) -> str:
        """The configuration key of ``level``: :func:`config_key` of the fixed labels and ``by = level``
        (``level`` None: without ``by``, a configuration the label is absent from, as an A/A control's
        original run: :func:`cni_control_claims`)."""
        return config_key({**self.where, **({} if level is None else {self.by: level})})

    def spec(self, present=None) -> Optional[tuple[str, list, bool]]:
        """``(kind, chains, paired)`` with levels as configuration keys: a claim as
        :func:`nfvlab.claims.plan_more` reads it. ``present``: the configurations measured; the claim is then restricted to its
        testable part (:func:`testable_part`, as the analysis judges it); None when nothing is left."""
        chains = [[self.config(v) for v in c] for c in self.chains]
        if present is not None:
            chains = [list(c) for c in testable_part(chains, {x for c in chains for x in c if x not in present})]
        return (self.kind, chains, self.paired) if chains else None


#: Labels in the order a configuration key lists them: what a lab is built for first (the adaptive
#: driver takes configurations in key order, so those of one lab come one after the other).
KEY_ORDER = ("model", "data_path", "link_mtu_bytes", "mtu_bytes", "pinning", "numa", "frame_size", "protocol",
             "direction", "file_bytes")


def config_key(labels: dict) -> str:
    """A configuration as a key: ``"label=value, ..."``, labels in :data:`KEY_ORDER` (others after, by
    name), values as :func:`level_key` compares them. A string, so that the driver's reasons
    ("look 1: data_path=direct, ... > data_path=vxlan, ... undecided") read in the records."""
    rank = {k: i for i, k in enumerate(KEY_ORDER)}
    return ", ".join(f"{k}={level_key(labels[k])}"
                     for k in sorted(labels, key=lambda k: (rank.get(k, len(rank)), k)))


def testable_part(chains: Sequence[Sequence], missing) -> list[tuple]:
    """The chains (pairs) of a claim without the ``missing`` levels, those left with 2 levels or more:
    the part of a claim that can be judged when some configuration was not measured."""
    kept = list(dict.fromkeys(tuple(v for v in c if v not in missing) for c in chains))
    return [c for c in kept if len(c) >= 2]


@dataclass(frozen=True)
class ComparedPair:
    """Two configurations an order claim compares, ``a`` claimed above ``b`` (configuration keys).

    ``family``: the most pairs any of its claims compares (a paired comparison tests at
    ``alpha / family``: Bonferroni over a claim's pairs); ``claims``: ``"<claim> [<condition>]"`` of each.
    """

    a: str
    b: str
    family: int
    claims: tuple


def claim_pairs(spec: ClaimSpec, present=None) -> list[tuple]:
    """The ``(a, b)`` configuration keys an order claim compares, ``a`` claimed above ``b``: each chain's
    neighbours, restricted to the claim's testable part when ``present`` names the configurations
    measured; an equality claim compares none in pairs."""
    got = spec.spec(present)
    if got is None or got[0] != "order":
        return []
    return list(dict.fromkeys((c[i], c[i + 1]) for c in got[1] for i in range(len(c) - 1)))


def compared_pairs(specs: Sequence[ClaimSpec], present=None) -> list[ComparedPair]:
    """Every pair the order claims ``specs`` compare (:func:`claim_pairs`), once, in the claims' order: what
    a paired phase measures (:mod:`nfvlab.pairing`) and the analysis judges them by."""
    family: dict[tuple, int] = {}
    named: dict[tuple, list] = {}
    for s in specs:
        pairs = claim_pairs(s, present)
        for p in pairs:
            family[p] = max(family.get(p, 0), len(pairs))
            named.setdefault(p, []).append(f"{s.claim} [{s.condition}]")
    return [ComparedPair(a, b, family[(a, b)], tuple(named[(a, b)])) for a, b in family]


def _spec(claim, condition, kind, by, chains, value, if_measured=False, paired=False, **fixed) -> ClaimSpec:
    return ClaimSpec(claim, condition, kind, by, tuple(tuple(c) for c in chains), tuple(fixed.items()), value,
                     if_measured, paired)


# ---------------------------------------------------------------------------
# experiment E (seed 002)
# ---------------------------------------------------------------------------
#: Overlays whose goodput should grow with the link MTU.
OVERLAYS = ("vxlan", "ipip")


def cni_claims(tcp_paths: Sequence, tcp_directions: Sequence, tcp_mtus: Sequence, http_paths: Sequence,
               http_mtus: Sequence, file_sizes: Sequence) -> Iterator[ClaimSpec]:
    """Experiment E's claims (the seed's slides), in the claims table's order.

    1. Direct routing beats overlays: TCP goodput direct > vxlan and direct > ipip, per direction and MTU.
    2. Larger MTU helps overlays: goodput increases with the link MTU (adjacent MTUs), per overlay and direction.
    3. MTU barely matters for direct routing: every MTU about equal to the smallest one, per direction.
    4. IPIP slightly beats VXLAN: ipip > vxlan per direction and MTU.
    5. Node to pod beats pod to pod: TCP node-pod > pod-pod per path and MTU.
    6. Host to pod ~ host to service for small files (requests/s at the smallest file size, per
       MTU), and host to pod > host to service for large files at large MTU (largest file, largest MTU).

    Claims 5 and 6 compare directions of one lab, measured side by side in each repetition
    (:func:`nfvlab.scenario.cni.paired_order`): ``paired``.

    The arguments are the levels present (the analysis: those of its tables; the runner: the
    params' grid); ``tcp_mtus`` in the tables' order, ``http_mtus`` and ``file_sizes`` sorted.
    """
    mtus = list(tcp_mtus)
    for d, mtu in itertools.product(tcp_directions, mtus):
        yield _spec("direct routing beats overlays (TCP goodput)", f"{d}, link MTU {mtu} B", "order", "data_path",
                    [["direct", "vxlan"], ["direct", "ipip"]], "goodput_gbps",
                    protocol="tcp", direction=d, link_mtu_bytes=mtu)
    for overlay, d in itertools.product(OVERLAYS, tcp_directions):
        yield _spec("larger MTU helps overlays (TCP goodput)", f"{overlay}, {d}", "order", "link_mtu_bytes",
                    [sorted(mtus, reverse=True)], "goodput_gbps", protocol="tcp", direction=d, data_path=overlay)
    for d in tcp_directions:
        base = min(mtus) if mtus else None
        yield _spec("MTU barely matters for direct routing (TCP goodput)", f"direct, {d}", "equality",
                    "link_mtu_bytes", [(x, base) for x in sorted(mtus) if x != base], "goodput_gbps",
                    protocol="tcp", direction=d, data_path="direct")
    for d, mtu in itertools.product(tcp_directions, mtus):
        yield _spec("IPIP slightly beats VXLAN (TCP goodput)", f"{d}, link MTU {mtu} B", "order", "data_path",
                    [["ipip", "vxlan"]], "goodput_gbps", protocol="tcp", direction=d, link_mtu_bytes=mtu)
    for p, mtu in itertools.product(tcp_paths, mtus):
        yield _spec("node to pod beats pod to pod (TCP goodput)", f"{p}, link MTU {mtu} B", "order", "direction",
                    [["node-pod", "pod-pod"]], "goodput_gbps", True, True, protocol="tcp", data_path=p,
                    link_mtu_bytes=mtu)
    sizes, http_mtus = list(file_sizes), list(http_mtus)
    for p in http_paths:
        if sizes:
            for mtu in http_mtus:
                yield _spec("host to pod ~ host to service for small files (HTTP requests/s)",
                            f"{p}, link MTU {mtu} B, {sizes[0]} B files", "equality", "direction",
                            [("host-pod", "host-service")], "requests_per_s", True, True,
                            protocol="http", data_path=p, link_mtu_bytes=mtu, file_bytes=sizes[0])
        if len(sizes) > 1 and http_mtus:
            mtu = http_mtus[-1]
            yield _spec("host to pod beats host to service for large files at large MTU (HTTP requests/s)",
                        f"{p}, link MTU {mtu} B, {sizes[-1]} B files", "order", "direction",
                        [["host-pod", "host-service"]], "requests_per_s", True, True,
                        protocol="http", data_path=p, link_mtu_bytes=mtu, file_bytes=sizes[-1])


#: Experiment E's A/A control, as the claims table shows it (:func:`cni_control_claims`).
CNI_CONTROL_CLAIM = "A/A control: no difference between a tool run and its twin (one lab, side by side)"


def cni_control_claims(labs: Sequence[tuple], step: Optional[tuple]) -> Iterator[ClaimSpec]:
    """Experiment E's A/A control (:attr:`nfvlab.scenario.cni.CniGrid.control`): per lab ``(data_path,
    link_mtu_bytes)``, the tool run ``step`` = ``(protocol, direction, file_bytes)``
    (:meth:`nfvlab.scenario.cni.CniGrid.control_step`) about equal to its twin (label ``arm: twin``), on
    per-repetition ratios (``paired``): a difference shown there is the design's, since none exists."""
    if step is None:
        return
    proto, direction, size = step
    what = f"{proto} {direction}" + (f", {size} B files" if size else "")
    for p, mtu in labs:
        yield _spec(CNI_CONTROL_CLAIM, f"{p}, link MTU {mtu} B, {what}", "equality", "arm", [(None, "twin")],
                    "goodput_gbps" if proto == "tcp" else "requests_per_s", True, True, protocol=proto,
                    direction=direction, data_path=p, link_mtu_bytes=mtu,
                    **({"file_bytes": size} if proto == "http" else {}))


def cni_claims_of(params) -> list[ClaimSpec]:
    """Experiment E's claims over the grid of its params (:class:`nfvlab.params.CniExperimentParams`):
    what the adaptive runner reads (TCP and HTTP claims only when the grid has those runs; the A/A
    control's with ``control``)."""
    mtus = list(params.link_mtus_bytes)
    sizes = sorted(params.wrk.file_bytes) if params.http_directions else []
    return list(cni_claims(params.data_paths if params.tcp_directions else (), params.tcp_directions,
                           mtus if params.tcp_directions else (), params.data_paths if params.http_directions else (),
                           sorted(mtus) if params.http_directions else (), sizes)) + list(
        cni_control_claims([(p.data_path, p.link_mtu_bytes) for p in params.grid.paths()],
                           params.grid.control_step()))


def tool_rate(protocol: str, result: dict) -> Optional[float]:
    """The rate a claim compares of one tool run's result: TCP goodput in Gbit/s (``goodput_gbps``),
    HTTP requests/s (``requests_per_s``); None when the result has none."""
    v = result.get("goodput_bps") if protocol == "tcp" else result.get("requests_per_s")
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    return float(v) / 1e9 if protocol == "tcp" else float(v)


# ---------------------------------------------------------------------------
# experiment A (draft Appendix A)
# ---------------------------------------------------------------------------
#: The draft's Figure 10 models and the local model standing in for each.
DRAFT_A_ANALOGUES = {
    "smartnic-sriov": "smartnic-direct",
    "ebpf-afxdp-cni": "afxdp-cni",
    "userspace-vpp": "ovs-dpdk-vhost",
    "ebpf-ovs-afxdp": "ovs-afxdp",
}


def model_claims(frame_sizes: Sequence) -> Iterator[ClaimSpec]:
    """Experiment A's claim A.2, "SR-IOV/AFXDP-CNI > VPP > OVS-AFXDP", on the local analogues
    (:data:`DRAFT_A_ANALOGUES`): two chains, smartnic-direct and afxdp-cni each above ovs-dpdk-vhost
    above ovs-afxdp, per frame size (the claims table's order: chain, then frame size)."""
    a = DRAFT_A_ANALOGUES
    for best in (a["smartnic-sriov"], a["ebpf-afxdp-cni"]):
        order = [best, a["userspace-vpp"], a["ebpf-ovs-afxdp"]]
        claim = f"A.2: {order[0]} > {order[1]} > {order[2]} (draft: SR-IOV/AFXDP-CNI > VPP > OVS-AFXDP)"
        for fs in frame_sizes:
            yield _spec(claim, f"{fs} B", "order", "model", [order], "throughput_pps", frame_size=fs)


# ---------------------------------------------------------------------------
# experiment B (draft Appendix B)
# ---------------------------------------------------------------------------
def pinning_numa_claims(models: Sequence, frame_sizes: Sequence, numas: Sequence,
                        pinnings: Sequence) -> Iterator[ClaimSpec]:
    """Experiment B's claims B.2, per model and frame size: "exclusive > shared > none" per NUMA
    scenario, then "s1 best; s2 and s4 degrade" (s1 above each of s2, s3, s4) per pinning mode."""
    for m, fs in itertools.product(models, frame_sizes):
        for numa in numas:
            yield _spec("B.2: exclusive > shared > none (CPU pinning mitigates the noisy neighbour)",
                        f"{m}, numa={numa}, {fs} B", "order", "pinning", [["exclusive", "shared", "none"]],
                        "throughput_pps", model=m, numa=numa, frame_size=fs)
        for pin in pinnings:
            yield _spec("B.2: s1 best; s2 and s4 degrade (vSwitch and pod on different NUMA nodes)",
                        f"{m}, pinning={pin}, {fs} B", "order", "numa", [["s1", "s2"], ["s1", "s3"], ["s1", "s4"]],
                        "throughput_pps", model=m, pinning=pin, frame_size=fs)


# ---------------------------------------------------------------------------
# experiment C (draft Appendix C)
# ---------------------------------------------------------------------------
#: C.2's chains in the order "combined > user-space only" claims them: the local models standing in
#: for the draft's combined-sriov-vpp and userspace-vpp.
COMBINED_CHAIN, USERSPACE_CHAIN = "chain-combined", "chain-userspace"
#: The frame size of C's NUMA claim (the draft's Figure 17).
CHAIN_NUMA_FRAME_SIZE = 1518


def chain_claims(models: Sequence, frame_sizes: Sequence) -> Iterator[ClaimSpec]:
    """Experiment C's claims C.2: "combined > user-space only" (chain-combined > chain-userspace) per
    frame size at NUMA scenario s1, then "s1 best; splitting pods across NUMA nodes degrades" (s1
    above each of s2..s6) per model at :data:`CHAIN_NUMA_FRAME_SIZE`."""
    order = [COMBINED_CHAIN, USERSPACE_CHAIN]
    for fs in frame_sizes:
        yield _spec(f"C.2: combined > user-space only ({order[0]} > {order[1]})", f"numa=s1, {fs} B", "order",
                    "model", [order], "throughput_pps", numa="s1", frame_size=fs)
    for m in models:
        yield _spec("C.2: s1 best; splitting pods across NUMA nodes (s2, s3, s5, s6) degrades",
                    f"{m}, {CHAIN_NUMA_FRAME_SIZE} B", "order", "numa", [["s1", f"s{i}"] for i in range(2, 7)],
                    "throughput_pps", model=m, frame_size=CHAIN_NUMA_FRAME_SIZE)


# ---------------------------------------------------------------------------
# the search experiments' claims over a grid (the adaptive runner)
# ---------------------------------------------------------------------------
#: The search goal whose rate A's, B's and C's claims compare (their tables' goal).
SEARCH_GOAL = "ndr"


def search_claims_of(params) -> Optional[list[ClaimSpec]]:
    """A search experiment's claims over the grid of its params (:class:`nfvlab.params.ExperimentParams`;
    the experiment is the first letter of ``params.experiment``, as the stages name it): what the
    adaptive runner reads. None: an experiment whose claims are not defined here (D, F), which
    therefore cannot run adaptive repetitions."""
    letter, sizes, r = params.experiment[:1], list(params.traffic.frame_sizes), params.resources
    if letter == "a":
        return list(model_claims(sizes))
    if letter == "b":
        return list(pinning_numa_claims(params.models, sizes, r.numa, r.pinning))
    if letter == "c":
        return list(chain_claims(params.models, sizes))
    return None


def key_labels(specs: Sequence[ClaimSpec]) -> tuple:
    """The labels the configuration keys of ``specs`` name (:attr:`ClaimSpec.labels`, in order of first
    appearance): what a runner keeps of a measurement's labels to key it as the claims do."""
    return tuple(dict.fromkeys(k for s in specs for k in s.labels))


def level_key(value: Any) -> Any:
    """A label value as configuration keys compare it: whole numbers as ``int`` (records may hold
    ``1500.0`` for ``1500``), NaN as None."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, float):
        return None if math.isnan(value) else int(value) if value.is_integer() else value
    return value
