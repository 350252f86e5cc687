"""one_sample_t_pvalues returns scipy.stats.ttest_1samp's p-values bit for bit."""
import numpy as np
import pytest
from scipy import stats

from simdesign.stats.one_sample_t import one_sample_t_pvalues


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
