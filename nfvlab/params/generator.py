"""The traffic generator of a lab profile (``generator:``): the embedded one or a TRex server."""
from __future__ import annotations

from typing import Annotated, Any, Literal, Optional, Union

from pydantic import Discriminator, Field, Tag, field_validator, model_validator

from nfvlab.params.base import _MAC, _Strict


class GeneratorParams(_Strict):
    """The embedded generator (``generator: {kind: embedded}``)."""

    kind: Literal["embedded"] = "embedded"
    """``embedded``: nfvlab-gen (C, AF_PACKET) on the lab's ports."""
    cpu: Optional[int] = Field(default=0, ge=0)
    """CPU the generator's TX thread is pinned to (``null``: not pinned)."""
    tx: Literal["auto", "socket", "xdp"] = "auto"
    """How load frames leave: ``xdp`` (an XDP program run in the kernel's live-frames mode: no
    sk_buff on the sending side, 2-3x the frames per second; frames of at most 1518 B, every tx
    port a veth or NIC in one namespace, veth peers switched to NAPI (GRO on) for the trial, and
    the TX CPU its own), ``socket`` (AF_PACKET, sendmmsg), or ``auto`` (default): ``xdp`` wherever
    the ports, frame sizes and the core plan allow it, else ``socket``, with the reason recorded
    (``docs/measurement.md``, "Two TX paths")."""



class TrexParams(_Strict):
    """How to reach a TRex server (stateless mode) and how to drive its two ports."""

    kind: Literal["trex"] = "trex"
    server: str = Field(min_length=1)
    """Host name or address of the TRex server (``t-rex-64 -i``)."""
    sync_port: int = Field(default=4501, ge=1, le=65535)
    """TCP port of TRex's JSON-RPC (ZMQ REQ/REP) channel."""
    async_port: int = Field(default=4500, ge=1, le=65535)
    """TCP port of TRex's event (ZMQ PUB) channel."""
    ports: list[int] = Field(default_factory=lambda: [0, 1], min_length=2, max_length=2)
    """The two TRex port ids: direction 0 sends on ``ports[0]`` towards the DUT and is
    received on ``ports[1]``; direction 1 the other way round."""
    client: Literal["auto", "v3", "v2"] = "auto"
    """Client library: ``v3`` lbr-trex-client in ``.venv-trex`` (servers v2.88..v3.0.x, STL API
    5.x), ``v2`` trex-stl-lib in ``.venv-trex-v2`` (old servers, STL API 4.x), ``auto`` v3 and,
    if the server answers with an older API and ``.venv-trex-v2`` exists, v2."""
    client_path: Optional[str] = None
    """A TRex server's ``automation/trex_control_plane/interactive`` directory, used (with
    ``.venv-trex``'s python) instead of lbr-trex-client: the client that ships with the server."""
    latency_pps: int = Field(default=1000, ge=0, le=1_000_000)
    """Latency probes per second and direction (at most a tenth of the trial rate; part of
    the rate, as in the embedded generator). 0 disables probes."""
    flows: int = Field(default=1, ge=1, le=65535)
    """UDP flows per direction: source ports 1024 .. 1024 + flows - 1 (a field-engine variable;
    the first port moves below 1024 when more than 64512 flows would not fit)."""
    core_mask: Optional[int] = Field(default=None, ge=1)
    """TRex DP core mask per tx port (bit n = core n); None lets TRex split over all cores."""
    timeout_s: float = Field(default=10.0, gt=0, le=600)
    """Seconds to wait for the server to answer one RPC (and the worker to start)."""
    settle_s: float = Field(default=0.5, ge=0, le=10)
    """Seconds waited after the last frame left for frames still in flight, before counters
    are read (TRex removes its RX filters only then)."""
    stop_tolerance_s: float = Field(default=0.01, ge=0, le=1)
    """Seconds past the intended duration, counted from the server's confirmed start, the
    server may take to finish sending; then nfvlab stops it and the frames it had not sent
    count as loss, as CSIT does (a server sending late, e.g. backpressured by the DUT, would
    otherwise turn "sent late" into "no loss"). A trial whose stop came later than that by
    more than 20 ms (the client stalled) is invalid (docs/methodology.md, "Invalid trials").
    0.01 s: a real server's traffic ended within it in 11 of 12 trials at 10-40 kpps; the
    twelfth (39,000 pps) lost about 1 % to the stop: the rule errs towards loss, never
    towards a rate above capacity (docs/trex.md)."""
    l2_dst_macs: Optional[list[str]] = None
    """Destination MAC per TRex port (same order as ``ports``): puts the ports in L2 mode
    towards the DUT at connect time. None keeps the server's own port configuration."""

    @field_validator("ports")
    @classmethod
    def _distinct(cls, v: list[int]) -> list[int]:
        if v[0] == v[1] or min(v) < 0:
            raise ValueError(f"ports {v}: two distinct TRex port ids >= 0")
        return v

    @field_validator("l2_dst_macs")
    @classmethod
    def _macs(cls, v: Optional[list[str]]) -> Optional[list[str]]:
        if v is None:
            return v
        if len(v) != 2 or not all(_MAC.match(m) for m in v):
            raise ValueError("l2_dst_macs: two MAC addresses aa:bb:cc:dd:ee:ff, one per port")
        return [m.lower() for m in v]

    @model_validator(mode="after")
    def _client_path_is_v3(self) -> "TrexParams":
        if self.client_path and self.client == "v2":
            raise ValueError("client_path is a v3 client directory: use client: v3 or auto")
        return self


def _generator_kind(v: Any) -> str:
    return (v.get("kind", "embedded") if isinstance(v, dict) else getattr(v, "kind", "embedded"))


AnyGenerator = Annotated[Union[Annotated[GeneratorParams, Tag("embedded")], Annotated[TrexParams, Tag("trex")]],
                         Discriminator(_generator_kind)]
"""``generator:`` of a lab profile: ``kind: embedded`` (the default) or ``kind: trex`` (docs/trex.md)."""
