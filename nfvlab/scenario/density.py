"""Core-count arithmetic of the NFV Service Density Benchmarking note (seed 001).

The note allocates physical cores to the software switch and to the network
functions (NFs) with *ratios* written ``(a:b)`` -- "physical core to thread set
ratio": ``a`` physical cores serve ``b`` thread sets, i.e. ``a / b`` cores per
thread set::

    (1:1) -> 1.0    (2:1) -> 2.0    (4:1) -> 4.0
    (1:2) -> 0.5    (1:4) -> 0.25   (1:8) -> 0.125

and counts cores with::

    #pc = pcdr4sw * #dsw + pcmr4sw * #msw     (switch: dataplane + main sets)
    #pc = pcdr4nf * #dnf + pcmr4nf * #mnf     (NFs: one set of each per NF)

:func:`physical_cores` is that formula, unrounded. What the note's published
"Core Usage View" actually shows (checked in ``tests/test_density.py`` and
``docs/reference-data.md``) is the **NF cores only, rounded up on the node
total**: ``ceil(1.5 * total_NFs)`` for ``pcdr4nf=(1:1), pcmr4nf=(1:2)``. The
switch's own cores (2 at ``pcdr4sw=(1:1), pcmr4sw=(1:1)``) are *not* included,
and rounding per NF (2 cores each) or per service instance does not match.
:func:`core_usage_view` reproduces that view; :func:`core_plan` adds the switch.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Union

Ratio = Union[str, float, int, Fraction]
"""A core ratio: ``"(2:1)"`` / ``"2:1"`` style text, or cores per thread set as a number."""

_RATIO_RE = re.compile(r"^\s*\(?\s*(\d+(?:\.\d+)?)\s*:\s*(\d+(?:\.\d+)?)\s*\)?\s*$")


def parse_ratio(ratio: Ratio) -> Fraction:
    """Cores per thread set of a ratio.

    Parameters
    ----------
    ratio : str or number
        ``"(2:1)"``, ``"2:1"`` or ``"( 1 : 2 )"``; a number is taken as the
        cores-per-thread-set value itself.

    Returns
    -------
    fractions.Fraction
        ``a / b`` for ``(a:b)``, exact (``(1:8)`` is ``Fraction(1, 8)``).

    Raises
    ------
    ValueError
        Malformed text, a zero term, or a non-positive number.
    """
    if isinstance(ratio, Fraction):
        value = ratio
    elif isinstance(ratio, bool):
        raise ValueError(f"not a ratio: {ratio!r}")
    elif isinstance(ratio, int):
        value = Fraction(ratio)
    elif isinstance(ratio, float):
        if not math.isfinite(ratio):
            raise ValueError(f"not a ratio: {ratio!r}")
        value = Fraction(ratio).limit_denominator(1 << 20)
    elif isinstance(ratio, str):
        m = _RATIO_RE.match(ratio)
        if not m:
            raise ValueError(f"not a ratio: {ratio!r} (expected '(a:b)')")
        a, b = Fraction(m.group(1)), Fraction(m.group(2))
        if a == 0 or b == 0:
            raise ValueError(f"ratio terms must be non-zero: {ratio!r}")
        value = a / b
    else:
        raise ValueError(f"not a ratio: {ratio!r}")
    if value <= 0:
        raise ValueError(f"ratio must be positive: {ratio!r}")
    return value


def physical_cores(
    ratio_dataplane: Ratio, ratio_main: Ratio, n_dataplane: float, n_main: float
) -> float:
    """The note's core-count formula, unrounded.

    ``#pc = ratio_dataplane * n_dataplane + ratio_main * n_main`` -- the same
    formula serves the switch (``pcdr4sw``, ``pcmr4sw``, ``#dsw``, ``#msw``) and
    the NFs (``pcdr4nf``, ``pcmr4nf``, ``#dnf``, ``#mnf``).

    Parameters
    ----------
    ratio_dataplane, ratio_main : str or number
        Ratios such as ``"(1:1)"`` / ``"(1:2)"`` (see :func:`parse_ratio`).
    n_dataplane, n_main : int or float
        Number of dataplane and main thread sets (one of each per switch or NF).

    Returns
    -------
    float
        Physical cores, possibly fractional (``1.5`` for one NF at
        ``(1:1)``/``(1:2)``); round with :func:`math.ceil` for a core budget.
    """
    if n_dataplane < 0 or n_main < 0:
        raise ValueError("thread-set counts must be >= 0")
    total = parse_ratio(ratio_dataplane) * Fraction(n_dataplane) + parse_ratio(ratio_main) * Fraction(n_main)
    return float(total)


def switch_cores(pcdr4sw: Ratio = "(1:1)", pcmr4sw: Ratio = "(1:1)", n_switches: int = 1) -> float:
    """Cores of ``n_switches`` software switches (one dataplane + one main set each)."""
    return physical_cores(pcdr4sw, pcmr4sw, n_switches, n_switches)


def nf_cores(total_nfs: int, pcdr4nf: Ratio = "(1:1)", pcmr4nf: Ratio = "(1:2)") -> float:
    """Cores of ``total_nfs`` NFs (one dataplane + one main set each), unrounded."""
    return physical_cores(pcdr4nf, pcmr4nf, total_nfs, total_nfs)


def core_usage_view(
    instances: int, nfs_per_instance: int, pcdr4nf: Ratio = "(1:1)", pcmr4nf: Ratio = "(1:2)"
) -> int:
    """The value the note's "Core Usage View" publishes for one matrix cell.

    ``ceil(pcdr4nf * N + pcmr4nf * N)`` with ``N = instances * nfs_per_instance``:
    NF cores only, rounded up once for the whole node; the switch's cores are
    not counted (see the module docstring).
    """
    n = instances * nfs_per_instance
    return math.ceil(nf_cores(n, pcdr4nf, pcmr4nf))


@dataclass(frozen=True)
class CorePlan:
    """Physical cores needed on the NUMA node for one service-matrix cell."""

    instances: int
    nfs_per_instance: int
    switch_cores: int
    nf_cores: int

    @property
    def total_nfs(self) -> int:
        """Total NFs on the node (``instances * nfs_per_instance``)."""
        return self.instances * self.nfs_per_instance

    @property
    def total_cores(self) -> int:
        """Switch cores plus NF cores."""
        return self.switch_cores + self.nf_cores

    def fits(self, available_cores: int) -> bool:
        """True if the plan fits in ``available_cores`` physical cores."""
        return self.total_cores <= available_cores


def core_plan(
    instances: int,
    nfs_per_instance: int,
    pcdr4sw: Ratio = "(1:1)",
    pcmr4sw: Ratio = "(1:1)",
    pcdr4nf: Ratio = "(1:1)",
    pcmr4nf: Ratio = "(1:2)",
) -> CorePlan:
    """Cores for the switch and the NFs of one matrix cell, each rounded up.

    Parameters
    ----------
    instances, nfs_per_instance : int
        Matrix row (service instances) and column (NFs per instance).
    pcdr4sw, pcmr4sw, pcdr4nf, pcmr4nf : str or number
        The note's four ratios (defaults: the published configuration with
        ``pcdr4sw=(1:1)``).

    Returns
    -------
    CorePlan
        ``nf_cores`` equals :func:`core_usage_view`; ``switch_cores`` is
        ``ceil(pcdr4sw + pcmr4sw)`` for the single switch.
    """
    if instances < 1 or nfs_per_instance < 1:
        raise ValueError("instances and nfs_per_instance must be >= 1")
    return CorePlan(
        instances=instances,
        nfs_per_instance=nfs_per_instance,
        switch_cores=math.ceil(switch_cores(pcdr4sw, pcmr4sw)),
        nf_cores=core_usage_view(instances, nfs_per_instance, pcdr4nf, pcmr4nf),
    )
