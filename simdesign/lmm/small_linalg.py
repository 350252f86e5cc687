"""Loops for the small dense matrices of :mod:`simdesign.lmm.kernels` (at most a few tens of rows), used
in place of numpy's LAPACK calls by the compiled kernels (:mod:`simdesign.lmm.compiled`).

numba compiles a LAPACK binding per call site, which made the kernels take minutes to compile, and calls it
with checks and copies that cost more than the arithmetic on a 5 x 5 matrix; these loops compile in seconds
and run in a fraction of that. The numpy kernels keep numpy's functions: the two agree to rounding
(``tests/test_lmm_structured.py``).
"""
from __future__ import annotations

import numpy as np

JACOBI_SWEEPS = 100


def cholesky(a):
    """The lower Cholesky factor of a symmetric positive definite matrix; raises LinAlgError otherwise."""
    n = a.shape[0]
    out = np.zeros((n, n))
    for j in range(n):
        total = a[j, j]
        for k in range(j):
            total -= out[j, k] * out[j, k]
        if not total > 0.0:
            raise np.linalg.LinAlgError("Matrix is not positive definite")
        out[j, j] = np.sqrt(total)
        for i in range(j + 1, n):
            value = a[i, j]
            for k in range(j):
                value -= out[i, k] * out[j, k]
            out[i, j] = value / out[j, j]
    return out


def cholesky_inverse(chol):
    """``(L L')^-1`` from the lower factor L: ``L^-1`` by forward substitution, then ``L^-T L^-1``."""
    n = chol.shape[0]
    inverse_factor = np.zeros((n, n))
    for c in range(n):
        inverse_factor[c, c] = 1.0 / chol[c, c]
        for i in range(c + 1, n):
            value = 0.0
            for k in range(c, i):
                value -= chol[i, k] * inverse_factor[k, c]
            inverse_factor[i, c] = value / chol[i, i]
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1):
            value = 0.0
            for k in range(i, n):
                value += inverse_factor[k, i] * inverse_factor[k, j]
            out[i, j] = value
            out[j, i] = value
    return out


def symmetric_eigen(a):
    """Eigenvalues (ascending) and eigenvectors (columns) of a small symmetric matrix, by cyclic Jacobi
    rotations until the off-diagonal part is below rounding."""
    n = a.shape[0]
    work = a.copy()
    vectors = np.eye(n)
    for _ in range(JACOBI_SWEEPS):
        off = 0.0
        scale = 0.0
        for i in range(n):
            scale += work[i, i] * work[i, i]
            for j in range(i + 1, n):
                off += work[i, j] * work[i, j]
        if off <= 1e-32 * scale or off == 0.0:
            break
        for p in range(n - 1):
            for q in range(p + 1, n):
                if work[p, q] == 0.0:
                    continue
                theta = (work[q, q] - work[p, p]) / (2.0 * work[p, q])
                t = (1.0 if theta >= 0.0 else -1.0) / (abs(theta) + np.sqrt(theta * theta + 1.0))
                c = 1.0 / np.sqrt(t * t + 1.0)
                s = t * c
                for k in range(n):
                    kp, kq = work[k, p], work[k, q]
                    work[k, p], work[k, q] = c * kp - s * kq, s * kp + c * kq
                for k in range(n):
                    pk, qk = work[p, k], work[q, k]
                    work[p, k], work[q, k] = c * pk - s * qk, s * pk + c * qk
                for k in range(n):
                    vp, vq = vectors[k, p], vectors[k, q]
                    vectors[k, p], vectors[k, q] = c * vp - s * vq, s * vp + c * vq
    values = np.empty(n)
    for i in range(n):
        values[i] = work[i, i]
    order = np.argsort(values)
    return values[order], vectors[:, order]


def householder_eigen(a):
    """Eigenvalues (ascending) and eigenvectors (columns) of a symmetric matrix: Householder reduction to
    tridiagonal form, then the implicit QL method (EISPACK's tred2 and tql2); for the tens of rows of the
    slopes path's Hessians, a few times faster than :func:`symmetric_eigen`'s Jacobi sweeps."""
    n = a.shape[0]
    vectors = a.copy()
    diagonal = np.zeros(n)
    off = np.zeros(n)
    _tridiagonal(vectors, diagonal, off, n)
    _implicit_ql(vectors, diagonal, off, n)
    order = np.argsort(diagonal)
    return diagonal[order], np.ascontiguousarray(vectors[:, order])


