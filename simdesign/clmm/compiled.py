"""Glue to the optional compiled kernels (simdesign/_clmm_numba.py): their arrays, mode search and
gradient.

Part of :mod:`simdesign.clmm`; the model and the algorithm are described in that package's docstring.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
from scipy.sparse import csgraph

from simdesign.clmm.prepare import _Problem, _design_structure
from simdesign.clmm.terms import (
    CHORD_MIN_REDUCTION, INNER_GRADIENT_TOLERANCE, INNER_MAX_ITERATIONS, ModeSearchError, chord_steps,
    _ObservationTerms,
)


_UNSET = object()
_kernels = _UNSET
# the random-effects dimensions q for which the loaded kernels passed :func:`simdesign.clmm.optimise._check_kernels`
# (which lives with the fit because it runs one; this module sits below the fit and only holds the state)
_checked = set()


def _accelerator():
    """The compiled kernels when numba is installed (and ``SIMDESIGN_CLMM_NUMBA`` is not 0), else None.

    Imported lazily so that users who never fit the mixed model, or who lack
    numba, need not have it; without it the numpy code runs (same
    algorithm, several times slower). :func:`simdesign.clmm.fit` and
    :func:`simdesign.clmm.set_accelerator` check them before their first use
    with each random-effects dimension.
    """
    global _kernels
    if _kernels is _UNSET:
        module = None
        if os.environ.get("SIMDESIGN_CLMM_NUMBA", "1") != "0":
            try:
                from simdesign import _clmm_numba as module
            except ImportError:
                module = None
        _kernels = module
    return _kernels


def _reset(enabled: bool) -> None:
    """Forget the kernels (to be imported and checked again) or switch them off."""
    global _kernels
    _kernels = _UNSET if enabled else None
    _checked.clear()


def _unchecked(q: int) -> bool:
    """Whether kernels are loaded but not yet checked for random effects of dimension q."""
    return _accelerator() is not None and q not in _checked


def _compiled_for(q: int) -> bool:
    """Whether numba's on-disk cache holds the evaluation kernel for random effects of dimension q (True when
    that cannot be told: the question only decides whether a fit says that it compiles first)."""
    try:
        index = _accelerator().evaluate._cache._cache_file._load_index()  # numba internals: any failure is True
        return any(str(argument) == f"UniTuple(int64 x {q})" for key in index for argument in key[0])
    except Exception:  # noqa: BLE001
        return True


def _mark_checked(q: int, usable: bool) -> None:
    """Record the check's verdict for dimension q; unusable kernels are dropped (the numpy path runs)."""
    global _kernels
    _checked.add(q)
    if not usable:
        _kernels = None


@dataclass
class _CompiledArrays:
    """The problem's index arrays in the form the kernels take (see simdesign/_clmm_numba.py)."""

    structure: tuple  # system, k_codes, e_codes, pair_code
    blocks: tuple  # pair_kept ... comp_member_start
    cells: tuple  # each observation's flat (level, system) cells: kept, eliminated, pair
    couples: tuple  # each couple's block position in the Schur arrays, width and kind (_clmm_numba._couple_positions)
    n_k: int
    n_e: int
    z_kept: np.ndarray  # S x q: each system's random-effects design row (zeros without a kept term)
    z_elim: np.ndarray
    schur_size: int
    n_pairs: int


@dataclass
class _CompiledFactorisation:
    log_det: float
    d_inverse: np.ndarray
    c_pairs: np.ndarray
    x_pairs: np.ndarray
    schur_inverse: np.ndarray
    loadings: tuple = ()  # (kept, eliminated) per-system loadings Z L the factorisation was made with
    inputs: tuple = ()  # (extended thresholds, fixed part of eta) it was made with, reused by the gradient


def _compiled_arrays(problem: _Problem) -> _CompiledArrays:
    if problem.compiled is None:  # found once per design (prepare._design_structure)
        entry = _design_structure(problem)
        if "compiled" not in entry:
            entry["compiled"] = _find_compiled_arrays(problem)
        problem.compiled = entry["compiled"]
    return problem.compiled


