"""The report: provenance, claims summary, formatted tables, changes between runs; the notebook rendered to HTML.

Synthetic records with known statistics (``tests/test_analysis_bcd.py``'s writers and
:func:`a_records` here) go through the real analysis into a pipeline-like tree
(``raw/``, ``tables/experiment_<x>/``, ``figures/``), which the report reads.
"""
import subprocess
import sys
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import papermill as pm
import pytest
from scipy import stats as st

from nfvlab import experiments, report
from nfvlab.records import RecordWriter
from test_analysis_bcd import D_MEANS, b_records, c_records, d_records

REPO = Path(__file__).resolve().parents[1]
#: Provenance of the synthetic runs: what the header must show (nothing of it is in nfvlab/report/).
PROVENANCE = {"cpu_model": "Test CPU 9000", "cpu_count": 7, "cpu_affinity_count": 5, "numa_nodes": 1,
              "kernel": "9.9.9-test", "git_revision": "0123456789abcdef0123", "git_dirty": True,
              "lab": {"lab_kind": "embedded"},
              "generator": {"identity": {"name": "nfvlab-gen", "version": "v-test", "ports": "af_packet on veth",
                                         "sched": "fifo"},
                            "ceilings": {"64": {"ceiling_pps": 185_500.0}, "1518": {"ceiling_pps": 249_900.0}}}}
#: Experiment A's two runs: per (model, frame size) the mean rate; macvlan 64 B halves (flagged).
A_RUNS = ({("macvlan", 64): 200_000, ("macvlan", 1518): 150_000, ("linux-bridge", 64): 80_000},
          {("macvlan", 64): 100_000, ("macvlan", 1518): 153_000, ("linux-bridge", 64): 80_000})


def a_records(path, runs=A_RUNS, reps=3, noise=0.002, seed=1, not_realizable=("vpp", "real lab only")):
    """Experiment A: one run per dict of ``runs`` (mean per (model, frame size)), same provenance."""
    rng = np.random.default_rng(seed)
    for means in runs:
        with RecordWriter(path, "a", {"repetitions": reps, "source": "params/quick/experiment_a.yaml",
                                      "lab": {"kind": "embedded"}}, provenance=PROVENANCE) as rec:
            rec.note(f"not realizable: {not_realizable[1]}", kind="not-realizable", model=not_realizable[0])
            for rep in range(reps):
                for (m, fs), mean in means.items():
                    rec.search({"goal": "ndr", "method": "synthetic", "loss_ratio": 0.0,
                                "throughput_pps": float(mean * (1 + noise * rng.standard_normal())),
                                "generator_limited": None if m == "linux-bridge" else False},
                               model=m, frame_size=fs, repetition=rep)
    return path


def build_outputs(root: Path, a_noise: float = 0.002) -> Path:
    """A pipeline-like tree under ``root`` from synthetic records: raw/, tables/experiment_<x>/, figures/."""
    raw = root / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    a_records(raw / "experiment_a.jsonl", noise=a_noise)
    b_records(raw / "experiment_b.jsonl", {"shared": 90_000, "none": 80_000})
    c_records(raw / "experiment_c.jsonl", 120_000, 100_000)
    d_records(raw / "experiment_d.jsonl", D_MEANS)
    models = {"a": ["linux-bridge", "macvlan", "vpp"]}
    for letter in "abcd":
        experiments.write_experiment(letter, raw / f"experiment_{letter}.jsonl", models.get(letter),
                                  root / "tables" / f"experiment_{letter}",
                                  root / "figures" / "experiments" / f"experiment_{letter}",
                                  root / "metrics" / f"experiment_{letter}.json")
    return root


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    return build_outputs(tmp_path_factory.mktemp("report"))


def _section(secs, prefix):
    return next(s for s in secs if s.title.startswith(prefix))


def test_interval_text_formats_kpps_and_clips_negative_lower_bounds():
    assert report.interval_text(79_200, 72_000, 86_400) == "79.2 [72.0, 86.4]"
    assert report.interval_text(3_000, -6_812.7, 12_812.7) == "3.0 [0.0*, 12.8]"
    assert report.interval_text(5_000, np.nan, np.nan) == "5.0"  # n = 1: no interval
    assert report.interval_text(np.nan, np.nan, np.nan) == "—"
    assert report.interval_text(8_263, 7_794.4, 8_731.6) == "8.3 [7.8, 8.7]"  # ns -> µs


