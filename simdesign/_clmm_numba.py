"""Compiled kernels of :mod:`simdesign.clmm` (optional: used only when numba is installed).

The same computations as the numpy code in ``clmm.py`` (mode search, the
structured factorisation of the random-effects Hessian, the Laplace value
and its implicit-function gradient), written as loops over observations,
level pairs and blocks. Numpy spends most of a fit in the per-call overhead
of many small batched operations (5 x 5 inverses, 900 coupling products per
factorisation on the paper's design); compiled loops do the same arithmetic
without it, about ten times faster. The algorithm, its tolerances and the
order of its steps are the numpy code's, so both reach the same optimum
(to rounding); ``SIMDESIGN_CLMM_NUMBA=0`` switches back to numpy.

Conventions: the random-effects factor with more levels is "eliminated"
(``e``: its q_e x q_e diagonal blocks are inverted one by one), the other is
"kept" (``k``: its Schur complement is factorised densely, per connected
component). With one factor only, ``n_k = 0`` and the kept arrays are empty.
Loadings are per system: observation i of system s has loading rows
``Mk[s]``, ``Me[s]`` (the random-effects design depends only on the system).
Both factors' random effects have the same dimension q (an intercept-only term
is a q x q factor with zeros; without a kept factor, ``Mk`` is q columns of
zeros). ``q_tuple`` is a tuple of length q, and its length, not an array's
shape, bounds the loops over random-effects dimensions (why:
``simdesign.clmm.compiled._q_tuple``); the dense Cholesky factorisations, whose
sizes also vary with the Schur complement's components, take theirs from the
arrays.
"""
from __future__ import annotations

import numpy as np
from numba import njit

# Status codes returned to clmm.py, which raises the matching exception.
OK = 0
UNDERFLOW = 1  # a category probability underflowed to zero
NOT_POSITIVE_DEFINITE = 2  # a block of H failed its Cholesky factorisation
NO_MODE = 3  # no mode after the iteration limit
HALVING_FAILED = 4  # Newton step halving failed


@njit(cache=True)
def _logistic_pair(x):
    """(logistic(x), logistic(-x)) without cancellation; exact 0/1 at -inf/+inf."""
    e = np.exp(-abs(x))
    if x >= 0:
        return 1.0 / (1.0 + e), e / (1.0 + e)
    return e / (1.0 + e), 1.0 / (1.0 + e)


@njit(cache=True)
def _category_probability(thresholds_extended, c, eta):
    """(F, 1 - F) at the category's upper and lower thresholds, and its probability p, for one observation.

    Where both thresholds lie far above eta, p is the difference of the upper tails (no cancellation).
    """
    a_up = thresholds_extended[c + 1] - eta
    a_lo = thresholds_extended[c] - eta
    F_up, G_up = _logistic_pair(a_up)
    F_lo, G_lo = _logistic_pair(a_lo)
    if a_up + a_lo > 0:
        return F_up, G_up, F_lo, G_lo, G_lo - G_up
    return F_up, G_up, F_lo, G_lo, F_up - F_lo


@njit(cache=True)
def linear_predictor(fixed, system, k_codes, e_codes, Mk, Me, q_tuple, uk, ue, n_k, eta):
    n = fixed.shape[0]
    qk = qe = len(q_tuple)
    for i in range(n):
        s = system[i]
        value = fixed[i]
        if n_k > 0:
            a = k_codes[i]
            for j in range(qk):
                value += Mk[s, j] * uk[a, j]
        d = e_codes[i]
        for j in range(qe):
            value += Me[s, j] * ue[d, j]
        eta[i] = value


@njit(cache=True)
def _pair_from(e, nonnegative):
    """(logistic(x), logistic(-x)) from e = exp(-|x|) and the sign of x."""
    r = 1.0 / (1.0 + e)
    if nonnegative:
        return r, e * r
    return e * r, r


# Below this |eta| and |threshold|, exp(theta - eta) is formed as exp(theta) * exp(-eta) (one exp per
# observation instead of two; the same relative accuracy), far from overflow or underflow.
_PRODUCT_RANGE = 300.0


