"""Tests of a CLMM's pairwise contrasts that refit the model: the likelihood-ratio test with a
Bartlett-type correction and the parametric bootstrap-t (issue 30, part 2).

The rules, and why, are in docs/model.md ("Small-sample corrections"); they were written there before
they were measured. Both start from a finished unconstrained fit (:func:`simdesign.clmm.fit`):

- :func:`likelihood_ratio_tests`: for each pair (a, b), LR = 2 (nll constrained - nll full), the
  constrained model refitted with beta_a = beta_b (every other parameter free); compared with a
  chi-square(1) after dividing by a Bartlett factor c, the mean of LR under the null estimated by a
  parametric bootstrap from the fit (:func:`bartlett_factor`);
- :func:`bootstrap_t_tests`: T* = (d* - d) / se* over data sets drawn from the fitted model, the Wald
  statistic's own small-sample distribution; p = (1 + #{|T*| >= |T|}) / (1 + usable draws).

A constrained refit codes the data against system a (an exact reparametrisation,
:mod:`simdesign.clmm.codings`), where beta_a = beta_b + v reads beta_b = -v, and holds that one
parameter fixed. Part of :mod:`simdesign.clmm`; it reads a finished fit and never changes how a fit is made.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from simdesign.core.checks import is_integer
from simdesign.core.judgements import Judgements
from simdesign.core.threads import single_threaded
from simdesign.stats.contrasts import FAILURES, system_pairs, wald_contrasts
from simdesign.stats.replication import adjusted_p_values

from simdesign.clmm.codings import map_coding
from simdesign.clmm.layout import _Layout, _Objective
from simdesign.clmm.optimise import RESTART_GRADIENT, _Fitter, _minimise, _result
from simdesign.clmm.prepare import _Problem, _prepare
from simdesign.clmm.results import ClmmResult
from simdesign.clmm.small_sample import _natural_vector
from simdesign.clmm.terms import ModeSearchError

REFIT_TESTS = ("lrt", "bootstrap")
"""The refitting tests of ``clmm_native``'s option ``test`` (besides the Wald test, 'wald')."""

# A refit may break down numerically (a mode search, a singular Hessian): such a draw is left out and
# counted; with fewer than this share of the draws usable the test fails (no p-value), so a p-value never
# rests on a handful of the draws asked for.
MIN_USABLE_SHARE = 0.5

_NUMERICAL = (ModeSearchError, np.linalg.LinAlgError, FloatingPointError)


class _PinnedLayout(_Layout):
    """A layout whose effect at ``pinned`` is held fixed (a constrained fit), like an intercept-only term's zeros."""

    def __init__(self, problem: _Problem, pinned: int):
        super().__init__(problem)
        self.pinned = pinned

    def fixed_mask(self):
        mask = super().fixed_mask()
        mask[self.pinned] = True
        return mask


@dataclass
class RefitSummary:
    """What a refitting test did: the draws asked for, the usable ones, and the Bartlett factor (LRT)."""

    resamples: int
    usable: int
    bartlett: float = float("nan")

    def text(self) -> str:
        extra = f", Bartlett factor {self.bartlett:.3f}" if np.isfinite(self.bartlett) else ""
        return f"{self.usable} of {self.resamples} parametric-bootstrap refits usable{extra}"


class _Refitter:
    """One study's data and unconstrained fit, with problems per reference coding made once."""

    def __init__(self, judgements, fit: ClmmResult, structure):
        self.judgements, self.fit, self.structure = judgements, fit, structure
        self.problem = _prepare(judgements, structure, fit.systems[0])
        self.layout = _Layout(self.problem)
        self.natural = _natural_vector(self.layout, fit)
        self.full_nll = -float(fit.loglik)
        self._codings = {fit.systems[0]: (self.problem, self.layout)}

    @classmethod
    def at_optimum(cls, judgements, structure, fitter: _Fitter, point: np.ndarray, nll: float) -> "_Refitter":
        """A refitter at an optimiser's last point (a drawn data set's fit, no ClmmResult made)."""
        self = cls.__new__(cls)
        self.judgements, self.structure, self.fit = judgements, structure, None
        self.problem, self.layout = fitter.problem, fitter.layout
        self.natural = fitter.layout.from_optimiser(point)
        self.full_nll = nll
        self._codings = {fitter.problem.systems[0]: (self.problem, self.layout)}
        return self

    def coding(self, reference: str):
        if reference not in self._codings:
            problem = _prepare(self.judgements, self.structure, reference)
            self._codings[reference] = (problem, _Layout(problem))
        return self._codings[reference]

    def constrained_nll(self, a: str, b: str, value: float, natural=None) -> float:
        """Least negative log-likelihood with beta_a - beta_b = ``value``, from ``natural`` (default the fit)."""
        problem, plain = self.coding(a)
        pinned = plain.n_thr + problem.systems.index(b) - 1
        layout = _PinnedLayout(problem, pinned)
        start = map_coding(self.natural if natural is None else natural, self.layout, plain)
        # Coded against a, beta_b is b - a: pin it at -value. Start with a and b moved towards each other by
        # equal amounts and every other system kept where it was relative to the thresholds (a's predictor
        # moves by shift: the thresholds and the other effects move by -shift), near the constrained optimum.
        shift = 0.5 * (value + start[pinned])
        start[:plain.n_thr] -= shift
        start[plain.n_thr:plain.n_thr + plain.n_beta] -= shift
        start[pinned] = -value
        fitter = _Fitter(problem, 50, 3000)
        bounds = list(fitter.bounds)
        bounds[pinned] = (-value, -value)
        solution = _minimise(_Objective(problem, layout), layout, layout.to_optimiser(start), bounds,
                             fitter.options, RESTART_GRADIENT)
        return float(solution.fun)


