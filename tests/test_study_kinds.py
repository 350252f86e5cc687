"""``simdesign run CONFIG`` runs every study kind (issue 27): chosen by a ``study`` field or recognised from
the config's keys; the old commands stay one release as deprecation aliases with identical results."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from simdesign.cli import main
from simdesign.core.errors import ConfigError
import plugin_study_kind  # noqa: F401 -- registers the coin-flips kind (a plug-in)
from simdesign.studies.kinds import study_kind

ROOT = Path(__file__).resolve().parents[1]
PANEL = {"name": "ps", "model": "coherence", "docs": 4, "trials": 4, "subsamples": 2, "bootstrap": 20, "seed": 3,
         "chunk_size": 2, "panels": {"expert": {"annotators": 2, "judge": "all"},
                                     "crowd": {"pool": 10, "per_output": 4}}}
METRIC = {"name": "mv", "model": "coherence", "population": {"kind": "normal"},
          "metric": {"summary_correlation": 0.5, "system_correlation": 0.8}, "systems": [5], "documents": [10],
          "methods": ["pearson"], "trials": 4, "bootstrap_resamples": 20, "permutation_resamples": 20, "seed": 3}
SWEEP = {"name": "sw", "model": "coherence", "tests": ["ttest_doc"], "trials": 6, "seed": 2,
         "designs": [{"kind": "block", "blocks": 6, "docs_per_block": 1, "annotators_per_block": 3}],
         "sweep": {"effect": ["zero", 0.5]}}
RATES = {"name": "r", "model": "coherence", "effect": "zero", "tests": ["ttest_doc"], "trials": 6, "seed": 2,
         "designs": [{"kind": "block", "blocks": 6, "docs_per_block": 1, "annotators_per_block": 3}]}


@pytest.mark.parametrize("mapping, kind", [(RATES, "rates"), (PANEL, "panels"), (METRIC, "metric-validation"),
                                           (SWEEP, "sweep"), ({**RATES, "replication": {"tolerance": 0}},
                                                              "replication"),
                                           ({**PANEL, "study": "panels"}, "panels"),
                                           ({**RATES, "study": "rates"}, "rates")])
def test_the_kind_is_the_study_field_or_recognised_from_the_keys(mapping, kind):
    assert study_kind(mapping) == kind


@pytest.mark.parametrize("mapping, message", [
    ({**RATES, "study": "panel"}, "The 'study' field must be one of ['rates', 'replication', "),
    ({**RATES, "study": "panels", "sweep": {"effect": [0]}}, "says 'study: panels' but has keys of a sweep study"),
    ({**PANEL, "population": {}}, "keys of several study kinds (panels, metric-validation)"),
])
def test_a_kind_that_cannot_be_told_is_refused(mapping, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        study_kind(mapping)


@pytest.mark.parametrize("mapping, command", [pytest.param(PANEL, "panels", marks=pytest.mark.slow),  # 0.8 s
                                              (METRIC, "metric-validation"),
                                              pytest.param(SWEEP, "sweep", marks=pytest.mark.slow)],  # 1.1 s
                         ids=["panels", "metric-validation", "sweep"])
def test_run_runs_every_kind_as_its_old_command_did(tmp_path, capsys, mapping, command):
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({**mapping, "study": command}))
    assert main(["run", str(path), "--out", str(tmp_path / "run"), "--jobs", "1", "--quiet"]) == 0
    assert "deprecated" not in capsys.readouterr().err
    assert main([command, str(path), "--out", str(tmp_path / "old"), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert f"`simdesign {command}` is deprecated" in err and f"use `simdesign run {path}`" in err
    timing = ["run_seconds", "mean_fit_seconds"]
    summary = pd.read_csv(tmp_path / "run" / "summary.csv").drop(columns=timing, errors="ignore")
    pd.testing.assert_frame_equal(summary, pd.read_csv(tmp_path / "old" / "summary.csv").drop(
        columns=["run_seconds", "mean_fit_seconds"], errors="ignore"))


def test_a_study_field_of_another_kind_is_refused_by_each_validator(tmp_path, capsys):
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({**PANEL, "study": "sweep"}))
    assert main(["panels", str(path), "--out", str(tmp_path / "p"), "--quiet"]) == 2
    assert "The 'study' field of this config must be 'panels'; got 'sweep'" in capsys.readouterr().err
    path.write_text(yaml.safe_dump({**RATES, "study": "panels"}))
    assert main(["run", str(path), "--out", str(tmp_path / "r"), "--quiet"]) == 2
    assert "'panels'" in capsys.readouterr().err


@pytest.mark.slow  # moved from the fast tier (about 0.5-1 s; the tier's budget is 60 s)
def test_run_writes_the_figure_of_a_rate_study_with_figure(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(RATES))
    assert main(["run", str(path), "--out", str(tmp_path / "r"), "--jobs", "1", "--quiet",
                 "--figure", str(tmp_path / "fig")]) == 0
    assert (tmp_path / "fig.png").is_file() and (tmp_path / "fig.csv").is_file()


def test_a_plug_in_study_kind_runs_end_to_end(tmp_path, capsys):
    """Registered from a test module, without editing the package: simulate, summarise, plot, resume, run."""
    import numpy as np

    import simdesign
    from plugin_study_kind import CALLS

    config = {"name": "coins", "coins": [0.2, 0.7], "flips": 50, "trials": 30, "seed": 4}
    assert study_kind(config) == "coin-flips"
    short = simdesign.simulate({**config, "trials": 10}, out_dir=tmp_path / "store", jobs=1, progress=False)
    assert len(short.rows) == 20
    CALLS["trials"] = 0
    result = simdesign.simulate(config, out_dir=tmp_path / "store", jobs=1, progress=False)
    assert CALLS["trials"] == 2 * 20  # resumed: only the 20 new trials of each coin
    summary = result.summary()
    assert summary["trials"].tolist() == [30, 30]
    # each coin's mean share of heads within 4 MCSE of its bias (a fixed seed)
    assert (np.abs(summary["mean"] - [0.2, 0.7]) < 4 * summary["mcse"]).all()
    fresh = simdesign.simulate(config, jobs=1, progress=False, backend="threading")
    pd.testing.assert_frame_equal(fresh.rows, result.rows)  # results do not depend on chunking, backend or resume
    assert [p.name for p in result.plot(tmp_path / "figure")] == ["figure.png"]
    assert result.save(tmp_path / "saved")["summary"] == tmp_path / "saved" / "summary.csv"
    path = tmp_path / "coins.yaml"
    path.write_text(yaml.safe_dump({**config, "study": "coin-flips"}))
    assert main(["run", str(path), "--out", str(tmp_path / "cli"), "--jobs", "1", "--quiet"]) == 0
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "cli" / "summary.csv"),
                                  pd.read_csv(tmp_path / "saved" / "summary.csv"))
    assert (tmp_path / "cli" / "coins.png").is_file()


@pytest.mark.parametrize("mapping", [pytest.param(PANEL, marks=pytest.mark.slow), METRIC,  # panels 0.8 s
                                     pytest.param(SWEEP, marks=pytest.mark.slow)],
                         ids=["panels", "metric-validation", "sweep"])
def test_simulate_runs_every_kind(tmp_path, mapping):
    import simdesign

    result = simdesign.simulate(mapping, out_dir=tmp_path / "out", jobs=1, progress=False)
    assert len(result.summary()) and result.plot(tmp_path / "figure")[0].is_file()
    again = simdesign.simulate(mapping, jobs=1, progress=False, trials=mapping["trials"])
    pd.testing.assert_frame_equal(again.summary().drop(columns=["run_seconds", "mean_fit_seconds"], errors="ignore"),
                                  result.summary().drop(columns=["run_seconds", "mean_fit_seconds"], errors="ignore"))


@pytest.mark.parametrize("mapping", [pytest.param(PANEL, marks=pytest.mark.slow), METRIC,  # panels 0.6 s
                                     {"name": "coins", "coins": [0.3], "flips": 5, "trials": 9}],
                         ids=["panels", "metric-validation", "coin-flips"])
def test_plot_redraws_every_kind_from_its_store_without_simulating(tmp_path, capsys, mapping):
    import simdesign
    from plugin_study_kind import CALLS

    result = simdesign.simulate(mapping, out_dir=tmp_path / "out", jobs=1, progress=False)
    (tmp_path / "out" / "summary.csv").unlink(missing_ok=True)
    CALLS["trials"] = 0
    assert main(["plot", str(tmp_path / "out"), "--out", str(tmp_path / "figure")]) == 0
    assert CALLS["trials"] == 0
    assert (tmp_path / "figure.png").is_file()
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "out" / "summary.csv"),
                                  pd.read_csv(pd.io.common.StringIO(result.summary().to_csv(index=False))))
    loaded = simdesign.api.load_study(tmp_path / "out")
    pd.testing.assert_frame_equal(loaded.rows.reset_index(drop=True), result.rows.reset_index(drop=True))
