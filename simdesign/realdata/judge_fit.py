"""A judge fitted from a pilot judge-plus-human table, given the humans' Likert model, with a predictive check.

The judge model (:mod:`simdesign.model.judge`) says ``J*_sd = q_sd + b_s + sigma e_sd``, with ``q_sd`` the
output's latent quality under the human model (``beta_s`` plus a normal document part of variance ``V_s``),
``sigma^2 = V (1 / rho^2 - 1)`` and a reported score cut from ``J*``. Given the human model (held fixed:
``beta``, the covariances, the thresholds), the fit estimates

* the judge's **scale mapping and per-system bias** from the judge's scores of *every* output: marginally
  ``J*_sd ~ N(beta_s + b_s, V_s + sigma^2)``, so a Likert judge's scores follow a heteroscedastic ordered
  probit with known per-system SDs; maximum likelihood (on the (system, category) counts, which are
  sufficient) gives its thresholds ``c_k`` on the latent scale and ``b_s``. A continuous judge is
  ``loc + scale J*``: its per-system means and pooled within-system variance give ``b_s``, ``loc``, ``scale``
  (a probability judge is fitted as a continuous judge of ``logit(p)``). A common shift of every ``b_s`` and
  every threshold (or ``loc``) changes no score, in the judge model as here, so ``b_s`` are reported centred
  (mean 0 over the systems): what is identified is each system's bias against the others.
* the judge's **correlation rho** with the latent quality by moment matching on the human-judged rows: the
  observed within-system correlation of judge and human scores (mean over systems) is set equal to the one
  the models imply, ``corr_s(rho) = Cov_q(E[J|q], E[H|q]) / (sd J_s sd H_s)`` (judge and human are
  independent given ``q``), computed by Gauss-Hermite quadrature over ``q`` (and the annotator part inside
  ``E[H|q]``), and solved for rho by root finding. The correlation is the one moment that carries rho, it
  uses every human score whatever the annotator design, and it needs no quadrature over annotators and
  documents jointly as a full likelihood would (whose gain over it is small: the judge's marginal, which
  holds most of the information on the thresholds and biases, is used by maximum likelihood already).
  sigma enters the marginal SDs, so the two steps alternate (three rounds, from rho = 0.7; they settle in two).
  On tables simulated by the judge model (tests/test_judge_fit.py's: 2,000 documents, every output also scored
  by one of 60 annotators) a Likert judge's rho = 0.8 came out at 0.82 on average over 9 tables (SE about 0.03
  each): a small upward bias, under one SE, from the moment's plug-in of the model's attenuation; a
  probability judge's 0.7 at 0.71 (6 tables).

Standard errors: a bootstrap over documents (every row of a resampled document comes along, so the judge's
and the humans' document clustering is kept), from a generator keyed by a label
(:func:`simdesign.core.seeds.bootstrap_rng`). The predictive check (:func:`judge_check`) simulates tables with the
pilot's design (its outputs, which of them humans scored and by whom) from the fitted judge and the human
model, and compares the judge's score shares and mean per system, and the judge-human correlation per
system and overall, as :func:`simdesign.realdata.check.predictive_check` does (the same table columns).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import optimize, special

from simdesign.core.errors import DataError
from simdesign.core.seeds import bootstrap_rng, check_rng
from simdesign.model.judge import PROBABILITY_SLOPE, SCALES
from simdesign.realdata.check import RANGE

NODES = 40
RHO_BOUNDS = (0.02, 0.995)
ROUNDS = 3
ORDINAL, PROBABILITY, CONTINUOUS = SCALES[:3]  # the judge model's score scales, named once there (the 4th: pairwise)


@dataclass(frozen=True)
class FittedJudge:
    """A judge's parameters fitted from a pilot (module docstring), on the human model's latent scale."""

    systems: tuple
    scale: str
    correlation: float
    bias: dict                       # centred: mean 0 over the systems
    levels: tuple = ()               # a Likert judge's observed score values
    thresholds: tuple = ()           # its cut points on the latent scale (len(levels) - 1)
    location: float = 0.0            # a continuous judge: reported = location + spread * J*
    spread: float = 1.0
    se: dict = field(default_factory=dict)

    def noise_sd(self, model) -> float:
        return float(np.sqrt(_mean_document_variance(model) * (1.0 / self.correlation ** 2 - 1.0)))

    def report(self, latent: np.ndarray) -> np.ndarray:
        if self.scale == ORDINAL:
            return np.asarray(self.levels, float)[np.searchsorted(np.asarray(self.thresholds), latent)]
        reported = self.location + self.spread * np.asarray(latent, float)
        return special.expit(reported) if self.scale == PROBABILITY else reported

    def to_config(self) -> dict:
        return {"systems": list(self.systems), "scale": self.scale, "correlation": self.correlation,
                "bias": dict(self.bias), "levels": list(self.levels), "thresholds": list(self.thresholds),
                "location": self.location, "spread": self.spread, "se": self.se}


# ---------------------------------------------------------------------------------------------------------
# The model's pieces per system
# ---------------------------------------------------------------------------------------------------------

def _per_system_variance(model, cov: np.ndarray) -> np.ndarray:
    rows = np.eye(model.n_systems)
    rows[:, 0] = 1.0
    return np.einsum("si,ij,sj->s", rows, cov, rows)


def _mean_document_variance(model) -> float:
    from simdesign.model.metric import exchangeable_moments
    return float(exchangeable_moments(model.sampled_document_cov)[0])


@dataclass(frozen=True)
class _Human:
    """What the human model implies per system, on Gauss-Hermite nodes over q."""

    beta: np.ndarray
    doc_var: np.ndarray
    q: np.ndarray          # (S, nodes)
    weights: np.ndarray    # (nodes,)
    expected: np.ndarray   # E[H | q], (S, nodes)
    sd: np.ndarray         # sd of H per system


def _human_side(model) -> _Human:
    beta = np.asarray(model.effects, float)
    doc_var = _per_system_variance(model, model.sampled_document_cov)
    ann_sd = np.sqrt(_per_system_variance(model, model.annotator_cov))
    x, w = np.polynomial.hermite_e.hermegauss(NODES)
    w = w / w.sum()
    q = beta[:, None] + np.sqrt(doc_var)[:, None] * x[None, :]
    eta = q[:, :, None] + ann_sd[:, None, None] * x[None, None, :]                  # (S, nodes, nodes)
    cum = special.expit(model.thresholds[None, None, :, None] - eta[:, :, None, :]) @ w   # (S, nodes, K-1)
    probs = np.diff(np.concatenate([np.zeros(cum.shape[:2] + (1,)), cum, np.ones(cum.shape[:2] + (1,))], 2), axis=2)
    scale = np.asarray(model.scale, float)
    expected = probs @ scale
    marginal = model.marginal_probabilities(effect="fitted")
    mean = marginal @ scale
    sd = np.sqrt(marginal @ scale ** 2 - mean ** 2)
    return _Human(beta, doc_var, q, w, expected, sd)


# ---------------------------------------------------------------------------------------------------------
# The fit
# ---------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Data:
    """A pilot table reduced to what the fit reads."""

    system: np.ndarray      # per output (index into systems)
    judge: np.ndarray       # per output
    h_system: np.ndarray    # per human score
    h_judge: np.ndarray
    h_human: np.ndarray


def _reduce(table: pd.DataFrame, systems) -> _Data:
    codes = {name: k for k, name in enumerate(systems)}
    outputs = table.drop_duplicates(["system", "document"])
    human = table[table["human"].notna()]
    return _Data(outputs["system"].map(codes).to_numpy(int), outputs["judge"].to_numpy(float),
                 human["system"].map(codes).to_numpy(int), human["judge"].to_numpy(float),
                 human["human"].to_numpy(float))


def _observed_correlation(data: _Data, n_systems: int) -> float:
    values = []
    for s in range(n_systems):
        rows = data.h_system == s
        if rows.sum() > 2 and data.h_judge[rows].std() > 0 and data.h_human[rows].std() > 0:
            values.append(np.corrcoef(data.h_judge[rows], data.h_human[rows])[0, 1])
    if not values:
        raise DataError("The judge fit needs, in some system, human scores beside judge scores that vary")
    return float(np.mean(values))


def _fit_ordinal(counts: np.ndarray, human: _Human, sigma: float, start=None) -> tuple[np.ndarray, np.ndarray]:
    """(centred biases, thresholds) maximising the ordered-probit likelihood of the judge's counts (S, K)."""
    n_systems, n_levels = counts.shape
    total_sd = np.sqrt(human.doc_var + sigma ** 2)

    def unpack(theta):
        bias = np.append(theta[:n_systems - 1], -theta[:n_systems - 1].sum())
        cuts = theta[n_systems - 1] + np.concatenate([[0.0], np.cumsum(np.exp(theta[n_systems:]))])
        return bias, cuts

    def negloglik(theta):
        bias, cuts = unpack(theta)
        z = (cuts[None, :] - (human.beta + bias)[:, None]) / total_sd[:, None]
        cum = np.concatenate([np.zeros((n_systems, 1)), special.ndtr(z), np.ones((n_systems, 1))], axis=1)
        return -float(np.sum(counts * np.log(np.maximum(np.diff(cum, axis=1), 1e-300))))

    if start is None:
        shares = np.cumsum(counts.sum(0))[:-1] / counts.sum()
        cuts0 = human.beta.mean() + np.sqrt(human.doc_var.mean() + sigma ** 2) * special.ndtri(
            np.clip(shares, 1e-3, 1 - 1e-3))
        cuts0 = np.maximum.accumulate(cuts0 + 1e-3 * np.arange(cuts0.size))
        start = np.concatenate([np.zeros(n_systems - 1), [cuts0[0]], np.log(np.maximum(np.diff(cuts0), 1e-3))])
    result = optimize.minimize(negloglik, start, method="BFGS")
    return (*unpack(result.x), result.x)


