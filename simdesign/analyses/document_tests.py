"""Paired and unpaired tests over documents, with theoretical or bootstrap thresholds (Rankel et al. 2011).

Rankel, Conroy, Slud and O'Leary (2011) compared, on TAC summarisation data,
the unpaired two-sample t-test, the paired t-test and the Wilcoxon
signed-rank test over documents, each with its theoretical null
distribution or with a threshold from a bootstrap. This module adds:

* ``ttest_unpaired``: per-document means of each system, compared as two
  independent samples of documents by Welch's t-test (it ignores that the
  two systems summarised the same documents, so the variation in document
  difficulty stays in its error term);
* the ``threshold`` option of ``ttest_doc``, ``wilcoxon_doc`` and
  ``ttest_unpaired``: ``theory`` (the default: Student's t, scipy's Wilcoxon
  p-values) or ``bootstrap``.

Bootstrap thresholds, the procedure
-----------------------------------
The null distribution of the test's statistic is estimated by resampling
documents under the null hypothesis (Efron and Tibshirani 1993, sections
16.2 and 16.4):

* paired tests: the per-document differences d_1..d_n of a pair of systems
  are centred, c_i = d_i - mean(d), which makes the null (mean difference 0)
  true for the resampling distribution; each of ``bootstrap_resamples``
  resamples draws n documents with replacement from c and computes the same
  statistic: the one-sample t statistic for ``ttest_doc``, and for
  ``wilcoxon_doc`` the standardised signed-rank statistic
  z = sum_i sign(c_i) r_i / sqrt(sum_i r_i^2) (ranks r_i of |c_i| among the
  non-zero values, midranks for ties: the tie-corrected normal form, which
  stays defined on the many ties a resample with replacement has);
* ``ttest_unpaired``: each system's per-document means are centred on
  their own mean and resampled independently of the other's (the two
  samples are treated as independent, as the test assumes); statistic
  Welch's t.

The two-sided p-value is p = (1 + #{|T*| >= |T|}) / (R + 1), where T is the
statistic on the data (computed the same way) and R the number of
resamples: rejecting at p < alpha is rejecting when |T| is beyond the
bootstrap's (1 - alpha) quantile of |T*|. One set of resampled document
indices serves every system pair of a study (each pair's test is valid on
its own, as for the randomisation tests); a resample whose statistic is
undefined (all resampled values equal) counts as not exceeding T.
"""
from __future__ import annotations

import numpy as np

from simdesign.analyses.base import DEGENERATE, OK, AnalysisInfo, PairwiseResult, register, system_pairs
from simdesign.analyses.classical import (CLASSICAL_CHUNK_TRIALS, _positive_int_option, paired_ttest, unit_differences,
                                          wilcoxon_documents)
from simdesign.core.judgements import Judgements
from simdesign.core.lazy_scipy import stats  # scipy.stats, imported on first use

THRESHOLDS = ("theory", "bootstrap")
THRESHOLD_OPTIONS = {"threshold": (THRESHOLDS, "theory"), "bootstrap_resamples": (_positive_int_option, 1000)}
# Resamples are processed in batches so that memory stays at a few MB for a thousand documents.
BATCH_CELLS = 2_000_000


def document_means(judgements: Judgements) -> np.ndarray:
    """Per-document mean score of every system, shape (n_documents, n_systems) (judged documents only)."""
    ids = judgements.document
    n_documents = int(ids.max()) + 1
    counts = np.bincount(ids, minlength=n_documents)
    sums = np.stack([np.bincount(ids, weights=judgements.scores[:, s], minlength=n_documents)
                     for s in range(judgements.n_systems)], axis=1)
    present = counts > 0
    return sums[present] / counts[present, None]


