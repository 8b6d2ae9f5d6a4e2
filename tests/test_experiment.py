"""run_experiment on real packets: a known-capacity data path gives a known answer.

The grid's scenarios are realized by a backend that builds, for every runnable
model, the embedded lab's tbf-shaped bridge of known capacity (real namespaces,
real packets), so the most each search may find is known in advance (how close it comes is a
benchmark figure: bench/accuracy.py).
"""
import os
from contextlib import contextmanager

import pytest

from conftest import NO_RESIDUE, REPO
from support.adaptive_run import check_added_and_outcome
from test_adaptive_run import B_FIRST, b_config, b_params
from test_calibrate import TBF_RATE_TOLERANCE
from test_lab import locked_residue
from nfvlab import claimsets
from nfvlab import experiment as X
from nfvlab import adaptive_run as AR
from nfvlab import claims
from nfvlab import run_records as RR
from nfvlab import params as P
from nfvlab import results as R
from nfvlab.experiment import run_experiment, scenarios
from nfvlab.progress import Progress
from nfvlab.latency import latency_percentiles
from nfvlab.labs.embedded import EmbeddedLab
from nfvlab.labs.embedded.kernel import TBF_FRAMES
from nfvlab.measure import InputError
from nfvlab.records import history_dir as records_history, read_records
from nfvlab.scenario import KnownPath, Scenario
from nfvlab.traffic.stats import decode_histogram
from nfvlab.trial import TrialResult

CAPACITY_PPS = 20_000
FRAME = 128
TRIAL_S = 0.5
#: tbf's bucket + queue (64 frames each) drain after the deadline: a trial passes up to this many more.
BUFFER_FRAMES = 2 * TBF_FRAMES

TINY = {"experiment": "tiny", "models": ["macvlan", "vpp"], "repetitions": 2,
        "traffic": {"frame_sizes": [FRAME], "latency_pps": 200, "bidirectional": False},
        "trial": {"duration_s": TRIAL_S},
        "search": {"method": "rfc2544", "pdr_loss_ratio": None, "relative_width": 0.02,
                   "min_rate_pps": 5000, "max_rate_pps": 40000, "final_trial_duration_s": TRIAL_S,
                   "initial_trial_duration_s": TRIAL_S, "duration_sum_s": TRIAL_S}}


class KnownCapacityLab(EmbeddedLab):
    """The embedded lab, but every runnable scenario is a tbf bridge of ``capacity_pps``."""

    def __init__(self, capacity_pps: float) -> None:
        super().__init__()
        self.capacity_pps = capacity_pps
        self.opened: list[str] = []

    @contextmanager
    def open(self, scenario, **kw):
        self.opened.append(scenario.model)
        with super().open(Scenario("tbf-bridge", known_path=KnownPath(self.capacity_pps, FRAME))) as s:
            yield s


def assert_never_above_the_path(records: list[dict], ndrs: list[float]) -> None:
    """No trial received more than the tbf path passes while its traffic ran (the generator's
    ``elapsed_s``) plus its bucket and queue; every NDR is the rate of a valid lossless search trial
    and at most the capacity over the duration plus the slip budget, plus the buffer drained after
    it (with tbf's own rate tolerance: a stated tolerance of the reference path, not of nfvlab)."""
    capacity_pps = CAPACITY_PPS * (1 + TBF_RATE_TOLERANCE)
    trials = [(r["labels"]["purpose"], TrialResult.from_dict(r["result"])) for r in records if r["type"] == "trial"]
    assert trials
    for _, t in trials:
        sched = t.extra["schedule"]
        for d in t.directions:
            assert d.received_packets <= d.sent_packets <= d.intended_packets, t
            assert d.received_packets <= capacity_pps * sched["elapsed_s"] + BUFFER_FRAMES + 1, (t, sched)
    lossless = {t.rate_pps for purpose, t in trials if purpose == "search" and t.valid and t.loss_ratio == 0}
    for ndr in ndrs:
        assert ndr in lossless, (ndr, sorted(lossless))
        budget = max(t.extra["schedule"]["budget_s"] for _, t in trials if t.rate_pps == ndr)
        assert ndr <= capacity_pps * (TRIAL_S + budget) / TRIAL_S + BUFFER_FRAMES / TRIAL_S, (ndr, budget)


@pytest.mark.lab
def test_a_lab_per_frame_size_builds_one_for_every_search(clean_host, tmp_path):
    """lab_instance: per-frame-size: each (configuration, repetition, frame size) on its own lab instance;
    the run record says so, a default run's record has no such key."""
    params = P.validate(P.ExperimentParams, {**TINY, "models": ["macvlan"], "repetitions": 1,
                                             "traffic": {**TINY["traffic"], "frame_sizes": [FRAME, 256]},
                                             "latency_load_fractions": [], "lab_instance": "per-frame-size"})
    backend = KnownCapacityLab(CAPACITY_PPS)
    run_experiment(params, tmp_path / "raw.jsonl", backend=backend)
    assert backend.opened == ["macvlan", "macvlan"]
    s = R.searches_frame(tmp_path / "raw.jsonl")
    assert sorted(s["frame_size"]) == [FRAME, 256]
    run = read_records(tmp_path / "raw.jsonl")[0]
    assert run["params"]["lab_instance"] == "per-frame-size"
    assert "lab_instance" not in RR.params_dump(P.validate(P.ExperimentParams, TINY), None)


