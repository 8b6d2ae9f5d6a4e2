"""Compile the embedded traffic generator (C, shipped as package data) on first use.

The binary is cached under ``$NFVLAB_CACHE`` (default ``/var/cache/nfvlab``) and
named by the hash of its source, so an edited source is rebuilt automatically and
concurrent users never see a half-written binary.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

SOURCE = Path(__file__).with_name("nfvlab_gen.c")
CFLAGS = ["-O2", "-Wall", "-Wextra", "-pthread"]
LIBS = ["-lm"]


class BuildError(RuntimeError):
    """The generator could not be compiled (message says why and how to fix it)."""


def cache_dir() -> Path:
    return Path(os.environ.get("NFVLAB_CACHE", "/var/cache/nfvlab"))


def gen_binary() -> Path:
    """Path of an up-to-date ``nfvlab-gen`` binary, compiling it if needed."""
    if not SOURCE.exists():
        raise BuildError(f"generator source missing: {SOURCE}")
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    target = cache_dir() / f"nfvlab-gen-{digest}"
    if target.exists():
        return target
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise BuildError("no C compiler: install gcc (apt-get install gcc) or run `make setup`")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=target.parent, delete=False) as tmp:
        tmp_path = Path(tmp.name)
    try:
        proc = subprocess.run(
            [cc, *CFLAGS, "-o", str(tmp_path), str(SOURCE), *LIBS],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            raise BuildError(f"compiling {SOURCE.name} failed:\n{proc.stderr.strip()}")
        tmp_path.chmod(0o755)
        os.replace(tmp_path, target)
    finally:
        tmp_path.unlink(missing_ok=True)
    return target