def _implied_correlation(rho: float, human: _Human, mean_var: float, judge_moments) -> float:
    """Mean over systems of corr(J, H) within the system that the models imply at rho."""
    sigma = np.sqrt(mean_var * (1.0 / rho ** 2 - 1.0))
    expected_judge, judge_sd = judge_moments(sigma)
    centred_j = expected_judge - (expected_judge @ human.weights)[:, None]
    centred_h = human.expected - (human.expected @ human.weights)[:, None]
    cov = (centred_j * centred_h) @ human.weights
    return float(np.mean(cov / (judge_sd * human.sd)))


def _likert_moments(bias, cuts, levels, human: _Human):
    levels = np.asarray(levels, float)

    def moments(sigma):
        latent = human.q + bias[:, None]
        cum = special.ndtr((cuts[None, None, :] - latent[:, :, None]) / max(sigma, 1e-9))
        probs = np.diff(np.concatenate([np.zeros(cum.shape[:2] + (1,)), cum, np.ones(cum.shape[:2] + (1,))], 2), axis=2)
        expected = probs @ levels
        z = (cuts[None, :] - (human.beta + bias)[:, None]) / np.sqrt(human.doc_var + sigma ** 2)[:, None]
        cum_m = np.concatenate([np.zeros((bias.size, 1)), special.ndtr(z), np.ones((bias.size, 1))], axis=1)
        marginal = np.diff(cum_m, axis=1)
        mean = marginal @ levels
        return expected, np.sqrt(np.maximum(marginal @ levels ** 2 - mean ** 2, 1e-300))
    return moments