@njit(cache=True)
def observation_terms(thresholds_extended, category, eta, g, w):
    """Fill g, w (first two derivatives of -log p in eta); return -sum log p (inf on underflow)."""
    n = eta.shape[0]
    exp_pos, exp_neg = np.exp(thresholds_extended), np.exp(-thresholds_extended)
    products = True
    for j in range(1, thresholds_extended.shape[0] - 1):
        if abs(thresholds_extended[j]) > _PRODUCT_RANGE:
            products = False
    total = 0.0
    for i in range(n):
        c = category[i]
        x = eta[i]
        a_up = thresholds_extended[c + 1] - x
        a_lo = thresholds_extended[c] - x
        if products and abs(x) < _PRODUCT_RANGE:
            exp_x = np.exp(x)
            inverse = 1.0 / exp_x
            e_up = exp_neg[c + 1] * exp_x if a_up >= 0 else exp_pos[c + 1] * inverse
            e_lo = exp_neg[c] * exp_x if a_lo >= 0 else exp_pos[c] * inverse
        else:
            e_up, e_lo = np.exp(-abs(a_up)), np.exp(-abs(a_lo))
        F_up, G_up = _pair_from(e_up, a_up >= 0)
        F_lo, G_lo = _pair_from(e_lo, a_lo >= 0)
        if a_up + a_lo > 0:  # both large: difference the upper tails (clmm.py does the same)
            p = G_lo - G_up
        else:
            p = F_up - F_lo
        if not (p > 0.0):  # also catches nan; a finite difference of probabilities is at most 1
            return np.inf
        inverse_p = 1.0 / p
        f_up, f_lo = F_up * G_up, F_lo * G_lo
        s_up, s_lo = f_up * (G_up - F_up), f_lo * (G_lo - F_lo)
        gi = (f_up - f_lo) * inverse_p
        g[i] = gi
        w[i] = gi * gi - (s_up - s_lo) * inverse_p
        total -= np.log(p)
    return total


@njit(cache=True)
def third_order_terms(thresholds_extended, category, eta, g, w, w_prime, dl_up, dl_lo, dg_up, dg_lo, dw_up, dw_lo):
    n = eta.shape[0]
    for i in range(n):
        c = category[i]
        F_up, G_up, F_lo, G_lo, p = _category_probability(thresholds_extended, c, eta[i])
        f_up, f_lo = F_up * G_up, F_lo * G_lo
        s_up, s_lo = f_up * (G_up - F_up), f_lo * (G_lo - F_lo)
        c_up, c_lo = f_up * (1.0 - 6.0 * f_up), f_lo * (1.0 - 6.0 * f_lo)
        gi = (f_up - f_lo) / p
        d2_over_p = (s_up - s_lo) / p
        wi = gi * gi - d2_over_p
        g[i] = gi
        w[i] = wi
        w_prime[i] = (c_up - c_lo) / p + 3.0 * gi * wi - gi ** 3
        dl_up[i] = -f_up / p
        dl_lo[i] = f_lo / p
        dg_up[i] = (s_up - gi * f_up) / p
        dg_lo[i] = (gi * f_lo - s_lo) / p
        dw_up[i] = 2.0 * gi * dg_up[i] - c_up / p + d2_over_p * f_up / p
        dw_lo[i] = 2.0 * gi * dg_lo[i] + c_lo / p - d2_over_p * f_lo / p


@njit(cache=True)
def _accumulate_loadings(weights, system, codes, M, q_tuple, out):
    """out[l] += sum over observations i of level l of weights[i] * M[system[i]] (out pre-filled)."""
    q = len(q_tuple)
    for i in range(weights.shape[0]):
        s, l, wi = system[i], codes[i], weights[i]
        for j in range(q):
            out[l, j] += wi * M[s, j]


@njit(cache=True)
def _cholesky_inverse(A, inverse, T):
    """Overwrite A's lower triangle by its Cholesky factor, fill ``inverse`` = A^-1; return log det (nan: not PD).

    T is an m x m workspace (receives L^-1).
    """
    m = A.shape[0]
    log_det = 0.0
    for j in range(m):
        s = A[j, j]
        for k in range(j):
            s -= A[j, k] * A[j, k]
        if not (s > 0.0):
            return np.nan
        d = np.sqrt(s)
        A[j, j] = d
        log_det += 2.0 * np.log(d)
        for i in range(j + 1, m):
            t = A[i, j]
            for k in range(j):
                t -= A[i, k] * A[j, k]
            A[i, j] = t / d
    for j in range(m):  # T = L^-1, lower triangular
        for i in range(j):
            T[i, j] = 0.0
        T[j, j] = 1.0 / A[j, j]
        for i in range(j + 1, m):
            t = 0.0
            for k in range(j, i):
                t -= A[i, k] * T[k, j]
            T[i, j] = t / A[i, i]
    for a in range(m):
        for b in range(a + 1):
            t = 0.0
            for k in range(a, m):
                t += T[k, a] * T[k, b]
            inverse[a, b] = t
            inverse[b, a] = t
    return log_det


