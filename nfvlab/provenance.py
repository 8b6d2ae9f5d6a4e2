"""Where a result came from: code revision, software versions and the machine.

:func:`collect` gathers, quickly (well under a second, no network access), what is
needed to tell whether two runs are comparable: the nfvlab git revision and
whether the checkout had local changes, package and tool versions, the kernel and
its command line, the CPU, NUMA layout, memory and huge pages, the hash of the
embedded traffic generator's source, and the run's parameters.

Every piece is best effort: anything that cannot be determined is ``None`` and
:func:`collect` never raises. The result is a flat, JSON-ready dict (only
``packages`` and ``params`` are nested) so it can go straight into a ``run``
record (see :mod:`nfvlab.records`) and into a pandas frame.
"""
from __future__ import annotations

import hashlib
import os
import platform
import re
import socket
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Optional

from nfvlab.measuring_code import measuring_changes

#: Debian packages whose versions are recorded (``None`` when not installed).
PACKAGES: tuple[str, ...] = (
    "dpdk",
    "openvswitch-switch-dpdk",
    "netsniff-ng",
    "stress-ng",
    "iperf3",
    "libxdp1",
)

#: Bumped when keys of the :func:`collect` dict change meaning or are removed.
SCHEMA_VERSION = 4  # 2: generator_source_sha256 covers every generator source; 3: git_changed;
# 4: git_dirty and git_changed leave out what the pipeline itself writes (git_pipeline_changed)

_PACKAGE_DIR = Path(__file__).resolve().parent
#: Where the embedded generator's sources are: every ``nfvlab_*.c`` / ``nfvlab_*.h`` there is one.
_GENERATOR_DIR = _PACKAGE_DIR / "traffic" / "embedded"
_SUBPROCESS_TIMEOUT_S = 5.0


