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

One call of :func:`evaluate` is one evaluation of the Laplace objective (the
parameter vector's unpacking, the mode search, the gradient and its packing;
issue 41). Its passes over the observations (:func:`observation_terms`,
:func:`third_order_terms`) are branch-free, with exp and log written out, so
that they vectorise, and read each observation's thresholds less its fixed
part (:func:`shifted_thresholds`, fixed during a mode search) rather than
gathering them. Per observation only scalars are formed: the random effects'
part of the linear predictor, the gradient in u and the gradient's q-vectors
are formed per (level, system) and (pair, system) cell, as the random-effects
design depends on the system only.
"""
from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

# Status codes returned to clmm.py, which raises the matching exception.
OK = 0
UNDERFLOW = 1  # a category probability underflowed to zero
NOT_POSITIVE_DEFINITE = 2  # a block of H failed its Cholesky factorisation
NO_MODE = 3  # no mode after the iteration limit
HALVING_FAILED = 4  # Newton step halving failed


# ---------------------------------------------------------------------------------------------------------------
# exp and log for the loops over observations (issue 41). numba calls the C library's exp and log one number at a
# time; these are fdlibm's algorithms (within one unit in the last place of the library's results) written
# without branches or calls, so that LLVM vectorises the loops that use them (several numbers per instruction).
# Kernels using them are compiled with error_model="numpy": float division by zero gives inf instead of raising,
# whose check would stop the vectorisation (the loops test their probabilities themselves).


@intrinsic
def _int_bits_as_float(typingctx, x):
    sig = types.float64(types.int64)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.float64))
    return sig, codegen


@intrinsic
def _float_bits_as_int(typingctx, x):
    sig = types.int64(types.float64)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.int64))
    return sig, codegen


_LN2_HI, _LN2_LO, _INV_LN2 = 6.93147180369123816490e-01, 1.90821492927058770002e-10, 1.44269504088896338700e+00
_P1, _P2, _P3 = 1.66666666666666019037e-01, -2.77777777770155933842e-03, 6.61375632143793436117e-05
_P4, _P5 = -1.65339022054652515390e-06, 4.13813679705723846039e-08
_LG1, _LG2, _LG3 = 6.666666666666735130e-01, 3.999999999940941908e-01, 2.857142874366239149e-01
_LG4, _LG5, _LG6 = 2.222219843214978396e-01, 1.818357216161805012e-01, 1.531383769920937332e-01
_LG7 = 1.479819860511658591e-01
_SQRT2 = 1.4142135623730951
_SMALLEST_NORMAL = 2.2250738585072014e-308
# exp(-|a|) is taken at -|a| no lower than this (exp = 3.3e-308 instead of less, or 0 at an infinite threshold):
# the probabilities it enters differ from 1 by far less than a rounding.
_EXP_FLOOR = -708.0


@njit(cache=True, inline="always", error_model="numpy")
def _exp_nonpositive(x):
    """exp(x) for x in [_EXP_FLOOR, 0] (fdlibm's e_exp.c reduction and polynomial)."""
    k = np.floor(x * _INV_LN2 + 0.5)
    hi = x - k * _LN2_HI
    lo = k * _LN2_LO
    r = hi - lo
    t = r * r
    c = r - t * (_P1 + t * (_P2 + t * (_P3 + t * (_P4 + t * _P5))))
    y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi)
    return y * _int_bits_as_float((np.int64(k) + 1023) << 52)


@njit(cache=True, inline="always", error_model="numpy")
def _log_positive(x):
    """log(x) for positive finite x (fdlibm's e_log.c; subnormal x scaled first); garbage for x <= 0."""
    tiny = x < _SMALLEST_NORMAL
    x = x * 18014398509481984.0 if tiny else x  # 2**54
    bits = _float_bits_as_int(x)
    k = (bits >> 52) - 1023
    m = _int_bits_as_float((bits & 0x000FFFFFFFFFFFFF) | 0x3FF0000000000000)
    big = m > _SQRT2
    m = 0.5 * m if big else m
    kf = np.float64(k + 1 if big else k) - (54.0 if tiny else 0.0)
    f = m - 1.0
    hfsq = 0.5 * f * f
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    R = z * (_LG1 + w * (_LG3 + w * (_LG5 + w * _LG7))) + w * (_LG2 + w * (_LG4 + w * _LG6))
    return kf * _LN2_HI - ((hfsq - (s * (hfsq + R) + kf * _LN2_LO)) - f)


@njit(cache=True)
def _cell_dots(M, u, q_tuple):
    """out[l * S + s] = M[s] . u[l]: the random effects' contribution to an observation of level l and system s."""
    q = len(q_tuple)
    n_levels, n_systems = u.shape[0], M.shape[0]
    out = np.empty(n_levels * n_systems)
    for level in range(n_levels):
        for s in range(n_systems):
            t = 0.0
            for j in range(q):
                t += M[s, j] * u[level, j]
            out[level * n_systems + s] = t
    return out


@njit(cache=True)
def random_part(system, k_codes, e_codes, Mk, Me, q_tuple, uk, ue, n_k, x):
    """x_i = M_i u: the random effects' part of each observation's linear predictor.

    The random-effects design depends on the system only, so M_i u takes one value per (level, system) cell:
    those are formed first, then read per observation.
    """
    n_systems = Me.shape[0]
    elim_part = _cell_dots(Me, ue, q_tuple)
    if n_k > 0:
        kept_part = _cell_dots(Mk, uk, q_tuple)
        for i in range(system.shape[0]):
            s = system[i]
            x[i] = kept_part[k_codes[i] * n_systems + s] + elim_part[e_codes[i] * n_systems + s]
    else:
        for i in range(system.shape[0]):
            x[i] = elim_part[e_codes[i] * n_systems + system[i]]


@njit(cache=True)
def _random_part_cells(cell_k, cell_e, Mk, Me, q_tuple, uk, ue, n_k, x):
    """:func:`random_part` from each observation's flat (level, system) cells (:func:`_observation_cells`)."""
    elim_part = _cell_dots(Me, ue, q_tuple)
    if n_k > 0:
        kept_part = _cell_dots(Mk, uk, q_tuple)
        for i in range(cell_e.shape[0]):
            x[i] = kept_part[cell_k[i]] + elim_part[cell_e[i]]
    else:
        for i in range(cell_e.shape[0]):
            x[i] = elim_part[cell_e[i]]


@njit(cache=True)
def shifted_thresholds(thresholds_extended, category, fixed, t_up, t_lo):
    """Each observation's upper and lower thresholds less its fixed part: a = t - x is then theta - eta.

    Fixed during a mode search, so its passes over the observations read them without a gather (which would
    stop their vectorisation).
    """
    for i in range(category.shape[0]):
        c = category[i]
        t_up[i] = thresholds_extended[c + 1] - fixed[i]
        t_lo[i] = thresholds_extended[c] - fixed[i]


