"""Experiment E (seed 002): TCP and HTTP over CNI data paths, measured with iperf3 and wrk, all recorded.

    exp = nfvlab.experiment_cni.load("params/quick/experiment_e.yaml")
    run_cni_experiment(exp, "data/raw/experiment_e.jsonl", source="params/quick/experiment_e.yaml")

The grid (:class:`nfvlab.scenario.cni.CniGrid`) is data paths x link MTUs; each (path, MTU)
gets one :class:`~nfvlab.labs.embedded.cni.CniLab` (two nodes, a pod on each), reused for
every repetition, TCP direction (iperf3) and HTTP direction x file size (nginx in node2's
pod, wrk as the client). Every tool run is appended to the records file as a
``measurement`` record as soon as it finishes (``fsync``-ed), so an interruption loses at
most the run in progress, and a re-run with the same params and code resumes the
interrupted run, measuring only what it lacks. A data path this host cannot build
(``ipip`` without the kernel module) is one ``not-realizable`` note with the reason.

Segmentation offloads: the params key ``segmentation_offload`` (default ``false``) switches
TSO/GSO off on every node and pod interface, so the kernel handles packets of at most the
MTU and per-packet costs scale with it, as on the seed's NIC link (docs/experiment-e.md,
"Offloads"); every record carries it as a label.
"""
from __future__ import annotations

import os
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from nfvlab import params as P
from nfvlab.experiment import Progress, _duration, fingerprint, interrupted_run
from nfvlab.labs.embedded.cni import CniLab, missing_tools, path_problem
from nfvlab.labs.embedded.lab import ROOT_NEEDED
from nfvlab.measure import InputError
from nfvlab.records import RecordWriter, read_records
from nfvlab.scenario.cni import CniConfigError, CniGrid, CniPath
from nfvlab.system.hostlock import HostLock
from nfvlab.system.paths import output_problem
from nfvlab.traffic.tcp import ToolError, file_name, run_iperf3, run_wrk, start_nginx

__all__ = ["CniConfigError", "CniExperiment", "load", "run_cni_experiment", "steps"]

#: Top-level keys of an experiment-E params file besides the grid's (:meth:`CniGrid.from_dict`).
OWN_KEYS = ("experiment", "segmentation_offload")
GRID_KEYS = ("data_paths", "link_mtus_bytes", "tcp_directions", "http_directions", "iperf", "wrk", "repetitions")


@dataclass(frozen=True)
class CniExperiment:
    """Experiment E's params: its name, the grid, and whether segmentation offloads stay on."""

    experiment: str
    grid: CniGrid
    segmentation_offload: bool = False

    def dump(self) -> dict:
        """The params as recorded in the run record (plain JSON)."""
        return {"experiment": self.experiment, "segmentation_offload": self.segmentation_offload,
                "repetitions": self.grid.repetitions, "cni": asdict(self.grid)}


def load(path: str | Path, overrides: dict | None = None) -> CniExperiment:
    """An experiment-E params file; one line naming the file and field on any problem.

    Read like every params file (:func:`nfvlab.params.load`: a regular UTF-8 YAML file without tags,
    anchors or aliases); ``overrides`` (papermill parameters) are merged in first. Raises
    :class:`nfvlab.params.ParamsError` for an unreadable file or top-level key, and
    :class:`~nfvlab.scenario.cni.CniConfigError` for a bad grid (an MTU a path cannot carry, an
    unknown data path, a file size of 0, ...), before anything is created.
    """
    path = Path(path)
    data = P._read_mapping(path)
    if overrides:
        data = P._merge(data, overrides)
    source = str(path) + (" (with overrides)" if overrides else "")
    unknown = sorted(set(data) - set(OWN_KEYS) - set(GRID_KEYS))
    if unknown:
        raise P.ParamsError(f"{source}: {unknown[0]}: unknown key; allowed: {', '.join(sorted(OWN_KEYS + GRID_KEYS))}")
    name = data.get("experiment", "e-cni")
    if not isinstance(name, str) or not name or not all(c.isalnum() or c in "_.-" for c in name):
        raise P.ParamsError(f"{source}: experiment: {name!r}: give a name of letters, digits, _ . -")
    offload = data.get("segmentation_offload", False)
    if not isinstance(offload, bool):
        raise P.ParamsError(f"{source}: segmentation_offload: {offload!r}: give true or false")
    grid = CniGrid.from_dict({k: v for k, v in data.items() if k in GRID_KEYS}, source)
    return CniExperiment(name, grid, offload)


