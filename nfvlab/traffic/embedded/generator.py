"""The embedded generator: ``nfvlab-gen`` (C, AF_PACKET) on lab-created ports.

The intended rate is what the DUT is offered, probes included: a trial at
``rate_pps`` sends ``rate_pps - probe_pps`` load frames/s plus ``probe_pps``
timestamped latency probes/s (probes take at most a tenth of the rate; a trial
at exactly ``latency_pps`` is probes only). Each probe's latency is taken from
its send time (``CLOCK_REALTIME`` just before ``send()`` on the tx port's
AF_PACKET socket) to its kernel receive timestamp (``SO_TIMESTAMPNS`` at the
rx port's AF_PACKET socket); nfvlab-gen prints every sample, and
:func:`latency_stats` keeps an HDR histogram of them. Counting
probes as offered load matters: otherwise a DUT of capacity C looks like
C - probe_pps (seen: -1.4 % on a 72 kpps path with 1 kpps of probes).

Counting: only test frames of this trial count as received. Every frame the
generator sends (load and probes) carries a signature: magic, a random per-run
trial id, the stream index and a per-stream sequence number. A BPF program at
each rx port's ingress (tcx, or a clsact filter on kernels before 6.6;
``nfvlab_count.bpf.c``) counts per stream the unique test frames (a bitmap of
sequence numbers), duplicates and reordered frames, and per port the
*foreign* frames: anything without this trial's signature, such as the DUT's
own ARP/ND/LLDP/STP or frames of an earlier trial arriving late. The counters
are read once traffic has stopped and the DUT has settled (below), and the
program is detached then (by a persistent process: when it ends). Counted load frames are dropped
at the rx port (they are of no use to its stack; measured: this raises the
generator's own zero-loss ceiling instead of lowering it). Packets the
generator could not send by the deadline (kernel backpressure) are reported as
``intended - sent`` and count as loss.

Pacing: the TX thread runs ``SCHED_FIFO`` where permitted (root or
CAP_SYS_NICE; otherwise ``SCHED_OTHER``, and the report says which), sleeping
until shortly before each frame is due and sending at most the frames due in 50 us
at once. A stream that fell behind never catches up in a burst (``max_batch`` per
stream in the report: the most frames sent at once, at most ``burst``): its
schedule slips so the frames keep their spacing (``slip_s``), and what it has not
sent when the trial's window ends (the duration plus the slip budget, 1 % of it)
is ``unsent``; see Pacing in ``nfvlab_gen_pacing.c``. Measured on a busy 2-vCPU
VM: a shallow-buffer DUT's NDR went from -20 % to within 1 % of its capacity at 1518 B.

Validity: the TX loop (or, on the XDP path, its BPF program) counts the time it
was not running when its schedule needed it, outside send calls (see Stalls in
``nfvlab_gen_pacing.c``). When those stalls add up to more than the slip budget, the
load could not leave on schedule through the generator's fault:
:attr:`EmbeddedGenerator.last_schedule` carries the fault and the trial is
invalid (docs/methodology.md). So is a trial in which a stream left frames unsent
while the slip its own time off the CPU caused (``slip_own_s``: gaps while a frame
was due outside send calls, over 1 ms on the socket path, of at least 20 us on the
XDP path outside its softirq work between batches)
exceeds the budget: those frames are the generator's, never the DUT's loss
(:func:`own_lateness_fault`). Frames the kernel held back while the sender was
running (backpressure from the DUT) stay loss.

Process: with a lab that stops it at teardown (a ``tracker``), one ``nfvlab-gen --serve``
runs the generator's trials until :meth:`EmbeddedGenerator.close`, its sockets open and its BPF
programs loaded once (:mod:`nfvlab.traffic.embedded.serve`); each trial still draws its own trial
id and starts its counters from zero. Without one, each trial runs its own nfvlab-gen.

Settling: after the traffic, the counters are read once every frame sent has been counted at its
rx port (nothing of the trial is left in the DUT), or else after ``settle_ms``.

XDP transmit (``tx="xdp"``): load frames leave through an XDP program that the
kernel runs in its live-frames mode (``nfvlab_tx.h``), paced by the program on
the same clock and with the same slip rules, probes still through AF_PACKET.
A veth accepts such frames only while its peer runs NAPI, so for each trial
the peers of the tx ports get GRO on (and back off after): the DUT's ingress
port then receives through veth's NAPI ring instead of the per-CPU backlog,
as a NIC does. The frames bypass the tx port's qdisc.
"""
from __future__ import annotations