@njit(cache=True, inline="always", error_model="numpy")
def _tails(a):
    """(F, G) = (logistic(a), logistic(-a)) from exp(-|a|) without cancellation; exactly (1, 0) or (0, 1) at an
    infinite a. Branch-free (selects), for vectorised loops."""
    e = _exp_nonpositive(max(-abs(a), _EXP_FLOOR))
    e = e if abs(a) < np.inf else 0.0
    r = 1.0 / (1.0 + e)
    return (r, e * r) if a >= 0 else (e * r, r)


@njit(cache=True, error_model="numpy")
def observation_terms(t_up, t_lo, x, g, w, log_p):
    """Fill g, w (first two derivatives of -log p in eta) at eta = fixed + x; return -sum log p (inf when a
    probability underflows). ``t_up``, ``t_lo``: :func:`shifted_thresholds`; ``log_p`` a workspace."""
    n = x.shape[0]
    bad = 0
    for i in range(n):
        a_up = t_up[i] - x[i]
        a_lo = t_lo[i] - x[i]
        F_up, G_up = _tails(a_up)
        F_lo, G_lo = _tails(a_lo)
        p = G_lo - G_up if a_up + a_lo > 0 else F_up - F_lo  # both large: difference the upper tails
        bad += np.int64(not (p > 0.0))  # also catches nan; a finite difference of probabilities is at most 1
        inverse_p = 1.0 / p
        f_up, f_lo = F_up * G_up, F_lo * G_lo
        s_up, s_lo = f_up * (G_up - F_up), f_lo * (G_lo - F_lo)
        gi = (f_up - f_lo) * inverse_p
        g[i] = gi
        w[i] = gi * gi - (s_up - s_lo) * inverse_p
        log_p[i] = _log_positive(p)
    if bad:
        return np.inf
    total = 0.0
    for i in range(n):
        total -= log_p[i]
    return total


@njit(cache=True, error_model="numpy")
def third_order_terms(t_up, t_lo, x, g, w, w_prime, dl_up, dl_lo, dg_up, dg_lo, dw_up, dw_lo):
    """Fill the first three derivatives of -log p in eta and the partial derivatives of the first two in the
    observation's upper and lower thresholds, at eta = fixed + x (as observation_terms)."""
    n = x.shape[0]
    for i in range(n):
        a_up = t_up[i] - x[i]
        a_lo = t_lo[i] - x[i]
        F_up, G_up = _tails(a_up)
        F_lo, G_lo = _tails(a_lo)
        p = G_lo - G_up if a_up + a_lo > 0 else F_up - F_lo
        inverse_p = 1.0 / p
        f_up, f_lo = F_up * G_up, F_lo * G_lo
        s_up, s_lo = f_up * (G_up - F_up), f_lo * (G_lo - F_lo)
        c_up, c_lo = f_up * (1.0 - 6.0 * f_up), f_lo * (1.0 - 6.0 * f_lo)
        gi = (f_up - f_lo) * inverse_p
        d2_over_p = (s_up - s_lo) * inverse_p
        wi = gi * gi - d2_over_p
        g[i] = gi
        w[i] = wi
        w_prime[i] = (c_up - c_lo) * inverse_p + 3.0 * gi * wi - gi * gi * gi
        up_p, lo_p = f_up * inverse_p, f_lo * inverse_p
        dl_up[i] = -up_p
        dl_lo[i] = lo_p
        dgu = (s_up - gi * f_up) * inverse_p
        dgl = (gi * f_lo - s_lo) * inverse_p
        dg_up[i] = dgu
        dg_lo[i] = dgl
        dw_up[i] = 2.0 * gi * dgu - c_up * inverse_p + d2_over_p * up_p
        dw_lo[i] = 2.0 * gi * dgl + c_lo * inverse_p - d2_over_p * lo_p


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
def _system_products(Ma, Mb, q_tuple):
    """O[s] = Ma[s]' Mb[s] (q x q, flattened) per system: the blocks of M'WM are weighted sums of these."""
    q = len(q_tuple)
    n_systems = Ma.shape[0]
    out = np.empty((n_systems, q * q))
    for s in range(n_systems):
        for a in range(q):
            for b in range(q):
                out[s, a * q + b] = Ma[s, a] * Mb[s, b]
    return out


@njit(cache=True)
def _cell_weights(w, obs_cell_e, obs_cell_k, obs_cell_p, n_k, cell_e, cell_k, cell_p):
    """Fill the weights summed by (eliminated level, system), (kept level, system) and (pair, system), the
    observations' flat cells given (:func:`_observation_cells`)."""
    flat_e, flat_k, flat_p = cell_e.reshape(cell_e.size), cell_k.reshape(cell_k.size), cell_p.reshape(cell_p.size)
    flat_e[:] = 0.0
    flat_k[:] = 0.0
    flat_p[:] = 0.0
    for i in range(w.shape[0]):
        wi = w[i]
        flat_e[obs_cell_e[i]] += wi
        if n_k > 0:
            flat_k[obs_cell_k[i]] += wi
            flat_p[obs_cell_p[i]] += wi


@njit(cache=True)
def _weighted_blocks(cell, products, q_tuple, out):
    """out[l] = sum_s cell[l, s] products[s] (q x q blocks; the loop over a block's q*q entries vectorises)."""
    q = len(q_tuple)
    qq = q * q
    n_levels, n_systems = cell.shape
    flat = out.reshape((n_levels, qq))
    for level in range(n_levels):
        for j in range(qq):
            flat[level, j] = 0.0
        for s in range(n_systems):
            weight = cell[level, s]
            for j in range(qq):
                flat[level, j] += weight * products[s, j]


@njit(cache=True, error_model="numpy")
def _block_cholesky_innermost(L, log_dets):
    """Overwrite the lower triangles of the blocks L[:, :, d] (block index innermost) by their Cholesky factors
    and log_dets[d] by their log dets; return False if a block is not positive definite.

    The block index is innermost so that each step runs over all blocks as one vectorised loop: the q x q blocks
    are too small to vectorise one at a time. Every entry is formed by the same operations in the same order as
    :func:`_cholesky_inverse` forms it, so the factors are the same bit for bit. error_model numpy: a block that
    is not positive definite gives nan/inf here instead of an exception, and is reported by the return value.
    """
    m, n = L.shape[0], L.shape[2]
    positive = True
    for d in range(n):
        log_dets[d] = 0.0
    for j in range(m):
        for k in range(j):
            for d in range(n):
                L[j, j, d] -= L[j, k, d] * L[j, k, d]
        for d in range(n):
            s = L[j, j, d]
            positive &= s > 0.0
            L[j, j, d] = np.sqrt(s)
            log_dets[d] += _log_positive(s)
        for i in range(j + 1, m):
            for k in range(j):
                for d in range(n):
                    L[i, j, d] -= L[i, k, d] * L[j, k, d]
            for d in range(n):
                L[i, j, d] = L[i, j, d] / L[j, j, d]
    return positive


