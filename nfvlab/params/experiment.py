"""An experiment's params file (models x resources (x density) x traffic x search), and the
pipeline's other params files: calibration, profile, reference figures."""
from __future__ import annotations

from typing import Annotated, Any, Literal, Optional

from pydantic import BeforeValidator, Field, field_validator, model_validator

from nfvlab import linerate
from nfvlab.params.adaptive import Adaptive
from nfvlab.params.base import FrameSize, ModelName, PositiveFloat, _Strict
from nfvlab.params.lab import LabParams
from nfvlab.params.measurement import SearchParams, TrafficParams, TrialParams
from nfvlab.params.paired import PairedParams


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


class SearchControl(_Strict):
    """An A/A control of an experiment whose claims its searches decide (F): one cell searched a
    second time in every repetition, on a lab instance of its own, labelled ``arm: twin``."""

    model: ModelName
    """The model (one of ``models``)."""
    frame_size: FrameSize
    """The frame size (one of ``traffic.frame_sizes``)."""
    mtu_bytes: Optional[int] = None
    """The MTU (one of ``mtu_bytes``); ``null``: every MTU of the grid, a control each."""


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
    paired: Optional[PairedParams] = None
    """The paired phase after the searches (:class:`~nfvlab.params.paired.PairedParams`): the claims
    decided by randomized ABBA blocks of short trials; null: judged on the NDR searches."""
    control: Optional[SearchControl] = None
    """An A/A control of the searches (:class:`SearchControl`): its cell searched twice per repetition,
    side by side, the second labelled ``arm: twin``; the analysis judges the two about equal (the
    design's noise floor, which must not come out as a difference). Not with ``paired`` (which has its
    own, ``paired.control``) or ``adaptive``. null: none."""
    lab_instance: Literal["per-configuration", "per-frame-size"] = "per-configuration"
    """How often the lab is built: once per configuration and repetition, its frame sizes measured
    one after the other on it, or afresh for every frame size, so each search starts on a DUT no
    earlier search has loaded (a DUT that holds an overloaded trial's frames until new traffic
    pushes them out never settles between searches: docs/methodology.md, "A DUT that has not
    settled"). Costs one lab build per frame size (about 2 s embedded, 10 s on Kubernetes)."""
    frame_sizes_by_lab: dict[Literal["embedded", "kubernetes"], list[FrameSize]] = Field(default_factory=dict)
    """On a lab of this kind (``lab.kind``), only these of ``traffic.frame_sizes``: e.g. the quick
    profile measures the Kubernetes lab at 64 B only (its 10 s pod set-ups and its bimodal 1518 B
    OVS results belong to the full profile). A kind not named measures every frame size."""

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
    def _frame_sizes_of_this_lab(self) -> "ExperimentParams":
        only = self.frame_sizes_by_lab.get(self.lab.kind)
        if only is None:
            return self
        foreign = [f for f in only if f not in self.traffic.frame_sizes]
        if foreign or not only:
            raise ValueError(f"frame_sizes_by_lab.{self.lab.kind}: give some of traffic.frame_sizes "
                             f"({self.traffic.frame_sizes}), not {foreign or only}")
        kept = [f for f in self.traffic.frame_sizes if f in only]
        object.__setattr__(self, "traffic", self.traffic.model_copy(update={"frame_sizes": kept}))  # frozen model
        return self

    @model_validator(mode="after")
    def _control_in_grid(self) -> "ExperimentParams":
        c = self.control
        if c is None:
            return self
        if self.paired is not None:
            raise ValueError("control: the paired phase has its own A/A control (paired.control); remove control:")
        if self.adaptive is not None:
            raise ValueError("control: not with adaptive repetitions (they would not repeat the twin); "
                             "remove control: or adaptive:")
        if c.model not in self.models:
            raise ValueError(f"control.model: {c.model} is not one of models ({', '.join(self.models)})")
        if c.frame_size not in self.traffic.frame_sizes:
            raise ValueError(f"control.frame_size: {c.frame_size} is not one of traffic.frame_sizes "
                             f"({self.traffic.frame_sizes})")
        if c.mtu_bytes is not None and c.mtu_bytes not in (self.mtu_bytes or []):
            raise ValueError(f"control.mtu_bytes: {c.mtu_bytes} is not one of mtu_bytes ({self.mtu_bytes})")
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
    repetitions: int = Field(default=3, ge=1, le=9)
    """Ceiling searches per frame size and TX path, taken in turns; the ceiling is the second highest
    (:func:`nfvlab.calibrate.confirmed_ceiling`: a slow spell of the host lowers a search, never raises it)."""
    max_repetitions: int = Field(default=6, ge=1, le=9)
    """While a size's two highest searches disagree (:func:`nfvlab.calibrate.searches_agree`), it is
    searched again, in turns with the others that disagree, up to this many searches."""

    @model_validator(mode="after")
    def _max_covers_first(self):
        if self.max_repetitions < self.repetitions:
            raise ValueError(f"max_repetitions {self.max_repetitions}: must be at least repetitions "
                             f"({self.repetitions})")
        return self


class ProfileParams(_Strict):
    """Which params profile the pipeline measures (``params/profile.yaml``)."""

    profile: Literal["quick", "full"] = "quick"


class ReferenceParams(_Strict):
    """The reference-figures stage (``params/reference.yaml``)."""

    dpi: int = Field(default=100, ge=50, le=300)
    """Resolution of the rendered PNGs, dots per inch."""
