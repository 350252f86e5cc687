"""Small-sample degrees of freedom for the pairwise contrasts of a fitted CLMM.

The rules, and why, are in docs/model.md ("Small-sample corrections"); they were written there before
they were measured. Both keep the Wald statistic of :meth:`ClmmResult.contrasts` and give a t reference
distribution its degrees of freedom, one per system pair (i, j), i < j in the order asked for:

- :func:`containment_df`: from the design alone, the smallest (levels - 1) over the fitted terms that
  carry system slopes, counting the levels that judged both systems of the pair;
- :func:`satterthwaite_df`: df = 2 V^2 / Var(V) from the Laplace fit, V the contrast's variance as a
  function of the Cholesky elements at the fitted thresholds and effects, Var(V) by the delta method.

Part of :mod:`simdesign.clmm`; it reads a finished fit and never changes how a fit is made.
"""
from __future__ import annotations

import numpy as np

from simdesign.core.threads import single_threaded
from simdesign.stats.contrasts import system_pairs

from simdesign.clmm.layout import _Layout, _Objective
from simdesign.clmm.optimise import HESSIAN_BOUNDARY
from simdesign.clmm.prepare import _Problem, _prepare
from simdesign.clmm.results import ClmmResult

DF_RULES = ("z", "design", "satterthwaite")
"""The reference distributions of ``clmm_native``'s option ``df`` (docs/model.md)."""

# Central differences of the analytic gradient for the Hessian in (thresholds, effects): the gradient is
# accurate to about 1e-8 (the mode search stops at 1e-9), so a relative step of 1e-4 leaves ~1e-4
# absolute noise in entries of size 10-1000, and the truncation error (order step^2) is far below it.
HESSIAN_STEP = 1e-4


def _pair_positions(fit: ClmmResult, order) -> list[tuple[int | None, int | None]]:
    """Each pair's two systems as positions among the fit's non-reference effects (None: the reference)."""
    order = list(order)
    if sorted(order) != sorted(fit.systems) or order[0] != fit.systems[0]:
        raise ValueError(f"order must list the systems {fit.systems} with the reference "
                         f"{fit.systems[0]!r} first; got {order}")

    def position(name):
        return None if name == fit.systems[0] else fit.systems.index(name) - 1

    return [(position(order[i]), position(order[j])) for i, j in system_pairs(len(order))]


def containment_df(judgements, fit: ClmmResult, order=None, structure="maximal") -> np.ndarray:
    """Containment degrees of freedom of every pairwise contrast (docs/model.md).

    Parameters
    ----------
    judgements : pandas.DataFrame or simdesign.core.judgements.Judgements
        The data the fit was made from.
    fit : ClmmResult
        Its fit (any status with estimates).
    order : sequence of str, optional
        All systems, the reference first; default ``fit.systems``.
    structure : str or mapping
        The structure the fit was made with.

    Returns
    -------
    ndarray, shape (n_pairs,)
        For each pair, min over the fitted terms with system slopes of (levels that judged both
        systems) - 1; with no such term, judgements - thresholds - (systems - 1).
    """
    order = list(fit.systems if order is None else order)
    if isinstance(structure, str) and structure == "intercepts":
        # no term with slopes: the residual count, from the fit's own counts (the data need not be prepared
        # again; the fit's systems are the problem's)
        pairs = [(fit.systems.index(order[i]), fit.systems.index(order[j])) for i, j in system_pairs(len(order))]
        residual = fit.n_obs - (len(fit.categories) - 1) - (len(fit.systems) - 1)
        return np.full(len(pairs), float(residual))
    problem = _prepare(judgements, structure, fit.systems[0])
    pairs = [(problem.systems.index(order[i]), problem.systems.index(order[j]))
             for i, j in system_pairs(len(order))]
    slope_terms = [f for f in problem.factors if not f.intercept_only and problem.q > 1]
    if not slope_terms:
        residual = problem.n_obs - problem.n_thresholds - (problem.n_systems - 1)
        return np.full(len(pairs), float(residual))
    df = np.full(len(pairs), np.inf)
    for factor in slope_terms:
        judged = np.zeros((factor.n_levels, problem.n_systems), bool)
        judged[factor.codes, problem.system_code] = True
        for row, (i, j) in enumerate(pairs):
            df[row] = min(df[row], float(np.count_nonzero(judged[:, i] & judged[:, j]) - 1))
    return df


