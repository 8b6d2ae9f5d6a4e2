"""Calibration: the generator's own ceiling, and a search checked on a known path.

* :func:`generator_ceiling` finds the highest rate a generator sends and
  receives without loss with no DUT (the lab's ``direct-cable`` path): above
  it, any result says more about the generator than about the DUT.
* :func:`check_known_path` runs an NDR search through a ``tbf-bridge`` whose
  capacity is set, and reports the relative error of what the search found.

Ceilings are kept in a :class:`Calibration` file keyed by the generator's
identity (name, version or binary hash, ports, host: see
:meth:`nfvlab.traffic.base.TrafficGenerator.identity`). The pipeline's
``calibration`` stage writes ``data/calibration/embedded.json``, which the
experiment stages depend on, so a new ceiling re-runs them; the CLI's default
file is ``$NFVLAB_STATE/calibration.json`` (default ``/var/lib/nfvlab``).
"""
from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional, Union

from nfvlab.linerate import FrameSize
from nfvlab.params import GeneratorParams, TrafficParams
from nfvlab.scenario import KnownPath, Scenario
from nfvlab.search import SearchResult, mlrsearch, rfc2544_search
from nfvlab.system.files import write_json_atomic
from nfvlab.traffic import identity_key
from nfvlab.traffic.select import bench
from nfvlab.trial import GeneratorMeasurer

#: A result at or above this fraction of the calibrated ceiling is generator-limited.
GENERATOR_LIMITED_FRACTION = 0.9
#: Two ceiling searches agree when the higher is at most this factor above the lower.
AGREEMENT_RATIO = 1.25
FORMAT = 1


def default_path() -> Path:
    return Path(os.environ.get("NFVLAB_STATE", "/var/lib/nfvlab")) / "calibration.json"


class Calibration:
    """Generator ceilings by identity and frame size, as stored in one JSON file.

    File layout: ``{"format": 1, "generators": {<identity key>: {"identity": {...},
    "ceilings": {"64": {"ceiling_pps", "bidirectional", "measured_at", "trials",
    "searches_pps", "agreed"}}}}}``: ``ceiling_pps`` is :func:`confirmed_ceiling` of the searches'
    ceilings (``searches_pps``, in the order taken; absent in files written before repetitions);
    ``agreed``: whether its two highest searches agree (:func:`searches_agree`; absent in older files).
    """

    def __init__(self, path: Union[str, Path, None] = None, data: Optional[dict] = None) -> None:
        self.path = Path(path) if path is not None else default_path()
        self.data = data if data is not None else {"format": FORMAT, "generators": {}}

    @classmethod
    def load(cls, path: Union[str, Path, None] = None) -> "Calibration":
        """The file at ``path`` (default :func:`default_path`); empty when missing."""
        p = Path(path) if path is not None else default_path()
        if not p.exists():
            return cls(p)
        try:
            data = json.loads(p.read_text())
            if data.get("format") != FORMAT or not isinstance(data.get("generators"), dict):
                raise ValueError("unknown layout")
        except (OSError, ValueError) as err:
            raise ValueError(f"{p}: not a calibration file of this nfvlab ({err}); "
                             "re-run `nfvlab calibrate`") from None
        return cls(p, data)

    def entry(self, identity: dict) -> Optional[dict]:
        """What was calibrated for ``identity`` (``None``: nothing)."""
        return self.data["generators"].get(identity_key(identity))

    def ceiling(self, identity: dict, frame_size: FrameSize) -> Optional[float]:
        """Zero-loss ceiling per direction, packets/s, of ``identity`` at ``frame_size`` (None: not calibrated)."""
        e = self.entry(identity)
        c = (e or {}).get("ceilings", {}).get(str(frame_size))
        return c["ceiling_pps"] if c else None

    def put(self, identity: dict, frame_size: FrameSize, results: Union[SearchResult, Sequence[SearchResult]],
            bidirectional: bool) -> float:
        """Keep the ceiling of one or more searches at ``frame_size`` (:func:`confirmed_ceiling`); returns it."""
        results = [results] if isinstance(results, SearchResult) else list(results)
        ceiling = confirmed_ceiling(results)
        e = self.data["generators"].setdefault(identity_key(identity), {"identity": identity, "ceilings": {}})
        e["ceilings"][str(frame_size)] = {
            "ceiling_pps": ceiling,
            "bidirectional": bidirectional,
            "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "trials": sum(r.n_trials for r in results),
            "searches_pps": [r.throughput_pps for r in results],
            "agreed": searches_agree(results),
        }
        return ceiling

    def save(self) -> Path:
        """Write atomically (sorted keys, so an unchanged calibration is byte-identical)."""
        return write_json_atomic(self.path, self.data)


