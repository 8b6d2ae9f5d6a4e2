"""Adaptive repetitions: the ``adaptive:`` section of an experiment's params (docs/methodology.md, "Claims")."""
from __future__ import annotations

from typing import Annotated, Any, Optional

from pydantic import AfterValidator, Field, field_validator

from nfvlab.params.base import _Strict


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
    """Time budget of the added repetitions, in whole looks (null: only ``max_repetitions`` bounds
    them): a look starts only if its estimated time fits what is left."""
    give_up_above: Optional[int] = Field(default=None, strict=True, ge=2, le=100000)
    """Repetitions per configuration: a claim none of whose undecided pairs looks decidable within
    this many (estimated from the data so far) gets no more (non-binding futility; null: never)."""

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