def _continuous_moments(human: _Human):
    def moments(sigma):   # correlation does not depend on loc, spread or the bias: J* = q + b + sigma e
        return human.q, np.sqrt(human.doc_var + sigma ** 2)
    return moments


def _solve_rho(target: float, human: _Human, mean_var: float, moments) -> float:
    low, high = RHO_BOUNDS
    f = lambda rho: _implied_correlation(rho, human, mean_var, moments) - target  # noqa: E731
    f_low, f_high = f(low), f(high)
    if f_low >= 0:
        return low
    if f_high <= 0:
        return high
    return float(optimize.brentq(f, low, high, xtol=1e-6))


def _fit_once(data: _Data, human: _Human, mean_var: float, scale: str, levels) -> dict:
    """One fit's estimates: correlation, centred biases, and thresholds or (location, spread)."""
    n_systems = human.beta.size
    target = _observed_correlation(data, n_systems)
    if scale == ORDINAL:
        index = np.searchsorted(levels, data.judge)
        counts = np.zeros((n_systems, len(levels)))
        np.add.at(counts, (data.system, index), 1.0)
        rho, start = 0.7, None
        for _ in range(ROUNDS):
            sigma = np.sqrt(mean_var * (1.0 / rho ** 2 - 1.0))
            bias, cuts, start = _fit_ordinal(counts, human, sigma, start)
            rho = _solve_rho(target, human, mean_var, _likert_moments(bias, cuts, levels, human))
        return {"correlation": rho, "bias": bias, "thresholds": cuts}
    values = data.judge if scale == CONTINUOUS else special.logit(np.clip(data.judge, 1e-6, 1 - 1e-6))
    rho = _solve_rho(target, human, mean_var, _continuous_moments(human))
    sigma2 = mean_var * (1.0 / rho ** 2 - 1.0)
    means = np.array([values[data.system == s].mean() for s in range(n_systems)])
    within = np.mean([values[data.system == s].var() for s in range(n_systems)])
    spread = float(np.sqrt(within / np.mean(human.doc_var + sigma2)))
    location = float(means.mean() - spread * human.beta.mean())
    bias = (means - location) / spread - human.beta
    return {"correlation": rho, "bias": bias - bias.mean(), "location": location, "spread": spread}