@pytest.mark.lab
def test_an_a_a_control_searches_its_cell_twice_per_repetition_side_by_side_on_labs_of_its_own(clean_host,
                                                                                                tmp_path):
    """params ``control``: the cell searched a second time per repetition on its own lab, labelled
    ``arm: twin`` (no latency trials), after its original in even repetitions and before it in odd
    ones; the plan counts the twins, a resumed run's keys tell them apart, the tables leave them out."""
    from nfvlab import plan

    params = P.validate(P.ExperimentParams, {**TINY, "models": ["macvlan"], "repetitions": 2,
                                             "latency_load_fractions": [0.0],
                                             "control": {"model": "macvlan", "frame_size": FRAME}})
    backend = KnownCapacityLab(CAPACITY_PPS)
    rec = tmp_path / "raw.jsonl"
    run_experiment(params, rec, backend=backend)
    assert locked_residue() == NO_RESIDUE
    assert backend.opened == ["macvlan"] * 4  # a lab each: two originals, two twins
    s = R.searches_frame(rec)
    assert [(r, a) for r, a in zip(s["repetition"], s["arm"].fillna("-"))] == [(0, "-"), (0, "twin"),
                                                                               (1, "twin"), (1, "-")]
    lat = R.latency_frame(rec)
    assert len(lat) == 2 and (lat["repetition"].tolist() == [0, 1])  # the originals' only
    recs = read_records(rec)
    assert recs[0]["params"]["control"] == {"model": "macvlan", "frame_size": FRAME, "mtu_bytes": None}
    keys = {RR.unit_key(r["labels"]) for r in recs if r["type"] == "search"}
    assert keys == set(plan.planned_units(params)) and len(keys) == 4
    assert "control" not in RR.params_dump(P.validate(P.ExperimentParams, TINY), None)
    from nfvlab.analysis import control_searches, inputs
    assert (inputs(rec, "ndr", None)[0]["arm"].isna()).all() and len(inputs(rec, "ndr", None)[0]) == 2
    assert sorted(control_searches(rec, "ndr")["arm"]) == ["original", "original", "twin", "twin"]


@pytest.mark.lab
def test_no_search_finds_more_than_the_known_capacity_and_unrealizable_models_are_notes(clean_host, tmp_path, capsys):
    rec = tmp_path / "raw.jsonl"
    backend = KnownCapacityLab(CAPACITY_PPS)
    run_experiment(P.validate(P.ExperimentParams, TINY), rec, backend=backend)
    assert backend.opened == ["macvlan", "macvlan"]  # vpp was never built
    s = R.searches_frame(rec)
    assert list(s["model"]) == ["macvlan", "macvlan"] and list(s["repetition"]) == [0, 1]
    # How close each NDR comes to the capacity depends on how the VM ran the generator: bench/accuracy.py.
    # What no host can change: no trial got more through than the path forwards, so neither did an NDR.
    assert_never_above_the_path(read_records(rec), list(s["throughput_pps"]))
    # Latency under load: the default fractions 0/10/50/90 % of each repetition's NDR
    # (no PDR searched), 0 = probes only at the probe rate.
    lat = R.latency_frame(rec)
    assert len(lat) == 2 * 4 and list(lat["load_fraction"]) == [0.0, 0.1, 0.5, 0.9] * 2
    assert (lat["goal"] == "ndr").all()
    for rep, ndr in enumerate(s["throughput_pps"]):
        rates = lat[lat["repetition"] == rep]["rate_pps"].tolist()
        assert rates == [200.0, pytest.approx(0.1 * ndr), pytest.approx(0.5 * ndr), pytest.approx(0.9 * ndr)]
    # (The median against tbf's queue delay, 6.4 ms at most below capacity: bench/accuracy.py.)
    assert (lat["p50_ns"] > 0).all(), lat["p50_ns"].tolist()
    trials = [r["result"] for r in read_records(rec) if r["type"] == "trial" and r["labels"]["purpose"] == "latency"]
    probes_only = [t for t in trials if t["extra"]["load_fraction"] == 0.0]
    # At fraction 0 the trial is the probes alone: 200 pps for 0.5 s, every frame sent a probe.
    assert probes_only and all(t["intended_packets"] == 100 and t["sent_packets"] ==
                               t["directions"][0]["latency"]["probes_sent"] for t in probes_only)
    for t in trials:
        d = t["directions"][0]
        assert decode_histogram(d["latency"]["hdr_histogram"]).get_total_count() == d["latency"]["probes_received"]
    table = latency_percentiles(lat)
    assert len(table) == 4 * 5 and (table["n"] == 2).all()
    nr = R.not_realizable_frame(rec)
    assert list(nr["model"]) == ["vpp"] and "VPP" in nr["reason"].iloc[0]
    records = read_records(rec)
    assert records[0]["type"] == "run" and records[-1]["type"] == "end"
    prov = records[0]["provenance"]
    assert prov["lab"]["lab_kind"] == "embedded" and prov["generator"]["identity"]["name"] == "nfvlab-gen"
    out = capsys.readouterr().out
    assert "tiny: 1 of 2 configurations realizable" in out and "tiny: 2/2 macvlan 128 B rep 1: ndr" in out
    assert locked_residue() == NO_RESIDUE