def _find_compiled_arrays(problem: _Problem) -> _CompiledArrays:
    n, n_systems = problem.n_obs, problem.n_systems
    system_z = np.zeros((n_systems, problem.q))
    system_z[problem.system_code] = problem.z  # the design row depends on the system only
    elim, kept = problem.eliminated, problem.kept
    empty = np.zeros(0, np.int64)
    if kept is None:
        structure = (problem.system_code, np.zeros(n, np.int64), elim.codes, np.zeros(n, np.int64))
        blocks = (empty,) * 10
        # as wide as z_elim, so that nested designs use the kernels compiled for q (_q_tuple); no loop reads it
        z_kept, n_k, schur_size, n_pairs = np.zeros((n_systems, problem.q)), 0, 0, 0
    else:
        kept_by_elim = problem.pairs_by_kept @ problem.pairs_by_eliminated.T
        n_components, component = csgraph.connected_components(kept_by_elim @ kept_by_elim.T, directed=False)
        members = np.argsort(component, kind="stable")
        sizes = np.bincount(component, minlength=n_components)
        member_start = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        local = np.empty(kept.n_levels, np.int64)
        local[members] = np.arange(kept.n_levels) - np.repeat(member_start, sizes)
        widths = sizes * problem.q
        offsets = np.concatenate([[0], np.cumsum(widths * widths)[:-1]])
        structure = (problem.system_code, kept.codes, elim.codes, problem.pair_code.astype(np.int64))
        blocks = (problem.pair_kept.astype(np.int64), problem.pair_eliminated.astype(np.int64),
                  problem.couple_first.astype(np.int64), problem.couple_second.astype(np.int64), local,
                  component.astype(np.int64), offsets.astype(np.int64), sizes.astype(np.int64),
                  members.astype(np.int64), member_start.astype(np.int64))
        z_kept, n_k = system_z, kept.n_levels
        schur_size, n_pairs = int((widths * widths).sum()), len(problem.pair_kept)
    system, k_codes, e_codes, pair_code = structure
    # each observation's flat (level, system) cells, as _clmm_numba._observation_cells forms them (zeros without a
    # kept factor): fixed for the design, so found here once rather than at every gradient
    kept_cells = (lambda codes: codes * n_systems + system) if n_k > 0 else (lambda codes: np.zeros(n, np.int64))
    cells = tuple(np.ascontiguousarray(c, dtype=np.int64)
                  for c in (kept_cells(k_codes), e_codes * n_systems + system, kept_cells(pair_code)))
    pair_kept, _, couple_first, couple_second, local, component, offsets, sizes = blocks[:8]
    couples = _accelerator()._couple_positions(pair_kept, couple_first, couple_second, local, component, offsets, sizes,
                                               problem.q)
    return _CompiledArrays(structure=structure, blocks=blocks, cells=cells, couples=couples, n_k=n_k,
                           n_e=elim.n_levels, z_kept=z_kept, z_elim=system_z, schur_size=schur_size, n_pairs=n_pairs)


def _compiled_loadings(problem: _Problem, arrays: _CompiledArrays, cholesky: dict):
    kept = problem.kept
    loading_kept = arrays.z_kept @ cholesky[kept.name] if kept is not None else arrays.z_kept
    return np.ascontiguousarray(loading_kept), np.ascontiguousarray(arrays.z_elim @ cholesky[problem.eliminated.name])


def _q_tuple(loading_kept: np.ndarray, loading_elim: np.ndarray) -> tuple:
    """The kernels' ``q_tuple``: a tuple as long as the random effects' dimension q (its values unused).

    numba types a tuple's length as a compile-time constant, so the kernels are compiled for each q
    with the loops over random-effects dimensions of known length, which LLVM can unroll: 1.05-1.24x
    per fit, with the same arithmetic in the same order (bit-identical fits; README, mixed-model
    section). The price: the first fit with a new q compiles them (about 20 s, once; then cached on
    disk). Built from the loadings that the kernels index, without bounds checks, by it.
    """
    q = loading_elim.shape[1]
    if loading_kept.shape[1] != q:
        raise RuntimeError(f"kept and eliminated loadings differ in width ({loading_kept.shape[1]} vs {q})")
    return (0,) * q


