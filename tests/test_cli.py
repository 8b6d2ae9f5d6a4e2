"""The nfvlab command line, run as a user would (subprocess, real lab)."""
import inspect
import itertools
import json
import signal
import subprocess
import sys

import pytest

from conftest import NO_RESIDUE, REPO, barely_sent, check_exact, lab_residue, nfvlab_cli, until_unspoiled

from nfvlab.system.hostlock import HostLock
from nfvlab.traffic.embedded import EmbeddedGenerator
from nfvlab.trial import TrialResult

pytestmark = pytest.mark.lab

TRIAL = ["trial", "--model", "linux-bridge", "--frame-size", "64", "--rate-pps", "1000", "--duration-s", "0.2"]


def residue() -> dict:
    """What labs left on this host, read under the host lock: a lab of another process (it holds the
    lock while it lives) is not mistaken for one this test's command left."""
    with HostLock("test_cli: residue check"):
        return lab_residue()


def with_arg(args, key, value):
    args = list(args)
    args[args.index(key) + 1] = value
    return args


@pytest.mark.parametrize(
    "args,expect",
    [
        (with_arg(TRIAL, "--frame-size", "63"), "63 is outside 64..9018"),
        (with_arg(TRIAL, "--frame-size", "9019"), "9019 is outside 64..9018"),
        (with_arg(TRIAL, "--frame-size", "huge"), "not a frame size"),
        (with_arg(TRIAL, "--rate-pps", "0"), "--rate-pps 0: must be above 0"),
        (with_arg(TRIAL, "--rate-pps", "-5"), "must be above 0"),
        (with_arg(TRIAL, "--rate-pps", "20000000"), "above the 10GbE line rate at 64 B"),
        (with_arg(TRIAL, "--duration-s", "0"), "--duration-s 0: must be above 0"),
        (with_arg(TRIAL, "--duration-s", "inf"), "--duration-s inf: must be above 0 and at most 86400 s"),
        (with_arg(TRIAL, "--rate-pps", "nan"), "--rate-pps nan: must be above 0 and finite"),
        (with_arg(TRIAL, "--model", ""), "--model: unknown model ''"),
        (with_arg(TRIAL, "--model", "flannel-vxlan"), "unknown model 'flannel-vxlan'"),
        (with_arg(TRIAL, "--model", "sriov"), "real lab only"),
        (with_arg(TRIAL, "--model", "vpp"), "real lab only"),
        (TRIAL + ["--pinning", "exclusive"], "forward in the kernel"),
        (TRIAL + ["--flows", "0"], "flows"),
        (TRIAL + ["--port-speed", "400GbE"], "--port-speed '400GbE'"),
        (["trial", "--port", "nope:eth0", "--port", "nope:eth1", "--rate-pps", "100"],
         "no interface 'eth0' in network namespace 'nope'"),
        (["trial", "--port", "just-a-name", "--port", "x:y", "--rate-pps", "100"], "use NS:IFACE"),
        (["search", "--frame-size", "64", "--goal", "ndr", "--max-rate-pps", "-1"], "max_rate_pps"),
        (["search", "--frame-size", "64", "--params", "/nonexistent.yaml"], "/nonexistent.yaml: cannot read"),
    ],
)
def test_bad_input_is_one_line_before_any_lab_resource(clean_host, args, expect):
    out = nfvlab_cli(*args)
    assert out.returncode == 2, out
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert expect in lines[0]
    assert residue() == NO_RESIDUE


def test_non_root_is_told_to_use_root(clean_host):
    out = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                          str(REPO / ".venv/bin/nfvlab"), *TRIAL], capture_output=True, text=True)
    if "Permission denied" in out.stderr:
        pytest.skip("the unprivileged user cannot run this venv's python")
    assert out.returncode == 2
    assert "needs root" in out.stderr.strip().splitlines()[-1]
    assert residue() == NO_RESIDUE


def test_lab_models_json_lists_every_model_with_section_and_realizability():
    rows = json.loads(nfvlab_cli("lab", "models", "--json", check=True).stdout)
    by = {r["name"]: r for r in rows}
    assert by["linux-bridge"]["section"] == "4.1.1" and by["linux-bridge"]["realizable"] is True
    assert by["sriov"]["realizable"] is False and "SR-IOV" in by["sriov"]["reason"]
    assert by["vpp"]["section"] == "4.1.2" and by["vpp"]["realizable"] is False
    assert {"4.1.1", "4.1.2", "4.1.3", "4.1.4", "4.1.5"} <= {r["section"] for r in rows}


