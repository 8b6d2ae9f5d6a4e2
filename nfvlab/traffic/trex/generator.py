"""The TRex generator: trials through a TRex server (stateless mode), same semantics as nfvlab-gen.

The TRex client library is never imported here. lbr-trex-client vendors its own zmq,
yaml and scapy and replaces them in ``sys.modules`` (breaking, e.g., a Jupyter kernel),
so :class:`TrexGenerator` runs :mod:`nfvlab.traffic.trex.worker` as a separate process
with the isolated environment's python (``.venv-trex/bin/python`` at the repository
root, ``$NFVLAB_TREX_PYTHON``, or the ``python`` argument) and exchanges one JSON line
per request with it: connect, one per trial, close.

Trial semantics (the embedded generator's, docs/measurement.md and docs/trex.md):

* ``rate_pps`` is per direction and includes the latency probes:
  ``probes = min(latency_pps, rate // 10)``, load streams get ``rate - probes``. TRex
  keeps latency streams at their own rate and scales the others so that an absolute
  ``"<X>pps"`` multiplier makes the port total X, so the multiplier is ``rate_pps``;
* ``intended_packets = round(rate x duration)`` (load + probes). ``sent_packets`` is what
  TRex's per-stream counters say left the tx port; what it could not send counts as loss;
* ``received_packets`` counts only this trial's test frames: per-stream (pg_id) rx
  counters on the rx port, load and probes. Port counters (which also see ARP/LLDP and
  anything else) are recorded beside them, never used as "received";
* counters are read after traffic stopped and ``settle_s`` passed for frames in flight;
* the server gets :func:`stop_at_s` (the duration + ``stop_tolerance_s``), counted from the
  moment its start was confirmed; then the worker stops it and the frames not sent count as
  loss (CSIT's rule: a late server must not turn "sent late" into "no loss"; a DUT that
  backpressures the server makes it late, as a veth path does). Rates are computed one way:
  sent frames over the intended duration. A trial whose stop came more than
  :data:`LATE_STOP_S` after the deadline (the worker stalled, frames left late) is invalid
  (:attr:`last_schedule`), and a search repeats it; so is one whose server sent short of its
  intended frames by more than :data:`SHORTFALL_BUDGET` (:func:`shortfall_fault`: the
  generator could not keep the rate; within the budget the unsent frames stay loss).
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import selectors
import signal
import subprocess
import threading
import time
from collections import deque
from pathlib import Path
from typing import Iterable, Optional

from nfvlab.linerate import IMIX, FrameSize, mean_frame_bytes
from nfvlab.scenario.topology import Stream
from nfvlab.traffic.base import GeneratorError, Schedule
from nfvlab.traffic.stats import (PERCENTILES, DirectionStats, LatencyStats, encode_histogram,
                                  histogram_of)
from nfvlab.traffic.trex.config import TrexParams

WORKER = Path(__file__).with_name("worker.py")
REPO = Path(__file__).resolve().parents[3]
VENVS = {"v3": ".venv-trex", "v2": ".venv-trex-v2"}
ENV_PYTHON = {"v3": "NFVLAB_TREX_PYTHON", "v2": "NFVLAB_TREX_V2_PYTHON"}

LOAD_SPORT = 1024   # UDP source port of flow 0 (flows use LOAD_SPORT .. + flows - 1)


def first_sport(flows: int) -> int:
    """UDP source port of flow 0: 1024, lowered so that ``flows`` ports fit below 65536."""
    return min(LOAD_SPORT, 65536 - flows)
LOAD_DPORT = 1024
PROBE_DPORT = 7878  # as nfvlab-gen's probes
PROBE_FRAME_IMIX = 64
#: A direction may send this share of its intended frames short (plus one frame of rounding) and still
#: offer its rate, the shortfall counting as loss: the embedded generator's slip budget (its schedule
#: slips by at most 1 % of the duration, so it sends up to 1 % of the frames late). Beyond it the
#: trial is invalid (:func:`shortfall_fault`).
SHORTFALL_BUDGET = 0.01
#: The stop came this long after the deadline (this process stalled: the VM stalls threads for
#: 20-30 ms): frames that left after it would count as offered on time; the trial is invalid.
LATE_STOP_S = 0.02


def stop_at_s(duration_s: float, tolerance_s: float) -> float:
    """When the worker stops a server still sending: the duration + ``tolerance_s``, seconds after
    the server confirmed the start.

    A real v3.0.8 server on af_packet ports (26 Nov 2026, 2 s trials through a tbf-shaped
    bridge of 40,000 pps capacity): its traffic ended 2.004-2.021 s after the start request at
    10-40 kpps in 11 of 12 trials (the twelfth, at 39,000 pps, was stopped with about 1 % of
    its frames unsent: they count as loss); at 41,328 pps the DUT backpressured it and it ran
    2.068 s. Under the former deadline (2 s x 1.01 + 0.05 s) that trial passed with zero loss at
    +3.3 % above capacity.
    """
    return duration_s + tolerance_s


def shortfall_fault(directions: Iterable[DirectionStats]) -> Optional[str]:
    """Why a TRex trial is invalid because the server could not keep its rate, or None.

    A direction whose server sent fewer than its intended frames by more than
    :data:`SHORTFALL_BUDGET` of them (plus one frame of rounding) did not offer the rate: the
    server could not keep it (its own ceiling, or a catch-up it could not finish by the deadline).
    Such a shortfall is the generator's, never scored as the DUT's loss; a shortfall within the
    budget stays loss, as the embedded generator's slip within its budget does."""
    worst = None
    for d in directions:
        short = d.intended_packets - d.sent_packets
        if short > SHORTFALL_BUDGET * d.intended_packets + 1 and (
                worst is None or short / d.intended_packets > worst[0]):
            worst = (short / d.intended_packets, d)
    if worst is None:
        return None
    share, d = worst
    return (f"TRex could not keep the rate: it sent {d.sent_packets} of {d.intended_packets} frames "
            f"({d.tx_port} -> {d.rx_port}, {share:.1%} short, beyond the {SHORTFALL_BUDGET:.0%} slip budget): "
            "the generator's shortfall, not DUT loss")


