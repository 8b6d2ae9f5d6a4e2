"""Generator benchmark: nfvlab-gen beside trafgen on the same veth, in the same run.

Two namespaces joined by one veth pair; every frame goes one way (A -> B), both
generators' TX pinned to CPU 0. nfvlab-gen is measured with both its TX paths:
``xdp`` (an XDP program in the kernel's live-frames mode, ``--tx xdp``; B's GRO
is turned on for it, as veth needs to accept XDP frames) and ``socket``
(AF_PACKET, sendmmsg). Per frame size (64 / 512 / 1518 B):

1. **rate**: each generator asked for far more than it can send (3 Mpps).
   nfvlab-gen: the frames it sent in its trial, all counted at B by its BPF
   counter, over the trial's duration. trafgen (netsniff-ng, rate-controlled
   ``-b``): B's receive counter over a window while it runs (its start-up left
   out). The ratio is nfvlab / trafgen.
2. **offered-rate error** of each nfvlab-gen path at 25 / 50 / 90 % of the rate it
   reached: (frames sent / time they took) / rate asked - 1. Slip after a
   stall (see nfvlab_gen_pacing.c, Pacing) shows up here; it is bounded by 1 %.
   Frames it could not send by the deadline are printed as "unsent" (a trial
   reports them as loss); the target applies to the rates sent in full.
3. **pacing**: both generators at one common rate (half the lower of the two
   rates, at most 100 kpps), the frames' kernel receive timestamps at B (on
   veth the receive runs inside the sender's system call, so this is the
   departure time): percentiles of |gap - mean gap| (inter-departure jitter),
   the largest burst, i.e. the most frames beyond their mean rate over any
   interval (what a DUT's buffer must hold to forward the traffic at the rate
   it was offered), and the mean rate's error against the rate asked.
4. **TX options at 64 B**, measured rather than assumed: trafgen with B's GRO on
   (the receive path the xdp TX needs, so that the ratio is not that change),
   the xdp loop under SCHED_OTHER, SCHED_OTHER,
   PACKET_QDISC_BYPASS, trafgen under the same real-time priority, the
   receive moved to a threaded NAPI kthread on CPU 1 (GRO on the receiving
   veth), the TX path's cost alone (receiver down), and two nfvlab-gen
   processes on two cores (the core plan gives CPU 1 to the DUT's busy
   poller, so the default stays one TX core).

Numbers describe this host (2 shared vCPUs), not a 40 GbE testbed.
Run as root:  .venv/bin/python bench/generator.py [DURATION_S]
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from functools import partial

import numpy as np

from nfvlab.system.hostlock import HostLock
from nfvlab.traffic.embedded import count_object, gen_binary, tx_object
from nfvlab.traffic.embedded.generator import xdp_live_refusal

FRAME_SIZES = (64, 512, 1518)
ASK_PPS = 3_000_000
FRACTIONS = (0.25, 0.5, 0.9)
PACING_MAX_PPS = 100_000
CPU = 0
MAC_A, MAC_B = "02:00:00:00:0a:01", "02:00:00:00:0b:01"
SO_RCVBUFFORCE, SO_TIMESTAMPNS = 33, 35


def sh(*cmd: str, check: bool = True) -> str:
    return subprocess.run(cmd, capture_output=True, text=True, check=check).stdout


class VethPair:
    """Namespaces A and B joined by veth ``gva`` <-> ``gvb``, IPv6 off; deleted on exit."""

    def __init__(self) -> None:
        self.ns = (f"nfvl-b-gen-{os.getpid()}-a", f"nfvl-b-gen-{os.getpid()}-b")

    def __enter__(self) -> VethPair:
        try:
            for ns in self.ns:
                sh("ip", "netns", "add", ns)
                sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
                   "net.ipv6.conf.default.disable_ipv6=1")
            sh("ip", "link", "add", "gva", "netns", self.ns[0], "address", MAC_A, "type", "veth",
               "peer", "name", "gvb", "netns", self.ns[1], "address", MAC_B)
            for ns, ifname in zip(self.ns, ("gva", "gvb")):
                sh("ip", "-n", ns, "link", "set", ifname, "up")
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        for ns in self.ns:
            sh("ip", "netns", "del", ns, check=False)

    def rx_packets(self) -> int:
        out = sh("ip", "-n", self.ns[1], "-j", "-s", "link", "show", "gvb")
        return json.loads(out)[0]["stats64"]["rx"]["packets"]


def nfvlab_command(pair: VethPair, rate_pps: float, frame_size: int, duration_s: float, *extra: str,
                   cpu: int = CPU, count: bool = True) -> list[str]:
    return [str(gen_binary()), "--duration-s", str(duration_s), "--frame-size", str(frame_size),
            "--latency-pps", "0", "--cpu", str(cpu), *(["--count-obj", str(count_object())] if count else []),
            *extra, "--stream", (f"tx={pair.ns[0]}:gva,rx={pair.ns[1]}:gvb,rate={rate_pps:.10g},smac={MAC_A},"
                                 f"dmac={MAC_B},sip=198.18.0.1,dip=198.19.0.2")]


def gro(pair: VethPair, on: bool) -> None:
    """GRO at B: on, veth receives through its NAPI ring (what XDP frames need), off: the backlog."""
    sh("ip", "netns", "exec", pair.ns[1], "ethtool", "-K", "gvb", "gro", "on" if on else "off")


def nfvlab_trial(pair: VethPair, rate_pps: float, frame_size: int, duration_s: float, *extra: str,
                 count: bool = True, tx: str = "socket") -> dict:
    """One nfvlab-gen trial A -> B on TX path ``tx``, no probes; its JSON report's stream."""
    if tx == "xdp":
        extra = ("--tx", "xdp", "--tx-obj", str(tx_object()), *extra)
        gro(pair, True)
    try:
        report = json.loads(sh(*nfvlab_command(pair, rate_pps, frame_size, duration_s, *extra, count=count)))
    finally:
        if tx == "xdp":
            gro(pair, False)
    s = report["streams"][0]
    if count and s["received"] != s["sent"]:
        raise RuntimeError(f"nfvlab-gen counted {s['received']} of {s['sent']} frames on a bare veth")
    return {**s, "sched": report.get("sched")}


