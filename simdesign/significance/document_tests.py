"""Paired and unpaired tests over documents, with theoretical or resampling thresholds (Rankel et al. 2011).

Rankel, Conroy, Slud and O'Leary (2011) compared, on TAC summarisation data,
the unpaired two-sample t-test, the paired t-test and the Wilcoxon
signed-rank test over documents, each with its theoretical null
distribution or with a threshold from resampling. This module adds:

* ``ttest_unpaired``: per-document means of each system, compared as two
  independent samples of documents by Welch's t-test (it ignores that the
  two systems summarised the same documents, so the variation in document
  difficulty stays in its error term);
* the ``threshold`` option of ``ttest_doc``, ``wilcoxon_doc`` and
  ``ttest_unpaired``: ``theory`` (the default: Student's t, scipy's Wilcoxon
  p-values), ``mc`` and ``hb`` (Rankel et al.'s within-document swaps, which
  keep the pairing), and the centring bootstrap this project had first:
  ``independent_bootstrap`` for ``ttest_unpaired`` (it drops the pairing),
  ``centred_bootstrap`` for the paired tests. ``bootstrap``, that
  bootstrap's first name, is a deprecated alias (:data:`DEPRECATED_THRESHOLDS`).

Swap thresholds, ``mc`` and ``hb`` (Rankel et al. 2011)
-------------------------------------------------------
Under the null hypothesis that two systems' outputs for a document are
exchangeable, swapping the two scores X_k, Y_k of document k leaves the
data's distribution unchanged. ``mc`` swaps each document's pair with
probability 1/2, independently, in each of ``bootstrap_resamples``
resamples, and computes the test's own statistic on the swapped data; a
swap flips the sign of the document's difference d_k = X_k - Y_k and keeps
its sum s_k = X_k + Y_k, so for every statistic here the resampled value is
a function of signs e_k = +-1:

* paired t: mean(e d) / sqrt(var(e d) / n);
* Wilcoxon: sum e_k sign(d_k) r_k / sqrt(sum r_k^2) (ranks r of |d| do not
  change under swaps);
* Welch's t of the unpaired test: since var(X*) + var(Y*) = (var(s) +
  var(e d)) / 2 for swapped samples (the covariance terms cancel),
  T* = mean(e d) / sqrt((var(s) + var(e d)) / (2 n)).

The document's shared difficulty sits in s, which no swap changes, so the
unpaired statistic's null distribution is found *with* the pairing: that is
what gives the unpaired test its level back where shared difficulty makes
its theoretical threshold conservative. ``mc`` is the sign-flip
randomisation test (applied to the paired t, the classical one).

``hb`` first draws n document pairs (X_k, Y_k) with replacement, then swaps
each drawn pair with probability 1/2, and computes the statistic on that
sample (ranks and variances among the drawn pairs). The swaps make the
resampled distribution satisfy the null, so nothing is centred.

Centring bootstraps, ``independent_bootstrap`` and ``centred_bootstrap``
-----------------------------------------------------------------------
The null distribution of the test's statistic is estimated by resampling
documents under the null hypothesis (Efron and Tibshirani 1993, sections
16.2 and 16.4):

* paired tests (``centred_bootstrap``): the per-document differences
  d_1..d_n of a pair of systems are centred, c_i = d_i - mean(d), which
  makes the null (mean difference 0) true for the resampling distribution;
  each of ``bootstrap_resamples`` resamples draws n documents with
  replacement from c and computes the same statistic: the one-sample t
  statistic for ``ttest_doc``, and for ``wilcoxon_doc`` the standardised
  signed-rank statistic z = sum_i sign(c_i) r_i / sqrt(sum_i r_i^2) (ranks
  r_i of |c_i| among the non-zero values, midranks for ties: the
  tie-corrected normal form, which stays defined on the many ties a
  resample with replacement has);
* ``ttest_unpaired`` (``independent_bootstrap``): each system's
  per-document means are centred on their own mean and resampled
  independently of the other's (the two samples are treated as
  independent, as the test assumes); statistic Welch's t. This drops the
  pairing, so with shared document difficulty it reproduces the
  conservative theoretical threshold: it does not answer Rankel et al.'s
  question (use ``mc`` or ``hb``).

p-values
--------
The two-sided p-value is p = (1 + #{|T*| >= |T|}) / (R + 1), where T is the
statistic on the data (computed the same way) and R the number of
resamples: rejecting at p < alpha is rejecting when |T| is beyond the
resampling's (1 - alpha) quantile of |T*|. One set of resampled documents
(and swaps) serves every system pair of a study (each pair's test is valid
on its own, as for the randomisation tests); a resample whose statistic is
undefined (all resampled values equal) counts as not exceeding T. The
random numbers come from the trial's analysis generator, never global state.
"""
from __future__ import annotations

