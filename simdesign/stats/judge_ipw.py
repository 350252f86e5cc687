"""Inverse-probability-weighted PPI for a judge-plus-human study whose documents went to humans with known,
unequal probabilities (e.g. where the judge is least certain), with a two-way cluster-bootstrap interval.

Every output has the judge's score; document ``d`` was sent to humans (who then judge every system's output
of it) independently with a known probability ``p_d > 0`` (Poisson sampling). For one system, with ``J_d``
the judge's score of its output and ``H_d`` the mean human score of it (on sent documents), each document
contributes::

    psi_d = lam * J_d + (sent_d / p_d) * (H_d - lam * J_d)

whose mean over the documents is unbiased for the system's mean human score over the documents' population
(Horvitz & Thompson, 1952; Zrnic & Candes, 2024, "Active statistical inference"); a pair ``a - b`` uses the
differences ``J_a - J_b`` and ``H_a - H_b`` (paired by document). ``lam = 1`` is PPI, and PPI++'s weight minimises
``var(psi)`` (clipped to [0, 1]) as :func:`simdesign.stats.ppi.ipw_ppi_mean` does: on independent scores the two
agree (tests/test_judge_study.py).

The Horvitz-Thompson mean divides the weighted rectifier by the number of documents D; when the judge's scale or
level differs from the humans' (a 1-10 judge of 1-7 scores), ``H - lam * J`` has a large mean and the random
weights ``sent / p`` turn it into variance. The Hajek form (``hajek_ppi``, ``hajek_ppi++``) divides by the weights'
sum instead::

    estimate = lam * mean(J) + sum_d f_d (H_d - lam J_d) / sum_d f_d        f_d = sent_d / p_d

consistent (not exactly unbiased) and far less variable there; its ``independent`` SE is from its influence
values ``psi_d = lam J_d + r + (f_d / mean f) (H_d - lam J_d - r)`` (r the weighted rectifier), and PPI++'s
weight minimises their variance (clipped to [0, 1]).

Intervals (normal, ``estimate -/+ z se``):

* ``independent``: ``se = std(psi) / sqrt(D)`` (documents independent, annotators ignored: each human mean is
  taken as a fixed value), :func:`~simdesign.stats.ppi.ipw_ppi_mean`'s;
* ``clustered``: the two-way pigeonhole bootstrap of :func:`simdesign.stats.ppi.ppi_study`: documents and
  annotators resampled independently, each human score weighted by its annotator's multiplicity (``H_d``
  becomes ``sum_a w_a h_ad / n_d`` with ``n_d`` the output's human scores, so it stays defined when every
  annotator of a document draws weight 0) and each document's ``psi_d`` by its multiplicity; lam held at its
  value on the data.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from simdesign.stats.ppi import normal_p_value, z_quantile

IPW_ESTIMATORS = ("ipw_ppi", "ipw_ppi++", "hajek_ppi", "hajek_ppi++")


def _ipw_lambda(judge: np.ndarray, human: np.ndarray, sent: np.ndarray, probability: np.ndarray) -> float:
    """The weight minimising var(psi) over the documents, clipped to [0, 1] (0 for a constant judge part)."""
    weight = sent / probability
    weighted_human = weight * human
    judge_part = judge * (1 - weight)
    spread = judge_part.var()
    if not spread > 0:
        return 0.0
    covariance = np.mean((weighted_human - weighted_human.mean()) * (judge_part - judge_part.mean()))
    return float(np.clip(-covariance / spread, 0.0, 1.0))


def _human_means(totals: np.ndarray, counts: np.ndarray, annotator_weight: np.ndarray) -> np.ndarray:
    """Annotator-weighted human means per document, shape (resamples, D): sum_a w_a h_ad / n_d (0 where none)."""
    return (annotator_weight @ totals) / np.maximum(counts, 1.0)[None, :]


def ipw_study(judge: np.ndarray, human_sum: np.ndarray, count: np.ndarray, probability: np.ndarray, systems,
              rng: np.random.Generator, resamples: int = 500, level: float = 0.95) -> pd.DataFrame:
    """IPW PPI and PPI++ for every system and pair (module docstring), with clustered and independent intervals.

    Parameters
    ----------
    judge : ndarray, shape (S, D)
        The judge's score of every output.
    human_sum, count : ndarray, shape (S, A, D)
        The sum and number of human scores by system, annotator and document (0 where none).
    probability : ndarray, shape (D,)
        Each document's probability of having been sent to humans, in (0, 1].
    systems : sequence of str
    rng : numpy.random.Generator
        The bootstrap's random numbers.
    resamples : int
    level : float

    Returns
    -------
    pandas.DataFrame
        Columns as :func:`simdesign.stats.ppi.ppi_study`'s: target, system_a, system_b, estimator ('ipw_ppi',
        'ipw_ppi++'), interval, estimate, standard_error, low, high, p_value (pairs), lam, n_human (documents
        sent), n_judge_only.
    """
    n_systems, n_annotators, n_documents = human_sum.shape
    per_document = count.sum(axis=1)  # (S, D)
    sent = (per_document > 0).all(axis=0)
    weights_docs = rng.multinomial(n_documents, np.full(n_documents, 1.0 / n_documents), size=resamples)
    weights_annotators = rng.multinomial(n_annotators, np.full(n_annotators, 1.0 / n_annotators), size=resamples)
    point = [_human_means(human_sum[s], per_document[s], np.ones((1, n_annotators)))[0] for s in range(n_systems)]
    annotator_weight = weights_annotators.astype(float)
    boot = [_human_means(human_sum[s], per_document[s], annotator_weight) for s in range(n_systems)]
    keys = list(range(n_systems)) + [(a, b) for a in range(n_systems) for b in range(a + 1, n_systems)]
    z, rows = z_quantile(level), []
    for key in keys:
        if isinstance(key, tuple):
            judged, point_human, boot_human = (judge[key[0]] - judge[key[1]], point[key[0]] - point[key[1]],
                                               boot[key[0]] - boot[key[1]])
        else:
            judged, point_human, boot_human = judge[key], point[key], boot[key]
        factor = sent / probability
        lams = {"ipw_ppi": 1.0, "ipw_ppi++": _ipw_lambda(judged, point_human, sent, probability),
                "hajek_ppi": 1.0, "hajek_ppi++": _hajek_lambda(judged, point_human, factor)}
        rows += _ipw_rows(key, systems, judged, point_human, boot_human, sent, probability, weights_docs, lams, z,
                          level)
    return pd.DataFrame(rows)


def _hajek_lambda(judge: np.ndarray, human: np.ndarray, factor: np.ndarray) -> float:
    """The weight minimising the variance of the Hajek form's influence values, clipped to [0, 1]."""
    if not factor.sum() > 0:
        return 0.0
    scaled = factor / factor.mean()
    a = scaled * (human - np.sum(factor * human) / factor.sum())
    b = (1 - scaled) * (judge - np.sum(factor * judge) / factor.sum())
    spread = b.var()
    if not spread > 0:
        return 0.0
    return float(np.clip(-np.mean((a - a.mean()) * (b - b.mean())) / spread, 0.0, 1.0))


