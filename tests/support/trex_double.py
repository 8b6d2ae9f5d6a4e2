"""A replaying TEST DOUBLE standing in for a TRex server (stateless mode, RPC API STL 5.1).

No package registry ships a TRex server, and a test machine reaches nothing but the
registries, so tests of the TRex driver talk to this stand-in instead. It is never used
for a measured number: its "DUT" is arithmetic (a capacity, a loss ratio), not a network.

What it reproduces is the wire protocol exactly as TRex v3.0.x serves it and as the
unmodified lbr-trex-client (the TRex v3.04 client) expects it, so that the real client,
inside the real worker process and venv, talks to it without modification:

* ZMQ REP on 127.0.0.1:<sync_port> (JSON-RPC 2.0, batches as arrays; a request framed by
  zlib with the 0xABE85CEA magic + length header is answered framed the same way; a
  one-element batch is answered with a single object, as TRex's server does);
* ZMQ PUB on 127.0.0.1:<async_port>: only ``{}`` triggers, after which the client pulls
  ``get_async_events`` (per-session queues with consecutive ``seq``);
* the ``api_sync_v2`` handshake (``api_h`` checked on every API call, the same error
  texts as ``TrexRpcAPIVersion::verify``), port ownership by ``handler``, TRex's error
  codes (-32000 "Failed To Execute Method" with ``specific_err``, -32601 ...);
* the shapes of ``get_system_info``, ``get_port_status``, ``get_port_stats``,
  ``get_pgid_stats`` (``flow_stats`` rp/tp/rb/tb per port, ``latency`` with TRex's log
  histogram keys in usec, ``ver_id``) and the profile/port events;
* the rate arithmetic of ``start_traffic``: an absolute ``pps`` multiplier gives factor
  (value - fixed) / variable, where latency streams are the fixed part (TRex's
  ``get_factor_pps``); ``force=False`` on a port of speed 0 fails as TRex does.

Simulated lab conditions (constructor arguments): DUT capacity per direction, a loss
ratio, foreign frames that reach the port counters but no test stream, a server that
stretches the duration or cannot send the full rate, an old server API version, ports
acquired by another user, a link that is down, a stream the server rejects, and frames
still in flight for ``inflight_s`` after they were sent.

Protocol sources read for this file: lbr-trex-client 3.4.0 ``trex/common/trex_client.py``,
``trex_req_resp_client.py``, ``trex_subscriber.py``, ``trex_port.py``,
``trex/stl/trex_stl_client.py``, ``trex_stl_port.py``, ``trex_stl_stats.py``,
``utils/zipmsg.py``; and TRex v3.0.8's RPC handlers (``src/stx/*/trex_*rpc_cmds*.cpp``,
``src/rpc-server``, ``src/stx/stl/trex_stl_fs.cpp``, ``src/time_histogram.cpp``).
"""
from __future__ import annotations

import base64
import json
import random
import string
import struct
import threading
import time
import zlib
from dataclasses import dataclass, field
from typing import Optional

import zmq

MAGIC = 0xABE85CEA
ERR_EXECUTE, ERR_PARAMS, ERR_METHOD, ERR_INVALID_REQ = -32000, -32602, -32601, -32600

# TRex event ids (src/publisher/trex_publisher.h)
EV_PORT_STOPPED, EV_PORT_FINISHED_TX, EV_PORT_ACQUIRED, EV_PORT_RELEASED = 1, 4, 5, 6
EV_PROFILE_STARTED, EV_PROFILE_STOPPED, EV_PROFILE_FINISHED_TX = 10, 11, 14

NOAPI = {"get_version", "api_sync", "api_sync_v2", "ping"}
OWNED = {"release", "add_stream", "remove_stream", "remove_all_streams", "start_traffic",
         "stop_traffic", "pause_traffic", "resume_traffic", "update_traffic", "validate",
         "remove_rx_filters", "service"}

XSTATS = ["rx_good_packets", "tx_good_packets", "rx_good_bytes", "tx_good_bytes",
          "rx_missed_errors", "rx_errors", "tx_errors"]


class RpcError(Exception):
    def __init__(self, specific: str, code: int = ERR_EXECUTE, message: str = "Failed To Execute Method"):
        super().__init__(specific)
        self.code, self.message, self.specific = code, message, specific


def _now() -> float:
    return time.monotonic()


