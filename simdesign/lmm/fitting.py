"""Fitting: theta by L-BFGS-B on the profiled deviance, and the fit's result.

Part of :mod:`simdesign.lmm`; the model and the algorithm are described in that package's docstring.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
from scipy.linalg import null_space
from scipy.optimize import minimize

from simdesign.clmm.prepare import _columns, _forms, _nested_codes
from simdesign.core.judgements import Judgements
from simdesign.core.seeds import helper_rng
from simdesign.core.threads import single_threaded
from simdesign.lmm import slopes, structured
from simdesign.lmm.deviance import Profiled, profile, split_theta
from simdesign.lmm.problem import Problem, _level_sums, lower_triangle, prepare
from simdesign.stats.contrasts import ERROR, NOT_CONVERGED, OK, SINGULAR, SINGULAR_TOLERANCE

# A fit whose projected gradient of the deviance exceeds this is 'not_converged': lme4's tolerance on the
# gradient of its deviance (check.conv.grad, 0.002).
CONVERGENCE_GRADIENT_TOLERANCE = 2e-3
# L-BFGS-B stops when the projected gradient is below this or the deviance changes by less than
# FTOL relative: far tighter than lme4's BOBYQA, so that the deviance is at its optimum to about 1e-8.
PGTOL = 1e-7
FTOL = 1e-15
MAX_ITERATIONS = 2000
MAX_EVALUATIONS = 5000
# A fit often stops where a factor's diagonal element and the column below it are zero: the deviance is even
# in that column (its sign does not change L L'), so its gradient there is zero and a gradient method cannot
# leave, though the point may be a maximum along the column or a lower optimum may lie off the boundary
# (lme4's derivative-free BOBYQA probes around it). Such a fit is refitted, up to ESCAPE_ROUNDS times while
# the criterion falls by more than ESCAPE_MIN_GAIN, from two starts, keeping the lower optimum: all stuck
# elements set to ESCAPE_START, and the lowest of the points with the stuck elements (each alone, then all)
# set to ESCAPE_PROBES if one is below the fit (a descent off the boundary). Measured: a crossed 3 x 40 intercepts fit stuck at a maximum
# 0.95 above lme4's optimum reaches it; on the paper's Likert files the maximal fits end at or below lme4's
# optimum (REML criterion 1.15 below it on Coherence, 0.0002 on Repetition).
ESCAPE_PROBES = (0.01, 0.05, 0.1, 0.2, 0.5)
ESCAPE_START = 0.2
ESCAPE_ROUNDS = 3
ESCAPE_MIN_GAIN = 1e-6


@dataclass
class LmmResult:
    """One linear mixed model fit.

    Attributes
    ----------
    systems : tuple
        Model order; ``beta[0]`` is the reference's mean, ``beta[s]`` system s's difference from it.
    beta : ndarray
        Fixed effects (intercept, then one per non-reference system).
    covariance : ndarray
        Their covariance ``sigma^2 (X' V^-1 X)^-1`` at the fit (lme4's ``vcov``).
    theta : ndarray
        Relative covariance factors, terms in ``terms`` order, each column-major lower triangle.
    sigma : float
        Residual standard deviation.
    deviance : float
        The REML criterion (``reml``) or -2 log-likelihood at the optimum, lme4's scale.
    status : {'ok', 'singular', 'not_converged', 'error'}
    """

    systems: tuple
    structure: str
    terms: tuple
    reml: bool
    beta: np.ndarray
    covariance: np.ndarray
    theta: np.ndarray
    sigma: float
    deviance: float
    status: str
    message: str = ""
    gradient_max: float = float("nan")
    evaluations: int = 0
    # the general path's Problem, or (fast path) a function that makes it when first asked for (Kenward-Roger,
    # likelihood ratios): the fast path itself needs only its sufficient statistics
    source: object = field(default=None, repr=False)
    # a fast path's state at the optimum (simdesign.lmm.structured.InterceptsState or
    # simdesign.lmm.slopes.SlopesState: its satterthwaite method gives the df), None on the general path
    structured: object = field(default=None, repr=False)
    observations: int = 0

    @property
    def problem(self) -> Problem | None:
        """The general path's problem of the data (made on first use after a fast-path fit)."""
        if callable(self.source):
            self.source = self.source()
        return self.source

    @property
    def loglik(self) -> float:
        """The log-likelihood lme4 reports: the REML log-likelihood of a REML fit."""
        return -0.5 * self.deviance

    @property
    def n_obs(self) -> int:
        return self.observations

    def random_covariances(self) -> dict:
        """Term name -> covariance matrix of its random effects, ``sigma^2 L L'``."""
        factors = split_theta(self.problem, self.theta)
        return {name: self.sigma ** 2 * factor @ factor.T for name, factor in factors.items()}


