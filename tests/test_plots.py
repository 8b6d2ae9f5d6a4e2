"""Plot families and the reference figures (files written, byte-identical reruns)."""
from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from nfvlab import plots
from nfvlab import reference as ref
from nfvlab.plots.heatmap import matrix_heatmap
from nfvlab.plots.reference import render_reference_figures
from nfvlab.plots.throughput import throughput_vs_frame_size

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_package_exports():
    assert plots.throughput_vs_frame_size is throughput_vs_frame_size
    assert plots.matrix_heatmap is matrix_heatmap
    assert plots.render_reference_figures is render_reference_figures


def test_throughput_vs_frame_size_log2():
    df = ref.models_throughput()
    ax = throughput_vs_frame_size(df, hue="model_label", title="t")
    assert isinstance(ax.figure, Figure)
    assert ax.get_xscale() == "log"
    assert len(ax.get_lines()) == 4
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(dict.fromkeys(df["model_label"]))
    assert [t.get_text() for t in ax.get_xticklabels()] == [str(s) for s in sorted(set(df["frame_size"]))]
    x, y = ax.get_lines()[0].get_data()
    assert list(x) == [64, 128, 256, 512, 1024, 1280, 1518]
    assert list(y) == [7.25, 13.32, 19.26, 25.62, 30.12, 31.23, 31.26]


def test_throughput_vs_frame_size_categorical_and_repeats():
    df = pd.DataFrame({
        "frame_size": pd.Series([64, 64, "IMIX", "IMIX", 1518], dtype=object),
        "rate": [1.0, 3.0, 2.0, np.nan, 5.0],
        "dut": ["a", "a", "a", "a", "a"],
    })
    fig = Figure()
    ax = throughput_vs_frame_size(df, y="rate", hue="dut", ax=fig.subplots(), x_scale="categorical",
                                  reference_line=6.0, reference_label="line rate")
    lines = ax.get_lines()
    x, y = lines[0].get_data()
    assert list(x) == [0.0, 1.0, 2.0] and list(y) == [2.0, 5.0, 2.0]  # mean of repeats, NaN dropped
    assert [t.get_text() for t in ax.get_xticklabels()] == ["64", "1518", "IMIX"]
    assert len(ax.collections) == 1  # repeated points drawn
    with pytest.raises(ValueError):
        throughput_vs_frame_size(df, y="rate", x_scale="log2")
    with pytest.raises(ValueError):
        throughput_vs_frame_size(df, y="rate", x_scale="weird")
    with pytest.raises(KeyError):
        throughput_vs_frame_size(df, y="nope")


def _error_bars(ax):
    """(x, low, high) of every vertical error bar on ``ax``, sorted."""
    from matplotlib.container import ErrorbarContainer
    bars = []
    for c in ax.containers:
        if isinstance(c, ErrorbarContainer):
            for col in c.lines[2]:
                for seg in col.get_segments():
                    bars.append((float(seg[0][0]), float(min(seg[:, 1])), float(max(seg[:, 1]))))
    return sorted(bars)


def test_throughput_interval_is_drawn_as_error_bars():
    # A table row per point: mean and its interval (config_table's columns), one
    # point without an interval (n = 1): no bar there, never a made-up one.
    df = pd.DataFrame({"frame_size": [64, 512, 1518], "mean": [10.0, 9.0, 8.0],
                       "lo": [8.0, np.nan, 7.5], "hi": [13.0, np.nan, 8.25], "m": ["a"] * 3})
    ax = throughput_vs_frame_size(df, y="mean", hue="m", ci_low="lo", ci_high="hi")
    assert [b for b in _error_bars(ax) if b[1] != b[2]] == [(64.0, 8.0, 13.0), (1518.0, 7.5, 8.25)]
    bx = plots.bars.grouped_bars(df, x="frame_size", y="mean", ci_low="lo", ci_high="hi")
    assert [(lo, hi) for _, lo, hi in _error_bars(bx)] == [(8.0, 13.0), (7.5, 8.25)]


def _texts(ax):
    return [t.get_text() for t in ax.texts]


