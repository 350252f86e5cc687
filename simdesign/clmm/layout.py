"""Parameter vectors: packing thresholds, effects and Cholesky factors, and the objective in the
optimiser's coordinates.

Part of :mod:`simdesign.clmm`; the model and the algorithm are described in that package's docstring.
"""
from __future__ import annotations

import numpy as np

from simdesign.clmm.compiled import _CompiledEvaluation, _accelerator
from simdesign.clmm.laplace import _laplace
from simdesign.clmm.prepare import _Problem
from simdesign.clmm.terms import ModeSearchError


class _Layout:
    """Packing of (thresholds, beta, Cholesky factors) into one vector.

    Natural order, as ordinal::clmm: thresholds, beta, then per factor the
    Cholesky diagonal followed by its strictly lower elements (column-major,
    R's ``lower.tri`` order). The optimiser works on the same vector except
    that thresholds become (theta_1, log increments), so they stay ordered.
    """

    def __init__(self, problem: _Problem):
        self.problem = problem
        self.n_thr = problem.n_thresholds
        self.n_beta = problem.n_systems - 1
        q = problem.q
        self.q = q
        cols, rows = np.triu_indices(q, 1)  # column-major strictly lower: (row, col) with row > col
        self.lower_rows, self.lower_cols = rows, cols
        self.n_chol = q + len(rows)
        self.names = [f.name for f in problem.factors]
        self.size = self.n_thr + self.n_beta + self.n_chol * len(self.names)

    def cholesky_offsets(self):
        start = self.n_thr + self.n_beta
        return {name: start + i * self.n_chol for i, name in enumerate(self.names)}

    @property
    def _flat_positions(self):
        # Where the packed Cholesky elements (diagonal, then lower) sit in a raveled q x q block;
        # computed once, since unpack and pack run at every evaluation.
        positions = getattr(self, "_positions_cache", None)
        if positions is None:
            positions = np.concatenate([np.arange(self.q) * (self.q + 1), self.lower_rows * self.q + self.lower_cols])
            self._positions_cache = positions
        return positions

    def unpack(self, vector):
        thresholds = vector[:self.n_thr]
        beta = vector[self.n_thr:self.n_thr + self.n_beta]
        positions = self._flat_positions
        cholesky = {}
        for name, offset in self.cholesky_offsets().items():
            block = np.zeros(self.q * self.q)
            block[positions] = vector[offset:offset + self.n_chol]
            cholesky[name] = block.reshape(self.q, self.q)
        return thresholds, beta, cholesky

    def pack(self, thresholds, beta, cholesky_parts):
        positions = self._flat_positions
        parts = [np.asarray(thresholds, float), np.asarray(beta, float)]
        parts += [np.asarray(cholesky_parts[name]).reshape(-1)[positions] for name in self.names]
        return np.concatenate(parts)

    def diagonal_mask(self):
        mask = np.zeros(self.size, bool)
        for offset in self.cholesky_offsets().values():
            mask[offset:offset + self.q] = True
        return mask

    def fixed_mask(self):
        """Cholesky elements held at 0: all but L[0, 0] of an intercept-only term."""
        mask = np.zeros(self.size, bool)
        offsets = self.cholesky_offsets()
        for factor in self.problem.factors:
            if factor.intercept_only:
                mask[offsets[factor.name] + 1:offsets[factor.name] + self.n_chol] = True
        return mask

    def own_block(self, name, matrix):
        """A term's q x q matrix cut to its own size (1 x 1 for an intercept-only term)."""
        intercept_only = any(f.intercept_only for f in self.problem.factors if f.name == name)
        return matrix[:1, :1] if intercept_only else matrix

    def to_optimiser(self, natural):
        out = natural.copy()
        out[1:self.n_thr] = np.log(np.diff(natural[:self.n_thr]))
        return out

    def from_optimiser(self, packed):
        out = packed.copy()
        out[:self.n_thr] = packed[0] + np.concatenate([[0.0], np.cumsum(np.exp(packed[1:self.n_thr]))])
        return out

    def gradient_to_optimiser(self, packed, natural_gradient):
        out = natural_gradient.copy()
        g_thr = natural_gradient[:self.n_thr]
        tail_sums = np.cumsum(g_thr[::-1])[::-1]  # d/d theta_j of everything from threshold j upwards
        out[0] = g_thr.sum()
        out[1:self.n_thr] = np.exp(packed[1:self.n_thr]) * tail_sums[1:]
        return out


class _Objective:
    """Laplace negative log-likelihood and gradient, warm-starting each mode search from the last mode."""

    def __init__(self, problem: _Problem, layout: _Layout):
        self.problem, self.layout = problem, layout
        self.mode = {f.name: np.zeros((f.n_levels, problem.q)) for f in problem.factors}
        self.factorisation = None
        self.evaluations = 0
        self.inner_iterations = 0
        kernels = _accelerator()
        # with the compiled kernels, one kernel call per evaluation (the same algorithm as _laplace's)
        self.compiled = None if kernels is None else _CompiledEvaluation(kernels, problem, layout.n_thr,
                                                                         layout.cholesky_offsets())

    def _evaluate_compiled(self, vector, optimiser: bool, with_gradient: bool):
        nll, gradient, mode, factorisation, iterations = self.compiled(vector, optimiser, with_gradient, self.mode,
                                                                       self.factorisation)
        self.mode, self.factorisation = mode, factorisation
        self.evaluations += 1
        self.inner_iterations += iterations
        return nll, gradient

    def natural(self, natural_vector, with_gradient=True):
        if self.compiled is not None:
            return self._evaluate_compiled(natural_vector, False, with_gradient)
        thresholds, beta, cholesky = self.layout.unpack(natural_vector)
        laplace = _laplace(self.problem, thresholds, beta, cholesky, self.mode, with_gradient, self.factorisation)
        self.mode = laplace.mode
        self.factorisation = laplace.factorisation
        self.evaluations += 1
        self.inner_iterations += laplace.inner_iterations
        if not with_gradient:
            return laplace.nll, None
        g_thr, g_beta, g_chol = laplace.gradient
        return laplace.nll, self.layout.pack(g_thr, g_beta, g_chol)

    def optimiser(self, packed):
        if self.compiled is not None:
            try:
                return self._evaluate_compiled(packed, True, True)
            except (ModeSearchError, np.linalg.LinAlgError):
                return 1e300, np.zeros_like(packed)
        try:
            nll, gradient = self.natural(self.layout.from_optimiser(packed))
        except (ModeSearchError, np.linalg.LinAlgError):
            # Tell L-BFGS-B to back off: an unusable point, not a crash.
            return 1e300, np.zeros_like(packed)
        return nll, self.layout.gradient_to_optimiser(packed, gradient)
