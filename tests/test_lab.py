"""The embedded lab on real namespaces: build, forward, tear down, recover."""
import json
import re
import signal
import subprocess
import sys
import time

import psutil
import pytest

from conftest import NO_RESIDUE, REPO, check_exact, check_exact_trial, clean_trial, interface_counters, lab_residue
from nfvlab.labs.embedded import realize, state
from nfvlab.scenario import catalogue
from nfvlab.labs import LabError
from nfvlab.labs.embedded import Lab
from nfvlab.traffic.embedded import EmbeddedGenerator

pytestmark = pytest.mark.lab

KERNEL_MODELS = ["linux-bridge", "host-routing", "macvlan", "smartnic-direct"]


def locked_residue() -> dict:
    """lab_residue(), read under the host lock: a live lab of another run (which holds the lock
    while it lives, and may take it the moment this test's lab lets go) is not residue."""
    with state.HostLock("test residue check"):
        return lab_residue()


def locked_hugepages() -> int:
    """The host's 2 MB hugepages while no lab is up: read under the host lock (another run's lab
    reserves its own while it lives)."""
    with state.HostLock("test hugepages check"):
        return int(state.HUGEPAGES_2M.read_text())


@pytest.mark.parametrize("model", KERNEL_MODELS)
def test_up_and_down_leaves_no_residue(clean_host, model):
    with Lab(model) as lab:
        assert lab_residue()["namespaces"] == sorted(lab.state.namespaces)
        assert {"tg", "wk", "pod1"} == {ns.rsplit("-", 1)[1] for ns in lab.state.namespaces}
        assert len(lab.streams) == 2
    assert locked_residue() == NO_RESIDUE


@pytest.mark.parametrize("model", KERNEL_MODELS)
@pytest.mark.parametrize("frame_size", [64, 1518, "IMIX"])
def test_low_rate_trial_is_lossless_with_exact_counts(clean_host, model, frame_size):
    with Lab(model) as lab:
        gen = EmbeddedGenerator(lab.streams, flows=4, latency_pps=500, tracker=lab)
        result = clean_trial(gen, 5000, 1.0, frame_size, bidirectional=True)
    assert len(result.directions) == 2
    check_exact_trial(result, 5000)  # nothing lost in the data path: the loss is the unsent tail, to the frame
    for d in result.directions:
        lat = d.latency
        assert 0 < lat.probes_sent <= 500
        assert 0 < lat.min_ns <= lat.p50_ns <= lat.p90_ns <= lat.p99_ns <= lat.max_ns


def test_unidirectional_trial_uses_one_direction(clean_host):
    with Lab("linux-bridge") as lab:
        gen = EmbeddedGenerator(lab.streams, latency_pps=0, tracker=lab)
        result = clean_trial(gen, 2000, 0.5, 128, bidirectional=False)
    (d,) = result.directions
    check_exact(d, intended=1000)
    assert result.directions[0].latency.probes_sent == 0


def test_exception_inside_lab_tears_down(clean_host):
    with pytest.raises(RuntimeError, match="boom"):
        with Lab("macvlan"):
            raise RuntimeError("boom")
    assert locked_residue() == NO_RESIDUE


def test_failure_while_building_leaves_nothing(clean_host):
    def half_then_fail(lab):
        lab.add_namespace("tg")
        lab.add_namespace("wk")
        raise OSError("link creation failed")

    with pytest.raises(OSError):
        with Lab("linux-bridge", builder=half_then_fail):
            pass
    assert locked_residue() == NO_RESIDUE


def test_second_lab_is_refused_while_one_is_in_use(clean_host, monkeypatch):
    monkeypatch.setenv("NFVLAB_LOCK_WAIT_S", "0")  # else the second lab waits for the first
    with Lab("linux-bridge"):
        with pytest.raises(state.LabBusy, match="in use"):
            with Lab("macvlan"):
                pass
    assert locked_residue() == NO_RESIDUE


