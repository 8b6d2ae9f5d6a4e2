"""User-space, AF_XDP and combined models on real namespaces, OVS-DPDK and testpmd."""
import dataclasses
import os
import re
import signal
import subprocess
import sys

import pytest

from conftest import NO_RESIDUE, REPO, check_exact, check_exact_trial, clean_trial, interface_counters, lab_residue
from nfvlab.labs.embedded import realize, state, testpmd
from nfvlab.labs import LabError, forwarder
from nfvlab.labs.embedded import Lab
from nfvlab.scenario import Resources, Scenario
from nfvlab.traffic.embedded import EmbeddedGenerator
from nfvlab.trial import run_trial
from nfvlab.system import netns as nl
from test_lab import locked_hugepages, locked_residue

pytestmark = pytest.mark.lab

MODELS = ["ovs-dpdk-vhost", "ovs-dpdk-memif", "ovs-dpdk-tap", "ovs-afxdp", "afxdp-cni", "chain-userspace",
          "chain-combined"]


def low_rate_trial(lab, frame_size=64):
    """5000 pps for 1 s both ways with 500 latency probes/s (:func:`conftest.clean_trial`).

    ``lossless``: every model here has a busy-polling forwarder (OVS PMDs, testpmd) whose CPU the
    generator shares by the core plan: a stall of it longer than its rings hold drops frames,
    the host's doing, and such a trial is repeated (``conftest.lost_on_a_shared_cpu``)."""
    gen = EmbeddedGenerator(lab.streams, flows=4, latency_pps=500, tracker=lab)
    return clean_trial(gen, 5000, 1.0, frame_size, bidirectional=True, lossless=True)


def assert_lossless_exact(result, what):
    """The DUT delivered every frame the generator sent, exactly, probes included (the loss: the
    tail the generator left unsent, if the host held it up)."""
    assert len(result.directions) == 2, what
    check_exact_trial(result, 5000)
    for d in result.directions:
        lat = d.latency
        assert 0 < lat.probes_sent <= 500, f"{what}: {lat}"
        assert 0 < lat.min_ns <= lat.p50_ns <= lat.p99_ns <= lat.max_ns


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("frame_size", [64, 1518])
def test_low_rate_trial_is_lossless_with_exact_counts(clean_host, model, frame_size):
    with Lab(model) as lab:
        assert lab.core_plan is not None
        result = low_rate_trial(lab, frame_size)
    assert_lossless_exact(result, f"{model} {frame_size}")


def ifname(port: str) -> str:
    """``tg0`` of a direction's port name (``<namespace>:tg0`` or ``tg0``)."""
    return re.split(r"[:/]", port)[-1]


@pytest.mark.parametrize("model", ["ovs-dpdk-memif", "ovs-dpdk-tap"])
def test_jumbo_frames_cross_at_mtu_9000_counted_exactly_and_are_refused_at_1500(clean_host, model):
    """Known answer: every 9018 B frame sent at MTU 9000 arrives, bytes and all; at MTU 1500 none is sent."""
    from nfvlab.labs.embedded import EmbeddedLab
    from nfvlab.measure import InputError, check_inputs

    with Lab(Scenario(model, mtu_bytes=9000)) as lab:
        assert lab.mtu == 9000
        assert all(nl.link_mtu(lab.ns("pod1"), f"eth{i}") == 9000 for i in (1, 2)) if model == "ovs-dpdk-tap" else True
        gen = EmbeddedGenerator(lab.streams, flows=4, latency_pps=0, tracker=lab)
        ports = ["tg0", "tg1"]
        marks = []
        # 500 pps: ~4.5 MB/s per direction, well inside net_pcap's 2 MB capture buffer at each
        # PMD stall a loaded 2-CPU host causes. The counters are judged over the last trial (the one asserted).
        result = clean_trial(gen, 500, 1.0, 9018, bidirectional=True, lossless=True,
                             before_each=lambda: marks.append(interface_counters(lab.ns("tg"), ports)))
        before, after = marks[-1], interface_counters(lab.ns("tg"), ports)
    for d in result.directions:
        check_exact(d, intended=500)
        # Bytes: each test frame left and arrived whole (9014 B without FCS); the DUT's own
        # frames (foreign, e.g. the pod kernel's IPv6 ND on a tap) are at most 1518 B each.
        tx = after[ifname(d.tx_port)]["tx_bytes"] - before[ifname(d.tx_port)]["tx_bytes"]
        rx = after[ifname(d.rx_port)]["rx_bytes"] - before[ifname(d.rx_port)]["rx_bytes"]
        assert tx == d.sent_packets * 9014, (tx, d)
        assert d.received_packets * 9014 <= rx <= d.received_packets * 9014 + d.foreign_packets * 1518, (rx, d)
    small = EmbeddedLab().mtu(Scenario(model, mtu_bytes=1500))
    assert small == 1500
    with pytest.raises(InputError, match=r"--frame-size 9018: above the path MTU \(1500 B"):
        check_inputs(9018, port_speed="10GbE", mtu=small)
    assert locked_residue() == NO_RESIDUE