def _mode_compiled(kernels, problem: _Problem, thresholds, beta_full, cholesky, start: dict, previous):
    """_mode through the compiled kernels: the same algorithm, the same return values."""
    arrays = _compiled_arrays(problem)
    elim, kept = problem.eliminated, problem.kept
    loading_kept, loading_elim = _compiled_loadings(problem, arrays, cholesky)
    q_tuple = _q_tuple(loading_kept, loading_elim)
    q = len(q_tuple)
    u_kept = start[kept.name].copy() if kept is not None else np.zeros((0, q))
    u_elim = start[elim.name].copy()
    fact = _CompiledFactorisation(log_det=float("nan"), d_inverse=np.empty((arrays.n_e, q, q)),
                                  c_pairs=np.empty((arrays.n_pairs, q, q)), x_pairs=np.empty((arrays.n_pairs, q, q)),
                                  schur_inverse=np.empty(arrays.schur_size))
    use_previous = isinstance(previous, _CompiledFactorisation)
    old = previous if use_previous else fact
    n = problem.n_obs
    g, w = np.empty(n), np.empty(n)
    extended = np.concatenate([[-np.inf], np.asarray(thresholds, float), [np.inf]])
    fixed = np.ascontiguousarray(beta_full[problem.system_code], dtype=float)
    system, k_codes, e_codes, pair_code = arrays.structure
    status, value, log_det, iterations, max_grad = kernels.mode_search(
        extended, problem.category, fixed, system, k_codes, e_codes, pair_code, loading_kept, loading_elim,
        q_tuple, arrays.n_k, arrays.n_e, *arrays.blocks, u_kept, u_elim,
        use_previous, old.d_inverse, old.c_pairs, old.x_pairs, old.schur_inverse,
        fact.d_inverse, fact.c_pairs, fact.x_pairs, fact.schur_inverse, g, w,
        INNER_GRADIENT_TOLERANCE, INNER_MAX_ITERATIONS, chord_steps(q), CHORD_MIN_REDUCTION)
    _raise_for_status(kernels, status, iterations, max_grad)
    fact.log_det = float(log_det)
    fact.loadings = (loading_kept, loading_elim)
    fact.inputs = (extended, fixed)
    u = {elim.name: u_elim}
    if kept is not None:
        u[kept.name] = u_kept
    terms = _ObservationTerms(log_prob=None, g=g, w=w)
    loadings = {elim.name: loading_elim}
    if kept is not None:
        loadings[kept.name] = loading_kept
    return u, float(value), terms, fact, loadings, int(iterations)


def _gradient_compiled(kernels, problem: _Problem, u: dict, fact: _CompiledFactorisation):
    """The Laplace gradient at the mode ``u`` found with ``fact`` (which holds that point's kernel inputs)."""
    arrays = _compiled_arrays(problem)
    elim, kept = problem.eliminated, problem.kept
    loading_kept, loading_elim = fact.loadings
    u_kept = u[kept.name] if kept is not None else np.zeros((0, loading_kept.shape[1]))
    extended, fixed = fact.inputs
    system, k_codes, e_codes, pair_code = arrays.structure
    g_thr, g_beta, g_kept, g_elim = kernels.gradient(
        extended, problem.category, fixed, system, k_codes, e_codes, pair_code, loading_kept, loading_elim,
        _q_tuple(loading_kept, loading_elim), arrays.z_kept, arrays.z_elim, arrays.n_k, arrays.n_e,
        *arrays.blocks, u_kept, u[elim.name],
        fact.d_inverse, fact.c_pairs, fact.x_pairs, fact.schur_inverse, problem.n_thresholds, problem.n_systems)
    grad_cholesky = {elim.name: g_elim}  # lower triangular already
    if kept is not None:
        grad_cholesky[kept.name] = g_kept
    return g_thr, g_beta[1:], grad_cholesky


