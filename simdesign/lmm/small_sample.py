"""Denominator degrees of freedom of the fixed-effect contrasts: Satterthwaite (as lmerTest) and
Kenward-Roger (as pbkrtest), from dense matrices of the size of the random effects at the fit.

Part of :mod:`simdesign.lmm`; the model and the algorithm are described in that package's docstring.

Both need quadratic forms in powers of the marginal covariance ``Sigma = sigma^2 V``,
``V = I + Z Lambda Lambda' Z'``. With ``U = Z Lambda``, ``Wa = (U'U + I)^-1`` and ``V^-1 U = U Wa``,
``a' V^-m b = a'b - sum_{j=1..m} (U'a)' Wa^j (U'b)`` for any columns ``a, b`` (Z, X or y), so nothing of
size n x n is ever formed.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from simdesign.lmm.deviance import split_theta
from simdesign.lmm.problem import Problem, lower_triangle

# lmerTest's tolerance on the eigenvalues of the variance parameters' Hessian: below it (in absolute value)
# an eigenvalue is left out of the inverse; below its negative the fit has not converged.
HESSIAN_EIGENVALUE_TOLERANCE = 1e-8
# pbkrtest: the information matrix is inverted by a generalised inverse when an eigenvalue is this small.
KR_INFORMATION_TOLERANCE = 1e-10


@dataclass
class _Dense:
    """The quadratic forms at the fit (V scale, sigma^2 left out)."""

    problem: Problem
    sigma: float
    reml: bool
    term_slices: list
    factors: list  # relative covariance factor of each term
    zz: list  # Z'V^-m Z for m = 1, 2
    zx: list  # Z'V^-m X for m = 1, 2
    zy: np.ndarray  # Z'V^-1 y
    xx: list  # X'V^-m X for m = 1, 2, 3
    xy: np.ndarray  # X'V^-1 y
    yy: float  # y'V^-1 y
    trace_v2: float  # tr(V^-2)


def _times_lambda_transposed(problem: Problem, factors: dict, matrix: np.ndarray) -> np.ndarray:
    """``Lambda' M`` without forming Lambda: each term's rows are its levels' q-blocks times L'."""
    out = np.empty_like(matrix)
    start = 0
    for term in problem.terms:
        size = term.n_levels * term.q
        rows = matrix[start:start + size].reshape(term.n_levels, term.q, -1)
        out[start:start + size] = np.einsum("ba,ibc->iac", factors[term.name], rows).reshape(size, -1)
        start += size
    return out


def _dense(problem: Problem, theta: np.ndarray, sigma: float, reml: bool) -> _Dense:
    """The forms ``a' V^-m b`` at theta: with ``Wa = (U'U + I)^-1`` and ``G = Wa U'a``,
    ``a'V^-1 b = a'b - (U'a)' G_b`` and ``a'V^-2 b = a'V^-1 b - G_a' G_b`` (Wa symmetric), and
    ``a'V^-3 b = a'V^-2 b - G_a' Wa G_b``."""
    factors = split_theta(problem, theta)
    z = problem.z_matrix()
    zz = (z.T @ z).toarray()
    zx, zy = np.asarray(z.T @ problem.x), np.asarray(z.T @ problem.y)
    xx, xy = problem.x.T @ problem.x, problem.x.T @ problem.y
    # U'Z, U'X, U'y with U = Z Lambda, and U'U = Lambda' Z'Z Lambda = Lambda' (Lambda' Z'Z)'
    u_z = _times_lambda_transposed(problem, factors, zz)
    u_x = _times_lambda_transposed(problem, factors, zx)
    u_y = _times_lambda_transposed(problem, factors, zy[:, None])[:, 0]
    gram = _times_lambda_transposed(problem, factors, np.ascontiguousarray(u_z.T))
    factor = cho_factor(gram + np.eye(len(gram)))
    wa = cho_solve(factor, np.eye(len(gram)))
    g_z, g_x, g_y = wa @ u_z, wa @ u_x, wa @ u_y
    zz1 = zz - u_z.T @ g_z
    zx1 = zx - u_z.T @ g_x
    xx1 = xx - u_x.T @ g_x
    xx2 = xx1 - g_x.T @ g_x
    # U'U = A - I, so Wa U'U = I - Wa: tr(V^-1) = n - q + tr(Wa), tr(V^-2) = tr(V^-1) - tr(Wa) + |Wa|^2
    trace_v1 = problem.n_obs - len(wa) + float(np.trace(wa))
    trace_v2 = trace_v1 - float(np.trace(wa)) + float(np.sum(wa * wa))
    slices, start = [], 0
    for term in problem.terms:
        slices.append(slice(start, start + term.n_levels * term.q))
        start += term.n_levels * term.q
    return _Dense(problem=problem, sigma=sigma, reml=reml, term_slices=slices,
                  factors=[factors[term.name] for term in problem.terms],
                  zz=[zz1, zz1 - g_z.T @ g_z], zx=[zx1, zx1 - g_z.T @ g_x],
                  zy=zy - u_z.T @ g_y, xx=[xx1, xx2, xx2 - g_x.T @ wa @ g_x],
                  xy=xy - u_x.T @ g_y, yy=float(problem.y @ problem.y - u_y @ g_y), trace_v2=trace_v2)


def _blocks(matrix: np.ndarray, term, rows: slice, cols_term, cols: slice) -> np.ndarray:
    """A term-pair block of a q x q matrix as (levels_t, q_t, levels_u, q_u)."""
    return matrix[rows, cols].reshape(term.n_levels, term.q, cols_term.n_levels, cols_term.q)


def _pair_traces(dense: _Dense, matrix: np.ndarray, mats: list) -> np.ndarray:
    """``tr((I (x) a_k) T (I (x) a_l) T)`` for every pair of parameter matrices (``mats[t]``: term t's
    a_k stacked, m_t x q_t x q_t), ``T = matrix`` symmetric."""
    terms = dense.problem.terms
    rows = []
    for t, term in enumerate(terms):
        row = []
        for u, other in enumerate(terms):
            block = _blocks(matrix, term, dense.term_slices[t], other, dense.term_slices[u])
            four = np.einsum("iajb,idjc->abcd", block, block)
            row.append(np.einsum("kda,lbc,abcd->kl", mats[t], mats[u], four))
        rows.append(np.hstack(row))
    return np.vstack(rows)


def _level_sum(dense: _Dense, matrix: np.ndarray, t: int) -> np.ndarray:
    """Sum over the levels of term t of its diagonal blocks of ``matrix``."""
    term = dense.problem.terms[t]
    block = _blocks(matrix, term, dense.term_slices[t], term, dense.term_slices[t])
    return np.einsum("iaib->ab", block)


def _embedded(dense: _Dense, mats: list, columns: np.ndarray) -> np.ndarray:
    """``(I (x) a_k) C`` for every parameter k, C (q_total x c) given per term slice: (q_total, m, c)."""
    total = dense.term_slices[-1].stop
    out = np.zeros((total, sum(len(m) for m in mats), columns.shape[1]))
    k = 0
    for t, term in enumerate(dense.problem.terms):
        part = columns[dense.term_slices[t]].reshape(term.n_levels, term.q, -1)
        moved = np.einsum("kab,ibc->iakc", mats[t], part).reshape(term.n_levels * term.q, len(mats[t]), -1)
        out[dense.term_slices[t], k:k + len(mats[t])] = moved
        k += len(mats[t])
    return out


# ----------------------------------------------------------------------------------------- Satterthwaite
def _theta_derivatives(dense: _Dense) -> tuple:
    """Per term: ``d(L L')/d theta_k`` (m_t x q x q) and the elementary matrices ``e_r e_c'`` of theta."""
    first, units = [], []
    for term, factor in zip(dense.problem.terms, dense.factors):
        rows, cols = lower_triangle(term.q)
        unit = np.zeros((len(rows), term.q, term.q))
        unit[np.arange(len(rows)), rows, cols] = 1.0
        units.append(unit)
        first.append(unit @ factor.T + factor @ np.swapaxes(unit, 1, 2))
    return first, units


def satterthwaite_parts(problem: Problem, theta: np.ndarray, sigma: float, reml: bool = True) -> tuple:
    """lmerTest's pieces: the Hessian of the (RE)ML deviance in (theta, sigma), and the derivatives of the
    fixed effects' covariance in them (list of p x p), at the fit.

    The deviance is lmerTest's ``devfun_vp`` (beta profiled out, sigma not); its Hessian is analytic:
    with ``P`` the REML projection (``V^-1`` less its X part) and ``T`` that projection (REML) or
    ``V^-1`` (ML) in the log-determinant's traces,
    ``H_kl = tr(T S_kl) - tr(T S_k T S_l) + 2 y'P S_k P S_l P y - y'P S_kl P y`` for the derivatives
    ``S_k`` of ``Sigma``, all reduced to q x q forms. With ``S_sigma = (2 / sigma) Sigma`` and
    ``P Sigma P = P`` the sigma row needs nothing more.
    """
    dense = _dense(problem, theta, sigma, reml)
    c_u = np.linalg.inv(dense.xx[0])  # (X'V^-1 X)^-1
    # the REML projection's forms: Z'PZ and Z'Py (= Z'V^-1 (y - X beta))
    k_mat = dense.zz[0] - dense.zx[0] @ c_u @ dense.zx[0].T
    k_vec = dense.zy - dense.zx[0] @ (c_u @ dense.xy)
    trace_mat = k_mat if reml else dense.zz[0]
    n_eff = problem.n_obs - problem.n_fixed if reml else problem.n_obs
    rss = dense.yy - float(dense.xy @ c_u @ dense.xy)  # y'Py
    first, units = _theta_derivatives(dense)
    s2 = sigma ** 2
    moved_k = _embedded(dense, first, k_vec[:, None])[:, :, 0]  # D_k k
    hessian_tt = -_pair_traces(dense, trace_mat, first) + 2.0 * moved_k.T @ k_mat @ moved_k / s2
    start = 0
    for t in range(len(problem.terms)):
        m = len(first[t])
        # d2(L L')/d theta_k d theta_l = u_k u_l' + u_l u_k'
        second = np.einsum("kab,lcb->klac", units[t], units[t])
        second = second + np.swapaxes(second, 0, 1)
        both = _level_sum(dense, trace_mat, t) - _level_sum_vector(dense, k_vec, t) / s2
        hessian_tt[start:start + m, start:start + m] += np.einsum("klab,ba->kl", second, both)
        start += m
    quad = np.concatenate([np.einsum("kab,ba->k", first[t], _level_sum_vector(dense, k_vec, t))
                           for t in range(len(problem.terms))]) / s2  # y'P S_k P y
    h_ts = 2.0 / sigma * quad
    h_ss = (-2.0 * n_eff + 6.0 * rss / s2) / s2
    hessian = np.block([[hessian_tt, h_ts[:, None]], [h_ts[None, :], np.array([[h_ss]])]])
    # d vcov / d theta_k = sigma^2 C (X'V^-1 Z D_k Z'V^-1 X) C; d vcov / d sigma = 2 sigma C
    moved = _embedded(dense, first, dense.zx[0])  # (q, m, p)
    middle = np.einsum("qa,qkb->kab", dense.zx[0], moved)
    jacobian = [s2 * c_u @ mid @ c_u for mid in middle] + [2.0 * sigma * c_u]
    return hessian, jacobian


def _level_sum_vector(dense: _Dense, vector: np.ndarray, t: int) -> np.ndarray:
    """Sum over the levels of term t of ``v_i v_i'`` (its slice of ``vector`` per level)."""
    term = dense.problem.terms[t]
    part = vector[dense.term_slices[t]].reshape(term.n_levels, term.q)
    return part.T @ part


def satterthwaite_df(hessian: np.ndarray, jacobian: list, beta_covariance: np.ndarray,
                     contrasts: np.ndarray) -> tuple:
    """Per contrast row: Satterthwaite df, as lmerTest's contest1D; and the eigenvalue note.

    Returns (df array, message): the message names negative or near-zero eigenvalues of the Hessian in
    lmerTest's words (a fit with a negative one has not converged, as lmer's status rule says).
    """
    values, vectors = np.linalg.eigh(hessian)
    positive = values > HESSIAN_EIGENVALUE_TOLERANCE
    inverse = (vectors[:, positive] / values[positive]) @ vectors[:, positive].T
    varpar_covariance = 2.0 * inverse
    variance = np.einsum("ka,ab,kb->k", contrasts, beta_covariance, contrasts)
    gradient = np.stack([np.einsum("ka,ab,kb->k", contrasts, jac, contrasts) for jac in jacobian], axis=1)
    denominator = np.einsum("ka,ab,kb->k", gradient, varpar_covariance, gradient)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = 2.0 * variance ** 2 / denominator
    return df, eigenvalue_note(values)


def eigenvalue_note(values: np.ndarray) -> str:
    """lmerTest's words on negative or near-zero eigenvalues of the variance parameters' Hessian ('' if none)."""
    if all(value > HESSIAN_EIGENVALUE_TOLERANCE for value in np.ravel(values).tolist()):
        return ""  # every one positive, none NaN (the usual case, decided without array operations)
    positive = values > HESSIAN_EIGENVALUE_TOLERANCE
    notes = []
    negative = values < -HESSIAN_EIGENVALUE_TOLERANCE
    zero = ~negative & ~positive
    if negative.any():
        notes.append(f"Model failed to converge with {int(negative.sum())} negative eigenvalue(s): "
                     + " ".join(f"{v:.1e}" for v in values[negative]))
    if zero.any():
        notes.append(f"Model may not have converged with {int(zero.sum())} eigenvalue(s) close to zero: "
                     + " ".join(f"{v:.1e}" for v in values[zero]))
    return "; ".join(notes)


# ----------------------------------------------------------------------------------------- Kenward-Roger
def _covariance_units(problem: Problem) -> list:
    """Per term: the derivative of its covariance matrix in each of its elements (lower triangle, column
    major), a symmetric 0/1 matrix: pbkrtest's linear parametrisation of the random effects."""
    out = []
    for term in problem.terms:
        rows, cols = lower_triangle(term.q)
        unit = np.zeros((len(rows), term.q, term.q))
        unit[np.arange(len(rows)), rows, cols] = 1.0
        unit[np.arange(len(rows)), cols, rows] = 1.0
        out.append(unit)
    return out


@dataclass
class KenwardRoger:
    """pbkrtest's vcovAdj: the adjusted covariance of the fixed effects and the P and W its df need."""

    adjusted: np.ndarray
    unadjusted: np.ndarray
    p_mats: list
    w: np.ndarray

    def df(self, contrasts: np.ndarray) -> np.ndarray:
        """Per contrast row (one-dimensional hypotheses), pbkrtest's Lb_ddf."""
        return np.array([_kr_ddf(row, self.unadjusted, self.p_mats, self.w) for row in contrasts])


def kenward_roger(problem: Problem, theta: np.ndarray, sigma: float, beta_covariance: np.ndarray) -> KenwardRoger:
    """The Kenward-Roger adjustment at a REML fit (the formulas of ``rsession.kenward_roger_vcov``).

    Parameters: every element of every term's covariance matrix and the residual variance (whose
    derivative of Sigma is I), so that Sigma is linear in them, as pbkrtest.
    """
    dense = _dense(problem, theta, sigma, True)
    s2 = sigma ** 2
    phi = beta_covariance
    units = _covariance_units(problem)
    m_mat = dense.zz[0] / s2  # Z'S Z, S = Sigma^-1
    fm = dense.zx[0] / s2  # Z'S X
    n2_mat = dense.zz[1] / s2 ** 2  # Z'S^2 Z
    k2 = dense.zx[1] / s2 ** 2  # Z'S^2 X
    x2, x3 = dense.xx[1] / s2 ** 2, dense.xx[2] / s2 ** 3
    trace_s2 = dense.trace_v2 / s2 ** 2
    moved = _embedded(dense, units, fm)  # (I (x) E_r) F: (q, m, p)
    n_random = moved.shape[1]
    p = problem.n_fixed
    p_mats = [-fm.T @ moved[:, r] for r in range(n_random)] + [-x2]
    flat = moved.reshape(len(moved), -1)
    q_random = (flat.T @ m_mat @ flat).reshape(n_random, p, n_random, p).transpose(0, 2, 1, 3)
    q_resid = np.einsum("qrb,qa->rba", moved, k2)  # Q_(r, resid) = F' E_r (Z'S^2 X): (m, p, p)
    n_gamma = n_random + 1
    q_all = np.zeros((n_gamma, n_gamma, p, p))
    q_all[:n_random, :n_random] = q_random
    q_all[:n_random, n_random] = q_resid
    q_all[n_random, :n_random] = np.swapaxes(q_resid, 1, 2)
    q_all[n_random, n_random] = x3
    traces = np.zeros((n_gamma, n_gamma))
    traces[:n_random, :n_random] = _pair_traces(dense, m_mat, units)
    resid_traces = np.concatenate([np.einsum("kab,ba->k", units[t], _level_sum(dense, n2_mat, t))
                                   for t in range(len(problem.terms))])
    traces[:n_random, n_random] = traces[n_random, :n_random] = resid_traces
    traces[n_random, n_random] = trace_s2
    phi_p = np.array([phi @ pm for pm in p_mats])
    p_phi = np.array([pm @ phi for pm in p_mats])
    information = (traces - 2.0 * np.einsum("ab,rsab->rs", phi, q_all)
                   + np.einsum("rab,sab->rs", phi_p, p_phi))
    information = np.triu(information) + np.triu(information, 1).T  # pbkrtest fills the upper triangle
    eigen = np.linalg.eigvalsh(information)
    w = 2.0 * (np.linalg.inv(information) if np.min(np.abs(eigen)) > KR_INFORMATION_TOLERANCE
               else np.linalg.pinv(information))
    pp = np.einsum("rab,bc,scd->rsad", np.array(p_mats), phi, np.array(p_mats))  # P_r Phi P_s
    upper = np.triu(np.ones((n_gamma, n_gamma)), 1)
    u_off = np.einsum("rs,rsab->ab", w * upper, q_all - pp)
    u_mat = u_off + u_off.T + np.einsum("r,rab->ab", np.diag(w), q_all[np.arange(n_gamma), np.arange(n_gamma)]
                                        - pp[np.arange(n_gamma), np.arange(n_gamma)])
    adjusted = phi + 2.0 * phi @ u_mat @ phi
    return KenwardRoger(adjusted=adjusted, unadjusted=phi, p_mats=p_mats, w=w)


def _kr_ddf(row: np.ndarray, v0: np.ndarray, p_mats: list, w: np.ndarray) -> float:
    """pbkrtest's Lb_ddf for one contrast row (q = 1)."""
    theta = np.outer(row, row) / float(row @ v0 @ row)
    u = np.array([theta @ v0 @ pm @ v0 for pm in p_mats])
    traces = np.einsum("kaa->k", u)
    a1 = float(traces @ w @ traces)
    a2 = float(np.einsum("ij,iab,jba->", w, u, u))
    q = 1
    b = (a1 + 6.0 * a2) / (2 * q)
    g = ((q + 1) * a1 - (q + 4) * a2) / ((q + 2) * a2)
    denominator = 3 * q + 2 * (1 - g)
    c1, c2, c3 = g / denominator, (q - g) / denominator, (q + 2 - g) / denominator
    v0_term = 1 + c1 * b
    v0_term = 0.0 if abs(v0_term) < 1e-10 else v0_term
    v1, v2 = 1 - c2 * b, 1 - c3 * b
    ratio = 1.0 if abs(1 - a2 / q) < 1e-14 and abs(v1) < 1e-14 else (1 - a2 / q) / v1
    rho = ratio ** 2 * v0_term / v2 / q
    return 4 + (q + 2) / (q * rho - 1)