def judge_scale(values: np.ndarray) -> str:
    """'probability' (all in [0, 1], not all 0/1), 'ordinal' (integers, at most 20 values) or 'continuous'."""
    values = np.asarray(values, float)
    integers = np.all(values == np.round(values))
    if integers and np.unique(values).size <= 20:
        return ORDINAL
    if values.min() >= 0 and values.max() <= 1:
        return PROBABILITY
    return CONTINUOUS


def fit_judge(model, table: pd.DataFrame, scale: str | None = None, bootstrap: int = 200, seed: int = 0,
              label: str = "judge_fit") -> FittedJudge:
    """Fit a judge (module docstring) to a checked judge-plus-human table, with bootstrap SEs over documents.

    Parameters
    ----------
    model : OrdinalMixedModel
        The humans' model (held fixed); its systems must be the table's.
    table : pandas.DataFrame
        ``system, document, judge, human`` (:func:`simdesign.tables.judge.check_judge_table`).
    scale : {'ordinal', 'probability', 'continuous'}, optional
        The judge's scale (default :func:`judge_scale` of its scores).
    bootstrap : int
        Resamples of the documents for the standard errors (0: none).
    seed, label
        The bootstrap's generator: ``bootstrap_rng(seed, label)`` (:mod:`simdesign.core.seeds`).
    """
    systems = tuple(model.systems)
    strays = sorted(set(table["system"].astype(str)) - set(systems))
    if strays:
        raise DataError(f"The table's systems {strays} are not the model's {list(systems)}")
    scale = scale or judge_scale(table["judge"].to_numpy(float))
    levels = np.unique(table["judge"].to_numpy(float)) if scale == ORDINAL else np.array([])
    human, mean_var = _human_side(model), _mean_document_variance(model)
    estimate = _fit_once(_reduce(table, systems), human, mean_var, scale, levels)
    se = _bootstrap_se(table, systems, human, mean_var, scale, levels, bootstrap, seed, label) if bootstrap else {}
    return FittedJudge(systems, scale, float(estimate["correlation"]),
                       {name: float(b) for name, b in zip(systems, estimate["bias"])},
                       tuple(levels.tolist()), tuple(np.asarray(estimate.get("thresholds", [])).tolist()),
                       float(estimate.get("location", 0.0)), float(estimate.get("spread", 1.0)), se)


