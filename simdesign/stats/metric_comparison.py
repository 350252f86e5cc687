"""Intervals for a metric's correlation with human scores and tests comparing two metrics, on one data set.

After Deutsch, Dror and Roth (2021, TACL), on score matrices with one row per
system and one column per input (document), at the system, summary (input)
and global level (:mod:`simdesign.stats.metric_correlation` defines the
levels, the bootstrap resamples of the system and summary level and the
permutation test; :mod:`simdesign.stats.summary_bootstrap` the summary-level
bootstrap). This module adds what an analysis of real scores needs beside them:

* :func:`bootstrap_correlations`: BOOT-SYSTEMS / BOOT-INPUTS / BOOT-BOTH
  resamples at any level (the global level is new here), computed in
  chunks of resamples so that Kendall's tau over many outputs stays within
  memory;
* :func:`fisher_interval`: the Fisher z interval, with Bonett and Wright's
  (2000) variances for Spearman ((1 + r^2 / 2) / (n - 3)) and Kendall
  (0.437 / (n - 4));
* :func:`williams_test`: Williams' (1959) t test of two dependent
  correlations that share a variable (the human scores), as used for
  metric comparison by Graham and Baldwin (2014, EMNLP);
* :func:`paired_bootstrap_test`: the paired bootstrap test of Berg-Kirkpatrick
  et al. (2012) as Deutsch et al. use it (both metrics' correlations on the
  same resamples; the null distribution is the resampled difference centred
  at the observed one);
* :func:`permutation_p_values`: PERM-SYSTEMS / PERM-INPUTS / PERM-BOTH
  p-values, in chunks.

Every resampling draws from the generator it is given; a chunk's draws depend
only on the shape of the data and the number of resamples (never on the scores
or on which correlations are asked for), so two metrics bootstrapped with
generators in the same state see the same resamples, which is how the paired
bootstrap pairs them.
"""
from __future__ import annotations

import numpy as np
from scipy import stats

from simdesign.stats.metric_correlation import (ALTERNATIVES, LEVELS, METHODS, SCHEMES, bootstrap_system_level,
                                                correlation, permutation_differences,
                                                resampling_p_value)
from simdesign.stats.summary_bootstrap import bootstrap_summary_level

# Elements of the largest intermediate array one chunk of resamples may create (about 32 MB of float64):
# Kendall's tau compares all pairs of the correlated values.
CHUNK_ELEMENTS = 4_000_000
# Bonett and Wright (2000): the Fisher z of r has variance c^2 / (n - b).
FISHER_CONSTANTS = {"pearson": (3, lambda r: 1.0), "spearman": (3, lambda r: np.sqrt(1 + r ** 2 / 2)),
                    "kendall": (4, lambda r: np.sqrt(0.437))}


def sample_size(shape: tuple[int, int], level: str) -> int:
    """The n of a correlation at ``level``: systems (system and summary level: each input's correlation is
    over the systems) or outputs (global)."""
    n_systems, n_inputs = shape
    return n_systems * n_inputs if level == "global" else n_systems


