"""The paired phase of an experiment run: its claims' pairs decided by randomized paired blocks.

After the NDR searches (which stay for the absolute tables), every pair of configurations a claim
compares (:func:`nfvlab.claimsets.compared_pairs`) is measured anew with both labs up at once:

* **Arms.** Each arm's NDR (the median of the run's searches) sets its block's rates: ``metric: ndr``,
  its searches' top at ``paired.span`` x it; ``metric: forwarding``, trials at ``paired.overload`` x
  it; ``metric: common``, both arms' trials at ``paired.common_load`` x the highest NDR either arm's
  searches reached. An arm whose NDR was generator-limited or is at or above 90 % of the generator's calibrated
  ceiling makes the pair not testable: the generator, not the DUT, would be measured.
* **Idle arm paused.** While one arm runs a trial the other lab's processes are stopped
  (:attr:`nfvlab.labs.base.LabSession.pause`), so its poll-mode threads leave the two CPUs to the
  measured arm. A lab that cannot pause runs idle (recorded).
* **Blocks.** ``metric: common`` (the default): four trials, ``ABBA`` or ``BAAB`` at random
  (:func:`nfvlab.paired.schedule`), both arms offered one load (:func:`common_load_pps`), the paired
  log-ratio of their forwarding rates (:func:`nfvlab.paired.block_log_ratio`). ``metric: ndr``: a
  short NDR search per arm, their trials taking turns,
  each search's top rate lowered at random within one goal width (so that MLRsearch's load grid, and
  with it the NDR's rounding, differs from block to block); the block's figure ``log(NDR_a / NDR_b)``.
  ``metric: forwarding``: as ``common``, each arm at ``overload`` x its own NDR. The blocks
  are judged by their trimmed mean (:func:`nfvlab.paired.paired_test`). Blocks are added look by
  look (:class:`nfvlab.paired.BlockPlan`, Pocock-type alpha spending) at the pair's share of the claim's
  alpha (Bonferroni over the pairs of the claims it belongs to) until decided, at ``max_blocks``, when
  it is futile (``give_up_above``, :meth:`nfvlab.paired.BlockPlan.futile`), or when the phase's time
  budget is spent. (The analysis re-judges a claim's pairs by Holm from their recorded
  blocks: :func:`nfvlab.analysis_paired.holm`.)
* **A/A control.** The configuration compared most often against a second lab instance of itself:
  the design's own noise floor, which must not come out as a difference.

Every trial is recorded (``purpose=paired``, ``comparison``, ``arm``, ``block``) and every comparison
ends with one note of kind ``paired`` (the last look's :class:`nfvlab.paired.PairedResult` fields, the
arms' NDRs, every block's log-ratio). The analysis (:func:`nfvlab.analysis_paired.paired_claim`)
decides the claims from them.
"""
from __future__ import annotations

import math
import random
import statistics
import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Callable, Iterable, Optional, Union

from nfvlab import claimsets, measure
from nfvlab.paired import BlockPlan, PairedResult, block_log_ratio, paired_test, schedule
from nfvlab.params import ExperimentParams
from nfvlab.records import RecordWriter
from nfvlab.scenario import Scenario
from nfvlab.trial import GeneratorMeasurer, TrialResult, invalid_repeat_pause_s, run_trial

__all__ = ["Arm", "Comparison", "plan_comparisons", "run_paired", "not_testable", "median_ndr", "control_blocks",
           "common_load_pps",
           "PAIRED_NOTE",
           "GENERATOR_LIMIT"]

#: The kind of the note that ends each comparison (what the analysis reads).
PAIRED_NOTE = "paired"
#: An arm offered at least this share of the generator's calibrated ceiling measures the generator.
GENERATOR_LIMIT = 0.90
#: Blocks of a comparison that may be lost (a trial invalid after every repeat) before it stops.
MAX_LOST_BLOCKS = 3
#: Pause after continuing a paused lab before its trial, seconds (its threads back on the CPUs).
RESUME_SETTLE_S = 0.05


