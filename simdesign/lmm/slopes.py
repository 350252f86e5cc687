"""The fast path of :func:`simdesign.lmm.fit` for one term with random slopes (annotators, usually: lme4's
``(1 + system | annotator)``) and at most one random intercept (documents: ``(1 | document)``), crossed,
in blocks or nested: the profiled deviance from sufficient statistics, minimised by a trust-region Newton
method in theta with the analytic Hessian.

Part of :mod:`simdesign.lmm`; the model is described in that package's docstring. The kept term (the one
with slopes) has ``n_k`` levels and ``q`` random effects each (the intercept and one per non-reference
system: a ``q x q`` relative covariance ``Psi = L L'``, lme4's ``q (q + 1) / 2`` elements of ``L`` in theta),
the eliminated one (the intercept) a variance ratio ``tau_e = theta_e^2``. As on the intercepts path
(:mod:`simdesign.lmm.structured`), ``W0 = (I + tau_e Z_e Z_e')^-1`` is block diagonal by eliminated level (a
scalar times ``11'`` off the identity, per level: every document's intercept profiled out in closed form),
and the kept term enters by Woodbury's identity,

    ``V^-1 = W0 - W0 Z_k H Z_k' W0``,  ``H = Lambda (I + Lambda' Z_k' W0 Z_k Lambda)^-1 Lambda'``,
    ``Lambda = I (x) L``  (defined for a singular L too),

so that every quantity of the fit is a form in ``Q = [Z_k, X, y]`` (``K = n_k q`` kept columns) and the
eliminated levels' indicators: the sums of Q per eliminated level grouped by the level's count (one
``(K + p + 1)^2`` matrix in a balanced design) and ``Q'Q``, made once per study from the judgements per
(eliminated level, kept level, system) and their score sums. An evaluation costs O(groups K^2 (K + p)): not
O(n), nor O(eliminated levels).

The derivatives. With ``V_j = dV/dtheta_j`` (``Z_k (I (x) Delta_j) Z_k'`` for L's element (r, c),
``Delta_j = e_r l_c' + l_c e_r'``; ``2 theta_e Z_e Z_e'`` for theta_e), ``T`` the REML projection P (ML: V^-1)
and ``r = y'Py``, the profiled criterion ``log|V| [+ log|X'V^-1 X|] + dof log r`` has::

    g_j  = tr(T V_j) - dof y'P V_j P y / r
    H_jl = tr(T V_jl) - dof y'P V_jl P y / r - tr(T V_j T V_l)
           + dof (2 y'P V_j P V_l P y / r - (y'P V_j P y)(y'P V_l P y) / r^2)

all from ``K x K`` blocks of ``Z_k'T Z_k`` and ``Z_k'P Z_k``, ``u = Z_k'Py`` and the eliminated term's sums
(:mod:`simdesign.lmm.slope_kernels`); lmerTest's Hessian in (theta, sigma) has the same pieces with
``1 / sigma^2`` for ``dof / r``, and the derivatives of the fixed effects' covariance
``sigma^2 C X'V^-1 V_j V^-1 X C`` need ``Z_k'V^-1 X`` alone besides.

The criterion depends on L through ``Psi`` (the sign of a column of L changes nothing) and on theta_e through
its square: the trust region runs without lme4's bounds and the signs are set after (each diagonal element
of L and theta_e at least 0, lme4's convention). At a singular optimum (``Psi`` of rank below q, as with 3
annotators and 5 systems: rank 2 at most under REML once the systems' means are removed) the columns of L
beyond the rank are 0, where the criterion is a positive definite quadratic form in them (the gradient of the
criterion in ``Psi`` restricted to its null space): Newton's steps reach them as fast as the interior, where
the general path's L-BFGS-B creeps to its bounds. The numbers equal the general path's at the same theta
(``tests/test_lmm_slopes.py``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simdesign.lmm.compiled import slope_kernels
from simdesign.lmm.small_sample import satterthwaite_df
from simdesign.lmm.structured import _grouped, _level_codes

# Above this many kept columns (levels x random effects per level) the general path fits: an evaluation's
# cost grows with their cube (15 annotators x 5 systems: 75).
MAX_KEPT_COLUMNS = 80


@dataclass
class SlopesProblem:
    """The sufficient statistics of a slopes fit (see the module docstring)."""

    names: tuple  # the terms in the structure's order
    kept: str  # the term with slopes
    eliminated: str | None  # the intercept term, if any
    n_levels: dict
    grams: np.ndarray  # per group of eliminated levels of equal count: sum of s_e s_e' (groups x m x m)
    counts: np.ndarray
    numbers: np.ndarray
    cross: np.ndarray  # Q'Q
    system_counts: np.ndarray
    n_k: int
    q: int
    n_fixed: int
    n_obs: int

    @property
    def n_lower(self) -> int:
        return self.q * (self.q + 1) // 2


def slope_terms(forms: dict, n_levels: dict, n_systems: int) -> tuple | None:
    """``(names, kept, eliminated)`` when ``forms`` has one slopes term of at most MAX_KEPT_COLUMNS columns and
    at most one intercept term besides, else None."""
    slopes = [name for name, form in forms.items() if form == "slopes"]
    intercepts = [name for name, form in forms.items() if form == "intercept"]
    if len(slopes) != 1 or len(intercepts) > 1 or n_levels[slopes[0]] * n_systems > MAX_KEPT_COLUMNS:
        return None
    return tuple(forms), slopes[0], (intercepts[0] if intercepts else None)


def _x_sums(cells: np.ndarray) -> np.ndarray:
    """Sums of the fixed-effects rows (intercept, treatment dummies) of judgements counted per system."""
    out = cells.copy()
    out[..., 0] = cells.sum(axis=-1)
    return out


def _x_grams(cells: np.ndarray) -> np.ndarray:
    """``sum x x'`` over judgements counted per system (last axis), as (..., S, S)."""
    n_s = cells.shape[-1]
    out = np.zeros(cells.shape + (n_s,))
    out[..., 0, 0] = cells.sum(axis=-1)
    out[..., 0, 1:] = cells[..., 1:]
    out[..., 1:, 0] = cells[..., 1:]
    rest = np.arange(1, n_s)
    out[..., rest, rest] = cells[..., 1:]
    return out