def pod_forwarder(lab, pod="pod1"):
    return next(r for r in lab.state.processes if testpmd.TESTPMD in r.cmd and lab.ns(pod) in r.cmd)


@pytest.mark.parametrize("model", ["ovs-dpdk-vhost", "afxdp-cni"])
def test_traffic_goes_through_the_pod_forwarder(clean_host, model):
    with Lab(model) as lab:
        assert_lossless_exact(low_rate_trial(lab), model)
        os.killpg(pod_forwarder(lab).pid, signal.SIGKILL)
        gen = EmbeddedGenerator(lab.streams, flows=4, latency_pps=500, tracker=lab)
        result = clean_trial(gen, 5000, 1.0, 64, bidirectional=True)  # at least half sent, none arrives: the point
    assert [d.received_packets for d in result.directions] == [0, 0], result.directions
    assert all(2500 <= d.sent_packets <= d.intended_packets == 5000 for d in result.directions), result.directions


@pytest.mark.parametrize("model", ["chain-combined", "afxdp-cni"])
def test_forwarding_survives_an_overloaded_trial(clean_host, model):
    """A search starts at maximum load: the path must forward again afterwards.

    (chain-combined on net_af_xdp direct ports stopped receiving for good here.)
    """
    with Lab(model) as lab:
        gen = EmbeddedGenerator(lab.streams, latency_pps=0, tracker=lab)
        run_trial(gen, 300_000, 1.0, 64, bidirectional=True)  # the overload: its counts do not matter
        # A path that stopped forwarding for good loses every try, and the test fails naming each.
        after = clean_trial(gen, 5000, 1.0, 64, bidirectional=True, lossless=True)
    check_exact_trial(after, 5000)


def test_pod_forwarder_is_placed_by_the_core_plan(clean_host):
    with Lab("afxdp-cni") as lab:
        pid = pod_forwarder(lab).pid
        allowed = os.sched_getaffinity(pid)
    assert allowed == set(lab.core_plan.pods["pod1"])


def test_hugepages_are_reserved_and_given_back(clean_host):
    before = locked_hugepages()
    with Lab(Scenario("ovs-dpdk-vhost", Resources(hugepages=True))) as lab:
        assert int(state.HUGEPAGES_2M.read_text()) >= before + lab.state.hugepages_2m > before
        assert_lossless_exact(low_rate_trial(lab), "hugepages")
    assert locked_hugepages() == before


def test_missing_tool_fails_in_one_line_before_anything_exists(clean_host, monkeypatch):
    memif = realize.REALIZATIONS["ovs-dpdk-memif"]
    broken = dataclasses.replace(memif, tools=memif.tools + ("ovs-vsctl-missing",))
    monkeypatch.setitem(realize.REALIZATIONS, "ovs-dpdk-memif", broken)
    with pytest.raises(LabError, match=r"missing ovs-vsctl-missing .*`\./run setup`") as err:
        with Lab("ovs-dpdk-memif"):
            pass
    assert "\n" not in str(err.value)
    assert locked_residue() == NO_RESIDUE


def test_too_few_hugepages_fails_in_one_line_before_anything_exists(clean_host, monkeypatch):
    monkeypatch.setattr(forwarder, "TESTPMD_MEMORY_MB", 10 ** 8)  # memory_mb reads it there
    with pytest.raises(LabError, match="hugepages") as err:
        with Lab(Scenario("afxdp-cni", Resources(hugepages=True))):
            pass
    assert "\n" not in str(err.value)
    assert locked_residue() == NO_RESIDUE


def test_exception_inside_an_ovs_lab_tears_everything_down(clean_host):
    with pytest.raises(RuntimeError, match="boom"):
        with Lab("chain-userspace"):
            raise RuntimeError("boom")
    assert locked_residue() == NO_RESIDUE


PROGRAM = """
import sys, time
from nfvlab.labs.embedded import Lab
with Lab(sys.argv[1]) as lab:
    print("up", flush=True)
    time.sleep(60)
"""


def test_kill9_of_an_ovs_lab_then_lab_clean_leaves_no_residue(clean_host, spawn):
    p = spawn([sys.executable, "-c", PROGRAM, "ovs-dpdk-memif"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
              text=True, cwd=REPO)
    lines = iter(p.stdout.readline, "")  # "removed leftover ..." lines may come first
    assert "up" in (line.strip() for line in lines), p.stderr.read()
    left = lab_residue()
    assert len(left["generator_pids"]) >= 3, left  # ovsdb-server, ovs-vswitchd, testpmd
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    # Take the lock at once: another run's Lab would otherwise clean the leftover first.
    with state.HostLock("test kill -9 clean"):
        assert lab_residue()["namespaces"], "the killed lab left nothing to recover from"
        removed = state.clean()
        residue = lab_residue()
    assert any(line.startswith("lab ") and "ovs-dpdk-memif" in line for line in removed), removed
    assert residue == NO_RESIDUE
