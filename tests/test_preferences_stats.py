"""simdesign.stats.preferences (issue 42): Bradley-Terry with ties, sandwiches, Elo, bootstrap, sign tests.

Every estimate is checked against a computation that does not use the module: choix's MLE (decisive battles),
the doubled decisive log and evalica (ties as half wins), a likelihood written out here and maximised by
scipy (fractional outcomes; Davidson), statsmodels' GLM (cluster-robust covariance) and scipy's binomtest.
The fast tests use small logs; the heavier oracles are in the slow tier.
"""
from __future__ import annotations

import time

import choix
import evalica
import numpy as np
import pytest
from scipy import optimize, stats

from simdesign.core.errors import ConfigError
from simdesign.stats.preferences import (FIRST, SECOND, TIE, bootstrap_strengths, bradley_terry, elo,
                                         pair_sign_tests, robust_covariance, win_rates)

TRUE = np.array([0.6, 0.3, 0.0, -0.2, -0.7])


def battle_log(seed: int, n_battles: int, tie_band: float = 0.0, strengths=TRUE, n_prompts=200, n_judges=15):
    """An Arena-like log: random pairs; the first wins with the logistic probability minus half the tie band."""
    rng = np.random.default_rng(seed)
    n = len(strengths)
    first = rng.integers(0, n, n_battles)
    second = (first + rng.integers(1, n, n_battles)) % n
    p = 1 / (1 + np.exp(strengths[second] - strengths[first]))
    u = rng.random(n_battles)
    outcome = np.where(u < p - tie_band / 2, FIRST, np.where(u < p + tie_band / 2, TIE, SECOND))
    return first, second, outcome, rng.integers(0, n_prompts, n_battles), rng.integers(0, n_judges, n_battles)


def centred(x):
    return np.asarray(x) - np.mean(x)


def choix_mle(n, winners, losers):
    return centred(choix.ilsr_pairwise(n, list(zip(winners, losers)), max_iter=10_000, tol=1e-14))


def to_centred(n):
    """The matrix that maps (s_1 - s_0, ..., s_{n-1} - s_0), system 0 the reference, to centred strengths."""
    embed = np.vstack([np.zeros(n - 1), np.eye(n - 1)])
    return (np.eye(n) - 1.0 / n) @ embed


# --- fast tier -------------------------------------------------------------------------------------------

def test_decisive_log_equals_choix_mle():
    first, second, outcome, *_ = battle_log(1, 600)
    fit = bradley_terry(first, second, outcome, 5)
    assert fit.converged and fit.tie_parameter is None and abs(fit.strength.mean()) < 1e-12
    winners = np.where(outcome == FIRST, first, second)
    losers = np.where(outcome == FIRST, second, first)
    np.testing.assert_allclose(fit.strength, choix_mle(5, winners, losers), atol=1e-6)
    np.testing.assert_allclose(fit.covariance.sum(axis=1), 0, atol=1e-12)


def test_half_win_equals_the_doubled_decisive_log_and_evalica():
    first, second, outcome, *_ = battle_log(2, 600, tie_band=0.3)
    assert (outcome == TIE).sum() > 100
    fit = bradley_terry(first, second, outcome, 5)
    # Independent: each decisive battle twice, each tie once as a win for each side; its likelihood is the
    # square of the fractional one, so the MLE is the same.
    decisive = outcome != TIE
    winners = np.r_[np.where(outcome == FIRST, first, second)[decisive].repeat(2), first[~decisive],
                    second[~decisive]]
    losers = np.r_[np.where(outcome == FIRST, second, first)[decisive].repeat(2), second[~decisive],
                   first[~decisive]]
    np.testing.assert_allclose(fit.strength, choix_mle(5, winners, losers), atol=1e-6)
    # evalica's bradley_terry fits the win matrix plus tie_weight (0.5) times the symmetric tie matrix by
    # Newman's/Zermelo's iteration: the same half-win likelihood; its scores are strengths pi, not logs.
    code = {FIRST: evalica.Winner.X, SECOND: evalica.Winner.Y, TIE: evalica.Winner.Draw}
    result = evalica.bradley_terry(first.tolist(), second.tolist(), [code[o] for o in outcome],
                                   tolerance=1e-14, limit=100_000)
    pi = result.scores.reindex(range(5)).to_numpy()
    np.testing.assert_allclose(fit.strength, centred(np.log(pi)), atol=1e-6)


