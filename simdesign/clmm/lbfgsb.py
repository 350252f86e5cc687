"""scipy's L-BFGS-B driven directly: the iterates of ``scipy.optimize.minimize(method="L-BFGS-B", jac=True)``
without its wrappers.

A fit evaluates the Laplace objective dozens of times, each evaluation one compiled call (issue 41), and the
Python that ``minimize`` runs around each evaluation (its scalar-function and memoising wrappers, bounds
handling, array copies) was a sizeable share of a fit. This loop calls the same routine
(``scipy.optimize._lbfgsb.setulb``, scipy's C translation of L-BFGS-B) with the same arguments and evaluates
the objective at the same points (only where ``x`` changed, as ``minimize`` memoises), so the iterates are the
same, bit for bit. The routine is a private part of scipy (the project pins scipy to 1.17): on first use the loop is
checked against ``minimize`` on a small bounded problem, and where it does not give the same iterates (or the
routine is missing) ``minimize`` is used instead.

Part of :mod:`simdesign.clmm`; the model and the algorithm are described in that package's docstring.
"""
from __future__ import annotations

import numpy as np
from scipy import optimize

try:  # scipy's own routine and messages (private; checked before use, see _direct_matches)
    from scipy.optimize import _lbfgsb
    from scipy.optimize._lbfgsb_py import status_messages as _STATUS, task_messages as _TASK
except ImportError:  # pragma: no cover - a scipy without them: minimize is used
    _lbfgsb = None

# minimize's defaults for L-BFGS-B
DEFAULTS = {"maxcor": 10, "ftol": 2.2204460492503131e-09, "gtol": 1e-5, "maxfun": 15000, "maxiter": 15000,
            "maxls": 20}

_checked = None  # whether the direct loop gives minimize's iterates (None: not yet checked)


def minimize(fun, x0, bounds=None, options: dict | None = None) -> optimize.OptimizeResult:
    """``scipy.optimize.minimize(fun, x0, jac=True, method="L-BFGS-B", bounds=bounds, options=options)``.

    ``fun(x) -> (value, gradient)``. The result has minimize's ``x``, ``fun``, ``jac``, ``nit``, ``nfev``,
    ``status``, ``success`` and ``message`` (no ``hess_inv``).
    """
    if not _direct_matches():
        return optimize.minimize(fun, x0, jac=True, method="L-BFGS-B", bounds=bounds, options=options)
    return _direct(fun, x0, bounds, {**DEFAULTS, **(options or {})})


def _direct(fun, x0, bounds, options: dict) -> optimize.OptimizeResult:
    """_minimize_lbfgsb's loop with minimize's memoisation (the objective evaluated where x changed)."""
    x0 = np.asarray(x0, dtype=float).ravel()
    n = len(x0)
    nbd = np.zeros(n, np.int32)
    low_bnd, upper_bnd = np.zeros(n), np.zeros(n)
    if bounds is not None:
        lower = np.array([-np.inf if b[0] is None else float(b[0]) for b in bounds])
        upper = np.array([np.inf if b[1] is None else float(b[1]) for b in bounds])
        x0 = np.clip(x0, lower, upper)
        finite_lower, finite_upper = np.isfinite(lower), np.isfinite(upper)
        low_bnd[finite_lower], upper_bnd[finite_upper] = lower[finite_lower], upper[finite_upper]
        # minimize's bounds_map: 0 unbounded, 1 lower only, 2 both, 3 upper only
        nbd[:] = np.where(finite_lower, np.where(finite_upper, 2, 1), np.where(finite_upper, 3, 0))
    evaluated = x0.copy()
    f, g = fun(x0.copy())
    nfev = 1
    m = options["maxcor"]
    x = np.array(x0, dtype=np.float64)
    wa = np.zeros(2 * m * n + 5 * n + 11 * m * m + 8 * m)
    iwa = np.zeros(3 * n, np.int32)
    task, ln_task = np.zeros(2, np.int32), np.zeros(2, np.int32)
    lsave, isave, dsave = np.zeros(4, np.int32), np.zeros(44, np.int32), np.zeros(29)
    factr = options["ftol"] / np.finfo(float).eps
    iterations = 0
    while True:
        g = g.astype(np.float64)
        _lbfgsb.setulb(m, x, low_bnd, upper_bnd, nbd, f, g, factr, options["gtol"], wa, iwa, task, lsave, isave,
                       dsave, options["maxls"], ln_task)
        if task[0] == 3:  # f and g at the current x
            if not (x == evaluated).all():  # np.array_equal for two float arrays of one shape, without its checks
                evaluated = x.copy()
                f, g = fun(x.copy())
                nfev += 1
        elif task[0] == 1:  # a new iteration
            iterations += 1
            if iterations >= options["maxiter"]:
                task[0], task[1] = 5, 504
            elif nfev > options["maxfun"]:
                task[0], task[1] = 5, 502
        else:
            break
    status = 0 if task[0] == 4 else 1 if (nfev > options["maxfun"] or iterations >= options["maxiter"]) else 2
    return optimize.OptimizeResult(fun=f, jac=g, nfev=nfev, njev=nfev, nit=iterations, status=status,
                                   message=_STATUS[task[0]] + ": " + _TASK[task[1]], x=x, success=status == 0)


def _direct_matches() -> bool:
    """Whether the direct loop reproduces minimize's iterates (checked once per process)."""
    global _checked
    if _checked is None:
        _checked = _lbfgsb is not None and _same_iterates()
    return _checked


def _same_iterates() -> bool:
    # A bounded, badly scaled quadratic with a coupled term: every point either loop evaluates is recorded.
    scales = np.array([1.0, 30.0, 0.2, 5.0])

    def objective(points):
        def fun(x):
            points.append(x.copy())
            r = scales * (x - 1.0) + 0.3 * x[::-1]
            return float(0.5 * r @ r + np.sin(x[0])), scales * r + 0.3 * r[::-1] + np.r_[np.cos(x[0]), 0, 0, 0]
        return fun

    bounds = [(None, None), (0.0, None), (None, 0.5), (-1.0, 2.0)]
    options = {"maxcor": 5, "ftol": 1e-12, "gtol": 1e-9}
    ours, theirs = [], []
    try:
        mine = _direct(objective(ours), np.full(4, 3.0), bounds, {**DEFAULTS, **options})
    except Exception:  # noqa: BLE001 - the private routine changed: use minimize
        return False
    reference = optimize.minimize(objective(theirs), np.full(4, 3.0), jac=True, method="L-BFGS-B", bounds=bounds,
                                  options=options)
    return (len(ours) == len(theirs) and all(np.array_equal(a, b) for a, b in zip(ours, theirs))
            and np.array_equal(mine.x, reference.x) and mine.fun == reference.fun
            and mine.message == reference.message)
