"""A plan before a long run: an experiment's grid, its units of work and the time they took last time.

    nfvlab experiment run a --params params/quick/experiment_a.yaml --records data/raw/experiment_a.jsonl --dry-run
    nfvlab experiment run all --dry-run        # every measurement stage of the profile params/profile.yaml names

A unit is what a run records as one step: a search (experiments A-D, F) or a tool run (E). Its
expected time is the wall time the same unit (configuration and frame size) took in the records'
last completed run, from one unit's record to the next: set-up of labs, every trial, latency trials
and pauses included; of it, the traffic (the trials' own durations) at the last run's share, the
floor that no saving of overhead cuts. A unit the last run did not have is expected at that run's median; with no
run in the records, the time is unknown. A paired phase the last run did not have is expected at
its ``seconds`` budget (:func:`paired_estimate_s`). The adaptive phase adds at most its ``seconds`` budget
and the host probe its seconds; the calibration, the analyses and the report are not measuring
stages and are not in the plan. Builds nothing, starts no lab.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Optional, Union

from nfvlab import claimsets, experiment
from nfvlab.pairing import control_blocks
from nfvlab.params import CniExperimentParams, ExperimentParams
from nfvlab.records import records_by_run
from nfvlab.run_records import unit_key
from nfvlab.scenario.cni import step_labels, steps
from nfvlab.system.host import host_speed_s
from nfvlab.tool_runs import cni_scenarios

AnyParams = Union[ExperimentParams, CniExperimentParams]


@dataclass(frozen=True)
class StagePlan:
    """One measurement stage's plan.

    Attributes
    ----------
    name : str
        The experiment and its lab, e.g. ``experiment_a_kubernetes``.
    configurations : int
        Configurations in the grid, less those the records' last run found not realizable on
        this lab (checked again when the run starts).
    units : int
        Searches (E: tool runs): configurations x frame sizes x repetitions.
    unit_kind : str
        ``searches`` or ``tool runs``.
    expected_s : Optional[float]
        Expected wall time of the units, s (None: no earlier run to learn from).
    known_units : int
        Units whose time the last run measured (the others at its median).
    expected_trials : Optional[int]
        Trials the units are expected to take, as in the last run (E's tool runs: None).
    grid : tuple[str, ...]
        The units' configurations and frame sizes, one line each (repetitions not repeated).
    extra_s : float
        At most this much more: the adaptive phase's budget and the host probe, s.
    basis : str
        Which run the times come from, or why there is none.
    traffic_s : Optional[float]
        Of ``expected_s``, the traffic itself (trials or tool runs sending), s, at the last run's share
        of it; the rest is lab set-up and teardown, settling, pauses and the runner's own work. The
        traffic is the floor that no saving of overhead can cut (None: no earlier run).
    """

    name: str
    configurations: int
    units: int
    unit_kind: str
    expected_s: Optional[float]
    known_units: int
    extra_s: float
    basis: str
    expected_trials: Optional[int] = None
    grid: tuple = ()
    traffic_s: Optional[float] = None


def planned_units(params: AnyParams) -> list[tuple]:
    """The unit keys (:func:`nfvlab.run_records.unit_key`) a run of ``params`` measures, in order."""
    if isinstance(params, CniExperimentParams):
        return [unit_key(step_labels(sc, s)) for sc in cni_scenarios(params)
                for s in steps(params.grid)]
    cells = [(sc, fs) for sc in experiment.scenarios(params) for fs in params.traffic.frame_sizes
             if experiment.frame_fits(sc, fs)]
    twins = experiment.control_cells(params, experiment.scenarios(params))  # an A/A control's second searches
    return [unit_key({**sc.labels(), **extra, "frame_size": fs, "repetition": rep})
            for rep in range(params.repetitions)
            for cell_list, extra in ((cells, {}), (twins, experiment.TWIN_LABELS)) for sc, fs in cell_list]


def _time(rec: dict) -> datetime:
    text = rec.get("time") or rec.get("started_at") or rec.get("ended_at")  # run: started_at; end: ended_at
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@dataclass(frozen=True)
class LastRun:
    """What a plan learns from the last completed run of a records file."""

    run_id: str
    unit_s: dict
    """Wall time, s, per unit key without the repetition (:func:`nfvlab.run_records.unit_key`
    ``[:2]``): from the previous unit's record (the run record for the first) to its own; the
    median over repetitions."""
    unit_trials: dict
    """Trials per unit key without the repetition (the median over repetitions)."""
    tail_s: float
    """From its last unit's record to the first record of a later phase (adaptive, paired) or its end, s."""
    not_realizable: frozenset
    """Configurations (unit key ``[0]``) it noted as not realizable on its lab."""
    paired_s: Optional[float] = None
    """Its paired phase, s (None: it had none)."""
    traffic_share: Optional[float] = None
    """Of its wall time (start to end), the share its traffic took: the trials' (E: tool runs') own
    durations added up (None: a run of no duration)."""


def last_run(records: Union[str, Path], kind: str) -> Optional[LastRun]:
    """The last completed run in ``records`` with units of record type ``kind`` (``search``,
    ``measurement``), or None."""
    runs = records_by_run(records)
    for run_id in reversed(list(runs)):
        recs = runs[run_id]
        end = next((r for r in recs if r["type"] == "end" and r.get("status") == "completed"), None)
        start = next((r for r in recs if r["type"] == "run"), None)
        if end is None or start is None:
            continue
        later = [_time(r) for r in recs if r["type"] != "run" and ((r.get("labels") or {}).get("added_look") is not None
                                                                   or str((r.get("labels") or {}).get("purpose", "")).startswith("paired"))]
        paired_at = [_time(r) for r in recs if r["type"] == "note" and (r.get("labels") or {}).get("kind") == "paired"]
        per_unit: dict[tuple, float] = {}  # a search's goals (NDR, PDR) are one unit
        trials: dict[tuple, int] = {}
        last = _time(start)
        for r in recs:
            if r["type"] == "trial" and r["labels"].get("added_look") is None and "model" in r["labels"]:
                key = unit_key({**r["labels"], "frame_size": (r.get("result") or {}).get("frame_size")})
                trials[key] = trials.get(key, 0) + 1
            if r["type"] != kind or r["labels"].get("added_look") is not None:
                continue
            at = _time(r)
            key = unit_key(r["labels"])
            per_unit[key] = per_unit.get(key, 0.0) + (at - last).total_seconds()
            last = at
        if per_unit:
            by_cell: dict[tuple, list[float]] = {}
            trials_by_cell: dict[tuple, list[int]] = {}
            for key, seconds in per_unit.items():
                by_cell.setdefault(key[:2], []).append(seconds)
                trials_by_cell.setdefault(key[:2], []).append(trials.get(key, 0))
            skipped = frozenset(unit_key(r["labels"])[0] for r in recs if r["type"] == "note"
                                and r["labels"].get("kind") == "not-realizable")
            phase_start = min([t for t in later if t >= last] or [_time(end)])
            paired_s = None
            if paired_at:
                first = min([t for t in later if t >= last and t <= max(paired_at)] or paired_at)
                paired_s = max(0.0, (max(paired_at) - first).total_seconds())
            traffic = sum(float((r.get("result") or {}).get("duration_s") or 0.0) for r in recs
                          if r["type"] in ("trial", "measurement"))
            wall = (_time(end) - _time(start)).total_seconds()
            return LastRun(run_id, {k: statistics.median(v) for k, v in by_cell.items()},
                           {k: statistics.median(v) for k, v in trials_by_cell.items()},
                           max(0.0, (phase_start - last).total_seconds()), skipped, paired_s,
                           min(1.0, traffic / wall) if wall > 0 else None)
    return None


def _noted(labels: tuple, noted: frozenset) -> bool:
    """Whether a unit's labels (:func:`nfvlab.run_records.unit_key` ``[0]``) hold those of a configuration
    noted not realizable."""
    have = set(labels)
    return any(set(n) <= have for n in noted)


def _cell_text(key: tuple) -> str:
    return " ".join(f"{k}={v}" for k, v in key[0]) + (f" frame_size={key[1]}" if key[1] != "None" else "")


def stage_plan(name: str, params: AnyParams, records: Union[str, Path]) -> StagePlan:
    """The plan of one measurement stage: ``params`` measured into ``records`` (whose last completed
    run the times, and which configurations this lab cannot realize, come from)."""
    tools = isinstance(params, CniExperimentParams)
    kind = "tool runs" if tools else "searches"
    grid = cni_scenarios(params) if tools else experiment.scenarios(params)
    last = last_run(records, "measurement" if tools else "search")
    extra = host_speed_s() + (params.adaptive.seconds if params.adaptive is not None else 0.0)
    units = planned_units(params)
    if last is None:
        cells = tuple(dict.fromkeys(_cell_text(u) for u in units))
        return StagePlan(name, len(grid), len(units), kind, None, 0, extra, f"no completed run in {records}",
                         grid=cells)
    # recorded as not realizable, not measured: a unit whose labels hold a noted configuration's (E: a
    # lab's data path and MTU, noted once for its every tool run)
    units = [u for u in units if not _noted(u[0], last.not_realizable)]
    typical = statistics.median(last.unit_s.values())
    known = [last.unit_s.get(u[:2]) for u in units]
    expected = sum(t if t is not None else typical for t in known) + last.tail_s
    if getattr(params, "paired", None) is not None:
        expected += last.paired_s if last.paired_s is not None else paired_estimate_s(params, typical)
    trials = None if tools else round(sum(last.unit_trials.get(u[:2], statistics.median(last.unit_trials.values()))
                                          for u in units))
    realizable = sum(not _noted(unit_key(sc.labels())[0], last.not_realizable) for sc in grid)
    traffic = expected * last.traffic_share if last.traffic_share is not None else None
    return StagePlan(name, realizable, len(units), kind, expected, sum(t is not None for t in known), extra,
                     f"run {last.run_id} of {records}", trials, tuple(dict.fromkeys(_cell_text(u) for u in units)),
                     traffic)


#: A paired block's time in searches of the experiment (two short searches taking turns, the labs' set-up
#: shared over the blocks): in the published run of commit 833e744 the median block took 1.95 (A), 1.32 (B)
#: and 1.57 (C) x the experiment's median search.
PAIRED_BLOCK_SEARCHES = 1.6


def paired_estimate_s(params: ExperimentParams, search_s: float) -> float:
    """The paired phase's expected time when no earlier run had one: its ``seconds`` budget, or, without one,
    every comparison (the A/A control at its first look, each pair at ``max_blocks``) at
    :data:`PAIRED_BLOCK_SEARCHES` searches of ``search_s`` a block."""
    pp = params.paired
    if params.lab.kind != "embedded":  # one scenario at a time: every comparison is recorded not testable
        return 0.0
    if pp.seconds:
        return float(pp.seconds)
    pairs = len(claimsets.compared_pairs(claimsets.search_claims_of(params) or []))
    return (control_blocks(pp) * pp.control + pairs * pp.max_blocks) * PAIRED_BLOCK_SEARCHES * search_s


def _minutes(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    return f"{m} min {s:02d} s"


def plan_text(plans: list[StagePlan], grid: bool = False) -> str:
    """The plans as lines a person reads before starting the run, with the total; ``grid``: each
    stage's configurations and frame sizes too."""
    lines = []
    for p in plans:
        when = ("time unknown" if p.expected_s is None else
                f"expected {_minutes(p.expected_s)}"
                + (f", traffic {_minutes(p.traffic_s)} of it" if p.traffic_s is not None else "")
                + (f" (+ up to {_minutes(p.extra_s)} adaptive and host probe)" if p.extra_s else ""))
        trials = f" (~{p.expected_trials} trials)" if p.expected_trials is not None else ""
        lines.append(f"{p.name}: {p.configurations} configurations, {p.units} {p.unit_kind}{trials}; {when}; "
                     f"times of {p.known_units} of {p.units} from {p.basis}")
        if grid:
            lines += [f"  {cell}" for cell in p.grid]
    known = [p for p in plans if p.expected_s is not None]
    if len(plans) > 1 and known:
        total = sum(p.expected_s for p in known)
        extra = sum(p.extra_s for p in known)
        traffic = sum(p.traffic_s or 0.0 for p in known)
        lines.append(f"measurement stages: expected {_minutes(total)} (up to {_minutes(total + extra)}); "
                     f"traffic {_minutes(traffic)} of it, the rest lab set-up, teardown and pauses"
                     + ("" if len(known) == len(plans) else
                        f"; {len(plans) - len(known)} stage(s) of unknown time not counted")
                     + "; calibration, analyses and report not included")
    return "\n".join(lines)


def profile_stages(repo: Union[str, Path] = ".") -> list[tuple[str, list[str]]]:
    """The measurement stages ``dvc repro`` runs in ``repo``: ``(name, arguments of python -m
    nfvlab.stage)`` of every stage of ``dvc.yaml`` whose command is one, ``foreach`` items and
    ``${profile}`` (``params/profile.yaml``) filled in."""
    import shlex

    import yaml

    repo = Path(repo)
    profile = (yaml.safe_load((repo / "params/profile.yaml").read_text()) or {}).get("profile", "quick")
    out = []
    for name, stage in (yaml.safe_load((repo / "dvc.yaml").read_text()) or {}).get("stages", {}).items():
        body = stage.get("do", stage)
        cmd = " ".join(str(body.get("cmd", "")).split())
        if not cmd.startswith("python -m nfvlab.stage "):
            continue
        for item in stage.get("foreach", [None]):
            text = cmd.replace("${profile}", profile).replace("${item}", str(item))
            out.append((f"{name}@{item}" if item is not None else name, shlex.split(text)[3:]))
    return out
