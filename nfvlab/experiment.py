"""Run an experiment's grid (models x frame sizes x repetitions) and record it all.

    params = nfvlab.params.load("params/experiment_a.yaml")
    run_experiment(params, "data/raw/experiment_a.jsonl")

Every configuration gets a fresh lab per repetition (so repetitions are
independent), a throughput search, and latency trials at fractions of the rate
found (``latency_load_fractions``, default 0/10/50/90 % of the PDR, as FD.io CSIT does).
Every trial and search result is appended to the records file as it completes;
a model this host cannot realize is recorded as a ``not-realizable`` note with
the reason, never as a number. Input problems are found before any lab exists.

Experiment E (:class:`~nfvlab.params.CniExperimentParams`: CNI data paths x link MTUs, tool
runs instead of searches) runs on the same seams (:func:`run_tools`): its scenarios realized
by the lab backend, the same records, resume and progress lines.
With an ``adaptive:`` section in its params, experiments A, B, C (searches) and E (tool runs) then add
repetitions to the configurations of their claims still undecided (:func:`adapt`:
:mod:`nfvlab.adaptive` over :mod:`nfvlab.claimsets`).
"""
from __future__ import annotations

import math
import os
import sys
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional, TextIO, Union

from nfvlab import adaptive, claims, claimsets, labs, measure, pairing
from nfvlab.calibrate import Calibration
from nfvlab.params import CniExperimentParams, ExperimentParams
from nfvlab.measuring_code import fingerprint  # the resume fingerprint: params and the lab's measuring code
from nfvlab.records import RecordWriter, archive_earlier_runs, read_records
from nfvlab.scenario import DensityCell, Resources, Scenario
from nfvlab.scenario.cni import TWIN, CniScenario, Step, paired_order, step_labels, steps
from nfvlab.search import GeneratorFaultError, SearchError
from nfvlab.system.host import host_speed_s, speed_variation
from nfvlab.system.hostlock import HostLock
from nfvlab.system.paths import output_problem
from nfvlab.traffic import tcp
from nfvlab.traffic.select import identity_for, tx_paths
from nfvlab.trial import invalid_repeat_pause_s, run_trial


def scenarios(params: ExperimentParams) -> list[Scenario]:
    """The grid: models x MTUs x pinning x NUMA scenarios (x density cells)."""
    r = params.resources
    out = []
    for model in params.models:
        for mtu in params.mtu_bytes or [None]:
            for pin in r.pinning:
                for numa in r.numa:
                    res = Resources(pinning=pin, numa=numa, noisy_load_pct=r.noisy_load_pct,
                                    hugepages=r.hugepages, pcdr4sw=r.pcdr4sw, pcdr4nf=r.pcdr4nf)
                    if params.density is None:
                        out.append(Scenario(model, res, mtu_bytes=mtu))
                        continue
                    d = params.density
                    out += [Scenario(model, res, density=DensityCell(t, i, n), mtu_bytes=mtu)
                            for t in d.topologies for i in d.instances for n in d.nfs_per_instance]
    return out


def frame_fits(scenario: Scenario, frame_size) -> bool:
    """Whether ``frame_size`` fits a scenario with its own MTU (``mtu_bytes``; IMIX: its 1518 B frames)."""
    largest = 1518 if frame_size == "IMIX" else int(frame_size)
    return scenario.mtu_bytes is None or largest - 18 <= scenario.mtu_bytes


def check(params: ExperimentParams, backend=None) -> None:
    """Raise :class:`nfvlab.measure.InputError` for anything impossible, creating nothing.

    Per-scenario realizability is not an input error (it is recorded as a
    ``not-realizable`` note); impossible frame sizes, rates and durations are.
    """
    backend = backend or labs.backend_for(params.lab)
    rates = (params.search.max_rate_pps,) if params.search.max_rate_pps else ()
    for fs in params.traffic.frame_sizes:  # what no lab can carry
        measure.check_inputs(fs, port_speed=params.lab.port_speed, mtu=params.lab.mtu, rates_pps=rates,
                             duration_s=params.trial.duration_s)
    not_ready = backend.ready()
    if not_ready:
        raise measure.InputError(not_ready[0])
    for sc in scenarios(params):
        if backend.check(sc):
            continue
        mtu = backend.mtu(sc)
        if sc.mtu_bytes is not None and mtu < sc.mtu_bytes:
            raise measure.InputError(f"mtu_bytes: {sc.mtu_bytes} is above what {sc.model}'s ports carry on "
                                     f"the {backend.kind} lab ({mtu})")
        for fs in params.traffic.frame_sizes:
            if not frame_fits(sc, fs):
                continue  # skipped with a frame-too-large note, never sent
            try:
                measure.check_inputs(fs, port_speed=params.lab.port_speed, mtu=mtu, rates_pps=rates,
                                     duration_s=params.trial.duration_s)
            except measure.InputError as err:
                raise measure.InputError(f"{sc.label}: {err}") from None


def _resume(resume: Optional[bool]) -> bool:
    """``resume`` or, when None, unless ``NFVLAB_FRESH_RUN`` asks for a fresh run (pipeline, notebooks)."""
    if resume is None:
        return os.environ.get("NFVLAB_FRESH_RUN", "") not in ("1", "yes", "true")
    return resume


