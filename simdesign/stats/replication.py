"""How well one study reproduces another: the three scores of Ito & Gatt (2023, ReproHum).

Pure statistics over the two studies' results (no simulation here):

* :func:`score_correlation` -- Pearson's r between the two studies' system scores.
* :func:`matching_accuracy` -- the share of system pairs whose trend (lower, equal, higher) is the same
  in both studies; a difference whose absolute value is at most ``tolerance`` counts as "equal", so with
  the default 0 this is sign agreement.
* :func:`significance_f1` -- the F1 of the replication's significance decisions with the original's as
  gold. A decision is a significant difference *with its direction* (i above j, or j above i): a pair
  significant in both studies but in opposite directions is a false positive and a false negative, not a
  match. Undefined (None) when the original has no significant pair, since recall then has no denominator.

Examples
--------
>>> significance_f1(np.array([1, 0, -1]), np.array([1, 1, 0]))
0.5
>>> matching_accuracy(np.array([0.3, -0.1, 0.0]), np.array([0.2, 0.1, 0.0]))
0.6666666666666666
"""
from __future__ import annotations

import numpy as np

from simdesign.core.lazy_scipy import stats  # scipy.stats, imported on first use


def score_correlation(original: np.ndarray, replication: np.ndarray) -> float:
    """Pearson's r between two studies' system scores (NaN when either set of scores is constant).

    Parameters
    ----------
    original, replication : ndarray, shape (systems,)
        The systems' scores (e.g. mean Likert score) in each study, in the same system order.

    Returns
    -------
    float
    """
    original, replication = np.asarray(original, float), np.asarray(replication, float)
    if original.size < 2 or np.ptp(original) == 0 or np.ptp(replication) == 0:
        return float("nan")
    return float(stats.pearsonr(original, replication).statistic)


def trends(differences: np.ndarray, tolerance: float = 0.0) -> np.ndarray:
    """-1 (lower), 0 (equal: |difference| <= tolerance) or +1 (higher) per system pair."""
    differences = np.asarray(differences, float)
    return np.where(np.abs(differences) <= tolerance, 0, np.sign(differences)).astype(int)


def matching_accuracy(original_differences: np.ndarray, replication_differences: np.ndarray,
                      tolerance: float = 0.0) -> float:
    """Share of system pairs with the same trend in both studies.

    Parameters
    ----------
    original_differences, replication_differences : ndarray, shape (pairs,)
        Score differences (system i minus system j) per pair in each study.
    tolerance : float, default 0
        A difference with absolute value at most this is "equal" (0: sign agreement, where only an
        exact tie is equal).

    Returns
    -------
    float
    """
    same = trends(original_differences, tolerance) == trends(replication_differences, tolerance)
    return float(np.mean(same))


def significance_decisions(p_values: np.ndarray, estimates: np.ndarray, usable: np.ndarray,
                           alpha: float) -> np.ndarray:
    """+1 / -1 for a significant difference in that direction, 0 otherwise (a failed test is never one)."""
    significant = (np.asarray(p_values, float) < alpha) & np.asarray(usable, bool)
    return np.where(significant, np.sign(np.asarray(estimates, float)), 0).astype(int)


def significance_f1(original: np.ndarray, replication: np.ndarray) -> float | None:
    """F1 of the replication's significance decisions against the original's (gold).

    Parameters
    ----------
    original, replication : ndarray of int, shape (pairs,)
        Decisions from :func:`significance_decisions`.

    Returns
    -------
    float or None
        2 TP / (2 TP + FP + FN); None when the original has no significant pair.
    """
    original, replication = np.asarray(original), np.asarray(replication)
    gold = int(np.count_nonzero(original))
    if gold == 0:
        return None
    true_positive = int(np.count_nonzero((original != 0) & (original == replication)))
    predicted = int(np.count_nonzero(replication))
    return 2.0 * true_positive / (gold + predicted)
