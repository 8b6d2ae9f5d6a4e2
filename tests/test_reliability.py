"""Reliability (issue 15): signals that are never lost, processes ``lab clean`` can always find,
params files read safely, outputs checked before anything exists, no torn record on a full disk."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import NO_RESIDUE, REPO, lab_residue
from test_lab import locked_residue
from nfvlab import params as P
from nfvlab.labs import Terminated
from nfvlab.records import RecordWriteError, RecordWriter, read_records
from nfvlab.search.result import TrialLog
from nfvlab.system import signals
from nfvlab.system.paths import output_problem


# -- signals (no root) ----------------------------------------------------------
class _SignalsInDel:
    """Sends ``sig`` in its own ``__del__``, where Python would print and discard an exception."""

    def __init__(self, sig):
        self.sig = sig

    def __del__(self):
        os.kill(os.getpid(), self.sig)
        for _ in range(1000):  # the handler runs at a bytecode boundary in here
            pass


@pytest.mark.parametrize("sig,exc", [(signal.SIGINT, KeyboardInterrupt), (signal.SIGTERM, Terminated)])
def test_a_signal_in_del_is_raised_at_the_next_checkpoint_and_prints_nothing(sig, exc, capfd):
    with signals.guard(sigterm=Terminated):
        _SignalsInDel(sig)  # dropped at once: its __del__ swallows the handler's exception
        assert signals.pending() == sig
        with pytest.raises(exc):
            signals.checkpoint()
    assert signals.pending() is None  # cleared when the guard is left
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    assert "Exception ignored" not in capfd.readouterr().err


def test_a_signal_in_a_weakref_callback_waits_for_the_checkpoint_and_prints_nothing(capfd):
    import gc
    import weakref

    class Obj:
        pass

    with signals.guard(sigterm=Terminated):
        o = Obj()
        weakref.finalize(o, os.kill, os.getpid(), signal.SIGTERM)  # the handler runs inside weakref.py
        del o
        gc.collect()
        assert signals.pending() == signal.SIGTERM       # recorded, not raised into the finalizer
        with pytest.raises(Terminated):
            signals.checkpoint()
    assert "Exception ignored" not in capfd.readouterr().err


def test_the_finalizer_check_sees_del_and_weakref_frames_only():
    import sys as _sys

    def plain():
        return signals._in_finalizer(_sys._getframe())

    class WithDel:
        def __del__(self):
            seen.append(signals._in_finalizer(_sys._getframe()))

    seen = []
    WithDel()
    assert seen == [True] and plain() is False


def test_a_signal_during_deferred_waits_until_its_end():
    done = []
    with signals.guard():
        with pytest.raises(KeyboardInterrupt):
            with signals.deferred():
                os.kill(os.getpid(), signal.SIGINT)
                os.kill(os.getpid(), signal.SIGINT)  # a second Ctrl-C: still not raised
                done.append("teardown finished")
            signals.checkpoint()
    assert done == ["teardown finished"]


def test_trial_log_does_not_start_a_trial_after_a_swallowed_signal():
    from test_records import make_trial

    calls = []

    def measure(rate_pps, duration_s):
        calls.append(rate_pps)
        _SignalsInDel(signal.SIGTERM)  # lost inside the trial, as in Popen.__del__
        return make_trial(rate_pps)

    with signals.guard(sigterm=Terminated):
        log = TrialLog(measure)
        log.run(1000, 1)  # the trial itself completes: its exception was discarded
        with pytest.raises(Terminated):
            log.run(2000, 1)
    assert calls == [1000]


# -- params files read safely (no root) ----------------------------------------
@pytest.mark.parametrize("content,expect", [
    ("a: " + "[" * 5000 + "]" * 5000, "nested deeper than 32 levels"),
    ("".join(" " * i + f"k{i}:\n" for i in range(100)) + " " * 100 + "x\n", "nested deeper than 32 levels"),
    ("repetitions: !!python/object/apply:os.system ['true']\n", "YAML tags"),
    ("repetitions: !!int 3\n", "YAML tags"),
    ("a: &x [1]\nb: *x\n", "anchors and aliases"),
    (b"\x89PNG\r\n\x1a\n\x00\x00", "not UTF-8 text"),
    ("models: [caf\xe9]".encode("latin-1"), "not UTF-8 text (byte 12)"),
    ("repetitions: 3\x00\n", "NUL bytes"),
    ("a: " + "x" * (P.MAX_PARAMS_BYTES + 1), "larger than 1048576 bytes"),
])
def test_bad_params_files_give_one_line(tmp_path, content, expect):
    path = tmp_path / "bad.yaml"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(P.ParamsError) as err:
        P.load(path)
    assert expect in str(err.value) and "\n" not in str(err.value)
    assert str(err.value).startswith(str(path))


def test_params_file_must_be_a_regular_file(tmp_path):
    for path in (tmp_path, Path("/dev/zero")):
        with pytest.raises(P.ParamsError, match="not a regular file"):
            P.load(path)


def test_a_plain_params_file_still_loads(tmp_path):
    path = tmp_path / "ok.yaml"
    path.write_text("# calibration\nframe_sizes: [64, IMIX, '1518']\nduration_s: 2\n")
    assert P.load(path, P.CalibrationParams).frame_sizes == [64, "IMIX", 1518]


# -- output paths (no root needed except for the read-only mount) ---------------
def test_output_problem_names_kind_and_pseudo_file_systems(tmp_path):
    assert output_problem(tmp_path / "new" / "r.jsonl", "file") is None
    assert output_problem(tmp_path / "d", "dir") is None
    assert "a directory" in output_problem(tmp_path, "file")
    (tmp_path / "f").write_text("")
    assert "not a directory" in output_problem(tmp_path / "f", "dir")
    assert "is not a directory" in output_problem(tmp_path / "f" / "x.jsonl", "file")
    assert "/proc" in output_problem(Path("/proc/self/x.jsonl"), "file")
    assert "/sys" in output_problem(Path("/sys/kernel"), "dir")


@pytest.fixture
def small_fs(tmp_path):
    """A 64 kB tmpfs (root only): what a full or read-only file system does to a records file."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "fs"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], check=True)
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=True)


