"""Reference tables: shapes, spot values, status counts, and a re-parse of the seeds.

The seed re-parse tests read the published documents (``NFVLAB_SEEDS_DIR``,
default ``../shared/seeds`` beside the repository) with a parser independent of the one used to
write the CSVs and compare every cell; they are skipped when the seeds are absent.
"""
from __future__ import annotations

import math
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nfvlab import linerate
from nfvlab import reference as ref

#: The seed documents: ../shared/seeds beside the repository (CI's layout) unless NFVLAB_SEEDS_DIR says.
SEEDS = Path(os.environ.get("NFVLAB_SEEDS_DIR", Path(__file__).resolve().parents[2] / "shared" / "seeds"))
AXIS = [1, 2, 4, 6, 8, 10]
SIZES = [64, 128, 256, 512, 1024, 1280, 1518]


def _seed(prefix: str) -> Path:
    hits = sorted(SEEDS.glob(f"{prefix}_*.txt")) if SEEDS.is_dir() else []
    if not hits:
        pytest.skip(f"seed {prefix}_*.txt not available under {SEEDS}")
    return hits[0]


# --------------------------------------------------------------------------- shapes


@pytest.mark.parametrize(
    "name, rows",
    [
        ("models_throughput", 28),
        ("pinning_numa", 12),
        ("combination_throughput", 14),
        ("multipod_numa", 6),
        ("numa_scenarios_single", 4),
        ("numa_scenarios_multi", 6),
        ("density_mrr", 2 * 2 * 3 * 2 * 36),
        ("density_nf_view", 36),
        ("density_core_view", 36),
    ],
)
def test_shapes_and_provenance(name, rows):
    df = ref.load(name)
    assert len(df) == rows
    assert list(df.columns[:2]) == ["source", "table"]
    assert df["source"].nunique() == 1
    src = df["source"].iloc[0]
    if name.startswith("density"):
        assert src == ref.DENSITY_SOURCE
    else:
        assert src == ref.DRAFT_SOURCE
        assert re.fullmatch(r"Figure 1[0-7]", df["table"].iloc[0])
    assert df.notna().drop(columns=[c for c in ["mrr_mpps"] if c in df]).all().all()


def test_table_functions_match_load():
    pairs = {
        "models_throughput": ref.models_throughput,
        "pinning_numa": ref.pinning_numa,
        "combination_throughput": ref.combination_throughput,
        "multipod_numa": ref.multipod_numa,
        "density_mrr": ref.density_mrr,
        "density_nf_view": ref.density_nf_view,
        "density_core_view": ref.density_core_view,
    }
    assert set(pairs) | {"numa_scenarios_single", "numa_scenarios_multi"} == set(ref.table_names())
    for name, fn in pairs.items():
        pd.testing.assert_frame_equal(fn(), ref.load(name))
    pd.testing.assert_frame_equal(ref.numa_scenarios("single"), ref.load("numa_scenarios_single"))
    pd.testing.assert_frame_equal(ref.numa_scenarios(kind="multi"), ref.load("numa_scenarios_multi"))
    with pytest.raises(ValueError):
        ref.numa_scenarios("double")


def test_aliases_and_unknown():
    pd.testing.assert_frame_equal(ref.load("fig10"), ref.models_throughput())
    pd.testing.assert_frame_equal(ref.load("Figure 17"), ref.multipod_numa())
    with pytest.raises(KeyError):
        ref.load("figure 99")


def test_csv_files_are_clean():
    d = ref.reference_dir()
    for name in ref.table_names():
        path = d / f"{name}.csv"
        data = path.read_bytes()
        data.decode("utf-8")
        assert b"\r" not in data, path
        assert data.endswith(b"\n") and not data.endswith(b"\n\n"), path
        for line in data.decode().splitlines():
            assert line == line.rstrip(), (path, line)


def test_env_override(tmp_path, monkeypatch):
    for p in ref.reference_dir().glob("*.csv"):
        shutil.copy(p, tmp_path / p.name)
    f = tmp_path / "multipod_numa.csv"
    f.write_text(f.read_text().replace("39.31", "1.25"))
    monkeypatch.setenv("NFVLAB_REFERENCE_DIR", str(tmp_path))
    assert ref.reference_dir() == tmp_path
    assert ref.multipod_numa()["throughput_gbps"].iloc[0] == 1.25
    monkeypatch.delenv("NFVLAB_REFERENCE_DIR")
    assert ref.multipod_numa()["throughput_gbps"].iloc[0] == 39.31