def offered_rate_error(s: dict) -> tuple[float, float]:
    """(offered-rate error, shortfall) of one trial's stream: frames sent over the time they
    took against the rate asked, and the fraction of frames not sent (reported as loss)."""
    return (s["sent"] / s["tx_elapsed_s"]) / s["rate_pps"] - 1, 1 - s["sent"] / s["intended"]


def two_cores(pair: VethPair, duration_s: float) -> float:
    """Frames/s of two nfvlab-gen processes at once on the same veth, TX on CPU 0 and CPU 1.

    Each counts its own trial's frames (the other's are foreign to it), so both stay exact.
    """
    procs = [subprocess.Popen(nfvlab_command(pair, ASK_PPS, 64, duration_s, cpu=cpu), stdout=subprocess.PIPE,
                              text=True) for cpu in (0, 1)]
    sent = [json.loads(p.communicate()[0])["streams"][0] for p in procs]
    if any(s["received"] != s["sent"] for s in sent):
        raise RuntimeError(f"two nfvlab-gen processes lost frames on a bare veth: {sent}")
    return sum(s["sent"] for s in sent) / duration_s


def threaded_napi(pair: VethPair, on: bool) -> None:
    """Receive on B in a NAPI kthread on CPU 1 (veth uses NAPI once GRO is on) or back inline."""
    flag = "on" if on else "off"
    threaded = ("ip", "netns", "exec", pair.ns[1], "sh", "-c", f"echo {int(on)} > /sys/class/net/gvb/threaded")
    if not on:  # while the NAPI instance exists
        sh(*threaded)
    sh("ip", "netns", "exec", pair.ns[1], "ethtool", "-K", "gvb", "gro", flag, "rx-udp-gro-forwarding", flag)
    if on:
        sh(*threaded)
        for pid in sh("pgrep", "-f", "napi/gvb-", check=False).split():
            sh("taskset", "-p", "2", pid)


