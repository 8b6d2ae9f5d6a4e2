"""Shared fixtures: lab tests need root and leave nothing behind."""
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

import pytest

from nfvlab.labs.embedded import state

REPO = Path(__file__).resolve().parents[1]


def _bpf_programs() -> int:
    """Loaded BPF programs of the kinds the lab attaches (XDP, tc)."""
    try:
        out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True).stdout
        return sum(1 for p in json.loads(out or "[]") if p.get("type") in ("xdp", "sched_cls"))
    except (OSError, ValueError):
        return 0


def _hugepages() -> int:
    p = state.HUGEPAGES_2M
    return int(p.read_text()) if p.exists() else 0


def lab_residue() -> dict:
    """What nfvlab labs (not test-owned fixtures) left on this host."""
    ns = [n for n in state.existing_namespaces() if state.NS_PATTERN.match(n)]
    files = sorted(p.name for p in state.labs_dir().glob("*.json")) if state.labs_dir().exists() else []
    out = subprocess.run(["pgrep", "-af", "nfvl"], capture_output=True, text=True).stdout
    # Processes driving or serving lab resources (nfvl-<6 hex>-... names, lab run dirs).
    # "pid command" (the command cut at 160 characters): a failure says what was left.
    procs = [line[:160] for line in out.splitlines()
             if re.search(r"nfvl-[0-9a-f]{6}|/nfvlab/lab-[0-9a-f]{6}", line) and "pytest" not in line]
    other = sorted(str(p) for pat in ("/sys/fs/cgroup/cpuset/nfvl-*", "/run/nfvlab/lab-*",
                                      "/var/run/dpdk/nfvl-*", "/dev/hugepages/nfvl-*")
                   for p in Path("/").glob(pat.lstrip("/")))
    return {"namespaces": ns, "state_files": files, "generator_pids": procs, "other": other}


NO_RESIDUE = {"namespaces": [], "state_files": [], "generator_pids": [], "other": []}


#: ``./run test-experiment X`` (``pytest --experiment X``): the tests of experiment X's own code
#: (its scenario, lab models, analysis), the experiment runner's, and the notebook, report and
#: pipeline tests whose id names X.
EXPERIMENT_TESTS = {
    "a": {"test_analysis", "test_lab", "test_lab_ebpf", "test_lab_userspace", "test_labs_kubernetes"},
    "b": {"test_analysis_bcd", "test_scenario_resources", "test_lab_resources"},
    "c": {"test_analysis_bcd", "test_servicechain", "test_labs_kubernetes"},
    "d": {"test_analysis_bcd", "test_scenario_density"},
    "e": {"test_analysis_cni", "test_experiment_cni", "test_labs_cni", "test_scenario_cni", "test_tcp"},
    "f": {"test_analysis_f", "test_search_mrr"},
}
RUNNER_TESTS = {"test_experiment", "test_experiments", "test_stage", "test_claims", "test_claimsets"}


def pytest_addoption(parser):
    parser.addoption("--experiment", choices=sorted(EXPERIMENT_TESTS), type=str.lower,
                     help="run only experiment X's tests (./run test-experiment X)")


def _experiment_selects(item, x: str) -> bool:
    module = item.module.__name__.rpartition(".")[2] if getattr(item, "module", None) else ""
    if module in EXPERIMENT_TESTS[x] | RUNNER_TESTS:
        return True
    return re.search(rf"experiment[_@]{x}\b|\[{x}\]|[-\[]{x}[-\]]", item.nodeid) is not None


def pytest_collection_modifyitems(config, items):
    # A test that starts from a clean host uses the lab: `-m "not lab"` leaves it out.
    for item in items:
        if "clean_host" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.lab)
    x = config.getoption("--experiment")
    if x:
        kept = [item for item in items if _experiment_selects(item, x)]
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept


def skip_without_xdp_live() -> None:
    """Skip a test of the embedded generator's XDP TX path where the kernel refuses its live-frames
    mode: a limit of the platform (Linux 6.18.44-fc-v1300 answers EPERM), not a fault of nfvlab's;
    ``tx: auto`` then takes the socket path (tests/test_gen_binary_xdp.py checks that it says why)."""
    from nfvlab.traffic.embedded.generator import xdp_live_refusal

    why = xdp_live_refusal()
    if why:
        pytest.skip(why)


