"""SIGINT/SIGTERM that are never lost: a flag as well as an exception.

Python runs a signal handler at an arbitrary bytecode boundary. When that is
inside a finalizer (``Popen.__del__``, a ``weakref`` callback such as ``WeakSet``'s),
an exception the handler raised would be printed ("Exception ignored in ...")
and discarded. So the handlers installed by :func:`guard` record the signal and
raise only where raising is safe: not while a finalizer is on the stack
(:func:`_in_finalizer`); there the signal waits for :func:`checkpoint` (called
between trials, in lab wait loops and after each generator run). A finalizer
this cannot see (one run from C code without a Python frame of its own) may
still swallow the exception: the flag stays set, the checkpoint raises it, and
the unraisable hook installed with the handlers keeps it off stderr. Inside :func:`deferred`
(teardown; a fork until its child is recorded; a record being written) a
signal is only recorded: a second Ctrl-C cannot abort teardown half-way, and
the signal is raised at the next checkpoint after the block.

Deferring is done here, not with ``pthread_sigmask``: a process-directed signal
goes to any thread that does not block it (tqdm's monitor, pyroute2's), and
Python runs the handler in the main thread all the same.

    with signals.guard(sigterm=Terminated):   # the lab's lifetime
        ...
        signals.checkpoint()                  # raises if a signal came and was swallowed
"""
from __future__ import annotations

import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Iterator, Optional

__all__ = ["Terminated", "checkpoint", "deferred", "die_with_parent", "guard", "pending"]

HANDLED = (signal.SIGINT, signal.SIGTERM)


class Terminated(KeyboardInterrupt):
    """SIGTERM, turned into an exception so teardown runs (the one class: ``nfvlab.labs`` re-exports it)."""


_pending: Optional[int] = None
"""The first SIGINT/SIGTERM received under :func:`guard` and not yet cleared."""
_defer_depth = 0
_guard_depth = 0
_sigterm_exc: type[BaseException] = Terminated
_owner_pid: Optional[int] = None


def _exception(signum: int) -> BaseException:
    if signum == signal.SIGTERM:
        return _sigterm_exc("SIGTERM")
    return KeyboardInterrupt()


#: Where finalizers run: ``__del__`` methods and the weakref machinery's callbacks.
_FINALIZER_NAMES = frozenset({"__del__"})
_FINALIZER_FILES = ("weakref.py", "_weakrefset.py")


def _in_finalizer(frame) -> bool:
    """Whether ``frame`` or one of its callers is a finalizer (raising there would be lost)."""
    while frame is not None:
        code = frame.f_code
        if code.co_name in _FINALIZER_NAMES or code.co_filename.endswith(_FINALIZER_FILES):
            return True
        frame = frame.f_back
    return False


def _handler(signum: int, frame) -> None:
    global _pending
    if os.getpid() != _owner_pid:  # a forked helper (preexec, multiprocessing) inherited it
        os._exit(128 + signum)
    if _pending is None:
        _pending = signum
    if _defer_depth == 0 and not _in_finalizer(frame):
        raise _exception(signum)


def _unraisable(unraisable) -> None:
    """Keep a swallowed signal exception off stderr (the checkpoint raises it again)."""
    if _pending is not None and isinstance(unraisable.exc_value, KeyboardInterrupt):
        return
    _previous_unraisable(unraisable)


_previous_unraisable = sys.unraisablehook


def pending() -> Optional[int]:
    """The signal received under :func:`guard` and not yet cleared (``None``: none)."""
    return _pending


def checkpoint() -> None:
    """Raise the pending signal's exception (a no-op outside :func:`guard`, or inside :func:`deferred`)."""
    if _pending is not None and _defer_depth == 0:
        raise _exception(_pending)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def guard(sigterm: type[BaseException] = Terminated) -> Iterator[None]:
    """Handle SIGINT/SIGTERM with flag-and-raise handlers for the block (main thread only; nests).

    On leaving the outermost guard the old handlers come back and the flag is
    cleared: the caller has seen the exception by then, or calls
    :func:`checkpoint` before leaving to raise one that was swallowed.
    """
    global _guard_depth, _sigterm_exc, _owner_pid, _pending
    if not _main_thread():
        yield
        return
    global _previous_unraisable
    old = None
    if _guard_depth == 0:
        _sigterm_exc, _owner_pid, _pending = sigterm, os.getpid(), None
        old = {s: signal.signal(s, _handler) for s in HANDLED}
        _previous_unraisable, sys.unraisablehook = sys.unraisablehook, _unraisable
    _guard_depth += 1
    try:
        yield
    finally:
        _guard_depth -= 1
        if old is not None:
            for s, h in old.items():
                signal.signal(s, h)
            sys.unraisablehook = _previous_unraisable
            _pending = None


@contextmanager
def deferred() -> Iterator[Optional[int]]:
    """Signals in the block are recorded, not raised (teardown must finish); nests."""
    global _defer_depth
    _defer_depth += 1
    try:
        yield _pending
    finally:
        _defer_depth -= 1


PR_SET_PDEATHSIG = 1


def _load_prctl():
    # Resolved in the parent: dlopen between fork and exec can deadlock.
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_prctl = _load_prctl()


def die_with_parent(signum: int = signal.SIGTERM) -> None:
    """In a forked child before exec: ``signum`` when the parent thread dies (``PR_SET_PDEATHSIG``).

    Kept across exec (not for set-uid binaries); best effort: where the kernel
    refuses, the child is left to teardown and ``lab clean``.
    """
    if _prctl is not None:
        _prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0)
