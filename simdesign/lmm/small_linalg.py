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