@pytest.fixture
def clean_host():
    """Start from, and insist on ending with, a host without lab residue.

    Checks run under the host lock, so a lab of another process (which holds
    the lock while it lives) is never mistaken for residue.
    """
    if os.geteuid() != 0:
        pytest.skip("lab tests need root")
    with state.HostLock("test clean-up"):
        state.clean(include_persistent=True)
        assert lab_residue() == NO_RESIDUE
        before = {"bpf_programs": _bpf_programs(), "hugepages_2m": _hugepages()}
    yield
    with state.HostLock("test clean-up"):
        residue = lab_residue()
        # The kernel frees a removed namespace's links (and their BPF programs) ~50 ms later, in a
        # work queue a loaded host may hold up for seconds (a give-up guard, not a bound); an
        # earlier lab's programs may still be going when the test starts: only a count that rose
        # is this test's.
        deadline = time.monotonic() + 30
        while True:
            after = {"bpf_programs": _bpf_programs(), "hugepages_2m": _hugepages()}
            if all(after[k] <= before[k] for k in after) or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        state.clean(include_persistent=True)
    assert residue == NO_RESIDUE, f"the test left lab residue: {residue}"
    assert all(after[k] <= before[k] for k in after), \
        f"the test left BPF programs or hugepages behind: {before} -> {after}"


#: git may refuse a checkout owned by another user (tests run as root or not): trust it.
# Experiment runs probe the host's CPU speed for 6 s first (nfvlab.system.host.speed_variation);
# tests that run experiments skip it unless they ask (tests/test_system_host.py checks the probe).
os.environ.setdefault("NFVLAB_HOST_SPEED_S", "0")
# A lab of another process (a developer's run) is waited for, then reported with its holder's
# identity: that test fails, the next ones go on. Tests of the lock itself set their own value.
os.environ.setdefault("NFVLAB_LOCK_WAIT_S", "120")

GIT_ENV = {**os.environ, "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "safe.directory", "GIT_CONFIG_VALUE_0": "*"}


def copy_checkout(dest: Path, skip: tuple[str, ...] = ("data/raw/", "data/executed/")) -> Path:
    """Copy the repository's tracked and new (not ignored) files to ``dest``; returns ``dest``."""
    import shutil

    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                           capture_output=True, text=True, check=True, env=GIT_ENV).stdout
    for rel in filter(None, files.split("\0")):
        src = REPO / rel
        if src.is_file() and not rel.startswith(skip):
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def nfvlab_cli(*args, timeout=120, check=False):
    """Run the real CLI in a subprocess (as a user would)."""
    cmd = [str(REPO / ".venv/bin/nfvlab"), *args]
    if not Path(cmd[0]).exists():
        cmd = ["python", "-m", "nfvlab", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=check, cwd=REPO)


def interface_counters(ns_name: str, ifnames: list[str]) -> dict[str, dict[str, int]]:
    """The kernel's 64-bit counters (rx/tx packets, bytes, dropped) of interfaces in ``ns_name``:
    an account of the traffic independent of the generator's own, for known-answer tests."""
    out = {}
    for name in ifnames:
        link = json.loads(subprocess.run(["ip", "-n", ns_name, "-s", "-j", "link", "show", "dev", name],
                                         capture_output=True, text=True, check=True).stdout)[0]
        rx, tx = link["stats64"]["rx"], link["stats64"]["tx"]
        out[name] = {"rx_packets": rx["packets"], "tx_packets": tx["packets"], "rx_bytes": rx["bytes"],
                     "tx_bytes": tx["bytes"], "rx_dropped": rx["dropped"], "tx_dropped": tx["dropped"]}
    return out


def require_cluster():
    """pytest.skip with the reason unless a local cluster can start here; returns its binaries' directory."""
    from nfvlab.labs.kubernetes import local_cluster

    reason = local_cluster.unavailable_reason()
    if reason:
        pytest.skip(reason)
    return local_cluster.binaries_dir()