@dataclass(frozen=True)
class Arm:
    """One side of a comparison: a configuration (scenario and frame size) and the rate it is offered.

    Attributes
    ----------
    config : str
        Its configuration key (:func:`nfvlab.claimsets.config_key`), as the claims name it.
    scenario : Scenario
    frame_size : int or str
    ndr_pps : float
        Median NDR of the run's searches, per direction, packets/s.
    generator_limited : bool
        A search of it found the generator's ceiling rather than the DUT's.
    ndr_max_pps : float or None
        Highest NDR of the run's searches, per direction, packets/s (None: ``ndr_pps``).
    """

    config: str
    scenario: Scenario
    frame_size: object
    ndr_pps: float
    generator_limited: bool = False
    ndr_max_pps: Optional[float] = None

    @property
    def top_pps(self) -> float:
        """The highest NDR its searches reached, per direction, packets/s."""
        return self.ndr_max_pps if self.ndr_max_pps is not None else self.ndr_pps


@dataclass(frozen=True)
class Comparison:
    """Arm ``a`` against arm ``b`` (a claim's "a > b", or an A/A control: ``b`` a twin of ``a``).

    Attributes
    ----------
    key : str
        ``"<a> | <b>"``; a control ``"<a> | <a> (twin)"``. The records' ``comparison`` label.
    a, b : Arm
    alpha : float
        Its share of the claims' alpha (Bonferroni over the pairs of each claim it belongs to).
    control : bool
        An A/A control: ``b`` is a second lab instance of ``a``'s configuration.
    claims : tuple of str
        The claims (and conditions) it decides.
    """

    key: str
    a: Arm
    b: Arm
    alpha: float
    control: bool
    claims: tuple


def plan_comparisons(specs: Iterable[claimsets.ClaimSpec], arms: dict[str, Arm], *, alpha: float,
                     control: bool) -> list[Comparison]:
    """The comparisons of a run: the A/A control first (when ``control``), then every pair the claims
    compare whose two configurations were measured (``arms``), those whose NDRs differ most first."""
    pairs = claimsets.compared_pairs(specs, present=set(arms))
    out = []
    if control and pairs:
        counts: dict[str, int] = {}  # a generator-limited arm cannot be compared, not even with itself
        for p in pairs:
            for c in (p.a, p.b):
                if not arms[c].generator_limited:
                    counts[c] = counts.get(c, 0) + 1
        if counts:
            most = max(counts, key=lambda c: (counts[c], -list(counts).index(c)))
            out.append(Comparison(f"{most} | {most} (twin)", arms[most], arms[most], alpha, True, ("A/A control",)))
    comps = [Comparison(f"{p.a} | {p.b}", arms[p.a], arms[p.b], alpha / p.family, False, p.claims) for p in pairs]
    # Within a time budget, the pairs whose NDRs differ most first: they decide in the fewest blocks.
    return out + sorted(comps, key=lambda c: -abs(math.log(c.a.ndr_pps / c.b.ndr_pps)))


def common_load_pps(comp: Comparison, common_load: float, caps: dict) -> float:
    """``metric: common``: the load both arms of ``comp`` are offered, per direction, packets/s:
    ``common_load`` x the highest NDR either arm's searches reached, kept below
    :data:`GENERATOR_LIMIT` x the lower of the generator's calibrated ceilings ``caps`` (arm name ->
    pps or None), where the generator would be measured rather than the DUT."""
    load = common_load * max(comp.a.top_pps, comp.b.top_pps)
    known = [c for c in caps.values() if c]
    return min(load, GENERATOR_LIMIT * min(known)) if known else load


def _forwarding_pps(t: TrialResult) -> float:
    """Frames received per second of trial time, both directions."""
    return t.received_packets / t.duration_s if t.duration_s > 0 else float("nan")


@dataclass
class _Session:
    gen: object
    pause: Optional[Callable[[], None]]
    resume: Optional[Callable[[], None]]