@njit(cache=True, error_model="numpy")
def _block_inverses_innermost(L, T, inverse):
    """inverse[d] = (L[:, :, d] L[:, :, d]')^-1 from the Cholesky factors of :func:`_block_cholesky_innermost`,
    through T[:, :, d] = L[:, :, d]^-1 (block index innermost, vectorised over blocks; each entry's operations in
    the same order as :func:`_cholesky_inverse`, so the same bit for bit)."""
    m, n = L.shape[0], L.shape[2]
    for j in range(m):
        for d in range(n):
            T[j, j, d] = 1.0 / L[j, j, d]
        for i in range(j + 1, m):
            for d in range(n):
                T[i, j, d] = 0.0
            for k in range(j, i):
                for d in range(n):
                    T[i, j, d] -= L[i, k, d] * T[k, j, d]
            for d in range(n):
                T[i, j, d] = T[i, j, d] / L[i, i, d]
    total = np.empty(n)
    for a in range(m):
        for b in range(a + 1):
            for d in range(n):
                total[d] = 0.0
            for k in range(a, m):
                for d in range(n):
                    total[d] += T[k, a, d] * T[k, b, d]
            for d in range(n):
                inverse[d, a, b] = total[d]
                inverse[d, b, a] = total[d]


@njit(cache=True)
def _invert_eliminated_blocks(D, d_inverse, q_tuple):
    """Invert each block I + D[d] into d_inverse[d]; return the summed log dets (nan: not PD).

    The blocks are copied with the block index innermost (:func:`_block_cholesky_innermost`); the log dets are
    summed block by block in order, as before.
    """
    q = len(q_tuple)
    n = D.shape[0]
    L = np.empty((q, q, n))
    for a in range(q):
        for b in range(a + 1):  # the factorisation reads the lower triangles only
            for d in range(n):
                L[a, b, d] = D[d, a, b] + 1.0 if a == b else D[d, a, b]
    log_dets = np.empty(n)
    if not _block_cholesky_innermost(L, log_dets):
        return np.nan
    _block_inverses_innermost(L, np.empty((q, q, n)), d_inverse)
    log_det = 0.0
    for d in range(n):
        log_det += log_dets[d]
    return log_det


@njit(cache=True)
def _pairs_times_d_inverse(c_pairs, d_inverse, pair_elim, q_tuple, x_pairs):
    """X = C D^-1 per pair: reused by the Schur complement, solve and the selected inverse."""
    q = len(q_tuple)
    for p in range(pair_elim.shape[0]):
        d = pair_elim[p]
        for a in range(q):
            for b in range(q):
                t = 0.0  # each entry's sum in registers, its terms in the same order (k) as before
                for k in range(q):
                    t += c_pairs[p, a, k] * d_inverse[d, k, b]
                x_pairs[p, a, b] = t


@njit(cache=True)
def _couple_positions(pair_kept, couple_first, couple_second, local_of_kept, comp_of_kept, comp_offset, comp_size,
                      q):
    """Per couple (p1, p2): where its q x q block starts in the packed Schur arrays, the width of its component's
    rows, and its kind (0: upper block triangle, which the factorisation never reads; 1: lower; 2: diagonal).
    Fixed for a design (found once, simdesign.clmm.compiled), so the loops over couples read them directly."""
    n_couples = couple_first.shape[0]
    row, width, kind = np.empty(n_couples, np.int64), np.empty(n_couples, np.int64), np.empty(n_couples, np.int64)
    for idx in range(n_couples):
        level1, level2 = pair_kept[couple_first[idx]], pair_kept[couple_second[idx]]
        local1, local2 = local_of_kept[level1], local_of_kept[level2]
        c = comp_of_kept[level1]
        width[idx] = comp_size[c] * q
        row[idx] = comp_offset[c] + local1 * q * width[idx] + local2 * q
        kind[idx] = 0 if local1 < local2 else (2 if local1 == local2 else 1)
    return row, width, kind


@njit(cache=True)
def _schur_complement(A, c_pairs, x_pairs, q_tuple, local_of_kept, comp_of_kept, comp_offset, comp_size,
                      couple_first, couple_second, couple_row, couple_width, couple_kind, size):
    """S = I + A - X C' per connected component, packed one after the other (the lower block triangle; the
    factorisation reads the lower triangle only, so the upper triangles of the diagonal blocks keep I + A).
    (couple_row, couple_width, couple_kind): :func:`_couple_positions`."""
    q = len(q_tuple)
    schur = np.zeros(size)
    for level in range(A.shape[0]):
        c = comp_of_kept[level]
        width = comp_size[c] * q
        base = comp_offset[c]
        row0 = local_of_kept[level] * q
        for a in range(q):
            for b in range(q):
                schur[base + (row0 + a) * width + row0 + b] += A[level, a, b] + (1.0 if a == b else 0.0)
    for idx in range(couple_first.shape[0]):
        kind = couple_kind[idx]
        if kind == 0:
            continue  # only the lower block triangle is factorised
        p1, p2 = couple_first[idx], couple_second[idx]
        row, width = couple_row[idx], couple_width[idx]
        for a in range(q):
            for b in range(a + 1 if kind == 2 else q):  # a diagonal block: only its lower triangle is read
                # the entry held in a register while its q products are subtracted, in the same order (k)
                t = schur[row + a * width + b]
                for k in range(q):
                    t -= x_pairs[p1, a, k] * c_pairs[p2, b, k]
                schur[row + a * width + b] = t
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
    """H = I + M'WM = [[A, C], [C', D]]: fill D^-1, C, X = C D^-1 and the Schur inverses; return log det H.

    Every block is a weighted sum of per-system products (the random-effects design depends on the system
    only): the weights are summed by (level, system) and (pair, system) in one pass over the observations.
    """
    n_systems = Me.shape[0]
    cell_e, cell_k = np.empty((n_e, n_systems)), np.empty((n_k, n_systems))
    cell_p = np.empty((pair_kept.shape[0], n_systems))
    couple_row, couple_width, couple_kind = _couple_positions(pair_kept, couple_first, couple_second, local_of_kept,
                                                              comp_of_kept, comp_offset, comp_size, len(q_tuple))
    obs_k, obs_e, obs_p = _observation_cells(system, k_codes, e_codes, pair_code, n_k, n_systems)
    return _factorise_cells(w, obs_k, obs_e, obs_p, Mk, Me, q_tuple, n_k, n_e, pair_kept, pair_elim,
                            couple_first, couple_second, local_of_kept, comp_of_kept, comp_offset, comp_size,
                            d_inverse, c_pairs, x_pairs, schur_inverse, cell_e, cell_k, cell_p, couple_row,
                            couple_width, couple_kind)