@njit(cache=True)
def _level_weights(w, system, codes, n_levels, n_systems):
    """Weights summed by (level, system): a level's block is a sum of per-system outer products."""
    cell = np.zeros((n_levels, n_systems))
    for i in range(w.shape[0]):
        cell[codes[i], system[i]] += w[i]
    return cell


@njit(cache=True)
def _level_blocks(cell, M, q_tuple):
    """Lower triangles of sum_s cell[level, s] M[s] M[s]' per level (the diagonal blocks of M'WM)."""
    n_levels, n_systems = cell.shape
    q = len(q_tuple)
    blocks = np.zeros((n_levels, q, q))
    for level in range(n_levels):
        for s in range(n_systems):
            weight = cell[level, s]
            if weight == 0.0:
                continue
            for a in range(q):
                t = weight * M[s, a]
                for b in range(a + 1):
                    blocks[level, a, b] += t * M[s, b]
    return blocks


@njit(cache=True)
def _invert_eliminated_blocks(D, d_inverse):
    """Add I to each block D[d] and invert it in place of d_inverse; return the summed log dets (nan: not PD)."""
    n_e, qe = D.shape[0], D.shape[1]
    log_det = 0.0
    workspace = np.empty((qe, qe))
    for d in range(n_e):
        for a in range(qe):
            D[d, a, a] += 1.0
        value = _cholesky_inverse(D[d], d_inverse[d], workspace)
        if np.isnan(value):
            return np.nan
        log_det += value
    return log_det


@njit(cache=True)
def _pair_sums(w, system, k_codes, pair_code, Mk, Me, q_tuple, n_k, c_pairs):
    """Fill C per observed (kept, eliminated) pair; return the kept levels' weights by (level, system).

    One pass over the observations serves both sums, as before the split (their rounding is unchanged).
    """
    qk = qe = len(q_tuple)
    cell_k = np.zeros((n_k, Me.shape[0]))
    c_pairs[:] = 0.0
    for i in range(w.shape[0]):
        s, p, wi = system[i], pair_code[i], w[i]
        cell_k[k_codes[i], s] += wi
        for a in range(qk):
            t = wi * Mk[s, a]
            for b in range(qe):
                c_pairs[p, a, b] += t * Me[s, b]
    return cell_k


@njit(cache=True)
def _pairs_times_d_inverse(c_pairs, d_inverse, pair_elim, q_tuple, x_pairs):
    """X = C D^-1 per pair: reused by the Schur complement, solve and the selected inverse."""
    qk = qe = len(q_tuple)
    for p in range(pair_elim.shape[0]):
        d = pair_elim[p]
        for a in range(qk):
            for b in range(qe):
                t = 0.0
                for k in range(qe):
                    t += c_pairs[p, a, k] * d_inverse[d, k, b]
                x_pairs[p, a, b] = t


@njit(cache=True)
def _schur_complement(A, c_pairs, x_pairs, q_tuple, pair_kept, couple_first, couple_second, local_of_kept,
                      comp_of_kept, comp_offset, comp_size, size):
    """Lower triangles of S = I + A - X C' per connected component, packed one after the other."""
    qk = qe = len(q_tuple)
    schur = np.zeros(size)
    for level in range(A.shape[0]):
        c = comp_of_kept[level]
        width = comp_size[c] * qk
        base = comp_offset[c]
        row0 = local_of_kept[level] * qk
        for a in range(qk):
            for b in range(a + 1):
                schur[base + (row0 + a) * width + row0 + b] += A[level, a, b] + (1.0 if a == b else 0.0)
    for idx in range(couple_first.shape[0]):
        p1, p2 = couple_first[idx], couple_second[idx]
        level1, level2 = pair_kept[p1], pair_kept[p2]
        c = comp_of_kept[level1]
        width = comp_size[c] * qk
        base = comp_offset[c]
        local1, local2 = local_of_kept[level1], local_of_kept[level2]
        if local1 < local2:
            continue  # only the lower triangle is factorised
        row0, col0 = local1 * qk, local2 * qk
        for a in range(qk):
            for b in range(qk if local1 > local2 else a + 1):
                t = 0.0
                for k in range(qe):
                    t += x_pairs[p1, a, k] * c_pairs[p2, b, k]
                schur[base + (row0 + a) * width + col0 + b] -= t
    return schur


