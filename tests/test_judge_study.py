"""An LLM judge in the generative model and the judge-plus-human study kind (issue 43, parts 1 and 3).

Fast tests: the judge's correlation, bias and scales as the model says; IPW PPI equal to stats.ppi's on
independent scores; configs refused with their fields named; a trial the same from its seed. The study through
the runner on every backend and through SIGKILL/resume is in tests/test_every_kind.py (slow tier).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from simdesign.core.errors import ConfigError
from simdesign.core.seeds import judge_rng
from simdesign.model import load_model
from simdesign.model.judge import (Judge, JudgePanel, document_parts, latent_quality, parse_judge)
from simdesign.studies.judge.judge_study import parse_judge_study, trial_rows
from simdesign.studies.kinds import study_kind
from simdesign.stats.judge_ipw import ipw_study
from simdesign.stats.ppi import ipw_ppi_mean

MODEL = load_model("coherence")
SMALL = {"study": "judge", "name": "j", "model": "coherence", "effect": "fitted", "documents": 40,
         "judge": "self_preferring", "bootstrap_resamples": 30, "trials": 2, "seed": 3,
         "designs": [{"kind": "pool", "docs": 12, "annotators": 4, "judgements_per_output": 2}]}


def _latent(judge: Judge, documents: int = 4000, seed: int = 1):
    rng = np.random.default_rng(seed)
    quality = latent_quality(MODEL, document_parts(MODEL, documents, rng))
    scores = JudgePanel((judge,)).scores(MODEL, quality, [rng])[0]
    return quality, scores


def test_a_continuous_judge_has_its_correlation_with_the_latent_quality_and_its_bias():
    judge = parse_judge({"preset": "self_preferring", "prefers": "BART", "scale": "continuous"}, MODEL)
    quality, scores = _latent(judge)
    bart = MODEL.systems.index("BART")
    # within a system: rho = 0.7 exactly where the system's document variance is the mean one (V); about it else
    correlations = [np.corrcoef(quality[:, s], scores[:, s])[0, 1] for s in range(MODEL.n_systems)]
    assert 0.6 < np.mean(correlations) < 0.8
    shift = (scores - quality).mean(axis=0)
    assert abs(shift[bart] - 0.5) < 0.05 and np.all(np.abs(np.delete(shift, bart)) < 0.05)


def test_a_likert_judge_uses_its_categories_about_equally_and_a_probability_judge_stays_in_0_1():
    _, likert = _latent(parse_judge({"preset": "unbiased", "levels": 5}, MODEL))
    shares = np.bincount(likert.astype(int).ravel(), minlength=6)[1:] / likert.size
    assert set(np.unique(likert)) == {1.0, 2.0, 3.0, 4.0, 5.0} and np.all(np.abs(shares - 0.2) < 0.05)
    _, probability = _latent(parse_judge({"preset": "unbiased", "scale": "probability"}, MODEL))
    assert probability.min() > 0 and probability.max() < 1 and abs(probability.mean() - 0.5) < 0.05


def test_judges_and_their_streams_are_keyed_by_name():
    a, b = judge_rng(1, "cell", 0, "gpt"), judge_rng(1, "cell", 0, "claude")
    assert a.random() != b.random()
    assert judge_rng(1, "cell", 0, "gpt").random() == judge_rng(1, "cell", 0, "gpt").random()


@pytest.mark.parametrize("raw, words", [
    ({"preset": "nope"}, "preset"), ({"scale": "stars"}, "scale"), ({"correlation": 1.5}, "correlation"),
    ({"bias": {"GPT": 0.3}}, "GPT"), ({"levels": 1}, "levels"), ({"colour": 1}, "colour"),
])
def test_a_bad_judge_is_refused_naming_its_field(raw, words):
    with pytest.raises(ConfigError, match=words):
        parse_judge(raw, MODEL)


def test_ipw_study_equals_ipw_ppi_mean_when_every_output_has_one_human_score():
    rng = np.random.default_rng(4)
    documents = 60
    judge = rng.normal(size=(2, documents))
    probability = rng.uniform(0.2, 0.9, documents)
    sent = rng.random(documents) < probability
    human = judge + rng.normal(0.3, 1.0, judge.shape)
    human_sum = np.zeros((2, 1, documents))
    count = np.zeros((2, 1, documents))
    human_sum[:, 0, sent], count[:, 0, sent] = human[:, sent], 1.0
    rows = ipw_study(judge, human_sum, count, probability, ("a", "b"), rng, resamples=20)
    for lam, estimator in ((1.0, "ipw_ppi"), (None, "ipw_ppi++")):
        expected = ipw_ppi_mean(np.where(sent, human[0], np.nan), judge[0], probability, lam=lam)
        row = rows[(rows["target"] == "a") & (rows["estimator"] == estimator) & (rows["interval"] == "independent")]
        assert row["estimate"].iloc[0] == pytest.approx(expected.estimate, abs=1e-12)
        assert row["standard_error"].iloc[0] == pytest.approx(expected.standard_error, abs=1e-12)
        assert row["lam"].iloc[0] == pytest.approx(expected.lam, abs=1e-12)


def test_the_hajek_form_divides_the_weighted_rectifier_by_the_weights():
    rng = np.random.default_rng(5)
    documents = 50
    judge = rng.normal(5.0, 1.0, size=(2, documents))
    probability = rng.uniform(0.2, 0.9, documents)
    sent = rng.random(documents) < probability
    human = 0.5 * judge + rng.normal(1.0, 1.0, judge.shape)
    human_sum, count = np.zeros((2, 1, documents)), np.zeros((2, 1, documents))
    human_sum[:, 0, sent], count[:, 0, sent] = human[:, sent], 1.0
    rows = ipw_study(judge, human_sum, count, probability, ("a", "b"), rng, resamples=20)
    f = sent / probability
    expected = judge[0].mean() + np.sum(f * (np.where(sent, human[0], 0) - judge[0])) / f.sum()
    row = rows[(rows["target"] == "a") & (rows["estimator"] == "hajek_ppi") & (rows["interval"] == "independent")]
    assert row["estimate"].iloc[0] == pytest.approx(expected, abs=1e-12)
    tuned = rows[(rows["target"] == "a") & (rows["estimator"] == "hajek_ppi++")]
    assert 0 <= tuned["lam"].iloc[0] <= 1


def test_a_judge_config_is_recognised_and_its_problems_named_at_once():
    assert study_kind({k: v for k, v in SMALL.items() if k != "study"}) == "judge"
    bad = {**SMALL, "select": "cheapest", "documents": 5, "judge": {"bias": {"GPT": 1.0}}}
    with pytest.raises(ConfigError) as caught:
        parse_judge_study(bad)
    text = str(caught.value)
    assert "'select'" in text and "12 documents, more than the 'documents' (5)" in text and "GPT" in text


@pytest.mark.slow  # 0.2 s
def test_a_trial_is_the_same_from_its_seed_and_covers_with_the_model_truth():
    config = parse_judge_study(SMALL)
    cell = config.designs[0].label
    first, again = trial_rows(config, cell, 1), trial_rows(config, cell, 1)
    pd.testing.assert_frame_equal(first, again)
    expected = MODEL.expected_scores("fitted")
    assert first.loc[first["target"] == "BART", "truth"].iloc[0] == pytest.approx(expected[2])
    ppi = first[(first["estimator"] == "ppi") & (first["system_b"].notna())]
    assert ppi["rejected"].notna().all() and ppi["covered"].isin([0.0, 1.0]).all()


def test_stratified_selection_gives_every_system_its_own_documents_and_unbiased_ppi_means():
    from simdesign.studies.judge.judge_study import draw_trial

    config = parse_judge_study({**SMALL, "select": "stratified", "documents": 200, "judge": "unbiased",
                                "bootstrap_resamples": 10,
                                "designs": [{"kind": "pool", "docs": 30, "annotators": 6, "judgements_per_output": 1}]})
    cell = config.designs[0].label
    humans = draw_trial(config, cell, 0).humans
    documents = [set(humans.document[humans.system == s]) for s in range(MODEL.n_systems)]
    assert all(len(chosen) == 30 for chosen in documents)  # the same number of human-scored outputs per system
    assert len(set.union(*documents)) > 30  # drawn per system, not one set for all
    # over trials, each system's PPI mean is centred on the model's expected human score (trial = unit, 4 SE)
    estimates = pd.concat([trial_rows(config, cell, trial).assign(trial=trial) for trial in range(40)])
    ppi = estimates[(estimates["estimator"] == "ppi") & (estimates["interval"] == "independent")
                    & estimates["system_b"].isna()]
    error = (ppi["estimate"] - ppi["truth"]).groupby(ppi["target"])
    assert np.all(np.abs(error.mean()) < 4 * error.std(ddof=1) / np.sqrt(40)), error.mean()
