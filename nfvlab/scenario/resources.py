"""Resource knobs of draft §4.2 and the core plan that places every busy thread.

A scenario carries a :class:`Resources` value (CPU pinning mode, noisy
neighbour, hugepages, NUMA scenario, core-allocation ratios). :func:`plan`
turns it, the model and a host's CPUs and NUMA nodes into a :class:`CorePlan`: which CPUs
the generator, the vSwitch's PMD threads, each pod's forwarder and the noisy
neighbour may run on. What the host cannot provide raises
:class:`NotRealizable` with the reason, before anything is created.

The core plan for small hosts (``docs/core-plan.md``): the first CPU is the
*control CPU* (paced generator, control plane, kernel work); busy pollers get
dedicated CPUs from the rest in the order vSwitch PMD, pod 1, pod 2, ...;
busy pollers that find no free CPU share the control CPU, whose generator
paces in bursts that large rings absorb. Two busy pollers never share a CPU
other than the control CPU unless the pinning mode asks for it (``shared``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal, Optional

from nfvlab.scenario.density import parse_ratio as ratio  # "2:1" -> 2 cores per thread set

Pinning = Literal["plan", "none", "shared", "exclusive"]

#: NUMA placement scenarios of draft Appendix B (Figure 12): role -> node.
NUMA_SINGLE_POD = {
    "s1": {"nic": 0, "vswitch": 0, "pod1": 0},
    "s2": {"nic": 0, "vswitch": 0, "pod1": 1},
    "s3": {"nic": 0, "vswitch": 1, "pod1": 1},
    "s4": {"nic": 0, "vswitch": 1, "pod1": 0},
}
#: NUMA placement scenarios of draft Appendix C (Figure 15, rows renumbered s1..s6).
NUMA_TWO_PODS = {
    "s1": {"nic": 0, "vswitch": 0, "pod1": 0, "pod2": 0},
    "s2": {"nic": 0, "vswitch": 0, "pod1": 0, "pod2": 1},
    "s3": {"nic": 0, "vswitch": 0, "pod1": 1, "pod2": 0},
    "s4": {"nic": 0, "vswitch": 1, "pod1": 1, "pod2": 1},
    "s5": {"nic": 0, "vswitch": 1, "pod1": 1, "pod2": 0},
    "s6": {"nic": 0, "vswitch": 1, "pod1": 0, "pod2": 1},
}


class NotRealizable(RuntimeError):
    """This host cannot provide what a configuration asks for (one-line reason)."""


@dataclass(frozen=True)
class Resources:
    """Resource configuration of one lab (draft §4.2)."""

    pinning: Pinning = "plan"
    """``plan``: the documented core plan; ``none``: pod and noisy neighbour
    float over all CPUs; ``shared``: both share the pod's CPUs; ``exclusive``:
    each gets CPUs nobody else uses (the CMK modes of Appendix B)."""
    noisy_load_pct: Optional[int] = None
    """Noisy-neighbour pod (stress-ng, one CPU worker) at this load, percent;
    ``None``: no noisy neighbour."""
    hugepages: bool = False
    """DPDK processes use 2 MB hugepages (reserved per pod, given back at
    teardown) instead of ordinary memory."""
    numa: str = "s1"
    """NUMA placement scenario (Figure 12 / Figure 15 names); ``s1`` puts
    everything on node 0."""
    pcdr4sw: str = "1:1"
    """Physical cores : vSwitch dataplane thread sets (seed 001), e.g. ``2:1``."""
    pcdr4nf: str = "1:1"
    """Physical cores : NF dataplane thread sets, e.g. ``1:2`` (two pods per core)."""

    def __str__(self) -> str:
        """The knobs that differ from the defaults, e.g. ``pinning=shared, noisy_load_pct=50``."""
        diff = [f"{k}={v}" for k, v in self.labels().items() if v != getattr(Resources, k)]
        return ", ".join(diff) or "default resources"

    def labels(self) -> dict:
        """The knobs as record labels."""
        return {"pinning": self.pinning, "noisy_load_pct": self.noisy_load_pct,
                "hugepages": self.hugepages, "numa": self.numa,
                "pcdr4sw": self.pcdr4sw, "pcdr4nf": self.pcdr4nf}


@dataclass(frozen=True)
class CorePlan:
    """CPUs per role. An empty set means: not pinned (any CPU)."""

    generator: frozenset[int]
    vswitch: frozenset[int] = frozenset()
    """CPUs of the vSwitch PMD threads (one PMD per CPU)."""
    pods: dict[str, frozenset[int]] = field(default_factory=dict)
    """Pod role (``pod1``...) -> CPUs of its forwarder."""
    noisy: frozenset[int] = frozenset()
    host_cpus: tuple[int, ...] = ()

    def busy_roles(self, *, noisy: bool = False) -> dict[str, frozenset[int]]:
        """The lab's threads besides the generator, by role -> CPUs (empty: may run on any CPU).

        The vSwitch's non-PMD threads run on the generator's CPU; ``noisy``: the scenario
        has a noisy neighbour.
        """
        return {**({"vSwitch control threads": self.generator} if self.vswitch else {}),
                **{f"{p} forwarder": c for p, c in self.pods.items()},
                **({"noisy neighbour": self.noisy} if noisy else {})}

    def describe(self) -> dict:
        """JSON-friendly form for state records and result labels."""
        def fmt(s):
            return ",".join(map(str, sorted(s))) or "any"
        return {"generator": fmt(self.generator), "vswitch": fmt(self.vswitch),
                **{p: fmt(c) for p, c in self.pods.items()}, "noisy": fmt(self.noisy)}


def plan(
    *,
    vswitch: bool,
    busy_pods: tuple[str, ...],
    resources: Resources = Resources(),
    cpus: tuple[int, ...],
    nodes: dict[int, tuple[int, ...]],
) -> CorePlan:
    """Place generator, vSwitch PMDs, busy-polling pod forwarders and the noisy neighbour.

    ``vswitch``: the model has a user-space vSwitch (PMD threads);
    ``busy_pods``: pods whose forwarder busy-polls (DPDK). Kernel pods have no
    thread to place (their work runs in the sender's softirq). ``cpus``: the
    CPUs the lab may use; ``nodes``: NUMA node -> its CPUs.
    """
    cpus = tuple(sorted(cpus))
    scenarios = NUMA_TWO_PODS if len(busy_pods) >= 2 else NUMA_SINGLE_POD
    if resources.numa not in scenarios:
        raise NotRealizable(f"NUMA scenario {resources.numa!r} is not defined for "
                            f"{len(busy_pods) or 1}-pod models (use {', '.join(scenarios)})")
    placement = scenarios[resources.numa]
    if any(n > 0 for n in placement.values()) and len(nodes) < 2:
        raise NotRealizable(f"NUMA scenario {resources.numa} places roles on node 1; "
                            f"this host has {len(nodes)} NUMA node")
    if len(cpus) < 2:
        raise NotRealizable("the embedded lab needs 2 CPUs (generator and data path); this host has 1")
    if not vswitch and resources.pcdr4sw != "1:1":
        raise NotRealizable(f"pcdr4sw {resources.pcdr4sw} sets vSwitch PMD cores; this model has "
                            "no user-space vSwitch")
    if not busy_pods and resources.pcdr4nf != "1:1":
        raise NotRealizable(f"pcdr4nf {resources.pcdr4nf} sets NF dataplane cores; this model's "
                            "pods forward in the kernel")
    if not busy_pods and resources.pinning != "plan":
        raise NotRealizable("CPU pinning needs a pod with a forwarding process; this model's "
                            "pods forward in the kernel (softirq of the sender's CPU)")

    node_of = {c: n for n, cs in nodes.items() for c in cs}
    free = {n: [c for c in cpus if node_of.get(c, 0) == n] for n in sorted(nodes)}
    control = free[placement["nic"]].pop(0) if free.get(placement["nic"]) else cpus[0]
    # The generator stands in for the NIC: it drives the ports, on the NIC's node.

    def take(role: str, count: int) -> list[int]:
        pool = free.get(placement.get(role, 0), [])
        got, pool[:] = pool[:count], pool[count:]
        return got

    sw_cores = 0
    vswitch_cpus: list[int] = []
    if vswitch:
        sw_cores = math.ceil(ratio(resources.pcdr4sw))
        vswitch_cpus = take("vswitch", sw_cores)
        if len(vswitch_cpus) < sw_cores:
            raise NotRealizable(
                f"pcdr4sw {resources.pcdr4sw} needs {sw_cores} CPU(s) for vSwitch PMDs besides the "
                f"generator's CPU {control}; this host has {len(cpus)} CPUs")
    nf_ratio = ratio(resources.pcdr4nf)
    pods: dict[str, frozenset[int]] = {}
    # pcdr4nf 1:2 -> two pods per core; 1:1 -> one; 2:1 -> two cores per pod.
    per_core = max(1, int(1 / nf_ratio)) if nf_ratio < 1 else 1
    cores_per_pod = max(1, int(nf_ratio)) if nf_ratio >= 1 else 1
    i = 0
    while i < len(busy_pods):
        group = busy_pods[i:i + per_core]
        got = take(group[0], cores_per_pod)
        for p in group:
            pods[p] = frozenset(got or [control])
        i += per_core

    noisy: frozenset[int] = frozenset()
    mode = resources.pinning
    if mode == "exclusive":
        need = [p for p in busy_pods if pods[p] == {control}]
        left = sum(len(v) for v in free.values())
        if need or (resources.noisy_load_pct is not None and left < 1):
            used = 1 + len(vswitch_cpus) + len(busy_pods) + (resources.noisy_load_pct is not None)
            raise NotRealizable(
                f"exclusive pinning needs {used} CPUs (generator, "
                f"{'vSwitch PMD, ' if vswitch else ''}{len(busy_pods)} pod(s)"
                f"{', noisy neighbour' if resources.noisy_load_pct is not None else ''} each "
                f"on its own); this host has {len(cpus)}")
        if resources.noisy_load_pct is not None:
            noisy = frozenset(take("noisy", 1) or [c for v in free.values() for c in v][:1])
    elif mode == "shared":
        pool = frozenset().union(*pods.values()) if pods else frozenset(cpus[1:])
        pods = {p: pool for p in pods}
        noisy = pool if resources.noisy_load_pct is not None else frozenset()
    elif mode == "none":
        pods = {p: frozenset() for p in pods}
    return CorePlan(generator=frozenset([control]), vswitch=frozenset(vswitch_cpus),
                    pods=pods, noisy=noisy, host_cpus=cpus)
