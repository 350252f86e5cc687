"""The arithmetic of the intercepts fast path (:mod:`simdesign.lmm.structured`), in the subset of numpy that
numba compiles.

Each function runs as it is under numpy (the fallback) or compiled by numba (:mod:`simdesign.lmm.compiled`,
when numba is installed); the source is the same, so both reach the same numbers to rounding. The
functions call one another by their module-level names, which the compiled copies resolve to compiled
copies.

Notation (the derivation: :mod:`simdesign.lmm.structured`). The eliminated term (the one with more levels)
has ``n_e`` levels and variance ratio ``tau_e``; the kept term has ``n_k`` levels (0 without one) and
ratio ``tau_k``. ``stats`` (n_e x m) holds each eliminated level's sums of
``Q = [Z_k, X, y]`` (the kept term's indicators, the fixed-effects design, the score), ``cross`` is
``Q'Q`` (m x m), ``m = n_k + p + 1``. ``W0 = (I + tau_e Z_e Z_e')^-1`` is block diagonal by eliminated
level, so ``Q' W0 Q = Q'Q - sum_e tau_e / d_e s_e s_e'`` with ``d_e = 1 + tau_e count_e`` and ``s_e`` level
e's row of ``stats``. ``d_e`` depends on the level only through its count: the levels are grouped by count,
and ``grams[c] = sum s_e s_e'`` over the ``numbers[c]`` levels of count ``counts[c]`` is all the kernels
see of them (one group in a balanced design): an evaluation costs O(groups m^3), whatever n_e.
"""
from __future__ import annotations

import numpy as np

LOG_2PI = float(np.log(2.0 * np.pi))
# Newton's iterations on (log tau_e, log tau_k): at most this many, each with at most LINE_HALVINGS step
# halvings; stopped when a full step would lower the criterion by less than DECREASE_TOLERANCE (its scale:
# thousands), after taking that step (quadratic convergence: tau is then exact to rounding).
MAX_NEWTON = 200
LINE_HALVINGS = 60
DECREASE_TOLERANCE = 1e-10
ARMIJO = 1e-4
# a ratio moved off the boundary where tau's curvature gives no estimate
ESCAPE_TAU = 0.01
# at most this change of log tau in one step (a factor of about 20)
MAX_LOG_STEP = 3.0


def cholesky(a):
    """The lower Cholesky factor (numpy's; the compiled kernels use simdesign.lmm.small_linalg's loops)."""
    return np.linalg.cholesky(a)


def cholesky_inverse(chol):
    """The inverse of ``L L'`` from ``L``, symmetric."""
    inverse_factor = np.linalg.inv(chol)
    return inverse_factor.T @ inverse_factor


def symmetric_eigen(a):
    """Eigenvalues (ascending) and eigenvectors of a symmetric matrix."""
    return np.linalg.eigh(a)


def reduce(tau, grams, counts, numbers, cross, n_k):
    """``(d, G = Q' W0 Q, H, reduced, log det V)`` at ``tau = (tau_e, tau_k)``.

    ``d`` per group of eliminated levels (``1 + tau_e count``), ``H = tau_k (I + tau_k Z_k' W0 Z_k)^-1``
    (the kept term's Woodbury factor, n_k x n_k) and ``reduced = [X y]' V^-1 [X y]``: its X block is
    ``X' V^-1 X`` and the rest gives the residual sum of squares.
    """
    d = 1.0 + tau[0] * counts
    g = cross.copy()
    for c in range(len(counts)):
        g -= (tau[0] / d[c]) * grams[c]
    log_det = np.sum(numbers * np.log(d))
    if n_k > 0:
        a = np.eye(n_k) + tau[1] * g[:n_k, :n_k]
        chol = cholesky(a)
        log_det += 2.0 * np.sum(np.log(np.diag(chol)))
        h = tau[1] * cholesky_inverse(chol)
        hk = h @ np.ascontiguousarray(g[:n_k, n_k:])
        reduced = g[n_k:, n_k:] - np.ascontiguousarray(g[:n_k, n_k:].T) @ hk
    else:
        h = np.zeros((0, 0))
        reduced = g.copy()
    return d, g, h, reduced, log_det