def test_matrix_heatmap_non_values_are_text_not_colour():
    df = ref.density_mrr()
    m = df[(df.testbed_id == "csit-2n-skx-t22") & (df.pcdr4sw == "(1:1)") & (df.topology == "VSC")
           & (df.frame_size == 64)]
    ax = matrix_heatmap(m, row="instances", col="nfs_per_instance", value="mrr_mpps", text="raw",
                        vmin=0, vmax=12)
    texts = _texts(ax)
    assert len(texts) == 36
    assert sorted(texts) == sorted(m["raw"])
    assert "???*" in texts and "---" in texts and "6.1" in texts
    mesh = ax.collections[0]
    arr = mesh.get_array()
    # non-values are masked out of the colour mesh
    assert int(np.ma.count_masked(arr)) == int(m["mrr_mpps"].isna().sum())
    assert int(np.ma.count(arr)) == int((m["status"] == "measured").sum())
    assert [t.get_text() for t in ax.get_yticklabels()] == ["1", "2", "4", "6", "8", "10"]


def test_matrix_heatmap_formatting_and_orders():
    df = ref.pinning_numa()
    ax = matrix_heatmap(df, row="pinning", col="scenario", value="throughput_gbps",
                        row_order=["none", "shared", "exclusive"], fmt=".1f")
    assert [t.get_text() for t in ax.get_yticklabels()] == ["none", "shared", "exclusive"]
    assert "15.6" in _texts(ax) and "4.8" in _texts(ax)
    df2 = pd.DataFrame({"r": [1, 1, 2], "c": ["a", "b", "a"], "v": [1.0, np.nan, 2.0]})
    ax = matrix_heatmap(df2, "r", "c", "v", missing_text="n/a", cbar=False)
    assert sorted(_texts(ax)) == ["1.00", "2.00", "n/a"]  # (2, "b") absent: blank
    with pytest.raises(ValueError):
        matrix_heatmap(pd.concat([df2, df2]), "r", "c", "v")


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    a = tmp_path_factory.mktemp("figs_a")
    b = tmp_path_factory.mktemp("figs_b")
    return render_reference_figures(a), render_reference_figures(b / "nested")


def test_reference_figures_written(rendered):
    paths, _ = rendered
    assert paths == sorted(paths)
    names = [p.name for p in paths]
    assert names == sorted([
        "draft11_fig10_models_throughput.png",
        "draft11_fig12_numa_scenarios_single.png",
        "draft11_fig13_pinning_numa.png",
        "draft11_fig15_numa_scenarios_multi.png",
        "draft11_fig16_combination_throughput.png",
        "draft11_fig17_multipod_numa.png",
        "density_mrr_csit-2n-skx-t22_pcdr4sw-1-1.png",
        "density_mrr_csit-2n-skx-t22_pcdr4sw-2-1.png",
        "density_mrr_equinix-2n-skx_pcdr4sw-1-1.png",
        "density_mrr_equinix-2n-skx_pcdr4sw-2-1.png",
        "density_nf_view.png",
        "density_core_view.png",
    ])
    for p in paths:
        data = p.read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 5000, p
        assert b"Software" not in data and b"matplotlib version" not in data, p


def test_reference_figures_byte_identical(rendered):
    a, b = rendered
    assert [p.name for p in a] == [p.name for p in b]
    for pa, pb in zip(a, b):
        assert hashlib.sha256(pa.read_bytes()).digest() == hashlib.sha256(pb.read_bytes()).digest(), pa.name


def test_reference_style_is_restored():
    import matplotlib as mpl

    before = dict(mpl.rcParams)
    from nfvlab.plots.reference import reference_style

    with reference_style():
        assert mpl.rcParams["axes.grid"] is True
    assert dict(mpl.rcParams) == before


def _spectrum_table():
    q = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0, "p99.9": 99.9}
    rows = [{"model": "m", "frame_size": fs, "goal": "ndr", "load_fraction": f, "percentile": name, "quantile": qv,
             "mean_ns": 1000.0 * (1 + f) * qv, "ci_low_ns": 1000.0 * (1 + f) * qv - 500,
             "ci_high_ns": 1000.0 * (1 + f) * qv + 500}
            for fs in (64, "IMIX") for f in (0.0, 0.9) for name, qv in q.items()]
    return pd.DataFrame(rows)


