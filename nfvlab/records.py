"""Raw results, written durably as they happen, as JSON Lines.

A run appends records to one ``.jsonl`` file: one JSON object per line, UTF-8.
Every object has a ``type``:

``run``
    First record of a run: ``run_id``, ``experiment``, ``started_at``,
    ``params``, ``provenance`` (see :func:`nfvlab.provenance.collect`).
``trial``
    One :class:`~nfvlab.trial.TrialResult` (``result``) with its ``seq`` number
    in the run and free ``labels`` (search, context).
``search``
    A search's result, an opaque dict (``result``), with ``labels``. nfvlab
    writes :meth:`nfvlab.search.SearchResult.to_dict` without the trials: the
    RFC 9971 goal applied (``goal_*``), the relevant bounds, the conditional
    throughput, ``flags`` / ``regular`` (rates per direction, packets/s; see
    ``docs/records.md``). Older records lack some of these fields.
``measurement``
    One run of a benchmark tool (``tool``: ``iperf3``, ``wrk``; experiment E),
    its parsed ``result`` (a dict, e.g. :class:`nfvlab.traffic.tcp.IperfResult`)
    with ``labels``.
``note``
    Free ``text`` with ``labels`` (e.g. ``"not realizable: no SR-IOV"``).
``end``
    Last record of a run: ``ended_at``, ``status`` (``completed``, ``failed``
    or ``interrupted``) and ``error``.

Durability: each record is serialized first and written with a single
``write(2)`` on a file opened with ``O_APPEND``, then ``fsync``-ed before the
call returns. A process killed at any moment (even ``SIGKILL``) therefore leaves
every earlier record complete on disk and at most one torn final line, which
:func:`read_records` skips with a warning. A run without an ``end`` record was
killed (``status`` ``incomplete`` in :func:`runs_frame`). A writer only ever
appends. A fresh experiment run first moves the file's earlier runs, all but the latest
completed one, to ``<file>.history/<run_id>.jsonl`` (:func:`archive_earlier_runs`, byte for
byte): a records file holds the run being measured and the one before it (the report's
run-to-run changes), so a published run's records stay one or two runs' size. See
``docs/records.md`` for the full schema.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import uuid
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Optional, Union

from nfvlab.provenance import utc_now
from nfvlab.system import signals
from nfvlab.trial import TrialResult

if TYPE_CHECKING:  # pandas is imported lazily: writing records must stay cheap
    import pandas as pd

PathLike = Union[str, os.PathLike]

#: Format version, stored in every ``run`` record as ``format``.
FORMAT_VERSION = 1

RECORD_TYPES = ("run", "trial", "search", "measurement", "note", "end")

#: Columns of :func:`trials_frame` other than labels and per-direction latency.
TRIAL_COLUMNS: tuple[str, ...] = (
    "file",
    "run_id",
    "experiment",
    "seq",
    "time",
    "kind",
    "started_at",
    "rate_pps",
    "duration_s",
    "frame_size",
    "directions",
    "intended_packets",
    "sent_packets",
    "received_packets",
    "lost_packets",
    "foreign_packets",
    "duplicate_packets",
    "loss_ratio",
    "offered_rate_pps",
    "forwarding_rate_pps",
    "probes_sent",
    "probes_received",
    "latency_p50_ns",
    "latency_p99_ns",
    "latency_max_ns",
    "valid",
    "invalid_reason",
    "extra",
)


class RecordsError(ValueError):
    """A records file is corrupt (not a torn final line) or a record is invalid."""


def new_run_id() -> str:
    """A unique, time-sortable run id, e.g. ``20250102T030405Z-1a2b3c4d``."""
    stamp = utc_now()[:19].replace("-", "").replace(":", "")
    return f"{stamp}Z-{uuid.uuid4().hex[:8]}"


def _json_default(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    if isinstance(obj, (set, frozenset)):
        return sorted(obj, key=repr)
    if hasattr(obj, "item") and callable(obj.item):  # numpy scalar
        return obj.item()
    if hasattr(obj, "tolist") and callable(obj.tolist):  # numpy array
        return obj.tolist()
    raise TypeError(f"object of type {type(obj).__name__} is not JSON serializable: {obj!r}")


def _encode(record: dict) -> bytes:
    """One record as one UTF-8 line, ending in a newline and containing no other."""
    try:
        text = json.dumps(record, ensure_ascii=False, default=_json_default, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise RecordsError(f"{record.get('type')} record is not JSON serializable: {exc}") from exc
    # json.dumps escapes control characters, so the line cannot contain "\n".
    return (text + "\n").encode("utf-8")


def _check_labels(labels: dict) -> dict:
    for key in labels:
        if key in TRIAL_COLUMNS:
            raise ValueError(f"label {key!r} clashes with a trials_frame column; choose another name")
    return dict(labels)


class RecordWriteError(RuntimeError):
    """A record could not be written (no space, read-only file system, no permission).

    Its text is one line naming the file and the cause. The record being
    written was removed again: the file never ends in a torn line.
    """


class RecordWriter:
    """Append the records of one run to a JSON Lines file, durably.

    Use as a context manager: entering writes the ``run`` record, leaving writes
    the ``end`` record with status ``completed``, ``interrupted``
    (``KeyboardInterrupt``) or ``failed`` (any other exception, whose text goes
    to ``error``); exceptions always propagate.

    Parameters
    ----------
    path : str or os.PathLike
        The ``.jsonl`` file; created (with parent directories) if missing and
        otherwise appended to (the writer never truncates it).
    experiment : str
        Name of the experiment.
    params : dict, optional
        The run's parameters.
    provenance : dict, optional
        Defaults to :func:`nfvlab.provenance.collect` of ``params``.
    run_id : str, optional
        Defaults to :func:`new_run_id`.
    extra_provenance : dict, optional
        Merged into the provenance (e.g. ``lab``: the backend's facts,
        ``generator``: its identity and calibrated ceilings).
    resumed : bool
        This continues the interrupted run ``run_id``: its ``run`` record says
        ``"resumed": true`` and readers treat both parts as one run.
    first_seq : int
        ``seq`` of the first trial (the trials the interrupted part recorded).

    Notes
    -----
    Each record is one ``write(2)`` of a whole line on an ``O_APPEND`` file
    descriptor followed by ``fsync``, so a killed process loses at most the
    record being written. One writer per file at a time is recommended; on a
    local Linux file system concurrent appenders do not interleave within lines.
    """

    def __init__(
        self,
        path: PathLike,
        experiment: str,
        params: Optional[dict] = None,
        provenance: Optional[dict] = None,
        *,
        run_id: Optional[str] = None,
        extra_provenance: Optional[dict] = None,
        resumed: bool = False,
        first_seq: int = 0,
    ) -> None:
        self.path = Path(path)
        self.experiment = experiment
        self.params = dict(params) if params is not None else {}
        if provenance is None:
            from nfvlab.provenance import collect

            provenance = collect(self.params)
        self.provenance = {**provenance, **(extra_provenance or {})}
        self.run_id = run_id or new_run_id()
        self.resumed = resumed
        self.trials = first_seq
        self._fd: Optional[int] = None
        self._ended = False

    # -- low level ----------------------------------------------------------
    def _open(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            created = not self.path.exists()
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as err:
            raise RecordWriteError(f"records file {self.path}: cannot open it for appending: "
                                   f"{err.strerror or err}") from None
        if created:  # make the new directory entry itself durable
            _fsync_dir(self.path.parent)
        else:
            # A writer killed mid-record left a torn line without its newline:
            # end it so our first record starts on a line of its own.
            size = os.fstat(self._fd).st_size
            if size > 0:
                with open(self.path, "rb") as f:
                    f.seek(size - 1)
                    if f.read(1) != b"\n":
                        self._write_bytes(b"\n")

    def _write_bytes(self, data: bytes) -> None:
        assert self._fd is not None
        start = os.lseek(self._fd, 0, os.SEEK_END)  # where this record begins (O_APPEND)
        try:
            # A signal must not leave half a line: it is raised once the line is down.
            with signals.deferred():
                view = memoryview(data)
                while view:  # a regular file only writes short on ENOSPC/EFBIG
                    n = os.write(self._fd, view)
                    view = view[n:]
                os.fsync(self._fd)
        except OSError as err:
            try:
                os.ftruncate(self._fd, start)  # no torn record (truncating needs no space)
            except OSError:
                pass
            raise RecordWriteError(
                f"records file {self.path}: {err.strerror or err} while recording; the run stopped "
                "(free space or fix permissions, then re-run: an experiment resumes)") from None
        signals.checkpoint()

    def _write(self, record: dict) -> dict:
        if self._fd is None or self._ended:
            raise RuntimeError("RecordWriter is not open: use it as a context manager")
        self._write_bytes(_encode(record))
        return record

    # -- context manager ----------------------------------------------------
    def __enter__(self) -> "RecordWriter":
        if self._fd is not None:
            raise RuntimeError("RecordWriter already entered")
        self._open()
        try:
            self._write(
                {
                    "type": "run",
                    "format": FORMAT_VERSION,
                    "run_id": self.run_id,
                    "experiment": self.experiment,
                    "started_at": utc_now(),
                    "params": self.params,
                    "provenance": self.provenance,
                    **({"resumed": True} if self.resumed else {}),
                }
            )
        except BaseException:
            self._close()
            raise
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is None:
            status, error = "completed", None
        elif issubclass(exc_type, KeyboardInterrupt):
            status, error = "interrupted", _describe(exc_type, exc)
        elif issubclass(exc_type, SystemExit) and getattr(exc, "code", None) in (None, 0):
            status, error = "completed", None
        else:
            status, error = "failed", _describe(exc_type, exc)
        try:
            if self._fd is not None and not self._ended:
                self._write(
                    {
                        "type": "end",
                        "run_id": self.run_id,
                        "ended_at": utc_now(),
                        "status": status,
                        "error": error,
                        "trials": self.trials,
                    }
                )
        except RecordWriteError:
            if exc_type is None:
                raise
            # The run already failed (often: the same full disk); that error is the one to show.
        finally:
            self._ended = True
            self._close()
        return False

    def _close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    # -- records ------------------------------------------------------------
    def trial(self, result: TrialResult, **labels: Any) -> dict:
        """Record one trial; ``seq`` counts the run's trials from 0.

        ``labels`` (JSON-serializable; e.g. ``search="mlr", vnf="ovs"``) become
        columns of :func:`trials_frame`, so they may not reuse its column names.
        Returns the record written.
        """
        record = {
            "type": "trial",
            "run_id": self.run_id,
            "seq": self.trials,
            "time": utc_now(),
            "labels": _check_labels(labels),
            "result": result.to_dict(),
        }
        self._write(record)
        self.trials += 1
        return record

    def search(self, result: dict, **labels: Any) -> dict:
        """Record a search's result (an opaque JSON-serializable dict).

        Unlike trial labels, these never become :func:`trials_frame` columns, so
        any name is allowed (e.g. ``frame_size``).
        """
        return self._write(
            {
                "type": "search",
                "run_id": self.run_id,
                "time": utc_now(),
                "labels": dict(labels),
                "result": dict(result),
            }
        )

    def measurement(self, tool: str, result: Any, **labels: Any) -> dict:
        """Record one benchmark-tool run: ``tool`` (e.g. ``iperf3``), its parsed ``result``, ``labels``.

        ``result`` is a dict or a dataclass (stored as its fields); labels are free, as for searches.
        """
        return self._write(
            {
                "type": "measurement",
                "run_id": self.run_id,
                "time": utc_now(),
                "tool": str(tool),
                "labels": dict(labels),
                "result": dataclasses.asdict(result) if dataclasses.is_dataclass(result) else dict(result),
            }
        )

    def note(self, text: str, **labels: Any) -> dict:
        """Record free text, e.g. ``"not realizable: <reason>"``."""
        return self._write(
            {
                "type": "note",
                "run_id": self.run_id,
                "time": utc_now(),
                "labels": dict(labels),
                "text": str(text),
            }
        )


def _describe(exc_type, exc) -> str:
    text = str(exc) if exc is not None else ""
    return f"{exc_type.__name__}: {text}" if text else exc_type.__name__


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def history_dir(path: PathLike) -> Path:
    """Where :func:`archive_earlier_runs` keeps a records file's earlier runs: ``<file>.history/``."""
    path = Path(path)
    return path.with_name(path.name + ".history")


