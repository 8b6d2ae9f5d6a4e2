"""Durable file writes shared by every state record and result file nfvlab keeps."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def write_json_atomic(path: Path, data: Any, *, sort_keys: bool = True) -> Path:
    """Write ``data`` as JSON to ``path`` atomically and durably.

    A temporary file beside ``path`` is written, fsynced and renamed over it, and the
    directory is fsynced so the rename itself survives a power loss: a reader (or a run
    resumed after kill -9 or a crash) sees the old file or the new one, never half of
    one; an error or a signal on the way leaves no temporary file. Sorted keys
    keep an unchanged record byte-identical (DVC hashes it).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "w") as fh:
            json.dump(data, fh, indent=1, sort_keys=sort_keys)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        fsync_dir(path.parent)
    except BaseException:
        # An error or a signal (KeyboardInterrupt, Terminated) between write and rename
        # must not leave the temporary file behind: the old file stays as it was.
        tmp.unlink(missing_ok=True)
        raise
    return path


def fsync_dir(path: Path) -> None:
    """Make a rename or a new entry in directory ``path`` durable (fsync of the directory)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