def test_flag_text_keeps_unknown_apart_from_false():
    assert [report.flag_text(v) for v in (True, False, None, np.nan, "False", "True")] == \
        ["yes", "no", "unknown", "unknown", "no", "yes"]


def test_format_table_rates_cv_units_dash_with_reason_and_unknown():
    t = pd.DataFrame({"model": ["a", "b", "c"], "frame_size": [64, 64, 64],
                      "status": ["measured", "measured", "not realizable: needs a NIC"], "n": [3, 3, 0],
                      "mean_pps": [79_200.0, 3_000.0, np.nan], "ci_low_pps": [72_000.0, -6_812.7, np.nan],
                      "ci_high_pps": [86_400.0, 12_812.7, np.nan], "cv": [0.036481, 0.5, np.nan],
                      "gbps_l1": [0.0532, 0.002, np.nan], "generator_limited": [False, np.nan, np.nan],
                      "n_irregular": [0, 1, np.nan], "draft11_fig13_gbps": [4.78, np.nan, 2.34]})
    f = report.format_table(t)
    assert list(f.index) == [0, 1, 2]
    assert list(f.columns[:4]) == ["model", "frame size [B]", "NDR [kpps] mean [95 % CI]", "n"]
    assert f["NDR [kpps] mean [95 % CI]"].tolist() == ["79.2 [72.0, 86.4]", "3.0 [0.0*, 12.8]", "—"]
    assert f["CV [%]"].tolist() == ["3.6", "50.0", "—"]
    assert f["generator-limited"].tolist() == ["no", "unknown", "—"]
    assert f["draft11 fig13 [Gbps]"].tolist() == ["4.78", "—", "2.34"]
    assert f["why no value"].tolist() == ["", "", "not realizable: needs a NIC"]
    assert not f.apply(lambda c: c.astype(str).str.contains("nan", case=False)).any().any()


def test_split_columns_repeats_keys_and_keeps_every_column():
    wide = pd.DataFrame({f"c{i}": [i] for i in range(20)}).rename(columns={"c0": "model", "c1": "frame size [B]"})
    parts = report.split_columns(wide, ["model", "frame size [B]"], max_columns=8)
    assert [len(p.columns) for p in parts] == [8, 8, 8]
    assert all(list(p.columns[:2]) == ["model", "frame size [B]"] for p in parts)
    assert sorted({c for p in parts for c in p.columns}) == sorted(wide.columns)
    assert report.split_columns(wide.iloc[:, :5], ["model"], max_columns=8)[0].shape == (1, 5)


def test_provenance_from_the_records_not_hard_coded(outputs):
    prov = report.provenance_table(outputs / "raw")
    a = prov[prov["experiment"] == "A"].iloc[0]
    assert a["host_cpu"] == "Test CPU 9000" and a["cores"] == 5 and a["kernel"] == "9.9.9-test"
    assert a["git_revision"] == "0123456789ab+dirty" and a["links"] == "af_packet on veth"
    assert a["lab_kind"] == "embedded" and a["profile"] == "params/quick/experiment_a.yaml"
    assert a["ceiling"] == "64 B: 185.5 kpps; 1518 B: 249.9 kpps" and a["generator"] == "nfvlab-gen v-test sched=fifo"
    b = prov[prov["experiment"] == "B"].iloc[0]  # records without these facts say so
    assert b["host_cpu"] == "unknown" and b["ceiling"] == "unknown (not calibrated)" and b["cores"] == 2
    secs = report.sections(outputs / "tables", outputs / "figures")
    head = secs[0]
    assert head.title.startswith("Provenance") and "vCPU" not in head.text
    shown = head.table.data
    assert list(shown.columns) == ["field", "A", "B", "C", "D"]  # transposed: one column per experiment
    assert "Test CPU 9000" in shown["A"].tolist()


