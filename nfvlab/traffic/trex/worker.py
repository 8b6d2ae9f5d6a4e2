"""TRex worker: runs the TRex STL client in its own process and venv (docs/trex.md).

This file imports nothing of nfvlab. It runs as a script, by file path, under the
isolated environment's python (``.venv-trex`` with lbr-trex-client, a TRex server's own
``automation/trex_control_plane/interactive`` directory, or ``.venv-trex-v2`` with
trex-stl-lib), because the TRex client replaces ``zmq``, ``yaml`` and ``scapy`` in
``sys.modules`` and cannot share a process with Jupyter's.

Protocol: one JSON object per line on stdin, one reply per line on stdout,
``{"ok": true, "result": ...}`` or ``{"ok": false, "error": "<one line>", "kind": ...}``.
Requests (``op``): ``connect`` (once, first), ``trial`` (one per trial), ``close``.
Everything the TRex library prints goes to stderr: stdout carries replies only.

A trial, the way FD.io CSIT runs one: stop leftovers, remove all streams, add the load
streams (``STLFlowStats`` per stream) and one latency stream (``STLFlowLatencyStats``)
per direction, clear stats, start every tx port with an absolute ``"<X>pps"``
multiplier (TRex keeps latency streams at their own rate and scales the others so the
port total is X), wait for the duration (not ``wait_on_traffic``: it removes RX
filters and hangs when the duration stretches), stop if the server has not finished by
the deadline (the duration counted from the confirmed start, plus ``stop_tolerance_s``; RX filters removed only after ``settle_s``), wait for frames in flight,
then read the per-stream counters. Counters are never read while traffic runs.

``python worker.py --sim`` reads one trial request on stdin and prints the stream
profile as TRex's own ``STLSim`` compiles it (JSON mode, no server needed).
"""
from __future__ import annotations

import datetime
import json
import os
import re
import signal
import sys
import time
import traceback
import types

API = None          # the imported TRex API module (trex.stl.api or trex_stl_lib.api)
CLIENT_KIND = None  # "v3" or "v2"

L2_HDR, L3_HDR, L4_HDR, FCS = 14, 20, 8, 4
UDP_SPORT_OFFSET = L2_HDR + L3_HDR  # Ethernet + IPv4 without options


class WorkerError(Exception):
    """A failure with a one-line message for the user; ``kind`` lets the caller react."""

    def __init__(self, msg, kind="error", **extra):
        super().__init__(msg)
        self.kind = kind
        self.extra = extra


def err_text(e) -> str:
    """The message of a TRex exception (v2's ``STLError.__str__`` fails on Python 3.11)."""
    brief = getattr(e, "brief", None)
    if callable(brief):
        try:
            return str(brief())
        except Exception:
            pass
    try:
        return str(e)
    except Exception:
        return str(getattr(e, "msg", repr(e)))


def one_line(text) -> str:
    """The most telling line of a (possibly multi-line) TRex error text."""
    if isinstance(text, BaseException):
        text = err_text(text)
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(text))
    text = re.sub(r"Port \d+ : \*\*\* ", "", text)   # TRex's per-port prefix
    lines = [ln.strip() for ln in text.splitlines()]
    lines = [ln for ln in lines if ln and not set(ln) <= set("*-=")]
    if not lines:
        return "unknown TRex error"
    # TRex prefixes errors with "*** " and repeats the command: keep the substance
    for ln in reversed(lines):
        if "***" in ln or "error" in ln.lower() or "mismatch" in ln.lower():
            return re.sub(r"^\**\s*", "", ln).strip()
    return lines[-1]


# ---------------------------------------------------------------- client loading

