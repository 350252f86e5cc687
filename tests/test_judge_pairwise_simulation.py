"""Pairwise LLM judges in the generative model, the judge study and the planner (issue 43: a judge's pairwise
verdict with a position bias; the human win rate as the target)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from simdesign.core.errors import ConfigError
from simdesign.methods.pairwise import PairwiseParameters, expected_win_rates, pairwise_verdicts
from simdesign.model import load_model
from simdesign.model.common import fixed_order_product
from simdesign.model.judge import Judge, JudgePanel, document_parts, latent_quality, parse_judge
from simdesign.planning.judge_plan import parse_judge_plan
from simdesign.studies.judge.judge_study import parse_judge_study, trial_rows

MODEL = load_model("coherence")
WITH_PREFERENCES = {"preset": "coherence", "preferences": {}}
SMALL = {"study": "judge", "name": "jp", "model": WITH_PREFERENCES, "effect": "zero", "documents": 60,
         "judge": {"preset": "pairwise", "prefers": "seneca"}, "bootstrap_resamples": 60, "trials": 2,
         "designs": [{"kind": "pool", "docs": 20, "annotators": 4, "judgements_per_output": 2}]}


def test_a_verdict_follows_the_latent_difference_the_position_bias_and_the_tie_band():
    judge = Judge(scale="pairwise", position_bias=0.3, tie_band=0.2)
    latent = np.array([[1.0, 0.6, 0.95]])  # pairs (0,1) (0,2) (1,2): differences 0.4, 0.05, -0.35
    shown_first = judge.verdicts(latent, np.array([[True, True, True]]))   # + 0.3: 0.7, 0.35, -0.05
    shown_second = judge.verdicts(latent, np.array([[False, False, False]]))  # - 0.3: 0.1, -0.25, -0.65
    assert shown_first.tolist() == [[1.0, 1.0, 0.5]]
    assert shown_second.tolist() == [[0.5, 0.0, 0.0]]


def test_the_expected_win_rate_matches_simulated_verdicts_within_monte_carlo_error():
    # the quadrature (expected_win_rates) against verdicts drawn by the pairwise method's own rule
    parameters = PairwiseParameters(noise=1.0, tie_band=0.5, position_bias=0.3)
    rng = np.random.default_rng(20261128)
    n = 100_000
    quality = latent_quality(MODEL, document_parts(MODEL, n, rng), "fitted")
    annotators = fixed_order_product(rng.standard_normal((n, MODEL.n_systems)), MODEL._annotator_loading.T)
    verdicts, _ = pairwise_verdicts(parameters, quality + annotators, rng, one_at_random=False)
    simulated, error = verdicts.mean(axis=0), verdicts.std(axis=0, ddof=1) / np.sqrt(n)
    expected = expected_win_rates(MODEL, parameters, "fitted")
    assert np.all(np.abs(simulated - expected) < 4 * error), (simulated - expected) / error
    assert np.ptp(expected) > 0.5  # the fitted systems differ: the check is not of a constant
    assert np.allclose(expected_win_rates(MODEL, parameters, "zero"), 0.5, atol=1e-12)  # order is a fair coin


def test_a_pairwise_preset_can_prefer_a_system_and_settings_of_the_wrong_scale_are_refused():
    judge = parse_judge({"preset": "pairwise", "prefers": "BART"}, MODEL)
    assert judge.pairwise and judge.bias == {"BART": 0.5} and judge.position_bias == 0.25
    assert "self-preference" in judge.assumes
    with pytest.raises(ConfigError, match="'position_bias' and 'tie_band' apply to a pairwise judge"):
        parse_judge({"preset": "unbiased", "position_bias": 0.2}, MODEL)
    with pytest.raises(ConfigError, match="'tie_band' must be a non-negative number"):
        parse_judge({"scale": "pairwise", "tie_band": -1}, MODEL)
    with pytest.raises(ConfigError, match="'prefers'.*or its 'bias', not both"):
        parse_judge({"preset": "pairwise", "prefers": "BART", "bias": {"BART": 1}}, MODEL)
    with pytest.raises(ConfigError, match="all give pairwise verdicts or all score outputs"):
        JudgePanel((parse_judge("pairwise", MODEL), parse_judge("unbiased", MODEL)))


@pytest.mark.parametrize("changes, message", [
    ({"model": "coherence"}, "no 'preferences' mapping"),
    ({"select": "stratified"}, "pairwise verdicts compare two systems on one document"),
    ({"select": "least_certain", "model": {"preset": "coherence", "preferences": {"pairs": 2}},
      "designs": [{"kind": "pool", "docs": 20, "annotators": 4, "judgements_per_output": 2}]},
     "needs humans to judge every pair"),
])
def test_a_pairwise_judge_study_that_cannot_be_simulated_is_refused(changes, message):
    with pytest.raises(ConfigError, match=message):
        parse_judge_study({**SMALL, **changes})


def test_a_pairwise_trial_reports_win_rates_of_every_pair_against_the_true_human_win_rate():
    config = parse_judge_study(SMALL)
    cell = config.designs[0].label
    rows = trial_rows(config, cell, 0)
    pd.testing.assert_frame_equal(rows, trial_rows(config, cell, 0))  # a trial is its seed's
    assert set(rows["target"]) == set(config.pair_names()) and len(config.pair_names()) == 10
    assert rows["system_b"].notna().all()
    assert np.allclose(rows["truth"].dropna(), 0.5, atol=1e-12)  # effect zero: every true win rate is one half
    ppi = rows[(rows["estimator"] == "ppi++") & (rows["interval"] == "independent")]
    statistic = (ppi["estimate"] - 0.5) / ((ppi["high"] - ppi["low"]) / (2 * 1.959963984540054))
    from scipy import stats

    assert np.allclose(ppi["p_value"], 2 * stats.norm.sf(np.abs(statistic)), rtol=1e-9)  # the test of 0.5
    human = rows[(rows["estimator"] == "human_only") & (rows["interval"] == "independent")]
    assert ((human["estimate"] >= 0) & (human["estimate"] <= 1)).all()
    assert (rows.loc[rows["estimator"] == "judge_only", "n_human"] > 0).all()


def test_a_self_preferring_pairwise_judge_favours_its_system_on_every_document():
    # judge-only win rates of seneca's pairs move away from one half; the human ones do not (effect zero)
    config = parse_judge_study({**SMALL, "documents": 400, "bootstrap_resamples": 20})
    rows = trial_rows(config, config.designs[0].label, 1)
    judged = rows[(rows["estimator"] == "judge_only") & (rows["interval"] == "independent")].set_index("target")
    with_seneca = judged[judged.index.str.contains("seneca")]
    assert (with_seneca["estimate"] < 0.5).all()  # seneca is every pair's second system: its wins lower 'a vs b'


def test_a_pairwise_judge_plan_prices_human_comparisons_and_judge_calls_per_pair():
    raw = {"name": "pp", "model": WITH_PREFERENCES, "effect": "fitted", "target_power": 0.8,
           "cost": {"pay_per_hour": 12.0, "seconds_per_judgement": 40.0},
           "search": {"designs": [{"kind": "block", "blocks": [2, 4], "docs_per_block": 10,
                                   "annotators_per_block": 2}]},
           "judge_plan": {"judge": {"preset": "pairwise", "cost_per_call": 0.01}, "documents": 100,
                          "targets": ["BART vs onmt_pg"]},
           "screen_trials": 10, "max_trials": 20, "seed": 1}
    plan = parse_judge_plan(raw)
    assert plan.pairwise and plan.targets == ("BART vs onmt_pg",)
    assert plan.judge_cost == pytest.approx(0.01 * 100 * 10)  # 10 pairs of 5 systems per document
    design = plan.plan.designs[0]  # 2 blocks x 10 documents x 2 annotators, 10 comparisons each
    cost = plan.plan.method_costs.get(plan.plan.candidates[0].method, plan.plan.cost)
    assert cost.units(design, MODEL.n_systems) == 2 * 10 * 2 * 10
    assert plan.plan.target_labels == ("BART vs onmt_pg",)
    with pytest.raises(ConfigError, match="'a vs b'"):
        parse_judge_plan({**raw, "judge_plan": {**raw["judge_plan"], "targets": ["BART - onmt_pg"]}})


def test_an_ordinal_judge_cut_at_its_reported_thresholds_scores_as_the_equal_shares_judge():
    # from_judge reports a model judge's cuts on the latent scale with centred biases (what a fit gives); a judge
    # simulated from those thresholds must give the same scores as the judge cut at equal shares
    from simdesign.realdata.judge_fit import from_judge

    equal_shares = parse_judge({"preset": "self_preferring", "levels": 7}, MODEL)
    reported = from_judge(equal_shares, MODEL)
    fitted_form = Judge(scale="ordinal", levels=7, correlation=equal_shares.correlation, bias=reported.bias,
                        thresholds=reported.thresholds)
    quality = latent_quality(MODEL, document_parts(MODEL, 3000, np.random.default_rng(5)), "fitted")
    first = JudgePanel((equal_shares,)).scores(MODEL, quality, [np.random.default_rng(6)])[0]
    second = JudgePanel((fitted_form,)).scores(MODEL, quality, [np.random.default_rng(6)])[0]
    assert np.array_equal(first, second) and len(np.unique(first)) == 7
    with pytest.raises(ConfigError, match="must have levels - 1 = 6 values"):
        Judge(levels=7, thresholds=(0.0, 1.0))
    with pytest.raises(ConfigError, match="'thresholds' must be increasing"):
        Judge(levels=3, thresholds=(1.0, 0.0))
    with pytest.raises(ConfigError, match="apply to an ordinal judge only"):
        Judge(scale="probability", thresholds=(0.0,))
