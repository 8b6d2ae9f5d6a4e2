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
