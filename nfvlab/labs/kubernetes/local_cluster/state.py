"""Where a running cluster keeps itself: the run dir, the state file that records everything it creates,
and the host lock (shared with the embedded lab: flock on /run/nfvlab/lock), re-entrant within a process."""
from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import threading
import time
from pathlib import Path
from typing import Iterator, Optional


def run_root() -> Path:
    return Path(os.environ.get("NFVLAB_RUN_DIR", "/run/nfvlab"))


def state_file() -> Path:
    return run_root() / "k8s-cluster.json"


def cluster_dir() -> Path:
    return run_root() / "k8s"


_lock_mutex = threading.Lock()
_lock_state: dict = {"fd": None, "depth": 0}


@contextlib.contextmanager
def host_lock(purpose: str = "local Kubernetes cluster", wait_s: Optional[float] = None) -> Iterator[None]:
    if wait_s is None:
        wait_s = float(os.environ.get("NFVLAB_K8S_LOCK_WAIT_S", "900"))
    with _lock_mutex:
        if _lock_state["fd"] is not None:
            _lock_state["depth"] += 1
        else:
            run_root().mkdir(parents=True, exist_ok=True)
            fd = os.open(run_root() / "lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            deadline = time.monotonic() + wait_s
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as err:
                    if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                        os.close(fd)
                        raise
                    if time.monotonic() >= deadline:
                        holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
                        os.close(fd)
                        raise RuntimeError(f"host lock {run_root() / 'lock'} held by {holder} "
                                           f"for more than {wait_s:.0f} s")
                    time.sleep(0.5)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()}: {purpose}".encode(), 0)
            _lock_state.update(fd=fd, depth=1)
    try:
        yield
    finally:
        with _lock_mutex:
            _lock_state["depth"] -= 1
            if _lock_state["depth"] == 0:
                fd = _lock_state["fd"]
                _lock_state["fd"] = None
                os.ftruncate(fd, 0)
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
