"""Panel studies (simdesign.studies.panels.panel_study / panel_summary / cli.panels)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from simdesign.cli import main
from simdesign.core.errors import ConfigError, StoreError
from simdesign.studies.rates.config import parse_config
from simdesign.studies.panels.panel_study import parse_panel_study, run_panel_study, simulate_trial
from simdesign.studies.panels.panel_summary import summarise_panel_study


def small_study(**changes) -> dict:
    raw = {"name": "small", "model": "coherence", "docs": 6,
           "panels": {"expert": {"annotators": 2, "judge": "all", "noise": 0.5},
                      "crowd": {"pool": 12, "per_output": 4, "noise": 1.5, "slope_sd": 1.5, "spammer_share": 0.1}},
           "aggregations": ["mean", "majority"], "subsamples": 3, "trials": 6, "seed": 5, "chunk_size": 3,
           "bootstrap": 50}
    raw.update(changes)
    return raw


def test_identical_noise_free_panels_agree_perfectly():
    crowd = {"pool": 12, "per_output": 4, "noise": 1e-9, "slope_sd": 0.0}
    raw = small_study(panels={"expert": {"annotators": 2, "judge": "all", "noise": 1e-9, "slope_sd": 0.0},
                              "crowd": crowd}, aggregations=["mean", "median", "majority"])
    config = parse_panel_study(raw)
    label, panels = config.settings()[0]
    rows = simulate_trial(config, label, panels, trial=0)
    expert = rows[rows["target"] == "expert"]
    assert len(expert) == 3 * 4 and np.allclose(expert["spearman"], 1.0)


def test_spammer_crowd_is_uncorrelated_with_the_experts():
    raw = small_study(docs=10, panels={"expert": {"annotators": 2, "judge": "all"},
                                       "crowd": {"pool": 20, "per_output": 4, "spammer_share": 1.0}},
                      aggregations=["mean"], trials=40)
    config = parse_panel_study(raw)
    label, panels = config.settings()[0]
    trials = pd.concat([simulate_trial(config, label, panels, trial) for trial in range(config.trials)])
    summary = summarise_panel_study(config, trials)
    curve = summary[(summary["estimand"] == "spearman") & (summary["k"] == 4)]
    assert len(curve) == 2
    assert np.all(np.abs(curve["mean"]) < 4 * curve["mcse"])


def test_summary_by_hand(tmp_path):
    config = parse_panel_study(small_study())
    trials = run_panel_study(config, tmp_path)
    summary = summarise_panel_study(config, trials)
    values = trials[(trials["method"] == "mean") & (trials["target"] == "truth") & (trials["k"] == 2)]["spearman"]
    row = summary[(summary["method"] == "mean") & (summary["target"] == "truth") & (summary["k"] == 2)].iloc[0]
    assert row["trials"] == 6 and row["mean"] == pytest.approx(values.mean())
    assert row["mcse"] == pytest.approx(values.std(ddof=1) / np.sqrt(6))
    assert row["ci_low"] == pytest.approx(values.mean() - 1.959964 * row["mcse"])
    knees = summary[summary["estimand"] == "knee"]
    assert len(knees) == 2 * 2 and set(knees["k"].isna()) == {True}
    assert set(summary["noise"]) == {1.5} and set(summary["spammer_share"]) == {0.1}


@pytest.mark.slow
def test_results_do_not_depend_on_jobs_and_a_rerun_resumes(tmp_path):
    config = parse_panel_study(small_study())
    one = run_panel_study(config, tmp_path / "one", jobs=1)
    two = run_panel_study(config, tmp_path / "two", jobs=2)
    pd.testing.assert_frame_equal(one, two)
    stamps = {path: path.stat().st_mtime_ns for path in (tmp_path / "one" / "chunks").iterdir()}
    again = run_panel_study(config, tmp_path / "one", jobs=1)
    pd.testing.assert_frame_equal(one, again)
    assert {path: path.stat().st_mtime_ns for path in (tmp_path / "one" / "chunks").iterdir()} == stamps
    with pytest.raises(StoreError, match="different panel-study config"):
        run_panel_study(parse_panel_study(small_study(seed=6)), tmp_path / "one")
    # results do not depend on the chunking: another chunk_size resumes, and keeps each trial once
    grown = run_panel_study(parse_panel_study(small_study(chunk_size=4, trials=8)), tmp_path / "one")
    pd.testing.assert_frame_equal(grown[grown["trial"] < 6].reset_index(drop=True), one)
    assert len(grown) == len(one) / 6 * 8


def test_sensitivity_grid_settings():
    config = parse_panel_study(small_study(sensitivity={"noise": [0.5, 2.0], "spammer_share": [0.0, 0.2]}))
    labels = [label for label, _ in config.settings()]
    assert labels == ["noise0.5-slope1.5-spam0", "noise0.5-slope1.5-spam0.2", "noise2-slope1.5-spam0",
                      "noise2-slope1.5-spam0.2"]
    assert config.settings()[3][1]["crowd"].noise == 2.0 and config.settings()[3][1]["expert"].noise == 0.5


def test_bad_panel_study_names_every_field():
    raw = small_study(docs=2, reference="experts", aggregations=["mean", "mode"], subsamples=0,
                      sensitivity={"noise": [0], "colour": [1]}, extra=1)
    with pytest.raises(ConfigError) as caught:
        parse_panel_study(raw)
    text = str(caught.value)
    for needle in ("Unknown panel-study key(s) ['extra']", "'reference' field must name a panel",
                   "'aggregations' field", "'subsamples' field", "docs x per_output >= pool",
                   "sensitivity grid: panels.crowd.noise", "Unknown 'sensitivity' key(s) ['colour']"):
        assert needle in text
    with pytest.raises(ConfigError, match="must be a pool"):
        parse_panel_study(small_study(crowd="expert", reference="crowd"))


def test_simulation_config_points_panels_to_the_run_command():
    with pytest.raises(ConfigError, match="panel study: run it with `simdesign run`"):
        parse_config({**small_study(), "designs": [], "tests": ["ttest"]})


@pytest.mark.slow
def test_cli_panels_writes_summary_and_figure(tmp_path, capsys):
    import yaml

    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(small_study(trials=3)))
    assert main(["panels", str(path), "--out", str(tmp_path / "out"), "--figure", str(tmp_path / "fig")]) == 0
    assert (tmp_path / "out" / "summary.csv").exists() and (tmp_path / "fig.png").exists()
    assert pd.read_csv(tmp_path / "fig.csv")["trials"].max() == 3
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(small_study(panels={"crowd": {"pool": 3, "per_output": 2, "noise": -1}})))
    assert main(["panels", str(bad), "--out", str(tmp_path / "bad")]) == 2
    assert "panels.crowd.noise" in capsys.readouterr().err


def test_a_store_of_the_old_format_is_refused_and_another_config_too(tmp_path):
    """Stores written before chunks carried their fingerprint are refused with one message saying to re-run."""
    import json

    from simdesign.studies.panels.panel_study import panel_store

    config = parse_panel_study(small_study())
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "manifest.json").write_text(json.dumps({"fingerprint": config.fingerprint()}))
    with pytest.raises(StoreError, match="older simdesign.*re-run"):
        panel_store(tmp_path / "old").prepare(config)
    store = panel_store(tmp_path / "new")
    store.prepare(config)
    assert store.manifest()["kind"] == "panels" and store.manifest()["fingerprint"] == config.fingerprint()
    store.release()
    with pytest.raises(StoreError, match="different panel-study config"):
        panel_store(tmp_path / "new").prepare(parse_panel_study(small_study(seed=6)))


def test_panels_in_another_order_are_another_fingerprint():
    """The panels draw from one stream in their order: reordered, they make other trials, so another store."""
    config = parse_panel_study(small_study())
    reordered = parse_panel_study({**small_study(), "panels": dict(reversed(list(small_study()["panels"].items())))})
    assert list(reordered.panels) == list(reversed(list(config.panels)))
    label, panels = config.settings()[0]
    assert not simulate_trial(config, label, panels, 0).equals(simulate_trial(reordered, *reordered.settings()[0], 0))
    assert config.fingerprint() != reordered.fingerprint()
