"""Run papermill under a guardian that hands SIGTERM/SIGINT to the notebook's kernel.

    python -m nfvlab.notebook_run --no-progress-bar --log-output IN.py OUT.ipynb -p key value ...

The arguments are papermill's, with the input notebook before any option that
takes a value. An input ``.py`` (a jupytext py:percent notebook, what the DVC
stages depend on: notebooks/jupytext.toml) becomes a temporary ``.ipynb`` first,
and the kernel starts in the ``.py``'s directory (as JupyterLab would) unless
``--cwd`` is given. The experiment's progress lines do not land in the executed
notebook: the kernel writes them to a file the guardian names in
``NFVLAB_PROGRESS_FILE`` (:func:`nfvlab.notebook.progress_elsewhere`) and the
guardian copies them to its own stderr as they come (``dvc repro`` shows them).
 A CI timeout or a cancelled ``dvc repro`` sends
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
import tempfile
import time
from pathlib import Path
from typing import Optional, TextIO

import psutil

GRACE_S = 120.0
"""How long the kernel gets to tear its lab down after a signal, s."""
PROGRESS_ENV = "NFVLAB_PROGRESS_FILE"
"""Environment variable naming the progress file (:func:`nfvlab.notebook.progress_elsewhere`).
The guardian imports nothing else of nfvlab: it must start fast and survive any notebook."""


def input_index(papermill_args: list[str]) -> Optional[int]:
    """Index of the input notebook: the first argument that is not an option (None: none)."""
    return next((i for i, a in enumerate(papermill_args) if not a.startswith("-")), None)


def ipynb_from_text(source: Path, workdir: Path) -> Path:
    """The notebook of a jupytext text file (cells and tags as written), saved as ``workdir/<stem>.ipynb``."""
    import jupytext
    import nbformat

    nb = jupytext.read(source)
    nb.metadata.pop("jupytext", None)
    nb.metadata.setdefault("kernelspec", {"name": "python3", "display_name": "Python 3", "language": "python"})
    out = workdir / f"{source.stem}.ipynb"
    nbformat.write(nb, out)
    return out


def prepare(papermill_args: list[str], workdir: Path) -> list[str]:
    """``papermill_args`` with an input ``.py`` replaced by its notebook (and ``--cwd`` its directory)."""
    i = input_index(papermill_args)
    if i is None or not papermill_args[i].endswith(".py"):
        return list(papermill_args)
    source = Path(papermill_args[i])
    args = [*papermill_args[:i], str(ipynb_from_text(source, workdir)), *papermill_args[i + 1:]]
    if "--cwd" not in args:
        args += ["--cwd", str(source.resolve().parent)]
    return args


class Tail:
    """Copies what is appended to a file to a stream (the progress lines, to stderr)."""

    def __init__(self, path: Path, stream: TextIO) -> None:
        self.path, self.stream, self.offset = path, stream, 0

    def pump(self) -> None:
        try:
            with self.path.open("rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return
        # Whole lines only: a line being written is copied on the next pump.
        end = data.rfind(b"\n") + 1
        if end:
            self.stream.write(data[:end].decode(errors="replace"))
            self.stream.flush()
            self.offset += end


def children(pid: int) -> list[int]:
    """Direct children of ``pid`` (empty when it has none or is gone)."""
    try:
        return [c.pid for c in psutil.Process(pid).children()]
    except psutil.Error:
        return []


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
        argv = psutil.Process(pid).cmdline()
    except psutil.Error:
        return False
    return any("ipykernel" in a for a in argv)


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
    work = tempfile.TemporaryDirectory(prefix="run_notebook-")
    progress = Tail(Path(work.name) / "progress.log", sys.stderr)
    try:
        args = prepare(papermill_args, Path(work.name))
        env = {**os.environ, PROGRESS_ENV: str(progress.path)}
        proc = subprocess.Popen([sys.executable, "-m", "papermill", *args], start_new_session=True, env=env)
        while proc.poll() is None and not received:
            progress.pump()
            time.sleep(0.1)
        progress.pump()
        if not received:
            return proc.returncode
        # The kernel's own lab turns SIGTERM into teardown; papermill then ends by itself.
        tree = descendants(proc.pid)
        _signal_all([p for p in tree if is_kernel(p)], signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while proc.poll() is None and time.monotonic() < deadline:
            progress.pump()
            time.sleep(0.1)
        left = ([proc.pid] if proc.poll() is None else []) + descendants(proc.pid) + \
            [p for p in tree if psutil.pid_exists(p)]
        _signal_all(sorted(set(left)), signal.SIGKILL)
        proc.wait()
        print(f"run_notebook: {signal.Signals(received[0]).name}: the kernel was stopped "
              f"(papermill exit {proc.returncode})", file=sys.stderr)
        return 128 + received[0]
    finally:
        progress.pump()
        work.cleanup()
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
