"""The arithmetic of the slopes fast path (:mod:`simdesign.lmm.slopes`), in the subset of numpy that numba
compiles; run as it is under numpy, or compiled by :mod:`simdesign.lmm.compiled` (the same source).

Notation (the derivation: :mod:`simdesign.lmm.slopes`). The kept term has ``n_k`` levels of ``q`` random
effects each (``K = n_k q`` columns of ``Z_k``), relative covariance ``Psi = L L'`` with ``L`` the lower
factor held in ``theta[:n_l]`` (column-major lower triangle, lme4's order); the eliminated term is an
intercept with ratio ``tau_e = theta[n_l]^2`` (absent: no groups, theta[n_l] stays 0). ``grams``,
``counts``, ``numbers`` and ``cross`` are :mod:`simdesign.lmm.kernels`' (the sums of ``Q = [Z_k, X, y]``
by eliminated level, grouped by count, and ``Q'Q``), with ``K`` kept columns in place of ``n_k``.

The criterion depends on ``L`` through ``Psi`` only, and on ``theta[n_l]`` through its square: it is the
same at ``L`` and at ``L`` with a column's sign changed, so lme4's bounds (the diagonal of ``L`` at least
0) only choose one of equal points. :func:`trust_region` minimises without them, and
:mod:`simdesign.lmm.slopes` changes the signs afterwards.
"""
from __future__ import annotations

import numpy as np

from simdesign.lmm.kernels import _level_sums, cholesky, cholesky_inverse, profiled, projection, symmetric_eigen

# The trust region's iterations: at most MAX_ITERATIONS; stopped when the model's decrease of a step inside
# the region is below DECREASE_TOLERANCE (the criterion's scale: thousands) after that step is taken, or when
# the region's radius falls below MIN_RADIUS.
MAX_ITERATIONS = 300
DECREASE_TOLERANCE = 1e-10
START_RADIUS = 1.0
MIN_RADIUS = 1e-12
MAX_RADIUS = 100.0
ACCEPT = 1e-4
# the secular equation of the trust-region step: at most this many Newton iterations, to this relative error
SECULAR_ITERATIONS = 60
SECULAR_TOLERANCE = 1e-6


def factor(theta, q):
    """The lower factor L (q x q) from its column-major lower triangle ``theta[:q (q + 1) / 2]``."""
    out = np.zeros((q, q))
    k = 0
    for c in range(q):
        for r in range(c, q):
            out[r, c] = theta[k]
            k += 1
    return out


def expanded(lower, n_k):
    """``Lambda = I (x) L`` (K x K)."""
    q = lower.shape[0]
    out = np.zeros((n_k * q, n_k * q))
    for i in range(n_k):
        out[i * q:(i + 1) * q, i * q:(i + 1) * q] = lower
    return out


def slope_reduce(theta, grams, counts, numbers, cross, n_k, q):
    """``(d, G = Q' W0 Q, H, reduced, log det V)`` at ``theta``: ``H = Lambda A^-1 Lambda'`` with
    ``A = I + Lambda' G_kk Lambda`` (``V^-1 = W0 - W0 Z_k H Z_k' W0``, Woodbury's identity, valid for a
    singular L) and ``reduced = [X y]' V^-1 [X y]``."""
    n_l = q * (q + 1) // 2
    tau_e = theta[n_l] * theta[n_l]
    d = 1.0 + tau_e * counts
    g = cross.copy()
    for c in range(len(counts)):
        g -= (tau_e / d[c]) * grams[c]
    log_det = np.sum(numbers * np.log(d))
    k_cols = n_k * q
    lam = expanded(factor(theta, q), n_k)
    g_kk = np.ascontiguousarray(g[:k_cols, :k_cols])
    a = np.eye(k_cols) + lam.T @ g_kk @ lam
    chol = cholesky(a)
    log_det += 2.0 * np.sum(np.log(np.diag(chol)))
    h = lam @ cholesky_inverse(chol) @ lam.T
    g_k_rest = np.ascontiguousarray(g[:k_cols, k_cols:])
    reduced = g[k_cols:, k_cols:] - g_k_rest.T @ (h @ g_k_rest)
    return d, g, h, reduced, log_det


