"""The embedded lab on real namespaces: build, forward, tear down, recover."""
import json
import signal
import subprocess
import sys
import time
import warnings

import pytest

from conftest import NO_RESIDUE, REPO, clean_trial, lab_residue
from nfvlab.labs.embedded import realize, state
from nfvlab.scenario import catalogue
from nfvlab.labs import LabError
from nfvlab.labs.embedded import Lab
from nfvlab.traffic.embedded import EmbeddedGenerator

pytestmark = pytest.mark.lab

KERNEL_MODELS = ["linux-bridge", "host-routing", "macvlan", "smartnic-direct"]


@pytest.mark.parametrize("model", KERNEL_MODELS)
def test_up_and_down_leaves_no_residue(clean_host, model):
    with Lab(model) as lab:
        assert lab_residue()["namespaces"] == sorted(lab.state.namespaces)
        assert {"tg", "wk", "pod1"} == {ns.rsplit("-", 1)[1] for ns in lab.state.namespaces}
        assert len(lab.streams) == 2
    assert lab_residue() == NO_RESIDUE


@pytest.mark.parametrize("model", KERNEL_MODELS)
@pytest.mark.parametrize("frame_size", [64, 1518, "IMIX"])
def test_low_rate_trial_is_lossless_with_exact_counts(clean_host, model, frame_size):
    with Lab(model) as lab:
        gen = EmbeddedGenerator(lab.streams, flows=4, latency_pps=500, tracker=lab)
        result = clean_trial(gen, 5000, 1.0, frame_size, bidirectional=True)
    assert len(result.directions) == 2
    for d in result.directions:
        assert d.intended_packets == 5000
        assert d.sent_packets == 5000
        assert d.received_packets == 5000, f"{model} {frame_size}: {d}"
        lat = d.latency
        assert lat.probes_received == lat.probes_sent == 500
        assert 0 < lat.min_ns <= lat.p50_ns <= lat.p90_ns <= lat.p99_ns <= lat.max_ns
    assert result.loss_ratio == 0.0


def test_unidirectional_trial_uses_one_direction(clean_host):
    with Lab("linux-bridge") as lab:
        gen = EmbeddedGenerator(lab.streams, latency_pps=0, tracker=lab)
        result = clean_trial(gen, 2000, 0.5, 128, bidirectional=False)
    assert [d.received_packets for d in result.directions] == [1000]
    assert result.directions[0].latency.probes_sent == 0


def test_exception_inside_lab_tears_down(clean_host):
    with pytest.raises(RuntimeError, match="boom"):
        with Lab("macvlan"):
            raise RuntimeError("boom")
    assert lab_residue() == NO_RESIDUE


def test_failure_while_building_leaves_nothing(clean_host):
    def half_then_fail(lab):
        lab.add_namespace("tg")
        lab.add_namespace("wk")
        raise OSError("link creation failed")

    with pytest.raises(OSError):
        with Lab("linux-bridge", builder=half_then_fail):
            pass
    assert lab_residue() == NO_RESIDUE


def test_second_lab_is_refused_while_one_is_in_use(clean_host, monkeypatch):
    monkeypatch.setenv("NFVLAB_LOCK_WAIT_S", "0")  # else the second lab waits for the first
    with Lab("linux-bridge"):
        with pytest.raises(state.LabBusy, match="in use"):
            with Lab("macvlan"):
                pass
    assert lab_residue() == NO_RESIDUE


