"""Adaptive repetitions of a run (experiments B, C and E): :func:`nfvlab.adaptive.run` over the run's own
searches or tool runs, the claims :mod:`nfvlab.claimsets` names deciding which configurations get
more repetitions. The runners (:mod:`nfvlab.experiment`, :mod:`nfvlab.tool_runs`) measure what it asks for.
"""
from __future__ import annotations

import math
import time
from typing import Callable, Iterable, Optional, Union

from nfvlab import adaptive, claims, claimsets
from nfvlab.params import CniExperimentParams, ExperimentParams
from nfvlab.progress import Progress, duration_text
from nfvlab.records import RecordWriter
from nfvlab.run_records import SEARCH_DONE, TOOL_RUN_DONE
from nfvlab.scenario.cni import TWIN

#: A rate of 0 (a tool run that moved nothing) as the driver reads it: far below any rate (the
#: analysis reads it as a thousandth of the smallest rate of the claim's data).
ZERO_RATE = 1e-9


def positive_rate(v: Optional[float]) -> float:
    if v is None or math.isnan(v):
        return math.nan
    return v if v > 0 else ZERO_RATE




def cni_config(labels: dict) -> str:
    """The configuration key of a tool run's labels, as :meth:`nfvlab.claimsets.ClaimSpec.config` gives
    it: data path, link MTU, protocol, direction (and file size for HTTP)."""
    fields = ("data_path", "direction", "link_mtu_bytes", "protocol") + (
        ("file_bytes",) if labels.get("protocol") == "http" else ()) + (("arm",) if labels.get("arm") else ())
    return claimsets.config_key({k: labels.get(k) for k in fields})


def search_config(labels: dict, names: Iterable[str]) -> str:
    """The configuration key of a search's labels (the scenario's and ``frame_size``), as
    :meth:`nfvlab.claimsets.ClaimSpec.config` gives it for claims naming the labels ``names``
    (:func:`nfvlab.claimsets.key_labels`; B: model, pinning, numa, frame size)."""
    return claimsets.config_key({k: labels.get(k) for k in names})


def _run_values(recs: Iterable[dict], run_id: str, unit: tuple[str, str], rate: Callable[[dict], Optional[float]],
                config: Callable[[dict], str]) -> dict[str, dict[int, float]]:
    """Configuration (``config(labels)``) -> repetition -> ``rate(record)`` of the units run ``run_id``
    recorded (``unit``: record type, failure note kind); a failed unit: NaN, so it counts as done."""
    out: dict[str, dict[int, float]] = {}
    for r in recs:
        if r.get("run_id") != run_id:
            continue
        lab = r.get("labels") or {}
        if r["type"] == unit[0]:
            v = rate(r)
        elif r["type"] == "note" and lab.get("kind") == unit[1]:
            v = math.nan
        else:
            continue
        if v is not None:
            out.setdefault(config(lab), {})[int(lab.get("repetition", 0))] = v
    return out


def tool_values(recs: Iterable[dict], run_id: str) -> dict[str, dict[int, float]]:
    """Configuration (:func:`cni_config`) -> repetition -> the rate its claims compare, from the tool
    runs run ``run_id`` recorded (a failed run: NaN, so the repetition counts as done)."""
    def rate(r: dict) -> float:
        return positive_rate(claimsets.tool_rate((r.get("labels") or {}).get("protocol"), r.get("result") or {}))

    return _run_values(recs, run_id, TOOL_RUN_DONE, rate, cni_config)


def search_values(recs: Iterable[dict], run_id: str, names: Iterable[str]) -> dict[str, dict[int, float]]:
    """Configuration (:func:`search_config` with the labels ``names``) -> repetition -> the NDR its claims
    compare (:data:`nfvlab.claimsets.SEARCH_GOAL`), from the searches run ``run_id`` recorded (a failed
    search: NaN, so the repetition counts as done)."""
    names = tuple(names)

    def ndr(r: dict) -> Optional[float]:  # a search result of another goal is not a unit here
        if (r.get("labels") or {}).get("goal") != claimsets.SEARCH_GOAL:
            return None
        return positive_rate((r.get("result") or {}).get("throughput_pps"))

    return _run_values(recs, run_id, SEARCH_DONE, ndr, lambda lab: search_config(lab, names))


def claims_of(params: Union[ExperimentParams, CniExperimentParams]) -> list[claimsets.ClaimSpec]:
    """The claims an adaptive run of ``params`` decides (E: :func:`nfvlab.claimsets.cni_claims_of`; B, C:
    :func:`nfvlab.claimsets.search_claims_of`)."""
    if isinstance(params, CniExperimentParams):
        return claimsets.cni_claims_of(params)
    return claimsets.search_claims_of(params) or []


def resolution_of(params: Union[ExperimentParams, CniExperimentParams]) -> float:
    """The relative resolution of the rates the claims compare, as the analysis reads it: a search's
    goal width (``search.relative_width``, recorded as ``goal_relative_width``); 0 for a tool's rate."""
    return 0.0 if isinstance(params, CniExperimentParams) else float(params.search.relative_width)