def test_read_only_output_is_refused_up_front(small_fs):
    subprocess.run(["mount", "-o", "remount,ro", str(small_fs)], check=True)
    assert "read-only file system" in output_problem(small_fs / "r.jsonl", "file")
    assert "read-only file system" in output_problem(small_fs / "tables", "dir")


def test_full_disk_while_recording_stops_with_one_line_and_no_torn_record(small_fs):
    from test_records import make_trial

    path = small_fs / "r.jsonl"
    with pytest.raises(RecordWriteError) as err:
        with RecordWriter(path, "x", {"pad": "p" * 100}) as w:
            for _ in range(10_000):
                w.trial(make_trial())
    assert "No space left on device" in str(err.value) and "\n" not in str(err.value)
    raw = path.read_bytes()
    assert raw.endswith(b"\n")  # the record being written was cut back off
    for line in raw.splitlines():
        json.loads(line)
    records = read_records(path)
    assert records[0]["type"] == "run" and len(records) > 10


# -- processes lab clean can always find (root, real namespaces) ---------------
def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _until(check, what: str, timeout_s: float = 30.0) -> None:
    """Poll ``check`` until true; fail with ``what`` after ``timeout_s`` (a give-up guard only)."""
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def _exec_done(pid: int, argv: list[str]) -> bool:
    """Whether ``pid`` runs ``argv`` with its new environment in place. Popen returns once exec has
    begun, but the kernel lays out the new program's arguments and environment after that: read
    before, /proc/PID/environ is empty (or, before exec, still the parent's)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:-1]
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    return cmdline == [a.encode() for a in argv] and environ != b""


@pytest.mark.lab
def test_spawned_processes_carry_the_lab_id(clean_host):
    from nfvlab.labs.embedded import Lab, state

    seen = {}

    def builder(lab):
        ns = lab.add_namespace("tg")
        proc = lab.spawn("sleeper", ["sleep", "60"], ns=ns)
        seen["pid"], seen["lab_id"] = proc.pid, lab.lab_id
        return []

    with Lab("linux-bridge", builder=builder):
        _until(lambda: _exec_done(seen["pid"], ["sleep", "60"]), "the sleeper never ran sleep")
        env = Path(f"/proc/{seen['pid']}/environ").read_bytes().split(b"\0")
        assert f"NFVLAB_LAB_ID={seen['lab_id']}".encode() in env
        assert [r.pid for r in state.marked_processes()[seen["lab_id"]]] == [seen["pid"]]
    assert not _alive(seen["pid"])


@pytest.mark.lab
def test_sigint_between_fork_and_record_is_held_until_the_process_is_recorded(clean_host, monkeypatch):
    from nfvlab.labs.embedded import Lab
    from nfvlab.labs.embedded import lab as lab_module

    real_popen = subprocess.Popen

    def popen_then_sigint(*args, **kwargs):  # the worst moment: the child exists, its pid is not saved
        proc = real_popen(*args, **kwargs)
        if "sleep" in args[0]:  # only the spawn under test (subprocess.run uses Popen too)
            os.kill(os.getpid(), signal.SIGINT)
        return proc

    monkeypatch.setattr(lab_module.subprocess, "Popen", popen_then_sigint)
    seen = {}

    def builder(lab):
        ns = lab.add_namespace("tg")
        try:
            lab.spawn("sleeper", ["sleep", "60"], ns=ns)
        except KeyboardInterrupt:
            seen["recorded"] = [r.pid for r in lab.state.processes]
            seen["saved"] = [p["pid"] for p in json.loads(lab.state.path.read_text())["processes"]]
            raise
        return []

    with pytest.raises(KeyboardInterrupt):
        with Lab("linux-bridge", builder=builder):
            pass
    assert len(seen["recorded"]) == 1 and seen["saved"] == seen["recorded"]
    assert not _alive(seen["recorded"][0])
    assert locked_residue() == NO_RESIDUE


@pytest.mark.lab
def test_clean_kills_processes_of_dead_labs_found_only_in_the_process_table(clean_host, spawn):
    from nfvlab.labs.embedded import state

    # A process of a lab with no state record (its creator died between fork and record), started
    # under the lock: another run's start-up clean would otherwise stop it first.
    with state.HostLock("test"):
        orphan = spawn(["sleep", "60"], env={**os.environ, state.LAB_ENV: "abcdef"})
        _until(lambda: _exec_done(orphan.pid, ["sleep", "60"]), "the orphan never ran sleep")
        removed = state.clean()
    assert f"orphan process {orphan.pid} of lab abcdef" in removed
    assert orphan.wait(timeout=30) == -signal.SIGTERM


KILLED_CREATOR = """
import os, sys
from nfvlab.labs.embedded import Lab
def builder(lab):
    print(lab.spawn("sleeper", ["sleep", "60"], ns=lab.add_namespace("tg")).pid, flush=True)
    return []