def options_64(pair: VethPair, duration_s: float, default_pps: float) -> list[tuple[str, float]]:
    """The TX options measured at 64 B: frames/s each reached (asked for 3 Mpps)."""
    def rate(*extra: str, count: bool = True) -> float:
        return nfvlab_trial(pair, ASK_PPS, 64, duration_s, *extra, count=count)["sent"] / duration_s

    gro(pair, True)
    try:
        trafgen_gro = trafgen_rate(pair, ASK_PPS, 64, duration_s)
    finally:
        gro(pair, False)
    rows = [("trafgen, B's GRO on (the receive path of the xdp TX)", trafgen_gro),
            ("nfvlab-gen --tx xdp --sched other (the loop time-shares CPU 0)",
             nfvlab_trial(pair, ASK_PPS, 64, duration_s, "--sched", "other", tx="xdp")["sent"] / duration_s),
            ("nfvlab-gen --tx socket: SCHED_FIFO, sendmmsg", default_pps),
            ("nfvlab-gen --tx socket --sched other", rate("--sched", "other")),
            ("nfvlab-gen --qdisc-bypass (PACKET_QDISC_BYPASS)", rate("--qdisc-bypass")),
            ("trafgen under chrt -f 10 (SCHED_FIFO like nfvlab-gen)",
             trafgen_rate(pair, ASK_PPS, 64, duration_s, prefix=("chrt", "-f", "10")))]
    threaded_napi(pair, True)
    try:
        rows.append(("nfvlab-gen, receive in a threaded NAPI on CPU 1", rate()))
    finally:
        threaded_napi(pair, False)
    sh("ip", "-n", pair.ns[1], "link", "set", "gvb", "down")
    try:
        rows.append(("nfvlab-gen, receiver down: the TX path's cost alone", rate(count=False)))
    finally:
        sh("ip", "-n", pair.ns[1], "link", "set", "gvb", "up")
    time.sleep(0.5)
    rows.append(("two nfvlab-gen processes, TX on CPUs 0 and 1", two_cores(pair, duration_s)))
    return rows


def trafgen_packet(frame_size: int) -> str:
    """trafgen's packet description of the same Ethernet/IPv4/UDP frame (no FCS on a veth)."""
    ip_len = frame_size - 4 - 14
    def mac(m: str) -> str:
        return ", ".join(f"0x{b}" for b in m.split(":"))

    return (f"{{ {mac(MAC_B)}, {mac(MAC_A)}, c16(0x0800), 0x45, 0, c16({ip_len}), 0, 0, 0x40, 0, 64, 17, "
            f"csumip(14, 33), 198, 18, 0, 1, 198, 19, 0, 2, c16(1024), c16(1024), c16({ip_len - 20}), 0, 0, "
            f"fill(0, {ip_len - 28}) }}")


