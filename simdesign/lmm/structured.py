"""The fast path of :func:`simdesign.lmm.fit` for random intercepts (crossed or nested annotators and
documents, or one of them): the profiled deviance from a few sufficient statistics, optimised by
projected Newton in the variance ratios.

Part of :mod:`simdesign.lmm`; the model is described in that package's docstring. Every term is an
intercept, so ``V = I + tau_e Z_e Z_e' + tau_k Z_k Z_k'`` (``tau = theta^2``, relative to sigma^2): the
eliminated term (more levels, documents usually) makes ``W0 = (I + tau_e Z_e Z_e')^-1`` block diagonal by
level, each block ``I - tau_e / (1 + tau_e n_e) 11'``, and the kept term (annotators) enters by Woodbury's
identity with its ``n_k x n_k`` matrix ``I + tau_k Z_k' W0 Z_k``. Every quantity of the fit is then a
form ``a' W0 b`` in the columns ``Q = [Z_k, X, y]`` and the eliminated levels' indicators, which need only

* ``stats``: per eliminated level, the sums of Q over its judgements (n_e x (n_k + p + 1)), of which the
  evaluations need only ``sum s_e s_e'`` over the levels of each count (``W0``'s block of a level depends
  on its count alone): one matrix in a balanced design;
* ``cross = Q'Q``;

made once per study (a few ``bincount``s; what depends on the design alone, the levels' codes and counts, once
per design: the trials of a simulation repeat it). An evaluation costs O(groups (n_k + p)^3): not O(n), nor
O(n_e).

The derivatives in ``tau`` (:mod:`simdesign.lmm.kernels`). With ``P`` the REML projection
(``V^-1 - V^-1 X C X' V^-1``, ``C = (X'V^-1 X)^-1``), ``K = Z'PZ`` by term blocks and ``u = Z'Py``, the
profiled REML criterion ``L(tau) + (n - p) log r``, ``L = log|V| + log|X'V^-1 X|``, ``r = y'Py``, has::

    dD/dtau_j        = tr K_jj - (n - p) |u_j|^2 / r
    d2D/dtau_j dtau_l = -|K_jl|_F^2 + (n - p) (2 u_j' K_jl u_l / r - |u_j|^2 |u_l|^2 / r^2)

(ML: ``V^-1`` for ``P`` in the traces and norms, n for n - p). ``P = W0 - W0 Q0 M Q0' W0`` with
``Q0 = [Z_k, X]`` and a small ``M``, so ``K_ee`` is a diagonal matrix minus a low-rank one: its trace and
Frobenius norm cost as little (sums over the groups). Newton's iterations in ``tau >= 0`` (not in theta: the criterion is
even in theta, whose gradient vanishes at 0, where :func:`simdesign.lmm.fitting.optimise` needs its
escapes) converge quadratically to the optimum or to the boundary. lmerTest's Satterthwaite pieces
follow by the chain rule ``theta = sqrt(tau)`` (:func:`simdesign.lmm.kernels.satterthwaite_parts`).

The numbers equal those of the general path (block elimination and L-BFGS-B) at the same optimum:
``tests/test_lmm_structured.py``.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from simdesign.lmm.compiled import kernels

# Above this many levels of the kept term (the one with fewer levels) the general path fits: the fast
# path's cost grows with their square.
MAX_KEPT_LEVELS = 64
# lmerTest's tolerance on the eigenvalues of the variance parameters' Hessian (small_sample's).
HESSIAN_EIGENVALUE_TOLERANCE = 1e-8


@dataclass
class InterceptsProblem:
    """The sufficient statistics of an intercepts-only fit (see the module docstring)."""

    names: tuple  # the terms in the structure's order
    eliminated: str
    kept: str | None
    n_levels: dict
    grams: np.ndarray  # per group of eliminated levels of equal count: sum of s_e s_e' (groups x m x m)
    counts: np.ndarray  # the groups' counts
    numbers: np.ndarray  # how many levels each group has
    cross: np.ndarray
    system_counts: np.ndarray
    n_k: int
    n_fixed: int
    n_obs: int


@dataclass
class InterceptsState:
    """The problem and the ratios at the fit, kept on the result for the Satterthwaite df."""

    problem: InterceptsProblem
    tau: np.ndarray  # (tau_e, tau_k); tau_k 0 without a kept term
    reml: bool
    # kernels.parts' numbers at tau that kernels.parts_satterthwaite needs (inverse, rss, trace, frob, cross_uku,
    # usq, d, g, h), kept from the fit (None: computed again)
    at: tuple | None = None

    def satterthwaite(self, sigma: float, covariance: np.ndarray, contrasts: np.ndarray) -> tuple:
        """:func:`satterthwaite` of this state."""
        return satterthwaite(self, sigma, covariance, contrasts)


def _pair_counts(first: np.ndarray, n_first: int, second: np.ndarray, n_second: int, weights=None) -> np.ndarray:
    flat = np.bincount(first * n_second + second, weights=weights, minlength=n_first * n_second)
    return flat.reshape(n_first, n_second).astype(float)


def _grouping(level_counts: np.ndarray) -> tuple:
    """``(counts, numbers, order, bounds)``: the eliminated levels' distinct counts, how many levels have each,
    and (None in a balanced design) the levels in order of group with each group's bounds in that order."""
    if np.all(level_counts == level_counts[0]):  # balanced: one group
        return level_counts[:1].copy(), np.array([float(len(level_counts))]), None, None
    counts, group = np.unique(level_counts, return_inverse=True)
    numbers = np.bincount(group).astype(float)
    if len(counts) == 1:
        return counts, numbers, None, None
    order = np.argsort(group, kind="stable")
    return counts, numbers, order, np.searchsorted(group[order], np.arange(len(counts) + 1))