import functools
import json
import os
import platform
import re
import signal
import subprocess
from typing import Optional, Protocol

from nfvlab.linerate import FrameSize
from nfvlab.scenario.topology import Port, Stream
from nfvlab.system import signals
from nfvlab.system.build import BuildError
from nfvlab.system.host import host_identity
from nfvlab.traffic.base import GeneratorError, Schedule
from nfvlab.traffic.embedded.binary import count_object, gen_binary, tx_object
from nfvlab.traffic.embedded.serve import GenProcess
from nfvlab.traffic.stats import DirectionStats, LatencyStats, encode_histogram, histogram_of


def latency_stats(report: dict) -> LatencyStats:
    """LatencyStats of one stream of nfvlab-gen's report: its exact percentiles, and an HDR
    histogram of every sample (``samples_ns``, sorted; not kept in the record itself)."""
    samples = report.get("samples_ns") or []
    hist = encode_histogram(histogram_of(samples)) if samples else None
    return LatencyStats.from_dict({**{k: v for k, v in report.items() if k != "samples_ns"},
                                   "hdr_histogram": hist})


def xdp_sent_short(report: dict) -> bool:
    """Whether the XDP path's loop ended its trial with frames unsent while the data path lost none
    of those it sent: the trial's loss is all the generator's shortfall.

    On the XDP path nothing holds the sender back (no socket buffer, no queue: a full veth ring
    drops frames it was given, which counts as loss downstream); a tail left unsent at the deadline
    is time the loop lost, to stalls within the budget or to the kernel's softirq work between its
    batches, the DUT's own on veth when the two share a CPU. A result whose upper bound rests on
    such a trial is generator-limited (:func:`nfvlab.calibrate.mark_generator_limited`). The socket
    path is never judged so: there a shortfall without loss may be the DUT's backpressure."""
    streams = report.get("streams") or []
    return (report.get("tx") == "xdp" and bool(streams)
            and any(int(s["sent"]) < int(s["intended"]) for s in streams)
            and all(s.get("received_load") is not None and int(s["received_load"]) == int(s["sent"])
                    for s in streams))


def own_lateness_fault(report: dict) -> Optional[str]:
    """Why the frames nfvlab-gen left unsent are its own (None: they are not, or none were left).

    A stream that fell behind slips its schedule instead of sending a catch-up burst; what it
    has not sent at the end of the trial's window is ``unsent``. When the part of its slip that
    the TX loop's own time off its CPU caused (``slip_own_s``) exceeds the slip budget, the
    schedule could not absorb the generator's own lateness: the unsent frames are the
    generator's and the trial is invalid. Otherwise the lag grew inside send calls (the kernel
    holding the sender back, the DUT's work on the sender's CPU) and they are loss."""
    budget_s = float(report.get("slip_budget_s", 0.0))
    late = [s for s in report.get("streams", [])
            if int(s.get("unsent", 0)) > 0 and float(s.get("slip_own_s", 0.0)) > budget_s]
    if not late:
        return None
    own_s = max(float(s["slip_own_s"]) for s in late)
    return (f"generator off its CPU {own_s * 1e3:.1f} ms while frames were due (its own lateness), beyond the "
            f"{budget_s * 1e3:.1f} ms its schedule absorbs: {sum(int(s['unsent']) for s in late)} frames "
            f"left unsent rather than sent as a burst")