with Lab("linux-bridge", builder=builder):
    sys.stdin.read()
"""


@pytest.mark.lab
def test_spawned_processes_die_with_their_creator(clean_host, spawn):
    from nfvlab.labs.embedded import state

    p = spawn([sys.executable, "-c", KILLED_CREATOR], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
              cwd=REPO)
    pid = int(p.stdout.readline())
    assert _alive(pid)
    p.kill()  # kill -9: no teardown runs
    p.wait()
    # Taken at once: another run waiting for the lock would otherwise clean the leftover first.
    with state.HostLock("test"):
        # The kernel signals it at once; the guard only bounds a wait for the signal to land.
        deadline = time.monotonic() + 30
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(pid), "PR_SET_PDEATHSIG did not stop the spawned process"
        assert any(x.startswith("lab ") for x in state.clean())  # the namespace and record remain for clean
        assert lab_residue() == NO_RESIDUE


# -- the papermill path: nfvlab/notebook_run.py -----------------------------------
NOTEBOOK_CELL = """
import time
from pathlib import Path
from nfvlab.labs.embedded import Lab
def builder(lab):
    lab.spawn("sleeper", ["sleep", "600"], ns=lab.add_namespace("tg"))
    lab.add_namespace("wk")
    return []
with Lab("linux-bridge", builder=builder) as lab:
    Path("LAB_ID_FILE").write_text(lab.lab_id)
    time.sleep(600)
