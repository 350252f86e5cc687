"""Random sign flips for the paired randomisation test (ART), drawn and applied cheaply.

ART draws R x n random signs per test (1000 x 300 for single judgements of the
paper's design) and multiplies them with the paired differences; on the
Figure-4 grid this was most of a trial's time. Two shortcuts, both giving
results identical to the plain code:

* :func:`random_sign_bits` returns exactly ``rng.integers(0, 2, size, dtype=np.int8)``
  and leaves the generator in the same state, but reads the bits straight
  from the bit generator's raw output instead of numpy's per-byte bounded
  sampling (about 7 times faster). For ``Generator.integers`` on ``[0, 2)``
  with 8-bit output numpy (1.17 and later, Lemire's method) takes successive
  32-bit outputs, uses their bytes from the lowest up and returns
  ``(byte * 2) >> 8``, the byte's top bit; PCG64 hands out the low half of a
  64-bit output first and keeps the high half for the next 32-bit request.
  So the bits are the top bits of the raw 64-bit words' bytes in
  little-endian order. The shortcut is taken only where that holds (a
  ``PCG64`` generator with no 32-bit half kept, on a little-endian machine)
  and is checked against ``Generator.integers`` by ``tests/test_sign_flips.py``;
  anything else uses ``Generator.integers`` itself.
* :func:`flipped_abs_sums` computes ``|S @ values|`` for the signs S = 2 b - 1
  as ``|2 (b @ values) - sum(values)|``, in float32 when the values are
  integers whose absolute sum is below 2**24 (every partial sum is then an
  exact integer in float32, so the result equals the float64 one) and in
  float64 with the +-1 matrix otherwise (the former arithmetic, bit for bit).
"""
from __future__ import annotations

import functools
import sys

import numpy as np

_FLOAT32_EXACT = 2 ** 24
# the fast path's bound on n * max|v|: sums of sign-flipped values, doubled, combined and shifted stay exact
_FLIP_SUM_EXACT = 2 ** 21


def random_sign_bits(rng: np.random.Generator, resamples: int, n_units: int) -> np.ndarray:
    """0/1 array of shape (resamples, n_units), equal to ``rng.integers(0, 2, size, dtype=np.int8)``.

    Parameters
    ----------
    rng : numpy.random.Generator
        Advanced exactly as ``Generator.integers`` would advance it.
    resamples, n_units : int

    Returns
    -------
    ndarray of uint8 (int8 when the generator is not one the shortcut supports)
    """
    raw = _raw_sign_bytes(rng, resamples * n_units)
    if raw is None:
        return rng.integers(0, 2, size=(resamples, n_units), dtype=np.int8)
    return (raw >> 7).reshape(resamples, n_units)


