"""Likert and Rank from separately fitted models (simdesign.model.method_pair) and the worst-first rank model."""
import itertools
from pathlib import Path

import numpy as np
import pytest
import yaml

from simdesign.core.designs import BlockDesign
from simdesign.core.errors import ConfigError
from simdesign.model import OrdinalMixedModel, RankOnlyModel, load_model
from simdesign.model.method_pair import LikertRankModel, likert_rank_model, load_rank_model, reordered
from simdesign.studies.rates.config import load_config, parse_config

ROOT = Path(__file__).resolve().parents[1]
TOY = RankOnlyModel("toy", ("a", "b", "c", "d"), [0.0, 0.5, 1.0, -0.3],
                    [[0.3, 0.1, 0.0], [0.1, 0.2, 0.05], [0.0, 0.05, 0.4]], np.diag([0.1, 0.2, 0.3]))


def test_reordered_permutes_effects_and_slope_covariances_by_hand():
    moved = reordered(TOY, ["a", "c", "d", "b"])
    assert moved.systems == ("a", "c", "d", "b")
    assert moved.effects.tolist() == [0.0, 1.0, -0.3, 0.5]
    # slopes of (c, d, b) = rows/columns (1, 2, 0) of the (b, c, d) matrix, written out
    assert np.array_equal(moved.annotator_slope_cov, [[0.2, 0.05, 0.1], [0.05, 0.4, 0.0], [0.1, 0.0, 0.3]])
    assert np.array_equal(np.diag(moved.document_slope_cov), [0.2, 0.3, 0.1])


@pytest.mark.parametrize("systems, words", [(["b", "a", "c", "d"], "coded against 'a'"),
                                            (["a", "b", "c", "e"], "same systems")])
def test_reordered_refuses_another_reference_or_other_systems(systems, words):
    with pytest.raises(ConfigError, match=words):
        reordered(TOY, systems)


def test_likert_part_draws_exactly_as_the_likert_model_and_rank_part_as_the_rank_model():
    model = likert_rank_model("coherence", "coherence")
    design = BlockDesign(3, 5, 3)
    likert = load_model("coherence")
    for effect in ("fitted", "zero", 0.5):
        mine = model.sample(design, np.random.default_rng(4), effect)
        theirs = likert.sample(design, np.random.default_rng(4), effect)
        assert np.array_equal(mine.scores, theirs.scores)
        ranks = model.sample(design, np.random.default_rng(4), effect, method="rank")
        alone = model.rank_model.sample(design, np.random.default_rng(4), effect, method="rank")
        assert np.array_equal(ranks.scores, alone.scores)
    assert model.rank_model.systems == likert.systems  # put into the Likert order
    assert model.rank_noise is None and model.methods == ("likert", "rank")


def test_the_model_file_form_round_trips_and_keeps_its_kind():
    model = likert_rank_model("repetition", "repetition").with_document_intercept_scale(2.0)
    again = OrdinalMixedModel.from_dict(model.to_dict())
    assert isinstance(again, LikertRankModel)
    assert again.to_dict() == model.to_dict()
    assert again.document_intercept_scale == 2.0


def test_rank_noise_and_rank_model_together_are_refused():
    with pytest.raises(ConfigError, match="not both"):
        LikertRankModel(name="x", scale=(1, 2), systems=("a", "b", "c", "d"), thresholds=[0.0], effects=[0, 0, 0, 0],
                        annotator_cov=np.eye(4), document_cov=np.eye(4), rank_noise=0.5, rank_model=TOY)


def _config(model):
    return {"name": "pair", "model": model, "effect": "fitted", "methods": ["likert", "rank"], "trials": 4,
            "designs": [{"kind": "block", "blocks": 2, "docs_per_block": 5, "annotators_per_block": 3}],
            "tests": ["ttest_doc"]}


def test_config_option_builds_the_pair_and_keeps_likert_trials_reusable():
    pair = parse_config(_config({"preset": "coherence", "rank_model": "coherence"}))
    joint = parse_config(_config("coherence"))
    assert isinstance(pair.model, LikertRankModel)
    # Likert trials depend only on the Likert part: the same store key as the joint preset's ...
    assert pair.results_fingerprint() == joint.results_fingerprint()
    assert pair.analysis_fingerprints()["ttest_doc"] == joint.analysis_fingerprints()["ttest_doc"]
    # ... and rank trials on the rank model
    assert pair.analysis_fingerprints()["ttest_doc@rank"] != joint.analysis_fingerprints()["ttest_doc@rank"]
    assert parse_config(pair.to_mapping()) == pair