@dataclass
class SimStream:
    stream_id: int
    profile: str
    json: dict
    frame_bytes: int
    base_pps: float
    pg_id: Optional[int]
    rule: Optional[str]           # "stats", "latency" or None
    rate_pps: float = 0.0         # after the multiplier
    started: Optional[float] = None
    stopped: Optional[float] = None
    run_end: Optional[float] = None
    scale: float = 1.0            # share of its rate the server really sends
    stretch: float = 1.0

    @property
    def is_latency(self) -> bool:
        return self.rule == "latency"


@dataclass
class SimPort:
    index: int
    link_up: bool = True
    owner: str = ""
    session_id: int = 0
    handler: str = ""
    service: bool = False
    dst_mac: str = "00:00:00:00:00:00"
    dst_configured: bool = False
    streams: dict = field(default_factory=dict)       # (profile, stream_id) -> SimStream
    state: str = "IDLE"
    # counters of streams already removed (port counters keep counting, pgid ones go)
    base_opackets: int = 0
    base_obytes: int = 0
    base_ipackets: int = 0
    base_ibytes: int = 0


class TrexDouble:
    """A TRex stateless server stand-in; use as a context manager or call start()/stop().

    Parameters (all optional):

    * ``capacity_pps``: frames/s the DUT forwards per direction (None: unlimited);
    * ``loss_ratio``: share of the forwarded frames the DUT still drops (0..1);
    * ``foreign_pps``: frames/s arriving at every port that belong to no test stream
      (ARP/LLDP chatter): port counters see them, flow stats do not;
    * ``stretch``: the server needs duration x stretch to send a trial's frames;
    * ``tx_limit_pps``: the most a port sends per second (the rest stays unsent);
    * ``tx_ceiling_pps``: the most a port sends per second, but it sends every frame (a
      replaying server: above the ceiling the trial stretches to rate / ceiling x duration);
    * ``api``: (major, minor) of the server's STL API; (4, 6) behaves like TRex v2.41;
    * ``owners``: {port: user} ports already acquired by another user;
    * ``link_down``: ports whose link is down;
    * ``reject_stream``: add_stream fails with this text (a server-side refusal);
    * ``inflight_s``: frames reach the rx port this long after they were sent;
    * ``latency_usec``: (min, max) one-way latency of received probes, usec.
    """

    def __init__(self, *, capacity_pps: Optional[float] = None, loss_ratio: float = 0.0,
                 foreign_pps: float = 0.0, stretch: float = 1.0,
                 tx_limit_pps: Optional[float] = None, tx_ceiling_pps: Optional[float] = None, api: tuple = (5, 1),
                 version: Optional[str] = None, owners: Optional[dict] = None,
                 link_down: tuple = (), reject_stream: Optional[str] = None,
                 inflight_s: float = 0.05, latency_usec: tuple = (12.0, 140.0),
                 port_count: int = 2, speed_gbps: float = 0.0) -> None:
        self.capacity_pps = capacity_pps
        self.loss_ratio = loss_ratio
        self.foreign_pps = foreign_pps
        self.stretch = stretch
        self.tx_limit_pps = tx_limit_pps
        self.tx_ceiling_pps = tx_ceiling_pps
        self.api = tuple(api)
        self.version = version or ("v3.02" if self.api[0] >= 5 else "v2.41")
        self.reject_stream = reject_stream
        self.inflight_s = inflight_s
        self.latency_usec = latency_usec
        self.speed_gbps = speed_gbps
        self.api_h = "".join(random.choice(string.ascii_letters) for _ in range(8))
        self.ports = {i: SimPort(i, link_up=i not in set(link_down)) for i in range(port_count)}
        for p, user in (owners or {}).items():
            port = self.ports[p]
            port.owner, port.session_id, port.handler = user, 4242, self._token()
        self.t_boot = _now()
        self._last_global = 0.0
        self.ver_pool = 0
        self.ver_ids: dict = {}        # pg_id -> ver_id while a stream uses it
        self.sessions: dict = {}       # session_id -> {"seq": n, "events": []}
        self.calls: list = []          # (method, params) of every request, in order
        self.reads_during_tx: list = []  # counter reads while a port transmitted
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._ctx = zmq.Context()
        self._rep = self._ctx.socket(zmq.REP)
        self._pub = self._ctx.socket(zmq.PUB)
        self._rep.setsockopt(zmq.LINGER, 0)
        self._pub.setsockopt(zmq.LINGER, 0)
        self.sync_port = self._rep.bind_to_random_port("tcp://127.0.0.1")
        self.async_port = self._pub.bind_to_random_port("tcp://127.0.0.1")

    # ------------------------------------------------------------ lifecycle
    def start(self) -> "TrexDouble":
        self._thread = threading.Thread(target=self._serve, name="trex-double", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=5)
        self._rep.close(0)
        self._pub.close(0)
        self._ctx.term()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def methods(self) -> list:
        return [m for m, _ in self.calls]

    # ------------------------------------------------------------ transport
    def _serve(self) -> None:
        poller = zmq.Poller()
        poller.register(self._rep, zmq.POLLIN)
        while not self._stop.is_set():
            if poller.poll(10):
                raw = self._rep.recv()
                self._rep.send(self._handle_raw(raw))
            self._tick()

    def _handle_raw(self, raw: bytes) -> bytes:
        zipped = len(raw) >= 8 and struct.unpack(">I", raw[:4])[0] == MAGIC
        if zipped:
            body = zlib.decompress(raw[8:])
            if len(body) != struct.unpack(">I", raw[4:8])[0]:
                zipped, body = False, raw
        else:
            body = raw
        try:
            req = json.loads(body.decode())
        except ValueError:
            resp = {"jsonrpc": "2.0", "id": None,
                    "error": {"code": -32700, "message": "Bad JSON Format"}}
        else:
            if isinstance(req, list):
                answers = [self._handle_one(r) for r in req]
                resp = answers[0] if len(answers) == 1 else answers
            else:
                resp = self._handle_one(req)
        out = json.dumps(resp).encode()
        if zipped:
            out = struct.pack(">II", MAGIC, len(out)) + zlib.compress(out)
        return out

    def _handle_one(self, req: dict) -> dict:
        msg_id = req.get("id")
        if msg_id is None:
            return {"jsonrpc": "2.0", "id": None,
                    "error": {"code": ERR_INVALID_REQ, "message": "Missing 'id' field"}}
        method = req.get("method", "")
        params = req.get("params", {})
        self.calls.append((method, json.loads(json.dumps(params))))
        fn = getattr(self, "rpc_" + method, None)
        if fn is None:
            return {"jsonrpc": "2.0", "id": msg_id,
                    "error": {"code": ERR_METHOD, "message": f"Method {method} not registered"}}
        try:
            if method not in NOAPI and params.get("api_h") != self.api_h:
                raise RpcError("API verification failed - API handler provided mismatch for "
                               "class: 'STL'")
            if method in OWNED:
                port = self._port(params)
                if not port.owner:
                    raise RpcError("please acquire the port before modifying port state")
                if params.get("handler") != port.handler:
                    raise RpcError("port is not owned by you or your current executing session")
            result = fn(params)
        except RpcError as e:
            return {"jsonrpc": "2.0", "id": msg_id,
                    "error": {"code": e.code, "message": e.message, "specific_err": e.specific}}
        return {"jsonrpc": "2.0", "id": msg_id, "result": result}

    # ------------------------------------------------------------ events
    @property
    def legacy(self) -> bool:
        """STL API 4.x servers (TRex <= v2.87) push events and stats as JSON on the PUB socket."""
        return self.api[0] < 5

    def _publish(self, msg: dict) -> None:
        self._pub.send(json.dumps(msg).encode())

    def _publish_global(self, baseline: bool = False) -> None:
        data = self.rpc_get_global_stats({}, record=False)
        for p in self.ports:
            st = self.rpc_get_port_stats({"port_id": p}, record=False)
            data.update({f"{k}-{p}": v for k, v in st.items()})
        self._publish({"name": "trex-global", "type": 0, "data": data, "baseline": baseline})

    def _event(self, ev_type: int, data: dict) -> None:
        if self.legacy:
            self._publish({"name": "trex-event", "type": ev_type, "data": data})
            return
        for s in self.sessions.values():
            s["events"].append({"name": "trex-event", "type": ev_type, "data": data,
                                "seq": s["seq"]})
            s["seq"] += 1
        self._pub.send(b"{}")

    # ------------------------------------------------------------ helpers
    @staticmethod
    def _token() -> str:
        return "".join(random.choice(string.ascii_letters + string.digits) for _ in range(8))

    def _port(self, params) -> SimPort:
        try:
            return self.ports[int(params["port_id"])]
        except (KeyError, TypeError, ValueError):
            ids = " ".join(str(i) for i in self.ports)
            raise RpcError(f"invalid port id - should be: {ids}") from None

    def _transmitting(self) -> bool:
        return any(p.state == "TX" for p in self.ports.values())

    def _peer(self, p: int) -> int:
        return p ^ 1

    # ------------------------------------------------------------ traffic model
    def _sent(self, s: SimStream, t: float) -> int:
        """Frames stream ``s`` had sent by time ``t``."""
        if s.started is None or t <= s.started:
            return 0
        end = min(x for x in (t, s.stopped, s.run_end) if x is not None)
        if s.run_end is not None and end >= s.run_end and (s.stopped is None or s.stopped >= s.run_end):
            # ran to completion: every frame of the intended duration that the port could send
            return int(round(s.rate_pps * s.scale * (s.run_end - s.started) / s.stretch))
        return int(s.rate_pps * s.scale * (end - s.started) / s.stretch)

    def _active_time(self, s: SimStream, t: float) -> float:
        if s.started is None or t <= s.started:
            return 0.0
        end = min(x for x in (t, s.stopped, s.run_end) if x is not None)
        return end - s.started

    def _direction_rx(self, port: SimPort, t: float) -> dict:
        """Frames of each stream of ``port`` that reached the peer port by time ``t``."""
        seen = t - self.inflight_s
        sent = {k: self._sent(s, seen) for k, s in port.streams.items()}
        total = sum(sent.values())
        if total == 0:
            return {k: 0 for k in sent}
        fwd = float(total)
        if self.capacity_pps is not None:
            span = max((self._active_time(s, seen) for s in port.streams.values()), default=0.0)
            fwd = min(fwd, self.capacity_pps * span)
        fwd *= 1.0 - self.loss_ratio
        return {k: int(n * fwd / total) for k, n in sent.items()}

    def _finish_due(self) -> None:
        t = _now()
        for port in self.ports.values():
            if port.state != "TX":
                continue
            running = [s for s in port.streams.values() if s.started is not None and s.stopped is None]
            if running and all(s.run_end is not None and t >= s.run_end for s in running):
                for s in running:
                    s.stopped = s.run_end
                port.state = "STREAMS"
                self._event(EV_PROFILE_FINISHED_TX, {"port_id": port.index, "profile_id": "_"})
                self._event(EV_PORT_FINISHED_TX, {"port_id": port.index})

    def _tick(self) -> None:
        self._finish_due()
        if self.legacy and _now() - self._last_global >= 0.5:
            self._last_global = _now()
            self._publish_global()

    def _fold_counters(self, port: SimPort, keys) -> None:
        """Keep removed streams' frames in the port counters (they are not pgid counters)."""
        t = _now() + self.inflight_s + 1e9  # everything in flight has landed by now
        rx = self._direction_rx(port, t)
        peer = self.ports.get(self._peer(port.index))
        for k in keys:
            s = port.streams[k]
            n = self._sent(s, t)
            port.base_opackets += n
            port.base_obytes += n * s.frame_bytes
            if peer is not None:
                peer.base_ipackets += rx[k]
                peer.base_ibytes += rx[k] * s.frame_bytes

    # ------------------------------------------------------------ RPC: session
    def rpc_get_version(self, params):
        return {"version": self.version, "build_date": "Jan  1 2024", "build_time": "00:00:00",
                "built_by": "trex-double", "mode": "STL"}

    def rpc_ping(self, params):
        return {"ts": time.time()}

    def rpc_api_sync_v2(self, params):
        name, major, minor = params.get("name"), params.get("major"), params.get("minor")
        if name != "STL":
            raise RpcError(f"RPC configuration mismatch - server RPC configuration: 'STL', "
                           f"client RPC configuration: '{name}'")
        smaj, smin = self.api
        err = None
        if major < smaj:
            err = "RPC version mismatch: a newer client version is required"
        elif major > smaj or minor > smin:
            err = "Version mismatch: your client version is too new to be supported by the server"
        if err:
            raise RpcError(f"{err}\n(API type 'STL': - server: '{smaj}.{smin}', "
                           f"client: '{major}.{minor}')")
        return {"api_h": self.api_h}

    def rpc_api_sync(self, params):
        """The old handshake (trex-stl-lib): same version rule as api_sync_v2, class 'core'."""
        vers = params.get("api_vers") or [{}]
        v = vers[0]
        res = self.rpc_api_sync_v2({"name": "STL", "major": v.get("major"), "minor": v.get("minor")})
        return {"api_vers": [{"type": v.get("type", "core"), "api_h": res["api_h"]}]}

    def rpc_get_async_events(self, params):
        sid = params["session_id"]
        if sid not in self.sessions:
            self.sessions[sid] = {"seq": 0, "events": []}
            return {"data": []}
        events, self.sessions[sid]["events"] = self.sessions[sid]["events"], []
        return {"data": events}

    def rpc_publish_now(self, params):
        if self.legacy:
            self._publish_global(bool(params.get("baseline")))
            self._publish({"name": "trex-barrier", "type": params["key"], "data": {}})
        else:
            self._pub.send(b"{}")
        return {}

    def rpc_get_supported_cmds(self, params):
        return sorted(n[4:] for n in dir(self) if n.startswith("rpc_"))

    def rpc_get_system_info(self, params):
        ports = []
        for p in self.ports.values():
            ports.append({
                "index": p.index, "driver": "net_af_packet", "pci_addr": "",
                "numa": -1, "hw_mac": f"02:00:00:00:00:{p.index + 1:02x}", "stack": "legacy",
                "description": "trex-double virtual port",
                "rx": {"caps": ["flow_stats", "latency", "rx_bytes", "tpg"], "counters": 1023},
                "is_fc_supported": False, "is_led_supported": False, "is_link_supported": False,
                "is_prom_supported": False, "is_vxlan_supported": False,
                "is_ieee1588_supported": False, "is_virtual": True, "supp_speeds": [],
                "cores": [0]})
        return {"hostname": "trex-double", "uptime": "0", "dp_core_count": 1,
                "dp_core_count_per_port": 1, "core_type": "trex-double",
                "is_multiqueue_mode": False, "advanced_per_stream_stats": True,
                "port_count": len(self.ports), "ports": ports}

    def rpc_get_port_xstats_names(self, params):
        self._port(params)
        return {"xstats_names": XSTATS}

    def rpc_get_port_xstats_values(self, params):
        self._port(params)
        return {"xstats_values": [0] * len(XSTATS)}

    def rpc_get_global_stats(self, params, record=True):
        if record and self._transmitting():
            self.reads_during_tx.append("get_global_stats")
        keys = ["m_cpu_util", "m_cpu_util_raw", "m_bw_per_core", "m_rx_cpu_util", "m_rx_core_pps",
                "m_platform_factor", "m_tx_bps", "m_rx_bps", "m_tx_pps", "m_rx_pps", "m_tx_cps",
                "m_tx_expected_cps", "m_tx_expected_pps", "m_tx_expected_bps", "m_rx_drop_bps",
                "m_active_flows", "m_open_flows", "m_total_tx_pkts", "m_total_rx_pkts",
                "m_total_tx_bytes", "m_total_rx_bytes", "m_total_alloc_error", "m_total_queue_full",
                "m_total_queue_drop", "m_socket_util", "m_active_sockets", "m_total_clients",
                "m_total_servers"]
        return {k: 0 for k in keys}

    def rpc_get_utilization(self, params):
        return {"cpu": [{"history": [0] * 20, "ports": [0, 1]}], "mbuf_stats": {}}

    def rpc_get_tpg_status(self, params):
        return {"enabled": False, "data": {"username": "", "acquired_ports": [], "rx_ports": [],
                                           "num_tpgids": 0, "num_tags": 0}}

    def rpc_get_owner(self, params):
        return {"owner": self._port(params).owner}

    # ------------------------------------------------------------ RPC: ports
    def rpc_get_port_status(self, params):
        port = self._port(params)
        res = {"owner": port.owner, "state": port.state, "service": port.service,
               "service_filtered": False, "profile_count": 1 if port.streams else 0,
               "max_stream_id": max((k[1] for k in port.streams), default=0)}
        if params.get("profile_id") is not None:
            res["state_profile"] = {"_": port.state} if port.streams else {}
        res["attr"] = {
            "promiscuous": {"enabled": False}, "multicast": {"enabled": False},
            "link": {"up": port.link_up}, "speed": self.speed_gbps, "rx_filter_mode": "hw",
            "vxlan_fs": [], "fc": {"mode": 0},
            "layer_cfg": {"ether": {"src": f"02:00:00:00:00:{port.index + 1:02x}",
                                    "dst": port.dst_mac,
                                    "state": "configured" if port.dst_configured else "unconfigured"},
                          "ipv4": {"state": "none"}, "ipv6": {"enabled": False}},
            "vlan": {"tags": []}}
        res["rx_info"] = {"latency": {"is_active": False}, "queue": {"is_active": False},
                          "stack": {"is_active": True}, "grat_arp": {"is_active": False},
                          "capture_port": {"is_active": False}}
        return res

    def rpc_acquire(self, params):
        port = self._port(params)
        user, sid, force = params["user"], params["session_id"], params["force"]
        used_force = bool(port.owner) and force
        if port.owner and not force:
            if port.owner != user:
                raise RpcError(f"port is already taken by '{port.owner}'")
            if port.session_id != sid:
                raise RpcError(f"port is already owned by another session of '{user}'")
        port.owner, port.session_id, port.handler = user, sid, self._token()
        self.sessions.setdefault(sid, {"seq": 0, "events": []})
        self._event(EV_PORT_ACQUIRED, {"port_id": port.index, "who": user, "session_id": sid,
                                       "force": used_force})
        return port.handler

    def rpc_release(self, params):
        port = self._port(params)
        data = {"port_id": port.index, "who": port.owner, "session_id": port.session_id}
        port.owner, port.session_id, port.handler = "", 0, ""
        self._event(EV_PORT_RELEASED, data)
        return {}

    def rpc_service(self, params):
        self._port(params).service = bool(params["enabled"])
        return {}

    def rpc_set_port_attr(self, params):
        self._port(params)
        return {}

    def rpc_set_rx_feature(self, params):
        port = self._port(params)
        if params.get("enabled") and not port.service:
            raise RpcError("setting RX queue is only available under service mode")
        return {}

    def rpc_set_l2(self, params):
        port = self._port(params)
        if not port.owner or params.get("handler") != port.handler:
            raise RpcError("port is not owned by you or your current executing session")
        if not port.service:
            raise RpcError("port service mode must be enabled for configuring L2 mode")
        port.dst_mac, port.dst_configured = params["dst_mac"], True
        return {}

    # ------------------------------------------------------------ RPC: streams
    def rpc_get_profile_list(self, params):
        return ["_"] if self._port(params).streams else []

    def rpc_get_all_streams(self, params):
        port = self._port(params)
        streams = {str(k[1]): s.json for k, s in port.streams.items()}
        if params.get("profile_id") == "*":
            return {"profiles": {"_": streams} if streams else {}}
        return {"streams": streams}

    def rpc_add_stream(self, params):
        port = self._port(params)
        if port.state == "TX":
            raise RpcError("add_stream - port is in an invalid state")
        profile = str(params.get("profile_id", "_"))
        sid = int(params["stream_id"])
        st = params["stream"]
        if (profile, sid) in port.streams:
            raise RpcError(f"stream {sid} already exists in profile_id({profile})")
        pkt = base64.b64decode(st["packet"]["binary"])
        if not 14 <= len(pkt) <= 9216:
            raise RpcError(f"Bad packet size provided: {len(pkt)}. Should be between 14 and 9216")
        if self.reject_stream:
            raise RpcError(self.reject_stream)
        fs = st.get("flow_stats", {"enabled": False})
        rule = fs.get("rule_type") if fs.get("enabled") else None
        pg_id = int(fs["stream_id"]) if rule else None
        if rule == "latency" and len(pkt) - 42 < 16:
            raise RpcError("Need at least 16 payload bytes for payload rules. Packet only has "
                           f"{len(pkt) - 42} bytes")
        if pg_id is not None:
            for other in self.ports.values():
                for s in other.streams.values():
                    if s.pg_id == pg_id and s.rule != rule:
                        raise RpcError(f"Stream with pg_id {pg_id} was configured with a "
                                       "different rule type")
            self.ver_ids.setdefault(pg_id, self._next_ver())
        rate = st["mode"]["rate"]
        if rate["type"] != "pps":
            raise RpcError("trex-double: only pps stream rates are simulated")
        port.streams[(profile, sid)] = SimStream(
            stream_id=sid, profile=profile, json=st, frame_bytes=max(len(pkt), 60) + 4,
            base_pps=float(rate["value"]), pg_id=pg_id, rule=rule)
        port.state = "STREAMS"
        return {}

    def _next_ver(self) -> int:
        self.ver_pool += 1
        return self.ver_pool

    def _drop_pgids(self) -> None:
        used = {s.pg_id for p in self.ports.values() for s in p.streams.values()}
        for pg in list(self.ver_ids):
            if pg not in used:
                del self.ver_ids[pg]

    def rpc_remove_all_streams(self, params):
        port = self._port(params)
        if port.state == "TX":
            raise RpcError("remove_all_streams - port is in an invalid state: TX")
        keys = list(port.streams)
        self._fold_counters(port, keys)
        for k in keys:
            del port.streams[k]
        self._drop_pgids()
        port.state = "IDLE"
        return {}

    def rpc_remove_rx_filters(self, params):
        self._port(params)
        return {}

    # ------------------------------------------------------------ RPC: traffic
    def rpc_start_traffic(self, params):
        port = self._port(params)
        if port.state == "TX":
            raise RpcError("start - port is in an invalid state: TX")
        if not port.streams:
            raise RpcError("start - port is in an invalid state: IDLE")
        mul = params["mul"]
        if mul.get("op") != "abs":
            raise RpcError("start message can only specify absolute speed rate", code=ERR_PARAMS,
                           message="Bad parameters for method")
        if mul["value"] == 0:
            raise RpcError("multiplier can't be zero", code=ERR_PARAMS,
                           message="Bad parameters for method")
        force = bool(params["force"])
        if not force and not port.link_up:
            raise RpcError("Link state is DOWN.")
        streams = list(port.streams.values())
        fixed = sum(s.base_pps for s in streams if s.is_latency)
        var = sum(s.base_pps for s in streams if not s.is_latency)
        fixed_l1 = sum(s.base_pps * (s.frame_bytes + 20) * 8 for s in streams if s.is_latency)
        var_l1 = sum(s.base_pps * (s.frame_bytes + 20) * 8 for s in streams if not s.is_latency)
        if mul["type"] == "raw":
            factor = mul["value"]
        elif mul["type"] == "pps":
            if mul["value"] - fixed <= 0:
                raise RpcError(f"current stream configuration enforces a minimum rate of "
                               f"'{fixed}' pps")
            factor = (mul["value"] - fixed) / var if var else 1.0
        elif mul["type"] == "percentage":
            factor = (mul["value"] / 100.0 * self.speed_gbps * 1e9 - fixed_l1) / var_l1
        else:
            raise RpcError(f"trex-double: multiplier type {mul['type']} is not simulated")
        l1 = var_l1 * factor + fixed_l1
        if l1 <= 0 or (mul["type"] == "percentage" and self.speed_gbps == 0):
            raise RpcError("Effective bandwidth is zero, this means that your dpdk driver does "
                           "not know the link throughput (virtual), please use absolute "
                           f"bandwidth  {l1}")
        if not force and l1 / (self.speed_gbps * 1e9 or 1e-300) > 1.0001:
            raise RpcError(f"Expected L1 B/W: '{l1 / 1e9:g} Gbps' exceeds port line rate: "
                           f"'{self.speed_gbps:g} Gbps'")
        t = _now()
        duration = float(params["duration"])
        total = sum(s.base_pps * (1.0 if s.is_latency else factor) for s in streams)
        scale = min(1.0, self.tx_limit_pps / total) if self.tx_limit_pps and total else 1.0
        stretch = self.stretch
        if self.tx_ceiling_pps and total * scale > self.tx_ceiling_pps:
            stretch = max(stretch, total * scale / self.tx_ceiling_pps)
        for s in streams:
            # a restarted stream keeps its pgid counters only in the real server's totals;
            # nfvlab removes and re-adds streams every trial, so a start is always fresh
            s.rate_pps = s.base_pps * (1.0 if s.is_latency else factor)
            s.started, s.stopped, s.scale, s.stretch = t, None, scale, stretch
            s.run_end = t + duration * stretch if duration > 0 else None
        port.state = "TX"
        self._event(EV_PROFILE_STARTED, {"port_id": port.index, "profile_id": "_"})
        return {"multiplier": factor, "ts": time.time()}

    def rpc_stop_traffic(self, params):
        port = self._port(params)
        if port.state != "TX":
            return {}
        t = _now()
        for s in port.streams.values():
            if s.started is not None and s.stopped is None:
                s.stopped = t if s.run_end is None else min(t, s.run_end)
        port.state = "STREAMS"
        self._event(EV_PROFILE_STOPPED, {"port_id": port.index, "profile_id": "_"})
        self._event(EV_PORT_STOPPED, {"port_id": port.index})
        return {}

    # ------------------------------------------------------------ RPC: counters
    def rpc_get_port_stats(self, params, record=True):
        port = self._port(params)
        if record and self._transmitting():
            self.reads_during_tx.append("get_port_stats")
        t = _now()
        opk = port.base_opackets + sum(self._sent(s, t) for s in port.streams.values())
        obytes = port.base_obytes + sum(self._sent(s, t) * s.frame_bytes
                                        for s in port.streams.values())
        ipk, ibytes = port.base_ipackets, port.base_ibytes
        peer = self.ports.get(self._peer(port.index))
        if peer is not None:
            rx = self._direction_rx(peer, t)
            ipk += sum(rx.values())
            ibytes += sum(rx[k] * s.frame_bytes for k, s in peer.streams.items())
        foreign = int(self.foreign_pps * (t - self.t_boot))
        ipk += foreign
        ibytes += foreign * 64
        return {"opackets": opk, "obytes": obytes, "ipackets": ipk, "ibytes": ibytes,
                "ierrors": 0, "oerrors": 0, "m_total_tx_bps": 0.0, "m_total_tx_pps": 0.0,
                "m_total_rx_bps": 0.0, "m_total_rx_pps": 0.0, "m_cpu_util": 0.0}

    def rpc_get_active_pgids(self, params):
        ids = {"flow_stats": [], "latency": []}
        for p in self.ports.values():
            for s in p.streams.values():
                if s.rule == "stats" and s.pg_id not in ids["flow_stats"]:
                    ids["flow_stats"].append(s.pg_id)
                elif s.rule == "latency" and s.pg_id not in ids["latency"]:
                    ids["latency"].append(s.pg_id)
        return {"ids": ids}

    def rpc_get_pgid_stats(self, params):
        if self._transmitting():
            self.reads_during_tx.append("get_pgid_stats")
        wanted = [int(x) for x in params["pgids"]]
        t = _now()
        port_ids = [str(i) for i in self.ports]
        flow, lat, ver = {}, {"g": {"bad_hdr": 0, "old_flow": 0}}, {}
        rx_by_port = {p.index: self._direction_rx(p, t) for p in self.ports.values()}
        for pg in wanted:
            members = [(p, k, s) for p in self.ports.values() for k, s in p.streams.items()
                       if s.pg_id == pg]
            if not members:
                continue
            ver[str(pg)] = self.ver_ids[pg]
            e = {f: {x: 0 for x in port_ids} for f in ("rp", "rb", "tp", "tb")}
            e.update({f: {x: 0.0 for x in port_ids} for f in ("rbs", "rps", "tbs", "tps")})
            rx_total = 0
            for p, k, s in members:
                n = self._sent(s, t)
                e["tp"][str(p.index)] += n
                e["tb"][str(p.index)] += n * s.frame_bytes
                r = rx_by_port[p.index][k]
                rx_total += r
                peer = str(self._peer(p.index))
                if peer in e["rp"]:
                    e["rp"][peer] += r
                    e["rb"][peer] += r * s.frame_bytes
            flow[str(pg)] = e
            if members[0][2].is_latency:
                lat[str(pg)] = {"lat": self._latency(rx_total)}
        return {"flow_stats": flow, "latency": lat, "ver_id": ver}

    def _latency(self, n: int) -> dict:
        """TRex's latency JSON for ``n`` received probes (deterministic samples)."""
        lo, hi = self.latency_usec
        samples = [lo + (hi - lo) * (i / max(1, n - 1)) ** 3 for i in range(n)]
        hist: dict = {}
        short = 0
        for usec in samples:
            d = int(usec / 10)  # units of 10 usec, as CTimeHistogram::Add
            if d == 0:
                short += 1
                continue
            base = 10
            while d >= 10:
                d //= 10
                base *= 10
            key = str(base * d)
            hist[key] = hist.get(key, 0) + 1
        if short:
            hist["0"] = short
        if not samples:
            return {"total_max": 0, "total_min": 4294967295, "last_max": 0, "average": 0.0,
                    "histogram": {}, "jit": 0}
        mean = sum(samples) / n
        jit = sum(abs(b - a) for a, b in zip(samples, samples[1:])) / max(1, n - 1)
        return {"total_max": int(max(samples)), "total_min": int(min(samples)),
                "last_max": int(max(samples)), "average": mean, "histogram": hist,
                "jit": int(jit)}

