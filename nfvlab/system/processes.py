"""Process identities from the process table (through psutil): a pid and its start time name one process.

A pid alone can be recycled; the pair (pid, start time) cannot, so every process
nfvlab records for teardown is stored as that pair and is only ever signalled while
both still match. Start times are clock ticks since boot (``/proc/PID/stat`` field 22),
the unit state records have always used.
"""
from __future__ import annotations

import os
from typing import Iterator, Optional

import psutil

_TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def _ticks(proc: psutil.Process) -> int:
    # psutil gives boot time + ticks / CLK_TCK as seconds since the epoch: back to exact ticks.
    return round((proc.create_time() - psutil.boot_time()) * _TICKS_PER_S)


def identity(pid: int) -> Optional[tuple[str, int]]:
    """``(status, start time in clock ticks)`` of ``pid`` (psutil status names: ``zombie``,
    ``running``, ...), or None when no such process exists."""
    try:
        proc = psutil.Process(pid)
        with proc.oneshot():
            return proc.status(), _ticks(proc)
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


def start_time(pid: int) -> Optional[int]:
    """Start time (clock ticks since boot) of ``pid``, or None if it does not exist."""
    found = identity(pid)
    return found[1] if found else None


def exited(pid: int, start_ticks: int) -> bool:
    """The process (``pid``, ``start_ticks``) is gone, was replaced under that pid, or is a zombie.

    A zombie has exited; it only waits for its parent to reap it.
    """
    found = identity(pid)
    return found is None or found[1] != start_ticks or found[0] == psutil.STATUS_ZOMBIE


def group_alive(pgid: int) -> bool:
    """Whether any process of group ``pgid`` is still alive (a zombie has exited)."""
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) == pgid and proc.status() != psutil.STATUS_ZOMBIE:
                return True
        except (ProcessLookupError, psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
    return False


def with_environment(name: str) -> Iterator[tuple[int, int, str]]:
    """``(pid, start ticks, value)`` of every live process (not this one, no zombie) whose
    environment sets ``name``; processes that vanish or hide their environment are skipped."""
    me = os.getpid()
    for proc in psutil.process_iter():
        if proc.pid == me:
            continue
        try:
            with proc.oneshot():
                if proc.status() == psutil.STATUS_ZOMBIE:
                    continue
                value = proc.environ().get(name)
                if value is not None:
                    yield proc.pid, _ticks(proc), value
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
