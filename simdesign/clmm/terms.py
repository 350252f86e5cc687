"""Per-observation likelihood pieces of the cumulative logit (values and derivatives in the linear
predictor).

Part of :mod:`simdesign.clmm`; the model and the algorithm are described in that package's docstring.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from simdesign.clmm.prepare import _Problem


# The inner mode search stops at this max |gradient|: far tighter than ordinal's 1e-4, because the
# implicit-function gradient and its finite differences (the Hessian) need an accurate mode.
INNER_GRADIENT_TOLERANCE = 1e-9
INNER_MAX_ITERATIONS = 100


# Chord steps (old Hessian) tried before Newton steps, and the gradient reduction each must achieve.
CHORD_STEPS = 4
CHORD_MIN_REDUCTION = 0.1
# With one random effect per level (random intercepts) a factorisation costs about as much as a pass over the
# judgements, so Newton's quadratic steps pay for their factorisations after a single chord step: on the paper's
# 3 x 100 crossed design 2.4 instead of 3.1 steps per mode search and about 5% less time per fit, log-likelihoods
# within 1e-11 of four chord steps' (issue 41). With q = 5 the factorisation costs several passes, and four win.
CHORD_STEPS_ONE_EFFECT = 1


def chord_steps(q: int) -> int:
    """The chord steps a mode search tries first, for q random effects per level."""
    return CHORD_STEPS_ONE_EFFECT if q == 1 else CHORD_STEPS


class ModeSearchError(RuntimeError):
    """The Newton search for the random-effects mode failed."""


@dataclass
class _ObservationTerms:
    log_prob: np.ndarray
    g: np.ndarray  # d(-log p)/d eta
    w: np.ndarray  # d2(-log p)/d eta2 (>= 0: the logistic cumulative link is log-concave)
    w_prime: np.ndarray | None = None  # d3(-log p)/d eta3
    # Partial derivatives w.r.t. the observation's upper and lower thresholds.
    dl_upper: np.ndarray | None = None
    dl_lower: np.ndarray | None = None
    dg_upper: np.ndarray | None = None
    dg_lower: np.ndarray | None = None
    dw_upper: np.ndarray | None = None
    dw_lower: np.ndarray | None = None


def _observation_terms(problem: _Problem, thresholds: np.ndarray, eta: np.ndarray,
                       third_order: bool = False) -> _ObservationTerms:
    n = len(eta)
    extended = np.concatenate([[-np.inf], thresholds, [np.inf]])
    # Upper and lower threshold arguments side by side: one ufunc call each instead of four.
    arguments = np.concatenate([extended[problem.category + 1], extended[problem.category]]) - np.tile(eta, 2)
    F, G = expit(arguments), expit(-arguments)  # G = 1 - F without cancellation
    with np.errstate(invalid="ignore"):
        # Both arguments large: difference the upper tails instead, to keep small probabilities accurate.
        both_high = (arguments[:n] + arguments[n:]) > 0
    prob = np.where(both_high, G[n:] - G[:n], F[:n] - F[n:])
    if np.any(prob <= 0) or not np.all(np.isfinite(prob)):
        raise ModeSearchError("a category probability underflowed to zero")
    density = F * G
    slope = density * (G - F)  # derivative of the logistic density
    f_up, f_lo = density[:n], density[n:]
    g = (f_up - f_lo) / prob
    d2_over_p = (slope[:n] - slope[n:]) / prob
    w = g * g - d2_over_p
    terms = _ObservationTerms(log_prob=np.log(prob), g=g, w=w)
    if third_order:
        curvature = density * (1.0 - 6.0 * density)  # second derivative of the logistic density
        f1_up, f1_lo, f2_up, f2_lo = slope[:n], slope[n:], curvature[:n], curvature[n:]
        terms.w_prime = (f2_up - f2_lo) / prob + 3.0 * g * w - g ** 3
        terms.dl_upper = -f_up / prob
        terms.dl_lower = f_lo / prob
        terms.dg_upper = (f1_up - g * f_up) / prob
        terms.dg_lower = (g * f_lo - f1_lo) / prob
        terms.dw_upper = 2.0 * g * terms.dg_upper - f2_up / prob + d2_over_p * f_up / prob
        terms.dw_lower = 2.0 * g * terms.dg_lower + f2_lo / prob - d2_over_p * f_lo / prob
    return terms
