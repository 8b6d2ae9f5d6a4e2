"""Output paths checked before anything is created: kind and writability.

A records file on a directory, on ``/proc`` or under a read-only directory used
to fail only after the lab was built (or with a traceback); :func:`output_problem`
says so up front, in a phrase a caller puts after the argument's name.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Literal, Optional

__all__ = ["output_problem"]

#: Pseudo file systems nothing is ever written to as output.
PSEUDO_ROOTS = ("/proc", "/sys", "/dev")


def _nearest_existing(path: Path) -> Path:
    p = path
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def output_problem(path: Path, kind: Literal["file", "dir"]) -> Optional[str]:
    """Why ``path`` cannot be written as an output ``kind`` (``None``: it can); creates nothing.

    ``file``: an existing regular file, or a new one whose nearest existing
    ancestor is a writable directory. ``dir``: an existing writable directory
    or one that can be created there.
    """
    absolute = Path(os.path.abspath(path))
    real = Path(os.path.realpath(absolute))
    for root in PSEUDO_ROOTS:
        if real == Path(root) or Path(root) in real.parents:
            return f"{path}: under {root}, a kernel pseudo file system; give a path on a real file system"
    if absolute.exists():
        if kind == "file" and not absolute.is_file():
            what = "a directory" if absolute.is_dir() else "not a regular file"
            return f"{path}: {what}; give a file path"
        if kind == "dir" and not absolute.is_dir():
            return f"{path}: not a directory; give a directory path"
        if not os.access(absolute, os.W_OK):
            return f"{path}: not writable ({'read-only file system or ' if _read_only(absolute) else ''}no permission)"
        return None
    base = _nearest_existing(absolute.parent)
    if not base.is_dir():
        return f"{path}: {base} is not a directory"
    if not os.access(base, os.W_OK | os.X_OK):
        return (f"{path}: cannot create it: {base} is not writable "
                f"({'read-only file system' if _read_only(base) else 'no permission'})")
    return None


def _read_only(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False