@njit(cache=True)
def _invert_components(schur, schur_inverse, comp_offset, comp_size, qk, log_det):
    """Invert each component's block of S into schur_inverse; return log_det plus their log dets (nan: not PD).

    log_det is passed in so that the sum is formed in the same order as before the split.
    """
    workspace = np.empty((comp_size.max() * qk, comp_size.max() * qk))
    for c in range(comp_size.shape[0]):
        width = comp_size[c] * qk
        base = comp_offset[c]
        block = schur[base:base + width * width].reshape((width, width))
        inverse = schur_inverse[base:base + width * width].reshape((width, width))
        value = _cholesky_inverse(block, inverse, workspace[:width, :width])
        if np.isnan(value):
            return np.nan
        log_det += value
    return log_det


@njit(cache=True)
def factorise(w, system, k_codes, e_codes, pair_code, Mk, Me, q_tuple, n_k, n_e, pair_kept, pair_elim,
              couple_first, couple_second, local_of_kept, comp_of_kept, comp_offset, comp_size,
              d_inverse, c_pairs, x_pairs, schur_inverse):
    """H = I + M'WM = [[A, C], [C', D]]: fill D^-1, C, X = C D^-1 and the Schur inverses; return log det H."""
    n_systems = Me.shape[0]
    D = _level_blocks(_level_weights(w, system, e_codes, n_e, n_systems), Me, q_tuple)
    log_det = _invert_eliminated_blocks(D, d_inverse)
    if np.isnan(log_det) or n_k == 0:
        return log_det
    cell_k = _pair_sums(w, system, k_codes, pair_code, Mk, Me, q_tuple, n_k, c_pairs)
    A = _level_blocks(cell_k, Mk, q_tuple)
    _pairs_times_d_inverse(c_pairs, d_inverse, pair_elim, q_tuple, x_pairs)
    schur = _schur_complement(A, c_pairs, x_pairs, q_tuple, pair_kept, couple_first, couple_second,
                              local_of_kept, comp_of_kept, comp_offset, comp_size, schur_inverse.shape[0])
    return _invert_components(schur, schur_inverse, comp_offset, comp_size, len(q_tuple), log_det)


@njit(cache=True)
def solve(rk, re, q_tuple, n_k, pair_kept, pair_elim, local_of_kept, comp_of_kept, comp_offset, comp_size,
          comp_members, comp_member_start, d_inverse, c_pairs, x_pairs, schur_inverse, xk, xe):
    """Solve H x = r for the structured H of :func:`factorise`."""
    n_e, qe = re.shape[0], len(q_tuple)
    if n_k == 0:
        for d in range(n_e):
            for a in range(qe):
                t = 0.0
                for b in range(qe):
                    t += d_inverse[d, a, b] * re[d, b]
                xe[d, a] = t
        return
    qk = len(q_tuple)
    moved = rk.copy()
    for p in range(pair_kept.shape[0]):
        level, d = pair_kept[p], pair_elim[p]
        for a in range(qk):
            t = 0.0
            for b in range(qe):
                t += x_pairs[p, a, b] * re[d, b]
            moved[level, a] -= t
    for c in range(comp_size.shape[0]):
        size = comp_size[c]
        width = size * qk
        base = comp_offset[c]
        start = comp_member_start[c]
        for l1 in range(size):
            level1 = comp_members[start + l1]
            for a in range(qk):
                row = base + (l1 * qk + a) * width
                t = 0.0
                for l2 in range(size):
                    level2 = comp_members[start + l2]
                    for b in range(qk):
                        t += schur_inverse[row + l2 * qk + b] * moved[level2, b]
                xk[level1, a] = t
    back = re.copy()
    for p in range(pair_kept.shape[0]):
        level, d = pair_kept[p], pair_elim[p]
        for b in range(qe):
            t = 0.0
            for a in range(qk):
                t += c_pairs[p, a, b] * xk[level, a]
            back[d, b] -= t
    for d in range(n_e):
        for a in range(qe):
            t = 0.0
            for b in range(qe):
                t += d_inverse[d, a, b] * back[d, b]
            xe[d, a] = t


@njit(cache=True)
def _largest(gk, ge):
    largest = 0.0
    for v in gk.ravel():
        largest = max(largest, abs(v))
    for v in ge.ravel():
        largest = max(largest, abs(v))
    return largest


