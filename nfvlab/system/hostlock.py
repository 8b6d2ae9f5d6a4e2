"""The host-wide lab lock and process identities (shared by every lab backend on this host).

A host-wide lock (``$NFVLAB_RUN_DIR/lock``, default ``/run/nfvlab/lock``, flock)
keeps two runs from building or driving labs at once: they would share the same
CPUs and falsify each other. The kernel releases it when its holder dies.
"""
from __future__ import annotations

import errno
import fcntl
import os
import re
import time
from pathlib import Path
from typing import Optional

from nfvlab.system import processes


def run_dir() -> Path:
    return Path(os.environ.get("NFVLAB_RUN_DIR", "/run/nfvlab"))


class LabBusy(RuntimeError):
    """Another nfvlab run holds the lab lock."""


def process_start_time(pid: int) -> Optional[int]:
    """Start time (clock ticks since boot) of ``pid``, or ``None`` if it does not exist."""
    return processes.start_time(pid)


def lock_wait_s() -> float:
    """``$NFVLAB_LOCK_WAIT_S``: seconds to wait for the lock (0..86400); ValueError naming it otherwise."""
    text = os.environ.get("NFVLAB_LOCK_WAIT_S", "").strip() or "0"
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 <= value <= 86_400:  # also refuses nan and inf
        raise ValueError(f"NFVLAB_LOCK_WAIT_S={text!r}: give seconds to wait for the lab lock, 0..86400")
    return value


class HostLock:
    """Exclusive, non-blocking, released by the kernel when the holder dies.

    ``HostLock(purpose, for_run=True)`` is held by a whole run (an experiment):
    while it is held, the labs that run opens in this process take it as theirs
    (their own ``HostLock`` is a no-op), so the lock is checked once, before the
    run writes anything. Outside such a run, two labs of one process conflict
    like two processes do.
    """

    _run_holder: Optional["HostLock"] = None
    _run_pid: Optional[int] = None
    #: The locks this process holds now (what a test's isolation check and a LabBusy inside one
    #: process report).
    _held: set["HostLock"] = set()

    @classmethod
    def held_here(cls) -> list["HostLock"]:
        """The host locks this process holds now (their ``purpose`` says for what)."""
        return [lock for lock in cls._held if lock._pid == os.getpid()]

    def __init__(self, purpose: str, *, for_run: bool = False) -> None:
        self.purpose = purpose
        self.for_run = for_run
        self._fd: Optional[int] = None
        self._pid: Optional[int] = None
        self._nested = False

    def __enter__(self) -> "HostLock":
        held = HostLock._run_holder is not None and HostLock._run_pid == os.getpid()
        if held:
            self._nested = True  # the run around us holds it
            return self
        run_dir().mkdir(parents=True, exist_ok=True)
        path = run_dir() / "lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        # NFVLAB_LOCK_WAIT_S: wait that long for the lock instead of failing at once.
        wait_s = lock_wait_s()
        deadline = time.monotonic() + wait_s
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as err:
                    if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN) or time.monotonic() >= deadline:
                        raise
                    time.sleep(0.2)
        except OSError as err:
            holder = os.read(fd, 200).decode(errors="replace").strip() or "another process"
            os.close(fd)
            if err.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise LabBusy(
                    f"the lab is in use ({_identify(holder)}); wait for it to finish"
                    + (f" (waited {wait_s:g} s, NFVLAB_LOCK_WAIT_S)" if wait_s else "")
                ) from None
            raise
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()}: {self.purpose}".encode())
        self._fd, self._pid = fd, os.getpid()
        HostLock._held.add(self)
        if self.for_run:
            HostLock._run_holder, HostLock._run_pid = self, os.getpid()
        return self

    def __exit__(self, *exc) -> None:
        if self._nested:
            self._nested = False
            return
        if HostLock._run_holder is self:
            HostLock._run_holder, HostLock._run_pid = None, None
        HostLock._held.discard(self)
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def _identify(holder: str) -> str:
    """The lock file's "pid N: purpose" with what the process table says of N: this process, its
    command line, or that it is gone."""
    m = re.match(r"pid (\d+)", holder)
    if not m:
        return holder
    pid = int(m.group(1))
    if pid == os.getpid():  # a lab this process left open: say which
        purposes = "; ".join(lock.purpose for lock in HostLock.held_here())
        return f"{holder}; this process, which holds it for: {purposes or 'nothing it knows of'}"
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return holder
    cmdline = " ".join(cmdline.split())  # one line, as every error of nfvlab's
    return f"{holder}; command: {cmdline[:160]}" if cmdline else holder
