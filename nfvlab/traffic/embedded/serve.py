"""One ``nfvlab-gen --serve`` process for many trials: no per-trial start-up.

A one-shot run of nfvlab-gen starts a process, opens its packet sockets and loads
its BPF programs (the receive counters, the XDP transmit path) for every trial.
Started with ``--serve``, it keeps those between trials: each trial is one line
on its stdin (the options of a one-shot run, tab-separated) and its JSON report
one line on its stdout. It ends at EOF on stdin: when :meth:`GenProcess.close`
closes it, and when this process dies however it dies (the kernel closes the
pipe), at most a trial's length later.

A setup failure or bad options end the process as they end a one-shot run (its
last stderr line is the error); the next trial starts a new one.
"""
from __future__ import annotations

import os
import selectors
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from nfvlab.system import signals
from nfvlab.traffic.base import GeneratorError

#: How long a closed process may take to detach its counters and exit before it is signalled.
EXIT_WAIT_S = 5.0


def trial_line(args: list[str]) -> str:
    """One trial's options as a ``--serve`` line (ValueError for an option that cannot be one)."""
    for a in args:
        if "\t" in a or "\n" in a:
            raise ValueError(f"nfvlab-gen option {a!r}: tabs and newlines are not allowed "
                             "(they separate options and trials)")
    return "\t".join(args) + "\n"


class GenProcess:
    """A running ``nfvlab-gen --serve``, recorded with ``tracker`` (when given) while it lives.

    ``labels``: words on its command line that only name it (the ports it serves), so that
    ``ps``, ``lab clean`` and the tests' residue checks tell whose generator it is, as a
    one-shot run's ``--stream`` options do.
    """

    def __init__(self, binary: Path, tracker=None, labels: tuple[str, ...] = ()) -> None:
        self.tracker = tracker
        self._stderr = tempfile.TemporaryFile()
        with signals.deferred():  # a signal now would leave the process unrecorded and running
            self.proc = subprocess.Popen([str(binary), "--serve", *labels], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=self._stderr)
            self._rec = tracker.track_process(self.proc.pid, "nfvlab-gen") if tracker else None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def trial(self, args: list[str], timeout_s: float) -> str:
        """The report of the trial ``args`` ask for (GeneratorError if the process ends or times out)."""
        line = trial_line(args)
        try:
            self.proc.stdin.write(line.encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            raise GeneratorError(self._failure()) from None
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            deadline = time.monotonic() + timeout_s
            while not sel.select(timeout=max(0.0, min(1.0, deadline - time.monotonic()))):
                signals.checkpoint()
                if time.monotonic() >= deadline:
                    raise GeneratorError(f"nfvlab-gen gave no report within {timeout_s:g} s")
        out = self.proc.stdout.readline().decode()
        if not out.endswith("\n"):
            raise GeneratorError(self._failure())
        return out

    def _failure(self) -> str:
        """Why the process ended: its last stderr line, or its exit code."""
        try:
            code = self.proc.wait(timeout=EXIT_WAIT_S)
        except subprocess.TimeoutExpired:
            return "nfvlab-gen closed its report without exiting"
        self._stderr.seek(0)
        err = self._stderr.read().decode(errors="replace").strip()
        return err.splitlines()[-1] if err else f"nfvlab-gen exited with {code}"

    def close(self, interrupt: bool = False) -> None:
        """End the process: EOF on its stdin, then SIGTERM, then SIGKILL (``interrupt``: SIGTERM
        first, which cuts a running trial short). Safe to call again."""
        with signals.deferred():
            try:
                if interrupt and self.proc.poll() is None:
                    self.proc.send_signal(signal.SIGTERM)
                if self.proc.stdin and not self.proc.stdin.closed:
                    try:
                        self.proc.stdin.close()
                    except BrokenPipeError:
                        pass
                for sig in (None, signal.SIGTERM, signal.SIGKILL):
                    if sig is not None and self.proc.poll() is None:
                        os.kill(self.proc.pid, sig)
                    try:
                        self.proc.wait(timeout=EXIT_WAIT_S)
                        break
                    except subprocess.TimeoutExpired:
                        continue
                self.proc.stdout.close()
                self._stderr.close()
            finally:
                if self._rec is not None:
                    self.tracker.untrack_process(self._rec)
                    self._rec = None

