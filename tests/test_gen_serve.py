"""One nfvlab-gen process for many trials (``--serve``, nfvlab/traffic/embedded/serve.py) on a veth pair.

Each trial through a kept process must be what a one-shot run of it is: its own exact
counts (the counters start from zero), its own frame size and rate; the process must keep
its counter program between trials, and must end when its parent closes it or dies.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import shutil

import psutil
import pytest

from test_gen_binary import (  # noqa: F401  (fixtures)
    MAC_A, MAC_B, count, counter_programs, gen, gen_barely_sent, pair, rx_delta, sent_counts, stream, wait_until,
)
from conftest import check_exact, clean_trial, until_unspoiled
from nfvlab.scenario.topology import Port as LabPort
from nfvlab.scenario.topology import Stream
from nfvlab.system import processes
from nfvlab.traffic.base import GeneratorError
from nfvlab.traffic.embedded import gen_binary
from nfvlab.traffic.embedded.generator import EmbeddedGenerator, xdp_refusal
from nfvlab.traffic.embedded.serve import GenProcess, trial_line

#: On a veth pair in namespaces of its own (test_gen_binary's ``pair``).
lab = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("bpftool") is None,
                         reason="needs root, iproute2, bpftool")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Tracker:
    """A lab's process record, as the embedded lab keeps it: what is tracked now."""

    def __init__(self) -> None:
        self.tracked: list[tuple[int, str]] = []

    def track_process(self, pid: int, cmd: str):
        self.tracked.append((pid, cmd))
        return (pid, cmd)

    def untrack_process(self, rec) -> None:
        self.tracked.remove(rec)


def served(proc: subprocess.Popen, *args: str) -> dict:
    """One trial through a running ``nfvlab-gen --serve``: its report."""
    proc.stdin.write(trial_line(list(args)))
    proc.stdin.flush()
    line = proc.stdout.readline()
    assert line.endswith("\n"), proc.stderr.read() if proc.poll() is not None else "no report"
    return json.loads(line)


def clean_served(proc, *args, ports=()):
    """A served trial, repeated only while the host held it up until it sent under half
    (``gen_barely_sent``), with ``ports``' counters read before it."""
    def attempt():
        before = {p.spec: p.counters() for p in ports}
        return served(proc, *args), before

    return until_unspoiled(attempt, lambda r: gen_barely_sent(r[0]), what="nfvlab-gen --serve " + " ".join(args[:4]))