@njit(cache=True)
def _objective_at(thresholds_extended, category, fixed, system, k_codes, e_codes, Mk, Me, q_tuple, n_k, uk, ue,
                  eta, g, w):
    """f(u) = -log p(y | u) + |u|^2 / 2 with g, w filled (inf: a probability underflowed); eta is a workspace."""
    linear_predictor(fixed, system, k_codes, e_codes, Mk, Me, q_tuple, uk, ue, n_k, eta)
    value = observation_terms(thresholds_extended, category, eta, g, w)
    if value != np.inf:
        value += 0.5 * (np.sum(uk * uk) + np.sum(ue * ue))
    return value


@njit(cache=True)
def _fill_gradient(uk, ue, g, system, k_codes, e_codes, Mk, Me, q_tuple, n_k, gk, ge):
    """Fill (gk, ge) = u + M'g, the gradient of f in u; return its largest absolute entry."""
    gk[:] = uk
    ge[:] = ue
    if n_k > 0:
        _accumulate_loadings(g, system, k_codes, Mk, q_tuple, gk)
    _accumulate_loadings(g, system, e_codes, Me, q_tuple, ge)
    return _largest(gk, ge)


@njit(cache=True)
def _halving_search(thresholds_extended, category, fixed, system, k_codes, e_codes, Mk, Me, q_tuple, n_k, uk,
                    ue, step_k, step_e, threshold, chord, eta, trial_k, trial_e, trial_g, trial_w):
    """Try u - factor * step for factor = 1, 1/2, ... until f drops to ``threshold``; return the last f.

    A chord step (old Hessian) is tried at full length only: if it fails, a fresh Newton step is cheaper.
    """
    factor = 1.0
    while True:
        trial_k[:] = uk - factor * step_k
        trial_e[:] = ue - factor * step_e
        trial_value = _objective_at(thresholds_extended, category, fixed, system, k_codes, e_codes, Mk, Me, q_tuple,
                                    n_k, trial_k, trial_e, eta, trial_g, trial_w)
        if trial_value <= threshold:
            return trial_value
        factor /= 2.0
        if chord or factor < 1e-10:
            return trial_value