def _bounds(problem: Problem) -> list:
    lower = np.concatenate([term.lower_bounds for term in problem.terms])
    return [(None if not np.isfinite(value) else value, None) for value in lower]


def _start(problem: Problem) -> np.ndarray:
    """lme4's start: identity relative factors (each random effect as variable as the residual)."""
    parts = []
    for term in problem.terms:
        rows, cols = lower_triangle(term.q)
        parts.append((rows == cols).astype(float))
    return np.concatenate(parts)


def _projected_gradient(problem: Problem, theta: np.ndarray, gradient: np.ndarray) -> np.ndarray:
    """The gradient with the components that push a bounded element below its bound set to zero."""
    lower = np.concatenate([term.lower_bounds for term in problem.terms])
    at_bound = (theta <= lower) & (gradient > 0)
    return np.where(at_bound, 0.0, gradient)


def is_singular(problem: Problem, theta: np.ndarray) -> bool:
    """lme4's isSingular: an element bounded at zero (a factor's diagonal) below 1e-4."""
    lower = np.concatenate([term.lower_bounds for term in problem.terms])
    return bool(np.any((lower == 0) & (theta < SINGULAR_TOLERANCE)))


def optimise(problem: Problem, reml: bool = True, start: np.ndarray | None = None) -> tuple:
    """The optimum of the profiled deviance: (theta, Profiled, optimiser result, evaluations)."""
    count = [0]

    def objective(theta):
        count[0] += 1
        profiled, gradient = profile(problem, theta, gradient=True, reml=reml)
        return profiled.deviance(problem.n_obs, reml), gradient

    def run(x0):
        found = minimize(objective, x0, jac=True, method="L-BFGS-B", bounds=_bounds(problem),
                         options={"maxiter": MAX_ITERATIONS, "maxfun": MAX_EVALUATIONS, "ftol": FTOL,
                                  "gtol": PGTOL, "maxcor": 20})
        return np.asarray(found.x, float), found

    theta, result = run(_start(problem) if start is None else start)
    lower = np.concatenate([term.lower_bounds for term in problem.terms])
    for _ in range(ESCAPE_ROUNDS):
        stuck = (lower == 0) & (theta < SINGULAR_TOLERANCE)
        if not stuck.any():
            break
        starts = [np.where(stuck, ESCAPE_START, theta)]
        descent = _descent_start(problem, theta, stuck, result.fun, reml)
        if descent is not None:
            starts.append(descent)
        trial, found = min((run(x0) for x0 in starts), key=lambda pair: pair[1].fun)
        if not found.fun < result.fun - ESCAPE_MIN_GAIN:
            break
        theta, result = trial, found
    return theta, profile(problem, theta), result, count[0]


def _descent_start(problem: Problem, theta: np.ndarray, stuck: np.ndarray, value: float, reml: bool):
    """The lowest probe off the boundary below the fit (see ESCAPE_PROBES), or None."""
    masks = [np.arange(len(theta)) == k for k in np.flatnonzero(stuck)] + [stuck]
    best, best_value = None, value - ESCAPE_MIN_GAIN
    for mask in masks:
        for probe in ESCAPE_PROBES:
            candidate = np.where(mask, probe, theta)
            try:
                found = profile(problem, candidate).deviance(problem.n_obs, reml)
            except np.linalg.LinAlgError:
                continue
            if found < best_value:
                best, best_value = candidate, found
    return best


