import json

import numpy as np
import pytest
import yaml

from simdesign import BlockDesign, ConfigError, OrdinalMixedModel, PoolDesign, load_model
from simdesign.model import covariance_square_root, effect_scale



@pytest.mark.parametrize("task", ["coherence", "repetition"])
def test_presets_match_the_papers_fitted_models(task, paper_data_dir):
    shared = json.loads((paper_data_dir / "models" / f"clmm_likert_{task}.json").read_text())
    preset = load_model(task)
    assert list(preset.systems) == ["__REFERENCE__", "abssentrw", "BART", "onmt_pg", "seneca"]
    assert list(preset.systems) == shared["system_names"]
    np.testing.assert_array_equal(preset.thresholds, shared["thresholds"])
    np.testing.assert_array_equal(preset.effects, shared["coefficients"])
    np.testing.assert_array_equal(preset.annotator_cov.ravel(), shared["random_effects"]["annotator"])
    np.testing.assert_array_equal(preset.document_cov.ravel(), shared["random_effects"]["document"])
    assert "Steen" in preset.citation and preset.scale == tuple(range(1, 8))
    # the shared JSON layout loads to the same model
    from_json = load_model(paper_data_dir / "models" / f"clmm_likert_{task}.json")
    np.testing.assert_array_equal(from_json.annotator_cov, preset.annotator_cov)


def test_singular_annotator_covariance_is_accepted():
    cov = load_model("coherence").annotator_cov
    eigenvalues = np.linalg.eigvalsh(cov)
    assert eigenvalues.min() < 0  # the paper's matrix: rank 3, a -3e-16 eigenvalue
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.cholesky(cov)
    root = covariance_square_root(cov, "annotator_cov")
    np.testing.assert_allclose(root @ root.T, cov, atol=1e-12)


def _model_dict(**changes):
    data = load_model("coherence").to_dict()
    data.update(changes)
    return data


@pytest.mark.parametrize("changes,field", [
    (dict(thresholds=[-1, 0, 2, 1, 3, 4]), "thresholds"),
    (dict(thresholds=[0, 1, 2]), "thresholds"),
    (dict(effects=[0.5, 0, 0, 0, 0]), "effects"),
    (dict(annotator_cov=np.eye(4).tolist()), "annotator_cov"),
    (dict(document_cov=(np.eye(5) + np.triu(np.ones((5, 5)), 1)).tolist()), "document_cov"),
    (dict(document_cov=np.diag([1.0, 1.0, -0.5, 1.0, 1.0]).tolist()), "positive semi-definite"),
    (dict(scale=[1, 2, 2, 3, 4, 5, 6]), "scale"),
])
def test_bad_models_are_rejected_with_the_field_named(changes, field):
    with pytest.raises(ConfigError, match=field):
        OrdinalMixedModel.from_dict(_model_dict(**changes))


def test_model_file_round_trip(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(_model_dict(name="mine")))
    model = load_model(path)
    assert model.name == "mine"
    np.testing.assert_array_equal(model.thresholds, load_model("coherence").thresholds)
    with pytest.raises(ConfigError, match="preset"):
        load_model(tmp_path / "missing.yaml")


def test_effect_settings():
    model = load_model("coherence")
    assert effect_scale("fitted") == 1 and effect_scale("zero") == 0 and effect_scale(0.5) == 0.5
    np.testing.assert_array_equal(model.effects_for("zero"), 0)
    np.testing.assert_array_equal(model.effects_for(0.5), model.effects / 2)
    for bad in ("null", None, "big", float("nan"), True):
        with pytest.raises(ConfigError, match="effect"):
            effect_scale(bad)


def test_same_seed_same_study_and_scale_values():
    model = load_model("repetition")
    design = PoolDesign(docs=50, annotators=12, judgements_per_output=3)
    first = model.sample(design, np.random.default_rng(3))
    second = model.sample(design, np.random.default_rng(3))
    np.testing.assert_array_equal(first.scores, second.scores)
    np.testing.assert_array_equal(first.annotator, second.annotator)
    assert set(np.unique(first.scores)) <= set(range(1, 8))
    frame = first.to_frame()
    assert list(frame.columns) == ["annotator", "document", "block", "system", "score"]
    assert len(frame) == design.judgements(5) and frame["block"].isna().all()


@pytest.mark.parametrize("task,effect", [("coherence", "fitted"), ("repetition", "fitted"), ("coherence", "zero")])
def test_category_frequencies_match_the_model_implied_marginals(task, effect):
    """Independent judgements: every row has its own annotator and document."""
    model = load_model(task)
    expected = model.marginal_probabilities(effect)
    design = BlockDesign(blocks=4000, docs_per_block=1, annotators_per_block=1)
    rng = np.random.default_rng(11)
    counts = np.zeros_like(expected)
    trials = 10
    for _ in range(trials):
        scores = model.sample(design, rng, effect).scores
        for category, value in enumerate(model.scale):
            counts[:, category] += (scores == value).sum(axis=0)
    draws = trials * design.pairs
    observed = counts / draws
    standard_error = np.sqrt(expected * (1 - expected) / draws)
    assert np.all(np.abs(observed - expected) <= 4 * standard_error), np.abs(observed - expected) / standard_error


def test_category_frequencies_in_a_crossed_design_use_trial_level_errors():
    """Shared annotators correlate judgements: the trial is the unit for the tolerance."""
    model = load_model("coherence")
    expected = model.marginal_probabilities("fitted")
    design = BlockDesign(blocks=1, docs_per_block=50, annotators_per_block=6)
    rng = np.random.default_rng(12)
    trials = 800
    per_trial = np.empty((trials,) + expected.shape)
    for trial in range(trials):
        scores = model.sample(design, rng).scores
        for category, value in enumerate(model.scale):
            per_trial[trial, :, category] = (scores == value).mean(axis=0)
    mcse = per_trial.std(axis=0, ddof=1) / np.sqrt(trials)
    assert np.all(np.abs(per_trial.mean(axis=0) - expected) <= 4 * mcse)


def test_zero_effect_means_differ_only_slightly():
    """Documented behaviour: under 'zero' the systems differ in random-effect variance only."""
    for task in ("coherence", "repetition"):
        means = load_model(task).expected_scores("zero")
        assert np.ptp(means) < 0.05