def one_sample_t(values: np.ndarray, axis: int) -> np.ndarray:
    """t = mean / (sd / sqrt(n)) along ``axis``; NaN where the sd is 0 (hand-written: vectorised over resamples)."""
    n = values.shape[axis]
    spread = values.std(axis=axis, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(spread > 0, values.mean(axis=axis) / (spread / np.sqrt(n)), np.nan)


def welch_t(first: np.ndarray, second: np.ndarray, axis: int) -> np.ndarray:
    """Welch's two-sample t statistic along ``axis``; NaN where both variances are 0."""
    n1, n2 = first.shape[axis], second.shape[axis]
    scale = np.sqrt(first.var(axis=axis, ddof=1) / n1 + second.var(axis=axis, ddof=1) / n2)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(scale > 0, (first.mean(axis=axis) - second.mean(axis=axis)) / scale, np.nan)


def signed_rank_z(values: np.ndarray, axis: int) -> np.ndarray:
    """Standardised Wilcoxon signed-rank statistic sum sign(d) r / sqrt(sum r^2), zeros dropped, midranks.

    This is the statistic of scipy's tie-corrected normal approximation
    (without continuity correction) written as a signed sum; NaN when every
    value is zero.
    """
    moved = np.moveaxis(np.asarray(values, float), axis, -1)
    magnitude = np.where(moved == 0, np.nan, np.abs(moved))
    ranks = np.nan_to_num(stats.rankdata(magnitude, axis=-1, nan_policy="omit"))
    total = (np.sign(moved) * ranks).sum(axis=-1)
    scale = np.sqrt((ranks ** 2).sum(axis=-1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(scale > 0, total / scale, np.nan)


def resample_counts(rng: np.random.Generator, n: int, resamples: int) -> np.ndarray:
    """How often each of n documents is drawn in each resample (n draws with replacement), shape (R, n)."""
    rows = rng.integers(0, n, size=(resamples, n))
    offsets = (np.arange(resamples) * n)[:, None]
    return np.bincount((rows + offsets).ravel(), minlength=resamples * n).reshape(resamples, n).astype(float)


def _moments(counts: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance (ddof 1) of every resample (rows of ``counts``) of every column of ``values``."""
    n = counts[0].sum()
    mean = counts @ values / n
    square = counts @ values ** 2 / n
    variance = (square - mean ** 2) * n / (n - 1)
    # a resample of one repeated value has variance 0 up to rounding: no statistic there
    return mean, np.where(variance > 1e-12 * np.maximum(square, 1e-300), variance, np.nan)


def _boot_ttest(counts: np.ndarray, centred: np.ndarray) -> np.ndarray:
    mean, variance = _moments(counts, centred)
    return mean / np.sqrt(variance / centred.shape[0])


def _boot_signed_rank(counts: np.ndarray, centred: np.ndarray) -> np.ndarray:
    """:func:`signed_rank_z` of every resample, from the draw counts (no sorting per resample).

    A resample holds copies of the original values, so the midrank of a value in it is the number of
    drawn values with smaller magnitude plus (the number drawn with equal magnitude + 1) / 2.
    """
    z = np.full((counts.shape[0], centred.shape[1]), np.nan)
    for column in range(centred.shape[1]):
        values = centred[:, column]
        kept = values != 0  # zeros are dropped, as in the test
        if not kept.any():
            continue
        magnitudes, group = np.unique(np.abs(values[kept]), return_inverse=True)
        drawn = counts[:, kept]
        per_group = np.zeros((counts.shape[0], magnitudes.size))
        np.add.at(per_group.T, group, drawn.T)
        midrank = (np.cumsum(per_group, axis=1) - per_group + (per_group + 1) / 2)[:, group]
        total = (drawn * np.sign(values[kept]) * midrank).sum(axis=1)
        scale = np.sqrt((drawn * midrank ** 2).sum(axis=1))
        with np.errstate(divide="ignore", invalid="ignore"):
            z[:, column] = np.where(scale > 0, total / scale, np.nan)
    return z


PAIRED_STATISTICS = {"ttest": (one_sample_t, _boot_ttest), "wilcoxon": (signed_rank_z, _boot_signed_rank)}


def _exceedances(boot: np.ndarray, observed: np.ndarray) -> np.ndarray:
    # |T*| >= |T| with a relative tolerance, so that rounding noise does not decide a tie; undefined T* never counts
    return (np.nan_to_num(np.abs(boot), nan=-np.inf) >= observed * (1 - 1e-9)).sum(axis=0)


def paired_bootstrap_pvalues(differences: np.ndarray, statistic: str, rng: np.random.Generator,
                             resamples: int = 1000) -> np.ndarray:
    """Two-sided bootstrap p-values for paired differences, resampling centred documents (module docstring).

    Parameters
    ----------
    differences : ndarray, shape (n_documents, n_columns)
    statistic : {'ttest', 'wilcoxon'}
    rng : numpy.random.Generator
    resamples : int

    Returns
    -------
    ndarray, shape (n_columns,)
        NaN where the statistic is undefined on the data.
    """
    on_data, on_resamples = PAIRED_STATISTICS[statistic]
    d = np.asarray(differences, float)
    n, n_columns = d.shape
    observed = np.abs(on_data(d, axis=0))
    centred = d - d.mean(axis=0)
    exceed = np.zeros(n_columns)
    batch = max(1, BATCH_CELLS // max(1, n * n_columns))
    for start in range(0, resamples, batch):
        counts = resample_counts(rng, n, min(batch, resamples - start))
        exceed += _exceedances(on_resamples(counts, centred), observed)
    return np.where(np.isfinite(observed), (1.0 + exceed) / (resamples + 1.0), np.nan)


def unpaired_bootstrap_pvalues(first: np.ndarray, second: np.ndarray, rng: np.random.Generator,
                               resamples: int = 1000) -> np.ndarray:
    """Two-sided bootstrap p-values of Welch's t, each sample centred and resampled on its own (module docstring)."""
    a, b = np.asarray(first, float), np.asarray(second, float)
    n1, n2 = a.shape[0], b.shape[0]
    observed = np.abs(welch_t(a, b, axis=0))
    a_centred, b_centred = a - a.mean(axis=0), b - b.mean(axis=0)
    exceed = np.zeros(a.shape[1])
    batch = max(1, BATCH_CELLS // max(1, (n1 + n2) * a.shape[1]))
    for start in range(0, resamples, batch):
        size = min(batch, resamples - start)
        mean_a, variance_a = _moments(resample_counts(rng, n1, size), a_centred)
        mean_b, variance_b = _moments(resample_counts(rng, n2, size), b_centred)
        # Welch's t is defined when either variance is positive
        scale = np.sqrt(np.nan_to_num(variance_a) / n1 + np.nan_to_num(variance_b) / n2)
        with np.errstate(divide="ignore", invalid="ignore"):
            boot = np.where(scale > 0, (mean_a - mean_b) / scale, np.nan)
        exceed += _exceedances(boot, observed)
    return np.where(np.isfinite(observed), (1.0 + exceed) / (resamples + 1.0), np.nan)


def _result(estimate: np.ndarray, p_value: np.ndarray, what: str) -> PairwiseResult:
    defined = np.isfinite(p_value)
    return PairwiseResult(estimate=estimate, p_value=np.where(defined, p_value, np.nan),
                          status=np.where(defined, OK, DEGENERATE).astype(object),
                          message="" if defined.all() else f"{what} undefined for some pairs (no variation)")


def unpaired_ttest(judgements: Judgements, rng: np.random.Generator, threshold: str = "theory",
                   bootstrap_resamples: int = 1000) -> PairwiseResult:
    """Welch's two-sample t-test over per-document means, ignoring the pairing by document.

    Parameters
    ----------
    judgements : Judgements
    rng : numpy.random.Generator
        Used only with ``threshold='bootstrap'``.
    threshold : {'theory', 'bootstrap'}
        Welch's t distribution (scipy.stats.ttest_ind, equal_var=False) or the
        bootstrap of the module docstring.
    bootstrap_resamples : int

    Returns
    -------
    PairwiseResult
        Estimates are mean(i) - mean(j) over documents; a pair whose
        per-document means do not vary in either system is 'degenerate'.
    """
    means = document_means(judgements)
    pairs = system_pairs(judgements.n_systems)
    first = means[:, [i for i, _ in pairs]]
    second = means[:, [j for _, j in pairs]]
    estimate = first.mean(axis=0) - second.mean(axis=0)
    if threshold == "bootstrap":
        p_value = unpaired_bootstrap_pvalues(first, second, rng, bootstrap_resamples)
    else:
        defined = np.isfinite(welch_t(first, second, axis=0))
        p_value = np.full(len(pairs), np.nan)
        if defined.any():
            p_value[defined] = stats.ttest_ind(first[:, defined], second[:, defined], axis=0,
                                               equal_var=False).pvalue
    return _result(estimate, p_value, "Welch's t")


def paired_document_test(judgements: Judgements, rng: np.random.Generator, statistic: str,
                         threshold: str = "theory", bootstrap_resamples: int = 1000) -> PairwiseResult:
    """``ttest_doc`` or ``wilcoxon_doc`` with a theoretical or bootstrap threshold.

    With ``threshold='theory'`` this is exactly the test of
    :mod:`simdesign.analyses.classical` (same p-values); with ``'bootstrap'``
    the p-value comes from :func:`paired_bootstrap_pvalues`.
    """
    if threshold == "theory":
        if statistic == "ttest":
            return paired_ttest(judgements, rng, unit="doc")
        return wilcoxon_documents(judgements, rng)
    _, means = unit_differences(judgements, "doc")
    p_value = paired_bootstrap_pvalues(means, statistic, rng, bootstrap_resamples)
    return _result(means.mean(axis=0), p_value, "the statistic")


def _draws_with_bootstrap(options: dict) -> bool:
    # these tests draw random numbers only to resample for a bootstrap threshold
    return options.get("threshold", "theory") == "bootstrap"


register(AnalysisInfo(
    name="ttest_unpaired",
    function=unpaired_ttest,
    options=THRESHOLD_OPTIONS,
    description="Welch's two-sample t-test over per-document means (unpaired: ignores document difficulty "
                "pairing); threshold theory or bootstrap.",
    chunk_trials=CLASSICAL_CHUNK_TRIALS,
    uses_rng=_draws_with_bootstrap,
))

# ttest_doc and wilcoxon_doc are registered here, once, so that their 'threshold' option and its bootstrap live
# in one module; with threshold 'theory' they are classical.py's tests (paired_ttest, wilcoxon_documents).
_PAIRED_DESCRIPTIONS = {"ttest": "Paired t-test over per-document means.",
                        "wilcoxon": "Wilcoxon signed-rank test over per-document mean differences."}
for _name, _statistic in (("ttest_doc", "ttest"), ("wilcoxon_doc", "wilcoxon")):
    register(AnalysisInfo(
        name=_name,
        function=lambda j, rng, _statistic=_statistic, **options: paired_document_test(j, rng, _statistic, **options),
        options=THRESHOLD_OPTIONS,
        description=_PAIRED_DESCRIPTIONS[_statistic] + " Option threshold: theory (default) or bootstrap "
                                                       "(resampling centred document differences).",
        methods=("likert", "rank"),  # reversed ranks are scores too (simdesign.model.ranks)
        uses_rng=_draws_with_bootstrap,
        chunk_trials=CLASSICAL_CHUNK_TRIALS,
    ))

DOCUMENT_TESTS = ("ttest_unpaired", "ttest_doc", "wilcoxon_doc")
"""The registry names this module adds (ttest_doc and wilcoxon_doc are also in CLASSICAL_TESTS: model-free)."""
