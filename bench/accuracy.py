"""Accuracy and speed figures the tests leave to the host: prints each as a ratio of one run.

1. The experiment runner on a path of known capacity (tests/test_experiment.py's grid: macvlan
   realized as the embedded lab's tbf-shaped bridge of 20 kpps, 128 B frames, 0.5 s trials, RFC 2544
   at 2 % width, latency probes at 200 pps, latency at 0/10/50/90 % of the NDR), per repetition:
   NDR / capacity (target >= 0.95; it is never above the path's bound, which the test checks), and
   the median one-way latency / tbf's queue delay (128 frames at 20 kpps: 6.4 ms) at each load
   fraction (target < 1: below capacity a frame waits at most that long in the shaper).
2. TCP goodput through a tbf-shaped link (tests/test_tcp.py: 200 Mbit/s on node1's end of the CNI
   lab's node link, iperf3 node1 -> pod2, 2 streams, 2 s), direct and vxlan at link MTU 1500:
   goodput / (rate x payload / 1514 B frame) (target 0.97 .. 1.01: below, slow start and the host;
   above, only the bucket's 32 kB and interval edges).
3. provenance.collect() (tests/test_provenance.py), 5 calls: seconds each (target < 1 s).

Figures describe this host (2 shared vCPUs, veth links); the run's CPU speed probe is printed with
section 1. Asserts nothing; exits 0. Run as root (sections 1-2 build labs under the host lock; it
waits up to $NFVLAB_LOCK_WAIT_S, 1800 s unless set, for another run's lab):

    .venv/bin/python bench/accuracy.py [--repetitions 3] [--skip experiment,tcp,provenance]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from nfvlab import params as P
from nfvlab import results as R
from nfvlab.labs.embedded import EmbeddedLab
from nfvlab.scenario import KnownPath, Scenario

CAPACITY_PPS = 20_000
FRAME = 128
TRIAL_S = 0.5
QUEUE_DELAY_NS = 128 / CAPACITY_PPS * 1e9
NDR_TARGET = 0.95
GRID = {"experiment": "accuracy", "models": ["macvlan"],
        "traffic": {"frame_sizes": [FRAME], "latency_pps": 200, "bidirectional": False},
        "trial": {"duration_s": TRIAL_S},
        "search": {"method": "rfc2544", "pdr_loss_ratio": None, "relative_width": 0.02,
                   "min_rate_pps": 5000, "max_rate_pps": 40000, "final_trial_duration_s": TRIAL_S,
                   "initial_trial_duration_s": TRIAL_S, "duration_sum_s": TRIAL_S}}

RATE_BPS = 200e6
#: TCP payload per 1514 B frame on the shaped link (the qdisc sees IP packet + 14 B Ethernet header).
PAYLOAD_BYTES = {"direct": 1448, "vxlan": 1398}
GOODPUT_BAND = (0.97, 1.01)
COLLECT_TARGET_S = 1.0


class KnownCapacity(EmbeddedLab):
    """The embedded lab, every runnable scenario realized as the tbf bridge of CAPACITY_PPS."""

    @contextmanager
    def open(self, scenario, **kw):
        del scenario  # whichever model the grid names: the known path stands for it
        with super().open(Scenario("tbf-bridge", known_path=KnownPath(CAPACITY_PPS, FRAME)), **kw) as session:
            yield session


def experiment_on_a_known_capacity(repetitions: int) -> None:
    from nfvlab.experiment import run_experiment
    from nfvlab.records import read_records
    from nfvlab.report.provenance import host_speed_text

    print(f"== 1. experiment runner on a tbf-shaped bridge of {CAPACITY_PPS:,} pps ({FRAME} B, {TRIAL_S:g} s "
          f"trials, {repetitions} repetitions)")
    params = P.validate(P.ExperimentParams, {**GRID, "repetitions": repetitions})
    with tempfile.TemporaryDirectory() as tmp:
        rec = Path(tmp) / "accuracy.jsonl"
        run_experiment(params, rec, backend=KnownCapacity(), progress=False)
        run = read_records(rec)[0]
        searches, lat = R.searches_frame(rec), R.latency_frame(rec)
        failed = R.not_realizable_frame(rec)
    print(f"  host CPU speed before the run: {host_speed_text(run['provenance'].get('host_speed'))}")
    if not failed.empty:
        for reason in failed["reason"]:
            print(f"  {reason}")
    low = 0
    for _, s in searches.iterrows():
        ratio = s["throughput_pps"] / CAPACITY_PPS
        low += ratio < NDR_TARGET
        print(f"  rep {s['repetition']}: NDR {s['throughput_pps']:>8,.0f} pps   NDR / capacity {ratio:.3f}")
    print(f"  NDR / capacity >= {NDR_TARGET}: {len(searches) - low} of {len(searches)} searches")
    print(f"  median latency / tbf's queue delay ({QUEUE_DELAY_NS / 1e6:.1f} ms), per load fraction of the NDR "
          "(target < 1):")
    for fraction, rows in lat.groupby("load_fraction"):
        ratios = " ".join(f"{p / QUEUE_DELAY_NS:.3f}" for p in rows["p50_ns"])
        print(f"    {fraction:>4.0%}: {ratios}   (worst {rows['p50_ns'].max() / QUEUE_DELAY_NS:.3f})")


def tcp_goodput_through_a_shaped_link() -> None:
    from nfvlab.labs.embedded.cni import CniLab
    from nfvlab.scenario.cni import CniPath, IperfParams
    from nfvlab.traffic.tcp import run_iperf3

    lo, hi = GOODPUT_BAND
    print(f"\n== 2. TCP goodput through a tbf-shaped link of {RATE_BPS / 1e6:.0f} Mbit/s (iperf3, 2 streams, 2 s), "
          f"goodput / shaped payload rate (target {lo} .. {hi})")
    for path, payload in PAYLOAD_BYTES.items():
        expected = RATE_BPS * payload / 1514
        with CniLab(CniPath(path, 1500)) as lab:
            lab.shape_link(RATE_BPS)
            r = run_iperf3(lab, server_ns=lab.ns("pod2"), server_ip=lab.address("pod2"), client_ns=lab.ns("node1"),
                           params=IperfParams(parallel_streams=2, duration_s=2))
        ratio = r.goodput_bps / expected
        print(f"  {path:<6} {r.goodput_bps / 1e6:7.2f} Mbit/s of {expected / 1e6:.2f}: {ratio:.4f}  "
              f"({'within' if lo <= ratio <= hi else 'OUTSIDE'} the band; {r.retransmits} retransmits)")


def provenance_collect() -> None:
    from nfvlab.provenance import collect

    seconds = []
    for _ in range(5):
        t0 = time.monotonic()
        collect({"frame_size": 64})
        seconds.append(time.monotonic() - t0)
    print(f"\n== 3. provenance.collect(): {' '.join(f'{s:.3f}' for s in seconds)} s; slowest "
          f"{max(seconds):.3f} s (target < {COLLECT_TARGET_S:g} s: {'met' if max(seconds) < COLLECT_TARGET_S else 'NOT met'})")


SECTIONS = ("experiment", "tcp", "provenance")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repetitions", type=int, default=3, help="NDR searches in section 1 (default 3)")
    ap.add_argument("--skip", default="", help=f"comma-separated sections to leave out: {', '.join(SECTIONS)}")
    a = ap.parse_args()
    skip = {x for x in a.skip.split(",") if x}
    if skip - set(SECTIONS):
        ap.error(f"--skip: unknown section(s) {', '.join(sorted(skip - set(SECTIONS)))}")
    os.environ.setdefault("NFVLAB_LOCK_WAIT_S", "1800")
    t0 = time.monotonic()
    if "experiment" not in skip:
        experiment_on_a_known_capacity(a.repetitions)
    if "tcp" not in skip:
        tcp_goodput_through_a_shaped_link()
    if "provenance" not in skip:
        provenance_collect()
    print(f"\nbenchmark wall time {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