def trafgen_rate(pair: VethPair, rate_pps: float, frame_size: int, duration_s: float,
                 prefix: tuple[str, ...] = ()) -> float:
    """Frames/s trafgen delivers to B asked for ``rate_pps``, over a window after its start-up."""
    proc = subprocess.Popen(["ip", "netns", "exec", pair.ns[0], *prefix, "taskset", "-c", str(CPU), "trafgen",
                             "-o", "gva", "-P", "1", "-b", f"{int(rate_pps)}pps", "--no-sock-mem",
                             "--notouch-irq", "--no-cpu-stats", trafgen_packet(frame_size)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        time.sleep(0.5)
        if proc.poll() is not None:
            raise RuntimeError(f"trafgen failed: {proc.stderr.read().strip()}")
        n0, t0 = pair.rx_packets(), time.monotonic()
        time.sleep(duration_s)
        n1, t1 = pair.rx_packets(), time.monotonic()
    finally:
        os.killpg(proc.pid, signal.SIGINT)  # trafgen sends from a child process
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return (n1 - n0) / (t1 - t0)


CAPTURE = r"""
import json, socket, struct, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))  # ETH_P_ALL: taps see every frame
s.setsockopt(socket.SOL_SOCKET, {rcvbuf}, 1 << 29)
s.setsockopt(socket.SOL_SOCKET, {tstamp}, 1)
s.bind((sys.argv[1], 0))
s.settimeout(1.0)
print("ready", flush=True)
ts = []
try:
    while True:
        _, anc, _, addr = s.recvmsg(64, 64)
        if addr[2] != socket.PACKET_OUTGOING:
            ts += [struct.unpack("qq", d[:16]) for _, t, d in anc if t == {tstamp}]
except TimeoutError:
    pass
print(json.dumps([a * 10**9 + b for a, b in ts]))
""".replace("{rcvbuf}", str(SO_RCVBUFFORCE)).replace("{tstamp}", str(SO_TIMESTAMPNS))


def pacing(times_ns: list[int], rate_pps: float) -> dict:
    """Pacing of frames departing at ``times_ns``, asked for at ``rate_pps``.

    ``rate_error``: their mean rate against ``rate_pps``; ``p50_ns``/``p99_ns``/``p999_ns``:
    percentiles of |gap - mean gap| (inter-departure jitter around their own rate);
    ``burst``: the most frames beyond their own mean rate over any interval.
    """
    t = np.sort(np.asarray(times_ns, dtype=np.int64))
    if len(t) < 3:
        raise RuntimeError(f"captured only {len(t)} frames")
    gaps = np.diff(t)
    rate_pps, asked_pps = 1e9 / gaps.mean(), rate_pps
    jitter = np.abs(gaps - gaps.mean())
    # Frames beyond the nominal rate over any interval: max_j (excess_j - min_{i<=j} excess_i).
    excess = np.arange(len(t)) - rate_pps * (t - t[0]) / 1e9
    burst = float(np.max(excess - np.minimum.accumulate(excess)))
    p = np.percentile(jitter, [50, 99, 99.9])
    return {"frames": len(t), "rate_error": rate_pps / asked_pps - 1, "p50_ns": p[0], "p99_ns": p[1],
            "p999_ns": p[2], "burst": burst}


def captured(pair: VethPair, rate_pps: float, send) -> dict:
    """Pacing of what ``send()`` sends, from kernel receive timestamps at B."""
    cap = subprocess.Popen(["ip", "netns", "exec", pair.ns[1], "taskset", "-c", str(1 - CPU % 2),
                            sys.executable, "-c", CAPTURE, "gvb"], stdout=subprocess.PIPE, text=True)
    try:
        cap.stdout.readline()
        send()
        out, _ = cap.communicate(timeout=120)
    finally:
        if cap.poll() is None:
            cap.kill()
    return pacing(json.loads(out), rate_pps)


def main(duration_s: float = 2.0) -> int:
    if os.geteuid() != 0:
        print("bench/generator.py needs root (network namespaces)")
        return 2
    if why := xdp_live_refusal():  # its tables set the two TX paths side by side
        print(f"bench/generator.py: not measured here: {why} (bench/generator_cpu.py measures the socket path)")
        return 0
    start = time.monotonic()
    print(f"nfvlab-gen vs trafgen, one veth, one direction, TX on CPU {CPU}, {duration_s:g} s per run "
          f"(load average {os.getloadavg()[0]:.1f})")
    rows = []
    # The host-wide lab lock: another run's traffic on these CPUs would falsify both.
    with HostLock("bench/generator.py"), VethPair() as pair:
        for fs in FRAME_SIZES:
            row = {"fs": fs, "trafgen": trafgen_rate(pair, ASK_PPS, fs, duration_s)}
            for tx in ("xdp", "socket"):
                ours = nfvlab_trial(pair, ASK_PPS, fs, duration_s, tx=tx)
                pps = ours["sent"] / duration_s
                row[tx] = pps
                row[tx + "_sched"] = ours["sched"]
                row[tx + "_errors"] = [offered_rate_error(nfvlab_trial(pair, f * pps, fs, duration_s, tx=tx))
                                       for f in FRACTIONS]
            row["common"] = common = min(PACING_MAX_PPS, 0.5 * min(row["xdp"], row["socket"], row["trafgen"]))
            for tx in ("xdp", "socket"):
                row[tx + "_pacing"] = captured(pair, common, partial(nfvlab_trial, pair, common, fs, duration_s,
                                                                      tx=tx))
            row["trafgen_pacing"] = captured(pair, common, partial(trafgen_rate, pair, common, fs, duration_s))
            rows.append(row)
            print(f"  {fs} B done", flush=True)
        options = options_64(pair, duration_s, rows[0]["socket"])
    print("\n| frame B | nfvlab xdp kpps | nfvlab socket kpps | trafgen kpps | ratio xdp / socket to trafgen "
          "| offered-rate error at " + " / ".join(f"{f:.0%}" for f in FRACTIONS) + ": xdp; socket |")
    print("|---|---|---|---|---|---|")

    def errs(es: list) -> str:
        return " / ".join(f"{e:+.2%}" + (f" (unsent {u:.1%})" if u else "") for e, u in es)

    for r in rows:
        print(f"| {r['fs']} | {r['xdp'] / 1e3:.0f} | {r['socket'] / 1e3:.0f} | {r['trafgen'] / 1e3:.0f} | "
              f"{r['xdp'] / r['trafgen']:.2f}x / {r['socket'] / r['trafgen']:.2f}x | "
              f"{errs(r['xdp_errors'])}; {errs(r['socket_errors'])} |")

    def fmt(p: dict) -> str:
        return (f"{p['p50_ns'] / 1e3:.1f} / {p['p99_ns'] / 1e3:.1f} / {p['p999_ns'] / 1e3:.1f}, "
                f"{p['burst']:.1f}, {p['rate_error']:+.1%}")

    print("\n| frame B | pacing at kpps | jitter p50 / p99 / p99.9 µs, burst (frames), rate error: "
          "nfvlab xdp | nfvlab socket | trafgen |\n|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['fs']} | {r['common'] / 1e3:.0f} | {fmt(r['xdp_pacing'])} | {fmt(r['socket_pacing'])} | "
              f"{fmt(r['trafgen_pacing'])} |")
    print(f"\nTX options at 64 B (trafgen, default: {rows[0]['trafgen'] / 1e3:.0f} kpps)\n"
          "| option | kpps | x trafgen |\n|---|---|---|")
    for name, pps in options:
        print(f"| {name} | {pps / 1e3:.0f} | {pps / rows[0]['trafgen']:.2f}x |")
    # The rates it accepts: those it sent in full (a shortfall is reported as loss, never hidden).
    for tx in ("xdp", "socket"):
        accepted = [e for r in rows for e, u in r[tx + "_errors"] if u == 0]
        worst = max(map(abs, accepted), default=float("nan"))
        ratio64 = rows[0][tx] / rows[0]["trafgen"]
        print(f"\nnfvlab-gen --tx {tx} (TX thread {rows[0][tx + '_sched']}): 64 B ratio {ratio64:.2f}x "
              f"(target >= 2x: {'met' if ratio64 >= 2 else 'NOT met'}); worst offered-rate error where all "
              f"frames were sent {worst:.2%} ({len(accepted)} of {sum(len(r[tx + '_errors']) for r in rows)} "
              f"rates; target <= 1 %: {'met' if worst <= 0.01 else 'NOT met'})")
    print(f"benchmark wall time {time.monotonic() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(*(float(a) for a in sys.argv[1:2])))
