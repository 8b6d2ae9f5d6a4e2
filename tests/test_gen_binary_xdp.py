"""nfvlab-gen's XDP transmit path (``--tx xdp``, nfvlab_tx.bpf.c) on real namespaces and veths.

The frames leave through an XDP program the kernel runs in its live-frames
mode; a veth takes them only while its peer runs NAPI, so the tests turn GRO on
at the receiving end, as the driver (``EmbeddedGenerator(tx="xdp")``) does.
Counts are cross-checked against the receiving interface's own counters, the
frames' bytes against a capture, against what each trial sent (test_gen_binary.sent_counts;
repeated only when the host held it under half: gen_barely_sent). Trials stay under 0.9 s: the loop
owns its CPU, and on a busy test host Linux's fair server may take up to 50 ms
from it about 0.95 s into a second (docs/measurement.md, "Two TX paths").
"""
from __future__ import annotations

import json
import os
import signal
import subprocess

import pytest
import test_gen_binary as tgb
from conftest import skip_without_xdp_live
from test_gen_binary import (
    IMIX, MAC_A, MAC_B, PREFIX, Port, captured_trial, check_latency, clean_gen, gen_barely_sent,
    ip_checksum_ok, paced, run, rx_delta, sending, sent_counts, sent_short, stream, wait_until,
)

from nfvlab.scenario.topology import Port as LabPort
from nfvlab.scenario.topology import Stream
from nfvlab.traffic.embedded import tx_object
from nfvlab.traffic.embedded.generator import XdpPorts, _gro, veth_peer, xdp_peers
from nfvlab.traffic.base import GeneratorError

pytestmark = pytest.mark.lab
gen, count, pair = tgb.gen, tgb.count, tgb.pair  # the fixtures of the socket path's tests


@pytest.fixture(scope="module")
def xdp() -> list[str]:
    skip_without_xdp_live()
    return ["--tx", "xdp", "--tx-obj", str(tx_object())]


def napi(port: Port, on: bool = True) -> None:
    run("ip", "netns", "exec", port.ns, "ethtool", "-K", port.ifname, "gro", "on" if on else "off")


def tx_programs(headers: int) -> set[int]:
    """Ids of loaded XDP TX programs whose header map has ``headers`` entries (streams x sizes x
    flows): a size that tells this test's program apart from those of other trials on the host."""
    maps = json.loads(run("bpftool", "-j", "map", "show").stdout or "[]")
    ours = {m["id"] for m in maps if m.get("name") == "tx_hdrs" and m.get("max_entries") == headers}
    progs = json.loads(run("bpftool", "-j", "prog", "show").stdout or "[]")
    return {p["id"] for p in progs if p.get("name") == "nfvl_tx" and ours & set(p.get("map_ids", []))}


def test_exact_counts_bytes_and_latency_one_direction(gen, count, xdp, pair):
    a, b = pair
    napi(b)
    out, before = clean_gen(gen, "--duration-s", "0.5", "--frame-size", "64", "--latency-pps", "400", *count, *xdp,
                            "--stream", stream(a, b, 50000), ports=(b,), spoiled=gen_barely_sent)
    (s,) = out["streams"]
    assert out["tx"] == "xdp" and out["ticks"] > 0
    sent = sent_counts(s, 25000, 200)
    check_latency(s["latency"])
    assert rx_delta(b, before[b.spec]) == (sent, sent * 60)
    # Paced, not sent as fast as the loop runs: the last frame left no earlier than its time.
    if not sent_short(out):  # (a tail the host left unsent has no time of its own to check)
        paced(s, 0.5)


def test_frame_format_imix_flows(gen, count, xdp, pair, spawn):
    """The same frames as the socket path (test_gen_binary.test_frame_format_imix_flows), byte for byte."""
    a, b = pair
    napi(b)
    out, frames = captured_trial(spawn, gen, b, "--duration-s", "0.1", "--imix", "--flows", "5",
                                 "--latency-pps", "0", "--trial-id", "0xdeadbeef", *count, *xdp,
                                 "--stream", stream(a, b, 2400))
    assert out["streams"][0]["received_load"] == 240  # all counted after the tap saw them
    assert len(frames) == out["streams"][0]["sent"] == 240
    cycle = [size - 4 for size, weight in IMIX for _ in range(weight)]
    # GRO may hand frames to the tap in another order than they were sent: sort by sequence number.
    for k, f in enumerate(sorted(frames, key=lambda f: f[52:60])):
        assert f[0:6].hex(":") == MAC_B and f[6:12].hex(":") == MAC_A
        assert f[42:60] == b"NFVL" + bytes.fromhex("deadbeef") + bytes([0, 0]) + k.to_bytes(8, "big")
        assert not any(f[60:])
        assert ip_checksum_ok(f[14:34])
        assert len(f) == cycle[k % len(cycle)]
        assert int.from_bytes(f[16:18], "big") == len(f) - 14
        assert int.from_bytes(f[34:36], "big") == 1024 + k % 5


