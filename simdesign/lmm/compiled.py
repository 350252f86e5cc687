"""The kernels of :mod:`simdesign.lmm.kernels` and :mod:`simdesign.lmm.slope_kernels`, compiled by numba when
it is installed, else as they are.

numba is imported at the first fit that takes the fast path, never at import: the command line and
``import simdesign`` do not pay for it. Compiled code is cached on disk (``cache=True``, beside
``kernels.py``): the first fit of a fresh install compiles for a few seconds (:func:`warm_up` does it
ahead: ``simdesign.lmm.warm_up()``), later processes load the cache. ``SIMDESIGN_LMM_NUMBA=0`` runs the
numpy code instead (same source, same numbers to rounding, several times slower).
"""
from __future__ import annotations

import os
import sys
import types

from simdesign.lmm import kernels as _numpy_kernels
from simdesign.lmm import slope_kernels as _numpy_slope_kernels
from simdesign.lmm import small_linalg

# in call order of dependence: each compiled function finds the compiled copies of those it calls
KERNEL_NAMES = ("reduce", "profiled", "deviance", "projection", "_level_sums", "parts", "newton_terms",
                "_direction", "_boundary_step", "newton", "satterthwaite_terms", "reduced_jacobian_grams", "jacobian_grams",
                "satterthwaite_df", "parts_satterthwaite", "satterthwaite_parts", "solve")
SMALL_LINALG = ("cholesky", "cholesky_inverse", "symmetric_eigen")
# the slopes path's kernels: every function of simdesign.lmm.slope_kernels (compiled lazily, so in any order),
# and those of the intercepts path they import
SLOPE_IMPORTS = ("_level_sums", "cholesky", "cholesky_inverse", "profiled", "projection", "symmetric_eigen")
SLOPE_KERNEL_NAMES = tuple(name for name, value in vars(_numpy_slope_kernels).items()
                           if isinstance(value, types.FunctionType)
                           and value.__module__ == _numpy_slope_kernels.__name__)
_UNSET = object()
_state = {"kernels": _UNSET, "slopes": _UNSET, "namespace": None}


def _rebound(function, namespace: dict):
    """``function`` with its globals in ``namespace``, numba-compiled lazily (cached on disk)."""
    from numba import njit

    rebound = types.FunctionType(function.__code__, namespace, function.__name__, function.__defaults__)
    rebound.__module__, rebound.__qualname__ = function.__module__, function.__qualname__
    # error_model numpy: a division by zero gives inf or nan as numpy's does, not an exception
    return njit(cache=True, error_model="numpy")(rebound)


def _compile_namespace() -> dict:
    """Every compiled kernel of the intercepts path by name (lazily compiled at their first call)."""
    from numba import njit

    namespace = dict(vars(_numpy_kernels))
    for name in SMALL_LINALG:  # loops instead of LAPACK bindings: seconds to compile, faster on tiny matrices
        namespace[name] = njit(cache=True, error_model="numpy")(getattr(small_linalg, name))
    for name in KERNEL_NAMES:
        namespace[name] = _rebound(getattr(_numpy_kernels, name), namespace)
    return namespace


def say_if_compiling(namespace) -> bool:
    """One line on stderr when the first fit will compile (numba's disk cache holds no kernel yet); silent when
    that cannot be told (the line only explains a wait). True when the line was written."""
    try:
        cached = bool(namespace["solve"]._cache._cache_file._load_index())  # numba internals: any failure is silent
    except Exception:  # noqa: BLE001
        return False
    if not cached:
        sys.stderr.write("simdesign: compiling lmm_native's kernels (once, a few seconds; cached on disk; "
                         "`python -c 'import simdesign.lmm as m; m.warm_up()'` does it ahead)\n")
    return not cached


def _compile():
    """A namespace of numba-compiled copies of the kernels (lazily compiled at their first call)."""
    namespace = _compile_namespace()
    _state["namespace"] = namespace
    say_if_compiling(namespace)
    return types.SimpleNamespace(**{name: namespace[name] for name in KERNEL_NAMES}, compiled=True)


def _compile_slopes():
    """The slopes kernels compiled, calling the compiled copies of the intercepts kernels they import."""
    kernels()  # the intercepts kernels' namespace first
    base = _state.get("namespace")
    if base is None:  # numba switched off or missing
        return _numpy_slope_kernels
    namespace = dict(vars(_numpy_slope_kernels))
    for name in SLOPE_IMPORTS:
        namespace[name] = base[name]
    # the trust region's eigenvectors: Householder and QL, faster than Jacobi's sweeps on its 16 x 16 Hessians
    linalg = dict(vars(small_linalg))
    for name in ("_tridiagonal", "_implicit_ql", "householder_eigen"):
        linalg[name] = _rebound(getattr(small_linalg, name), linalg)
    namespace["symmetric_eigen"] = linalg["householder_eigen"]
    for name in SLOPE_KERNEL_NAMES:
        namespace[name] = _rebound(getattr(_numpy_slope_kernels, name), namespace)
    return types.SimpleNamespace(**{name: namespace[name] for name in SLOPE_KERNEL_NAMES}, compiled=True)


def kernels():
    """The kernels in use: numba's compiled copies, or the numpy module (no numba, or switched off)."""
    if _state["kernels"] is _UNSET:
        chosen = _numpy_kernels
        if os.environ.get("SIMDESIGN_LMM_NUMBA", "1") != "0":
            try:
                chosen = _compile()
            except ImportError:
                chosen = _numpy_kernels
        _state["kernels"] = chosen
    return _state["kernels"]


def slope_kernels():
    """The slopes path's kernels in use (:mod:`simdesign.lmm.slope_kernels`), compiled as :func:`kernels`."""
    if _state["slopes"] is _UNSET:
        _state["slopes"] = _compile_slopes() if is_compiled() else _numpy_slope_kernels
    return _state["slopes"]


def use_numba(enabled: bool) -> None:
    """Switch the compiled kernels on (when numba is installed) or off, for tests and benchmarks."""
    _state["kernels"] = _UNSET if enabled else _numpy_kernels
    _state["slopes"] = _UNSET if enabled else _numpy_slope_kernels


def is_compiled() -> bool:
    return getattr(kernels(), "compiled", False)