@contextmanager
def _recording(name: str, dump: dict, records: Union[str, Path], prov_extra: dict, *, resume: bool,
               finished: tuple[str, str]) -> Iterator[tuple[RecordWriter, Optional[Interrupted]]]:
    """The run's host lock, then its records: the interrupted run with the same fingerprint continued
    (``resume``; ``finished``: what marks a unit done, see :func:`interrupted_run`) or a new run."""
    # The run holds the host lock from here: a busy lab refuses it before a record is written.
    with HostLock(f"experiment {name}", for_run=True):
        previous = interrupted_run(records, dump["fingerprint"], finished) if resume else None
        if previous is None:  # a fresh run: the file keeps the run before it (run-to-run changes), no more
            archive_earlier_runs(records)
        speed_s = host_speed_s()
        if speed_s:  # under the lock: no lab of ours runs while the CPUs are probed
            prov_extra = {**prov_extra, "host_speed": speed_variation(speed_s)}
        with RecordWriter(records, name, dump, extra_provenance=prov_extra,
                          run_id=previous.run_id if previous else None, resumed=previous is not None,
                          first_seq=previous.trials if previous else 0) as rec:
            yield rec, previous


def _dump(params, source: Optional[str]) -> dict:
    """The run record's params: the params, their :func:`fingerprint`, the file they came from."""
    dump = params.model_dump()
    if dump.get("adaptive", 0) is None:  # a fixed-n run: its run record as before adaptive runs existed
        del dump["adaptive"]
    elif dump.get("adaptive") and dump["adaptive"].get("give_up_above", 0) is None:  # as before the choice existed
        del dump["adaptive"]["give_up_above"]
    if dump.get("control", 0) is None:  # no A/A control of the searches: as before the choice existed
        del dump["control"]
    if dump.get("lab_instance") == "per-configuration":  # the default: as before the choice existed
        del dump["lab_instance"]
    dump["fingerprint"] = fingerprint(dump)
    if source:
        dump["source"] = source
    return dump


def run_experiment(params: Union[ExperimentParams, CniExperimentParams], records: Union[str, Path], *,
                   backend=None, progress: bool = True, source: Optional[str] = None,
                   resume: Optional[bool] = None) -> str:
    """Measure every scenario of ``params`` on ``backend``; append records; return the run id.

    ``backend`` defaults to the one the lab profile names (:func:`nfvlab.labs.backend_for`;
    experiment E's params have none: the embedded lab).
    Resume: when the records' last run with the same params and code (:func:`fingerprint`)
    was interrupted, it is continued under its run id and only the searches (E: tool runs) it
    had not finished are measured (``resume=False``, or ``NFVLAB_FRESH_RUN=1`` in the environment
    for the pipeline and notebooks: always a fresh run). The host lock is taken
    before anything is recorded, so a refused run writes nothing.
    Labels: those of :meth:`Scenario.labels` and ``repetition`` on every record,
    ``purpose`` (``search`` or ``latency``) on trials (whose frame size is in
    the result; latency trials also carry ``goal`` and ``load_fraction``),
    ``frame_size`` and ``goal`` on search results. A scenario the lab cannot
    realize gets one ``not-realizable`` note with the reason. With ``params.adaptive`` (experiments A,
    B and C: :func:`nfvlab.claimsets.search_claims_of`; any other refuses it before anything exists),
    after the fixed repetitions: adaptive repetitions (:func:`_adapt_searches`: each added search
    and its trials labelled ``added_look`` / ``added_reason``; the run's last note, of kind
    ``adaptive``, says why it stopped). With ``params.control`` (an A/A control, experiment F), its
    cells (:func:`control_cells`) are searched a second time per repetition on a lab of their own,
    labelled ``arm: twin`` (:data:`TWIN_LABELS`), with no latency trials. Experiment E
    (:class:`~nfvlab.params.CniExperimentParams`): :func:`run_tools`.
    """
    if isinstance(params, CniExperimentParams):
        return run_tools(params, records, backend=backend, progress=progress, source=source, resume=resume)
    resume = _resume(resume)
    refused = adaptive_problem(params) or paired_problem(params)
    if refused:
        raise measure.InputError(refused)
    problem = output_problem(Path(records), "file")
    if problem:  # before the lab: notebooks and the pipeline call this without the CLI's checks
        raise measure.InputError(f"records {problem}")
    backend = backend or labs.backend_for(params.lab)
    check(params, backend)
    grid = scenarios(params)
    why = {sc: backend.check(sc) for sc in grid}
    runnable = [sc for sc in grid if not why[sc]]
    calibration = Calibration.load(params.lab.calibration)
    identity = identity_for(params.lab.generator)
    entry = calibration.entry(identity)
    dump = _dump(params, source)
    prov_extra = {"lab": backend.describe(),
                  "generator": {"identity": identity, "calibration_file": str(calibration.path),
                                "ceilings": (entry or {}).get("ceilings")}}
    if len(tx_paths(params.lab.generator)) > 1:  # tx: auto: each scenario's trials say which path
        prov_extra["generator"]["tx_paths"] = {
            tx: {"identity": ident, "ceilings": (calibration.entry(ident) or {}).get("ceilings")}
            for tx in tx_paths(params.lab.generator) for ident in [identity_for(params.lab.generator, tx)]}
    with _recording(params.experiment, dump, records, prov_extra, resume=resume,
                    finished=SEARCH_DONE) as (rec, previous):
        if previous is None:
            for sc in grid:
                if why[sc]:
                    rec.note(f"not realizable: {why[sc][0]}", kind="not-realizable", **sc.labels())
                for fs in params.traffic.frame_sizes:
                    if not why[sc] and not frame_fits(sc, fs):
                        rec.note(f"frame too large: {fs} B frames do not fit MTU {sc.mtu_bytes} "
                                 f"(at most {sc.mtu_bytes + 18} B); not sent", kind="frame-too-large",
                                 frame_size=fs, **sc.labels())
        done = previous.done if previous else set()
        cells = _cells(params, runnable)
        todo = [(rep, sc, fs) for rep in range(params.repetitions) for sc, fs in cells
                if _key(sc.labels(), fs, rep) not in done]
        twins = [(rep, sc, fs) for rep in range(params.repetitions) for sc, fs in control_cells(params, runnable)
                 if _key({**sc.labels(), **TWIN_LABELS}, fs, rep) not in done]
        total = (len(cells) + len(control_cells(params, runnable))) * params.repetitions
        todo_n = len(todo) + len(twins)
        bar = Progress(params.experiment, todo_n, enabled=progress)
        bar.note(f"{len(runnable)} of {len(grid)} configurations realizable on this {backend.kind} lab, "
                 f"{params.repetitions} repetition(s), {len(params.traffic.frame_sizes)} frame size(s): "
                 f"{total} searches" + (" (an A/A control's twins among them)" if params.control else "")
                 + (f"; resuming run {previous.run_id}: {total - todo_n} done, {todo_n} to go" if previous else ""))
        for rep in range(params.repetitions):
            for sc in runnable:
                sizes = [fs for r, s, fs in todo if r == rep and s == sc]
                per_lab = [[fs] for fs in sizes] if params.lab_instance == "per-frame-size" else [sizes]
                twin = [fs for r, s, fs in twins if r == rep and s == sc]
                # the twin side by side with its original, on a lab of its own: after it in even
                # repetitions, before it in odd ones (whichever goes first, the ratio's bias cancels)
                if twin and rep % 2:
                    _measure(params, backend, calibration, sc, rep, rec, bar, twin, dict(TWIN_LABELS))
                for group in per_lab:
                    if group:
                        _measure(params, backend, calibration, sc, rep, rec, bar, group)
                if twin and not rep % 2:
                    _measure(params, backend, calibration, sc, rep, rec, bar, twin, dict(TWIN_LABELS))
        bar.note(f"done: {bar.done} searches, {bar.trials} trials in "
                 f"{_duration(time.monotonic() - bar.t0)}")
        if params.adaptive is not None:
            _adapt_searches(params, backend, calibration, runnable, records, rec, bar)
        if params.paired is not None:
            _paired_phase(params, backend, calibration, runnable, records, rec, bar)
        return rec.run_id