def run_paired(params: ExperimentParams, backend, ceiling: Callable[[object, object], Optional[float]],
               comparisons: list[Comparison], rec: RecordWriter, bar, done: Iterable[str] = ()) -> None:
    """Measure ``comparisons`` (:func:`plan_comparisons`), each ending with a ``paired`` note;
    ``done``: comparison keys an interrupted run already finished (skipped). ``ceiling(gen,
    frame_size)``: the generator's calibrated ceiling per direction (None: not calibrated)."""
    pp = params.paired
    todo = [c for c in comparisons if c.key not in set(done)]
    t_end = time.monotonic() + pp.seconds if pp.seconds else math.inf
    what = {"ndr": f"a short NDR search per arm (rates within x/{pp.span:g} of its NDR), the arms' trials taking "
                   f"turns",
            "forwarding": f"4 trials of {pp.trial_duration_s:g} s (ABBA/BAAB) at {pp.overload:g} x each arm's NDR",
            "common": f"4 trials of {pp.trial_duration_s:g} s (ABBA/BAAB), both arms at {pp.common_load:g} x the "
                      f"highest NDR either reached"}[pp.metric]
    bar.note(f"paired phase: {len(todo)} comparison(s) ({sum(c.control for c in todo)} A/A control); a block is "
             f"{what}; {pp.first_blocks} blocks, then +{pp.step} per look up to {pp.max_blocks}"
             + (f", within {pp.seconds:g} s" if pp.seconds else ""))
    for i, comp in enumerate(todo):
        _compare(params, backend, ceiling, comp, rec, bar, t_end, f"{i + 1}/{len(todo)}")


def not_testable(comp: Comparison, why: str, rec: RecordWriter, bar, limited: Iterable[str] = ()) -> None:
    """Record that ``comp`` could not be measured, and why (its ``paired`` note); ``limited``: the arms
    (``"a"``, ``"b"``) whose NDR is the generator's (the analysis may still read a bound from them)."""
    rec.note(f"paired {comp.key}: not testable: {why}", kind=PAIRED_NOTE, comparison=comp.key, a=comp.a.config,
             b=comp.b.config, control=comp.control, claims=list(comp.claims), verdict="not testable", reason=why,
             generator_limited=sorted(limited))
    bar.note(f"paired {comp.key}: not testable: {why}")