@njit(cache=True)
def _factorise_cells(w, obs_cell_k, obs_cell_e, obs_cell_p, Mk, Me, q_tuple, n_k, n_e, pair_kept, pair_elim,
                     couple_first, couple_second, local_of_kept, comp_of_kept, comp_offset, comp_size,
                     d_inverse, c_pairs, x_pairs, schur_inverse, cell_e, cell_k, cell_p, couple_row, couple_width,
                     couple_kind):
    """:func:`factorise`, leaving the weights' sums by cell in (cell_e, cell_k, cell_p): at the mode, the gradient
    sums the same weights in the same order (:func:`_chain_rule_sums`) and takes them from here instead.
    (couple_row, couple_width, couple_kind): :func:`_couple_positions`; (obs_cell_k, ...): :func:`_observation_cells`.
    """
    q = len(q_tuple)
    _cell_weights(w, obs_cell_e, obs_cell_k, obs_cell_p, n_k, cell_e, cell_k, cell_p)
    D = np.empty((n_e, q, q))
    _weighted_blocks(cell_e, _system_products(Me, Me, q_tuple), q_tuple, D)
    log_det = _invert_eliminated_blocks(D, d_inverse, q_tuple)
    if np.isnan(log_det) or n_k == 0:
        return log_det
    _weighted_blocks(cell_p, _system_products(Mk, Me, q_tuple), q_tuple, c_pairs)
    A = np.empty((n_k, q, q))
    _weighted_blocks(cell_k, _system_products(Mk, Mk, q_tuple), q_tuple, A)
    _pairs_times_d_inverse(c_pairs, d_inverse, pair_elim, q_tuple, x_pairs)
    schur = _schur_complement(A, c_pairs, x_pairs, q_tuple, local_of_kept, comp_of_kept, comp_offset, comp_size,
                              couple_first, couple_second, couple_row, couple_width, couple_kind,
                              schur_inverse.shape[0])
    return _invert_components(schur, schur_inverse, comp_offset, comp_size, q, log_det)


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
def _objective_at(t_up, t_lo, cell_k, cell_e, Mk, Me, q_tuple, n_k, uk, ue, x, log_p, g, w):
    """f(u) = -log p(y | u) + |u|^2 / 2 with g, w filled (inf: a probability underflowed); x, log_p workspaces."""
    _random_part_cells(cell_k, cell_e, Mk, Me, q_tuple, uk, ue, n_k, x)
    value = observation_terms(t_up, t_lo, x, g, w, log_p)
    if value != np.inf:
        value += 0.5 * (np.sum(uk * uk) + np.sum(ue * ue))
    return value


@njit(cache=True)
def _cell_sums(values, system, codes, n_levels, n_systems):
    """values summed by (level, system) cell, flat: out[level * S + s]."""
    out = np.empty(n_levels * n_systems)
    _cell_sums_into(values, system, codes, n_systems, out)
    return out


@njit(cache=True)
def _cell_sums_into(values, system, codes, n_systems, out):
    """Fill out with :func:`_cell_sums`."""
    out[:] = 0.0
    for i in range(values.shape[0]):
        out[codes[i] * n_systems + system[i]] += values[i]


@njit(cache=True)
def _cell_sums_at(values, cells, out):
    """Fill out with :func:`_cell_sums`, each observation's flat cell given (:func:`_observation_cells`)."""
    out[:] = 0.0
    for i in range(values.shape[0]):
        out[cells[i]] += values[i]


@njit(cache=True)
def _cells_times_loadings(cells, M, q_tuple, out):
    """out[l] += sum_s cells[l * S + s] M[s] (out pre-filled)."""
    q = len(q_tuple)
    n_systems = M.shape[0]
    for level in range(out.shape[0]):
        for s in range(n_systems):
            c = cells[level * n_systems + s]
            for j in range(q):
                out[level, j] += c * M[s, j]


@njit(cache=True)
def _fill_gradient(uk, ue, g, cell_k, cell_e, Mk, Me, q_tuple, n_k, gk, ge, g_cells_k, g_cells_e):
    """Fill (gk, ge) = u + M'g, the gradient of f in u; return its largest absolute entry. g summed by (level,
    system) cell is left in (g_cells_k, g_cells_e) (flat; the kept one untouched without a kept factor)."""
    gk[:] = uk
    ge[:] = ue
    if n_k > 0:
        _cell_sums_at(g, cell_k, g_cells_k)
        _cells_times_loadings(g_cells_k, Mk, q_tuple, gk)
    _cell_sums_at(g, cell_e, g_cells_e)
    _cells_times_loadings(g_cells_e, Me, q_tuple, ge)
    return _largest(gk, ge)


@njit(cache=True)
def _step_into(u, step, factor, out):
    """out = u - factor * step, entry by entry (as the array expression, without its temporary arrays)."""
    for level in range(u.shape[0]):
        for j in range(u.shape[1]):
            out[level, j] = u[level, j] - factor * step[level, j]


@njit(cache=True)
def _halving_search(t_up, t_lo, cell_k, cell_e, Mk, Me, q_tuple, n_k, uk, ue, step_k, step_e, threshold,
                    chord, x, log_p, trial_k, trial_e, trial_g, trial_w):
    """Try u - factor * step for factor = 1, 1/2, ... until f drops to ``threshold``; return the last f.

    A chord step (old Hessian) is tried at full length only: if it fails, a fresh Newton step is cheaper.
    """
    factor = 1.0
    while True:
        _step_into(uk, step_k, factor, trial_k)  # the same u - factor * step per entry, without temporaries
        _step_into(ue, step_e, factor, trial_e)
        trial_value = _objective_at(t_up, t_lo, cell_k, cell_e, Mk, Me, q_tuple, n_k, trial_k, trial_e,
                                    x, log_p, trial_g, trial_w)
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
    x, t_up, t_lo = np.empty(n), np.empty(n), np.empty(n)
    shifted_thresholds(thresholds_extended, category, fixed, t_up, t_lo)
    sums = _cell_sum_arrays(n_k, n_e, pair_kept.shape[0], Me.shape[0])
    positions = _couple_positions(pair_kept, couple_first, couple_second, local_of_kept, comp_of_kept, comp_offset,
                                  comp_size, len(q_tuple))
    status, value, log_det, iterations, max_grad, _ = _mode_search_shifted(
        t_up, t_lo, x, *_observation_cells(system, k_codes, e_codes, pair_code, n_k, Me.shape[0]), Mk, Me, q_tuple,
        n_k, n_e, pair_kept, pair_elim,
        couple_first, couple_second, local_of_kept, comp_of_kept, comp_offset, comp_size, comp_members,
        comp_member_start, *positions, uk, ue, use_previous, prev_d_inverse, prev_c_pairs, prev_x_pairs,
        prev_schur_inverse, d_inverse, c_pairs, x_pairs, schur_inverse, g, w, *sums, tolerance, max_iterations,
        chord_steps, chord_min_reduction)
    return status, value, log_det, iterations, max_grad


@njit(cache=True)
def _cell_sum_arrays(n_k, n_e, n_pairs, n_systems):
    """Workspaces for the sums by cell that a mode search leaves for the gradient: g by kept and eliminated cell
    (flat), w by eliminated, kept and pair cell (level x system)."""
    return (np.empty(n_k * n_systems), np.empty(n_e * n_systems), np.empty((n_e, n_systems)),
            np.empty((n_k, n_systems)), np.empty((n_pairs, n_systems)))