#: The labels of an A/A control's twin search (``params.control``), beside the scenario's.
TWIN_LABELS = {"arm": TWIN}


def control_cells(params: ExperimentParams, grid: Iterable[Scenario]) -> list[tuple[Scenario, object]]:
    """The (scenario, frame size) of ``grid`` that ``params.control`` searches a second time per
    repetition (its twin): its model at its frame size, at its MTU (every MTU when null)."""
    c = params.control
    if c is None:
        return []
    return [(sc, fs) for sc, fs in _cells(params, grid) if sc.model == c.model and fs == c.frame_size
            and (c.mtu_bytes is None or sc.mtu_bytes == c.mtu_bytes)]


def _cells(params: ExperimentParams, grid: Iterable[Scenario]) -> list[tuple[Scenario, object]]:
    """The (scenario, frame size) of ``grid`` that are searched: each frame size that fits the scenario."""
    return [(sc, fs) for sc in grid for fs in params.traffic.frame_sizes if frame_fits(sc, fs)]


def paired_problem(params: ExperimentParams) -> Optional[str]:
    """Why ``params.paired`` cannot run (one line naming the field), None when it can or is absent: the
    experiment's claims are not defined here (D, F), or they do not tell the grid's configurations apart."""
    if params.paired is None:
        return None
    specs = claimsets.search_claims_of(params)
    if specs is None:
        return (f"paired: the paired phase decides the claims of experiments A, B and C, not {params.experiment}: "
                f"remove paired: from its params")
    names = claimsets.key_labels(specs)
    keys = [search_config({**sc.labels(), "frame_size": fs}, names) for sc, fs in _cells(params, scenarios(params))]
    if len(set(keys)) < len(keys):
        return (f"paired: {params.experiment}'s claims name {', '.join(names)} only, which do not tell this "
                f"grid's configurations apart: remove paired: or the other grid axes")
    return None


def adaptive_problem(params: ExperimentParams) -> Optional[str]:
    """Why ``params.adaptive`` cannot run (one line naming the field), None when it can or is absent:
    the experiment's claims are not defined (A, D, F), or they do not tell the grid's configurations
    apart (an axis no claim names, e.g. ``mtu_bytes``: the runner would not know which to repeat)."""
    if params.adaptive is None:
        return None
    specs = claimsets.search_claims_of(params)
    if specs is None:
        return (f"adaptive: adaptive repetitions are wired for experiments A, B and C (searches) and E (tool runs), "
                f"not {params.experiment}: remove adaptive: from its params")
    names = claimsets.key_labels(specs)
    keys = [search_config({**sc.labels(), "frame_size": fs}, names) for sc, fs in _cells(params, scenarios(params))]
    if len(set(keys)) < len(keys):
        return (f"adaptive: {params.experiment}'s claims name {', '.join(names)} only, which do not tell this "
                f"grid's configurations apart: remove adaptive: or the other grid axes")
    return None