@pytest.mark.lab
@lab
def test_trials_through_one_process_count_each_its_own(gen, count, pair, spawn):
    """Two trials of different rate and frame size through one process: each counts exactly its own
    frames (nothing of the first in the second), sends its own size (the rx port's byte counter),
    and the counter program loaded for the first (the larger bitmap) serves the second."""
    a, b = pair
    proc = spawn([gen, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                 text=True)
    # 3001 frames + 31 probes: 47 + 1 words of bitmap, a size no other trial here has.
    first, before = clean_served(proc, "--duration-s", "0.31", "--latency-pps", "100", "--frame-size", "64",
                                 *count, "--stream", stream(a, b, 9680.7), ports=(b,))
    sent = sent_counts(first["streams"][0], 3001, 31)
    assert rx_delta(b, before[b.spec]) == (sent, sent * 60)
    (prog,) = counter_programs(48)  # kept loaded between trials
    second, before = clean_served(proc, "--duration-s", "0.2", "--latency-pps", "50", "--frame-size", "1518",
                                  *count, "--stream", stream(a, b, 2000), ports=(b,))
    s2 = second["streams"][0]
    sent = sent_counts(s2, 400, 10)
    assert rx_delta(b, before[b.spec]) == (sent, sent * 1514)
    assert s2["frame_sizes"] == [1518] and second["trial_id"] != first["trial_id"]
    assert counter_programs(48) == {prog}
    proc.stdin.close()  # EOF: the process ends, and its counter with it
    assert proc.wait(timeout=30) == 0
    wait_until(lambda: not counter_programs(48), "the served counter to go")


def test_bad_trial_line_ends_the_process_in_one_line():
    """Bad options end a served process as they end a one-shot run: exit 2, the field named."""
    proc = GenProcess(gen_binary())
    try:
        with pytest.raises(GeneratorError, match=r"--duration-s '-1' is invalid"):
            proc.trial(["--duration-s", "-1", "--stream", "tx=.:lo,rx=.:lo"], timeout_s=30)
        assert proc.proc.wait(timeout=5) == 2
    finally:
        proc.close()


def test_trial_line_refuses_separators():
    assert trial_line(["--flows", "4"]) == "--flows\t4\n"
    with pytest.raises(ValueError, match="tabs and newlines are not allowed"):
        trial_line(["--stream", "tx=a:b\tc"])


def _streams(pair) -> list[Stream]:
    """a -> b, then b -> a (the second stream's tx port is in another namespace: no XDP path)."""
    a, b = pair
    pa, pb = LabPort(a.ns, a.ifname), LabPort(b.ns, b.ifname)
    return [Stream(pa, pb, MAC_A, MAC_B, "198.18.0.1", "198.19.0.2"),
            Stream(pb, pa, MAC_B, MAC_A, "198.19.0.2", "198.18.0.1")]


@pytest.mark.lab
@lab
@pytest.mark.parametrize("tx", ["socket", "xdp"])
def test_generator_keeps_one_process_and_close_ends_it(gen, pair, tx):
    """With a tracker, the generator's trials go to one tracked process, on either TX path; a
    frame-size change between trials is honoured; close() ends the process and untracks it."""
    tracker = Tracker()
    if tx == "xdp" and (why := xdp_refusal(_streams(pair)[:1])):
        pytest.skip(f"no XDP path here: {why}")
    g = EmbeddedGenerator(_streams(pair)[:1 if tx == "xdp" else 2], latency_pps=100, tracker=tracker, tx=tx)
    assert g.persistent and g.tx == tx
    r1 = clean_trial(g, 5000, 0.2, 64, bidirectional=False)
    (pid, cmd), = tracker.tracked
    assert cmd == "nfvlab-gen"
    # Named by its ports in ps, as a one-shot run is (lab clean, residue checks).
    assert f"tx={pair[0].spec},rx={pair[1].spec}" in " ".join(psutil.Process(pid).cmdline())
    r2 = clean_trial(g, 3000, 0.2, 1024, bidirectional=False)
    assert tracker.tracked == [(pid, "nfvlab-gen")]  # the same process
    check_exact(r1.directions[0], intended=1000)
    check_exact(r2.directions[0], intended=600)
    assert g.last_report["streams"][0]["frame_sizes"] == [1024] and g.last_report["tx"] == tx
    if tx == "socket":  # then both ways: the second stream's sockets and counter join the process
        r3 = clean_trial(g, 2000, 0.2, 128, bidirectional=True)
        for d in r3.directions:
            check_exact(d, intended=400)
        assert [d.foreign_packets for d in r3.directions] == [0, 0]
        assert tracker.tracked == [(pid, "nfvlab-gen")]
    start = processes.start_time(pid)
    g.close()
    assert tracker.tracked == [] and processes.exited(pid, start)


@pytest.mark.lab
@lab
def test_generator_without_tracker_runs_one_shot(gen, pair):
    g = EmbeddedGenerator(_streams(pair), latency_pps=0)
    assert not g.persistent
    r = clean_trial(g, 2000, 0.2, 64, bidirectional=False)
    check_exact(r.directions[0], intended=400)
    assert g._proc is None


CHILD = """
import sys, time
from nfvlab.scenario.topology import Port, Stream
from nfvlab.traffic.embedded import gen_binary
from nfvlab.traffic.embedded.generator import EmbeddedGenerator, xdp_refusal
a_ns, b_ns, mac_a, mac_b = sys.argv[1:5]
s = Stream(Port(a_ns, "gva"), Port(b_ns, "gvb"), mac_a, mac_b, "198.18.0.1", "198.19.0.2")
g = EmbeddedGenerator([s], latency_pps=0, persistent=True)
g.run(1000, 0.1, 64, bidirectional=False)
print(g._proc.proc.pid, flush=True)
time.sleep(600)
"""


@pytest.mark.lab
@lab
def test_killed_parent_leaves_no_generator(gen, pair, spawn):
    """SIGKILL of the Python side: the kernel closes the pipe, and the served process exits at EOF."""
    a, b = pair
    parent = spawn([sys.executable, "-c", CHILD, a.ns, b.ns, MAC_A, MAC_B], stdout=subprocess.PIPE,
                   text=True, env={**os.environ, "PYTHONPATH": ROOT})
    pid = int(parent.stdout.readline())
    start = processes.start_time(pid)
    assert start is not None and not processes.exited(pid, start)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    wait_until(lambda: processes.exited(pid, start), "the served nfvlab-gen to exit")