def _tridiagonal(v, d, e, n):
    """Householder reduction of the symmetric ``v`` (overwritten by the accumulated transformations) to the
    tridiagonal matrix with diagonal ``d`` and subdiagonal ``e[1:]``."""
    for j in range(n):
        d[j] = v[n - 1, j]
    for i in range(n - 1, 0, -1):
        scale = 0.0
        h = 0.0
        for k in range(i):
            scale += abs(d[k])
        if scale == 0.0:
            e[i] = d[i - 1]
            for j in range(i):
                d[j] = v[i - 1, j]
                v[i, j] = 0.0
                v[j, i] = 0.0
        else:
            for k in range(i):
                d[k] /= scale
                h += d[k] * d[k]
            f = d[i - 1]
            g = np.sqrt(h)
            if f > 0.0:
                g = -g
            e[i] = scale * g
            h -= f * g
            d[i - 1] = f - g
            for j in range(i):
                e[j] = 0.0
            for j in range(i):
                f = d[j]
                v[j, i] = f
                g = e[j] + v[j, j] * f
                for k in range(j + 1, i):
                    g += v[k, j] * d[k]
                    e[k] += v[k, j] * f
                e[j] = g
            f = 0.0
            for j in range(i):
                e[j] /= h
                f += e[j] * d[j]
            half = f / (h + h)
            for j in range(i):
                e[j] -= half * d[j]
            for j in range(i):
                f = d[j]
                g = e[j]
                for k in range(j, i):
                    v[k, j] -= f * e[k] + g * d[k]
                d[j] = v[i - 1, j]
                v[i, j] = 0.0
        d[i] = h
    for i in range(n - 1):  # accumulate the transformations
        v[n - 1, i] = v[i, i]
        v[i, i] = 1.0
        h = d[i + 1]
        if h != 0.0:
            for k in range(i + 1):
                d[k] = v[k, i + 1] / h
            for j in range(i + 1):
                g = 0.0
                for k in range(i + 1):
                    g += v[k, i + 1] * v[k, j]
                for k in range(i + 1):
                    v[k, j] -= g * d[k]
        for k in range(i + 1):
            v[k, i + 1] = 0.0
    for j in range(n):
        d[j] = v[n - 1, j]
        v[n - 1, j] = 0.0
    v[n - 1, n - 1] = 1.0
    e[0] = 0.0


QL_ITERATIONS = 60


def _implicit_ql(v, d, e, n):
    """The implicit QL iterations on the tridiagonal (d, e), rotations accumulated into ``v``."""
    for i in range(1, n):
        e[i - 1] = e[i]
    e[n - 1] = 0.0
    shift_total = 0.0
    largest = 0.0
    eps = 2.0 ** -52
    for low in range(n):
        largest = max(largest, abs(d[low]) + abs(e[low]))
        m = low
        while m < n - 1 and abs(e[m]) > eps * largest:
            m += 1
        if m > low:
            for _ in range(QL_ITERATIONS):
                g = d[low]
                p = (d[low + 1] - g) / (2.0 * e[low])
                r = np.hypot(p, 1.0)
                if p < 0.0:
                    r = -r
                d[low] = e[low] / (p + r)
                d[low + 1] = e[low] * (p + r)
                next_d = d[low + 1]
                h = g - d[low]
                for i in range(low + 2, n):
                    d[i] -= h
                shift_total += h
                p = d[m]
                c, c2, c3 = 1.0, 1.0, 1.0
                next_e = e[low + 1]
                s, s2 = 0.0, 0.0
                for i in range(m - 1, low - 1, -1):
                    c3 = c2
                    c2 = c
                    s2 = s
                    g = c * e[i]
                    h = c * p
                    r = np.hypot(p, e[i])
                    e[i + 1] = s * r
                    s = e[i] / r
                    c = p / r
                    p = c * d[i] - s * g
                    d[i + 1] = h + s * (c * g + s * d[i])
                    for k in range(n):
                        h = v[k, i + 1]
                        v[k, i + 1] = s * v[k, i] + c * h
                        v[k, i] = c * v[k, i] - s * h
                p = -s * s2 * c3 * next_e * e[low] / next_d
                e[low] = s * p
                d[low] = c * p
                if not abs(e[low]) > eps * largest:
                    break
        d[low] += shift_total
        e[low] = 0.0