def utc_now() -> str:
    """The current time as UTC ISO-8601 with microseconds and a ``Z`` suffix."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _safe(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception:  # provenance is best effort: a missing piece is None
        return None


def _run(argv: list[str], cwd: Optional[Path] = None) -> subprocess.CompletedProcess:
    # GIT_DIR, GIT_WORK_TREE, ... inherited from e.g. a git hook would point git
    # at another repository than the one asked about.
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["LC_ALL"] = "C"
    return subprocess.run(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=_SUBPROCESS_TIMEOUT_S,
    )


def git_state(path: os.PathLike | str) -> tuple[Optional[str], Optional[bool]]:
    """``(revision, dirty)`` of the git checkout containing ``path``.

    ``revision`` is the full hash of ``HEAD`` (``None`` if the repository has no
    commit yet). ``dirty`` is true when tracked files differ from ``HEAD`` or
    there are untracked files that are not ignored. Both are ``None`` when
    ``path`` is not inside a git checkout or git is unavailable.
    """
    path = Path(path)
    if path.is_file():
        path = path.parent
    # safe.directory: a checkout owned by another user (e.g. read as root) is
    # still reported rather than refused.
    git = ["git", "-c", "safe.directory=*", "-C", str(path)]
    try:
        inside = _run([*git, "rev-parse", "--is-inside-work-tree"])
    except (OSError, subprocess.SubprocessError):
        return None, None
    if inside.returncode != 0 or inside.stdout.strip() != "true":
        return None, None
    revision: Optional[str] = None
    dirty: Optional[bool] = None
    try:
        head = _run([*git, "rev-parse", "--verify", "--quiet", "HEAD"])
        if head.returncode == 0 and head.stdout.strip():
            revision = head.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    changed = _changed_paths(git)
    if changed is not None:
        dirty = bool(changed)
    return revision, dirty


def _changed_paths(git: list[str]) -> Optional[list[str]]:
    """Repository-relative paths that differ from ``HEAD`` or are untracked and not ignored (the
    ``-z`` porcelain: names as they are, a rename's new name), sorted; None when git fails."""
    try:
        status = _run([*git, "status", "--porcelain", "-z", "--untracked-files=normal"])
    except (OSError, subprocess.SubprocessError):
        return None
    if status.returncode != 0:
        return None
    entries = status.stdout.split("\0")
    paths, i = [], 0
    while i < len(entries):
        entry = entries[i]
        if len(entry) > 3:
            paths.append(entry[3:])
            if entry[0] in "RC":  # the next entry is the rename's source
                i += 1
        i += 1
    return sorted(paths)


def git_changes(path: os.PathLike | str) -> Optional[list[str]]:
    """Paths of the checkout containing ``path`` that differ from its ``HEAD`` (see
    :func:`git_state`: what makes it dirty); None outside a checkout or without git."""
    path = Path(path)
    if path.is_file():
        path = path.parent
    return _changed_paths(["git", "-c", "safe.directory=*", "-C", str(path)])


def _pipeline_written(path: Path, changed: list[str]) -> list[str]:
    """Those of ``changed`` (paths relative to the root of the checkout holding ``path``) that ``dvc
    repro`` itself writes while a pipeline runs: ``dvc.lock`` and the outputs its stages list there
    (the metrics kept in git, or anything under an output folder). An earlier stage of the same run
    changes them, so they do not make a later stage's checkout differ from its commit."""
    if not changed:
        return []
    import yaml

    top = _run(["git", "-c", "safe.directory=*", "-C", str(path), "rev-parse", "--show-toplevel"])
    lock_file = Path(top.stdout.strip()) / "dvc.lock"
    if top.returncode != 0 or not lock_file.is_file():
        return []
    lock = yaml.safe_load(lock_file.read_text()) or {}
    outs = {"dvc.lock"} | {str(o["path"]).rstrip("/") for stage in (lock.get("stages") or {}).values()
                           for o in (stage.get("outs") or ()) if isinstance(o, dict) and o.get("path")}
    return [p for p in changed if p in outs or any(p.startswith(o + "/") for o in outs)]


def measuring_code_changes(provenance: dict) -> Optional[list[str]]:
    """The measuring code that differed from the recorded commit when ``provenance`` was collected
    (:func:`nfvlab.measuring_code.measuring_changes`: the params, pipeline, scripts and the package's
    measuring code of the run's lab): ``[]`` for a clean measurement, the paths otherwise; None when
    the checkout was dirty and the record does not say which paths (a record of schema < 3). A change
    elsewhere (docs, tests, benchmarks, analysing code, another lab's backend, the pipeline's own
    outputs such as metrics/ and dvc.lock) does not touch a measurement."""
    if not provenance.get("git_dirty"):
        return []
    changed = provenance.get("git_changed")
    if changed is None:
        return None
    params = provenance.get("params")
    return measuring_changes(changed, params if isinstance(params, dict) else None)


def debian_package_versions(packages: tuple[str, ...] | list[str] = PACKAGES) -> dict[str, Optional[str]]:
    """Installed versions of Debian ``packages`` from one ``dpkg-query`` call.

    A package that is not installed (or only has configuration files left) maps
    to ``None``; so does every package when ``dpkg-query`` is unavailable.
    """
    versions: dict[str, Optional[str]] = {p: None for p in packages}
    if not packages:
        return versions
    try:
        proc = _run(
            ["dpkg-query", "-W", "-f", "${Package}\\t${Version}\\t${db:Status-Status}\\n", *packages]
        )
    except (OSError, subprocess.SubprocessError):
        return versions
    # dpkg-query exits 1 when some package is unknown but still lists the others.
    for line in proc.stdout.splitlines():
        parts = line.split("\t")
        if len(parts) != 3:
            continue
        name, version, status = parts
        name = name.split(":", 1)[0]
        if name in versions and status == "installed" and version:
            versions[name] = version
    return versions


def _cpuinfo() -> tuple[Optional[str], Optional[int]]:
    text = Path("/proc/cpuinfo").read_text(errors="replace")
    model: Optional[str] = None
    count = 0
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key = key.strip()
        if key == "processor":
            count += 1
        elif model is None and key in ("model name", "Model", "cpu model", "Hardware"):
            model = value.strip() or None
    return model, (count or None)


def _meminfo() -> dict[str, int]:
    """``/proc/meminfo`` values, in bytes where the file gives kB."""
    out: dict[str, int] = {}
    for line in Path("/proc/meminfo").read_text().splitlines():
        m = re.match(r"^([^:]+):\s+(\d+)(\s+kB)?\s*$", line)
        if m:
            out[m.group(1)] = int(m.group(2)) * (1024 if m.group(3) else 1)
    return out


def _numa_nodes() -> Optional[int]:
    base = Path("/sys/devices/system/node")
    if not base.is_dir():
        return None
    n = sum(1 for p in base.iterdir() if re.fullmatch(r"node\d+", p.name))
    return n or None


def sources_sha256(directory: Path) -> Optional[str]:
    """SHA-256 (hex) over the ``nfvlab_*.c`` / ``nfvlab_*.h`` files of ``directory`` in name order:
    each file's name, a NUL, its bytes' SHA-256, a newline; None when there is none."""
    files = sorted([*directory.glob("nfvlab_*.c"), *directory.glob("nfvlab_*.h")], key=lambda f: f.name)
    if not files:
        return None
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode() + b"\0" + hashlib.sha256(f.read_bytes()).hexdigest().encode() + b"\n")
    return h.hexdigest()


def _nfvlab_version() -> Optional[str]:
    from importlib.metadata import version

    return version("nfvlab")


def _read_stripped(path: str) -> Optional[str]:
    return Path(path).read_text().strip() or None


def _copy_params(params: Any) -> Any:
    if params is None:
        return None
    try:
        return dict(params)
    except Exception:
        return params


