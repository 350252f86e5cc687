"""Correlations between a metric and human scores, their bootstrap intervals and a permutation test.

After Deutsch, Dror and Roth (2021, TACL). Scores are matrices with one row
per system and one column per document (input).

* System level: the correlation, across systems, of the systems' mean
  scores over documents.
* Summary level: for every document, the correlation across systems of
  the outputs' scores; then the mean over documents (documents where it is
  undefined, all scores of one kind equal, are left out).
* Global level: the correlation over all outputs (system x document cells) at once.

Bootstrap intervals (percentile, 95% by default) resample

* ``systems`` (BOOT-SYSTEMS): rows with replacement, documents fixed;
* ``inputs`` (BOOT-INPUTS): columns with replacement, systems fixed;
* ``both`` (BOOT-BOTH): rows and columns, independently, in each resample.

Which population each interval speaks about: BOOT-SYSTEMS treats the
documents as fixed and the systems as a sample, BOOT-INPUTS the reverse,
BOOT-BOTH both as samples. The target used for coverage in
:mod:`simdesign.studies.metrics.metric_validation` is the correlation over both
populations (infinitely many systems and documents), the quantity a paper
reporting "metric X correlates r with humans" means.

The permutation test of a difference between two metrics (PERM-BOTH of
Deutsch et al.; PERM-SYSTEMS and PERM-INPUTS swap whole systems or
documents instead) swaps the two metrics' scores of each output with
probability 1/2, after standardising each metric over all its scores (so
that a swap does not mix scales); the statistic is the difference of
their correlations with the human scores; two-sided p = (1 + #{|D*| >=
|D|}) / (R + 1), one-sided ('greater': the first metric correlates more)
p = (1 + #{D* >= D}) / (R + 1).

Everything is vectorised over resamples, hand-written because the
engine calls it millions of times; :func:`correlation` agrees with
scipy's pearsonr, spearmanr and kendalltau (tau-b), which the tests check.
"""
from __future__ import annotations

import warnings

import numpy as np
from scipy import stats

METHODS = ("pearson", "spearman", "kendall")
LEVELS = ("system", "summary", "global")
ALTERNATIVES = ("two-sided", "greater", "less")
SCHEMES = ("systems", "inputs", "both")
# Kendall's tau compares all pairs: at most this many pair comparisons are held in memory at once (about 32 MB
# per float64 array); beyond, rows are taken in pieces, or one by one with scipy's O(n log n) algorithm.
KENDALL_PAIRS_AT_ONCE = 4_000_000
# Rows longer than this go to scipy's O(n log n) tau-b one by one (measured: 0.5 ms a row against 0.7 ms for
# all pairs of 120 values, 0.8 against 115 ms at 1600).
KENDALL_SCIPY_FROM = 100