def host_spoiled(result, *, lossless: bool = False) -> Optional[str]:
    """Why the host, not the code under test, spoiled ``result`` (a :class:`nfvlab.trial.TrialResult`),
    from the trial's own record; None for a trial the host let run whole.

    Spoiled: invalid (a stall beyond the generator's slip budget, a DUT still draining an earlier
    trial: its ``invalid_reason``), or sent short (the deadline dropped a tail the host held up).
    ``lossless``: frames lost in the data path count too, for a DUT whose poller shares the
    generator's CPU (a stall of it longer than its rings hold drops frames: the host's doing)."""
    if not result.valid:
        return f"invalid: {result.invalid_reason}"
    short = [f"{d.tx_port} sent {d.sent_packets} of {d.intended_packets}" for d in result.directions
             if d.sent_packets != d.intended_packets]
    if short:
        return "sent short: " + "; ".join(short)
    return lost_on_a_shared_cpu(result) if lossless else None


#: Every retried measurement of this session: (test id, what, tries, reasons); printed at the end.
RETRIED: list[tuple[str, str, int, list[str]]] = []
_CURRENT_TEST = {"id": "?"}


#: How long a measurement keeps being repeated while the host spoils it, at least: this kind of VM
#: has slow spells of minutes (CI, 2026-12-01: every try of five tests in a row spoiled, ~3 min).
SPELL_S = 180.0
#: The pause between repeats once ``tries`` are spent and the spell is still on.
SPELL_PAUSE_S = 5.0
#: Seconds of such waiting the whole session may spend (beyond each measurement's ``tries``): on a
#: host that spoils everything for good the suite fails within CI's time, not hours later.
SPELL_SESSION_S = 900.0
_SPELL_SPENT_S = [0.0]


def until_unspoiled(attempt, spoiled, *, tries: int = 8, what: str = "trial", spell_s: float = SPELL_S):
    """Run ``attempt()`` until ``spoiled(result)`` (a reason string, or None) says the host let it
    run whole: at least ``tries`` times and for at least ``spell_s`` seconds; returns that result.

    The one way a test repeats a measurement: only when the measurement's own record shows the host
    spoiled it (never because an assertion failed), spaced as a search spaces the repeats of an
    invalid trial (:func:`nfvlab.trial.invalid_repeat_pause_s`: right after a lab is built the host's
    deferred work can stall a generator in trial after trial), then every :data:`SPELL_PAUSE_S`
    until ``spell_s`` has passed (while the session has :data:`SPELL_SESSION_S` of such waiting left):
    ``tries`` alone (~25 s) do not outlast a slow spell. Every repeat
    is recorded and printed in the session's summary with its reasons. If every try is spoiled the
    test fails, naming the reasons: code that makes every trial invalid must not pass as host noise."""
    from nfvlab.trial import invalid_repeat_pause_s

    reasons: list[str] = []
    start = time.monotonic()
    n = 0
    while n < tries or (time.monotonic() - start < spell_s and _SPELL_SPENT_S[0] < SPELL_SESSION_S):
        began = time.monotonic()
        if n:
            time.sleep(invalid_repeat_pause_s(n) if n < tries else SPELL_PAUSE_S)
        result = attempt()
        if n >= tries:
            _SPELL_SPENT_S[0] += time.monotonic() - began
        n += 1
        reason = spoiled(result)
        if reason is None:
            if reasons:
                RETRIED.append((_CURRENT_TEST["id"], what, n, reasons))
            return result
        reasons.append(reason)
    RETRIED.append((_CURRENT_TEST["id"], what, n, reasons))
    shown = reasons if len(reasons) <= 10 else [*reasons[:5], f"... {len(reasons) - 10} more ...", *reasons[-5:]]
    pytest.fail(f"{what}: the host spoiled all {n} tries in {time.monotonic() - start:.0f} s: " + " | ".join(shown),
                pytrace=False)


def failed_searches(records) -> Optional[str]:
    """Why a run's searches failed, from its ``search-failed`` notes (every repeat of a trial invalid,
    or even the minimum rate lost frames: a DUT starved of its shared CPU in a slow spell), or None.
    A run whose every try fails so still fails its test (:func:`until_unspoiled`)."""
    from nfvlab.records import read_records

    texts = [r["text"] for r in read_records(records)
             if r["type"] == "note" and (r.get("labels") or {}).get("kind") == "search-failed"]
    return "; ".join(texts) or None


