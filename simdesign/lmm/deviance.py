"""The profiled (RE)ML deviance of theta, by block elimination of ``Lambda' Z' Z Lambda + I``.

Part of :mod:`simdesign.lmm`; the model and the algorithm are described in that package's docstring.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_solve

from simdesign.lmm.problem import Problem, Term, lower_triangle

LOG_2PI = float(np.log(2.0 * np.pi))


def relative_factor(term: Term, theta: np.ndarray) -> np.ndarray:
    """The term's lower-triangular relative covariance factor from its theta (column-major lower triangle)."""
    rows, cols = lower_triangle(term.q)
    factor = np.zeros((term.q, term.q))
    factor[rows, cols] = theta
    return factor


def split_theta(problem: Problem, theta: np.ndarray) -> dict:
    """Term name -> its relative covariance factor."""
    out, start = {}, 0
    for term in problem.terms:
        out[term.name] = relative_factor(term, theta[start:start + term.n_theta])
        start += term.n_theta
    return out


@dataclass
class Profiled:
    """The penalised least-squares solution at one theta.

    ``reduced`` is ``[X y]'[X y] - W' A^-1 W`` with ``A = Lambda' Z' Z Lambda + I`` and
    ``W = Lambda' Z' [X y]``: its X block is ``R_X' R_X`` and its last diagonal element minus the fixed
    effects' part is the penalised residual sum of squares.
    """

    log_det_a: float
    reduced: np.ndarray
    beta: np.ndarray
    log_det_rx: float  # log det(R_X' R_X)
    pwrss: float  # penalised weighted residual sum of squares r^2

    def deviance(self, n: int, reml: bool) -> float:
        """-2 times the profiled log-likelihood (ML) or REML criterion, in lme4's scale."""
        p = len(self.beta)
        if reml:
            dof = n - p
            return self.log_det_a + self.log_det_rx + dof * (1.0 + LOG_2PI + np.log(self.pwrss / dof))
        return self.log_det_a + n * (1.0 + LOG_2PI + np.log(self.pwrss / n))

    def sigma(self, n: int, reml: bool) -> float:
        return float(np.sqrt(self.pwrss / (n - len(self.beta) if reml else n)))


def _chol_log_det(factor: np.ndarray) -> float:
    """log det of a matrix from its (batched) Cholesky factor."""
    return 2.0 * float(np.sum(np.log(np.diagonal(factor, axis1=-2, axis2=-1))))


def profile(problem: Problem, theta: np.ndarray, gradient: bool = False, reml: bool = True):
    """The penalised least-squares solution at ``theta`` and, with ``gradient``, the deviance's gradient.

    Raises numpy's LinAlgError when ``A`` is not positive definite (it is for every theta: ``A - I`` is a
    Gram matrix). Returns a :class:`Profiled`, or ``(Profiled, gradient)`` with ``gradient``.
    """
    factors = split_theta(problem, theta)
    blocks = _Blocks(problem, factors)
    quadratic = np.einsum("eqa,eqb->ab", blocks.e_rhs, blocks.e_solved)
    log_det = blocks.log_det_d
    if problem.kept is not None:
        log_det += blocks.log_det_s
        quadratic = quadratic + blocks.kept_quadratic()
    reduced = problem.xy_cross - quadratic
    p = problem.n_fixed
    rx_chol = np.linalg.cholesky(reduced[:p, :p])
    beta = cho_solve((rx_chol, True), reduced[:p, p])
    pwrss = float(reduced[p, p] - reduced[:p, p] @ beta)
    fit = Profiled(log_det_a=log_det, reduced=reduced, beta=beta, log_det_rx=_chol_log_det(rx_chol), pwrss=pwrss)
    if not gradient:
        return fit
    return fit, _gradient(problem, factors, blocks, fit, rx_chol, reml)


