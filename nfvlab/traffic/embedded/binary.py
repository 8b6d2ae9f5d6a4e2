"""The embedded generator's binary: ``nfvlab_gen.c`` (package data) compiled on first use."""
from __future__ import annotations

import shutil
from pathlib import Path

from nfvlab.system.build import cached_build, package_file

CFLAGS = ["-O2", "-Wall", "-Wextra", "-pthread"]
LIBS = ["-lm"]


def gen_binary() -> Path:
    """Path of an up-to-date ``nfvlab-gen`` binary, compiling it if needed (BuildError if it cannot)."""
    source = package_file("nfvlab.traffic.embedded", "nfvlab_gen.c")
    cc = shutil.which("cc") or "gcc"
    return cached_build("nfvlab-gen", [source],
                        lambda out: [cc, *CFLAGS, "-o", str(out), str(source), *LIBS],
                        tool_hint="install a C compiler: run `./run setup` (Debian package gcc)")