@pytest.mark.lab
def test_a_failed_search_is_recorded_with_its_reason_and_shown_as_failed(clean_host, tmp_path):
    rec = tmp_path / "raw.jsonl"
    # 2 kpps of capacity, searches from 5 kpps: even the minimum rate loses frames.
    run_experiment(P.validate(P.ExperimentParams, {**TINY, "models": ["macvlan"], "repetitions": 1}), rec,
                   backend=KnownCapacityLab(2_000), progress=False)
    assert R.searches_frame(rec).empty
    notes = [r for r in read_records(rec) if r["type"] == "note"]
    assert [n["labels"]["kind"] for n in notes] == ["search-failed"]
    from nfvlab import experiments

    table = experiments.tables("a", rec, ["macvlan"])["throughput"]
    assert table["status"].iloc[0].startswith("search failed: ") and table["n"].iloc[0] == 0
    assert locked_residue() == NO_RESIDUE


def test_impossible_inputs_fail_before_any_lab(tmp_path):
    bad = {**TINY, "traffic": {"frame_sizes": [64]}, "search": {**TINY["search"], "max_rate_pps": 2e7}}
    with pytest.raises(InputError, match="above the 10GbE line rate"):
        run_experiment(P.validate(P.ExperimentParams, bad), tmp_path / "x.jsonl", progress=False)
    assert not (tmp_path / "x.jsonl").exists()


def test_a_records_path_that_cannot_be_written_is_refused_before_any_lab(tmp_path, monkeypatch):
    """The pipeline and notebooks call run_experiment directly, without the CLI's path checks."""
    def no_lab(*a, **k):
        raise AssertionError("a lab backend was asked for")

    monkeypatch.setattr("nfvlab.labs.backend_for", no_lab)
    params = P.validate(P.ExperimentParams, TINY)
    (tmp_path / "dir.jsonl").mkdir()
    with pytest.raises(InputError, match=r"records .*dir.jsonl: a directory; give a file path"):
        run_experiment(params, tmp_path / "dir.jsonl", progress=False)
    with pytest.raises(InputError, match=r"records /proc/x.jsonl: under /proc"):
        run_experiment(params, "/proc/x.jsonl", progress=False)


def test_frames_above_what_a_models_ports_carry_are_refused_before_any_lab(tmp_path):
    if not EmbeddedLab().check(Scenario("ovs-dpdk-vhost")) == []:
        pytest.skip("ovs-dpdk-vhost not realizable here")
    bad = {**TINY, "models": ["ovs-dpdk-vhost"], "traffic": {"frame_sizes": [9018]}}
    with pytest.raises(InputError, match=r"ovs-dpdk-vhost: --frame-size 9018: above the path MTU \(1500 B"):
        run_experiment(P.validate(P.ExperimentParams, bad), tmp_path / "x.jsonl", progress=False)


def test_the_grid_is_models_by_pinning_by_numa_by_density_cells():
    p = P.validate(P.ExperimentParams, {"experiment": "g", "models": ["host-routing"],
                                        "resources": {"pinning": ["plan"], "numa": ["s1", "s2"]},
                                        "density": {"topologies": ["csc", "csp"], "instances": [1, 2],
                                                    "nfs_per_instance": [1, 3]}})
    grid = scenarios(p)
    assert len(grid) == 2 * 2 * 2 * 2
    assert [sc.label for sc in grid[:4]] == ["host-routing csc 1x1", "host-routing csc 1x3",
                                            "host-routing csc 2x1", "host-routing csc 2x3"]
    assert {sc.resources.numa for sc in grid} == {"s1", "s2"}


class InterruptedLab(KnownCapacityLab):
    """Ctrl-C when the ``n``-th lab opens (after the earlier ones were measured)."""

    def __init__(self, capacity_pps, n):
        super().__init__(capacity_pps)
        self.n = n

    @contextmanager
    def open(self, scenario, **kw):
        if len(self.opened) + 1 == self.n:
            raise KeyboardInterrupt
        with super().open(scenario, **kw) as s:
            yield s


