"""The paired phase: the ``paired:`` section of an experiment's params (docs/methodology.md,
"Paired comparisons on a noisy host")."""
from __future__ import annotations

from typing import Annotated, Literal, Optional

from pydantic import Field, model_validator

from nfvlab.params.base import _Strict


class PairedParams(_Strict):
    """After the NDR searches, every pair of configurations a claim compares (and one A/A control: a
    configuration against a second lab instance of itself) is measured in paired blocks, both labs up
    at once, the idle one paused, the arms taking turns trial by trial (``metric``). Blocks are added
    look by look (``first_blocks``, then ``step`` more) up to ``max_blocks`` or until the comparison is
    decided (Pocock-type alpha spending over the looks; Bonferroni over a claim's pairs). Absent (null):
    no paired phase; the claims are judged on the NDR searches."""

    metric: Literal["ndr", "forwarding", "common"] = "common"
    """What a block measures of each arm. ``ndr``: a short NDR search per arm (the experiment's search
    params, its rates within ``span`` of the arm's NDR), the two searches' trials taking turns, so that
    both see the same spells of the host; the block's figure is ``log(NDR_a / NDR_b)``. ``forwarding``:
    four trials (ABBA or BAAB) at ``overload`` x each arm's NDR, the figure their forwarding rates' paired
    log-ratio; only for DUTs that forward their capacity when overloaded (many DUTs here collapse to
    7-10 % of their NDR at 1.1-1.2 x it: docs/methodology.md, "Paired comparisons"). ``common``: four
    trials (ABBA or BAAB), both arms offered one load, ``common_load`` x the highest NDR either arm's
    searches reached (RFC 2285's forwarding rate at a given offered load); the figure their forwarding
    rates' paired log-ratio. The weaker arm is offered more than its own NDR (it may lose frames there),
    so the figure compares what each forwards at the better arm's capacity: the arm that forwards less
    at that load is the weaker whatever its own NDR search said."""
    span: float = Field(default=2.0, gt=1.05, le=10.0)
    """``ndr``: each block's searches start at ``span`` x the arm's NDR (down to ``search.min_rate_pps``)."""
    relative_width: float = Field(default=0.04, gt=0, lt=0.5)
    """``ndr``: the goal width of each block's searches (coarser than the experiment's own searches: the
    blocks' mean is what decides, and a block costs two searches)."""
    overload: float = Field(default=1.1, ge=1.02, le=3.0)
    """``forwarding``: offered load of each arm's trials as a multiple of its NDR: above it, so that a
    trial measures what the DUT forwards, not what it was offered."""
    common_load: float = Field(default=1.0, ge=0.5, le=3.0)
    """``common``: the load both arms are offered, a multiple of the highest NDR either arm's searches
    reached (on a noisy host an NDR errs low, so the highest is the nearest the better arm's capacity)."""
    trial_duration_s: Annotated[float, Field(gt=0.05, le=60)] = 1.0
    """``forwarding``, ``common``: duration of each trial of a block, seconds (trials of 1-2 s share the host's spell)."""
    first_blocks: int = Field(default=6, strict=True, ge=2, le=1000)
    """Blocks at the first look (``ndr``: one search per arm; ``forwarding``, ``common``: four trials)."""
    step: int = Field(default=4, strict=True, ge=1, le=1000)
    """Blocks added per look."""
    max_blocks: int = Field(default=18, strict=True, ge=2, le=1000)
    """Most blocks of one comparison (the last look)."""
    margin: float = Field(default=0.05, gt=0, lt=1)
    """Equivalence margin: a ratio shown inside ``[1/(1+margin), 1+margin]`` is "equivalent" (the claims'
    ``order_margin``, params/claims.yaml)."""
    alpha: float = Field(default=0.05, gt=0, lt=0.5)
    """Chance of any wrong verdict on a claim, over its pairs and looks."""
    control: bool = True
    """Measure the A/A control (the design's own noise floor, which must not come out as a difference):
    its first two looks, ``first_blocks + step`` blocks at most (it asks only whether the design shows a
    difference where there is none)."""
    give_up_above: Optional[int] = Field(default=None, strict=True, ge=2, le=100000)
    """Non-binding futility: from its second look on, an undecided comparison whose blocks needed
    (:attr:`nfvlab.paired.PairedResult.blocks_needed`, from its blocks so far, at the full alpha)
    exceed this, or are beyond counting, is given up (recorded ``stopped: futile``): it would not
    be decided within ``max_blocks``. Stopping early never adds a verdict, so alpha holds; the
    cost is a little power. null: only the cap and the budget stop it."""
    seconds: Optional[Annotated[float, Field(gt=0, le=86400)]] = None
    """Time budget of the whole phase, seconds: no look starts once it is spent (null: only
    ``max_blocks`` bounds it); an unfinished comparison is recorded undecided, with why."""
    seed: int = Field(default=1, strict=True, ge=0)
    """Seed of the blocks' random orders (with the run id and the comparison)."""

    @model_validator(mode="after")
    def _looks_fit(self) -> "PairedParams":
        if self.max_blocks < self.first_blocks:
            raise ValueError(f"max_blocks: {self.max_blocks} is below first_blocks ({self.first_blocks})")
        return self