class _Blocks:
    """The block elimination of ``A = Lambda' Z' Z Lambda + I`` at one theta (eliminated term first).

    ``d_blocks``: the eliminated term's diagonal blocks ``D_e = L_E' G_e L_E + I``; ``b_pairs``: the
    (kept level, eliminated level) blocks ``B_p = L_K' G_p L_E``; ``t_pairs``: ``D_e^-1 B_p'``; the kept
    term's Schur complement ``S = K - B D^-1 B'`` (its Cholesky factor) and the reduced right-hand side.
    """

    def __init__(self, problem: Problem, factors: dict):
        self.problem = problem
        e_factor = factors[problem.eliminated.name]
        self.e_factor = e_factor
        d_blocks = np.swapaxes(e_factor, 0, 1)[None] @ problem.e_gram @ e_factor[None]
        d_blocks += np.eye(e_factor.shape[0])[None]
        self.d_blocks = d_blocks
        self.d_chol = np.linalg.cholesky(d_blocks)
        self.log_det_d = _chol_log_det(self.d_chol)
        # the blocks are I plus a Gram matrix (eigenvalues >= 1): their inverses are accurate, and one
        # batched inverse then matrix products cost less than the several batched solves they replace
        self.d_inverse = np.linalg.inv(d_blocks)
        self.e_rhs = np.swapaxes(e_factor, 0, 1)[None] @ problem.e_rhs  # W_E per level
        self.e_solved = self.d_inverse @ self.e_rhs
        if problem.kept is not None:
            self._kept(factors)

    def _kept(self, factors: dict) -> None:
        problem = self.problem
        k_factor = factors[problem.kept.name]
        self.k_factor = k_factor
        n_kept, q_k = problem.kept.n_levels, k_factor.shape[0]
        k_t = np.swapaxes(k_factor, 0, 1)
        self.b_pairs = k_t[None] @ problem.pair_cross @ self.e_factor[None]
        self.t_pairs = self.d_inverse[problem.pair_eliminated] @ np.swapaxes(self.b_pairs, 1, 2)
        couples = self.b_pairs[problem.couple_first] @ self.t_pairs[problem.couple_second]
        schur = -(problem.couple_sum @ couples.reshape(len(couples), -1)).reshape(n_kept, n_kept, q_k, q_k)
        diagonal = k_t[None] @ problem.k_gram @ k_factor[None] + np.eye(q_k)[None]
        schur[np.arange(n_kept), np.arange(n_kept)] += diagonal
        # reduced right-hand side: W_K - B D^-1 W_E
        pushed = self.b_pairs @ self.e_solved[problem.pair_eliminated]
        n_cols = self.e_solved.shape[2]
        k_rhs = k_t[None] @ problem.k_rhs - (problem.pair_sum @ pushed.reshape(len(pushed), -1)).reshape(
            n_kept, q_k, n_cols)
        self.schur_chol, self.k_half, self.log_det_s = [], [], 0.0
        for members in problem.components:  # (components, size): one batch per component size
            size = members.shape[1] * q_k
            block = schur[members[:, :, None], members[:, None, :]].transpose(0, 1, 3, 2, 4).reshape(-1, size, size)
            chol = np.linalg.cholesky(block)
            self.schur_chol.append(chol)
            self.log_det_s += _chol_log_det(chol)
            self.k_half.append(_triangular_solve(chol, k_rhs[members].reshape(len(members), size, n_cols)))

    def kept_quadratic(self) -> np.ndarray:
        """The kept term's part of ``W' A^-1 W``: the reduced right-hand side through the Schur complement."""
        return sum(np.einsum("cqa,cqb->ab", half, half) for half in self.k_half)

    def solutions(self) -> tuple:
        """``Gamma = A^-1 W`` per level: (eliminated term's, kept term's or None)."""
        problem = self.problem
        if problem.kept is None:
            return self.e_solved, None
        q_k = self.k_factor.shape[0]
        kept = np.zeros((problem.kept.n_levels, q_k, self.k_half[0].shape[2]))
        for members, chol, half in zip(problem.components, self.schur_chol, self.k_half):
            solved = _triangular_solve(np.swapaxes(chol, 1, 2), half)
            kept[members] = solved.reshape(members.shape + (q_k, -1))
        # Gamma_E = D^-1 (W_E - B' Gamma_K)
        pushed = np.swapaxes(self.b_pairs, 1, 2) @ kept[problem.pair_kept]
        back = _sum_by(problem.pair_by_eliminated, pushed)
        return self.e_solved - self.d_inverse @ back, kept

    def inverse_blocks(self) -> tuple:
        """Blocks of ``A^-1``: the eliminated term's diagonal ones, the kept term's diagonal ones and the
        (kept level, eliminated level) ones of every pair (None without a kept term)."""
        problem = self.problem
        d_inverse = self.d_inverse
        if problem.kept is None:
            return d_inverse, None, None
        n_kept, q_k = problem.kept.n_levels, self.k_factor.shape[0]
        s_blocks = np.zeros((n_kept, n_kept, q_k, q_k))  # S^-1 by level pair (zero across components)
        for members, chol in zip(problem.components, self.schur_chol):
            inverse_chol = _triangular_solve(chol, np.broadcast_to(np.eye(chol.shape[1]), chol.shape))
            inverse = np.swapaxes(inverse_chol, 1, 2) @ inverse_chol
            size = members.shape[1]
            s_blocks[members[:, :, None], members[:, None, :]] = inverse.reshape(
                len(members), size, q_k, size, q_k).transpose(0, 1, 3, 2, 4)
        first, second = problem.couple_first, problem.couple_second
        # A^-1_(k,e) = -sum over pairs p' of e: S^-1[k, k(p')] T_p''
        terms = s_blocks[problem.pair_kept[first], problem.pair_kept[second]] @ np.swapaxes(
            self.t_pairs[second], 1, 2)
        pair_inverse = -_sum_by(problem.couple_by_first, terms)
        # A^-1_(e,e) = D_e^-1 - sum over pairs p of e: T_p A^-1_p
        e_inverse = d_inverse - _sum_by(problem.pair_by_eliminated,
                                        self.t_pairs @ pair_inverse)
        k_inverse = s_blocks[np.arange(n_kept), np.arange(n_kept)]
        return e_inverse, k_inverse, pair_inverse