RESUMABLE = {**TINY, "models": ["macvlan", "smartnic-direct"], "repetitions": 1,
             "search": {**TINY["search"], "relative_width": 0.1}}


@pytest.mark.lab
def test_an_interrupted_experiment_resumes_measuring_only_what_is_missing(clean_host, tmp_path):
    rec = tmp_path / "raw.jsonl"
    params = P.validate(P.ExperimentParams, RESUMABLE)
    with pytest.raises(KeyboardInterrupt):
        run_experiment(params, rec, backend=InterruptedLab(CAPACITY_PPS, 2), progress=False)
    first = read_records(rec)
    assert [r["status"] for r in first if r["type"] == "end"] == ["interrupted"]
    again = KnownCapacityLab(CAPACITY_PPS)
    run_id = run_experiment(params, rec, backend=again, progress=False)
    assert again.opened == ["smartnic-direct"]  # macvlan was done before the Ctrl-C
    assert run_id == first[0]["run_id"]
    s = R.searches_frame(rec)  # one run: both parts together
    assert sorted(s["model"]) == ["macvlan", "smartnic-direct"] and set(s["run_id"]) == {run_id}
    seqs = [r["seq"] for r in read_records(rec) if r["type"] == "trial"]
    assert seqs == list(range(len(seqs)))  # the resumed part numbers its trials on
    fresh = KnownCapacityLab(CAPACITY_PPS)
    assert run_experiment(params, rec, backend=fresh, progress=False) != run_id  # completed: a new run
    assert fresh.opened == ["macvlan", "smartnic-direct"]
    assert locked_residue() == NO_RESIDUE


