"""One BLAS/OpenMP thread for the small matrices of one study: faster, and the same rounding everywhere.

A trial's matrices are small (a 38 x 38 Hessian, products over 1500 judgements), so threads only
compete with the other workers (fits were 4-7 times slower with them on two cores). More importantly,
a multithreaded BLAS sums in another order, and a mixed-model fit on the edge of a decision (a Hessian
eigenvalue at the null-space tolerance, an optimiser stopping one step earlier) can then end
differently: the same data gave 'not_converged' with one thread and 'singular' with several. So every
fit runs single-threaded, whoever calls it (the engine, ``simdesign replay``, the Python API, the
analysis of a real study), and gives the same result.

Nesting is cheap: inside a :func:`single_threaded` block of the same thread, a block whose thread pools
are all among those the outer block limited does nothing (the limits are already 1), where setting and
restoring them costs about 15 microseconds, a tenth of a mixed-model fit of a small simulated study
(every fit of the engine runs inside its chunk's block).
"""
from __future__ import annotations

import sys
import threading

from threadpoolctl import ThreadpoolController

# (number of modules imported when made, ThreadpoolController, the libraries it controls)
_CONTROLLER: list = [None, None, frozenset()]
_ACTIVE = threading.local()  # .libraries: those an enclosing block of this thread limited to one thread


def _threadpools() -> ThreadpoolController:
    # Finding the process's thread pools takes about 3 ms, so it is done once, and again only after new
    # imports, which may have loaded another library with its own pool (R's BLAS, numba).
    if _CONTROLLER[0] != len(sys.modules):
        controller = ThreadpoolController()
        libraries = frozenset((lib.internal_api, lib.filepath) for lib in controller.lib_controllers)
        _CONTROLLER[:] = [len(sys.modules), controller, libraries]
    return _CONTROLLER[1]


class _SingleThreaded:
    """The context manager of :func:`single_threaded`: limits set when made (as threadpoolctl's), restored
    on exit; nothing to set or restore when an enclosing block of this thread limited every pool already."""

    __slots__ = ("_limiter", "_enclosing", "_libraries")

    def __init__(self):
        controller = _threadpools()
        self._libraries = _CONTROLLER[2]
        self._enclosing = getattr(_ACTIVE, "libraries", None)
        nested = self._enclosing is not None and self._libraries <= self._enclosing
        self._limiter = None if nested else controller.limit(limits=1)

    def __enter__(self):
        if self._limiter is not None:
            self._limiter.__enter__()
            _ACTIVE.libraries = self._libraries | (self._enclosing or frozenset())
        return self

    def __exit__(self, *exc_info):
        if self._limiter is not None:
            self._limiter.__exit__(*exc_info)
            _ACTIVE.libraries = self._enclosing
        return False


def single_threaded():
    """A context manager limiting BLAS and OpenMP to one thread within it (nesting is fine, and cheap)."""
    return _SingleThreaded()