def load_client(kind: str, client_path: str | None):
    """Import the TRex STL API: ``v3`` from lbr-trex-client or ``client_path``, ``v2`` from trex-stl-lib."""
    global API, CLIENT_KIND, CLIENT_PATH
    CLIENT_PATH = client_path if kind == "v3" else None
    if kind == "v3":
        if client_path:
            if not os.path.isdir(os.path.join(client_path, "trex", "stl")):
                raise WorkerError(f"client_path {client_path} has no trex/stl: give the TRex "
                                  "server's automation/trex_control_plane/interactive directory",
                                  kind="config")
            sys.path.insert(0, client_path)
        else:
            try:
                import lbr_trex_client  # noqa: F401  (sets TREX_EXT_LIBS and sys.path)
            except ImportError:
                raise WorkerError("lbr-trex-client is not installed in this venv: run "
                                  "scripts/setup-trex.sh", kind="config") from None
        import trex.stl.api as mod
        from trex.stl.trex_stl_sim import STLSim
    elif kind == "v2":
        try:
            import trex_stl_lib.api as mod
            from trex_stl_lib.api import STLSim
        except ImportError:
            raise WorkerError("trex-stl-lib is not installed in this venv: run "
                              "scripts/setup-trex.sh --v2", kind="config") from None
    else:
        raise WorkerError(f"unknown client kind {kind!r}", kind="config")
    from scapy.all import IP, UDP, Ether, Raw  # the client's own (vendored) scapy
    names = ("STLClient", "STLStream", "STLPktBuilder", "STLTXCont", "STLFlowStats",
             "STLFlowLatencyStats", "STLScVmRaw", "STLVmFlowVar", "STLVmWrFlowVar")
    API = types.SimpleNamespace(STLSim=STLSim, Ether=Ether, IP=IP, UDP=UDP, Raw=Raw,
                                **{n: getattr(mod, n) for n in names})
    CLIENT_KIND = kind
    return API


CLIENT_PATH = None


def client_version() -> str:
    """Which client library this worker uses, with its version."""
    if CLIENT_PATH:
        return f"TRex client from {CLIENT_PATH}"
    from importlib.metadata import PackageNotFoundError, version
    dist = {"v3": "lbr-trex-client", "v2": "trex-stl-lib"}[CLIENT_KIND]
    for name in (dist, dist.replace("-", "_")):
        try:
            return f"{dist} {version(name)}"
        except PackageNotFoundError:
            continue
    return dist


# ---------------------------------------------------------------- stream profile

def build_packet(d: dict, frame_bytes: int, dport: int):
    """Ether/IPv4/UDP frame of ``frame_bytes`` (FCS included, as nfvlab counts sizes)."""
    a = API
    pad = frame_bytes - FCS - L2_HDR - L3_HDR - L4_HDR
    if pad < 0:
        raise WorkerError(f"frame size {frame_bytes} B is below the Ethernet/IPv4/UDP headers")
    return (a.Ether(src=d["smac"], dst=d["dmac"])
            / a.IP(src=d["sip"], dst=d["dip"], ttl=64, flags="DF", id=0)
            / a.UDP(sport=d["sport"], dport=dport, chksum=0)
            / a.Raw(b"\x00" * pad))


def build_streams(d: dict, index: int) -> list:
    """The STL streams of one direction ``d`` (load streams, then its latency stream)."""
    a = API
    streams = []
    for i, ld in enumerate(d["load"]):
        vm = []
        if d["flows"] > 1:
            # one flow per UDP source port: sport .. sport + flows - 1 (UDP checksum 0 stays valid)
            vm = a.STLScVmRaw([
                a.STLVmFlowVar(name="sport", min_value=d["sport"],
                               max_value=d["sport"] + d["flows"] - 1, size=2, op="inc"),
                a.STLVmWrFlowVar(fv_name="sport", pkt_offset=UDP_SPORT_OFFSET),
            ])
        pkt = build_packet(d, ld["frame_bytes"], d["dport"])
        streams.append(a.STLStream(
            name=f"dir{index}-load{i}-{ld['frame_bytes']}B",
            packet=a.STLPktBuilder(pkt=pkt, vm=vm),
            mode=a.STLTXCont(pps=float(ld["pps"])),
            flow_stats=a.STLFlowStats(pg_id=ld["pg_id"])))
    lat = d.get("latency")
    if lat:
        pkt = build_packet(d, lat["frame_bytes"], lat["dport"])
        streams.append(a.STLStream(
            name=f"dir{index}-latency",
            packet=a.STLPktBuilder(pkt=pkt),
            mode=a.STLTXCont(pps=float(lat["pps"])),
            flow_stats=a.STLFlowLatencyStats(pg_id=lat["pg_id"])))
    return streams


def simulate(req: dict) -> str:
    """The profile of every direction as STLSim compiles it (JSON mode), one JSON document."""
    import contextlib
    import io
    import tempfile
    out = {}
    for i, d in enumerate(req["directions"]):
        streams = build_streams(d, i)
        sim = API.STLSim(bp_sim_path=tempfile.gettempdir(), port_id=d["tx"])
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            sim.run(streams, mode="json", tunables=[], mult=f"{req['mult_pps']:.6f}pps",
                    duration=req["duration_s"])
        doc = json.loads(buf.getvalue())
        # v3 prints the profile (a list of streams); v2 prints the RPC commands it would send
        if doc and "method" in doc[0]:
            doc = [cmd["params"]["stream"] for cmd in doc if cmd["method"] == "add_stream"]
        out[str(d["tx"])] = doc
    return json.dumps(out)


