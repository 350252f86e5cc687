"""Aggregation methods and the knee finder against hand-computed answers."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from simdesign.studies.panels.panel_study import rank_correlations, ranked
from simdesign.stats.aggregation import (AGGREGATIONS, aggregate_majority, aggregate_mean, aggregate_median,
                                         dawid_skene, vote_counts)
from simdesign.stats.knee import kneedle

RATINGS = np.array([[1, 2, 4], [5, 5, 2], [7, 7, 7], [3, 6, 6]])
SCALE = range(1, 8)


def test_mean_median_majority_by_hand():
    np.testing.assert_allclose(aggregate_mean(RATINGS), [7 / 3, 4, 7, 5])
    np.testing.assert_allclose(aggregate_median(RATINGS), [2, 5, 7, 6])
    # item 0 has three modes (1, 2, 4): their mean 7/3
    np.testing.assert_allclose(aggregate_majority(RATINGS, scale=SCALE), [7 / 3, 5, 7, 6])


def test_even_counts_median_and_majority_ties():
    ratings = np.array([[2, 2, 5, 5], [1, 3, 3, 7], [4, 6, 1, 2]])
    np.testing.assert_allclose(aggregate_median(ratings), [3.5, 3, 3])
    np.testing.assert_allclose(aggregate_majority(ratings, scale=SCALE), [3.5, 3, 13 / 4])


def test_vote_counts_and_off_scale_values():
    np.testing.assert_array_equal(vote_counts(np.array([[1, 3, 3]]), [1, 2, 3]), [[1, 0, 2]])
    with pytest.raises(ValueError, match="values of the scale"):
        vote_counts(np.array([[1, 4]]), [1, 2, 3])
    with pytest.raises(ValueError, match="values of the scale"):
        vote_counts(np.array([[0, 2]]), [1, 2, 3])


def test_dawid_skene_one_em_step_by_hand():
    # Two items, two workers a (id 0) and b (id 1), classes 1 and 2: item 0 votes (1, 1), item 1 votes (1, 2).
    # Start: posteriors (1, 0) and (1/2, 1/2). M-step (no smoothing): prior (3/4, 1/4);
    # a: row 1 = (1.5, 0)/1.5 = (1, 0), row 2 = (0.5, 0)/0.5 = (1, 0);
    # b: row 1 = (1, 0.5)/1.5 = (2/3, 1/3), row 2 = (0, 0.5)/0.5 = (0, 1).
    # E-step: item 0: (3/4 * 1 * 2/3, 1/4 * 1 * 0) -> (1, 0); item 1: (3/4 * 1 * 1/3, 1/4 * 1 * 1) -> (1/2, 1/2).
    posterior, confusion, prior = dawid_skene(np.array([[1, 1], [1, 2]]), np.array([[0, 1], [0, 1]]), [1, 2],
                                              smoothing=0.0, max_iter=1)
    np.testing.assert_allclose(prior, [0.75, 0.25])
    np.testing.assert_allclose(confusion[0], [[1, 0], [1, 0]])
    np.testing.assert_allclose(confusion[1], [[2 / 3, 1 / 3], [0, 1]])
    np.testing.assert_allclose(posterior, [[1, 0], [0.5, 0.5]])


def test_dawid_skene_down_weights_spammers():
    # 300 items, two reliable workers (always right) and three spammers (uniform on 1..3) judging every item:
    # majority vote is often wrong, Dawid-Skene learns who is reliable and recovers every item.
    rng = np.random.default_rng(0)
    truth = rng.integers(1, 4, size=300)
    ratings = np.column_stack([truth, truth, rng.integers(1, 4, size=(300, 3))])
    workers = np.tile(np.arange(5), (300, 1))
    posterior, confusion, _ = dawid_skene(ratings, workers, [1, 2, 3])
    assert np.mean(posterior.argmax(axis=1) + 1 == truth) == 1.0
    assert np.mean(aggregate_majority(ratings, scale=[1, 2, 3]) == truth) < 0.9
    # reliable workers: confusion near the identity; spammers: every row near uniform
    assert np.all(np.diagonal(confusion[:2], axis1=1, axis2=2) > 0.98)
    assert np.all(np.abs(confusion[2:] - 1 / 3) < 0.12)
    np.testing.assert_allclose(AGGREGATIONS["dawid_skene"](ratings, workers, [1, 2, 3]), truth, atol=0.02)


def test_dawid_skene_agreeing_workers_give_their_label():
    ratings = np.array([[2, 2, 2], [5, 5, 5], [7, 7, 7]])
    values = AGGREGATIONS["dawid_skene"](ratings, np.array([[0, 1, 2]] * 3), SCALE)
    np.testing.assert_allclose(values, [2, 5, 7], atol=0.05)


def test_kneedle_by_hand():
    # x scaled (0, .25, .5, .75, 1); y scaled (0, .8, .9, .95, 1); difference (0, .55, .4, .2, 0): knee at x = 2
    assert kneedle([1, 2, 3, 4, 5], [0.0, 0.8, 0.9, 0.95, 1.0]) == 2
    # y scaled (0, .533, .8, .933, 1), difference (0, .283, .3, .183, 0): knee at x = 2 of 0..4
    assert kneedle([0, 1, 2, 3, 4], [0, 0.5, 0.75, 0.875, 0.9375]) == 2
    # uneven x: scaled (0, .1, .3, 1); y scaled (0, .5, .9, 1); difference (0, .4, .6, 0): knee at 4
    assert kneedle([1, 2, 4, 11], [0.0, 0.5, 0.9, 1.0]) == 4


def test_kneedle_without_a_knee():
    assert np.isnan(kneedle([1, 2, 3], [1.0, 1.0, 1.0]))
    assert np.isnan(kneedle([1, 2, 3], [3.0, 2.0, 1.0]))
    assert np.isnan(kneedle([1, 2], [0.0, 1.0]))
    with pytest.raises(ValueError):
        kneedle([1, 2, 3], [1.0, 2.0])


def test_rank_correlations_match_scipy_with_ties():
    rng = np.random.default_rng(1)
    target = rng.integers(1, 5, size=30).astype(float)
    aggregates = rng.integers(1, 6, size=(4, 30)).astype(float)
    mine = rank_correlations(aggregates, ranked(target))
    np.testing.assert_allclose(mine, [stats.spearmanr(row, target).statistic for row in aggregates])
    assert np.isnan(rank_correlations(np.ones((1, 30)), ranked(target))[0])