@njit(cache=True)
def _mode_search_shifted(t_up, t_lo, x, cell_k, cell_e, cell_p, Mk, Me, q_tuple, n_k, n_e, pair_kept,
                         pair_elim, couple_first, couple_second, local_of_kept, comp_of_kept, comp_offset, comp_size,
                         comp_members, comp_member_start, couple_row, couple_width, couple_kind, uk, ue,
                         use_previous, prev_d_inverse, prev_c_pairs, prev_x_pairs, prev_schur_inverse, d_inverse,
                         c_pairs, x_pairs, schur_inverse, g, w,
                         g_cells_k, g_cells_e, w_cells_e, w_cells_k, w_cells_p,
                         tolerance, max_iterations, chord_steps, chord_min_reduction):
    """:func:`mode_search` from the shifted thresholds (:func:`shifted_thresholds`), with x a workspace that it
    leaves holding the random part M u at the returned mode when the last result says so (True), so that the
    gradient need not form it again; likewise g and w summed by cell at the mode (:func:`_cell_sum_arrays`).
    (cell_k, cell_e, cell_p): the observations' flat cells (:func:`_observation_cells`). Returns mode_search's
    values and that flag."""
    n = t_up.shape[0]
    log_p = np.empty(n)
    trial_g, trial_w = np.empty(n), np.empty(n)
    value = _objective_at(t_up, t_lo, cell_k, cell_e, Mk, Me, q_tuple, n_k, uk, ue, x, log_p, g, w)
    if value == np.inf:  # the previous mode is a bad start here: restart from zero
        uk[:] = 0.0
        ue[:] = 0.0
        value = _objective_at(t_up, t_lo, cell_k, cell_e, Mk, Me, q_tuple, n_k, uk, ue, x, log_p, g, w)
        if value == np.inf:
            return UNDERFLOW, np.nan, np.nan, 0, np.nan, False
    gk, ge = np.empty_like(uk), np.empty_like(ue)
    max_grad = _fill_gradient(uk, ue, g, cell_k, cell_e, Mk, Me, q_tuple, n_k, gk, ge, g_cells_k,
                              g_cells_e)
    iterations = 0
    chord_left = chord_steps if use_previous else 0
    step_k, step_e = np.empty_like(uk), np.empty_like(ue)
    trial_k, trial_e = np.empty_like(uk), np.empty_like(ue)
    x_current = True  # x holds M u (a rejected trial point leaves it at that point instead)
    while max_grad >= tolerance:
        if iterations >= max_iterations:
            return NO_MODE, value, np.nan, iterations, max_grad, False
        chord = chord_left > 0
        if chord:
            solve(gk, ge, q_tuple, n_k, pair_kept, pair_elim, local_of_kept, comp_of_kept, comp_offset,
                  comp_size, comp_members, comp_member_start, prev_d_inverse, prev_c_pairs, prev_x_pairs,
                  prev_schur_inverse, step_k, step_e)
        else:
            log_det = _factorise_cells(w, cell_k, cell_e, cell_p, Mk, Me, q_tuple, n_k, n_e, pair_kept,
                                       pair_elim, couple_first, couple_second, local_of_kept, comp_of_kept,
                                       comp_offset, comp_size, d_inverse, c_pairs, x_pairs, schur_inverse, w_cells_e,
                                       w_cells_k, w_cells_p, couple_row, couple_width, couple_kind)
            if np.isnan(log_det):
                return NOT_POSITIVE_DEFINITE, value, np.nan, iterations, max_grad, False
            solve(gk, ge, q_tuple, n_k, pair_kept, pair_elim, local_of_kept, comp_of_kept, comp_offset,
                  comp_size, comp_members, comp_member_start, d_inverse, c_pairs, x_pairs, schur_inverse, step_k,
                  step_e)
        threshold = value + 1e-12 * abs(value)
        trial_value = _halving_search(t_up, t_lo, cell_k, cell_e, Mk, Me, q_tuple, n_k, uk, ue, step_k,
                                      step_e, threshold, chord, x, log_p, trial_k, trial_e, trial_g, trial_w)
        if trial_value > threshold:
            x_current = False
            if chord:  # the old Hessian is too far off: continue with true Newton steps
                chord_left = 0
                continue
            if max_grad < 1e-6:  # rounding limits the last digits; the mode is accurate enough
                break
            return HALVING_FAILED, value, np.nan, iterations, max_grad, False
        uk[:] = trial_k
        ue[:] = trial_e
        x_current = True
        value = trial_value
        g[:] = trial_g
        w[:] = trial_w
        new_max = _fill_gradient(uk, ue, g, cell_k, cell_e, Mk, Me, q_tuple, n_k, gk, ge, g_cells_k,
                                 g_cells_e)
        if chord:
            chord_left = chord_left - 1 if new_max < chord_min_reduction * max_grad else 0
        max_grad = new_max
        iterations += 1
    log_det = _factorise_cells(w, cell_k, cell_e, cell_p, Mk, Me, q_tuple, n_k, n_e, pair_kept,
                               pair_elim, couple_first, couple_second, local_of_kept, comp_of_kept, comp_offset,
                               comp_size, d_inverse, c_pairs, x_pairs, schur_inverse, w_cells_e, w_cells_k, w_cells_p,
                               couple_row, couple_width, couple_kind)
    if np.isnan(log_det):
        return NOT_POSITIVE_DEFINITE, value, np.nan, iterations, max_grad, False
    return OK, value, log_det, iterations, max_grad, x_current


@njit(cache=True)
def _selected_inverse(d_inverse, x_pairs, schur_inverse, n_k, q_tuple, pair_elim, couple_first, couple_second,
                      couple_row, couple_width):
    """Blocks of H^-1 at each observed pair (kept_elim) and each eliminated level (elim_elim).

    H^-1_ke(a1, d) = -sum_a2 S^-1(a1, a2) X(a2, d) over the pairs of d, then
    H^-1_ee(d) = D^-1(d) - sum_a1 X(a1, d)' H^-1_ke(a1, d) (fewer products than summing couples twice).
    (couple_row, couple_width): :func:`_couple_positions`.
    """
    qk = qe = len(q_tuple)
    n_pairs = pair_elim.shape[0]
    kept_elim = np.zeros((n_pairs, qk, qe))
    elim_elim = d_inverse.copy()
    if n_k > 0:
        for idx in range(couple_first.shape[0]):
            p1, p2 = couple_first[idx], couple_second[idx]
            row, width = couple_row[idx], couple_width[idx]
            for a in range(qk):  # each entry in a register, its products subtracted in the same order (k)
                for b in range(qe):
                    t = kept_elim[p1, a, b]
                    for k in range(qk):
                        t -= schur_inverse[row + a * width + k] * x_pairs[p2, k, b]
                    kept_elim[p1, a, b] = t
        for p in range(n_pairs):
            d = pair_elim[p]
            for a in range(qe):
                for b in range(qe):
                    t = elim_elim[d, a, b]
                    for k in range(qk):
                        t -= x_pairs[p, k, a] * kept_elim[p, k, b]
                    elim_elim[d, a, b] = t
    return kept_elim, elim_elim