def _pairs(fit: ClmmResult, order) -> list[tuple[str, str]]:
    order = list(fit.systems if order is None else order)
    if sorted(order) != sorted(fit.systems):
        raise ValueError(f"order must list the systems {fit.systems}; got {order}")
    return [(order[i], order[j]) for i, j in system_pairs(len(order))]


def likelihood_ratios(judgements, fit: ClmmResult, order=None, structure="maximal") -> np.ndarray:
    """LR = 2 (nll constrained - nll full) of every pair (i, j), i < j in ``order``, at least 0.

    A constrained optimum below the full fit's (the full fit stopped at a worse local optimum) gives 0:
    the data then carry no evidence against the constraint that this fit found.
    """
    refitter = _Refitter(judgements, fit, structure)
    with single_threaded():
        return _likelihood_ratios(refitter, _pairs(fit, order))


def _likelihood_ratios(refitter: _Refitter, pairs) -> np.ndarray:
    ratios = np.full(len(pairs), np.nan)
    for row, (a, b) in enumerate(pairs):
        try:
            ratios[row] = max(0.0, 2.0 * (refitter.constrained_nll(a, b, 0.0) - refitter.full_nll))
        except _NUMERICAL:
            continue
    return ratios


def draw_judgements(judgements: Judgements, fit: ClmmResult, structure, rng: np.random.Generator) -> Judgements:
    """One data set from the fitted model on the study's own design (annotators, documents, systems).

    New random effects for every annotator and document from the fitted covariances, latent
    eta + logistic noise, cut at the fitted thresholds into the observed score values.
    """
    refitter = _Refitter(judgements, fit, structure)
    return _draw(refitter, rng)


def _draw(refitter: _Refitter, rng: np.random.Generator) -> Judgements:
    problem, layout = refitter.problem, refitter.layout
    thresholds, beta, cholesky = layout.unpack(refitter.natural)
    eta = np.concatenate([[0.0], beta])[problem.system_code]
    for factor in problem.factors:
        effects = rng.standard_normal((factor.n_levels, layout.q)) @ cholesky[factor.name].T
        eta = eta + np.einsum("ij,ij->i", problem.z, effects[factor.codes])
    latent = eta + rng.logistic(size=len(eta))
    scores = problem.categories[np.searchsorted(thresholds, latent)]
    source = refitter.judgements
    return Judgements(scores.reshape(source.scores.shape), source.annotator, source.document, source.block,
                      source.systems)


def _refit_draw(refitter: _Refitter, draw: Judgements, covariance: bool = True):
    """The unconstrained fit of one drawn data set, started at the generating parameters; None if unusable.

    Without ``covariance`` (the LRT needs the optimum's value alone) the Hessian is skipped: the result is
    the optimiser's (value, natural parameters), None when it found no finite value.
    """
    problem = _prepare(draw, refitter.structure, refitter.fit.systems[0])
    fitter = _Fitter(problem, 50, 3000)
    same_scale = np.array_equal(problem.categories, refitter.problem.categories)
    # a draw that missed a score value has fewer thresholds: ordinal's own start then
    start = fitter.layout.to_optimiser(refitter.natural) if same_scale else fitter.default_start()
    solution = fitter.minimise(start)
    if not covariance:
        return (float(solution.fun), fitter, solution.x) if np.isfinite(solution.fun) and solution.fun < 1e300 else None
    optimum = fitter.assess(solution)
    result = _result(problem, refitter.structure, fitter.layout, fitter.objective, optimum)
    return None if result.status in FAILURES else result


def _check_resamples(resamples) -> int:
    if not is_integer(resamples, 1):
        raise ValueError(f"resamples must be a positive integer; got {resamples!r}")
    return int(resamples)


