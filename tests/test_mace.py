"""MACE (Hovy et al. 2013) against two oracles: a plain-loop EM written here from the paper's equations,
and crowd-kit 1.4.2's MACE (EM variant, random restarts), plus behaviour it must show on spammers."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from simdesign.stats.aggregation import AGGREGATIONS, aggregate_majority, mace


def mace_data(seed: int, items: int, workers: int, per_item: int, classes: int):
    """Answers drawn from MACE's own model: theta uniform on (0.2, 0.95), spammers half favourite, half uniform."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, classes, items)
    theta = rng.uniform(0.2, 0.95, workers)
    who = np.array([rng.choice(workers, per_item, replace=False) for _ in range(items)])
    favourite = rng.integers(0, classes, workers)
    spam = np.where(rng.random(who.shape) < 0.5, favourite[who], rng.integers(0, classes, who.shape))
    answers = np.where(rng.random(who.shape) < theta[who], truth[:, None], spam)
    return answers, who, truth, theta


def loop_mace(answers, who, classes, iterations, smoothing):
    """MACE's EM written item by item and judgement by judgement from the paper (section 2), same start."""
    n_items, k = answers.shape
    workers = sorted(set(who.ravel().tolist()))
    theta = {w: 0.5 for w in workers}
    xi = {}
    for w in workers:
        counts = [sum(1 for i in range(n_items) for j in range(k) if who[i, j] == w and answers[i, j] == c)
                  for c in range(classes)]
        xi[w] = [(n + smoothing) / (sum(counts) + classes * smoothing) for n in counts]
    for _ in range(iterations):
        posterior = []
        for i in range(n_items):
            joint = []
            for t in range(classes):
                p = 1.0 / classes
                for j in range(k):
                    w, a = who[i, j], answers[i, j]
                    p *= theta[w] * (a == t) + (1 - theta[w]) * xi[w][a]
                joint.append(p)
            posterior.append([p / sum(joint) for p in joint])
        knew = {w: 0.0 for w in workers}
        spam = {w: [0.0] * classes for w in workers}
        given = {w: 0 for w in workers}
        for i in range(n_items):
            for j in range(k):
                w, a = who[i, j], answers[i, j]
                # P(knew | answer a) = sum_t q(t) theta [a = t] / P(a | t) = q(a) theta / (theta + (1 - theta) xi[a])
                p_knew = posterior[i][a] * theta[w] / (theta[w] + (1 - theta[w]) * xi[w][a])
                knew[w] += p_knew
                spam[w][a] += 1 - p_knew
                given[w] += 1
        theta = {w: (knew[w] + smoothing) / (given[w] + 2 * smoothing) for w in workers}
        xi = {w: [(s + smoothing) / (sum(spam[w]) + classes * smoothing) for s in spam[w]] for w in workers}
    return np.array(posterior), np.array([theta[w] for w in workers])


def test_mace_equals_a_plain_loop_em_of_the_paper():
    answers, who, _, _ = mace_data(3, items=25, workers=8, per_item=3, classes=4)
    for iterations in (1, 2, 7):
        # both: `iterations` E-steps each followed by an M-step; the posterior is the last E-step's, the
        # competence the last M-step's
        expected_posterior, expected_theta = loop_mace(answers, who, 4, iterations, smoothing=0.0025)
        posterior, competence, _, _ = mace(answers, who, range(4), max_iter=iterations, tol=0, starts=1)
        np.testing.assert_allclose(posterior, expected_posterior, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(competence, expected_theta, rtol=1e-10)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:The inplace keyword")  # crowd-kit 1.4.2 on pandas 3 (its code, not ours)
def test_mace_agrees_with_crowd_kit():
    crowdkit = pytest.importorskip("crowdkit.aggregation")
    answers, who, _, _ = mace_data(1, items=120, workers=15, per_item=5, classes=5)
    # crowd-kit 1.4.2 indexes its strategy counts by sorted worker and label values but its parameters by order
    # of first appearance (pd.factorize): the two agree only when both orders coincide, so ids and labels are
    # renumbered by first appearance (MACE is invariant to both renumberings).
    worker, _ = pd.factorize(who.ravel())
    label, _ = pd.factorize(answers.ravel())
    table = pd.DataFrame({"task": np.repeat(np.arange(len(answers)), who.shape[1]), "worker": worker,
                          "label": label})
    fitted = crowdkit.MACE(method="em", n_restarts=2, n_iter=300, random_state=0).fit(table)
    posterior, competence, _, _ = mace(label.reshape(who.shape), worker.reshape(who.shape), range(5), tol=1e-10,
                                       max_iter=1000)
    np.testing.assert_allclose(fitted.probas_.reindex(columns=range(5)).sort_index().to_numpy(), posterior,
                               atol=2e-3)
    np.testing.assert_allclose(fitted.spamming_[:, 1], competence, atol=1e-3)


def test_mace_finds_the_spammers_that_majority_vote_follows():
    # 300 items, two perfect workers and three spammers who always answer 1: majority vote says 1 whenever the
    # spammers outvote; MACE learns competence about 1 and 0 and recovers every item.
    rng = np.random.default_rng(0)
    truth = rng.integers(1, 4, size=300)
    ratings = np.column_stack([truth, truth, np.ones((300, 3), dtype=int)])
    workers = np.tile(np.arange(5), (300, 1))
    posterior, competence, strategy, _ = mace(ratings, workers, [1, 2, 3])
    assert np.mean(posterior.argmax(axis=1) + 1 == truth) == 1.0
    assert np.mean(aggregate_majority(ratings, scale=[1, 2, 3]) == truth) < 0.5
    assert np.all(competence[:2] > 0.99) and np.all(competence[2:] < 0.05)
    assert np.all(strategy[2:, 0] > 0.99)
    np.testing.assert_allclose(AGGREGATIONS["mace"](ratings, workers, [1, 2, 3]), truth, atol=0.01)


def test_mace_refuses_values_off_the_scale():
    with pytest.raises(ValueError, match="values of the scale"):
        mace(np.array([[1, 9]]), np.array([[0, 1]]), [1, 2, 3])


def test_several_starts_reach_a_better_optimum_than_the_deterministic_one_and_say_how_many_agreed():
    from simdesign.stats.aggregation import mace_fit

    # data from MACE's own model on which EM from the deterministic start stops at a worse optimum (issue 39)
    answers, who, _, _ = mace_data(13, items=30, workers=8, per_item=5, classes=3)
    one = mace_fit(answers, who, range(3), starts=1)
    several = mace_fit(answers, who, range(3), starts=5)
    assert one.agreed == one.starts == 1 and several.starts == 5
    assert several.log_likelihood > one.log_likelihood + 0.5  # -117.60 against -118.45
    assert 1 <= several.agreed < 5  # not every start reached the best optimum
    again = mace_fit(answers, who, range(3), starts=5)  # the starts come from a fixed stream
    np.testing.assert_array_equal(again.posterior, several.posterior)
    # mace() keeps the best start's fit
    assert mace(answers, who, range(3))[3] == several.log_likelihood
    with pytest.raises(ValueError, match="at least one start"):
        mace_fit(answers, who, range(3), starts=0)
