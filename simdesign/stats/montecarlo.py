"""Monte-Carlo estimates over trials (the independent unit): means and rates with their MCSE and intervals.

One copy of each rule for every summary (simulation, replication, panel studies, metric validation):

* :func:`mean_interval`: a mean of per-trial values, MCSE = sd (ddof 1) / sqrt(trials), normal interval;
* :func:`wilson_interval`: a rate's Wilson interval at the effective size its MCSE implies
  (docs/estimands.md);
* :func:`level_verdict`: whether a type I error interval shows a test to hold its level.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from simdesign.core.lazy_scipy import stats  # scipy.stats, imported on first use


@lru_cache(maxsize=64)
def _critical_value(confidence: float) -> float:
    return float(stats.norm.isf((1.0 - confidence) / 2.0))


def wilson_interval(rate: float, mcse: float, trials: int, n_tests: int,
                    confidence: float = 0.95) -> tuple[float, float]:
    """Wilson interval at the effective size implied by the MCSE (docs/estimands.md).

    n_eff = rate (1 - rate) / MCSE^2, clipped to [trials, max(n_tests, trials)]; ``trials`` when
    the MCSE is 0 or undefined. The closed form is written out rather than calling statsmodels'
    ``proportion_confint`` (tests/test_summary.py checks the two agree): the planner computes
    this interval hundreds of times per plan and its guarantee test thousands of times, and
    ``proportion_confint`` evaluates a normal quantile through scipy's generic distribution
    machinery on every call, which made that test take minutes.
    """
    if not math.isfinite(mcse) or mcse <= 0:
        n_eff = float(trials)
    else:
        n_eff = min(max(rate * (1 - rate) / mcse ** 2, float(trials)), float(max(n_tests, trials)))
    crit = _critical_value(confidence)
    crit2 = crit * crit
    denominator = 1.0 + crit2 / n_eff
    centre = (rate + crit2 / (2.0 * n_eff)) / denominator
    half_width = crit * math.sqrt(rate * (1.0 - rate) / n_eff + crit2 / (4.0 * n_eff ** 2)) / denominator
    # At rate 0 (1) the bound is exactly 0 (1); the closed form leaves rounding residue of ~1e-17.
    low = 0.0 if rate <= 0.0 else max(0.0, centre - half_width)
    high = 1.0 if rate >= 1.0 else min(1.0, centre + half_width)
    return low, high


@lru_cache(maxsize=64)
def normal_quantile(confidence: float) -> float:
    """z with P(|Z| <= z) = ``confidence`` for a standard normal Z."""
    return float(stats.norm.ppf(0.5 + confidence / 2))


def mean_interval(values, confidence: float = 0.95) -> tuple[float, float, float, float]:
    """Mean of per-trial values with its MCSE and normal interval (the trial is the unit).

    Parameters
    ----------
    values : array-like
        One finite value per trial.
    confidence : float, default 0.95

    Returns
    -------
    mean, mcse, ci_low, ci_high : float
        MCSE = sd (ddof 1) / sqrt(trials), NaN (and so the interval) with fewer than two trials;
        everything NaN without trials. The interval is mean +- z MCSE.
    """
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        nan = float("nan")
        return nan, nan, nan, nan
    mean = float(values.mean())
    mcse = float(values.std(ddof=1) / np.sqrt(values.size)) if values.size > 1 else float("nan")
    z = normal_quantile(confidence)
    return mean, mcse, mean - z * mcse, mean + z * mcse


MAX_TYPE1_FACTOR = 1.5  # a test may reject a true null at most 1.5 x alpha (the planner's max_type1: auto)


def default_max_type1(alpha: float) -> float:
    """1.5 x alpha, rounded so that 0.05 gives 0.075 exactly (not 0.07500000000000001)."""
    return round(MAX_TYPE1_FACTOR * alpha, 12)


def level_verdict(ci_low: float, ci_high: float, max_type1: float) -> str:
    """'holds' (the type I error interval is at or below ``max_type1``), 'fails' (above it) or 'undecided'.

    Examples
    --------
    >>> level_verdict(0.03, 0.06, 0.075), level_verdict(0.08, 0.12, 0.075), level_verdict(0.06, 0.09, 0.075)
    ('holds', 'fails', 'undecided')
    """
    if ci_high <= max_type1:
        return "holds"
    return "fails" if ci_low > max_type1 else "undecided"
