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


def row_correlations(original: np.ndarray, replication: np.ndarray) -> np.ndarray:
    """:func:`score_correlation` of each row pair at once (NaN where either row is constant).

    Parameters
    ----------
    original, replication : ndarray, shape (studies, systems)

    Returns
    -------
    ndarray, shape (studies,)
    """
    a = np.asarray(original, float) - np.mean(original, axis=1, keepdims=True)
    b = np.asarray(replication, float) - np.mean(replication, axis=1, keepdims=True)
    norms = np.sqrt(np.sum(a * a, axis=1) * np.sum(b * b, axis=1))
    constant = (np.ptp(original, axis=1) == 0) | (np.ptp(replication, axis=1) == 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.clip(np.sum(a * b, axis=1) / norms, -1.0, 1.0)
    return np.where(constant, np.nan, r)


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


CORRECTIONS = ("none", "holm", "bh")
"""Multiplicity corrections of a study's tested pairs (statsmodels' ``multipletests`` methods 'holm' and
'fdr_bh', which the tests use as the oracle)."""


def adjusted_p_values(p_values: np.ndarray, correction: str) -> np.ndarray:
    """Holm (step-down, family-wise) or Benjamini-Hochberg (step-up, FDR) adjusted p-values of one family.

    The textbook rules, written out because statsmodels' ``multipletests`` runs a full garbage collection
    on every Holm call (half a second each on a loaded machine; a summary calls it once per trial); its
    adjusted values are the reference in the tests.
    """
    p_values = np.asarray(p_values, float)
    m = p_values.size
    if correction == "none" or m == 0:
        return p_values
    order = np.argsort(p_values, kind="stable")
    ranked = p_values[order]
    if correction == "holm":
        adjusted = np.maximum.accumulate(ranked * np.arange(m, 0, -1))
    else:  # bh
        adjusted = np.minimum.accumulate((ranked * m / np.arange(1, m + 1))[::-1])[::-1]
    result = np.empty(m)
    result[order] = np.minimum(adjusted, 1.0)
    return result


def corrected_decisions(p_values: np.ndarray, estimates: np.ndarray, usable: np.ndarray, alpha: float,
                        correction: str = "none") -> np.ndarray:
    """:func:`significance_decisions` after a multiplicity correction over each row's usable tests.

    Parameters
    ----------
    p_values, estimates, usable : ndarray, shape (studies, pairs)
        One row per study (trial): its tested pairs' p-values, estimates and whether each test ran.
    alpha : float
    correction : {'none', 'holm', 'bh'}
        Holm's step-down (family-wise error) or Benjamini-Hochberg (false discovery rate), applied to
        the usable tests of one row (one study's family); a failed test is not in the family and is
        never significant.

    Returns
    -------
    ndarray of int, shape (studies, pairs)
        +1 / -1 for a significant difference in that direction, 0 otherwise.
    """
    p_values = np.atleast_2d(np.asarray(p_values, float))
    usable = np.atleast_2d(np.asarray(usable, bool)) & np.isfinite(p_values)
    if correction == "none":
        return significance_decisions(p_values, estimates, usable, alpha)
    adjusted = np.ones_like(p_values)
    for row in range(p_values.shape[0]):
        ok = usable[row]
        adjusted[row, ok] = adjusted_p_values(p_values[row, ok], correction)
    return significance_decisions(adjusted, estimates, usable, alpha)


def pairwise_kappa(scores: np.ndarray, annotator: np.ndarray, document: np.ndarray) -> float:
    """Mean Cohen's kappa over annotator pairs, each on the items (document, system) both judged.

    With documents judged by every annotator (the shared documents of an overlap design) these are
    the shared documents' outputs; averaging the pairwise kappas is Light's kappa for more than two
    annotators. Unweighted (exact agreement of scores), as statsmodels' ``cohens_kappa``.

    Parameters
    ----------
    scores : ndarray of int, shape (rows, systems)
        One row per judged (annotator, document), one column per system.
    annotator, document : ndarray of int, shape (rows,)

    Returns
    -------
    float
        NaN when no annotator pair shares a document, or every shared score is one value.
    """
    from statsmodels.stats.inter_rater import cohens_kappa

    scores, annotator, document = np.asarray(scores), np.asarray(annotator), np.asarray(document)
    values = np.unique(scores)
    codes = np.searchsorted(values, scores)
    by_annotator = {a: dict(zip(document[annotator == a], codes[annotator == a])) for a in np.unique(annotator)}
    kappas = []
    names = sorted(by_annotator)
    for position, first in enumerate(names):
        for second in names[position + 1:]:
            shared = sorted(set(by_annotator[first]) & set(by_annotator[second]))
            if not shared:
                continue
            left = np.concatenate([by_annotator[first][d] for d in shared])
            right = np.concatenate([by_annotator[second][d] for d in shared])
            table = np.zeros((values.size, values.size))
            np.add.at(table, (left, right), 1)
            agreement_by_chance = table.sum(axis=1) @ table.sum(axis=0) / table.sum() ** 2
            if agreement_by_chance >= 1:  # one score value only: kappa is 0/0
                continue
            kappas.append(float(cohens_kappa(table, return_results=False)))
    return float(np.mean(kappas)) if kappas else float("nan")