PROGRAM = """
import sys, time
from nfvlab.labs.embedded import Lab
with Lab(sys.argv[1]) as lab:
    print("up", flush=True)
    time.sleep(60)
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_sigint_and_sigterm_tear_down(clean_host, spawn, sig):
    p = spawn([sys.executable, "-c", PROGRAM, "host-routing"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
              text=True, cwd=REPO)
    assert p.stdout.readline().strip() == "up", p.stderr.read()
    assert len(lab_residue()["namespaces"]) == 3  # its lab holds the host lock: no other lab is up
    p.send_signal(sig)
    assert p.wait(timeout=120) != 0  # a guard only: teardown takes a second or two
    assert locked_residue() == NO_RESIDUE


def own_generator(proc) -> "psutil.Process | None":
    """The nfvlab-gen that ``proc`` started (not another run's), or None."""
    try:
        kids = psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return None
    for kid in kids:
        try:
            # The cached binary is nfvlab-gen-<digest> (its process name cut at 15 characters).
            if kid.name().startswith("nfvlab-gen") and kid.status() != psutil.STATUS_ZOMBIE:
                return kid
        except psutil.NoSuchProcess:
            continue
    return None


def _sending(tg_ns: str) -> bool:
    """Whether the generator's namespace has sent frames (the trial is under way)."""
    try:
        return any(c["tx_packets"] > 0 for c in interface_counters(tg_ns, ["tg0"]).values())
    except subprocess.CalledProcessError:  # not there yet
        return False


def test_kill9_during_a_trial_then_lab_clean_leaves_no_residue(clean_host, spawn, capsys):
    from nfvlab.cli import main

    cli = [str(REPO / ".venv/bin/nfvlab"), "trial", "--model", "linux-bridge", "--frame-size", "64",
           "--rate-pps", "2000", "--duration-s", "20"]
    p = spawn(cli, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    # Before its generator starts the trial waits for the host lock (other runs' labs), builds its
    # lab and may compile nfvlab-gen: a generous give-up guard, no speed asked.
    deadline = time.monotonic() + 300
    gen = own_generator(p)
    while gen is None and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
        gen = own_generator(p)
    if gen is None and p.poll() is None:
        p.send_signal(signal.SIGUSR1)  # the CLI prints its threads' stacks (faulthandler)
        time.sleep(1)
    else:  # killed before it hands its generator the trial, the CLI would leave one that reads EOF and exits
        lab_id = re.search(r"nfvl-([0-9a-f]{6})-", " ".join(gen.cmdline())).group(1)
        while not _sending(f"nfvl-{lab_id}-tg") and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
    p.kill()  # SIGKILL: no teardown runs (nothing if it has exited)
    _, err = p.communicate()
    assert gen is not None, f"the trial never started its generator (exit {p.returncode}): {err.decode()[-4000:]}"
    lab_id = re.search(r"nfvl-([0-9a-f]{6})-", " ".join(gen.cmdline())).group(1)
    # Taken at once, as a run's lock (the in-process `lab clean` below runs under it): another run
    # waiting for the lock would otherwise clean this leftover first.
    with state.HostLock("test kill -9 clean", for_run=True):
        left = lab_residue()
        assert gen.is_running() and gen.status() != psutil.STATUS_ZOMBIE, "the generator died with its CLI"
        assert f"{lab_id}.json" in left["state_files"], left
        assert any(lab_id in ns for ns in left["namespaces"]), left
        assert any(line.split()[0] == str(gen.pid) for line in left["generator_pids"]), left
        capsys.readouterr()
        assert main(["lab", "clean"]) == 0
        out = capsys.readouterr().out
        assert f"removed lab {lab_id} (linux-bridge" in out, out
        assert lab_residue() == NO_RESIDUE
    assert not gen.is_running() or gen.status() == psutil.STATUS_ZOMBIE


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
    try:
        with state.HostLock("test"):  # made under the lock too: another run's start-up clean would sweep it
            subprocess.run(["ip", "netns", "add", ns], check=True)
            removed = state.clean()
        assert f"orphan namespace {ns}" in removed and ns not in state.existing_namespaces()
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def test_persistent_lab_survives_its_creator_until_down(clean_host, capsys):
    from conftest import nfvlab_cli, until_unspoiled
    from nfvlab.cli import main

    def cli(*argv):
        capsys.readouterr()
        assert main(list(argv)) == 0
        return capsys.readouterr().out

    # The kept lab holds no lock once its creator has exited: the rest runs in this process under
    # a run's lock, so that no other run's lab (namespaces, status rows) is up meanwhile. Until
    # the lock is taken another run's clean-up (its clean_host removes kept labs too) may sweep it.
    def up_then_lock():
        info = json.loads(nfvlab_cli("lab", "up", "--model", "macvlan", "--json", check=True).stdout)
        lock = state.HostLock("test persistent lab", for_run=True)
        lock.__enter__()
        return info, lock

    def swept(got):
        info, lock = got
        if (state.labs_dir() / f"{info['lab_id']}.json").exists():
            return None
        lock.__exit__(None, None, None)
        return f"lab {info['lab_id']} was gone when the lock was taken (swept by another run, or not kept)"

    info, lock = until_unspoiled(up_then_lock, swept, what="a kept lab")
    try:
        assert len(info["streams"]) == 2
        assert set(lab_residue()["namespaces"]) == set(info["namespaces"])
        assert "nothing to clean" in cli("lab", "clean")  # kept labs are not leftovers
        st = json.loads(cli("lab", "status", "--json"))
        assert [s["lab_id"] for s in st] == [info["lab_id"]] and st[0]["persistent"]
        assert f"lab {info['lab_id']} removed" in cli("lab", "down", info["lab_id"])
        assert lab_residue() == NO_RESIDUE
    finally:
        lock.__exit__(None, None, None)


def test_unknown_or_unrealizable_model_fails_before_anything_exists(clean_host):
    with pytest.raises(LabError, match="unknown model"):
        Lab("flannel-vxlan")
    with pytest.raises(LabError, match="real lab only"):
        Lab("sriov")
    assert locked_residue() == NO_RESIDUE


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
