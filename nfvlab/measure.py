"""From validated params to recorded search results: the one path CLI, notebooks
and the DVC pipeline share.

    with open_streams(model="linux-bridge") as (lab, streams):
        results = search(streams, frame_size=64, search=SearchParams(), traffic=..., ...)

Input checks that need no lab (rates vs line rate, frame size vs MTU, external
ports exist) run in :func:`check_inputs` before anything is created.
"""
from __future__ import annotations

import re
from contextlib import contextmanager
from typing import Callable, Iterator, Optional

from nfvlab import calibrate, linerate
from nfvlab.lab import netns as nl
from nfvlab.lab.catalogue import DEFAULT_MODEL
from nfvlab.lab.core import LAB_MTU, Lab
from nfvlab.lab.kernel import TG_NET, Port, Stream
from nfvlab.lab.resources import Resources
from nfvlab.linerate import FrameSize
from nfvlab.params import SearchParams, TrafficParams
from nfvlab.search import loss_sweep, mlrsearch, mrr, ndr_pdr_bisect, rfc2544_search
from nfvlab.traffic.embedded import EmbeddedGenerator
from nfvlab.trial import GeneratorMeasurer, TrialResult

OnTrial = Callable[[TrialResult], None]


class InputError(ValueError):
    """Bad input detected before any lab resource exists (one-line message)."""


_PORT = re.compile(r"^([A-Za-z0-9_.-]+):([A-Za-z0-9_.@-]{1,15})$")


def parse_port(text: str) -> Port:
    m = _PORT.match(text)
    if not m:
        raise InputError(f"--port {text!r}: use NS:IFACE (a named network namespace and an interface in it)")
    return Port(m.group(1), m.group(2))


def external_streams(ports: list[str], dmacs: Optional[list[str]] = None) -> list[Stream]:
    """Streams over two existing interfaces (like cabling a generator to a DUT).

    Frames go from ``ports[0]`` to ``ports[1]`` and back; the destination MAC of
    each direction is the receiving port's MAC unless ``dmacs`` says otherwise
    (e.g. a routing DUT's ingress MAC).
    """
    if len(ports) != 2:
        raise InputError(f"--port: give exactly two ports (got {len(ports)})")
    p = [parse_port(x) for x in ports]
    for port in p:
        if not nl.link_exists(port.ns, port.iface):
            raise InputError(f"--port {port}: no interface {port.iface!r} in network namespace {port.ns!r}")
    macs = [nl.mac(x.ns, x.iface) for x in p]
    d = dmacs or [macs[1], macs[0]]
    if len(d) != 2 or not all(re.fullmatch(r"([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}", m) for m in d):
        raise InputError("--dmac: give two MAC addresses aa:bb:cc:dd:ee:ff, one per direction")
    return [
        Stream(p[0], p[1], macs[0], d[0], f"{TG_NET[0]}.1", f"{TG_NET[1]}.1"),
        Stream(p[1], p[0], macs[1], d[1], f"{TG_NET[1]}.1", f"{TG_NET[0]}.1"),
    ]


def port_mtu(port: Port) -> int:
    """MTU of a traffic port, bytes."""
    return nl.link_mtu(port.ns, port.iface)


def check_inputs(frame_size: FrameSize, *, port_speed: str, mtu: int,
                 rates_pps: tuple[float, ...] = (), duration_s: Optional[float] = None) -> None:
    """Reject impossible requests before building anything."""
    try:
        largest = max(linerate.IMIX.sizes) if isinstance(frame_size, str) else frame_size
        linerate.mean_frame_bytes(frame_size)
    except ValueError as err:
        raise InputError(f"--frame-size: {err}") from None
    if largest - 18 > mtu:
        raise InputError(f"--frame-size {largest}: above the path MTU ({mtu} B + 18 B of header/FCS)")
    line = linerate.max_pps(port_speed, frame_size)
    for r in rates_pps:
        if not r > 0:
            raise InputError(f"--rate-pps {r:g}: must be above 0")
        if r > line:
            raise InputError(f"--rate-pps {r:g}: above the {port_speed} line rate at {frame_size} B "
                             f"({line:,.0f} pps)")
    if duration_s is not None and not duration_s > 0:
        raise InputError(f"--duration-s {duration_s:g}: must be above 0")