def _raw_sign_bytes(rng: np.random.Generator, count: int) -> np.ndarray | None:
    """``count`` raw bytes whose top bits are the draws of ``rng.integers(0, 2, count, dtype=np.int8)``.

    The generator is left as ``integers`` leaves it. None (and the generator untouched) where the
    shortcut does not hold: the caller then calls ``integers`` itself.
    """
    bit_generator = rng.bit_generator
    if type(bit_generator) is not np.random.PCG64 or sys.byteorder != "little" or count == 0:
        return None
    state = bit_generator.state
    if state["has_uint32"]:
        # a kept 32-bit half would come first; rare (only after a 32-bit draw), so not worth its own code
        return None
    words32 = -(-count // 4)
    raw = bit_generator.random_raw(-(-words32 // 2))
    # integers() left the high half of the last 64-bit output in PCG64's 32-bit buffer: still to be used
    # after an odd number of 32-bit outputs, spent (but left in the state) after an even number
    state = bit_generator.state
    state["has_uint32"], state["uinteger"] = words32 % 2, int(raw[-1] >> np.uint64(32))
    bit_generator.state = state
    return raw.view(np.uint8)[:count]


def flipped_abs_sums(bits: np.ndarray, values: np.ndarray, integer: bool) -> np.ndarray:
    """``|S @ values|`` for the signs ``S = 2 * bits - 1``, shape (resamples, n_columns).

    ``integer``: whether ``values`` hold integers (then exact float32 arithmetic
    is used when it cannot round; see the module docstring).
    """
    if integer and np.abs(values).sum(axis=0).max(initial=0.0) < _FLOAT32_EXACT:
        partial = bits.astype(np.float32) @ values.astype(np.float32)
        return np.abs(2.0 * partial.astype(np.float64) - values.sum(axis=0))
    signs = bits.astype(float) * 2.0 - 1.0
    return np.abs(signs @ values)


def flip_exceedances(rng: np.random.Generator, resamples: int, values: np.ndarray, integer: bool,
                     threshold: np.ndarray, combination: np.ndarray | None = None) -> np.ndarray:
    """``(|S @ values| >= threshold).sum(axis=0)`` for ``S = 2 * random_sign_bits(rng, resamples, n) - 1``.

    The same draws and counts as :func:`random_sign_bits` and :func:`flipped_abs_sums`, with fewer
    passes over the (resamples x n) matrix on the exact float32 path: the signs go from the raw
    bytes to float32 in one step, and ``|2 (b @ values) - sum(values)|`` is formed in place in
    float32, exact there because every value it takes is an integer below 2**24 in absolute value.

    Parameters
    ----------
    rng : numpy.random.Generator
    resamples : int
    values : ndarray of float, shape (n_units, n_columns)
    integer : bool
        Whether ``values`` hold integers (see :func:`flipped_abs_sums`).
    threshold : ndarray, shape (n_columns,)
    combination : ndarray, shape (k, n_columns), optional
        A matrix of 0 and +-1, at most two non-zeros a column, with ``values == values[:, :k] @ combination``
        exactly (the caller's guarantee: the differences of all system pairs are those of the pairs with
        the first system, combined): the product with the sign matrix, most of the work, is then formed
        for the first k columns only. Default: the identity.

    Returns
    -------
    ndarray of int, shape (n_columns,)
    """
    n_units = values.shape[0]
    # n * max|v| bounds every column's sum of |v| (a cheaper test than flipped_abs_sums's; where only that one
    # would pass, the float64 path gives the same counts: both are exact)
    exact32 = integer and values.size and np.abs(values).max() * n_units < _FLIP_SUM_EXACT
    raw = _raw_sign_bytes(rng, resamples * n_units) if exact32 else None
    if raw is None:
        bits = random_sign_bits(rng, resamples, n_units)
        return (flipped_abs_sums(bits, values, integer) >= threshold).sum(axis=0)
    # a byte's top bit is its sign bit as int8
    bits = np.less(raw.view(np.int8), 0).astype(np.float32).reshape(resamples, n_units)
    if combination is None:
        combination, basis = _identity(values.shape[1]), values
    else:
        basis = values[:, :combination.shape[0]]
    # |2 (b @ basis) C - sum(values)|, in float32: b @ basis is below 2**21 in absolute value (the bound on
    # n * max|v| above), so the doubled combinations (two terms of +-1), minus the column sums, stay below 2**24
    flipped = (bits @ basis.astype(np.float32)) @ (2.0 * combination).astype(np.float32)
    flipped -= values.sum(axis=0).astype(np.float32)
    np.abs(flipped, out=flipped)
    threshold = np.asarray(threshold, dtype=float)
    threshold32 = threshold.astype(np.float32)
    if np.array_equal(threshold32, threshold):  # else compared in float64, as numpy does with mixed types
        threshold = threshold32
    # a product with a vector of ones counts each column's hits in half the time of numpy's column sums of
    # booleans; the counts are exact (integers below 2**53 in float64)
    return (np.ones(resamples) @ (flipped >= threshold)).astype(np.int64)


@functools.lru_cache(maxsize=None)
def _identity(n_columns: int) -> np.ndarray:
    return np.eye(n_columns)
