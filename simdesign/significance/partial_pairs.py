"""Tests of every system pair when systems cover only part of the documents (missing outputs).

In a TAC year every machine summariser writes a summary for every topic, but each human summariser
writes for about half of them (Rankel et al. 2011; docs/literature.md). A system's scores are then a
matrix ``scores`` (systems x documents) with an availability mask ``available`` of the same shape:
an output that does not exist is absent, never a value. Every function here reads
``scores[available]`` only; what the other entries hold (NaN, a number) changes nothing.

For a pair (i, j) the tests use

* ``ttest_unpaired`` (Welch's t): system i's scores on *its* documents against system j's on *its*
  documents, two independent samples of sizes n_i and n_j;
* ``ttest_doc`` (paired t) and ``wilcoxon_doc`` (signed-rank): the differences on the documents
  *both* cover.

Thresholds (:mod:`simdesign.significance.document_tests` explains them for complete data):

* ``theory``: Welch's t distribution (:func:`welch_pvalues`), Student's t, scipy's Wilcoxon p-values
  (``method="auto"``);
* ``mc`` (Rankel et al.'s Monte-Carlo threshold): on each document both cover, the two scores are
  swapped with probability 1/2, and the test's own statistic is recomputed. For the paired tests this
  is :func:`~simdesign.significance.document_tests.swap_pvalues` on the shared documents. For the unpaired
  test the documents only one system covers stay with it (a swap needs both outputs): with
  x* = (s + e d) / 2 and y* = (s - e d) / 2 on a shared document (s = x + y, d = x - y, e = +-1), the
  sums and sums of squares of both samples are linear in the signs e (x*^2 = (s^2 + d^2 + 2 e s d) / 4),
  so Welch's T* of every resample is a few matrix products (:func:`unpaired_swap_pvalues`). With full
  coverage this is ``swap_pvalues(..., "welch")`` (same draws, same p-values: a test checks it);
* ``hb`` (document pairs resampled with replacement, then swapped): for the paired tests only, on the
  shared documents. It has no counterpart for two samples of different documents, so ``ttest_unpaired``
  does not take it here.

Pairs whose samples have the same sizes are tested together (one matrix, and one set of resampling
draws, per group: :func:`group_pairs`); in a TAC layout the 903 machine-machine pairs form one group. A
pair whose statistic is undefined (fewer than two documents, no variation) gets a NaN p-value; the
caller counts it as undefined, never as a decision.
"""
from __future__ import annotations

import numpy as np
from scipy import special

from simdesign.significance.classical import wilcoxon_pvalues
from simdesign.significance.document_tests import (BATCH_CELLS, _exceedances, one_sample_t, swap_pvalues, swap_signs,
                                                   welch_t)
from simdesign.stats.one_sample_t import one_sample_t_pvalues

PARTIAL_TESTS = {"ttest_unpaired": ("theory", "mc"), "ttest_doc": ("theory", "mc", "hb"),
                 "wilcoxon_doc": ("theory", "mc", "hb")}
"""Each test with the thresholds it takes on partially covered pairs (module docstring)."""


def group_pairs(available: np.ndarray, pairs: list[tuple[int, int]], paired: bool) -> list[np.ndarray]:
    """Indices of ``pairs`` grouped by the sizes of the samples their test uses, in order of their first pair.

    A paired test needs the number of documents both systems cover; the unpaired test the numbers both
    cover, only the first covers and only the second covers. Which documents they are does not matter:
    every threshold here treats a pair's documents alike (a swap or a draw per document, independently),
    so pairs of equal sizes share one matrix and one set of draws, each pair's test valid on its own.

    Parameters
    ----------
    available : ndarray of bool, shape (n_systems, n_documents)
    pairs : list of (i, j)
    paired : bool
    """
    groups: dict[tuple, list[int]] = {}
    for index, (i, j) in enumerate(pairs):
        both = int((available[i] & available[j]).sum())
        key = (both,) if paired else (both, int(available[i].sum()) - both, int(available[j].sum()) - both)
        groups.setdefault(key, []).append(index)
    return [np.asarray(members) for members in groups.values()]


