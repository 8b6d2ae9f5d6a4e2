"""Params files: typed models reject every kind of bad value with one line."""
from pathlib import Path

import pytest
import yaml

from nfvlab import params as P

REPO = Path(__file__).resolve().parents[1]


def write(tmp_path, text, name="exp.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def error_of(tmp_path, text):
    p = write(tmp_path, text)
    with pytest.raises(P.ParamsError) as ei:
        P.load(p)
    msg = str(ei.value)
    assert "\n" not in msg, "the message must be one line"
    assert msg.startswith(str(p) + ":"), "the message must name the file"
    return msg


def test_valid_file_loads_with_defaults(tmp_path):
    p = write(tmp_path, "experiment: a\nmodels: [linux-bridge, macvlan]\ntraffic:\n  frame_sizes: [64, IMIX, 1518]\n")
    e = P.load(p)
    assert e.models == ["linux-bridge", "macvlan"]
    assert e.traffic.frame_sizes == [64, "IMIX", 1518]
    assert e.trial.duration_s == 1.0 and e.search.method == "mlrsearch"


@pytest.mark.parametrize(
    "text,key,allowed",
    [
        ("experiment: a\ntraffic: {frame_sizes: [63]}\n", "traffic.frame_sizes.0", "64..9018"),
        ("experiment: a\ntraffic: {frame_sizes: [64, 9019]}\n", "traffic.frame_sizes.1", "64..9018"),
        ("experiment: a\ntraffic: {frame_sizes: [jumbo]}\n", "traffic.frame_sizes.0", "IMIX"),
        ("experiment: a\nsearch: {min_rate_pps: -5}\n", "search.min_rate_pps", "greater than 0"),
        ("experiment: a\nsearch: {max_rate_pps: 0}\n", "search.max_rate_pps", "greater than 0"),
        ("experiment: a\ntrial: {duration_s: 0}\n", "trial.duration_s", "greater than 0"),
        ("experiment: a\ntrial: {duration_s: -1.5}\n", "trial.duration_s", "greater than 0"),
        ("experiment: a\ntrial: {warmup_s: -1}\n", "trial.warmup_s", "greater than or equal to 0"),
        ("experiment: a\nmodels: [linux-bridge, calico-ebpf-xyz]\n", "models.1", "allowed: linux-bridge"),
        ("experiment: a\nbogus: 1\n", "bogus", "unknown key"),
        ("experiment: a\ntraffic: {flows: many}\n", "traffic.flows", "valid integer"),
        ("experiment: a\ntraffic: {flows: 0}\n", "traffic.flows", "greater than or equal to 1"),
        ("experiment: a\nsearch: {method: guess}\n", "search.method", "'mrr', 'rfc2544', 'mlrsearch' or 'sweep'"),
        ("experiment: a\nsearch: {relative_width: 1.5}\n", "search.relative_width", "less than 1"),
        ("experiment: a\nsearch: {min_rate_pps: 100, max_rate_pps: 50}\n", "search", "must be above"),
        ("experiment: a\nlab: {kind: cloud}\n", "lab.kind", "'embedded' or 'kubernetes'"),
        ("experiment: a\nlab: {port_speed: 400GbE}\n", "lab.port_speed", "10GbE"),
        ("traffic: {flows: 2}\n", "experiment", "required key missing"),
        ("experiment: a\nrepetitions: 1.5\n", "repetitions", "integer"),
    ],
)
def test_bad_values_are_rejected_naming_file_key_and_allowed(tmp_path, text, key, allowed):
    msg = error_of(tmp_path, text)
    assert f": {key}: " in msg
    assert allowed in msg


def test_not_yaml_and_not_a_mapping(tmp_path):
    assert "not valid YAML" in error_of(tmp_path, "experiment: [a\n")
    assert "top level must be a mapping" in error_of(tmp_path, "- a\n- b\n")


def test_missing_file(tmp_path):
    with pytest.raises(P.ParamsError, match="cannot read"):
        P.load(tmp_path / "nope.yaml")


def test_every_shipped_params_file_is_valid():
    files = sorted((REPO / "params").rglob("*.yaml"))
    assert len(files) >= 11, "params/ lacks files"
    special = {"reference.yaml": P.ReferenceParams, "lab.yaml": P.LabParams, "profile.yaml": P.ProfileParams,
               "calibration.yaml": P.CalibrationParams, "lab.kubernetes.yaml": P.LabParams}
    for f in files:
        if f.name in special:
            P.load(f, special[f.name])
        elif f.name == "experiment_e.yaml":  # E's grid has its own model (CNI data paths, tools)
            P.load(f, P.CniExperimentParams)
        elif f.name == "claims.yaml":  # the claims design (nfvlab.claims), read by the analysis stages only
            from nfvlab import claims

            claims.load_design(f)
        else:
            P.load_experiment(f, REPO / "params/lab.yaml")
    for profile in ("quick", "full"):  # every experiment in both profiles
        assert sorted(p.name for p in (REPO / "params" / profile).glob("*.yaml")) == [
            "calibration.yaml", *(f"experiment_{x}.yaml" for x in "abcdef")]


def _files(tmp_path, exp_text, profile_text):
    exp, prof = tmp_path / "exp.yaml", tmp_path / "lab.yaml"
    exp.write_text(exp_text)
    prof.write_text(profile_text)
    return exp, prof


def test_lab_profile_is_the_experiments_lab_and_its_own_keys_add_to_it(tmp_path):
    exp, prof = _files(tmp_path, "experiment: a\nlab: {port_speed: 40GbE}\n",
                       "kind: embedded\nmtu: 1500\ngenerator: {cpu: 1}\n")
    p = P.load_experiment(exp, prof)
    assert (p.lab.kind, p.lab.mtu, p.lab.generator.cpu, p.lab.port_speed) == ("embedded", 1500, 1, "40GbE")


def test_a_key_set_differently_in_experiment_and_profile_is_an_error_naming_both(tmp_path):
    exp, prof = _files(tmp_path, "experiment: a\nlab: {mtu: 9000}\n", "mtu: 1500\n")
    with pytest.raises(P.ParamsError) as err:
        P.load_experiment(exp, prof)
    msg = str(err.value)
    assert msg.startswith(f"{exp}: lab.mtu: 9000 disagrees with the lab profile {prof} (1500)")
    assert "\n" not in msg
    same, _ = _files(tmp_path, "experiment: a\nlab: {mtu: 1500}\n", "mtu: 1500\n")
    assert P.load_experiment(same, prof).lab.mtu == 1500  # the same value is no conflict


def test_overrides_win_over_experiment_and_profile(tmp_path):
    exp, prof = _files(tmp_path, "experiment: a\nlab: {mtu: 1500}\n", "mtu: 1500\nport_speed: 25GbE\n")
    p = P.load_experiment(exp, prof, overrides={"lab": {"mtu": 2000, "port_speed": "100GbE"}})
    assert (p.lab.mtu, p.lab.port_speed) == (2000, "100GbE")


@pytest.mark.parametrize("mtu", [1279, 9001])
def test_lab_mtu_outside_what_frames_allow_is_refused(tmp_path, mtu):
    exp, prof = _files(tmp_path, "experiment: a\n", f"mtu: {mtu}\n")
    with pytest.raises(P.ParamsError, match=f"{prof}: mtu: "):
        P.load_experiment(exp, prof)


@pytest.mark.parametrize("bad,where,what", [
    ({"placement": {"pod1": {"node": "a", "node_labels": {"x": "y"}}}}, "kubernetes.placement.pod1",
     "give node or node_labels"),
    ({"placement": {"vswitch": {"node": "a"}}}, "kubernetes.placement.vswitch.[key]", "pod[1-9]|noisy"),
    ({"device_resources": {"afxdp-cni": {"afxdp/myPool": 0}}}, "kubernetes.device_resources.afxdp-cni.afxdp/myPool",
     "greater than or equal to 1"),
])
def test_kubernetes_placement_and_device_resources_are_checked_with_one_line(bad, where, what):
    data = {"kind": "kubernetes", "kubernetes": {"node": "n", "nics": ["a", "b"], "cabling": "local", **bad}}
    with pytest.raises(P.ParamsError) as err:
        P.validate(P.LabParams, data, "lab.yaml")
    assert str(err.value).startswith(f"lab.yaml: {where}: ") and what in str(err.value)
    assert "\n" not in str(err.value)


def test_latency_load_fractions_are_fractions_each_once(tmp_path):
    assert P.ExperimentParams(experiment="x").latency_load_fractions == [0.0, 0.1, 0.5, 0.9]
    assert "latency_load_fractions.1:" in error_of(tmp_path, "experiment: a\nlatency_load_fractions: [0, 1.5]\n")
    assert "each load fraction once" in error_of(tmp_path, "experiment: a\nlatency_load_fractions: [0.5, 0.5]\n")
    assert "latency_goal:" in error_of(tmp_path, "experiment: a\nlatency_goal: mrr\n")


def test_mtu_grid_is_checked_with_one_line_naming_the_field(tmp_path):
    ok = write(tmp_path, "experiment: f\nmtu_bytes: [1500, 9000]\ntraffic:\n  frame_sizes: [64, 9018]\n", "ok.yaml")
    assert P.load(ok).mtu_bytes == [1500, 9000]
    assert P.ExperimentParams(experiment="x").mtu_bytes is None
    assert "mtu_bytes.1: Input should be less than or equal to 9000" in error_of(
        tmp_path, "experiment: f\nmtu_bytes: [1500, 9500]\n")
    assert "mtu_bytes.0: Input should be greater than or equal to 1280" in error_of(
        tmp_path, "experiment: f\nmtu_bytes: [576]\n")
    assert "each MTU once" in error_of(tmp_path, "experiment: f\nmtu_bytes: [1500, 1500]\n")
    msg = error_of(tmp_path, "experiment: f\nmtu_bytes: [1500]\ntraffic:\n  frame_sizes: [64, 9018]\n")
    assert "traffic.frame_sizes: 9018 is above the largest mtu_bytes + 18 (1518)" in msg
    assert "traffic.frame_sizes.0: 9019 is outside 64..9018" in error_of(
        tmp_path, "experiment: f\nmtu_bytes: [9000]\ntraffic:\n  frame_sizes: [9019]\n")
    msg = error_of(tmp_path, "experiment: f\nlab:\n  mtu: 1500\nmtu_bytes: [1500, 9000]\n")
    assert "mtu_bytes: 9000 is above the lab's link MTU lab.mtu (1500)" in msg


def test_lab_instance_is_one_of_two_and_said_in_one_line(tmp_path):
    assert P.ExperimentParams(experiment="x").lab_instance == "per-configuration"
    ok = write(tmp_path, "experiment: f\nlab_instance: per-frame-size\n", "ok.yaml")
    assert P.load(ok).lab_instance == "per-frame-size"
    msg = error_of(tmp_path, "experiment: f\nlab_instance: per-trial\n")
    assert "lab_instance: Input should be 'per-configuration' or 'per-frame-size'" in msg and "\n" not in msg


# -- adaptive repetitions (AdaptiveParams, the adaptive: section of ExperimentParams / CniExperimentParams) --

@pytest.mark.parametrize("model", [P.ExperimentParams, P.CniExperimentParams])
@pytest.mark.parametrize("text, message", [
    ("repetitions: 3\nadaptive: {max_repetitions: 2}", "adaptive: max_repetitions: 2 is below repetitions (3)"),
    ("repetitions: 1\nadaptive: {max_repetitions: 4}",
     "adaptive: needs repetitions >= 2 (the first look tests them), got 1"),
    ("repetitions: 2\nadaptive: {max_repetitions: 4, step: 0}",
     "adaptive.step: Input should be greater than or equal to 1 (got 0)"),
    ("repetitions: 2\nadaptive: {max_repetitions: 4.5}",
     "adaptive.max_repetitions: Input should be a valid integer (got 4.5)"),
    ("repetitions: 2\nadaptive: {max_repetitions: true}",
     "adaptive.max_repetitions: Input should be a valid integer (got True)"),
    ("repetitions: 2\nadaptive: {max_repetitions: 4, seconds: true}",
     "adaptive.seconds: True: give a number of seconds"),
    ("repetitions: 2\nadaptive: {max_repetitions: 4, seconds: 0}",
     "adaptive.seconds: Input should be greater than 0 (got 0)"),
    ("repetitions: 2\nadaptive: {max_repetitions: 4, budget: 9}", "adaptive.budget: unknown key"),
    ("repetitions: 2\nadaptive: {step: 2}", "adaptive.max_repetitions: required key missing"),
])
def test_adaptive_is_checked_against_the_repetitions_in_one_line(tmp_path, model, text, message):
    p = write(tmp_path, "experiment: e-x\n" + text)
    with pytest.raises(P.ParamsError) as ei:
        P.load(p, model)
    assert str(ei.value) == f"{p}: {message}"


def test_adaptive_absent_is_a_fixed_n_run_and_present_has_its_defaults(tmp_path):
    assert P.load(write(tmp_path, "experiment: e-x\nrepetitions: 2"), P.CniExperimentParams).adaptive is None
    a = P.load(write(tmp_path, "experiment: e-x\nrepetitions: 2\nadaptive: {max_repetitions: 2}"),
               P.ExperimentParams).adaptive
    assert (a.max_repetitions, a.step, a.seconds) == (2, 1, None)
    quick = P.load(REPO / "params/quick/experiment_e.yaml", P.CniExperimentParams)
    assert quick.adaptive is not None and quick.adaptive.max_repetitions > quick.repetitions
    for profile in ("quick", "full"):
        for letter in "df":  # no claims in nfvlab.claimsets: fixed-n (the runner refuses adaptive)
            keys = yaml.safe_load((REPO / f"params/{profile}/experiment_{letter}.yaml").read_text())
            assert "adaptive" not in keys  # a comment may say why not; the key is what counts
        for letter in "abc":  # the search experiments with their claims in nfvlab.claimsets: paired blocks
            p = P.load_experiment(REPO / f"params/{profile}/experiment_{letter}.yaml", REPO / "params/lab.yaml")
            assert p.adaptive is None and p.paired is not None and p.paired.max_blocks > p.paired.first_blocks
            assert (p.paired.seconds is not None) == (profile == "quick")  # the quick pipeline's time is bounded


def test_frame_sizes_by_lab_keeps_a_subset_on_that_lab_only():
    quick = {"kubernetes": P.load_experiment("params/quick/experiment_a.yaml", "params/lab.kubernetes.yaml"),
             "embedded": P.load_experiment("params/quick/experiment_a.yaml", "params/lab.yaml")}
    assert quick["kubernetes"].traffic.frame_sizes == [64]  # the quick profile: Kubernetes at 64 B only
    assert quick["embedded"].traffic.frame_sizes == [64, 1518]
    dumped = P.ExperimentParams.model_validate(quick["kubernetes"].model_dump())  # as a record keeps it
    assert dumped.traffic.frame_sizes == [64]
    for bad, says in (({"kubernetes": [512]}, r"frame_sizes_by_lab.kubernetes: give some of traffic.frame_sizes"),
                      ({"kubernetes": []}, r"frame_sizes_by_lab.kubernetes: give some"),
                      ({"vpp": [64]}, r"frame_sizes_by_lab.vpp")):
        with pytest.raises(P.ParamsError, match=says):
            P.load_experiment("params/quick/experiment_a.yaml", "params/lab.kubernetes.yaml",
                              {"frame_sizes_by_lab": bad})


@pytest.mark.parametrize("text, message", [
    ("models: [macvlan]\ncontrol: {model: vpp, frame_size: 64}",
     "(top level): control.model: vpp is not one of models (macvlan)"),
    ("models: [macvlan]\ncontrol: {model: macvlan, frame_size: 512}",
     "(top level): control.frame_size: 512 is not one of traffic.frame_sizes ([64, 1518])"),
    ("models: [macvlan]\nmtu_bytes: [1500]\ncontrol: {model: macvlan, frame_size: 64, mtu_bytes: 9000}",
     "(top level): control.mtu_bytes: 9000 is not one of mtu_bytes ([1500])"),
    ("models: [macvlan]\npaired: {}\ncontrol: {model: macvlan, frame_size: 64}",
     "(top level): control: the paired phase has its own A/A control (paired.control); remove control:"),
    ("models: [macvlan]\nrepetitions: 2\nadaptive: {max_repetitions: 4}\ncontrol: {model: macvlan, frame_size: 64}",
     "(top level): control: not with adaptive repetitions (they would not repeat the twin); remove control: or "
     "adaptive:"),
    ("models: [macvlan]\ncontrol: {model: macvlan, frame_size: 64, arm: x}", "control.arm: unknown key"),
])
def test_a_search_control_names_a_cell_of_the_grid_in_one_line(tmp_path, text, message):
    p = write(tmp_path, "experiment: f-x\ntraffic: {frame_sizes: [64, 1518]}\n" + text)
    with pytest.raises(P.ParamsError) as ei:
        P.load(p, P.ExperimentParams)
    assert str(ei.value) == f"{p}: {message}"


def test_experiment_f_has_an_a_a_control_of_tap_in_both_profiles():
    for profile in ("quick", "full"):
        p = P.load_experiment(REPO / f"params/{profile}/experiment_f.yaml", REPO / "params/lab.yaml")
        assert (p.control.model, p.control.mtu_bytes, p.control.frame_size) == ("ovs-dpdk-tap", 1500, 64)
