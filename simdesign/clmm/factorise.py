"""The random-effects Hessian's structured factorisation: block elimination of one factor, the Schur
complement of the other.

Part of :mod:`simdesign.clmm`; the model and the algorithm are described in that package's docstring.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

from simdesign.clmm.prepare import _Problem


@dataclass
class _Factorisation:
    """H = I + M' W M, split as [[A, C], [C', D]] with D (eliminated factor) block diagonal."""

    d_inverse: np.ndarray  # n_elim x q x q
    log_det: float
    c_pairs: np.ndarray | None = None  # P x q x q, coupling blocks C
    x_pairs: np.ndarray | None = None  # P x q x q, C D^-1
    schur_inverses: list | None = None  # per component group: n_components x width x width


def _group_blocks(indicator: sparse.csr_matrix, weighted_zz: np.ndarray, cholesky: np.ndarray, q: int) -> np.ndarray:
    """L' (sum_i w_i z_i z_i') L for every level of a grouping."""
    summed = np.asarray(indicator @ weighted_zz).reshape(-1, q, q)
    return cholesky.T @ summed @ cholesky


def _factorise(problem: _Problem, cholesky: dict, w: np.ndarray) -> _Factorisation:
    q = problem.q
    weighted_zz = problem.zz * w[:, None]
    elim = problem.eliminated
    d_blocks = _group_blocks(elim.indicator, weighted_zz, cholesky[elim.name], q) + np.eye(q)
    d_chol = np.linalg.cholesky(d_blocks)
    log_det = 2.0 * np.log(np.diagonal(d_chol, axis1=1, axis2=2)).sum()
    d_inverse = np.linalg.inv(d_blocks)
    if problem.kept is None:
        return _Factorisation(d_inverse=d_inverse, log_det=log_det)
    kept = problem.kept
    a_blocks = _group_blocks(kept.indicator, weighted_zz, cholesky[kept.name], q) + np.eye(q)
    summed = np.asarray(problem.pair_indicator @ weighted_zz).reshape(-1, q, q)
    c_pairs = np.swapaxes(cholesky[kept.name], 0, 1) @ summed @ cholesky[elim.name]
    x_pairs = c_pairs @ d_inverse[problem.pair_eliminated]
    coupled = x_pairs[problem.couple_first] @ np.swapaxes(c_pairs[problem.couple_second], 1, 2)
    schur_inverses = []
    for group in problem.schur_groups:
        n_components, size = group.shape
        width = size * q
        values = np.concatenate([a_blocks[group.levels.ravel()].ravel(), -coupled[group.couples].ravel()])
        schur = np.bincount(np.concatenate([group.diagonal_index, group.couple_index]), weights=values,
                            minlength=n_components * width * width).reshape(n_components, width, width)
        schur_chol = np.linalg.cholesky(schur)
        log_det += 2.0 * np.log(np.diagonal(schur_chol, axis1=1, axis2=2)).sum()
        # Explicit inverses of the small blocks serve both the Newton solves and the selected inverse.
        chol_inverse = np.linalg.inv(schur_chol)
        schur_inverses.append(np.swapaxes(chol_inverse, 1, 2) @ chol_inverse)
    return _Factorisation(d_inverse=d_inverse, log_det=log_det, c_pairs=c_pairs, x_pairs=x_pairs,
                          schur_inverses=schur_inverses)


def _schur_solve(problem: _Problem, fact: _Factorisation, rhs: np.ndarray) -> np.ndarray:
    out = np.empty_like(rhs)
    for group, inverse in zip(problem.schur_groups, fact.schur_inverses):
        n_components, size = group.shape
        batch = rhs[group.levels].reshape(n_components, -1)
        out[group.levels] = np.einsum("cij,cj->ci", inverse, batch).reshape(n_components, size, -1)
    return out


def _solve(problem: _Problem, fact: _Factorisation, rhs: dict) -> dict:
    """Solve H x = rhs, with rhs and x as {factor name: n_levels x q}."""
    elim = problem.eliminated
    if problem.kept is None:
        return {elim.name: np.einsum("gij,gj->gi", fact.d_inverse, rhs[elim.name])}
    kept = problem.kept
    r_kept, r_elim = rhs[kept.name], rhs[elim.name]
    moved = np.einsum("pij,pj->pi", fact.x_pairs, r_elim[problem.pair_eliminated])
    x_kept = _schur_solve(problem, fact, r_kept - problem.pairs_by_kept @ moved)
    back = np.einsum("pji,pj->pi", fact.c_pairs, x_kept[problem.pair_kept])
    x_elim = np.einsum("gij,gj->gi", fact.d_inverse, r_elim - problem.pairs_by_eliminated @ back)
    return {kept.name: x_kept, elim.name: x_elim}


def _inverse_times_loadings(problem: _Problem, fact: _Factorisation, loadings: dict) -> dict:
    """(H^-1 m_i) restricted to observation i's own levels, for every observation i.

    m_i is nonzero only at i's annotator and document, so only the diagonal
    blocks of H^-1 and the off-diagonal blocks of observed pairs are needed
    (a selected inverse), never all of H^-1.
    """
    elim = problem.eliminated
    if problem.kept is None:
        return {elim.name: np.einsum("nij,nj->ni", fact.d_inverse[elim.codes], loadings[elim.name])}
    kept, q = problem.kept, problem.q
    kept_kept = np.empty((kept.n_levels, q, q))
    couple_blocks = np.empty((problem.n_couples, q, q))
    for group, inverse in zip(problem.schur_groups, fact.schur_inverses):
        n_components, size = group.shape
        blocks = inverse.reshape(n_components, size, q, size, q)
        local = np.arange(size)
        kept_kept[group.levels] = np.moveaxis(blocks[:, local, :, local, :], 0, 1)
        couple_blocks[group.couples] = blocks[group.couple_component, group.first_local, :, group.second_local, :]
    times_x = couple_blocks @ fact.x_pairs[problem.couple_second]
    kept_elim = -np.asarray(problem.couple_by_first @ times_x.reshape(problem.n_couples, -1)).reshape(-1, q, q)
    outer = np.swapaxes(fact.x_pairs[problem.couple_first], 1, 2) @ times_x
    elim_elim = fact.d_inverse + np.asarray(
        problem.couple_by_eliminated @ outer.reshape(problem.n_couples, -1)).reshape(-1, q, q)
    m_kept, m_elim = loadings[kept.name], loadings[elim.name]
    cross = kept_elim[problem.pair_code]
    y_kept = np.einsum("nij,nj->ni", kept_kept[kept.codes], m_kept) + np.einsum("nij,nj->ni", cross, m_elim)
    y_elim = np.einsum("nji,nj->ni", cross, m_kept) + np.einsum("nij,nj->ni", elim_elim[elim.codes], m_elim)
    return {kept.name: y_kept, elim.name: y_elim}