def _flat(estimate: dict) -> np.ndarray:
    parts = [[estimate["correlation"]], estimate["bias"], estimate.get("thresholds", []),
             [estimate["location"], estimate["spread"]] if "spread" in estimate else []]
    return np.concatenate([np.asarray(p, float) for p in parts])


def _bootstrap_se(table, systems, human, mean_var, scale, levels, resamples, seed, label) -> dict:
    rng = bootstrap_rng(int(seed), label)
    documents, codes = np.unique(table["document"].astype(str).to_numpy(), return_inverse=True)
    order = np.argsort(codes, kind="stable")
    starts = np.searchsorted(codes[order], np.arange(documents.size + 1))
    draws = []
    for _ in range(resamples):
        chosen = rng.integers(0, documents.size, documents.size)
        rows = np.concatenate([order[starts[d]:starts[d + 1]] for d in chosen])
        sample = table.iloc[rows].assign(document=np.repeat(np.arange(chosen.size), starts[chosen + 1] - starts[chosen]))
        try:
            draws.append(_flat(_fit_once(_reduce(sample, systems), human, mean_var, scale, levels)))
        except (DataError, ValueError, IndexError):
            continue
    sd = np.std(np.array(draws), axis=0, ddof=1)
    se = {"correlation": float(sd[0]), "bias": {name: float(v) for name, v in zip(systems, sd[1:1 + len(systems)])}}
    rest = sd[1 + len(systems):]
    if scale == ORDINAL:
        se["thresholds"] = rest.tolist()
    else:
        se["location"], se["spread"] = float(rest[0]), float(rest[1])
    se["resamples"] = len(draws)
    return se


# ---------------------------------------------------------------------------------------------------------
# Simulated tables with the pilot's design, and the predictive check
# ---------------------------------------------------------------------------------------------------------

