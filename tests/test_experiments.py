"""Experiments as units (nfvlab/experiments): one module each, found by the registry, used unchanged
by the analysis writer, the report, `nfvlab analyze` and the notebook generator."""
import sys

import pytest

from conftest import REPO
from nfvlab import analysis, experiments, report
from nfvlab.experiments import Experiment
from test_analysis import _records

sys.path.insert(0, str(REPO / "scripts"))
import make_notebooks  # noqa: E402


def test_every_module_of_the_package_is_registered_in_module_order():
    import pkgutil

    names = [m.name for m in pkgutil.iter_modules(experiments.__path__) if m.name != "base"]
    assert list(experiments.REGISTRY) == sorted(names) == ["a", "b", "c", "d", "e", "f"]
    for letter, exp in experiments.REGISTRY.items():
        assert exp.letter == letter and exp.title.startswith(f"Experiment {letter.upper()}:")
    with pytest.raises(ValueError, match="registered already"):
        experiments.register(experiments.get("a"))


def _toy_tables(records, models=None):
    s, notes, models = analysis.inputs(records, "ndr", models)
    return {"speed": analysis.config_table(s, notes, {"model": models, "frame_size": [64]}, "ndr")}


def _toy_figures(tabs, out, dpi=110):
    return [analysis.throughput_figure(tabs["speed"], "toy", out / "experiment_z_speed.png", dpi)]


TOY = Experiment(
    letter="z", title="Experiment Z: a toy", text="A toy experiment: two models, one frame size.",
    notebook_title="Experiment Z: a toy notebook", notebook_text="Toy intro.",
    table_names=("speed", "latency"), tables=_toy_tables, figures=_toy_figures,
    metrics=lambda tabs: analysis.metric_values(tabs["speed"], ["model", "frame_size"], "ndr_kpps"),
    captions={"speed": "Toy speed per model"})


@pytest.fixture
def toy():
    experiments.register(TOY)
    yield TOY
    del experiments.REGISTRY["z"]


def test_a_toy_experiment_needs_no_edit_to_the_writer_report_cli_or_notebook_generator(toy, tmp_path, capsys):
    from nfvlab import cli

    records = _records(tmp_path / "raw" / "experiment_z.jsonl", {"macvlan": [100.0, 102.0, 104.0], "linux-bridge": [50.0, 52.0]})
    params = tmp_path / "experiment_z.yaml"
    params.write_text("experiment: z-toy\nmodels: [macvlan, linux-bridge]\n")
    tables_dir, figures_dir = tmp_path / "tables" / "experiment_z", tmp_path / "figures" / "experiments" / "experiment_z"
    # `nfvlab analyze z`, as the analysis stage would run it
    assert cli.main(["analyze", "z", "--params", str(params), "--records", str(records), "--tables", str(tables_dir),
                     "--figures", str(figures_dir), "--metrics", str(tmp_path / "z.json")]) == 0, capsys.readouterr()
    speed = (tables_dir / "experiment_z_speed.csv").read_text().splitlines()
    assert speed[1].startswith("macvlan,64,measured,3,102,") and speed[2].startswith("linux-bridge,64,measured,2,51,")
    assert (figures_dir / "experiment_z_speed.png").stat().st_size > 1000
    assert '"macvlan/64/ndr_kpps": 0.102' in (tmp_path / "z.json").read_text()
    # the report has its section, its caption and its table
    sections = report.sections(tmp_path / "tables", tmp_path / "figures", tmp_path / "raw")
    titles = [s.title for s in sections]
    assert "Experiment Z: a toy" in titles and "Toy speed per model" in titles
    z = sections[titles.index("Experiment Z: a toy")]
    assert z.text == TOY.text and [p.name for p in z.figures] == ["experiment_z_speed.png"]
    assert "Experiment Z: a toy" in sections[titles.index("Contents")].text
    # and the notebook generator writes its notebook
    nb = make_notebooks.notebooks()["experiment_z"]
    assert nb.cells[0].source.startswith("# Experiment Z: a toy notebook\n\nToy intro.")
    assert 'notebook.experiment_outputs("z", records, p.models)' in make_notebooks.text_of(nb)