def profiled(reduced, log_det, p, n_obs, reml):
    """``(deviance, beta, X'V^-1 X inverse, r = y'Py, log det X'V^-1 X)`` from :func:`reduce`'s output."""
    xvx = np.ascontiguousarray(reduced[:p, :p])
    chol = cholesky(xvx)
    log_det_x = 2.0 * np.sum(np.log(np.diag(chol)))
    inverse = cholesky_inverse(chol)
    beta = inverse @ np.ascontiguousarray(reduced[:p, p])
    rss = reduced[p, p] - np.ascontiguousarray(reduced[:p, p]) @ beta
    if reml:
        dof = n_obs - p
        value = log_det + log_det_x + dof * (1.0 + LOG_2PI + np.log(rss / dof))
    else:
        value = log_det + n_obs * (1.0 + LOG_2PI + np.log(rss / n_obs))
    return value, beta, inverse, rss, log_det_x


def deviance(tau, grams, counts, numbers, cross, n_k, p, n_obs, reml):
    """The profiled (RE)ML criterion at ``tau`` (lme4's scale), or inf where a factorisation fails."""
    if tau[0] < 0.0 or tau[1] < 0.0:
        return np.inf
    d, g, h, reduced, log_det = reduce(tau, grams, counts, numbers, cross, n_k)
    value, beta, inverse, rss, log_det_x = profiled(reduced, log_det, p, n_obs, reml)
    if not rss > 0.0:
        return np.inf
    return value


def projection(g, h, inverse, n_k, p):
    """``M`` of ``P = W0 - W0 Q0 M Q0' W0`` (``Q0 = [Z_k, X]``): the REML projection's (``inverse``
    given) or, with ``inverse`` None-like (0 x 0), ``V^-1``'s."""
    m0 = n_k + p
    out = np.zeros((m0, m0))
    out[:n_k, :n_k] = h
    if inverse.shape[0] > 0:
        t = np.zeros((m0, p))
        t[:n_k, :] = -(h @ np.ascontiguousarray(g[:n_k, n_k:m0]))
        for j in range(p):
            t[n_k + j, j] = 1.0
        out += t @ inverse @ t.T
    return out


def _level_sums(grams, d, counts, numbers, n_k, p, m_mat, a_vec, b_mat, row):
    """Sums over the eliminated levels, by groups of equal count (``s_e``: level e's row of sums of Q,
    ``s0_e`` its first n_k + p entries, ``J`` the matrix of rows ``s0_e / d_e``, ``M = m_mat``):

    ``(trace, frobenius, jj, ja, aa, caa, bb, rb)``: the trace and squared Frobenius norm of
    ``Z_e' P Z_e = diag(count / d) - J M J'``; ``J'J``; ``sum_e s0_e (s_e . a) / d_e^2``;
    ``sum_e (s_e . a)^2 / d_e^2`` and the same weighted by count / d; ``sum_e |B s0_e|^2 / d_e^2`` and
    ``sum_e (row . s0_e)(s_e . a) / d_e^2`` (for the kept term's block ``Z_k' P Z_e``, columns B s0_e / d_e).
    """
    m0 = n_k + p
    jj = np.zeros((m0, m0))
    ja = np.zeros(m0)
    low, diagonal, diagonal_sq, cross_low, aa, caa, bb, rb = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    for c in range(len(counts)):
        scale = 1.0 / (d[c] * d[c])
        s0 = np.ascontiguousarray(grams[c, :m0, :m0])
        trace_ms = np.sum(m_mat * s0)  # tr(M S0), both symmetric
        low += scale * trace_ms
        ratio = counts[c] / d[c]
        diagonal += numbers[c] * ratio
        diagonal_sq += numbers[c] * ratio * ratio
        cross_low += ratio * scale * trace_ms
        jj += scale * s0
        ta = grams[c] @ a_vec
        ja += scale * ta[:m0]
        quad = a_vec @ ta
        aa += scale * quad
        caa += ratio * scale * quad
        if n_k > 0:
            bb += scale * np.sum((b_mat @ s0) * b_mat)
            rb += scale * (row @ ta[:m0])
    ms = m_mat @ jj
    trace = diagonal - low
    frobenius = diagonal_sq - 2.0 * cross_low + np.sum(ms * ms.T)
    return trace, frobenius, jj, ja, aa, caa, bb, rb