def _spread(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(centred x, whether each row varies by more than rounding error).

    A row that is constant up to rounding (a constant metric's bootstrap means, weighted sums of equal values)
    has no correlation: its float noise gave a correlation of noise (a constant metric's BOOT-INPUTS interval
    was shown as -0.000..0.000 beside its undefined estimate).
    """
    magnitude = np.abs(x).max(axis=-1) if x.shape[-1] else np.zeros(x.shape[:-1])
    centred = x - x.mean(axis=-1, keepdims=True)
    spread = np.sqrt((centred * centred).sum(axis=-1))
    return centred, spread > 64 * np.finfo(float).eps * np.sqrt(x.shape[-1]) * magnitude


def _pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    (x, x_varies), (y, y_varies) = _spread(x), _spread(y)
    denominator = np.sqrt((x * x).sum(axis=-1) * (y * y).sum(axis=-1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((denominator > 0) & x_varies & y_varies, (x * y).sum(axis=-1) / denominator, np.nan)


def _kendall_b(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b along the last axis, in pieces that keep the pair arrays within KENDALL_PAIRS_AT_ONCE."""
    x, y = np.broadcast_arrays(x, y)
    n = x.shape[-1]
    pairs = max(n * (n - 1) // 2, 1)
    if pairs * x[..., :1].size <= KENDALL_PAIRS_AT_ONCE and n <= KENDALL_SCIPY_FROM:
        return _kendall_pairs(x, y)
    flat_x, flat_y = x.reshape(-1, n), y.reshape(-1, n)
    if pairs <= KENDALL_PAIRS_AT_ONCE and n <= KENDALL_SCIPY_FROM:
        step = KENDALL_PAIRS_AT_ONCE // pairs
        out = np.concatenate([_kendall_pairs(flat_x[i:i + step], flat_y[i:i + step])
                              for i in range(0, len(flat_x), step)])
    else:
        # long rows (e.g. the global level of a table): scipy's O(n log n) algorithm, row by row, is
        # faster than comparing all pairs beyond about 100 values (and needs no n^2 memory); the same
        # tau-b, undefined (NaN) for a constant row
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", stats.ConstantInputWarning)
            out = np.array([stats.kendalltau(a, b).statistic for a, b in zip(flat_x, flat_y)], float)
    return out.reshape(x.shape[:-1])


def _kendall_pairs(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    # over the pairs i < j only; the (..., n(n-1)/2) comparison arrays are the cost
    first, second = np.triu_indices(x.shape[-1], k=1)
    sx = np.sign(x[..., first] - x[..., second])
    sy = np.sign(y[..., first] - y[..., second])
    concordance = (sx * sy).sum(axis=-1)
    denominator = np.sqrt(np.abs(sx).sum(axis=-1) * np.abs(sy).sum(axis=-1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator > 0, concordance / denominator, np.nan)


def correlation(x: np.ndarray, y: np.ndarray, method: str = "pearson") -> np.ndarray:
    """Correlation along the last axis (NaN where one variable is constant).

    Parameters
    ----------
    x, y : ndarray, same shape (..., n)
    method : {'pearson', 'spearman', 'kendall'}
        Spearman: Pearson of midranks; Kendall: tau-b (ties corrected).
    """
    if method == "pearson":
        return _pearson(np.asarray(x, float), np.asarray(y, float))
    if method == "spearman":
        return _pearson(stats.rankdata(x, axis=-1), stats.rankdata(y, axis=-1))
    if method == "kendall":
        return _kendall_b(np.asarray(x, float), np.asarray(y, float))
    raise ValueError(f"method must be one of {METHODS}; got {method!r}")


def system_level(metric: np.ndarray, human: np.ndarray, method: str = "pearson") -> float:
    """Correlation across systems of the systems' mean scores (rows: systems, columns: documents)."""
    return float(correlation(metric.mean(axis=-1), human.mean(axis=-1), method))


def summary_level(metric: np.ndarray, human: np.ndarray, method: str = "pearson") -> float:
    """Mean over documents of the correlation across systems (undefined documents left out)."""
    per_document = correlation(metric.T, human.T, method)
    return float(np.nanmean(per_document)) if np.isfinite(per_document).any() else float("nan")


def global_level(metric: np.ndarray, human: np.ndarray, method: str = "pearson") -> float:
    """Correlation over all outputs (every system x document cell) at once."""
    return float(correlation(np.ravel(metric), np.ravel(human), method))


def level_correlation(metric: np.ndarray, human: np.ndarray, level: str, method: str = "pearson") -> float:
    """The correlation at ``level`` ('system', 'summary' or 'global'; module docstring)."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}; got {level!r}")
    return {"system": system_level, "summary": summary_level, "global": global_level}[level](metric, human, method)


def _counts(rng: np.random.Generator, n: int, resamples: int) -> np.ndarray:
    rows = rng.integers(0, n, size=(resamples, n))
    return np.bincount((rows + (np.arange(resamples) * n)[:, None]).ravel(),
                       minlength=resamples * n).reshape(resamples, n).astype(float)


def bootstrap_system_level(metric: np.ndarray, human: np.ndarray, scheme: str, rng: np.random.Generator,
                           resamples: int = 1000, methods=METHODS) -> dict:
    """System-level correlations of ``resamples`` bootstrap resamples, per method.

    Returns
    -------
    dict
        method -> ndarray of shape (resamples,) (NaN where undefined, e.g. all resampled systems equal).
    """
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {SCHEMES}; got {scheme!r}")
    n_systems, n_documents = metric.shape
    if scheme == "systems":
        metric_means = np.broadcast_to(metric.mean(axis=1), (resamples, n_systems))
        human_means = np.broadcast_to(human.mean(axis=1), (resamples, n_systems))
    else:
        # a resample of documents changes each system's mean to a weighted mean: one matrix product
        weights = _counts(rng, n_documents, resamples) / n_documents
        metric_means, human_means = weights @ metric.T, weights @ human.T
    if scheme != "inputs":
        rows = rng.integers(0, n_systems, size=(resamples, n_systems))
        metric_means = np.take_along_axis(metric_means, rows, axis=1)
        human_means = np.take_along_axis(human_means, rows, axis=1)
    return {method: correlation(metric_means, human_means, method) for method in methods}


def percentile_interval(values: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """The percentile interval of bootstrap values (undefined resamples left out); NaNs if none is defined."""
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return float("nan"), float("nan")
    tail = (1 - confidence) / 2
    low, high = np.quantile(finite, [tail, 1 - tail])
    return float(low), float(high)


def _standardise(scores: np.ndarray) -> np.ndarray:
    spread = scores.std()
    return (scores - scores.mean()) / (spread if spread > 0 else 1.0)


def permutation_differences(first: np.ndarray, second: np.ndarray, human: np.ndarray, rng: np.random.Generator,
                            resamples: int = 1000, level: str = "system", method: str = "pearson",
                            scheme: str = "both") -> tuple[float, np.ndarray]:
    """The observed difference of two metrics' correlations and its permutation distribution (module docstring).

    Parameters
    ----------
    first, second, human : ndarray, shape (n_systems, n_documents)
    rng : numpy.random.Generator
    resamples : int
    level : {'system', 'summary', 'global'}
    method : {'pearson', 'spearman', 'kendall'}
    scheme : {'both', 'systems', 'inputs'}
        What is swapped between the metrics (see :func:`permutation_test`).

    Returns
    -------
    difference : float
        corr(first, human) - corr(second, human) at ``level``.
    permuted : ndarray, shape (resamples,)
        The same difference after each random swap (NaN where undefined).
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}; got {level!r}")
    a, b = _standardise(np.asarray(first, float)), _standardise(np.asarray(second, float))
    human = np.asarray(human, float)
    observed = level_correlation(a, human, level, method) - level_correlation(b, human, level, method)
    shape = {"both": a.shape, "systems": (a.shape[0], 1), "inputs": (1, a.shape[1])}[scheme]
    swap = np.broadcast_to(rng.integers(0, 2, size=(resamples,) + shape, dtype=np.int8), (resamples,) + a.shape)
    if level == "system":
        # a swap moves (b - a) / D into first's system mean and out of second's: one contraction, no copies
        human_means = human.mean(axis=1)
        moved = np.einsum("rsd,sd->rs", swap, (b - a) / a.shape[1], optimize=True)
        boot = (correlation(a.mean(axis=1) + moved, human_means, method)
                - correlation(b.mean(axis=1) - moved, human_means, method))
    else:
        swapped = swap.astype(bool)
        swapped_a, swapped_b = np.where(swapped, b, a), np.where(swapped, a, b)
        if level == "summary":
            # per document: correlation across systems, then the mean over documents
            boot = (np.nanmean(correlation(np.swapaxes(swapped_a, 1, 2), human.T, method), axis=1)
                    - np.nanmean(correlation(np.swapaxes(swapped_b, 1, 2), human.T, method), axis=1))
        else:
            flat_human = human.ravel()
            boot = (correlation(swapped_a.reshape(resamples, -1), flat_human, method)
                    - correlation(swapped_b.reshape(resamples, -1), flat_human, method))
    return float(observed), boot


def resampling_p_value(observed: float, null: np.ndarray, alternative: str = "two-sided") -> float:
    """p = (1 + #{null values at least as extreme}) / (R + 1), undefined values counted as not extreme.

    ``null`` are draws of the statistic under the null hypothesis (centred at 0); 'greater' asks
    whether the statistic is larger than 0, 'less' smaller, 'two-sided' either.
    """
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative must be one of {ALTERNATIVES}; got {alternative!r}")
    null = np.asarray(null, float)
    tolerance = 1e-9 * max(abs(observed), 1e-300)  # equal values (ties of the statistic) count as extreme
    with np.errstate(invalid="ignore"):
        if alternative == "two-sided":
            extreme = np.abs(null) >= abs(observed) - tolerance
        elif alternative == "greater":
            extreme = null >= observed - tolerance
        else:
            extreme = null <= observed + tolerance
    return float((1 + np.count_nonzero(extreme & np.isfinite(null))) / (null.size + 1))


def permutation_test(first: np.ndarray, second: np.ndarray, human: np.ndarray, rng: np.random.Generator,
                     resamples: int = 1000, level: str = "system", method: str = "pearson",
                     scheme: str = "both", alternative: str = "two-sided") -> tuple[float, float]:
    """Permutation test that two metrics correlate equally with the human scores (module docstring).

    Parameters
    ----------
    scheme : {'both', 'systems', 'inputs'}
        What is swapped between the metrics: each output's pair of scores
        (PERM-BOTH), all of a system's (PERM-SYSTEMS) or all of a
        document's (PERM-INPUTS). The test is exact when the two metrics'
        scores are exchangeable in those units; per-output swaps are not
        valid when each metric has its own system biases (it then rejects
        a true null of equal population correlations far too often;
        tests/test_metric_validation.py shows it), per-system swaps are.
    alternative : {'two-sided', 'greater', 'less'}
        'greater': the first metric correlates more strongly with the human scores.

    Returns
    -------
    difference : float
        corr(first, human) - corr(second, human) at the given level.
    p_value : float
    """
    observed, boot = permutation_differences(first, second, human, rng, resamples, level, method, scheme)
    return observed, resampling_p_value(observed, boot, alternative)