def test_no_finite_mle_is_reported_not_returned_and_the_ridge_matches_choix():
    # system 2 wins both its comparisons, so its maximum-likelihood strength is infinite
    first = [0, 1, 0, 1, 2, 2]
    second = [1, 0, 1, 0, 0, 1]
    outcome = [FIRST, FIRST, SECOND, TIE, FIRST, FIRST]
    fit = bradley_terry(first, second, outcome, 3)
    assert not fit.converged and np.isnan(fit.strength).all() and "system 2 never lost" in fit.message
    assert "no comparisons" in bradley_terry([0, 1], [1, 0], [1, 0], 3).message
    ridged = bradley_terry(first, second, [FIRST, FIRST, SECOND, SECOND, FIRST, FIRST], 3, ridge=0.5)
    winners, losers = [0, 1, 1, 0, 2, 2], [1, 0, 0, 1, 0, 1]
    # choix 0.4.1 minimises the negative log-likelihood plus alpha * sum(params**2) (its opt.PairwiseFcts,
    # though its docstring says a prior of variance 1 / alpha); ours subtracts ridge / 2 * sum(s**2)
    reference = choix.opt_pairwise(3, list(zip(winners, losers)), alpha=0.25, tol=1e-12)
    assert ridged.converged
    np.testing.assert_allclose(ridged.strength, reference, atol=1e-6)


def test_pair_sign_tests_against_binomtest_on_a_hand_table():
    # pair (0, 1) on 5 documents: 0's shares 1, 1, 0.5 (a tie), 0.75, 0; pair (0, 2) tied on its only document;
    # pair (1, 2) never compared
    first = [0, 0, 1, 0, 0, 0, 1, 0, 0, 2]
    second = [1, 1, 0, 1, 1, 1, 0, 1, 1, 0]
    outcome = [1, 1, 1, 0.5, 1, 1, 0.5, 1, 0, 0.5]
    units = ["a", "b", "b", "c", "d", "d", "d", "d", "e", "a"]
    table = pair_sign_tests(first, second, outcome, units, 3)
    assert table[["system_i", "system_j"]].values.tolist() == [[0, 1], [0, 2], [1, 2]]
    row = table.iloc[0]
    shares = np.array([1.0, 0.5, 0.5, 0.875, 0.0])  # b: 0 won then lost; d: 1 + 1 + 0.5 + 1 over 4
    informative = shares[shares != 0.5]
    assert row.n_units == 5 and row.n_informative == informative.size
    assert row.p_value == pytest.approx(stats.binomtest(int((informative > 0.5).sum()), informative.size).pvalue)
    assert row.estimate == pytest.approx(np.mean(shares - 0.5)) and row.status == "ok"
    assert np.isnan(table.iloc[1].p_value) and table.iloc[1].status == "no informative unit"
    assert table.iloc[2].status == "no comparisons" and table.iloc[2].n_units == 0


