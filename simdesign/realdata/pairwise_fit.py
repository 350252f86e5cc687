"""Fit a Likert model's pairwise parameters (noise, tie band, position bias) to a pairwise pilot.

The pairwise generator (:mod:`simdesign.methods.pairwise`) turns the Likert model's latent values into verdicts:
for the pair (i, j) shown to annotator ``a`` on document ``d``, with i shown first (s = +1) or second (s = -1),

    delta = eta_i - eta_j + position_bias * s + noise * L,   L ~ Logistic(0, 1),

i is preferred when delta > tie_band, j when delta < -tie_band, a tie in between. Everything but ``noise``,
``tie_band`` and ``position_bias`` comes from a fitted Likert model (its fixed effects and random-effect
covariances), as ``rank_noise`` is fitted for rankings (:mod:`simdesign.realdata.rank_noise`).

Method: **maximum composite marginal likelihood** (exact up to quadrature, nothing simulated). Integrating
over the random effects, eta_i - eta_j = beta_i - beta_j + sigma_ij x with x ~ N(0, 1) and
``sigma_ij^2 = (z_i - z_j)'(Sigma_annotator + Sigma_document)(z_i - z_j)`` (:func:`simdesign.realdata.rank_noise.
pair_spread`), so one comparison's marginal probabilities are

    P(i preferred) = E_x[ expit((beta_i - beta_j + position_bias * s + sigma_ij x - tie_band) / noise) ]
    P(j preferred) = E_x[ expit((beta_j - beta_i - position_bias * s - sigma_ij x - tie_band) / noise) ]
    P(tie)         = 1 - the two,

computed on a trapezoid grid (:data:`GRID`). The composite log-likelihood sums the
log-probability of every comparison's verdict, so it depends on the data only through the counts of wins, losses
and ties per pair and order of presentation; it is maximised over (log noise, tie_band >= 0, position_bias) by
L-BFGS-B. Each term is a true marginal probability, so the estimate is consistent; comparisons of one annotator
or document are dependent, so the curvature is not a valid standard error: the standard errors come from a
**parametric bootstrap**, studies simulated from the fitted model with the data's own design (the same
annotators, documents, pairs and orders of presentation) and refitted. They are conditional on the Likert model
(its uncertainty is not propagated).

What identifies what: ``tie_band`` mainly the share of ties, ``noise`` how strongly the verdicts follow the
Likert model's differences (its ``beta`` and ``sigma`` are on the latent scale where the Likert noise has scale
1), ``position_bias`` the difference between the verdicts of the two orders. A table without ties puts
``tie_band`` on its bound 0 (said so).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import optimize, special

from simdesign.core.designs import Assignment
from simdesign.core.errors import ConfigError
from simdesign.core.seeds import bootstrap_rng
from simdesign.methods.pairwise import (PAIRWISE, Pairwise, output_points, pairwise_parameters, system_pair_indices,
                                        verdict_of)
from simdesign.realdata.check import ObservedDesign
from simdesign.tables.pairwise import comparisons_of, study_layout
from simdesign.realdata.rank_noise import pair_spread

PARAMETERS = ("noise", "tie_band", "position_bias")
BOUNDS = {"noise": (0.02, 20.0), "tie_band": (0.0, 20.0), "position_bias": (-10.0, 10.0)}
DEFAULT_BOOTSTRAP = 100
# Trapezoid grid over the standard-normal random part (as simdesign.realdata.rank_noise's, coarser): its spacing 0.02
# is a fifth of the integrand's width noise / sigma_ij down to noise / sigma_ij = 0.1, where the rule is exact to
# many digits (checked against a grid four times finer in tests/test_analyse_pairwise.py).
GRID = np.linspace(-8.0, 8.0, 801)
_WEIGHTS = np.exp(-0.5 * GRID ** 2)
_WEIGHTS = _WEIGHTS / np.trapezoid(_WEIGHTS, GRID)


def pair_counts(comparisons, n_systems: int) -> np.ndarray:
    """(n_pairs, 2, 3) counts: per pair (model order), order of presentation (1 = the pair's first system shown
    first) and verdict (the first system preferred, the second, a tie)."""
    pair, low_first = comparisons.pair_codes()
    outcome = comparisons.low_outcome()
    verdict = np.where(outcome == 1.0, 0, np.where(outcome == 0.0, 1, 2))
    n_pairs = n_systems * (n_systems - 1) // 2
    cells = (pair * 2 + low_first.astype(np.int64)) * 3 + verdict
    return np.bincount(cells, minlength=n_pairs * 6).reshape(n_pairs, 2, 3).astype(float)


def _quadrature(model, noise: float, tie_band: float, position_bias: float, pairs: np.ndarray,
                derivatives: bool = False):
    """(P, 2, 3) verdict probabilities of ``pairs`` and, with ``derivatives``, their (P, 2, 3, 3) derivatives in
    (log noise, tie_band, position_bias)."""
    difference, sigma = pair_spread(model)
    shown = np.array([-1.0, 1.0])  # order 0: the pair's first system shown second
    mean = difference[pairs, None] + position_bias * shown[None, :]  # (P, 2)
    latent = mean[:, :, None] + sigma[pairs, None, None] * GRID[None, None, :]
    z = np.stack([(latent - tie_band) / noise, (-latent - tie_band) / noise])  # first preferred, second preferred
    average = lambda values: np.trapezoid(values * _WEIGHTS, GRID, axis=-1)  # noqa: E731
    first, second = average(special.expit(z))
    probability = np.stack([first, second, 1.0 - first - second], axis=2)
    if not derivatives:
        return probability
    slope = special.expit(z) * special.expit(-z)
    sign = np.array([1.0, -1.0])[:, None, None, None]  # d z / d position_bias = +-s / noise
    parts = np.stack([average(-z * slope), average(-slope / noise),
                      average(sign * shown[None, None, :, None] * slope / noise)], axis=-1)  # (2, P, 2, 3)
    return probability, np.stack([parts[0], parts[1], -parts[0] - parts[1]], axis=2)


def verdict_probabilities(model, noise: float, tie_band: float, position_bias: float,
                          pairs: np.ndarray | None = None) -> np.ndarray:
    """(n_pairs, 2, 3) marginal probabilities of the verdicts (layout of :func:`pair_counts`) under the model's
    Likert part and these pairwise parameters; ``pairs`` limits the computation to those pairs (others 1/3)."""
    n_pairs = model.n_systems * (model.n_systems - 1) // 2
    pairs = np.arange(n_pairs) if pairs is None else pairs
    out = np.full((n_pairs, 2, 3), 1.0 / 3.0)
    out[pairs] = np.clip(_quadrature(model, noise, tie_band, position_bias, pairs), 1e-15, 1.0)
    return out


def _estimate(model, counts: np.ndarray) -> tuple[np.ndarray, float]:
    """(noise, tie_band, position_bias) maximising the composite likelihood of ``counts``, and its maximum."""
    used = np.flatnonzero(counts.sum(axis=(1, 2)) > 0)
    data = counts[used]
    total = data.sum()
    tie_share = min(max(data[..., 2].sum() / total, 1e-3), 0.95)

    def negative(theta):
        p, dp = _quadrature(model, float(np.exp(theta[0])), float(theta[1]), float(theta[2]), used, True)
        p = np.clip(p, 1e-15, 1.0)
        return (-float((data * np.log(p)).sum()) / total,
                -np.einsum("pov,povk->k", data / p, dp) / total)

    bounds = [tuple(np.log(BOUNDS["noise"])), BOUNDS["tie_band"], BOUNDS["position_bias"]]
    start = np.array([0.0, special.logit((1 + tie_share) / 2), 0.0])  # ties of equal outputs at the observed rate
    found = optimize.minimize(negative, start, jac=True, method="L-BFGS-B", bounds=bounds,
                              options={"ftol": 1e-13, "gtol": 1e-9, "maxiter": 500})
    estimate = np.array([np.exp(found.x[0]), found.x[1], found.x[2]])
    return estimate, -float(found.fun) * total


@dataclass(frozen=True)
class PairwiseFit:
    """The fitted pairwise parameters of a Likert model.

    Attributes
    ----------
    estimate : dict
        ``noise``, ``tie_band``, ``position_bias``.
    se : dict
        Parametric-bootstrap standard errors (NaN without a bootstrap).
    interval : dict
        Wald 95% intervals, estimate +- 1.96 SE.
    at_bound : tuple of str
        Parameters on their search range's end (:data:`BOUNDS`); ``tie_band`` at 0 means no ties were seen.
    composite_loglik : float
    pairs : pandas.DataFrame
        Per pair of systems compared: comparisons, observed and fitted shares of the first system preferred
        and of ties (model order).
    bootstrap : ndarray, shape (B, 3)
    n_comparisons : int
    """

    estimate: dict
    se: dict
    interval: dict
    at_bound: tuple
    composite_loglik: float
    pairs: pd.DataFrame
    bootstrap: np.ndarray
    n_comparisons: int

    def preferences(self) -> dict:
        """The model file's ``preferences`` values (floats)."""
        return {key: float(self.estimate[key]) for key in PARAMETERS}

    def describe(self) -> str:
        """One line for reports and model files."""
        parts = [f"{key} {self.estimate[key]:.3f} (SE {self.se[key]:.3f})" for key in PARAMETERS]
        text = (", ".join(parts) + f"; bootstrap SEs from {len(self.bootstrap)} replicates; "
                f"{self.n_comparisons} comparisons")
        return text + "".join(f"; {key} ON ITS BOUND" for key in self.at_bound)