@contextmanager
def open_streams(model: Optional[str] = None, ports: Optional[list[str]] = None,
                 dmacs: Optional[list[str]] = None, mtu: int = LAB_MTU,
                 resources: Resources = Resources()) -> Iterator[tuple[Optional[Lab], list[Stream]]]:
    """Yield ``(lab, streams)``: a fresh embedded lab of ``model``, or external ``ports``."""
    if ports:
        yield None, external_streams(ports, dmacs)
        return
    with Lab(model or DEFAULT_MODEL, mtu=mtu, resources=resources) as lab:
        yield lab, lab.streams


def generator(streams: list[Stream], traffic: TrafficParams, lab: Optional[Lab] = None,
              cpu: Optional[int] = 0) -> EmbeddedGenerator:
    return EmbeddedGenerator(streams, flows=traffic.flows, latency_pps=traffic.latency_pps,
                             cpu=cpu, tracker=lab)


def default_max_rate(port_speed: str, frame_size: FrameSize) -> float:
    """Line rate, capped at 1.2 x the calibrated generator ceiling when known, pps."""
    line = linerate.max_pps(port_speed, frame_size)
    ceiling = calibrate.ceiling_for(frame_size)
    return min(line, 1.2 * ceiling) if ceiling else line


def search(measure, frame_size: FrameSize, sp: SearchParams, *, max_rate_pps: float,
           on_trial: Optional[OnTrial] = None, progress: bool = True, warmup_s: float = 0.0):
    """Run the search ``sp`` asks for; return ``list[SearchResult]`` (a DataFrame for sweeps)."""
    goals = {}
    if sp.ndr:
        goals["ndr"] = 0.0
    if sp.pdr_loss_ratio is not None:
        goals["pdr"] = sp.pdr_loss_ratio
    lo = min(sp.min_rate_pps, max_rate_pps / 10)
    if sp.method == "mrr":
        results = [mrr(measure, max_rate_pps, sp.final_trial_duration_s, warmup_duration_s=warmup_s,
                       on_trial=on_trial, progress=progress)]
    elif sp.method == "sweep":
        return loss_sweep(measure, max_rate_pps, sp.sweep_fractions, sp.final_trial_duration_s,
                          on_trial=on_trial, progress=progress)
    elif sp.method == "rfc2544":
        if not goals:
            raise InputError("search: ask for ndr and/or pdr")
        if set(goals) == {"ndr", "pdr"}:
            got = ndr_pdr_bisect(measure, lo, max_rate_pps, pdr_loss_ratio=goals["pdr"],
                                 relative_width=sp.relative_width, duration_s=sp.final_trial_duration_s,
                                 warmup_duration_s=warmup_s, on_trial=on_trial, progress=progress)
            results = list(got.values()) if isinstance(got, dict) else list(got)
        else:
            (name, ratio), = goals.items()
            results = [rfc2544_search(measure, lo, max_rate_pps, loss_ratio=ratio,
                                      relative_width=sp.relative_width,
                                      duration_s=sp.final_trial_duration_s, warmup_duration_s=warmup_s,
                                      on_trial=on_trial, progress=progress)]
    else:
        if not goals:
            raise InputError("search: ask for ndr and/or pdr")
        got = mlrsearch(measure, lo, max_rate_pps, goals=goals, relative_width=sp.relative_width,
                        initial_trial_duration_s=sp.initial_trial_duration_s,
                        final_trial_duration_s=sp.final_trial_duration_s,
                        duration_sum_s=sp.duration_sum_s, search_duration_max_s=sp.search_duration_max_s,
                        warmup_duration_s=warmup_s, on_trial=on_trial, progress=progress)
        results = list(got.values())
    return [calibrate.mark_generator_limited(r, frame_size) for r in results]


def measurer(gen: EmbeddedGenerator, frame_size: FrameSize, traffic: TrafficParams,
             extra: Optional[dict] = None) -> GeneratorMeasurer:
    return GeneratorMeasurer(gen, frame_size, bidirectional=traffic.bidirectional, extra=extra)


__all__ = [
    "InputError", "check_inputs", "default_max_rate", "external_streams", "generator",
    "measurer", "open_streams", "parse_port", "port_mtu", "search",
]
