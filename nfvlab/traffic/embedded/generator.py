"""The embedded generator: ``nfvlab-gen`` (C, AF_PACKET) on lab-created ports.

The intended rate is what the DUT is offered, probes included: a trial at
``rate_pps`` sends ``rate_pps - probe_pps`` load frames/s plus ``probe_pps``
timestamped latency probes/s (probes take at most a tenth of the rate). Counting
probes as offered load matters: otherwise a DUT of capacity C looks like
C - probe_pps (seen: -1.4 % on a 72 kpps path with 1 kpps of probes).

Counting: what a port *received* is its interface rx counter delta (load and
probes), read before the generator starts and after it has exited (it waits for
in-flight probes), never while traffic runs. Packets the generator could not
send by the deadline (kernel backpressure) are reported as ``intended - sent``
and count as loss.
"""
from __future__ import annotations

import json
import signal
import subprocess
from typing import Optional, Protocol

from nfvlab.linerate import FrameSize
from nfvlab.scenario.topology import Port, Stream
from nfvlab.system import netns as nl
from nfvlab.system.host import host_identity
from nfvlab.traffic.base import GeneratorError
from nfvlab.traffic.embedded.binary import gen_binary
from nfvlab.traffic.stats import DirectionStats, LatencyStats


class ProcessTracker(Protocol):
    def track_process(self, pid: int, cmd: str): ...
    def untrack_process(self, rec) -> None: ...


def identity(cpu: Optional[int] = 0) -> dict:
    """Binary (by source hash), port kind, TX CPU and host: what the ceiling depends on."""
    return {"name": EmbeddedGenerator.name, "version": gen_binary().name.rsplit("-", 1)[-1],
            "ports": "af_packet on veth", "cpu": "any" if cpu is None else str(cpu), "host": host_identity()}


class EmbeddedGenerator:
    """Drive ``streams`` (one per direction) with ``nfvlab-gen``."""

    name = "nfvlab-gen"

    def __init__(
        self,
        streams: list[Stream],
        *,
        flows: int = 1,
        latency_pps: int = 1000,
        cpu: Optional[int] = 0,
        settle_ms: int = 100,
        tracker: Optional[ProcessTracker] = None,
    ) -> None:
        if not streams:
            raise ValueError("no streams to drive")
        self.streams = streams
        self.flows = flows
        self.latency_pps = latency_pps
        self.cpu = cpu
        self.settle_ms = settle_ms
        self.tracker = tracker
        self.binary = gen_binary()

    def identity(self) -> dict:
        return identity(self.cpu)

    def describe(self) -> dict:
        return {
            "generator": self.name,
            "binary": self.binary.name,
            "flows": self.flows,
            "latency_pps": self.latency_pps,
            "cpu": self.cpu,
            "streams": [s.describe() for s in self.streams],
        }

    def probe_pps(self, rate_pps: float) -> int:
        """Latency probes per second and direction used at ``rate_pps`` (part of the rate)."""
        return int(min(self.latency_pps, rate_pps // 10))

    def command(self, rate_pps: float, duration_s: float, frame_size: FrameSize,
                bidirectional: bool) -> list[str]:
        probes = self.probe_pps(rate_pps)
        load_pps = rate_pps - probes
        cmd = [str(self.binary), "--duration-s", f"{duration_s:g}", "--flows", str(self.flows),
               "--latency-pps", str(probes), "--settle-ms", str(self.settle_ms)]
        cmd += ["--imix"] if isinstance(frame_size, str) else ["--frame-size", str(frame_size)]
        if self.cpu is not None:
            cmd += ["--cpu", str(self.cpu)]
        for s in self.streams[: 2 if bidirectional else 1]:
            cmd += ["--stream", f"tx={s.tx},rx={s.rx},rate={load_pps:.3f},smac={s.smac},"
                                f"dmac={s.dmac},sip={s.sip},dip={s.dip}"]
        return cmd

    def run(self, rate_pps: float, duration_s: float, frame_size: FrameSize,
            bidirectional: bool = True) -> tuple[DirectionStats, ...]:
        streams = self.streams[: 2 if bidirectional else 1]
        ports = sorted({p for s in streams for p in (s.tx, s.rx)}, key=str)
        before = _read(ports)
        cmd = self.command(rate_pps, duration_s, frame_size, bidirectional)
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        rec = self.tracker.track_process(proc.pid, "nfvlab-gen") if self.tracker else None
        try:
            out, err = proc.communicate(timeout=duration_s + 30)
        except BaseException:
            # Ctrl-C / timeout: stop the sender before anything else.
            proc.send_signal(signal.SIGTERM)
            try:
                proc.communicate(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
            raise
        finally:
            if rec is not None:
                self.tracker.untrack_process(rec)
        if proc.returncode != 0:
            raise GeneratorError(err.strip().splitlines()[-1] if err.strip() else
                                 f"nfvlab-gen exited with {proc.returncode}")
        after = _read(ports)
        report = json.loads(out)
        results = []
        probes_intended = round(self.probe_pps(rate_pps) * duration_s)
        for s, r in zip(streams, report["streams"]):
            lat = LatencyStats(**r["latency"])
            rx = after[s.rx]["rx_packets"] - before[s.rx]["rx_packets"]
            results.append(DirectionStats(
                tx_port=str(s.tx), rx_port=str(s.rx),
                intended_packets=int(r["intended"]) + probes_intended,
                sent_packets=int(r["sent"]) + lat.probes_sent,
                received_packets=rx,
                duration_s=duration_s, latency=lat,
            ))
        return tuple(results)


def _read(ports: list[Port]) -> dict[Port, dict[str, int]]:
    out: dict[Port, dict[str, int]] = {}
    by_ns: dict[str, list[Port]] = {}
    for p in ports:
        by_ns.setdefault(p.ns, []).append(p)
    for ns, ps in by_ns.items():
        got = nl.counters(ns, [p.iface for p in ps])
        for p in ps:
            out[p] = got[p.iface]
    return out
