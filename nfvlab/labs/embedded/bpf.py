"""BPF objects for the eBPF models: compile (cached), attach, configure, read counters.

Sources ship as package data (``nfvlab/labs/embedded/bpf_src/``) and are compiled
with clang on first use into ``$NFVLAB_CACHE`` (default ``/var/cache/nfvlab``),
named by the hash of source, shared headers and flags, so only the first lab
after an edit pays for compilation (:mod:`nfvlab.system.build`).

Programs are attached with the iproute2 loaders (``tc ... bpf da obj``, ``ip
link set ... xdpdrv obj``) inside the lab's namespaces. Each attachment loads
its own copy of the object, so every program has private maps; nothing is
pinned. A program's target device is written into its map after loading with
``bpftool map update``: one object serves every lab, whatever its ifindexes.
Programs live exactly as long as their devices, which die with the lab's
namespaces, so teardown and ``nfvlab lab clean`` need nothing BPF-specific.
"""
from __future__ import annotations

import json
import os
import subprocess
from importlib import resources
from pathlib import Path

from nfvlab.labs.base import LabError
from nfvlab.labs.embedded import host
from nfvlab.system.build import BuildError, cached_build

#: Package holding the BPF C sources (package data, found with importlib.resources).
SOURCE_PACKAGE = "nfvlab.labs.embedded.bpf_src"
#: Debian's libbpf-dev headers (bpf/bpf_helpers.h) and the multiarch asm/ headers.
INCLUDES = ["-I/usr/include", f"-I/usr/include/{os.uname().machine}-linux-gnu"]
CFLAGS = ["-O2", "-g", "-Wall", "-target", "bpf", *INCLUDES]
SETUP_HINT = "run `./run setup` (Debian packages clang, libbpf-dev, bpftool, iproute2, ethtool)"


def source_dir() -> Path:
    """Directory of the shipped BPF sources."""
    return Path(str(resources.files(SOURCE_PACKAGE)))


def check_toolchain() -> None:
    """One-line LabError naming a missing header or kernel feature (tools: the realization table)."""
    if not Path("/usr/include/bpf/bpf_helpers.h").exists():
        raise LabError(f"eBPF models need the libbpf headers (/usr/include/bpf/bpf_helpers.h): {SETUP_HINT}")
    cfg = host.kernel_config() or {}  # no config file: trust the attach step to fail clearly
    for opt in ("CONFIG_BPF_SYSCALL", "CONFIG_NET_CLS_BPF", "CONFIG_NET_SCH_INGRESS"):
        if cfg and cfg.get(opt) not in ("y", "m"):
            raise LabError(f"this kernel lacks {opt} (BPF, cls_bpf, clsact): "
                           "boot a kernel built with it; `./run setup` cannot add it")


def compile_object(name: str) -> Path:
    """Path of the compiled ``<name>.c`` BPF object, compiling it if not cached.

    Keyed by the source, the shared headers and the flags. A compile error
    raises a one-line LabError with the compiler's first error.
    """
    check_toolchain()
    source = source_dir() / f"{name}.c"
    if not source.exists():
        raise LabError(f"BPF source missing: {source}")
    inputs = [source, *sorted(source_dir().glob("*.h"))]
    try:
        return cached_build(name, inputs, lambda out: ["clang", *CFLAGS, "-c", str(source), "-o", str(out)],
                            suffix=".bpf.o", tool_hint=SETUP_HINT)
    except BuildError as err:
        raise LabError(str(err)) from None


def run(argv: list[str]) -> str:
    """Run a tool; its first stderr line becomes a one-line LabError on failure."""
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        why = (proc.stderr.strip().splitlines() or ["exit code %d" % proc.returncode])[0]
        raise LabError(f"`{' '.join(argv)}` failed: {why}")
    return proc.stdout


def links(ns: str) -> dict[str, dict]:
    """Interface name -> ``ip -j link`` record (ifindex, xdp...) in namespace ``ns``."""
    return {ln["ifname"]: ln for ln in json.loads(run(["ip", "-n", ns, "-j", "link", "show"]))}


# -- attaching ----------------------------------------------------------------

def attach_tc_ingress(ns: str, ifname: str, obj: Path, section: str = "tc") -> int:
    """Attach ``obj`` at clsact ingress of ``ifname`` (direct action); returns the program id."""
    run(["tc", "-n", ns, "qdisc", "add", "dev", ifname, "clsact"])
    run(["tc", "-n", ns, "filter", "add", "dev", ifname, "ingress", "bpf", "da",
         "obj", str(obj), "sec", section])
    prog = tc_ingress_prog(ns, ifname)
    if prog is None:
        raise LabError(f"tc accepted the program on {ns}:{ifname} but shows none")
    return prog


def tc_ingress_prog(ns: str, ifname: str) -> int | None:
    """Id of the BPF program at clsact ingress of ``ifname`` (None: none attached)."""
    out = run(["tc", "-n", ns, "-j", "filter", "show", "dev", ifname, "ingress"])
    ids = [f["options"]["prog"]["id"] for f in json.loads(out or "[]")
           if "prog" in f.get("options", {})]
    return ids[0] if ids else None


def attach_xdp(ns: str, ifname: str, obj: Path, section: str = "xdp.frags") -> int:
    """Attach ``obj`` to ``ifname`` in native (driver) mode; returns the program id.

    Native, not generic: generic XDP would silently take the slow skb path.
    """
    run(["ip", "-n", ns, "link", "set", "dev", ifname, "xdpdrv", "obj", str(obj), "sec", section])
    prog = xdp_prog(ns, ifname)
    if prog is None:
        raise LabError(f"ip accepted the XDP program on {ns}:{ifname} but shows none")
    return prog


def xdp_prog(ns: str, ifname: str) -> int | None:
    """Id of the XDP program on ``ifname`` (None: none attached)."""
    return links(ns)[ifname].get("xdp", {}).get("prog", {}).get("id")


def gro_on(ns: str, ifname: str) -> None:
    """GRO on ``ifname``: gives a veth the NAPI its XDP-redirected frames need."""
    run(["ip", "netns", "exec", ns, "ethtool", "-K", ifname, "gro", "on"])


# -- maps -----------------------------------------------------------------------

def prog_maps(prog_id: int) -> dict[str, int]:
    """Map name -> map id of program ``prog_id``."""
    ids = json.loads(run(["bpftool", "-j", "prog", "show", "id", str(prog_id)])).get("map_ids", [])
    return {json.loads(run(["bpftool", "-j", "map", "show", "id", str(m)]))["name"]: m for m in ids}


def _le_bytes(value: int, size: int) -> list[str]:
    return [str(b) for b in value.to_bytes(size, "little")]


def map_set_u32(map_id: int, key: int, value: int, ns: str) -> None:
    """``map[key] = value`` for a map with u32 keys and values, written from namespace ``ns``.

    From ``ns`` because a devmap resolves an ifindex in the writer's namespace
    (written from the host's, ifindex 5 could name some host device).
    """
    run(["ip", "netns", "exec", ns, "bpftool", "map", "update", "id", str(map_id),
         "key", *_le_bytes(key, 4), "value", *_le_bytes(value, 4)])
