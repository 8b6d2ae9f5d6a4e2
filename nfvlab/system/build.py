"""Compile-and-cache for the C and BPF sources nfvlab ships as package data.

A build is named by the hash of its sources and its command line, cached under
``$NFVLAB_CACHE`` (default ``/var/cache/nfvlab``), written aside and renamed
into place, so an edited source is rebuilt automatically and concurrent users
never see half a file. Sources are found with :mod:`importlib.resources`, so a
wheel install works like an editable one.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path
from typing import Callable, Sequence


class BuildError(RuntimeError):
    """A source could not be compiled (one line: what failed and how to fix it)."""


def cache_dir() -> Path:
    return Path(os.environ.get("NFVLAB_CACHE", "/var/cache/nfvlab"))


def package_file(package: str, name: str) -> Path:
    """Path of package data file ``name`` of ``package`` (e.g. a C source)."""
    path = Path(str(resources.files(package) / name))
    if not path.exists():
        raise BuildError(f"package data missing: {name} in {package} (reinstall nfvlab)")
    return path


def digest(inputs: Sequence[Path], argv: Sequence[str]) -> str:
    """Hash of the inputs' contents and the command line, 16 hex digits.

    The inputs' directories are left out of the command line's hash: the same sources in
    another checkout (a fresh clone, CI) are the same build, and so the same generator
    identity, which keys the published calibration.
    """
    dirs = sorted({str(p.parent) for p in inputs}, key=len, reverse=True)

    def portable(arg: str) -> str:
        for d in dirs:
            arg = arg.replace(d, "<src>")
        return arg

    h = hashlib.sha256("\0".join(map(portable, argv)).encode())
    for p in inputs:
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:16]


def cached_build(name: str, inputs: Sequence[Path], command: Callable[[Path], list[str]], *,
                 suffix: str = "", tool_hint: str = "run `./run setup`") -> Path:
    """Path of the cached output of ``command(output path)`` over ``inputs``, building it if needed.

    ``inputs[0]`` is the main source; every input's content keys the cache.
    A failing command raises :class:`BuildError` with the compiler's first error line.
    """
    template = command(Path("OUT"))
    target = cache_dir() / f"{name}-{digest(inputs, template)}{suffix}"
    if target.exists():
        return target
    if shutil.which(template[0]) is None:
        raise BuildError(f"compiling {inputs[0].name} needs {template[0]}: {tool_hint}")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        proc = subprocess.run(command(tmp), capture_output=True, text=True)
        if proc.returncode != 0:
            raise BuildError(f"compiling {inputs[0].name} failed: {first_error(proc.stderr)}")
        tmp.chmod(0o755)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def first_error(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    return next((ln for ln in lines if "error" in ln), lines[0] if lines else "no output")