# --------------------------------------------------------------------------- spot values


def _at(df, **kw):
    m = np.ones(len(df), dtype=bool)
    for k, v in kw.items():
        m &= (df[k] == v).to_numpy()
    sub = df[m]
    assert len(sub) == 1, kw
    return sub.iloc[0]


def test_fig10_spot_values():
    df = ref.models_throughput()
    assert list(dict.fromkeys(df["model"])) == [
        "userspace-vpp", "ebpf-ovs-afxdp", "ebpf-afxdp-cni", "smartnic-sriov"]
    assert list(dict.fromkeys(df["model_label"])) == [
        "Userspace (VPP)", "eBPF (OVS-AFXDP)", "eBPF (AFXDP CNI)", "Smart-NIC (SR-IOV)"]
    assert sorted(set(df["frame_size"])) == SIZES
    assert _at(df, model="userspace-vpp", frame_size=64)["throughput_gbps"] == 7.25
    assert _at(df, model="ebpf-ovs-afxdp", frame_size=1518)["throughput_gbps"] == 21.37
    assert _at(df, model="ebpf-afxdp-cni", frame_size=256)["throughput_gbps"] == 14.47
    assert _at(df, model="smartnic-sriov", frame_size=1024)["throughput_gbps"] == 39.10
    assert _at(df, model="smartnic-sriov", frame_size=1280)["throughput_gbps"] == 39.23
    assert df["frame_size"].dtype == np.int64 and df["throughput_gbps"].dtype == np.float64
    # every model rises monotonically with frame size and stays under 40GbE
    for _, g in df.groupby("model"):
        assert g.sort_values("frame_size")["throughput_gbps"].is_monotonic_increasing
    assert df["throughput_gbps"].max() < 40


def test_fig16_spot_values():
    df = ref.combination_throughput()
    assert list(dict.fromkeys(df["model"])) == ["userspace-vpp", "combined-sriov-vpp"]
    assert _at(df, model="userspace-vpp", frame_size=64)["throughput_gbps"] == 7.23
    assert _at(df, model="combined-sriov-vpp", frame_size=1280)["throughput_gbps"] == 39.33
    assert _at(df, model="combined-sriov-vpp", frame_size=1518)["throughput_gbps"] == 39.32
    # the draft's claim: the combination beats VPP alone at every size
    w = df.pivot(index="frame_size", columns="model", values="throughput_gbps")
    assert (w["combined-sriov-vpp"] > w["userspace-vpp"]).all()


def test_fig13_spot_values_and_claims():
    df = ref.pinning_numa()
    assert list(dict.fromkeys(df["pinning"])) == ["none", "exclusive", "shared"]  # draft row order
    assert dict(zip(df["pinning"], df["pinning_label"])) == {
        "none": "Without CMK", "exclusive": "CMK-Exclusive Mode", "shared": "CMK-shared Mode"}
    assert set(df["frame_size"]) == {1518}
    assert _at(df, pinning="none", scenario="s4")["throughput_gbps"] == 2.41
    assert _at(df, pinning="exclusive", scenario="s1")["throughput_gbps"] == 15.63
    assert _at(df, pinning="shared", scenario="s3")["throughput_gbps"] == 10.23
    w = df.pivot(index="scenario", columns="pinning", values="throughput_gbps")
    assert ((w["exclusive"] > w["shared"]) & (w["shared"] > w["none"])).all()
    assert (w.idxmax() == "s1").all()