def slope_deviance(theta, grams, counts, numbers, cross, n_k, q, p, n_obs, reml):
    """The profiled (RE)ML criterion at ``theta`` (lme4's scale), inf where it is not defined."""
    d, g, h, reduced, log_det = slope_reduce(theta, grams, counts, numbers, cross, n_k, q)
    value, beta, inverse, rss, log_det_x = profiled(reduced, log_det, p, n_obs, reml)
    if not rss > 0.0 or not np.isfinite(value):
        return np.inf
    return value


def lower_indices(q):
    """Position ``r q + c`` of every element (r, c) of L in theta's order (column-major lower triangle)."""
    out = np.zeros(q * (q + 1) // 2, np.int64)
    k = 0
    for col in range(q):
        for row in range(col, q):
            out[k] = row * q + col
            k += 1
    return out


def pair_contract(tensor, lower):
    """``out[j, l] = sum Delta_j[a, b] Delta_l[c, d] tensor[a, b, c, d]`` over the elements j, l of theta's
    L part, ``Delta_j = dPsi / dtheta_j = e_r l_c' + l_c e_r'`` for element (r, c) (l_c: column c of L).

    With ``R[r, c] = sum_ab Delta_(r,c)[a, b] tensor[a, b]``, i.e. ``sum_b tensor[r, b] L[b, c] + sum_a
    tensor[a, r] L[a, c]``, ``out[(r, c), (r', c')] = (R_rc L + R_rc' L)[r', c']``: four products by L."""
    q = lower.shape[0]
    qq = q * q
    # [r, (c', d'), b] and [r, (c', d'), a]: the contracted index last
    first = np.ascontiguousarray(tensor.reshape(q, q, qq).transpose(0, 2, 1)).reshape(q * qq, q) @ lower
    second = np.ascontiguousarray(tensor.reshape(q, q, qq).transpose(1, 2, 0)).reshape(q * qq, q) @ lower
    # both [r, (c', d'), c] -> r_mat [r, c, c', d']
    r_mat = np.ascontiguousarray((first + second).reshape(q, qq, q).transpose(0, 2, 1)).reshape(qq * q, q)
    # (R L)[r', c'] = sum_d' R[r', d'] L[d', c'];  (R' L)[r', c'] = sum_c'' R[c'', r'] L[c'', c']
    left = (r_mat @ lower).reshape(qq, qq)  # [(r, c), (r', c')]
    swapped = np.ascontiguousarray(r_mat.reshape(qq, q, q).transpose(0, 2, 1)).reshape(qq * q, q)
    right = (swapped @ lower).reshape(qq, qq)
    index = lower_indices(q)
    both = left + right
    return np.ascontiguousarray(np.ascontiguousarray(both[index]).T[index]).T


def lower_part(matrix, lower):
    """``tr(Delta_j S)`` for every element j of L and a symmetric ``S``: ``2 (S L)[r, c]``, as a vector."""
    q = lower.shape[0]
    product = matrix @ lower
    out = np.zeros(q * (q + 1) // 2)
    k = 0
    for col in range(q):
        for row in range(col, q):
            out[k] = 2.0 * product[row, col]
            k += 1
    return out


def kept_tensors(k_t, k_p, u_k, n_k, q):
    """``(T4, C4)``: ``T4[a,b,c,d] = sum_ii' K_ii'[b,c] K_ii'[a,d]`` of ``K = k_t`` (the traces
    ``tr(T V_j T V_l)``) and ``C4[a,b,c,d] = sum_ii' u_i[a] P_ii'[b,c] u_i'[d]`` of ``P = k_p``
    (``y'P V_j P V_l P y``), ``K_ii'`` the (i, i') q x q block."""
    qq = q * q
    blocks = np.ascontiguousarray(k_t.reshape(n_k, q, n_k, q).transpose(0, 2, 1, 3)).reshape(n_k * n_k, qq)
    outer = blocks.T @ blocks  # [(b, c), (a, d)]
    t4 = np.ascontiguousarray(outer.reshape(q, q, q, q).transpose(2, 0, 1, 3))
    p_blocks = np.ascontiguousarray(k_p.reshape(n_k, q, n_k, q).transpose(0, 1, 3, 2))  # [i, b, c, i']
    u_mat = np.ascontiguousarray(u_k.reshape(n_k, q))
    moved = p_blocks.reshape(n_k * qq, n_k) @ u_mat  # [(i, b, c), d]
    c4 = (u_mat.T @ moved.reshape(n_k, qq * q)).reshape(q, q, q, q)
    return t4, c4


def slope_parts(theta, grams, counts, numbers, cross, n_k, q, p, n_obs, reml):
    """The profiled fit and every piece of the derivatives in theta at ``theta``.

    Returns ``(deviance, beta, inverse, rss, first, squares, second, quads, tr2, cq)``, with T = P (REML) or
    V^-1 (ML) and ``V_j = dV/dtheta_j``: ``first[j] = tr(T V_j)``, ``squares[j] = y'P V_j P y``, ``second``
    and ``quads`` the same of ``d2V / dtheta_j dtheta_l`` (as matrices), ``tr2[j, l] = tr(T V_j T V_l)``,
    ``cq[j, l] = y'P V_j P V_l P y``.
    """
    n_l = q * (q + 1) // 2
    n_par = n_l + 1
    k_cols = n_k * q
    m0 = k_cols + p
    theta_e = theta[n_l]
    d, g, h, reduced, log_det = slope_reduce(theta, grams, counts, numbers, cross, n_k, q)
    value, beta, inverse, rss, log_det_x = profiled(reduced, log_det, p, n_obs, reml)
    m_p = projection(g, h, inverse, k_cols, p)
    m_t = m_p if reml else projection(g, h, np.zeros((0, 0)), k_cols, p)
    mg = m_p @ np.ascontiguousarray(g[:m0, m0])
    a_vec = np.zeros(m0 + 1)
    a_vec[:m0] = -mg
    a_vec[m0] = 1.0
    gk = np.ascontiguousarray(g[:k_cols, :m0])
    u_k = g[:k_cols, m0] - gk @ mg  # Z_k' P y
    b_p = -(gk @ m_p)  # rows of Z_k' P Z_e are b_p s0_e / d_e (T's: b_t)
    for j in range(k_cols):
        b_p[j, j] += 1.0
    b_t = b_p
    if not reml:
        b_t = -(gk @ m_t)
        for j in range(k_cols):
            b_t[j, j] += 1.0
    tr_e, frob_e, jj, ja, usq_e, caa, _, _ = _level_sums(grams, d, counts, numbers, k_cols, p, m_t, a_vec,
                                                         np.zeros((0, m0)), np.zeros(m0))
    g_kk = np.ascontiguousarray(g[:k_cols, :k_cols])
    k_p = g_kk - gk @ m_p @ gk.T  # Z_k' P Z_k (T's: k_t)
    k_t = k_p if reml else g_kk - gk @ m_t @ gk.T
    lower = factor(theta, q)
    sum_t, sum_u, sum_e, sum_uv = _level_blocks(k_t, u_k, b_t @ jj @ b_t.T, b_p @ ja, n_k, q)
    t4, c4 = kept_tensors(k_t, k_p, u_k, n_k, q)
    first, squares = np.zeros(n_par), np.zeros(n_par)
    tr2, cq = np.zeros((n_par, n_par)), np.zeros((n_par, n_par))
    first[:n_l] = lower_part(sum_t, lower)
    squares[:n_l] = lower_part(sum_u, lower)
    tr2[:n_l, :n_l] = pair_contract(t4, lower)
    cq[:n_l, :n_l] = pair_contract(c4, lower)
    first[n_l] = 2.0 * theta_e * tr_e
    squares[n_l] = 2.0 * theta_e * usq_e
    tr2[n_l, n_l] = 4.0 * theta_e * theta_e * frob_e
    cq[n_l, n_l] = 4.0 * theta_e * theta_e * (caa - ja @ m_p @ ja)
    tr2[:n_l, n_l] = tr2[n_l, :n_l] = 2.0 * theta_e * lower_part(sum_e, lower)
    cq[:n_l, n_l] = cq[n_l, :n_l] = theta_e * lower_part(sum_uv + sum_uv.T, lower)
    second = np.zeros((q + 1, q + 1))  # the q x q sum of T's kept blocks, and tau_e's trace in the corner
    quads = np.zeros((q + 1, q + 1))
    second[:q, :q] = sum_t
    quads[:q, :q] = sum_u
    second[q, q] = tr_e
    quads[q, q] = usq_e
    return value, beta, inverse, rss, first, squares, second, quads, tr2, cq


def _level_blocks(k_t, u_k, e_t, v_ek, n_k, q):
    """Sums over the kept levels: of T's diagonal q x q blocks, of ``u_i u_i'``, of ``Z_k'T Z_e Z_e'T Z_k``'s
    diagonal blocks and of ``u_i v_i'`` (``v = Z_k'P Z_e Z_e'P y``)."""
    sum_t = np.zeros((q, q))
    sum_u = np.zeros((q, q))
    sum_e = np.zeros((q, q))
    sum_uv = np.zeros((q, q))
    for i in range(n_k):
        part = slice(i * q, (i + 1) * q)
        sum_t += k_t[part, part]
        sum_e += e_t[part, part]
        sum_u += np.outer(u_k[part], u_k[part])
        sum_uv += np.outer(u_k[part], v_ek[part])
    return sum_t, sum_u, sum_e, sum_uv


def second_terms(second, q):
    """``tr(T V_jl) - w y'P V_jl P y`` for every pair (``V_jl = d2V / dtheta_j dtheta_l``) from ``second``, the
    q x q sums of T's kept blocks less w those of ``u_i u_i'`` with tau_e's trace less w ``|Z_e'Py|^2`` in the
    corner: for L's elements (r, c) and (r', c') ``2 [c = c'] second[r, r']``, for theta_e twice the corner."""
    n_l = q * (q + 1) // 2
    out = np.zeros((n_l + 1, n_l + 1))
    j = 0
    for col in range(q):
        for row in range(col, q):
            k = 0
            for col2 in range(q):
                for row2 in range(col2, q):
                    if col == col2:
                        out[j, k] = 2.0 * second[row, row2]
                    k += 1
            j += 1
    out[n_l, n_l] = 2.0 * second[q, q]
    return out


def newton_terms(parts_out, q, p, n_obs, reml):
    """Value, gradient and Hessian in theta of the profiled criterion from :func:`slope_parts`' output."""
    value, beta, inverse, rss, first, squares, second, quads, tr2, cq = parts_out
    dof = n_obs - p if reml else n_obs
    weight = dof / rss
    gradient = first - weight * squares
    hessian = (second_terms(second - weight * quads, q) - tr2
               + weight * (2.0 * cq - np.outer(squares, squares) / rss))
    return value, gradient, hessian


def trust_step(gradient, hessian, radius, active):
    """The step minimising ``g's + s'Hs / 2`` over ``|s| <= radius`` in the ``active`` coordinates (Moré and
    Sorensen's characterisation, from the eigenvectors): ``(step, predicted decrease)``."""
    n = len(gradient)
    index = np.nonzero(active)[0]
    g = gradient[index]
    sub = np.zeros((len(index), len(index)))
    for a in range(len(index)):
        for b in range(len(index)):
            sub[a, b] = hessian[index[a], index[b]]
    newton, inside = _newton_inside(sub, g, radius)
    if inside:  # positive definite and the Newton step within the region: that step (one Cholesky factor)
        step = np.zeros(n)
        step[index] = newton
        return step, -(g @ newton + 0.5 * newton @ (sub @ newton))
    values, vectors = symmetric_eigen(sub)
    gq = vectors.T @ g
    scale = max(np.max(np.abs(values)), 1e-300)
    floor = 1e-12 * scale
    shift = 0.0
    if values[0] <= floor or np.sqrt(np.sum((gq / np.maximum(values, floor)) ** 2)) > radius:
        shift = _secular(values, gq, radius, floor)
    coefficients = -gq / np.maximum(values + shift, floor)
    length = np.sqrt(np.sum(coefficients ** 2))
    if values[0] < -floor and length < radius * (1.0 - 1e-3):
        # the hard case: negative curvature with (almost) no gradient along it: move along it to the boundary
        coefficients[0] += np.sqrt(radius * radius - length * length)
    sub_step = vectors @ coefficients
    step = np.zeros(n)
    step[index] = sub_step
    predicted = -(g @ sub_step + 0.5 * sub_step @ (sub @ sub_step))
    return step, predicted


def _newton_inside(hessian, gradient, radius):
    """Newton's step ``-H^-1 g`` and whether H is positive definite and the step no longer than ``radius``."""
    try:
        chol = cholesky(hessian)
    except Exception:  # noqa: BLE001 (numba catches no narrower class): not positive definite
        return np.zeros(len(gradient)), False
    step = -(cholesky_inverse(chol) @ gradient)
    return step, bool(np.sqrt(np.sum(step * step)) <= radius)


def _secular(values, gq, radius, floor):
    """The shift ``lambda >= max(0, -lowest eigenvalue)`` with ``|(H + lambda I)^-1 g| = radius`` (Newton on
    ``1/|s| - 1/radius`` from the left end, monotone), or the left end when even there the step is shorter."""
    low = max(0.0, -values[0]) + floor
    shift = low
    for _ in range(SECULAR_ITERATIONS):
        denominators = values + shift
        length_sq = np.sum(gq * gq / (denominators * denominators))
        length = np.sqrt(length_sq)
        if length <= radius * (1.0 + SECULAR_TOLERANCE):
            if shift == low or length >= radius * (1.0 - SECULAR_TOLERANCE):
                return shift
        derivative = np.sum(gq * gq / (denominators * denominators * denominators))
        shift += (length_sq / derivative) * (length - radius) / radius
        if shift < low:
            shift = low
    return shift


def trust_region(start, grams, counts, numbers, cross, n_k, q, p, n_obs, reml, has_e):
    """Trust-region Newton on the profiled criterion in theta from ``start``, with the analytic Hessian;
    theta's last element (the eliminated term's) stays at 0 when ``has_e`` is False.
    Returns ``(theta, deviance, evaluations, converged)``."""
    theta = start.copy()
    n_l = q * (q + 1) // 2
    active = np.ones(n_l + 1, np.bool_)
    if not has_e:
        theta[n_l] = 0.0
        active[n_l] = False
    radius = START_RADIUS
    evaluations = 0
    converged = False
    done = False
    for _ in range(MAX_ITERATIONS):
        value, gradient, hessian = newton_terms(
            slope_parts(theta, grams, counts, numbers, cross, n_k, q, p, n_obs, reml), q, p, n_obs, reml)
        evaluations += 1
        if not (np.isfinite(value) and np.all(np.isfinite(gradient)) and np.all(np.isfinite(hessian))):
            break  # not converged: the status says so
        while True:  # until a step is taken: the radius shrinks geometrically
            step, predicted = trust_step(gradient, hessian, radius, active)
            trial = slope_deviance(theta + step, grams, counts, numbers, cross, n_k, q, p, n_obs, reml)
            evaluations += 1
            if not predicted >= DECREASE_TOLERANCE:  # at the optimum (or nan): the last step, if no worse
                if trial <= value + 10.0 * DECREASE_TOLERANCE:
                    theta = theta + step
                converged = predicted < DECREASE_TOLERANCE
                done = True
                break
            ratio = (value - trial) / predicted  # -inf where the criterion is not defined
            length = np.sqrt(np.sum(step * step))
            if not ratio >= 0.25:
                radius = 0.25 * length
            elif ratio > 0.75 and length > 0.99 * radius:
                radius = min(2.0 * radius, MAX_RADIUS)
            if ratio > ACCEPT:
                theta = theta + step
                break
            if radius < MIN_RADIUS:  # no step lowers the criterion: at its optimum to rounding
                converged = True
                done = True
                break
        if done:
            break
    return theta, slope_deviance(theta, grams, counts, numbers, cross, n_k, q, p, n_obs, reml), evaluations, converged


def slope_jacobian(theta, grams, counts, numbers, cross, n_k, q, p, inverse, sigma):
    """The derivatives of the fixed effects' covariance ``sigma^2 (X'V^-1 X)^-1`` in (theta, sigma):
    ``sigma^2 C X'V^-1 V_j V^-1 X C`` and ``2 sigma C`` (``C = inverse``), (n_par + 1) x p x p."""
    n_l = q * (q + 1) // 2
    k_cols = n_k * q
    m0 = k_cols + p
    d, g, h, reduced, log_det = slope_reduce(theta, grams, counts, numbers, cross, n_k, q)
    g_kx = np.ascontiguousarray(g[:k_cols, k_cols:m0])
    hx = h @ g_kx
    zvx = g_kx - np.ascontiguousarray(g[:k_cols, :k_cols]) @ hx  # Z_k' V^-1 X (K x p)
    c_mat = np.zeros((p, m0))
    c_mat[:, :k_cols] = -hx.T
    for j in range(p):
        c_mat[j, k_cols + j] = 1.0
    jj = np.zeros((m0, m0))
    for c in range(len(counts)):
        jj += np.ascontiguousarray(grams[c, :m0, :m0]) / (d[c] * d[c])
    lower = factor(theta, q)
    out = np.zeros((n_l + 2, p, p))
    s2 = sigma * sigma
    k = 0
    for col in range(q):
        for row in range(col, q):
            middle = np.zeros((p, p))
            for i in range(n_k):
                block = np.ascontiguousarray(zvx[i * q:(i + 1) * q])
                left = np.outer(block[row], np.ascontiguousarray(lower[:, col]) @ block)
                middle += left + left.T
            out[k] = s2 * (inverse @ middle @ inverse)
            k += 1
    out[n_l] = s2 * 2.0 * theta[n_l] * (inverse @ (c_mat @ jj @ c_mat.T) @ inverse)
    out[n_l + 1] = 2.0 * sigma * inverse
    return out


def slope_satterthwaite(theta, grams, counts, numbers, cross, n_k, q, p, n_obs, reml, sigma):
    """lmerTest's pieces in ``(theta, sigma)`` (sigma not profiled): the Hessian of the (RE)ML deviance and
    the derivatives of the fixed effects' covariance (:func:`slope_jacobian`)."""
    value, beta, inverse, rss, first, squares, second, quads, tr2, cq = slope_parts(
        theta, grams, counts, numbers, cross, n_k, q, p, n_obs, reml)
    n_par = len(first)
    s2 = sigma * sigma
    dof = n_obs - p if reml else n_obs
    hessian = np.zeros((n_par + 1, n_par + 1))
    hessian[:n_par, :n_par] = second_terms(second - quads / s2, q) - tr2 + 2.0 * cq / s2
    for j in range(n_par):
        hessian[j, n_par] = hessian[n_par, j] = 2.0 * squares[j] / (s2 * sigma)
    hessian[n_par, n_par] = (-2.0 * dof + 6.0 * rss / s2) / s2
    jacobian = slope_jacobian(theta, grams, counts, numbers, cross, n_k, q, p, inverse, sigma)
    return hessian, jacobian


def slope_solve(start, grams, counts, numbers, cross, n_k, q, p, n_obs, reml, has_e):
    """:func:`trust_region` from ``start``, then the fit there: ``(theta, deviance, beta, inverse, rss,
    gradient in theta, evaluations, converged)``."""
    theta, value, evaluations, converged = trust_region(start, grams, counts, numbers, cross, n_k, q, p, n_obs,
                                                        reml, has_e)
    parts_out = slope_parts(theta, grams, counts, numbers, cross, n_k, q, p, n_obs, reml)
    value, gradient, hessian = newton_terms(parts_out, q, p, n_obs, reml)
    return theta, value, parts_out[1], parts_out[2], parts_out[3], gradient, evaluations + 1, converged
