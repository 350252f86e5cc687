"""one_sample_t_pvalues returns scipy.stats.ttest_1samp's p-values, mean_and_sd numpy's mean and std, bit for bit."""
import numpy as np
import pytest
from scipy import stats

from simdesign.stats.one_sample_t import mean_and_sd, one_sample_t_pvalues


@pytest.mark.parametrize("n_units", [2, 3, 20, 100, 300, 301, 1500])
def test_equals_scipy_bit_for_bit(n_units):
    rng = np.random.default_rng(n_units)
    for draw in range(40):
        # like the engine's inputs: per-unit differences of Likert sums or means, sometimes continuous
        columns = rng.integers(-4, 5, size=(n_units, 10)) / rng.choice([1, 2, 3, 6])
        if draw % 4 == 0:
            columns = columns + rng.normal(size=columns.shape)
        columns = columns[:, columns.std(axis=0) > 0]
        expected = stats.ttest_1samp(columns, 0.0, axis=0).pvalue
        assert np.array_equal(one_sample_t_pvalues(columns), expected)


def test_a_known_value():
    # t = mean / (sd / sqrt(n)) = 2 / (1 / sqrt(4)) = 4 on 3 df: two-sided p = 0.028000... (t tables)
    sample = np.array([[1.5], [2.5], [1.5], [2.5]])
    sample = 2.0 + (sample - 2.0) / np.std(sample, ddof=1)  # mean 2, sd 1
    assert one_sample_t_pvalues(sample)[0] == pytest.approx(0.0280, abs=1e-4)


@pytest.mark.parametrize("n_units", [2, 3, 20, 129, 300, 1500])
@pytest.mark.parametrize("layout", ["C", "F", "selected"])
def test_mean_and_sd_equal_numpy_bit_for_bit(n_units, layout):
    rng = np.random.default_rng([n_units, len(layout)])
    for draw in range(30):
        columns = rng.integers(-6, 7, size=(n_units, rng.choice([1, 3, 10]))) / rng.choice([1, 2, 3, 7])
        if draw % 3 == 0:
            columns = columns + rng.normal(size=columns.shape) * 10.0 ** rng.uniform(-8, 6)
        if layout == "F":
            columns = np.asfortranarray(columns)
        elif layout == "selected":  # a boolean column selection, as the t-tests make
            columns = columns[:, rng.random(columns.shape[1]) < 0.7]
        mean, sd = mean_and_sd(columns)
        assert np.array_equal(mean, columns.mean(axis=0))
        assert np.array_equal(sd, columns.std(axis=0, ddof=1))
        if columns.size and (sd > 0).all():
            assert np.array_equal(one_sample_t_pvalues(columns), stats.ttest_1samp(columns, 0.0, axis=0).pvalue)
