"""The embedded lab's realization of one scenario: namespaces, links, processes.

    with Lab(Scenario("linux-bridge")) as lab:
        streams = lab.streams      # what the generator sends, per direction

Teardown runs on success, on exceptions, on Ctrl-C and on SIGTERM. Anything a
kill -9 leaves behind is listed in the state record and removed by
``nfvlab lab clean`` (:func:`nfvlab.labs.embedded.state.clean`).
"""
from __future__ import annotations

import functools
import os
import secrets
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable, Optional, Sequence

from nfvlab.labs.base import LabError, Terminated
from nfvlab.labs.embedded import host, realize, state
from nfvlab.labs.embedded.realize import LAB_MTU
from nfvlab.scenario import CorePlan, NotRealizable, Resources, Scenario, Stream
from nfvlab.scenario import catalogue
from nfvlab.system import processes, signals

__all__ = ["LAB_MTU", "Lab", "LabError", "Terminated", "down", "preflight", "problems"]


def resource_problem(model: catalogue.Model, resources: Resources) -> Optional[str]:
    """Why this host cannot give ``model`` the ``resources`` (``None``: it can); creates nothing."""
    try:
        host.core_plan(model, resources)
    except NotRealizable as err:
        return str(err)
    if resources.hugepages and not (model.vswitch or model.busy_pods):
        return "hugepages: this model runs no DPDK process to use them"
    if resources.noisy_load_pct is not None:
        missing = realize.missing_tools(("stress-ng",))
        if missing:
            return f"the noisy neighbour needs stress-ng: {missing}"
    return None


ROOT_NEEDED = "the embedded lab needs root (network namespaces): run as root or with sudo"


def problems(scenario: Scenario, features: Optional[dict[str, bool]] = None) -> list[str]:
    """Why this host cannot realize ``scenario`` in the embedded lab (empty: it can); creates nothing."""
    if os.geteuid() != 0:
        return [ROOT_NEEDED]
    why = realize.model_problem(scenario.model, features)
    if why:
        return [f"model {scenario.model} cannot run in the embedded lab: {why}"]
    if scenario.density is not None and scenario.model != "host-routing":
        return [f"the service density matrix uses host-routing as its switch, not {scenario.model}"]
    if scenario.model in catalogue.SHAPED_PATHS and scenario.known_path is None:
        return [f"{scenario.model} needs a known path (capacity and frame size)"]
    problem = resource_problem(scenario.spec, scenario.resources)
    return [f"model {scenario.model} ({scenario.resources}): {problem}"] if problem else []


def lab_mtu(scenario: Scenario, link_mtu: int = LAB_MTU) -> int:
    """IP MTU of ``scenario``'s data path, bytes: its ``mtu_bytes`` if set, else ``link_mtu``;
    at most what the model's ports carry (:func:`realize.settable_mtu` / :func:`realize.max_mtu`)."""
    if scenario.mtu_bytes is not None:
        return min(scenario.mtu_bytes, link_mtu, realize.settable_mtu(scenario.model))
    return min(link_mtu, realize.max_mtu(scenario.model))


def preflight(scenario: Scenario) -> None:
    """:class:`LabError` with the first reason this host cannot realize ``scenario``."""
    reasons = problems(scenario)
    if reasons:
        raise LabError(reasons[0])


def _builder(scenario: Scenario) -> Callable[["Lab"], list[Stream]]:
    from nfvlab.labs.embedded import kernel
    from nfvlab.labs.embedded.servicechain import build_service_matrix

    if scenario.density is not None:
        d = scenario.density
        return functools.partial(build_service_matrix, topology=d.topology, instances=d.instances, nfs=d.nfs)
    if scenario.known_path is not None:
        kp = scenario.known_path
        return lambda lab: kernel.BUILDERS[scenario.model](lab, kp.capacity_pps, kp.frame_size)
    return realize.builders()[scenario.model]


#: How long :meth:`Lab.pause` waits for the lab's processes to stop, s (give-up guard: a stop takes ~1 ms).
PAUSE_WAIT_S = 1.0
#: psutil states of a process that runs no more.
STOPPED_STATES = ("stopped", "tracing-stop", "zombie", "dead")