def test_claims_summary_counts_every_verdict(outputs):
    claims = report.claims_table(outputs / "tables")
    summary = report.claims_summary(claims)
    assert list(summary.columns) == ["experiment", "holds", "contradicted", "inconclusive", "metric-dependent",
                                      "not testable", "total"]
    for exp in ("A", "B", "C"):
        rows = claims[claims["experiment"] == exp]
        got = summary[summary["experiment"] == exp].iloc[0]
        assert got["total"] == len(rows) > 0
        assert got["holds"] == (rows["verdict"] == "holds").sum()
        assert got["not testable"] == (rows["verdict"] == "not testable").sum()
    assert summary.iloc[-1]["experiment"] == "all" and summary.iloc[-1]["total"] == len(claims)
    c = summary[summary["experiment"] == "C"].iloc[0]
    assert c["holds"] >= 1 and c["not testable"] >= 1  # combined 120k > user-space 100k; NUMA needs 2 nodes
    secs = report.sections(outputs / "tables", outputs / "figures")
    per_claim = _section(secs, "Claims: verdict, reason").table.data
    assert (per_claim.loc[per_claim["verdict"] == "not testable", "p (Holm)"] == "—").all()
    tested = per_claim.loc[per_claim["verdict"] == "holds", "p (Holm)"].astype(float)
    assert (tested < 0.05).all() and len(tested)
    assert per_claim["reason"].ne("").all()
    open_ = per_claim["verdict"] == "inconclusive"
    for col in ("detectable at this n [ratio - 1]", "repetitions that would decide"):
        assert (per_claim.loc[~open_, col] == "—").all()
        assert (per_claim.loc[open_, col] != "—").all()


def test_claims_table_shows_what_would_decide_an_inconclusive_claim():
    t = pd.DataFrame({"claim": ["x > y", "x > z", "x > w"], "condition": ["64 B"] * 3,
                      "verdict": ["inconclusive", "inconclusive", "holds"], "reason": ["r1", "r2", "r3"],
                      "p_adjusted": [0.2, 0.6, 0.001], "effect_size": [0.08, -0.01, 3.2],
                      "effect_size_kind": ["ratio - 1"] * 3, "n": [3, 3, 3], "mde": [0.31, 2.5, np.nan],
                      "n_needed": [9, np.nan, np.nan]})
    f = report.format_table(t)
    assert f["effect"].tolist() == ["+8.0 %", "-1.0 %", "x4.2"]
    assert f["detectable at this n [ratio - 1]"].tolist() == ["+31.0 %", "x3.5", "—"]
    assert f["repetitions that would decide"].tolist() == ["9", "> 50", "—"]


def test_run_changes_flag_the_configuration_that_halved(outputs):
    ch = report.run_changes(outputs / "raw" / "experiment_a.jsonl")
    mv64 = ch[(ch["model"] == "macvlan") & (ch["frame_size"] == "64")].iloc[0]
    assert mv64["previous_pps"] == pytest.approx(200_000, rel=0.01)
    assert mv64["change"] == pytest.approx(-0.5, abs=0.01) and mv64["flagged"]
    assert ch.loc[ch["model"] == "linux-bridge", "flagged"].tolist() == [False]
    assert ch["flagged"].sum() == 1  # 1518 B moved +2 %: under the 10 % threshold
    assert report.run_changes(outputs / "raw" / "experiment_b.jsonl").empty  # one run only
    secs = report.sections(outputs / "tables", outputs / "figures")
    sec = _section(secs, "Experiment A: changes against the previous run")
    assert sec.text.startswith("1 of 3 configurations")
    assert sec.table.data["change [%]"].tolist() == [f"{mv64['change'] * 100:+.1f}"]


def test_sections_order_formatting_and_not_run_yet(outputs, tmp_path):
    secs = report.sections(outputs / "tables", outputs / "figures")
    titles = [s.title for s in secs]
    assert titles[:4] == ["Provenance of the local numbers", "Contents", "Claims summary",
                          "Claims: verdict, reason and what would decide it"]
    assert all(t in secs[1].text for t in ("Claims summary", "Experiment A:", "Experiment D:", "Published"))
    # Local results before the published reference figures.
    first_local = next(i for i, s in enumerate(secs) if s.figures)
    assert titles[first_local].startswith("Experiment A") and titles[-1].startswith("Published reference")
    order = [next(i for i, t in enumerate(titles) if t.startswith(f"Experiment {x}:")) for x in "ABCD"]
    assert order == sorted(order)
    tput = _section(secs, "Throughput per model and frame size").table
    shown = tput.data
    assert "<th" in tput.to_html() and 'class="row_heading' not in tput.to_html()  # no index column
    lb = shown[shown["model"] == "linux-bridge"].iloc[0]
    assert lb["generator-limited"] == "unknown"  # not recorded != False
    vpp = shown[shown["model"] == "vpp"]
    assert (vpp["NDR [kpps] mean [95 % CI]"] == "—").all()
    assert vpp["why no value"].str.startswith("not realizable: real lab only").all()
    b_lat = [s for s in secs if s.title.startswith("Latency under load")]
    assert len(b_lat) == 4 and all("No latency trials" in s.text and s.table is None for s in b_lat)
    figs = [f.name for s in secs for f in s.figures]
    assert "experiment_b_pinning_numa.png" in figs and "experiment_d_mrr_csc_64.png" in figs
    assert all(Path(f).exists() for s in secs for f in s.figures)
    empty = report.sections(tmp_path / "tables", tmp_path / "figures")
    a = _section(empty, "Experiment A:")
    assert "Not run yet" in a.text and a.table is None
    assert "*Unknown*" in empty[0].text


