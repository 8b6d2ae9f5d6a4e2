"""run_experiment on real packets: a known-capacity data path gives a known answer.

The grid's scenarios are realized by a backend that builds, for every runnable
model, the embedded lab's tbf-shaped bridge of known capacity (real namespaces,
real packets), so the NDR each search must find is known in advance.
"""
from contextlib import contextmanager

import pytest

from conftest import NO_RESIDUE, lab_residue
from nfvlab import params as P
from nfvlab import results as R
from nfvlab.experiment import Progress, run_experiment, scenarios
from nfvlab.latency import latency_percentiles
from nfvlab.labs.embedded import EmbeddedLab
from nfvlab.measure import InputError
from nfvlab.records import read_records
from nfvlab.scenario import KnownPath, Scenario
from nfvlab.traffic.stats import decode_histogram

CAPACITY_PPS = 20_000
FRAME = 128
TRIAL_S = 0.5
#: tbf's bucket + queue (128 frames) drain after the deadline: a trial of D seconds passes up to this rate.
BUFFER_BOUND = CAPACITY_PPS * (1 + 128 / (CAPACITY_PPS * TRIAL_S))

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


@pytest.mark.lab
def test_each_search_finds_the_known_capacity_and_unrealizable_models_are_notes(clean_host, tmp_path, capsys):
    rec = tmp_path / "raw.jsonl"
    backend = KnownCapacityLab(CAPACITY_PPS)
    run_experiment(P.validate(P.ExperimentParams, TINY), rec, backend=backend)
    assert backend.opened == ["macvlan", "macvlan"]  # vpp was never built
    s = R.searches_frame(rec)
    assert list(s["model"]) == ["macvlan", "macvlan"] and list(s["repetition"]) == [0, 1]
    for ndr in s["throughput_pps"]:
        # -5 %: scheduler hiccups on a shared 2-CPU host overflow the 64-frame bucket.
        assert CAPACITY_PPS * 0.95 <= ndr <= BUFFER_BOUND * 1.02, ndr
    # Latency under load: the default fractions 0/10/50/90 % of each repetition's NDR
    # (no PDR searched), 0 = probes only at the probe rate.
    lat = R.latency_frame(rec)
    assert len(lat) == 2 * 4 and list(lat["load_fraction"]) == [0.0, 0.1, 0.5, 0.9] * 2
    assert (lat["goal"] == "ndr").all()
    for rep, ndr in enumerate(s["throughput_pps"]):
        rates = lat[lat["repetition"] == rep]["rate_pps"].tolist()
        assert rates == [200.0, pytest.approx(0.1 * ndr), pytest.approx(0.5 * ndr), pytest.approx(0.9 * ndr)]
    # Below capacity tbf's queue (128 frames of 124 B at 20 kpps) holds a frame at most 6.4 ms.
    assert ((lat["p50_ns"] > 0) & (lat["p50_ns"] < 6_400_000)).all(), lat["p50_ns"].tolist()
    trials = [r["result"] for r in read_records(rec) if r["type"] == "trial" and r["labels"]["purpose"] == "latency"]
    probes_only = [t for t in trials if t["extra"]["load_fraction"] == 0.0]
    assert all(t["sent_packets"] == t["directions"][0]["latency"]["probes_sent"] == 100 for t in probes_only)
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
    assert lab_residue() == NO_RESIDUE


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
    assert lab_residue() == NO_RESIDUE


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


def test_progress_lines_count_estimate_and_stay_one_line_each():
    import io

    out = io.StringIO()
    bar = Progress("x", 4, stream=out)
    for _ in range(3):
        bar.trial()
    bar.update("macvlan 64 B rep 0", "ndr 1 pps")
    line = out.getvalue().strip()
    assert line.startswith("x: 1/4 macvlan 64 B rep 0: ndr 1 pps; 3 trials, elapsed ")
    assert line.endswith(" left") and "\r" not in line and "\n" not in line


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
    assert lab_residue() == NO_RESIDUE


@pytest.mark.lab
def test_a_refused_run_writes_nothing(clean_host, tmp_path, monkeypatch):
    import subprocess
    import sys

    holder = subprocess.Popen([sys.executable, "-c", "import time\nfrom nfvlab.system.hostlock import HostLock\n"
                               "with HostLock('someone else'):\n    print('held', flush=True)\n    time.sleep(30)"],
                              stdout=subprocess.PIPE, text=True)
    monkeypatch.setenv("NFVLAB_LOCK_WAIT_S", "0")
    try:
        assert holder.stdout.readline().strip() == "held"
        from nfvlab.system.hostlock import LabBusy

        with pytest.raises(LabBusy, match="someone else"):
            run_experiment(P.validate(P.ExperimentParams, RESUMABLE), tmp_path / "raw.jsonl",
                           backend=KnownCapacityLab(CAPACITY_PPS), progress=False)
        assert not (tmp_path / "raw.jsonl").exists()
    finally:
        holder.kill()
        holder.wait()


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
    assert lab_residue() == NO_RESIDUE


def test_an_mtu_above_what_a_models_ports_carry_is_refused_before_any_lab(tmp_path):
    if EmbeddedLab().check(Scenario("ovs-dpdk-vhost")) != []:
        pytest.skip("ovs-dpdk-vhost not realizable here")
    bad = {**TINY, "models": ["ovs-dpdk-vhost"], "mtu_bytes": [1500, 9000]}
    with pytest.raises(InputError, match=r"^mtu_bytes: 9000 is above what ovs-dpdk-vhost's ports carry on "
                                         r"the embedded lab \(1500\)$"):
        run_experiment(P.validate(P.ExperimentParams, bad), tmp_path / "x.jsonl", progress=False)
    assert not (tmp_path / "x.jsonl").exists()