@njit(cache=True)
def _cell_leverages(kept_elim, elim_elim, schur_inverse, Mk, Me, q_tuple, n_k, pair_kept, local_of_kept,
                    comp_of_kept, comp_offset, comp_size):
    """The pieces of y_i = H^-1 m_i and of the leverages m_i' H^-1 m_i, per (level, system) and (pair, system) cell.

    With m_i = (Mk[s] at kept level k, Me[s] at eliminated level e) for an observation of system s in pair p:
    y_i's kept part is kept_times[k, s] + kept_pair[p, s], its eliminated part elim_times[e, s] + elim_pair[p, s],
    and its leverage lev_kept[k, s] + 2 lev_pair[p, s] + lev_elim[e, s] (cells flat: level * S + s).
    """
    q = len(q_tuple)
    n_e, n_systems, n_pairs = elim_elim.shape[0], Me.shape[0], kept_elim.shape[0]
    # every entry of these is written below (no kept factor: the kept ones are empty), so none is zeroed first
    elim_times = np.empty((n_e * n_systems, q))
    lev_elim = np.empty(n_e * n_systems)
    for d in range(n_e):
        for s in range(n_systems):
            cell = d * n_systems + s
            lev = 0.0
            for a in range(q):
                t = 0.0
                for b in range(q):
                    t += elim_elim[d, a, b] * Me[s, b]
                elim_times[cell, a] = t
                lev += Me[s, a] * t
            lev_elim[cell] = lev
    kept_times = np.empty((n_k * n_systems, q))
    lev_kept = np.empty(n_k * n_systems)
    kept_pair = np.empty((n_pairs * n_systems, q))
    elim_pair = np.empty((n_pairs * n_systems, q))
    lev_pair = np.empty(n_pairs * n_systems)
    if n_k == 0:
        return elim_times, lev_elim, kept_times, lev_kept, kept_pair, elim_pair, lev_pair
    for level in range(n_k):
        c = comp_of_kept[level]
        width = comp_size[c] * q
        row = comp_offset[c] + local_of_kept[level] * q * (width + 1)
        for s in range(n_systems):
            cell = level * n_systems + s
            lev = 0.0
            for a in range(q):
                t = 0.0
                for b in range(q):
                    t += schur_inverse[row + a * width + b] * Mk[s, b]
                kept_times[cell, a] = t
                lev += Mk[s, a] * t
            lev_kept[cell] = lev
    for p in range(n_pairs):
        for s in range(n_systems):
            cell = p * n_systems + s
            lev = 0.0
            for a in range(q):
                t = 0.0
                for b in range(q):
                    t += kept_elim[p, a, b] * Me[s, b]
                kept_pair[cell, a] = t
                lev += Mk[s, a] * t
            lev_pair[cell] = lev
            for b in range(q):
                t = 0.0
                for a in range(q):
                    t += kept_elim[p, a, b] * Mk[s, a]
                elim_pair[cell, b] = t
    return elim_times, lev_elim, kept_times, lev_kept, kept_pair, elim_pair, lev_pair


@njit(cache=True)
def _observation_cells(system, k_codes, e_codes, pair_code, n_k, n_systems):
    """Each observation's flat (level, system) cells: kept, eliminated and pair (zeros without a kept factor)."""
    n = system.shape[0]
    cell_k, cell_e, cell_p = np.zeros(n, np.int64), np.empty(n, np.int64), np.zeros(n, np.int64)
    for i in range(n):
        s = system[i]
        cell_e[i] = e_codes[i] * n_systems + s
        if n_k > 0:
            cell_k[i] = k_codes[i] * n_systems + s
            cell_p[i] = pair_code[i] * n_systems + s
    return cell_k, cell_e, cell_p


@njit(cache=True)
def _cell_aggregate(weight_u, weight_x, weight_y, u, xr, times, M, q_tuple, out):
    """out[s] += sum over levels l of weight_u[l,s] u[l] - weight_x[l,s] xr[l] + weight_y[l,s] times[l*S+s]."""
    q = len(q_tuple)
    n_systems = M.shape[0]
    for level in range(u.shape[0]):
        for s in range(n_systems):
            cell = level * n_systems + s
            wu, wx, wy = weight_u[cell], weight_x[cell], weight_y[cell]
            for a in range(q):
                out[s, a] += wu * u[level, a] - wx * xr[level, a] + wy * times[cell, a]


@njit(cache=True)
def _chain_rule_sums(category, system, cell_k, cell_e, n_k, n_levels_k, n_levels_e, g, w, half, leverage, rho,
                     dl_up, dl_lo, dg_up, dg_lo, dw_up, dw_lo, n_thresholds, n_systems):
    """One pass over the observations: d/d thresholds, d/d beta and the eta weights summed by kept and
    eliminated cell (the SD gradients' other cell sums, of g and w, are the mode search's: _cell_sum_arrays)."""
    grad_thresholds = np.zeros(n_thresholds + 2)  # shifted by one: the categories' outer thresholds are dropped
    grad_beta = np.zeros(n_systems)
    ew_k = np.zeros(n_levels_k * n_systems)
    ew_e = np.zeros(n_levels_e * n_systems)
    n = system.shape[0]
    # the per-observation terms in a loop without gathers (it vectorises), then the sums: each sum takes its terms
    # in observation order, as one loop did
    eta_weight, upper, lower = np.empty(n), np.empty(n), np.empty(n)
    for i in range(n):
        r = rho[i]
        eta_weight[i] = g[i] + half[i] - r * w[i]
        upper[i] = dl_up[i] + 0.5 * leverage[i] * dw_up[i] - r * dg_up[i]
        lower[i] = dl_lo[i] + 0.5 * leverage[i] * dw_lo[i] - r * dg_lo[i]
    for i in range(n):
        c = category[i]
        grad_beta[system[i]] += eta_weight[i]
        grad_thresholds[c + 1] += upper[i]
        grad_thresholds[c] += lower[i]
        ew_e[cell_e[i]] += eta_weight[i]
    if n_k > 0:
        for i in range(n):
            ew_k[cell_k[i]] += eta_weight[i]
    return grad_thresholds[1:n_thresholds + 1].copy(), grad_beta, ew_k, ew_e


