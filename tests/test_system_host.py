"""The host facts results depend on: the CPU speed probe an experiment run records first."""
import os

import pytest

from nfvlab.report.provenance import host_speed_text, host_stability_note
from nfvlab.system import host


def test_speed_figures_of_known_counts():
    # Two windows at full speed, two at half: mean 0.75, so 1.33x and 0.67x; sample CV 0.385.
    f = host.speed_figures([100, 100, 50, 50])
    assert f["windows"] == 4
    assert f["min_ratio"] == pytest.approx(2 / 3) and f["max_ratio"] == pytest.approx(4 / 3)
    assert f["cv"] == pytest.approx(0.3849, abs=1e-4)
    assert host.speed_figures([7, 7, 7])["cv"] == 0.0


def test_the_probe_counts_every_cpu_for_its_windows():
    speed = host.speed_variation(duration_s=1.0, window_s=0.25)
    assert speed["window_s"] == 0.25 and speed["duration_s"] == 1.0
    assert set(speed["cpus"]) == {str(c) for c in os.sched_getaffinity(0)}
    for figures in speed["cpus"].values():
        assert figures["windows"] == 4 and figures["min_ratio"] <= 1 <= figures["max_ratio"]
    assert host.speed_variation(duration_s=0.3, window_s=0.25)["cpus"] == {}  # under two windows: none


def test_the_probe_length_comes_from_the_environment_or_is_refused_in_one_line(monkeypatch):
    monkeypatch.delenv("NFVLAB_HOST_SPEED_S", raising=False)
    assert host.host_speed_s() == host.HOST_SPEED_S == 6.0
    monkeypatch.setenv("NFVLAB_HOST_SPEED_S", "0")
    assert host.host_speed_s() == 0.0
    for bad in ("fast", "-1", "nan"):
        monkeypatch.setenv("NFVLAB_HOST_SPEED_S", bad)
        with pytest.raises(ValueError, match=r"NFVLAB_HOST_SPEED_S=.*a number of seconds >= 0 is allowed"):
            host.host_speed_s()


def test_the_report_line_of_the_figures():
    speed = {"window_s": 0.5, "duration_s": 6.0, "cpus": {
        "1": {"cv": 0.036, "min_ratio": 0.93, "max_ratio": 1.04, "windows": 12},
        "0": {"cv": 0.161, "min_ratio": 0.68, "max_ratio": 1.15, "windows": 12}}}
    assert host_speed_text(speed) == ("CV of a fixed loop's rate per 0.5 s window, 6 s before the run: "
                                      "CPU 0 16.1 % (0.68-1.15x), CPU 1 3.6 % (0.93-1.04x)")
    assert host_speed_text(None) == host_speed_text({"cpus": {}}) == "not measured"


def test_lag_and_cross_cpu_figures_of_known_series():
    # Spells of two windows: x = 1 1 2 2 1 1 2 against its next y = 1 2 2 1 1 2 2; deviations from
    # the means (10/7, 11/7) in sevenths: products sum to 14/49, squares to 84/49 each: r = 1/6.
    f = host.speed_figures([10, 10, 20, 20, 10, 10, 20, 20])
    assert f["lag1"] == pytest.approx(1 / 6)
    assert host.speed_figures([10, 20, 10, 20, 10])["lag1"] == pytest.approx(-1.0)  # alternating
    assert host.speed_figures([7, 7, 7])["lag1"] is None  # constant: no correlation


def test_the_probe_reports_cross_cpu_correlation_steal_and_stability():
    speed = host.speed_variation(duration_s=1.0, window_s=0.25)
    for figures in speed["cpus"].values():
        assert figures["lag1"] is None or -1 <= figures["lag1"] <= 1
    if len(speed["cpus"]) > 1:
        assert speed["cross_cpu_r"] is None or -1 <= speed["cross_cpu_r"] <= 1
    assert speed["steal_share"] is None or 0 <= speed["steal_share"] <= 1
    assert speed["unstable"] == any(f["cv"] >= host.UNSTABLE_CV for f in speed["cpus"].values())


def test_the_report_warns_of_an_unstable_host_and_only_then():
    steady = {"window_s": 0.5, "duration_s": 6.0, "cpus": {"0": {"cv": 0.02, "min_ratio": 0.97, "max_ratio": 1.03}}}
    shaky = {"window_s": 0.5, "duration_s": 6.0, "cross_cpu_r": -0.11, "steal_share": 0.006, "cpus": {
        "0": {"cv": 0.248, "min_ratio": 0.75, "max_ratio": 1.70, "lag1": 0.70, "windows": 12},
        "1": {"cv": 0.216, "min_ratio": 0.80, "max_ratio": 1.30, "lag1": 0.40, "windows": 12}}}
    assert host_stability_note([steady, None]) == ""
    note = host_stability_note([steady, shaky])
    assert note.startswith("**The host was unstable**") and "up to 25%" in note and "from 10%" in note
    assert host_speed_text(shaky) == (
        "CV of a fixed loop's rate per 0.5 s window, 6 s before the run: CPU 0 24.8 % (0.75-1.70x, lag-1 r 0.70), "
        "CPU 1 21.6 % (0.80-1.30x, lag-1 r 0.40); across CPUs r -0.11; steal 0.6%")