def test_bad_inputs_name_the_field_and_the_allowed_values():
    good = dict(first=[0, 1], second=[1, 2], outcome=[1, 0], n_systems=3)
    cases = [
        (dict(second=[1, 1]), ["first and second", "itself", "row(s) 1"]),
        (dict(outcome=[1, 0.7]), ["outcome", "0.7", "1 (first preferred), 0.5 (tie) or 0"]),
        (dict(first=[0, 3]), ["first", "0..2", "[3]"]),
        (dict(second=[-1, 2]), ["second", "0..2"]),
        (dict(outcome=[1, 0, 1]), ["equal lengths", "outcome=3"]),
        (dict(n_systems=1), ["n_systems", "at least 2"]),
        (dict(first=[0.5, 1]), ["first", "integer"]),
    ]
    for change, words in cases:
        for call in (bradley_terry, win_rates):
            with pytest.raises(ConfigError) as caught:
                call(**{**good, **change})
            assert all(word in str(caught.value) for word in words), (change, str(caught.value))
    with pytest.raises(ConfigError, match="ties must be 'half'"):
        bradley_terry(**good, ties="rao-kupper")
    with pytest.raises(ConfigError, match="units"):
        pair_sign_tests(**good, units=[1])
    with pytest.raises(ConfigError, match="anchor"):
        elo([0.0, 1.0], anchor=2)


def test_elo_scale_and_win_rates():
    np.testing.assert_allclose(elo([1.0, 0.0, -1.0]), 1000 + 400 / np.log(10) * np.array([1, 0, -1]))
    assert elo([1.0, 0.0], anchor=1, anchor_value=1200)[1] == 1200
    assert elo([np.log(10), 0.0], anchor=1)[0] == pytest.approx(1400)  # 400 points: odds of 10 to 1
    share, count = win_rates([0, 1, 0, 2], [1, 0, 2, 0], [1, 0.5, 0, 0], 3)
    assert share[0, 1] == pytest.approx(0.75) and share[1, 0] == pytest.approx(0.25)
    assert share[0, 2] == 0.5 and np.isnan(share[1, 2]) and count.tolist() == [[0, 2, 2], [2, 0, 0], [2, 0, 0]]


# --- slow tier: heavier oracles --------------------------------------------------------------------------

def davidson_logliks(params, first, second, outcome, n):
    """Davidson (1970) written in pi, per comparison: params = (log pi_1 .. log pi_{n-1}, log nu), pi_0 = 1."""
    pi = np.exp(np.r_[0.0, params[:n - 1]])
    nu = np.exp(params[-1])
    a, b = pi[first], pi[second]
    tie = nu * np.sqrt(a * b)
    return np.log(np.where(outcome == FIRST, a, np.where(outcome == SECOND, b, tie)) / (a + b + tie))


def davidson_negative_loglik(params, first, second, outcome, n):
    return -davidson_logliks(params, first, second, outcome, n).sum()


@pytest.mark.slow
def test_davidson_equals_a_direct_maximisation():
    first, second, outcome, prompts, _ = battle_log(3, 800, tie_band=0.25, n_prompts=50)
    fit = bradley_terry(first, second, outcome, 5, ties="davidson")
    assert fit.converged and fit.ties == "davidson"
    result = optimize.minimize(lambda x: davidson_negative_loglik(x, first, second, outcome, 5) / 800,
                               np.zeros(5), method="BFGS", jac="3-point", options={"gtol": 1e-11})
    np.testing.assert_allclose(fit.strength, centred(np.r_[0.0, result.x[:4]]), atol=1e-6)
    assert fit.tie_parameter == pytest.approx(np.exp(result.x[4]), abs=1e-6)
    assert fit.log_likelihood == pytest.approx(-result.fun * 800, abs=1e-6)
    # model covariance: the inverse of the numerical Hessian, mapped from the reference parametrisation
    hessian = optimize.approx_fprime(result.x, lambda x: optimize.approx_fprime(
        x, lambda y: davidson_negative_loglik(y, first, second, outcome, 5), 1e-6), 1e-4)
    covariance = np.linalg.inv((hessian + hessian.T) / 2)
    mapped = to_centred(5) @ covariance[:4, :4] @ to_centred(5).T
    np.testing.assert_allclose(fit.covariance, mapped, rtol=1e-3, atol=1e-6)
    # the prompt-clustered sandwich with nu a parameter: numerical per-comparison scores, the same bread
    h = 1e-6
    scores = np.stack([(davidson_logliks(result.x + h * e, first, second, outcome, 5)
                        - davidson_logliks(result.x - h * e, first, second, outcome, 5)) / (2 * h)
                       for e in np.eye(5)], axis=1)
    sums = np.stack([np.bincount(prompts, scores[:, k], minlength=50) for k in range(5)], axis=1)
    sandwich = covariance @ (50 / 49 * sums.T @ sums) @ covariance
    robust = robust_covariance(fit, first, second, outcome, [prompts])
    np.testing.assert_allclose(robust, to_centred(5) @ sandwich[:4, :4] @ to_centred(5).T, rtol=1e-3, atol=1e-6)