def test_latency_spectrum_one_line_per_load_on_a_percentile_axis(tmp_path):
    from nfvlab.plots.latency import spectrum_figure
    from nfvlab.plots.output import figure_style, save_png

    with figure_style(80):
        fig = spectrum_figure(_spectrum_table(), "t")
        axes = [ax for ax in fig.axes if ax.get_visible()]
        assert [ax.get_title() for ax in axes] == ["64 B", "IMIX"]
        ax = axes[0]
        lines = [c.lines[0] for c in ax.containers]  # the data line of each errorbar
        assert len(lines) == 2 and ax.get_xscale() == "log"
        # x = 1 / (1 - q): p50 at 2, p99.9 at 1000; y in us
        assert list(lines[1].get_xdata()) == pytest.approx([2, 10, 20, 100, 1000])
        assert list(lines[1].get_ydata()) == pytest.approx([1.9 * q for q in (50, 90, 95, 99, 99.9)])
        assert [t.get_text() for t in ax.get_xticklabels()] == ["p50", "p90", "p95", "p99", "p99.9"]
        assert ax.get_legend() is None  # one legend, right of the last panel
        assert [t.get_text() for t in axes[-1].get_legend().get_texts()] == ["0 %", "90 %"]
        a = save_png(fig, tmp_path / "a.png").read_bytes()  # saving draws: the layout is final
        assert _outside(axes[-1])
        b = save_png(spectrum_figure(_spectrum_table(), "t"), tmp_path / "b.png").read_bytes()
    assert a.startswith(PNG_MAGIC) and a == b


def _outside(ax) -> bool:
    """The legend lies right of the axes' data area (drawn figure)."""
    leg, box = ax.get_legend().get_window_extent(), ax.get_window_extent()
    return leg.x0 >= box.x1


def test_legends_sit_outside_the_data():
    df = ref.models_throughput()
    ax = throughput_vs_frame_size(df, hue="model_label")
    ax.figure.canvas.draw()
    assert _outside(ax)
    bx = plots.bars.grouped_bars(pd.DataFrame({"x": ["s1", "s1"], "y": [1.0, 2.0], "h": ["a", "b"]}), "x", "y", "h")
    bx.figure.canvas.draw()
    assert _outside(bx)


def test_bar_legend_names_every_level_also_one_without_a_bar():
    # Experiment B on a 2-CPU host: "exclusive" is not realizable anywhere, yet its slot is drawn.
    df = pd.DataFrame({"numa": ["s1"] * 3, "pinning": ["none", "shared", "exclusive"],
                       "kpps": [40.0, 36.0, np.nan], "status": ["measured", "measured", "not realizable: 4 CPUs"]})
    ax = plots.bars.grouped_bars(df, "numa", "kpps", "pinning", missing="status")
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["none", "shared", "exclusive"]
    assert "not realizable" in _texts(ax)
    colours = [tuple(h.get_facecolor()) for h in ax.get_legend().legend_handles]
    assert len(set(colours)) == 3


def test_interval_bars_never_reach_below_zero():
    # n = 3 with a wide spread: the t interval's lower bound is negative; a rate cannot be.
    df = pd.DataFrame({"frame_size": [64, 1518], "mean": [3.0, 8.0], "lo": [-6.8, 7.5], "hi": [12.8, 8.5],
                       "m": ["a", "a"]})
    ax = throughput_vs_frame_size(df, y="mean", hue="m", ci_low="lo", ci_high="hi")
    assert [b for b in _error_bars(ax) if b[1] != b[2]] == [(64.0, 0.0, 12.8), (1518.0, 7.5, 8.5)]
    bx = plots.bars.grouped_bars(df, x="frame_size", y="mean", ci_low="lo", ci_high="hi")
    assert [(lo, hi) for _, lo, hi in _error_bars(bx)] == [(0.0, 12.8), (7.5, 8.5)]
    from nfvlab.plots.latency import percentile_spectrum

    lat = _spectrum_table().assign(ci_low_ns=-1e6)  # every lower bound below 0
    sx = percentile_spectrum(lat[lat["frame_size"] == 64], Figure().subplots())
    assert min(lo for _, lo, _ in _error_bars(sx)) == 0.0


def test_experiment_d_heatmaps_share_one_colour_scale(tmp_path):
    from nfvlab import experiments
    from nfvlab.experiments import d as exp_d
    from test_analysis_bcd import D_MEANS, d_records

    tabs = experiments.tables("d", d_records(tmp_path / "d.jsonl", D_MEANS))
    seen = []
    real_heatmap = exp_d.matrix_heatmap

    def spy(*args, **kwargs):
        ax = real_heatmap(*args, **kwargs)
        seen.append((ax.collections[0].norm.vmin, ax.collections[0].norm.vmax))
        return ax

    exp_d.matrix_heatmap = spy
    try:
        paths = exp_d.figures_d(tabs, tmp_path)
    finally:
        exp_d.matrix_heatmap = real_heatmap
    assert len(paths) == len(seen) == 4
    # One scale for all four: 0 to the largest mean (about 50 kpps), not each panel's own range.
    top = tabs["mrr"]["mean_pps"].max() / 1e3
    assert seen == [(0.0, pytest.approx(top))] * 4 and top == pytest.approx(50, rel=0.01)