def test_negative_t_interval_is_clipped_and_said(tmp_path):
    root = build_outputs(tmp_path, a_noise=0.6)  # n = 3, CV ~ 60 %: the t interval reaches below 0
    t = pd.read_csv(root / "tables" / "experiment_a" / "experiment_a_throughput.csv")
    assert (t["ci_low_pps"] < 0).any()
    sec = _section(report.sections(root / "tables", root / "figures"), "Throughput per model and frame size")
    cells = sec.table.data["NDR [kpps] mean [95 % CI]"]
    assert cells.str.contains(r"\[0\.0\*, ", regex=True).any() and not cells.str.contains(r"\[-").any()
    assert report.CLIPPED_NOTE in sec.text


def test_latency_percentiles_per_model_in_microseconds():
    lat = pd.DataFrame({"model": ["m"] * 2 + ["k"] * 2, "frame_size": [64] * 4, "goal": ["ndr"] * 4,
                        "load_fraction": [0.0] * 4, "percentile": ["p50", "p99"] * 2, "quantile": [50, 99] * 2,
                        "n": [3] * 4, "mean_ns": [8_263.0, 20_000.0, 1_000.0, 2_000.0],
                        "ci_low_ns": [7_794.4, -500.0, 900.0, 1_900.0],
                        "ci_high_ns": [8_731.6, 40_500.0, 1_100.0, 2_100.0]})
    t = report.latency_text(lat)
    assert list(t.columns) == ["model", "n", "p50 [µs]", "p99 [µs]"]
    assert t["p50 [µs]"].tolist() == ["8.3 [7.8, 8.7]", "1.0 [0.9, 1.1]"]
    assert t["p99 [µs]"].tolist()[0] == "20.0 [0.0*, 40.5]"
    assert t.attrs["fixed"] == "frame size [B] 64, goal ndr, load [% of rate] 0"
    two_loads = report.latency_text(pd.concat([lat, lat.assign(load_fraction=0.9)]))
    assert two_loads["model"].tolist() == ["m", "m", "k", "k"]  # per model, each load
    assert two_loads["load [% of rate]"].tolist() == ["0", "90", "0", "90"]


def test_notebook_runs_and_renders_html_without_code(outputs, tmp_path):
    out_nb = tmp_path / "report.out.ipynb"
    pm.execute_notebook(str(REPO / "notebooks/report.ipynb"), str(out_nb),
                        parameters={"tables_dir": str(outputs / "tables"), "figures_dir": str(outputs / "figures"),
                                    "records_dir": str(outputs / "raw")},
                        cwd=str(REPO), kernel_name="python3", progress_bar=False)
    nb = nbformat.read(out_nb, as_version=4)
    assert not [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
                if o.get("output_type") == "error"]
    subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", "--no-input",
                    "--output-dir", str(tmp_path), str(out_nb)], check=True, capture_output=True)
    html = (tmp_path / "report.out.html").read_text()
    assert "Experiment B: CPU pinning x NUMA alignment" in html and "<th" in html
    assert "data:image/png;base64," in html and "Test CPU 9000" in html
    assert "report.sections" not in html and "display(Markdown" not in html


@pytest.mark.parametrize("letter,fast,other", [("a", "macvlan", "smartnic-direct"),
                                                ("c", "chain-userspace", "chain-combined")])