def bootstrap_t_tests(judgements: Judgements, fit: ClmmResult, order, structure, resamples: int,
                      rng: np.random.Generator, adjust: str = "none"):
    """Parametric bootstrap-t p-values of every pair (docs/model.md, "Small-sample corrections").

    Parameters
    ----------
    judgements : Judgements
        The study the fit was made from.
    fit : ClmmResult
        Its unconstrained fit (status 'ok' or 'singular').
    order : sequence of str
        All systems; pairs (i, j), i < j in this order, estimate beta_i - beta_j.
    structure : str or mapping
        The structure the fit was made with.
    resamples : int
        Data sets drawn from the fitted model and refitted.
    rng : numpy.random.Generator
    adjust : {'none', 'holm', 'tukey'}
        'tukey': single-step max-|T| over the pairs within each draw (the bootstrap's own joint
        distribution, as the studentized range is the Wald statistics'); 'holm': Holm on the pairs' p.

    Returns
    -------
    p_value : ndarray, shape (n_pairs,)
        NaN for every pair when fewer than MIN_USABLE_SHARE of the draws refitted.
    summary : RefitSummary
    """
    resamples = _check_resamples(resamples)
    pairs = _pairs(fit, order)
    estimate, se, _ = wald_contrasts(*fit.effects_in(list(order)))
    observed = estimate / se
    refitter = _Refitter(judgements, fit, structure)
    statistics = []
    with single_threaded():
        for _ in range(resamples):
            try:
                refit = _refit_draw(refitter, _draw(refitter, rng))
            except _NUMERICAL:
                continue
            if refit is None:
                continue
            drawn_estimate, drawn_se, _ = wald_contrasts(*refit.effects_in(list(order)))
            if np.all(np.isfinite(drawn_se) & (drawn_se > 0)):
                statistics.append((drawn_estimate - estimate) / drawn_se)
    summary = RefitSummary(resamples, len(statistics))
    if len(statistics) < MIN_USABLE_SHARE * resamples:
        return np.full(len(pairs), np.nan), summary
    drawn = np.abs(np.array(statistics))
    size = np.abs(observed)
    if adjust == "tukey":
        exceed = (drawn.max(axis=1)[:, None] >= size[None, :]).sum(axis=0)
    else:
        exceed = (drawn >= size[None, :]).sum(axis=0)
    p_value = (1.0 + exceed) / (1.0 + len(drawn))
    if adjust == "holm":
        p_value = _holm(p_value)
    return p_value, summary


def bartlett_factor(refitter: _Refitter, pairs, resamples: int, rng: np.random.Generator) -> tuple[float, int]:
    """Mean of the null LR over ``resamples`` draws from the fit, pooled over pairs; and the usable draws.

    Draw b refits the full model and the constraint of pair b mod P at its value in the fitted model
    (where it holds), so each draw gives one null LR and the pairs take turns.
    """
    fitted = dict(zip(refitter.fit.systems, refitter.fit.effects))
    values = []
    for draw_index in range(resamples):
        a, b = pairs[draw_index % len(pairs)]
        try:
            draw = _draw(refitter, rng)
            refit = _refit_draw(refitter, draw, covariance=False)
            if refit is None:
                continue
            full_nll, fitter, point = refit
            inner = _Refitter.at_optimum(draw, refitter.structure, fitter, point, full_nll)
            constrained = inner.constrained_nll(a, b, fitted[a] - fitted[b])
        except _NUMERICAL:
            continue
        values.append(max(0.0, 2.0 * (constrained - full_nll)))
    return (float(np.mean(values)) if values else float("nan")), len(values)


def likelihood_ratio_tests(judgements: Judgements, fit: ClmmResult, order, structure, resamples: int,
                           rng: np.random.Generator, adjust: str = "none"):
    """Bartlett-corrected likelihood-ratio p-values of every pair (docs/model.md, "Small-sample corrections").

    p = P(chi2_1 > LR / c), c the mean null LR from :func:`bartlett_factor` (``resamples`` draws).
    ``adjust``: 'holm' applies Holm; 'tukey' too (the LR tests have no joint covariance for a studentized
    range), and the summary's text says so.

    Returns
    -------
    p_value : ndarray, shape (n_pairs,)
        NaN where the constrained refit broke down, and for every pair when fewer than
        MIN_USABLE_SHARE of the draws refitted (no factor).
    summary : RefitSummary
    """
    resamples = _check_resamples(resamples)
    pairs = _pairs(fit, order)
    refitter = _Refitter(judgements, fit, structure)
    with single_threaded():
        ratios = _likelihood_ratios(refitter, pairs)
        factor, usable = bartlett_factor(refitter, pairs, resamples, rng)
    summary = RefitSummary(resamples, usable, factor)
    if usable < MIN_USABLE_SHARE * resamples or not factor > 0:
        return np.full(len(pairs), np.nan), summary
    p_value = stats.chi2.sf(ratios / factor, 1)
    if adjust in ("holm", "tukey"):
        p_value = _holm(p_value)
    return p_value, summary


def _holm(p_value: np.ndarray) -> np.ndarray:
    """Holm over the pairs with a p-value (a failed pair stays NaN, outside the family)."""
    adjusted = np.full(len(p_value), np.nan)
    finite = np.isfinite(p_value)
    adjusted[finite] = adjusted_p_values(p_value[finite], "holm")
    return adjusted
