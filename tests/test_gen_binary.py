"""The embedded generator (nfvlab_gen.c and the sources it lists) on real namespaces and veth pairs.

Every test gets a fresh pair of namespaces joined by one veth pair; IPv6 is off
in them so the kernel sends nothing of its own and interface counters count
exactly the generator's frames: they cross-check the generator's own receive
counts (its BPF counter at the rx port, --count-obj). What a DUT's own frames,
duplicates and drops do to those counts is tested in test_traffic_counting.py.

Exact counts are asked of what a trial sent (:func:`sent_counts`: a stall beyond the
slip budget or a tail left unsent changes nothing there), repeated through
``conftest.until_unspoiled`` only while the host held the generator under half
(:func:`gen_barely_sent`); a test that needs a whole schedule (a queue's latency,
a stall within the budget) asks for a trial the host let run whole (:func:`gen_spoiled`); how
closely the generator keeps time and what latency a known queue shows are
figures of ``bench/generator_accuracy.py``, not assertions here.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Callable, Optional

import pytest

from conftest import until_unspoiled
from nfvlab.traffic.embedded import count_object, gen_binary
from nfvlab.traffic.embedded.generator import schedule

pytestmark = [
    pytest.mark.lab,
    pytest.mark.skipif(
        os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("tc") is None,
        reason="needs root, iproute2 (ip, tc)",
    ),
]

PREFIX = "nfvl-t-gen"
MAC_A, MAC_B = "02:00:00:00:0a:01", "02:00:00:00:0b:01"
IMIX = [(64, 7), (570, 4), (1518, 1)]


def run(*cmd: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, check=check)


def netns_list() -> list[str]:
    out = run("ip", "-j", "netns", "list").stdout.strip()
    return [n["name"] for n in json.loads(out)] if out else []


def delete_leftovers() -> None:
    """Delete the namespaces of test sessions that died (``PREFIX-<pid>-...``); those of a
    session still running (another pytest on this host) are its own."""
    for name in netns_list():
        if not name.startswith(PREFIX + "-"):
            continue
        pid = name[len(PREFIX) + 1:].split("-")[0]
        if not pid.isdigit() or not os.path.exists(f"/proc/{pid}"):
            run("ip", "netns", "del", name, check=False)


@dataclass
class Port:
    ns: str
    ifname: str
    mac: str

    @property
    def spec(self) -> str:
        return f"{self.ns}:{self.ifname}"

    def counters(self) -> dict:
        out = run("ip", "-n", self.ns, "-j", "-s", "link", "show", self.ifname).stdout
        return json.loads(out)[0]["stats64"]


def rx_delta(port: Port, before: dict) -> tuple[int, int]:
    """(packets, bytes) received on port since `before`."""
    now = port.counters()["rx"]
    return now["packets"] - before["rx"]["packets"], now["bytes"] - before["rx"]["bytes"]


@pytest.fixture(scope="module")
def gen() -> str:
    delete_leftovers()
    return str(gen_binary())


@pytest.fixture(scope="module")
def count() -> list[str]:
    """The arguments that make nfvlab-gen count received test frames."""
    return ["--count-obj", str(count_object())]


def counter_programs(bitmap_words: int) -> set[int]:
    """Ids of loaded counter programs whose bitmap has ``bitmap_words`` words.

    The size tells this test's counter apart from those of other trials that
    may run on the host at the same time.
    """
    maps = json.loads(run("bpftool", "-j", "map", "show").stdout or "[]")
    ours = {m["id"] for m in maps if m.get("name") == "bitmap" and m.get("max_entries") == bitmap_words}
    progs = json.loads(run("bpftool", "-j", "prog", "show").stdout or "[]")
    return {p["id"] for p in progs if p.get("name") == "nfvl_count" and ours & set(p.get("map_ids", []))}


def check_counts(s: dict, received_load: int, received_probes: int) -> None:
    """The generator's receive counts of stream ``s`` on a clean veth: exact, nothing else."""
    assert (s["received_load"], s["received_probes"]) == (received_load, received_probes), s
    assert s["received"] == received_load + received_probes
    assert s["duplicates"] == s["reordered"] == s["foreign"] == s["foreign_stale"] == 0, s