def test_fig17_and_quirks():
    df = ref.multipod_numa()
    assert list(df["scenario"]) == [f"s{i}" for i in range(1, 7)]
    assert list(df["throughput_gbps"]) == [39.31, 23.67, 29.23, 37.25, 23.58, 29.36]
    assert set(df["frame_size"]) == {1518}
    assert df["note"].str.contains("single pod").all()

    multi = ref.numa_scenarios("multi")
    assert list(multi["scenario"]) == ["s1", "s2", "s3", "s4", "s5", "s6"]
    assert list(multi["label_in_draft"]) == ["s1", "s2", "s3", "s4", "s4", "s4"]
    assert (multi["note"].iloc[3:] != "").all() and (multi["note"].iloc[:3] == "").all()
    placement = {r.scenario: (r.nic_numa, r.vswitch_numa, r.pod1_numa, r.pod2_numa)
                 for r in multi.itertuples()}
    assert placement == {"s1": (0, 0, 0, 0), "s2": (0, 0, 0, 1), "s3": (0, 0, 1, 0),
                         "s4": (0, 1, 1, 1), "s5": (0, 1, 1, 0), "s6": (0, 1, 0, 1)}
    # C.2 text: split pods in s2, s3, s5, s6; pod2 on the vSwitch's node in s3, s6
    split = {s for s, (_, _, p1, p2) in placement.items() if p1 != p2}
    assert split == {"s2", "s3", "s5", "s6"}
    assert {s for s in split if placement[s][3] == placement[s][1]} == {"s3", "s6"}

    single = ref.numa_scenarios("single")
    assert [(r.nic_numa, r.vswitch_numa, r.pod_numa) for r in single.itertuples()] == [
        (0, 0, 0), (0, 0, 1), (0, 1, 1), (0, 1, 0)]
    assert list(single["label_in_draft"]) == list(single["scenario"])
    assert "|" in single["note"].iloc[3] and (single["note"].iloc[:3] == "").all()


def test_density_views_spot_values():
    nf = ref.density_nf_view()
    assert _at(nf, instances=10, nfs_per_instance=10)["total_nfs"] == 100
    assert _at(nf, instances=6, nfs_per_instance=8)["total_nfs"] == 48
    cv = ref.density_core_view()
    assert _at(cv, instances=1, nfs_per_instance=1)["physical_cores"] == 2
    assert _at(cv, instances=10, nfs_per_instance=10)["physical_cores"] == 150
    assert set(map(tuple, cv[["pcdr4sw", "pcmr4sw", "pcdr4nf", "pcmr4nf"]].to_numpy())) == {
        ("(1:1)", "(1:1)", "(1:1)", "(1:2)")}


def test_density_mrr_spot_values():
    df = ref.density_mrr()
    c = _at(df, testbed_id="csit-2n-skx-t22", pcdr4sw="(1:1)", topology="VSC", frame_size=64,
            instances=1, nfs_per_instance=1)
    assert (c["mrr_mpps"], c["status"], c["warmup_retries"], c["raw"]) == (6.1, "measured", False, "6.1")
    c = _at(df, testbed_id="csit-2n-skx-t22", pcdr4sw="(2:1)", topology="CSP", frame_size="IMIX",
            instances=1, nfs_per_instance=10)
    assert (c["mrr_mpps"], c["status"], c["warmup_retries"], c["raw"]) == (3.7, "measured", True, "3.7*")
    c = _at(df, testbed_id="csit-2n-skx-t22", pcdr4sw="(1:1)", topology="VSC", frame_size="IMIX",
            instances=8, nfs_per_instance=2)
    assert math.isnan(c["mrr_mpps"])
    assert (c["status"], c["warmup_retries"], c["raw"]) == ("not_measured", True, "???*")
    c = _at(df, testbed_id="csit-2n-skx-t22", pcdr4sw="(1:1)", topology="VSC", frame_size=64,
            instances=10, nfs_per_instance=1)
    assert math.isnan(c["mrr_mpps"]) and (c["status"], c["warmup_retries"]) == ("not_measured", False)
    c = _at(df, testbed_id="equinix-2n-skx", pcdr4sw="(2:1)", topology="CSC", frame_size=64,
            instances=2, nfs_per_instance=1)
    assert c["mrr_mpps"] == 10.4
    c = _at(df, testbed_id="equinix-2n-skx", pcdr4sw="(1:1)", topology="CSP", frame_size=64,
            instances=10, nfs_per_instance=1)
    assert math.isnan(c["mrr_mpps"]) and c["status"] == "impossible" and c["raw"] == "---"
    c = _at(df, testbed_id="csit-2n-skx-t22", pcdr4sw="(2:1)", topology="CSC", frame_size=64,
            instances=2, nfs_per_instance=1)
    assert c["mrr_mpps"] == 11.8
    assert df["mrr_mpps"].max() == 11.8


# --------------------------------------------------------------------------- density status