def _values(form: str, lam: float, judged, point_human, boot_human, factor, weights_docs):
    """(estimate, influence values psi (D,), bootstrap draws (R,)) of the Horvitz-Thompson or Hajek form."""
    if form == "ht":
        psi = lam * judged + factor * (point_human - lam * judged)
        boot = lam * judged[None, :] + factor[None, :] * (boot_human - lam * judged[None, :])
        return float(psi.mean()), psi, (weights_docs * boot).sum(axis=1) / weights_docs.sum(axis=1)
    total = factor.sum()
    rectifier = np.sum(factor * (point_human - lam * judged)) / total if total > 0 else np.nan
    estimate = float(lam * judged.mean() + rectifier)
    psi = lam * judged + rectifier + factor / factor.mean() * (point_human - lam * judged - rectifier)
    weighted = weights_docs * factor[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        draws = (lam * (weights_docs @ judged) / weights_docs.sum(axis=1)
                 + (weighted * (boot_human - lam * judged[None, :])).sum(axis=1) / weighted.sum(axis=1))
    return estimate, psi, draws[np.isfinite(draws)]


def _ipw_rows(key, systems, judged, point_human, boot_human, sent, probability, weights_docs, lams, z, level):
    pair = isinstance(key, tuple)
    names = (systems[key[0]], systems[key[1]]) if pair else (systems[key], None)
    target = f"{names[0]} - {names[1]}" if pair else names[0]
    factor = sent / probability
    rows = []
    for estimator, lam in lams.items():
        form = "hajek" if estimator.startswith("hajek") else "ht"
        estimate, psi, draws = _values(form, lam, judged, point_human, boot_human, factor, weights_docs)
        errors = {"clustered": float(draws.std(ddof=1)) if draws.size > 1 else np.nan,
                  "independent": float(psi.std() / np.sqrt(psi.size))}
        for interval, error in errors.items():
            rows.append({"target": target, "system_a": names[0], "system_b": names[1], "estimator": estimator,
                         "interval": interval, "estimate": estimate, "standard_error": error,
                         "low": estimate - z * error, "high": estimate + z * error,
                         "p_value": normal_p_value(estimate, error) if pair else np.nan, "lam": lam,
                         "n_human": int(sent.sum()), "n_judge_only": int((~sent).sum()), "level": level})
    return rows


def few_clusters_rows(rows: pd.DataFrame, clusters: int, level: float = 0.95) -> pd.DataFrame:
    """The clustered rows again as ``clustered_t``: the bootstrap SE times ``sqrt(G / (G - 1))`` and a t quantile
    with ``G - 1`` degrees of freedom, G the annotators who scored (the fewer clusters of the two ways).

    A cluster bootstrap's variance of a mean over G clusters is (G - 1) / G times the unbiased one, and a normal
    quantile ignores that G clusters give an SE with about G - 1 degrees of freedom: both matter at 10 annotators
    or fewer (Cameron, Gelbach & Miller 2008, 2011, use the same two corrections for cluster-robust SEs). The
    judge-only rows, whose clusters are the documents, are left out. With G < 2 the rows are NaN.
    """
    from scipy import stats

    chosen = rows[(rows["interval"] == "clustered") & (rows["estimator"] != "judge_only")].copy()
    chosen["interval"] = "clustered_t"
    if clusters < 2:
        chosen[["standard_error", "low", "high", "p_value"]] = np.nan
        return chosen
    error = chosen["standard_error"].to_numpy(float) * np.sqrt(clusters / (clusters - 1))
    quantile = float(stats.t.ppf(1 - (1 - level) / 2, clusters - 1))
    estimate = chosen["estimate"].to_numpy(float)
    chosen["standard_error"], chosen["low"], chosen["high"] = error, estimate - quantile * error, \
        estimate + quantile * error
    with np.errstate(divide="ignore", invalid="ignore"):
        p_value = 2 * stats.t.sf(np.abs(estimate) / error, clusters - 1)
    chosen["p_value"] = np.where(chosen["p_value"].notna(), p_value, np.nan)
    return chosen
