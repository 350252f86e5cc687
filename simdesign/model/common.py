"""Rules shared by every generative model: effect scale factors and covariance square roots."""
from __future__ import annotations

import math

import numpy as np

from simdesign.core.errors import ConfigError
from simdesign.core.checks import is_number

# A pivot below PIVOT_TOLERANCE * largest diagonal is set to zero (the matrix is singular there);
# a Schur complement entry beyond PSD_TOLERANCE * largest diagonal after that means "not a covariance
# matrix". The paper's coherence annotator matrix is singular (smallest eigenvalue -3e-16).
PIVOT_TOLERANCE = 1e-10
PSD_TOLERANCE = 1e-8


def effect_scale(effect) -> float:
    """Scale factor for the fixed effects: 'fitted' -> 1, 'zero' -> 0, a number -> itself.

    Parameters
    ----------
    effect : {'fitted', 'zero'} or float

    Returns
    -------
    float
    """
    if isinstance(effect, str):
        if effect == "fitted":
            return 1.0
        if effect == "zero":
            return 0.0
        hint = ""
        try:
            float(effect)
            # PyYAML (YAML 1.1) reads 1e3 or 1.0e3 as text: a float needs a dot and a signed exponent.
            hint = " (YAML read it as text: write a plain number such as 2.5, or e.g. 1.0e+3)"
        except ValueError:
            pass
        raise ConfigError(f"The 'effect' field must be 'zero', 'fitted' or a number (scale factor); "
                          f"got {effect!r}{hint}")
    if not is_number(effect) or not np.isfinite(effect):
        raise ConfigError(f"The 'effect' field must be 'zero', 'fitted' or a number (scale factor); got {effect!r}")
    return float(effect)


def covariance_square_root(cov: np.ndarray, name: str) -> np.ndarray:
    """A matrix L with L @ L.T == cov, for positive semi-definite ``cov``, the same on every machine.

    A pivoted LDL^T factorisation in plain Python arithmetic (IEEE double, one fixed order of
    operations): LAPACK's eigenvectors (their signs, the basis of a repeated eigenvalue) and its
    Cholesky depend on the BLAS/LAPACK kernel and thread count, so a root taken by them draws other
    studies from the same seed on another CPU. The matrices are small (one row per system), so loops
    cost microseconds. Pivots are chosen as the largest remaining diagonal (the first of equal ones);
    a pivot below 1e-10 times the largest diagonal ends the factorisation (the rest is singular), which
    decides positive semi-definiteness by a fixed rule rather than by the kernel's rounding.

    Returns
    -------
    ndarray, shape (n, n)
        Column k holds pivot k's loading (zero columns where the matrix is singular).

    Raises
    ------
    ConfigError
        If the matrix is not positive semi-definite: a remaining pivot or Schur complement entry beyond
        1e-8 times the largest diagonal after the singular part.
    """
    matrix = np.asarray(cov, dtype=float)
    size = matrix.shape[0]
    schur = [[float(matrix[i, j]) for j in range(size)] for i in range(size)]
    largest = max([schur[i][i] for i in range(size)] + [0.0])
    root = [[0.0] * size for _ in range(size)]
    remaining = list(range(size))
    for column in range(size):
        pivot = max(remaining, key=lambda i: (schur[i][i], -i)) if remaining else None
        if pivot is None or schur[pivot][pivot] <= PIVOT_TOLERANCE * largest:
            _check_negligible(schur, remaining, largest, name)
            break
        remaining.remove(pivot)
        pivot_value = schur[pivot][pivot]
        pivot_root = math.sqrt(pivot_value)
        root[pivot][column] = pivot_root
        for i in remaining:
            root[i][column] = schur[i][pivot] / pivot_root
        for i in remaining:
            ratio = schur[i][pivot] / pivot_value
            for j in remaining:
                schur[i][j] -= ratio * schur[pivot][j]
    return np.array(root, dtype=float)


def _check_negligible(schur: list, remaining: list, largest: float, name: str) -> None:
    """Refuse a matrix whose part left after the last pivot is not negligible (not PSD)."""
    bound = PSD_TOLERANCE * max(largest, 1e-300)
    worst = max((abs(schur[i][j]) for i in remaining for j in remaining), default=0.0)
    smallest_pivot = min((schur[i][i] for i in remaining), default=0.0)
    if worst > bound:  # (largest is never negative: it is at least 0)
        raise ConfigError(
            f"The '{name}' matrix is not positive semi-definite: after its positive part, the remainder's "
            f"largest entry is {worst:.3g} (smallest diagonal {smallest_pivot:.3g}) against a largest diagonal "
            f"of {largest:.3g} (allowed up to 1e-8 times the largest diagonal)"
        )


def fixed_order_product(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """``left @ right`` without BLAS: a sum over the inner index in a fixed order, term by term.

    BLAS kernels differ between CPUs in blocking, vector width and fused multiply-adds, so ``@`` on
    random draws rounds differently on another machine; numpy's element-wise multiply and add are
    correctly rounded IEEE operations, so this gives the same bits everywhere. Meant for a small
    inner dimension (the number of systems).
    """
    left = np.asarray(left, dtype=float)
    right = np.asarray(right, dtype=float)
    out = np.zeros((left.shape[0], right.shape[1]))
    for k in range(left.shape[1]):
        out += left[:, k, None] * right[None, k, :]
    return out