def confirmed_ceiling(results: Sequence[SearchResult]) -> float:
    """The highest zero-loss rate two of the repeated ceiling searches reached: the second highest of
    their rates, packets/s per direction (one search: its own; of three: their median).

    The host's slow spells only ever lower a ceiling search (a stall leaves frames unsent, and
    unsent is loss): on a 2-vCPU VM one search at 64 B found 159 kpps where the same path does
    500-1200 kpps, and on 7 Dec 2026 all three socket-path searches at 64 B came out 8-38 kpps
    (200 kpps in the run before). A ceiling so low flags the DUT's results generator-limited and
    caps their searches (they start at a multiple of it). The highest search alone could be one
    search's luck; the second highest is a rate the generator reached twice. With
    :func:`searches_agree` false the caller searches again (``nfvlab calibrate``)."""
    if not results:
        raise ValueError("confirmed_ceiling: no search results")
    rates = sorted((r.throughput_pps for r in results), reverse=True)
    return float(rates[1] if len(rates) > 1 else rates[0])


def searches_agree(results: Sequence[SearchResult], ratio: float = AGREEMENT_RATIO) -> bool:
    """Whether the two highest searches' rates are within ``ratio`` of each other (so the ceiling
    kept, the lower of them, is near what the generator does when the host lets it); False with
    fewer than two searches."""
    rates = sorted((r.throughput_pps for r in results), reverse=True)
    return len(rates) > 1 and rates[0] <= ratio * rates[1]


def generator_limited(throughput_pps: Optional[float], ceiling_pps: Optional[float]) -> Optional[bool]:
    """True when a result reaches :data:`GENERATOR_LIMITED_FRACTION` of the ceiling; None if either is unknown."""
    if ceiling_pps is None or throughput_pps is None:
        return None
    return throughput_pps >= GENERATOR_LIMITED_FRACTION * ceiling_pps


def sent_short_at_upper_bound(result: SearchResult) -> bool:
    """Whether a trial at the result's upper bound sent short of its rate through the
    generator's own limit (``extra.schedule.sent_short``): the loss that placed the bound
    there was (also) the generator's."""
    hi = result.upper_bound_pps
    return hi is not None and any(
        t.rate_pps == hi and (t.extra.get("schedule") or {}).get("sent_short") for t in result.trials)


def not_offered_at_upper_bound(result: SearchResult) -> bool:
    """Whether the result's upper bound is a rate the generator could not offer at all
    (``not_offered_pps``: every repeat of its trial invalid)."""
    hi, unoffered = result.upper_bound_pps, result.not_offered_pps
    return hi is not None and unoffered is not None and hi >= unoffered * (1 - 1e-9)


def mark_generator_limited(result: SearchResult, ceiling_pps: Optional[float]) -> SearchResult:
    """``result`` with ``generator_limited`` filled against ``ceiling_pps`` (None when unknown);
    True whatever the ceiling when the upper bound rests on a trial the generator sent short
    or on a rate it could not offer."""
    if sent_short_at_upper_bound(result) or not_offered_at_upper_bound(result):
        limited = True
    else:
        limited = generator_limited(result.throughput_pps, ceiling_pps)
    return replace(result, generator_limited=limited)


def generator_ceiling(backend, generator: GeneratorParams, frame_size: FrameSize, *,
                      bidirectional: bool = True, duration_s: float = 1.0, max_rate_pps: float = 3e6,
                      relative_width: float = 0.02, latency_pps: int = 1000, on_trial=None,
                      progress: bool = False) -> tuple[SearchResult, dict]:
    """Zero-loss rate with no DUT (``direct-cable``), packets/s per direction, and the generator's identity.

    ``backend``: the embedded lab (its direct cable), or, for TRex, the two TRex ports looped to each
    other (:class:`~nfvlab.labs.external.ExternalPorts`, ``trex:N``): either way no DUT.
    """
    traffic = TrafficParams(latency_pps=latency_pps, frame_sizes=[frame_size])
    with bench(backend, generator, Scenario("direct-cable"), traffic) as (_session, gen):
        measure = GeneratorMeasurer(gen, frame_size, bidirectional=bidirectional, extra={"lab": "direct-cable"})
        result = rfc2544_search(measure, 1000.0, max_rate_pps, loss_ratio=0.0, relative_width=relative_width,
                                duration_s=duration_s, on_trial=on_trial, progress=progress)
        return result, gen.identity()


def check_known_path(backend, generator: GeneratorParams, frame_size: int, capacity_pps: float, *,
                     bidirectional: bool = False, duration_s: float = 1.0, relative_width: float = 0.005,
                     method: str = "rfc2544", latency_pps: int = 1000, on_trial=None,
                     progress: bool = False, path: str = "tbf-bridge") -> tuple[SearchResult, float]:
    """NDR through a tbf bridge shaped to ``capacity_pps``; returns (result, relative error).

    ``path`` is ``tbf-bridge`` (a deep buffer) or ``tbf-shallow`` (a few frames at 1518 B).
    """
    traffic = TrafficParams(latency_pps=latency_pps, frame_sizes=[frame_size])
    scenario = Scenario(path, known_path=KnownPath(capacity_pps, frame_size))
    with bench(backend, generator, scenario, traffic) as (_session, gen):  # the generator closed, as in the ceiling's
        measure = GeneratorMeasurer(gen, frame_size, bidirectional=bidirectional,
                                    extra={"lab": path, "capacity_pps": capacity_pps})
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