def adapt(params: Union[ExperimentParams, CniExperimentParams], configs: Iterable[str],
          recorded: dict[str, dict[int, float]], measure_one: Callable[[adaptive.Added], float],
          clock: Callable[[], float] = time.monotonic, design: Optional[claims.Design] = None,
          unit_seconds: Optional[float] = None,
          order: Optional[Callable[[list[adaptive.Added]], list[adaptive.Added]]] = None) -> adaptive.Outcome:
    """Adaptive repetitions (``params.adaptive``) of experiment E, B or C: :func:`nfvlab.adaptive.run` over
    its claims (:func:`claims_of`), the plan ``Plan(first=repetitions, step, max_repetitions)`` and the
    ``seconds`` budget.

    ``configs``: the configurations measured (those the lab realizes); ``recorded``: :func:`tool_values`
    (:func:`search_values`) of the run so far (its first ``repetitions`` are the first look; an added
    repetition already recorded -- a resumed run -- is taken from it, never measured again: the
    driver is deterministic given the values); ``measure_one(added)``: measure and record one added
    repetition, return its rate; ``unit_seconds``: the estimated time of one (the fixed repetitions'
    mean), which sizes the first look against the ``seconds`` budget; ``order``: a look's order
    (:func:`nfvlab.adaptive.run`). E's A/A twins (:func:`control_twins`) ride along with their
    originals (``along``): a claim naming a twin (the control's) drives no look.
    """
    ad = params.adaptive
    plan = claims.Plan(params.repetitions, ad.step, ad.max_repetitions)
    initial = {c: [recorded.get(c, {}).get(r, math.nan) for r in range(params.repetitions)] for c in configs}
    # each claim's testable part: a configuration this lab cannot realize is never waited for
    specs = [x for x in (s.spec(present=initial) for s in claims_of(params)) if x]
    # the A/A control rides along with its original: judged on as many pairs, it asks for none
    along = control_twins(params, initial)
    riders = set(along.values())
    specs = [x for x in specs if not any(c in riders for chain in x[1] for c in chain)]

    def one(added: adaptive.Added) -> float:
        have = recorded.get(added.config, {})
        return have[added.repetition] if added.repetition in have else measure_one(added)

    return adaptive.run(one, specs, initial, plan, {c: resolution_of(params) for c in initial},
                        design or claims.current_design(), seconds=ad.seconds, clock=clock,
                        unit_seconds=unit_seconds, give_up_above=ad.give_up_above, order=order, along=along)


def control_twins(params: Union[ExperimentParams, CniExperimentParams], configs: Iterable[str]) -> dict[str, str]:
    """Experiment E's A/A control (``control``): the configuration of each lab's control step -> its
    twin's (label ``arm: twin``), those among ``configs``; empty for other experiments."""
    if not isinstance(params, CniExperimentParams) or params.grid.control_step() is None:
        return {}
    proto, direction, size = params.grid.control_step()
    configs = set(configs)
    out = {}
    for p in params.grid.paths():
        labels = {"data_path": p.data_path, "link_mtu_bytes": p.link_mtu_bytes, "protocol": proto,
                  "direction": direction, "file_bytes": size}
        original, twin = cni_config(labels), cni_config({**labels, "arm": TWIN})
        if original in configs and twin in configs:
            out[original] = twin
    return out



def added_labels(added: adaptive.Added) -> dict:
    """The labels an added repetition's records carry besides the ordinary ones."""
    return {"added_look": added.look, "added_reason": added.reason}


def start_note(params: Union[ExperimentParams, CniExperimentParams], bar: Progress) -> None:
    ad = params.adaptive
    bar.note(f"adaptive repetitions: up to {ad.max_repetitions} per configuration, {ad.step} per look"
             + (f", within {ad.seconds:g} s" if ad.seconds else "")
             + " (Pocock-type alpha spending over the looks)")


def end_note(out: adaptive.Outcome, rec: RecordWriter, bar: Progress) -> None:
    """The run's ``adaptive`` note (why it stopped, how many added, the claims left inconclusive), and its line."""
    verdicts = [v["verdict"] for v in out.verdicts]
    undecided = verdicts.count("inconclusive")
    text = (f"adaptive repetitions: stopped: {out.stopped}; {len(out.added)} repetition(s) added in "
            f"{duration_text(out.seconds)}; {undecided} of {len(verdicts)} claims still inconclusive"
            + (f"; given up (too many repetitions needed): {'; '.join(out.given_up)}" if out.given_up else ""))
    rec.note(text, kind="adaptive", stopped=out.stopped, added=len(out.added), seconds=round(out.seconds, 1),
             inconclusive=undecided, **({"given_up": list(out.given_up)} if out.given_up else {}))
    bar.note(text)

