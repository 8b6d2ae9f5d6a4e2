"""A real JupyterLab server opens and saves the notebooks; `dvc status` stays as it was.

A scratch copy of the repository (tracked and new files, no data) gets a dvc.lock
matching its files (as tests/test_pipeline.py does). JupyterLab is started as the
README says (`jupyter lab notebooks/`, here on 127.0.0.1 with a token), every
notebook is opened through the Contents API and saved back the way JupyterLab's
autosave does (kernel metadata, outputs, execution counts, cell metadata added), and
the real `dvc status` must not change. Saving a changed *code* cell must make the
stage stale: the check can fail.
"""
from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import GIT_ENV, stop_process_tree
from test_pipeline import locked_copy

# ~25 s on 2 shared CPUs; the server is stopped either way. slow: not in ./run test-fast.
pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]

BIN = Path(sys.executable).parent
DVC = str(BIN / "dvc")
STARTUP_S = 120.0
"""How long the server may take to answer (2 shared CPUs), s."""


def _run(args, cwd):
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, check=True, timeout=300, env=GIT_ENV)


def _status(root) -> dict:
    return json.loads(_run([DVC, "status", "--json"], root).stdout or "{}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    """A `jupyter lab` server on 127.0.0.1 and its Contents API."""

    def __init__(self, root_dir: Path, log: Path) -> None:
        self.port, self.token = _free_port(), secrets.token_hex(16)
        self.log = log.open("w")
        # The user's own Jupyter config and runtime files stay out of it (the venv's, with
        # jupytext's server extension, stays in).
        env = {**GIT_ENV, "JUPYTER_CONFIG_DIR": str(log.parent / "config"),
               "JUPYTER_RUNTIME_DIR": str(log.parent / "runtime")}
        # A session of its own, ended with everything it started by stop() (the module's fixture
        # calls it whatever the tests assert; a start that fails ends it here).
        self.proc = subprocess.Popen(
            [str(BIN / "jupyter-lab"), "--no-browser", "--ip=127.0.0.1", f"--port={self.port}",
             "--ServerApp.port_retries=0", f"--IdentityProvider.token={self.token}", f"--notebook-dir={root_dir}",
             *(["--allow-root"] if os.geteuid() == 0 else [])],
            cwd=root_dir, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True, env=env)
        try:
            self._wait_ready(log)
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self, log: Path) -> None:
        deadline = time.monotonic() + STARTUP_S  # a give-up guard, not a bound on the start-up
        while True:
            try:
                self.request("GET", "/api/status")
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"jupyter lab did not start: {log.read_text()[-2000:]}") from None
                time.sleep(0.5)

    def request(self, method: str, path: str, body=None):
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"token {self.token}",
                                              "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.loads(r.read() or b"null")

    def stop(self) -> None:
        """End the server and everything it started (its kernels, if any): SIGTERM, then SIGKILL."""
        stop_process_tree(self.proc, grace_s=20)
        self.log.close()


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return locked_copy(tmp_path_factory.mktemp("jupyterlab") / "repo")


@pytest.fixture(scope="module")
def lab(scratch, tmp_path_factory):
    server = Lab(scratch / "notebooks", tmp_path_factory.mktemp("jupyterlab-log") / "server.log")
    try:
        yield server
    finally:
        server.stop()


def _as_autosaved(model: dict) -> dict:
    """What JupyterLab saves after a kernel ran the notebook: metadata, outputs, counts added."""
    nb = model["content"]
    nb["metadata"]["language_info"] = {"name": "python", "version": "3.11.2", "mimetype": "text/x-python",
                                       "codemirror_mode": {"name": "ipython", "version": 3}}
    nb["metadata"]["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    for i, cell in enumerate(nb["cells"]):
        cell["metadata"].update({"collapsed": False, "scrolled": True,
                                 "execution": {"iopub.status.idle": "2026-11-23T07:40:00.000Z"}})
        if cell["cell_type"] == "code":
            cell["execution_count"] = i
            cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": f"output {i}\n"}]
    return {"type": "notebook", "format": "json", "content": nb}


NOTEBOOKS = ["experiment_a", "experiment_b", "experiment_c", "experiment_d", "reference", "report"]


def test_opening_and_saving_every_notebook_leaves_dvc_status_unchanged(scratch, lab):
    before = _status(scratch)
    texts = {n: (scratch / f"notebooks/{n}.py").read_bytes() for n in NOTEBOOKS}
    for name in NOTEBOOKS:
        model = lab.request("GET", f"/api/contents/{name}.ipynb?content=1&type=notebook")
        saved = lab.request("PUT", f"/api/contents/{name}.ipynb", _as_autosaved(model))
        assert saved["type"] == "notebook"
        # The save went through jupytext: the .ipynb has the outputs, the paired .py the same bytes.
        on_disk = json.loads((scratch / f"notebooks/{name}.ipynb").read_text())
        assert on_disk["metadata"]["language_info"]["name"] == "python"
        assert (scratch / f"notebooks/{name}.py").read_bytes() == texts[name], name
    assert _status(scratch) == before


def test_saving_changed_code_makes_the_analysis_stale_and_not_the_measurement(scratch, lab):
    path = scratch / "notebooks/experiment_c.py"
    original = path.read_bytes()
    ipynb = (scratch / "notebooks/experiment_c.ipynb").read_bytes()
    before = _status(scratch)
    try:
        model = lab.request("GET", "/api/contents/experiment_c.ipynb?content=1&type=notebook")
        code = next(c for c in model["content"]["cells"] if c["cell_type"] == "code"
                    and "parameters" not in c["metadata"].get("tags", []))
        code["source"] += "\nprint('edited')"
        lab.request("PUT", "/api/contents/experiment_c.ipynb", {"type": "notebook", "format": "json",
                                                                "content": model["content"]})
        assert b"print('edited')" in path.read_bytes()
        after = _status(scratch)
        # The notebook analyses experiment C's records: its analysis stage re-runs, the measuring
        # stage (which never runs the notebook) does not.
        changed = after.get("analysis@c", [])
        assert any("notebooks/experiment_c.py" in ch.get("changed deps", {}) for ch in changed
                   if isinstance(ch, dict))
        assert after.get("experiment@c") == before.get("experiment@c")
    finally:
        path.write_bytes(original)
        (scratch / "notebooks/experiment_c.ipynb").write_bytes(ipynb)