def _write_atomically(path: Path, data: bytes) -> None:
    """``path`` holds ``data`` or what it held before, whenever the process is killed."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def archive_earlier_runs(path: PathLike, keep: int = 1) -> list[str]:
    """Move every run of the records file ``path`` but its last ``keep`` completed runs to
    :func:`history_dir` (one ``<run_id>.jsonl`` per run, its lines byte for byte); returns the run
    ids moved, oldest first.

    Called before a fresh run is appended (never before a resumed one: an interrupted run stays
    with its file). Safe against a kill at any point: each history file is written whole before the
    records file is replaced by its shortened copy, so a repeated call rewrites the same history
    files and loses nothing. A corrupt line refuses (:class:`RecordsError`) before anything moves;
    a torn line left by a killed writer is dropped, as :func:`read_records` skips it.
    """
    path = Path(path)
    if not path.exists():
        return []
    read_records(path)  # refuses a corrupt file before anything moves (its torn-line rule is the one reading uses)
    by_run: dict[str, list[bytes]] = {}
    completed: list[str] = []
    for raw in path.read_bytes().split(b"\n"):
        try:
            record = _parse_line(raw)
        except (ValueError, UnicodeDecodeError):
            continue  # blank or torn (read_records accepted it as torn)
        run_id = str(record.get("run_id"))
        by_run.setdefault(run_id, []).append(raw + b"\n")
        if record["type"] == "end" and record.get("status") == "completed":
            completed.append(run_id)
    kept = set(completed[-keep:]) if keep > 0 else set()
    moved = [r for r in by_run if r not in kept]
    if not moved:
        return []
    history = history_dir(path)
    history.mkdir(parents=True, exist_ok=True)
    for run_id in moved:
        _write_atomically(history / f"{run_id}.jsonl", b"".join(by_run[run_id]))
    _write_atomically(path, b"".join(line for r in by_run if r in kept for line in by_run[r]))
    return moved


# -- reading -------------------------------------------------------------------
def _parse_line(raw: bytes) -> dict:
    obj = json.loads(raw.decode("utf-8"))
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
    if obj.get("type") not in RECORD_TYPES:
        raise ValueError(f"unknown record type {obj.get('type')!r}")
    return obj


def read_records(path: PathLike) -> list[dict]:
    """All records of a JSON Lines records file, in file order.

    A torn line left by a killed writer -- the final line of the file, or a line
    directly followed by the ``run`` record of a later run appended to the same
    file -- is skipped with a :class:`RuntimeWarning`. Any other unparsable
    line raises :class:`RecordsError` naming the file and line number. Blank
    lines are ignored.
    """
    path = Path(path)
    lines = path.read_bytes().split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    records: list[dict] = []
    pending: Optional[tuple[int, Exception]] = None  # torn line awaiting a verdict
    for lineno, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            record = _parse_line(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            if pending is not None:
                _corrupt(path, *pending)
            pending = (lineno, exc)
            continue
        if pending is not None:
            if record["type"] != "run":
                _corrupt(path, *pending)
            _warn_torn(path, pending[0], "before a new run")
            pending = None
        records.append(record)
    if pending is not None:
        _warn_torn(path, pending[0], "at the end of the file")
    return records


def records_by_run(path: PathLike) -> dict[str, list[dict]]:
    """The records of ``path`` (:func:`read_records`) by ``run_id``: runs in the order they first
    appear, each run's records in file order; ``{}`` when the file does not exist."""
    path = Path(path)
    runs: dict[str, list[dict]] = {}
    if path.exists():
        for record in read_records(path):
            runs.setdefault(record["run_id"], []).append(record)
    return runs