def chunk_size(shape: tuple[int, int], level: str) -> int:
    """Resamples per chunk: the worst case over methods (Kendall's pairs), so never dependent on the methods."""
    n_systems, n_inputs = shape
    n = sample_size(shape, level)
    pairs = max(n * (n - 1) // 2, 1) * (n_inputs if level == "summary" else 1)
    return max(1, CHUNK_ELEMENTS // max(pairs, n_systems * n_inputs))


def _chunks(resamples: int, size: int):
    for start in range(0, resamples, size):
        yield min(size, resamples - start)


def _bootstrap_global_level(metric: np.ndarray, human: np.ndarray, scheme: str, rng: np.random.Generator,
                            resamples: int, methods) -> dict:
    n_systems, n_inputs = metric.shape
    rows = (rng.integers(0, n_systems, size=(resamples, n_systems)) if scheme != "inputs"
            else np.broadcast_to(np.arange(n_systems), (resamples, n_systems)))
    columns = (rng.integers(0, n_inputs, size=(resamples, n_inputs)) if scheme != "systems"
               else np.broadcast_to(np.arange(n_inputs), (resamples, n_inputs)))
    cells = (rows[:, :, None] * n_inputs + columns[:, None, :]).reshape(resamples, -1)
    flat_metric, flat_human = metric.ravel()[cells], human.ravel()[cells]
    return {method: correlation(flat_metric, flat_human, method) for method in methods}


def bootstrap_correlations(metric: np.ndarray, human: np.ndarray, level: str, scheme: str,
                           rng: np.random.Generator, resamples: int = 1000, methods=METHODS) -> dict:
    """Bootstrap resamples of the correlation at ``level`` (Deutsch et al.'s Algorithm 1), per method.

    Parameters
    ----------
    metric, human : ndarray, shape (n_systems, n_inputs)
    level : {'system', 'summary', 'global'}
    scheme : {'systems', 'inputs', 'both'}
        BOOT-SYSTEMS: systems drawn with replacement, inputs kept; BOOT-INPUTS: the reverse;
        BOOT-BOTH: systems and inputs drawn independently in each resample.
    rng : numpy.random.Generator
    resamples : int
    methods : sequence of {'pearson', 'spearman', 'kendall'}

    Returns
    -------
    dict
        method -> ndarray of shape (resamples,), NaN where a resample's correlation is undefined
        (e.g. every resampled system the same one).
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}; got {level!r}")
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {SCHEMES}; got {scheme!r}")
    function = {"system": bootstrap_system_level, "summary": bootstrap_summary_level,
                "global": _bootstrap_global_level}[level]
    metric, human = np.asarray(metric, float), np.asarray(human, float)
    parts = [function(metric, human, scheme, rng, size, methods)
             for size in _chunks(resamples, chunk_size(metric.shape, level))]
    return {method: np.concatenate([part[method] for part in parts]) for method in methods}


def fisher_interval(r: float, n: int, method: str = "pearson", confidence: float = 0.95) -> tuple[float, float]:
    """The Fisher z interval tanh(atanh(r) +- z c / sqrt(n - b)) (Bonett and Wright 2000; NaNs when n <= b).

    It assumes n independent pairs: right for the system level (n systems); at the global level the
    outputs of one system or input are not independent (too narrow), and the summary level's mean over
    inputs is treated as one input's correlation (too wide).
    """
    b, c = FISHER_CONSTANTS[method]
    if not np.isfinite(r) or n <= b:
        return float("nan"), float("nan")
    half = stats.norm.ppf(0.5 + confidence / 2) * c(r) / np.sqrt(n - b)
    with np.errstate(divide="ignore"):
        z = np.arctanh(np.clip(r, -1.0, 1.0))
    return float(np.tanh(z - half)), float(np.tanh(z + half))


def williams_test(r_first: float, r_second: float, r_between: float, n: int,
                  alternative: str = "two-sided") -> tuple[float, float]:
    """Williams' test that two correlations with a shared variable are equal.

    With 1 the human scores, 2 and 3 the metrics (Williams 1959; the form of Graham and Baldwin 2014,
    eq. 1, and Steiger 1980, eq. 7)::

        t = (r12 - r13) sqrt((n - 1)(1 + r23))
            / sqrt(2 (n - 1) / (n - 3) |R| + ((r12 + r13) / 2)^2 (1 - r23)^3),
        |R| = 1 - r12^2 - r13^2 - r23^2 + 2 r12 r13 r23,

    t on n - 3 degrees of freedom. Derived for Pearson correlations of n independent triples; the
    signed correlations are used (a metric that correlates negatively is worse, not as good).

    Parameters
    ----------
    r_first, r_second : float
        Each metric's correlation with the human scores (r12, r13).
    r_between : float
        The metrics' correlation with each other (r23).
    n : int
    alternative : {'two-sided', 'greater', 'less'}
        'greater': the first metric correlates more strongly.

    Returns
    -------
    t : float
    p_value : float
        NaN when n <= 3 or a correlation is undefined.
    """
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative must be one of {ALTERNATIVES}; got {alternative!r}")
    r12, r13, r23 = r_first, r_second, r_between
    if n <= 3 or not np.all(np.isfinite([r12, r13, r23])):
        return float("nan"), float("nan")
    determinant = 1 - r12 ** 2 - r13 ** 2 - r23 ** 2 + 2 * r12 * r13 * r23
    denominator = 2 * (n - 1) / (n - 3) * determinant + ((r12 + r13) / 2) ** 2 * (1 - r23) ** 3
    if denominator <= 0:  # identical metrics (r23 = 1, |R| = 0): no difference to test
        return float("nan"), float("nan")
    t = (r12 - r13) * np.sqrt((n - 1) * (1 + r23) / denominator)
    tail = {"two-sided": 2 * stats.t.sf(abs(t), n - 3), "greater": stats.t.sf(t, n - 3),
            "less": stats.t.cdf(t, n - 3)}[alternative]
    return float(t), float(min(tail, 1.0))


def paired_bootstrap_test(observed: float, first: np.ndarray, second: np.ndarray, alternatives=ALTERNATIVES,
                          confidence: float = 0.95) -> dict:
    """Paired bootstrap test of the difference of two metrics' correlations with the human scores.

    Parameters
    ----------
    observed : float
        D, the first metric's correlation minus the second's.
    first, second : ndarray, shape (resamples,)
        Each metric's correlation on the SAME resamples (bootstrapped with generators in the same
        state; module docstring), so that D* = first - second is a resample's difference.
    alternatives : sequence of {'two-sided', 'greater', 'less'}
    confidence : float

    Returns
    -------
    dict
        ``difference`` (D), ``low``/``high`` (percentile interval of D*), ``resamples`` (the defined
        ones) and ``p_<alternative>`` per alternative.

    Notes
    -----
    The null distribution is D* - D (Berg-Kirkpatrick et al. 2012): one-sided 'greater' counts
    D* - D >= D, i.e. D* >= 2D, as Deutsch et al.'s code does; two-sided counts |D* - D| >= |D| (their
    code's two-sided variant, |D*| >= 2|D|, is not centred at D). Undefined resamples are left out.
    """
    differences = np.asarray(first, float) - np.asarray(second, float)
    defined = differences[np.isfinite(differences)]
    out = {"difference": float(observed), "resamples": int(defined.size)}
    tail = (1 - confidence) / 2
    out["low"], out["high"] = ((float(np.quantile(defined, tail)), float(np.quantile(defined, 1 - tail)))
                               if defined.size else (np.nan, np.nan))
    for alternative in alternatives:
        out[f"p_{alternative}"] = (resampling_p_value(observed, defined - observed, alternative)
                                   if defined.size and np.isfinite(observed) else np.nan)
    return out


def permutation_p_values(first: np.ndarray, second: np.ndarray, human: np.ndarray, level: str, method: str,
                         scheme: str, rng: np.random.Generator, resamples: int = 1000,
                         alternatives=ALTERNATIVES) -> dict:
    """PERM-``scheme`` p-values (:func:`simdesign.stats.metric_correlation.permutation_test`), in chunks.

    Returns
    -------
    dict
        ``difference`` and ``p_<alternative>`` per alternative (all from the same permutations).
    """
    first, second, human = (np.asarray(x, float) for x in (first, second, human))
    observed, parts = np.nan, []
    for size in _chunks(resamples, chunk_size(first.shape, level)):
        observed, permuted = permutation_differences(first, second, human, rng, size, level, method, scheme)
        parts.append(permuted)
    permuted = np.concatenate(parts)
    out = {"difference": observed}
    for alternative in alternatives:
        out[f"p_{alternative}"] = resampling_p_value(observed, permuted, alternative) if np.isfinite(observed) \
            else np.nan
    return out