def _triangular_solve(factor: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Batched solve with triangular factors (numpy's batched general solve: one LAPACK call per small
    block costs less than a Python loop over scipy's triangular solver)."""
    return np.linalg.solve(factor, rhs)


def _sum_by(indicator, values: np.ndarray) -> np.ndarray:
    """Sums of ``values`` (m x a x b) by the rows of a sparse 0/1 ``indicator`` (levels x m)."""
    return (indicator @ values.reshape(len(values), -1)).reshape((indicator.shape[0],) + values.shape[1:])


def _term_pieces(problem: Problem, factors: dict, blocks: _Blocks) -> list:
    """Per term: (its theta slice's rows and columns, sum over levels of ``[A^-1 Lambda' Z' Z]_ii``,
    ``Gamma`` and ``R = Z'([X y] - Z Lambda Gamma)`` per level)."""
    e_term, k_term = problem.eliminated, problem.kept
    e_gamma, k_gamma = blocks.solutions()
    e_inverse, k_inverse, pair_inverse = blocks.inverse_blocks()
    l_e = factors[e_term.name]
    e_n = e_inverse @ (l_e.T[None] @ problem.e_gram)
    e_r = problem.e_rhs - problem.e_gram @ (l_e[None] @ e_gamma)
    pieces = {e_term.name: (e_n.sum(axis=0), e_gamma, e_r)}
    if k_term is not None:
        l_k = factors[k_term.name]
        cross_t = np.swapaxes(problem.pair_cross, 1, 2)  # z_E z_K' per pair
        # A^-1_(e,k) L_K' (Z'Z)_(k,e) for every pair, summed into its eliminated level
        e_extra = np.swapaxes(pair_inverse, 1, 2) @ (l_k.T[None] @ problem.pair_cross)
        k_n = k_inverse @ (l_k.T[None] @ problem.k_gram)
        k_extra = pair_inverse @ (l_e.T[None] @ cross_t)
        k_sum = k_n.sum(axis=0) + k_extra.sum(axis=0)
        e_sum = pieces[e_term.name][0] + e_extra.sum(axis=0)
        e_r = e_r - _sum_by(problem.pair_by_eliminated,
                            cross_t @ (l_k[None] @ k_gamma[problem.pair_kept]))
        k_r = problem.k_rhs - problem.k_gram @ (l_k[None] @ k_gamma) - _sum_by(
            problem.pair_sum, problem.pair_cross @ (l_e[None] @ e_gamma[problem.pair_eliminated]))
        pieces = {e_term.name: (e_sum, e_gamma, e_r), k_term.name: (k_sum, k_gamma, k_r)}
    return [pieces[term.name] for term in problem.terms]


def _gradient(problem: Problem, factors: dict, blocks: _Blocks, fit: Profiled, rx_chol: np.ndarray,
              reml: bool) -> np.ndarray:
    """The profiled deviance's gradient in theta (the derivation: the package docstring, Notes)."""
    p = problem.n_fixed
    direction = np.append(-fit.beta, 1.0)  # c: r^2 = c' M c
    m_xx_inverse = cho_solve((rx_chol, True), np.eye(p))
    scale = (problem.n_obs - p if reml else problem.n_obs) / fit.pwrss
    out = []
    for term, (n_sum, gamma, resid) in zip(problem.terms, _term_pieces(problem, factors, blocks)):
        rows, cols = lower_triangle(term.q)
        # R' Lambda_k Gamma for Lambda_k = I (x) e_r e_c': sum over levels of outer(R_i[r], Gamma_i[c])
        psi = np.einsum("ira,icb->rcab", resid, gamma)[rows, cols]
        d_reduced = -(psi + np.swapaxes(psi, 1, 2))
        d_log_det_a = 2.0 * n_sum[cols, rows]
        d_pwrss = np.einsum("a,kab,b->k", direction, d_reduced, direction)
        value = d_log_det_a + scale * d_pwrss
        if reml:
            value = value + np.einsum("ab,kba->k", m_xx_inverse, d_reduced[:, :p, :p])
        out.append(value)
    return np.concatenate(out)
