"""Rank studies in the simulation (issue 13, section 1): the method as a dimension of the results.

The rank_noise used here (1.0) is a fixed value of the tests, not the presets' fitted one: these tests
check the machinery and properties that hold for any rank_noise.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
import yaml

import simdesign
from simdesign.significance import ANALYSES
from simdesign.significance.base import run_analysis
from simdesign.cli import main
from simdesign.core.designs import BlockDesign
from simdesign.core.errors import ConfigError, StoreError
from simdesign.model import RankOnlyModel, load_model
from simdesign.studies.rates.config import parse_config
from simdesign.studies.rates.engine import replay_trial
from simdesign.studies.rates.method_specs import result_label, split_result_label
from simdesign.studies.rates.summary import SUMMARY_COLUMNS

JOINT = {"preset": "coherence", "rank_noise": 1.0}
BASE = {"name": "ranks", "model": JOINT, "effect": "zero", "trials": 12, "seed": 5,
        "designs": [{"kind": "block", "blocks": 4, "docs_per_block": 3, "annotators_per_block": 2}],
        "tests": ["ttest_doc", {"name": "art_block", "resamples": 99}]}


def config(**changes):
    return parse_config({**BASE, **changes})


def messages(raw) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config(raw)
    return " | ".join(caught.value.messages)


def test_result_labels_keep_likert_labels_and_split_back():
    assert result_label("clmm_native[paper]", "likert") == "clmm_native[paper]"
    assert split_result_label(result_label("clmm_native[paper]", "rank")) == ("clmm_native[paper]", "rank")
    assert split_result_label("user@lab") == ("user@lab", "likert")


def test_method_defaults_to_likert_and_is_left_out_of_the_stored_mapping():
    plain = config(model="coherence")
    assert plain.methods == ("likert",) and "methods" not in plain.to_mapping()
    both = config(methods=["likert", "rank"])
    assert parse_config(both.to_mapping()) == both
    assert [s.label for s in both.work_specs] == ["ttest_doc", "art_block[99]", "ttest_doc@rank", "art_block[99]@rank"]


@pytest.mark.parametrize("changes, expected", [
    ({"method": "paired"}, "The 'method' field must name methods from ['likert', 'rank', 'pairwise']; got ['paired']"),
    ({"methods": "rank", "method": "rank"}, "either 'method'"),
    ({"methods": []}, "The 'methods' field must be a non-empty list"),
    ({"methods": ["rank", "rank"]}, "lists ['rank'] more than once"),
    ({"method": "rank", "tests": ["ttest_block"]}, "The test ttest_block cannot take rank judgements"),
    ({"methods": ["likert", "rank"], "tests": ["art"]}, "The test art cannot take rank judgements"),
    ({"model": {"preset": "coherence", "rank_noise": -1}}, "'rank_noise' field must be a positive number"),
    ({"model": {"preset": "coherence", "file": "x.yaml"}}, "exactly one of them"),
])
def test_bad_method_settings_are_refused_naming_the_field(changes, expected):
    assert expected in messages({**BASE, **changes})


def test_a_likert_only_model_cannot_generate_ranks(tmp_path):
    likert_only = {key: value for key, value in load_model("coherence").to_dict().items() if key != "rank_noise"}
    path = tmp_path / "likert.yaml"
    path.write_text(yaml.safe_dump(likert_only))
    assert "cannot generate (it generates likert)" in messages({**BASE, "model": str(path), "method": "rank"})


def test_a_rank_only_model_needs_method_rank(tmp_path):
    model = RankOnlyModel("toy", ("a", "b", "c"), [0.0, 0.5, 1.0], np.eye(2) * 0.2, np.eye(2) * 0.1)
    path = tmp_path / "toy.yaml"
    path.write_text(yaml.safe_dump(model.to_dict()))
    assert "set 'method: rank'" in messages({**BASE, "model": str(path)})
    ranked = config(model=str(path), method="rank")
    summary = simdesign.simulate(ranked, jobs=1, progress=False).summary()
    assert set(summary["method"]) == {"rank"} and summary["rate"].notna().all()


def test_cli_refuses_a_test_that_cannot_take_ranks_with_exit_code_2(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({**BASE, "method": "rank", "tests": ["art"]}))
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--jobs", "1", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "art" in err and "rank" in err
    assert not (tmp_path / "out").exists()


def test_likert_results_do_not_depend_on_adding_rank():
    """Likert rows keep their streams and keys; the rank rows are extra, with a method column."""
    likert = simdesign.simulate(config(model="coherence"), jobs=1, progress=False)
    both = simdesign.simulate(config(methods=["likert", "rank"]), jobs=1, progress=False)
    assert list(likert.summary().columns) == list(SUMMARY_COLUMNS)
    left = likert.trials.sort_values(["test", "trial", "pair"], ignore_index=True)
    right = both.trials
    right = right[right["method"] == "likert"].drop(columns="method").sort_values(["test", "trial", "pair"],
                                                                               ignore_index=True)
    pd.testing.assert_frame_equal(left.drop(columns="fit_seconds"), right.drop(columns="fit_seconds"))
    summary = both.summary()
    assert list(summary.columns[summary.columns.get_loc("test"):][:2]) == ["test", "method"]
    assert set(summary["method"]) == {"likert", "rank"}


def test_stored_likert_trials_are_reused_when_the_model_gains_rank_noise(tmp_path):
    simdesign.simulate(config(model="coherence"), out_dir=tmp_path, jobs=1, progress=False)
    files = sorted(p.name for p in (tmp_path / "trials").rglob("*.parquet"))
    result = simdesign.simulate(config(methods=["likert", "rank"]), out_dir=tmp_path, jobs=1, progress=False)
    assert set(files) <= {p.name for p in (tmp_path / "trials").rglob("*.parquet")}
    assert set(result.trials["method"]) == {"likert", "rank"}
    # rank trials of another rank_noise must not be mixed in
    with pytest.raises(StoreError, match="@rank") as refused:
        simdesign.simulate(config(methods=["likert", "rank"], model={**JOINT, "rank_noise": 2.0}),
                           out_dir=tmp_path, jobs=1, progress=False)
    # the message names the cause (the model's rank_noise), not a test option to relabel (issue 29)
    assert "rank_noise" in str(refused.value) and "(now 2.0)" in str(refused.value)
    assert "new 'label'" not in str(refused.value)


def test_replay_reproduces_a_stored_rank_trial(tmp_path):
    both = config(methods=["likert", "rank"], effect="fitted")
    stored = simdesign.simulate(both, out_dir=tmp_path, jobs=1, progress=False).trials
    design = both.designs[0].label
    judgements, result = replay_trial(both, design, 3, "ttest_doc@rank")
    rows = stored[(stored["test"] == "ttest_doc@rank") & (stored["trial"] == 3)].sort_values("pair")
    np.testing.assert_allclose(result.p_value, rows["p_value"].to_numpy(), rtol=1e-12)
    assert sorted(judgements.scores[0].tolist()) == [1, 2, 3, 4, 5]


def test_expected_ranks_are_equal_under_effect_zero():
    """Each pairwise latent difference is symmetric about 0, so every system's expected reversed rank is (S+1)/2."""
    model = dataclasses.replace(load_model("coherence"), rank_noise=1.0)
    rng = np.random.default_rng(11)
    # many independent rankings (one per annotator and document) so the mean has a plain standard error
    scores = model.sample(BlockDesign(4000, 1, 1), rng, "zero", method="rank").scores
    mean, se = scores.mean(axis=0), scores.std(axis=0, ddof=1) / np.sqrt(len(scores))
    assert np.all(np.abs(mean - 3.0) < 4 * se), (mean, se)