def cni_scenarios(params: CniExperimentParams) -> list[CniScenario]:
    """Experiment E's grid: data paths x link MTUs, each a two-node scenario a lab backend realizes."""
    return [CniScenario(p, segmentation_offload=params.segmentation_offload) for p in params.grid.paths()]


def run_tools(params: CniExperimentParams, records: Union[str, Path], *, backend=None, progress: bool = True,
              source: Optional[str] = None, resume: Optional[bool] = None) -> str:
    """Experiment E (seed 002): every (data path, MTU) the lab realizes, its tool runs recorded.

    One lab per (path, MTU) (:class:`~nfvlab.scenario.cni.CniScenario`, opened through the
    backend: the embedded :class:`~nfvlab.labs.embedded.cni.CniLab`), reused for every
    repetition, TCP direction (iperf3) and HTTP direction x file size (nginx in node2's pod, wrk
    as the client): :func:`nfvlab.scenario.cni.steps`, :func:`nfvlab.traffic.tcp.run_step`, in
    :func:`nfvlab.scenario.cni.paired_order` (the directions a claim compares side by side, in
    counterbalanced order drawn from the run id).

    Records: the ``run`` record (params with ``fingerprint``, ``source``; provenance ``lab``: the
    backend's facts and the tools' versions), one ``measurement`` per tool run (labels:
    :func:`nfvlab.scenario.cni.step_labels`) appended as it finishes, a ``not-realizable`` note per
    (path, MTU) the lab cannot realize, a ``measurement-failed`` note per failed tool run (the run
    goes on). Resume as :func:`run_experiment`, by tool run. With ``params.adaptive``, after the fixed
    repetitions: adaptive repetitions (:func:`adapt`; each added tool run labelled ``added_look`` /
    ``added_reason``, the run's last note of kind ``adaptive`` says why it stopped). Raises
    :class:`nfvlab.measure.InputError` (not root, cluster unreachable, an unusable records path)
    before anything is created.
    """
    resume = _resume(resume)
    problem = output_problem(Path(records), "file")
    if problem:
        raise measure.InputError(f"records {problem}")
    backend = backend or labs.backend_for()
    not_ready = backend.ready()
    if not_ready:
        raise measure.InputError(not_ready[0])
    grid = cni_scenarios(params)
    why = {sc: backend.check(sc) for sc in grid}
    runnable = [sc for sc in grid if not why[sc]]
    prov_extra = {"lab": {**backend.describe(), "tools": tcp.tool_versions()}}
    with _recording(params.experiment, _dump(params, source), records, prov_extra, resume=resume,
                    finished=TOOL_RUN_DONE) as (rec, previous):
        if previous is None:
            for sc in grid:
                if why[sc]:
                    rec.note(f"not realizable: {why[sc][0]}", kind="not-realizable", **sc.labels())
        done = previous.done if previous else set()
        plan = [(sc, paired_order([s for s in steps(params.grid) if unit_key(step_labels(sc, s)) not in done],
                                  rec.run_id)) for sc in runnable]
        total = len(runnable) * len(steps(params.grid))
        bar = Progress(params.experiment, sum(len(todo) for _, todo in plan), enabled=progress, count_trials=False)
        bar.note(f"{len(runnable)} of {len(grid)} (data path, MTU) realizable on this {backend.kind} lab, "
                 f"{params.repetitions} repetition(s): {total} tool runs"
                 + (f"; resuming run {previous.run_id}: {total - bar.total} done, {bar.total} to go"
                    if previous else ""))
        for sc, todo in plan:
            if todo:
                _tool_runs(params, backend, sc, todo, rec, bar)
        bar.note(f"done: {bar.done} tool runs in {_duration(time.monotonic() - bar.t0)}")
        if params.adaptive is not None:
            _adapt_tools(params, backend, runnable, records, rec, bar)
        return rec.run_id


def _tool_runs(params: CniExperimentParams, backend, scenario: CniScenario, todo: list[Step], rec: RecordWriter,
               bar: Progress) -> None:
    with backend.open(scenario) as session:
        lab, at = session.tracker, session.endpoints
        if any(s.protocol == "http" for s in todo):
            tcp.start_nginx(lab, ns=at["pod2"].ns, bind_ip=at["pod2"].address, file_bytes=params.wrk.file_bytes)
        for step in todo:
            _tool_run(params, lab, at, scenario, step, rec, bar)


def _tool_run(params: CniExperimentParams, lab, at, scenario: CniScenario, step: Step, rec: RecordWriter, bar,
              extra: Optional[dict] = None) -> float:
    """One tool run recorded (``extra``: labels of an added repetition); the rate its claims compare
    (:func:`nfvlab.claimsets.tool_rate`; NaN when it failed)."""
    labels = {**step_labels(scenario, step), **(extra or {})}
    proto, size = step.protocol, step.file_bytes
    what = (f"{scenario.label} {proto} {step.direction}{f' {size} B' if size else ''}{' (A/A twin)' if step.twin else ''}"
            f" rep {step.repetition}")
    try:
        tool, result = tcp.run_step(lab, at, params.grid, step)
    except tcp.ToolError as err:
        rec.note(f"measurement failed: {err}", kind="measurement-failed", **labels)
        _report(bar, what, f"failed: {err}", extra)
        return math.nan
    r = rec.measurement(tool, result, **labels)
    _report(bar, what, tcp.outcome(tool, result), extra)
    return _positive(claimsets.tool_rate(proto, r["result"]))