def _cells_problem(terms: tuple, n_levels: dict, cells: np.ndarray, sums: np.ndarray, squares: float,
                   has_e: bool) -> SlopesProblem:
    """The problem from the judgements per (eliminated level, kept level, system) and their score sums.

    A kept level's random effects have the fixed effects' design row (intercept and dummies), so
    ``Z_k'Z_k``'s level blocks, ``Z_k'X``'s and the per-level sums all come from counts per system."""
    names, kept, eliminated = terms
    n_e, n_k, n_s = cells.shape
    k_cols = n_k * n_s
    m = k_cols + n_s + 1
    by_kept, sums_kept = cells.sum(axis=0), sums.sum(axis=0)
    grams_kept = _x_grams(by_kept)
    cross = np.zeros((m, m))
    for i in range(n_k):
        part = slice(i * n_s, (i + 1) * n_s)
        cross[part, part] = grams_kept[i]
        cross[part, k_cols:k_cols + n_s] = grams_kept[i]
        cross[k_cols:k_cols + n_s, part] = grams_kept[i].T
    cross[k_cols:k_cols + n_s, k_cols:k_cols + n_s] = grams_kept.sum(axis=0)
    cross[:k_cols, m - 1] = _x_sums(sums_kept).ravel()
    cross[k_cols:k_cols + n_s, m - 1] = _x_sums(sums_kept.sum(axis=0))
    cross[m - 1, :m - 1] = cross[:m - 1, m - 1]
    cross[m - 1, m - 1] = squares
    if has_e:
        stats = np.empty((n_e, m))
        stats[:, :k_cols] = _x_sums(cells).reshape(n_e, k_cols)
        stats[:, k_cols:k_cols + n_s] = _x_sums(cells.sum(axis=1))
        stats[:, m - 1] = sums.sum(axis=(1, 2))
        grams, counts, numbers = _grouped(stats, k_cols)
    else:
        grams, counts, numbers = np.zeros((0, m, m)), np.zeros(0), np.zeros(0)
    system_counts = by_kept.sum(axis=0)
    return SlopesProblem(names=names, kept=kept, eliminated=eliminated, n_levels=n_levels, grams=grams,
                         counts=counts, numbers=numbers, cross=cross, system_counts=system_counts, n_k=n_k, q=n_s,
                         n_fixed=n_s, n_obs=int(round(system_counts.sum())))


