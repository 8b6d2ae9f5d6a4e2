"""Experiment E's params file (seed 002): CNI data paths x link MTUs, TCP and HTTP tool runs."""
from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, field_validator

from nfvlab.params.adaptive import Adaptive
from nfvlab.params.base import _Strict
from nfvlab.scenario.cni import (DATA_PATHS, HTTP_DIRECTIONS, MTU_MAX_BYTES, MTU_MIN_BYTES, TCP_DIRECTIONS,
                                 CniConfigError, CniGrid, CniPath, IperfParams, WrkParams)


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
    control: bool = Field(default=False, strict=True)
    """The A/A control (:attr:`nfvlab.scenario.cni.CniGrid.control`): the first TCP direction run twice
    per repetition, side by side; its claims row must not show a difference."""
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
                       self.iperf, self.wrk, self.repetitions, self.control)