def test_two_labs_table_puts_the_same_scenarios_side_by_side(tmp_path, letter, fast, other):
    from test_analysis import write

    for sub, caps in ((f"experiment_{letter}", {fast: 100_000, other: 120_000}),
                      (f"experiment_{letter}_kubernetes", {fast: 90_000})):
        rec = tmp_path / f"{sub}.jsonl"
        write(rec, caps, not_realizable=[(other, "on this cluster: no free NIC")]
              if sub.endswith("kubernetes") else ())
        experiments.write_experiment(letter, rec, [fast, other], tmp_path / "tables" / sub,
                                     tmp_path / "figures" / sub, tmp_path / f"{sub}.json")
    both = report.two_labs(tmp_path / "tables", letter)
    mv = both[both["model"] == fast].iloc[0]
    assert mv["kubernetes_vs_embedded"] == pytest.approx(0.9, rel=0.01)
    sd = both[both["model"] == other].iloc[0]
    assert sd["embedded_status"] == "measured" and sd["kubernetes_status"].startswith("not realizable: on this")
    assert sd["kubernetes_vs_embedded"] != sd["kubernetes_vs_embedded"]  # NaN: nothing to compare
    secs = report.sections(tmp_path / "tables", tmp_path / "figures")
    two = _section(secs, f"Experiment {letter.upper()} on two labs").table.data
    assert len(two) == 2
    sd_row = two[two["model"] == other].iloc[0]
    assert sd_row["kubernetes NDR [kpps] mean [95 % CI]"] == "— (not realizable)"
    assert sd_row["Kubernetes / embedded"] == "—" and "kubernetes: not realizable" in sd_row["why no value"]
    assert two[two["model"] == fast].iloc[0]["Kubernetes / embedded"] == f"{mv['kubernetes_vs_embedded']:.2f}"
    # the other experiment on two labs was not run here: its section says so
    rest = "c" if letter == "a" else "a"
    assert "*Not run yet*" in _section(secs, f"Experiment {rest.upper()} on two labs").text
    assert report.two_labs(tmp_path / "nowhere", letter) is None


def test_contents_links_match_the_heading_ids_nbconvert_writes():
    assert report.anchor("Experiment A: x (Figure 10), 5 %") == "#Experiment-A:-x-%28Figure-10%29,-5-%25"
    assert report.contents(["A b", "C"]) == "1. [A b](#A-b)\n2. [C](#C)"


def test_experiment_e_section_shows_goodput_and_requests_with_intervals_and_the_ipip_reason(tmp_path):
    from test_analysis_cni import IPIP_WHY, REPS, seed_world, write_records


    raw = tmp_path / "raw"
    raw.mkdir()
    write_records(raw / "experiment_e.jsonl", seed_world)
    experiments.write_experiment("e", raw / "experiment_e.jsonl", None, tmp_path / "tables" / "experiment_e",
                                  tmp_path / "figures" / "experiments" / "experiment_e", tmp_path / "m.json")
    secs = report.sections(tmp_path / "tables", tmp_path / "figures", raw)
    head = _section(secs, "Experiment E:")
    assert {f.name for f in head.figures} == {"experiment_e_tcp_goodput.png", "experiment_e_http_requests.png"}
    tcp = _section(secs, "TCP goodput").table.data
    row = tcp[(tcp["data path"] == "vxlan") & (tcp["link MTU [B]"] == "9000") & (tcp["direction"] == "node-pod")]
    # Known statistics: mean 8 Gbit/s, sd 1 % of it over 3 repetitions.
    half = st.t.ppf(0.975, REPS - 1) * 0.08 / REPS ** 0.5
    assert row["goodput [Gbit/s] mean [95 % CI]"].item() == f"8.00 [{8 - half:.2f}, {8 + half:.2f}]"
    assert row["pod MTU [B]"].item() == "8950" and row["n"].item() == "3"
    ipip = tcp[tcp["data path"] == "ipip"]
    assert len(ipip) == 4 and (ipip["goodput [Gbit/s] mean [95 % CI]"] == "—").all()
    assert (ipip["why no value"] == "not realizable").all()
    http = _section(secs, "HTTP requests/s")
    assert "no errors" in http.text and "HTTP errors" not in http.table.data.columns
    big = http.table.data[(http.table.data["direction"] == "host-pod") & (http.table.data["file [B]"] == "1000000")
                          & (http.table.data["link MTU [B]"] == "9000") & (http.table.data["data path"] == "direct")]
    assert big["requests/s mean [95 % CI]"].item().startswith("1000 [")
    gaps = _section(secs, "Experiment E: not realizable")
    assert gaps.text == f"**ipip**: {IPIP_WHY}."
    claims = report.claims_table(tmp_path / "tables")
    assert set(claims["experiment"]) == {"E"} and (claims["verdict"] == "not testable").sum() >= 1
    assert secs.index(head) > secs.index(_section(secs, "Experiment D:"))