def _compare(params: ExperimentParams, backend, ceiling, comp: Comparison, rec: RecordWriter, bar, t_end: float,
             counter: str) -> None:
    pp = params.paired
    if time.monotonic() >= t_end:
        return not_testable(comp, "the paired phase's time budget (paired.seconds) was spent before it", rec, bar)
    limited = {name: arm.config for name, arm in (("a", comp.a), ("b", comp.b)) if arm.generator_limited}
    if limited:
        return not_testable(comp, f"generator-limited NDR: {'; '.join(dict.fromkeys(limited.values()))}", rec, bar,
                            limited)
    t0 = time.monotonic()
    with ExitStack() as stack:
        sessions = {}
        for name, arm in (("a", comp.a), ("b", comp.b)):
            session, gen = stack.enter_context(measure.bench(backend, params.lab.generator, arm.scenario,
                                                             params.traffic))
            sessions[name] = _Session(gen, session.pause, session.resume)
        caps = {name: ceiling(sessions[name].gen, arm.frame_size) for name, arm in (("a", comp.a), ("b", comp.b))}
        for name, arm in (("a", comp.a), ("b", comp.b)):
            if caps[name] and arm.ndr_pps >= GENERATOR_LIMIT * caps[name]:
                return not_testable(comp, f"{arm.config}: its NDR {arm.ndr_pps:,.0f} pps is at or above "
                                          f"{GENERATOR_LIMIT:.0%} of the generator's ceiling ({caps[name]:,.0f} pps)",
                                    rec, bar, [name])
        paused = all(s.pause is not None for s in sessions.values())
        switch = _Switch(sessions)
        # A lab is paused only once it has carried traffic: stopped straight after its build (vhost-user
        # still settling), a DPDK pod forwarded no more than one ring's worth of frames afterwards.
        for name, arm in (("a", comp.a), ("b", comp.b)):
            switch(name)
            t = run_trial(sessions[name].gen, arm.ndr_pps, 0.5, arm.frame_size,
                          bidirectional=params.traffic.bidirectional, kind="trial", extra={"model": arm.scenario.model})
            bar.trial()
            rec.trial(t, purpose="paired-warmup", comparison=comp.key, arm=name, control=comp.control,
                      **arm.scenario.labels())
        rng = random.Random(f"{pp.seed}:{rec.run_id}:{comp.key}")
        # The control asks one thing (a difference where there is none?): its first two looks answer it.
        plan = BlockPlan(pp.first_blocks, pp.step, control_blocks(pp) if comp.control else pp.max_blocks,
                         alpha=comp.alpha, margin=pp.margin, give_up_above=pp.give_up_above)
        block = _ndr_block if pp.metric == "ndr" else _forwarding_block
        load = common_load_pps(comp, pp.common_load, caps) if pp.metric == "common" else None
        d: list[float] = []
        lost, result, stopped, why_lost = 0, None, "cap", []
        for k, n in enumerate(plan.looks):
            if k > 0 and time.monotonic() >= t_end:
                stopped = "budget"
                break
            while len(d) < n and lost < MAX_LOST_BLOCKS:
                got = block(params, comp, switch, sessions, caps, rng, len(d) + lost, rec, bar)
                if isinstance(got, str):
                    lost += 1
                    why_lost.append(got)
                else:
                    d.append(got)
            if len(d) < n:
                stopped = "lost"
                break
            result = paired_test(d, level=plan.alpha_at(k), margin=pp.margin, power=plan.power)
            bar.note(f"{counter} paired {comp.key}: look {k + 1}, {len(d)} blocks: ratio {result.ratio:.3f} "
                     f"[{result.ci_low:.3f}, {result.ci_high:.3f}] {result.verdict}")
            if result.verdict != "undecided":
                stopped = "decided"
                break
            if plan.futile(k, result):
                stopped = "futile"
                break
    if result is None:
        return not_testable(comp, f"{lost} blocks lost: {'; '.join(dict.fromkeys(why_lost))}", rec, bar)
    _record(comp, result, d, pp.metric, stopped, paused, lost, time.monotonic() - t0, rec, bar, counter, load)


class _Switch:
    """Makes one arm the running one: the other lab paused, this one continued (labs that can pause)."""

    def __init__(self, sessions: dict):
        self.sessions, self.current = sessions, None

    def __call__(self, name: str) -> None:
        if name == self.current:
            return
        for other, s in self.sessions.items():
            if other != name and s.pause is not None:
                s.pause()
        if self.sessions[name].resume is not None:
            self.sessions[name].resume()
            time.sleep(RESUME_SETTLE_S)
        self.current = name


class _Aborted(Exception):
    """The other arm's search failed or the run is being stopped: this arm's search ends."""


class _Turns:
    """Two searches' trials taking turns (a, b, a, b, ...; an arm whose search ended leaves the other alone)."""

    def __init__(self, first: str, switch: _Switch):
        self._cv = threading.Condition()
        self._turn, self._active, self._switch, self._abort = first, {"a", "b"}, switch, False

    def take(self, name: str) -> None:
        with self._cv:
            self._cv.wait_for(lambda: self._abort or self._turn == name or self._active == {name})
            if self._abort:
                raise _Aborted()
        self._switch(name)

    def give(self, name: str) -> None:
        with self._cv:
            other = "b" if name == "a" else "a"
            if other in self._active:
                self._turn = other
            self._cv.notify_all()

    def leave(self, name: str) -> None:
        with self._cv:
            self._active.discard(name)
            self._turn = next(iter(self._active), name)
            self._cv.notify_all()

    def abort(self) -> None:
        with self._cv:
            self._abort = True
            self._cv.notify_all()