@pytest.fixture
def two_ports():
    """Namespace T holding tx ports t0, t1; their veth peers r0, r1 in namespace R (NAPI on)."""
    names = [f"{PREFIX}-{os.getpid()}-xt", f"{PREFIX}-{os.getpid()}-xr"]
    macs = ["02:00:00:00:0c:0%d" % i for i in range(4)]
    try:
        for ns in names:
            run("ip", "netns", "add", ns)
            run("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
                "net.ipv6.conf.default.disable_ipv6=1")
        for i in (0, 1):
            run("ip", "link", "add", f"t{i}", "netns", names[0], "address", macs[2 * i], "type", "veth",
                "peer", "name", f"r{i}", "netns", names[1], "address", macs[2 * i + 1])
            run("ip", "-n", names[0], "link", "set", f"t{i}", "up")
            run("ip", "-n", names[1], "link", "set", f"r{i}", "up")
        yield ([Port(names[0], f"t{i}", macs[2 * i]) for i in (0, 1)],
               [Port(names[1], f"r{i}", macs[2 * i + 1]) for i in (0, 1)])
    finally:
        for ns in names:
            run("ip", "netns", "del", ns, check=False)


def test_two_streams_from_one_namespace_exact(gen, count, xdp, two_ports):
    (t0, t1), (r0, r1) = two_ports
    for r in (r0, r1):
        napi(r)
    out, before = clean_gen(gen, "--duration-s", "0.5", "--frame-size", "1518", "--flows", "16",
                            "--latency-pps", "200", *count, *xdp, "--stream", stream(t0, r0, 20000),
                            "--stream", stream(t1, r1, 16000, sip="198.18.0.3", dip="198.19.0.4"), ports=(r0, r1),
                            spoiled=gen_barely_sent)
    for s, r, rate in zip(out["streams"], (r0, r1), (10000, 8000)):
        sent = sent_counts(s, rate, 100)
        assert rx_delta(r, before[r.spec]) == (sent, sent * 1514)


def test_a_port_whose_peer_has_no_napi_is_found_by_the_driver(pair):
    """veth drops XDP frames silently unless its peer runs NAPI: the driver turns GRO on for the
    trial and back off after, on the peer it finds across namespaces."""
    a, b = pair
    assert veth_peer(LabPort(a.ns, a.ifname)) == LabPort(b.ns, b.ifname)
    assert not _gro(LabPort(b.ns, b.ifname))
    streams = [Stream(LabPort(a.ns, a.ifname), LabPort(b.ns, b.ifname), MAC_A, MAC_B, "198.18.0.1", "198.19.0.2")]
    assert xdp_peers(streams * 2) == [LabPort(b.ns, b.ifname)]  # once each
    with XdpPorts(xdp_peers(streams)):
        assert _gro(LabPort(b.ns, b.ifname))
    assert not _gro(LabPort(b.ns, b.ifname))


def test_the_driver_refuses_ports_that_cannot_send_xdp_frames(pair):
    a, _ = pair
    run("ip", "-n", a.ns, "link", "add", "mvx", "link", a.ifname, "type", "macvlan")
    with pytest.raises(GeneratorError, match="veth or NIC tx ports: .*mvx is a macvlan"):
        veth_peer(LabPort(a.ns, "mvx"))