def _natural_vector(layout: _Layout, fit: ClmmResult) -> np.ndarray:
    """The fit's parameters packed as the objective takes them (intercept-only factors padded to q x q)."""
    beta = np.array([fit.fixed_effects[s] for s in fit.systems[1:]])
    cholesky = {}
    for name in layout.names:
        block = np.zeros((layout.q, layout.q))
        own = np.asarray(fit.cholesky_factors[name])
        block[:own.shape[0], :own.shape[1]] = own
        cholesky[name] = block
    return layout.pack(fit.thresholds, beta, cholesky)


def _fixed_part_hessian(objective: _Objective, natural: np.ndarray, n_fixed: int) -> np.ndarray:
    """Hessian of the Laplace nll in (thresholds, effects) at fixed Cholesky elements, by central differences."""
    hessian = np.empty((n_fixed, n_fixed))
    for k in range(n_fixed):
        step = HESSIAN_STEP * max(1.0, abs(natural[k]))
        plus, minus = natural.copy(), natural.copy()
        plus[k] += step
        minus[k] -= step
        hessian[:, k] = (objective.natural(plus)[1][:n_fixed] - objective.natural(minus)[1][:n_fixed]) / (2 * step)
    return 0.5 * (hessian + hessian.T)


def satterthwaite_df(judgements, fit: ClmmResult, order=None, structure="maximal") -> np.ndarray:
    """Satterthwaite degrees of freedom of every pairwise contrast from the Laplace fit (docs/model.md).

    df = 2 V^2 / Var(V), V = c' Phi(theta) c with Phi the inverse Hessian in (thresholds, effects) at
    fixed Cholesky elements theta, and Var(V) = g' Sigma_theta g, g = dV/dtheta from second differences
    of the analytic theta-gradient along Phi c, Sigma_theta the free Cholesky elements' block of the
    fit's inverse Hessian (``fit.parameter_cov``).

    Parameters
    ----------
    judgements : pandas.DataFrame or simdesign.core.judgements.Judgements
        The data the fit was made from.
    fit : ClmmResult
        Its fit; needs ``parameter_cov`` (a fit that failed has none).
    order : sequence of str, optional
        All systems, the reference first; default ``fit.systems``.
    structure : str or mapping
        The structure the fit was made with.

    Returns
    -------
    ndarray, shape (n_pairs,)
        Positive df per pair; ``inf`` where no variance parameter is free (then the z test); NaN where
        the fit has no covariance or the contrast no positive variance.
    """
    order = list(fit.systems if order is None else order)
    pairs = _pair_positions(fit, order)
    if fit.parameter_cov is None:
        return np.full(len(pairs), np.nan)
    problem = _prepare(judgements, structure, fit.systems[0])
    with single_threaded():  # the same rounding for every caller, as the fit itself
        return _satterthwaite(problem, fit, pairs)


def _satterthwaite(problem: _Problem, fit: ClmmResult, pairs) -> np.ndarray:
    layout = _Layout(problem)
    objective = _Objective(problem, layout)
    natural = _natural_vector(layout, fit)
    n_fixed = layout.n_thr + layout.n_beta
    # the free parameters, as the fit's Hessian chose them (simdesign.clmm.optimise._assess_optimum)
    free = np.flatnonzero(~(layout.diagonal_mask() & (natural < HESSIAN_BOUNDARY)) & ~layout.fixed_mask())
    theta = free[n_fixed:]
    theta_cov = np.asarray(fit.parameter_cov)[n_fixed:, n_fixed:]
    base_gradient = objective.natural(natural)[1]
    phi = np.linalg.inv(_fixed_part_hessian(objective, natural, n_fixed))
    df = np.full(len(pairs), np.nan)
    for row, (i, j) in enumerate(pairs):
        contrast = np.zeros(n_fixed)
        if i is not None:
            contrast[layout.n_thr + i] += 1.0
        if j is not None:
            contrast[layout.n_thr + j] -= 1.0
        direction = phi @ contrast
        variance = float(contrast @ direction)
        if not variance > 0:
            continue
        if len(theta) == 0:
            df[row] = np.inf
            continue
        step = 1.0 / np.sqrt(variance)  # the nll rises by 1/2 along step * direction
        shifted = natural.copy()
        shifted[:n_fixed] += step * direction
        upper = objective.natural(shifted)[1][theta]
        shifted[:n_fixed] = natural[:n_fixed] - step * direction
        lower = objective.natural(shifted)[1][theta]
        # dV/dtheta = -a' (dH/dtheta) a, a' (dH/dtheta) a = d^2/dt^2 of the theta-gradient along a
        derivative = -(upper - 2.0 * base_gradient[theta] + lower) / step ** 2
        variance_of_variance = float(derivative @ theta_cov @ derivative)
        df[row] = 2.0 * variance ** 2 / variance_of_variance if variance_of_variance > 0 else np.inf
    return df
