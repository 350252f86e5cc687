import itertools
import warnings

import numpy as np
import pytest
from scipy import stats

from simdesign import BlockDesign, Judgements, PoolDesign, load_model
from simdesign.significance import ANALYSES, FAILURES, system_pairs
from simdesign.significance.classical import (CLASSICAL_TESTS, paired_randomisation, paired_ttest,
                                              randomisation_pvalues, unit_differences, wilcoxon_documents,
                                              wilcoxon_pvalues)


def _study(design, seed=0, effect="fitted", task="coherence"):
    return load_model(task).sample(design, np.random.default_rng(seed), effect)


def _doc_means(judgements):
    frame = judgements.to_frame()
    return frame.pivot_table(index="document", columns="system", values="score", aggfunc="mean")[
        list(judgements.systems)].to_numpy()


def test_ttest_matches_scipy_paired_ttest_on_every_unit():
    data = _study(BlockDesign(blocks=4, docs_per_block=5, annotators_per_block=3))
    doc_means = _doc_means(data)
    frame = data.to_frame()
    block_means = frame.pivot_table(index="block", columns="system", values="score", aggfunc="mean")[
        list(data.systems)].to_numpy()
    for unit, matrix in (("single", data.scores), ("doc", doc_means), ("block", block_means)):
        result = paired_ttest(data, np.random.default_rng(0), unit=unit)
        for column, (i, j) in enumerate(system_pairs(5)):
            reference = stats.ttest_rel(matrix[:, i], matrix[:, j])
            assert result.p_value[column] == pytest.approx(reference.pvalue, rel=1e-10)
            assert result.estimate[column] == pytest.approx(matrix[:, i].mean() - matrix[:, j].mean())


def _brute_force_exact_p(differences):
    """Independent reference: every sign vector by itertools, exact integer arithmetic."""
    observed = abs(int(np.sum(differences)))
    hits = sum(abs(int(np.dot(signs, differences))) >= observed
               for signs in itertools.product((-1, 1), repeat=len(differences)))
    return hits / 2 ** len(differences)


def test_exact_enumeration_equals_brute_force_with_ties():
    rng = np.random.default_rng(4)
    for _ in range(20):
        differences = rng.integers(-3, 4, size=(9, 1))  # many ties and zeros
        p = randomisation_pvalues(differences, np.random.default_rng(0), resamples=1000, exact="auto")
        assert p[0] == pytest.approx(_brute_force_exact_p(differences[:, 0]), abs=1e-15)


def test_random_flips_agree_with_exact_enumeration_just_above_log2_r():
    """n = 11 > log2(1000): random flips, compared with the exact p within 4 binomial SE."""
    resamples = 1000
    rng = np.random.default_rng(8)
    checked = 0
    for draw in range(30):
        differences = rng.integers(-4, 5, size=(11, 3))
        differences[:, 0] += 2  # a shifted column so some p-values are small
        random_p = randomisation_pvalues(differences, np.random.default_rng(draw), resamples=resamples)
        exact_p = randomisation_pvalues(differences, None, resamples=2 ** 11, exact="auto")
        for column in range(3):
            exact = exact_p[column]
            # (1 + Binomial(R, p)) / (R + 1): mean shifts by (1 - p) / (R + 1)
            expected = (1 + resamples * exact) / (resamples + 1)
            standard_error = np.sqrt(exact * (1 - exact) * resamples) / (resamples + 1)
            assert abs(random_p[column] - expected) <= 4 * standard_error + 1e-12
            checked += 1
    assert checked == 90


def test_exact_mode_never_uses_random_flips():
    differences = np.array([[1], [2], [-1], [3], [2]])
    p_auto = randomisation_pvalues(differences, np.random.default_rng(0), resamples=1000)
    assert p_auto[0] == pytest.approx(_brute_force_exact_p(differences[:, 0]))
    p_never = randomisation_pvalues(differences, np.random.default_rng(0), resamples=1000, exact="never")
    assert p_never[0] != p_auto[0] and (p_never[0] * 1001) == pytest.approx(round(p_never[0] * 1001))


def test_float_ties_are_not_broken_by_rounding():
    # per-unit means with unequal sizes: 0.1 + 0.2 != 0.3 in floating point
    differences = np.array([[0.1], [0.2], [-0.3], [0.3]])
    p = randomisation_pvalues(differences, None, resamples=1000)
    signs = np.array(list(itertools.product((-1, 1), repeat=4)))
    sums = np.round(signs @ np.array([1, 2, -3, 3]), 9)  # the same in integer tenths
    assert p[0] == pytest.approx(np.mean(np.abs(sums) >= 3))


def test_art_block_with_five_blocks_cannot_reject():
    """Exact test with B blocks: smallest p is 2 / 2^B = 0.0625 for B = 5."""
    data = _study(BlockDesign(blocks=5, docs_per_block=20, annotators_per_block=3), effect=5.0)
    result = paired_randomisation(data, np.random.default_rng(0), unit="block")
    assert result.p_value.min() >= 2 / 2 ** 5 - 1e-12


def test_block_tests_are_degenerate_with_one_block_or_no_blocks():
    one_block = _study(BlockDesign(blocks=1, docs_per_block=10, annotators_per_block=3))
    pool = _study(PoolDesign(docs=20, annotators=6, judgements_per_output=2))
    for data in (one_block, pool):
        for name in ("ttest_block", "art_block"):
            result = ANALYSES[name].function(data, np.random.default_rng(0))
            assert set(result.status) == {"degenerate"} and np.isnan(result.p_value).all()