def _grams(stats: np.ndarray, order, bounds) -> np.ndarray:
    """Per group of :func:`_grouping`, the sum of ``s_e s_e'`` over its levels (groups x m x m)."""
    if order is None:
        return (stats.T @ stats)[None]
    return np.stack([stats[order[a:b]].T @ stats[order[a:b]] for a, b in zip(bounds[:-1], bounds[1:])])


def _grouped(stats: np.ndarray, n_k: int) -> tuple:
    """``(grams, counts, numbers)``: the eliminated levels grouped by count (see InterceptsProblem)."""
    counts, numbers, order, bounds = _grouping(stats[:, n_k])
    return _grams(stats, order, bounds), counts, numbers


def _cross_layout(n_k, n_s, n, system_counts, k_by_system=None) -> np.ndarray:
    """The entries of ``Q'Q`` (:func:`_cross`) that do not involve the scores."""
    m = n_k + n_s + 1
    cross = np.zeros((m, m))
    cross[n_k, n_k] = n
    cross[n_k, n_k + 1:m - 1] = cross[n_k + 1:m - 1, n_k] = system_counts[1:]
    cross[n_k + 1:m - 1, n_k + 1:m - 1] = np.diag(system_counts[1:])
    if k_by_system is not None:
        cross[:n_k, :n_k] = np.diag(k_by_system.sum(axis=1))
        cross[:n_k, n_k] = cross[n_k, :n_k] = k_by_system.sum(axis=1)
        cross[:n_k, n_k + 1:m - 1] = k_by_system[:, 1:]
        cross[n_k + 1:m - 1, :n_k] = k_by_system[:, 1:].T
    return cross


def _fill_cross(cross: np.ndarray, n_k: int, system_sums, y_squares, k_sums=None) -> np.ndarray:
    """The scores' entries of ``Q'Q`` (the last row and column) written into :func:`_cross_layout`'s matrix."""
    m = len(cross)
    x_part = slice(n_k, m - 1)
    cross[x_part, m - 1] = cross[m - 1, x_part] = np.concatenate([[system_sums.sum()], system_sums[1:]])
    cross[m - 1, m - 1] = y_squares
    if k_sums is not None:
        cross[:n_k, m - 1] = cross[m - 1, :n_k] = k_sums
    return cross


def _cross(n_k, n_s, n, system_counts, system_sums, y_squares, kept=None) -> np.ndarray:
    """``Q'Q`` from the counts and sums; ``kept``: (judgements by kept level and system, scores by kept level)."""
    k_by_system, k_sums = kept if kept is not None else (None, None)
    return _fill_cross(_cross_layout(n_k, n_s, n, system_counts, k_by_system), n_k, system_sums, y_squares, k_sums)


