"""The rank generator: rankings sort the latent values of one (annotator, document)."""
import dataclasses

import numpy as np
import pytest

from simdesign.core.designs import BlockDesign
from simdesign.core.errors import ConfigError
from simdesign.model import OrdinalMixedModel, RankOnlyModel, load_model, reversed_ranks


def test_reversed_ranks_give_the_largest_value_rank_s():
    latent = np.array([[0.1, 5.0, -2.0, 0.7], [3.0, 2.0, 1.0, 0.0]])
    assert reversed_ranks(latent).tolist() == [[2, 4, 1, 3], [4, 3, 2, 1]]


def test_likert_draws_are_unchanged_by_the_rank_noise_field():
    model = load_model("coherence")
    joint = dataclasses.replace(model, rank_noise=1.5)
    design = BlockDesign(4, 5, 3)
    likert = model.sample(design, np.random.default_rng(7)).scores
    assert np.array_equal(joint.sample(design, np.random.default_rng(7)).scores, likert)


def test_rank_generation_needs_rank_noise_and_names_the_method():
    likert_only = dataclasses.replace(load_model("coherence"), rank_noise=None)
    with pytest.raises(ConfigError, match="rank_noise"):
        likert_only.sample(BlockDesign(1, 2, 2), np.random.default_rng(0), method="rank")
    with pytest.raises(ConfigError, match="likert, rank"):
        load_model("coherence").sample(BlockDesign(1, 2, 2), np.random.default_rng(0), method="pairwise")


def test_plackett_luce_first_choice_probabilities():
    # With no random slopes and Gumbel noise, P(system s ranked first) = exp(beta_s) / sum exp(beta).
    effects = np.array([0.0, 0.4, 1.0])
    model = RankOnlyModel("toy", ("a", "b", "c"), effects, np.zeros((2, 2)), np.zeros((2, 2)))
    data = model.sample(BlockDesign(1, 20000, 1), np.random.default_rng(3))
    first = (data.scores == 3).mean(axis=0)
    expected = np.exp(effects) / np.exp(effects).sum()
    standard_error = np.sqrt(expected * (1 - expected) / 20000)
    assert np.all(np.abs(first - expected) < 4 * standard_error)


def test_rank_only_model_file_round_trip():
    model = RankOnlyModel("toy", ("a", "b"), [0.0, 0.3], [[0.2]], [[0.1]])
    again = OrdinalMixedModel.from_dict(model.to_dict())
    assert isinstance(again, RankOnlyModel) and again.effects.tolist() == [0.0, 0.3]
