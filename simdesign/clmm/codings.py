"""Reference codings: moving a parameter vector from one reference system to another, exactly.

Part of :mod:`simdesign.clmm`; the model and the algorithm are described in that package's docstring.

The choice of reference system is a linear reparametrisation of the model. With
reference ``r`` the random-effects design row of system ``s`` is ``z_s = (1, e_s)``
(``e_s`` the indicator of ``s`` among the non-reference systems), so the rows of all
systems form an invertible S x S matrix ``Z_r``; another coding ``Z_t`` spans the
same functions of the system, hence ``b_t = M b_r`` with ``M = Z_t^-1 Z_r`` gives
the same linear predictor ``z_s b`` for every system, and ``Sigma_t = M Sigma_r M'``.
The fixed part ``theta_c - beta_s`` stays the same when every effect and threshold
moves by the effect of the new reference. The Laplace approximation is invariant
under such a change of the integration variable (with spherical ``u``, ``L_t`` is
``M L_r`` rotated back to lower-triangular form), so a point and its image have
the same log-likelihood: an optimum found in one coding is an optimum, of the same
value, in every other (:func:`simdesign.clmm.fit`, ``starts='codings'``).
"""
from __future__ import annotations

import numpy as np

from simdesign.clmm.layout import _Layout


def _design_rows(systems, order) -> np.ndarray:
    """The random-effects design rows ``z_s`` of a coding (reference ``systems[0]``), one per system of ``order``."""
    position = {name: k for k, name in enumerate(systems)}
    rows = np.zeros((len(order), len(systems)))
    rows[:, 0] = 1.0
    for i, name in enumerate(order):
        if position[name] > 0:
            rows[i, position[name]] = 1.0
    return rows


def _lower_factor(matrix: np.ndarray) -> np.ndarray:
    """A lower-triangular ``L`` with a non-negative diagonal and ``L L' = matrix matrix'`` (also when singular).

    From the QR decomposition of ``matrix'``: ``matrix = R' Q'``, so ``R'`` is such a
    factor once the signs of its columns make the diagonal non-negative (a column of a
    rank-deficient factor may have a zero diagonal and non-zero elements below it,
    which the parameterisation allows: only the diagonal is bounded).
    """
    _, upper = np.linalg.qr(matrix.T)
    lower = upper.T
    signs = np.where(np.diag(lower) < 0.0, -1.0, 1.0)
    lower = lower * signs[None, :]
    np.fill_diagonal(lower, np.maximum(np.diag(lower), 0.0))
    return np.tril(lower)


def map_coding(natural: np.ndarray, source: _Layout, target: _Layout) -> np.ndarray:
    """The natural parameter vector of ``source``'s coding expressed in ``target``'s coding.

    Parameters
    ----------
    natural : ndarray
        Thresholds, effects and Cholesky elements in ``source``'s packing.
    source, target : _Layout
        Layouts of the same judgements and structure with (possibly) different reference systems.

    Returns
    -------
    ndarray
        The same model in ``target``'s packing: equal linear predictors and random-effects
        distribution, hence the same Laplace log-likelihood.
    """
    from_systems, to_systems = list(source.problem.systems), list(target.problem.systems)
    thresholds, beta, cholesky = source.unpack(np.asarray(natural, float))
    effect = dict(zip(from_systems, np.concatenate([[0.0], beta])))
    shift = effect[to_systems[0]]  # the new reference's effect becomes 0; thresholds move with it
    new_thresholds = np.asarray(thresholds) - shift
    new_beta = np.array([effect[name] - shift for name in to_systems[1:]])
    if source.q == 1:  # intercepts only: the random part does not depend on the coding
        mapping = np.eye(1)
    else:
        mapping = np.linalg.solve(_design_rows(to_systems, to_systems), _design_rows(from_systems, to_systems))
    new_cholesky = {name: _lower_factor(mapping @ factor) for name, factor in cholesky.items()}
    packed = target.pack(new_thresholds, new_beta, new_cholesky)
    packed[target.fixed_mask()] = 0.0  # an intercept-only term maps onto itself: clear rounding in held elements
    return packed