def fit_pairwise(likert_model, frame: pd.DataFrame, bootstrap: int = DEFAULT_BOOTSTRAP, seed: int = 0) -> PairwiseFit:
    """Fit ``noise``, ``tie_band`` and ``position_bias`` to a pairwise table given a Likert model.

    Parameters
    ----------
    likert_model : OrdinalMixedModel
        Its effects and covariances are held fixed; the table's systems must be among its systems.
    frame : pandas.DataFrame
        A checked pairwise table (:func:`simdesign.tables.pairwise.read_pairwise_table` or
        ``orient_pairwise``; ``system_a`` is the output shown first).
    bootstrap : int
        Parametric-bootstrap replicates for the standard errors (0: none).
    seed : int
        Replicate b simulates from ``bootstrap_rng(seed, "pairwise_fit/bootstrap", b)``
        (:mod:`simdesign.core.seeds`).

    Returns
    -------
    PairwiseFit
    """
    systems = list(likert_model.systems)
    comparisons = comparisons_of(frame, systems, judges=True)
    counts = pair_counts(comparisons, len(systems))
    estimate, loglik = _estimate(likert_model, counts)
    fitted = dict(zip(PARAMETERS, estimate.tolist()))
    at_bound = tuple(key for key in PARAMETERS if key != "tie_band" and
                     (fitted[key] <= BOUNDS[key][0] * 1.01 or fitted[key] >= BOUNDS[key][1] * 0.99)) + \
        (("tie_band",) if fitted["tie_band"] <= 1e-6 else ())
    replicates = _bootstrap(likert_model, comparisons, fitted, bootstrap, seed)
    se = {key: float(np.std(replicates[:, k], ddof=1)) if len(replicates) > 1 else float("nan")
          for k, key in enumerate(PARAMETERS)}
    interval = {key: (fitted[key] - 1.96 * se[key], fitted[key] + 1.96 * se[key]) for key in PARAMETERS}
    return PairwiseFit(fitted, se, interval, at_bound, loglik, _pair_table(likert_model, counts, fitted),
                       replicates, comparisons.size)


