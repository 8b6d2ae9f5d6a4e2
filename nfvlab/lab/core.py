"""The embedded local lab: build a topology, hand out its traffic streams, tear down.

    with Lab("linux-bridge") as lab:
        streams = lab.streams      # what the generator sends, per direction

Teardown runs on success, on exceptions, on Ctrl-C and on SIGTERM. Anything a
kill -9 leaves behind is listed in the state record and removed by
``nfvlab lab clean`` (:func:`nfvlab.lab.state.clean`).
"""
from __future__ import annotations

import os
import secrets
import signal
import time
from typing import Callable, Optional

from nfvlab.lab import catalogue, kernel, state
from nfvlab.lab.kernel import Stream


#: MTU of every link the embedded lab creates, bytes (fits 9018 B jumbo frames).
LAB_MTU = 9000


class LabError(RuntimeError):
    """The lab cannot be built here (one-line reason and fix)."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, turned into an exception so teardown runs."""


def preflight(model_name: str) -> catalogue.Model:
    """Check root and that this host can realize ``model_name``, creating nothing."""
    if os.geteuid() != 0:
        raise LabError("the embedded lab needs root (network namespaces): run as root or with sudo")
    try:
        model = catalogue.get(model_name)
    except KeyError as err:
        raise LabError(str(err.args[0])) from None
    ok, why = catalogue.realizable(model)
    if not ok:
        raise LabError(f"model {model_name} cannot run in the embedded lab: {why}")
    return model


class Lab:
    """One embedded lab: namespaces, links and processes, all recorded in its state."""

    def __init__(
        self,
        model: str,
        *,
        mtu: int = LAB_MTU,
        persistent: bool = False,
        builder: Optional[Callable[["Lab"], list[Stream]]] = None,
        label: Optional[str] = None,
    ) -> None:
        """``builder`` overrides the catalogue model (calibration paths use it)."""
        if builder is None:
            preflight(model)
            builder = kernel.BUILDERS[model]
        elif os.geteuid() != 0:
            raise LabError("the embedded lab needs root (network namespaces): run as root or with sudo")
        self.model = model
        self.mtu = mtu
        self.persistent = persistent
        self.label = label or model
        self._builder = builder
        self.lab_id = secrets.token_hex(3)
        self.streams: list[Stream] = []
        self.state: Optional[state.LabState] = None
        self._lock: Optional[state.HostLock] = None
        self._old_sigterm = None
        self.setup_s: Optional[float] = None
        self.teardown_s: Optional[float] = None

    # -- naming -----------------------------------------------------------
    def ns(self, role: str) -> str:
        return f"{state.PREFIX}{self.lab_id}-{role}"

    def add_namespace(self, role: str) -> str:
        """Record, then create, namespace ``role`` of this lab."""
        name = self.ns(role)
        assert self.state is not None
        self.state.namespaces.append(name)
        self.state.save()
        from nfvlab.lab import netns as nl

        nl.create_namespace(name)
        return name

    def track_process(self, pid: int, cmd: str) -> state.ProcessRecord:
        """Record a process this lab started (so ``lab clean`` can stop it)."""
        assert self.state is not None
        rec = state.ProcessRecord(pid=pid, start_time=state.process_start_time(pid) or 0, cmd=cmd)
        self.state.processes.append(rec)
        self.state.save()
        return rec

    def untrack_process(self, rec: state.ProcessRecord) -> None:
        if self.state is not None and rec in self.state.processes:
            self.state.processes.remove(rec)
            self.state.save()

    # -- lifecycle --------------------------------------------------------
    def __enter__(self) -> "Lab":
        self._lock = state.HostLock(f"lab {self.lab_id} ({self.label})")
        self._lock.__enter__()
        try:
            for line in state.clean():  # leftovers of killed runs would skew results
                print(f"nfvlab: removed leftover {line}")
            self._install_sigterm()
            t0 = time.monotonic()
            me = os.getpid()
            self.state = state.LabState(
                lab_id=self.lab_id, model=self.model, owner_pid=me,
                owner_start_time=state.process_start_time(me) or 0,
                created_at=time.time(), persistent=self.persistent,
            )
            self.state.save()
            self.streams = self._builder(self)
            self.state.status = "up"
            self.state.info = {
                "mtu": self.mtu,
                "streams": [
                    {"tx": str(s.tx), "rx": str(s.rx), "smac": s.smac, "dmac": s.dmac,
                     "sip": s.sip, "dip": s.dip} for s in self.streams
                ],
            }
            self.state.save()
            self.setup_s = time.monotonic() - t0
        except BaseException:
            self._teardown()
            raise
        return self

    def __exit__(self, *exc) -> None:
        if self.persistent and exc[0] is None:
            self._restore_sigterm()
            self._release_lock()
            return
        self._teardown()

    def _teardown(self) -> None:
        # A second Ctrl-C must not abort teardown half-way.
        old_int = signal.signal(signal.SIGINT, signal.SIG_IGN) if _main_thread() else None
        try:
            t0 = time.monotonic()
            if self.state is not None:
                state.destroy(self.state)
            self.teardown_s = time.monotonic() - t0
        finally:
            if old_int is not None:
                signal.signal(signal.SIGINT, old_int)
            self._restore_sigterm()
            self._release_lock()

    def _release_lock(self) -> None:
        if self._lock is not None:
            self._lock.__exit__(None, None, None)
            self._lock = None

    def _install_sigterm(self) -> None:
        if _main_thread():
            owner = os.getpid()

            def on_term(signum, frame):
                if os.getpid() != owner:  # a forked helper inherited the handler
                    os._exit(128 + signum)
                raise Terminated("SIGTERM")

            self._old_sigterm = signal.signal(signal.SIGTERM, on_term)

    def _restore_sigterm(self) -> None:
        if self._old_sigterm is not None:
            signal.signal(signal.SIGTERM, self._old_sigterm)
            self._old_sigterm = None


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def down(lab_id: str) -> bool:
    """Tear down the (persistent) lab ``lab_id``; False if there is none."""
    for st in state.all_states():
        if st.lab_id == lab_id:
            with state.HostLock(f"lab down {lab_id}"):
                state.destroy(st)
            return True
    return False
