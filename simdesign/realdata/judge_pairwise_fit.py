"""A pairwise judge fitted from a pilot table of judge and human verdicts, given the humans' model, with a check.

The judge model (:mod:`simdesign.model.judge`, scale ``pairwise``): shown system a first and b second on document
d, the judge prefers a when ``D = x + (b_a - b_b) + sigma (e_a - e_b) + p > t``, b when ``D < -t``, and ties in
between, where ``x = q_ad - q_bd`` is the latent quality difference the annotators see too. Over documents ``x``
is normal with mean ``beta_a - beta_b`` and variance ``v_ab = c' Sigma_d c`` (``c = z_a - z_b``), so

    P(a) = Phi((m + p - t) / s),   P(b) = Phi((-m - p - t) / s),   m = beta_a - beta_b + b_a - b_b,
    s^2 = v_ab + 2 sigma^2

Given the human model (held fixed) the fit estimates

* the judge's **per-system bias** (centred: only differences between systems change a verdict), its **position
  bias** p and its **tie band** t by maximum likelihood on the counts of (system shown first, system shown
  second, verdict), which are sufficient;
* its **correlation rho** with the latent quality (``sigma^2 = V (1 / rho^2 - 1)``, V the documents' mean
  variance, as the judge model defines it) by moment matching: the observed correlation of the judge's and the
  human's verdicts on the same comparisons, within each (first, second) presentation and averaged over them
  weighted by their human verdicts, is set equal to the one the models imply. Judge and human are independent
  given x, so the implied covariance is ``Cov_x(E[J | x], E[H | x])``, by Gauss-Hermite quadrature over x (and
  over the annotator part inside ``E[H | x]``); the human verdict follows the pairwise method's rule with the
  human model's ``preferences`` (noise, tie band, position bias; the method's assumed values when the model has
  none), the human having seen the comparison in the row's order (``system_a`` first). sigma enters the
  marginal, so the two steps alternate (three rounds from rho = 0.7).

Standard errors: a bootstrap over documents (every comparison of a resampled document comes along), from
label-keyed streams. The predictive check (:func:`pairwise_judge_check`) simulates tables with the pilot's
rows (the same comparisons, presentation orders, human-judged rows and annotators) from the fitted judge and the
human model and compares the judge's win rate per pair, its share of first-shown wins and of ties, the humans'
share of first-shown wins and the judge-human correlation, in the columns of
:func:`simdesign.realdata.check.predictive_check`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import optimize, special, stats

from simdesign.core.errors import DataError
from simdesign.core.seeds import bootstrap_rng, check_rng
from simdesign.methods.pairwise import (PairwiseParameters, contrast_variances, pairwise_parameters, verdict_of,
                                        verdict_probabilities)
from simdesign.model.common import fixed_order_product
from simdesign.model.judge import PAIRWISE_SCALE
from simdesign.model.metric import exchangeable_moments
from simdesign.realdata.judge_pairwise import JUDGE_COLUMN, _verdict_for_first, check_judge_pairwise

NODES = 40
ROUNDS = 3
RHO_RANGE = (0.02, 1.0)  # rho is solved in this range; an observed correlation outside it is clipped to an end
RANGE = (2.5, 97.5)      # the check's simulated range, as simdesign.realdata.check's


@dataclass(frozen=True)
class FittedPairwiseJudge:
    """A pairwise judge's parameters fitted from a pilot (module docstring), on the human model's latent scale."""

    systems: tuple
    correlation: float
    bias: dict            # centred: mean 0 over the systems
    position_bias: float
    tie_band: float
    se: dict = field(default_factory=dict)
    notes: tuple = ()

    def judge_config(self, name: str = "judge", assumes: str = "") -> dict:
        """The mapping :func:`simdesign.model.judge.parse_judge` reads (a config's ``judge``)."""
        return {"name": name, "scale": PAIRWISE_SCALE, "correlation": round(float(self.correlation), 6),
                "bias": {k: round(v, 6) for k, v in self.bias.items()},
                "position_bias": round(float(self.position_bias), 6), "tie_band": round(float(self.tie_band), 6),
                "assumes": assumes or "fitted from a pilot table of pairwise verdicts"}


@dataclass(frozen=True)
class _Rows:
    """A checked table as arrays: per comparison the systems shown first and second (model indices), the judge's
    and the human's verdict for the first (1, 0.5, 0; human NaN where none), the document and annotator codes."""

    first: np.ndarray
    second: np.ndarray
    judge: np.ndarray
    human: np.ndarray
    document: np.ndarray
    annotator: np.ndarray   # -1 where no human (or no annotator column: each human verdict its own annotator)


def pairwise_rows(table: pd.DataFrame, systems) -> _Rows:
    """The arrays of a table checked by :func:`simdesign.realdata.judge_pairwise.check_judge_pairwise`."""
    codes = {name: k for k, name in enumerate(systems)}
    human = _verdict_for_first(table["preferred"], table["system_a"])
    if "annotator" in table:
        names = table["annotator"].where(np.isfinite(human), "")
        annotator = np.where(names == "", -1, pd.factorize(names)[0])
    else:
        annotator = np.where(np.isfinite(human), np.cumsum(np.isfinite(human)) - 1, -1)
    return _Rows(table["system_a"].map(codes).to_numpy(int), table["system_b"].map(codes).to_numpy(int),
                 _verdict_for_first(table[JUDGE_COLUMN], table["system_a"]), human,
                 pd.factorize(table["document"])[0], np.asarray(annotator, int))


# ---------------------------------------------------------------------------------------------------------
# The model's pieces per presentation (first, second)
# ---------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Model:
    beta: np.ndarray
    doc_var: np.ndarray        # (S, S): v_ab, the document part's variance of q_a - q_b
    ann_var: np.ndarray        # (S, S): the annotator part's variance of the human's difference
    mean_var: float            # V of the judge model
    human: PairwiseParameters
    x: np.ndarray              # (S, S, nodes): Gauss-Hermite nodes of x = q_a - q_b per presentation (a, b)
    weights: np.ndarray        # (nodes,)
    human_mean: np.ndarray     # (S, S, nodes): E[H | x] of a human verdict for a, shown first
    human_square: np.ndarray   # (S, S, nodes): E[H^2 | x]


def _model_side(model) -> _Model:
    """The human model's pieces, with the human verdict's moments given x for every presentation (computed once:
    they depend on neither the judge nor the table)."""
    beta = np.asarray(model.effects, float)
    doc_var = contrast_variances(model.n_systems, model.sampled_document_cov)
    ann_var = contrast_variances(model.n_systems, model.annotator_cov)
    human = pairwise_parameters(model) or PairwiseParameters()
    nodes, weights = np.polynomial.hermite_e.hermegauss(NODES)
    weights = weights / weights.sum()
    x = (beta[:, None] - beta[None, :])[:, :, None] + np.sqrt(doc_var)[:, :, None] * nodes
    delta = x[..., None] + np.sqrt(ann_var)[:, :, None, None] * nodes + human.position_bias  # (S, S, x, annotator)
    win, not_loss = verdict_probabilities(delta, human)
    return _Model(beta, doc_var, ann_var, float(exchangeable_moments(model.sampled_document_cov)[0]), human, x,
                  weights, (0.5 * (win + not_loss)) @ weights, (win + 0.25 * (not_loss - win)) @ weights)


def _sigma(rho: float, mean_var: float) -> float:
    return float(np.sqrt(mean_var * (1.0 / rho ** 2 - 1.0)))


def _judge_probabilities(mean: np.ndarray, sd: np.ndarray, position: float, tie: float):
    """(P(first preferred), P(second preferred)) of a verdict whose D is normal(mean + position, sd)."""
    return special.ndtr((mean + position - tie) / sd), special.ndtr((-mean - position - tie) / sd)


# ---------------------------------------------------------------------------------------------------------
# The two steps
# ---------------------------------------------------------------------------------------------------------

def _counts(rows: _Rows, weights: np.ndarray, n_systems: int) -> np.ndarray:
    """(S, S, 3) weighted counts of (first, second, verdict 1 / 0.5 / 0)."""
    counts = np.zeros((n_systems, n_systems, 3))
    outcome = np.where(rows.judge == 1.0, 0, np.where(rows.judge == 0.5, 1, 2))
    np.add.at(counts, (rows.first, rows.second, outcome), weights)
    return counts


def _fit_marginal(counts: np.ndarray, side: _Model, sigma: float, start: np.ndarray) -> np.ndarray:
    """(biases with b_0 = 0, position bias, tie band) by maximum likelihood on the counts, given sigma."""
    first, second = np.nonzero(counts.sum(axis=2))
    n = counts[first, second]
    sd = np.sqrt(side.doc_var[first, second] + 2 * sigma ** 2)
    n_systems = side.beta.size

    def negloglik(theta):
        bias = np.concatenate([[0.0], theta[:n_systems - 1]])
        mean = side.beta[first] - side.beta[second] + bias[first] - bias[second]
        win, loss = _judge_probabilities(mean, sd, theta[-2], theta[-1])
        tie = np.clip(1.0 - win - loss, 1e-300, None)
        return -float(np.sum(n[:, 0] * np.log(np.clip(win, 1e-300, None)) + n[:, 1] * np.log(tie)
                             + n[:, 2] * np.log(np.clip(loss, 1e-300, None))))

    # the band is t = tau^2 (>= 0 without bounds); BFGS rather than L-BFGS-B, whose Fortran BLAS calls slowed
    # this 6-parameter fit sevenfold when other processes kept the cores busy (threaded OpenBLAS spinning)
    start = np.concatenate([start[:-1], [np.sqrt(max(start[-1], 0.0))]])
    result = optimize.minimize(lambda theta: negloglik(np.concatenate([theta[:-1], [theta[-1] ** 2]])), start,
                               method="BFGS")
    return np.concatenate([result.x[:-1], [result.x[-1] ** 2]])


def _implied_correlation(rho: float, side: _Model, theta: np.ndarray, presentations, weights) -> float:
    """The verdicts' correlation the models imply, averaged over presentations (module docstring)."""
    first, second = np.asarray(presentations, int).T
    bias = np.concatenate([[0.0], theta[:side.beta.size - 1]])
    noise = max(np.sqrt(2.0) * _sigma(rho, side.mean_var), 1e-9)
    x = side.x[first, second]                                             # (presentations, nodes)
    win, loss = _judge_probabilities(x + (bias[first] - bias[second])[:, None], noise, theta[-2], theta[-1])
    judge_mean, judge_square = 0.5 * (win + 1.0 - loss), win + 0.25 * (1.0 - win - loss)
    human_mean, human_square = side.human_mean[first, second], side.human_square[first, second]
    mean_j, mean_h = judge_mean @ side.weights, human_mean @ side.weights
    covariance = (judge_mean * human_mean) @ side.weights - mean_j * mean_h
    weights = np.asarray(weights, float)  # pooled as the observed correlation is (_observed_correlation)
    variance_j, variance_h = judge_square @ side.weights - mean_j ** 2, human_square @ side.weights - mean_h ** 2
    return float(weights @ covariance / np.sqrt((weights @ variance_j) * (weights @ variance_h)))


def _observed_correlation(rows: _Rows, weights: np.ndarray) -> tuple[float, list, list]:
    """(the pooled within-presentation correlation of judge and human verdicts, the presentations, their weights).

    Each presentation's verdicts are centred on its own means, then one correlation is taken over all of them: a
    pilot has few human verdicts per presentation, and an average of per-presentation correlations would be
    noisy and biased. The weights (human verdicts minus one) pool the implied moments the same way.
    """
    labelled = np.isfinite(rows.human) & (weights > 0)
    sums, presentations, sizes = np.zeros(3), [], []
    for first, second in sorted(set(zip(rows.first[labelled], rows.second[labelled]))):
        chosen = labelled & (rows.first == first) & (rows.second == second)
        w = weights[chosen]
        if w.sum() < 2:
            continue
        judge = rows.judge[chosen] - np.average(rows.judge[chosen], weights=w)
        human = rows.human[chosen] - np.average(rows.human[chosen], weights=w)
        sums += [np.sum(w * judge * human), np.sum(w * judge ** 2), np.sum(w * human ** 2)]
        presentations.append((int(first), int(second)))
        sizes.append(float(w.sum() - 1.0))
    if not presentations or sums[1] <= 0 or sums[2] <= 0:
        raise DataError("No presentation of a pair has judge and human verdicts that vary (2 or more human "
                        "verdicts of one presentation, not all the same): the judge's correlation with people "
                        "cannot be estimated")
    return float(sums[0] / np.sqrt(sums[1] * sums[2])), presentations, sizes


def _solve_rho(observed: float, side: _Model, theta, presentations, sizes) -> tuple[float, str]:
    def gap(rho):
        return _implied_correlation(rho, side, theta, presentations, sizes) - observed

    low, high = RHO_RANGE
    if gap(high) <= 0:
        return high, (f"the judge agrees with people as much as a judge that sees the latent quality exactly "
                      f"(observed correlation {observed:.3f}): rho set to 1")
    if gap(low) >= 0:
        return low, f"the judge's verdicts barely track people's (observed correlation {observed:.3f}): rho {low}"
    return float(optimize.brentq(gap, low, high, xtol=1e-6)), ""


def _fit_once(rows: _Rows, weights: np.ndarray, side: _Model) -> tuple[float, np.ndarray, list]:
    n_systems = side.beta.size
    counts = _counts(rows, weights, n_systems)
    observed, presentations, sizes = _observed_correlation(rows, weights)
    rho, theta, notes = 0.7, np.concatenate([np.zeros(n_systems - 1), [0.0, 0.1]]), []
    for _ in range(ROUNDS):
        theta = _fit_marginal(counts, side, _sigma(rho, side.mean_var), theta)
        rho, note = _solve_rho(observed, side, theta, presentations, sizes)
        notes = [note] if note else []
    return rho, theta, notes


def _centred(theta: np.ndarray, n_systems: int) -> np.ndarray:
    bias = np.concatenate([[0.0], theta[:n_systems - 1]])
    return bias - bias.mean()


def fit_pairwise_judge(model, table: pd.DataFrame, bootstrap: int = 200, seed: int = 0,
                       label: str = "judge_pairwise_fit") -> FittedPairwiseJudge:
    """Fit a pairwise judge to a table of judge and human verdicts against the human ``model`` (module docstring).

    ``table``: the columns of :mod:`simdesign.realdata.judge_pairwise` (``system_a`` the system shown first);
    every system of the model must appear in it.
    """
    typed, _ = check_judge_pairwise(table, systems=list(model.systems))
    rows, side = pairwise_rows(typed, model.systems), _model_side(model)
    rho, theta, notes = _fit_once(rows, np.ones(rows.first.size), side)
    if pairwise_parameters(model) is None:
        notes = [*notes, "the human model has no 'preferences' mapping: human verdicts follow the pairwise "
                         "method's assumed values (noise 1, tie band 0.5, no position bias)"]
    n_systems = side.beta.size
    se = _bootstrap_se(rows, side, list(model.systems), bootstrap, seed, label) if bootstrap > 1 else {}
    return FittedPairwiseJudge(tuple(model.systems), float(rho),
                               dict(zip(model.systems, map(float, _centred(theta, n_systems)))),
                               float(theta[-2]), float(theta[-1]), se, tuple(notes))


def _bootstrap_se(rows: _Rows, side: _Model, systems: list, resamples: int, seed: int, label: str) -> dict:
    """SEs from resampled documents (weights: how often each document was drawn)."""
    n_documents, n_systems = rows.document.max() + 1, side.beta.size
    draws = []
    for replicate in range(resamples):
        rng = bootstrap_rng(int(seed), label, replicate)
        drawn = np.bincount(rng.integers(0, n_documents, n_documents), minlength=n_documents)
        try:
            rho, theta, _ = _fit_once(rows, drawn[rows.document].astype(float), side)
        except DataError:
            continue
        draws.append(np.concatenate([[rho], _centred(theta, n_systems), theta[-2:]]))
    if len(draws) < 2:
        return {"resamples": len(draws)}
    sd = np.std(np.array(draws), axis=0, ddof=1)
    return {"correlation": float(sd[0]), "bias": dict(zip(systems, map(float, sd[1:-2]))),
            "position_bias": float(sd[-2]), "tie_band": float(sd[-1]), "resamples": len(draws)}


# ---------------------------------------------------------------------------------------------------------
# Simulated tables with the pilot's rows, and the predictive check
# ---------------------------------------------------------------------------------------------------------

def simulate_pairwise_rows(model, judge: FittedPairwiseJudge, rows: _Rows, rng: np.random.Generator) -> _Rows:
    """The pilot's comparisons again from the model and the fitted judge: fresh document parts, annotator parts,
    judge noise and human noise (each human verdict where the pilot has one, by its annotator)."""
    side = _model_side(model)
    n_documents, n_annotators = rows.document.max() + 1, max(rows.annotator.max() + 1, 1)
    documents = fixed_order_product(rng.standard_normal((n_documents, model.n_systems)),
                                    model._document_loading.T)
    annotators = fixed_order_product(rng.standard_normal((n_annotators, model.n_systems)),
                                     model._annotator_loading.T)
    quality = side.beta[None, :] + documents
    bias = np.array([judge.bias[s] for s in model.systems])
    latent = quality + bias[None, :] + _sigma(judge.correlation, side.mean_var) * rng.standard_normal(quality.shape)
    delta = latent[rows.document, rows.first] - latent[rows.document, rows.second] + judge.position_bias
    verdict = verdict_of(delta, judge.tie_band)
    eta = quality[rows.document] + annotators[np.maximum(rows.annotator, 0)]
    human_delta = (eta[np.arange(rows.first.size), rows.first] - eta[np.arange(rows.first.size), rows.second]
                   + side.human.position_bias + side.human.noise * rng.logistic(size=rows.first.size))
    human = verdict_of(human_delta, side.human.tie_band)
    return _Rows(rows.first, rows.second, verdict, np.where(np.isfinite(rows.human), human, np.nan), rows.document,
                 rows.annotator)


def _statistics(rows: _Rows, n_systems: int) -> np.ndarray:
    """The judge's win rate per pair (model order), its first-shown and tie shares, the humans' first-shown share,
    the judge-human correlation (within presentations, as the fit's)."""
    values = []
    for i, j in zip(*np.triu_indices(n_systems, k=1)):
        forward, backward = (rows.first == i) & (rows.second == j), (rows.first == j) & (rows.second == i)
        wins = np.concatenate([rows.judge[forward], 1.0 - rows.judge[backward]])
        values.append(wins.mean() if wins.size else np.nan)
    labelled = np.isfinite(rows.human)
    try:
        correlation = _observed_correlation(rows, np.ones(rows.first.size))[0]
    except DataError:
        correlation = np.nan
    values += [rows.judge.mean(), (rows.judge == 0.5).mean(),
               rows.human[labelled].mean() if labelled.any() else np.nan, correlation]
    return np.asarray(values, float)


def pairwise_judge_check(model, judge: FittedPairwiseJudge, table: pd.DataFrame, trials: int = 200, seed: int = 0,
                         label: str = "judge_pairwise_check"):
    """Predictive check of a fitted pairwise judge and the human model against the pilot table (module docstring).

    Returns ``(table, simulated)`` like :func:`simdesign.realdata.check.predictive_check`: one row per statistic
    (``judge_win_rate`` per pair 'a vs b', ``judge_first_shown_wins``, ``judge_ties``, ``human_first_shown_wins``,
    ``judge_human_correlation``) with ``observed, sim_mean, sim_low, sim_high, inside, p_two_sided``.
    """
    typed, _ = check_judge_pairwise(table, systems=list(model.systems))
    rows = pairwise_rows(typed, model.systems)
    observed = _statistics(rows, model.n_systems)
    simulated = np.array([_statistics(simulate_pairwise_rows(model, judge, rows, check_rng(int(seed), label, trial)),
                                      model.n_systems) for trial in range(trials)])
    pairs = [f"{model.systems[i]} vs {model.systems[j]}" for i, j in zip(*np.triu_indices(model.n_systems, k=1))]
    labels = ([("judge_win_rate", pair) for pair in pairs] + [("judge_first_shown_wins", ""), ("judge_ties", ""),
                                                              ("human_first_shown_wins", ""),
                                                              ("judge_human_correlation", "")])
    with np.errstate(all="ignore"):
        low, high = np.nanpercentile(simulated, RANGE, axis=0)
    below, above = (simulated <= observed).mean(axis=0), (simulated >= observed).mean(axis=0)
    out = pd.DataFrame({"statistic": [lab[0] for lab in labels], "system": [lab[1] for lab in labels],
                        "category": None, "observed": observed, "sim_mean": np.nanmean(simulated, axis=0),
                        "sim_low": low, "sim_high": high})
    out["inside"] = (out["observed"] >= out["sim_low"]) & (out["observed"] <= out["sim_high"])
    out["p_two_sided"] = np.minimum(1.0, 2 * np.minimum(below, above))
    keep = out["observed"].notna().to_numpy()
    return out[keep].reset_index(drop=True), simulated[:, keep]


def position_bias_test(judge: FittedPairwiseJudge) -> float:
    """Two-sided p-value of 'no position bias' from the bootstrap SE (NaN without one)."""
    error = judge.se.get("position_bias", np.nan)
    return float(2 * stats.norm.sf(abs(judge.position_bias) / error)) if error and np.isfinite(error) else np.nan
