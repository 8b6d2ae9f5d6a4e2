"""TCP and HTTP benchmarks with real tools (experiment E): iperf3 throughput, wrk against nginx.

The tools run in network namespaces through a :class:`Spawner` (the embedded lab's
``spawn``: every process is recorded in the lab's state and stopped at teardown);
their output is parsed into :class:`IperfResult` and :class:`WrkResult`, and
:func:`results_frame` makes a tidy table of either.

iperf3 runs with ``-J`` (its JSON report); wrk runs with a small Lua ``done`` hook
(:data:`WRK_DONE_LUA`) that prints exact counts and latency percentiles as one JSON
line, instead of wrk's rounded human summary ("1.39ms", "156.53MB").
"""
from __future__ import annotations

import json
import secrets
import subprocess
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

import pandas as pd

from nfvlab.scenario.cni import CniGrid, Endpoint, IperfParams, Step, WrkParams
from nfvlab.system import signals

__all__ = [
    "WRK_DONE_LUA",
    "IperfResult",
    "Spawner",
    "ToolError",
    "WrkResult",
    "parse_iperf3",
    "parse_wrk",
    "outcome",
    "results_frame",
    "run_iperf3",
    "run_step",
    "run_wrk",
    "start_nginx",
    "tool_versions",
]

IPERF_PORT = 5201


class ToolError(RuntimeError):
    """A benchmark tool failed or printed something that is not a result (one line, with the tool's words)."""


class Spawner(Protocol):
    """What starts tool processes (``nfvlab.labs.embedded.Lab`` is one): recorded, torn down with the lab."""

    def make_run_dir(self) -> Path:
        """The lab's private directory (created and recorded for teardown)."""

    def spawn(self, name: str, argv: Sequence[str], *, ns: str | None = None) -> subprocess.Popen: ...


# -- results and parsers -------------------------------------------------------------------------

@dataclass(frozen=True)
class IperfResult:
    """One iperf3 TCP run, summed over its parallel streams."""

    goodput_bps: float
    """Payload bits per second the receiver got (what the seed's figures plot)."""
    sent_bps: float
    """Payload bits per second the sender wrote."""
    received_bytes: int
    duration_s: float
    """The receiver's measurement interval."""
    retransmits: int
    parallel_streams: int


def parse_iperf3(text: str) -> IperfResult:
    """An :class:`IperfResult` from ``iperf3 -J`` output; :class:`ToolError` for an error report or non-JSON."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        raise ToolError(f"iperf3: not a JSON report: {text.strip()[:200]!r}") from None
    if doc.get("error"):
        raise ToolError(f"iperf3: {doc['error']}")
    try:
        end, start = doc["end"], doc["start"]
        sent, received = end["sum_sent"], end["sum_received"]
        return IperfResult(goodput_bps=float(received["bits_per_second"]),
                           sent_bps=float(sent["bits_per_second"]),
                           received_bytes=int(received["bytes"]), duration_s=float(received["seconds"]),
                           retransmits=int(sent.get("retransmits", 0)),
                           parallel_streams=int(start["test_start"]["num_streams"]))
    except (KeyError, TypeError, ValueError) as err:
        raise ToolError(f"iperf3: report without {err}: not a TCP client report") from None


#: wrk's ``done`` hook: one JSON line of exact counts (bytes, microseconds).
WRK_DONE_LUA = """\
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('{"nfvlab_wrk": 1, "duration_us": %d, "requests": %d, "bytes": %d, '
    .. '"errors": {"connect": %d, "read": %d, "write": %d, "status": %d, "timeout": %d}, '
    .. '"latency_us": {"mean": %.3f, "max": %d, "p50": %d, "p90": %d, "p99": %d}}\\n',
    summary.duration, summary.requests, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency.mean, latency.max, latency:percentile(50), latency:percentile(90), latency:percentile(99)))
