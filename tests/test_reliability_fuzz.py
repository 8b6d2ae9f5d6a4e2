"""Property-based fuzz of the CLI (issue 15): an invalid argument vector gives one line on
stderr and exit 2, and creates nothing (no namespace, no state record, no file).

Each example takes a valid command line and spoils one argument (or the
environment) with a value from a strategy of surely invalid ones: out of range,
not finite, not a number, an unknown name, an output path that is a directory
or a pseudo file, a params file that is binary, too deep or tagged. The CLI's
``main`` runs in-process, so examples are fast; hypothesis is derandomized so
CI sees the same examples every run.
"""
import contextlib
import io
import math
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import REPO
from nfvlab.cli import main
from nfvlab.labs.embedded import state
from nfvlab.scenario import MODEL_NAMES

pytestmark = pytest.mark.lab  # validation needs root (it asks the host what it can run)

FUZZ = Path("/tmp/nfvlab-fuzz")
"""Scratch directory: bad params files, and where a records file must NOT appear."""
RECORDS = FUZZ / "out" / "records.jsonl"

BAD_FILES = {
    "binary.yaml": b"\x89PNG\r\n\x1a\n\x00\xff",
    "latin1.yaml": "models: [caf\xe9]".encode("latin-1"),
    "deep.yaml": ("a: " + "[" * 5000 + "]" * 5000).encode(),
    "tagged.yaml": b"repetitions: !!python/object/apply:os.system ['touch /tmp/nfvlab-fuzz/pwned']\n",
    "alias.yaml": b"a: &x [1]\nb: *x\n",
    "unknown.yaml": b"no_such_key: 1\n",
    "list.yaml": b"- 1\n- 2\n",
    "huge.yaml": b"a: " + b"x" * (2 << 20),
}


def _bad_number(low=None, high=None, integer=False):
    """Text of numbers outside [low, high], not finite, or not numbers at all."""
    out = [st.sampled_from(["nan", "inf", "-inf", "", "abc", "1e", "0x10", "--", "1,5"])]
    if low is not None:
        out.append(st.integers(max_value=math.floor(low) - 1).map(str) if integer else
                   st.floats(max_value=low, exclude_max=True, allow_nan=False, allow_infinity=False).map(repr))
    if high is not None:
        out.append(st.integers(min_value=math.floor(high) + 1).map(str) if integer else
                   st.floats(min_value=high, exclude_min=True, allow_nan=False, allow_infinity=False).map(repr))
    if integer:
        out.append(st.sampled_from(["1.5", "2e3"]))
    return st.one_of(*out)


def _unknown_name(known):
    return st.text(min_size=0, max_size=20).filter(lambda s: s not in known and "\0" not in s)


BAD_OUTPUT = st.sampled_from(["/tmp", "/proc/self/records.jsonl", "/sys/kernel/x.jsonl", "/dev/null/x.jsonl",
                              str(REPO / "README.md") + "/x.jsonl"])
BAD_PARAMS = st.sampled_from(sorted(BAD_FILES)).map(lambda n: str(FUZZ / n)) | st.sampled_from(
    ["/tmp", "/dev/zero", "/nonexistent/params.yaml"])

