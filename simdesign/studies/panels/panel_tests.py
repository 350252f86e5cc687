"""Significance tests on aggregated crowd judgements (panel studies, :mod:`simdesign.studies.panels.panel_study`).

Iskender et al. aggregate crowd ratings per output "before testing or
correlating". A panel-study config that lists ``tests`` also asks, for every
aggregation method and every k in ``test_k`` (default: all k): do the
aggregates of k crowd workers per output tell the systems apart?

Per trial, each of the ``subsamples`` subsamples of k workers per document
(the same subsamples the correlations use) gives one aggregated score per
output, i.e. a study with one score per (document, system). Every pair of
systems is then tested over documents by a registered paired test:

* ``ttest_doc``: the paired t-test over documents (the registry's ``ttest``
  run on the aggregated study written as one row per document, so its
  single-unit differences are the per-document differences of the
  aggregates: the same function, p-values and failure rule as ``ttest_doc``
  on raw judgements, whose document means would be rounded here);
* ``art_doc``: the paired randomisation test the same way (registry ``art``,
  1000 sign flips or all 2^n, from a stream keyed by test, method and k);
* ``wilcoxon_doc``: scipy's signed-rank test through
  :func:`simdesign.significance.classical.wilcoxon_pvalues`, the function behind
  the registry's ``wilcoxon_doc``.

A trial's value is the share of its (subsample, pair) tests that reject at
``alpha``: ``type1`` over all pairs when the effect is zero, else ``power``
(rejections in the direction of beta_i - beta_j, over pairs whose effects
differ) and ``type_s`` (rejections in the wrong direction). A failed test
(undefined statistic) is a non-rejection and is counted in ``n_failed``.
The trial is the unit: rate = mean of the per-trial shares, MCSE = sd
(ddof 1) / sqrt(trials), Wilson interval at the effective size
(:func:`simdesign.studies.rates.summary.wilson_interval`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from simdesign.significance import ANALYSES, run_analysis, system_pairs
from simdesign.significance.base import FAILURES
from simdesign.significance.classical import pair_contrast_matrix, wilcoxon_pvalues
from simdesign.core.judgements import Judgements
from simdesign.studies.rates.summary import POWER, TYPE1, TYPE_S, wilson_interval

PANEL_TESTS = ("ttest_doc", "art_doc", "wilcoxon_doc")
# the registry entry that, on one row per document, is the per-document test
REGISTRY_NAMES = {"ttest_doc": "ttest", "art_doc": "art"}
TRIAL_COLUMNS = ("setting", "trial", "method", "test", "k", "estimand", "value", "n_tests", "n_failed")
SUMMARY_COLUMNS = ("setting", "method", "test", "k", "estimand", "rate", "ci_low", "ci_high", "mcse", "trials",
                   "n_tests", "n_failed", "alpha")


def aggregated_judgements(aggregates: np.ndarray, systems) -> Judgements:
    """An aggregated study (n_documents, S) as a judgements table with one row (pseudo-annotator) per document."""
    ids = np.arange(aggregates.shape[0], dtype=np.int64)
    return Judgements(scores=np.asarray(aggregates, float), annotator=ids, document=ids,
                      block=np.full(ids.size, -1, dtype=np.int64), systems=tuple(systems))


def pairwise_test(test: str, aggregates: np.ndarray, systems, rng: np.random.Generator):
    """(estimate i - j, p-value, test succeeded) per system pair for one aggregated study (module docstring)."""
    if test == "wilcoxon_doc":
        differences = aggregates @ pair_contrast_matrix(aggregates.shape[1])
        p_value, defined = wilcoxon_pvalues(differences)
        return differences.mean(axis=0), p_value, defined
    result = run_analysis(ANALYSES[REGISTRY_NAMES[test]], aggregated_judgements(aggregates, systems), rng, {})
    succeeded = ~np.isin(result.status.astype(str), list(FAILURES))
    return result.estimate, result.p_value, succeeded


def significance_rows(test: str, aggregates: np.ndarray, true_diff: np.ndarray, alpha: float, systems,
                      rng: np.random.Generator) -> list[tuple[str, float, int, int]]:
    """Per-trial (estimand, share, n_tests, n_failed) of one test over subsamples.

    Parameters
    ----------
    test : str
        One of :data:`PANEL_TESTS`.
    aggregates : ndarray, shape (subsamples, n_documents, S)
    true_diff : ndarray, shape (n_pairs,)
        beta_i - beta_j per pair (i < j).
    alpha : float
    systems : sequence of str
    rng : numpy.random.Generator
    """
    estimates, rejected, failed = [], [], 0
    for study in aggregates:
        estimate, p_value, succeeded = pairwise_test(test, study, systems, rng)
        estimates.append(estimate)
        rejected.append(succeeded & (np.nan_to_num(p_value, nan=1.0) < alpha))
        failed += int((~succeeded).sum())
    estimates, rejected = np.array(estimates), np.array(rejected)
    n_tests = rejected.size
    if not np.any(true_diff != 0):
        return [(TYPE1.name, float(rejected.mean()), n_tests, failed)]
    relevant = true_diff != 0
    direction = np.sign(estimates[:, relevant]) == np.sign(true_diff[relevant])
    hits = rejected[:, relevant]
    n_relevant = hits.size
    return [(POWER.name, float((hits & direction).mean()), n_relevant, failed),
            (TYPE_S.name, float((hits & ~direction).mean()), n_relevant, failed)]


def true_differences(model, effect) -> np.ndarray:
    """beta_i - beta_j for every pair (i < j) under the effect setting."""
    beta = model.effects_for(effect)
    return np.array([beta[i] - beta[j] for i, j in system_pairs(model.n_systems)])


def summarise_significance(rows: pd.DataFrame, alpha: float) -> pd.DataFrame:
    """Rates per (setting, method, test, k, estimand) over trials (module docstring); columns SUMMARY_COLUMNS."""
    out = []
    for (setting, method, test, k, estimand), group in rows.groupby(
            ["setting", "method", "test", "k", "estimand"], sort=False):
        values = group["value"].to_numpy(float)
        trials = values.size
        rate = float(values.mean())
        mcse = float(values.std(ddof=1) / np.sqrt(trials)) if trials > 1 else np.nan
        n_tests = int(group["n_tests"].sum())
        low, high = wilson_interval(rate, mcse, trials, n_tests)
        out.append({"setting": setting, "method": method, "test": test, "k": int(k), "estimand": estimand,
                    "rate": rate, "ci_low": low, "ci_high": high, "mcse": mcse, "trials": trials,
                    "n_tests": n_tests, "n_failed": int(group["n_failed"].sum()), "alpha": alpha})
    return pd.DataFrame(out, columns=list(SUMMARY_COLUMNS))