@pytest.mark.parametrize("model, words", [
    ({"preset": "coherence", "rank_model": "coherense"}, "model.rank_model.*did you mean 'coherence'"),
    ({"preset": "coherence", "rank_model": "coherence", "rank_noise": 0.5}, "not both"),
    ({"preset": "coherence", "rank_model": "configs/quick.yaml"}, "'model.rank_model' file .*missing"),
    ({"preset": "coherence", "rank_model": "LIKERT"}, "holds a Likert model"),
    ({"preset": "coherence", "rank_model": "RANK3"}, "same systems"),
])
def test_config_refuses_bad_rank_models_naming_the_field(model, words, tmp_path):
    (tmp_path / "likert.yaml").write_text(yaml.safe_dump(load_model("coherence").to_dict()))
    (tmp_path / "rank3.yaml").write_text(yaml.safe_dump(RankOnlyModel(
        "r3", ("__REFERENCE__", "BART", "seneca"), [0.0, 1.0, -1.0], np.eye(2), np.eye(2)).to_dict()))
    files = {"LIKERT": str(tmp_path / "likert.yaml"), "RANK3": str(tmp_path / "rank3.yaml")}
    model = {**model, "rank_model": files.get(model["rank_model"], model["rank_model"])}
    with pytest.raises(ConfigError, match=words):
        parse_config(_config(model))


def test_committed_rank_configs_use_the_separately_fitted_models():
    for path in ("configs/rank_vs_likert_coherence.yaml", "configs/plan_methods_coherence.yaml",
                 "configs/plan_methods_repetition.yaml"):
        assert "rank_model:" in (ROOT / path).read_text(), path
    model = load_config(ROOT / "configs/rank_vs_likert_coherence.yaml").model
    assert isinstance(model, LikertRankModel) and model.rank_model.to_dict() == \
        reordered(load_rank_model("coherence"), model.systems).to_dict()


def test_worst_first_rankings_have_the_closed_form_probabilities():
    # Without random effects a worst-first ranking (w_1 worst, w_2 next, ...) has probability
    # prod_k exp(-eta_{w_k}) / sum_{j not yet placed} exp(-eta_j); 30000 rankings, 4 MCSE tolerance.
    effects = np.array([0.0, 1.0, -0.7])
    model = RankOnlyModel("w", ("a", "b", "c"), effects, np.zeros((2, 2)), np.zeros((2, 2)), choice="worst_first")
    scores = model.sample(BlockDesign(1, 3000, 10), np.random.default_rng(11)).scores
    n = len(scores)
    for ranking in itertools.permutations(range(3)):  # systems from best to worst
        worst_first = ranking[::-1]
        probability = 1.0
        for k in range(3):
            rest = worst_first[k:]
            probability *= np.exp(-effects[worst_first[k]]) / np.exp(-effects[list(rest)]).sum()
        reversed_ranks = np.empty(3, int)
        reversed_ranks[list(ranking)] = [3, 2, 1]
        share = np.all(scores == reversed_ranks, axis=1).mean()
        assert abs(share - probability) < 4 * np.sqrt(probability * (1 - probability) / n), (ranking, share, probability)


def test_worst_first_is_the_reversed_best_first_ranking_of_negated_effects():
    best = RankOnlyModel("b", ("a", "b", "c"), [0.0, -0.4, 0.9], np.zeros((2, 2)), np.zeros((2, 2)))
    worst = RankOnlyModel("w", ("a", "b", "c"), [0.0, 0.4, -0.9], np.zeros((2, 2)), np.zeros((2, 2)),
                          choice="worst_first")
    design = BlockDesign(2, 5, 2)
    assert np.array_equal(worst.sample(design, np.random.default_rng(2)).scores,
                          4 - best.sample(design, np.random.default_rng(2)).scores)
    assert "choice" not in best.to_dict() and RankOnlyModel.from_dict(worst.to_dict()).choice == "worst_first"
    with pytest.raises(ConfigError, match="choice"):
        RankOnlyModel("x", ("a", "b"), [0.0, 1.0], [[0.1]], [[0.1]], choice="middle_first")


@pytest.mark.slow
def test_worst_first_fit_recovers_its_truth_and_has_the_higher_likelihood():
    from simdesign.realdata.rank_model_fit import fit_better_choice

    truth = RankOnlyModel("w", ("a", "b", "c"), [0.0, 1.0, -1.5], np.eye(2) * 0.1, np.eye(2) * 0.1,
                          choice="worst_first")
    frame = truth.sample(BlockDesign(60, 5, 2), np.random.default_rng(5)).to_frame()
    best, logliks = fit_better_choice(frame)
    assert best.model.choice == "worst_first" and logliks["worst_first"] > logliks["best_first"]
    # a sign slip in the reversal would put the effects at (0, -1, 1.5): many SEs away
    assert np.all(np.abs(best.model.effects - truth.effects) < 4 * best.beta_se + 1e-12), (best.model.effects,
                                                                                           best.beta_se)