@njit(cache=True)
def mode_search(thresholds_extended, category, fixed, system, k_codes, e_codes, pair_code, Mk, Me, q_tuple,
                n_k, n_e, pair_kept, pair_elim, couple_first, couple_second, local_of_kept, comp_of_kept, comp_offset,
                comp_size, comp_members, comp_member_start, uk, ue,
                use_previous, prev_d_inverse, prev_c_pairs, prev_x_pairs, prev_schur_inverse,
                d_inverse, c_pairs, x_pairs, schur_inverse, g, w,
                tolerance, max_iterations, chord_steps, chord_min_reduction):
    """Newton search for the mode from (uk, ue), updated in place: clmm._mode's algorithm.

    Returns (status, value f(u*), log det H(u*), iterations, max|grad|). g, w hold
    the observation terms at the mode and (d_inverse, ...) its factorisation.
    """
    n = fixed.shape[0]
    eta = np.empty(n)
    trial_g, trial_w = np.empty(n), np.empty(n)
    value = _objective_at(thresholds_extended, category, fixed, system, k_codes, e_codes, Mk, Me, q_tuple, n_k,
                          uk, ue, eta, g, w)
    if value == np.inf:  # the previous mode is a bad start here: restart from zero
        uk[:] = 0.0
        ue[:] = 0.0
        value = _objective_at(thresholds_extended, category, fixed, system, k_codes, e_codes, Mk, Me, q_tuple,
                              n_k, uk, ue, eta, g, w)
        if value == np.inf:
            return UNDERFLOW, np.nan, np.nan, 0, np.nan
    gk, ge = np.empty_like(uk), np.empty_like(ue)
    max_grad = _fill_gradient(uk, ue, g, system, k_codes, e_codes, Mk, Me, q_tuple, n_k, gk, ge)
    iterations = 0
    chord_left = chord_steps if use_previous else 0
    step_k, step_e = np.empty_like(uk), np.empty_like(ue)
    trial_k, trial_e = np.empty_like(uk), np.empty_like(ue)
    while max_grad >= tolerance:
        if iterations >= max_iterations:
            return NO_MODE, value, np.nan, iterations, max_grad
        chord = chord_left > 0
        if chord:
            solve(gk, ge, q_tuple, n_k, pair_kept, pair_elim, local_of_kept, comp_of_kept, comp_offset,
                  comp_size, comp_members, comp_member_start, prev_d_inverse, prev_c_pairs, prev_x_pairs,
                  prev_schur_inverse, step_k, step_e)
        else:
            log_det = factorise(w, system, k_codes, e_codes, pair_code, Mk, Me, q_tuple, n_k, n_e, pair_kept,
                                pair_elim, couple_first, couple_second, local_of_kept, comp_of_kept, comp_offset,
                                comp_size, d_inverse, c_pairs, x_pairs, schur_inverse)
            if np.isnan(log_det):
                return NOT_POSITIVE_DEFINITE, value, np.nan, iterations, max_grad
            solve(gk, ge, q_tuple, n_k, pair_kept, pair_elim, local_of_kept, comp_of_kept, comp_offset,
                  comp_size, comp_members, comp_member_start, d_inverse, c_pairs, x_pairs, schur_inverse, step_k,
                  step_e)
        threshold = value + 1e-12 * abs(value)
        trial_value = _halving_search(thresholds_extended, category, fixed, system, k_codes, e_codes, Mk, Me, q_tuple,
                                      n_k, uk, ue, step_k, step_e, threshold, chord, eta, trial_k, trial_e,
                                      trial_g, trial_w)
        if trial_value > threshold:
            if chord:  # the old Hessian is too far off: continue with true Newton steps
                chord_left = 0
                continue
            if max_grad < 1e-6:  # rounding limits the last digits; the mode is accurate enough
                break
            return HALVING_FAILED, value, np.nan, iterations, max_grad
        uk[:] = trial_k
        ue[:] = trial_e
        value = trial_value
        g[:] = trial_g
        w[:] = trial_w
        new_max = _fill_gradient(uk, ue, g, system, k_codes, e_codes, Mk, Me, q_tuple, n_k, gk, ge)
        if chord:
            chord_left = chord_left - 1 if new_max < chord_min_reduction * max_grad else 0
        max_grad = new_max
        iterations += 1
    log_det = factorise(w, system, k_codes, e_codes, pair_code, Mk, Me, q_tuple, n_k, n_e, pair_kept, pair_elim,
                        couple_first, couple_second, local_of_kept, comp_of_kept, comp_offset, comp_size,
                        d_inverse, c_pairs, x_pairs, schur_inverse)
    if np.isnan(log_det):
        return NOT_POSITIVE_DEFINITE, value, np.nan, iterations, max_grad
    return OK, value, log_det, iterations, max_grad


@njit(cache=True)
def _selected_inverse(d_inverse, x_pairs, schur_inverse, n_k, q_tuple, pair_kept, pair_elim, couple_first,
                      couple_second, local_of_kept, comp_of_kept, comp_offset, comp_size):
    """Blocks of H^-1 at each observed pair (kept_elim) and each eliminated level (elim_elim).

    H^-1_ke(a1, d) = -sum_a2 S^-1(a1, a2) X(a2, d) over the pairs of d, then
    H^-1_ee(d) = D^-1(d) - sum_a1 X(a1, d)' H^-1_ke(a1, d) (fewer products than summing couples twice).
    """
    qk = qe = len(q_tuple)
    n_pairs = pair_kept.shape[0]
    kept_elim = np.zeros((n_pairs, qk, qe))
    elim_elim = d_inverse.copy()
    if n_k > 0:
        for idx in range(couple_first.shape[0]):
            p1, p2 = couple_first[idx], couple_second[idx]
            level1, level2 = pair_kept[p1], pair_kept[p2]
            c = comp_of_kept[level1]
            width = comp_size[c] * qk
            row = comp_offset[c] + local_of_kept[level1] * qk * width + local_of_kept[level2] * qk
            for a in range(qk):
                for k in range(qk):
                    t = schur_inverse[row + a * width + k]
                    for b in range(qe):
                        kept_elim[p1, a, b] -= t * x_pairs[p2, k, b]
        for p in range(n_pairs):
            d = pair_elim[p]
            for k in range(qk):
                for a in range(qe):
                    t = x_pairs[p, k, a]
                    for b in range(qe):
                        elim_elim[d, a, b] -= t * kept_elim[p, k, b]
    return kept_elim, elim_elim