def schedule(tx_seconds: float, duration_s: float, tolerance_s: float,
             sent_short: bool = False, stop_late_s: float = 0.0, shortfall: Optional[str] = None) -> Schedule:
    """How a TRex trial kept its schedule: invalid when its traffic ended (stopped, or finished) more than
    :data:`LATE_STOP_S` after the deadline, or when the server sent short beyond the slip budget
    (``shortfall``: :func:`shortfall_fault`'s reason); ``sent_short``: the server was stopped at the deadline
    with frames unsent."""
    budget = stop_at_s(duration_s, tolerance_s) - duration_s
    faults = []
    if stop_late_s > LATE_STOP_S:
        faults.append(f"TRex traffic ended {stop_late_s:.3f} s after the {duration_s:g} s trial's deadline "
                      f"(+{budget:g} s): frames sent after it would count as offered on time")
    if shortfall:
        faults.append(shortfall)
    fault = "; ".join(faults) or None
    over = max(0.0, tx_seconds - duration_s)
    return Schedule(stall_s=over, stall_max_s=over, stalls=int(sent_short or fault is not None), budget_s=budget,
                    stall_threshold_s=budget, elapsed_s=tx_seconds, fault=fault, sent_short=sent_short)


def _one_line(text: str) -> str:
    return " ".join(str(text).split()) or "unknown error"


def _build(cls, **values):
    """``cls(**values)`` with only the fields ``cls`` has (stats types may grow optional fields)."""
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in values.items() if k in names})


def pg_ids(direction: int, n_load: int) -> tuple[list[int], int]:
    """Packet-group ids of a direction: load streams 10(d+1)+i, latency stream 10(d+1)+9."""
    base = 10 * (direction + 1)
    return [base + i for i in range(n_load)], base + 9