def _pair_table(model, counts: np.ndarray, fitted: dict) -> pd.DataFrame:
    first, second = system_pair_indices(model.n_systems)
    probability = verdict_probabilities(model, **fitted)
    n = counts.sum(axis=(1, 2))
    used = n > 0
    systems = np.asarray(model.systems)
    expected = (probability * counts.sum(axis=2, keepdims=True)).sum(axis=1)  # over the orders shown
    with np.errstate(invalid="ignore", divide="ignore"):
        return pd.DataFrame({
            "system": systems[first], "other": systems[second], "comparisons": n.astype(np.int64),
            "observed_first": counts[..., 0].sum(axis=1) / n, "fitted_first": expected[:, 0] / n,
            "observed_ties": counts[..., 2].sum(axis=1) / n, "fitted_ties": expected[:, 2] / n})[used].reset_index(
                drop=True)


def _bootstrap(model, comparisons, fitted: dict, replicates: int, seed: int) -> np.ndarray:
    """Refits to studies simulated at the estimate with the data's own design."""
    if replicates <= 0:
        return np.empty((0, len(PARAMETERS)))
    joint = with_preferences(model, fitted)
    simulate = observed_simulator(joint, comparisons)
    values = np.empty((replicates, len(PARAMETERS)))
    for b in range(replicates):
        outcome = simulate(bootstrap_rng(seed, "pairwise_fit/bootstrap", b))
        counts = pair_counts(dataclasses.replace(comparisons, outcome=outcome), model.n_systems)
        values[b] = _estimate(model, counts)[0]
    return values