PROGRAM = """
import sys, time
from nfvlab.labs.embedded import Lab
with Lab(sys.argv[1]) as lab:
    print("up", flush=True)
    time.sleep(60)
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_sigint_and_sigterm_tear_down(clean_host, sig):
    p = subprocess.Popen([sys.executable, "-c", PROGRAM, "host-routing"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=REPO)
    assert p.stdout.readline().strip() == "up"
    assert len(lab_residue()["namespaces"]) == 3
    p.send_signal(sig)
    p.wait(timeout=20)
    assert lab_residue() == NO_RESIDUE


def test_kill9_during_a_trial_then_lab_clean_leaves_no_residue(clean_host):
    cli = [str(REPO / ".venv/bin/nfvlab"), "trial", "--model", "linux-bridge", "--frame-size", "64",
           "--rate-pps", "2000", "--duration-s", "20"]
    for attempt in range(2):
        p = subprocess.Popen(cli, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
        try:
            # Killed in any case: CI saw no generator within 20 s of the start twice (its lab was up;
            # cause unknown), and the trial, left running, held the host lock while later tests failed on it.
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not lab_residue()["generator_pids"] and p.poll() is None:
                time.sleep(0.1)
            started = bool(lab_residue()["generator_pids"])
            if not started and p.poll() is None:
                p.send_signal(signal.SIGUSR1)  # the CLI prints its threads' stacks (faulthandler)
                time.sleep(1)
        finally:
            p.kill()  # SIGKILL (nothing if it has exited)
            _, err = p.communicate()
        if started:
            break
        # Shown in the test summary even when the second attempt passes: where the first one hung.
        warnings.warn(f"nfvlab trial started no generator within 30 s (attempt {attempt + 1}); "
                      f"its stderr, with its stacks: {err.decode(errors='replace')[-6000:]}")
        # killed before its trial (the lab up or half built): clean must leave nothing then too; once more
        out = subprocess.run([str(REPO / ".venv/bin/nfvlab"), "lab", "clean"], capture_output=True, text=True)
        assert out.returncode == 0 and lab_residue() == NO_RESIDUE, (out.stderr, lab_residue())
    assert started, f"the trial never started its generator (exit {p.returncode}): {err.decode()[-2000:]}"
    left = lab_residue()
    assert left["namespaces"] and left["state_files"] and left["generator_pids"], left
    out = subprocess.run([str(REPO / ".venv/bin/nfvlab"), "lab", "clean"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "removed lab" in out.stdout
    assert lab_residue() == NO_RESIDUE


def test_clean_never_touches_foreign_namespaces(clean_host):
    foreign = ["nfvl-not-ours", "nfvlab-user", "nfvl-zzzzzz-tg"]
    for ns in foreign:
        subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        with state.HostLock("test"):
            state.clean()
        assert set(foreign) <= set(state.existing_namespaces())
    finally:
        for ns in foreign:
            subprocess.run(["ip", "netns", "del", ns])


@pytest.mark.parametrize("role", ["tg", "pod1", "node2"])
def test_clean_removes_a_lab_namespace_without_a_state_record(clean_host, role):
    """Every role nfvlab names a namespace for (node<N>: the CNI lab's hosts) is swept when orphaned."""
    ns = f"nfvl-abcdef-{role}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        with state.HostLock("test"):
            removed = state.clean()
        assert f"orphan namespace {ns}" in removed and ns not in state.existing_namespaces()
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def test_persistent_lab_survives_its_creator_until_down(clean_host):
    from conftest import nfvlab_cli

    up = nfvlab_cli("lab", "up", "--model", "macvlan", "--json", check=True)
    info = json.loads(up.stdout)
    assert len(info["streams"]) == 2
    assert set(lab_residue()["namespaces"]) == set(info["namespaces"])
    assert "nothing to clean" in nfvlab_cli("lab", "clean").stdout  # kept labs are not leftovers
    st = json.loads(nfvlab_cli("lab", "status", "--json").stdout)
    assert [s["lab_id"] for s in st] == [info["lab_id"]] and st[0]["persistent"]
    nfvlab_cli("lab", "down", info["lab_id"], check=True)
    assert lab_residue() == NO_RESIDUE


def test_unknown_or_unrealizable_model_fails_before_anything_exists(clean_host):
    with pytest.raises(LabError, match="unknown model"):
        Lab("flannel-vxlan")
    with pytest.raises(LabError, match="real lab only"):
        Lab("sriov")
    assert lab_residue() == NO_RESIDUE


def test_catalogue_lists_every_draft_section_and_kernel_models_run_here():
    sections = {m.section for m in catalogue.MODELS}
    assert {"4.1.1", "4.1.2", "4.1.3", "4.1.4", "4.1.5"} <= sections
    feats = realize.kernel_features()
    for name in KERNEL_MODELS:
        assert realize.realizable(name, feats) == (True, "")
    ok, why = realize.realizable("vpp", feats)
    assert not ok and "VPP" in why
    ok, why = realize.realizable("linux-bridge", {**feats, "bridge": False})
    assert not ok and "bridge" in why