# ---------------------------------------------------------------- the session

class Session:
    def __init__(self, params: dict):
        self.p = params
        self.c = None
        self.ports = [int(x) for x in params["ports"]]
        self.server_version = None
        self.acquired = False

    # ---- connect
    def connect(self) -> dict:
        a, p = API, self.p
        timeout = float(p.get("timeout_s", 10))
        if CLIENT_KIND == "v3":
            self.c = a.STLClient(server=p["server"], sync_port=p["sync_port"],
                                 async_port=p["async_port"], verbose_level="error",
                                 sync_timeout=timeout, async_timeout=timeout)
            try:
                info = self.c.probe_server()
            except Exception as e:
                raise WorkerError(f"TRex server {p['server']}:{p['sync_port']} does not answer "
                                  f"({one_line(e)})", kind="unreachable") from None
            self.server_version = info.get("version")
            if info.get("mode") not in (None, "STL", "Stateless"):
                raise WorkerError(f"TRex server {p['server']} runs in {info.get('mode')} mode; "
                                  "start it in stateless mode (t-rex-64 -i)", kind="config")
        else:
            self.c = a.STLClient(server=p["server"], sync_port=p["sync_port"],
                                 async_port=p["async_port"])
        try:
            self.c.connect()
        except Exception as e:
            raise self._connect_error(e) from None
        if CLIENT_KIND == "v2":
            self.server_version = (self.c.get_server_version() or {}).get("version")
        all_ports = list(self.c.get_all_ports())
        missing = [x for x in self.ports if x not in all_ports]
        if missing:
            raise WorkerError(f"TRex server {p['server']} has ports {all_ports}, not {missing}",
                              kind="config")
        try:
            self.c.acquire(ports=self.ports, force=False)
        except Exception as e:
            raise self._acquire_error(e) from None
        self.acquired = True
        self._check_links()
        if p.get("l2_dst_macs"):
            self._set_l2(p["l2_dst_macs"])
        return {"server_version": self.server_version, "client": CLIENT_KIND,
                "client_version": client_version(), "ports": self._port_info(),
                "system": self._system_info()}

    def _connect_error(self, e) -> WorkerError:
        text = err_text(e)
        m = re.search(r"server:\s*'(\d+)\.(\d+)'", text)
        if "mismatch" in text.lower() or m:
            server_api = f"{m.group(1)}.{m.group(2)}" if m else "unknown"
            ver = self.server_version or "unknown version"
            if CLIENT_KIND == "v3":
                hint = ("configure client: v2 (trex-stl-lib in .venv-trex-v2, made by "
                        "scripts/setup-trex.sh --v2)")
            else:
                hint = "configure client: v3 (lbr-trex-client in .venv-trex, or client_path)"
            return WorkerError(
                f"TRex server {self.p['server']} ({ver}, STL API {server_api}) does not speak "
                f"{client_version()}'s API: {hint}", kind="api_mismatch",
                server_version=ver, server_api=server_api)
        return WorkerError(f"cannot connect to TRex server {self.p['server']}: {one_line(text)}",
                           kind="unreachable")

    def _acquire_error(self, e) -> WorkerError:
        text = err_text(e)
        m = re.search(r"[Pp]ort (\d+)\s*:.*?(already taken by '([^']*)'|already owned by "
                      r"another session of '([^']*)')", text.replace("\n", " "))
        if m or "already taken" in text or "already owned" in text:
            port = m.group(1) if m else "?"
            who = (m.group(3) or m.group(4)) if m else "?"
            return WorkerError(f"TRex port {port} is acquired by another user ('{who}'); nfvlab "
                               "never force-acquires: release it in that session first",
                               kind="acquired")
        return WorkerError(f"cannot acquire TRex ports {self.ports}: {one_line(text)}")

    def _check_links(self):
        down = []
        for x in self.ports:
            port = self.c.ports[x]
            try:
                port.sync()
            except Exception:
                pass
            if not port.is_up():
                down.append(x)
        if down:
            raise WorkerError(f"TRex port(s) {down} link is DOWN: check the cabling/DUT "
                              "(nfvlab does not start traffic on a down link)", kind="link_down")

    def _set_l2(self, macs):
        if len(macs) != len(self.ports):
            raise WorkerError(f"l2_dst_macs has {len(macs)} MACs for {len(self.ports)} ports",
                              kind="config")
        try:
            self.c.set_service_mode(ports=self.ports, enabled=True)
            for x, mac in zip(self.ports, macs):
                self.c.set_l2_mode(x, dst_mac=mac)
        except Exception as e:
            raise WorkerError(f"cannot put TRex ports in L2 mode: {one_line(e)}") from None
        finally:
            try:
                self.c.set_service_mode(ports=self.ports, enabled=False)
            except Exception:
                pass

    def _port_info(self) -> dict:
        out = {}
        for x in self.ports:
            port = self.c.ports[x]
            info = dict(getattr(port, "info", {}) or {})
            try:
                speed = port.get_speed_gbps()
            except Exception:
                speed = None
            out[str(x)] = {"driver": info.get("driver"), "description": info.get("description"),
                           "pci_addr": info.get("pci_addr"), "hw_mac": info.get("hw_mac"),
                           "is_virtual": info.get("is_virtual"), "speed_gbps": speed}
        return out

    def _system_info(self) -> dict:
        try:
            si = self.c.get_server_system_info()
        except Exception:
            return {}
        return {k: si.get(k) for k in ("hostname", "core_type", "dp_core_count",
                                       "dp_core_count_per_port", "port_count")}

    # ---- trial
    def trial(self, req: dict) -> dict:
        c = self.c
        dirs = req["directions"]
        tx_ports = [d["tx"] for d in dirs]
        duration = float(req["duration_s"])
        settle = float(req.get("settle_s", 0.5))
        # the server may finish this late (event delivery); then the client stops it and what
        # was not sent is loss: a late server must not turn "sent late" into "no loss"
        stop_at = float(req["stop_at_s"])
        self._check_links()
        # a previous trial that was interrupted may have left traffic or streams behind
        if c.get_active_ports():
            c.stop(ports=self.ports)
        c.remove_all_streams(ports=self.ports)
        for i, d in enumerate(dirs):
            try:
                streams = build_streams(d, i)
            except WorkerError:
                raise
            except Exception as e:
                raise WorkerError(f"cannot build the TRex streams of port {d['tx']}: "
                                  f"{one_line(e)}", kind="stream") from None
            try:
                c.add_streams(streams, ports=[d["tx"]])
            except Exception as e:
                raise WorkerError(f"TRex rejected the streams of port {d['tx']}: {one_line(e)}",
                                  kind="stream") from None
        # a new client process has no baseline: clear_stats records it (port counters)
        c.clear_stats(ports=self.ports)
        kwargs = {}
        if req.get("core_mask") is not None:
            kwargs["core_mask"] = [int(req["core_mask"])] * len(tx_ports)
        t0 = time.monotonic()
        w0 = datetime.datetime.now()
        try:
            # force: virtual ports report speed 0, and TRex refuses a pps rate "above line
            # rate" there without it; the link was checked above
            c.start(ports=tx_ports, mult=f"{float(req['mult_pps']):.6f}pps",
                    duration=duration, force=True, **kwargs)
        except Exception as e:
            self._stop_quietly(tx_ports)
            raise WorkerError(f"TRex refused to start traffic: {one_line(e)}", kind="start") from None
        # the server's traffic began between t0 and now: it gets its duration from now, plus the
        # tolerance, never more (a late server must not turn "sent late" into "no loss")
        started = time.monotonic()
        deadline = started + stop_at
        time.sleep(max(0.0, deadline - time.monotonic() - 0.06))
        while time.monotonic() < deadline and self._active(tx_ports):
            time.sleep(0.005)
        stopped_by, stop_late_s = "server", 0.0
        if self._active(tx_ports):
            stopped_by = "client"
            # traffic ran this long (the stop RPC takes effect within milliseconds); a stop later
            # than the deadline (this process stalled) let frames out late: the trial says so
            now = time.monotonic()
            tx_seconds, stop_late_s = now - t0, max(0.0, now - deadline)
            c.stop(ports=tx_ports, rx_delay_ms=int(settle * 1000))
        else:
            ends = [c.ports[x].tx_stopped_ts for x in tx_ports
                    if getattr(c.ports[x], "tx_stopped_ts", None)]
            end = max(ends) if ends else datetime.datetime.now()
            tx_seconds = (end - w0).total_seconds()
            # finished after the deadline (this process stalled through it): frames left late
            stop_late_s = max(0.0, tx_seconds - (started - t0) - stop_at)
            waited = (datetime.datetime.now() - end).total_seconds()
            if waited < settle:
                time.sleep(settle - waited)
        pgids = sorted({ld["pg_id"] for d in dirs for ld in d["load"]}
                       | {d["latency"]["pg_id"] for d in dirs if d.get("latency")})
        rc = c._transmit("get_pgid_stats", params={"pgids": pgids})
        if not rc:
            raise WorkerError(f"reading TRex flow stats failed: {one_line(rc.err())}")
        stats = c.get_stats(ports=self.ports)
        port_stats = {str(x): {k: stats[x].get(k) for k in ("opackets", "ipackets", "obytes",
                                                              "ibytes", "oerrors", "ierrors")}
                      for x in self.ports}
        return {"pgid_stats": rc.data(), "port_stats": port_stats,
                "tx_seconds": round(tx_seconds, 4), "start_s": round(started - t0, 4),
                "stop_late_s": round(stop_late_s, 4), "stopped_by": stopped_by}

    def _active(self, ports) -> bool:
        return bool(set(self.c.get_active_ports()) & set(ports))

    def _stop_quietly(self, ports):
        try:
            self.c.stop(ports=ports)
        except Exception:
            pass

    # ---- close
    def close(self):
        if self.c is None:
            return
        try:
            if self.acquired:
                if self.c.get_active_ports():
                    self.c.stop(ports=self.ports)
                self.c.remove_all_streams(ports=self.ports)
                self.c.release(ports=self.ports)
        except Exception:
            pass
        try:
            self.c.disconnect(stop_traffic=False, release_ports=False)
        except Exception:
            pass
        self.c = None


