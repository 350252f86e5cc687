"""The kernels of :mod:`simdesign.lmm.kernels`, compiled by numba when it is installed, else as they are.

numba is imported at the first fit that takes the fast path, never at import: the command line and
``import simdesign`` do not pay for it. Compiled code is cached on disk (``cache=True``, beside
``kernels.py``): the first fit of a fresh install compiles for a few seconds (:func:`warm_up` does it
ahead: ``simdesign.lmm.warm_up()``), later processes load the cache. ``SIMDESIGN_LMM_NUMBA=0`` runs the
numpy code instead (same source, same numbers to rounding, several times slower).
"""
from __future__ import annotations

import os
import types

from simdesign.lmm import kernels as _numpy_kernels
from simdesign.lmm import small_linalg

# in call order of dependence: each compiled function finds the compiled copies of those it calls
KERNEL_NAMES = ("reduce", "profiled", "deviance", "projection", "_level_sums", "parts", "newton_terms",
                "_direction", "_boundary_step", "newton", "satterthwaite_terms", "jacobian_grams", "satterthwaite_df",
                "satterthwaite_parts", "solve")
SMALL_LINALG = ("cholesky", "cholesky_inverse", "symmetric_eigen")
_UNSET = object()
_state = {"kernels": _UNSET}


def _compile():
    """A namespace of numba-compiled copies of the kernels (lazily compiled at their first call)."""
    from numba import njit

    namespace = dict(vars(_numpy_kernels))
    for name in SMALL_LINALG:  # loops instead of LAPACK bindings: seconds to compile, faster on tiny matrices
        namespace[name] = njit(cache=True, error_model="numpy")(getattr(small_linalg, name))
    for name in KERNEL_NAMES:
        function = getattr(_numpy_kernels, name)
        rebound = types.FunctionType(function.__code__, namespace, name, function.__defaults__)
        rebound.__module__, rebound.__qualname__ = function.__module__, function.__qualname__
        # error_model numpy: a division by zero gives inf or nan as numpy's does, not an exception
        namespace[name] = njit(cache=True, error_model="numpy")(rebound)
    return types.SimpleNamespace(**{name: namespace[name] for name in KERNEL_NAMES}, compiled=True)


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


def use_numba(enabled: bool) -> None:
    """Switch the compiled kernels on (when numba is installed) or off, for tests and benchmarks."""
    _state["kernels"] = _UNSET if enabled else _numpy_kernels


def is_compiled() -> bool:
    return getattr(kernels(), "compiled", False)

