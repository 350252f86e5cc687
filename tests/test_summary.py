import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

from simdesign.studies.rates.config import parse_config
from simdesign.studies.rates.summary import (rate_from_shares, ratio_rate, share_rate, summarise, wilson_from_mcse,
                                             wilson_interval)


def test_rate_and_trial_level_mcse():
    shares = np.array([0.0, 0.2, 0.1, 0.5, 0.0, 0.3])
    rate = rate_from_shares(shares, n_tests=60)
    assert rate.rate == pytest.approx(1.1 / 6)
    assert rate.mcse == pytest.approx(np.sqrt(np.var(shares, ddof=1) / 6))
    n_eff = np.clip(rate.rate * (1 - rate.rate) / rate.mcse ** 2, 6, 60)
    low, high = proportion_confint(rate.rate * n_eff, n_eff, method="wilson")
    assert (rate.ci_low, rate.ci_high) == pytest.approx((low, high))


def test_zero_rate_has_an_interval_of_trials_size():
    rate = rate_from_shares(np.zeros(50), n_tests=500)
    assert rate.rate == 0 and rate.mcse == 0 and rate.ci_low == pytest.approx(0, abs=1e-12)
    assert rate.ci_high == pytest.approx(proportion_confint(0, 50, method="wilson")[1])


def test_n_eff_is_clipped_to_the_number_of_tests():
    # an impossibly small MCSE cannot claim more information than n_tests
    low, high = wilson_from_mcse(0.3, 1e-6, trials=10, n_tests=100)
    assert (low, high) == pytest.approx(proportion_confint(30, 100, method="wilson"))


def test_ratio_estimator_delta_method():
    numerators = np.array([3.0, 5.0, 4.0, 2.0])
    denominators = np.array([5.0, 6.0, 6.0, 4.0])
    rate = ratio_rate(numerators, denominators)
    r = numerators.sum() / denominators.sum()
    # delta method for a ratio of means, written out independently
    mean_a, mean_b = numerators.mean(), denominators.mean()
    cov = np.cov(numerators, denominators, ddof=1)
    var = (cov[0, 0] - 2 * r * cov[0, 1] + r * r * cov[1, 1]) / (len(numerators) * mean_b ** 2)
    assert rate.rate == pytest.approx(r) and rate.mcse == pytest.approx(np.sqrt(var))
    assert mean_a / mean_b == pytest.approx(r)


def _table(p_values, status, true_diff, estimate, design="block-B2-D5-A3", test="ttest"):
    trials, n_pairs = p_values.shape
    return pd.DataFrame({
        "design": design, "trial": np.repeat(np.arange(trials), n_pairs), "test": test,
        "pair": np.tile(np.arange(n_pairs), trials), "system_a": "a", "system_b": "b",
        "true_diff": np.tile(true_diff, trials), "estimate": estimate.ravel(), "p_value": p_values.ravel(),
        "status": status.ravel(), "message": "", "fit_status": pd.array([None] * p_values.size, dtype="string"),
        "fit_seconds": 0.01,
    })


RAW = {"name": "s", "model": "coherence", "trials": 4, "tests": ["ttest"],
       "designs": [{"kind": "block", "blocks": 2, "docs_per_block": 5, "annotators_per_block": 3}]}