def slopes_problem(columns, forms: dict) -> SlopesProblem | None:
    """The slopes path's statistics from :func:`simdesign.clmm.prepare._columns`' arrays (None when it does
    not apply); the systems in order of appearance, the first the reference, as the general path."""
    n_s = len(columns.appearing)
    terms = slope_terms(forms, columns.n_levels, n_s)
    if terms is None:
        return None
    _, kept, eliminated = terms
    y = np.asarray(columns.score, float)
    system = np.asarray(columns.system_label, np.int64)
    n_k = columns.n_levels[kept]
    k_codes = np.asarray(columns.codes[kept], np.int64)
    n_e = columns.n_levels[eliminated] if eliminated else 1
    e_codes = np.asarray(columns.codes[eliminated], np.int64) if eliminated else np.zeros(len(y), np.int64)
    cell = (e_codes * n_k + k_codes) * n_s + system
    size = n_e * n_k * n_s
    cells = np.bincount(cell, minlength=size).astype(float).reshape(n_e, n_k, n_s)
    sums = np.bincount(cell, weights=y, minlength=size).reshape(n_e, n_k, n_s)
    n_levels = {name: columns.n_levels[name] for name in forms}
    return _cells_problem(terms, n_levels, cells, sums, float(y @ y), eliminated is not None)


def complete_slopes_problem(judgements, forms: dict) -> SlopesProblem | None:
    """:func:`slopes_problem` of a complete :class:`~simdesign.core.judgements.Judgements` from its pairs (no
    array of judgements is made), or None (not complete, not a slopes structure, or data the general path
    refuses with the table's errors)."""
    if not judgements.complete or "slopes" not in forms.values():
        return None
    systems = judgements.systems
    if len(set(systems)) != len(systems) or len(systems) < 2:
        return None
    scores = np.asarray(judgements.scores, float)
    if not np.all(np.isfinite(scores)) or not np.any(scores != scores.flat[0]):
        return None
    codes, n_levels = {}, {}
    for name in forms:
        codes[name], n_levels[name] = _level_codes(np.asarray(getattr(judgements, name)))
    n_s = len(systems)
    terms = slope_terms(forms, n_levels, n_s)
    if terms is None:
        return None
    _, kept, eliminated = terms
    n_k = n_levels[kept]
    n_e = n_levels[eliminated] if eliminated else 1
    e_codes = codes[eliminated] if eliminated else np.zeros(len(scores), np.int64)
    pair = e_codes * n_k + codes[kept]
    per_pair = np.bincount(pair, minlength=n_e * n_k).astype(float)
    cells = np.repeat(per_pair[:, None], n_s, axis=1).reshape(n_e, n_k, n_s)
    if per_pair.max() <= 1.0:  # every (eliminated, kept) pair once, as in a simulated study
        sums = np.zeros((n_e * n_k, n_s))
        sums[pair] = scores
    else:
        sums = np.stack([np.bincount(pair, weights=scores[:, s], minlength=n_e * n_k) for s in range(n_s)], axis=1)
    return _cells_problem(terms, n_levels, cells, sums.reshape(n_e, n_k, n_s), float(np.sum(scores * scores)),
                          eliminated is not None)


