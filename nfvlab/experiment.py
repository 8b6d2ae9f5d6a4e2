"""Run an experiment's grid (models x frame sizes x repetitions) and record it all.

    params = nfvlab.params.load("params/experiment_a.yaml")
    run_experiment(params, "data/raw/experiment_a.jsonl")

Every configuration gets a fresh lab per repetition (so repetitions are
independent), a throughput search, and latency trials at fractions of the rate
found (``latency_load_fractions``, default 0/10/50/90 % of the PDR, as FD.io CSIT does).
Every trial and search result is appended to the records file as it completes;
a model this host cannot realize is recorded as a ``not-realizable`` note with
the reason, never as a number. Input problems are found before any lab exists.

After the searches, two optional phases decide the claims: adaptive repetitions (``adaptive:``,
:mod:`nfvlab.adaptive_run`) and the paired phase (``paired:``, :mod:`nfvlab.pairing`). The run's
records, host lock and resume are :mod:`nfvlab.run_records`'; its progress lines
:mod:`nfvlab.progress`'. Experiment E (:class:`~nfvlab.params.CniExperimentParams`: tool runs
instead of searches) is :mod:`nfvlab.tool_runs`' (:func:`run_experiment` hands it over).
"""
from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Iterable, Optional, Union

from nfvlab import adaptive, claimsets, labs, measure, pairing
from nfvlab.adaptive_run import added_labels, adapt, end_note, positive_rate, search_config, search_values, start_note
from nfvlab.calibrate import Calibration
from nfvlab.params import CniExperimentParams, ExperimentParams
from nfvlab.progress import Progress, duration_text, report_unit
from nfvlab.records import RecordWriter, read_records
from nfvlab.run_records import SEARCH_DONE, params_dump, recording, resume_wanted, run_key
from nfvlab.scenario import DensityCell, Resources, Scenario
from nfvlab.scenario.cni import TWIN
from nfvlab.search import GeneratorFaultError, SearchError
from nfvlab.system.paths import output_problem
from nfvlab.tool_runs import run_tools
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


def run_experiment(params: Union[ExperimentParams, CniExperimentParams], records: Union[str, Path], *,
                   backend=None, progress: bool = True, source: Optional[str] = None,
                   resume: Optional[bool] = None) -> str:
    """Measure every scenario of ``params`` on ``backend``; append records; return the run id.

    ``backend`` defaults to the one the lab profile names (:func:`nfvlab.labs.backend_for`;
    experiment E's params have none: the embedded lab).
    Resume: when the records' last run with the same params and code (:func:`nfvlab.measuring_code.fingerprint`)
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
    (:class:`~nfvlab.params.CniExperimentParams`): :func:`nfvlab.tool_runs.run_tools`.
    """
    if isinstance(params, CniExperimentParams):
        return run_tools(params, records, backend=backend, progress=progress, source=source, resume=resume)
    resume = resume_wanted(resume)
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
    dump = params_dump(params, source)
    prov_extra = {"lab": backend.describe(),
                  "generator": {"identity": identity, "calibration_file": str(calibration.path),
                                "ceilings": (entry or {}).get("ceilings")}}
    if len(tx_paths(params.lab.generator)) > 1:  # tx: auto: each scenario's trials say which path
        prov_extra["generator"]["tx_paths"] = {
            tx: {"identity": ident, "ceilings": (calibration.entry(ident) or {}).get("ceilings")}
            for tx in tx_paths(params.lab.generator) for ident in [identity_for(params.lab.generator, tx)]}
    with recording(params.experiment, dump, records, prov_extra, resume=resume,
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
                if run_key(sc.labels(), fs, rep) not in done]
        twins = [(rep, sc, fs) for rep in range(params.repetitions) for sc, fs in control_cells(params, runnable)
                 if run_key({**sc.labels(), **TWIN_LABELS}, fs, rep) not in done]
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
                 f"{duration_text(time.monotonic() - bar.t0)}")
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


def _adapt_searches(params: ExperimentParams, backend, calibration: Calibration, runnable: list[Scenario], records,
                    rec: RecordWriter, bar: Progress) -> None:
    """:func:`adapt` on the lab for a search experiment (A, B, C): each added repetition one search (and its
    latency trials) of one (scenario, frame size) on a fresh lab, as every repetition (:func:`_measure`),
    ``repetition`` = its index, its records labelled ``added_look`` / ``added_reason``; the run's
    records end with an ``adaptive`` note."""
    names = claimsets.key_labels(claimsets.search_claims_of(params))
    by_config = {search_config({**sc.labels(), "frame_size": fs}, names): (sc, fs)
                 for sc, fs in _cells(params, runnable)}
    start_note(params, bar)

    def measure_one(added: adaptive.Added) -> float:
        sc, fs = by_config[added.config]
        found = _measure(params, backend, calibration, sc, added.repetition, rec, bar, [fs], added_labels(added))
        return _ndr(found[fs])

    end_note(adapt(params, by_config, search_values(read_records(records), rec.run_id, names), measure_one,
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
    return positive_rate(next((r.throughput_pps for r in results or () if r.goal == claimsets.SEARCH_GOAL), None))


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
        report_unit(bar, what, f"search failed: {err}", extra)
        return None
    if not isinstance(results, list):  # a sweep's DataFrame: no rate to take latency at
        report_unit(bar, what, "sweep done", extra)
        return None
    if extra.get("arm") != TWIN:  # an A/A control's twin compares rates only
        latency_under_load(params, gen, fs, results, rec, bar, rep, {**cl, **extra}, scenario.model)
    # Search results last: a resumed run (which skips searches with a result)
    # redoes a search whose latency trials were interrupted.
    for r in results:
        rec.search({k: v for k, v in r.to_dict().items() if k != "trials"}, goal=r.goal, **labels)
    report_unit(bar, what, ", ".join(f"{r.goal} {r.throughput_pps:,.0f} pps" for r in results
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