def _report(bar: Progress, what: str, outcome: str, extra: Optional[dict]) -> None:
    """A unit's progress line: counted (:meth:`Progress.update`), or, for an added repetition
    (``extra``: its labels), a line saying so and why."""
    if extra and extra.get("arm") == TWIN:
        bar.update(f"{what} (A/A twin)", outcome)
    elif extra:
        bar.note(f"added {what} ({extra['added_reason']}): {outcome}")
    else:
        bar.update(what, outcome)


# ---------------------------------------------------------------------------
# adaptive repetitions (experiments A, B, C, E): nfvlab.adaptive.run over this run's own searches / tool runs
# ---------------------------------------------------------------------------
#: A rate of 0 (a tool run that moved nothing) as the driver reads it: far below any rate (the
#: analysis reads it as a thousandth of the smallest rate of the claim's data).
ZERO_RATE = 1e-9


def _positive(v: Optional[float]) -> float:
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
        return _positive(claimsets.tool_rate((r.get("labels") or {}).get("protocol"), r.get("result") or {}))

    return _run_values(recs, run_id, TOOL_RUN_DONE, rate, cni_config)


def search_values(recs: Iterable[dict], run_id: str, names: Iterable[str]) -> dict[str, dict[int, float]]:
    """Configuration (:func:`search_config` with the labels ``names``) -> repetition -> the NDR its claims
    compare (:data:`nfvlab.claimsets.SEARCH_GOAL`), from the searches run ``run_id`` recorded (a failed
    search: NaN, so the repetition counts as done)."""
    names = tuple(names)

    def ndr(r: dict) -> Optional[float]:  # a search result of another goal is not a unit here
        if (r.get("labels") or {}).get("goal") != claimsets.SEARCH_GOAL:
            return None
        return _positive((r.get("result") or {}).get("throughput_pps"))

    return _run_values(recs, run_id, SEARCH_DONE, ndr, lambda lab: search_config(lab, names))


def _claims_of(params: Union[ExperimentParams, CniExperimentParams]) -> list[claimsets.ClaimSpec]:
    """The claims an adaptive run of ``params`` decides (E: :func:`nfvlab.claimsets.cni_claims_of`; B, C:
    :func:`nfvlab.claimsets.search_claims_of`)."""
    if isinstance(params, CniExperimentParams):
        return claimsets.cni_claims_of(params)
    return claimsets.search_claims_of(params) or []


def _resolution(params: Union[ExperimentParams, CniExperimentParams]) -> float:
    """The relative resolution of the rates the claims compare, as the analysis reads it: a search's
    goal width (``search.relative_width``, recorded as ``goal_relative_width``); 0 for a tool's rate."""
    return 0.0 if isinstance(params, CniExperimentParams) else float(params.search.relative_width)


def adapt(params: Union[ExperimentParams, CniExperimentParams], configs: Iterable[str],
          recorded: dict[str, dict[int, float]], measure_one: Callable[[adaptive.Added], float],
          clock: Callable[[], float] = time.monotonic, design: Optional[claims.Design] = None,
          unit_seconds: Optional[float] = None,
          order: Optional[Callable[[list[adaptive.Added]], list[adaptive.Added]]] = None) -> adaptive.Outcome:
    """Adaptive repetitions (``params.adaptive``) of experiment E, B or C: :func:`nfvlab.adaptive.run` over
    its claims (:func:`_claims_of`), the plan ``Plan(first=repetitions, step, max_repetitions)`` and the
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
    specs = [x for x in (s.spec(present=initial) for s in _claims_of(params)) if x]
    # the A/A control rides along with its original: judged on as many pairs, it asks for none
    along = control_twins(params, initial)
    riders = set(along.values())
    specs = [x for x in specs if not any(c in riders for chain in x[1] for c in chain)]

    def one(added: adaptive.Added) -> float:
        have = recorded.get(added.config, {})
        return have[added.repetition] if added.repetition in have else measure_one(added)

    return adaptive.run(one, specs, initial, plan, {c: _resolution(params) for c in initial},
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


def _adapt_tools(params: CniExperimentParams, backend, runnable: list[CniScenario], records, rec: RecordWriter,
                 bar: Progress) -> None:
    """:func:`adapt` on the lab: each added repetition a tool run with ``repetition`` = its index and
    labels ``added_look`` / ``added_reason``; the run's records end with an ``adaptive`` note. A look's
    runs go lab by lab, each lab's in :func:`nfvlab.scenario.cni.paired_order` (as the fixed repetitions)."""
    by_config = {cni_config(step_labels(sc, s)): (sc, s) for sc in runnable for s in steps(params.grid)}

    def order(todo: list[adaptive.Added]) -> list[adaptive.Added]:
        labs = list(dict.fromkeys(by_config[a.config][0] for a in todo))
        step = {(by_config[a.config][0], by_config[a.config][1]._replace(repetition=a.repetition)): a for a in todo}
        return [step[(sc, s)] for sc in labs
                for s in paired_order([s for lab, s in step if lab == sc], rec.run_id)]

    _adaptive_start(params, bar)
    with ExitStack() as stack:
        open_ = {}  # the lab open now: {"scenario", "lab", "at", "nginx"}

        def measure_one(added: adaptive.Added) -> float:
            sc, step = by_config[added.config]
            if open_.get("scenario") != sc:
                stack.close()
                session = stack.enter_context(backend.open(sc))
                open_.clear()
                open_.update(scenario=sc, lab=session.tracker, at=session.endpoints, nginx=False)
            if step.protocol == "http" and not open_["nginx"]:
                at = open_["at"]
                tcp.start_nginx(open_["lab"], ns=at["pod2"].ns, bind_ip=at["pod2"].address,
                                file_bytes=params.wrk.file_bytes)
                open_["nginx"] = True
            return _tool_run(params, open_["lab"], open_["at"], sc, step._replace(repetition=added.repetition), rec,
                             bar, _added_labels(added))

        out = adapt(params, by_config, tool_values(read_records(records), rec.run_id), measure_one,
                    unit_seconds=bar.unit_seconds(), order=order)
    _adaptive_end(out, rec, bar)