import numpy as np

from simdesign.significance.base import (ANALYSES, DEGENERATE, OK, AnalysisInfo, PairwiseResult, current_options,
                                         register, system_pairs)
from simdesign.significance.classical import (CLASSICAL_CHUNK_TRIALS, _positive_int_option, paired_ttest,
                                              unit_differences, wilcoxon_documents)
from simdesign.core.judgements import Judgements
from simdesign.core.lazy_scipy import stats  # scipy.stats, imported on first use

SWAP_THRESHOLDS = ("mc", "hb")
"""Rankel et al.'s thresholds: within-document swaps (mc), document pairs resampled then swapped (hb)."""
UNPAIRED_THRESHOLDS = ("theory", "independent_bootstrap") + SWAP_THRESHOLDS
PAIRED_THRESHOLDS = ("theory", "centred_bootstrap") + SWAP_THRESHOLDS
DEPRECATED_THRESHOLDS = {"ttest_unpaired": {"bootstrap": "independent_bootstrap"},
                         "ttest_doc": {"bootstrap": "centred_bootstrap"},
                         "wilcoxon_doc": {"bootstrap": "centred_bootstrap"}}
"""Old 'threshold' value -> its current name, per test; accepted (with a FutureWarning) for one release."""
# Resamples are processed in batches so that memory stays at a few MB for a thousand documents.
BATCH_CELLS = 2_000_000


def document_means(judgements: Judgements) -> np.ndarray:
    """Per-document mean score of every system, shape (n_documents, n_systems) (judged documents only).

    Under partial coverage a system's mean is over its existing outputs' judgements, NaN for a document
    it has no output for.
    """
    ids = judgements.document
    n_documents = int(ids.max()) + 1
    counts = np.bincount(ids, minlength=n_documents)
    present = counts > 0
    if not judgements.complete:
        observed = judgements.observed
        scores = np.where(observed, judgements.scores, 0.0)
        sums = np.stack([np.bincount(ids, weights=scores[:, s], minlength=n_documents)
                         for s in range(judgements.n_systems)], axis=1)[present]
        held = np.stack([np.bincount(ids, weights=observed[:, s], minlength=n_documents)
                         for s in range(judgements.n_systems)], axis=1)[present]
        return np.where(held > 0, sums / np.where(held > 0, held, 1), np.nan)
    sums = np.stack([np.bincount(ids, weights=judgements.scores[:, s], minlength=n_documents)
                     for s in range(judgements.n_systems)], axis=1)
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


def _boot_signed_rank(counts: np.ndarray, centred: np.ndarray, signs: np.ndarray | None = None) -> np.ndarray:
    """:func:`signed_rank_z` of every resample, from the draw counts (no sorting per resample).

    A resample holds copies of the original values, so the midrank of a value in it is the number of
    drawn values with smaller magnitude plus (the number drawn with equal magnitude + 1) / 2. With
    ``signs`` (:func:`swap_signs`: per resample and value, the sum of +-1 over its drawn copies) the
    copies' signs are the value's sign times those swaps; without, every copy keeps the value's sign.
    """
    signs = counts if signs is None else signs
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
        total = (signs[:, kept] * np.sign(values[kept]) * midrank).sum(axis=1)
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