def simulate_judge_table(model, judge: FittedJudge, table: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    """A table with ``table``'s design (its rows; annotators as given, or one per human score) from the model
    and the fitted judge: fresh document parts, annotator parts, judge noise and human noise."""
    systems = {name: k for k, name in enumerate(model.systems)}
    s = table["system"].map(systems).to_numpy(int)
    docs, d = np.unique(table["document"].astype(str).to_numpy(), return_inverse=True)
    has_human = table["human"].notna().to_numpy()
    if "annotator" in table.columns:
        _, a = np.unique(table["annotator"].astype(str).fillna("").to_numpy(), return_inverse=True)
    else:
        a = np.cumsum(has_human) - 1
    from simdesign.model.common import fixed_order_product
    doc_part = fixed_order_product(rng.standard_normal((docs.size, model.n_systems)), model._document_loading.T)
    ann_part = fixed_order_product(rng.standard_normal((int(a.max()) + 1 if a.size else 1, model.n_systems)),
                                   model._annotator_loading.T)
    quality = np.asarray(model.effects, float)[s] + doc_part[d, s]
    bias = np.array([judge.bias[name] for name in model.systems])
    outputs, first = np.unique(d * model.n_systems + s, return_index=True)
    noise = rng.standard_normal(outputs.size)[np.searchsorted(outputs, d * model.n_systems + s)]
    judged = judge.report(quality + bias[s] + judge.noise_sd(model) * noise)
    eta = quality + ann_part[a, s] + rng.logistic(size=s.size)
    human = np.asarray(model.scale, float)[np.searchsorted(model.thresholds, eta)]
    return table.assign(judge=judged, human=np.where(has_human, human, np.nan))


def _check_statistics(table: pd.DataFrame, systems, levels) -> np.ndarray:
    outputs = table.drop_duplicates(["system", "document"])
    values = []
    for name in systems:
        scores = outputs.loc[outputs["system"] == name, "judge"].to_numpy(float)
        values += [np.mean(scores == level) for level in levels]
    values += [outputs.loc[outputs["system"] == name, "judge"].mean() for name in systems]
    human = table[table["human"].notna()]
    for name in list(systems) + [None]:
        rows = human if name is None else human[human["system"] == name]
        ok = len(rows) > 2 and rows["judge"].std() > 0 and rows["human"].std() > 0
        values.append(np.corrcoef(rows["judge"], rows["human"])[0, 1] if ok else np.nan)
    return np.array(values, float)


def judge_check(model, judge: FittedJudge, table: pd.DataFrame, trials: int = 200, seed: int = 0,
                label: str = "judge_check"):
    """Predictive check of a fitted judge and the human model against the pilot table (module docstring).

    Returns ``(table, simulated)`` like :func:`simdesign.realdata.check.predictive_check`: one row per statistic
    (``share`` per system and judge score, ``mean`` of the judge per system, ``judge_human_correlation`` per
    system and over all, system ``""``) with ``observed, sim_mean, sim_low, sim_high, inside, p_two_sided``.
    """
    systems = list(model.systems)
    levels = list(judge.levels)
    observed = _check_statistics(table, systems, levels)
    simulated = np.array([_check_statistics(simulate_judge_table(model, judge, table,
                                                                 check_rng(int(seed), label, trial)),
                                            systems, levels) for trial in range(trials)])
    labels = ([("share", name, level) for name in systems for level in levels]
              + [("mean", name, None) for name in systems]
              + [("judge_human_correlation", name, None) for name in systems + [""]])
    low, high = np.nanpercentile(simulated, RANGE, axis=0)
    below, above = (simulated <= observed).mean(axis=0), (simulated >= observed).mean(axis=0)
    out = pd.DataFrame({"statistic": [lab[0] for lab in labels], "system": [lab[1] for lab in labels],
                        "category": [lab[2] for lab in labels], "observed": observed,
                        "sim_mean": np.nanmean(simulated, axis=0), "sim_low": low, "sim_high": high})
    out["inside"] = (out["observed"] >= out["sim_low"]) & (out["observed"] <= out["sim_high"])
    out["p_two_sided"] = np.minimum(1.0, 2 * np.minimum(below, above))
    keep = out["observed"].notna().to_numpy()
    return out[keep].reset_index(drop=True), simulated[:, keep]


def from_judge(judge, model) -> FittedJudge:
    """The parameters of a model judge (:class:`simdesign.model.judge.Judge`) as the fit reports them: biases
    centred, a Likert judge's thresholds on the latent scale, a probability judge as ``expit(location +
    spread J*)`` (for recovery checks, and to check a judge assumed rather than fitted)."""
    bias = judge.bias_vector(model.systems)
    centre, spread = judge.marginal(model)
    shift = float(bias.mean())
    centred = {name: float(b - shift) for name, b in zip(model.systems, bias)}
    if judge.scale == ORDINAL:
        cuts = centre - shift + spread * special.ndtri(np.arange(1, judge.levels) / judge.levels)
        return FittedJudge(tuple(model.systems), ORDINAL, judge.correlation, centred,
                           tuple(float(k) for k in range(1, judge.levels + 1)), tuple(cuts.tolist()))
    if judge.scale == PROBABILITY:
        slope = PROBABILITY_SLOPE / spread
        return FittedJudge(tuple(model.systems), PROBABILITY, judge.correlation, centred,
                           location=float(slope * (shift - centre)), spread=float(slope))
    return FittedJudge(tuple(model.systems), CONTINUOUS, judge.correlation, centred, location=shift)
