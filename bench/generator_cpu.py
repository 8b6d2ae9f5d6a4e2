"""Generator CPU benchmark: what nfvlab-gen's TX loop costs at a low rate, and how late it runs.

Two namespaces joined by one veth pair (A -> B), nfvlab-gen pinned to CPU 0, RATE_PPS (10 kpps) of
64 B frames for DURATION_S (1 s), probes at 100 pps, REPS trials per TX path (``socket``: AF_PACKET;
``xdp``: the XDP live-frames loop, B's GRO on as veth needs for it). Per path it prints, as the
median over the trials and their worst: the process's CPU seconds (user + system, from wait4's
rusage, the whole run including set-up) per trial-second, and the schedule's lateness as the
generator reports it: ``slip_s`` (how far the schedule slipped after falling behind),
``max_backlog`` (the most frames it was behind at once) and ``stall_total_s``, and whether every
frame was sent. A loop that never sleeps costs about 1 CPU-second per trial-second whatever the
rate; one that sleeps until shortly before each frame, far less. Asserts nothing. Run as root
(holds the host lock):

    .venv/bin/python bench/generator_cpu.py [REPS]
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

from generator import MAC_A, MAC_B, VethPair, gro, sh  # bench/generator.py: the same veth pair

from nfvlab.system.hostlock import HostLock
from nfvlab.traffic.embedded import count_object, gen_binary, tx_object
from nfvlab.traffic.embedded.generator import xdp_live_refusal

RATE_PPS = 10_000
DURATION_S = 1.0
PROBE_PPS = 100
CPU = 0


def trial(pair: VethPair, tx: str) -> tuple[float, dict]:
    """One nfvlab-gen run: (CPU seconds of the process, its report)."""
    cmd = [str(gen_binary()), "--duration-s", f"{DURATION_S:g}", "--frame-size", "64",
           "--latency-pps", str(PROBE_PPS), "--cpu", str(CPU), "--count-obj", str(count_object()),
           *(["--tx", "xdp", "--tx-obj", str(tx_object())] if tx == "xdp" else []),
           "--stream", f"tx={pair.ns[0]}:gva,rx={pair.ns[1]}:gvb,rate={RATE_PPS},smac={MAC_A},dmac={MAC_B},"
                       "sip=198.18.0.1,dip=198.19.0.2"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = proc.stdout.read()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"nfvlab-gen exited {proc.returncode}: {err.decode().strip()}")
    return usage.ru_utime + usage.ru_stime, json.loads(out)


def main(reps: int = 5) -> int:
    print(f"nfvlab-gen at {RATE_PPS:,} pps of 64 B for {DURATION_S:g} s, probes {PROBE_PPS} pps, TX on CPU {CPU}, "
          f"{reps} trials per path (load average {os.getloadavg()[0]:.1f})")
    print("| tx | CPU s per trial-s: median (max) | slip ms: median (max) | max backlog frames: median (max) "
          "| stall ms: median (max) | trials that sent all |\n|---|---|---|---|---|---|")
    with HostLock("bench/generator_cpu.py"), VethPair() as pair:
        gro(pair, True)  # XDP frames need the veth NAPI ring
        for tx in ("socket", "xdp"):
            if tx == "xdp" and (why := xdp_live_refusal()):
                print(f"| xdp | not measured: {why} | | | | |")
                continue
            rows = [trial(pair, tx) for _ in range(reps)]
            cpu = [c / DURATION_S for c, _ in rows]
            slip = [r["streams"][0]["slip_s"] * 1e3 for _, r in rows]
            backlog = [r["streams"][0]["max_backlog"] for _, r in rows]
            stall = [r["stall_total_s"] * 1e3 for _, r in rows]
            full = sum(r["streams"][0]["sent"] == r["streams"][0]["intended"] for _, r in rows)

            def f(xs, fmt="{:.2f}"):
                return f"{fmt.format(statistics.median(xs))} ({fmt.format(max(xs))})"
            print(f"| {tx} | {f(cpu)} | {f(slip)} | {f(backlog, '{:.0f}')} | {f(stall, '{:.1f}')} | {full}/{reps} |",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(*(int(a) for a in sys.argv[1:2])))