#: One tool run of a lab: (repetition, protocol ``tcp``/``http``, direction, file size or None).
Step = tuple[int, str, str, int | None]


def steps(grid: CniGrid) -> list[Step]:
    """The tool runs of one (path, MTU) lab, in order: per repetition, TCP directions, then HTTP x sizes."""
    out: list[Step] = []
    for rep in range(grid.repetitions):
        out += [(rep, "tcp", d, None) for d in grid.tcp_directions]
        out += [(rep, "http", d, size) for d in grid.http_directions for size in grid.wrk.file_bytes]
    return out


def _labels(path: CniPath, step: Step, offload: bool) -> dict[str, Any]:
    rep, proto, direction, size = step
    return {"data_path": path.data_path, "link_mtu_bytes": path.link_mtu_bytes, "pod_mtu_bytes": path.pod_mtu_bytes,
            "protocol": proto, "direction": direction, "file_bytes": size, "repetition": rep,
            "segmentation_offload": offload}


def _key(labels: dict) -> tuple:
    return tuple(labels.get(k) for k in ("data_path", "link_mtu_bytes", "protocol", "direction", "file_bytes",
                                         "repetition"))


def _interrupted(records: Path, fp: str) -> tuple[str, frozenset] | None:
    """(run id, keys of finished tool runs) of the last unfinished run with fingerprint ``fp`` (None: none)."""
    previous = interrupted_run(records, fp)  # which run: the same rule as experiments A-D
    if previous is None:
        return None
    recs = [r for r in read_records(records) if r["run_id"] == previous.run_id]
    return previous.run_id, frozenset(_key(r["labels"]) for r in recs if r["type"] == "measurement"
                                      or (r["type"] == "note" and r["labels"].get("kind") == "measurement-failed"))


def tool_versions() -> dict[str, str]:
    """First line of each tool's version output (provenance); "unknown" where a tool does not say."""
    out = {}
    for tool, argv in (("iperf3", ["iperf3", "--version"]), ("wrk", ["wrk", "-v"]), ("nginx", ["nginx", "-v"])):
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
            text = (r.stdout.strip() or r.stderr.strip()).splitlines()
        except (OSError, subprocess.SubprocessError):
            text = []
        out[tool] = text[0] if text else "unknown"
    return out


class _Progress(Progress):
    """experiment.Progress, counting tool runs instead of searches."""

    def update(self, what: str, outcome: str) -> None:
        self.done += 1
        elapsed = time.monotonic() - self.t0
        left = elapsed / self.done * (self.total - self.done)
        self.note(f"{self.done}/{self.total} {what}: {outcome}; elapsed {_duration(elapsed)}, "
                  f"about {_duration(left)} left")


def _one(lab: CniLab, exp: CniExperiment, step: Step):
    """Run one step on ``lab``: (tool, result)."""
    _rep, proto, direction, size = step
    client = lab.ns("pod1" if direction == "pod-pod" else "node1")
    if proto == "tcp":
        return "iperf3", run_iperf3(lab, server_ns=lab.ns("pod2"), server_ip=lab.address("pod2"), client_ns=client,
                                    params=exp.grid.iperf)
    target = lab.address("service" if direction == "host-service" else "pod2")
    return "wrk", run_wrk(lab, client_ns=client, url=f"http://{target}/{file_name(size)}", params=exp.grid.wrk)


def _outcome(tool: str, result) -> str:
    if tool == "iperf3":
        return f"{result.goodput_bps / 1e9:.2f} Gbit/s, {result.retransmits} retransmits"
    return f"{result.requests_per_s:,.0f} requests/s, {result.transfer_bytes_per_s * 8 / 1e9:.2f} Gbit/s"


