"""Calibration: the generator's own ceiling, and a search checked on a known path.

* :func:`generator_ceiling` finds the highest rate the embedded generator sends
  and receives without loss on a direct cable (no DUT): above it, any result
  says more about the generator than about the DUT.
* :func:`check_known_path` runs an NDR search through a tbf-shaped bridge whose
  capacity is set, and reports the relative error of what the search found.

Ceilings are stored per host in ``$NFVLAB_STATE/calibration.json`` (default
``/var/lib/nfvlab``), keyed by the generator binary, so every later search can
say whether it was generator-limited.
"""
from __future__ import annotations

import json
import os
import platform
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

from nfvlab.lab import kernel
from nfvlab.lab.core import Lab
from nfvlab.linerate import FrameSize
from nfvlab.search import SearchResult, rfc2544_search
from nfvlab.traffic.build import gen_binary
from nfvlab.traffic.embedded import EmbeddedGenerator
from nfvlab.trial import GeneratorMeasurer

#: A result at or above this fraction of the calibrated ceiling is generator-limited.
GENERATOR_LIMITED_FRACTION = 0.9


def store_path() -> Path:
    return Path(os.environ.get("NFVLAB_STATE", "/var/lib/nfvlab")) / "calibration.json"


def _key() -> str:
    return f"{gen_binary().name}|{platform.release()}|{os.cpu_count()}"


def load_ceilings() -> dict[str, float]:
    """Calibrated ceilings (packets/s per direction) by frame size, for this generator/host."""
    p = store_path()
    if not p.exists():
        return {}
    data = json.loads(p.read_text())
    entry = data.get(_key(), {})
    return {k: v["ceiling_pps"] for k, v in entry.items()}


def ceiling_for(frame_size: FrameSize) -> Optional[float]:
    return load_ceilings().get(str(frame_size))


def save_ceiling(frame_size: FrameSize, result: SearchResult, bidirectional: bool) -> None:
    p = store_path()
    p.parent.mkdir(parents=True, exist_ok=True)
    data = json.loads(p.read_text()) if p.exists() else {}
    data.setdefault(_key(), {})[str(frame_size)] = {
        "ceiling_pps": result.throughput_pps,
        "bidirectional": bidirectional,
        "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "trials": result.n_trials,
    }
    tmp = p.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    os.replace(tmp, p)


def mark_generator_limited(result: SearchResult, frame_size: FrameSize) -> SearchResult:
    """Fill ``generator_limited``: None when no ceiling is calibrated for ``frame_size``."""
    ceiling = ceiling_for(frame_size)
    if ceiling is None or result.throughput_pps is None:
        return replace(result, generator_limited=None)
    return replace(result, generator_limited=result.throughput_pps >= GENERATOR_LIMITED_FRACTION * ceiling)


def generator_ceiling(frame_size: FrameSize, *, bidirectional: bool = True, duration_s: float = 1.0,
                      max_rate_pps: float = 3e6, relative_width: float = 0.02,
                      latency_pps: int = 1000, cpu: Optional[int] = 0, on_trial=None,
                      progress: bool = False) -> SearchResult:
    """Zero-loss rate of the generator on a direct cable (tg0 <-> tg1), packets/s per direction."""
    with Lab("direct-cable", builder=kernel.build_direct_cable) as lab:
        gen = EmbeddedGenerator(lab.streams, latency_pps=latency_pps, cpu=cpu, tracker=lab)
        measure = GeneratorMeasurer(gen, frame_size, bidirectional=bidirectional,
                                    extra={"lab": "direct-cable"})
        return rfc2544_search(measure, 1000.0, max_rate_pps, loss_ratio=0.0,
                              relative_width=relative_width, duration_s=duration_s,
                              on_trial=on_trial, progress=progress)


def check_known_path(frame_size: int, capacity_pps: float, *, bidirectional: bool = False,
                     duration_s: float = 1.0, relative_width: float = 0.005, method: str = "rfc2544",
                     latency_pps: int = 1000, cpu: Optional[int] = 0, on_trial=None,
                     progress: bool = False) -> tuple[SearchResult, float]:
    """NDR through a tbf bridge shaped to ``capacity_pps``; returns (result, relative error)."""
    from nfvlab.search import mlrsearch

    with Lab("tbf-bridge", builder=lambda lab: kernel.build_tbf_bridge(lab, capacity_pps, frame_size)) as lab:
        gen = EmbeddedGenerator(lab.streams, latency_pps=latency_pps, cpu=cpu, tracker=lab)
        measure = GeneratorMeasurer(gen, frame_size, bidirectional=bidirectional,
                                    extra={"lab": "tbf-bridge", "capacity_pps": capacity_pps})
        lo, hi = capacity_pps / 4, capacity_pps * 2
        if method == "mlrsearch":
            result = mlrsearch(measure, lo, hi, goals={"ndr": 0.0}, relative_width=relative_width,
                               initial_trial_duration_s=duration_s, final_trial_duration_s=duration_s,
                               duration_sum_s=duration_s, warmup_duration_s=0.0,
                               on_trial=on_trial, progress=progress)["ndr"]
        else:
            result = rfc2544_search(measure, lo, hi, loss_ratio=0.0, relative_width=relative_width,
                                    duration_s=duration_s, on_trial=on_trial, progress=progress)
    error = (result.throughput_pps - capacity_pps) / capacity_pps
    return result, error