@njit(cache=True)
def _diagonal_blocks_times_loadings(elim_elim, schur_inverse, Mk, Me, q_tuple, n_k, local_of_kept, comp_of_kept,
                                    comp_offset, comp_size):
    """H^-1's diagonal blocks times each system's loading, per (level, system): shared by all its observations."""
    n_e, n_systems = elim_elim.shape[0], Me.shape[0]
    qk = qe = len(q_tuple)
    elim_times = np.zeros((n_e, n_systems, qe))
    for d in range(n_e):
        for s in range(n_systems):
            for a in range(qe):
                t = 0.0
                for b in range(qe):
                    t += elim_elim[d, a, b] * Me[s, b]
                elim_times[d, s, a] = t
    kept_times = np.zeros((n_k, n_systems, qk))
    for level in range(n_k):
        c = comp_of_kept[level]
        width = comp_size[c] * qk
        row = comp_offset[c] + local_of_kept[level] * qk * (width + 1)
        for s in range(n_systems):
            for a in range(qk):
                t = 0.0
                for b in range(qk):
                    t += schur_inverse[row + a * width + b] * Mk[s, b]
                kept_times[level, s, a] = t
    return elim_times, kept_times


@njit(cache=True)
def _leverages(system, k_codes, e_codes, pair_code, Mk, Me, q_tuple, n_k, kept_elim, elim_times, kept_times):
    """Per observation: y = H^-1 m_i (its kept and eliminated parts) and the leverage m_i' H^-1 m_i."""
    n = system.shape[0]
    qk = qe = len(q_tuple)
    yk, ye = np.zeros((n, qk)), np.zeros((n, qe))
    leverage = np.empty(n)
    for i in range(n):
        s, d = system[i], e_codes[i]
        lev = 0.0
        for a in range(qe):
            ye[i, a] = elim_times[d, s, a]
        if n_k > 0:
            level, p = k_codes[i], pair_code[i]
            for a in range(qk):
                t = kept_times[level, s, a]
                for b in range(qe):
                    t += kept_elim[p, a, b] * Me[s, b]
                yk[i, a] = t
                lev += Mk[s, a] * t
                m = Mk[s, a]
                for b in range(qe):
                    ye[i, b] += kept_elim[p, a, b] * m
        for a in range(qe):
            lev += Me[s, a] * ye[i, a]
        leverage[i] = lev
    return yk, ye, leverage


@njit(cache=True)
def _chain_rule_sums(category, system, k_codes, e_codes, Mk, Me, q_tuple, n_k, uk, ue, g, w, half, leverage,
                     dl_up, dl_lo, dg_up, dg_lo, dw_up, dw_lo, yk, ye, xk, xe, n_thresholds, n_systems):
    """One pass over the observations: d/d thresholds, d/d beta and the per-system sums for the SD gradients."""
    qk = qe = len(q_tuple)
    grad_thresholds = np.zeros(n_thresholds)
    grad_beta = np.zeros(n_systems)
    agg_k, agg_e = np.zeros((n_systems, qk)), np.zeros((n_systems, qe))
    for i in range(system.shape[0]):
        s, d, c = system[i], e_codes[i], category[i]
        rho = 0.0
        for a in range(qe):
            rho += Me[s, a] * xe[d, a]
        if n_k > 0:
            level = k_codes[i]
            for a in range(qk):
                rho += Mk[s, a] * xk[level, a]
        eta_weight = g[i] + half[i] - rho * w[i]
        grad_beta[s] += eta_weight
        if c < n_thresholds:
            grad_thresholds[c] += dl_up[i] + 0.5 * leverage[i] * dw_up[i] - rho * dg_up[i]
        if c > 0:
            grad_thresholds[c - 1] += dl_lo[i] + 0.5 * leverage[i] * dw_lo[i] - rho * dg_lo[i]
        for a in range(qe):
            agg_e[s, a] += eta_weight * ue[d, a] + w[i] * ye[i, a] - g[i] * xe[d, a]
        if n_k > 0:
            level = k_codes[i]
            for a in range(qk):
                agg_k[s, a] += eta_weight * uk[level, a] + w[i] * yk[i, a] - g[i] * xk[level, a]
    return grad_thresholds, grad_beta, agg_k, agg_e


