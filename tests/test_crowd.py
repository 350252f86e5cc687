"""The worker-level crowd (simdesign/model/crowd.py) and the crowd study kind (simdesign/studies/crowd/crowd_study.py):
assignment, spammers, filters, bias and the per-study answers against hand-computed or closed-form values."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats

import simdesign
from simdesign.cli import main
from simdesign.core.errors import ConfigError
from simdesign.model.crowd import Criterion, ItemStructure, WorkerModel, assign, sample_crowd
from simdesign.studies.crowd.crowd_study import parse_crowd_study, spearman_interval, spearman_rows, threshold_rows
from simdesign.stats.knee import kneedle, spearman_brown_curve, spearman_brown_knee

SINGLE = ItemStructure()
OVERALL = (Criterion("overall"),)
SMALL = {"study": "crowd", "name": "c", "items": {"structure": "single", "items": 20},
         "workers": {"workers": 12, "per_item": 6}, "ks": [1, 3, 6], "subsamples": 2, "trials": 4, "bootstrap": 20,
         "seed": 1, "aggregations": ["mean", "majority", "mace"]}


def test_platform_assignment_is_balanced_and_distinct():
    # the paper's numbers: 50 items x 24 workers over 46 workers = 26.1 items each
    who = assign(50, 46, 24, np.random.default_rng(0))
    assert all(len(set(row)) == 24 for row in who)
    load = np.bincount(who.ravel(), minlength=46)
    assert load.max() - load.min() <= 1 and load.sum() == 1200 and set(load) <= {26, 27}


def test_spammers_answer_without_reading():
    rng = np.random.default_rng(1)
    uniform = sample_crowd(SINGLE, OVERALL, WorkerModel(spammer_share=1.0), rng)
    counts = np.bincount(uniform.crowd.ravel(), minlength=6)[1:]
    assert stats.chisquare(counts).pvalue > 0.001  # uniform on 1..5
    assert abs(stats.spearmanr(uniform.crowd[0].mean(axis=1), uniform.truth[0]).statistic) < 0.35
    constant = sample_crowd(SINGLE, OVERALL, WorkerModel(spammer_share=1.0, spammer_kind="constant"), rng)
    for worker in range(46):
        assert len(set(constant.crowd[0][constant.workers == worker].tolist())) == 1


def test_filters_screen_spammers_and_count_candidates():
    rng = np.random.default_rng(2)
    open_door = [sample_crowd(SINGLE, OVERALL, WorkerModel(spammer_share=0.5), rng) for _ in range(20)]
    assert abs(np.mean([s.is_spammer.mean() for s in open_door]) - 0.5) < 0.05  # 920 workers: 4 SE is 0.066
    assert all(s.candidates == 46 for s in open_door)
    # spammers answer in 12 s (log-SD 0.4), honest workers in 40 s: a 20 s filter keeps 10% of spammers and
    # P(40 exp(0.4 Z) < 20) = P(Z < -1.73) = 4% of honest workers out
    timed = [sample_crowd(SINGLE, OVERALL, WorkerModel(spammer_share=0.5, min_seconds=20), rng) for _ in range(20)]
    spammer_kept = stats.norm.sf(np.log(20 / 12) / 0.4)  # P(12 exp(0.4 Z) >= 20) = 0.101
    honest_kept = stats.norm.cdf(np.log(40 / 20) / 0.4)  # P(40 exp(0.4 Z) >= 20) = 0.958
    expected_share = spammer_kept / (spammer_kept + honest_kept)
    assert abs(np.mean([s.is_spammer.mean() for s in timed]) - expected_share) < 0.03
    assert np.mean([s.candidates for s in timed]) > 46 * 1.5
    qualified = [sample_crowd(SINGLE, OVERALL, WorkerModel(spammer_share=0.5, qualification_items=5, pass_share=0.8),
                              rng) for _ in range(10)]
    assert np.mean([s.is_spammer.mean() for s in qualified]) < 0.3


def test_crowd_bias_lowers_the_crowd_against_the_experts():
    rng = np.random.default_rng(3)
    shifted = (Criterion("overall", crowd_bias=-1.0),)
    gaps = [s.crowd[0].mean() - s.experts[0].mean() for s in
            (sample_crowd(SINGLE, shifted, WorkerModel(noise_spread=0, leniency_sd=0), rng) for _ in range(20))]
    unshifted = [s.crowd[0].mean() - s.experts[0].mean() for s in
                 (sample_crowd(SINGLE, OVERALL, WorkerModel(noise_spread=0, leniency_sd=0), rng) for _ in range(20))]
    assert np.mean(gaps) < np.mean(unshifted) - 0.3


def test_systems_structure_uses_the_models_outputs_and_scale():
    model = simdesign.load_model("coherence")
    sample = sample_crowd(ItemStructure(structure="systems", docs=4), OVERALL, WorkerModel(workers=10, per_item=3),
                          np.random.default_rng(4), model)
    assert sample.truth.shape == (1, 4 * model.n_systems)
    assert set(np.unique(sample.crowd)) <= set(np.asarray(model.scale).tolist())


def test_spearman_brown_knee_and_curve_by_hand():
    # rho_1 = 1: every k equals one worker (flat curve, no knee); rho_1 -> 0: sqrt(k)
    np.testing.assert_allclose(spearman_brown_curve(1.0, [1, 4, 9]), [1, 1, 1])
    np.testing.assert_allclose(spearman_brown_curve(0.5, [1, 3]), [1, np.sqrt(3 / 2)])
    ks = [1, 3, 5, 7, 9, 12, 16, 24]
    assert spearman_brown_knee(0.3, ks) == kneedle(ks, np.sqrt(np.array(ks) / (1 + (np.array(ks) - 1) * 0.3)))
    assert np.isnan(spearman_brown_knee(float("nan"), ks))


def test_spearman_interval_and_rows_by_hand():
    low, high = spearman_interval(0.5, 53)
    half = 1.959963984540054 * np.sqrt((1 + 0.125) / 50)
    np.testing.assert_allclose([low, high], np.tanh([np.arctanh(0.5) - half, np.arctanh(0.5) + half]))
    x = np.array([[1.0, 2, 2, 5], [4, 3, 2, 1]])
    np.testing.assert_allclose(spearman_rows(x, np.array([1.0, 2, 3, 4])),
                               [stats.spearmanr(row, [1, 2, 3, 4]).statistic for row in x])


def test_spammer_threshold_needs_the_interval_above_zero_from_there_on():
    config = parse_crowd_study({**SMALL, "grid": {"spammer_share": [0.0, 0.2, 0.4, 0.6]}})
    labels = [label for label, _ in config.settings()]
    table = pd.DataFrame({"cell": labels, "quantity": "minus_mos", "criterion": "overall", "method": "mace", "k": 3,
                          "ci_low": [0.01, -0.02, 0.01, 0.02], "trials": 100})
    assert threshold_rows(config, table)["mean"].tolist() == [0.4]


@pytest.mark.slow
def test_a_small_study_runs_resumes_and_answers(tmp_path):
    config = {**SMALL, "criteria": {"a": {"item_sd": 1.5, "crowd_bias": -0.5}, "b": {"item_sd": 0.7}},
              "target": {"correlation": 0.5}}
    first = simdesign.simulate(config, out_dir=tmp_path / "out", jobs=1, progress=False)
    again = simdesign.simulate(config, out_dir=tmp_path / "out", jobs=1, progress=False)
    pd.testing.assert_frame_equal(first.rows, again.rows)
    summary = first.summary()
    assert set(summary["quantity"]) >= {"rho_expert", "rho_truth", "minus_mos", "p_beats_mos", "knee",
                                        "crowd_minus_expert", "bias_rejected", "rho_1", "plan", "pool_spammer_share"}
    mos = summary[(summary["quantity"] == "rho_expert") & (summary["method"] == "mean")]
    assert len(mos) == 2 * 3 and (mos["trials"] == 4).all()


BAD = [({"workers": {"workers": 5, "per_item": 8}}, "'workers.per_item' field must be at most"),
       ({"workers": {"spammer_kind": "lazy"}}, "'workers.spammer_kind' field must be one of ['uniform', 'constant']"),
       ({"items": {"structure": "pairs"}}, "'items.structure' field must be one of ['single', 'systems']"),
       ({"ks": [1, 40]}, "'ks' field must be a non-empty list of distinct integers in 1..workers.per_item (6)"),
       ({"aggregations": ["majority"]}, "'aggregations' field must include 'mean'"),
       ({"criteria": {"a": {"item_sd": -1}}}, "'criteria.a.item_sd' field must be a number > 0"),
       ({"grid": {"spammer_share": [0.1, 2]}}, "'grid: workers.spammer_share' field must be a number in [0, 1]"),
       ({"target": {"correlation": 1.5}}, "'target.correlation' field must be a number in (0, 1)")]


@pytest.mark.parametrize("change, message", BAD)
def test_bad_inputs_exit_2_naming_the_field(tmp_path, capsys, change, message):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({**SMALL, **change}))
    assert main(["run", str(path), "--out", str(tmp_path / "o")]) == 2
    assert message in capsys.readouterr().err
    with pytest.raises(ConfigError, match="field"):
        parse_crowd_study({**SMALL, **change})