def parts(tau, grams, counts, numbers, cross, n_k, p, n_obs, reml):
    """Everything the derivatives in ``tau`` need, at ``tau``.

    Returns ``(deviance, beta, inverse, rss, trace, frob, cross_uku, usq, d, g, h)``: per term (eliminated
    0, kept 1) the trace of its diagonal block of ``Z'TZ`` (T = P for REML, V^-1 for ML: the
    log-determinants' derivative), ``frob[j, l]`` the squared Frobenius norm of the ``(j, l)`` block of
    ``Z'TZ``, ``cross_uku[j, l] = u_j' (Z_j'P Z_l) u_l`` and ``usq[j] = |u_j|^2`` with ``u = Z'Py``
    (``u_e = (s_e . a) / d_e`` with ``a = (-M Q0'W0 y, 1)``).
    """
    m0 = n_k + p
    d, g, h, reduced, log_det = reduce(tau, grams, counts, numbers, cross, n_k)
    value, beta, inverse, rss, log_det_x = profiled(reduced, log_det, p, n_obs, reml)
    m_p = projection(g, h, inverse, n_k, p)
    m_t = m_p if reml else projection(g, h, np.zeros((0, 0)), n_k, p)
    trace = np.zeros(2)
    frob = np.zeros((2, 2))
    cross_uku = np.zeros((2, 2))
    usq = np.zeros(2)
    gy = np.ascontiguousarray(g[:m0, m0])
    mg = m_p @ gy
    a_vec = np.zeros(m0 + 1)
    a_vec[:m0] = -mg
    a_vec[m0] = 1.0
    gk = np.ascontiguousarray(g[:n_k, :m0])
    b_t = np.zeros((n_k, m0))
    row = np.zeros(m0)
    u_k = np.zeros(n_k)
    if n_k > 0:
        u_k = g[:n_k, m0] - gk @ mg
        b_t = -(gk @ m_t)
        b_p = -(gk @ m_p)
        for j in range(n_k):
            b_t[j, j] += 1.0
            b_p[j, j] += 1.0
        row = u_k @ b_p
    # only the trace, the norm and bb depend on the matrix (T's); the rest are P's forms
    tr_t, frob_t, jj, ja, aa, caa, bb_t, rb = _level_sums(grams, d, counts, numbers, n_k, p, m_t, a_vec, b_t, row)
    trace[0], frob[0, 0] = tr_t, frob_t
    usq[0] = aa
    cross_uku[0, 0] = caa - ja @ m_p @ ja
    if n_k > 0:
        usq[1] = u_k @ u_k
        g_kk = np.ascontiguousarray(g[:n_k, :n_k])
        k_kk_t = g_kk - gk @ m_t @ gk.T
        k_kk = g_kk - gk @ m_p @ gk.T
        trace[1] = np.trace(k_kk_t)
        frob[1, 1] = np.sum(k_kk_t * k_kk_t)
        frob[0, 1] = frob[1, 0] = bb_t
        cross_uku[1, 1] = u_k @ k_kk @ u_k
        cross_uku[0, 1] = cross_uku[1, 0] = rb
    return value, beta, inverse, rss, trace, frob, cross_uku, usq, d, g, h


def newton_terms(trace, frob, cross_uku, usq, rss, dof):
    """Gradient and Hessian in ``tau`` of the profiled criterion (``dof`` = n - p for REML, n for ML)."""
    gradient = trace - dof * usq / rss
    hessian = -frob + dof * (2.0 * cross_uku / rss - np.outer(usq, usq) / (rss * rss))
    return gradient, hessian