def test_sigusr1_prints_the_stacks_of_a_running_command(spawn):
    """A command that seems stuck can be asked where it is (CI once saw a trial start no
    generator for 30 s): SIGUSR1 prints every thread's stack on stderr and the command goes on."""
    code = ("import sys, time; from nfvlab import cli\n"
            "def stuck(a):\n print('busy', flush=True); time.sleep(60)\n"
            "cli.cmd_lab = stuck; sys.argv = ['nfvlab', 'lab', 'models']; sys.exit(cli.main())")
    p = spawn([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    assert p.stdout.readline().strip() == "busy"
    p.send_signal(signal.SIGUSR1)
    dump = [p.stderr.readline() for _ in range(3)]
    assert p.poll() is None  # still running
    assert "most recent call first" in dump[0] and any("in stuck" in line for line in dump), dump


def test_trial_json_reports_counts_and_latency_per_direction(clean_host, tmp_path):
    # The socket TX path: its thread sleeps between frames, while the XDP loop, which never does,
    # meets the deferred work of a lab just built on its CPU (stalls of ~26 ms) trial after trial.
    profile = tmp_path / "lab.yaml"
    profile.write_text("kind: embedded\ngenerator: {kind: embedded, cpu: 0, tx: socket}\n")
    n = itertools.count()

    def attempt():
        rec = tmp_path / f"raw{next(n)}.jsonl"  # each try its own record: the judged one is read
        out = nfvlab_cli("trial", "--lab-profile", str(profile), "--model", "host-routing", "--frame-size",
                         "256", "--rate-pps", "3000", "--duration-s", "1", "--json", "--records", str(rec),
                         check=True)
        return json.loads(out.stdout), rec

    # Counts are asked of what was sent (repeated only while the host held the generator up until
    # it sent under half: conftest.barely_sent), whatever the host did to the schedule.
    d, rec = until_unspoiled(attempt, lambda got: barely_sent(TrialResult.from_dict(got[0])),
                             what="nfvlab trial --json (host-routing, 3000 pps)")
    assert d["valid"] == (d["invalid_reason"] is None), d["invalid_reason"]
    assert len(d["directions"]) == 2
    for x in TrialResult.from_dict(d).directions:
        check_exact(x, intended=3000)
    for x in d["directions"]:
        assert x["latency"]["p50_ns"] > 0 and x["latency"]["p99_ns"] >= x["latency"]["p50_ns"]
    types = [json.loads(line)["type"] for line in rec.read_text().splitlines()]
    assert types == ["run", "trial", "end"]


@pytest.fixture
def external_dut():
    """A DUT the test builds itself: two 'TG' namespaces cabled to a shaped bridge.

    Stands for a device under test that nfvlab did not create.
    """
    a, b, dut = "nfvl-t-ext-a", "nfvl-t-ext-b", "nfvl-t-ext-dut"

    def sh(*cmd):
        subprocess.run(cmd, check=True)

    def cleanup():
        for ns in (a, b, dut):
            subprocess.run(["ip", "netns", "del", ns], stderr=subprocess.DEVNULL)

    cleanup()
    for ns in (a, b, dut):
        sh("ip", "netns", "add", ns)
        sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
        sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1")
    sh("ip", "-n", a, "link", "add", "pa", "type", "veth", "peer", "name", "da", "netns", dut)
    sh("ip", "-n", b, "link", "add", "pb", "type", "veth", "peer", "name", "db", "netns", dut)
    sh("ip", "-n", dut, "link", "add", "br0", "type", "bridge", "mcast_snooping", "0")
    for ns, dev in ((a, "pa"), (b, "pb"), (dut, "da"), (dut, "db"), (dut, "br0")):
        sh("ip", "-n", ns, "link", "set", dev, "up")
    for dev in ("da", "db"):
        sh("ip", "-n", dut, "link", "set", dev, "master", "br0")
        # 20 kpps of 64 B frames (60 B on a veth), shaped like nfvlab's own known-capacity
        # path: a bucket of BUCKET_FRAMES (absorbs scheduler hiccups), a queue of QUEUE_FRAMES.
        sh("ip", "netns", "exec", dut, "tc", "qdisc", "add", "dev", dev, "root", "tbf",
           "rate", str(20000 * 60 * 8), "burst", str(BUCKET_FRAMES * 60), "limit", str(QUEUE_FRAMES * 60))
    yield f"{a}:pa", f"{b}:pb", 20000
    cleanup()


#: The external DUT's tbf, in 64 B frames: the bucket of tokens it starts with (it stores no more,
#: however long it waits) and the queue it holds.
BUCKET_FRAMES, QUEUE_FRAMES = 64, 128


def test_frame_above_the_external_ports_mtu_is_rejected(clean_host, external_dut):
    pa, pb, _ = external_dut
    out = nfvlab_cli("trial", "--port", pa, "--port", pb, "--frame-size", "1600", "--rate-pps", "100")
    assert out.returncode == 2
    assert "--frame-size 1600: above the path MTU (1500 B" in out.stderr


def test_search_on_external_ports_prints_ndr_json(clean_host, external_dut):
    pa, pb, capacity = external_dut
    out = nfvlab_cli("search", "--port", pa, "--port", pb, "--frame-size", "64", "--goal", "ndr",
                     "--method", "rfc2544", "--max-rate-pps", str(2 * capacity), "--min-rate-pps", "2000",
                     "--relative-width", "0.01", "--duration-s", "0.5", "--json", check=True, timeout=540)
    d = json.loads(out.stdout)
    # The JSON lists every trial; invalid ones (the generator off schedule) are counted apart.
    valid = [t for t in d["trials"] if t["valid"]]
    measured = [t for t in valid if t["kind"] == "trial"]
    # Bisection: the NDR is the highest rate a valid trial forwarded without loss, and every valid
    # trial that lost frames ran above it.
    lossless = [t["rate_pps"] for t in measured if t["received_packets"] == t["intended_packets"]]
    assert 2000 <= max(lossless) == d["ndr_pps"], d["ndr_pps"]
    assert all(t["rate_pps"] > d["ndr_pps"] for t in measured if t["received_packets"] < t["intended_packets"])
    # Never more than the path forwards, the NDR's trial included: a tbf sends a frame per token, and
    # has at most its bucket plus the tokens its rate adds from the first frame to the end of the
    # count (the time the traffic took, then the generator's settle time), whatever the host does.
    # How close to the capacity the NDR comes is bench/measurement_core.py's figure (NDR / capacity
    # of a tbf path).
    settle_s = inspect.signature(EmbeddedGenerator).parameters["settle_ms"].default / 1000
    for t in measured:
        most = BUCKET_FRAMES + capacity * (t["extra"]["schedule"]["elapsed_s"] + settle_s)
        assert all(x["received_packets"] <= most for x in t["directions"]), (t["rate_pps"], most, t["directions"])
    assert len(valid) == d["results"][0]["n_trials"] >= 3
    assert len(d["trials"]) - len(valid) == d["results"][0]["invalid_trials"]
    assert all(t["invalid_reason"] for t in d["trials"] if not t["valid"])
    assert all(t["directions"][0]["tx_port"] == pa for t in d["trials"])
    assert residue() == NO_RESIDUE  # external ports: no lab was built


@pytest.mark.parametrize("value", ["abc", "nan", "inf", "-1"])
def test_a_bad_lock_wait_is_one_line_before_anything(value):
    import os

    out = subprocess.run([str(REPO / ".venv/bin/nfvlab"), "lab", "status"], capture_output=True, text=True,
                         env={**os.environ, "NFVLAB_LOCK_WAIT_S": value})
    assert out.returncode == 2 and out.stderr.strip() == (
        f"nfvlab: error: NFVLAB_LOCK_WAIT_S={value!r}: give seconds to wait for the lab lock, 0..86400")


def test_lab_models_lists_the_models_the_profiles_lab_realizes_and_why_not(tmp_path):
    # A Kubernetes profile whose cluster does not answer: what the profile alone rules out is
    # said as such, the rest names the unreachable cluster; nothing is created anywhere.
    profile = tmp_path / "lab.yaml"
    profile.write_text("kind: kubernetes\nkubernetes:\n  kubeconfig: /nonexistent/kubeconfig\n  node: n1\n"
                       "  nics: [nfvkn0, nfvkn1]\n  cabling: local\n")
    out = nfvlab_cli("lab", "models", "--lab-profile", str(profile), "--json", check=True)
    rows = {r["name"]: r for r in json.loads(out.stdout)}
    assert len(rows) == 15 and {r["lab_kind"] for r in rows.values()} == {"kubernetes"}
    assert rows["vpp"]["realizable"] is False and "VPP 19.04's API files" in rows["vpp"]["reason"]
    assert rows["host-routing"]["realizable"] is False and "/nonexistent/kubeconfig" in rows["host-routing"]["reason"]
    assert rows["macvlan"]["realizable"] is False and "/nonexistent/kubeconfig" in rows["macvlan"]["reason"]