@pytest.fixture
def pair(gen):
    """Two namespaces A and B joined by veth gva <-> gvb; always deleted after."""
    names = [f"{PREFIX}-{os.getpid()}-a", f"{PREFIX}-{os.getpid()}-b"]
    try:
        for ns in names:
            run("ip", "netns", "add", ns)
            run("ip", "netns", "exec", ns, "sysctl", "-qw",
                "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
        run("ip", "link", "add", "gva", "netns", names[0], "address", MAC_A, "type", "veth",
            "peer", "name", "gvb", "netns", names[1], "address", MAC_B)
        for ns, ifname in zip(names, ("gva", "gvb")):
            run("ip", "-n", ns, "link", "set", ifname, "up")
        yield Port(names[0], "gva", MAC_A), Port(names[1], "gvb", MAC_B)
    finally:
        for ns in names:
            run("ip", "netns", "del", ns, check=False)


def stream(tx: Port, rx: Port, rate: float, sip="198.18.0.1", dip="198.19.0.2") -> str:
    return f"tx={tx.spec},rx={rx.spec},rate={rate:g},smac={tx.mac},dmac={rx.mac},sip={sip},dip={dip}"


def run_gen(gen: str, *args: str, timeout: float = 60) -> dict:
    """Run one trial (``timeout``: only a guard against a hung generator); its parsed JSON report."""
    proc = subprocess.run([gen, *args], capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def sent_short(out: dict, share: float = 1.0) -> Optional[str]:
    """The streams of a report that sent under ``share`` of their load frames or probes (the default:
    left any unsent), as one line (None: none did)."""
    short = [f"{s['tx']} sent {s['sent']} of {s['intended']} frames, {s['latency']['probes_sent']} of "
             f"{s['probes_intended']} probes" for s in out["streams"]
             if s["sent"] < share * s["intended"] or s["latency"]["probes_sent"] < share * s["probes_intended"]]
    what = "sent short" if share >= 1 else f"sent under {share:.0%}"
    return f"{what}: " + "; ".join(short) if short else None


def gen_barely_sent(out: dict) -> Optional[str]:
    """Why a raw nfvlab-gen report says too little of the path: the host held the generator up until
    a stream sent under half its load frames or probes (:func:`sent_short`); None otherwise. Whatever
    else the host did (stalls beyond the slip budget, a tail left unsent) every frame that left is
    counted exactly: tests that check counts assert them against what was sent (:func:`sent_counts`)."""
    return sent_short(out, share=0.5)


def sent_counts(s: dict, intended: int, probes_intended: int) -> int:
    """Stream ``s`` of a report through a path that drops nothing: it asked for ``intended`` load
    frames and ``probes_intended`` probes, sent at most those, and received exactly what it sent
    (:func:`check_counts`); returns the frames sent, load and probes."""
    lat = s["latency"]
    assert s["intended"] == intended and s["sent"] <= intended, s
    assert s["probes_intended"] == probes_intended and lat["probes_sent"] <= probes_intended, s
    check_counts(s, s["sent"], lat["probes_sent"])
    return s["sent"] + lat["probes_sent"]


def gen_spoiled(out: dict) -> Optional[str]:
    """Why the host spoiled a raw nfvlab-gen trial, from the generator's own report; None for a
    trial it let run whole: invalid (stalls beyond the slip budget, :func:`schedule`), or load
    frames or probes left unsent (the deadline dropped a tail the host held up)."""
    fault = schedule(out).fault
    return f"invalid: {fault}" if fault else sent_short(out)


def clean_gen(gen: str, *args: str, ports: tuple = (), spoiled: Callable[[dict], Optional[str]] = gen_spoiled,
              timeout: float = 60) -> tuple[dict, dict]:
    """A raw trial the host let run whole (``spoiled``, through ``conftest.until_unspoiled``):
    ``(report, counters)``, ``counters`` the ``ports``' interface counters (by spec) read right
    before that trial, for the deltas it is checked against."""
    def attempt():
        before = {p.spec: p.counters() for p in ports}
        return run_gen(gen, *args, timeout=timeout), before

    return until_unspoiled(attempt, lambda r: spoiled(r[0]), what="nfvlab-gen " + " ".join(args[:4]))


def wait_until(done: Callable[[], bool], what: str, timeout_s: float = 30) -> None:
    """Poll ``done()`` until true; fail naming ``what`` after ``timeout_s`` (a guard against a
    hang, far beyond the time it takes)."""
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            pytest.fail(f"gave up after {timeout_s:g} s waiting for {what}")
        time.sleep(0.02)


def paced(s: dict, duration_s: float) -> None:
    """The stream's last frame left no earlier than its (slipped) schedule put it: paced, never sent
    ahead in a burst. Two frame times allowed: the XDP path's schedule starts a frame earlier (its
    first frame is due at 0). How late it left is the host's: a bench figure
    (bench/generator_accuracy.py)."""
    assert s["tx_elapsed_s"] >= duration_s + s["slip_s"] - 2 / s["rate_pps"], s


def check_latency(lat: dict) -> None:
    assert lat["probes_received"] == lat["probes_sent"] > 0
    assert 0 < lat["min_ns"] <= lat["p50_ns"] <= lat["p90_ns"] <= lat["p95_ns"] <= lat["p99_ns"] \
        <= lat["p999_ns"] <= lat["max_ns"]
    assert lat["min_ns"] <= lat["avg_ns"] <= lat["max_ns"]
    samples = lat["samples_ns"]
    assert len(samples) == lat["probes_received"] and samples == sorted(samples)
    assert (samples[0], samples[-1]) == (lat["min_ns"], lat["max_ns"])


def mix_bytes(sizes: list[tuple[int, int]], count: int) -> int:
    """Bytes on a veth (no FCS) of the first `count` frames of a weighted size cycle."""
    cycle = [size - 4 for size, weight in sizes for _ in range(weight)]
    full, rest = divmod(count, len(cycle))
    return full * sum(cycle) + sum(cycle[:rest])


def test_unidirectional_64b_exact_counts_and_latency(gen, count, pair):
    a, b = pair
    out, before = clean_gen(gen, "--duration-s", "1", "--frame-size", "64", "--latency-pps", "1000", *count,
                            "--stream", stream(a, b, 20000), ports=(a, b), spoiled=gen_barely_sent)
    before_a, before_b = before[a.spec], before[b.spec]
    assert out["version"] == 2 and out["interrupted"] is False
    assert out["counting"] == "tcx" and 0 <= out["trial_id"] < 2**32
    (s,) = out["streams"]
    assert s["send_errors"] == 0
    sent = sent_counts(s, 20000, 1000)
    check_latency(s["latency"])
    assert rx_delta(b, before_b) == (sent, sent * 60)
    assert a.counters()["tx"]["packets"] - before_a["tx"]["packets"] == sent
    if not sent_short(out):  # (a tail the host left unsent has no time of its own to check)
        paced(s, 1.0)


def nearest_rank(sorted_values: list[int], permille: int) -> int:
    return sorted_values[max(1, (permille * len(sorted_values) + 999) // 1000) - 1]


@pytest.fixture
def queued_path(gen):
    """A -> hop M -> B: gva <-> gma, then gmb <-> gvb, M redirecting all gma receives to gmb.

    The queue under test sits on gmb, a hop away from the generator: a frame the
    full queue refuses is dropped there, never refused to the generator's send
    (a full qdisc on the generator's own port refuses a probe's send outright,
    so how many probes get in would depend on the generator's timing). A tc
    redirect, not a bridge: a new bridge port drops frames until it forwards.
    """
    a, m, b = (f"{PREFIX}-{os.getpid()}-{x}" for x in ("qa", "qm", "qb"))
    try:
        for ns in (a, m, b):
            run("ip", "netns", "add", ns)
            run("ip", "netns", "exec", ns, "sysctl", "-qw",
                "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
        run("ip", "link", "add", "gva", "netns", a, "address", MAC_A, "type", "veth", "peer", "name", "gma", "netns", m)
        run("ip", "link", "add", "gvb", "netns", b, "address", MAC_B, "type", "veth", "peer", "name", "gmb", "netns", m)
        for ns, ifname in ((a, "gva"), (m, "gma"), (m, "gmb"), (b, "gvb")):
            run("ip", "-n", ns, "link", "set", ifname, "up")
        run("ip", "netns", "exec", m, "tc", "qdisc", "add", "dev", "gma", "ingress")
        run("ip", "netns", "exec", m, "tc", "filter", "add", "dev", "gma", "ingress", "protocol", "all",
            "u32", "match", "u32", "0", "0", "action", "mirred", "egress", "redirect", "dev", "gmb")
        yield Port(a, "gva", MAC_A), Port(m, "gmb", ""), Port(b, "gvb", MAC_B)
    finally:
        for ns in (a, m, b):
            run("ip", "netns", "del", ns, check=False)


#: Most generator stall time, s, after which the known queue below still holds the median probe's
#: wait above its bound (:func:`queue_drained`).
QUEUE_STALL_S = 0.12


def queue_drained(out: dict) -> Optional[str]:
    """Why a trial of the known-queue test may not hold its median wait: the host stalled the
    generator for more than :data:`QUEUE_STALL_S` in all, or it sent under half its frames.

    Why that much: the queue (100 frames, drained at 10 kpps, filled at 15 kpps) loses 10 frames per ms
    of stall and refills at 5 per ms, so a stall of ``s`` ms leaves the probes of the next ``2 s`` ms
    waiting less (none are sent during the stall itself). Stalls of ``S`` ms in all touch at most
    ``2 S`` ms of the 1 s of probes, and the median probe waits behind a nearly full queue while that
    is under half of it (less the ~20 ms the queue takes to fill first): ``S`` below ~0.24 s. Half of
    that is the allowance; the host's usual stalls (tens of ms in all) stay far inside it."""
    if out["stall_total_s"] > QUEUE_STALL_S:
        return f"generator stalled {1e3 * out['stall_total_s']:.0f} ms in all, beyond {1e3 * QUEUE_STALL_S:.0f} ms"
    return gen_barely_sent(out)


def test_latency_of_a_known_queue_and_exact_percentiles(gen, count, queued_path):
    """A full queue of known size: tbf on the hop's egress at 10 kpps of 64 B frames (60 B on a
    veth) holding 6000 B, offered 15 kpps, so every frame it admits waits behind a full queue:
    6000 B / 600 kB/s = 10 ms (netem, the usual fixed delay, is not in this kernel). The host can
    only add to that wait: the test bounds the latency from below and checks the percentiles'
    arithmetic; how far above the queue's delay p50/p99/p99.9 lie is bench/generator_accuracy.py's.
    A generator stall drains the queue for a while (the probes after it wait less): a trial whose
    stalls could move the median is repeated (:func:`queue_drained`).

    Probes at 490/s: a period (2.04 ms) that is no multiple of the load's and the shaper's
    common cycle (0.4 ms), so probes meet the queue at every phase of it; at 500/s they
    phase-lock to it, and a run admits anywhere from a quarter to all of them.
    """
    a, hop, b = queued_path
    run("ip", "netns", "exec", hop.ns, "tc", "qdisc", "add", "dev", hop.ifname, "root", "tbf", "rate", "600000bps",
        "burst", "600", "limit", "6000")
    out, _ = clean_gen(gen, "--duration-s", "1", "--frame-size", "64", "--latency-pps", "490", *count,
                       "--stream", stream(a, b, 15000), spoiled=queue_drained)
    (s,) = out["streams"]
    lat = s["latency"]
    summary = {k: v for k, v in lat.items() if k != "samples_ns"}
    # The probes that left (all 490 but a tail the host held up); the full queue drops some, admits the rest.
    assert s["probes_intended"] == 490 and lat["probes_sent"] <= 490, s
    assert 0 < lat["probes_received"] < lat["probes_sent"], summary
    samples = lat["samples_ns"]
    assert len(samples) == lat["probes_received"] and samples == sorted(samples)
    # Queue wait 10 ms minus at most a frame-time (0.1 ms) and the burst (10 frames, 1 ms);
    # the first ~20 ms of probes (about 10), before the queue filled, sit below the median.
    assert lat["p50_ns"] >= 8_500_000, summary
    for name, permille in (("p50_ns", 500), ("p90_ns", 900), ("p95_ns", 950), ("p99_ns", 990), ("p999_ns", 999)):
        assert lat[name] == nearest_rank(samples, permille), name
    assert lat["avg_ns"] == pytest.approx(sum(samples) / len(samples), abs=0.1)


def test_probes_only_trial(gen, count, pair):
    """A load rate of 1e-9 pps sends no load frame: the trial is the probes alone (latency at 0 % load)."""
    a, b = pair
    out, _ = clean_gen(gen, "--duration-s", "1", "--frame-size", "64", "--latency-pps", "300", *count,
                       "--stream", stream(a, b, 1e-9), spoiled=gen_barely_sent)
    (s,) = out["streams"]
    assert sent_counts(s, 0, 300) == s["latency"]["probes_sent"] and s["sent"] == 0
    check_latency(s["latency"])


@pytest.mark.parametrize("sizes", [[(1518, 1)], IMIX], ids=["1518B", "imix"])
def test_bidirectional_exact_counts_and_bytes(gen, count, pair, sizes):
    a, b = pair
    size_args = ["--imix"] if sizes == IMIX else ["--frame-size", str(sizes[0][0])]
    out, before = clean_gen(gen, "--duration-s", "1", *size_args, "--flows", "16", "--latency-pps", "500", *count,
                            "--stream", stream(a, b, 10000),
                            "--stream", stream(b, a, 8000, sip="198.19.0.2", dip="198.18.0.1"), ports=(a, b),
                            spoiled=gen_barely_sent)
    fwd, rev = out["streams"]
    for s, rx, rate in ((fwd, b, 10000), (rev, a, 8000)):
        lat = s["latency"]
        sent_counts(s, rate, 500)
        assert s["frame_sizes"] == [size for size, _ in sizes]
        check_latency(lat)
        probe_bytes = lat["probes_received"] * (sizes[0][0] - 4)
        assert rx_delta(rx, before[rx.spec]) == (
            s["sent"] + lat["probes_received"],
            mix_bytes(sizes, s["sent"]) + probe_bytes,
        )


# tbf shaped to 5 kpps of 64 B frames (60 B on the veth): 5000 * 60 * 8 bit/s.
# "block": the queue outgrows the socket's send buffer, so sendmmsg blocks;
# "drop": the queue is tiny, so the qdisc refuses frames (ENOBUFS).
# How much of the shaped rate the generator got through, and in what wall time, is the host's
# (bench/generator_accuracy.py prints both); what it reports of it is checked here.
@pytest.mark.parametrize("limit,mode", [(1_000_000, "block"), (3000, "drop")])
def test_rate_limited_path_reports_shortfall(gen, count, pair, limit, mode):
    a, b = pair
    run("ip", "netns", "exec", a.ns, "tc", "qdisc", "add", "dev", a.ifname, "root", "tbf",
        "rate", "2400kbit", "burst", "1600", "limit", str(limit))
    # The shortfall is the point here: only a stall beyond the slip budget spoils the trial.
    out, before = clean_gen(gen, "--duration-s", "1", "--latency-pps", "100", *count,
                            "--stream", stream(a, b, 20000), ports=(b,),
                            spoiled=lambda o: schedule(o).fault)
    (s,) = out["streams"]
    assert out["interrupted"] is False
    assert s["intended"] == 20000
    assert 0 < s["sent"] < s["intended"] / 2, s  # the shaper passes a quarter: the shortfall is reported
    if mode == "block":
        assert s["send_errors"] == 0
    else:
        assert s["send_errors"] > 1000
        # Every frame is accounted for: the qdisc took or refused it, or the deadline found it still due
        # (unsent: the kernel's refusals held the sender back; loss, not the generator's fault). How many
        # the deadline leaves is the host's: 55 of 20,000 on a loaded VM.
        assert s["sent"] + s["send_errors"] + s["unsent"] == s["intended"], s
    # What arrived by the end of --settle-ms counts; frames still queued then do not.
    assert 0 < s["received"] <= s["sent"] + s["latency"]["probes_sent"]
    assert s["duplicates"] == s["foreign"] == 0
    # Everything the qdisc accepted is delivered once its queue has drained (and nothing else).
    delivered = s["sent"] + s["latency"]["probes_sent"]
    wait_until(lambda: rx_delta(b, before[b.spec])[0] >= delivered, "the shaper's queue to drain")
    assert rx_delta(b, before[b.spec])[0] == delivered


# A tap on the rx port; a large buffer, since a frame of the XDP path holds a whole page. It
# reads what is queued once the test closes its stdin (the trial is over): the generator's counter
# at the port's ingress counted every frame, and packet taps see a frame before that ingress.
CAPTURE = r"""
import json, socket, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.setsockopt(socket.SOL_SOCKET, 33, 1 << 26)  # SO_RCVBUFFORCE
s.bind((sys.argv[1], 0))
print("ready", flush=True)
sys.stdin.read()
s.setblocking(False)
frames = []
while True:
    try:
        data, addr = s.recvfrom(65535)
    except BlockingIOError:
        break
    if addr[2] != socket.PACKET_OUTGOING:
        frames.append(data.hex())
print(json.dumps(frames))
"""


def captured_trial(spawn, gen: str, rx: Port, *args: str) -> tuple[dict, list[bytes]]:
    """A raw trial that sent every frame, and the frames a tap on ``rx`` saw during it. Only a tail left
    unsent makes the host repeat it: what these tests check (every frame, byte for byte) does not
    depend on when the frames left, so stalls beyond the slip budget do not."""
    def attempt():
        cap = spawn(["ip", "netns", "exec", rx.ns, sys.executable, "-c", CAPTURE, rx.ifname],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert cap.stdout.readline().strip() == "ready"
        out = run_gen(gen, *args)
        frames = [bytes.fromhex(f) for f in json.loads(cap.communicate(timeout=60)[0])]
        return out, frames

    return until_unspoiled(attempt, lambda r: sent_short(r[0]), what="captured nfvlab-gen trial")


def ip_checksum_ok(header: bytes) -> bool:
    total = sum(int.from_bytes(header[i:i + 2], "big") for i in range(0, len(header), 2))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total == 0xFFFF


def test_frame_format_imix_flows(gen, count, pair, spawn):
    a, b = pair
    # Counted load frames are dropped at the rx port's ingress, after packet taps saw them.
    out, frames = captured_trial(spawn, gen, b, "--duration-s", "0.1", "--imix", "--flows", "5",
                                 "--latency-pps", "100", "--trial-id", "0xdeadbeef", *count,
                                 "--stream", stream(a, b, 2400))
    load = [f for f in frames if int.from_bytes(f[36:38], "big") == 1024]
    probes = [f for f in frames if int.from_bytes(f[36:38], "big") == 7878]
    assert out["trial_id"] == 0xDEADBEEF
    # All counted at the port's ingress, after the tap saw them: the tap has them all.
    assert (out["streams"][0]["received_load"], out["streams"][0]["received_probes"]) == (240, 10)
    assert len(load) == out["streams"][0]["sent"] == 240
    assert len(probes) == out["streams"][0]["latency"]["probes_sent"] == 10
    cycle = [size - 4 for size, weight in IMIX for _ in range(weight)]
    for k, f in enumerate(load):
        assert f[0:6].hex(":") == MAC_B and f[6:12].hex(":") == MAC_A
        assert f[12:14] == b"\x08\x00" and f[14] == 0x45 and f[22] == 64 and f[23] == 17
        assert f[26:30] == bytes([198, 18, 0, 1]) and f[30:34] == bytes([198, 19, 0, 2])
        # signature: magic, trial id, stream 0, kind 0 (load), sequence number k (big-endian)
        assert f[42:60] == b"NFVL" + bytes.fromhex("deadbeef") + bytes([0, 0]) + k.to_bytes(8, "big")
        assert not any(f[60:])
        assert ip_checksum_ok(f[14:34])
        assert len(f) == cycle[k % len(cycle)]
        assert int.from_bytes(f[16:18], "big") == len(f) - 14
        assert int.from_bytes(f[38:40], "big") == len(f) - 34
        assert int.from_bytes(f[34:36], "big") == 1024 + k % 5
    for seq, f in enumerate(probes):
        assert len(f) == 60 and ip_checksum_ok(f[14:34])
        assert f[42:60] == b"NFVL" + bytes.fromhex("deadbeef") + bytes([0, 1]) + seq.to_bytes(8, "big")


def sending(port: Port) -> Callable[[], bool]:
    """Whether frames have arrived at ``port`` since now: the generator is past its set-up
    (counters attached, signals handled) and sending."""
    before = port.counters()
    return lambda: rx_delta(port, before)[0] > 0


def stalled_trial(spawn, gen: str, count: list[str], a: Port, b: Port, stall_s: float) -> dict:
    """A 1 s trial at 20 kpps whose process is stopped (SIGSTOP) for ``stall_s`` once it sends."""
    started = sending(b)
    proc = spawn([gen, "--duration-s", "1", "--latency-pps", "0", *count, "--stream", stream(a, b, 20000)],
                 stdout=subprocess.PIPE, text=True)
    wait_until(started, "the generator to send")
    proc.send_signal(signal.SIGSTOP)
    time.sleep(stall_s)
    proc.send_signal(signal.SIGCONT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0
    report = json.loads(out)
    assert report["sched"] == "fifo"  # root may run the TX thread SCHED_FIFO
    return report


def test_a_stall_slips_the_schedule_instead_of_a_catch_up_burst(gen, count, pair, spawn):
    """After a stall the frames keep their spacing and the trial ends later (by the slip);
    no frame is lost or left unsent."""
    a, b = pair
    # The host stopping the process longer (beyond the slip budget) spoils the trial.
    (s,) = until_unspoiled(lambda: stalled_trial(spawn, gen, count, a, b, 0.005), gen_spoiled,
                           what="a 5 ms stop")["streams"]
    assert s["sent"] == s["received"] == s["intended"] == 20000
    assert s["burst"] == 2  # 20 kpps: 1 frame per 50 us, but a frame late is no stall
    assert 1 <= s["max_batch"] <= s["burst"] and s["unsent"] == 0, s  # no send of more than a burst
    assert s["max_backlog"] >= 0.005 * 20000 * 0.9  # the stall was seen ...
    assert 0.0045 <= s["slip_s"] <= 0.01  # ... and slipped, within the 1 % budget
    paced(s, 1.0)  # the last frame left at its slipped time: no catch-up burst


def test_a_stall_beyond_the_slip_budget_is_never_caught_up_in_a_burst(gen, count, pair, spawn):
    """A stall longer than the slip budget (1 % of the duration): no catch-up burst (no send of
    more than ``burst`` frames); the schedule slips by the whole lag and what is not sent by the end
    of the window is unsent.

    Whose the unsent frames are is not asserted here: a SIGSTOP that lands inside a pass (a send
    call) is counted as the kernel holding the sender back, by design (nfvlab_gen_pacing.c,
    Stalls), and where it lands is the host's timing (seen once in CI: slip_own_s 0.0; in 0 of
    30 runs here: the loop spends little of its time inside passes). The attribution is tested
    with the injected stall, which always falls between passes: test_gen_stalls.test_after_an_injected_stall_no_send_exceeds_a_burst_and_the_unsent_are_the_generators."""
    a, b = pair
    out = stalled_trial(spawn, gen, count, a, b, 0.05)  # invalid by design: nothing for the host to spoil
    (s,) = out["streams"]
    assert s["burst"] == 2 and 1 <= s["max_batch"] <= s["burst"], s
    assert s["sent"] + s["unsent"] == s["intended"] == 20000 and s["send_errors"] == 0, s
    assert s["received"] == s["sent"], s  # nothing the pair lost: the unsent frames are not loss ...
    assert s["unsent"] >= 0.9 * (0.05 - 0.01) * 20000, s  # ... the stop less the budget, never sent
    assert s["slip_s"] >= 0.045 and s["slip_own_s"] <= s["slip_s"], s  # the whole lag slipped


def test_interrupt_prints_json_and_exits_130(gen, pair, spawn):
    a, b = pair
    # Runs inside namespace A to exercise the "." (current namespace) port form.
    here = Port(".", a.ifname, a.mac)
    started = sending(b)
    proc = spawn(["ip", "netns", "exec", a.ns, gen, "--duration-s", "10", "--stream", stream(here, b, 10000)],
                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_until(started, "the generator to send")
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    out = json.loads(stdout)
    (s,) = out["streams"]
    assert out["interrupted"] is True
    assert s["tx"] == f".:{a.ifname}"
    assert 0 < s["sent"] < s["intended"] == 100000


BAD_ARGS = {
    "frame-63": (["--frame-size", "63"], 2),
    "frame-9019": (["--frame-size", "9019"], 2),
    "rate-0": (["RATE0"], 2),
    "no-stream": ([], 2),
    "unknown-netns": (["NOSUCHNS"], 3),
    "unknown-option": (["--bogus", "1"], 2),
    "size-and-imix": (["--imix", "--frame-size", "64"], 2),
    "trial-id-negative": (["--trial-id", "-1"], 2),
    "trial-id-33-bit": (["--trial-id", "4294967296"], 2),
    "count-hook": (["--count-obj", "/x.o", "--count-hook", "xdp"], 2),
    "count-too-long": (["COUNT1E6"], 2),   # 1 Mpps x 86400 s: more than a 2^32-bit bitmap
    "sched": (["--sched", "rr"], 2),
    "qdisc-bypass-value": (["--qdisc-bypass=1"], 2),
}


@pytest.mark.parametrize("case", BAD_ARGS, ids=list(BAD_ARGS))
def test_bad_arguments(gen, case):
    extra, code = BAD_ARGS[case]
    ok = ("tx=nfvl-t-gen-x:a,rx=nfvl-t-gen-x:b,rate=100,smac=02:00:00:00:00:01,dmac=02:00:00:00:00:02,"
          "sip=198.18.0.1,dip=198.19.0.2")
    args = ["--duration-s", "1"]
    if extra == ["RATE0"]:
        args += ["--stream", ok.replace("rate=100", "rate=0")]
    elif extra == ["COUNT1E6"]:
        args = ["--duration-s", "86400", "--count-obj", "/x.o", "--stream", ok.replace("rate=100", "rate=1e6")]
    elif extra == ["NOSUCHNS"]:
        args += ["--stream", ok]
    elif extra:
        args += extra + ["--stream", ok]
    proc = subprocess.run([gen, *args], capture_output=True, text=True, timeout=60)
    assert proc.returncode == code
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("nfvlab-gen: ")


def test_missing_counter_object_fails_in_one_line(gen, pair):
    a, b = pair
    proc = subprocess.run([gen, "--duration-s", "0.1", "--count-obj", "/nonexistent.bpf.o",
                           "--stream", stream(a, b, 1000)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3 and proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "/nonexistent.bpf.o" in lines[0], proc.stderr
    assert "clsact" not in run("tc", "-n", b.ns, "qdisc", "show", "dev", b.ifname).stdout


def test_without_counter_object_counts_are_null(gen, pair):
    a, b = pair
    out, _ = clean_gen(gen, "--duration-s", "0.2", "--latency-pps", "100", "--stream", stream(a, b, 1000))
    (s,) = out["streams"]
    assert out["counting"] == "none"
    assert s["received"] is None and s["foreign"] is None and s["duplicates"] is None
    assert s["sent"] == 200 and s["latency"]["probes_received"] == 20


@pytest.mark.parametrize("hook", ["tcx", "tc"])
def test_counter_is_detached_after_the_trial(gen, count, pair, hook):
    """tcx (Linux >= 6.6) and the legacy clsact filter both leave the rx port as they found it."""
    a, b = pair
    out, _ = clean_gen(gen, "--duration-s", "0.3", "--latency-pps", "100", *count, "--count-hook", hook,
                       "--stream", stream(a, b, 5000))
    assert out["counting"] == hook
    check_counts(out["streams"][0], 1500, 30)
    # 1500 load + 30 probe bits, each kind word-aligned; the kernel frees a detached program shortly after.
    wait_until(lambda: not counter_programs(24 + 1), "the counter program to go")
    assert counter_programs(24 + 1) == set()
    qdiscs = run("tc", "-n", b.ns, "qdisc", "show", "dev", b.ifname).stdout
    assert "clsact" not in qdiscs


def test_killed_generator_leaves_no_counter_behind(gen, count, pair, spawn):
    """A tcx link dies with its process: even SIGKILL leaves no program on the port."""
    a, b = pair
    words = 12371 // 64 + 1   # 1237.1 pps x 10 s, no probes: a bitmap size no other trial has
    proc = spawn([gen, "--duration-s", "10", "--latency-pps", "0", *count, "--stream", stream(a, b, 1237.1)],
                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_until(lambda: counter_programs(words), "the counter to be attached")
    assert len(counter_programs(words)) == 1   # attached while it runs
    proc.kill()
    proc.communicate()
    # The kernel frees the program once the link's last reference goes (shortly after the exit).
    wait_until(lambda: not counter_programs(words), "the killed generator's counter to go")
    assert counter_programs(words) == set()


def test_interrupted_trial_still_reports_counts(gen, count, pair, spawn):
    a, b = pair
    started = sending(b)
    proc = spawn([gen, "--duration-s", "10", "--latency-pps", "100", *count, "--stream", stream(a, b, 10000)],
                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_until(started, "the generator to send")
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    (s,) = json.loads(stdout)["streams"]
    assert 0 < s["sent"] < s["intended"] == 100000
    check_counts(s, s["sent"], s["latency"]["probes_sent"])