def fit(judgements, structure="maximal", reml: bool = True, fast: bool = True) -> LmmResult:
    """Fit ``score ~ system + random terms`` by (RE)ML, as ``lme4::lmer``.

    Parameters
    ----------
    judgements : Judgements or pandas.DataFrame
        A long table needs columns annotator, document, system, score.
    structure : {'maximal', 'intercepts', 'paper'} or mapping
        As for :func:`simdesign.clmm.fit`.
    reml : bool
        REML (lme4's default) or maximum likelihood.
    fast : bool
        Random intercepts only: fit by :mod:`simdesign.lmm.structured` (sufficient statistics, Newton in the
        variance ratios; the same optimum); one term with slopes and at most one intercept term (``annotator:
        slopes, document: intercept``, or 'paper' on nested data): by :mod:`simdesign.lmm.slopes` (the same
        statistics, trust-region Newton in theta). False: the general path for every structure, the reference
        the fast paths are tested against.

    Returns
    -------
    LmmResult
        Status 'error' (with the message) when the data cannot be fitted (e.g. a rank-deficient design).
    """
    label = structure if isinstance(structure, str) else "+".join(f"{k}:{v}" for k, v in structure.items())
    if fast:
        problem, systems = _fast_problem(judgements, structure)
        if problem is not None:
            return _fit_fast(problem, lambda: prepare(judgements, structure), systems, label, reml)
    problem = prepare(judgements, structure)
    terms = tuple(term.name for term in problem.terms)
    refusal = _refusal(problem)
    if refusal:
        return _failed(problem, label, terms, reml, refusal)
    try:
        with single_threaded():  # the same rounding for every caller, as clmm.fit (simdesign.core.threads)
            theta, profiled, result, evaluations = optimise(problem, reml)
            _, gradient = profile(problem, theta, gradient=True, reml=reml)
    except np.linalg.LinAlgError as exc:
        return _failed(problem, label, terms, reml, f"linear algebra failed: {exc}")
    gradient_max = float(np.max(np.abs(_projected_gradient(problem, theta, gradient)), initial=0.0))
    sigma = profiled.sigma(problem.n_obs, reml)
    covariance = sigma ** 2 * np.linalg.inv(profiled.reduced[:problem.n_fixed, :problem.n_fixed])
    status, message = _status(problem, theta, gradient_max, result)
    return LmmResult(systems=problem.systems, structure=label, terms=terms, reml=reml, beta=profiled.beta,
                     covariance=covariance, theta=theta, sigma=sigma,
                     deviance=profiled.deviance(problem.n_obs, reml), status=status, message=message,
                     gradient_max=gradient_max, evaluations=evaluations, source=problem,
                     observations=problem.n_obs)


def _fast_problem(judgements, structure) -> tuple:
    """(a fast path's problem, intercepts' or slopes', or None; the systems in model order)."""
    if isinstance(judgements, Judgements) and judgements.complete:  # a complete study: straight from its pairs
        forms = None
        if isinstance(structure, str) and structure == "intercepts":
            forms = {"annotator": "intercept", "document": "intercept"}
            problem = structured.complete_intercepts_problem(judgements, forms)
        elif not isinstance(structure, str):
            forms = _forms(structure, None)  # a mapping: never asks whether the data are nested
            problem = slopes.complete_slopes_problem(judgements, forms)
        if forms is not None and problem is not None:
            return problem, tuple(judgements.systems)
    columns = _columns(judgements)
    forms = _forms(structure, lambda: _nested_codes(columns.codes["document"], columns.codes["annotator"]))
    problem = structured.intercepts_problem(columns, forms)
    if problem is None:
        problem = slopes.slopes_problem(columns, forms)
    return problem, tuple(columns.appearing)


def _fast_failure(problem, general, systems, label, reml, message) -> LmmResult:
    p = problem.n_fixed
    n_theta = len(problem.names) if isinstance(problem, structured.InterceptsProblem) else (
        problem.n_lower + (1 if problem.eliminated else 0))
    return LmmResult(systems=systems, structure=label, terms=problem.names, reml=reml, beta=np.full(p, np.nan),
                     covariance=np.full((p, p), np.nan), theta=np.full(n_theta, np.nan), sigma=float("nan"),
                     deviance=float("nan"), status=ERROR, message=message, source=general, observations=problem.n_obs)