TRAFFIC_SPOILERS = {
    "--frame-size": _bad_number(64, 9018, integer=True) | st.sampled_from(["IMIXX", "64B", "63"]),
    "--flows": _bad_number(1, 65535, integer=True),
    "--latency-pps": _bad_number(0, 100_000, integer=True),
    "--noisy-load-pct": _bad_number(1, 100, integer=True),
    "--numa": _unknown_name({"s1"}),
    "--pinning": _unknown_name({"plan", "none", "shared", "exclusive"}),
    "--model": _unknown_name(set(MODEL_NAMES)) | st.sampled_from(["sriov", "vpp"]),
    "--port-speed": _unknown_name({"1GbE", "10GbE", "25GbE", "40GbE", "100GbE"}),
    "--records": BAD_OUTPUT,
    "--lab-profile": BAD_PARAMS,
}
COMMANDS = {
    "trial": (["trial", "--model", "linux-bridge", "--rate-pps", "1000", "--duration-s", "0.2",
               "--records", str(RECORDS)],
              {**TRAFFIC_SPOILERS, "--rate-pps": _bad_number(0, 1e12), "--duration-s": _bad_number(0, 86_400)}),
    "search": (["search", "--model", "linux-bridge", "--goal", "ndr", "--records", str(RECORDS)],
               {**TRAFFIC_SPOILERS, "--params": BAD_PARAMS, "--goal": _unknown_name({"ndr", "pdr", "ndr+pdr",
                                                                                       "mrr", "sweep"}),
                "--pdr-loss-ratio": _bad_number(0, 1), "--relative-width": _bad_number(0, 1),
                "--min-rate-pps": _bad_number(0, 1e12), "--max-rate-pps": _bad_number(0, 1e12),
                "--duration-s": _bad_number(0, 86_400)}),
    "calibrate": (["calibrate", "--skip-known-path", "--out", str(FUZZ / "out" / "cal.json")],
                  {"--frame-sizes": st.sampled_from(["63", "abc", "", ",", "64,9019", "IMIXX", "64;512"]),
                   "--duration-s": _bad_number(0, 86_400), "--params": BAD_PARAMS, "--out": BAD_OUTPUT,
                   "--lab-profile": BAD_PARAMS}),
    "lab up": (["lab", "up", "--model", "linux-bridge"],
               {"--model": TRAFFIC_SPOILERS["--model"], "--noisy-load-pct": TRAFFIC_SPOILERS["--noisy-load-pct"],
                "--numa": TRAFFIC_SPOILERS["--numa"], "--pinning": TRAFFIC_SPOILERS["--pinning"]}),
    "analyze": (["analyze", "a", "--params", "params/quick/experiment_a.yaml", "--records",
                 str(FUZZ / "records.jsonl"), "--metrics", str(FUZZ / "out" / "m.json"),
                 "--tables", str(FUZZ / "out" / "tables")],
                {"--params": BAD_PARAMS, "--metrics": BAD_OUTPUT,
                 "--tables": st.sampled_from(["/proc/x", str(REPO / "README.md"), "/sys"])}),
}


@st.composite
def invalid_vectors(draw):
    """(argv, env): a valid command line with one argument, or the lock wait, spoiled."""
    name = draw(st.sampled_from(sorted(COMMANDS)))
    argv, spoilers = COMMANDS[name]
    argv = list(argv)
    env = {}
    what = draw(st.sampled_from(sorted(spoilers) + ["NFVLAB_LOCK_WAIT_S", "unknown flag"]))
    if what == "NFVLAB_LOCK_WAIT_S":
        env[what] = draw(_bad_number(0, 86_400) .filter(lambda s: s.strip() != ""))
    elif what == "unknown flag":
        argv.append(draw(st.sampled_from(["--bogus", "--rate", "-x", "--frame-size=64=64"])))
    else:
        value = draw(spoilers[what])
        if what in argv:
            argv[argv.index(what) + 1] = value
        else:
            argv += [what, value]
    return argv, env


def _host_snapshot():
    labs = sorted(p.name for p in state.labs_dir().glob("*")) if state.labs_dir().exists() else []
    ns = [n for n in state.existing_namespaces() if state.NS_PATTERN.match(n)]  # labs', not other tests'

    return {"labs": labs, "namespaces": ns, "out": sorted(str(p) for p in (FUZZ / "out").rglob("*")),
            "pwned": (FUZZ / "pwned").exists()}


@pytest.fixture(scope="module")
def fuzz_files():
    if os.geteuid() != 0:
        pytest.skip("CLI validation asks the host (namespaces, root)")
    FUZZ.mkdir(exist_ok=True)
    (FUZZ / "out").mkdir(exist_ok=True)
    for name, data in BAD_FILES.items():
        (FUZZ / name).write_bytes(data)
    (FUZZ / "records.jsonl").write_text("")
    # Held as a run's lock: no other process builds a lab while the host is compared, and a
    # vector that is valid after all builds its lab here (and fails the test) instead of
    # being refused as "lab in use".
    with state.HostLock("CLI fuzz", for_run=True):
        yield
    import shutil

    shutil.rmtree(FUZZ, ignore_errors=True)


@settings(max_examples=300, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(vector=invalid_vectors())
def test_invalid_vectors_give_one_line_exit_2_and_create_nothing(fuzz_files, monkeypatch, vector):
    argv, env = vector
    monkeypatch.delenv("NFVLAB_LOCK_WAIT_S", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    before = _host_snapshot()
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            code = main(argv)
        except SystemExit as exit_:  # argparse
            code = exit_.code
    lines = err.getvalue().splitlines()
    shown = f"argv={argv} env={env}: exit {code}, stderr {err.getvalue()!r}"
    assert code == 2, shown
    assert len(lines) == 1 and lines[0].startswith("nfvlab"), shown
    assert _host_snapshot() == before, shown
