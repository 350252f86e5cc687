"""The population value of the summary-level correlation of a metric with human scores (Pearson).

The summary-level correlation (:func:`simdesign.stats.metric_correlation.summary_level`)
is the mean over documents of the correlation, across systems, of the
metric with the human scores (each output's mean of the A judgements of the
document's own annotators). Its population value is the mean over documents
of that correlation over infinitely many systems of the population.

Within a document, across systems, the metric is m = a q + b_s + e (+ a
document constant), and b_s and e are independent of the judgements, so
corr(m, h) = rho_sum corr(q, h): the generator's summary-level target
rho_sum (the within-document correlation of the metric with the latent
quality q) times the within-document correlation of q with the human
score, which is not 1: the judgements add annotator effects, logistic noise
and the coarse scale. That second factor has no closed form, but is a low-
dimensional integral over the population model
(:func:`simdesign.model.metric.population_model`: exchangeable random parts,
document parts with variance d and covariance o between systems, annotator
parts dA and oA):

* a document shifts every system's latent value by c ~ N(0, o) and its
  annotator a by k_a ~ N(0, oA): with z_a = c + k_a, z ~ N(0, o J + oA I)
  (A dimensions), Gauss-Hermite product nodes;
* across systems, x = beta_s - mean + r_sd (r ~ N(0, d - o)) is the centred
  quality, over Gauss-Hermite nodes (a normal population) or the preset's
  effects times nodes for r (a resampled one);
* annotator a's score of a system with centred quality x has conditional mean
  F(mean + z_a + x) and second moment G(...), F and G integrating the
  system-specific annotator part t ~ N(0, dA - oA) and the logistic error
  (tabulated on a fine grid and interpolated);
* then cov(q, h) = mean_a cov(x, F_a), var(h) = (sum_a var(Y_a) + sum_{a != b}
  cov(F_a, F_b)) / A^2 (annotators share only the system), and the per-document
  correlation cov(q, h) / sqrt(var(x) var(h)) is averaged over z.

tests/test_metric_summary_target.py checks the value against simulated
documents with many systems. Only Pearson: the rank correlations of m and h
have no such reduction (h is discrete and m is not normal given q).
"""
from __future__ import annotations

import itertools

import numpy as np
from scipy import special

from simdesign.model.metric import exchangeable_moments
from simdesign.model.common import covariance_square_root

GRID = np.linspace(-30.0, 30.0, 6001)


def _score_moments(model, t_variance: float, nodes: int = 40) -> tuple[np.ndarray, np.ndarray]:
    """E[Y | eta] and E[Y^2 | eta] on GRID, the system-specific annotator part t integrated out."""
    x, w = np.polynomial.hermite_e.hermegauss(nodes)
    w = w / w.sum()
    eta = GRID[:, None] + np.sqrt(max(t_variance, 0.0)) * x[None, :]
    cumulative = special.expit(np.asarray(model.thresholds, float)[None, :, None] - eta[:, None, :])
    cumulative = np.concatenate([np.zeros_like(cumulative[:, :1]), cumulative, np.ones_like(cumulative[:, :1])], 1)
    probabilities = np.diff(cumulative, axis=1) @ w  # (grid, categories)
    scale = np.asarray(model.scale, float)
    return probabilities @ scale, probabilities @ scale ** 2


def _quality_nodes(model, population, nodes: int) -> tuple[np.ndarray, np.ndarray, float]:
    """Nodes and weights of the centred within-document quality x, and the population mean effect."""
    base = np.asarray(model.effects, float)
    variance, covariance = exchangeable_moments(model.sampled_document_cov)
    r, r_weights = np.polynomial.hermite_e.hermegauss(nodes)
    r_weights = r_weights / r_weights.sum()
    mean, effect_variance = population.moments(base)
    if population.kind == "resample":
        x = ((base - mean)[:, None] + np.sqrt(variance - covariance) * r[None, :]).ravel()
        weights = np.outer(np.full(base.size, 1.0 / base.size), r_weights).ravel()
    else:
        x = np.sqrt(effect_variance + variance - covariance) * r
        weights = r_weights
    return x, weights, mean


def _shift_nodes(model, annotators: int, nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Hermite product nodes (n, A) and weights of z ~ N(0, o J + oA I)."""
    _, document_covariance = exchangeable_moments(model.sampled_document_cov)
    _, annotator_covariance = exchangeable_moments(model.annotator_cov)
    cov = document_covariance * np.ones((annotators, annotators)) + annotator_covariance * np.eye(annotators)
    root = covariance_square_root(cov, "document and annotator shifts")  # not LAPACK's basis: see model/common.py
    x, w = np.polynomial.hermite_e.hermegauss(nodes)
    w = w / w.sum()
    grid = np.array(list(itertools.product(x, repeat=annotators)))
    weights = np.prod(np.array(list(itertools.product(w, repeat=annotators))), axis=1)
    return grid @ root.T, weights


def quality_human_correlation(model, population, annotators: int, quality_nodes: int = 60,
                              shift_nodes: int = 8) -> float:
    """E over documents of corr(q, h) within a document, over the population's systems (module docstring).

    Parameters
    ----------
    model : OrdinalMixedModel
        The base model (a preset); its systems only give the population.
    population : SystemPopulation
    annotators : int
        A, the annotators of each document.
    quality_nodes, shift_nodes : int
        Gauss-Hermite nodes for the within-document quality and per dimension of the document and
        annotator shifts.
    """
    annotator_variance, annotator_covariance = exchangeable_moments(model.annotator_cov)
    first, second = _score_moments(model, annotator_variance - annotator_covariance)
    x, x_weights, mean = _quality_nodes(model, population, quality_nodes)
    shifts, shift_weights = _shift_nodes(model, annotators, shift_nodes)
    eta = mean + shifts[:, :, None] + x[None, None, :]  # (shift nodes, A, quality nodes)
    f, g = np.interp(eta, GRID, first), np.interp(eta, GRID, second)
    f_mean = f @ x_weights  # (n, A)
    covariance_qh = ((f * x[None, None, :]) @ x_weights).mean(axis=1)
    own = (g @ x_weights - f_mean ** 2).sum(axis=1)
    cross = np.einsum("nax,nbx,x->nab", f, f, x_weights) - f_mean[:, :, None] * f_mean[:, None, :]
    cross = cross.sum(axis=(1, 2)) - np.einsum("naa->n", cross)
    variance_h = (own + cross) / annotators ** 2
    variance_q = x_weights @ x ** 2
    return float(shift_weights @ (covariance_qh / np.sqrt(variance_q * variance_h)))


def summary_level_target(config) -> float:
    """The population summary-level Pearson correlation of the first metric with the human scores."""
    return config.metrics[0].summary_correlation * quality_human_correlation(
        config.model, config.population, config.annotators_per_document)