def _choose_terms(forms: dict, n_levels: dict) -> tuple:
    """(names, eliminated, kept): the term with more levels is eliminated (ties: the structure's order)."""
    names = tuple(forms)
    by_size = sorted(names, key=lambda name: n_levels[name], reverse=True)  # stable: ties keep the order
    return names, by_size[0], (by_size[1] if len(by_size) > 1 else None)


def _level_codes(values: np.ndarray) -> tuple:
    """``np.unique(values, return_inverse=True)``'s codes and level count; ids that are already 0..L-1,
    each present (a simulated study's), are their own codes."""
    if values.dtype.kind in "iu" and len(values) and values.min() >= 0:
        present = np.bincount(values)
        if np.all(present > 0):
            return values.astype(np.int64, copy=False), len(present)
    levels, codes = np.unique(values, return_inverse=True)
    return codes, len(levels)


@dataclass
class _CompleteLayout:
    """What :func:`complete_intercepts_problem` computes from a complete study's groupings and number of
    systems alone: the same in every trial of a design, made once (:func:`_complete_layout`)."""

    names: tuple
    eliminated: str
    kept: str | None
    n_levels: dict
    e_codes: np.ndarray
    k_codes: np.ndarray | None
    stats: np.ndarray  # every column but the scores' (zero)
    cross: np.ndarray  # Q'Q without the scores' row and column (zero)
    system_counts: np.ndarray
    grouping: tuple  # _grouping's (counts, numbers, order, bounds)
    k_by_system: np.ndarray | None


# the layouts of the last few designs (keyed by their grouping arrays' bytes: a trial's study repeats its design's);
# a study whose grouping arrays are larger than LAYOUT_KEY_BYTES is not kept (its key would hold them)
_LAYOUTS: dict = {}
_LAYOUTS_LOCK = threading.Lock()
LAYOUTS_KEPT = 16
LAYOUT_KEY_BYTES = 1 << 20


def _complete_layout(judgements, forms: dict, n_s: int) -> _CompleteLayout | None:
    """The study's :class:`_CompleteLayout` (None when the kept term has too many levels), from the cache when
    a study with the same groupings and number of systems was seen."""
    arrays = [np.asarray(getattr(judgements, name)) for name in forms]
    key = None
    if sum(array.nbytes for array in arrays) <= LAYOUT_KEY_BYTES:
        key = (tuple(forms), n_s) + tuple((array.dtype.str, array.shape, array.tobytes()) for array in arrays)
        if key in _LAYOUTS:
            return _LAYOUTS[key]
    codes, n_levels = {}, {}
    for name, array in zip(forms, arrays):
        found, n_levels[name] = _level_codes(array)
        codes[name] = np.array(found, np.int64)  # a copy: the cache must not share the study's arrays
    names, eliminated, kept = _choose_terms(forms, n_levels)
    n_k = n_levels[kept] if kept else 0
    layout = None
    if n_k <= MAX_KEPT_LEVELS:
        layout = _make_layout(names, eliminated, kept, n_levels, codes, n_s)
    if key is not None:
        with _LAYOUTS_LOCK:  # threads of one process (joblib's threading backend) share the cache
            if len(_LAYOUTS) >= LAYOUTS_KEPT:
                _LAYOUTS.pop(next(iter(_LAYOUTS)), None)
            _LAYOUTS[key] = layout
    return layout