class _TurnMeasurer(GeneratorMeasurer):
    """An arm's measurer whose every trial waits for the arm's turn and is recorded in it."""

    def __init__(self, turns: _Turns, name: str, record: Callable[[TrialResult], None], *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.turns, self.name, self.record = turns, name, record

    def __call__(self, rate_pps: float, duration_s: float) -> TrialResult:
        self.turns.take(self.name)
        try:
            t = super().__call__(rate_pps, duration_s)
            self.record(t)
            return t
        finally:
            self.turns.give(self.name)


def _ndr_block(params: ExperimentParams, comp: Comparison, switch: _Switch, sessions: dict, caps: dict,
               rng: random.Random, index: int, rec: RecordWriter, bar) -> Union[float, str]:
    """One block of the ``ndr`` metric: a short NDR search per arm, their trials taking turns (the first
    arm drawn at random); ``log(NDR_a / NDR_b)``, or why the block is lost."""
    pp, sp = params.paired, params.search
    turns = _Turns(rng.choice("ab"), switch)
    found: dict[str, object] = {}
    # MLRsearch's loads lie on a grid anchored at the top rate: the same top every block would give the
    # same few NDR values, an error of up to one goal width repeated in every block (no mean removes it).
    # A top lowered at random within one width shifts the grid per block and arm, so the errors average out.
    dither = {name: (1 + pp.relative_width) ** -rng.random() for name in ("a", "b")}

    def search_arm(name: str, arm: Arm) -> None:
        def record(t: TrialResult) -> None:
            bar.trial()
            rec.trial(t, purpose="paired", comparison=comp.key, arm=name, block=index, control=comp.control,
                      **arm.scenario.labels())

        meas = _TurnMeasurer(turns, name, record, sessions[name].gen, arm.frame_size,
                             bidirectional=params.traffic.bidirectional, extra={"model": arm.scenario.model},
                             max_invalid_repeats=sp.max_invalid_repeats)
        # Down to the experiment's floor: loss here need not fall with the rate (two pollers time-sharing
        # a CPU lose more at some lower rates), so a floor near the NDR may have no lower bound.
        lo, hi = sp.min_rate_pps, arm.ndr_pps * pp.span
        if caps[name]:
            hi = min(hi, measure.default_max_rate(params.lab.port_speed, arm.frame_size, caps[name]))
        hi *= dither[name]
        try:
            results = measure.search(meas, arm.frame_size, sp.model_copy(update={"relative_width": pp.relative_width}),
                                     max_rate_pps=hi, ceiling_pps=caps[name], progress=False, warmup_s=0.0)
            r = next((r for r in results if r.goal == claimsets.SEARCH_GOAL), None)
            found[name] = (r.throughput_pps, r.lower_bound_pps, r.upper_bound_pps, lo, hi) if r else "no NDR goal"
        except _Aborted:
            found[name] = "the other arm's search failed"
        except Exception as err:  # a failed search loses the block, not the run
            found[name] = f"search failed: {err}"
            turns.abort()
        finally:
            turns.leave(name)

    threads = [threading.Thread(target=search_arm, args=(n, arm), daemon=True, name=f"paired-{n}")
               for n, arm in (("a", comp.a), ("b", comp.b))]
    for t in threads:
        t.start()
    try:
        for t in threads:
            while t.is_alive():
                t.join(0.2)  # the main thread stays responsive to SIGINT/SIGTERM (labs torn down)
    except BaseException:
        turns.abort()
        raise
    ndr = {}
    for name in ("a", "b"):
        got = found.get(name, "no result")
        if isinstance(got, str):
            return got
        rate, lower, upper, lo, hi = got
        if not rate or upper is None:  # the span's top loss-free: the block's figure would be its cap
            return f"no NDR below the block's top rate {hi:,.0f} pps (or none above {lo:,.0f} pps)"
        ndr[name] = rate
    return math.log(ndr["a"] / ndr["b"])


def _forwarding_block(params: ExperimentParams, comp: Comparison, switch: _Switch, sessions: dict, caps: dict,
                      rng: random.Random, index: int, rec: RecordWriter, bar) -> Union[float, str]:
    """One block of the ``forwarding`` and ``common`` metrics: ABBA or BAAB trials, each arm at
    ``overload`` x its NDR (``forwarding``) or both at :func:`common_load_pps` (``common``); their
    forwarding rates' paired log-ratio, or why the block is lost."""
    pp = params.paired
    load = common_load_pps(comp, pp.common_load, caps) if pp.metric == "common" else None
    order = schedule(1, rng)[0]
    got: dict[str, list[float]] = {"a": [], "b": []}
    for pos, letter in enumerate(order):
        name = letter.lower()
        arm = comp.a if name == "a" else comp.b
        switch(name)
        rate = load if load is not None else pp.overload * arm.ndr_pps
        t = _valid_trial(params, sessions[name].gen, rate, arm, comp, name, index, pos, rec, bar)
        if t is None:
            return "a trial stayed invalid (the generator off schedule) after every repeat"
        got[name].append(_forwarding_pps(t))
    return block_log_ratio(got["a"], got["b"])


def _valid_trial(params: ExperimentParams, gen, rate_pps: float, arm: Arm, comp: Comparison, name: str, index: int,
                 pos: int, rec: RecordWriter, bar) -> Optional[TrialResult]:
    """A trial of one arm, repeated while invalid (the generator off schedule), as searches repeat them."""
    for attempt in range(params.search.max_invalid_repeats + 1):
        t = run_trial(gen, rate_pps, params.paired.trial_duration_s, arm.frame_size,
                      bidirectional=params.traffic.bidirectional, kind="trial", extra={"model": arm.scenario.model})
        bar.trial()
        rec.trial(t, purpose="paired", comparison=comp.key, arm=name, block=index, position=pos,
                  control=comp.control, **arm.scenario.labels())
        if t.valid:
            return t
        time.sleep(invalid_repeat_pause_s(attempt + 1))
    return None


def _record(comp: Comparison, r: PairedResult, blocks: list[float], metric: str, stopped: str, paused: bool,
            lost: int, seconds: float, rec: RecordWriter, bar, counter: str, load_pps: Optional[float] = None) -> None:
    fields = {"blocks": r.blocks, "ratio": r.ratio, "ci_low": r.ci_low, "ci_high": r.ci_high,
              "p_different": r.p_different, "p_equivalent": r.p_equivalent, "level": r.level,
              "detectable": r.detectable, "blocks_needed": r.blocks_needed}
    text = (f"paired {comp.key}: ratio {r.ratio:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}], {r.verdict} after "
            f"{r.blocks} blocks ({stopped}); detectable {100 * r.detectable:.1f} %")
    rec.note(text, kind=PAIRED_NOTE, comparison=comp.key, a=comp.a.config, b=comp.b.config, control=comp.control,
             claims=list(comp.claims), verdict=r.verdict, metric=metric, stopped=stopped, idle_arm_paused=paused,
             lost_blocks=lost, ndr_a_pps=round(comp.a.ndr_pps, 1), ndr_b_pps=round(comp.b.ndr_pps, 1),
             alpha=comp.alpha, seconds=round(seconds, 1), block_log_ratios=[round(x, 5) for x in blocks],
             **({"load_pps": round(load_pps, 1)} if load_pps is not None else {}),
             **{k: (round(v, 6) if isinstance(v, float) else v) for k, v in fields.items()})
    bar.note(f"{counter} {text}")


def control_blocks(pp) -> int:
    """Most blocks of the A/A control: its first two looks (``paired`` params ``pp``)."""
    return min(pp.first_blocks + pp.step, pp.max_blocks)


def median_ndr(values: Iterable[float]) -> float:
    """The median of the finite positive NDRs (NaN when none)."""
    ok = [v for v in values if v is not None and math.isfinite(v) and v > 0]
    return statistics.median(ok) if ok else float("nan")