def test_rank_power_counts_the_direction_of_the_latent_difference():
    """A large design finds every fitted difference, in the direction of beta_i - beta_j."""
    big = config(method="rank", effect="fitted", trials=6, tests=["ttest_doc"],
                 designs=[{"kind": "block", "blocks": 100, "docs_per_block": 4, "annotators_per_block": 3}])
    result = simdesign.simulate(big, jobs=1, progress=False)
    trials = result.trials
    relevant = trials[trials["true_diff"] != 0]
    assert (np.sign(relevant["estimate"]) == np.sign(relevant["true_diff"])).mean() > 0.9
    summary = result.summary().set_index("estimand")
    assert summary.loc["type_s", "rate"] == 0.0


def test_reliability_estimands_run_on_ranks():
    both = config(methods=["likert", "rank"], estimands=["krippendorff_alpha", "shr"])
    summary = simdesign.simulate(both, jobs=1, progress=False).summary()
    rows = summary[summary["estimand"].isin(["krippendorff_alpha", "shr"])]
    assert len(rows) == 4 and rows["rate"].notna().all()
    assert set(rows["method"]) == {"likert", "rank"}


INDEPENDENCE = {"name": "rank-independence", "model": JOINT, "method": "rank", "effect": "zero", "seed": 13,
                "trials": 1000, "tests": ["ttest", "ttest_doc", "art_doc", "art_block", "wilcoxon_doc"],
                "designs": [{"kind": "block", "blocks": 40, "docs_per_block": 1, "annotators_per_block": 1},
                            {"kind": "block", "blocks": 40, "docs_per_block": 1, "annotators_per_block": 3}]}