def test_density_status_counts():
    df = ref.density_mrr()
    assert df["status"].value_counts().to_dict() == {
        "measured": 334, "impossible": 516, "not_measured": 14}
    assert int(df["warmup_retries"].sum()) == 34
    assert pd.crosstab(df["status"], df["warmup_retries"]).to_dict() == {
        False: {"impossible": 516, "measured": 306, "not_measured": 8},
        True: {"impossible": 0, "measured": 28, "not_measured": 6},
    }


def test_density_non_values_never_numbers():
    df = ref.density_mrr()
    assert set(df["status"]) == set(ref.DENSITY_STATUSES)
    measured = df["status"] == "measured"
    assert df.loc[measured, "mrr_mpps"].notna().all()
    assert df.loc[~measured, "mrr_mpps"].isna().all()
    assert (df["warmup_retries"] == df["raw"].str.endswith("*")).all()
    core = df["raw"].str.rstrip("*")
    assert (df.loc[df["status"] == "impossible", "raw"] == "---").all()
    assert (core[df["status"] == "not_measured"] == "???").all()
    assert np.allclose(df.loc[measured, "mrr_mpps"], core[measured].astype(float))
    assert (df["total_nfs"] == df["instances"] * df["nfs_per_instance"]).all()


def test_density_grid_is_complete():
    df = ref.density_mrr()
    keys = ["testbed_id", "pcdr4sw", "topology", "frame_size", "instances", "nfs_per_instance"]
    assert not df.duplicated(keys).any()
    assert set(df["testbed_id"]) == {"csit-2n-skx-t22", "equinix-2n-skx"}
    assert set(df["pcdr4sw"]) == {"(1:1)", "(2:1)"}
    assert set(df["pcmr4sw"]) == {"(1:1)"} and set(df["pcdr4nf"]) == {"(1:1)"}
    assert set(df["pcmr4nf"]) == {"(1:2)"}
    assert list(dict.fromkeys(df["topology"])) == ["VSC", "CSC", "CSP"]
    assert list(dict.fromkeys(df["frame_size"])) == [64, "IMIX"]
    assert sorted(set(df["instances"])) == AXIS and sorted(set(df["nfs_per_instance"])) == AXIS
    assert df.groupby(["testbed_id", "pcdr4sw", "topology", "frame_size"]).size().eq(36).all()
    # the "---" pattern is the same for 64B and IMIX of every matrix
    a = df[df["frame_size"] == 64].reset_index(drop=True)
    b = df[df["frame_size"] == "IMIX"].reset_index(drop=True)
    assert ((a["status"] == "impossible") == (b["status"] == "impossible")).all()


# --------------------------------------------------------------------------- pps helper


def test_published_pps_layer_is_explicit():
    df = ref.models_throughput()
    with pytest.raises(TypeError):
        ref.published_pps(df)  # no default layer
    with pytest.raises(ValueError):
        ref.published_pps(df, layer=3)
    l1 = ref.published_pps(df, layer=1)
    l2 = ref.published_pps(df, layer=2)
    i = df.index[(df["model"] == "smartnic-sriov") & (df["frame_size"] == 64)][0]
    assert l1[i] == pytest.approx(10.48e9 / ((64 + 20) * 8))
    assert l2[i] == pytest.approx(10.48e9 / (64 * 8))
    assert l1[i] == pytest.approx(linerate.gbps_to_pps(10.48, 64, layer=1))
    assert l1.name == "pps_l1" and (l2 > l1).all()
    out = ref.with_pps(df, layer=2)
    assert "throughput_mpps_l2" in out and "throughput_mpps_l2" not in df
    assert out.loc[i, "throughput_mpps_l2"] == pytest.approx(l2[i] / 1e6)


def test_published_pps_nan_and_imix():
    df = pd.DataFrame({"throughput_gbps": [1.0, np.nan], "frame_size": pd.Series(["IMIX", 64], dtype=object)})
    pps = ref.published_pps(df, layer=1)
    assert pps[0] == pytest.approx(1e9 / ((linerate.IMIX.mean_frame_bytes + 20) * 8))
    assert math.isnan(pps[1])


# --------------------------------------------------------------------------- seed re-parse


def _section(text: str, start: str, end: str) -> str:
    i = text.index(start)
    j = text.index(end, i)
    return text[i:j]


