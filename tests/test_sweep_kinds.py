"""A sweep over any study kind (issue 27): every combination is a run of that kind through its own runner and
store; the summaries are stacked with the swept values; plot redraws the directory."""
from __future__ import annotations

import pandas as pd
import pytest
import yaml

import plugin_study_kind  # noqa: F401 -- registers the coin-flips kind
import simdesign
from simdesign import ConfigError
from simdesign.cli import main

COINS = {"name": "coins", "coins": [0.2, 0.7], "trials": 6, "seed": 4, "sweep": {"flips": [10, 40]}}


def test_a_sweep_of_a_plug_in_kind_runs_every_combination_as_that_kind(tmp_path):
    result = simdesign.simulate(COINS, out_dir=tmp_path / "out", jobs=1, progress=False)
    summary = result.summary()
    assert result.kind.name == "sweep" and sorted(summary["flips"].unique()) == [10, 40]
    # each combination equals a run of the kind alone with that value (same seed: the same streams)
    for flips in (10, 40):
        alone = simdesign.simulate({**{k: v for k, v in COINS.items() if k != "sweep"}, "flips": flips},
                                   out_dir=tmp_path / f"alone{flips}", jobs=1, progress=False)
        stacked = summary[summary["flips"] == flips].drop(columns=["flips", "run_seconds"]).reset_index(drop=True)
        pd.testing.assert_frame_equal(stacked, alone.summary().reset_index(drop=True), check_dtype=False)
        assert (tmp_path / "out" / f"flips={flips}" / "manifest.json").is_file()


@pytest.mark.slow  # two runs and their figures: about 3 s
def test_plot_redraws_a_sweep_of_another_kind(tmp_path):
    path = tmp_path / "coins.yaml"
    path.write_text(yaml.safe_dump(COINS))
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "--jobs", "1", "--quiet"]) == 0
    ran = pd.read_csv(out / "summary.csv")
    (out / "summary.csv").unlink()
    assert main(["plot", str(out)]) == 0
    redrawn = pd.read_csv(out / "summary.csv")
    pd.testing.assert_frame_equal(ran.drop(columns="run_seconds"), redrawn.drop(columns="run_seconds"))


@pytest.mark.parametrize("sweep, words", [({"seed": [1, 2]}, "'sweep.seed' key cannot be swept"),
                                          ({"trials": [5]}, "'sweep.trials' key cannot be swept")])
def test_a_sweep_of_another_kind_refuses_the_keys_that_make_a_run(sweep, words):
    with pytest.raises(ConfigError, match=words):
        simdesign.simulate({**COINS, "sweep": sweep}, jobs=1, progress=False)


def test_a_rate_sweep_keeps_its_rules():
    rates = {"name": "r", "model": "coherence", "tests": ["ttest_doc"], "trials": 2,
             "designs": [{"kind": "block", "blocks": 2, "docs_per_block": 2, "annotators_per_block": 2}],
             "sweep": {"designs": [[]]}}
    with pytest.raises(ConfigError, match="'sweep.designs' key cannot be swept; allowed"):
        simdesign.simulate(rates, jobs=1, progress=False)


@pytest.mark.slow  # two panel studies: 5-10 s
def test_a_sweep_of_a_panel_study(tmp_path):
    panel = {"name": "ps", "model": "coherence", "trials": 3, "subsamples": 2, "bootstrap": 20, "seed": 3,
             "panels": {"expert": {"annotators": 2, "judge": "all"}, "crowd": {"pool": 10, "per_output": 4}},
             "sweep": {"docs": [4, 6]}}
    result = simdesign.simulate(panel, out_dir=tmp_path / "out", jobs=1, progress=False)
    summary = result.summary()
    assert sorted(summary["docs"].unique()) == [4, 6] and set(summary["estimand"]) >= {"spearman"}
    paths = result.plot(tmp_path / "figure")
    assert [p.name for p in paths] == ["figure_docs=4.png", "figure_docs=6.png"]