# ---------------------------------------------------------------- main loop

def serve(out) -> int:
    holder = {}
    try:
        return _serve(out, holder)
    finally:
        # stdin closed, SIGTERM or a crash: never leave traffic running or ports acquired
        if holder.get("session") is not None:
            holder["session"].close()


def _serve(out, holder) -> int:
    session = None

    def reply(obj):
        out.write(json.dumps(obj) + "\n")
        out.flush()

    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            op = req.get("op")
            if op == "connect":
                if session is not None:
                    raise WorkerError("already connected")
                load_client(req.get("client", "v3"), req.get("client_path"))
                session = holder["session"] = Session(req)
                try:
                    result = session.connect()
                except BaseException:
                    session.close()
                    session = holder["session"] = None
                    raise
                reply({"ok": True, "result": result})
            elif op == "trial":
                if session is None:
                    raise WorkerError("not connected")
                reply({"ok": True, "result": session.trial(req)})
            elif op == "close":
                if session is not None:
                    session.close()
                    session = holder["session"] = None
                reply({"ok": True, "result": None})
                return 0
            else:
                raise WorkerError(f"unknown op {op!r}")
        except WorkerError as e:
            reply({"ok": False, "error": str(e), "kind": e.kind, **e.extra})
        except Exception as e:
            traceback.print_exc(file=sys.stderr)
            reply({"ok": False, "error": f"TRex worker: {type(e).__name__}: {one_line(e)}",
                   "kind": "internal"})
    return 0


def _terminate(signum, frame):
    raise SystemExit(128 + signum)


def _guard_killpg():
    """trex-stl-lib's async thread, when it crashes, SIGTERMs its *parent's* process group
    (``os.killpg(os.getppid(), SIGTERM)``): that would kill nfvlab. Signals to any group but
    this worker's own end this worker instead."""
    real = os.killpg

    def killpg(pgid, sig):
        if pgid != os.getpgid(0):
            print(f"TRex worker: refused killpg({pgid}, {sig}) by the TRex client; exiting",
                  file=sys.stderr)
            os.kill(os.getpid(), sig)
            return
        real(pgid, sig)

    os.killpg = killpg


def main(argv) -> int:
    # Keep stdout for replies only: whatever TRex (or scapy) prints goes to stderr.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    if argv[1:2] == ["--sim"]:
        req = json.loads(sys.stdin.read())
        try:
            load_client(req.get("client", "v3"), req.get("client_path"))
            out.write(simulate(req) + "\n")
        except WorkerError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        except Exception as e:
            print(f"error: {type(e).__name__}: {one_line(e)}", file=sys.stderr)
            return 1
        out.flush()
        return 0
    signal.signal(signal.SIGTERM, _terminate)
    _guard_killpg()
    return serve(out)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