def _adapt_searches(params: ExperimentParams, backend, calibration: Calibration, runnable: list[Scenario], records,
                    rec: RecordWriter, bar: Progress) -> None:
    """:func:`adapt` on the lab for a search experiment (A, B, C): each added repetition one search (and its
    latency trials) of one (scenario, frame size) on a fresh lab, as every repetition (:func:`_measure`),
    ``repetition`` = its index, its records labelled ``added_look`` / ``added_reason``; the run's
    records end with an ``adaptive`` note."""
    names = claimsets.key_labels(claimsets.search_claims_of(params))
    by_config = {search_config({**sc.labels(), "frame_size": fs}, names): (sc, fs)
                 for sc, fs in _cells(params, runnable)}
    _adaptive_start(params, bar)

    def measure_one(added: adaptive.Added) -> float:
        sc, fs = by_config[added.config]
        found = _measure(params, backend, calibration, sc, added.repetition, rec, bar, [fs], _added_labels(added))
        return _ndr(found[fs])

    _adaptive_end(adapt(params, by_config, search_values(read_records(records), rec.run_id, names), measure_one,
                        unit_seconds=bar.unit_seconds()), rec, bar)


def _paired_phase(params: ExperimentParams, backend, calibration: Calibration, runnable: list[Scenario], records,
                  rec: RecordWriter, bar: Progress) -> None:
    """The paired phase (:mod:`nfvlab.pairing`) over the claims' pairs, each arm at its NDR from this run's
    searches; comparisons an interrupted run finished are not measured again. On a lab that realizes one
    scenario at a time every comparison is recorded not testable, with why."""
    specs = claimsets.search_claims_of(params)
    names = claimsets.key_labels(specs)
    recs = list(read_records(records))
    ndr = search_values(recs, rec.run_id, names)
    limited = {search_config(r["labels"], names) for r in recs
               if r.get("run_id") == rec.run_id and r["type"] == "search"
               and r["labels"].get("goal") == claimsets.SEARCH_GOAL and (r.get("result") or {}).get("generator_limited")}
    arms = {}
    for sc, fs in _cells(params, runnable):
        key = search_config({**sc.labels(), "frame_size": fs}, names)
        found = [v for v in (ndr.get(key) or {}).values() if v is not None and math.isfinite(v) and v > 0]
        if found:
            arms[key] = pairing.Arm(key, sc, fs, pairing.median_ndr(found), key in limited, max(found))
    comps = pairing.plan_comparisons(specs, arms, alpha=params.paired.alpha, control=params.paired.control)
    done = [(r.get("labels") or {}).get("comparison") for r in recs
            if r.get("run_id") == rec.run_id and r["type"] == "note"
            and (r.get("labels") or {}).get("kind") == pairing.PAIRED_NOTE]
    if not getattr(backend, "parallel_labs", False):
        why = (f"the {backend.kind} lab realizes one scenario at a time (one pair of generator ports), "
               f"so two arms cannot be up at once")
        for comp in comps:
            if comp.key not in done:
                pairing.not_testable(comp, why, rec, bar)
        return
    pairing.run_paired(params, backend, lambda gen, fs: calibration.ceiling(gen.identity(), fs), comps, rec, bar,
                       done=done)


def _ndr(results: Optional[list]) -> float:
    """The rate a search's claims compare (:data:`nfvlab.claimsets.SEARCH_GOAL`); NaN when none was found."""
    return _positive(next((r.throughput_pps for r in results or () if r.goal == claimsets.SEARCH_GOAL), None))


def _added_labels(added: adaptive.Added) -> dict:
    """The labels an added repetition's records carry besides the ordinary ones."""
    return {"added_look": added.look, "added_reason": added.reason}


def _adaptive_start(params: Union[ExperimentParams, CniExperimentParams], bar: Progress) -> None:
    ad = params.adaptive
    bar.note(f"adaptive repetitions: up to {ad.max_repetitions} per configuration, {ad.step} per look"
             + (f", within {ad.seconds:g} s" if ad.seconds else "")
             + " (Pocock-type alpha spending over the looks)")


