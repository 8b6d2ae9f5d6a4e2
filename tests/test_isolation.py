"""The suite's isolation itself (tests/conftest.py): a test that leaks, hangs or leaves a lock held
(either implementation of the host lock: HostLock, the local cluster's host_lock) fails alone, and the tests after it pass. Each case runs in an inner pytest of its own, with the
project's conftest and a private host-lock directory (no real lab is touched)."""
import os
import sys
from pathlib import Path

import psutil
import pytest

pytest_plugins = ["pytester"]

CONFTEST = Path(__file__).with_name("conftest.py")

INNER = r'''
import subprocess, sys, time
from pathlib import Path

from nfvlab.labs.kubernetes.local_cluster.state import host_lock
from nfvlab.system.hostlock import HostLock

HOLD = ("from nfvlab.system.hostlock import HostLock\nimport time\n"
        "with HostLock('held by a leaked child'):\n    print('held', flush=True)\n    time.sleep(600)\n")


def test_1_leaks_a_lock_holding_child():
    child = subprocess.Popen([sys.executable, "-c", HOLD], stdout=subprocess.PIPE, text=True)
    Path("leaked.pid").write_text(str(child.pid))
    assert child.stdout.readline().strip() == "held"


def test_2_takes_the_lock_after_the_leak():
    with HostLock("the next test"):
        pass


def test_3_hangs():
    time.sleep(120)


def test_4_runs_after_the_hang():
    with HostLock("after the hang"):
        pass


def test_5_leaves_a_lock_held_in_this_process():
    HostLock("an unclosed lab").__enter__()


def test_6_takes_the_lock_after_that():
    with HostLock("after the unclosed lab"):
        pass


def test_7_spawned_child_is_ended_although_the_test_fails(spawn):
    child = spawn(["sleep", "600"])
    Path("spawned.pid").write_text(str(child.pid))
    assert False, "the test fails; its fixture still ends the child"


def test_8_leaves_a_plain_child_running():
    child = subprocess.Popen(["sleep", "600"])
    Path("stray.pid").write_text(str(child.pid))


LEFT_OPEN = []


def test_9_leaves_the_local_clusters_lock_held():
    # The same lock file, its own implementation; kept referenced, as a LocalCluster left open is.
    LEFT_OPEN.append(host_lock("a cluster left open", wait_s=0))
    LEFT_OPEN[-1].__enter__()


def test_10_takes_the_lock_after_that():
    with HostLock("after the cluster's lock"):
        pass


def test_11_flocks_the_lock_file_by_hand():
    import fcntl, os
    fd = os.open(os.path.join(os.environ["NFVLAB_RUN_DIR"], "lock"), os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.write(fd, f"pid {os.getpid()}: by hand".encode())
    LEFT_OPEN.append(fd)


def test_12_runs_clean():
    with HostLock("the last test"):
        pass
'''


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_leak_a_hang_or_an_unclosed_lock_fails_that_test_alone(pytester, monkeypatch):
    monkeypatch.setenv("NFVLAB_RUN_DIR", str(pytester.path / "run"))
    monkeypatch.setenv("NFVLAB_LOCK_WAIT_S", "2")  # were a lock still held, the next test fails fast
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest_subprocess("--timeout=5", "--timeout-method=signal",
                                           "-p", "no:cacheprovider", "-rA")
    outcomes = {}
    for line in result.outlines:
        for word in ("PASSED", "FAILED", "ERROR"):
            if line.startswith(word + " test_inner.py::"):
                outcomes[line.split("::")[1].split()[0]] = word
    assert outcomes == {
        "test_1_leaks_a_lock_holding_child": "ERROR",
        "test_2_takes_the_lock_after_the_leak": "PASSED",
        "test_3_hangs": "FAILED",
        "test_4_runs_after_the_hang": "PASSED",
        "test_5_leaves_a_lock_held_in_this_process": "ERROR",
        "test_6_takes_the_lock_after_that": "PASSED",
        "test_7_spawned_child_is_ended_although_the_test_fails": "FAILED",
        "test_8_leaves_a_plain_child_running": "ERROR",
        "test_9_leaves_the_local_clusters_lock_held": "ERROR",
        "test_10_takes_the_lock_after_that": "PASSED",
        "test_11_flocks_the_lock_file_by_hand": "ERROR",
        "test_12_runs_clean": "PASSED",
    }, result.stdout.str()
    text = result.stdout.str()
    assert "a child holds the host lock: pid" in text and "held by a leaked child" in text
    assert "Timeout" in text
    assert "this process holds the host lock for 'an unclosed lab'" in text
    assert "child processes still running: pid" in text
    assert "this process holds the local cluster's host lock" in text
    assert "through an untracked file descriptor ('pid " in text
    for name in ("leaked.pid", "spawned.pid", "stray.pid"):
        assert _gone(int((pytester.path / name).read_text())), name