@njit(cache=True)
def gradient(thresholds_extended, category, fixed, system, k_codes, e_codes, pair_code, Mk, Me, q_tuple, Zk, Ze,
             n_k, n_e, pair_kept, pair_elim, couple_first, couple_second, local_of_kept, comp_of_kept, comp_offset,
             comp_size, comp_members, comp_member_start, uk, ue, d_inverse, c_pairs, x_pairs, schur_inverse,
             n_thresholds, n_systems):
    """Implicit-function gradient of the Laplace objective at the mode (clmm.py's module Notes).

    Returns (d/d thresholds, d/d beta (all systems; the reference's is dropped
    by the caller), Zk' A_k and Ze' A_e before ``tril``).
    """
    n = fixed.shape[0]
    qk = qe = len(q_tuple)
    eta = np.empty(n)
    linear_predictor(fixed, system, k_codes, e_codes, Mk, Me, q_tuple, uk, ue, n_k, eta)
    g, w, w_prime = np.empty(n), np.empty(n), np.empty(n)
    dl_up, dl_lo, dg_up, dg_lo, dw_up, dw_lo = (np.empty(n), np.empty(n), np.empty(n), np.empty(n),
                                                 np.empty(n), np.empty(n))
    third_order_terms(thresholds_extended, category, eta, g, w, w_prime, dl_up, dl_lo, dg_up, dg_lo, dw_up, dw_lo)
    kept_elim, elim_elim = _selected_inverse(d_inverse, x_pairs, schur_inverse, n_k, q_tuple, pair_kept,
                                             pair_elim, couple_first, couple_second, local_of_kept, comp_of_kept,
                                             comp_offset, comp_size)
    elim_times, kept_times = _diagonal_blocks_times_loadings(elim_elim, schur_inverse, Mk, Me, q_tuple, n_k,
                                                             local_of_kept, comp_of_kept, comp_offset, comp_size)
    yk, ye, leverage = _leverages(system, k_codes, e_codes, pair_code, Mk, Me, q_tuple, n_k, kept_elim,
                                  elim_times, kept_times)
    half = 0.5 * w_prime * leverage
    rk, re = np.zeros((n_k, qk)), np.zeros((n_e, qe))
    if n_k > 0:
        _accumulate_loadings(half, system, k_codes, Mk, q_tuple, rk)
    _accumulate_loadings(half, system, e_codes, Me, q_tuple, re)
    xk, xe = np.zeros((n_k, qk)), np.zeros((n_e, qe))
    solve(rk, re, q_tuple, n_k, pair_kept, pair_elim, local_of_kept, comp_of_kept, comp_offset, comp_size,
          comp_members, comp_member_start, d_inverse, c_pairs, x_pairs, schur_inverse, xk, xe)
    grad_thresholds, grad_beta, agg_k, agg_e = _chain_rule_sums(
        category, system, k_codes, e_codes, Mk, Me, q_tuple, n_k, uk, ue, g, w, half, leverage,
        dl_up, dl_lo, dg_up, dg_lo, dw_up, dw_lo, yk, ye, xk, xe, n_thresholds, Me.shape[0])
    return grad_thresholds, grad_beta, _transpose_times(Zk, agg_k), _transpose_times(Ze, agg_e)


@njit(cache=True)
def _transpose_times(Z, agg):
    """tril(Z' agg) for S x q arrays (a loop: numba's matmul needs SciPy's BLAS bindings)."""
    out = np.zeros((Z.shape[1], agg.shape[1]))
    for s in range(Z.shape[0]):
        for a in range(Z.shape[1]):
            for b in range(min(a + 1, agg.shape[1])):  # lower triangle only: the Cholesky factor's
                out[a, b] += Z[s, a] * agg[s, b]
    return out


@njit(cache=True)
def fixed_only(thresholds_extended, category, eta, system, n_thresholds, n_systems):
    """-log-likelihood of the fixed-effects-only model and its gradient (thresholds, per-system eta).

    Returns inf as the value when a probability underflows.
    """
    grad_thresholds, grad_systems = np.zeros(n_thresholds), np.zeros(n_systems)
    total = 0.0
    for i in range(eta.shape[0]):
        c = category[i]
        F_up, G_up, F_lo, G_lo, p = _category_probability(thresholds_extended, c, eta[i])
        if not (p > 0.0) or not np.isfinite(p):
            return np.inf, grad_thresholds, grad_systems
        f_up, f_lo = F_up * G_up, F_lo * G_lo
        total -= np.log(p)
        grad_systems[system[i]] += (f_up - f_lo) / p
        if c < n_thresholds:
            grad_thresholds[c] -= f_up / p
        if c > 0:
            grad_thresholds[c - 1] += f_lo / p
    return total, grad_thresholds, grad_systems