def _adaptive_end(out: adaptive.Outcome, rec: RecordWriter, bar: Progress) -> None:
    """The run's ``adaptive`` note (why it stopped, how many added, the claims left inconclusive), and its line."""
    verdicts = [v["verdict"] for v in out.verdicts]
    undecided = verdicts.count("inconclusive")
    text = (f"adaptive repetitions: stopped: {out.stopped}; {len(out.added)} repetition(s) added in "
            f"{_duration(out.seconds)}; {undecided} of {len(verdicts)} claims still inconclusive"
            + (f"; given up (too many repetitions needed): {'; '.join(out.given_up)}" if out.given_up else ""))
    rec.note(text, kind="adaptive", stopped=out.stopped, added=len(out.added), seconds=round(out.seconds, 1),
             inconclusive=undecided, **({"given_up": list(out.given_up)} if out.given_up else {}))
    bar.note(text)


@dataclass(frozen=True)
class Interrupted:
    """The last unfinished run of a records file with the same fingerprint."""

    run_id: str
    done: frozenset
    """Keys (:func:`unit_key`) of the units it finished (a search or tool run recorded, or its failure)."""
    trials: int
    """Trials it recorded (the resumed part numbers its trials on from there)."""


#: What marks a unit of a run finished (:func:`interrupted_run`): (record type, note kind).
SEARCH_DONE = ("search", "search-failed")
TOOL_RUN_DONE = ("measurement", "measurement-failed")


def unit_key(labels: dict) -> tuple:
    """The key of a record's unit (a search, a tool run): :func:`_key` of its labels."""
    return _key(labels, labels.get("frame_size"), labels.get("repetition", 0))


def _key(labels: dict, frame_size, repetition) -> tuple:
    return (tuple(sorted((k, v) for k, v in labels.items() if k not in ("frame_size", "repetition", "kind",
                                                                     "goal", "purpose", "added_look",
                                                                     "added_reason"))),
            str(frame_size), int(repetition))


def interrupted_run(records: Union[str, Path], fp: str,
                    finished: tuple[str, str] = SEARCH_DONE) -> Optional[Interrupted]:
    """The last run of ``records`` with fingerprint ``fp`` that did not complete (None: none).

    ``finished``: the record type and note kind that mark a unit done (:data:`SEARCH_DONE`,
    :data:`TOOL_RUN_DONE`); their :func:`unit_key` are its ``done``."""
    path = Path(records)
    if not path.exists():
        return None
    by_run: dict[str, list[dict]] = {}
    for r in read_records(path):
        by_run.setdefault(r["run_id"], []).append(r)
    for run_id in reversed(list(by_run)):
        recs = by_run[run_id]
        first = next((r for r in recs if r["type"] == "run"), None)
        if first is None or (first.get("params") or {}).get("fingerprint") != fp:
            continue
        if any(r["type"] == "end" and r.get("status") == "completed" for r in recs):
            return None  # the latest such run completed: a re-run is a new run
        done = {unit_key(r["labels"]) for r in recs if r["type"] == finished[0]
                or (r["type"] == "note" and r["labels"].get("kind") == finished[1])}
        return Interrupted(run_id, frozenset(done), sum(1 for r in recs if r["type"] == "trial"))
    return None