def _corrupt(path: Path, lineno: int, exc: Exception) -> None:
    raise RecordsError(f"{path}:{lineno}: corrupt record: {exc}")


def _warn_torn(path: Path, lineno: int, where: str) -> None:
    warnings.warn(
        f"{path}:{lineno}: skipping truncated record {where} (writer was killed while writing it)",
        RuntimeWarning,
        stacklevel=3,
    )


def _as_paths(paths: Union[PathLike, Iterable[PathLike]]) -> list[Path]:
    if isinstance(paths, (str, os.PathLike)):
        return [Path(paths)]
    return [Path(p) for p in paths]


def _worst(values: list[Optional[float]]) -> float:
    present = [v for v in values if v is not None]
    return max(present) if present else math.nan


def _nan(v: Optional[float]) -> float:
    return math.nan if v is None else v


def trials_frame(paths: Union[PathLike, Iterable[PathLike]]) -> "pd.DataFrame":
    """One row per ``trial`` record of one or more records files.

    Parameters
    ----------
    paths : path or iterable of paths
        Records files, read with :func:`read_records`.

    Returns
    -------
    pandas.DataFrame
        Rows in file order, with columns:

        file : str
            The records file.
        run_id : str
        experiment : str
            From the run's ``run`` record (NaN if it is missing).
        seq : int
            Trial number within the run, from 0.
        time : datetime64 (UTC)
            When the record was written.
        kind : str
            ``trial`` or ``warmup``.
        started_at : datetime64 (UTC)
            When the trial's traffic started (NaT if not given).
        <label> : object
            One column per label key used in any trial (missing -> NaN), placed
            after ``started_at``.
        rate_pps : float
            Intended rate per direction, packets/s.
        duration_s : float
            Intended duration, s.
        frame_size : int or str
            Frame size in bytes, or a named mix such as ``"imix"``.
        directions : int
            Number of traffic directions.
        intended_packets, sent_packets, received_packets, lost_packets : int
            Load packet counters summed over directions (lost = intended -
            received, never negative per direction).
        loss_ratio : float
            (intended - received) / intended, 0..1.
        offered_rate_pps, forwarding_rate_pps : float
            Sent and received packets/s per direction (mean over directions).
        probes_sent, probes_received : int
            Latency probes, summed over directions.
        latency_p50_ns, latency_p99_ns, latency_max_ns : float
            Worst (largest) over directions of each direction's one-way latency
            median, 99th percentile and maximum, ns; NaN if no probe came back.
        valid : bool
            False when the generator did not offer the load on schedule (not a
            measurement; docs/methodology.md, "Invalid trials"); True in older records.
        invalid_reason : str or None
            One line: why the trial is invalid.
        extra : dict
            The trial's free-form details.
        d<i>_tx, d<i>_rx : str
            Ports of direction ``i`` (``i`` from 0 to the most directions of any
            trial minus one; missing -> NaN).
        d<i>_p50_ns, d<i>_p99_ns : float
            Latency median and 99th percentile of direction ``i``, ns.
        d<i>_loss_ratio : float
            Loss ratio of direction ``i``.
    """
    import pandas as pd

    rows: list[dict] = []
    label_keys: dict[str, None] = {}
    max_dirs = 0
    for path in _as_paths(paths):
        experiments: dict[str, Any] = {}
        for rec in read_records(path):
            if rec["type"] == "run":
                experiments[rec.get("run_id")] = rec.get("experiment")
            if rec["type"] != "trial":
                continue
            res = rec["result"]
            dirs = res.get("directions", [])
            lats = [d.get("latency") or {} for d in dirs]
            intended = res.get("intended_packets", sum(d["intended_packets"] for d in dirs))
            received = res.get("received_packets", sum(d["received_packets"] for d in dirs))
            row: dict[str, Any] = {
                "file": str(path),
                "run_id": rec.get("run_id"),
                "experiment": experiments.get(rec.get("run_id"), math.nan),
                "seq": rec.get("seq"),
                "time": rec.get("time"),
                "kind": res.get("kind", "trial"),
                "started_at": res.get("started_at") or None,
                "rate_pps": res.get("rate_pps"),
                "duration_s": res.get("duration_s"),
                "frame_size": res.get("frame_size"),
                "directions": len(dirs),
                "intended_packets": intended,
                "sent_packets": res.get("sent_packets", sum(d["sent_packets"] for d in dirs)),
                "received_packets": received,
                "lost_packets": sum(
                    max(0, d["intended_packets"] - d["received_packets"]) for d in dirs
                ),
                # Frames without the trial's signature, and test frames seen twice (0 in older records).
                "foreign_packets": sum(d.get("foreign_packets") or 0 for d in dirs),
                "duplicate_packets": sum(d.get("duplicate_packets") or 0 for d in dirs),
                "loss_ratio": res.get("loss_ratio"),
                "offered_rate_pps": res.get("offered_rate_pps"),
                "forwarding_rate_pps": res.get("forwarding_rate_pps"),
                "probes_sent": sum(lat.get("probes_sent", 0) for lat in lats),
                "probes_received": sum(lat.get("probes_received", 0) for lat in lats),
                "latency_p50_ns": _worst([lat.get("p50_ns") for lat in lats]),
                "latency_p99_ns": _worst([lat.get("p99_ns") for lat in lats]),
                "latency_max_ns": _worst([lat.get("max_ns") for lat in lats]),
                "valid": bool(res.get("valid", True)),
                "invalid_reason": res.get("invalid_reason"),
                "extra": res.get("extra", {}),
            }
            for i, (d, lat) in enumerate(zip(dirs, lats)):
                row[f"d{i}_tx"] = d.get("tx_port")
                row[f"d{i}_rx"] = d.get("rx_port")
                row[f"d{i}_p50_ns"] = _nan(lat.get("p50_ns"))
                row[f"d{i}_p99_ns"] = _nan(lat.get("p99_ns"))
                di = d["intended_packets"]
                row[f"d{i}_loss_ratio"] = (
                    max(0, di - d["received_packets"]) / di if di > 0 else 0.0
                )
            max_dirs = max(max_dirs, len(dirs))
            labels = rec.get("labels") or {}
            for key, value in labels.items():
                col = f"label_{key}" if key in TRIAL_COLUMNS else key
                label_keys.setdefault(col, None)
                row[col] = value
            rows.append(row)

    base = list(TRIAL_COLUMNS)
    at = base.index("started_at") + 1
    dir_cols = [
        f"d{i}_{c}" for i in range(max_dirs) for c in ("tx", "rx", "p50_ns", "p99_ns", "loss_ratio")
    ]
    columns = base[:at] + list(label_keys) + base[at:] + dir_cols
    df = pd.DataFrame(rows, columns=columns)
    for col in ("time", "started_at"):
        df[col] = pd.to_datetime(df[col], utc=True, errors="coerce", format="ISO8601")
    for col in ("seq", "directions", "intended_packets", "sent_packets", "received_packets",
                "lost_packets", "foreign_packets", "duplicate_packets", "probes_sent", "probes_received"):
        if not df[col].isna().any():
            df[col] = df[col].astype("int64")
    for col in ("rate_pps", "duration_s", "loss_ratio", "offered_rate_pps", "forwarding_rate_pps",
                "latency_p50_ns", "latency_p99_ns", "latency_max_ns",
                *[c for c in dir_cols if c.endswith(("_ns", "_loss_ratio"))]):
        df[col] = df[col].astype("float64")
    return df


