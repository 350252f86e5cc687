"""Annotator panels (simdesign.model.panels): draws, parameterisation and validation."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, special, stats

from simdesign.core.designs import BlockDesign, PoolDesign
from simdesign.core.errors import ConfigError
from simdesign.model import OrdinalMixedModel, load_model
from simdesign.model.panels import PanelSpec, expected_output_scores, parse_panels, sample_panels


def test_sample_without_panels_is_unchanged():
    # Pinned with the model code before panels existed (main at 70b76e9 / 87f73f7): sample() is untouched.
    # Re-pinned once for generator version 2 (issue 38: covariance roots without LAPACK); the assignment is unchanged.
    model = load_model("coherence")
    block = model.sample(BlockDesign(2, 3, 2), np.random.default_rng(7))
    assert block.scores.tolist() == [
        [6, 2, 6, 5, 2], [6, 3, 7, 4, 3], [6, 5, 3, 5, 3], [4, 2, 6, 2, 5], [5, 6, 6, 3, 4], [7, 5, 5, 2, 2],
        [7, 6, 5, 7, 4], [6, 4, 6, 4, 1], [6, 4, 6, 5, 5], [2, 3, 3, 4, 7], [6, 5, 7, 7, 2], [6, 5, 6, 5, 4]]
    pool = model.sample(PoolDesign(4, 5, 2), np.random.default_rng(8), effect="zero")
    assert pool.scores.tolist() == [[1, 3, 3, 2, 5], [5, 6, 5, 4, 2], [5, 6, 5, 6, 7], [6, 3, 4, 5, 7],
                                    [6, 5, 5, 4, 4], [5, 2, 3, 3, 6], [5, 4, 4, 3, 3], [6, 5, 6, 3, 1]]
    assert pool.annotator.tolist() == [2, 0, 3, 1, 4, 2, 1, 0]


@pytest.mark.parametrize("spec, design", [
    (PanelSpec("all", annotators=3, judge="all"), BlockDesign(1, 6, 3)),
    (PanelSpec("pool", pool=5, per_output=2), PoolDesign(6, 5, 2)),
])
def test_one_default_panel_draws_exactly_as_the_model(spec, design):
    model = load_model("repetition")
    panel = sample_panels(model, 6, {spec.name: spec}, np.random.default_rng(11)).judgements[spec.name]
    plain = model.sample(design, np.random.default_rng(11))
    np.testing.assert_array_equal(panel.scores, plain.scores)
    np.testing.assert_array_equal(panel.annotator, plain.annotator)
    np.testing.assert_array_equal(panel.document, plain.document)


def _toy_model(annotator_var: float = 0.0) -> OrdinalMixedModel:
    """Two systems, scale 1..3, no document variance: probabilities have closed forms."""
    annotator_cov = np.diag([annotator_var, 0.0])
    return OrdinalMixedModel(name="toy", scale=(1, 2, 3), systems=("a", "b"), thresholds=[-0.5, 1.0],
                             effects=[0.0, 0.8], annotator_cov=annotator_cov, document_cov=np.zeros((2, 2)))


def _frequencies(scores: np.ndarray, column: int) -> np.ndarray:
    return np.array([(scores[:, column] == value).mean() for value in (1, 2, 3)])


def test_noise_scales_the_logistic_error():
    # Without random effects P(Y <= c) = logistic((theta_c - beta) / noise) exactly.
    model, noise = _toy_model(), 2.5
    spec = PanelSpec("p", annotators=4000, judge="all", noise=noise)
    scores = sample_panels(model, 5, {"p": spec}, np.random.default_rng(3)).judgements["p"].scores
    cumulative = special.expit((np.array([-0.5, 1.0]) - 0.8) / noise)
    expected = np.diff(np.concatenate([[0.0], cumulative, [1.0]]))
    observed = _frequencies(scores, 1)
    se = np.sqrt(expected * (1 - expected) / len(scores))  # documents identical here, judgements independent
    assert np.all(np.abs(observed - expected) < 4 * se)


def test_slope_sd_multiplies_the_annotator_covariance_by_its_square():
    # Annotator intercept variance 0.5, slope_sd 2: the intercept is N(0, 4 * 0.5); integrate it out by quadrature.
    model, slope_sd = _toy_model(0.5), 2.0
    spec = PanelSpec("p", annotators=6000, judge="all", slope_sd=slope_sd)
    scores = sample_panels(model, 1, {"p": spec}, np.random.default_rng(5)).judgements["p"].scores
    sd = slope_sd * np.sqrt(0.5)

    def p_at_most(theta, sd):
        return integrate.quad(lambda u: special.expit(theta - u) * stats.norm.pdf(u, scale=sd), -12 * sd, 12 * sd)[0]

    cumulative = np.array([p_at_most(-0.5, sd), p_at_most(1.0, sd)])
    expected = np.diff(np.concatenate([[0.0], cumulative, [1.0]]))
    observed = _frequencies(scores, 0)  # system a: intercept only
    se = np.sqrt(expected * (1 - expected) / len(scores))  # one judgement per annotator: independent
    assert np.all(np.abs(observed - expected) < 4 * se)
    # ... and not those of slope_sd 1 (the middle category differs by about 10 SE)
    middle_at_slope_one = p_at_most(1.0, np.sqrt(0.5)) - p_at_most(-0.5, np.sqrt(0.5))
    assert abs(observed[1] - middle_at_slope_one) > 4 * se[1]


def test_spammers_answer_uniformly_and_their_number_is_rounded_share():
    model = _toy_model()
    spec = PanelSpec("crowd", pool=40, per_output=40, spammer_share=0.26)
    sample = sample_panels(model, 150, {"crowd": spec}, np.random.default_rng(9))
    spammers = sample.spammers["crowd"]
    assert spammers.sum() == round(0.26 * 40)
    judgements = sample.judgements["crowd"]
    spam_scores = judgements.scores[spammers[judgements.annotator]]
    # system b's honest answers are mostly 2 or 3; a spammer's are uniform on 1..3 for both systems
    for column in (0, 1):
        observed = _frequencies(spam_scores, column)
        se = np.sqrt((1 / 3) * (2 / 3) / len(spam_scores))
        assert np.all(np.abs(observed - 1 / 3) < 4 * se)


def test_panels_share_the_outputs():
    # Noise-free, identical annotators: every panel gives every output the same score.
    model = load_model("coherence")
    panels = {"expert": PanelSpec("expert", annotators=2, judge="all", noise=1e-9, slope_sd=0.0),
              "crowd": PanelSpec("crowd", pool=12, per_output=3, noise=1e-9, slope_sd=0.0)}
    sample = sample_panels(model, 8, panels, np.random.default_rng(2))
    by_output = {}
    for judgements in sample.judgements.values():
        for document, row in zip(judgements.document, judgements.scores):
            by_output.setdefault(int(document), set()).add(tuple(row))
    assert all(len(rows) == 1 for rows in by_output.values())


def test_expected_output_scores_match_a_large_panel():
    model = load_model("coherence")
    spec = PanelSpec("big", annotators=4000, judge="all")
    sample = sample_panels(model, 3, {"big": spec}, np.random.default_rng(4))
    judgements = sample.judgements["big"]
    expected = expected_output_scores(model, sample.document_part)
    for document in range(3):
        scores = judgements.scores[judgements.document == document]
        mcse = scores.std(axis=0, ddof=1) / np.sqrt(len(scores))
        assert np.all(np.abs(scores.mean(axis=0) - expected[document]) < 4 * mcse)


def test_panel_fields_are_validated_with_their_names():
    errors: list[str] = []
    parse_panels({"expert": {"annotators": 0, "judge": "some"},
                  "crowd": {"pool": 5, "per_output": 6, "noise": 0, "slope_sd": -1, "spammer_share": 1.5},
                  "odd": {"pool": 5, "color": 1}}, errors)
    text = "\n".join(errors)
    for needle in ("panels.expert.judge", "panels.expert.annotators", "panels.crowd.per_output", "panels.crowd.noise",
                   "panels.crowd.slope_sd", "panels.crowd.spammer_share", "Unknown key(s) ['color'] in 'panels.odd'"):
        assert needle in text
    with pytest.raises(ConfigError, match="either judges all outputs"):
        PanelSpec("x", annotators=2, judge="all", pool=3, per_output=2)
    errors = []
    assert parse_panels([], errors) == {} and "non-empty mapping" in errors[0]