def test_power_counts_right_direction_only_and_failures_both_ways():
    config = parse_config({**RAW, "effect": "fitted"})
    true_diff = config.model.effects[[0, 0, 0, 0, 1, 1, 1, 2, 2, 3]] - config.model.effects[[1, 2, 3, 4, 2, 3, 4, 3, 4, 4]]
    rng = np.random.default_rng(0)
    p = rng.uniform(0, 0.1, size=(4, 10))
    estimate = np.tile(true_diff, (4, 1))
    estimate[0, 0] *= -1  # one wrong-direction estimate
    status = np.full((4, 10), "ok", dtype=object)
    status[1, :] = "error"  # a failed fit fails all its pairs
    p[1, :] = np.nan
    table = _table(p, status, true_diff, estimate)
    summary = summarise(config, table).set_index("estimand")
    reject = (p < 0.05) & (status == "ok")
    right = reject & (np.sign(estimate) == np.sign(true_diff))
    wrong = reject & (np.sign(estimate) == -np.sign(true_diff))
    assert summary.loc["power", "rate"] == pytest.approx(right.sum() / 40)
    assert summary.loc["type_s", "rate"] == pytest.approx(wrong.sum() / 40)
    assert summary.loc["power_fitted", "rate"] == pytest.approx(right.sum() / 30)
    assert summary.loc["power_fitted", "n_tests"] == 30
    assert summary.loc["failure_rate", "rate"] == pytest.approx(0.25)
    assert summary.loc["power", "n_failed"] == 10
    assert summary.loc["power", "judgements"] == 150


def test_type1_and_familywise_under_zero():
    config = parse_config({**RAW, "effect": "zero"})
    p = np.full((4, 10), 0.5)
    p[0, 3] = p[0, 4] = p[2, 0] = 0.01
    status = np.full((4, 10), "ok", dtype=object)
    summary = summarise(config, _table(p, status, np.zeros(10), np.zeros((4, 10)))).set_index("estimand")
    assert summary.loc["type1", "rate"] == pytest.approx(3 / 40)
    assert summary.loc["familywise", "rate"] == pytest.approx(2 / 4)
    assert summary.loc["type1", "mcse"] == pytest.approx(np.std([0.2, 0, 0.1, 0], ddof=1) / 2)
    assert "power" not in summary.index


@pytest.mark.parametrize("test, random_effects", [("clm", False), ("lmer", True), ("clmm_native", True)])
def test_singular_rate_only_for_models_with_random_effects(test, random_effects):
    """clm has no random effects, so no fit of it can be singular: no singular_rate row, even though
    it reports a fit status like the mixed models do."""
    config = parse_config({**RAW, "effect": "zero", "tests": [test]})
    p = np.full((4, 10), 0.5)
    fit_status = np.repeat(["ok", "singular", "ok", "singular"], 10)
    table = _table(p, fit_status.reshape(4, 10).astype(object), np.zeros(10), np.zeros((4, 10)),
                   test=config.analyses[0].label)
    table["fit_status"] = pd.array(fit_status, dtype="string")
    summary = summarise(config, table).set_index("estimand")
    assert ("singular_rate" in summary.index) == random_effects
    if random_effects:
        assert summary.loc["singular_rate", "rate"] == pytest.approx(0.5)
        assert summary.loc["singular_rate", "n_tests"] == 4


def test_wilson_interval_is_statsmodels_wilson_at_the_effective_size():
    """The closed form (written out for speed) against statsmodels' proportion_confint."""
    rng = np.random.default_rng(5)
    for _ in range(200):
        trials = int(rng.integers(2, 2000))
        rate = float(rng.choice([0.0, 1.0, rng.random()]))
        mcse = float(rng.choice([0.0, np.nan, rng.random() * 0.05]))
        n_tests = trials * int(rng.integers(1, 11))
        confidence = float(rng.choice([0.95, 0.975, 0.99375]))
        n_eff = trials if not np.isfinite(mcse) or mcse <= 0 else np.clip(rate * (1 - rate) / mcse ** 2, trials,
                                                                            n_tests)
        expected = proportion_confint(rate * n_eff, n_eff, alpha=1 - confidence, method="wilson")
        assert wilson_interval(rate, mcse, trials, n_tests, confidence) == pytest.approx(expected, abs=1e-12)