def _raise_for_status(kernels, status: int, iterations: int, max_grad: float) -> None:
    """The exception of a mode search that failed (the numpy code's exceptions); nothing for OK."""
    if status == kernels.UNDERFLOW:
        raise ModeSearchError("a category probability underflowed to zero")
    if status == kernels.NOT_POSITIVE_DEFINITE:
        raise np.linalg.LinAlgError("Matrix is not positive definite")
    if status == kernels.NO_MODE:
        raise ModeSearchError(f"no random-effects mode after {iterations} Newton steps (max|grad| {max_grad:.2g})")
    if status == kernels.HALVING_FAILED:
        raise ModeSearchError(f"Newton step halving failed (max|grad| {max_grad:.2g})")


class _CompiledEvaluation:
    """One problem's Laplace objective as a single kernel call (``_clmm_numba.evaluate``): the parameter
    vector's unpacking, the mode search, the gradient and its packing, with the problem's arrays bound once.

    The same algorithm and arithmetic as :func:`_mode_compiled` followed by :func:`_gradient_compiled` (to
    rounding), without the dozen numpy calls per evaluation around them (issue 41).
    """

    def __init__(self, kernels, problem: _Problem, n_thr: int, offsets: dict):
        arrays = _compiled_arrays(problem)
        self.kernels = kernels
        self.kept, self.elim = problem.kept, problem.eliminated
        self.q = problem.q
        off_k = offsets[self.kept.name] if self.kept is not None else -1
        system, k_codes, e_codes, pair_code = arrays.structure
        self.bound = (n_thr, off_k, offsets[self.elim.name], arrays.z_kept, arrays.z_elim, (0,) * self.q,
                      problem.category, system, k_codes, e_codes, pair_code, arrays.n_k, arrays.n_e, *arrays.blocks,
                      *arrays.cells, *arrays.couples)
        d_shape, pair_shape = (arrays.n_e, self.q, self.q), (arrays.n_pairs, self.q, self.q)
        # two factorisations' arrays, filled in turn: an evaluation reads the previous one (its chord steps) and
        # fills the other, so that no evaluation allocates them (the objective keeps only the latest)
        self.buffers = [_CompiledFactorisation(log_det=float("nan"), d_inverse=np.empty(d_shape),
                                               c_pairs=np.empty(pair_shape), x_pairs=np.empty(pair_shape),
                                               schur_inverse=np.empty(arrays.schur_size)) for _ in range(2)]

    def __call__(self, vector: np.ndarray, optimiser: bool, with_gradient: bool, mode: dict, previous):
        """(nll, gradient or None, mode, factorisation, inner iterations) at ``vector``; raises as _mode does.

        The factorisation returned is one of two buffers, overwritten by the evaluation after next: the caller
        keeps it only until then (the objective keeps the latest one)."""
        kept, elim = self.kept, self.elim
        u_kept = mode[kept.name].copy() if kept is not None else np.zeros((0, self.q))
        u_elim = mode[elim.name].copy()
        use_previous = isinstance(previous, _CompiledFactorisation)
        fact = self.buffers[1] if previous is self.buffers[0] else self.buffers[0]
        old = previous if use_previous else fact
        gradient = np.empty(len(vector))
        status, nll, iterations, max_grad = self.kernels.evaluate(
            np.ascontiguousarray(vector, dtype=float), optimiser, with_gradient, *self.bound, u_kept, u_elim,
            use_previous, old.d_inverse, old.c_pairs, old.x_pairs, old.schur_inverse,
            fact.d_inverse, fact.c_pairs, fact.x_pairs, fact.schur_inverse,
            INNER_GRADIENT_TOLERANCE, INNER_MAX_ITERATIONS, chord_steps(self.q), CHORD_MIN_REDUCTION, gradient)
        _raise_for_status(self.kernels, status, iterations, max_grad)
        new_mode = {elim.name: u_elim}
        if kept is not None:
            new_mode[kept.name] = u_kept
        return float(nll), (gradient if with_gradient else None), new_mode, fact, int(iterations)
