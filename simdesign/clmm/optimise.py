"""The fit: starting values, L-BFGS-B with restarts and boundary escapes, the refit from the other
reference codings' optima, the numerical Hessian and the switch for the compiled kernels.

Part of :mod:`simdesign.clmm`; the model and the algorithm are described in that package's docstring.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from simdesign.core.errors import ConfigError
from simdesign.core.judgements import Judgements
from simdesign.core.seeds import helper_rng
from simdesign.core.threads import single_threaded
from simdesign.stats.contrasts import relative_cholesky_is_singular

from simdesign.clmm import lbfgsb
from simdesign.clmm.codings import map_coding
from simdesign.clmm.compiled import _accelerator, _compiled_for, _mark_checked, _reset, _unchecked
from simdesign.clmm.layout import _Layout, _Objective
from simdesign.clmm.prepare import TERM_NAMES, _Problem, _prepare, _structure_label
from simdesign.clmm.results import ClmmResult
from simdesign.clmm.terms import ModeSearchError, _observation_terms


# lme4's isSingular default, applied to the Cholesky factor of each covariance (docs/estimands.md).
SINGULAR_TOLERANCE = 1e-4


# ordinal::clmm leaves Cholesky diagonals below this out of the Hessian (its paratBoundary2 default).
HESSIAN_BOUNDARY = 1e-3


# Probing bounded Cholesky diagonals for a way off the boundary: step and least gain.
ESCAPE_PROBE = 0.1
ESCAPE_MIN_GAIN = 1e-6


# Optimiser restarts (off the boundary, or while the projected gradient exceeds RESTART_GRADIENT).
RESTARTS = 4
RESTART_GRADIENT = 1e-3
# A fit whose Hessian is unusable is polished by further restarts until its projected gradient is below this.
POLISH_GRADIENT = 1e-5


# Hessian eigenvalues this small relative to the largest count as zero (forward-difference noise is ~1e-7),
# provided their eigenvectors leave thresholds and effects alone (loadings below NULL_FIXED_LOADING).
NULL_EIGENVALUE_TOLERANCE = 1e-5
NULL_FIXED_LOADING = 1e-3


# A fit whose largest projected gradient of -loglik exceeds this is reported as not converged.
CONVERGENCE_GRADIENT_TOLERANCE = 1e-2


# The refit rule (fit's ``starts``; docs/model.md, "Starts"): 'single' fits from ordinal's start only; 'codings'
# refits a fit whose status is in REFIT_STATUSES from the optima of the other reference codings, mapped into
# this one, and keeps another start's optimum only when it raises the log-likelihood by more than STARTS_MIN_GAIN
# (more than the mode searches' rounding, so an equal optimum reached twice keeps the default start's numbers).
START_RULES = ("single", "codings")
REFIT_STATUSES = ("singular", "not_converged")
STARTS_MIN_GAIN = 1e-6


def _check_kernels(problem: _Problem | None = None) -> None:
    """Run the compiled kernels once for a problem's random-effects dimension; fall back to numpy if they fail.

    numba compiles on first call, once for each dimension q (compiled._q_tuple), so a numba that cannot
    compile these kernels (an incompatible version) would otherwise fail in the middle of a user's fit; here
    it costs one warning and the numpy code instead. The check evaluates the objective at the problem's own
    start, before its fit; without a problem, a tiny one with random intercepts (q = 1).
    """
    if problem is None:
        rows = [(a, d, system, (a + 2 * d + k) % 3) for a in range(2) for d in range(3)
                for k, system in enumerate("xy")]
        problem = _prepare(pd.DataFrame(rows, columns=["annotator", "document", "system", "score"]), "intercepts",
                           "x")
    if not _unchecked(problem.q):
        return
    if not _compiled_for(problem.q):
        # the one wait of a fresh install (or of a new q): say what it is, once (warm_up does it ahead)
        sys.stderr.write(f"simdesign: compiling clmm_native's kernels for {problem.q} random effect(s) per level "
                         "(once; cached on disk; `python -c 'import simdesign.clmm as m; m.warm_up()'` does it "
                         "ahead)\n")
    layout = _Layout(problem)
    try:
        _Objective(problem, layout).natural(_starting_values(problem, layout))
    except (ModeSearchError, np.linalg.LinAlgError, FloatingPointError):
        pass  # the kernels ran; a numerical failure at this start is the fit's to handle
    except Exception as exc:  # noqa: BLE001 - any other failure of the optional accelerator means: do without it
        import warnings
        warnings.warn(f"simdesign.clmm: the compiled kernels failed ({type(exc).__name__}: {exc}); "
                      "fitting with numpy instead (slower)", RuntimeWarning, stacklevel=3)
        _mark_checked(problem.q, False)
        return
    _mark_checked(problem.q, True)


def warm_up() -> bool:
    """Compile the kernels (or load them from numba's on-disk cache) for random intercepts and for the maximal
    structure with five systems, so that no study pays for it; True when the compiled kernels are in use.

    ``python -c "import simdesign.clmm as m; m.warm_up()"`` after installing the ``fast`` extra
    (scripts/setup.sh runs it); another number of systems with slopes compiles once more at its first fit.
    """
    from simdesign import BlockDesign, load_model

    study = load_model("coherence").sample(BlockDesign(2, 3, 2), helper_rng("clmm/warm-up"))
    for structure in ("intercepts", "maximal"):
        fit(study, structure, starts="single")
    return _accelerator() is not None


def set_accelerator(enabled: bool) -> bool:
    """Switch the compiled kernels on (if numba is importable) or off; returns whether they are on.

    For benchmarks and tests that compare the two code paths in one process.
    """
    _reset(enabled)
    _check_kernels()
    return _accelerator() is not None


def _starting_values(problem: _Problem, layout: _Layout) -> np.ndarray:
    """ordinal::clmm's start: the fixed-effects-only (clm) fit and identity Cholesky factors.

    The start matters: with few annotators the maximal model has several
    boundary optima, and starting where ordinal does (rather than at zero
    effects) reaches the same one in the cases we checked.
    """
    counts = np.bincount(problem.category, minlength=len(problem.categories)).astype(float)
    cumulative = np.clip(np.cumsum(counts)[:-1] / counts.sum(), 1e-3, 1 - 1e-3)
    start = np.concatenate([np.log(cumulative / (1 - cumulative)), np.zeros(layout.n_beta)])
    n_thr = layout.n_thr

    kernels = _accelerator()
    if kernels is not None:  # the compiled objective sums over the judgements' counts by (system, category)
        n_categories = len(problem.categories)
        cell_counts = np.bincount(problem.system_code * n_categories + problem.category,
                                  minlength=problem.n_systems * n_categories).astype(float)
        cell_counts = cell_counts.reshape(problem.n_systems, n_categories)

    def fixed_only_nll(packed):
        if kernels is not None:
            return kernels.fixed_only_packed(packed, cell_counts, n_thr)
        thresholds = packed[0] + np.concatenate([[0.0], np.cumsum(np.exp(packed[1:n_thr]))])
        beta_full = np.concatenate([[0.0], packed[n_thr:]])
        try:
            terms = _observation_terms(problem, thresholds, beta_full[problem.system_code], third_order=True)
        except ModeSearchError:
            return 1e300, np.zeros_like(packed)
        g_thr = problem.threshold_upper @ terms.dl_upper + problem.threshold_lower @ terms.dl_lower
        g_packed = np.concatenate([g_thr, (problem.system_indicator @ terms.g)[1:]])
        tail_sums = np.cumsum(g_thr[::-1])[::-1]
        g_packed[0] = g_thr.sum()
        g_packed[1:n_thr] = np.exp(packed[1:n_thr]) * tail_sums[1:]
        return -terms.log_prob.sum(), g_packed

    packed = start.copy()
    packed[1:n_thr] = np.log(np.maximum(np.diff(start[:n_thr]), 1e-3))
    solution = lbfgsb.minimize(fixed_only_nll, packed)
    thresholds = solution.x[0] + np.concatenate([[0.0], np.cumsum(np.exp(solution.x[1:n_thr]))])
    cholesky = {name: np.eye(problem.q) for name in layout.names}
    start = layout.pack(thresholds, solution.x[n_thr:], cholesky)
    start[layout.fixed_mask()] = 0.0
    return start


def _numerical_hessian(objective: _Objective, natural: np.ndarray, free: np.ndarray, central: bool = False,
                       step: float | None = None, gradient: np.ndarray | None = None):
    """Differences of the analytic gradient over the free parameters, symmetrised.

    Forward differences by default: the analytic gradient is accurate to
    about 1e-8, so a step of 1e-6 gives the Hessian to about six digits
    (standard errors agree with ordinal's to 1e-4 relative) at half the cost
    of central differences. ``gradient``: the natural gradient at ``natural``
    when the caller has just evaluated it there (the forward differences'
    base; evaluating it again would give the same numbers, as the mode
    search starts at that point's converged mode). The objective's warm start
    is left at the last perturbed point: a caller that evaluates near
    ``natural`` afterwards restores it first (:func:`_fit_problem`).
    """
    if step is None:
        step = 1e-5 if central else 1e-6
    index = np.flatnonzero(free)
    hessian = np.empty((len(index), len(index)))
    if central:
        base = None
    else:
        base = (objective.natural(natural)[1] if gradient is None else gradient)[index]
    for column, k in enumerate(index):
        h = step * max(1.0, abs(natural[k]))
        plus = natural.copy()
        plus[k] += h
        g_plus = objective.natural(plus)[1][index]
        if central:
            minus = natural.copy()
            minus[k] -= h
            hessian[:, column] = (g_plus - objective.natural(minus)[1][index]) / (2.0 * h)
        else:
            hessian[:, column] = (g_plus - base) / h
    return 0.5 * (hessian + hessian.T), index


def fit(judgements: pd.DataFrame | Judgements, structure="maximal", reference=None, *, starts: str = "codings",
        maxcor: int = 50, max_iterations: int = 3000) -> ClmmResult:
    """Fit ``score ~ system + (1 + system | annotator) + (1 + system | document)`` by Laplace ML.

    Parameters
    ----------
    judgements : pandas.DataFrame or simdesign.core.judgements.Judgements
        One row per judgement with columns ``annotator, document, system, score``
        (others are ignored). Scores are ordered numeric values; the thresholds sit
        between the observed values, as in ``ordinal::clmm`` with ``factor(score)``.
        A :class:`~simdesign.core.judgements.Judgements` is fitted as its
        ``to_frame()`` would be (the same fit, bit for bit), without building the table.
    structure : {'maximal', 'intercepts', 'paper'} or mapping
        'maximal': random intercept and a slope for every non-reference system, with
        full covariance, for both annotator and document. 'intercepts': random
        intercepts only. 'paper': maximal, but without the document term when every
        document is judged by exactly one annotator (a nested design). A mapping
        gives each fitted term's form, e.g. ``{'annotator': 'slopes', 'document':
        'intercept'}`` for ``(1 + system | annotator) + (1 | document)`` (see
        :func:`term_forms`); an intercept-only term's covariance is then 1 x 1.
    reference : str, optional
        The reference system (its effect is 0). Default: the first system in
        Python's sorted order (uppercase before underscore before lowercase), which
        differs from R's default factor order (locale collation): pass it explicitly
        to compare with an R fit. The remaining systems follow in sorted order.
    starts : {'codings', 'single'}
        The refit rule. 'single': one fit from ordinal's start (the fixed-effects-only
        fit and identity Cholesky factors). 'codings' (default): a fit that ends
        'singular' or 'not_converged' is also fitted under each other reference system
        from that coding's own start; each of those optima is mapped exactly into this
        coding (:func:`simdesign.clmm.codings.map_coding`: a change of reference is a
        linear reparametrisation with the same log-likelihood) and polished here, and the
        highest log-likelihood is kept (the default start's unless another gains more
        than ``STARTS_MIN_GAIN``). Every coding then sees the same S candidate optima,
        so the log-likelihood no longer depends on the reference. It costs up to S
        fits where the rule applies; ``starts_tried``, ``start_kept`` and
        ``start_gain`` of the result say what it did (docs/model.md, "Starts").
    maxcor : int
        L-BFGS-B history length.
    max_iterations : int
        L-BFGS-B iteration limit.

    Returns
    -------
    ClmmResult

    Raises
    ------
    ConfigError
        Bad input: a missing column (named), missing values, fewer than two
        systems or score values, an unknown structure, reference or start rule.
    """
    started = time.perf_counter()
    if starts not in START_RULES:
        raise ConfigError(f"starts must be one of {list(START_RULES)}; got {starts!r}")
    problem = _prepare(judgements, structure, reference)
    _check_kernels(problem)
    # the same judgements and structure coded against another reference system (prepared only when refitting)
    recode = None if starts == "single" else (lambda other: _prepare(judgements, structure, other))
    try:
        with single_threaded():  # the same rounding for every caller (simdesign.core.threads)
            result = _fit_problem(problem, structure, maxcor, max_iterations, recode)
    except (ModeSearchError, np.linalg.LinAlgError, FloatingPointError) as exc:
        # A numerical breakdown is a result ('error', no p-values), not a crash of the caller's loop.
        result = _error_result(problem, structure, f"{type(exc).__name__}: {exc}")
    result.starts = starts
    result.seconds = time.perf_counter() - started
    result.n_levels = {name: int(problem.n_levels[name]) for name in TERM_NAMES}
    return result


def _error_result(problem: _Problem, structure, message: str) -> ClmmResult:
    n_beta = problem.n_systems - 1
    names = [f.name for f in problem.factors]
    size = {f.name: 1 if f.intercept_only else problem.q for f in problem.factors}
    return ClmmResult(
        systems=list(problem.systems), structure=_structure_label(structure), terms=names,
        categories=problem.categories, thresholds=np.full(problem.n_thresholds, np.nan),
        fixed_effects={s: (0.0 if i == 0 else float("nan")) for i, s in enumerate(problem.systems)},
        fixed_effects_cov=np.full((n_beta, n_beta), np.nan),
        random_effects_cov={name: np.full((size[name],) * 2, np.nan) for name in names},
        cholesky_factors={name: np.full((size[name],) * 2, np.nan) for name in names},
        loglik=float("nan"), converged=False, status="error", message=message, n_obs=problem.n_obs)


def _projected_gradient(layout: _Layout, packed: np.ndarray, packed_gradient: np.ndarray) -> float:
    """Largest |gradient| that the bounds do not excuse.

    A Cholesky diagonal at its bound 0 with a positive gradient is a KKT point:
    only the other components must vanish.
    """
    at_bound = layout.diagonal_mask() & (packed <= 0.0)
    projected = np.where(at_bound, np.minimum(packed_gradient, 0.0), packed_gradient)
    return float(np.abs(np.where(layout.fixed_mask(), 0.0, projected)).max())


def _invert_hessian(hessian: np.ndarray, n_fixed: int) -> tuple[np.ndarray, float, int]:
    """Covariance of the parameters: the inverse Hessian, or its pseudo-inverse on a null space.

    With two or more Cholesky diagonals at zero, some of the remaining Cholesky
    elements can rotate into each other without changing the covariance
    matrix: the likelihood is flat along that direction and the Hessian has a
    (numerically +-1e-4) zero eigenvalue, where ordinal's vcov gives up. Such a
    direction leaves the thresholds and effects alone, so dropping it (a
    pseudo-inverse) gives their covariance exactly; a direction that involves
    them, or a clearly negative eigenvalue (a saddle), is an error.

    Returns
    -------
    covariance : ndarray
    condition : float
        |largest / smallest eigenvalue| (as ordinal's ``cond.H``).
    null_directions : int
    """
    eigenvalues, vectors = np.linalg.eigh(hessian)
    condition = float(abs(eigenvalues.max() / eigenvalues.min()))
    tolerance = NULL_EIGENVALUE_TOLERANCE * np.abs(eigenvalues).max()
    if eigenvalues.min() > tolerance:
        return np.linalg.inv(hessian), condition, 0
    null = np.abs(eigenvalues) <= tolerance
    if np.any(eigenvalues < -tolerance):
        raise np.linalg.LinAlgError("the Hessian is not positive definite (a saddle point)")
    if np.abs(vectors[:n_fixed, null]).max() > NULL_FIXED_LOADING:
        raise np.linalg.LinAlgError("the Hessian is singular in a direction that involves the fixed effects")
    kept = vectors[:, ~null]
    return (kept / eigenvalues[~null]) @ kept.T, condition, int(null.sum())


def _boundary_escape(objective: _Objective, layout: _Layout, solution) -> np.ndarray | None:
    """A better start off the boundary, or None when the boundary optimum is genuine.

    A Cholesky diagonal at 0 whose column is otherwise 0 is a stationary point
    with zero gradient (the likelihood is even in it), so L-BFGS-B can stop
    there even when the likelihood rises off the bound (a saddle, not a
    minimum). Probing each bounded diagonal at ESCAPE_PROBE tells the two apart.
    """
    diagonal = layout.diagonal_mask()
    at_bound = np.flatnonzero(diagonal & (solution.x <= 0.0) & ~layout.fixed_mask())
    if len(at_bound) == 0:
        return None
    base = solution.fun
    improving = []
    for k in at_bound:
        probe = solution.x.copy()
        probe[k] = ESCAPE_PROBE
        try:
            value, _ = objective.natural(layout.from_optimiser(probe), with_gradient=False)
        except (ModeSearchError, np.linalg.LinAlgError):
            continue
        if value < base - ESCAPE_MIN_GAIN:
            improving.append(k)
    if not improving:
        return None
    escape = solution.x.copy()
    escape[improving] = ESCAPE_PROBE
    return escape


def _minimise(objective: _Objective, layout: _Layout, start: np.ndarray, bounds: list, options: dict,
              restart_gradient: float):
    """L-BFGS-B from ``start``, restarted (at most RESTARTS times) off the boundary or while not flat."""
    solution = lbfgsb.minimize(objective.optimiser, start, bounds, options)
    for _ in range(RESTARTS):
        # L-BFGS-B can stop on a tiny relative decrease in a flat valley, or on a saddle at the boundary:
        # restart from a probe off the boundary, or afresh (new history) while the gradient is not flat.
        restart = _boundary_escape(objective, layout, solution)
        if restart is None and _projected_gradient(layout, solution.x, solution.jac) > restart_gradient:
            restart = solution.x
        if restart is None:
            break
        solution = lbfgsb.minimize(objective.optimiser, restart, bounds, options)
    return solution


@dataclass
class _Optimum:
    """The point L-BFGS-B stopped at, its gradient and (when usable) the parameters' covariance."""

    solution: object
    natural: np.ndarray
    nll: float
    max_gradient: float
    parameter_cov: np.ndarray | None
    beta_cov: np.ndarray
    condition: float
    message: str


def _assess_optimum(objective: _Objective, layout: _Layout, solution) -> _Optimum:
    natural = layout.from_optimiser(solution.x)
    nll, natural_gradient = objective.natural(natural)
    max_gradient = _projected_gradient(layout, solution.x, layout.gradient_to_optimiser(solution.x, natural_gradient))
    free = ~(layout.diagonal_mask() & (natural < HESSIAN_BOUNDARY)) & ~layout.fixed_mask()
    hessian, _ = _numerical_hessian(objective, natural, free, gradient=natural_gradient)
    n_fixed = layout.n_thr + layout.n_beta  # thresholds and effects come first and are always free
    message = ""
    try:
        parameter_cov, condition, null_directions = _invert_hessian(hessian, n_fixed)
        beta_cov = parameter_cov[layout.n_thr:n_fixed, layout.n_thr:n_fixed]
        if null_directions:
            message = (f"the Hessian is singular in {null_directions} direction(s) of non-identified Cholesky "
                       "elements at the boundary; covariances from its pseudo-inverse")
    except np.linalg.LinAlgError as exc:
        condition, parameter_cov = float("inf"), None
        beta_cov = np.full((layout.n_beta, layout.n_beta), np.nan)
        message = f"fixed-effect covariance unavailable: {exc}"
    return _Optimum(solution, natural, float(nll), max_gradient, parameter_cov, beta_cov, condition, message)


class _Fitter:
    """One coding's problem with its layout, objective (warm starts, evaluation counts), bounds and options."""

    def __init__(self, problem: _Problem, maxcor: int, max_iterations: int):
        self.problem = problem
        self.layout = layout = _Layout(problem)
        self.objective = _Objective(problem, layout)
        self.bounds = [(0.0, 0.0) if is_fixed else (0.0, None) if is_diag else (None, None)
                       for is_diag, is_fixed in zip(layout.diagonal_mask(), layout.fixed_mask())]
        self.options = {"maxcor": maxcor, "maxiter": max_iterations, "maxfun": 2 * max_iterations, "ftol": 1e-11,
                        "gtol": 1e-7}

    def default_start(self) -> np.ndarray:
        """ordinal's start (:func:`_starting_values`) in the optimiser's coordinates."""
        return self.layout.to_optimiser(_starting_values(self.problem, self.layout))

    def minimise(self, start: np.ndarray, restart_gradient: float = RESTART_GRADIENT):
        return _minimise(self.objective, self.layout, start, self.bounds, self.options, restart_gradient)

    def assess(self, solution) -> _Optimum:
        """The optimum at ``solution``, polished first when its Hessian is unusable and its gradient not flat."""
        optimum = _assess_optimum(self.objective, self.layout, solution)
        if optimum.parameter_cov is None and optimum.max_gradient > POLISH_GRADIENT:
            # An unusable Hessian where the gradient is not yet flat may be a point short of the optimum: polish
            # it (fresh L-BFGS-B runs down to POLISH_GRADIENT) before calling the fit failed. Only failing fits get
            # here, so every fit that succeeded before is unchanged. The Hessian left the warm start at a perturbed
            # point: the polish starts from the optimum's own mode.
            self.objective.natural(optimum.natural, with_gradient=False)
            optimum = _assess_optimum(self.objective, self.layout, self.minimise(optimum.solution.x, POLISH_GRADIENT))
        return optimum


@dataclass
class _Candidate:
    """Another coding's optimum, mapped into the fit's coding and polished there."""

    reference: str
    solution: object


def _coding_candidates(fitter: _Fitter, recode) -> tuple[list, int]:
    """The optima of the other reference codings, each fitted from its own start and polished in ``fitter``'s.

    Returns the candidates (a coding whose fit or polish breaks down numerically is
    left out) and the Laplace evaluations they took in the other codings' objectives.
    """
    candidates, evaluations = [], 0
    for reference in fitter.problem.systems[1:]:
        other = _Fitter(recode(reference), fitter.options["maxcor"], fitter.options["maxiter"])
        try:
            solution = other.minimise(other.default_start())
            mapped = map_coding(other.layout.from_optimiser(solution.x), other.layout, fitter.layout)
            # each polish starts its mode search afresh, so a candidate does not depend on the ones before it
            fitter.objective.mode = {name: np.zeros_like(mode) for name, mode in fitter.objective.mode.items()}
            fitter.objective.factorisation = None
            polished = fitter.minimise(fitter.layout.to_optimiser(mapped))
        except (ModeSearchError, np.linalg.LinAlgError, FloatingPointError):
            continue
        finally:
            evaluations += other.objective.evaluations
        if np.isfinite(polished.fun) and polished.fun < 1e300:
            candidates.append(_Candidate(reference, polished))
    return candidates, evaluations


def _fit_problem(problem: _Problem, structure, maxcor: int, max_iterations: int, recode=None) -> ClmmResult:
    """Fit one coding; with ``recode`` (reference -> that coding's problem), apply the refit rule (:func:`fit`)."""
    fitter = _Fitter(problem, maxcor, max_iterations)
    optimum = fitter.assess(fitter.minimise(fitter.default_start()))
    result = _result(problem, structure, fitter.layout, fitter.objective, optimum)
    if recode is None or result.status not in REFIT_STATUSES:
        return result
    candidates, other_evaluations = _coding_candidates(fitter, recode)
    best = min(candidates, key=lambda candidate: candidate.solution.fun, default=None)
    gain = optimum.nll - best.solution.fun if best is not None else 0.0
    if gain > STARTS_MIN_GAIN:
        try:
            # the Hessian and the warm start must belong to the kept point: evaluate there first
            fitter.objective.natural(fitter.layout.from_optimiser(best.solution.x), with_gradient=False)
            kept = fitter.assess(best.solution)
        except (ModeSearchError, np.linalg.LinAlgError, FloatingPointError):
            kept = None  # the better point cannot be assessed: the default start's fit stands
        if kept is not None:
            result = _result(problem, structure, fitter.layout, fitter.objective, kept)
            result.start_kept = f"reference {best.reference}"
            result.start_gain = float(optimum.nll - kept.nll)
    result.n_evaluations = fitter.objective.evaluations + other_evaluations
    result.starts_tried = 1 + len(problem.systems[1:])
    return result


def _result(problem: _Problem, structure, layout: _Layout, objective: _Objective, optimum: _Optimum) -> ClmmResult:
    thresholds, beta, cholesky = layout.unpack(optimum.natural)
    cholesky = {name: layout.own_block(name, cholesky[name]) for name in layout.names}
    boundary = {name: np.diag(cholesky[name]) <= 0.0 for name in layout.names}
    covariances = {name: cholesky[name] @ cholesky[name].T for name in layout.names}
    # L-BFGS-B's own verdict is not used: it often stops with a line-search warning at an optimum
    # that is flat to rounding; the projected gradient and a usable Hessian decide instead.
    converged = bool(optimum.max_gradient < CONVERGENCE_GRADIENT_TOLERANCE and optimum.parameter_cov is not None)
    singular = any(_relative_cholesky_singular(cov) for cov in covariances.values())
    message = optimum.message
    if not converged:
        status = "not_converged"
        message = message or (f"optimiser: {optimum.solution.message}; "
                              f"max|projected gradient| {optimum.max_gradient:.3g}")
    elif singular:
        status = "singular"
        message = "boundary fit: a random-effects covariance is singular" + (f"; {message}" if message else "")
    else:
        status = "ok"
    return ClmmResult(
        systems=list(problem.systems), structure=_structure_label(structure), terms=list(layout.names),
        categories=problem.categories, thresholds=np.asarray(thresholds),
        fixed_effects=dict(zip(problem.systems, np.concatenate([[0.0], beta]).tolist())),
        fixed_effects_cov=optimum.beta_cov, random_effects_cov=covariances, cholesky_factors=cholesky,
        loglik=-optimum.nll, converged=converged, status=status, message=message,
        max_gradient=optimum.max_gradient, hessian_condition=optimum.condition, boundary=boundary,
        n_obs=problem.n_obs, n_evaluations=objective.evaluations, n_inner_iterations=objective.inner_iterations,
        optimizer_message=str(optimum.solution.message),
        parameter_cov=optimum.parameter_cov)


def _relative_cholesky_singular(covariance: np.ndarray) -> bool:
    # The same rule as every other backend (docs/estimands.md), on the returned covariance.
    return relative_cholesky_is_singular(covariance, tolerance=SINGULAR_TOLERANCE)
