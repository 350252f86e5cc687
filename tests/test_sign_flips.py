"""The fast sign flips of ART give the draws and p-values of the plain numpy code, bit for bit."""
import numpy as np
import pytest

from simdesign.significance.classical import randomisation_pvalues
from simdesign.stats.sign_flips import flip_exceedances, flipped_abs_sums, random_sign_bits

SHAPES = [(1000, 300), (1000, 100), (999, 33), (7, 3), (3, 5), (5, 1), (1, 1), (2, 2)]


@pytest.mark.parametrize("shape", SHAPES)
def test_bits_and_generator_state_match_integers(shape):
    for seed in range(5):
        plain, fast = np.random.default_rng([seed, *shape]), np.random.default_rng([seed, *shape])
        for _ in range(3):  # repeated calls: the kept 32-bit half (odd byte counts) must carry over
            expected = plain.integers(0, 2, size=shape, dtype=np.int8)
            assert np.array_equal(random_sign_bits(fast, *shape), expected)
            assert fast.bit_generator.state == plain.bit_generator.state
        assert fast.random() == plain.random()


def test_other_bit_generators_use_integers_itself():
    plain, fast = np.random.Generator(np.random.MT19937(4)), np.random.Generator(np.random.MT19937(4))
    assert np.array_equal(random_sign_bits(fast, 10, 7), plain.integers(0, 2, size=(10, 7), dtype=np.int8))
    assert fast.random() == plain.random()


@pytest.mark.parametrize("scale", [12, 2 ** 22])  # the second exceeds float32's exact range: float64 path
def test_flipped_sums_equal_the_plus_minus_one_product(scale):
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2, size=(500, 60), dtype=np.int8)
    signs = bits.astype(float) * 2.0 - 1.0
    integers = rng.integers(-scale, scale + 1, size=(60, 10)).astype(float)
    assert np.array_equal(flipped_abs_sums(bits, integers, True), np.abs(signs @ integers))
    floats = rng.normal(size=(60, 10))
    assert np.array_equal(flipped_abs_sums(bits, floats, False), np.abs(signs @ floats))


def _plain_pvalues(sums, rng, resamples):
    """The randomisation p-values as computed before the shortcut (random branch only)."""
    values = np.asarray(sums, dtype=float)
    observed = np.abs(values.sum(axis=0))
    tolerance = 0.0 if np.issubdtype(np.asarray(sums).dtype, np.integer) else \
        1e-9 * np.maximum(1.0, np.abs(values).sum(axis=0))
    signs = rng.integers(0, 2, size=(resamples, values.shape[0]), dtype=np.int8).astype(float) * 2.0 - 1.0
    hits = (np.abs(signs @ values) >= observed - tolerance).sum(axis=0)
    return (1.0 + hits) / (resamples + 1.0)


@pytest.mark.parametrize("integer", [True, False])
def test_randomisation_pvalues_unchanged(integer):
    data = np.random.default_rng(1)
    for trial in range(20):
        sums = data.integers(-6, 7, size=(300, 10))
        sums = sums if integer else sums / 3.0
        got = randomisation_pvalues(sums, np.random.default_rng([7, trial]), resamples=1000)
        assert np.array_equal(got, _plain_pvalues(sums, np.random.default_rng([7, trial]), 1000))


@pytest.mark.parametrize("scale, integer", [(6, True), (2 ** 22, True), (6, False)])
@pytest.mark.parametrize("shape", [(1000, 300), (999, 33), (3, 5)])
def test_flip_exceedances_count_as_the_plain_flips(scale, integer, shape):
    # scale 2**22 on 33+ units exceeds float32's exact range: the float64 path
    data = np.random.default_rng(3)
    for seed in range(4):
        values = data.integers(-scale, scale + 1, size=(shape[1], 10)).astype(float)
        values = values if integer else values / 3.0
        threshold = np.abs(values.sum(axis=0)) - data.integers(0, 3, size=10)
        plain, fast = np.random.default_rng([seed, *shape]), np.random.default_rng([seed, *shape])
        signs = plain.integers(0, 2, size=shape, dtype=np.int8).astype(float) * 2.0 - 1.0
        expected = (np.abs(signs @ values) >= threshold).sum(axis=0)
        assert np.array_equal(flip_exceedances(fast, shape[0], values, integer, threshold), expected)
        assert fast.bit_generator.state == plain.bit_generator.state


@pytest.mark.parametrize("n_systems, n_units", [(5, 300), (5, 100), (3, 7), (6, 40)])
def test_flip_exceedances_with_pair_combination_counts_as_the_plain_flips(n_systems, n_units):
    # the pair differences of per-unit scores: every column follows from the pairs with system 0
    from simdesign.significance.classical import pair_combination_matrix, pair_contrast_matrix

    data = np.random.default_rng([n_systems, n_units])
    for seed in range(4):
        scores = data.integers(1, 8, size=(n_units, n_systems)) * data.integers(1, 4)
        values = (scores @ pair_contrast_matrix(n_systems)).astype(float)
        threshold = np.abs(values.sum(axis=0)) - data.integers(0, 3, size=values.shape[1])
        plain, fast = np.random.default_rng([seed, n_units]), np.random.default_rng([seed, n_units])
        signs = plain.integers(0, 2, size=(1000, n_units), dtype=np.int8).astype(float) * 2.0 - 1.0
        expected = (np.abs(signs @ values) >= threshold).sum(axis=0)
        got = flip_exceedances(fast, 1000, values, True, threshold, pair_combination_matrix(n_systems))
        assert np.array_equal(got, expected)
        assert fast.bit_generator.state == plain.bit_generator.state