def schedule(report: dict) -> Schedule:
    """How nfvlab-gen kept its schedule (its report's stall figures), with the fault when its
    stalls exceeded what the schedule can absorb (the slip budget) or it left frames unsent
    through its own lateness (:func:`own_lateness_fault`), and ``sent_short`` when the XDP
    path's shortfall is all the trial lost (:func:`xdp_sent_short`)."""
    stall_s, budget_s = float(report.get("stall_total_s", 0.0)), float(report.get("slip_budget_s", 0.0))
    elapsed = max((float(s.get("tx_elapsed_s", 0.0)) for s in report.get("streams", [])), default=None)
    fault = None
    if stall_s > budget_s:
        fault = (f"generator stalled {stall_s * 1e3:.1f} ms in {report.get('stalls', 0)} stall(s) (longest "
                 f"{float(report.get('stall_max_s', 0.0)) * 1e3:.1f} ms), beyond the {budget_s * 1e3:.1f} ms its "
                 f"schedule absorbs: the load did not leave on schedule")
    fault = fault or own_lateness_fault(report)
    own_s = max((float(s.get("slip_own_s", 0.0)) for s in report.get("streams", [])), default=0.0)
    return Schedule(stall_s=stall_s, stall_max_s=float(report.get("stall_max_s", 0.0)),
                    stalls=int(report.get("stalls", 0)), budget_s=budget_s,
                    stall_threshold_s=float(report.get("stall_threshold_s", 0.0)),
                    softirq_gap_s=float(report.get("softirq_gap_s", 0.0)), slip_own_s=own_s,
                    elapsed_s=elapsed, fault=fault,
                    sent_short=xdp_sent_short(report))


class ProcessTracker(Protocol):
    def track_process(self, pid: int, cmd: str): ...
    def untrack_process(self, rec) -> None: ...


def tx_sched() -> str:
    """The TX thread's scheduling policy nfvlab-gen gets here: ``fifo`` (root) or ``other``."""
    return "fifo" if os.geteuid() == 0 else "other"


TX_PORTS = {"socket": "af_packet on veth", "xdp": "xdp live frames on veth"}


def identity(cpu: Optional[int] = 0, tx: str = "socket") -> dict:
    """Binary (by source hash), port kind, TX CPU, TX scheduling and host: what the ceiling depends on."""
    return {"name": EmbeddedGenerator.name, "version": gen_binary().name.rsplit("-", 1)[-1],
            "ports": TX_PORTS[tx], "cpu": "any" if cpu is None else str(cpu), "sched": tx_sched(),
            "host": host_identity()}