def swap_signs(rng: np.random.Generator, n: int, resamples: int, resample_documents: bool
               ) -> tuple[np.ndarray, np.ndarray]:
    """Draw counts and summed swap signs of every document in every resample, each shape (R, n).

    ``counts[r, k]`` is how often document k is in resample r (1 without resampling documents: ``mc``)
    and ``signs[r, k]`` the sum, over those copies, of +1 (kept) or -1 (X_k and Y_k swapped), each copy
    swapped with probability 1/2 on its own (``hb``).
    """
    if not resample_documents:
        return np.ones((resamples, n)), rng.choice(np.array([-1.0, 1.0]), size=(resamples, n))
    rows = rng.integers(0, n, size=(resamples, n)) + (np.arange(resamples) * n)[:, None]
    swaps = rng.choice(np.array([-1.0, 1.0]), size=(resamples, n))
    counts = np.bincount(rows.ravel(), minlength=resamples * n).reshape(resamples, n).astype(float)
    signs = np.bincount(rows.ravel(), weights=swaps.ravel(), minlength=resamples * n).reshape(resamples, n)
    return counts, signs


def _swap_statistics(counts: np.ndarray, signs: np.ndarray, differences: np.ndarray, sums: np.ndarray,
                     statistic: str, resample_documents: bool) -> np.ndarray:
    """The statistic of every swapped resample (rows) of every pair (columns), from :func:`swap_signs`.

    Every term is a sum over the drawn copies of a document, so it is a matrix product: sum e d = signs @ d,
    sum d^2 = counts @ d^2 (a swap keeps |d| and s).
    """
    n = counts[0].sum()
    if statistic == "wilcoxon":
        if resample_documents:
            return _boot_signed_rank(counts, differences, signs)
        # mc: every document once, so the ranks are the data's and z is linear in the signs
        magnitude = np.where(differences == 0, np.nan, np.abs(differences))
        ranks = np.nan_to_num(stats.rankdata(magnitude, axis=0, nan_policy="omit"))
        scale = np.sqrt((ranks ** 2).sum(axis=0))
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(scale > 0, signs @ (np.sign(differences) * ranks) / scale, np.nan)
    mean = signs @ differences / n
    square = counts @ differences ** 2 / n
    variance = (square - mean ** 2) * n / (n - 1)
    # all drawn differences equal in size and sign up to rounding: no statistic there
    variance = np.where(variance > 1e-12 * np.maximum(square, 1e-300), variance, np.nan)
    if statistic == "ttest":
        return mean / np.sqrt(variance / n)
    _, sum_variance = _moments(counts, sums)
    scale = np.sqrt((np.nan_to_num(sum_variance) + np.nan_to_num(variance)) / (2 * n))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(scale > 0, mean / scale, np.nan)


SWAP_STATISTICS = ("welch", "ttest", "wilcoxon")