def _make_layout(names, eliminated, kept, n_levels, codes, n_s) -> _CompleteLayout:
    n_k = n_levels[kept] if kept else 0
    n_e, e_codes = n_levels[eliminated], codes[eliminated]
    n_pairs = len(e_codes)
    pairs_per_e = np.bincount(e_codes, minlength=n_e).astype(float)
    stats = np.zeros((n_e, n_k + n_s + 1))
    stats[:, n_k] = n_s * pairs_per_e
    stats[:, n_k + 1:n_k + n_s] = pairs_per_e[:, None]
    system_counts = np.full(n_s, float(n_pairs))
    k_codes = k_by_system = None
    if kept:
        k_codes = codes[kept]
        stats[:, :n_k] = n_s * _pair_counts(e_codes, n_e, k_codes, n_k)
        pairs_per_k = np.bincount(k_codes, minlength=n_k).astype(float)
        k_by_system = np.repeat(pairs_per_k[:, None], n_s, axis=1)
    cross = _cross_layout(n_k, n_s, n_pairs * n_s, system_counts, k_by_system)
    return _CompleteLayout(names=names, eliminated=eliminated, kept=kept, n_levels=n_levels, e_codes=e_codes,
                           k_codes=k_codes, stats=stats, cross=cross, system_counts=system_counts,
                           grouping=_grouping(stats[:, n_k]), k_by_system=k_by_system)


def complete_intercepts_problem(judgements, forms: dict) -> InterceptsProblem | None:
    """:func:`intercepts_problem` of a complete :class:`~simdesign.core.judgements.Judgements` (every pair
    judged on every system, distinct system names), from its pairs: no array of judgements is made. None
    when the fast path does not apply or the study is not of that kind. What depends on the design alone
    (the groupings' codes and counts) is made once per design (:func:`_complete_layout`)."""
    if any(form != "intercept" for form in forms.values()) or not judgements.complete:
        return None
    systems = judgements.systems
    if len(set(systems)) != len(systems) or len(systems) < 2:
        return None
    scores = np.asarray(judgements.scores, float)
    if not np.all(np.isfinite(scores)) or not np.any(scores != scores.flat[0]):
        return None  # the general path raises the table's errors
    n_pairs, n_s = scores.shape
    layout = _complete_layout(judgements, forms, n_s)
    if layout is None:
        return None
    n_k = layout.n_levels[layout.kept] if layout.kept else 0
    pair_sums = scores.sum(axis=1)
    stats = layout.stats.copy()
    stats[:, n_k + n_s] = np.bincount(layout.e_codes, weights=pair_sums, minlength=len(stats))
    k_sums = None
    if layout.kept:
        k_sums = np.bincount(layout.k_codes, weights=pair_sums, minlength=n_k)
    cross = _fill_cross(layout.cross.copy(), n_k, scores.sum(axis=0), float(np.sum(scores * scores)), k_sums)
    counts, numbers, order, bounds = layout.grouping
    return InterceptsProblem(names=layout.names, eliminated=layout.eliminated, kept=layout.kept,
                             n_levels=dict(layout.n_levels), grams=_grams(stats, order, bounds),
                             counts=counts.copy(), numbers=numbers.copy(), cross=cross,
                             system_counts=layout.system_counts.copy(), n_k=n_k, n_fixed=n_s,
                             n_obs=n_pairs * n_s)


def intercepts_problem(columns, forms: dict) -> InterceptsProblem | None:
    """The fast path's statistics when every term of ``forms`` is an intercept (else None).

    ``columns``: :func:`simdesign.clmm.prepare._columns`' arrays; the systems in order of appearance, the
    first the reference (treatment coding), as :func:`simdesign.lmm.problem.prepare`.
    """
    if any(form != "intercept" for form in forms.values()):
        return None
    names, eliminated, kept = _choose_terms(forms, columns.n_levels)
    n_k = columns.n_levels[kept] if kept else 0
    if n_k > MAX_KEPT_LEVELS:
        return None
    y = np.asarray(columns.score, float)
    system = np.asarray(columns.system_label, np.int64)
    n_s, n_e = len(columns.appearing), columns.n_levels[eliminated]
    e_codes = np.asarray(columns.codes[eliminated], np.int64)
    m = n_k + n_s + 1
    stats = np.empty((n_e, m))
    by_system = _pair_counts(e_codes, n_e, system, n_s)
    stats[:, n_k] = by_system.sum(axis=1)
    stats[:, n_k + 1:m - 1] = by_system[:, 1:]
    stats[:, m - 1] = np.bincount(e_codes, weights=y, minlength=n_e)
    system_counts = np.bincount(system, minlength=n_s).astype(float)
    kept_sums = None
    if kept:
        k_codes = np.asarray(columns.codes[kept], np.int64)
        stats[:, :n_k] = _pair_counts(e_codes, n_e, k_codes, n_k)
        kept_sums = (_pair_counts(k_codes, n_k, system, n_s), np.bincount(k_codes, weights=y, minlength=n_k))
    cross = _cross(n_k, n_s, len(y), system_counts, np.bincount(system, weights=y, minlength=n_s), float(y @ y),
                   kept_sums)
    grams, counts, numbers = _grouped(stats, n_k)
    return InterceptsProblem(names=names, eliminated=eliminated, kept=kept,
                             n_levels={name: columns.n_levels[name] for name in names}, grams=grams,
                             counts=counts, numbers=numbers, cross=cross, system_counts=system_counts, n_k=n_k,
                             n_fixed=n_s, n_obs=len(y))


