"""An automatic metric generator and a population of systems (Deutsch, Dror and Roth 2021).

To study how well the correlation between an automatic metric and human
judgements is estimated, a study needs systems drawn from a population (so
that their number can vary) and metric scores whose relation to the human
scores is known.

Systems from a population
-------------------------
:func:`population_model` builds, from a base model (a preset), a model of
``n_systems`` systems whose fixed effects are drawn

* ``normal``: from N(mean, sd^2), by default the mean and the population SD
  (ddof 0) of the base model's effects (coherence: mean 0.136, SD 0.896 on
  the latent logit scale), or
* ``resample``: with replacement from the base model's effects.

Every drawn system gets the same random-effect structure: the covariance of
the per-system random parts w_s = z_s . v (document) and z_s . u
(annotator) is made exchangeable, its diagonal the mean of the base model's
per-system variances and its off-diagonal the mean of its covariances
between systems (or 0 if that mean is negative: only then is the matrix
valid for any number of systems), then written back in the model's (intercept, slopes)
parameterisation. The drawn effects are shifted by the first system's (and
the thresholds with them, which leaves every probability unchanged) so
that the reference system's effect is 0, as the model requires.

The metric
----------
The latent quality of the output of system s for document d is its
expected latent value over the annotator population (annotator effects
have mean 0, and a metric does not know who judged an output)::

    q_sd = beta_s + z_s . v_d

The metric score is::

    m_sd = a * q_sd + b_s + g_d + e_sd,   b_s ~ N(0, sigma_b^2), g_d ~ N(0, sigma_g^2), e_sd ~ N(0, sigma_e^2)

with ``a`` the metric's scale, b_s a system bias (a metric that favours
some systems regardless of quality), g_d a document effect (e.g. a metric
that scores some inputs higher; it is constant within a document, so it
changes neither correlation studied here) and e_sd noise. The parameters
are set from two targets, over the population of systems:

* ``system_correlation`` rho_sys: the correlation, across systems, between
  a system's metric mean and its fixed effect over infinitely many
  documents, a tau / sqrt(a^2 tau^2 + sigma_b^2) (tau^2 the variance of the
  population's effects); so sigma_b^2 = a^2 tau^2 (1 / rho_sys^2 - 1)
  (rho_sys = 1: no system bias);
* ``summary_correlation`` rho_sum: the correlation, within a document and
  across systems, between the metric and the latent quality,
  a sqrt(V) / sqrt(a^2 V + sigma_b^2 + sigma_e^2) with V = tau^2 + (d - o) the
  within-document variance of q (d, o: the exchangeable document variance
  and covariance); so sigma_e^2 = a^2 V / rho_sum^2 - a^2 V - sigma_b^2,
  which must not be negative (rho_sum cannot exceed the correlation the
  system bias alone leaves).

Two metrics (``second``) have their own targets; their system biases,
document effects and noises are correlated with correlation
``error_correlation`` (two metrics that share a method make the same
mistakes).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simdesign.core.designs import Design
from simdesign.core.errors import ConfigError
from simdesign.core.judgements import Judgements
from simdesign.core.checks import is_number
from simdesign.model.common import covariance_square_root, fixed_order_product

POPULATIONS = ("normal", "resample")


@dataclass(frozen=True)
class SystemPopulation:
    """Where systems come from: ``normal`` (mean, sd; None: the base model's) or ``resample`` its effects."""

    kind: str = "normal"
    mean: float | None = None
    sd: float | None = None

    def __post_init__(self):
        problems = []
        if self.kind not in POPULATIONS:
            problems.append(f"The 'population.kind' field must be one of {list(POPULATIONS)}; got {self.kind!r}")
        for key in ("mean", "sd"):
            value = getattr(self, key)
            if value is not None and (not is_number(value)
                                      or not np.isfinite(value) or (key == "sd" and value <= 0)):
                problems.append(f"The 'population.{key}' field must be a {'positive ' if key == 'sd' else ''}"
                                f"number or left out (the base model's); got {value!r}")
        if problems:
            raise ConfigError(problems)

    def moments(self, base_effects: np.ndarray) -> tuple[float, float]:
        """Mean and variance of a drawn system's effect."""
        if self.kind == "resample":
            return float(base_effects.mean()), float(base_effects.var())
        mean = float(base_effects.mean()) if self.mean is None else float(self.mean)
        sd = float(base_effects.std()) if self.sd is None else float(self.sd)
        return mean, sd ** 2

    def draw(self, base_effects: np.ndarray, n_systems: int, rng: np.random.Generator) -> np.ndarray:
        if self.kind == "resample":
            return rng.choice(base_effects, size=n_systems, replace=True)
        mean, variance = self.moments(base_effects)
        return rng.normal(mean, np.sqrt(variance), size=n_systems)


def _design_rows(n_systems: int) -> np.ndarray:
    rows = np.eye(n_systems)
    rows[:, 0] = 1.0
    return rows


def exchangeable_moments(cov: np.ndarray) -> tuple[float, float]:
    """(mean variance, mean covariance between systems, at least 0) of the per-system random parts z_s . v.

    An exchangeable covariance of n systems is positive semi-definite for every n only if the common
    covariance is not negative, so a negative mean (coherence's document parts: -0.03) becomes 0.
    """
    rows = _design_rows(cov.shape[0])
    part = fixed_order_product(fixed_order_product(rows, cov), rows.T)
    off_diagonal = part[~np.eye(part.shape[0], dtype=bool)]
    return float(np.diag(part).mean()), max(float(off_diagonal.mean()), 0.0)


def exchangeable_cov(cov: np.ndarray, n_systems: int) -> np.ndarray:
    """The (intercept, slopes) covariance for ``n_systems`` systems with exchangeable random parts."""
    variance, covariance = exchangeable_moments(cov)
    part = np.full((n_systems, n_systems), covariance) + np.eye(n_systems) * (variance - covariance)
    # The design rows' inverse in closed form (row s > 0 of it is e_s - e_0), and products in a fixed
    # order: the model's covariance is then the same to the last bit on every BLAS kernel.
    inverse = np.eye(n_systems)
    inverse[1:, 0] = -1.0
    result = fixed_order_product(fixed_order_product(inverse, part), inverse.T)
    return (result + result.T) / 2


def population_model(base, n_systems: int, effects: np.ndarray):
    """The base model with ``n_systems`` systems of the given (drawn) effects (module docstring)."""
    from simdesign.model import OrdinalMixedModel  # the package __init__ defines the model

    effects = np.asarray(effects, float)
    return OrdinalMixedModel(
        name=f"{base.name}-population", scale=base.scale, systems=tuple(f"system{i}" for i in range(n_systems)),
        thresholds=base.thresholds - effects[0], effects=effects - effects[0],
        annotator_cov=exchangeable_cov(base.annotator_cov, n_systems),
        document_cov=exchangeable_cov(base.sampled_document_cov, n_systems),
        citation=base.citation, provenance=f"systems drawn from a population around {base.name}")


def sample_with_quality(model, design: Design, rng: np.random.Generator) -> tuple[Judgements, np.ndarray]:
    """``model.sample(design, rng)`` and the latent quality q (n_documents, n_systems) of every output.

    The model hands out the document random parts it drew
    (:meth:`~simdesign.model.OrdinalMixedModel.sample_with_document_part`), so there is one
    copy of the generator's draw order.
    """
    judgements, document_part = model.sample_with_document_part(design, rng)
    return judgements, model.effects + document_part


@dataclass(frozen=True)
class MetricSpec:
    """Targets of one metric (module docstring): correlations over the system population, scale, document SD."""

    summary_correlation: float = 0.5
    system_correlation: float = 1.0
    scale: float = 1.0
    document_sd: float = 1.0

    def __post_init__(self):
        problems = []
        for key in ("summary_correlation", "system_correlation"):
            value = getattr(self, key)
            if not is_number(value) or not 0 < value <= 1:
                problems.append(f"The 'metric.{key}' field must be in (0, 1]; got {value!r}")
        for key in ("scale", "document_sd"):
            value = getattr(self, key)
            if not is_number(value) or not value >= 0 or value == np.inf:
                problems.append(f"The 'metric.{key}' field must be a non-negative number; got {value!r}")
        if not problems and self.scale == 0:
            problems.append("The 'metric.scale' field must be positive (0 gives a metric unrelated to quality)")
        if problems:
            raise ConfigError(problems)

    def noise_sds(self, effect_variance: float, quality_variance: float) -> tuple[float, float]:
        """(sigma_b, sigma_e) reaching the targets (module docstring).

        Raises
        ------
        ConfigError
            When the summary-level target is above what the system bias leaves.
        """
        a2 = self.scale ** 2
        bias_variance = a2 * effect_variance * (1 / self.system_correlation ** 2 - 1)
        noise_variance = a2 * quality_variance / self.summary_correlation ** 2 - a2 * quality_variance - bias_variance
        if noise_variance < -1e-12:
            ceiling = np.sqrt(a2 * quality_variance / (a2 * quality_variance + bias_variance))
            raise ConfigError(f"The 'metric.summary_correlation' field ({self.summary_correlation}) is above "
                              f"{ceiling:.3f}, the most the system bias of system_correlation "
                              f"{self.system_correlation} leaves; lower it or raise system_correlation")
        return float(np.sqrt(bias_variance)), float(np.sqrt(max(noise_variance, 0.0)))


@dataclass(frozen=True)
class MetricGenerator:
    """Metric scores for the outputs of a population model (module docstring).

    Parameters
    ----------
    metrics : tuple of MetricSpec
        One or two metrics.
    effect_variance : float
        tau^2, the variance of the population's system effects.
    quality_variance : float
        V, the within-document variance of the latent quality across systems.
    error_correlation : float
        Correlation of the two metrics' system biases, document effects and noises.
    """

    metrics: tuple
    effect_variance: float
    quality_variance: float
    error_correlation: float = 0.0

    @classmethod
    def for_population(cls, base, population: SystemPopulation, metrics, error_correlation: float = 0.0):
        _, effect_variance = population.moments(np.asarray(base.effects, float))
        variance, covariance = exchangeable_moments(base.sampled_document_cov)
        if not -1 <= error_correlation <= 1:
            raise ConfigError(f"The 'error_correlation' field must be in [-1, 1]; got {error_correlation!r}")
        generator = cls(tuple(metrics), effect_variance, effect_variance + variance - covariance, error_correlation)
        for spec in generator.metrics:
            spec.noise_sds(effect_variance, generator.quality_variance)  # raises on impossible targets
        return generator

    def scores(self, quality: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Metric scores, shape (n_metrics, n_systems, n_documents), from quality (n_documents, n_systems)."""
        n_documents, n_systems = quality.shape
        k = len(self.metrics)
        # roots and products in plain arithmetic: the same draws on every BLAS kernel (model/common.py)
        mixing = covariance_square_root(np.array([[1.0, self.error_correlation], [self.error_correlation, 1.0]]),
                                        "error_correlation")[:k, :k]
        bias = fixed_order_product(mixing, rng.standard_normal((k, n_systems)))
        document = fixed_order_product(mixing, rng.standard_normal((k, n_documents)))
        noise = fixed_order_product(mixing, rng.standard_normal((k, n_systems * n_documents)))
        noise = noise.reshape(k, n_systems, n_documents)
        out = np.empty((k, n_systems, n_documents))
        for index, spec in enumerate(self.metrics):
            bias_sd, noise_sd = spec.noise_sds(self.effect_variance, self.quality_variance)
            out[index] = (spec.scale * quality.T + bias_sd * bias[index][:, None]
                          + spec.document_sd * document[index][None, :] + noise_sd * noise[index])
        return out


def human_scores(judgements: Judgements) -> np.ndarray:
    """Mean score of every output over its judgements, shape (n_systems, n_documents)."""
    ids = judgements.document
    n_documents = int(ids.max()) + 1
    counts = np.bincount(ids, minlength=n_documents).astype(float)
    sums = np.stack([np.bincount(ids, weights=judgements.scores[:, s], minlength=n_documents)
                     for s in range(judgements.n_systems)])
    return sums / counts[None, :]