def barely_sent(result) -> Optional[str]:
    """Why ``result`` (a :class:`nfvlab.trial.TrialResult`) says too little of the DUT: the host held
    the generator up until it sent under half its frames in some direction; else None. Its counts
    are exact all the same (:func:`check_exact`)."""
    short = [f"{d.tx_port} sent {d.sent_packets} of {d.intended_packets}" for d in result.directions
             if 2 * d.sent_packets < d.intended_packets]
    return "sent under half: " + "; ".join(short) if short else None


def lost_on_a_shared_cpu(result) -> Optional[str]:
    """Frames the data path lost of those sent (None: none), for a DUT whose busy-polling forwarder
    shares the generator's CPU: a stall of it longer than its rings hold drops frames, the host's doing."""
    lost = [f"{d.tx_port} lost {d.sent_packets - d.received_packets} of {d.sent_packets}"
            for d in result.directions if d.received_packets < d.sent_packets]
    return "lost on a shared CPU: " + "; ".join(lost) if lost else None


def unsent(result) -> int:
    """Frames the generator left unsent in ``result``, over its directions."""
    return sum(d.intended_packets - d.sent_packets for d in result.directions)


def check_exact(d, intended: Optional[int] = None) -> None:
    """A direction through a DUT that drops nothing: every frame sent is received once, probes
    included, and the loss is exactly the tail the generator left unsent (none on a trial that kept
    its schedule). ``intended``: the frames the trial asked for, when the test knows them."""
    assert d.received_packets == d.sent_packets <= d.intended_packets, d
    assert intended is None or d.intended_packets == intended, d
    assert d.lost_packets == d.intended_packets - d.sent_packets and d.duplicate_packets == 0, d
    assert d.latency.probes_received == d.latency.probes_sent, d


def check_exact_trial(result, intended: int) -> None:
    """Every direction of ``result`` through a DUT that drops nothing (:func:`check_exact`, each having
    asked for ``intended`` frames); the trial's loss ratio is exactly the tail left unsent."""
    for d in result.directions:
        check_exact(d, intended=intended)
    assert result.loss_ratio == pytest.approx(unsent(result) / (intended * len(result.directions)), abs=1e-12)


def clean_trial(gen, rate_pps, duration_s, frame_size, *, tries=8, before_each=None, lossless=False, **kw):
    """A trial whose counts say what the DUT did, whatever its schedule did: repeated (through
    :func:`until_unspoiled`) only while the host held the generator up until it sent under half its
    frames (:func:`barely_sent`), or, ``lossless``, while a forwarder sharing the generator's CPU lost
    frames (:func:`lost_on_a_shared_cpu`). A trial whose own stall made it invalid, or that left a tail
    unsent, is not repeated: every frame that left is counted exactly, so tests assert against what was
    sent (:func:`check_exact`), never the VM's scheduling luck. ``before_each()`` runs before every try
    (e.g. to read counters the last one is judged by)."""
    from nfvlab.trial import run_trial

    def attempt():
        if before_each is not None:
            before_each()
        return run_trial(gen, rate_pps, duration_s, frame_size, **kw)

    def spoiled(r) -> Optional[str]:
        return barely_sent(r) or (lost_on_a_shared_cpu(r) if lossless else None)

    return until_unspoiled(attempt, spoiled, tries=tries, what=f"trial at {rate_pps} pps, {frame_size} B")


