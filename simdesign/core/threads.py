"""One BLAS/OpenMP thread for the small matrices of one study: faster, and the same rounding everywhere.

A trial's matrices are small (a 38 x 38 Hessian, products over 1500 judgements), so threads only
compete with the other workers (fits were 4-7 times slower with them on two cores). More importantly,
a multithreaded BLAS sums in another order, and a mixed-model fit on the edge of a decision (a Hessian
eigenvalue at the null-space tolerance, an optimiser stopping one step earlier) can then end
differently: the same data gave 'not_converged' with one thread and 'singular' with several. So every
fit runs single-threaded, whoever calls it (the engine, ``simdesign replay``, the Python API, the
analysis of a real study), and gives the same result.
"""
from __future__ import annotations

import sys

from threadpoolctl import ThreadpoolController

_CONTROLLER: list = [None, None]  # (number of modules imported when made, ThreadpoolController)


def _threadpools() -> ThreadpoolController:
    # Finding the process's thread pools takes about 3 ms, so it is done once, and again only after new
    # imports, which may have loaded another library with its own pool (R's BLAS, numba).
    if _CONTROLLER[0] != len(sys.modules):
        _CONTROLLER[:] = [len(sys.modules), ThreadpoolController()]
    return _CONTROLLER[1]


def single_threaded():
    """A context manager limiting BLAS and OpenMP to one thread within it (nesting is fine)."""
    return _threadpools().limit(limits=1)