def _direction(gradient, hessian, free):
    """Newton's step on the free ratios (at most two), the Hessian shifted to positive definite where it
    is not; closed forms for 1 x 1 and 2 x 2."""
    index = np.nonzero(free)[0]
    step = np.zeros(len(gradient))
    if len(index) == 0:
        return step
    if len(index) == 1:
        a = index[0]
        scale = max(abs(hessian[a, a]), 1e-12)
        curvature = hessian[a, a] if hessian[a, a] > 1e-10 * scale else 1e-6 * scale
        step[a] = -gradient[a] / curvature
        return step
    h11, h12, h22 = hessian[0, 0], hessian[0, 1], hessian[1, 1]
    half_gap = np.sqrt(0.25 * (h11 - h22) ** 2 + h12 * h12)
    low, high = 0.5 * (h11 + h22) - half_gap, 0.5 * (h11 + h22) + half_gap
    scale = max(abs(low), abs(high), 1e-12)
    if low <= 1e-10 * scale:
        shift = 1e-6 * scale - low
        h11, h22 = h11 + shift, h22 + shift
    det = h11 * h22 - h12 * h12
    step[0] = -(h22 * gradient[0] - h12 * gradient[1]) / det
    step[1] = -(h11 * gradient[1] - h12 * gradient[0]) / det
    if step @ gradient >= 0.0:  # not a descent direction (rounding): steepest descent, scaled
        step = -gradient / scale
    return step


def _boundary_step(tau, step, raw, n_par, grams, counts, numbers, cross, n_k, p, n_obs, reml):
    """The lowest of ``tau exp(step)`` and of that point with each ratio whose raw step falls below
    ``-MAX_LOG_STEP`` set to 0: ``(point, criterion, evaluations)``."""
    best, best_value, evaluations = tau * np.exp(step), np.inf, 0
    for j in range(-1, n_par):
        candidate = tau * np.exp(step)
        if j >= 0:
            if raw[j] >= -MAX_LOG_STEP:
                continue
            candidate[j] = 0.0
        trial = deviance(candidate, grams, counts, numbers, cross, n_k, p, n_obs, reml)
        evaluations += 1
        if trial < best_value:
            best, best_value = candidate, trial
    return best, best_value, evaluations


def newton(start, grams, counts, numbers, cross, n_k, p, n_obs, reml):
    """Projected Newton on ``tau >= 0`` in ``log tau`` from ``start`` (tau): ``(tau, evaluations, converged)``
    (:func:`solve` evaluates the fit at ``tau``).

    In ``s = log tau`` the criterion (a sum of ``log(1 + tau lambda)`` and a log residual) is close to
    quadratic from far away; its derivatives come from those in tau (``g_s = tau g_tau``,
    ``H_s = tau tau' H_tau + diag(g_s)``). The boundary: a ratio at 0 stays there while its gradient in tau is
    positive there (the bound is active); with a negative one it moves to tau's Newton estimate. A step that
    would shrink a ratio by more than ``exp(MAX_LOG_STEP)`` tries 0 for it first (a boundary optimum is
    reached in one step, not approached geometrically; the lowest of those points and the capped step is taken). Each step is halved until the criterion falls by
    Armijo's fraction of the predicted decrease; the iterations stop when a full step's predicted decrease is
    below DECREASE_TOLERANCE (that step is still taken: the error is then of its square).
    """
    tau = start.copy()
    n_par = 2 if n_k > 0 else 1
    if n_par == 1:
        tau[1] = 0.0
    dof = n_obs - p if reml else n_obs
    evaluations = 0
    converged = False
    for _ in range(MAX_NEWTON):
        value, beta, inverse, rss, trace, frob, cross_uku, usq, d, g, h = parts(
            tau, grams, counts, numbers, cross, n_k, p, n_obs, reml)
        evaluations += 1
        g_tau, h_tau = newton_terms(trace, frob, cross_uku, usq, rss, dof)
        free = np.zeros(2, np.bool_)
        escaped = False
        for j in range(n_par):
            free[j] = tau[j] > 0.0
            if tau[j] == 0.0 and g_tau[j] < 0.0:  # the criterion falls into the interior: leave the bound
                tau[j] = -g_tau[j] / h_tau[j, j] if h_tau[j, j] > 0.0 else ESCAPE_TAU
                escaped = True
        if escaped:
            continue
        gradient = tau * g_tau
        hessian = np.outer(tau, tau) * h_tau
        for j in range(2):
            hessian[j, j] += gradient[j]
        raw = _direction(gradient, hessian, free)
        # the step shortened as a whole (its direction kept: a descent direction) to MAX_LOG_STEP at most
        step = raw * min(1.0, MAX_LOG_STEP / max(np.max(np.abs(raw)), 1e-300))
        to_zero = False
        for j in range(n_par):
            if raw[j] < -MAX_LOG_STEP:
                to_zero = True
        if to_zero:  # the lowest of the shortened step and the boundary of each ratio that falls fast
            best, best_value, tried = _boundary_step(tau, step, raw, n_par, grams, counts, numbers, cross, n_k, p,
                                                     n_obs, reml)
            evaluations += tried
            if best_value < value:
                tau = best
                continue
        predicted = -(gradient @ step)
        if predicted < DECREASE_TOLERANCE:
            candidate = tau * np.exp(step)
            if deviance(candidate, grams, counts, numbers, cross, n_k, p, n_obs, reml) <= value + 10.0 * DECREASE_TOLERANCE:
                tau = candidate
            evaluations += 1
            converged = True
            break
        alpha = 1.0
        moved = False
        for _ in range(LINE_HALVINGS):
            candidate = tau * np.exp(alpha * step)
            trial = deviance(candidate, grams, counts, numbers, cross, n_k, p, n_obs, reml)
            evaluations += 1
            if trial <= value - ARMIJO * alpha * predicted:
                moved = True
                break
            alpha *= 0.5
        if not moved:
            converged = True  # no step lowers the criterion: at the optimum to rounding
            break
        tau = candidate
    return tau, evaluations, converged