# ------------------------------------------------------------------ isolation by construction
def stop_process_tree(proc: "subprocess.Popen", grace_s: float = 10.0) -> None:
    """End ``proc`` and everything it started: SIGTERM to its process group (its own session, as
    :func:`spawn` starts it) or to the tree, SIGKILL after ``grace_s``, then reap it and close its
    pipes. A no-op for a process that has exited."""
    import psutil

    try:
        tree = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        tree = []
    for sig in (signal.SIGTERM, signal.SIGKILL):
        alive = [p for p in tree if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        if not alive and proc.poll() is not None:
            break
        try:
            if os.getpgid(proc.pid) == proc.pid:
                os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        for p in alive:
            try:
                p.send_signal(sig)
            except psutil.NoSuchProcess:
                pass
        try:
            proc.wait(grace_s if sig == signal.SIGTERM else 5)
        except subprocess.TimeoutExpired:
            continue
        psutil.wait_procs(alive, timeout=grace_s if sig == signal.SIGTERM else 5)
        if all(not p.is_running() or p.status() == psutil.STATUS_ZOMBIE for p in alive):
            break
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


@pytest.fixture
def spawn():
    """``spawn(cmd, **popen_kwargs)``: a :class:`subprocess.Popen` in a session of its own that this
    fixture ends (with everything it started) when the test ends, whatever the test asserted."""
    started: list[subprocess.Popen] = []

    def start(cmd, **kw):
        kw.setdefault("start_new_session", True)
        proc = subprocess.Popen(cmd, **kw)
        started.append(proc)
        return proc

    yield start
    for proc in reversed(started):
        stop_process_tree(proc)


def lock_holder() -> Optional[tuple[int, str]]:
    """``(pid, what the lock file says)`` of the process holding the host lock, or None."""
    import fcntl

    from nfvlab.system.hostlock import run_dir

    path = run_dir() / "lock"
    if not path.exists():
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            fcntl.flock(fd, fcntl.LOCK_UN)
            return None
        except OSError:
            text = os.read(fd, 300).decode(errors="replace").strip()
    finally:
        os.close(fd)
    m = re.match(r"pid (\d+)", text)
    return (int(m.group(1)) if m else -1), text


def _descendants() -> set[tuple[int, float]]:
    import psutil

    out = set()
    for p in psutil.Process().children(recursive=True):
        try:
            out.add((p.pid, p.create_time()))
        except psutil.NoSuchProcess:
            pass
    return out


def _in_process_locks():
    from nfvlab.system.hostlock import HostLock

    return {id(lock): lock for lock in HostLock.held_here()}


#: The local cluster's own implementation of the same lock file (flock on run_dir()/lock, re-entrant
#: in a process): HostLock.held_here() does not list it, so a LocalCluster or kc.host_lock() left open
#: here made every later lab test wait, then fail with LabBusy naming "nothing it knows of".
_CLUSTER_STATE = "nfvlab.labs.kubernetes.local_cluster.state"


def _cluster_lock_held() -> bool:
    mod = sys.modules.get(_CLUSTER_STATE)  # not imported: nothing can hold it through it
    return mod is not None and mod._lock_state["fd"] is not None


def _release_cluster_lock() -> None:
    """Close the suspended ``host_lock`` blocks that hold it (their own ``finally`` releases it)."""
    import gc
    import inspect

    mod = sys.modules[_CLUSTER_STATE]
    code = mod.host_lock.__wrapped__.__code__
    for obj in gc.get_objects():
        if inspect.isgenerator(obj) and obj.gi_code is code and obj.gi_suspended:
            obj.close()
    with mod._lock_mutex:  # what closing left (no block found): give the fd up directly
        fd, mod._lock_state["fd"], mod._lock_state["depth"] = mod._lock_state["fd"], None, 0
    if fd is not None:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _untracked_own_lock(holder) -> Optional[str]:
    """The lock file's text when :func:`lock_holder` (``holder``) is this process, holding it through
    neither HostLock nor the local cluster's lock (a third way of taking it), else None."""
    if holder is None or holder[0] != os.getpid() or _in_process_locks() or _cluster_lock_held():
        return None
    return holder[1]


def _lock_leaks(locks_before: set, cluster_before: bool, untracked_before: Optional[str], holder) -> list[str]:
    """Host locks this process took since the ``*_before`` snapshot and still holds (``holder``: what
    :func:`lock_holder` said just now): each released now (one leak fails one test, never every later
    one with LabBusy), each named."""
    leaks = []
    for key, lock in _in_process_locks().items():
        if key not in locks_before:
            leaks.append(f"this process holds the host lock for {lock.purpose!r} (a lab left open)")
            lock.__exit__(None, None, None)
    if _cluster_lock_held() and not cluster_before:
        leaks.append("this process holds the local cluster's host lock (a LocalCluster or "
                     "local_cluster.host_lock() left open)")
        _release_cluster_lock()
    untracked = _untracked_own_lock(lock_holder()) if holder and holder[0] == os.getpid() else None
    if untracked is not None and untracked_before is None:
        leaks.append(f"this process holds the host lock through an untracked file descriptor ({untracked!r})")
        import fcntl

        from nfvlab.system.hostlock import run_dir

        lock = str((run_dir() / "lock").resolve())
        for fd in map(int, os.listdir("/proc/self/fd")):
            try:
                if os.readlink(f"/proc/self/fd/{fd}") == lock:
                    fcntl.flock(fd, fcntl.LOCK_UN)
            except OSError:
                continue
    return leaks


@pytest.fixture(scope="module", autouse=True)
def _module_isolated():
    """What a module-scoped fixture (e.g. a cluster) left holding the host lock once all of the
    module's fixtures have ended fails the module's last test, and is released: the next modules'
    lab tests are not affected (``_isolated`` cannot see it: it was held before each test began)."""
    locks_before, cluster_before, untracked_before = set(_in_process_locks()), _cluster_lock_held(), \
        _untracked_own_lock(lock_holder())
    yield
    leaks = _lock_leaks(locks_before, cluster_before, untracked_before, lock_holder())
    if leaks:
        pytest.fail("a module's fixtures leaked (released now; later modules are not affected): "
                    + " | ".join(leaks), pytrace=False)


@pytest.fixture(autouse=True)
def _isolated(request):
    """One test's leak fails that test alone. After the test (and its own fixtures) this ends, and
    fails the test for: a process it started that holds the host lock (with the holder's identity),
    a host lock it took in this process and left held (an unclosed lab, through HostLock or the local
    cluster's own lock, or any other descriptor of the lock file), and a process it started
    directly that still runs and belongs to no lab still open. What a wider-scoped fixture started
    before the test is not the test's."""
    import psutil

    _CURRENT_TEST["id"] = request.node.nodeid
    holder_before = lock_holder()
    locks_before, cluster_before, untracked_before = set(_in_process_locks()), _cluster_lock_held(), \
        _untracked_own_lock(holder_before)
    children_before = _descendants()
    yield
    leaks = []
    new = {pid for pid, t in _descendants() - children_before}
    holder = lock_holder()
    if holder is not None and holder != holder_before and holder[0] in new:
        try:
            cmd = " ".join(psutil.Process(holder[0]).cmdline())[:200]
        except psutil.NoSuchProcess:
            cmd = "?"
        leaks.append(f"a child holds the host lock: {holder[1]} ({cmd})")
        _kill_pids([holder[0]])
    leaks += _lock_leaks(locks_before, cluster_before, untracked_before, holder)
    # Direct children of this test still running (nothing a lab still open here owns).
    open_labs = {p.stem for p in state.labs_dir().glob("*.json")} if state.labs_dir().exists() else set()
    stray = []
    for p in psutil.Process().children():
        if p.pid not in new:
            continue
        try:
            if p.status() == psutil.STATUS_ZOMBIE:
                continue
            lab = p.environ().get(state.LAB_ENV)
            if lab and any(lab in name for name in open_labs):
                continue
            stray.append(f"pid {p.pid} ({' '.join(p.cmdline())[:160]})")
        except psutil.NoSuchProcess:
            continue
    if stray:
        leaks.append("child processes still running: " + "; ".join(stray))
        _kill_pids([int(s.split()[1]) for s in stray])
    if leaks:
        # What a killed lab left behind, the next lab test's clean_host removes before it starts.
        pytest.fail("the test leaked (ended and cleaned up now; later tests are not affected): "
                    + " | ".join(leaks), pytrace=False)


def _kill_pids(pids) -> None:
    import psutil

    procs = []
    for pid in pids:
        try:
            top = psutil.Process(pid)
            procs += [top, *top.children(recursive=True)]
        except psutil.NoSuchProcess:
            pass
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for p in procs:
            try:
                p.send_signal(sig)
            except psutil.NoSuchProcess:
                pass
        _, procs = psutil.wait_procs(procs, timeout=10 if sig == signal.SIGTERM else 5)
        if not procs:
            break


def pytest_terminal_summary(terminalreporter):
    if RETRIED:
        terminalreporter.section("measurements the host spoiled and that were repeated")
        for test_id, what, tries, reasons in RETRIED:
            terminalreporter.write_line(f"{test_id}: {what}: {tries} tries; spoiled: {' | '.join(reasons)}")