def run_cni_experiment(exp: CniExperiment, records: str | Path, *, source: str | None = None,
                       progress: bool = True, resume: bool | None = None) -> str:
    """Measure every (data path, MTU) of ``exp`` this host can build; append records; return the run id.

    Parameters
    ----------
    exp : CniExperiment
        From :func:`load`.
    records : path
        The records file (JSON Lines, appended to).
    source : str, optional
        The params file, recorded as ``params.source``.
    progress : bool
        One line per tool run (``i/N``, what, result, elapsed, estimate left) on stdout.
    resume : bool, optional
        Continue the records' last run with the same params and code if it was interrupted
        (default; ``NFVLAB_FRESH_RUN=1`` or ``resume=False``: a fresh run).

    Records: a ``run`` record (params with ``fingerprint``, provenance with ``lab`` (kind, tool
    versions)), one ``measurement`` per tool run (labels: ``data_path``, ``link_mtu_bytes``,
    ``pod_mtu_bytes``, ``protocol``, ``direction``, ``file_bytes`` (HTTP; None for TCP),
    ``repetition``, ``segmentation_offload``), a ``not-realizable`` note per (path, MTU) this host
    cannot build and a ``measurement-failed`` note per tool run that failed (the run goes on).

    Raises
    ------
    nfvlab.measure.InputError
        Not root, a tool missing, or an unusable records path: before anything is created.
    """
    if resume is None:
        resume = os.environ.get("NFVLAB_FRESH_RUN", "") not in ("1", "yes", "true")
    records = Path(records)
    problem = output_problem(records, "file")
    if problem:
        raise InputError(f"records {problem}")
    if os.geteuid() != 0:
        raise InputError(ROOT_NEEDED)
    missing = missing_tools()
    if missing:
        raise InputError(missing)
    paths = list(exp.grid.paths())
    why = {p: path_problem(p) for p in paths}
    runnable = [p for p in paths if not why[p]]
    dump = exp.dump()
    dump["fingerprint"] = fingerprint(dump)
    if source:
        dump["source"] = source
    prov_extra = {"lab": {"lab_kind": "embedded", "lab": "cni: two node namespaces cabled by one veth link",
                          "tools": tool_versions()}}
    with HostLock(f"experiment {exp.experiment}", for_run=True):
        previous = _interrupted(records, dump["fingerprint"]) if resume else None
        done = previous[1] if previous else frozenset()
        with RecordWriter(records, exp.experiment, dump, extra_provenance=prov_extra,
                          run_id=previous[0] if previous else None, resumed=previous is not None) as rec:
            if previous is None:
                for p in paths:
                    if why[p]:
                        rec.note(f"not realizable: {why[p]}", kind="not-realizable", data_path=p.data_path,
                                 link_mtu_bytes=p.link_mtu_bytes)
            plan = [(p, [s for s in steps(exp.grid) if _key(_labels(p, s, exp.segmentation_offload)) not in done])
                    for p in runnable]
            total = len(runnable) * len(steps(exp.grid))
            bar = _Progress(exp.experiment, sum(len(s) for _, s in plan), enabled=progress)
            bar.note(f"{len(runnable)} of {len(paths)} (data path, MTU) realizable here, "
                     f"{exp.grid.repetitions} repetition(s): {total} tool runs"
                     + (f"; resuming run {previous[0]}: {total - bar.total} done, {bar.total} to go"
                        if previous else ""))
            for path, todo in plan:
                if todo:
                    _measure_path(exp, path, todo, rec, bar)
            bar.note(f"done: {bar.done} tool runs in {_duration(time.monotonic() - bar.t0)}")
            return rec.run_id


def _measure_path(exp: CniExperiment, path: CniPath, todo: list[Step], rec: RecordWriter, bar: _Progress) -> None:
    with CniLab(path, segmentation_offload=exp.segmentation_offload) as lab:
        if any(s[1] == "http" for s in todo):
            start_nginx(lab, ns=lab.ns("pod2"), bind_ip=lab.address("pod2"), file_bytes=exp.grid.wrk.file_bytes)
        for step in todo:
            labels = _labels(path, step, exp.segmentation_offload)
            rep, proto, direction, size = step
            what = f"{path.label} {proto} {direction}{f' {size} B' if size else ''} rep {rep}"
            try:
                tool, result = _one(lab, exp, step)
            except ToolError as err:
                rec.note(f"measurement failed: {err}", kind="measurement-failed", **labels)
                bar.update(what, f"failed: {err}")
                continue
            rec.measurement(tool, result, **labels)
            bar.update(what, _outcome(tool, result))