def _fit_fast(problem, general, systems: tuple, label: str, reml: bool) -> LmmResult:
    """A fast path's fit (:mod:`simdesign.lmm.structured` or :mod:`simdesign.lmm.slopes`) as an
    :class:`LmmResult`; ``general`` makes the general path's Problem when a caller needs it."""
    terms, p = problem.names, problem.n_fixed
    with_slopes = isinstance(problem, slopes.SlopesProblem)
    per_level = {name: (problem.q if with_slopes and name == problem.kept else 1) for name in terms}
    refusal = _refusal_of(problem.n_obs, p, bool(np.all(problem.system_counts > 0)),
                          [(name, problem.n_levels[name], per_level[name]) for name in terms])
    if refusal:
        return _fast_failure(problem, general, systems, label, reml, refusal)
    try:
        with single_threaded():
            found = slopes.fit_slopes(problem, reml) if with_slopes else structured.fit_intercepts(problem, reml)
    except np.linalg.LinAlgError as exc:
        return _fast_failure(problem, general, systems, label, reml, f"linear algebra failed: {exc}")
    status, message = OK, ""
    singular = [name for name, diagonal in zip(terms, _diagonals(found.theta, terms, per_level))
                if np.any(diagonal < SINGULAR_TOLERANCE)]
    if not np.isfinite(found.gradient_max) or found.gradient_max > CONVERGENCE_GRADIENT_TOLERANCE:
        status = NOT_CONVERGED
        method = "trust-region Newton in theta" if with_slopes else "Newton in the variance ratios"
        message = (f"failed to converge: max|projected gradient| = {found.gradient_max:.3g} "
                   f"({method}, {'converged' if found.converged else 'iteration limit'})")
    elif singular:
        status = SINGULAR
        message = "boundary (singular) fit: " + ", ".join(singular)
    return LmmResult(systems=systems, structure=label, terms=terms, reml=reml, beta=found.beta,
                     covariance=found.covariance, theta=found.theta, sigma=found.sigma, deviance=found.deviance,
                     status=status, message=message, gradient_max=found.gradient_max,
                     evaluations=found.evaluations, source=general, structured=found.state,
                     observations=problem.n_obs)