@pytest.mark.slow
def test_davidson_scores_are_the_derivatives_of_each_comparisons_loglik():
    first, second, outcome, *_ = battle_log(4, 300, tie_band=0.3)
    fit = bradley_terry(first, second, outcome, 5, ties="davidson")
    scores = fit.scores(first, second, outcome, with_tie=True)
    assert scores.shape == (300, 6)
    np.testing.assert_allclose(scores.sum(axis=0), 0, atol=1e-8)  # the MLE: total score 0
    theta = np.r_[fit.strength, np.log(fit.tie_parameter)]

    def comparison_loglik(x, k):
        # the same model in a parametrisation with every strength free (pi_0 = exp(x_0), not 1)
        shift = np.r_[x[1:5] - x[0], x[5]]
        return -davidson_negative_loglik(shift, first[k:k + 1], second[k:k + 1], outcome[k:k + 1], 5)

    for k in (0, 1, 2, int(np.flatnonzero(outcome == TIE)[0])):
        numeric = optimize.approx_fprime(theta, comparison_loglik, 1e-7, k)
        np.testing.assert_allclose(scores[k], numeric, atol=1e-5)


@pytest.mark.slow
def test_davidson_without_ties_is_bradley_terry():
    first, second, outcome, *_ = battle_log(5, 400)
    half, davidson = (bradley_terry(first, second, outcome, 5, ties=ties) for ties in ("half", "davidson"))
    assert davidson.tie_parameter == 0.0 and davidson.converged and "no tie" in davidson.message
    np.testing.assert_allclose(davidson.strength, half.strength, atol=1e-12)
    everything_tied = bradley_terry(first, second, np.full(400, TIE), 5, ties="davidson")
    assert not everything_tied.converged and "every comparison is a tie" in everything_tied.message


@pytest.mark.slow
def test_half_win_equals_scipy_on_the_fractional_loglik_with_weights():
    first, second, outcome, *_ = battle_log(6, 500, tie_band=0.3)
    weights = np.random.default_rng(0).uniform(0.5, 2.0, 500)

    def negative(x):
        s = np.r_[0.0, x]
        d = s[first] - s[second]
        return -(weights * (outcome * -np.logaddexp(0, -d) + (1 - outcome) * -np.logaddexp(0, d))).sum() / 500

    result = optimize.minimize(negative, np.zeros(4), method="BFGS", jac="3-point", options={"gtol": 1e-11})
    fit = bradley_terry(first, second, outcome, 5, weights=weights)
    np.testing.assert_allclose(fit.strength, centred(np.r_[0.0, result.x]), atol=1e-6)
    assert fit.log_likelihood == pytest.approx(-500 * result.fun, abs=1e-6)


def glm_of_decisive_battles(first, second, outcome, n):
    import statsmodels.api as sm

    design = np.zeros((first.size, n))
    design[np.arange(first.size), first] += 1.0
    design[np.arange(first.size), second] -= 1.0
    return sm.GLM(outcome, design[:, 1:], family=sm.families.Binomial())  # system 0 the reference