def test_seed_draft_figures_match():
    text = _seed("000").read_text(encoding="utf-8")

    def size_rows(block):
        out = {}
        for line in block.splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if cells and cells[0].isdigit():
                out[int(cells[0])] = [float(c) for c in cells[1:]]
        return out

    fig10 = size_rows(_section(text, "A.2.  Benchmarking Results", "Figure 10: Different"))
    df = ref.models_throughput()
    got = df.pivot(index="frame_size", columns="model", values="throughput_gbps")[
        ["userspace-vpp", "ebpf-ovs-afxdp", "ebpf-afxdp-cni", "smartnic-sriov"]]
    assert sorted(fig10) == SIZES
    for size, vals in fig10.items():
        assert list(got.loc[size]) == vals, size

    fig16 = size_rows(_section(text, "o Networking Model Combination Performance", "Figure 16: Networking"))
    got = ref.combination_throughput().pivot(index="frame_size", columns="model", values="throughput_gbps")
    assert sorted(fig16) == SIZES
    for size, vals in fig16.items():
        assert list(got.loc[size, ["userspace-vpp", "combined-sriov-vpp"]]) == vals, size

    block13 = _section(text, "CPU Pinning    |", "Figure 13: Different")
    rows13 = {}
    for line in block13.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and re.fullmatch(r"\d+\.\d+", cells[1]):
            rows13[cells[0]] = [float(c) for c in cells[1:]]
    df = ref.pinning_numa()
    assert set(rows13) == set(df["pinning_label"])
    for label, vals in rows13.items():
        sub = df[df["pinning_label"] == label].set_index("scenario")
        assert [sub.loc[f"s{i}", "throughput_gbps"] for i in range(1, 5)] == vals

    block17 = _section(text, "NUMA Alignment Scenarios          |\n         |", "Figure 17: Different")
    line = next(ln for ln in block17.splitlines() if "Throughput" in ln)
    vals17 = [float(c) for c in line.strip().strip("|").split("|")[1:]]
    assert list(ref.multipod_numa()["throughput_gbps"]) == vals17
    assert "single pod" in _section(text, "Figure 17: Different", "Appendix D.")

    def scen_rows(block):
        out = []
        for line in block.splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if cells and re.fullmatch(r"s\d", cells[0]):
                out.append((cells[0], [int(c.removeprefix("NUMA")) for c in cells[1:] if c]))
        return out

    fig12 = scen_rows(_section(text, "o NUMA Alignment Scenarios", "Figure 12: NUMA"))
    single = ref.numa_scenarios("single")
    assert [r[0] for r in fig12] == list(single["label_in_draft"])
    assert [r[1] for r in fig12] == single[["nic_numa", "vswitch_numa", "pod_numa"]].to_numpy().tolist()
    assert "NUMA0  ||" in _section(text, "o NUMA Alignment Scenarios", "Figure 12: NUMA")

    fig15 = scen_rows(_section(text, "different nodes.", "Figure 15: NUMA"))
    multi = ref.numa_scenarios("multi")
    assert [r[0] for r in fig15] == list(multi["label_in_draft"])
    assert [r[1] for r in fig15] == multi[
        ["nic_numa", "vswitch_numa", "pod1_numa", "pod2_numa"]].to_numpy().tolist()


_SECTIONS = {
    ("csit-2n-skx-t22", "(1:1)"): "FD.io CSIT 2n-skx, pcdr4sw = (1:1)",
    ("equinix-2n-skx", "(1:1)"): "Equinix Metal 2n-skx, pcdr4sw = (1:1)",
    ("csit-2n-skx-t22", "(2:1)"): "FD.io CSIT 2n-skx, pcdr4sw = (2:1)",
    ("equinix-2n-skx", "(2:1)"): "Equinix Metal 2n-skx, pcdr4sw = (2:1)",
}