@njit(cache=True)
def gradient(thresholds_extended, category, fixed, system, k_codes, e_codes, pair_code, Mk, Me, q_tuple, Zk, Ze,
             n_k, n_e, pair_kept, pair_elim, couple_first, couple_second, local_of_kept, comp_of_kept, comp_offset,
             comp_size, comp_members, comp_member_start, uk, ue, d_inverse, c_pairs, x_pairs, schur_inverse,
             n_thresholds, n_systems):
    """Implicit-function gradient of the Laplace objective at the mode (the package's Notes, simdesign.clmm).

    Returns (d/d thresholds, d/d beta (all systems; the reference's is dropped by the caller), tril(Zk' A_k),
    tril(Ze' A_e)). Per observation only scalars are formed; the q-vectors are formed per (level, system) and
    (pair, system) cell, as the random-effects design depends on the system only.
    """
    n = fixed.shape[0]
    x, t_up, t_lo = np.empty(n), np.empty(n), np.empty(n)
    shifted_thresholds(thresholds_extended, category, fixed, t_up, t_lo)
    random_part(system, k_codes, e_codes, Mk, Me, q_tuple, uk, ue, n_k, x)
    # the sums by cell of g and w at the mode, which a mode search in evaluate leaves behind
    g, w, log_p = np.empty(n), np.empty(n), np.empty(n)
    observation_terms(t_up, t_lo, x, g, w, log_p)
    g_cells_k, g_cells_e, w_cells_e, w_cells_k, w_cells_p = _cell_sum_arrays(n_k, n_e, pair_kept.shape[0], n_systems)
    cell_k, cell_e, cell_p = _observation_cells(system, k_codes, e_codes, pair_code, n_k, n_systems)
    if n_k > 0:
        _cell_sums_at(g, cell_k, g_cells_k)
    _cell_sums_at(g, cell_e, g_cells_e)
    _cell_weights(w, cell_e, cell_k, cell_p, n_k, w_cells_e, w_cells_k, w_cells_p)
    couple_row, couple_width, _ = _couple_positions(pair_kept, couple_first, couple_second, local_of_kept,
                                                    comp_of_kept, comp_offset, comp_size, len(q_tuple))
    return _gradient_shifted(t_up, t_lo, x, category, system, Mk, Me, q_tuple, Zk, Ze,
                             n_k, n_e, pair_kept, pair_elim, couple_first, couple_second, couple_row, couple_width,
                             local_of_kept, comp_of_kept, comp_offset, comp_size, comp_members, comp_member_start,
                             uk, ue, d_inverse, c_pairs,
                             x_pairs, schur_inverse, n_thresholds, n_systems, cell_k, cell_e, cell_p, g_cells_k,
                             g_cells_e, w_cells_e, w_cells_k, w_cells_p)


@njit(cache=True)
def _gradient_shifted(t_up, t_lo, x, category, system, Mk, Me, q_tuple, Zk, Ze, n_k, n_e,
                      pair_kept, pair_elim, couple_first, couple_second, couple_row, couple_width, local_of_kept,
                      comp_of_kept, comp_offset,
                      comp_size, comp_members, comp_member_start, uk, ue, d_inverse, c_pairs, x_pairs, schur_inverse,
                      n_thresholds, n_systems, cell_k, cell_e, cell_p, g_cells_k, g_cells_e, w_cells_e, w_cells_k,
                      w_cells_p):
    """:func:`gradient` from the shifted thresholds, the random part x = M u at the mode and the sums by cell of g
    and w there (which the mode search leaves behind, :func:`_mode_search_shifted`), with each observation's flat
    kept and eliminated cells (:func:`_observation_cells`, found once per design)."""
    n = x.shape[0]
    q = len(q_tuple)
    n_pairs = pair_kept.shape[0]
    g, w, w_prime = np.empty(n), np.empty(n), np.empty(n)
    dl_up, dl_lo, dg_up, dg_lo, dw_up, dw_lo = (np.empty(n), np.empty(n), np.empty(n), np.empty(n),
                                                 np.empty(n), np.empty(n))
    third_order_terms(t_up, t_lo, x, g, w, w_prime, dl_up, dl_lo, dg_up, dg_lo, dw_up, dw_lo)
    kept_elim, elim_elim = _selected_inverse(d_inverse, x_pairs, schur_inverse, n_k, q_tuple, pair_elim, couple_first,
                                             couple_second, couple_row, couple_width)
    elim_times, lev_elim, kept_times, lev_kept, kept_pair, elim_pair, lev_pair = _cell_leverages(
        kept_elim, elim_elim, schur_inverse, Mk, Me, q_tuple, n_k, pair_kept, local_of_kept, comp_of_kept,
        comp_offset, comp_size)
    leverage, half = np.empty(n), np.empty(n)
    for i in range(n):
        lev = lev_elim[cell_e[i]]
        if n_k > 0:
            lev += lev_kept[cell_k[i]] + 2.0 * lev_pair[cell_p[i]]
        leverage[i] = lev
        half[i] = 0.5 * w_prime[i] * lev
    # r = H^-1 M' half carries the dependence of the log-determinant on the mode; rho_i = m_i' r
    rk, re = np.zeros((n_k, q)), np.zeros((n_e, q))
    half_cells = np.empty(max(n_k, n_e) * n_systems)
    if n_k > 0:
        _cell_sums_at(half, cell_k, half_cells[:n_k * n_systems])
        _cells_times_loadings(half_cells[:n_k * n_systems], Mk, q_tuple, rk)
    _cell_sums_at(half, cell_e, half_cells[:n_e * n_systems])
    _cells_times_loadings(half_cells[:n_e * n_systems], Me, q_tuple, re)
    xk, xe = np.zeros((n_k, q)), np.zeros((n_e, q))
    solve(rk, re, q_tuple, n_k, pair_kept, pair_elim, local_of_kept, comp_of_kept, comp_offset, comp_size,
          comp_members, comp_member_start, d_inverse, c_pairs, x_pairs, schur_inverse, xk, xe)
    rho = np.empty(n)
    _random_part_cells(cell_k, cell_e, Mk, Me, q_tuple, xk, xe, n_k, rho)
    grad_thresholds, grad_beta, ew_k, ew_e = _chain_rule_sums(
        category, system, cell_k, cell_e, n_k, n_k, n_e, g, w, half, leverage, rho,
        dl_up, dl_lo, dg_up, dg_lo, dw_up, dw_lo, n_thresholds, n_systems)
    w_p = w_cells_p.reshape(n_pairs * n_systems)
    agg_k, agg_e = np.zeros((n_systems, q)), np.zeros((n_systems, q))
    _cell_aggregate(ew_e, g_cells_e, w_cells_e.reshape(n_e * n_systems), ue, xe, elim_times, Me, q_tuple, agg_e)
    if n_k > 0:
        _cell_aggregate(ew_k, g_cells_k, w_cells_k.reshape(n_k * n_systems), uk, xk, kept_times, Mk, q_tuple, agg_k)
        for p in range(n_pairs):
            for s in range(n_systems):
                cell = p * n_systems + s
                weight = w_p[cell]
                for a in range(q):
                    agg_k[s, a] += weight * kept_pair[cell, a]
                    agg_e[s, a] += weight * elim_pair[cell, a]
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


# ---------------------------------------------------------------------------------------------------------------
# One evaluation of the Laplace objective in one call (issue 41): the parameter vector's unpacking, the mode
# search, the gradient and its packing, which the Python glue did in a dozen numpy calls per evaluation.


@njit(cache=True)
def loadings_from_vector(vector, offset, Z, q_tuple, M):
    """Fill M = Z L, L the Cholesky factor packed at vector[offset:] (its diagonal, then the strictly lower
    elements column by column: the layout's order); offset < 0 (no such factor) leaves M = Z."""
    q = len(q_tuple)
    if offset < 0:
        M[:, :] = Z
        return
    L = np.zeros((q, q))
    for a in range(q):
        L[a, a] = vector[offset + a]
    k = offset + q
    for col in range(q):
        for row in range(col + 1, q):
            L[row, col] = vector[k]
            k += 1
    for s in range(Z.shape[0]):
        for b in range(q):
            t = 0.0
            for a in range(q):
                t += Z[s, a] * L[a, b]
            M[s, b] = t


