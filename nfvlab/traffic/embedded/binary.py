"""The embedded generator's binary and its receive counter, compiled on first use.

Package data (found with :mod:`importlib.resources`, so a wheel install works):
the generator's sources :data:`GEN_SOURCES` (``nfvlab_gen.c``, its ``main``, says
which concept each file holds) and header ``nfvlab_gen.h``, ``nfvlab_count.bpf.c``
(the BPF program that counts test frames at each rx port), ``nfvlab_count.h``
(the frame signature and counter layout both share) and ``nfvlab_tx.bpf.c`` /
``nfvlab_tx.h`` (the XDP transmit path, ``--tx xdp``). Builds are cached by
:func:`cached_build`; the generator's build is keyed by all of these files, so
its version (and with it the calibration identity) changes when any of them does.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from nfvlab.system.build import cached_build, package_file

PACKAGE = "nfvlab.traffic.embedded"
CFLAGS = ["-O2", "-Wall", "-Wextra", "-pthread"]
LIBS = ["-lm", "-lbpf"]
#: Debian's libbpf-dev headers (bpf/bpf_helpers.h) and the multiarch asm/ headers.
BPF_INCLUDES = ["-I/usr/include", f"-I/usr/include/{os.uname().machine}-linux-gnu"]
#: -mcpu=v3: atomic fetch-or / compare-and-swap (Linux >= 5.12).
BPF_CFLAGS = ["-O2", "-g", "-Wall", "-mcpu=v3", "-target", "bpf", *BPF_INCLUDES]
SETUP_HINT = "run `./run setup` (Debian packages gcc, clang, libbpf-dev)"


#: The generator's C sources, compiled together into one binary (``main`` is in the first).
GEN_SOURCES = ("nfvlab_gen.c", "nfvlab_gen_args.c", "nfvlab_gen_frames.c", "nfvlab_gen_socket.c",
               "nfvlab_gen_pacing.c", "nfvlab_gen_xdp.c", "nfvlab_gen_latency.c", "nfvlab_gen_count.c",
               "nfvlab_gen_report.c")
#: What the generator's sources share (and only they).
GEN_HEADER = "nfvlab_gen.h"


def _gen_sources() -> list[Path]:
    return [package_file(PACKAGE, name) for name in GEN_SOURCES]


def _count_sources() -> tuple[Path, Path]:
    return package_file(PACKAGE, "nfvlab_count.bpf.c"), package_file(PACKAGE, "nfvlab_count.h")


def _tx_sources() -> tuple[Path, Path]:
    return package_file(PACKAGE, "nfvlab_tx.bpf.c"), package_file(PACKAGE, "nfvlab_tx.h")


def gen_binary() -> Path:
    """Path of an up-to-date ``nfvlab-gen`` binary, compiling it if needed (BuildError if it cannot)."""
    gens = _gen_sources()
    count, header = _count_sources()
    cc = shutil.which("cc") or "gcc"
    return cached_build("nfvlab-gen", [*gens, package_file(PACKAGE, GEN_HEADER), header, count, *_tx_sources()],
                        lambda out: [cc, *CFLAGS, f"-I{header.parent}", "-o", str(out), *map(str, gens), *LIBS],
                        tool_hint=SETUP_HINT)


def count_object() -> Path:
    """Path of the compiled receive counter (``nfvlab_count.bpf.c``), compiling it if needed."""
    count, header = _count_sources()
    return cached_build("nfvlab-count", [count, header],
                        lambda out: ["clang", *BPF_CFLAGS, f"-I{header.parent}", "-c", str(count),
                                     "-o", str(out)],
                        suffix=".bpf.o", tool_hint=SETUP_HINT)


def tx_object() -> Path:
    """Path of the compiled XDP transmit path (``nfvlab_tx.bpf.c``, ``--tx xdp``), compiling it if needed."""
    tx, tx_header = _tx_sources()
    count_header = _count_sources()[1]
    return cached_build("nfvlab-tx", [tx, tx_header, count_header],
                        lambda out: ["clang", *BPF_CFLAGS, f"-I{tx_header.parent}", "-c", str(tx), "-o", str(out)],
                        suffix=".bpf.o", tool_hint=SETUP_HINT)