def test_stop_process_tree_ends_a_child_that_ignores_sigterm_and_its_own_children():
    import subprocess

    from conftest import stop_process_tree

    code = ("import signal, subprocess, sys, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "g = subprocess.Popen(['sleep', '600'])\nprint(g.pid, flush=True)\ntime.sleep(600)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, start_new_session=True)
    grandchild = int(proc.stdout.readline())
    stop_process_tree(proc, grace_s=0.5)
    assert proc.returncode == -9  # SIGTERM ignored: killed
    assert _gone(grandchild)


def test_lab_busy_names_the_holder_in_this_process_and_in_another(tmp_path, monkeypatch, spawn):
    import subprocess

    from nfvlab.system.hostlock import HostLock, LabBusy

    monkeypatch.setenv("NFVLAB_RUN_DIR", str(tmp_path))
    monkeypatch.setenv("NFVLAB_LOCK_WAIT_S", "0")
    with HostLock("lab 123abc (linux-bridge)"):
        with pytest.raises(LabBusy, match=r"this process, which holds it for: lab 123abc \(linux-bridge\)"):
            HostLock("a second lab").__enter__()
    code = ("from nfvlab.system.hostlock import HostLock\nimport time\n"
            "with HostLock('a run elsewhere'):\n    print('held', flush=True)\n    time.sleep(600)\n")
    other = spawn([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert other.stdout.readline().strip() == "held"
    with pytest.raises(LabBusy, match=rf"pid {other.pid}: a run elsewhere; command: \S*python\S* -c from nfvlab") as busy:
        HostLock("this test").__enter__()
    assert "\n" not in str(busy.value)


MODULE_LEAK = '''
import pytest
from nfvlab.system.hostlock import HostLock


@pytest.fixture(scope="module")
def lab():
    lock = HostLock("a module's lab")
    yield lock.__enter__()  # never released: held before each test of the module began


def test_uses_the_modules_lab(lab):
    pass
'''

NEXT_MODULE = '''
from nfvlab.system.hostlock import HostLock


def test_takes_the_lock_in_the_next_module():
    with HostLock("the next module"):
        pass
'''


def test_a_module_fixture_that_leaves_a_lock_held_fails_its_module_alone(pytester, monkeypatch):
    monkeypatch.setenv("NFVLAB_RUN_DIR", str(pytester.path / "run"))
    monkeypatch.setenv("NFVLAB_LOCK_WAIT_S", "2")
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makepyfile(test_a_module=MODULE_LEAK, test_b_next=NEXT_MODULE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(passed=2, errors=1)  # the module's test, then its teardown's error; the next passes
    text = result.stdout.str()
    assert "a module's fixtures leaked" in text and "host lock for \"a module's lab\"" in text, text


class _Clock:
    """time.monotonic and time.sleep of a fake clock: a spell of the host lasts as long as the test says."""

    def __init__(self):
        self.now = 0.0

    def monotonic(self):
        return self.now

    def sleep(self, s):
        self.now += s


@pytest.mark.parametrize("spell_s, spoiled_until_s, found", [(180.0, 150.0, True), (180.0, 400.0, False)])
def test_until_unspoiled_outlasts_a_spell_of_minutes_and_then_fails(monkeypatch, spell_s, spoiled_until_s, found):
    """A measurement the host spoils for 150 s (beyond its 8 tries, ~25 s) is repeated until the
    spell ends; one it spoils for longer than the spell allowance fails, naming the tries."""
    import conftest

    clock = _Clock()
    monkeypatch.setattr(conftest.time, "monotonic", clock.monotonic)
    monkeypatch.setattr(conftest.time, "sleep", clock.sleep)
    monkeypatch.setattr(conftest, "_SPELL_SPENT_S", [0.0])
    monkeypatch.setattr(conftest, "RETRIED", [])

    def attempt():
        clock.now += 2.0   # a trial's own time
        return clock.now

    def spoiled(t):
        return "stalled" if t < spoiled_until_s else None

    if found:
        assert conftest.until_unspoiled(attempt, spoiled, spell_s=spell_s) >= spoiled_until_s
        ((_, _, tries, reasons),) = conftest.RETRIED
        assert tries == len(reasons) + 1 > 8
    else:
        with pytest.raises(pytest.fail.Exception, match=r"spoiled all \d+ tries in 18\d s"):
            conftest.until_unspoiled(attempt, spoiled, spell_s=spell_s)


def test_until_unspoiled_stops_at_its_tries_once_the_sessions_spell_allowance_is_spent(monkeypatch):
    import conftest

    clock = _Clock()
    monkeypatch.setattr(conftest.time, "monotonic", clock.monotonic)
    monkeypatch.setattr(conftest.time, "sleep", clock.sleep)
    monkeypatch.setattr(conftest, "_SPELL_SPENT_S", [conftest.SPELL_SESSION_S])
    monkeypatch.setattr(conftest, "RETRIED", [])
    with pytest.raises(pytest.fail.Exception, match="spoiled all 8 tries"):
        conftest.until_unspoiled(lambda: 0, lambda r: "stalled")
