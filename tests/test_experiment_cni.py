"""Experiment E on the shared seams: its params (nfvlab.params.CniExperimentParams), bad input, its
data paths realized through the lab-backend seam (real runs on the embedded CNI lab; the Kubernetes
lab's one-line reasons), the shared runner's records and resume (nfvlab.experiment).

The lab tests run the real tools (iperf3, nginx, wrk) on real namespaces under the host lock and
insist on no residue afterwards (test_labs_cni.locked_cni_residue, read under the host lock).
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import NO_RESIDUE, REPO
from support.adaptive_run import check_added_and_outcome
from test_labs_cni import locked_cni_residue

from nfvlab import experiment as X
from nfvlab import adaptive_run as AR
from nfvlab import claims, tool_runs
from nfvlab import run_records as RR
from nfvlab import params as P
from nfvlab.labs import LabError
from nfvlab.measure import InputError
from nfvlab.records import read_records, runs_frame
from nfvlab.scenario.cni import CniPath, CniScenario, Step, step_labels, steps
from nfvlab.traffic import tcp

TINY = {"data_paths": ["direct", "ipip"], "link_mtus_bytes": [1500], "tcp_directions": ["node-pod"],
        "http_directions": ["host-service"], "repetitions": 2,
        "iperf": {"parallel_streams": 2, "duration_s": 1}, "wrk": {"duration_s": 1, "file_bytes": [1000]}}


def _params(tmp_path, **over) -> Path:
    p = tmp_path / "e.yaml"
    p.write_text(json.dumps({"experiment": "e-test", **TINY, **over}))  # JSON is YAML
    return p


def _load(path) -> P.CniExperimentParams:
    return P.load(path, P.CniExperimentParams)


def test_profiles_load_and_the_quick_grid_is_the_documented_one():
    quick = _load(REPO / "params/quick/experiment_e.yaml")
    assert [p.label for p in quick.grid.paths()] == ["direct@1500", "direct@9000", "vxlan@1500", "vxlan@9000",
                                                     "ipip@1500", "ipip@9000"]
    assert quick.segmentation_offload is False and quick.grid.repetitions == 2
    # reps x (TCP directions + the A/A control's twin + HTTP directions x sizes)
    assert quick.grid.control and len(steps(quick.grid)) == 2 * (2 + 1 + 2 * 2)
    full = _load(REPO / "params/full/experiment_e.yaml")
    assert full.grid.link_mtus_bytes == (1450, 1500, 3000, 6000, 9000) and full.grid.repetitions >= 3
    assert full.grid.wrk.file_bytes == (1000, 10_000, 100_000, 1_000_000, 10_000_000)
    assert (full.grid.wrk.threads, full.grid.wrk.connections) == (5, 10)


def test_steps_walk_repetitions_then_tcp_then_http_by_size(tmp_path):
    exp = _load(_params(tmp_path, http_directions=["host-pod", "host-service"],
                        wrk={"duration_s": 1, "file_bytes": [1000, 5000]}))
    assert steps(exp.grid) == [Step(*s) for s in [
        (0, "tcp", "node-pod", None), (0, "http", "host-pod", 1000), (0, "http", "host-pod", 5000),
        (0, "http", "host-service", 1000), (0, "http", "host-service", 5000),
        (1, "tcp", "node-pod", None), (1, "http", "host-pod", 1000), (1, "http", "host-pod", 5000),
        (1, "http", "host-service", 1000), (1, "http", "host-service", 5000)]]
    # the A/A control: the first TCP direction again, right after it, as the twin
    twin = _load(_params(tmp_path, control=True))
    assert steps(twin.grid)[:3] == [Step(0, "tcp", "node-pod", None), Step(0, "tcp", "node-pod", None, True),
                                    Step(0, "http", "host-service", 1000)]
    no_tcp = _load(_params(tmp_path, control=True, tcp_directions=[], http_directions=["host-pod"],
                           wrk={"duration_s": 1, "file_bytes": [5000, 1000]}))
    assert no_tcp.grid.control_step() == ("http", "host-pod", 1000)  # else the first HTTP run, smallest file


@pytest.mark.parametrize("over, message", [
    ({"link_mtus_bytes": [1300], "data_paths": ["vxlan"]},
     (r"e\.yaml: link_mtus_bytes: link_mtu_bytes=1300: vxlan needs 50 B of overhead below the link MTU, leaving "
      r"1250 B for pods; give >= 1330$")),
    ({"data_paths": ["gre"]}, (r"e\.yaml: data_paths\.0: Input should be 'direct', 'vxlan', 'ipip' or "
                               r"'sriov-analogue' \(got 'gre'\)$")),
    ({"data_paths": []}, r"e\.yaml: data_paths: give at least one$"),
    ({"wrk": {"file_bytes": [0]}}, r"e\.yaml: wrk: file_bytes=0: give an integer 1\.\.100000000$"),
    ({"wrk": {"threads": 5, "files": [1]}}, r"e\.yaml: wrk: files: unknown key; allowed: connections, duration_s, "
                                            r"file_bytes, threads$"),
    ({"iperf": {"parallel_streams": True}}, r"e\.yaml: iperf: parallel_streams=True: give an integer 1\.\.128$"),
    ({"repetitions": "2"}, r"e\.yaml: repetitions: Input should be a valid integer \(got '2'\)$"),
    ({"segmentation_offload": "no"}, r"e\.yaml: segmentation_offload: Input should be a valid boolean \(got 'no'\)$"),
    ({"mtu": 1500}, r"e\.yaml: mtu: unknown key$"),
])
def test_bad_input_is_one_line_naming_the_file_and_field_before_anything_exists(tmp_path, over, message):
    with pytest.raises(P.ParamsError, match=message) as err:
        _load(_params(tmp_path, **over))
    assert "\n" not in str(err.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.yaml"]  # no records, nothing else


def test_the_cli_refuses_a_bad_grid_in_one_line_with_exit_2(tmp_path):
    r = subprocess.run([sys.executable, "-m", "nfvlab", "analyze", "e", "--params",
                        str(_params(tmp_path, data_paths=["gre"])), "--records", str(tmp_path / "none.jsonl"),
                        "--metrics", str(tmp_path / "m.json")], capture_output=True, text=True, cwd=REPO,
                       check=False)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"nfvlab: error: {tmp_path / 'e.yaml'}: data_paths.0: Input should be 'direct', 'vxlan', 'ipip' or "
        "'sriov-analogue' (got 'gre')"]


def test_a_records_path_that_is_a_directory_is_refused_before_the_lab(tmp_path):
    (tmp_path / "rec").mkdir()
    with pytest.raises(InputError, match="records"):
        X.run_experiment(_load(_params(tmp_path)), tmp_path / "rec", progress=False)
    assert list((tmp_path / "rec").iterdir()) == []


@pytest.mark.lab
def test_a_tiny_grid_records_every_tool_run_with_labels_and_ipip_as_not_realizable(tmp_path, clean_host, capsys):
    assert locked_cni_residue() == NO_RESIDUE
    records = tmp_path / "e.jsonl"
    run_id = X.run_experiment(_load(_params(tmp_path, control=True)), records, source="e.yaml")
    assert locked_cni_residue() == NO_RESIDUE
    recs = read_records(records)
    assert [r["type"] for r in recs] == ["run", "note", *["measurement"] * 6, "end"]
    run, note, end = recs[0], recs[1], recs[-1]
    assert run["run_id"] == run_id and end["status"] == "completed"
    assert run["params"]["source"] == "e.yaml" and len(run["params"]["fingerprint"]) == 16
    assert run["provenance"]["lab"]["lab_kind"] == "embedded"
    assert run["provenance"]["lab"]["tools"]["iperf3"].startswith("iperf 3")
    assert note["labels"] == {"kind": "not-realizable", "data_path": "ipip", "link_mtu_bytes": 1500}
    assert note["text"].startswith("not realizable: the kernel cannot create ipip devices")
    meas = recs[2:-1]
    assert [(m["tool"], m["labels"]["repetition"]) for m in meas] == [("iperf3", 0), ("iperf3", 0), ("wrk", 0),
                                                                     ("iperf3", 1), ("iperf3", 1), ("wrk", 1)]
    # the A/A control: node-pod and its twin side by side, the twin first in one repetition and
    # second in the other (scenario.cni.paired_order), labelled arm: twin and nothing else apart
    tcp_runs = [m["labels"] for m in meas if m["tool"] == "iperf3"]
    assert [lab.get("arm") for lab in tcp_runs[:2]] == [lab.get("arm") for lab in tcp_runs[:1:-1]]
    assert sorted(str(lab.get("arm")) for lab in tcp_runs) == ["None", "None", "twin", "twin"]
    original = next(m["labels"] for m in meas if m["tool"] == "iperf3" and "arm" not in m["labels"])
    assert original == {"data_path": "direct", "link_mtu_bytes": 1500, "pod_mtu_bytes": 1500,
                        "protocol": "tcp", "direction": "node-pod", "file_bytes": None, "repetition": 0,
                        "segmentation_offload": False}
    twin = next(m["labels"] for m in meas if m["labels"].get("arm") == "twin")
    assert twin == {**original, "arm": "twin"}
    for m in meas:
        r = m["result"]
        if m["tool"] == "iperf3":  # goodput is what the receiver counted over its interval, 2 streams
            assert r["goodput_bps"] == pytest.approx(r["received_bytes"] * 8 / r["duration_s"], rel=1e-6)
            assert r["parallel_streams"] == 2 and r["goodput_bps"] > 0
        else:  # through the service DNAT: every request answered with the 1000 B file
            assert r["errors"] == 0 and r["requests"] > 0 and r["transfer_bytes"] > 1000 * r["requests"]
    out = capsys.readouterr().out
    assert "e-test: 1 of 2 (data path, MTU) realizable on this embedded lab, 2 repetition(s): 6 tool runs" in out
    assert "e-test: 6/6 direct@1500 http host-service 1000 B rep 1: " in out
    assert "direct@1500 tcp node-pod (A/A twin) rep 0: " in out


@pytest.mark.lab
def test_an_interrupted_run_resumes_under_its_id_and_measures_only_what_it_lacks(tmp_path, clean_host, monkeypatch):
    records = tmp_path / "e.jsonl"
    exp = _load(_params(tmp_path, data_paths=["direct"]))
    real, calls = tcp.run_step, []

    def interrupted_at_third(lab, at, grid, step):
        calls.append(step)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(lab, at, grid, step)

    monkeypatch.setattr(tcp, "run_step", interrupted_at_third)
    monkeypatch.delenv("NFVLAB_FRESH_RUN", raising=False)
    with pytest.raises(KeyboardInterrupt):
        X.run_experiment(exp, records, progress=False)
    assert locked_cni_residue() == NO_RESIDUE
    first = runs_frame(records)
    assert list(first["status"]) == ["interrupted"] and list(first["measurements"]) == [2]
    calls.clear()
    monkeypatch.setattr(tcp, "run_step", lambda lab, at, grid, step: (calls.append(step), real(lab, at, grid, step))[1])
    run_id = X.run_experiment(exp, records, progress=False)
    assert calls == [Step(1, "tcp", "node-pod", None), Step(1, "http", "host-service", 1000)]
    assert run_id == first["run_id"].iloc[0]
    keys = [(m["labels"]["repetition"], m["tool"]) for m in read_records(records) if m["type"] == "measurement"]
    assert keys == [(0, "iperf3"), (0, "wrk"), (1, "iperf3"), (1, "wrk")]
    # Completed now: the same params again make a fresh run.
    monkeypatch.setenv("NFVLAB_FRESH_RUN", "1")
    assert RR.interrupted_run(records, read_records(records)[0]["params"]["fingerprint"], RR.TOOL_RUN_DONE) is None
    assert locked_cni_residue() == NO_RESIDUE


def test_segmentation_offload_label_follows_the_params(tmp_path):
    on = _load(_params(tmp_path, segmentation_offload=True))
    assert on.model_dump()["segmentation_offload"] is True
    (scenario, _ipip) = tool_runs.cni_scenarios(on)
    assert step_labels(scenario, Step(0, "tcp", "node-pod", None))["segmentation_offload"] is True
    off = _load(_params(tmp_path))
    assert step_labels(tool_runs.cni_scenarios(off)[0], Step(0, "tcp", "node-pod", None))["segmentation_offload"] is False


def _notebook(tmp_path, overrides: dict) -> tuple[subprocess.CompletedProcess, Path, Path]:
    """notebooks/experiment_e.py through nfvlab/notebook_run.py, as the DVC stage runs it."""
    out_nb, records = tmp_path / "e.out.ipynb", tmp_path / "e.jsonl"
    r = subprocess.run([sys.executable, "-m", "nfvlab.notebook_run", "--no-progress-bar",
                        str(REPO / "notebooks/experiment_e.py"), str(out_nb), "-p", "records", str(records),
                        "-y", json.dumps({"overrides": overrides})], cwd=REPO, capture_output=True, text=True,
                       timeout=600, env={**os.environ}, check=False)
    return r, out_nb, records


@pytest.mark.lab
def test_the_notebook_runs_a_tiny_grid_and_ends_with_tables_figures_and_claims(tmp_path, clean_host):
    from test_notebooks import _outputs

    tiny = {**TINY, "repetitions": 1, "adaptive": None}  # one repetition: a fixed-n run
    r, out_nb, records = _notebook(tmp_path, tiny)
    assert r.returncode == 0, r.stderr[-3000:]
    # the quick profile's A/A control: node-pod TCP and its twin, then HTTP
    assert [m["tool"] for m in read_records(records) if m["type"] == "measurement"] == ["iperf3", "iperf3", "wrk"]
    # Progress lines reach the guardian's stderr (the stage's log), not the saved notebook.
    assert "e-cni-tcp-http: 3/3 direct@1500 http host-service 1000 B rep 0: " in r.stderr
    text, mimes, errors = _outputs(out_nb)
    assert not errors and "e-cni-tcp-http:" not in text
    assert mimes.count("image/png") == 2  # TCP goodput vs MTU, HTTP requests/s vs file size
    for heading in ("### tcp", "### http", "### not realizable", "### claims (holds / contradicted"):
        assert heading in text, heading
    assert text.index("### not realizable") < text.index("### claims")
    assert "the kernel cannot create ipip devices" in text
    assert locked_cni_residue() == NO_RESIDUE


def test_the_notebook_refuses_a_bad_grid_in_one_line_before_any_lab(tmp_path):
    r, _out_nb, records = _notebook(tmp_path, {"wrk": {"file_bytes": [0]}})
    assert r.returncode != 0
    assert "ParamsError: params/quick/experiment_e.yaml (with overrides): wrk: file_bytes=0: give an integer " \
           "1..100000000" in r.stderr
    assert not records.exists()


# -- the Kubernetes lab through the same seam ------------------------------------------------------

def _k8s(monkeypatch, nodes: dict[str, list[str]]):
    """The Kubernetes backend of params/lab.kubernetes.yaml with the cluster's answers given: ``nodes``
    (pod -> Ready nodes it may go to); nothing else is asked of a cluster."""
    from nfvlab.labs.kubernetes import KubernetesLab

    k8s = KubernetesLab(P.load(REPO / "params/lab.kubernetes.yaml", P.LabParams))
    monkeypatch.setattr(k8s, "ready", lambda: [])
    monkeypatch.setattr(k8s, "describe", lambda: {"lab_kind": "kubernetes"})
    monkeypatch.setattr(k8s, "nodes_for", lambda pod, node=None: [{"metadata": {"name": n}} for n in nodes[pod]])
    return k8s


def test_the_kubernetes_lab_says_in_one_line_why_a_single_node_cluster_cannot_realize_a_data_path(monkeypatch):
    sc = CniScenario(CniPath("vxlan", 3000))
    one = _k8s(monkeypatch, {"pod1": ["nfvlab"], "pod2": ["nfvlab"]})
    assert one.check(sc) == ["vxlan@3000 cannot run on this cluster: it needs pod1 and pod2 on two different Ready "
                             "nodes; pod1 may go to nfvlab, pod2 to nfvlab (kubernetes.node, kubernetes.placement)"]
    assert one.mtu(sc) == 3000
    with pytest.raises(LabError, match="^vxlan@3000 cannot run on this cluster: it needs pod1 and pod2"):
        with one.open(sc):
            pass
    two = _k8s(monkeypatch, {"pod1": ["n1", "n2"], "pod2": ["n1"]})  # n2 and n1: two nodes, still not nfvlab's
    (why,) = two.check(sc)
    assert why.startswith("vxlan@3000 cannot run on this cluster: on a cluster the data path and the link MTU are "
                          "the primary CNI's") and "\n" not in why


def test_on_the_kubernetes_lab_every_path_and_mtu_is_a_not_realizable_note(tmp_path, monkeypatch):
    monkeypatch.setenv("NFVLAB_LOCK_WAIT_S", "900")  # the host lock: another test's lab may hold it
    records = tmp_path / "e.jsonl"
    k8s = _k8s(monkeypatch, {"pod1": ["nfvlab"], "pod2": ["nfvlab"]})
    X.run_experiment(_load(_params(tmp_path, link_mtus_bytes=[1500, 9000])), records, backend=k8s, progress=False)
    recs = read_records(records)
    assert [r["type"] for r in recs] == ["run", "note", "note", "note", "note", "end"]
    assert [(n["labels"], n["text"].split(": it needs")[0]) for n in recs[1:-1]] == [
        ({"kind": "not-realizable", "data_path": p, "link_mtu_bytes": m},
         f"not realizable: {p}@{m} cannot run on this cluster")
        for p in ("direct", "ipip") for m in (1500, 9000)]
    assert recs[0]["provenance"]["lab"]["lab_kind"] == "kubernetes" and recs[-1]["status"] == "completed"


# ---------------------------------------------------------------------------
# adaptive repetitions (params adaptive:): the glue records -> nfvlab.adaptive.run -> records
# ---------------------------------------------------------------------------
ADAPT_GRID = {**TINY, "data_paths": ["direct", "vxlan"], "tcp_directions": ["node-pod", "pod-pod"],
              "http_directions": [], "wrk": {"duration_s": 1, "file_bytes": [1000]}}
#: Two repetitions per configuration, rates in Gbit/s: direct > vxlan clearly at node-pod, node-pod
#: far above pod-pod on both paths (those three claims hold at the first look), direct ~ vxlan at
#: pod-pod (undecided).
FIRST = {("direct", "node-pod"): [10.0, 10.1], ("vxlan", "node-pod"): [5.0, 5.05],
         ("direct", "pod-pod"): [2.0, 2.1], ("vxlan", "pod-pod"): [2.05, 2.0]}


def _adaptive_params(tmp_path, **adaptive) -> P.CniExperimentParams:
    return _load(_params(tmp_path, **ADAPT_GRID, adaptive={"max_repetitions": 4, **adaptive}))


def _key(path, direction, mtu=1500):
    return AR.cni_config({"data_path": path, "link_mtu_bytes": mtu, "protocol": "tcp", "direction": direction})


def _recorded(extra=None):
    out = {_key(*k): dict(enumerate(v)) for k, v in FIRST.items()}
    for k, reps in (extra or {}).items():
        out[_key(*k)].update(reps)
    return out


def _glue(p, recorded, clock=None):
    """adapt() as the runner calls it; each added repetition's rate continues its configuration's
    alternation (deterministic values: the driver's decisions, not a lab, are under test)."""
    calls = []

    def measure_one(added):
        calls.append(added)
        return recorded[added.config][added.repetition % 2]

    kw = {"clock": clock} if clock else {}
    return AR.adapt(p, list(recorded), recorded, measure_one, **kw), calls


def test_repetitions_go_only_to_the_configurations_of_undecided_claims_and_say_why(tmp_path):
    out, calls = _glue(_adaptive_params(tmp_path), _recorded())
    undecided = {_key("direct", "pod-pod"), _key("vxlan", "pod-pod")}
    assert {a.config for a in out.added} == undecided
    assert calls == out.added  # every added repetition measured once, in the driver's order
    # looks at 3 and 4 repetitions (step 1, max 4): repetition 2 at look 1, 3 at look 2, per configuration
    assert sorted((a.config, a.repetition, a.look) for a in out.added) == sorted(
        (c, r, r - 1) for c in undecided for r in (2, 3))
    for a in out.added:
        assert a.reason == (f"look {a.look}: {_key('direct', 'pod-pod')} > {_key('vxlan', 'pod-pod')} undecided")
    assert out.stopped == "max repetitions"
    assert all(len(out.values[c]) == 4 for c in undecided)
    assert all(len(out.values[_key(*k)]) == 2 for k in FIRST if k[1] == "node-pod")


def _twin(path, mtu=1500):
    return AR.cni_config({"data_path": path, "link_mtu_bytes": mtu, "protocol": "tcp", "direction": "node-pod",
                         "arm": "twin"})


def test_the_a_a_twin_rides_along_with_its_original_and_asks_for_no_repetition_itself(tmp_path):
    """E's A/A control (``control``): a twin far from its original (an undecided A/A claim) gets no
    repetition while the original's claims are decided (session 30's run: the control drove E's looks
    and spent its seconds budget); once the original is repeated for a claim, the twin is repeated as
    often, each labelled why."""
    p = _load(_params(tmp_path, **ADAPT_GRID, control=True, adaptive={"max_repetitions": 4}))
    twins = {_twin("direct"): {0: 7.0, 1: 13.0}, _twin("vxlan"): {0: 3.0, 1: 7.0}}
    out, calls = _glue(p, {**_recorded(), **twins})
    assert {a.config for a in out.added} == {_key("direct", "pod-pod"), _key("vxlan", "pod-pod")}
    assert all(len(out.values[t]) == 2 for t in twins)
    # "direct beats vxlan" at node-pod now undecided too (vxlan noisy): node-pod repeated, each twin with it
    close = {**_recorded({("vxlan", "node-pod"): {0: 9.0, 1: 5.0}}), **twins}
    out, calls = _glue(p, close)
    for path in ("direct", "vxlan"):
        original = [(a.repetition, a.look) for a in out.added if a.config == _key(path, "node-pod")]
        riding = [(a.repetition, a.look) for a in out.added if a.config == _twin(path)]
        assert original and riding == original
        assert all(a.reason == f"along with {_key(path, 'node-pod')}" for a in out.added if a.config == _twin(path))
    assert calls == out.added


def test_the_seconds_budget_stops_before_a_repetition_that_would_exceed_it(tmp_path):
    t = [0.0]

    def clock():
        return t[0]

    p = _adaptive_params(tmp_path, seconds=15)
    rec = _recorded()
    calls = []

    def measure_one(added):  # each tool run takes 10 s of the injected clock
        calls.append(added)
        t[0] += 10.0
        return rec[added.config][added.repetition % 2]

    out = AR.adapt(p, list(rec), rec, measure_one, clock=clock)
    assert out.stopped == "seconds" and len(out.added) == len(calls) == 1  # 10 s spent; 10 more would pass 15
    assert out.seconds <= 15


def test_a_resumed_run_takes_the_added_repetitions_it_recorded_and_measures_only_the_rest(tmp_path):
    p = _adaptive_params(tmp_path)
    first, _ = _glue(p, _recorded())
    # interrupted after the first added repetition was recorded: the resumed run does not measure it again
    done = first.added[0]
    which = next(k for k in FIRST if _key(*k) == done.config)
    resumed, calls = _glue(p, _recorded({which: {done.repetition: FIRST[which][done.repetition % 2]}}))
    assert resumed.added == first.added  # the same decisions: the driver is deterministic given the values
    assert calls == first.added[1:]


def test_tool_values_read_this_run_a_failure_counts_and_a_zero_is_far_below(tmp_path):
    lab = {"data_path": "direct", "link_mtu_bytes": 1500.0, "protocol": "tcp", "direction": "node-pod",
           "file_bytes": None}
    recs = [{"type": "measurement", "run_id": "r", "labels": {**lab, "repetition": 0}, "result": {"goodput_bps": 3e9}},
            {"type": "note", "run_id": "r", "labels": {**lab, "repetition": 1, "kind": "measurement-failed"}},
            {"type": "measurement", "run_id": "r", "labels": {**lab, "repetition": 2, "added_look": 1,
                                                              "added_reason": "x"}, "result": {"goodput_bps": 0}},
            {"type": "measurement", "run_id": "other", "labels": {**lab, "repetition": 3},
             "result": {"goodput_bps": 1e9}},
            {"type": "measurement", "run_id": "r", "labels": {**lab, "protocol": "http", "direction": "host-pod",
                                                              "file_bytes": 1000, "repetition": 0},
             "result": {"requests_per_s": 500.0}}]
    got = AR.tool_values(recs, "r")
    tcp_key = _key("direct", "node-pod")
    assert list(got) == [tcp_key, "data_path=direct, link_mtu_bytes=1500, protocol=http, direction=host-pod, "
                                  "file_bytes=1000"]
    v = got[tcp_key]
    assert v[0] == 3.0 and v[1] != v[1] and v[2] == AR.ZERO_RATE and 3 not in v


def test_a_fixed_n_run_records_its_params_as_before_and_an_adaptive_one_its_plan(tmp_path):
    fixed = RR.params_dump(_load(_params(tmp_path)), "e.yaml")
    assert "adaptive" not in fixed
    adaptive = RR.params_dump(_adaptive_params(tmp_path, step=1, seconds=60), "e.yaml")
    assert adaptive["adaptive"] == {"max_repetitions": 4, "step": 1, "seconds": 60.0}
    assert adaptive["fingerprint"] != fixed["fingerprint"]


@pytest.mark.lab
def test_an_adaptive_run_adds_labelled_repetitions_within_its_plan_and_ends_with_its_outcome(tmp_path, clean_host,
                                                                                             capsys):
    """On the embedded lab (direct, HTTP host-pod ~ host-service at 1000 B, 1-s runs): whatever the
    rates, every added repetition is labelled with its look and reason, continues its configuration's
    repetitions, stays within max_repetitions, and the run ends with the outcome note; the analysis
    judges with the plan."""
    from nfvlab import analysis

    exp = _load(_params(tmp_path, data_paths=["direct"], tcp_directions=[],
                        http_directions=["host-pod", "host-service"],
                        adaptive={"max_repetitions": 3, "step": 1, "seconds": 30}))
    records = tmp_path / "e.jsonl"
    X.run_experiment(exp, records)
    assert locked_cni_residue() == NO_RESIDUE
    recs = read_records(records)
    check_added_and_outcome(recs, "measurement", 4, 2)
    assert recs[0]["params"]["adaptive"] == {"max_repetitions": 3, "step": 1, "seconds": 30.0}
    assert analysis.plan_of(records) == claims.Plan(2, 1, 3)
    assert "e-test: adaptive repetitions: stopped: " in capsys.readouterr().out
    # the paired claim's two directions side by side in every repetition, added ones included
    # (scenario.cni.paired_order), repetitions 0 and 1 in opposite orders
    meas = [r["labels"] for r in recs if r["type"] == "measurement"]
    pairs = [meas[i:i + 2] for i in range(0, len(meas), 2)]
    assert all(a["repetition"] == b["repetition"] and {a["direction"], b["direction"]} == {"host-pod", "host-service"}
               for a, b in pairs)
    assert pairs[0][0]["direction"] != pairs[1][0]["direction"]