@pytest.mark.slow
def test_classical_tests_on_ranks_hold_their_level_with_one_document_per_annotator():
    """Independence check (README, 'Rank studies'): every annotator ranks one document.

    With one annotator per document every unit is independent and each test must hold 0.05 within
    4 MCSE. With three annotators per document the per-document and per-block tests must too; the
    single-judgement t-test treats the three rankings of one document as independent and is
    anti-conservative on ranks as on Likert scores (measured 0.074 [0.067, 0.081]), which is pinned here.
    """
    summary = simdesign.simulate(INDEPENDENCE, jobs=1, progress=False).summary()
    type1 = summary[summary["estimand"] == "type1"].set_index(["design", "test"])
    assert (summary.loc[summary["estimand"] == "failure_rate", "rate"] == 0).all()
    for (design, test), row in type1.iterrows():
        if design == "block-B40-D1-A3" and test == "ttest":
            assert row["ci_low"] > 0.05, row
            continue
        assert abs(row["rate"] - 0.05) < 4 * row["mcse"], (design, test, row["rate"], row["mcse"])


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(name for name, info in ANALYSES.items()
                                        if "rank" in info.methods and info.needs is None))
def test_every_analysis_that_accepts_ranks_runs_on_a_rank_study(name):
    model = dataclasses.replace(load_model("coherence"), rank_noise=1.0)
    judgements = model.sample(BlockDesign(6, 4, 2), np.random.default_rng(2), "fitted", method="rank")
    result = run_analysis(ANALYSES[name], judgements, np.random.default_rng(3), {})
    assert result.p_value.shape == (10,) and set(result.status) <= {"ok", "singular"}, result.message
    assert np.all((result.p_value >= 0) & (result.p_value <= 1))


def test_the_mixed_model_on_ranks_warns_where_each_annotator_ranks_one_document():
    from simdesign.studies.rates.config import config_warnings

    one = config(method="rank", tests=["clmm_native", "ttest_doc"],
                 designs=[{"kind": "block", "blocks": 5, "docs_per_block": 1, "annotators_per_block": 3},
                          {"kind": "pool", "docs": 6, "annotators": 6, "judgements_per_output": 1},
                          {"kind": "block", "blocks": 5, "docs_per_block": 2, "annotators_per_block": 3}])
    warnings = config_warnings(one)
    assert len(warnings) == 1 and "clmm_native" in warnings[0] and "0.22 [0.15, 0.31]" in warnings[0]
    assert "block-B5-D1-A3" in warnings[0] and "pool-N6-M6-k1" in warnings[0] and "D2" not in warnings[0]
    assert config_warnings(config(methods=["likert"], tests=["clmm_native"])) == []
