"""Each figure's table beside it (figures/<name>.csv) and the committed tables shipped with the package."""
from __future__ import annotations

import io
from importlib import resources
from pathlib import Path

import pandas as pd
import pytest
import yaml

import simdesign
from simdesign.cli import main
from simdesign.core.errors import ConfigError
from simdesign.outputs import precomputed_curve_names, precomputed_curves, write_outputs
from simdesign.studies.rates.config import load_config

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "figures"
# A block design and a pool design; with figure.x 'blocks' the pool design (no blocks) is not drawn.
CONFIG = {"name": "tables", "model": "repetition", "effect": "zero", "trials": 6, "seed": 4,
          "designs": [{"kind": "block", "blocks": [2, 4], "docs_per_block": [4, 2], "annotators_per_block": 2},
                      {"kind": "pool", "docs": 8, "annotators": 4, "judgements_per_output": 2}],
          "tests": ["ttest", "ttest_doc"], "figure": {"x": "blocks"}}


def _drawn_rows(summary: pd.DataFrame, estimand: str) -> pd.DataFrame:
    """What the figure of ``estimand`` draws, read off summary.csv: its rows of block designs."""
    return summary[(summary["estimand"] == estimand) & (summary["kind"] == "block")].reset_index(drop=True)


@pytest.mark.slow
def test_run_and_plot_write_each_figures_table_beside_it(tmp_path):
    path = tmp_path / "tables.yaml"
    path.write_text(yaml.safe_dump(CONFIG))
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "--jobs", "1", "--quiet"]) == 0
    summary = pd.read_csv(out / "summary.csv")
    table = pd.read_csv(out / "tables.csv")
    assert list(table.columns) == list(summary.columns)
    pd.testing.assert_frame_equal(table, _drawn_rows(summary, "type1"), check_dtype=False)
    assert len(table) == 2 * 2  # two block designs x two tests; the pool design is not on the x axis
    # 'plot --out' puts the table beside the PNG wherever that goes.
    assert main(["plot", str(out), "--out", str(tmp_path / "elsewhere" / "fig")]) == 0
    assert (tmp_path / "elsewhere" / "fig.png").is_file()
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "elsewhere" / "fig.csv"), table)


@pytest.mark.slow
def test_the_python_api_writes_the_table_of_the_estimand_it_draws(tmp_path):
    result = simdesign.simulate(CONFIG, jobs=1, progress=False)
    paths = result.plot(tmp_path / "failures", estimand="failure_rate")
    assert [p.suffix for p in paths] == [".png", ".pdf", ".csv"]
    summary = pd.read_csv(io.StringIO(result.summary().to_csv(index=False)))  # as summary.csv would read
    pd.testing.assert_frame_equal(pd.read_csv(paths[-1]), _drawn_rows(summary, "failure_rate"), check_dtype=False)


@pytest.mark.slow
def test_a_config_named_summary_keeps_the_whole_summary_csv(tmp_path):
    result = simdesign.simulate({**CONFIG, "name": "summary"}, jobs=1, progress=False)
    written = write_outputs(result.config, result.summary(), tmp_path)
    assert written.count(tmp_path / "summary.csv") == 1
    assert set(pd.read_csv(tmp_path / "summary.csv")["estimand"]) == {"type1", "familywise", "failure_rate"}


def test_shipped_curves_are_the_committed_figure_tables():
    # The package reaches figures/ through a symbolic link, so a shipped table cannot differ from the committed one.
    shipped = Path(str(resources.files("simdesign").joinpath("data/figures")))
    assert shipped.resolve() == FIGURES.resolve()
    committed = sorted(path.stem for path in FIGURES.glob("*.csv"))
    assert {"paper_fig4_coherence", "paper_fig4_repetition"} <= set(committed)
    assert precomputed_curve_names() == committed
    for name in committed:
        pd.testing.assert_frame_equal(precomputed_curves(name), pd.read_csv(FIGURES / f"{name}.csv"))
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"data/figures/*.csv"' in pyproject  # the tables go into a wheel as package data


@pytest.mark.parametrize("task", ["coherence", "repetition"])
def test_figure_4_tables_hold_every_design_and_test_of_their_config_at_its_trials(task):
    config = load_config(ROOT / "configs" / f"paper_fig4_{task}.yaml")
    table = precomputed_curves(f"paper_fig4_{task}")
    expected = {(design.label, test.label) for design in config.designs for test in config.analyses}
    assert set(zip(table["design"], table["test"])) == expected and len(table) == len(expected)
    assert (table["estimand"] == "type1").all() and (table["trials"] == config.trials).all()
    assert (table["ci_low"] <= table["rate"]).all() and (table["rate"] <= table["ci_high"]).all()


def test_unknown_curves_name_the_shipped_ones():
    with pytest.raises(ConfigError, match="paper_fig4_coherence"):
        precomputed_curves("paper_fig99")


@pytest.mark.slow
def test_drawing_figures_neither_needs_nor_switches_the_matplotlib_backend(tmp_path):
    """Library figures are matplotlib.figure.Figure objects saved by themselves: importing and drawing them
    keeps the caller's backend (a notebook's inline one) and never imports pyplot."""
    import subprocess
    import sys

    script = f"""
import sys, matplotlib
matplotlib.use("svg")
import pandas as pd
import simdesign
from simdesign.studies.rates import plots  # noqa: F401
from simdesign.studies.panels import panel_plots
from simdesign.studies.replication import replication_plots
from simdesign.studies import sweep
from simdesign.studies.metrics import metric_validation
from simdesign.planning import plan_report  # noqa: F401
from simdesign.realdata import check  # noqa: F401
from simdesign.studies.rates.config import parse_config
config = parse_config({CONFIG!r})
run = simdesign.simulate(config, out_dir={str(tmp_path / 'run')!r}, jobs=1, progress=False)
figure = run.plot()
paths = run.plot({str(tmp_path / 'figure')!r})
assert type(figure).__name__ == "Figure" and all(p.exists() for p in paths), paths
assert matplotlib.get_backend() == "svg", matplotlib.get_backend()
assert "matplotlib.pyplot" not in sys.modules
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
