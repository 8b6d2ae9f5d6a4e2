"""nfvlab.system.processes: a (pid, start time) pair names one process, from the real process table."""
import os
import sys
import time

from nfvlab.system import processes


def _stat_ticks(pid):
    # The reference the state records were written with: /proc/PID/stat field 22.
    return int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[19])


def _until_zombie(child, timeout_s=20.0):
    """The child's start ticks once it has exited but is not reaped yet (polled: no timing assumption)."""
    ticks = _stat_ticks(child.pid)
    deadline = time.monotonic() + timeout_s
    while processes.identity(child.pid)[0] != "zombie":
        assert time.monotonic() < deadline, "the child never exited"
        time.sleep(0.01)
    return ticks


def test_start_time_is_the_kernels_clock_ticks(spawn):
    child = spawn([sys.executable, "-c", "import time; time.sleep(30)"])
    assert processes.start_time(child.pid) == _stat_ticks(child.pid)
    assert processes.start_time(os.getpid()) == _stat_ticks(os.getpid())
    assert not processes.exited(child.pid, _stat_ticks(child.pid))
    # Same pid, another start time: a recycled pid is another process.
    assert processes.exited(child.pid, _stat_ticks(child.pid) - 1)
    child.kill()
    child.wait()
    assert processes.start_time(child.pid) is None
    assert processes.exited(child.pid, 0)


def test_a_zombie_has_exited(spawn):
    child = spawn([sys.executable, "-c", "pass"])
    ticks = _until_zombie(child)
    assert processes.exited(child.pid, ticks)
    child.wait()


def test_processes_are_found_by_an_environment_marker_and_only_live_ones(spawn):
    env = {**os.environ, "NFVLAB_TEST_MARK": "abc123"}
    live = spawn([sys.executable, "-c", "import time; time.sleep(30)"], env=env)
    dead = spawn([sys.executable, "-c", "pass"], env=env)
    _until_zombie(dead)
    # Popen returns once exec has begun; the new program's environment is laid out after that.
    deadline = time.monotonic() + 20
    while b"NFVLAB_TEST_MARK=abc123" not in open(f"/proc/{live.pid}/environ", "rb").read():
        assert time.monotonic() < deadline, "the live child's environment never showed the marker"
        time.sleep(0.01)
    found = {pid: (start, value) for pid, start, value in processes.with_environment("NFVLAB_TEST_MARK")}
    assert found == {live.pid: (_stat_ticks(live.pid), "abc123")}


def test_a_group_is_alive_while_any_member_lives_and_kill_process_waits_for_all_of_it(spawn):
    """A group whose leader dies at SIGTERM but whose child ignores it: the group stays alive after the
    leader is gone, and stopping the leader's record (group=True) returns only once the child is gone
    too (SIGKILL after the TERM wait), so a torn-down lab leaves no member behind."""
    import subprocess

    from nfvlab.labs.embedded import state

    leader = spawn(["sh", "-c", "(trap '' TERM; echo up; exec sleep 60) & wait"], start_new_session=True,
                   stdout=subprocess.PIPE, text=True)
    try:
        assert leader.stdout.readline().strip() == "up"  # the child runs (and ignores TERM from now on)
        assert processes.group_alive(leader.pid)
        rec = state.ProcessRecord(leader.pid, _stat_ticks(leader.pid), "sh", group=True)
        assert state.kill_process(rec, timeout_s=1.0)
        assert not processes.group_alive(leader.pid)
    finally:  # whatever failed: no member left behind
        try:
            os.killpg(leader.pid, 9)
        except ProcessLookupError:
            pass
    # a group of none: nothing alive, not even this test's own
    assert not processes.group_alive(2 ** 22 + 7)
    assert processes.group_alive(os.getpgid(0))