def _bucket_usec(key: int) -> tuple[float, float]:
    """``[low, high)`` of a TRex latency histogram key, usec (see :func:`histogram_percentile`)."""
    if key == 0:
        return 0.0, 10.0
    return float(key), float(key) + float(10 ** int(math.floor(math.log10(key))))


def histogram_percentile(hist: dict, q: float, lo_usec: float, hi_usec: float) -> Optional[float]:
    """The ``q`` quantile (0..1) in usec of a TRex latency histogram, interpolated in its bucket.

    TRex's histogram (``CTimeHistogram``) has key ``0`` for samples under 10 usec and
    otherwise keys ``k`` standing for [k, k + 10^floor(log10 k)) usec (10, 20 .. 90, 100,
    200 .. 900, 1000 ...). The estimate is linear inside the bucket holding the rank and
    clamped to the measured [min, max].
    """
    buckets = sorted((int(k), int(v)) for k, v in hist.items() if int(v) > 0)
    total = sum(v for _, v in buckets)
    if total == 0:
        return None
    rank = max(1.0, q * total)
    cum = 0
    for key, n in buckets:
        if cum + n >= rank:
            lo, high = _bucket_usec(key)
            value = lo + (high - lo) * (rank - cum) / n
            return min(max(value, lo_usec), hi_usec)
        cum += n
    return hi_usec


#: Points a TRex bucket's count is spread over in the HDR histogram (at most).
SPREAD_POINTS = 100