@pytest.mark.slow
def test_robust_covariance_equals_statsmodels_cluster_glm():
    first, second, outcome, prompts, judges = battle_log(7, 1500, n_prompts=60, n_judges=12)
    fit = bradley_terry(first, second, outcome, 5)
    model = glm_of_decisive_battles(first, second, outcome, 5)
    mapping = to_centred(5)
    plain = model.fit(tol=1e-12)
    np.testing.assert_allclose(fit.covariance, mapping @ plain.cov_params() @ mapping.T, rtol=1e-6, atol=1e-12)
    # statsmodels' CR1 without its correction, times G / (G - 1), is ours; its default correction also has
    # (N - 1) / (N - K), K = 4 free parameters, which we leave out (as Stata's logit does).
    raw = model.fit(tol=1e-12, cov_type="cluster", cov_kwds={"groups": prompts, "use_correction": False})
    ours = robust_covariance(fit, first, second, outcome, [prompts])
    np.testing.assert_allclose(ours, 60 / 59 * mapping @ raw.cov_params() @ mapping.T, rtol=1e-6, atol=1e-12)
    corrected = model.fit(tol=1e-12, cov_type="cluster", cov_kwds={"groups": prompts})
    np.testing.assert_allclose(ours * (1499 / 1496), mapping @ corrected.cov_params() @ mapping.T, rtol=1e-6,
                               atol=1e-12)
    # two-way (Cameron, Gelbach & Miller 2011): statsmodels' cov_cluster_2groups, each term with its correction
    both = model.fit(tol=1e-12, cov_type="cluster", cov_kwds={"groups": np.c_[prompts, judges]})
    two_way = robust_covariance(fit, first, second, outcome, [prompts, judges])
    assert np.linalg.eigvalsh(mapping @ both.cov_params() @ mapping.T).min() > -1e-12  # no clipping needed
    np.testing.assert_allclose(two_way * (1499 / 1496), mapping @ both.cov_params() @ mapping.T, rtol=1e-6,
                               atol=1e-12)


@pytest.mark.slow
def test_bootstrap_counts_failures_is_reproducible_and_fast():
    first, second, outcome, prompts, judges = battle_log(8, 2000, tie_band=0.2)
    kwargs = dict(prompts=prompts, n_resamples=1000)
    start = time.perf_counter()
    one = bootstrap_strengths(first, second, outcome, 5, rng=np.random.default_rng(3), **kwargs)
    seconds = time.perf_counter() - start
    again = bootstrap_strengths(first, second, outcome, 5, rng=np.random.default_rng(3), **kwargs)
    assert one.n_failed == 0 and one.draws.shape == (1000, 5) and np.array_equal(one.draws, again.draws)
    assert seconds < 2.0  # about 0.05 s on an idle core
    # the bootstrap spread is near the model's standard error when every prompt has independent battles
    fit = bradley_terry(first, second, outcome, 5)
    ratio = one.draws.std(axis=0) / np.sqrt(robust_covariance(fit, first, second, outcome, [prompts]).diagonal())
    assert np.all((ratio > 0.85) & (ratio < 1.15))
    assert np.all((one.lower < fit.strength) & (fit.strength < one.upper))
    two_way = bootstrap_strengths(first, second, outcome, 5, judges=judges, rng=np.random.default_rng(3),
                                  ties="davidson", **kwargs)
    assert two_way.n_failed == 0 and two_way.draws.shape == (1000, 5)
    # a system that beats the others on 2 of 20 prompts only: resamples without those prompts have no MLE
    first, second = np.tile([0, 1, 2], 20), np.tile([1, 2, 0], 20)
    outcome = np.tile([SECOND, FIRST, FIRST], 20)  # 0 loses to 1 and to 2 ...
    outcome[[0, 3]] = FIRST  # ... except on prompts 0 and 1
    sparse = bootstrap_strengths(first, second, outcome, 3, prompts=np.repeat(np.arange(20), 3),
                                 rng=np.random.default_rng(4), n_resamples=500)
    expected = 500 * (18 / 20) ** 20  # P(neither prompt 0 nor 1 drawn)
    assert abs(sparse.n_failed - expected) < 4 * np.sqrt(expected) and sparse.draws.shape[0] == 500 - sparse.n_failed