def _ip_json(*args: str) -> list:
    out = subprocess.run(["ip", "-j", *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise GeneratorError(f"ip {' '.join(args)}: {out.stderr.strip() or 'failed'}")
    return json.loads(out.stdout or "[]")


def _in_ns(ns: str) -> list[str]:
    """Run in namespace ``ns``: a name, "." (this one) or a path (``/proc/PID/ns/net``)."""
    if ns in (".", ""):
        return []
    return ["nsenter", f"--net={ns}"] if ns.startswith("/") else ["ip", "netns", "exec", ns]


def veth_peer(port: Port) -> Optional[Port]:
    """The other end of ``port`` if it is a veth (None for a NIC, whose driver sends XDP frames).

    GeneratorError for any other kind of port, or a peer in a namespace without a name.
    """
    ns_args = [] if port.ns in (".", "") else ["-n", port.ns]
    (link,) = _ip_json(*ns_args, "-d", "link", "show", "dev", port.iface)
    kind = link.get("linkinfo", {}).get("info_kind")
    if kind is None:
        return None  # a physical NIC (no link kind)
    if kind != "veth":
        raise GeneratorError(f"tx: xdp needs veth or NIC tx ports: {port} is a {kind}")
    nsid = link.get("link_netnsid")
    if nsid is None:  # the peer is in the same namespace: ip names it
        return Port(port.ns, link["link"])
    else:
        names = {n["nsid"]: n.get("name") for n in _ip_json(*ns_args, "netns", "list-id")}
        peer_ns = names.get(nsid)
        if not peer_ns:
            # The host's namespace and a Kubernetes pod's have no name (the Kubernetes lab's node
            # NIC ports, a host-device port moved into a pod): found through a process in it.
            found = _peer_in_unnamed_namespace(link["ifindex"], link["link_index"])
            if found is None:
                raise GeneratorError(f"tx: xdp: the veth peer of {port} is in a namespace without a name")
            return found
    peer_ns_args = [] if peer_ns in (".", "") else ["-n", peer_ns]
    (peer,) = [x for x in _ip_json(*peer_ns_args, "link", "show") if x["ifindex"] == link["link_index"]]
    return Port(peer_ns, peer["ifname"])


def _peer_in_unnamed_namespace(ifindex: int, peer_ifindex: int) -> Optional[Port]:
    """The veth numbered ``peer_ifindex`` whose peer is ``ifindex``, searched in every namespace
    a process is in: ``Port(".", ...)`` in the host's, else the namespace as ``/proc/PID/ns/net``
    (which :func:`_in_ns` enters with nsenter)."""
    host_ns = os.readlink("/proc/self/ns/net")  # nfvlab runs in the host's namespace
    seen: set[str] = set()
    for pid in sorted((d for d in os.listdir("/proc") if d.isdigit()), key=int):
        path = f"/proc/{pid}/ns/net"
        try:
            ns = os.readlink(path)
        except OSError:  # gone, or a kernel thread
            continue
        if ns in seen:
            continue
        seen.add(ns)
        out = subprocess.run([*_in_ns("." if ns == host_ns else path), "ip", "-j", "-d", "link", "show"],
                             capture_output=True, text=True)
        for x in json.loads(out.stdout or "[]") if out.returncode == 0 else []:
            if (x["ifindex"] == peer_ifindex and x.get("link_index") == ifindex
                    and x.get("linkinfo", {}).get("info_kind") == "veth"):
                return Port("." if ns == host_ns else path, x["ifname"])
    return None


def _gro(port: Port, on: Optional[bool] = None) -> bool:
    """GRO of ``port`` (set to ``on`` first when given)."""
    cmd = [*_in_ns(port.ns), "ethtool"]
    if on is not None:
        subprocess.run([*cmd, "-K", port.iface, "gro", "on" if on else "off"], capture_output=True, check=True)
    out = subprocess.run([*cmd, "-k", port.iface], capture_output=True, text=True, check=True).stdout
    return "generic-receive-offload: on" in out


def xdp_peers(streams: list[Stream]) -> list[Port]:
    """The veth peers of ``streams``' tx ports (once each; NICs have none)."""
    return [p for p in dict.fromkeys(veth_peer(s.tx) for s in streams) if p is not None]


class XdpPorts:
    """While in use, the veth ``peers`` of the tx ports (:func:`xdp_peers`) run NAPI (GRO on), as
    veth needs to accept XDP frames; GRO goes back off on the peers that had it off."""

    def __init__(self, peers: list[Port]) -> None:
        self.peers = peers
        self.switched: list[Port] = []

    def __enter__(self) -> "XdpPorts":
        try:
            for peer in self.peers:
                if not _gro(peer):
                    self.switched.append(peer)
                    if not _gro(peer, True):
                        raise GeneratorError(f"tx: xdp: cannot turn GRO on at {peer} (the veth peer)")
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        for peer in self.switched:
            subprocess.run([*_in_ns(peer.ns), "ethtool", "-K", peer.iface, "gro", "off"], capture_output=True)
        self.switched = []


#: The XDP path sends a frame from one page: frames up to this size, bytes incl. FCS.
XDP_MAX_FRAME_BYTES = 1518


@functools.lru_cache(maxsize=None)
def xdp_live_refusal() -> Optional[str]:
    """Why this kernel does not run XDP programs in live-frames mode, the XDP TX path's engine
    (None: it does). ``nfvlab-gen --probe-xdp`` asks the kernel once per process with a program that
    drops its one frame (nothing is sent): some sandboxed kernels (Linux 6.18.44-fc-v1300, Dec 2026)
    refuse live frames with EPERM while plain test runs work. The kernel does not change under a
    running process, so the answer is kept."""
    release = tuple(int(x) for x in re.findall(r"\d+", platform.release())[:2])
    if release < (5, 18):
        return f"Linux {platform.release()} has no XDP live-frames mode (5.18 or later)"
    try:
        out = subprocess.run([str(gen_binary()), "--probe-xdp"], capture_output=True, text=True, timeout=10)
    except (BuildError, OSError, subprocess.SubprocessError) as err:
        return f"cannot probe the XDP live-frames mode: {str(err).splitlines()[0] if str(err) else type(err).__name__}"
    if out.returncode == 0:
        return None
    why = (out.stdout.strip() or out.stderr.strip() or f"exit {out.returncode}").splitlines()[0]
    return f"the kernel ({platform.release()}) refuses XDP live frames: {why}"


def auto_tx_paths() -> tuple[str, ...]:
    """The TX paths ``tx: auto`` may take on this host, the preferred first: ``("xdp", "socket")``, or
    ``("socket",)`` where the kernel refuses the XDP path (:func:`xdp_live_refusal`)."""
    return ("socket",) if xdp_live_refusal() else ("xdp", "socket")


def xdp_refusal(streams: list[Stream], *, frame_sizes=(), cpu: Optional[int] = 0,
                busy_roles: Optional[dict] = None) -> Optional[str]:
    """Why the XDP TX path cannot drive ``streams`` here (None: it can).

    ``frame_sizes``: the sizes the trials will use; ``cpu``: the TX CPU; ``busy_roles``:
    the lab's threads that compete for CPU, role -> CPUs, empty for any
    (:attr:`nfvlab.labs.base.LabSession.busy_roles`). The XDP loop never yields its CPU, so it
    is not chosen where such a thread may run on it (a DPDK pod's testpmd would get ~5 %).
    """
    big = [fs for fs in frame_sizes if not isinstance(fs, str) and fs > XDP_MAX_FRAME_BYTES]
    if big:
        return f"frames of {max(big)} B do not fit the XDP path (one page per frame, at most {XDP_MAX_FRAME_BYTES} B)"
    if cpu is None:
        return "the generator is not pinned (generator.cpu: null); the XDP TX loop needs a CPU of its own"
    sharing = [role for role, cpus in (busy_roles or {}).items() if not cpus or cpu in cpus]
    if sharing:
        return (f"the XDP TX loop never yields CPU {cpu}, which the core plan shares with "
                f"{', '.join(sharing)}")
    refused = xdp_live_refusal()
    if refused:
        return refused
    if len({s.tx.ns for s in streams}) > 1:
        return "the tx ports are in more than one namespace (the XDP path sends from one)"
    try:
        for s in streams:
            veth_peer(s.tx)
        tx_object()
    except (GeneratorError, BuildError, OSError, subprocess.CalledProcessError) as err:
        return str(err).splitlines()[0] if str(err) else type(err).__name__
    return None


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
        tx: str = "socket",
        tracker: Optional[ProcessTracker] = None,
        frame_sizes=(),
        busy_roles: Optional[dict] = None,
        persistent: Optional[bool] = None,
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
        self.count_obj = count_object()
        if tx not in (*TX_PORTS, "auto"):
            raise ValueError(f"tx {tx!r}: auto, socket or xdp")
        #: ``tx="auto"``: xdp unless :func:`xdp_refusal` names a reason (``frame_sizes`` and
        #: ``busy_roles`` are what it judges), which :attr:`tx_why` keeps.
        self.tx_requested = tx
        self.tx_why = xdp_refusal(streams, frame_sizes=frame_sizes, cpu=cpu, busy_roles=busy_roles) \
            if tx == "auto" else None
        self.tx = tx if tx != "auto" else ("socket" if self.tx_why else "xdp")
        self.tx_obj = tx_object() if self.tx == "xdp" else None
        #: Streams driven (1 or 2) -> their tx ports' veth peers, found once (a search in every
        #: namespace for a Kubernetes pod's: not per trial).
        self._xdp_peers: dict[int, list[Port]] = {}
        #: The last trial's JSON report from nfvlab-gen (trial id, per-stream counts), or None.
        self.last_report: Optional[dict] = None
        self.last_schedule: Optional[Schedule] = None
        #: Test hook: nfvlab-gen's TX stops ``(ms, at_s)`` once in every trial (a stall of known size).
        self.inject_stall: Optional[tuple[float, float]] = None
        #: Trials go to one ``nfvlab-gen --serve`` process kept until :meth:`close` (:mod:`.serve`),
        #: by default where a ``tracker`` (the lab) stops it at teardown before the ports go; else
        #: each trial runs its own nfvlab-gen (one-shot).
        self.persistent = tracker is not None if persistent is None else persistent
        self._proc: Optional[GenProcess] = None

    def identity(self) -> dict:
        return identity(self.cpu, self.tx)

    def describe(self) -> dict:
        return {
            "generator": self.name,
            "binary": self.binary.name,
            "counter": self.count_obj.name,
            "flows": self.flows,
            "latency_pps": self.latency_pps,
            "cpu": self.cpu,
            "tx": self.tx,
            "tx_requested": self.tx_requested,
            "tx_why": self.tx_why,
            "streams": [s.describe() for s in self.streams],
        }

    def probe_pps(self, rate_pps: float) -> int:
        """Latency probes per second and direction used at ``rate_pps`` (part of the rate).

        A tenth of the rate, at most ``latency_pps``; a rate equal to ``latency_pps`` is
        probes only (the 0 % point of latency under load).
        """
        if self.latency_pps > 0 and rate_pps == self.latency_pps:
            return self.latency_pps
        return int(min(self.latency_pps, rate_pps // 10))

    def command(self, rate_pps: float, duration_s: float, frame_size: FrameSize,
                bidirectional: bool) -> list[str]:
        probes = self.probe_pps(rate_pps)
        # nfvlab-gen takes a load rate > 0: 1e-9 pps sends no load frame in any trial it accepts.
        load_pps = max(rate_pps - probes, 1e-9)
        cmd = [str(self.binary), "--duration-s", f"{duration_s:g}", "--flows", str(self.flows),
               "--latency-pps", str(probes), "--settle-ms", str(self.settle_ms),
               "--count-obj", str(self.count_obj)]
        cmd += ["--imix"] if isinstance(frame_size, str) else ["--frame-size", str(frame_size)]
        if self.cpu is not None:
            cmd += ["--cpu", str(self.cpu)]
        if self.tx_obj is not None:
            cmd += ["--tx", "xdp", "--tx-obj", str(self.tx_obj)]
        if self.inject_stall is not None:
            cmd += ["--inject-stall-ms", f"{self.inject_stall[0]:g}", "--inject-stall-at-s", f"{self.inject_stall[1]:g}"]
        for s in self.streams[: 2 if bidirectional else 1]:
            cmd += ["--stream", f"tx={s.tx},rx={s.rx},rate={load_pps:.10g},smac={s.smac},"
                                f"dmac={s.dmac},sip={s.sip},dip={s.dip}"]
        return cmd

    def run(self, rate_pps: float, duration_s: float, frame_size: FrameSize,
            bidirectional: bool = True) -> tuple[DirectionStats, ...]:
        streams = self.streams[: 2 if bidirectional else 1]
        cmd = self.command(rate_pps, duration_s, frame_size, bidirectional)
        if self.tx == "xdp":
            if len(streams) not in self._xdp_peers:
                self._xdp_peers[len(streams)] = xdp_peers(streams)
            with XdpPorts(self._xdp_peers[len(streams)]):
                out = self._run(cmd, duration_s)
        else:
            out = self._run(cmd, duration_s)
        self.last_report = json.loads(out)
        self.last_schedule = schedule(self.last_report)
        return self.directions(self.last_report, streams, rate_pps, duration_s)

    def _run(self, cmd: list[str], duration_s: float) -> str:
        """nfvlab-gen's report (GeneratorError on failure); stopped on Ctrl-C or timeout."""
        if self.persistent:
            return self._serve(cmd[1:], duration_s)
        return self._run_once(cmd, duration_s)

    def _serve(self, args: list[str], duration_s: float) -> str:
        """The trial ``args`` through the persistent process (started if none is running); any
        failure or signal ends that process (the next trial starts a new one)."""
        if self._proc is not None and not self._proc.alive():
            self.close()
        if self._proc is None:
            self._proc = GenProcess(self.binary, self.tracker,
                                    labels=tuple(f"tx={s.tx},rx={s.rx}" for s in self.streams))
        try:
            out = self._proc.trial(args, timeout_s=duration_s + 30)
            signals.checkpoint()
            if '"interrupted":true' in out[:200]:  # a signal cut the trial short; the process ends too
                raise GeneratorError("nfvlab-gen was interrupted")
        except BaseException:
            self.close(interrupt=True)
            raise
        return out

    def close(self, interrupt: bool = False) -> None:
        """End the persistent nfvlab-gen, if one runs (``interrupt``: cut its trial short)."""
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.close(interrupt=interrupt)

    def _run_once(self, cmd: list[str], duration_s: float) -> str:
        """One-shot: a new nfvlab-gen for this trial."""
        with signals.deferred():  # a signal now would leave the sender unrecorded and running
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            rec = self.tracker.track_process(proc.pid, "nfvlab-gen") if self.tracker else None
        try:
            signals.checkpoint()
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
        signals.checkpoint()  # a signal swallowed during the trial (Popen.__del__, ...) ends the run here
        if proc.returncode != 0:
            raise GeneratorError(err.strip().splitlines()[-1] if err.strip() else
                                 f"nfvlab-gen exited with {proc.returncode}")
        return out

    def directions(self, report: dict, streams: list[Stream], rate_pps: float,
                   duration_s: float) -> tuple[DirectionStats, ...]:
        """DirectionStats from ``nfvlab-gen``'s JSON report (GeneratorError if it breaks an invariant)."""
        if report.get("counting") in (None, "none"):
            raise GeneratorError("nfvlab-gen counted no received frames (no --count-obj)")
        results = []
        for s, r in zip(streams, report["streams"]):
            lat = latency_stats(r["latency"])
            d = DirectionStats(
                tx_port=str(s.tx), rx_port=str(s.rx),
                intended_packets=int(r["intended"]) + int(r["probes_intended"]),
                sent_packets=int(r["sent"]) + lat.probes_sent,
                received_packets=int(r["received"]),
                duration_s=duration_s, latency=lat,
                foreign_packets=int(r["foreign"]),
                duplicate_packets=int(r["duplicates"]),
                reordered_packets=int(r["reordered"]),
                stale_packets=int(r["foreign_stale"]),
            )
            # Unique frames by sequence number cannot outnumber the frames sent, nor
            # those the intended: anything else is a bug, never to be clamped away.
            if not (r["received_load"] <= r["sent"] and r["received_probes"] <= lat.probes_sent
                    and d.received_packets <= d.sent_packets <= d.intended_packets):
                raise GeneratorError(f"nfvlab-gen counts break received <= sent <= intended on "
                                     f"{s.tx} -> {s.rx}: {r}")
            results.append(d)
        return tuple(results)
