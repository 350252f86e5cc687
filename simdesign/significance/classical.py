"""Classical paired tests, vectorised over all system pairs.

Units of analysis (README, "Tests"; pairs and statuses: docs/estimands.md):

* single judgements, paired by (annotator, document): ``ttest``, ``art``;
* per-document means: ``ttest_doc``, ``art_doc``, ``wilcoxon_doc``;
* per-block means: ``ttest_block``, ``art_block`` (the paper's ARTagg).

Every test sees the paired differences as a matrix (units x system pairs),
so one matrix product serves all ten pairs of the paper's five systems.
"""
from __future__ import annotations

import functools

import numpy as np

from simdesign.significance.base import DEGENERATE, OK, AnalysisInfo, PairwiseResult, register, system_pairs
from simdesign.core.judgements import Judgements
from simdesign.core.lazy_scipy import stats  # scipy.stats, imported on first use
from simdesign.stats.one_sample_t import mean_and_sd, one_sample_t_pvalues
from simdesign.stats.sign_flips import flip_exceedances

UNITS = ("single", "doc", "block")
# The tests on mean reversed ranks per unit (issue 13): a ranking's reversed ranks sum to the same total in
# every (annotator, document), so these tests read them as they read Likert scores.
RANK_TESTS = ("ttest", "ttest_doc", "art_doc", "art_block", "wilcoxon_doc")


@functools.lru_cache(maxsize=None)
def pair_contrast_matrix(n_systems: int) -> np.ndarray:
    """(S, n_pairs) matrix whose column for (i, j) has +1 at i and -1 at j (read-only, built once per S)."""
    pairs = system_pairs(n_systems)
    matrix = np.zeros((n_systems, len(pairs)), dtype=np.int64)
    for column, (i, j) in enumerate(pairs):
        matrix[i, column] = 1
        matrix[j, column] = -1
    matrix.flags.writeable = False
    return matrix


@functools.lru_cache(maxsize=None)
def pair_combination_matrix(n_systems: int) -> np.ndarray:
    """(S - 1, n_pairs) matrix C with ``differences == differences[:, :S - 1] @ C`` for the pair columns.

    The first S - 1 pairs are (0, j); pair (i, j) is s_i - s_j = (s_0 - s_j) - (s_0 - s_i), exactly so for the
    integer differences of :func:`unit_differences`. Read-only, float.
    """
    matrix = np.zeros((n_systems - 1, len(system_pairs(n_systems))))
    for column, (i, j) in enumerate(system_pairs(n_systems)):
        matrix[j - 1, column] = 1.0
        if i > 0:
            matrix[i - 1, column] = -1.0
    matrix.flags.writeable = False
    return matrix


def unit_differences(judgements: Judgements, unit: str) -> tuple[np.ndarray, np.ndarray]:
    """Paired differences per unit and system pair.

    Computed once per study and unit (the tests of one trial share them), as read-only arrays.

    Returns
    -------
    sums : ndarray, shape (n_units, n_pairs)
        Per-unit *sums* of the differences when every unit has the same
        number of judgements (integers: exact ties for the randomisation
        test), otherwise per-unit means (floats).
    means : ndarray, shape (n_units, n_pairs)
        Per-unit mean differences (what the t-tests and estimates use).
    """
    return judgements.derived(("unit_differences", unit), lambda j: _read_only(*_unit_differences(j, unit)))