def satterthwaite_terms(trace, frob, cross_uku, usq, rss, sigma, dof, n_par):
    """lmerTest's Hessian of the (RE)ML deviance in ``(tau, sigma)`` (sigma not profiled): the ratios'
    part, their cross terms with sigma and sigma's own second derivative."""
    s2 = sigma * sigma
    first = trace[:n_par] - usq[:n_par] / s2
    second = -frob[:n_par, :n_par] + 2.0 * cross_uku[:n_par, :n_par] / s2
    with_sigma = 2.0 * usq[:n_par] / (s2 * sigma)
    sigma_sigma = (-2.0 * dof + 6.0 * rss / s2) / s2
    return first, second, with_sigma, sigma_sigma


def jacobian_grams(tau, grams, counts, numbers, cross, n_k, p):
    """``(Z_j' V^-1 X)' (Z_j' V^-1 X)`` per term (eliminated, kept): the derivative of ``X'V^-1 X`` in tau_j
    with the sign changed, for the fixed effects' covariance (2 x p x p). Row e of ``Z_e' V^-1 X`` is
    ``C s0_e / d_e`` with ``C = [-(H Z_k'W0 X)', I]``."""
    d, g, h, reduced, log_det = reduce(tau, grams, counts, numbers, cross, n_k)
    return reduced_jacobian_grams(d, g, h, grams, counts, n_k, p)


def reduced_jacobian_grams(d, g, h, grams, counts, n_k, p):
    """:func:`jacobian_grams` from :func:`reduce`'s ``d``, ``g`` and ``h`` at tau."""
    m0 = n_k + p
    out = np.zeros((2, p, p))
    c_mat = np.zeros((p, m0))
    for j in range(p):
        c_mat[j, n_k + j] = 1.0
    if n_k > 0:
        hx = h @ np.ascontiguousarray(g[:n_k, n_k:m0])
        c_mat[:, :n_k] = -hx.T
        zvx_k = g[:n_k, n_k:m0] - np.ascontiguousarray(g[:n_k, :n_k]) @ hx
        out[1] = zvx_k.T @ zvx_k
    for c in range(len(counts)):
        out[0] += (c_mat @ np.ascontiguousarray(grams[c, :m0, :m0]) @ c_mat.T) / (d[c] * d[c])
    return out