#: Columns of :func:`runs_frame`.
RUN_COLUMNS: tuple[str, ...] = (
    "file",
    "run_id",
    "experiment",
    "status",
    "error",
    "started_at",
    "ended_at",
    "elapsed_s",
    "trials",
    "searches",
    "measurements",
    "notes",
    "hostname",
    "kernel",
    "nfvlab_version",
    "git_revision",
    "git_dirty",
    "params",
    "provenance",
)


def runs_frame(paths: Union[PathLike, Iterable[PathLike]]) -> "pd.DataFrame":
    """One row per run (``run`` record, or run id seen without one) in the files.

    Parameters
    ----------
    paths : path or iterable of paths
        Records files, read with :func:`read_records`.

    Returns
    -------
    pandas.DataFrame
        Rows in order of first appearance, with columns:

        file : str
        run_id : str
        experiment : str
        status : str
            ``completed``, ``failed`` or ``interrupted`` from the ``end``
            record, or ``incomplete`` when the run has none (the process was
            killed, or is still running).
        error : str
            Exception text of a failed or interrupted run, else None.
        started_at, ended_at : datetime64 (UTC)
            ``ended_at`` is NaT for an incomplete run.
        elapsed_s : float
            ``ended_at - started_at`` in seconds (NaN if incomplete).
        trials, searches, measurements, notes : int
            Numbers of such records in the run.
        hostname, kernel, nfvlab_version, git_revision, git_dirty
            Copied from the provenance for convenience.
        params, provenance : dict
            As recorded in the ``run`` record.
    """
    import pandas as pd

    runs: dict[tuple[str, Any], dict] = {}
    for path in _as_paths(paths):
        for rec in read_records(path):
            key = (str(path), rec.get("run_id"))
            row = runs.get(key)
            if row is None:
                row = runs[key] = {
                    "file": str(path),
                    "run_id": rec.get("run_id"),
                    "status": "incomplete",
                    "error": None,
                    "trials": 0,
                    "searches": 0,
                    "measurements": 0,
                    "notes": 0,
                }
            kind = rec["type"]
            if kind == "run":
                prov = rec.get("provenance") or {}
                row.update(
                    experiment=rec.get("experiment"),
                    started_at=rec.get("started_at"),
                    params=rec.get("params"),
                    provenance=prov,
                    **{k: prov.get(k) for k in
                       ("hostname", "kernel", "nfvlab_version", "git_revision", "git_dirty")},
                )
            elif kind == "end":
                row.update(status=rec.get("status"), error=rec.get("error"),
                           ended_at=rec.get("ended_at"))
            else:
                row[{"trial": "trials", "search": "searches", "measurement": "measurements",
                     "note": "notes"}[kind]] += 1
    df = pd.DataFrame(list(runs.values()), columns=list(RUN_COLUMNS))
    for col in ("started_at", "ended_at"):
        df[col] = pd.to_datetime(df[col], utc=True, errors="coerce", format="ISO8601")
    df["elapsed_s"] = (df["ended_at"] - df["started_at"]).dt.total_seconds()
    for col in ("trials", "searches", "measurements", "notes"):
        df[col] = df[col].astype("int64")
    return df