def test_share_rate_is_mean_and_standard_error_per_column():
    rng = np.random.default_rng(8)
    matrix = rng.random((40, 3)) < 0.3
    rates, mcses = share_rate(matrix)
    np.testing.assert_allclose(rates, matrix.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(mcses, matrix.std(axis=0, ddof=1) / np.sqrt(40), rtol=1e-9)
    shares = rng.random(25)
    rate, mcse = share_rate(shares)
    assert rate == pytest.approx(shares.mean()) and mcse == pytest.approx(shares.std(ddof=1) / 5)


def test_mean_interval_is_the_mean_with_its_standard_error_and_normal_interval():
    from scipy import stats

    from simdesign.stats.montecarlo import mean_interval

    values = np.random.default_rng(3).normal(0.4, 0.2, size=50)
    mean, mcse, low, high = mean_interval(values, 0.9)
    assert mcse == pytest.approx(stats.sem(values))
    assert (low, high) == pytest.approx(stats.norm.interval(0.9, loc=values.mean(), scale=stats.sem(values)))
    # one trial: the mean is known, its Monte-Carlo error is not
    assert np.isnan(mean_interval([0.3])[1:]).all() and mean_interval([0.3])[0] == 0.3
    assert np.isnan(mean_interval([])).all()


def _p_rows(p_value: np.ndarray, estimate: np.ndarray, true_diff: np.ndarray) -> pd.DataFrame:
    trials, pairs = p_value.shape
    return pd.DataFrame({"trial": np.repeat(np.arange(trials), pairs), "pair": np.tile(np.arange(pairs), trials),
                         "p_value": p_value.ravel(), "estimate": estimate.ravel(), "status": "ok",
                         "true_diff": np.tile(true_diff, trials)})


def test_size_adjusted_power_is_power_at_the_null_runs_critical_value():
    """By hand: c = the 31st smallest of 600 null p-values (alpha 0.05), power = share of right-direction
    effect p-values below c; a monotone distortion of the p-values (a liberal test, p -> p^2) changes raw
    power but not the size-adjusted one, and a failed test is never a rejection."""
    from simdesign.studies.rates.summary import size_adjusted_power

    rng = np.random.default_rng(12)
    null_p = rng.uniform(size=(200, 3))
    effect_p = rng.beta(0.3, 1.0, size=(200, 3))
    estimate = rng.choice([-1.0, 1.0], p=[0.1, 0.9], size=(200, 3))
    true_diff = np.array([1.0, 1.0, 0.0])
    null = _p_rows(null_p, np.ones_like(null_p), np.zeros(3))
    effect = _p_rows(effect_p, estimate, true_diff)
    result = size_adjusted_power(null, effect, 0.05, np.random.default_rng(1), resamples=200)
    critical = sorted(null_p.ravel())[30]
    hits = [p < critical and e > 0 for row_p, row_e in zip(effect_p, estimate) for p, e in zip(row_p[:2], row_e[:2])]
    assert result["rate"] == pytest.approx(sum(hits) / len(hits))
    assert result["critical_p"] == critical and result["n_tests"] == 400
    assert result["ci_low"] <= result["rate"] <= result["ci_high"] and result["mcse"] > 0
    liberal = size_adjusted_power(_p_rows(null_p ** 2, np.ones_like(null_p), np.zeros(3)),
                                  _p_rows(effect_p ** 2, estimate, true_diff), 0.05, np.random.default_rng(1),
                                  resamples=200)
    assert liberal["rate"] == result["rate"] and liberal["ci_low"] == result["ci_low"]
    assert (null_p ** 2 < 0.05).mean() > 0.15  # its raw level is far from 0.05
    failed = effect.copy()
    failed.loc[failed["trial"] == 0, "status"] = "error"
    assert size_adjusted_power(null, failed, 0.05, np.random.default_rng(1), resamples=50)["rate"] \
        == pytest.approx((sum(hits) - sum(hits[:2])) / len(hits))
    assert size_adjusted_power(null, _p_rows(effect_p, estimate, np.zeros(3)), 0.05, np.random.default_rng(1)) is None