end
"""


@dataclass(frozen=True)
class WrkResult:
    """One wrk run: HTTP requests against one URL."""

    requests_per_s: float
    transfer_bytes_per_s: float
    """Response bytes (headers and bodies) read per second."""
    requests: int
    transfer_bytes: int
    duration_s: float
    errors: int
    """Connect, read, write and timeout errors plus non-2xx/3xx responses."""
    latency_mean_us: float
    latency_p50_us: int
    latency_p90_us: int
    latency_p99_us: int
    latency_max_us: int


def parse_wrk(text: str) -> WrkResult:
    """A :class:`WrkResult` from wrk's output with the :data:`WRK_DONE_LUA` hook; ToolError otherwise."""
    line = next((ln for ln in text.splitlines() if ln.startswith('{"nfvlab_wrk"')), None)
    if line is None:
        raise ToolError(f"wrk: no result line (was it run with the done hook?): {text.strip()[-200:]!r}")
    try:
        d = json.loads(line)
        duration_s = d["duration_us"] / 1e6
        lat = d["latency_us"]
        if duration_s <= 0:
            raise ValueError("duration_us <= 0")
        return WrkResult(requests_per_s=d["requests"] / duration_s, transfer_bytes_per_s=d["bytes"] / duration_s,
                         requests=int(d["requests"]), transfer_bytes=int(d["bytes"]), duration_s=duration_s,
                         errors=int(sum(d["errors"].values())), latency_mean_us=float(lat["mean"]),
                         latency_p50_us=int(lat["p50"]), latency_p90_us=int(lat["p90"]),
                         latency_p99_us=int(lat["p99"]), latency_max_us=int(lat["max"]))
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as err:
        raise ToolError(f"wrk: bad result line ({err}): {line[:200]!r}") from None


def results_frame(rows: Sequence[tuple[dict, IperfResult | WrkResult]]) -> pd.DataFrame:
    """A tidy frame: one row per run, the labels of each run then its result's fields.

    Columns: the label keys (e.g. ``data_path``, ``link_mtu_bytes``, ``direction``, ``repetition``),
    then for iperf3 ``goodput_bps, sent_bps, received_bytes, duration_s, retransmits,
    parallel_streams``; for wrk ``requests_per_s, transfer_bytes_per_s, requests, transfer_bytes,
    duration_s, errors, latency_mean_us, latency_p50_us, latency_p90_us, latency_p99_us,
    latency_max_us``.
    """
    return pd.DataFrame([{**labels, **asdict(result)} for labels, result in rows])


# -- running the tools ---------------------------------------------------------------------------

def _listening(ns: str, port: int) -> bool:
    out = subprocess.run(["ip", "netns", "exec", ns, "ss", "-Hltn", f"sport = :{port}"],
                         check=False, capture_output=True, text=True)
    return bool(out.stdout.strip())