def _parse_density_seed(text: str) -> dict:
    """{(testbed_id, pcdr4sw, topology, frame, instances, nfs): raw} from the note's text."""
    lines = text.splitlines()
    starts = sorted((lines.index(h), key) for key, h in _SECTIONS.items())
    cells = {}
    for n, (start, key) in enumerate(starts):
        stop = starts[n + 1][0] if n + 1 < len(starts) else len(lines)
        # every published ratio line of the section repeats the configuration
        assert f"pcdr4sw = {key[1]}, pcmr4sw = (1:1)" in "\n".join(lines[start:stop])
        i = start
        while i < stop:
            head = re.match(r"^\s*(VSC|CSC|CSP)((?:\s+\d{3}){6})\s+(VSC|CSC|CSP)((?:\s+\d{3}){6})\s*$", lines[i])
            if not head:
                i += 1
                continue
            assert re.match(r"^64B\s+IMIX\s*$", lines[i - 1])
            topo = head.group(1)
            assert head.group(3) == topo
            cols_left = [int(c) for c in head.group(2).split()]
            cols_right = [int(c) for c in head.group(4).split()]
            assert cols_left == cols_right == AXIS
            for row_line in lines[i + 1:i + 7]:
                toks = row_line.split()
                half = len(toks) // 2
                left, right = toks[:half], toks[half:]
                assert len(left) == len(right) == 7 and left[0] == right[0]
                inst = int(left[0])
                for frame, vals in ((64, left[1:]), ("IMIX", right[1:])):
                    for nfs, raw in zip(AXIS, vals):
                        k = (*key, topo, frame, inst, nfs)
                        assert k not in cells
                        cells[k] = raw
            i += 7
    return cells


def test_seed_density_mrr_matches_every_cell():
    text = _seed("001").read_text(encoding="utf-8")
    seed = _parse_density_seed(text)
    assert len(seed) == 864
    df = ref.density_mrr()
    mine = {
        (r.testbed_id, r.pcdr4sw, r.topology, r.frame_size, r.instances, r.nfs_per_instance): r.raw
        for r in df.itertuples()
    }
    assert mine == seed
    # and the section heading is the table's provenance
    for (tb, sw), heading in _SECTIONS.items():
        assert set(df.loc[(df["testbed_id"] == tb) & (df["pcdr4sw"] == sw), "table"]) == {heading}


def test_seed_status_token_counts():
    """Count '---', '???' and '*' in the note's matrix lines, independent of the layout parse."""
    text = _seed("001").read_text(encoding="utf-8")
    matrix_lines = [ln for ln in text.splitlines() if re.match(r"^\s*0(01|02|04|06|08|10)\s+\S+\s+\S+", ln)]
    toks = [t for ln in matrix_lines for t in ln.split() if not re.fullmatch(r"0\d\d", t)]
    # the two views (2 x 36 cells) have no '.', '-', '?' or '*'
    mrr = [t for t in toks if re.search(r"[.?*-]", t)]
    assert len(mrr) == 864
    n_imp = sum(t == "---" for t in mrr)
    n_nm = sum(t.rstrip("*") == "???" for t in mrr)
    n_star = sum(t.endswith("*") for t in mrr)
    n_num = sum(bool(re.fullmatch(r"\d+\.\d\*?", t)) for t in mrr)
    assert (n_num, n_nm, n_imp, n_star) == (334, 14, 516, 34)
    df = ref.density_mrr()
    assert (df["status"] == "impossible").sum() == n_imp
    assert (df["status"] == "not_measured").sum() == n_nm
    assert (df["status"] == "measured").sum() == n_num
    assert df["warmup_retries"].sum() == n_star


def test_seed_density_views_match():
    text = _seed("001").read_text(encoding="utf-8")

    def view(start, end):
        block = _section(text, start, end)
        out = {}
        for line in block.splitlines():
            toks = line.split()
            if len(toks) == 7 and re.fullmatch(r"0\d\d", toks[0]):
                for nfs, v in zip(AXIS, toks[1:]):
                    out[(int(toks[0]), nfs)] = int(v)
        return out

    nf = view("Network Function View", "Core Usage View")
    core = view("Core Usage View", "Methodology")
    assert len(nf) == len(core) == 36
    got_nf = {(r.instances, r.nfs_per_instance): r.total_nfs for r in ref.density_nf_view().itertuples()}
    got_core = {(r.instances, r.nfs_per_instance): r.physical_cores for r in ref.density_core_view().itertuples()}
    assert got_nf == nf
    assert got_core == core
    block = _section(text, "Core Usage View", "Methodology")
    assert "pcdr4sw = (1:1), pcmr4sw = (1:1)" in block and "pcdr4nf = (1:1), pcmr4nf = (1:2)" in block