def test_experiment_f_section_names_its_goal_mtu_and_the_frames_not_sent(tmp_path):
    from test_analysis_f import f_records, grid

    raw = tmp_path / "raw"
    raw.mkdir()
    f_records(raw / "experiment_f.jsonl", grid(60_000), grid(20_000), reps=3, noise=0.0)
    experiments.write_experiment("f", raw / "experiment_f.jsonl", None, tmp_path / "tables" / "experiment_f",
                              tmp_path / "figures" / "experiments" / "experiment_f", tmp_path / "m.json")
    secs = report.sections(tmp_path / "tables", tmp_path / "figures", raw)
    head = _section(secs, "Experiment F:")
    assert [f.name for f in head.figures] == ["experiment_f_throughput.png"]
    shown = secs[secs.index(head) + 1].table.data
    # The quick profile's goal (MRR) heads the rate column; the constant goal column is not repeated.
    assert "MRR [kpps] mean [95 % CI]" in shown.columns and "goal" not in shown.columns
    memif = shown[(shown["model"] == "ovs-dpdk-memif") & (shown["MTU [B]"] == "9000") & (shown["frame size [B]"] == "64")]
    assert memif["MRR [kpps] mean [95 % CI]"].item() == "60.0 [60.0, 60.0]"
    too_large = shown[(shown["MTU [B]"] == "1500") & (shown["frame size [B]"] == "9018")]
    assert len(too_large) == 2 and too_large["why no value"].str.startswith("frame too large: 9018 B").all()
    assert secs.index(head) > secs.index(_section(secs, "Experiment E:"))
    assert "F" in set(report.claims_table(tmp_path / "tables")["experiment"])


def test_two_labs_says_which_frame_sizes_a_profile_leaves_out_on_one_lab(tmp_path):
    from nfvlab.report.files import kubernetes_stem, own_dir
    from nfvlab.report.lab_comparison import NOT_IN_PROFILE, two_labs_text

    name = f"experiment_a_{experiments.get('a').kubernetes_table}.csv"
    cols = "model,frame_size,status,n,mean_pps,ci_low_pps,ci_high_pps\n"
    for d, rows in ((own_dir(tmp_path, "a"), ["m,64,measured,3,100000,90000,110000",
                                             "m,1518,measured,3,80000,70000,90000"]),
                    (tmp_path / kubernetes_stem("a"), ["m,64,measured,3,90000,80000,100000"])):
        d.mkdir(parents=True, exist_ok=True)
        (d / name).write_text(cols + "\n".join(rows) + "\n")
    both = report.two_labs(tmp_path, "a").sort_values("frame_size")
    assert both["kubernetes_status"].tolist() == ["measured", NOT_IN_PROFILE]
    assert both["kubernetes_vs_embedded"].iloc[0] == pytest.approx(0.9)
    text = two_labs_text(both)
    assert text["kubernetes NDR [kpps] mean [95 % CI]"].iloc[1] == "— (not measured)"
    assert "kubernetes: not measured: not in this profile on this lab" in text["why no value"].iloc[1]


@pytest.mark.parametrize("changed, shown", [(["dvc.lock", "metrics/experiment_a.json"], "0123456789ab"),
                                            (["dvc.lock", "nfvlab/trial.py"], "0123456789ab+dirty"),
                                            (None, "0123456789ab+dirty")])
def test_the_revision_is_dirty_only_when_the_measuring_code_differed(tmp_path, changed, shown):
    """The pipeline writes dvc.lock between its stages, so a clean run's later stages see a tree that git
    calls dirty: only measuring code that differed from the commit (or a record that cannot say which
    files) makes the revision ``+dirty``."""
    prov = {**PROVENANCE, "git_changed": changed} if changed is not None else PROVENANCE
    with RecordWriter(tmp_path / "experiment_a.jsonl", "a", {"repetitions": 1}, provenance=prov) as rec:
        rec.search({"goal": "ndr", "throughput_pps": 1.0}, model="macvlan", frame_size=64, repetition=0)
    assert report.provenance_table(tmp_path).iloc[0]["git_revision"] == shown
