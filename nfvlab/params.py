"""Typed, validated parameters: YAML params files -> pydantic models.

Every params file (``params/*.yaml``) and every CLI invocation goes through these
models, so bad input is rejected in one place, before any lab resource exists,
with a one-line message naming the file, the key and what is allowed::

    params/a.yaml: traffic.frame_sizes.2: 63 is outside 64..9018 (or "IMIX")

Unknown keys, wrong types and out-of-range values are all errors.
"""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, Optional, Union

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

from nfvlab import linerate
from nfvlab.lab.catalogue import MODEL_NAMES


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
"""A model name from :mod:`nfvlab.lab.catalogue`."""
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
    """Lowest rate a search tries, packets/s per direction."""
    max_rate_pps: Optional[PositiveFloat] = None
    """Highest rate, packets/s per direction; default: the port line rate, capped
    by 1.2 x the calibrated generator ceiling when one is known."""
    initial_trial_duration_s: PositiveFloat = 0.5
    final_trial_duration_s: PositiveFloat = 1.0
    duration_sum_s: PositiveFloat = 1.0
    """MLRsearch: trial-seconds needed at the final duration to decide a load."""
    search_duration_max_s: PositiveFloat = 600.0
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


class LabParams(_Strict):
    """Which lab runs the experiment and how it is shaped."""

    kind: Literal["local", "k8s"] = "local"
    """``local``: the embedded lab (namespaces on this host); ``k8s``: a real lab."""
    port_speed: Literal["1GbE", "10GbE", "25GbE", "40GbE", "100GbE"] = "10GbE"
    """Nominal speed of the traffic ports (bounds requested rates)."""
    mtu: int = Field(default=9100, ge=1280, le=9216)
    """MTU of every lab link, bytes (frames above MTU + 18 are rejected)."""
    generator_cpu: Optional[int] = Field(default=0, ge=0)
    """CPU the generator's TX thread is pinned to (``null``: no pinning)."""


def _check_ratio(v: Any) -> str:
    from nfvlab.lab.resources import ratio

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

    @model_validator(mode="after")
    def _density_switch(self) -> "ExperimentParams":
        if self.density is not None and self.models != ["host-routing"]:
            raise ValueError("with density, models must be [host-routing] (the switch of the "
                             "service matrix)")
        return self


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


def load(path: Union[str, Path], model: type[BaseModel] = ExperimentParams,
         overrides: Optional[dict] = None) -> Any:
    """Read a YAML params file into ``model``; one-line :class:`ParamsError` on any problem.

    ``overrides`` (nested dict, e.g. papermill parameters) is merged into the
    file's data before validation, so errors still name the file and key.
    """
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as err:
        raise ParamsError(f"{path}: cannot read ({err.strerror})") from None
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
    if overrides:
        data = _merge(data, overrides)
    return validate(model, data, str(path) + (" (with overrides)" if overrides else ""))


def load_experiment(path: Union[str, Path], lab_profile: Optional[Union[str, Path]] = "params/lab.yaml",
                    overrides: Optional[dict] = None) -> ExperimentParams:
    """An experiment's params file with the lab profile merged into its ``lab:``.

    ``overrides`` (papermill parameters) win over both; every error is one line
    naming the file and key.
    """
    merged: dict = {}
    if lab_profile is not None:
        lab = load(lab_profile, LabParams)
        merged = {"lab": lab.model_dump(exclude_unset=True)}
    return load(path, ExperimentParams, overrides=_merge(merged, overrides or {}) or None)