def _duration(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    return f"{m} min {s:02d} s" if m else f"{s} s"


class Progress:
    """One line per finished search (tool run): ``i/N``, what was measured, trials, elapsed, estimate left.

    Plain lines (no carriage returns) so they read the same in a terminal, in
    ``papermill --log-output`` (``dvc repro``) and in a log file.
    """

    def __init__(self, name: str, total: int, *, enabled: bool = True, stream: Optional[TextIO] = None,
                 count_trials: bool = True) -> None:
        self.name, self.total, self.enabled = name, total, enabled
        self.count_trials = count_trials
        """Lines say the trials so far (searches; not tool runs, which have none)."""
        self.stream = stream
        self.done = 0
        self.trials = 0
        self.t0 = time.monotonic()

    def note(self, text: str) -> None:
        if self.enabled:
            print(f"{self.name}: {text}", file=self.stream or sys.stdout, flush=True)

    def trial(self) -> None:
        self.trials += 1

    def unit_seconds(self) -> Optional[float]:
        """Mean seconds of the units (searches, tool runs) counted so far; None before the first."""
        return (time.monotonic() - self.t0) / self.done if self.done else None

    def update(self, what: str, outcome: str) -> None:
        self.done += 1
        elapsed = time.monotonic() - self.t0
        left = elapsed / self.done * (self.total - self.done)
        trials = f"{self.trials} trials, " if self.count_trials else ""
        self.note(f"{self.done}/{self.total} {what}: {outcome}; {trials}"
                  f"elapsed {_duration(elapsed)}, about {_duration(left)} left")


#: What :func:`_search` returns when its search failed on invalid trials and a fresh lab may retry it.
_FRESH_LAB = object()


def _measure(params: ExperimentParams, backend, calibration: Calibration, scenario: Scenario, rep: int,
             rec: RecordWriter, bar, frame_sizes, extra: Optional[dict] = None) -> dict:
    """Repetition ``rep`` of ``scenario`` on a fresh lab: a search per frame size (:func:`_search`); frame
    size -> its search results (None: failed, or a sweep). ``extra``: the labels of an added repetition.

    A search that fails because every repeat of a trial was invalid (:class:`nfvlab.search.GeneratorFaultError`)
    is searched again, once, on a new lab instance, with the frame sizes after it: a lab can be left
    holding frames of an earlier trial that spoil every trial after it (seen on the tap path: "the DUT
    delivered frames of an earlier trial", 9 trials in a row), which no pause between repeats clears.
    The failed attempt stays in the records (its trials, and a ``search-retried`` note saying why)."""
    out: dict = {}
    todo = list(frame_sizes)
    for last_lab in (False, True):
        with measure.bench(backend, params.lab.generator, scenario, params.traffic) as (session, gen):
            while todo:
                got = _search(params, calibration, gen, scenario, todo[0], rep, rec, bar, extra or {},
                              fresh_lab_left=not last_lab)
                if got is _FRESH_LAB:
                    break
                out[todo.pop(0)] = got
        if not todo:
            break
    return out


def _search(params: ExperimentParams, calibration: Calibration, gen, scenario: Scenario, fs, rep: int,
            rec: RecordWriter, bar, extra: dict, fresh_lab_left: bool = False) -> Optional[list]:
    """One search and its latency trials, every record labelled (and ``extra``); its results (None:
    the search failed, recorded as a ``search-failed`` note; or a sweep, which has no rate).
    ``fresh_lab_left``: a search failing on invalid trials returns :data:`_FRESH_LAB` (after a
    ``search-retried`` note) for :func:`_measure` to search again on a new lab instance."""
    cl = scenario.labels()
    labels = {**cl, "frame_size": fs, "repetition": rep, **extra}
    knobs = str(scenario.resources)
    what = f"{scenario.label}{'' if knobs == 'default resources' else f' ({knobs})'} {fs} B rep {rep}"

    def on_trial(t):
        bar.trial()
        rec.trial(t, purpose="search", repetition=rep, **cl, **extra)

    meas = measure.measurer(gen, fs, params.traffic, extra={"model": scenario.model}, search=params.search)
    ceiling = calibration.ceiling(gen.identity(), fs)
    max_rate = params.search.max_rate_pps or measure.default_max_rate(params.lab.port_speed, fs, ceiling)
    if params.search.method in ("mlrsearch", "rfc2544"):  # a goal search (MRR and sweeps offer the rate asked)
        max_rate = measure.dithered_top(max_rate, params.search.relative_width,
                                        f"{rec.run_id}:{sorted(labels.items())}")
    try:
        results = measure.search(
            meas, fs, params.search, max_rate_pps=max_rate, ceiling_pps=ceiling, progress=False,
            warmup_s=params.trial.warmup_s, on_trial=on_trial)
    except SearchError as err:
        if fresh_lab_left and isinstance(err, GeneratorFaultError):
            rec.note(f"search retried on a new lab instance: {err}", kind="search-retried", **labels)
            bar.note(f"{what}: retried on a new lab instance: {err}")
            return _FRESH_LAB
        rec.note(f"search failed: {err}", kind="search-failed", **labels)
        _report(bar, what, f"search failed: {err}", extra)
        return None
    if not isinstance(results, list):  # a sweep's DataFrame: no rate to take latency at
        _report(bar, what, "sweep done", extra)
        return None
    if extra.get("arm") != TWIN:  # an A/A control's twin compares rates only
        latency_under_load(params, gen, fs, results, rec, bar, rep, {**cl, **extra}, scenario.model)
    # Search results last: a resumed run (which skips searches with a result)
    # redoes a search whose latency trials were interrupted.
    for r in results:
        rec.search({k: v for k, v in r.to_dict().items() if k != "trials"}, goal=r.goal, **labels)
    _report(bar, what, ", ".join(f"{r.goal} {r.throughput_pps:,.0f} pps" for r in results
                                 if r.throughput_pps is not None) or "no rate found", extra)
    return results


def latency_rates(params: ExperimentParams, results,
                  probe_pps: float) -> tuple[Optional[str], list[tuple[float, float]]]:
    """The goal and ``(load_fraction, rate_pps)`` of the latency trials after a search.

    The rate found for ``params.latency_goal`` (the first goal's when the search has no
    such goal) times each of ``params.latency_load_fractions``; fraction 0 is a trial at
    the generator's probe rate ``probe_pps`` (nfvlab-gen then sends probes only). None
    and no rates when no rate was found or probes are off.
    """
    chosen = next((r for r in results if r.goal == params.latency_goal), results[0] if results else None)
    found = chosen.throughput_pps if chosen is not None else None
    if not found or found <= 0 or probe_pps <= 0:
        return None, []
    return chosen.goal, [(f, f * found if f > 0 else float(probe_pps)) for f in params.latency_load_fractions]


def latency_under_load(params: ExperimentParams, gen, frame_size, results, rec: RecordWriter, bar, rep: int,
                       labels: dict, model: str) -> None:
    """Latency trials at the load fractions of the rate a search found (CSIT's latency under load).

    Each trial is recorded with ``purpose=latency``, the ``goal`` and ``load_fraction``; an
    invalid one (``valid: false``) is repeated up to ``search.max_invalid_repeats`` times.
    """
    goal, rates = latency_rates(params, results, gen.describe().get("latency_pps") or 0)
    for fraction, rate in rates:
        # An invalid trial (the generator off schedule) is recorded and repeated, as in searches.
        for attempt in range(params.search.max_invalid_repeats + 1):
            t = run_trial(gen, rate, params.trial.duration_s, frame_size,
                          bidirectional=params.traffic.bidirectional, kind="trial",
                          extra={"model": model, "load_fraction": fraction})
            bar.trial()
            rec.trial(t, purpose="latency", goal=goal, load_fraction=fraction, repetition=rep, **labels)
            if t.valid:
                break
            time.sleep(invalid_repeat_pause_s(attempt + 1))