def with_preferences(model, values: dict, name: str | None = None, provenance: str | None = None):
    """The model with these pairwise parameters (its own other ``preferences`` fields, e.g. ``pairs``, kept)."""
    own = pairwise_parameters(model)
    kept = {} if own is None else {key: getattr(own, key) for key in own.given if key not in values}
    changes = {"preferences": {**kept, **{key: float(v) for key, v in values.items()}}}
    if name is not None:
        changes["name"] = name
    if provenance is not None:
        changes["provenance"] = provenance
    return dataclasses.replace(model, **changes)


class _ObservedPairs(Pairwise):
    """The pairwise method with a real study's comparisons: each simulated row shows the pairs, in the order of
    presentation, that the data's row shows (the design of a predictive check and of the parametric bootstrap)."""

    def __init__(self, layout, n_pairs: int):
        self.layout, self.n_pairs = layout, n_pairs

    def judge(self, model, eta: np.ndarray, rng: np.random.Generator, design=None) -> dict:
        parameters = pairwise_parameters(model)
        layout = self.layout
        first, second = system_pair_indices(eta.shape[1])
        low, high = first[layout.pair], second[layout.pair]
        delta = (eta[layout.row, low] - eta[layout.row, high]
                 + parameters.position_bias * np.where(layout.low_first, 1.0, -1.0)
                 + parameters.noise * rng.logistic(size=layout.row.size))
        verdict = verdict_of(delta, parameters.tie_band)
        preferences = np.full((layout.n_rows, self.n_pairs), np.nan)
        preferences[layout.row, layout.pair] = verdict
        first_shown = np.zeros(preferences.shape, dtype=bool)
        first_shown[layout.row, layout.pair] = layout.low_first
        return {"scores": output_points(preferences, eta.shape[1]), "preferences": preferences,
                "first_shown": first_shown}


def observed_simulator(model, comparisons):
    """A function rng -> simulated outcomes (first-shown orientation, one per comparison) of a study with the
    data's own design: the same (annotator, document) rows, pairs and orders, fresh random effects and noise.

    Raises
    ------
    ConfigError
        The model does not generate pairwise judgements (no ``preferences`` mapping).
    """
    if not PAIRWISE.can_generate(model):
        raise ConfigError(f"Model '{model.name}' does not generate pairwise judgements: {PAIRWISE.model_requirement}; "
                          "or fit them with 'simdesign fit PAIRS.csv --likert-model MODEL'")
    layout = study_layout(comparisons)
    n_pairs = comparisons.n_systems * (comparisons.n_systems - 1) // 2
    blocks = int(layout.block.max()) + 1 if layout.block.min() >= 0 else 0
    assignment = Assignment(annotator=layout.annotator, document=layout.document, block=layout.block,
                            n_annotators=int(layout.annotator.max()) + 1, n_documents=int(layout.document.max()) + 1,
                            n_blocks=blocks)
    design = ObservedDesign(assignment, np.ones((layout.n_rows, comparisons.n_systems), dtype=bool))
    method = _ObservedPairs(layout, n_pairs)
    low_first = layout.low_first

    def simulate(rng: np.random.Generator) -> np.ndarray:
        low = model.sample(design, rng, method=method).preferences[layout.row, layout.pair]
        return np.where(low_first, low, 1.0 - low)

    return simulate


__all__ = ["fit_pairwise", "PairwiseFit", "verdict_probabilities", "pair_counts", "observed_simulator",
           "with_preferences", "PARAMETERS", "BOUNDS"]