def trex_hdr_histogram(hist: dict, lo_usec: float, hi_usec: float):
    """TRex's latency histogram as an HDR histogram (nanoseconds), the common form of records.

    TRex keeps only bucket counts (:func:`histogram_percentile` has the buckets), so
    each bucket's count is spread evenly over up to :data:`SPREAD_POINTS` equally
    spaced values across the bucket, clipped to the measured [min, max]: the same
    uniform-within-bucket approximation as the percentiles, so the HDR histogram's
    percentiles match them to within a bucket's hundredth. Not finer than TRex's
    buckets (10 usec below 100 usec, 100 usec below 1 ms, ...).
    """
    values, counts = [], []
    for key, n in sorted((int(k), int(v)) for k, v in hist.items() if int(v) > 0):
        low, high = _bucket_usec(key)
        low = min(max(low, lo_usec), hi_usec)
        high = max(min(high, hi_usec), low)
        points = min(n, SPREAD_POINTS)
        for i in range(points):
            values.append((low + (high - low) * (i + 0.5) / points) * 1000.0)
            counts.append((i + 1) * n // points - i * n // points)  # evenly, remainder spread too
    return histogram_of(values, counts)


class TrexGenerator:
    """Drive ``streams`` (one per direction) through the TRex server of ``params``."""

    name = "trex"

    def __init__(self, streams: list[Stream], params: TrexParams, *,
                 python: Optional[Path] = None) -> None:
        if not streams or len(streams) > 2:
            raise ValueError(f"TRex drives one or two directions (got {len(streams)} streams)")
        if not isinstance(params, TrexParams):
            params = TrexParams.model_validate(params)
        for i, s in enumerate(streams):
            for end, want in ((s.tx, params.ports[i]), (s.rx, params.ports[1 - i])):
                if end.iface.isdigit() and int(end.iface) != want:
                    raise ValueError(f"stream {i} uses TRex port {end} but params.ports make "
                                     f"direction {i} use port {want}")
        self.streams = list(streams)
        self.params = params
        self.python = Path(python) if python else None
        self._proc: Optional[subprocess.Popen] = None
        self._stderr: deque = deque(maxlen=40)
        self._info: Optional[dict] = None
        self.last_trial: Optional[dict] = None
        """Everything TRex reported for the last trial (raw per-pg_id and port counters)."""
        self.last_schedule: Optional[Schedule] = None
        """How the last trial kept its schedule (:func:`schedule`)."""

    # ------------------------------------------------------------ worker process
    def python_for(self, kind: str) -> Path:
        """The python of the isolated environment of client ``kind`` (``v3`` or ``v2``)."""
        if kind == "v3" and self.python:
            return self.python
        env = os.environ.get(ENV_PYTHON[kind])
        if env:
            return Path(env)
        return REPO / VENVS[kind] / "bin" / "python"

    def _spawn(self, kind: str) -> None:
        py = self.python_for(kind)
        if not py.exists():
            hint = "scripts/setup-trex.sh" + (" --v2" if kind == "v2" else "")
            raise GeneratorError(f"TRex client environment {py} is missing: run {hint} "
                                 f"(or set {ENV_PYTHON[kind]})")
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        env.pop("PYTHONPATH", None)   # nothing of this venv may leak into the worker
        self._stderr.clear()
        self._proc = subprocess.Popen(
            [str(py), "-u", str(WORKER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, bufsize=1, env=env, cwd=str(REPO),
            start_new_session=True)
        threading.Thread(target=self._drain, args=(self._proc,), daemon=True).start()

    def _drain(self, proc: subprocess.Popen) -> None:
        for line in proc.stderr:
            if line.strip():
                self._stderr.append(line.rstrip())

    def _call(self, request: dict, timeout_s: float) -> dict:
        proc = self._proc
        if proc is None or proc.poll() is not None:
            raise GeneratorError(self._died())
        try:
            proc.stdin.write(json.dumps(request) + "\n")
            proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise GeneratorError(self._died()) from None
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        try:
            if not sel.select(timeout_s):
                self._kill()
                raise GeneratorError(f"TRex worker did not answer '{request['op']}' within "
                                     f"{timeout_s:.0f} s (server {self.params.server} hung?)")
        finally:
            sel.close()
        line = proc.stdout.readline()
        if not line:
            raise GeneratorError(self._died())
        reply = json.loads(line)
        if not reply.get("ok"):
            err = GeneratorError(_one_line(reply.get("error", "TRex worker failed")))
            err.kind = reply.get("kind")
            raise err
        return reply["result"]

    def _died(self) -> str:
        proc = self._proc
        code = proc.wait(timeout=5) if proc is not None else None
        time.sleep(0.05)  # let the stderr reader catch the last lines
        last = next((ln for ln in reversed(self._stderr) if ln.strip()), "")
        self._proc = None
        return _one_line(f"TRex worker exited ({code}): {last}" if last else
                         f"TRex worker exited ({code})")

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)   # the worker stops traffic and releases ports
            try:
                proc.wait(timeout=self.params.timeout_s + 5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    # ------------------------------------------------------------ connection
    def connect(self) -> dict:
        """Start the worker and connect (idempotent): server version, ports, client used."""
        if self._info is not None and self._proc is not None and self._proc.poll() is None:
            return self._info
        p = self.params
        kinds = ["v3"] if p.client in ("auto", "v3") else ["v2"]
        while True:
            kind = kinds.pop(0)
            self._spawn(kind)
            req = {"op": "connect", "client": kind, "client_path": p.client_path,
                   "server": p.server, "sync_port": p.sync_port, "async_port": p.async_port,
                   "ports": list(p.ports), "timeout_s": p.timeout_s,
                   "l2_dst_macs": p.l2_dst_macs}
            try:
                self._info = self._call(req, timeout_s=4 * p.timeout_s + 30)
                return self._info
            except GeneratorError as e:
                self._kill()
                fallback = (p.client == "auto" and kind == "v3"
                            and getattr(e, "kind", None) == "api_mismatch"
                            and self.python_for("v2").exists())
                if fallback:
                    kinds.append("v2")
                    continue
                raise

    def close(self) -> None:
        """Stop any traffic, release the ports and end the worker."""
        if self._proc is not None and self._proc.poll() is None:
            try:
                self._call({"op": "close"}, timeout_s=self.params.timeout_s + 10)
            except GeneratorError:
                pass
            self._kill()
        self._proc = None
        self._info = None

    def __enter__(self) -> "TrexGenerator":
        self.connect()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    # ------------------------------------------------------------ protocol
    def identity(self) -> dict:
        """Server version, the TRex ports (id and driver), the server host (DP cores) and the DP core
        mask the trials use: what TRex's ceiling depends on, so what calibration is keyed by."""
        info = self.connect()
        ports = ", ".join(
            f"{x}:{(info['ports'].get(str(x)) or {}).get('driver') or '?'}"
            for x in self.params.ports)
        sysinfo = info.get("system") or {}
        host = f"{sysinfo.get('hostname') or self.params.server} ({sysinfo.get('core_type') or '?'}" \
               f", {sysinfo.get('dp_core_count') or '?'} DP cores)"
        mask = self.params.core_mask
        return {"name": self.name, "version": str(info.get("server_version")),
                "ports": ports, "host": host, "core_mask": "all" if mask is None else hex(mask)}

    def describe(self) -> dict:
        p = self.params
        d = {"generator": self.name, "server": f"{p.server}:{p.sync_port}", "ports": list(p.ports),
             "client": p.client, "client_path": p.client_path, "flows": p.flows,
             "latency_pps": p.latency_pps, "core_mask": p.core_mask, "settle_s": p.settle_s,
             "stop_tolerance_s": p.stop_tolerance_s, "l2_dst_macs": p.l2_dst_macs,
             "streams": [s.describe() for s in self.streams]}
        if self._info:
            d.update(server_version=self._info.get("server_version"),
                     client_used=self._info.get("client"),
                     client_version=self._info.get("client_version"),
                     port_info=self._info.get("ports"))
        return d

    def probe_pps(self, rate_pps: float) -> int:
        """Latency probes per second and direction used at ``rate_pps`` (part of the rate)."""
        return int(min(self.params.latency_pps, rate_pps // 10))

    def trial_request(self, rate_pps: float, duration_s: float, frame_size: FrameSize,
                      bidirectional: bool = True) -> dict:
        """The worker request of one trial: streams, rates and packet-group ids per direction."""
        mean_frame_bytes(frame_size)  # validates the size
        probes = self.probe_pps(rate_pps)
        load_pps = rate_pps - probes
        if isinstance(frame_size, str):
            total = sum(IMIX.weights)
            mix = [(size, load_pps * w / total) for size, w in zip(IMIX.sizes, IMIX.weights)]
            probe_frame = PROBE_FRAME_IMIX
        else:
            mix = [(int(frame_size), load_pps)]
            probe_frame = int(frame_size)
        dirs = []
        for i, s in enumerate(self.streams[: 2 if bidirectional else 1]):
            load_ids, lat_id = pg_ids(i, len(mix))
            dirs.append({
                "tx": self.params.ports[i], "rx": self.params.ports[1 - i],
                "smac": s.smac, "dmac": s.dmac, "sip": s.sip, "dip": s.dip,
                "sport": first_sport(self.params.flows), "dport": LOAD_DPORT,
                "flows": self.params.flows,
                "load": [{"pg_id": pg, "frame_bytes": size, "pps": pps}
                         for pg, (size, pps) in zip(load_ids, mix)],
                "latency": ({"pg_id": lat_id, "frame_bytes": probe_frame, "pps": probes,
                             "dport": PROBE_DPORT} if probes > 0 else None),
            })
        return {"op": "trial", "mult_pps": float(rate_pps), "duration_s": float(duration_s),
                "settle_s": self.params.settle_s,
                "stop_at_s": stop_at_s(float(duration_s), self.params.stop_tolerance_s),
                "core_mask": self.params.core_mask, "directions": dirs}

    def run(self, rate_pps: float, duration_s: float, frame_size: FrameSize,
            bidirectional: bool = True) -> tuple[DirectionStats, ...]:
        if not rate_pps > 0 or not duration_s > 0:
            raise GeneratorError(f"TRex trial needs rate_pps > 0 and duration_s > 0 "
                                 f"(got {rate_pps}, {duration_s})")
        try:
            req = self.trial_request(rate_pps, duration_s, frame_size, bidirectional)
        except ValueError as e:
            raise GeneratorError(_one_line(e)) from None
        self.connect()
        p = self.params
        timeout = stop_at_s(duration_s, p.stop_tolerance_s) + p.settle_s + 4 * p.timeout_s + 30
        try:
            res = self._call(req, timeout_s=timeout)
        except BaseException as e:
            if not isinstance(e, GeneratorError):
                self._kill()   # Ctrl-C: the worker stops traffic and releases the ports
            raise
        self.last_trial = {"request": req, "result": res}
        dirs = self.directions(req, res, rate_pps, duration_s)
        self.last_schedule = schedule(
            float(res.get("tx_seconds") or duration_s), duration_s, p.stop_tolerance_s,
            sent_short=res.get("stopped_by") == "client"
            and any(d.sent_packets < d.intended_packets for d in dirs),
            stop_late_s=float(res.get("stop_late_s") or 0.0), shortfall=shortfall_fault(dirs))
        return dirs

    # ------------------------------------------------------------ counters
    def directions(self, req: dict, res: dict, rate_pps: float,
                   duration_s: float) -> tuple[DirectionStats, ...]:
        """DirectionStats of one trial from the worker's raw TRex counters."""
        flow = res["pgid_stats"].get("flow_stats") or {}
        lat = res["pgid_stats"].get("latency") or {}
        intended = round(rate_pps * duration_s)
        out = []
        for i, d in enumerate(req["directions"]):
            rx = str(d["rx"])
            ids = [x["pg_id"] for x in d["load"]]
            lat_id = d["latency"]["pg_id"] if d["latency"] else None
            counts = {}
            for pg in ids + ([lat_id] if lat_id is not None else []):
                e = flow.get(str(pg))
                if e is None:
                    raise GeneratorError(f"TRex reported no counters for pg_id {pg} "
                                         f"(port {d['tx']}): stream not running?")
                counts[pg] = (sum(int(v) for v in e.get("tp", {}).values()),
                              int(e.get("rp", {}).get(rx, 0)))
            sent = sum(c[0] for c in counts.values())
            received = sum(c[1] for c in counts.values())
            latency = self._latency(counts.get(lat_id, (0, 0)),
                                    (lat.get(str(lat_id)) or {}).get("lat") if lat_id else None)
            port_rx = (res.get("port_stats", {}).get(rx) or {}).get("ipackets")
            foreign = max(0, int(port_rx) - received) if isinstance(port_rx, int) else None
            s = self.streams[i]
            out.append(_build(
                DirectionStats, tx_port=str(s.tx), rx_port=str(s.rx), intended_packets=intended,
                sent_packets=sent, received_packets=received, duration_s=duration_s,
                latency=latency, foreign_packets=foreign, port_rx_packets=port_rx))
        return tuple(out)

    @staticmethod
    def _latency(counts: tuple, stats: Optional[dict]) -> LatencyStats:
        sent, received = counts
        if not stats or received == 0:
            return _build(LatencyStats, probes_sent=sent, probes_received=received)
        hist = {int(k): int(v) for k, v in (stats.get("histogram") or {}).items()}
        lo, hi = float(stats.get("total_min", 0)), float(stats.get("total_max", 0))
        if lo > hi:   # TRex reports an unset minimum as a huge number
            lo = 0.0

        def ns(x):
            return None if x is None else float(x) * 1000.0

        pct = {k: ns(histogram_percentile(hist, q / 100, lo, hi)) for k, q in PERCENTILES.items()}
        return _build(
            LatencyStats, probes_sent=sent, probes_received=received,
            min_ns=ns(lo), avg_ns=ns(stats.get("average")), max_ns=ns(hi), **pct,
            jitter_ns=ns(stats.get("jit")),
            hdr_histogram=encode_histogram(trex_hdr_histogram(hist, lo, hi)))
