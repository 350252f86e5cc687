"""Bootstrap of the summary-level correlation between a metric and human scores (Deutsch, Dror and Roth 2021).

The summary-level correlation is the mean over documents of the correlation
across systems (:func:`simdesign.stats.metric_correlation.summary_level`).
Its resamples, as for the system level
(:func:`simdesign.stats.metric_correlation.bootstrap_system_level`):

* ``systems``: rows with replacement (the same resampled systems for every
  document), every document kept;
* ``inputs``: the per-document correlations of the observed systems, the
  documents drawn with replacement;
* ``both``: rows and documents, independently, in each resample.

A document whose correlation is undefined in a resample (all resampled
scores of one kind equal) is left out of that resample's mean, as
``summary_level`` leaves it out of the estimate.
"""
from __future__ import annotations

import numpy as np

from simdesign.stats.metric_correlation import SCHEMES, correlation


def bootstrap_summary_level(metric: np.ndarray, human: np.ndarray, scheme: str, rng: np.random.Generator,
                            resamples: int = 1000, methods=("pearson",)) -> dict:
    """Summary-level correlations of ``resamples`` bootstrap resamples, per method.

    Parameters
    ----------
    metric, human : ndarray, shape (n_systems, n_documents)
    scheme : {'systems', 'inputs', 'both'}
    rng : numpy.random.Generator
    resamples : int
    methods : sequence of str

    Returns
    -------
    dict
        method -> ndarray of shape (resamples,) (NaN where no document is defined).
    """
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {SCHEMES}; got {scheme!r}")
    n_systems, n_documents = metric.shape
    if scheme == "inputs":
        rows = np.broadcast_to(np.arange(n_systems), (1, n_systems))
    else:
        rows = rng.integers(0, n_systems, size=(resamples, n_systems))
    # (resamples or 1, documents, systems): each document's scores of the resampled systems
    metric_rows = np.swapaxes(metric[rows], 1, 2)
    human_rows = np.swapaxes(human[rows], 1, 2)
    if scheme == "systems":
        weights = np.ones((resamples, n_documents))
    else:
        picks = rng.integers(0, n_documents, size=(resamples, n_documents))
        weights = np.stack([np.bincount(pick, minlength=n_documents) for pick in picks]).astype(float)
    out = {}
    for method in methods:
        per_document = np.broadcast_to(correlation(metric_rows, human_rows, method), weights.shape)
        defined = np.isfinite(per_document)
        total = (weights * defined).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[method] = np.where(total > 0, (weights * np.nan_to_num(per_document)).sum(axis=1) / total, np.nan)
    return out
