"""Experiment E's runner (seed 002): tool runs (iperf3, wrk against nginx) on the CNI data paths a lab
backend realizes, recorded with the same records, resume and progress lines as the searches of
:mod:`nfvlab.experiment`.
"""
from __future__ import annotations

import math
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Optional, Union

from nfvlab import adaptive, claimsets, labs, measure
from nfvlab.adaptive_run import added_labels, adapt, cni_config, end_note, positive_rate, start_note, tool_values
from nfvlab.params import CniExperimentParams
from nfvlab.progress import Progress, duration_text, report_unit
from nfvlab.records import RecordWriter, read_records
from nfvlab.run_records import TOOL_RUN_DONE, params_dump, recording, resume_wanted, unit_key
from nfvlab.scenario.cni import CniScenario, Step, paired_order, step_labels, steps
from nfvlab.system.paths import output_problem
from nfvlab.traffic import tcp


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
    goes on). Resume as :func:`nfvlab.experiment.run_experiment`, by tool run. With ``params.adaptive``, after the fixed
    repetitions: adaptive repetitions (:func:`adapt`; each added tool run labelled ``added_look`` /
    ``added_reason``, the run's last note of kind ``adaptive`` says why it stopped). Raises
    :class:`nfvlab.measure.InputError` (not root, cluster unreachable, an unusable records path)
    before anything is created.
    """
    resume = resume_wanted(resume)
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
    with recording(params.experiment, params_dump(params, source), records, prov_extra, resume=resume,
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
        bar.note(f"done: {bar.done} tool runs in {duration_text(time.monotonic() - bar.t0)}")
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
        report_unit(bar, what, f"failed: {err}", extra)
        return math.nan
    r = rec.measurement(tool, result, **labels)
    report_unit(bar, what, tcp.outcome(tool, result), extra)
    return positive_rate(claimsets.tool_rate(proto, r["result"]))



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

    start_note(params, bar)
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
                             bar, added_labels(added))

        out = adapt(params, by_config, tool_values(read_records(records), rec.run_id), measure_one,
                    unit_seconds=bar.unit_seconds(), order=order)
    end_note(out, rec, bar)