@dataclass
class SlopesState:
    """The problem and theta at the fit (L's lower triangle, then theta_e), for the Satterthwaite df."""

    problem: SlopesProblem
    theta: np.ndarray
    reml: bool

    def satterthwaite_parts(self, sigma: float) -> tuple:
        """lmerTest's Hessian in (L's elements, [theta_e,] sigma) and the fixed effects' covariance's
        derivatives (the general path's order when the slopes term comes first in the structure)."""
        problem = self.problem
        hessian, jacobian = slope_kernels().slope_satterthwaite(
            self.theta, problem.grams, problem.counts, problem.numbers, problem.cross, problem.n_k, problem.q,
            problem.n_fixed, problem.n_obs, self.reml, sigma)
        if problem.eliminated is None:  # theta_e is no parameter: its row goes
            keep = np.r_[np.arange(problem.n_lower), problem.n_lower + 1]
            hessian, jacobian = hessian[np.ix_(keep, keep)], jacobian[keep]
        return hessian, jacobian

    def satterthwaite(self, sigma: float, covariance: np.ndarray, contrasts: np.ndarray) -> tuple:
        """Per contrast row, lmerTest's Satterthwaite df, and the note on the Hessian's eigenvalues (the general
        path's function: numpy's eigh)."""
        hessian, jacobian = self.satterthwaite_parts(sigma)
        return satterthwaite_df(hessian, list(jacobian), covariance, np.asarray(contrasts, float))


@dataclass
class SlopesFit:
    """The optimum: theta in the structure's order of terms and the rest of :class:`LmmResult`'s numbers."""

    theta: np.ndarray
    beta: np.ndarray
    covariance: np.ndarray
    sigma: float
    deviance: float
    gradient_max: float
    evaluations: int
    converged: bool
    state: SlopesState


def _signs(theta: np.ndarray, gradient: np.ndarray, q: int) -> tuple:
    """theta and its gradient with lme4's signs: each column of L with a negative diagonal element negated
    (the same Psi), theta_e made positive (the same criterion)."""
    theta, gradient = theta.copy(), gradient.copy()
    start = 0
    for col in range(q):
        length = q - col
        if theta[start] < 0.0:
            theta[start:start + length] *= -1.0
            gradient[start:start + length] *= -1.0
        start += length
    if theta[start] < 0.0:
        theta[start], gradient[start] = -theta[start], -gradient[start]
    return theta, gradient


def start_theta(problem: SlopesProblem) -> np.ndarray:
    """lme4's start: identity relative factors (theta_e 0 without an eliminated term)."""
    rows, cols = np.tril_indices(problem.q)
    order = np.lexsort((rows, cols))  # column-major
    return np.append((rows[order] == cols[order]).astype(float), 1.0 if problem.eliminated else 0.0)


def fit_slopes(problem: SlopesProblem, reml: bool) -> SlopesFit:
    """The trust region from lme4's start, then the fit's numbers."""
    theta, value, beta, inverse, rss, gradient, evaluations, converged = slope_kernels().slope_solve(
        start_theta(problem), problem.grams, problem.counts, problem.numbers, problem.cross, problem.n_k,
        problem.q, problem.n_fixed, problem.n_obs, reml, problem.eliminated is not None)
    theta, gradient = _signs(theta, gradient, problem.q)
    n_par = problem.n_lower + (1 if problem.eliminated else 0)
    gradient_max = float(np.max(np.abs(gradient[:n_par])))
    parts = {problem.kept: theta[:problem.n_lower]}
    if problem.eliminated:
        parts[problem.eliminated] = theta[problem.n_lower:]
    dof = problem.n_obs - problem.n_fixed if reml else problem.n_obs
    sigma = float(np.sqrt(rss / dof))
    return SlopesFit(theta=np.concatenate([parts[name] for name in problem.names]), beta=beta,
                     covariance=sigma ** 2 * inverse, sigma=sigma, deviance=float(value), gradient_max=gradient_max,
                     evaluations=int(evaluations), converged=bool(converged),
                     state=SlopesState(problem=problem, theta=theta, reml=reml))