class Lab:
    """One embedded lab: namespaces, links and processes, all recorded in its state."""

    def __init__(self, scenario: Scenario, *, mtu: int = LAB_MTU, persistent: bool = False,
                 builder: Optional[Callable[["Lab"], list[Stream]]] = None) -> None:
        """Checks ``scenario`` (LabError naming the first problem) before anything exists.

        ``builder`` replaces the scenario's own (tests build variants and broken labs with it).
        """
        if isinstance(scenario, str):
            try:
                scenario = Scenario(scenario)
            except KeyError as err:
                raise LabError(str(err.args[0])) from None
        preflight(scenario)
        self.scenario = scenario
        self.core_plan: CorePlan = host.core_plan(scenario.spec, scenario.resources)
        """Where busy threads run (docs/core-plan.md)."""
        self.model = scenario.model
        self.resources = scenario.resources
        self.mtu = lab_mtu(scenario, mtu)
        """MTU of the links and ports this lab creates, bytes."""
        self.persistent = persistent
        self.label = scenario.label
        self._builder = builder or _builder(scenario)
        self.lab_id = secrets.token_hex(3)
        self.streams: list[Stream] = []
        self.state: Optional[state.LabState] = None
        self._lock: Optional[state.HostLock] = None
        self._signals = None  # the signals.guard held for the lab's lifetime
        self.setup_s: Optional[float] = None
        self.teardown_s: Optional[float] = None

    # -- naming -----------------------------------------------------------
    def ns(self, role: str) -> str:
        return f"{state.PREFIX}{self.lab_id}-{role}"

    def add_namespace(self, role: str) -> str:
        """Record, then create, namespace ``role`` of this lab.

        A helper process creates it (pyroute2): a signal must not end this
        process's wait for it, or the namespace appears after teardown looked.
        """
        name = self.ns(role)
        assert self.state is not None
        self.state.namespaces.append(name)
        self.state.save()
        from nfvlab.system import netns as nl

        with signals.deferred():
            nl.create_namespace(name)
        signals.checkpoint()
        return name

    def track_process(self, pid: int, cmd: str) -> state.ProcessRecord:
        """Record a process this lab started (so ``lab clean`` can stop it)."""
        assert self.state is not None
        rec = state.ProcessRecord(pid=pid, start_time=state.process_start_time(pid) or 0, cmd=cmd)
        self.state.processes.append(rec)
        self.state.save()
        return rec

    def pause(self) -> None:
        """Stop (SIGSTOP) every live process of the lab: an idle arm of a paired comparison whose
        poll-mode threads would otherwise spin on the CPUs the measured arm needs. Its teardown
        continues them before ending them (:func:`state.kill_process`)."""
        self._signal_all(signal.SIGSTOP)
        # A stop is delivered asynchronously: wait until no process of the lab runs (a give-up guard).
        deadline = time.monotonic() + PAUSE_WAIT_S
        while time.monotonic() < deadline and any(
                processes.identity(r.pid) and processes.identity(r.pid)[0] not in STOPPED_STATES
                for r in self.state.processes if not processes.exited(r.pid, r.start_time)):
            time.sleep(0.002)

    def resume(self) -> None:
        """Continue (SIGCONT) what :meth:`pause` stopped."""
        self._signal_all(signal.SIGCONT)

    def _signal_all(self, sig: int) -> None:
        for rec in list(self.state.processes if self.state else ()):
            if not processes.exited(rec.pid, rec.start_time):
                try:
                    state.signal_process(rec, sig)
                except ProcessLookupError:
                    pass  # ended between the check and the signal

    # -- resources other than namespaces (each recorded before it exists) --
    @property
    def run_dir(self) -> Path:
        """This lab's private directory (sockets, databases, logs)."""
        return state.run_dir() / f"lab-{self.lab_id}"

    def add_path(self, pattern: str) -> str:
        """Record a file/dir (glob) that teardown removes; returns ``pattern``."""
        assert self.state is not None
        if pattern not in self.state.paths:
            self.state.paths.append(pattern)
            self.state.save()
        return pattern

    def make_run_dir(self) -> Path:
        self.add_path(str(self.run_dir))
        self.run_dir.mkdir(parents=True, exist_ok=True)
        return self.run_dir

    def add_mount(self, fstype: str, where: Path, options: str = "") -> Path:
        """Mount ``fstype`` at ``where`` (inside the run dir); unmounted at teardown."""
        assert self.state is not None
        self.state.mounts.append(str(where))
        self.state.save()
        where.mkdir(parents=True, exist_ok=True)
        cmd = ["mount", "-t", fstype, fstype, str(where)] + (["-o", options] if options else [])
        subprocess.run(cmd, check=True, capture_output=True)
        return where

    def cpuset(self, name: str, cpus: Sequence[int]) -> Optional[Path]:
        """A cpuset cgroup ``nfvl-<id>-<name>`` limited to ``cpus`` (None when unpinned)."""
        if not cpus:
            return None
        assert self.state is not None
        path = state.CPUSET_ROOT / f"{state.PREFIX}{self.lab_id}-{name}"
        self.state.cgroups.append(str(path))
        self.state.save()
        path.mkdir(exist_ok=True)
        (path / "cpuset.mems").write_text((state.CPUSET_ROOT / "cpuset.mems").read_text().strip())
        (path / "cpuset.cpus").write_text(",".join(map(str, sorted(cpus))))
        return path

    def reserve_hugepages(self, pages: int) -> None:
        """Make sure ``pages`` free 2 MB hugepages exist; what is added is given back."""
        assert self.state is not None
        missing = pages - host.free_hugepages_2m()
        if missing <= 0:
            return
        before = int(state.HUGEPAGES_2M.read_text())
        self.state.hugepages_2m += missing
        self.state.save()
        state.HUGEPAGES_2M.write_text(str(before + missing))
        got = int(state.HUGEPAGES_2M.read_text()) - before
        if got < missing:
            self.state.hugepages_2m -= missing - got
            self.state.save()
            raise LabError(f"could reserve only {got} of {missing} more 2 MB hugepages "
                           "(memory fragmented or too small): free memory or reboot")

    def spawn(self, name: str, argv: Sequence[str], *, ns: Optional[str] = None,
              cpus: Sequence[int] = (), env: Optional[dict] = None) -> subprocess.Popen:
        """Start ``argv`` (inside namespace ``ns``) as a recorded process group.

        ``cpus``: a cpuset cgroup ``name`` confines it and its threads (empty:
        not pinned). Output goes to ``<run dir>/<name>.log``.

        ``lab clean`` can always find it: SIGINT/SIGTERM are deferred from
        before the fork until its record is saved, and it (with anything it
        starts) carries ``NFVLAB_LAB_ID=<lab id>`` in its environment, which
        :func:`state.clean` looks for in the process table (kill -9 between
        fork and record). Unless the lab is persistent it also gets
        ``PR_SET_PDEATHSIG``: SIGTERM when nfvlab dies.
        """
        self.make_run_dir()
        cg = self.cpuset(name, cpus)
        full = (["ip", "netns", "exec", ns] if ns else []) + list(argv)
        # The death signal follows the forking thread: only the main thread outlives the lab.
        pdeath = not self.persistent and threading.current_thread() is threading.main_thread()
        parent = os.getpid()

        def in_child() -> None:  # after fork, before exec
            if pdeath:
                signals.die_with_parent()
                if os.getppid() != parent:  # the parent died before prctl took effect
                    os._exit(1)
            if cg is not None:  # threads inherit the cgroup
                (cg / "tasks").write_text(str(os.getpid()))

        assert self.state is not None
        with signals.deferred():
            log = open(self.run_dir / f"{name}.log", "ab")
            try:
                proc = subprocess.Popen(full, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                        start_new_session=True, preexec_fn=in_child,
                                        env={**os.environ, **(env or {}), state.LAB_ENV: self.lab_id})
            finally:
                log.close()
            rec = state.ProcessRecord(pid=proc.pid, start_time=state.process_start_time(proc.pid) or 0,
                                      cmd=" ".join(full)[:300], group=True)
            self.state.processes.append(rec)
            self.state.save()
        signals.checkpoint()  # a signal that came meanwhile: now teardown can stop the process
        return proc

    def log_tail(self, name: str, lines: int = 5) -> str:
        """Last lines of a spawned process's log (for error messages)."""
        try:
            text = (self.run_dir / f"{name}.log").read_text(errors="replace")
        except OSError:
            return ""
        return " | ".join(text.strip().splitlines()[-lines:])

    def wait_until(self, check: Callable[[], bool], what: str, *, timeout_s: float = 10.0,
                   proc: Optional[subprocess.Popen] = None, log: Optional[str] = None) -> None:
        """Poll ``check`` until true; LabError naming ``what`` on timeout or process death."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            signals.checkpoint()
            if check():
                return
            if proc is not None and proc.poll() is not None:
                raise LabError(f"{what}: process exited with {proc.returncode}: {self.log_tail(log or '')}")
            time.sleep(0.05)
        raise LabError(f"{what}: not ready after {timeout_s:g} s: {self.log_tail(log or '')}")

    def untrack_process(self, rec: state.ProcessRecord) -> None:
        if self.state is not None and rec in self.state.processes:
            self.state.processes.remove(rec)
            self.state.save()

    # -- lifecycle --------------------------------------------------------
    def __enter__(self) -> "Lab":
        self._lock = state.HostLock(f"lab {self.lab_id} ({self.label})")
        self._lock.__enter__()
        try:
            for line in state.clean():  # leftovers of killed runs would skew results
                print(f"nfvlab: removed leftover {line}")
            self._signals = signals.guard(sigterm=Terminated)
            self._signals.__enter__()
            t0 = time.monotonic()
            me = os.getpid()
            self.state = state.LabState(
                lab_id=self.lab_id, model=self.model, owner_pid=me,
                owner_start_time=state.process_start_time(me) or 0,
                created_at=time.time(), persistent=self.persistent,
            )
            self.state.save()
            self.streams = self._builder(self)
            if self.resources.noisy_load_pct is not None:
                self._start_noisy_neighbour()
            self.state.status = "up"
            self.state.info = {
                "mtu": self.mtu,
                "resources": self.resources.labels(),
                "core_plan": self.core_plan.describe() if self.core_plan else None,
                "streams": [s.describe() for s in self.streams],
            }
            self.state.save()
            self.setup_s = time.monotonic() - t0
        except BaseException:
            self._teardown()
            raise
        return self

    def _start_noisy_neighbour(self) -> None:
        """A pod running stress-ng: one CPU worker at the configured load."""
        ns = self.add_namespace("noisy")
        cpus = sorted(self.core_plan.noisy) if self.core_plan else []
        proc = self.spawn("noisy", ["stress-ng", "--cpu", "1", "--cpu-load",
                                    str(self.resources.noisy_load_pct), "--timeout", "0", "--quiet"],
                          ns=ns, cpus=cpus)
        time.sleep(0.2)
        if proc.poll() is not None:
            raise LabError(f"noisy neighbour (stress-ng) exited: {self.log_tail('noisy')}")

    def __exit__(self, *exc) -> None:
        if self.persistent and exc[0] is None and signals.pending() is None:
            self._restore_signals()
            self._release_lock()
            return
        # A signal swallowed where Python discards exceptions (Popen.__del__, ...)
        # is raised after teardown, so the run does not end as a success.
        self._teardown(reraise=exc[0] is None)

    def _teardown(self, reraise: bool = False) -> None:
        """Destroy everything recorded, once; signals meanwhile are held until it is done."""
        try:
            with signals.deferred():  # a second Ctrl-C must not abort teardown half-way
                t0 = time.monotonic()
                if self.state is not None:
                    state.destroy(self.state)
                self.teardown_s = time.monotonic() - t0
            if reraise:
                signals.checkpoint()
        finally:
            self._restore_signals()
            self._release_lock()

    def _release_lock(self) -> None:
        if self._lock is not None:
            self._lock.__exit__(None, None, None)
            self._lock = None

    def _restore_signals(self) -> None:
        if self._signals is not None:
            self._signals.__exit__(None, None, None)
            self._signals = None


def down(lab_id: str) -> bool:
    """Tear down the (persistent) lab ``lab_id``; False if there is none."""
    for st in state.all_states():
        if st.lab_id == lab_id:
            with state.HostLock(f"lab down {lab_id}"):
                state.destroy(st)
            return True
    return False