def _diagonals(theta: np.ndarray, terms: tuple, per_level: dict) -> list:
    """Per term, the diagonal elements of its relative factor in ``theta`` (structure order)."""
    out, start = [], 0
    for name in terms:
        q = per_level[name]
        if q == 1:  # an intercept: its one element
            out.append(theta[start:start + 1])
            start += 1
            continue
        columns = np.arange(q)
        out.append(theta[start + columns * q - columns * (columns - 1) // 2])  # column c's first element
        start += q * (q + 1) // 2
    return out


def _refusal(problem: Problem) -> str:
    """Why lme4 would refuse these data ('' when it fits them): its checks of the grouping factors."""
    return _refusal_of(problem.n_obs, problem.n_fixed, np.linalg.matrix_rank(problem.x) == problem.n_fixed,
                       [(term.name, term.n_levels, term.q) for term in problem.terms])


def _refusal_of(n_obs: int, n_fixed: int, estimable: bool, terms: list) -> str:
    """:func:`_refusal` from the counts: ``terms`` as (name, levels, random effects per level)."""
    if not estimable or n_obs <= n_fixed:
        return "the fixed effects are not estimable (rank-deficient design)"
    for name, n_levels, q in terms:
        if n_levels < 2:
            return f"grouping factors must have > 1 sampled level ({name} has {n_levels})"
        if n_levels >= n_obs:
            return f"number of levels of each grouping factor must be < number of observations ({name})"
        if n_levels * q >= n_obs:
            # lme4's check.nobs.vs.nRE: the variance parameters would not be identifiable
            return (f"number of observations (={n_obs}) <= number of random effects "
                    f"(={n_levels * q}) for term ({name}); the random-effects parameters and "
                    "the residual variance are probably unidentifiable")
    return ""


def _status(problem: Problem, theta: np.ndarray, gradient_max: float, result) -> tuple:
    """The fit's status and message, lme4's rules: a convergence failure first, then a boundary fit."""
    if not np.isfinite(gradient_max) or gradient_max > CONVERGENCE_GRADIENT_TOLERANCE:
        return NOT_CONVERGED, (f"failed to converge: max|projected gradient| = {gradient_max:.3g} "
                               f"({result.message})")
    if is_singular(problem, theta):
        return SINGULAR, "boundary (singular) fit: " + ", ".join(_singular_terms(problem, theta))
    return OK, ""


def _singular_terms(problem: Problem, theta: np.ndarray) -> list:
    names, start = [], 0
    for term in problem.terms:
        part = theta[start:start + term.n_theta]
        rows, cols = lower_triangle(term.q)
        if np.any(part[rows == cols] < SINGULAR_TOLERANCE):
            names.append(term.name)
        start += term.n_theta
    return names


def _failed(problem, label, terms, reml, message) -> LmmResult:
    p = problem.n_fixed
    return LmmResult(systems=problem.systems, structure=label, terms=terms, reml=reml, beta=np.full(p, np.nan),
                     covariance=np.full((p, p), np.nan), theta=np.full(problem.n_theta, np.nan), sigma=float("nan"),
                     deviance=float("nan"), status=ERROR, message=message, source=problem,
                     observations=problem.n_obs)




def with_fixed_design(problem: Problem, x: np.ndarray) -> Problem:
    """The problem with the fixed-effects design ``x`` instead (same random effects and scores): the sums
    that involve X are made again, the rest is shared."""
    xy = np.column_stack([x, problem.y])
    changed = {"x": x, "xy_cross": xy.T @ xy,
               "e_rhs": _level_sums(problem.eliminated.codes, problem.eliminated.n_levels,
                                    problem.eliminated.z[:, :, None] * xy[:, None, :])}
    if problem.kept is not None:
        changed["k_rhs"] = _level_sums(problem.kept.codes, problem.kept.n_levels,
                                       problem.kept.z[:, :, None] * xy[:, None, :])
    return replace(problem, **changed)


def likelihood_ratios(fit: LmmResult, rows: np.ndarray) -> np.ndarray:
    """Per contrast row c (over the fixed effects), the likelihood-ratio statistic of c' beta = 0.

    ``fit`` must be an ML fit (REML criteria of different fixed effects are not comparable). The constrained
    model has the fixed-effects design X N, N a basis of the null space of c (the constraint built in), and
    is fitted by ML from the fit's theta, with the same boundary escapes. A constrained optimum above the
    fit's (less likely than the unconstrained one by more than rounding) means one of them stopped at a worse
    local optimum; the statistic is then 0 (no evidence against the constraint), never negative.
    """
    if fit.reml:
        raise ValueError("likelihood-ratio tests need an ML fit (estimation: ml)")
    out = np.empty(len(rows))
    with single_threaded():
        for k, row in enumerate(rows):
            constrained = with_fixed_design(fit.problem, fit.problem.x @ null_space(row[None, :]))
            _, profiled, _, _ = optimise(constrained, reml=False, start=fit.theta)
            out[k] = max(0.0, profiled.deviance(constrained.n_obs, False) - fit.deviance)
    return out


def warm_up() -> bool:
    """Compile the fast paths' kernels (or load them from numba's cache) with two small fits, so that no
    study pays for it; True when numba is in use (``python -c "import simdesign.lmm as m; m.warm_up()"``)."""
    from simdesign import BlockDesign, load_model
    from simdesign.lmm.compiled import is_compiled

    study = load_model("coherence").sample(BlockDesign(1, 12, 3), helper_rng("lmm/warm-up"))
    for structure in ("intercepts", {"annotator": "slopes", "document": "intercept"}):
        fitted = fit(study, structure)
        fitted.structured.satterthwaite(fitted.sigma, fitted.covariance, np.eye(len(fitted.beta)))
    return is_compiled()


__all__ = ["LmmResult", "Profiled", "fit", "is_singular", "likelihood_ratios", "optimise", "warm_up",
           "with_fixed_design"]