def unit_mean_and_sd(judgements: Judgements, unit: str) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation (ddof 1; zeros for one unit) of each pair's per-unit mean differences.

    Computed once per study and unit: the t-test and ART of a trial report the same mean (read-only arrays).
    """
    def compute(judgements: Judgements) -> tuple[np.ndarray, ...]:
        _, means = unit_differences(judgements, unit)
        if not judgements.complete:
            return _read_only(*_partial_mean_and_sd(means)[:2])
        if means.shape[0] > 1:
            return _read_only(*mean_and_sd(means))  # = means.mean(axis=0), means.std(axis=0, ddof=1)
        return _read_only(means.mean(axis=0), np.zeros(means.shape[1]))

    return judgements.derived(("unit_mean_and_sd", unit), compute)


def _read_only(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    for array in arrays:
        array.flags.writeable = False
    return arrays


def _unit_differences(judgements: Judgements, unit: str) -> tuple[np.ndarray, np.ndarray]:
    if not judgements.complete:
        return _partial_unit_differences(judgements, unit)
    contrast = pair_contrast_matrix(judgements.n_systems)
    if unit == "single":
        differences = judgements.scores @ contrast
        return differences, differences.astype(float)
    ids = judgements.document if unit == "doc" else judgements.block
    n_units = int(ids.max()) + 1
    counts = np.bincount(ids, minlength=n_units)
    unit_sums = np.stack([np.bincount(ids, weights=judgements.scores[:, s], minlength=n_units)
                          for s in range(judgements.n_systems)], axis=1)
    present = counts > 0
    unit_sums, counts = unit_sums[present], counts[present]
    sums = np.rint(unit_sums).astype(np.int64) @ contrast
    means = sums / counts[:, None]
    if np.all(counts == counts[0]):
        return sums, means
    return means, means


def _partial_unit_differences(judgements: Judgements, unit: str) -> tuple[np.ndarray, np.ndarray]:
    """:func:`unit_differences` of a study with missing outputs (partial coverage, docs/designs.md).

    On single judgements a pair of systems is compared on the (annotator, document) pairs where both
    outputs were judged. On documents or blocks, each system's mean is over its judgements in the unit and
    the pair's difference is the difference of the two means, for the units where both systems have
    judgements (under partial coverage: the documents both systems cover). ``means`` is NaN for a unit a
    pair does not have (it is not in that pair's test); ``sums`` is 0 there, which adds nothing to a
    sign-flip sum, so the randomisation test over all units is the test over the pair's own units.
    ``sums`` are integer sums of differences when every unit a pair has holds the same number of judgements
    of each system (as for complete data), else the means.
    """
    pairs = system_pairs(judgements.n_systems)
    first, second = [i for i, _ in pairs], [j for _, j in pairs]
    observed = judgements.observed
    scores = np.where(observed, judgements.scores, 0.0)
    if unit == "single":
        both = observed[:, first] & observed[:, second]
        differences = np.where(both, scores[:, first] - scores[:, second], 0.0)
        return np.rint(differences).astype(np.int64), np.where(both, differences, np.nan)
    ids = judgements.document if unit == "doc" else judgements.block
    n_units = int(ids.max()) + 1
    present = np.bincount(ids, minlength=n_units) > 0
    sums = np.stack([np.bincount(ids, weights=scores[:, s], minlength=n_units)
                     for s in range(judgements.n_systems)], axis=1)[present]
    counts = np.stack([np.bincount(ids, weights=observed[:, s], minlength=n_units)
                       for s in range(judgements.n_systems)], axis=1)[present]
    paired = (counts[:, first] > 0) & (counts[:, second] > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        system_means = sums / counts
    means = np.where(paired, system_means[:, first] - system_means[:, second], np.nan)
    held = np.concatenate([counts[:, first][paired], counts[:, second][paired]])
    if held.size and np.all(held == held[0]):
        return np.where(paired, np.rint(sums[:, first] - sums[:, second]), 0).astype(np.int64), means
    return np.where(paired, means, 0.0), means


def _partial_mean_and_sd(means: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean, sd (ddof 1; 0 below two units) and number of units of each column, NaN entries left out."""
    kept = ~np.isnan(means)
    n = kept.sum(axis=0)
    values = np.where(kept, means, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = values.sum(axis=0) / n
        squares = np.where(kept, (means - mean) ** 2, 0.0).sum(axis=0)
        sd = np.where(n > 1, np.sqrt(squares / np.maximum(n - 1, 1)), 0.0)
    return mean, sd, n


def _partial_ttest(judgements: Judgements, unit: str) -> PairwiseResult:
    """The paired t-test of each pair over the units where both systems have outputs (partial coverage)."""
    _, means = unit_differences(judgements, unit)
    estimate, spread, n = _partial_mean_and_sd(means)
    scale = np.maximum(1.0, np.nanmax(np.abs(np.where(np.isnan(means), 0.0, means)), axis=0))
    defined = (n > 1) & (spread > 1e-12 * scale)
    p_value = np.full(len(estimate), np.nan)
    if defined.any():
        t = estimate[defined] / (spread[defined] / np.sqrt(n[defined]))
        p_value[defined] = 2 * stats.t.sf(np.abs(t), n[defined] - 1)
    status = np.where(defined, OK, DEGENERATE).astype(object)
    message = "" if defined.all() else "fewer than two paired units or zero variance of differences for some pairs"
    return PairwiseResult(estimate=estimate, p_value=p_value, status=status, message=message)


def _degenerate_block_result(n_pairs: int, message: str) -> PairwiseResult:
    return PairwiseResult(estimate=np.full(n_pairs, np.nan), p_value=np.full(n_pairs, np.nan),
                          status=np.full(n_pairs, DEGENERATE, dtype=object), message=message)


def _check_units(judgements: Judgements, unit: str) -> str | None:
    if unit == "block":
        if not judgements.has_blocks:
            return "block-level test on a design without blocks"
        if np.unique(judgements.block).size < 2:
            return "block-level test needs at least two blocks"
    return None


def paired_ttest(judgements: Judgements, rng: np.random.Generator, unit: str = "single") -> PairwiseResult:
    """Paired t-test on single judgements, document means or block means.

    A pair whose differences have zero variance (or fewer than two units)
    has no t statistic: its status is 'degenerate', a failure.
    """
    n_pairs = judgements.n_systems * (judgements.n_systems - 1) // 2
    problem = _check_units(judgements, unit)
    if problem:
        return _degenerate_block_result(n_pairs, problem)
    if not judgements.complete:
        return _partial_ttest(judgements, unit)
    _, means = unit_differences(judgements, unit)
    estimate, spread = unit_mean_and_sd(judgements, unit)
    estimate = estimate.copy()
    defined = spread > 1e-12 * np.maximum(1.0, np.abs(means).max(axis=0))
    p_value = np.full(n_pairs, np.nan)
    if defined.any():
        p_value[defined] = one_sample_t_pvalues(means[:, defined])  # = stats.ttest_1samp(...).pvalue, faster
    status = np.where(defined, OK, DEGENERATE).astype(object)
    message = "" if defined.all() else "zero variance of differences for some pairs"
    return PairwiseResult(estimate=estimate, p_value=p_value, status=status, message=message)


# Above this many units the enumeration of all 2^n sign vectors would not fit in memory anyway;
# exact enumeration is only chosen when 2^n <= resamples.
def _all_sign_vectors(n_units: int) -> np.ndarray:
    codes = np.arange(2 ** n_units, dtype=np.int64)
    bits = (codes[:, None] >> np.arange(n_units)) & 1
    return (2 * bits - 1).astype(float)


def randomisation_pvalues(sums: np.ndarray, rng: np.random.Generator, resamples: int = 1000,
                          exact: str = "auto", combination: np.ndarray | None = None) -> np.ndarray:
    """Paired approximate randomisation test, two-sided, for every column.

    Statistic T = |sum_i d_i|. With random sign flips,
    p = (1 + #{|sum_i s_i d_i| >= T}) / (R + 1); when ``exact='auto'`` and
    2^n <= R, all 2^n sign vectors are enumerated and p is the exact
    permutation p-value #{...} / 2^n.

    Hand-written because no library offers a paired sign-flip test that is
    vectorised over many columns with one shared matrix product, and the
    Monte-Carlo engine calls it millions of times. The same flips serve all
    columns (each column's test is valid on its own).

    Parameters
    ----------
    sums : ndarray, shape (n_units, n_columns)
        Paired differences per unit. Integer input is compared exactly;
        float input with a relative tolerance of 1e-9 so that rounding
        noise does not break ties.
    rng : numpy.random.Generator
    resamples : int
        R, the number of random sign vectors.
    exact : {'auto', 'never'}
    combination : ndarray, optional
        How the columns follow from the first few (:func:`simdesign.stats.sign_flips.flip_exceedances`);
        saves work, changes no result.

    Returns
    -------
    ndarray, shape (n_columns,)
    """
    n_units = sums.shape[0]
    values = np.asarray(sums, dtype=float)
    observed = np.abs(values.sum(axis=0))
    integer = np.issubdtype(np.asarray(sums).dtype, np.integer)
    if integer:
        tolerance = 0.0  # integer sums below 2**53 are exact in float64
    else:
        tolerance = 1e-9 * np.maximum(1.0, np.abs(values).sum(axis=0))
    if exact == "auto" and n_units < 63 and 2 ** n_units <= resamples:
        signs = _all_sign_vectors(n_units)
        hits = (np.abs(signs @ values) >= observed - tolerance).sum(axis=0)
        return hits / signs.shape[0]
    # the draws of rng.integers(0, 2, ...) and the values of |signs @ values|, computed faster
    hits = flip_exceedances(rng, resamples, values, integer, observed - tolerance, combination)
    return (1.0 + hits) / (resamples + 1.0)


def paired_randomisation(judgements: Judgements, rng: np.random.Generator, unit: str = "single",
                         resamples: int = 1000, exact: str = "auto") -> PairwiseResult:
    """Paired approximate randomisation test (ART) on the given unit."""
    n_pairs = judgements.n_systems * (judgements.n_systems - 1) // 2
    problem = _check_units(judgements, unit)
    if problem:
        return _degenerate_block_result(n_pairs, problem)
    sums, means = unit_differences(judgements, unit)
    # With missing outputs a pair's units are those both systems cover, so its column is no longer the
    # difference of two reference pairs' columns: no combination then (each column flipped on its own values).
    combination = pair_combination_matrix(judgements.n_systems) if judgements.complete else None
    p_value = randomisation_pvalues(sums, rng, resamples=resamples, exact=exact, combination=combination)
    status = np.full(n_pairs, OK, dtype=object)
    if not judgements.complete:  # a pair without a unit where both systems have outputs has no test
        unpaired = np.isnan(means).all(axis=0)
        p_value = np.where(unpaired, np.nan, p_value)
        status[unpaired] = DEGENERATE
    return PairwiseResult(estimate=unit_mean_and_sd(judgements, unit)[0].copy(), p_value=p_value, status=status,
                          message="no unit where both systems have outputs for some pairs"
                          if (status == DEGENERATE).any() else "")


# scipy.stats.wilcoxon(d, method="auto") chooses its p-value by this rule (read from scipy/stats/_wilcoxon.py
# of scipy 1.17.1; it changed between releases, so pyproject.toml pins the range the tests check), with
# n the number of differences *including zeros*:
#   n > 50                                   -> normal approximation;
#   no zero and no tie among |d|             -> exact null distribution of the signed-rank statistic;
#   zeros or ties, n <= 13                   -> permutation test over all 2^n sign vectors (exact);
#   zeros or ties, 13 < n <= 50              -> normal approximation.
# Zeros are dropped before ranking (zero_method "wilcox"); the normal approximation uses the
# tie-corrected variance and no continuity correction.
WILCOXON_AUTO_EXACT_MAX = 50
WILCOXON_AUTO_PERMUTATION_MAX = 13


def wilcoxon_pvalues(differences: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided ``scipy.stats.wilcoxon(column, method="auto")`` p-values for every column.

    Each column gets the p-value scipy gives it alone; scipy's own ``axis``
    vectorisation would not do, because with ``method="auto"`` it decides on
    zeros and ties over the whole array. The columns that scipy sends to its
    normal approximation or to its exact distribution (no zeros, no ties) go
    to scipy in one call per method. The columns it sends to a permutation
    test (zeros or ties, n <= 13) use a vectorised enumeration of all sign
    vectors instead: scipy's ``permutation_test`` takes up to 0.4 s per
    column there, and the enumeration gives the same p-value (both are
    counts of sign vectors over 2^n, exact binary fractions).

    Parameters
    ----------
    differences : ndarray, shape (n, n_columns)
        Paired differences; a column's zeros count in n, as in scipy.

    Returns
    -------
    p_value : ndarray, shape (n_columns,)
        NaN for a column whose differences are all zero.
    defined : ndarray of bool, shape (n_columns,)
        False for an all-zero column (no signed-rank statistic).
    """
    d = np.asarray(differences, dtype=float)
    n, n_columns = d.shape
    p_value = np.full(n_columns, np.nan)
    zero = d == 0
    defined = ~zero.all(axis=0)
    magnitude = np.where(zero, np.nan, np.abs(d))
    ordered = np.sort(magnitude, axis=0)  # NaNs (the zeros) last, never equal to anything
    has_ties = (ordered[1:] == ordered[:-1]).any(axis=0)
    has_zero = zero.any(axis=0)
    if n > WILCOXON_AUTO_EXACT_MAX:
        exact = permutation = np.zeros(n_columns, dtype=bool)
    else:
        exact = ~has_zero & ~has_ties
        permutation = ~exact & defined & (n <= WILCOXON_AUTO_PERMUTATION_MAX)
    normal = defined & ~exact & ~permutation
    for method, columns in (("exact", exact), ("asymptotic", normal)):
        if columns.any():
            p_value[columns] = stats.wilcoxon(d[:, columns], method=method, axis=0).pvalue
    if permutation.any():
        ranks = stats.rankdata(magnitude[:, permutation], axis=0, nan_policy="omit")
        # doubled midranks are integers, so the enumeration compares exactly; zeros add 0 to every sum
        signed_ranks = np.rint(2 * np.sign(d[:, permutation]) * np.nan_to_num(ranks)).astype(np.int64)
        p_value[permutation] = randomisation_pvalues(signed_ranks, None, resamples=2 ** n)
    return p_value, defined


def wilcoxon_documents(judgements: Judgements, rng: np.random.Generator) -> PairwiseResult:
    """Wilcoxon signed-rank test over per-document mean differences.

    The p-values are ``scipy.stats.wilcoxon(differences, method="auto")``'s
    (docs/estimands.md), computed by :func:`wilcoxon_pvalues`. A pair
    whose differences are all zero has no statistic: 'degenerate', a
    failure (scipy would report p = 1 or NaN there).
    """
    _, means = unit_differences(judgements, "doc")
    if not judgements.complete:
        return _partial_wilcoxon(means)
    p_value, defined = wilcoxon_pvalues(means)
    status = np.where(defined, OK, DEGENERATE).astype(object)
    message = "" if defined.all() else "all document differences zero for some pairs"
    return PairwiseResult(estimate=means.mean(axis=0), p_value=p_value, status=status, message=message)


def _partial_wilcoxon(means: np.ndarray) -> PairwiseResult:
    """:func:`wilcoxon_documents` under partial coverage: each pair over the documents both systems cover.

    Pairs that cover the same documents are tested together (scipy's rule then sees each pair's own n).
    """
    kept = ~np.isnan(means)
    p_value = np.full(means.shape[1], np.nan)
    defined = np.zeros(means.shape[1], dtype=bool)
    patterns, group = np.unique(kept.T, axis=0, return_inverse=True)
    for index, rows in enumerate(patterns):
        columns = np.flatnonzero(group.ravel() == index)
        if rows.sum() == 0:
            continue
        p_value[columns], defined[columns] = wilcoxon_pvalues(means[np.ix_(rows, columns)])
    estimate, _, _ = _partial_mean_and_sd(means)
    status = np.where(defined, OK, DEGENERATE).astype(object)
    message = "" if defined.all() else "no document, or all document differences zero, for some pairs"
    return PairwiseResult(estimate=estimate, p_value=p_value, status=status, message=message)


BLOCK_COMPLETE_REASON = ("a block's mean of one system would average other documents than the other system's, "
                         "so the pairing by block is lost")


def _positive_int_option(value):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        return f"must be a positive integer; got {value!r}"
    return None


ART_OPTIONS = {"resamples": (_positive_int_option, 1000), "exact": (("auto", "never"), "auto")}
# A classical test takes about a millisecond per trial: chunks of 100 trials make the per-chunk costs (dispatch to
# a worker, one Parquet file written by the coordinator) small, and still leave many chunks to share among workers.
CLASSICAL_CHUNK_TRIALS = 100

for _unit, _suffix, _what in (("single", "", "single judgements paired by (annotator, document)"),
                              ("doc", "_doc", "per-document means"),
                              ("block", "_block", "per-block means")):
    if _unit != "doc":  # ttest_doc is registered, with its threshold option, in document_tests.py
        register(AnalysisInfo(
            name=f"ttest{_suffix}",
            function=lambda j, rng, _unit=_unit: paired_ttest(j, rng, unit=_unit),
            needs_blocks=_unit == "block",
            description=f"Paired t-test over {_what}.",
            takes_rankings=f"ttest{_suffix}" in RANK_TESTS,
            uses_rng=False,
            # per judgement pairs both outputs exist for; per block would compare different documents
            needs_complete=_unit == "block",
            complete_reason=BLOCK_COMPLETE_REASON,
            chunk_trials=CLASSICAL_CHUNK_TRIALS,
        ))
    register(AnalysisInfo(
        name=f"art{_suffix}",
        function=lambda j, rng, _unit=_unit, **options: paired_randomisation(j, rng, unit=_unit, **options),
        options=ART_OPTIONS,
        needs_blocks=_unit == "block",
        description=f"Paired approximate randomisation test (sign flips) over {_what}.",
        takes_rankings=f"art{_suffix}" in RANK_TESTS,
        chunk_trials=CLASSICAL_CHUNK_TRIALS,
        needs_complete=_unit == "block",
        complete_reason=BLOCK_COMPLETE_REASON,
    ))

CLASSICAL_TESTS = ("ttest", "ttest_doc", "ttest_block", "art", "art_doc", "art_block", "wilcoxon_doc")
"""The model-free tests (milliseconds per trial). ttest_doc and wilcoxon_doc, whose theoretical p-values are
computed here, are registered in :mod:`simdesign.significance.document_tests` with their 'threshold' option."""