@pytest.mark.lab
def test_a_refused_run_writes_nothing(clean_host, tmp_path, monkeypatch, spawn):
    import subprocess
    import sys

    from nfvlab.system.hostlock import LabBusy

    # Another process holds the host lock until the spawn fixture ends it.
    holder = spawn([sys.executable, "-c", "import time\nfrom nfvlab.system.hostlock import HostLock\n"
                    "with HostLock('someone else'):\n    print('held', flush=True)\n    time.sleep(300)"],
                   stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    monkeypatch.setenv("NFVLAB_LOCK_WAIT_S", "0")
    with pytest.raises(LabBusy, match="someone else"):
        run_experiment(P.validate(P.ExperimentParams, RESUMABLE), tmp_path / "raw.jsonl",
                       backend=KnownCapacityLab(CAPACITY_PPS), progress=False)
    assert not (tmp_path / "raw.jsonl").exists()


def test_latency_rates_are_fractions_of_the_chosen_goal():
    from types import SimpleNamespace as NS

    from nfvlab.experiment import latency_rates

    params = P.validate(P.ExperimentParams, {"experiment": "x", "latency_load_fractions": [0, 0.5, 0.9]})
    both = [NS(goal="ndr", throughput_pps=80_000.0), NS(goal="pdr", throughput_pps=100_000.0)]
    assert latency_rates(params, both, 1000) == ("pdr", [(0, 1000.0), (0.5, 50_000.0), (0.9, 90_000.0)])
    # no PDR searched: the first goal's rate; nothing without a rate or without probes
    assert latency_rates(params, both[:1], 500) == ("ndr", [(0, 500.0), (0.5, 40_000.0), (0.9, 72_000.0)])
    assert latency_rates(params, [NS(goal="ndr", throughput_pps=None)], 1000) == (None, [])
    assert latency_rates(params, both, 0) == (None, [])


def test_the_mtu_grid_labels_every_record_and_skips_frames_above_a_cells_mtu(clean_host, tmp_path):
    """mtu_bytes expands the grid; 1518 B frames do not fit MTU 1280: a note, never sent."""
    rec = tmp_path / "raw.jsonl"
    params = P.validate(P.ExperimentParams, {**TINY, "models": ["macvlan"], "repetitions": 1,
                                             "mtu_bytes": [1280, 1500], "latency_load_fractions": [],
                                             "traffic": {**TINY["traffic"], "frame_sizes": [FRAME, 1518]}})
    assert [(s.model, s.mtu_bytes, s.label) for s in scenarios(params)] == [
        ("macvlan", 1280, "macvlan MTU 1280"), ("macvlan", 1500, "macvlan MTU 1500")]
    run_experiment(params, rec, backend=KnownCapacityLab(CAPACITY_PPS), progress=False)
    s = R.searches_frame(rec)
    assert sorted(zip(s["mtu_bytes"], s["frame_size"])) == [(1280, FRAME), (1500, FRAME)]
    sent = {(t["labels"]["mtu_bytes"], t["result"]["frame_size"]) for t in read_records(rec) if t["type"] == "trial"}
    assert (1280, 1518) not in sent and (1500, 1518) in sent
    notes = R.not_realizable_frame(rec)
    # The bridge is shaped for 128 B frames: at 1518 B even 5 kpps loses, the search fails (recorded).
    assert notes[["kind", "mtu_bytes", "frame_size"]].values.tolist() == [
        ["frame-too-large", 1280, 1518], ["search-failed", 1500, 1518]]
    assert "1518 B frames do not fit MTU 1280 (at most 1298 B); not sent" in notes["reason"].iloc[0]
    assert locked_residue() == NO_RESIDUE


def test_an_mtu_above_what_a_models_ports_carry_is_refused_before_any_lab(tmp_path):
    if EmbeddedLab().check(Scenario("ovs-dpdk-vhost")) != []:
        pytest.skip("ovs-dpdk-vhost not realizable here")
    bad = {**TINY, "models": ["ovs-dpdk-vhost"], "mtu_bytes": [1500, 9000]}
    with pytest.raises(InputError, match=r"^mtu_bytes: 9000 is above what ovs-dpdk-vhost's ports carry on "
                                         r"the embedded lab \(1500\)$"):
        run_experiment(P.validate(P.ExperimentParams, bad), tmp_path / "x.jsonl", progress=False)
    assert not (tmp_path / "x.jsonl").exists()


@pytest.mark.parametrize("letter", ["a", "b", "c"])
def test_every_claim_level_of_a_b_and_c_is_a_configuration_the_runner_searches(letter):
    p = P.load_experiment(REPO / f"params/quick/experiment_{letter}.yaml", REPO / "params/lab.yaml")
    specs = claimsets.search_claims_of(p)
    names = claimsets.key_labels(specs)
    runner = {AR.search_config({**sc.labels(), "frame_size": fs}, names) for sc in scenarios(p)
              for fs in p.traffic.frame_sizes}
    assert all(set(s.labels) == set(names) for s in specs)  # one key per configuration for every claim
    wanted = {s.config(v) for s in specs for v in s.levels()}
    assert wanted <= runner, sorted(wanted - runner)  # none a typo the driver would wait for forever


def test_experiments_without_claims_refuse_adaptive_in_one_line_before_anything_exists(tmp_path, monkeypatch):
    monkeypatch.setattr("nfvlab.labs.backend_for", lambda *a, **k: pytest.fail("a lab backend was asked for"))
    p = P.load_experiment(REPO / "params/quick/experiment_d.yaml", REPO / "params/lab.yaml",
                          {"adaptive": {"max_repetitions": 6}})
    with pytest.raises(InputError, match=r"^adaptive: adaptive repetitions are wired for experiments A, B and C "
                                         r"\(searches\) and E \(tool runs\), not d-[^\n]*: remove adaptive: "
                                         r"from its params$"):
        run_experiment(p, tmp_path / "d.jsonl", progress=False)
    assert not (tmp_path / "d.jsonl").exists()


def test_a_grid_axis_no_claim_names_refuses_adaptive_before_anything_exists(tmp_path, monkeypatch):
    monkeypatch.setattr("nfvlab.labs.backend_for", lambda *a, **k: pytest.fail("a lab backend was asked for"))
    p = P.load_experiment(REPO / "params/quick/experiment_b.yaml", REPO / "params/lab.yaml",
                          {"mtu_bytes": [1500, 9000], "adaptive": {"max_repetitions": 6}})
    with pytest.raises(InputError, match=r"^adaptive: b-pinning-numa's claims name pinning, model, numa, frame_size "
                                         r"only, which do not tell this grid's configurations apart"):
        run_experiment(p, tmp_path / "b.jsonl", progress=False)
    assert not (tmp_path / "b.jsonl").exists()
    assert X.adaptive_problem(b_params()) is None and X.adaptive_problem(b_params(step=2)) is None


class _FakeResult:
    def __init__(self, pps):
        self.goal, self.throughput_pps = "ndr", pps

    def to_dict(self):
        return {"goal": self.goal, "throughput_pps": self.throughput_pps, "trials": []}


def _fake_lab(monkeypatch, stop_after=None):
    """run_experiment without a lab: the host lock, generator identity, lab and search faked; the NDR of a
    search cycles through :data:`B_FIRST` (s1 only: the rest not realizable). Returns the searches made,
    (pinning, repetition) in order; ``stop_after``: an interrupt (Ctrl-C) at that search."""
    class NoLock:
        def __init__(self, *a, **k):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    class Backend:
        kind = "fake"

        def ready(self):
            return []

        def check(self, sc):
            return [] if sc.resources.numa == "s1" and sc.resources.pinning != "exclusive" else ["not on this host"]

        def mtu(self, sc):
            return 1500

        def describe(self):
            return {"lab_kind": "fake"}

    searched, at = [], {}

    @contextmanager
    def bench(backend, generator, scenario, traffic):
        at["scenario"] = scenario
        yield None, type("Gen", (), {"identity": lambda self: {"name": "fake"}, "describe": lambda self: {}})()

    def search(meas, fs, sp, **kw):
        if stop_after is not None and len(searched) == stop_after:
            raise KeyboardInterrupt
        pin = at["scenario"].resources.pinning
        searched.append(pin)
        return [_FakeResult(B_FIRST[(pin, "s1")][(searched.count(pin) - 1) % 3])]

    monkeypatch.setattr(RR, "HostLock", NoLock)
    monkeypatch.setattr(X, "identity_for", lambda *a, **k: {"name": "fake"})
    monkeypatch.setattr(X, "tx_paths", lambda g: ())
    monkeypatch.setattr(X.measure, "bench", bench)
    monkeypatch.setattr(X.measure, "measurer", lambda *a, **k: None)
    monkeypatch.setattr(X.measure, "search", search)
    return Backend(), searched


def _units(records):
    return [(r["labels"]["pinning"], r["labels"]["repetition"], r["labels"].get("added_look"))
            for r in read_records(records) if r["type"] == "search"]


def test_an_adaptive_b_run_records_labelled_searches_and_ends_with_its_note(tmp_path, monkeypatch, capsys):
    backend, searched = _fake_lab(monkeypatch)
    records = tmp_path / "b.jsonl"
    run_experiment(b_params(step=1, max_repetitions=5), records, backend=backend, resume=False)
    recs = read_records(records)
    searches = [r for r in recs if r["type"] == "search"]
    assert len(searched) == len(searches) == 6 + 4  # shared ~ none at s1: repetitions 3 and 4 added to both
    for r in searches[6:]:
        assert r["labels"]["repetition"] in (3, 4) and r["labels"]["added_look"] == r["labels"]["repetition"] - 2
        assert r["labels"]["added_reason"] == f"look {r['labels']['added_look']}: {b_config('shared')} > " \
                                              f"{b_config('none')} undecided"
    assert all("added_look" not in r["labels"] for r in searches[:6])
    note = recs[-2]
    assert note["labels"] == {"kind": "adaptive", "stopped": "max repetitions", "added": 4,
                              "seconds": note["labels"]["seconds"], "inconclusive": 1}
    assert recs[-1]["status"] == "completed" and recs[0]["params"]["adaptive"] == {
        "max_repetitions": 5, "step": 1, "seconds": None}
    out = capsys.readouterr().out
    assert "b-pinning-numa: adaptive repetitions: up to 5 per configuration, 1 per look (Pocock-type" in out
    assert "b-pinning-numa: added ovs-dpdk-vhost (pinning=none, noisy_load_pct=100) 1518 B rep 3 (look 1: " in out
    assert "b-pinning-numa: adaptive repetitions: stopped: max repetitions; 4 repetition(s) added in " in out


def test_an_adaptive_b_run_gives_up_a_claim_that_looks_undecidable_and_says_so(tmp_path, monkeypatch):
    """shared ~ none at s1 alternate within 6 % at 3 repetitions: far more than 6 repetitions would be
    needed, so with give_up_above 6 no search is added and the run's note says which pair and why."""
    backend, searched = _fake_lab(monkeypatch)
    records = tmp_path / "b.jsonl"
    run_experiment(b_params(step=1, max_repetitions=5, give_up_above=6), records, backend=backend, resume=False,
                   progress=False)
    recs = read_records(records)
    note = recs[-2]["labels"]
    assert len(searched) == 6 and note["kind"] == "adaptive" and note["stopped"] == "given up"
    assert note["added"] == 0 and len(note["given_up"]) == 1
    assert note["given_up"][0].startswith(f"{b_config('shared')} > {b_config('none')}: ")
    assert recs[0]["params"]["adaptive"]["give_up_above"] == 6


def test_a_fixed_n_b_run_records_no_adaptive_key_note_or_label(tmp_path, monkeypatch):
    backend, searched = _fake_lab(monkeypatch)
    records = tmp_path / "b.jsonl"
    run_experiment(b_params(), records, backend=backend, resume=False, progress=False)
    recs = read_records(records)
    assert len(searched) == 6 and "adaptive" not in recs[0]["params"]
    assert not any(r["labels"].get("kind") == "adaptive" for r in recs if r["type"] == "note")
    assert list(recs[1 + 10]["labels"]) == ["goal", "model", "pinning", "numa", "noisy_load_pct", "frame_size",
                                            "repetition"]  # the labels of a search, as before


def test_each_search_starts_from_its_own_top_within_one_goal_width_below_the_rate_asked(tmp_path, monkeypatch):
    # One top for every repetition would round each NDR to the same grid points (an error no
    # repetitions average out); each search's top is lowered at random, seeded by run id and labels.
    backend, _ = _fake_lab(monkeypatch)
    fake, tops = X.measure.search, []
    monkeypatch.setattr(X.measure, "search", lambda meas, fs, sp, **kw: (tops.append(kw["max_rate_pps"]),
                                                                         fake(meas, fs, sp, **kw))[1])
    p = b_params()
    line = X.measure.default_max_rate(p.lab.port_speed, 1518)
    run_ids = [run_experiment(p, tmp_path / "b.jsonl", backend=backend, resume=False, progress=False)
               for _ in range(2)]
    assert len(tops) == 12 and len(set(tops)) == 12  # 6 searches a run, every top its own
    assert all(line / (1 + p.search.relative_width) < t <= line for t in tops)
    labels = [r["labels"] for r in read_records(tmp_path / "b.jsonl") if r["type"] == "search"]
    # the same run id and labels, the same top: a resumed run searches as it would have
    assert tops[6:] == [X.measure.dithered_top(line, p.search.relative_width,
                                               f"{run_ids[1]}:{sorted({k: v for k, v in lab.items() if k != 'goal'}.items())}")
                        for lab in labels[-6:]]  # the file: the first run, then the second


def test_a_fresh_run_keeps_the_run_before_it_and_moves_older_ones_to_the_history(tmp_path, monkeypatch):
    backend, _ = _fake_lab(monkeypatch)
    records = tmp_path / "b.jsonl"
    ids = [run_experiment(b_params(), records, backend=backend, resume=False, progress=False) for _ in range(3)]
    assert [r["run_id"] for r in read_records(records) if r["type"] == "run"] == ids[1:]
    assert [p.name for p in records_history(records).iterdir()] == [f"{ids[0]}.jsonl"]


def test_a_run_records_the_hosts_cpu_speed_probed_first(tmp_path, monkeypatch):
    backend, searched = _fake_lab(monkeypatch)
    monkeypatch.setenv("NFVLAB_HOST_SPEED_S", "1")  # two 0.5 s windows per CPU
    records = tmp_path / "b.jsonl"
    run_experiment(b_params(), records, backend=backend, resume=False, progress=False)
    speed = read_records(records)[0]["provenance"]["host_speed"]
    assert speed["window_s"] == 0.5 and speed["duration_s"] == 1.0
    assert {c: f["windows"] for c, f in speed["cpus"].items()} == {str(c): 2 for c in os.sched_getaffinity(0)}
    monkeypatch.setenv("NFVLAB_HOST_SPEED_S", "0")  # none asked: none recorded
    run_experiment(b_params(), tmp_path / "b0.jsonl", backend=backend, resume=False, progress=False)
    assert "host_speed" not in read_records(tmp_path / "b0.jsonl")[0]["provenance"]


def test_a_resumed_adaptive_b_run_measures_only_what_it_lacks(tmp_path, monkeypatch):
    records = tmp_path / "b.jsonl"
    p = b_params(step=1, max_repetitions=5)
    backend, _ = _fake_lab(monkeypatch, stop_after=8)  # interrupted in the adaptive phase, 2 added searches done
    with pytest.raises(KeyboardInterrupt):
        run_experiment(p, records, backend=backend, progress=False)
    first = _units(records)
    backend, searched = _fake_lab(monkeypatch)
    run_experiment(p, records, backend=backend, progress=False)
    units = _units(records)
    assert len(first) == 8 and len(searched) == 2 and len(units) == 10
    assert len(set((pin, rep) for pin, rep, _ in units)) == 10  # no search made twice
    assert read_records(records)[-1]["status"] == "completed"


@pytest.mark.lab
def test_an_adaptive_search_run_adds_labelled_repetitions_within_its_plan_and_ends_with_its_outcome(
        clean_host, tmp_path, capsys):
    """On the embedded lab (experiment B's claims over ovs-dpdk-vhost, pinning none / shared at s1, realized as
    the known-capacity bridge: whatever the rates; macvlan's pods have no process to pin), every added search and its trials are labelled with their look and reason,
    continue their configuration's repetitions within max_repetitions, and the run ends with the outcome
    note; the analysis judges it with the plan."""
    from nfvlab import analysis

    params = P.validate(P.ExperimentParams, {
        **TINY, "experiment": "b-tiny", "models": ["ovs-dpdk-vhost"], "resources": {"pinning": ["none", "shared"]},
        "latency_load_fractions": [0.0], "adaptive": {"max_repetitions": 3, "step": 1, "seconds": 60}})
    records = tmp_path / "b.jsonl"
    run_experiment(params, records, backend=KnownCapacityLab(CAPACITY_PPS))
    assert locked_residue() == NO_RESIDUE
    recs = read_records(records)
    added = check_added_and_outcome(recs, "search", 4, 2)
    added_trials = [t for t in recs if t["type"] == "trial" and "added_look" in t["labels"]]
    assert bool(added_trials) == bool(added) and all(t["labels"]["repetition"] == 2 for t in added_trials)
    assert analysis.plan_of(records) == claims.Plan(2, 1, 3)
    assert "b-tiny: adaptive repetitions: stopped: " in capsys.readouterr().out


def test_experiments_without_claims_refuse_a_paired_phase_in_one_line_before_anything_exists(tmp_path, monkeypatch):
    monkeypatch.setattr("nfvlab.labs.backend_for", lambda *a, **k: pytest.fail("a lab backend was asked for"))
    p = P.load_experiment(REPO / "params/quick/experiment_d.yaml", REPO / "params/lab.yaml", {"paired": {}})
    with pytest.raises(InputError, match=r"^paired: the paired phase decides the claims of experiments A, B and C, "
                                         r"not d-[^\n]*: remove paired: from its params$"):
        run_experiment(p, tmp_path / "d.jsonl", progress=False)
    assert not (tmp_path / "d.jsonl").exists()


def test_a_lab_of_one_scenario_at_a_time_records_every_comparison_not_testable_with_why(tmp_path, monkeypatch):
    backend, searched = _fake_lab(monkeypatch)  # a backend without parallel_labs, as the Kubernetes lab
    p = b_params().model_copy(update={"paired": P.PairedParams()})
    run_experiment(p, tmp_path / "b.jsonl", backend=backend, progress=False)
    notes = [r["labels"] for r in read_records(tmp_path / "b.jsonl")
             if r["type"] == "note" and r["labels"].get("kind") == "paired"]
    # B at s1 without exclusive pinning: "shared > none" is what is left, and its A/A control
    assert [(n["a"], n["b"], n["control"]) for n in notes] == [
        (b_config("shared"), b_config("shared"), True), (b_config("shared"), b_config("none"), False)]
    assert all(n["verdict"] == "not testable" and "one scenario at a time" in n["reason"] for n in notes)
    assert len(searched) == 6  # the searches ran as without a paired phase; no trial of a paired block


def test_a_search_spoiled_by_invalid_trials_is_searched_again_once_on_a_new_lab(tmp_path, monkeypatch, capsys):
    """A search failing because every repeat of a trial was invalid (GeneratorFaultError: the generator
    off schedule, or a lab holding an earlier trial's frames) is searched again on a new lab instance,
    with the frame sizes after it; once: a failure on the new lab is the search's failure. Any other
    search error is no reason for a new lab. Lab and search faked (the orchestration is the subject)."""
    from nfvlab.records import RecordWriter
    from nfvlab.search import GeneratorFaultError, SearchError

    params = P.validate(P.ExperimentParams, {**TINY, "models": ["macvlan"], "repetitions": 1,
                                             "traffic": {**TINY["traffic"], "frame_sizes": [64, 256, 512, 1024]},
                                             "latency_load_fractions": []})
    labs_opened, searched = [], []
    fail = {(1, 64): GeneratorFaultError("no valid trial at 40,000 pps: 9 invalid trial(s) in a row, the last: "
                                         "the DUT delivered 2688 frames of an earlier trial during this one"),
            (2, 256): GeneratorFaultError("no valid trial at 40,000 pps: 9 invalid trial(s) in a row"),
            (2, 1024): SearchError("search timed out")}

    class Gen:
        def identity(self):
            return {"name": "fake"}

        def describe(self):
            return {}

    class Calib:
        def ceiling(self, identity, fs):
            return None

    @contextmanager
    def bench(backend, generator, scenario, traffic):
        labs_opened.append(len(labs_opened) + 1)
        yield None, Gen()

    def search(meas, fs, sp, **kw):
        at = (labs_opened[-1], fs)
        searched.append(at)
        if at in fail:
            raise fail[at]
        return [_FakeResult(1000.0 + fs)]

    monkeypatch.setattr(X.measure, "bench", bench)
    monkeypatch.setattr(X.measure, "measurer", lambda *a, **k: None)
    monkeypatch.setattr(X.measure, "search", search)
    (sc,) = scenarios(params)
    bar = Progress("tiny", 4)
    with RecordWriter(tmp_path / "r.jsonl", "tiny", {}, provenance={}) as rec:
        got = X._measure(params, None, Calib(), sc, 0, rec, bar, [64, 256, 512, 1024])
    assert searched == [(1, 64), (2, 64), (2, 256), (2, 512), (2, 1024)] and labs_opened == [1, 2]
    assert got[64][0].throughput_pps == 1064 and got[512][0].throughput_pps == 1512
    assert got[256] is None and got[1024] is None
    notes = [(r["labels"]["kind"], r["labels"]["frame_size"]) for r in read_records(tmp_path / "r.jsonl")
             if r["type"] == "note"]
    assert notes == [("search-retried", 64), ("search-failed", 256), ("search-failed", 1024)]
    assert "macvlan 64 B rep 0: retried on a new lab instance: no valid trial at 40,000 pps" in capsys.readouterr().out
    # resume counts the retried search as not done until its retry is recorded
    assert "search-retried" not in RR.SEARCH_DONE
