import itertools

import numpy as np
import pytest
from scipy import stats

from simdesign import BlockDesign, Judgements, PoolDesign, load_model
from simdesign.analyses import ANALYSES, FAILURES, system_pairs
from simdesign.analyses.classical import (CLASSICAL_TESTS, paired_randomisation, paired_ttest, randomisation_pvalues,
                                          unit_differences, wilcoxon_documents)


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


def test_wilcoxon_matches_scipy():
    data = _study(BlockDesign(blocks=10, docs_per_block=3, annotators_per_block=2))
    doc_means = _doc_means(data)
    result = wilcoxon_documents(data, np.random.default_rng(0))
    for column, (i, j) in enumerate(system_pairs(5)):
        assert result.p_value[column] == pytest.approx(stats.wilcoxon(doc_means[:, i] - doc_means[:, j]).pvalue)


def test_small_sample_wilcoxon_enumeration_equals_scipy():
    from simdesign.analyses.classical import _wilcoxon_exhaustive
    rng = np.random.default_rng(0)
    for _ in range(100):
        differences = rng.integers(-4, 5, size=rng.integers(3, 14)) / 3  # ties, like means of 3 scores
        differences = differences[differences != 0]
        if differences.size:
            assert _wilcoxon_exhaustive(differences) == pytest.approx(stats.wilcoxon(differences).pvalue, abs=1e-12)


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
