"""What a measurement does: the traffic sent, one trial's length, the throughput search."""
from __future__ import annotations

from typing import Annotated, Literal, Optional

from pydantic import Field, model_validator

from nfvlab.params.base import FrameSize, PositiveFloat, _Strict


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