def swap_pvalues(first: np.ndarray, second: np.ndarray, statistic: str, rng: np.random.Generator,
                 resamples: int = 1000, resample_documents: bool = False) -> np.ndarray:
    """Two-sided p-values from within-document swaps of paired scores (Rankel et al.'s MC and HB thresholds).

    Parameters
    ----------
    first, second : ndarray, shape (n_documents, n_pairs)
        Per-document means of the two systems of each pair (row k of both: the same document).
    statistic : {'welch', 'ttest', 'wilcoxon'}
        Welch's t of the unpaired test, the paired t, or the standardised signed-rank statistic.
    rng : numpy.random.Generator
        The trial's analysis generator; one set of swaps serves every pair.
    resamples : int
    resample_documents : bool
        False: ``mc`` (every document once, swapped with probability 1/2); True: ``hb`` (n documents drawn
        with replacement, each copy then swapped with probability 1/2).

    Returns
    -------
    ndarray, shape (n_pairs,)
        (1 + #{|T*| >= |T|}) / (R + 1); NaN where the statistic is undefined on the data.
    """
    if statistic not in SWAP_STATISTICS:
        raise ValueError(f"statistic must be one of {list(SWAP_STATISTICS)}; got {statistic!r}")
    a, b = np.asarray(first, float), np.asarray(second, float)
    differences, sums = a - b, a + b
    n, n_pairs = differences.shape
    on_data = {"welch": lambda: welch_t(a, b, axis=0), "ttest": lambda: one_sample_t(differences, axis=0),
               "wilcoxon": lambda: signed_rank_z(differences, axis=0)}[statistic]
    observed = np.abs(on_data())
    exceed = np.zeros(n_pairs)
    batch = max(1, BATCH_CELLS // max(1, n * n_pairs))
    for start in range(0, resamples, batch):
        counts, signs = swap_signs(rng, n, min(batch, resamples - start), resample_documents)
        exceed += _exceedances(_swap_statistics(counts, signs, differences, sums, statistic, resample_documents),
                               observed)
    return np.where(np.isfinite(observed), (1.0 + exceed) / (resamples + 1.0), np.nan)


def current_threshold(test: str, threshold: str) -> str:
    """``threshold`` under its current name (a deprecated alias renamed, with a FutureWarning naming the new form)."""
    return current_options(ANALYSES[test], {"threshold": threshold})["threshold"]


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
        Used only with a resampling threshold.
    threshold : {'theory', 'independent_bootstrap', 'mc', 'hb'}
        Welch's t distribution (scipy.stats.ttest_ind, equal_var=False), the
        bootstrap resampling each system's centred document means on its own,
        or Rankel et al.'s within-document swaps (module docstring).
        'bootstrap' is a deprecated alias of 'independent_bootstrap'.
    bootstrap_resamples : int
        Resamples of any resampling threshold.

    Returns
    -------
    PairwiseResult
        Estimates are mean(i) - mean(j) over documents; a pair whose
        per-document means do not vary in either system is 'degenerate'.
    """
    threshold = current_threshold("ttest_unpaired", threshold)
    means = document_means(judgements)
    pairs = system_pairs(judgements.n_systems)
    first = means[:, [i for i, _ in pairs]]
    second = means[:, [j for _, j in pairs]]
    if not judgements.complete:  # each system's documents are the ones it has outputs for (theory only)
        return _partial_welch(first, second)
    estimate = first.mean(axis=0) - second.mean(axis=0)
    if threshold == "independent_bootstrap":
        p_value = unpaired_bootstrap_pvalues(first, second, rng, bootstrap_resamples)
    elif threshold in SWAP_THRESHOLDS:
        p_value = swap_pvalues(first, second, "welch", rng, bootstrap_resamples, threshold == "hb")
    else:
        defined = np.isfinite(welch_t(first, second, axis=0))
        p_value = np.full(len(pairs), np.nan)
        if defined.any():
            p_value[defined] = stats.ttest_ind(first[:, defined], second[:, defined], axis=0,
                                               equal_var=False).pvalue
    return _result(estimate, p_value, "Welch's t")


def _partial_welch(first: np.ndarray, second: np.ndarray) -> PairwiseResult:
    """Welch's t-test of each pair of columns, each over its non-missing documents (partial coverage).

    Written out (mean, variance and Welch-Satterthwaite df over the kept entries) so that all pairs take one
    vectorised pass; the p-value is ``scipy.stats.ttest_ind(a, b, equal_var=False)``'s on each column's kept values.
    """
    def moments(values):
        kept = ~np.isnan(values)
        n = kept.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(kept, values, 0.0).sum(axis=0) / n
            variance = np.where(kept, (values - mean) ** 2, 0.0).sum(axis=0) / (n - 1)
        return mean, variance, n

    mean_a, variance_a, n_a = moments(first)
    mean_b, variance_b, n_b = moments(second)
    with np.errstate(invalid="ignore", divide="ignore"):
        share_a, share_b = variance_a / n_a, variance_b / n_b
        scale = np.sqrt(share_a + share_b)
        defined = (n_a > 1) & (n_b > 1) & (scale > 0)
        df = (share_a + share_b) ** 2 / (share_a ** 2 / (n_a - 1) + share_b ** 2 / (n_b - 1))
        t = (mean_a - mean_b) / scale
    p_value = np.full(first.shape[1], np.nan)
    p_value[defined] = 2 * stats.t.sf(np.abs(t[defined]), df[defined])
    return _result(mean_a - mean_b, p_value, "Welch's t")


def paired_document_test(judgements: Judgements, rng: np.random.Generator, statistic: str,
                         threshold: str = "theory", bootstrap_resamples: int = 1000) -> PairwiseResult:
    """``ttest_doc`` or ``wilcoxon_doc`` with a theoretical or resampling threshold.

    With ``threshold='theory'`` this is exactly the test of
    :mod:`simdesign.significance.classical` (same p-values); with
    ``'centred_bootstrap'`` (deprecated alias ``'bootstrap'``) the p-value
    comes from :func:`paired_bootstrap_pvalues`, with ``'mc'`` or ``'hb'``
    from :func:`swap_pvalues`.
    """
    threshold = current_threshold(PAIRED_TEST_NAMES[statistic], threshold)
    if threshold == "theory":
        if statistic == "ttest":
            return paired_ttest(judgements, rng, unit="doc")
        return wilcoxon_documents(judgements, rng)
    if threshold in SWAP_THRESHOLDS:
        means = document_means(judgements)
        pairs = system_pairs(judgements.n_systems)
        first, second = means[:, [i for i, _ in pairs]], means[:, [j for _, j in pairs]]
        p_value = swap_pvalues(first, second, statistic, rng, bootstrap_resamples, threshold == "hb")
        return _result((first - second).mean(axis=0), p_value, "the statistic")
    _, means = unit_differences(judgements, "doc")
    p_value = paired_bootstrap_pvalues(means, statistic, rng, bootstrap_resamples)
    return _result(means.mean(axis=0), p_value, "the statistic")


def _draws_for_threshold(options: dict) -> bool:
    # these tests draw random numbers only to resample for a resampling threshold
    return options.get("threshold", "theory") != "theory"


# Under partial coverage only the theoretical threshold is offered: the swaps and the bootstraps resample
# the pairs of outputs of a document, which a pair of systems may not have.
THRESHOLD_COMPLETE_REASON = ("its resampling thresholds (mc, hb, the bootstraps) resample documents with both "
                             "systems' outputs; threshold theory handles missing outputs")


register(AnalysisInfo(
    name="ttest_unpaired",
    function=unpaired_ttest,
    options={"threshold": (UNPAIRED_THRESHOLDS, "theory"), "bootstrap_resamples": (_positive_int_option, 1000)},
    deprecated_values={"threshold": DEPRECATED_THRESHOLDS["ttest_unpaired"]},
    description="Welch's two-sample t-test over per-document means (unpaired: ignores document difficulty "
                "pairing); threshold theory, mc or hb (Rankel et al.'s within-document swaps, which keep the "
                "pairing) or independent_bootstrap (each system resampled on its own: drops the pairing).",
    chunk_trials=CLASSICAL_CHUNK_TRIALS,
    uses_rng=_draws_for_threshold,
    needs_complete=_draws_for_threshold,
    complete_reason=THRESHOLD_COMPLETE_REASON,
))

# ttest_doc and wilcoxon_doc are registered here, once, so that their 'threshold' option and its resampling live
# in one module; with threshold 'theory' they are classical.py's tests (paired_ttest, wilcoxon_documents).
PAIRED_TEST_NAMES = {"ttest": "ttest_doc", "wilcoxon": "wilcoxon_doc"}
_PAIRED_DESCRIPTIONS = {"ttest": "Paired t-test over per-document means.",
                        "wilcoxon": "Wilcoxon signed-rank test over per-document mean differences."}
for _statistic, _name in PAIRED_TEST_NAMES.items():
    register(AnalysisInfo(
        name=_name,
        function=lambda j, rng, _statistic=_statistic, **options: paired_document_test(j, rng, _statistic, **options),
        options={"threshold": (PAIRED_THRESHOLDS, "theory"), "bootstrap_resamples": (_positive_int_option, 1000)},
        deprecated_values={"threshold": DEPRECATED_THRESHOLDS[_name]},
        description=_PAIRED_DESCRIPTIONS[_statistic] + " Option threshold: theory (default), mc or hb (Rankel et "
                                                       "al.'s within-document swaps) or centred_bootstrap "
                                                       "(resampling centred document differences).",
        takes_rankings=True,  # reversed ranks are scores too (simdesign.methods.rank)
        uses_rng=_draws_for_threshold,
        chunk_trials=CLASSICAL_CHUNK_TRIALS,
        needs_complete=_draws_for_threshold,
        complete_reason=THRESHOLD_COMPLETE_REASON,
    ))

DOCUMENT_TESTS = ("ttest_unpaired", "ttest_doc", "wilcoxon_doc")
"""The registry names this module adds (ttest_doc and wilcoxon_doc are also in CLASSICAL_TESTS: model-free)."""
