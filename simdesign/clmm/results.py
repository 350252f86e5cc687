"""The fitted model (:class:`ClmmResult`) and its statsmodels-style summary (:class:`ClmmSummary`).

Part of :mod:`simdesign.clmm`; the model and the algorithm are described in that package's docstring.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from simdesign.stats.contrasts import system_pairs, wald_contrasts

from simdesign.clmm.prepare import TERM_NAMES


def _term_formula(name: str, covariance: np.ndarray) -> str:
    return f"(1 + system | {name})" if np.shape(covariance)[0] > 1 else f"(1 | {name})"


class ClmmSummary:
    """A printable summary of a :class:`ClmmResult`, in the style of statsmodels' ``Summary``.

    ``str(summary)`` (and ``print(summary)``, and the notebook repr) is the text;
    the parts are also kept as data so that code need not parse the text.

    Attributes
    ----------
    info : dict
        Label -> value of the header (formula, counts, log-likelihood, status, diagnostics).
    coefficients : pandas.DataFrame
        One row per threshold and per non-reference fixed effect; columns
        ``estimate, se, z, p, ci_lower, ci_upper`` (normal 95% intervals; NaN where
        the variance is not available or not positive).
    random_effects : pandas.DataFrame
        One row per term and component: ``term, component, sd`` and the correlations
        with the term's earlier components.
    """

    def __init__(self, info: dict, coefficients: pd.DataFrame, random_effects: pd.DataFrame, notes: list):
        self.info = info
        self.coefficients = coefficients
        self.random_effects = random_effects
        self.notes = notes

    def as_text(self) -> str:
        """The summary as plain text (what ``str()`` returns)."""
        width = max(len(label) for label in self.info)
        rule = "=" * 78
        lines = [rule, "Cumulative link mixed model (logit link, Laplace approximation)".center(78), rule]
        lines += [f"{label:<{width}}  {value}" for label, value in self.info.items()]
        lines += ["-" * 78, "Thresholds and fixed effects (Wald z, normal 95% CI):",
                  self.coefficients.to_string(float_format=lambda v: f"{v:.4f}"), "-" * 78,
                  "Random effects (standard deviations and correlations):"]
        lines.append(self.random_effects.to_string(index=False, float_format=lambda v: f"{v:.4f}", na_rep="")
                     if len(self.random_effects) else "none")
        lines += ["=" * 78] + [f"Note: {note}" for note in self.notes]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.as_text()

    def __repr__(self) -> str:
        return self.as_text()


def _summary(result) -> ClmmSummary:
    """Build the :class:`ClmmSummary` of a fit (see :meth:`ClmmResult.summary`)."""
    formula = "score ~ system" + "".join(f" + {_term_formula(name, result.random_effects_cov[name])}"
                                         for name in result.terms)
    info = {"Formula:": formula, "Structure:": result.structure,
            "Reference system:": result.systems[0] if result.systems else "-",
            "Judgements:": result.n_obs}
    for name in TERM_NAMES:
        if name in result.n_levels:
            info[f"{name.capitalize()}s:"] = result.n_levels[name]
    info.update({"Log-likelihood:": f"{result.loglik:.4f}", "Status:": result.status,
                 "Converged:": result.converged, "Starts:": result.starts_text,
                 "Max |projected gradient|:": f"{result.max_gradient:.3g}",
                 "Hessian condition:": f"{result.hessian_condition:.3g}",
                 "Laplace evaluations:": result.n_evaluations, "Seconds:": f"{result.seconds:.2f}"})
    n_thr = len(result.thresholds)
    names = [f"threshold {result.categories[k]:g}|{result.categories[k + 1]:g}" for k in range(n_thr)]
    names += [f"system[{s}]" for s in result.systems[1:]]
    estimate = np.concatenate([result.thresholds, [result.fixed_effects[s] for s in result.systems[1:]]])
    if result.parameter_cov is not None:
        variance = np.diag(result.parameter_cov)[:len(estimate)]
    else:  # no Hessian: the effects' covariance is NaN too, thresholds have no SE
        variance = np.concatenate([np.full(n_thr, np.nan), np.diag(result.fixed_effects_cov)])
    defined = np.isfinite(variance) & (variance > 0)
    se = np.where(defined, np.sqrt(np.where(defined, variance, 1.0)), np.nan)
    z = estimate / se
    half = stats.norm.ppf(0.975) * se
    coefficients = pd.DataFrame({"estimate": estimate, "se": se, "z": z, "p": 2.0 * stats.norm.sf(np.abs(z)),
                                 "ci_lower": estimate - half, "ci_upper": estimate + half}, index=names)
    rows = []
    for name in result.terms:
        cov = np.asarray(result.random_effects_cov[name])
        components = ["(intercept)"] + [f"system[{s}]" for s in result.systems[1:]][:cov.shape[0] - 1]
        sd = np.sqrt(np.clip(np.diag(cov), 0.0, None))
        for i, component in enumerate(components):
            row = {"term": name, "component": component, "sd": sd[i]}
            for j in range(i):
                row[f"corr with {j + 1}"] = cov[i, j] / (sd[i] * sd[j]) if sd[i] > 0 and sd[j] > 0 else np.nan
            rows.append(row)
    notes = [result.message] if result.message else []
    notes.append("estimates are on the latent logit scale; system effects are relative to the reference; "
                 "'corr with j' is the correlation with the term's j-th component")
    return ClmmSummary(info, coefficients, pd.DataFrame(rows), notes)


@dataclass
class ClmmResult:
    """A fitted cumulative link mixed model.

    Attributes
    ----------
    systems : list of str
        System order: the reference first, then the others in Python's sorted order.
    structure : str
        The requested structure ('maximal', 'intercepts' or 'paper'; a per-term
        mapping as 'annotator:slopes+document:intercept').
    terms : list of str
        Random-effects terms actually fitted ('annotator', 'document').
    categories : ndarray
        Observed score values (the thresholds sit between them).
    thresholds : ndarray, shape (K-1,)
    fixed_effects : dict
        System -> beta (the reference's is 0).
    fixed_effects_cov : ndarray, shape (S-1, S-1)
        Covariance of the non-reference effects, in ``systems[1:]`` order (NaN if the
        Hessian is not positive definite).
    random_effects_cov : dict
        Term -> covariance matrix (S x S for slopes, 1 x 1 for intercepts), in the order
        (intercept, slope of ``systems[1]``, ...).
    cholesky_factors : dict
        Term -> lower-triangular factor L with covariance L L' (ordinal's ``ST``).
    loglik : float
        Laplace log-likelihood, comparable with ``logLik`` of ``ordinal::clmm``.
    converged : bool
    status : str
        'ok', 'singular' (boundary fit), 'not_converged' or 'error' (docs/estimands.md).
    message : str
    max_gradient : float
        Largest projected gradient of -loglik at the optimum (bounded diagonals at 0 excluded).
    hessian_condition : float
        |largest / smallest eigenvalue| of the Hessian used for the covariances.
    boundary : dict
        Term -> boolean array: which Cholesky diagonals sit at the bound 0.
    n_obs, n_evaluations, n_inner_iterations : int
        Judgements; Laplace evaluations (optimiser, boundary probes and Hessian); Newton
        and chord steps of the mode searches.
    seconds : float
    optimizer_message : str
    parameter_cov : ndarray or None
        Inverse Hessian over the parameters that entered it: thresholds, effects, then
        each term's Cholesky diagonal and lower elements, less diagonals below 1e-3.
    n_levels : dict
        'annotator' and 'document' -> number of distinct levels in the data (fitted or not).
    starts : str
        The refit rule asked for: 'codings' or 'single' (:func:`simdesign.clmm.fit`).
    starts_tried : int
        Optimisations whose optima were compared: 1, or with the rule applied the
        default start and one start per other reference system.
    start_kept : str
        Whose optimum the result is: 'default' (ordinal's start in this coding) or
        'reference X' (the optimum of the coding against system X, mapped into this one).
    start_gain : float
        Log-likelihood gained over the default start's optimum (0 when it was kept).
    """

    systems: list
    structure: str
    terms: list
    categories: np.ndarray
    thresholds: np.ndarray
    fixed_effects: dict
    fixed_effects_cov: np.ndarray
    random_effects_cov: dict
    cholesky_factors: dict
    loglik: float
    converged: bool
    status: str
    message: str = ""
    max_gradient: float = float("nan")
    hessian_condition: float = float("nan")
    boundary: dict = field(default_factory=dict)
    n_obs: int = 0
    n_evaluations: int = 0
    n_inner_iterations: int = 0
    seconds: float = float("nan")
    optimizer_message: str = ""
    parameter_cov: np.ndarray | None = None
    n_levels: dict = field(default_factory=dict)
    starts: str = "single"
    starts_tried: int = 1
    start_kept: str = "default"
    start_gain: float = 0.0

    @property
    def starts_text(self) -> str:
        """The refit rule's outcome in words (for summaries and reports)."""
        if self.starts_tried <= 1:
            why = ("rule 'single'" if self.starts == "single"
                   else f"rule '{self.starts}': not needed, status {self.status}")
            return f"1 (default start; {why})"
        if self.start_kept == "default":
            return f"{self.starts_tried} tried (rule '{self.starts}'); kept the default start's optimum"
        return (f"{self.starts_tried} tried (rule '{self.starts}'); kept the optimum from {self.start_kept} "
                f"(log-likelihood +{self.start_gain:.4g} over the default start)")

    def __repr__(self) -> str:
        # short: print(result.summary()) shows the coefficient and random-effect tables
        reference = self.systems[0] if self.systems else "-"
        return (f"<ClmmResult {self.status}{'' if self.converged else ' (not converged)'}: {self.n_obs} judgements, "
                f"{len(self.systems)} systems (reference {reference}), random terms "
                f"{', '.join(self.terms) or 'none'}, log-likelihood {self.loglik:.2f}; .summary() for the tables>")

    def summary(self) -> ClmmSummary:
        """A statsmodels-style summary: model, counts, diagnostics, coefficient table, random effects.

        Returns
        -------
        ClmmSummary
            ``print(result.summary())`` shows the text; ``.coefficients`` and
            ``.random_effects`` hold the tables as DataFrames.
        """
        return _summary(self)

    @property
    def random_effects_sd(self) -> dict:
        """Term -> standard deviations (square roots of the covariance diagonal)."""
        return {name: np.sqrt(np.diag(cov)) for name, cov in self.random_effects_cov.items()}

    @property
    def effects(self) -> np.ndarray:
        """Fixed effects as an array in ``systems`` order (reference 0 first)."""
        return np.array([self.fixed_effects[s] for s in self.systems])

    def effects_in(self, order) -> tuple[np.ndarray, np.ndarray]:
        """Fixed effects and their covariance in another system order with the same reference.

        The fit orders systems as the reference followed by Python's sorted
        order; a model's own order (e.g. the presets' ``__REFERENCE__, abssentrw,
        BART, onmt_pg, seneca``) differs, and the pairs (docs/estimands.md) follow the model.

        Parameters
        ----------
        order : sequence of str
            All systems of the fit, the reference first.

        Returns
        -------
        effects : ndarray, shape (S,)
            The reference's 0 first, as :func:`simdesign.stats.contrasts.wald_contrasts` expects.
        covariance : ndarray, shape (S-1, S-1)
            Covariance of ``effects[1:]``.
        """
        order = list(order)
        if sorted(order) != sorted(self.systems) or order[0] != self.systems[0]:
            raise ValueError(f"order must list the systems {self.systems} with the reference "
                             f"{self.systems[0]!r} first; got {order}")
        position = [self.systems.index(s) - 1 for s in order[1:]]
        return (np.array([self.fixed_effects[s] for s in order]),
                self.fixed_effects_cov[np.ix_(position, position)])

    def contrasts(self, order=None) -> pd.DataFrame:
        """Pairwise Wald contrasts beta_i - beta_j for all pairs i < j of ``order``.

        Pairs and signs follow :func:`simdesign.stats.contrasts.wald_contrasts`, the rule
        every analysis stores (docs/estimands.md), so that a printed table and the
        stored rows agree when ``order`` is the model's system order.

        Parameters
        ----------
        order : sequence of str, optional
            All systems, the reference first; default ``systems`` (the fit's own order,
            the others sorted by name).

        Returns
        -------
        pandas.DataFrame
            Columns ``system_a, system_b, estimate, se, z, p``; two-sided normal p-values,
            unadjusted; se, z and p are NaN where the variance is not positive.
        """
        order = list(self.systems if order is None else order)
        effects, covariance = self.effects_in(order)
        estimate, se, _ = wald_contrasts(effects, covariance)
        defined = np.isfinite(se) & (se > 0)
        safe_se = np.where(defined, se, 1.0)
        z = np.where(defined, estimate / safe_se, np.nan)
        se = np.where(defined, se, np.nan)
        pairs = system_pairs(len(order))
        return pd.DataFrame({"system_a": [order[i] for i, _ in pairs], "system_b": [order[j] for _, j in pairs],
                             "estimate": estimate, "se": se, "z": z, "p": 2.0 * stats.norm.sf(np.abs(z))})