@njit(cache=True)
def natural_from_optimiser(packed, n_thr):
    """The layout's from_optimiser: thresholds from (theta_1, log increments)."""
    out = packed.copy()
    total = 0.0
    for j in range(1, n_thr):
        total += np.exp(packed[j])
        out[j] = packed[0] + total
    return out


@njit(cache=True)
def gradient_to_optimiser(packed, gradient, n_thr):
    """The layout's gradient_to_optimiser, in place on ``gradient``."""
    tail = 0.0
    for j in range(n_thr - 1, 0, -1):
        tail += gradient[j]
        gradient[j] = np.exp(packed[j]) * tail
    gradient[0] = tail + gradient[0]


@njit(cache=True)
def _pack_cholesky_gradient(G, offset, q_tuple, out):
    q = len(q_tuple)
    for a in range(q):
        out[offset + a] = G[a, a]
    k = offset + q
    for col in range(q):
        for row in range(col + 1, q):
            out[k] = G[row, col]
            k += 1


@njit(cache=True)
def evaluate(vector, optimiser_coords, with_gradient, n_thr, off_k, off_e, Zk, Ze, q_tuple, category, system,
             k_codes, e_codes, pair_code, n_k, n_e, pair_kept, pair_elim, couple_first, couple_second,
             local_of_kept, comp_of_kept, comp_offset, comp_size, comp_members, comp_member_start, cell_k, cell_e,
             cell_p, couple_row, couple_width, couple_kind, uk, ue,
             use_previous, prev_d_inverse, prev_c_pairs, prev_x_pairs, prev_schur_inverse,
             d_inverse, c_pairs, x_pairs, schur_inverse, tolerance, max_iterations, chord_steps,
             chord_min_reduction, gradient_out):
    """The Laplace negative log-likelihood at ``vector`` (natural or optimiser coordinates) and its gradient in
    the same coordinates (into gradient_out, when asked): the mode search from (uk, ue), updated in place, and
    the factorisation at the mode in (d_inverse, ...). (cell_k, cell_e, cell_p): :func:`_observation_cells`;
    (couple_row, couple_width, couple_kind): :func:`_couple_positions` (both found once per design).
    Returns (status, nll, iterations, max|inner gradient|)."""
    natural = natural_from_optimiser(vector, n_thr) if optimiser_coords else vector
    n_systems = Ze.shape[0]
    extended = np.empty(n_thr + 2)
    extended[0] = -np.inf
    extended[n_thr + 1] = np.inf
    for j in range(n_thr):
        extended[j + 1] = natural[j]
    n = category.shape[0]
    fixed = np.empty(n)
    for i in range(n):
        s = system[i]
        fixed[i] = 0.0 if s == 0 else natural[n_thr + s - 1]
    q = len(q_tuple)
    Mk, Me = np.empty((n_systems, q)), np.empty((n_systems, q))
    loadings_from_vector(natural, off_k, Zk, q_tuple, Mk)
    loadings_from_vector(natural, off_e, Ze, q_tuple, Me)
    g, w = np.empty(n), np.empty(n)
    # the shifted thresholds and the random part at the mode serve the mode search and then the gradient
    x, t_up, t_lo = np.empty(n), np.empty(n), np.empty(n)
    shifted_thresholds(extended, category, fixed, t_up, t_lo)
    sums = _cell_sum_arrays(n_k, n_e, pair_kept.shape[0], n_systems)
    status, value, log_det, iterations, max_grad, x_current = _mode_search_shifted(
        t_up, t_lo, x, cell_k, cell_e, cell_p, Mk, Me, q_tuple, n_k, n_e, pair_kept,
        pair_elim, couple_first, couple_second, local_of_kept, comp_of_kept, comp_offset, comp_size, comp_members,
        comp_member_start, couple_row, couple_width, couple_kind, uk, ue, use_previous, prev_d_inverse, prev_c_pairs,
        prev_x_pairs, prev_schur_inverse, d_inverse, c_pairs, x_pairs, schur_inverse, g, w, *sums, tolerance,
        max_iterations, chord_steps, chord_min_reduction)
    if status != OK:
        return status, value, iterations, max_grad
    nll = value + 0.5 * log_det
    if with_gradient:
        if not x_current:
            _random_part_cells(cell_k, cell_e, Mk, Me, q_tuple, uk, ue, n_k, x)
        g_thr, g_beta, g_kept, g_elim = _gradient_shifted(
            t_up, t_lo, x, category, system, Mk, Me, q_tuple, Zk, Ze, n_k, n_e,
            pair_kept, pair_elim, couple_first, couple_second, couple_row, couple_width, local_of_kept, comp_of_kept,
            comp_offset, comp_size, comp_members, comp_member_start, uk, ue, d_inverse, c_pairs, x_pairs,
            schur_inverse, n_thr, n_systems, cell_k, cell_e, cell_p, *sums)
        gradient_out[:] = 0.0
        gradient_out[:n_thr] = g_thr
        gradient_out[n_thr:n_thr + n_systems - 1] = g_beta[1:]
        if off_k >= 0:
            _pack_cholesky_gradient(g_kept, off_k, q_tuple, gradient_out)
        _pack_cholesky_gradient(g_elim, off_e, q_tuple, gradient_out)
        if optimiser_coords:
            gradient_to_optimiser(vector, gradient_out, n_thr)
    return status, nll, iterations, max_grad


@njit(cache=True)
def fixed_only_packed(packed, counts, n_thr):
    """The fixed-effects-only (clm) model's -log-likelihood in its optimiser's coordinates (theta_1, log
    increments, effects) and its gradient there, from the judgements' counts by (system, category): (1e300,
    zeros) where a probability underflows."""
    n_systems, n_categories = counts.shape
    extended = np.empty(n_thr + 2)
    extended[0] = -np.inf
    extended[n_thr + 1] = np.inf
    natural = natural_from_optimiser(packed, n_thr)
    for j in range(n_thr):
        extended[j + 1] = natural[j]
    out = np.zeros(packed.shape[0])
    total = 0.0
    for s in range(n_systems):
        eta = 0.0 if s == 0 else packed[n_thr + s - 1]
        for c in range(n_categories):
            count = counts[s, c]
            if count == 0.0:
                continue
            F_up, G_up = _tails(extended[c + 1] - eta)
            F_lo, G_lo = _tails(extended[c] - eta)
            p = G_lo - G_up if (extended[c + 1] - eta) + (extended[c] - eta) > 0 else F_up - F_lo
            if not (p > 0.0):
                return 1e300, np.zeros(packed.shape[0])
            total -= count * np.log(p)
            up, lo = count * F_up * G_up / p, count * F_lo * G_lo / p
            if s > 0:
                out[n_thr + s - 1] += up - lo
            if c < n_thr:
                out[c] -= up
            if c > 0:
                out[c - 1] += lo
    gradient_to_optimiser(packed, out, n_thr)
    return total, out