@pytest.mark.parametrize("case,message", [
    ("jumbo", "--tx xdp sends frames of 64..1518 B"),
    ("no-obj", "--tx xdp needs --tx-obj"),
    ("two-namespaces", "every tx port in one network namespace"),
    ("bad-tx", "--tx 'afxdp' is invalid"),
])
def test_bad_arguments_one_line_before_anything(gen, xdp, pair, case, message):
    a, b = pair
    args = {"jumbo": [*xdp, "--frame-size", "9018", "--stream", stream(a, b, 100)],
            "no-obj": ["--tx", "xdp", "--stream", stream(a, b, 100)],
            "two-namespaces": [*xdp, "--stream", stream(a, b, 100), "--stream", stream(b, a, 100)],
            "bad-tx": ["--tx", "afxdp", "--stream", stream(a, b, 100)]}[case]
    proc = subprocess.run([gen, "--duration-s", "0.1", *args], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and message in lines[0], proc.stderr


def test_interrupt_stops_the_kernel_loop_reports_and_unloads(gen, count, xdp, pair, spawn):
    a, b = pair
    napi(b)
    started = sending(b)
    # 13 flows: 13 headers, a TX program of this test's own (another trial's may run meanwhile).
    proc = spawn([gen, "--duration-s", "10", "--latency-pps", "100", "--flows", "13", *count, *xdp,
                  "--stream", stream(a, b, 10000)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_until(started, "the generator to send")
    assert len(tx_programs(13)) == 1  # loaded while it runs
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    (s,) = json.loads(stdout)["streams"]
    assert 0 < s["sent"] < s["intended"] == 100000 and s["received_load"] == s["sent"]
    # The kernel frees the program once its last reference goes (shortly after the exit).
    wait_until(lambda: not tx_programs(13), "the XDP TX program to be unloaded")
    assert tx_programs(13) == set()


def test_the_peer_of_a_veth_in_the_same_namespace_is_found(pair):
    a, _ = pair
    run("ip", "-n", a.ns, "link", "add", "sx0", "type", "veth", "peer", "name", "sx1")
    assert veth_peer(LabPort(a.ns, "sx0")) == LabPort(a.ns, "sx1")


@pytest.mark.parametrize("model", ["linux-bridge", "macvlan"])
def test_a_lab_trial_through_a_dut_with_the_xdp_path_is_exact_and_restores_the_ports(clean_host, model):
    """Through the embedded lab's DUT both ways; the DUT's ingress veths get NAPI for the trial only."""
    from conftest import NO_RESIDUE, check_exact, clean_trial, lab_residue
    from nfvlab.labs.embedded import Lab
    from nfvlab.traffic.embedded import EmbeddedGenerator

    skip_without_xdp_live()
    with Lab(model) as lab:
        gen = EmbeddedGenerator(lab.streams, flows=4, latency_pps=200, tx="xdp", tracker=lab)
        peers = [veth_peer(s.tx) for s in lab.streams]
        # lossless: 20 kpps a direction fills a veth's 256-frame XDP ring in ~13 ms of its NAPI held up
        # (the host's doing): such a trial is repeated
        result = clean_trial(gen, 20000, 0.5, 64, bidirectional=True, lossless=True)
        assert [_gro(p) for p in peers] == [False, False]
        assert gen.describe()["tx"] == "xdp" and gen.identity()["ports"] == "xdp live frames on veth"
    for d in result.directions:
        check_exact(d, intended=10000)
        assert d.foreign_packets == 0 and 0 < d.latency.probes_sent <= 100
    assert lab_residue() == NO_RESIDUE


def _pair_streams(pair) -> list[Stream]:
    a, b = pair
    return [Stream(LabPort(a.ns, a.ifname), LabPort(b.ns, b.ifname), MAC_A, MAC_B, "198.18.0.1", "198.19.0.2")]


@pytest.mark.parametrize("kwargs,why", [
    ({}, None),
    ({"frame_sizes": [64, "IMIX", 1518]}, None),
    ({"busy_roles": {"pod1 forwarder": frozenset({1})}}, None),  # its own CPU: the loop may own CPU 0
    ({"frame_sizes": [64, 9018]}, "frames of 9018 B do not fit the XDP path"),
    ({"cpu": None}, r"not pinned \(generator.cpu: null\)"),
    ({"busy_roles": {"vSwitch control threads": frozenset({0}), "pod1 forwarder": frozenset({0})}},
     "never yields CPU 0, which the core plan shares with vSwitch control threads, pod1 forwarder"),
    ({"busy_roles": {"noisy neighbour": frozenset()}}, "shares with noisy neighbour"),  # unpinned: any CPU
])
def test_auto_takes_the_xdp_path_unless_something_rules_it_out(pair, kwargs, why):
    """``tx="auto"`` (the lab profile's default) picks xdp on veth ports and keeps the reason
    when it falls back to the socket path (frames too large, the TX CPU shared)."""
    from nfvlab.traffic.embedded import EmbeddedGenerator

    if why is None:
        skip_without_xdp_live()
    gen = EmbeddedGenerator(_pair_streams(pair), tx="auto", **kwargs)
    if why is None:
        assert (gen.tx, gen.tx_why) == ("xdp", None)
        assert gen.identity()["ports"] == "xdp live frames on veth"
    else:
        assert gen.tx == "socket" and gen.identity()["ports"] == "af_packet on veth"
        assert __import__("re").search(why, gen.tx_why), gen.tx_why
    assert gen.describe()["tx_requested"] == "auto" and gen.describe()["tx_why"] == gen.tx_why


def test_auto_takes_the_socket_path_where_the_kernel_refuses_xdp_live_frames_and_says_why(pair, monkeypatch):
    """A kernel that refuses the live-frames mode (the probe's answer, stood in for here so that any
    host checks the choice): ``tx: auto`` takes the socket path with the kernel's reason, the
    calibration and the run's provenance name that path only, and an explicit ``xdp`` is kept."""
    from nfvlab.params import GeneratorParams
    from nfvlab.traffic.embedded import EmbeddedGenerator, generator
    from nfvlab.traffic.select import identity_for, tx_paths

    refusal = "the kernel (6.18.44-test) refuses XDP live frames: Operation not permitted"
    monkeypatch.setattr(generator, "xdp_live_refusal", lambda: refusal)
    gen = EmbeddedGenerator(_pair_streams(pair), tx="auto")
    assert (gen.tx, gen.tx_why) == ("socket", refusal)
    assert tx_paths(GeneratorParams()) == ("socket",)
    assert identity_for(GeneratorParams())["ports"] == "af_packet on veth"
    assert EmbeddedGenerator(_pair_streams(pair), tx="xdp").tx == "xdp"
    monkeypatch.setattr(generator, "xdp_live_refusal", lambda: None)
    assert tx_paths(GeneratorParams()) == ("xdp", "socket")
    assert identity_for(GeneratorParams())["ports"] == "xdp live frames on veth"


def test_the_probe_of_xdp_live_frames_sends_nothing_and_answers_as_a_trial_of_the_path_does(gen, count, pair):
    """``nfvlab-gen --probe-xdp`` answers for this kernel: where it says yes, a trial on the XDP path
    runs; where it says no, such a trial fails with the same reason. Either way the probe sends no
    frame (its program drops the one it is given)."""
    from nfvlab.traffic.embedded import generator

    a, b = pair
    napi(b)
    before = b.counters()
    probe = subprocess.run([gen, "--probe-xdp"], capture_output=True, text=True, timeout=10)
    assert rx_delta(b, before) == (0, 0)
    generator.xdp_live_refusal.cache_clear()
    refusal = generator.xdp_live_refusal()
    answer = probe.stdout.strip()
    assert (probe.returncode == 0) == (refusal is None) and (answer == "ok" if refusal is None else answer in refusal)
    trial = subprocess.run([gen, "--duration-s", "0.2", "--frame-size", "64", "--latency-pps", "0", *count,
                            "--tx", "xdp", "--tx-obj", str(tx_object()), "--stream", stream(a, b, 1000)],
                           capture_output=True, text=True, timeout=60)
    if refusal is None:
        assert trial.returncode == 0 and json.loads(trial.stdout)["tx"] == "xdp", trial.stderr
    else:
        assert trial.returncode != 0 and f"the XDP TX loop did not start: {answer}" in trial.stderr


def test_auto_falls_back_on_ports_that_cannot_send_xdp_frames_and_says_why(pair):
    from nfvlab.traffic.embedded import EmbeddedGenerator

    skip_without_xdp_live()  # (a kernel that refuses the path is the reason given first)
    a, b = pair
    run("ip", "-n", a.ns, "link", "add", "mvy", "link", a.ifname, "type", "macvlan")
    streams = [Stream(LabPort(a.ns, "mvy"), LabPort(b.ns, b.ifname), MAC_A, MAC_B, "198.18.0.1", "198.19.0.2")]
    gen = EmbeddedGenerator(streams, tx="auto")
    assert gen.tx == "socket" and "mvy is a macvlan" in gen.tx_why
    # asked for explicitly, a path is used as asked (no second guessing)
    assert EmbeddedGenerator(streams, tx="socket").tx_why is None


@pytest.mark.parametrize("model,path", [("macvlan", "xdp"), ("ovs-dpdk-vhost", "socket")])
def test_the_lab_default_path_follows_the_core_plan_and_every_trial_records_it(clean_host, model, path):
    """The default lab profile (``tx: auto``): kernel models get the XDP path; a model whose pod
    busy-polls the generator's CPU gets the socket path, and each trial record says which and why."""
    from conftest import NO_RESIDUE, check_exact, clean_trial, lab_residue
    from nfvlab import measure
    from nfvlab.labs.embedded import EmbeddedLab
    from nfvlab.params import LabParams, TrafficParams
    from nfvlab.scenario import Scenario

    lab = LabParams()
    assert lab.generator.tx == "auto"
    if path == "xdp":
        skip_without_xdp_live()
    with measure.bench(EmbeddedLab(), lab.generator, Scenario(model), TrafficParams()) as (session, gen):
        # ovs-dpdk-vhost: its pod's forwarder busy-polls the generator's CPU (asserted below), so a host
        # stall of it beyond its rings drops frames (the host's doing, as in test_lab_userspace).
        result = clean_trial(gen, 4000, 0.5, 64, lossless=path == "socket")
        assert gen.last_report["tx"] == path  # what nfvlab-gen itself used
    assert result.extra["tx"]["path"] == path and result.extra["tx"]["requested"] == "auto"
    if path == "socket":
        assert "pod1 forwarder" in result.extra["tx"]["why"]
        assert session.busy_roles["pod1 forwarder"] == frozenset({0})
    else:
        assert result.extra["tx"]["why"] is None and session.busy_roles == {}
    for d in result.directions:
        check_exact(d, intended=2000)
    assert lab_residue() == NO_RESIDUE
