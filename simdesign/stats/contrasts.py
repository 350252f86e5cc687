"""Shared statistics of pairwise comparisons: statuses, the system pairs, Wald contrasts, the singular rule.

A neutral module with no simulation and no registry in it, so that the native CLMM (:mod:`simdesign.clmm`)
and every analysis (:mod:`simdesign.significance`) use one copy of each rule without importing each other.
Definitions: docs/estimands.md.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simdesign.core.lazy_scipy import stats  # scipy.stats, imported on first use

# Per-pair and per-fit status values (docs/estimands.md, "Statuses and failures").
OK, SINGULAR, NOT_CONVERGED, ERROR, DEGENERATE = "ok", "singular", "not_converged", "error", "degenerate"
FAILURES = frozenset({NOT_CONVERGED, ERROR, DEGENERATE})

# lme4's isSingular default: a diagonal element of the relative Cholesky factor below this is a boundary fit.
SINGULAR_TOLERANCE = 1e-4


def system_pairs(n_systems: int) -> list[tuple[int, int]]:
    """All (i, j) with i < j, in the order every output uses."""
    return [(i, j) for i in range(n_systems) for j in range(i + 1, n_systems)]


@dataclass
class PairwiseResult:
    """One analysis of one study.

    Attributes
    ----------
    estimate, p_value : ndarray of float, shape (n_pairs,)
        NaN where the pair failed.
    status : ndarray of str, shape (n_pairs,)
        'ok' or 'singular' (p-value used), or a failure: 'not_converged',
        'error', 'degenerate' (no p-value).
    message : str
        Why a fit failed or was singular ('' when all is well).
    fit_status : str or None
        Status of the single model fit behind all pairs (mixed models); None
        for tests that work pair by pair.
    fit_seconds : float
        Wall time of the analysis (filled in by :func:`run_analysis`).
    fit_details : dict or None
        What a report on one study shows of the model fit behind the pairs
        (``clmm_native``: log-likelihood, structure, status, starts); None for
        other analyses. Not stored by simulations.
    """

    estimate: np.ndarray
    p_value: np.ndarray
    status: np.ndarray
    message: str = ""
    fit_status: str | None = None
    fit_seconds: float = float("nan")
    fit_details: dict | None = None

    @classmethod
    def failed(cls, n_pairs: int, status: str, message: str) -> "PairwiseResult":
        """Every pair failed with the same status (a failed model fit fails all its pairs)."""
        nan = np.full(n_pairs, np.nan)
        return cls(estimate=nan, p_value=nan.copy(), status=np.full(n_pairs, status, dtype=object),
                   message=message, fit_status=status)


ADJUSTMENTS = ("none", "holm", "tukey")
_CONTRASTS: dict = {}


def pair_contrasts(n_systems: int) -> np.ndarray:
    """Rows ``e_i - e_j`` over the systems, one per pair of :func:`system_pairs` (read-only, made once per
    number of systems)."""
    found = _CONTRASTS.get(n_systems)
    if found is None:
        pairs = system_pairs(n_systems)
        found = np.zeros((len(pairs), n_systems))
        for row, (i, j) in enumerate(pairs):
            found[row, i] += 1.0
            found[row, j] -= 1.0
        found.flags.writeable = False
        found = _CONTRASTS.setdefault(n_systems, found)
    return found


def t_upper_tail(x: np.ndarray, df) -> np.ndarray:
    """``scipy.stats.t.sf(x, df)`` for an array ``x``, the same numbers without its argument machinery (a
    tenth of the time: it is called once per study): ``stdtr(df, -x)``, which ``t.sf`` evaluates, NaN where
    ``df`` is not positive or ``x`` is NaN, 0 at ``x = inf`` (outside ``t``'s open support), as ``t.sf``."""
    from scipy import special

    x = np.asarray(x, dtype=float)
    df = np.asarray(df, dtype=float)
    with np.errstate(invalid="ignore"):
        valid = df > 0
        out = special.stdtr(np.where(valid, df, 1.0), -x)
    out = np.where(np.isinf(x), np.where(x > 0, 0.0, 1.0), out)
    return np.where(valid & ~np.isnan(x), out, np.nan)


def wald_contrasts(effects: np.ndarray, covariance: np.ndarray, df: float | np.ndarray | None = None,
                   adjust: str = "none") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairwise Wald contrasts beta_i - beta_j for all system pairs.

    Parameters
    ----------
    effects : ndarray, shape (S,)
        Fixed effects with the reference's 0 first.
    covariance : ndarray, shape (S-1, S-1)
        Covariance of the non-reference effects.
    df : float or array, optional
        Degrees of freedom per pair for t tests (lmer, Satterthwaite);
        None gives z tests (clmm, as emmeans' asymptotic contrasts).
    adjust : {'none', 'holm', 'tukey'}
        Multiplicity adjustment over the S(S-1)/2 pairs. Tukey uses the
        studentized range with S means, as emmeans does.

    Returns
    -------
    estimate, se, p_value : ndarray, shape (n_pairs,)
    """
    n_systems = len(effects)
    full_cov = np.zeros((n_systems, n_systems))
    full_cov[1:, 1:] = covariance
    contrast = pair_contrasts(n_systems)
    estimate = contrast @ effects
    variance = np.einsum("pi,ij,pj->p", contrast, full_cov, contrast)
    se = np.sqrt(np.clip(variance, 0.0, None))
    with np.errstate(divide="ignore", invalid="ignore"):
        statistic = estimate / se
    if adjust == "tukey":
        tukey_df = np.inf if df is None else float(np.min(df))
        p_value = stats.studentized_range.sf(np.abs(statistic) * np.sqrt(2.0), n_systems,
                                             tukey_df if np.isfinite(tukey_df) else 1e6)
    elif df is None:
        p_value = 2.0 * stats.norm.sf(np.abs(statistic))
    else:
        p_value = 2.0 * t_upper_tail(np.abs(statistic), df)
    if adjust == "holm":
        from statsmodels.stats.multitest import multipletests
        p_value = multipletests(p_value, method="holm")[1]
    elif adjust not in ("none", "tukey"):
        raise ValueError(f"adjust must be one of {ADJUSTMENTS}; got {adjust!r}")
    return estimate, se, np.minimum(p_value, 1.0)


def pairwise_from_fit(effects: np.ndarray, covariance: np.ndarray, df=None, adjust: str = "none",
                      status: str = OK, message: str = "") -> PairwiseResult:
    """Pairwise Wald contrasts of a model fit that produced estimates (status 'ok' or 'singular').

    The one place where every model-based analysis (``clmm``, ``lmer``,
    ``clm``, ``clmm_native``) turns fixed effects into per-pair results, so
    that they share one rule: a pair whose standard error is not a positive
    finite number, or whose p-value is not finite, has no test. It gets
    status 'error' on its own, NaN estimate and p-value, and the message
    says how many pairs. A zero standard error would otherwise give
    z = +-inf and p = 0, a rejection reported as 'ok'.

    Parameters
    ----------
    effects : ndarray, shape (S,)
        Fixed effects in the model's system order, the reference's 0 first.
    covariance : ndarray, shape (S-1, S-1)
        Covariance of ``effects[1:]``.
    df : float or ndarray, optional
        Degrees of freedom per pair (t tests); None for z tests.
    adjust : {'none', 'holm', 'tukey'}
    status : str
        The fit's status, given to every pair that has a test.
    message : str
        The fit's message; the note on undefined pairs is appended.

    Returns
    -------
    PairwiseResult
        ``fit_status`` is ``status``.
    """
    estimate, se, p_value = wald_contrasts(effects, covariance, df=df, adjust=adjust)
    pair_status = np.full(len(estimate), status, dtype=object)
    undefined = ~(np.isfinite(se) & (se > 0) & np.isfinite(p_value))
    if undefined.any():
        pair_status[undefined] = ERROR
        estimate = np.where(undefined, np.nan, estimate)
        p_value = np.where(undefined, np.nan, p_value)
        note = f"{int(undefined.sum())} contrast(s) have no finite positive standard error"
        message = f"{message}; {note}" if message else note
    return PairwiseResult(estimate=estimate, p_value=p_value, status=pair_status, message=message,
                          fit_status=status)


def relative_cholesky_is_singular(covariance: np.ndarray, residual_variance: float = 1.0,
                                  tolerance: float = SINGULAR_TOLERANCE) -> bool:
    """lme4's isSingular rule, from a returned random-effects covariance matrix.

    The relative covariance factor is the Cholesky factor of the covariance
    divided by the residual variance (pi^2/3 is *not* used for ordinal
    models: ordinal's own convention is residual variance 1 on the latent
    scale, and lme4 uses sigma^2). A pivoted decomposition handles singular
    matrices: a diagonal element below ``tolerance`` means a boundary fit.
    """
    relative = np.asarray(covariance, float) / residual_variance
    n = relative.shape[0]
    # Cholesky without pivoting that tolerates PSD matrices: a zero pivot gives a zero column.
    lower = np.zeros_like(relative)
    for col in range(n):
        pivot = relative[col, col] - lower[col, :col] @ lower[col, :col]
        if pivot <= tolerance ** 2:
            lower[col, col] = np.sqrt(max(pivot, 0.0))
            continue
        lower[col, col] = np.sqrt(pivot)
        lower[col + 1:, col] = (relative[col + 1:, col] - lower[col + 1:, :col] @ lower[col, :col]) / lower[col, col]
    return bool(np.any(np.diag(lower) < tolerance))