def satterthwaite_df(hessian, jacobian, covariance, contrasts, tolerance):
    """lmerTest's contest1D df per contrast row, and the Hessian's eigenvalues (for its notes)."""
    values, vectors = symmetric_eigen(hessian)
    k = len(values)
    inverse = np.zeros((k, k))
    for a in range(k):
        if values[a] > tolerance:
            column = np.ascontiguousarray(vectors[:, a])
            inverse += np.outer(column, column) / values[a]
    n_rows = contrasts.shape[0]
    df = np.empty(n_rows)
    for r in range(n_rows):
        row = contrasts[r]
        variance = row @ covariance @ row
        grad = np.empty(len(jacobian))
        for m in range(len(jacobian)):
            grad[m] = row @ jacobian[m] @ row
        df[r] = 2.0 * variance * variance / (2.0 * (grad @ inverse @ grad))
    return df, values


def satterthwaite_parts(tau, grams, counts, numbers, cross, n_k, p, n_obs, reml, sigma):
    """lmerTest's pieces in the parameters ``(theta_e[, theta_k], sigma)`` (``theta = sqrt(tau)``): the
    Hessian of the (RE)ML deviance and the derivatives of the fixed effects' covariance (n_par + 1, p, p).

    By the chain rule from the derivatives in tau: ``d2/dtheta_j dtheta_l = 4 theta_j theta_l f_jl +
    2 delta_jl f_j`` and ``d/dtheta_j = 2 theta_j d/dtau_j``; ``d vcov / dtau_j = sigma^2 C G_j C`` with
    ``G_j`` from :func:`jacobian_grams` and ``C = (X'V^-1 X)^-1``, ``d vcov / dsigma = 2 sigma C``.
    """
    value, beta, inverse, rss, trace, frob, cross_uku, usq, d, g, h = parts(
        tau, grams, counts, numbers, cross, n_k, p, n_obs, reml)
    return parts_satterthwaite(tau, inverse, rss, trace, frob, cross_uku, usq, d, g, h, grams, counts, n_k, p,
                               n_obs, reml, sigma)


def parts_satterthwaite(tau, inverse, rss, trace, frob, cross_uku, usq, d, g, h, grams, counts, n_k, p, n_obs, reml,
                        sigma):
    """:func:`satterthwaite_parts` from :func:`parts`' output at ``tau`` (:func:`solve` returns it)."""
    n_par = 2 if n_k > 0 else 1
    dof = n_obs - p if reml else n_obs
    first, second, with_sigma, sigma_sigma = satterthwaite_terms(trace, frob, cross_uku, usq, rss, sigma, dof, n_par)
    theta = np.sqrt(tau[:n_par])
    hessian = np.zeros((n_par + 1, n_par + 1))
    for a in range(n_par):
        for b in range(n_par):
            hessian[a, b] = 4.0 * theta[a] * theta[b] * second[a, b]
        hessian[a, a] += 2.0 * first[a]
        hessian[a, n_par] = 2.0 * theta[a] * with_sigma[a]
        hessian[n_par, a] = hessian[a, n_par]
    hessian[n_par, n_par] = sigma_sigma
    grams = reduced_jacobian_grams(d, g, h, grams, counts, n_k, p)
    jacobian = np.zeros((n_par + 1, p, p))
    for a in range(n_par):
        jacobian[a] = sigma * sigma * 2.0 * theta[a] * (inverse @ grams[a] @ inverse)
    jacobian[n_par] = 2.0 * sigma * inverse
    return hessian, jacobian


def solve(start, grams, counts, numbers, cross, n_k, p, n_obs, reml):
    """:func:`newton` from ``start``, then the fit at its optimum: ``(tau, deviance, beta, inverse, rss,
    gradient in tau, evaluations, converged, at)``; ``at``: :func:`parts`' output at the optimum that
    :func:`parts_satterthwaite` needs, ``(trace, frob, cross_uku, usq, d, g, h)``."""
    tau, evaluations, converged = newton(start, grams, counts, numbers, cross, n_k, p, n_obs, reml)
    value, beta, inverse, rss, trace, frob, cross_uku, usq, d, g, h = parts(
        tau, grams, counts, numbers, cross, n_k, p, n_obs, reml)
    gradient, hessian = newton_terms(trace, frob, cross_uku, usq, rss, n_obs - p if reml else n_obs)
    return tau, value, beta, inverse, rss, gradient, evaluations + 1, converged, (trace, frob, cross_uku, usq, d, g, h)