def aligned_samples(values: np.ndarray, available: np.ndarray, first: np.ndarray, second: np.ndarray,
                    paired: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A group's two systems' scores as rows: shared documents (in document order), then first-only, second-only.

    Parameters
    ----------
    values : ndarray, shape (n_systems, n_documents)
    available : ndarray of bool, same shape
    first, second : ndarray of int, shape (n_pairs,)
        The pairs' systems; every pair of the group has the same sizes (:func:`group_pairs`).
    paired : bool
        True: the shared documents only (a paired group's pairs agree only in their number).

    Returns
    -------
    x, y : ndarray, shape (n_rows, n_pairs)
        0 where a system has no output (never read: see the masks).
    x_covers, y_covers : ndarray of bool, shape (n_rows,)
    """
    a, b = available[first], available[second]

    def block(systems: np.ndarray, mask: np.ndarray) -> np.ndarray:
        # every pair's selected documents, in document order, as the columns of one (count, n_pairs) block
        return values[systems][mask].reshape(systems.size, int(mask[0].sum())).T

    x, y = block(first, a & b), block(second, a & b)
    if paired:
        covers = np.ones(x.shape[0], bool)
        return x, y, covers, covers
    x_only, y_only = block(first, a & ~b), block(second, b & ~a)
    n_shared, n_x, n_y = x.shape[0], x_only.shape[0], y_only.shape[0]
    x = np.vstack([x, x_only, np.zeros_like(y_only)])
    y = np.vstack([y, np.zeros_like(x_only), y_only])
    x_covers = np.r_[np.ones(n_shared + n_x, bool), np.zeros(n_y, bool)]
    y_covers = np.r_[np.ones(n_shared, bool), np.zeros(n_x, bool), np.ones(n_y, bool)]
    return x, y, x_covers, y_covers


def _checked_values(scores: np.ndarray, available: np.ndarray) -> None:
    if scores.shape != available.shape:
        raise ValueError(f"scores {scores.shape} and available {available.shape} must have the same shape")
    if not np.isfinite(scores[available]).all():
        raise ValueError("an available output has a non-finite score; a missing output must be marked "
                         "unavailable, not given as NaN")


def paired_pvalues(first: np.ndarray, second: np.ndarray, test: str, threshold: str, rng: np.random.Generator,
                   resamples: int) -> np.ndarray:
    """p-values of a paired test for a group of pairs on the same (shared) documents.

    Parameters
    ----------
    first, second : ndarray, shape (n_documents, n_pairs)
        Scores of the pairs' first and second systems on the documents both cover.
    test : {'ttest_doc', 'wilcoxon_doc'}
    threshold : {'theory', 'mc', 'hb'}
    rng : numpy.random.Generator
        Used by 'mc' and 'hb' only.
    resamples : int

    Returns
    -------
    ndarray, shape (n_pairs,)
        NaN where the statistic is undefined (fewer than two documents, all differences equal or zero).
    """
    n, n_pairs = first.shape
    if n < 2:
        return np.full(n_pairs, np.nan)
    statistic = {"ttest_doc": "ttest", "wilcoxon_doc": "wilcoxon"}[test]
    if threshold in ("mc", "hb"):
        return swap_pvalues(first, second, statistic, rng, resamples, threshold == "hb")
    differences = first - second
    if statistic == "wilcoxon":
        p_value, defined = wilcoxon_pvalues(differences)
        return np.where(defined, p_value, np.nan)
    defined = np.isfinite(one_sample_t(differences, axis=0))
    p_value = np.full(n_pairs, np.nan)
    if defined.any():
        p_value[defined] = one_sample_t_pvalues(differences[:, defined])
    return p_value


def unpaired_swap_pvalues(first: np.ndarray, second: np.ndarray, first_covers: np.ndarray,
                          second_covers: np.ndarray, rng: np.random.Generator, resamples: int) -> np.ndarray:
    """Welch's t with Rankel's MC threshold when the two systems cover different documents (module docstring).

    Parameters
    ----------
    first, second : ndarray, shape (n_documents, n_pairs)
        Scores of the pairs' first and second systems on all documents; only covered rows are read.
    first_covers, second_covers : ndarray of bool, shape (n_documents,)
        The documents the first (second) systems of the group cover.
    rng : numpy.random.Generator
        One sign per shared document and resample (the draws of
        :func:`~simdesign.significance.document_tests.swap_signs`, batch by batch as ``swap_pvalues`` draws them).
    resamples : int

    Returns
    -------
    ndarray, shape (n_pairs,)
        (1 + #{|T*| >= |T|}) / (R + 1); NaN where Welch's t is undefined on the data.
    """
    n1, n2, n_pairs = int(first_covers.sum()), int(second_covers.sum()), first.shape[1]
    if n1 < 2 or n2 < 2:
        return np.full(n_pairs, np.nan)
    shared = first_covers & second_covers
    # Welch's t is unchanged by a shift common to both samples: centring keeps the sums of squares well scaled
    centre = (first[first_covers].sum(axis=0) + second[second_covers].sum(axis=0)) / (n1 + n2)
    x, y = first - centre, second - centre
    observed = np.abs(welch_t(x[first_covers], y[second_covers], axis=0))
    d, s = x[shared] - y[shared], x[shared] + y[shared]
    only_x, only_y = first_covers & ~shared, second_covers & ~shared
    base_sum_x = s.sum(axis=0) / 2 + x[only_x].sum(axis=0)
    base_sum_y = s.sum(axis=0) / 2 + y[only_y].sum(axis=0)
    common_square = ((s ** 2).sum(axis=0) + (d ** 2).sum(axis=0)) / 4
    base_square_x = common_square + (x[only_x] ** 2).sum(axis=0)
    base_square_y = common_square + (y[only_y] ** 2).sum(axis=0)
    cross = s * d / 2
    n_shared = d.shape[0]
    exceed = np.zeros(n_pairs)
    batch = max(1, BATCH_CELLS // max(1, n_shared * n_pairs))  # swap_pvalues's batches, so its draws
    for start in range(0, resamples, batch):
        _, signs = swap_signs(rng, n_shared, min(batch, resamples - start), False)
        half_difference, signed_cross = signs @ d / 2, signs @ cross
        sum_x, sum_y = base_sum_x + half_difference, base_sum_y - half_difference
        var_x = (base_square_x + signed_cross - sum_x ** 2 / n1) / (n1 - 1)
        var_y = (base_square_y - signed_cross - sum_y ** 2 / n2) / (n2 - 1)
        # a variance that is 0 up to the rounding of sums of squares counts as 0 (as _moments does)
        var_x = np.where(var_x > 1e-12 * base_square_x / n1, var_x, 0.0)
        var_y = np.where(var_y > 1e-12 * base_square_y / n2, var_y, 0.0)
        scale = np.sqrt(var_x / n1 + var_y / n2)
        with np.errstate(divide="ignore", invalid="ignore"):
            boot = np.where(scale > 0, (sum_x / n1 - sum_y / n2) / scale, np.nan)
        exceed += _exceedances(boot, observed)
    return np.where(np.isfinite(observed), (1.0 + exceed) / (resamples + 1.0), np.nan)


def welch_pvalues(values: np.ndarray, available: np.ndarray, pairs: list[tuple[int, int]]) -> np.ndarray:
    """Welch's unpaired t-test of every pair, each system on its own documents, from per-system moments.

    The two samples of a pair are the systems' own outputs, so each system's size, mean and variance are
    computed once and every pair's t, Welch-Satterthwaite df and two-sided p-value
    (2 * stdtr(df, -|t|), the arithmetic of ``scipy.stats.ttest_ind(equal_var=False)``) follow in one
    vectorised step (scipy's per-call overhead, milliseconds, times a thousand pairs, was most of a trial).

    Parameters
    ----------
    values : ndarray, shape (n_systems, n_documents)
        Entries where ``available`` is False are not read.
    available : ndarray of bool, same shape
    pairs : list of (i, j)

    Returns
    -------
    ndarray, shape (n_pairs,)
        NaN where a system has fewer than two outputs or both variances are 0.
    """
    n = available.sum(axis=1).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(available, values, 0.0).sum(axis=1) / n
        variance = np.where(available, (values - mean[:, None]) ** 2, 0.0).sum(axis=1) / (n - 1)
    first = np.array([i for i, _ in pairs], int)
    second = np.array([j for _, j in pairs], int)
    share_1, share_2 = variance[first] / n[first], variance[second] / n[second]
    scale = share_1 + share_2
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (mean[first] - mean[second]) / np.sqrt(scale)
        df = scale ** 2 / (share_1 ** 2 / (n[first] - 1) + share_2 ** 2 / (n[second] - 1))
        p_value = 2 * special.stdtr(df, -np.abs(t))
    usable = (n[first] >= 2) & (n[second] >= 2) & (scale > 0)
    return np.where(usable, p_value, np.nan)


def partial_pair_pvalues(scores: np.ndarray, available: np.ndarray, pairs: list[tuple[int, int]], test: str,
                         threshold: str, rng: np.random.Generator, resamples: int = 1000) -> np.ndarray:
    """Two-sided p-values of ``test`` with ``threshold`` for every pair, from the available outputs only.

    Parameters
    ----------
    scores : ndarray of float, shape (n_systems, n_documents)
        Entries where ``available`` is False are never read (they may be NaN).
    available : ndarray of bool, shape (n_systems, n_documents)
    pairs : list of (i, j)
    test : {'ttest_unpaired', 'ttest_doc', 'wilcoxon_doc'}
    threshold : str
        One of ``PARTIAL_TESTS[test]``.
    rng : numpy.random.Generator
        Resampling thresholds draw from it, group by group in the order of :func:`group_pairs`.
    resamples : int

    Returns
    -------
    ndarray, shape (n_pairs,)
        NaN for a pair whose statistic is undefined.

    Raises
    ------
    ValueError
        An unknown test or threshold, or an available output whose score is not finite.
    """
    if threshold not in PARTIAL_TESTS.get(test, ()):
        raise ValueError(f"test {test!r} with threshold {threshold!r} is not one of {PARTIAL_TESTS}")
    scores, available = np.asarray(scores, float), np.asarray(available, bool)
    _checked_values(scores, available)
    # the unread entries become 0, so no NaN reaches an arithmetic that does not select them away
    values = np.where(available, scores, 0.0)
    if test == "ttest_unpaired" and threshold == "theory":
        return welch_pvalues(values, available, pairs)
    p_value = np.full(len(pairs), np.nan)
    paired = test != "ttest_unpaired"
    for members in group_pairs(available, pairs, paired):
        i = np.array([pairs[m][0] for m in members])
        j = np.array([pairs[m][1] for m in members])
        x, y, x_covers, y_covers = aligned_samples(values, available, i, j, paired)
        if paired:
            shared = x_covers & y_covers
            p_value[members] = paired_pvalues(x[shared], y[shared], test, threshold, rng, resamples)
        else:
            p_value[members] = unpaired_swap_pvalues(x, y, x_covers, y_covers, rng, resamples)
    return p_value
