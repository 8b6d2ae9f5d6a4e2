"""Notebooks run top to bottom under papermill with injected parameters (really executed)."""
import os
from pathlib import Path

import nbformat
import papermill as pm

from conftest import clean_host  # noqa: F401  (fixture)

REPO = Path(__file__).resolve().parents[1]


def test_reference_notebook_executes_with_parameters(tmp_path):
    out_nb = tmp_path / "reference.out.ipynb"
    fig_dir = tmp_path / "figs"
    pm.execute_notebook(str(REPO / "notebooks/reference.ipynb"), str(out_nb),
                        parameters={"out_dir": str(fig_dir), "dpi": 60}, cwd=str(REPO),
                        kernel_name="python3", progress_bar=False)
    nb = nbformat.read(out_nb, as_version=4)
    assert any("injected-parameters" in c.metadata.get("tags", []) for c in nb.cells)
    assert len(list(fig_dir.glob("*.png"))) == 12
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors


def test_every_notebook_has_a_tagged_parameters_cell():
    for path in sorted((REPO / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        assert any("parameters" in c.metadata.get("tags", []) for c in nb.cells), path.name


def test_experiment_a_notebook_runs_a_tiny_grid_on_the_embedded_lab(tmp_path, clean_host):
    out_nb = tmp_path / "a.out.ipynb"
    records = tmp_path / "a.jsonl"
    tiny = {"models": ["host-routing", "sriov"], "repetitions": 1, "traffic": {"frame_sizes": [256]},
            "trial": {"duration_s": 0.3},
            "search": {"method": "rfc2544", "relative_width": 0.2, "min_rate_pps": 2000,
                       "max_rate_pps": 10000, "final_trial_duration_s": 0.3, "initial_trial_duration_s": 0.3,
                       "duration_sum_s": 0.3}}
    pm.execute_notebook(str(REPO / "notebooks/experiment_a.ipynb"), str(out_nb),
                        parameters={"records": str(records), "overrides": tiny}, cwd=str(REPO),
                        kernel_name="python3", progress_bar=False)
    from nfvlab import results

    s = results.searches_frame(records)
    assert list(s["model"]) == ["host-routing"] and s["throughput_pps"].iloc[0] == 10000
    assert list(results.not_realizable_frame(records)["model"]) == ["sriov"]


TINY_SEARCH = {"method": "rfc2544", "relative_width": 0.2, "min_rate_pps": 2000, "max_rate_pps": 10000,
               "final_trial_duration_s": 0.3, "initial_trial_duration_s": 0.3, "duration_sum_s": 0.3}


def _run(letter, tmp_path, overrides):
    out_nb, records = tmp_path / f"{letter}.out.ipynb", tmp_path / f"{letter}.jsonl"
    pm.execute_notebook(str(REPO / f"notebooks/experiment_{letter}.ipynb"), str(out_nb),
                        parameters={"records": str(records), "overrides": overrides}, cwd=str(REPO),
                        kernel_name="python3", progress_bar=False)
    from nfvlab import results

    return results.searches_frame(records), results.not_realizable_frame(records)


def _backed_by_a_lossless_trial(records, model, ndr):
    """The NDR a search reports is the rate of one of its own recorded trials that lost nothing."""
    from nfvlab.records import trials_frame

    t = trials_frame(records)
    t = t[(t["model"] == model) & (t["purpose"] == "search")]
    return bool(((t["rate_pps"] - ndr).abs() < 1e-6 * ndr)[t["loss_ratio"] == 0].any())


def _realizable(model):
    from nfvlab.labs.embedded import realize

    return realize.realizable(model)[0]


def test_experiment_b_notebook_runs_pinning_with_a_noisy_neighbour(tmp_path, clean_host):
    tiny = {"repetitions": 1, "resources": {"pinning": ["none", "exclusive"], "numa": ["s1", "s2"],
                                            "noisy_load_pct": 20},
            "traffic": {"frame_sizes": [1518]}, "trial": {"duration_s": 0.3}, "search": TINY_SEARCH}
    s, nr = _run("b", tmp_path, tiny)
    if not _realizable("ovs-dpdk-vhost"):
        assert list(nr["model"].unique()) == ["ovs-dpdk-vhost"] and s.empty
        return
    # 2 CPUs, 1 NUMA node: only (none, s1) runs; the rest are notes with their reasons.
    assert list(zip(s["pinning"], s["numa"])) == [("none", "s1")]
    # Busy pollers and a floating stress-ng share 2 CPUs: the NDR is unknown, but it must be
    # the rate of a recorded lossless trial.
    assert _backed_by_a_lossless_trial(tmp_path / "b.jsonl", "ovs-dpdk-vhost", s["throughput_pps"].iloc[0])
    reasons = dict(zip(zip(nr["pinning"], nr["numa"]), nr["reason"]))
    assert "NUMA node" in reasons[("none", "s2")]
    assert "exclusive pinning needs" in reasons[("exclusive", "s1")] or len(os.sched_getaffinity(0)) > 3


def test_experiment_c_notebook_runs_the_chains(tmp_path, clean_host):
    tiny = {"repetitions": 1, "resources": {"numa": ["s1", "s4"]}, "traffic": {"frame_sizes": [64]},
            "trial": {"duration_s": 0.3}, "search": TINY_SEARCH}
    s, nr = _run("c", tmp_path, tiny)
    for model in ("chain-userspace", "chain-combined"):
        if _realizable(model):
            got = s[s["model"] == model]
            # Spinning pods share the generator's CPU: the NDR is unknown, but it must be the
            # rate of a recorded lossless trial.
            assert list(got["numa"]) == ["s1"]
            assert _backed_by_a_lossless_trial(tmp_path / "c.jsonl", model, got["throughput_pps"].iloc[0])
        assert model in set(nr["model"])  # s4 (or the model) is not realizable here


def test_experiment_d_notebook_measures_a_density_corner(tmp_path, clean_host):
    tiny = {"repetitions": 1, "density": {"topologies": ["csc", "csp"], "instances": [2], "nfs_per_instance": [2]},
            "traffic": {"frame_sizes": [64], "flows": 16}, "trial": {"duration_s": 0.3},
            "search": {"method": "mrr", "initial_trial_duration_s": 0.3, "final_trial_duration_s": 0.3,
                       "max_rate_pps": 5000}}
    s, nr = _run("d", tmp_path, tiny)
    assert sorted(s["topology"]) == ["csc", "csp"] and set(s["goal"]) == {"mrr"}
    assert set(s["instances"]) == {2} and set(s["nfs"]) == {2}
    assert (s["throughput_pps"] == 5000).all()  # far below capacity: everything arrives
    assert nr.empty