def test_zero_variance_pair_is_degenerate_not_a_p_value():
    scores = np.array([[3, 3, 5], [4, 4, 1], [2, 2, 6]])
    data = Judgements(scores=scores, annotator=np.arange(3), document=np.arange(3), block=np.arange(3),
                      systems=("a", "b", "c"))
    result = paired_ttest(data, np.random.default_rng(0))
    assert result.status[0] == "degenerate" and np.isnan(result.p_value[0])
    assert list(result.status[1:]) == ["ok", "ok"]


def _scipy_wilcoxon_auto(column: np.ndarray) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(stats.wilcoxon(column, method="auto").pvalue)


def test_wilcoxon_matches_scipy():
    data = _study(BlockDesign(blocks=10, docs_per_block=3, annotators_per_block=2))
    doc_means = _doc_means(data)
    result = wilcoxon_documents(data, np.random.default_rng(0))
    for column, (i, j) in enumerate(system_pairs(5)):
        assert result.p_value[column] == _scipy_wilcoxon_auto(doc_means[:, i] - doc_means[:, j])


def test_wilcoxon_decides_on_all_differences_zeros_included():
    """22 document differences, 12 non-zero, with ties: scipy's 'auto' uses the normal approximation
    (n = 22 > 13 counts the zeros), not the exact enumeration over the 12 non-zero ones."""
    nonzero = np.array([2, 2, 1, 1, 1, 1, 2 / 3, 2 / 3, 1 / 3, 1 / 3, 4 / 3, -1 / 3])
    differences = np.concatenate([nonzero, np.zeros(10)])
    p_value, defined = wilcoxon_pvalues(differences[:, None])
    expected = _scipy_wilcoxon_auto(differences)
    # the exact signed-rank p-value over the 12 non-zero differences, enumerated here by brute force
    ranks = stats.rankdata(np.abs(nonzero))
    signs = np.array(list(itertools.product([-1, 1], repeat=nonzero.size)))
    observed = abs(np.sign(nonzero) @ ranks)
    enumerated = np.mean(np.abs(signs @ ranks) >= observed - 1e-9)
    assert defined[0] and p_value[0] == expected
    assert abs(expected - enumerated) > 1e-4  # the two rules really differ here


def _random_differences(rng, n, columns):
    """Differences like per-document means of 1-3 Likert judgements: many zeros and ties, or none."""
    kind = rng.integers(3)
    if kind == 0:
        return rng.integers(-4, 5, size=(n, columns)) / rng.choice([1, 2, 3])
    values = rng.normal(size=(n, columns))
    if kind == 1:
        values[rng.random((n, columns)) < 0.25] = 0.0
    return values


def _assert_equals_scipy(rng, sizes, columns=3):
    checked = {"zeros or ties": 0, "neither": 0}
    for n in sizes:
        differences = _random_differences(rng, int(n), columns)
        p_value, defined = wilcoxon_pvalues(differences)
        for column in range(columns):
            values = differences[:, column]
            if not defined[column]:
                assert np.all(values == 0) and np.isnan(p_value[column])
                continue
            # exact equality: the same rule and the same arithmetic as scipy
            assert p_value[column] == _scipy_wilcoxon_auto(values), (n, values)
            tied = np.unique(np.abs(values[values != 0])).size < np.count_nonzero(values)
            checked["zeros or ties" if tied or np.any(values == 0) else "neither"] += 1
    assert min(checked.values()) > 0, checked


@pytest.mark.slow
def test_wilcoxon_equals_scipy_auto_on_random_cases():
    """Every branch of scipy's rule: permutation (n <= 13 here up to 10, scipy is slow above), exact
    distribution (no zeros or ties, n <= 50), normal approximation (zeros or ties above 13; all above 50)."""
    rng = np.random.default_rng(2021)
    _assert_equals_scipy(rng, np.concatenate([rng.integers(1, 11, size=15), rng.integers(14, 71, size=40)]))


@pytest.mark.slow
def test_wilcoxon_equals_scipy_auto_on_many_random_cases():
    rng = np.random.default_rng(11)
    _assert_equals_scipy(rng, np.concatenate([rng.integers(1, 14, size=10), rng.integers(14, 81, size=200)]))


def test_wilcoxon_all_zero_pair_is_degenerate():
    scores = np.array([[3, 3, 5], [4, 4, 1], [2, 2, 6], [5, 5, 2]])
    data = Judgements(scores=scores, annotator=np.arange(4), document=np.arange(4), block=np.arange(4),
                      systems=("a", "b", "c"))
    result = wilcoxon_documents(data, np.random.default_rng(0))
    assert result.status[0] == "degenerate" and np.isnan(result.p_value[0])
    assert list(result.status[1:]) == ["ok", "ok"] and np.isfinite(result.p_value[1:]).all()


def test_unit_sums_are_integers_when_units_are_equal_sized():
    data = _study(PoolDesign(docs=30, annotators=9, judgements_per_output=3))
    sums, means = unit_differences(data, "doc")
    assert np.issubdtype(sums.dtype, np.integer)
    np.testing.assert_allclose(sums / 3, means)


CLASSICAL = sorted(CLASSICAL_TESTS)


@pytest.mark.parametrize("name", CLASSICAL)
def test_registry_contract(name):
    """Every registered analysis: one estimate, p and status per pair, oriented i minus j."""
    info = ANALYSES[name]
    data = _study(BlockDesign(blocks=8, docs_per_block=5, annotators_per_block=2), effect=3.0)
    result = info.function(data, np.random.default_rng(1))
    assert result.estimate.shape == result.p_value.shape == (10,) and len(result.status) == 10
    ok = ~np.isin(result.status, list(FAILURES))
    assert ok.all()
    assert np.all((result.p_value[ok] > 0) & (result.p_value[ok] <= 1))
    # orientation: pair (0, 2) is ref vs BART; BART is far better at effect x3, so the estimate is negative
    assert result.estimate[system_pairs(5).index((0, 2))] < 0