"""


@pytest.mark.lab
def test_sigterm_to_the_notebook_guardian_tears_the_kernels_lab_down(clean_host, spawn, tmp_path):
    import nbformat

    from nfvlab.labs.embedded import state

    id_file = tmp_path / "lab_id"
    cell = NOTEBOOK_CELL.replace("LAB_ID_FILE", str(id_file))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path / "in.ipynb")
    env = {**os.environ, "PATH": f"{REPO / '.venv/bin'}:{os.environ['PATH']}"}
    p = spawn([sys.executable, "-m", "nfvlab.notebook_run", "--log-output", "--no-progress-bar",
               str(tmp_path / "in.ipynb"), str(tmp_path / "out.ipynb")],
              cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # The lab waits for the host lock (other runs) first: the test's own timeout bounds the wait.
    while not id_file.exists() and p.poll() is None:
        time.sleep(0.2)
    if not id_file.exists():
        _, err = p.communicate()
        pytest.fail(f"the notebook's lab never came up (exit {p.returncode}): {err[-3000:]}")
    lab_id = id_file.read_text()
    mine = [f"nfvl-{lab_id}-tg", f"nfvl-{lab_id}-wk"]
    assert set(mine) <= set(state.existing_namespaces())
    assert len(state.marked_processes()[lab_id]) == 1
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=90)
    assert p.returncode == 128 + signal.SIGTERM, err
    assert "SIGTERM: the kernel was stopped" in err
    # The kernel tore its lab down; no `lab clean` needed.
    assert not set(mine) & set(state.existing_namespaces())
    assert lab_id not in state.marked_processes()
    assert not (state.labs_dir() / f"{lab_id}.json").exists()
    out = nbformat.read(tmp_path / "out.ipynb", as_version=4)
    assert "Terminated" in json.dumps(out.cells[-1].outputs)  # the cell failed with the signal


def test_guardian_passes_papermills_exit_code_through(tmp_path):
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("raise SystemExit(3)")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path / "in.ipynb")
    env = {**os.environ, "PATH": f"{REPO / '.venv/bin'}:{os.environ['PATH']}"}
    bad = subprocess.run([sys.executable, "-m", "nfvlab.notebook_run", str(tmp_path / "in.ipynb"),
                          str(tmp_path / "out.ipynb")], cwd=REPO, env=env, capture_output=True, text=True)
    assert bad.returncode == 1 and "SystemExit" in bad.stderr
    usage = subprocess.run([sys.executable, "-m", "nfvlab.notebook_run", "--grace-s", "x"],
                           capture_output=True, text=True)
    assert usage.returncode == 2 and usage.stderr.count("\n") == 1


@pytest.mark.lab
@pytest.mark.parametrize("argv,expect", [
    (["calibrate", "--skip-known-path", "--duration-s", "86401"], "--duration-s 86401: must be above 0 and at most"),
    (["calibrate", "--skip-known-path", "--duration-s", "nan"], "--duration-s nan"),
    (["search", "--model", "linux-bridge", "--pdr-loss-ratio", "1e308"], "--pdr-loss-ratio 1e+308"),
    (["search", "--model", "linux-bridge", "--records", "/proc/self/r.jsonl"], "--records /proc/self/r.jsonl: under /proc"),
    (["analyze", "a", "--params", "params/quick/experiment_a.yaml", "--records", "README.md", "--metrics", "/tmp"],
     "--metrics /tmp: a directory"),
])
def test_inputs_the_fuzz_found_are_refused_in_one_line(clean_host, capsys, argv, expect):
    from nfvlab.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and expect in err, err
    assert locked_residue() == NO_RESIDUE
