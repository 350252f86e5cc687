"""The Laplace approximation: the random-effects mode, the value and its analytic gradient (numpy
path; the compiled path is in :mod:`simdesign.clmm.compiled`).

Part of :mod:`simdesign.clmm`; the model and the algorithm are described in that package's docstring.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simdesign.clmm.compiled import _CompiledFactorisation, _accelerator, _gradient_compiled, _mode_compiled
from simdesign.clmm.factorise import _Factorisation, _factorise, _inverse_times_loadings, _solve
from simdesign.clmm.prepare import _Problem
from simdesign.clmm.terms import (
    CHORD_MIN_REDUCTION, INNER_GRADIENT_TOLERANCE, INNER_MAX_ITERATIONS, ModeSearchError, chord_steps,
    _observation_terms,
)


@dataclass
class _Laplace:
    nll: float  # Laplace negative log-likelihood
    mode: dict
    gradient: tuple | None = None  # (thresholds, beta, {factor: q x q lower-triangular})
    inner_iterations: int = 0
    factorisation: _Factorisation | None = None


def _fixed_part(problem: _Problem, beta_full: np.ndarray) -> np.ndarray:
    return beta_full[problem.system_code]


def _mode(problem: _Problem, thresholds, beta_full, cholesky, start: dict, previous: _Factorisation | None = None):
    """Newton search for the random-effects mode (step halving as ordinal does).

    With ``previous`` (the factorisation from a nearby parameter value, e.g. the
    last optimiser step), a few chord steps with that old Hessian come first:
    each costs a solve instead of a factorisation, and from a warm start they
    usually leave a single Newton step (or none) to do.
    """
    kernels = _accelerator()
    if kernels is not None:
        return _mode_compiled(kernels, problem, thresholds, beta_full, cholesky, start, previous)
    fixed = _fixed_part(problem, beta_full)
    loadings = {f.name: problem.z @ cholesky[f.name] for f in problem.factors}

    def evaluate(u):
        eta = fixed.copy()
        for f in problem.factors:
            eta += np.einsum("ni,ni->n", loadings[f.name], u[f.name][f.codes])
        terms = _observation_terms(problem, thresholds, eta)
        value = -terms.log_prob.sum() + 0.5 * sum(float((u[f.name] ** 2).sum()) for f in problem.factors)
        return value, terms

    def gradient(u, terms):
        return {f.name: np.asarray(f.indicator @ (loadings[f.name] * terms.g[:, None])) + u[f.name]
                for f in problem.factors}

    def largest(grad):
        return max(float(np.abs(g).max()) for g in grad.values())

    u = {name: value.copy() for name, value in start.items()}
    try:
        value, terms = evaluate(u)
    except ModeSearchError:
        u = {name: np.zeros_like(value) for name, value in start.items()}
        value, terms = evaluate(u)
    grad = gradient(u, terms)
    max_grad = largest(grad)
    iterations = 0
    chord_steps_left = chord_steps(problem.q) if previous is not None else 0
    while max_grad >= INNER_GRADIENT_TOLERANCE:
        if iterations >= INNER_MAX_ITERATIONS:
            raise ModeSearchError(f"no random-effects mode after {iterations} Newton steps (max|grad| {max_grad:.2g})")
        chord = chord_steps_left > 0
        step = _solve(problem, previous if chord else _factorise(problem, cholesky, terms.w), grad)
        factor = 1.0
        while True:
            trial = {name: u[name] - factor * step[name] for name in u}
            try:
                trial_value, trial_terms = evaluate(trial)
            except ModeSearchError:
                trial_value = np.inf
            if trial_value <= value + 1e-12 * abs(value):
                break
            factor /= 2.0
            if chord or factor < 1e-10:
                break
        if trial_value > value + 1e-12 * abs(value):
            if chord:  # the old Hessian is too far off: continue with true Newton steps
                chord_steps_left = 0
                continue
            if max_grad < 1e-6:  # rounding limits the last digits; the mode is accurate enough
                break
            raise ModeSearchError(f"Newton step halving failed (max|grad| {max_grad:.2g})")
        u, value, terms = trial, trial_value, trial_terms
        grad = gradient(u, terms)
        new_max_grad = largest(grad)
        if chord:
            # Chord steps converge only linearly: stop once they stop paying for themselves.
            chord_steps_left = chord_steps_left - 1 if new_max_grad < CHORD_MIN_REDUCTION * max_grad else 0
        max_grad = new_max_grad
        iterations += 1
    fact = _factorise(problem, cholesky, terms.w)
    return u, value, terms, fact, loadings, iterations


def _laplace(problem: _Problem, thresholds, beta, cholesky, start: dict, with_gradient: bool,
             previous: _Factorisation | None = None) -> _Laplace:
    beta_full = np.concatenate([[0.0], beta])
    u, value, terms, fact, loadings, iterations = _mode(problem, thresholds, beta_full, cholesky, start, previous)
    nll = value + 0.5 * fact.log_det
    result = _Laplace(nll=float(nll), mode=u, inner_iterations=iterations, factorisation=fact)
    if not with_gradient:
        return result
    if isinstance(fact, _CompiledFactorisation):
        result.gradient = _gradient_compiled(_accelerator(), problem, u, fact)
        return result
    # Implicit-function gradient of f(u(phi), phi) + 0.5 log det H(u(phi), phi): the package's Notes
    # (simdesign/clmm/__init__.py).
    eta = _fixed_part(problem, beta_full)
    for f in problem.factors:
        eta = eta + np.einsum("ni,ni->n", loadings[f.name], u[f.name][f.codes])
    terms = _observation_terms(problem, thresholds, eta, third_order=True)
    y = _inverse_times_loadings(problem, fact, loadings)
    leverage = sum(np.einsum("ni,ni->n", loadings[f.name], y[f.name]) for f in problem.factors)
    # r = H^-1 d(0.5 log det H)/du carries the dependence of the log-determinant on the mode.
    half_logdet_du = {f.name: np.asarray(f.indicator @ (loadings[f.name] * (0.5 * terms.w_prime * leverage)[:, None]))
                      for f in problem.factors}
    r = _solve(problem, fact, half_logdet_du)
    rho = sum(np.einsum("ni,ni->n", loadings[f.name], r[f.name][f.codes]) for f in problem.factors)
    eta_weight = terms.g + 0.5 * leverage * terms.w_prime - rho * terms.w
    grad_beta = (problem.system_indicator @ eta_weight)[1:]
    upper_weight = terms.dl_upper + 0.5 * leverage * terms.dw_upper - rho * terms.dg_upper
    lower_weight = terms.dl_lower + 0.5 * leverage * terms.dw_lower - rho * terms.dg_lower
    grad_thresholds = problem.threshold_upper @ upper_weight + problem.threshold_lower @ lower_weight
    grad_cholesky = {}
    for f in problem.factors:
        per_obs = (eta_weight[:, None] * u[f.name][f.codes] + terms.w[:, None] * y[f.name]
                   - terms.g[:, None] * r[f.name][f.codes])
        grad_cholesky[f.name] = np.tril(problem.z.T @ per_obs)
    result.gradient = (np.asarray(grad_thresholds), np.asarray(grad_beta), grad_cholesky)
    return result