@dataclass
class InterceptsFit:
    """The optimum: theta in the structure's order of terms and the rest of :class:`LmmResult`'s numbers."""

    theta: np.ndarray
    beta: np.ndarray
    covariance: np.ndarray
    sigma: float
    deviance: float
    gradient_max: float
    evaluations: int
    converged: bool
    state: InterceptsState


def fit_intercepts(problem: InterceptsProblem, reml: bool) -> InterceptsFit:
    """Projected Newton in ``tau`` from lme4's start (every theta 1), then the fit's numbers."""
    k = kernels()
    tau, value, beta, inverse, rss, gradient, evaluations, converged, at = k.solve(
        np.ones(2), problem.grams, problem.counts, problem.numbers, problem.cross, problem.n_k, problem.n_fixed, problem.n_obs,
        reml)
    theta_internal = np.sqrt(tau)
    # the gradient in theta (lme4's parameters): d/dtheta = 2 theta d/dtau, zero at theta = 0
    gradient_theta = 2.0 * theta_internal * gradient
    n_par = 2 if problem.n_k else 1
    gradient_max = float(np.max(np.abs(gradient_theta[:n_par])))
    position = {problem.eliminated: 0, problem.kept: 1}
    theta = np.array([theta_internal[position[name]] for name in problem.names])
    dof = problem.n_obs - problem.n_fixed if reml else problem.n_obs
    sigma = float(np.sqrt(rss / dof))
    return InterceptsFit(theta=theta, beta=beta, covariance=sigma ** 2 * inverse, sigma=sigma, deviance=float(value),
                         gradient_max=gradient_max, evaluations=int(evaluations), converged=bool(converged),
                         state=InterceptsState(problem=problem, tau=tau, reml=reml, at=(inverse, rss) + tuple(at)))


def satterthwaite_parts(state: InterceptsState, sigma: float) -> tuple:
    """lmerTest's Hessian in (theta_e[, theta_k], sigma) and the fixed effects' covariance's derivatives
    (the order of the parameters differs from the general path's; the df do not depend on it)."""
    problem = state.problem
    if state.at is not None:  # the fit's numbers at tau: the same as computing them again
        return kernels().parts_satterthwaite(state.tau, *state.at, problem.grams, problem.counts, problem.n_k,
                                             problem.n_fixed, problem.n_obs, state.reml, sigma)
    return kernels().satterthwaite_parts(state.tau, problem.grams, problem.counts, problem.numbers, problem.cross, problem.n_k,
                                         problem.n_fixed, problem.n_obs, state.reml, sigma)


def satterthwaite(state: InterceptsState, sigma: float, covariance: np.ndarray, contrasts: np.ndarray) -> tuple:
    """Per contrast row, lmerTest's Satterthwaite df, and the note on the Hessian's eigenvalues
    (:func:`simdesign.lmm.small_sample.satterthwaite_df`'s numbers and words)."""
    from simdesign.lmm.small_sample import eigenvalue_note

    hessian, jacobian = satterthwaite_parts(state, sigma)
    with np.errstate(divide="ignore", invalid="ignore"):
        df, values = kernels().satterthwaite_df(hessian, jacobian, covariance, np.ascontiguousarray(contrasts, float),
                                                HESSIAN_EIGENVALUE_TOLERANCE)
    return df, eigenvalue_note(values)