def _wait_listening(lab: Spawner, proc: subprocess.Popen, ns: str, port: int, what: str,
                    timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not _listening(ns, port):
        signals.checkpoint()
        if proc.poll() is not None:
            raise ToolError(f"{what} exited with {proc.returncode} before listening on port {port}")
        if time.monotonic() > deadline:
            raise ToolError(f"{what}: not listening on port {port} after {timeout_s:g} s")
        time.sleep(0.05)


def _run_client(lab: Spawner, name: str, argv: list[str], ns: str, timeout_s: float) -> str:
    """Run a client to completion (recorded like every lab process); its output."""
    proc = lab.spawn(name, argv, ns=ns)
    deadline = time.monotonic() + timeout_s
    while proc.poll() is None:
        signals.checkpoint()
        if time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            raise ToolError(f"{argv[0]}: no result after {timeout_s:g} s")
        time.sleep(0.05)
    return (lab.make_run_dir() / f"{name}.log").read_text(errors="replace")


def run_iperf3(lab: Spawner, *, server_ns: str, server_ip: str, client_ns: str,
               params: IperfParams | None = None, port: int = IPERF_PORT) -> IperfResult:
    """One iperf3 TCP run from ``client_ns`` to a one-off server on ``server_ip`` in ``server_ns``."""
    params = params or IperfParams()
    tag = secrets.token_hex(3)
    server = lab.spawn(f"iperf3-server-{tag}", ["iperf3", "-s", "-1", "-B", server_ip, "-p", str(port)],
                       ns=server_ns)
    _wait_listening(lab, server, server_ns, port, "iperf3 server")
    text = _run_client(lab, f"iperf3-client-{tag}",
                       ["iperf3", "-c", server_ip, "-p", str(port), "-P", str(params.parallel_streams),
                        "-t", f"{params.duration_s:g}", "-J"], client_ns, timeout_s=params.duration_s + 20)
    result = parse_iperf3(text)
    server.wait(timeout=10)  # -1: the server exits after its one test
    return result


NGINX_CONF = """\
daemon off;
user root;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  sendfile on;
  keepalive_requests 1000000;
  client_body_temp_path {d}/tmp-body;
  proxy_temp_path {d}/tmp-proxy;
  fastcgi_temp_path {d}/tmp-fastcgi;
  uwsgi_temp_path {d}/tmp-uwsgi;
  scgi_temp_path {d}/tmp-scgi;
  server {{
    listen {ip}:{port};
    root {d}/www;
  }}
}}
"""


def file_name(size_bytes: int) -> str:
    """The URL path of the generated file of ``size_bytes``."""
    return f"f{size_bytes}.bin"


def start_nginx(lab: Spawner, *, ns: str, bind_ip: str, file_bytes: Sequence[int], port: int = 80,
                name: str = "nginx") -> subprocess.Popen:
    """nginx in ``ns`` serving a file of each size in ``file_bytes`` (:func:`file_name`) from the lab's run dir."""
    d = lab.make_run_dir() / name
    (d / "www").mkdir(parents=True, exist_ok=True)
    for size in file_bytes:
        with open(d / "www" / file_name(size), "wb") as f:
            f.write(secrets.token_bytes(size))  # random: nothing along the path can compress it
    conf = d / "nginx.conf"
    conf.write_text(NGINX_CONF.format(d=d, ip=bind_ip, port=port))
    proc = lab.spawn(name, ["nginx", "-c", str(conf)], ns=ns)
    _wait_listening(lab, proc, ns, port, "nginx")
    return proc


def run_wrk(lab: Spawner, *, client_ns: str, url: str, params: WrkParams | None = None) -> WrkResult:
    """One wrk run (``params.threads`` threads, ``params.connections`` connections) against ``url``."""
    params = params or WrkParams()
    script = lab.make_run_dir() / "wrk-done.lua"
    script.write_text(WRK_DONE_LUA)
    text = _run_client(lab, f"wrk-{secrets.token_hex(3)}",
                       ["wrk", "-t", str(params.threads), "-c", str(params.connections),
                        "-d", f"{params.duration_s:g}s", "-s", str(script), url],
                       client_ns, timeout_s=params.duration_s + 20)
    return parse_wrk(text)


# -- experiment E's tool runs on a realized CNI scenario ------------------------------------------

def run_step(lab: Spawner, at: dict[str, Endpoint], grid: CniGrid,
             step: Step) -> tuple[str, IperfResult | WrkResult]:
    """One tool run of experiment E (:func:`nfvlab.scenario.cni.steps`): ``(tool, result)``.

    ``at``: the realized scenario's roles (:data:`nfvlab.scenario.cni.ROLES`). TCP: iperf3 from
    node1 (``node-pod``) or pod1 (``pod-pod``) to pod2; HTTP: wrk from pod1 (``pod-pod``) or node1
    against nginx in pod2 (:func:`start_nginx`), directly or through the service (``host-service``).
    """
    proto, direction, size = step.protocol, step.direction, step.file_bytes
    client = at["pod1" if direction == "pod-pod" else "node1"].ns
    if proto == "tcp":
        return "iperf3", run_iperf3(lab, server_ns=at["pod2"].ns, server_ip=at["pod2"].address, client_ns=client,
                                    params=grid.iperf)
    target = at["service" if direction == "host-service" else "pod2"].address
    return "wrk", run_wrk(lab, client_ns=client, url=f"http://{target}/{file_name(size)}", params=grid.wrk)


def outcome(tool: str, result: IperfResult | WrkResult) -> str:
    """A tool run's result in a progress line."""
    if tool == "iperf3":
        return f"{result.goodput_bps / 1e9:.2f} Gbit/s, {result.retransmits} retransmits"
    return f"{result.requests_per_s:,.0f} requests/s, {result.transfer_bytes_per_s * 8 / 1e9:.2f} Gbit/s"


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