def collect(params: dict | None = None) -> dict:
    """Gather provenance of a run; never raises, a missing piece is ``None``.

    Parameters
    ----------
    params : dict or None
        The run's parameters, stored unchanged (shallow copy) under ``params``.

    Returns
    -------
    dict
        JSON-ready, with keys:

        ``schema`` (int)
            :data:`SCHEMA_VERSION`.
        ``collected_at`` (str)
            UTC ISO-8601 time of collection.
        ``nfvlab_version`` (str)
            Installed distribution version (``importlib.metadata``).
        ``nfvlab_path`` (str)
            Directory the ``nfvlab`` package was imported from.
        ``git_revision`` (str), ``git_dirty`` (bool)
            See :func:`git_state`, for the checkout holding the package, but only ``git_changed``
            makes it dirty; both ``None`` for an installed (non-checkout) package.
        ``git_changed`` (list of str)
            :func:`git_changes`: the paths that made it dirty (``[]`` when clean), those of
            ``git_pipeline_changed`` apart; publishing refuses a run whose measuring code is among
            them (:func:`measuring_code_changes`).
        ``git_pipeline_changed`` (list of str)
            Changed paths that the pipeline itself writes (``dvc.lock``, the stages' outputs):
            changed by an earlier stage of the same ``dvc repro``, not by a person.
        ``python``, ``python_implementation``, ``python_executable`` (str)
            Interpreter version (e.g. ``3.11.2``), implementation and path.
        ``hostname`` (str)
        ``kernel`` (str)
            Kernel release (``uname -r``).
        ``kernel_version`` (str), ``machine`` (str)
            ``uname -v`` and ``uname -m``.
        ``kernel_cmdline`` (str)
            ``/proc/cmdline`` (isolcpus, hugepages, ... matter for results).
        ``cpu_model`` (str)
            First ``model name`` of ``/proc/cpuinfo``.
        ``cpu_count`` (int)
            Logical CPUs listed in ``/proc/cpuinfo``.
        ``cpu_affinity_count`` (int)
            CPUs this process may run on (``sched_getaffinity``).
        ``cpu_governor`` (str)
            cpufreq scaling governor of cpu0 (``None`` without cpufreq).
        ``numa_nodes`` (int)
            ``node<N>`` directories under ``/sys/devices/system/node``.
        ``mem_total_bytes`` (int)
            ``MemTotal`` from ``/proc/meminfo``.
        ``hugepages_total`` (int), ``hugepage_size_bytes`` (int)
            Default-size huge pages configured, and that size.
        ``packages`` (dict of str to str or None)
            Versions of the Debian packages in :data:`PACKAGES`.
        ``generator_source_sha256`` (str)
            :func:`sources_sha256` of ``nfvlab/traffic/embedded``: every source the generator,
            its TX and its counting BPF programs are built from (``None`` without them).
        ``params`` (dict or None)
            As given.
    """
    model_count = _safe(_cpuinfo) or (None, None)
    meminfo = _safe(_meminfo) or {}
    uname = _safe(platform.uname)
    git_revision, git_dirty = _safe(lambda: git_state(_PACKAGE_DIR)) or (None, None)
    changed = _safe(lambda: git_changes(_PACKAGE_DIR))
    pipeline = (_safe(lambda: _pipeline_written(_PACKAGE_DIR, changed)) or []) if changed is not None else None
    if changed is not None:
        changed = [p for p in changed if p not in pipeline]
        git_dirty = bool(changed)
    cpu_count = model_count[1] if model_count[1] is not None else _safe(os.cpu_count)
    return {
        "schema": SCHEMA_VERSION,
        "collected_at": _safe(utc_now),
        "nfvlab_version": _safe(_nfvlab_version),
        "nfvlab_path": str(_PACKAGE_DIR),
        "git_revision": git_revision,
        "git_dirty": git_dirty,
        "git_changed": changed,
        "git_pipeline_changed": pipeline,
        "python": _safe(platform.python_version),
        "python_implementation": _safe(platform.python_implementation),
        "python_executable": sys.executable or None,
        "hostname": _safe(socket.gethostname),
        "kernel": uname.release if uname else None,
        "kernel_version": uname.version if uname else None,
        "machine": uname.machine if uname else None,
        "kernel_cmdline": _safe(lambda: _read_stripped("/proc/cmdline")),
        "cpu_model": model_count[0],
        "cpu_count": cpu_count,
        "cpu_affinity_count": _safe(lambda: len(os.sched_getaffinity(0))),
        "cpu_governor": _safe(
            lambda: _read_stripped("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
        ),
        "numa_nodes": _safe(_numa_nodes),
        "mem_total_bytes": meminfo.get("MemTotal"),
        "hugepages_total": meminfo.get("HugePages_Total"),
        "hugepage_size_bytes": meminfo.get("Hugepagesize"),
        "packages": _safe(debian_package_versions) or {p: None for p in PACKAGES},
        "generator_source_sha256": _safe(lambda: sources_sha256(_GENERATOR_DIR)),
        "params": _copy_params(params),
    }
