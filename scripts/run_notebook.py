"""Run papermill under a guardian that hands SIGTERM/SIGINT to the notebook's kernel.

    python scripts/run_notebook.py --no-progress-bar --log-output IN.ipynb OUT.ipynb -p key value ...

The arguments are papermill's. A CI timeout or a cancelled ``dvc repro`` sends
SIGTERM (Ctrl-C: SIGINT) to this process; bare papermill would then shut the
kernel down without the lab in it tearing down (namespaces, daemons and the
state record stayed). The guardian runs papermill in its own session, so the
signal reaches only the guardian, and forwards SIGTERM to the kernel process:
the lab inside it (``nfvlab.system.signals``) tears down and the cell fails,
papermill writes the executed notebook and exits. The guardian waits for that
(at most ``--grace-s``, default 120 s; a second signal does not shorten it),
then stops whatever is left of papermill's process tree and exits 128 + the
signal number. Without a signal its exit code is papermill's.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

GRACE_S = 120.0
"""How long the kernel gets to tear its lab down after a signal, s."""


def children(pid: int) -> list[int]:
    """Direct children of ``pid`` (from /proc; empty when it has none or is gone)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            out.append(int(d.name))
    return out


def descendants(pid: int) -> list[int]:
    """Every process below ``pid``, parents before their children."""
    out, todo = [], [pid]
    while todo:
        kids = children(todo.pop(0))
        out += kids
        todo += kids
    return out


def is_kernel(pid: int) -> bool:
    """Whether ``pid`` is a Jupyter kernel (``-m ipykernel_launcher``)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return any(b"ipykernel" in a for a in argv)


def _signal_all(pids: list[int], sig: int) -> None:
    for p in pids:
        try:
            os.kill(p, sig)
        except ProcessLookupError:
            pass


def run(papermill_args: list[str], grace_s: float = GRACE_S) -> int:
    """Run ``papermill papermill_args``; exit code (128 + signal if one was handed on)."""
    received: list[int] = []

    def on_signal(signum, frame):  # only record: the loop below does the work
        received.append(signum)

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        proc = subprocess.Popen([sys.executable, "-m", "papermill", *papermill_args], start_new_session=True)
        while proc.poll() is None and not received:
            time.sleep(0.1)
        if not received:
            return proc.returncode
        # The kernel's own lab turns SIGTERM into teardown; papermill then ends by itself.
        tree = descendants(proc.pid)
        _signal_all([p for p in tree if is_kernel(p)], signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        left = ([proc.pid] if proc.poll() is None else []) + descendants(proc.pid) + \
            [p for p in tree if Path(f"/proc/{p}").exists()]
        _signal_all(sorted(set(left)), signal.SIGKILL)
        proc.wait()
        print(f"run_notebook: {signal.Signals(received[0]).name}: the kernel was stopped "
              f"(papermill exit {proc.returncode})", file=sys.stderr)
        return 128 + received[0]
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def main(argv: list[str]) -> int:
    grace_s = GRACE_S
    if argv[:1] == ["--grace-s"]:
        try:
            grace_s = float(argv[1])
        except (IndexError, ValueError):
            grace_s = float("nan")
        if not 0 < grace_s <= 3600:
            print("run_notebook: --grace-s: give seconds, 0 < s <= 3600", file=sys.stderr)
            return 2
        argv = argv[2:]
    return run(argv, grace_s)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
