"""The analysis contract and registry.

An analysis takes one study's :class:`~simdesign.judgements.Judgements` and
returns a :class:`PairwiseResult`: an estimate, a two-sided p-value and a
status for every pair of systems (i, j), i < j in model order, estimates
oriented i minus j (docs/estimands.md).

Analyses register themselves with :func:`register`; configs name them, and
the engine calls them, only through :data:`ANALYSES`.
"""
from __future__ import annotations

import importlib
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from scipy import stats

from simdesign.judgements import Judgements

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
    """

    estimate: np.ndarray
    p_value: np.ndarray
    status: np.ndarray
    message: str = ""
    fit_status: str | None = None
    fit_seconds: float = float("nan")

    @classmethod
    def failed(cls, n_pairs: int, status: str, message: str) -> "PairwiseResult":
        """Every pair failed with the same status (a failed model fit fails all its pairs)."""
        nan = np.full(n_pairs, np.nan)
        return cls(estimate=nan, p_value=nan.copy(), status=np.full(n_pairs, status, dtype=object),
                   message=message, fit_status=status)


@dataclass(frozen=True)
class AnalysisInfo:
    """A registry entry.

    Attributes
    ----------
    name : str
    function : callable
        ``function(judgements, rng, **options) -> PairwiseResult``.
    options : dict
        Option name -> (allowed values as a tuple, or a validator returning an
        error message or None; default value).
    needs_blocks : bool
        Only meaningful for block designs (the ``*_block`` tests).
    needs : str or None
        External software the analysis needs ('R'), for clear errors up front.
    description : str
    random_effects : bool
        The analysis fits random effects (a mixed model), so a fit can be
        singular and the summary reports its ``singular_rate``.
    """

    name: str
    function: Callable
    options: dict = field(default_factory=dict)
    needs_blocks: bool = False
    needs: str | None = None
    description: str = ""
    verbose: Callable | None = None
    """Optional ``verbose(judgements, **options) -> str``: the full fit output, for ``simdesign replay``."""
    random_effects: bool = False
    chunk_trials: int = 25
    """Trials per chunk the engine uses by default: fewer for slow fits, so that progress shows and an
    interruption loses little."""


ANALYSES: dict[str, AnalysisInfo] = {}
"""Registry: analysis name -> :class:`AnalysisInfo`."""


BACKEND_CHECKS: dict[str, Callable[[], tuple[bool, str]]] = {}
"""External software name (AnalysisInfo.needs) -> check returning (available, how to install)."""


def register(info: AnalysisInfo) -> AnalysisInfo:
    if info.name in ANALYSES:
        raise ValueError(f"analysis {info.name!r} is registered twice")
    ANALYSES[info.name] = info
    return info


def resolve_analysis(name: str) -> AnalysisInfo:
    """The registry entry for ``name``: a registered name, or an importable ``module:attribute``.

    ``module:attribute`` names an :class:`AnalysisInfo` (or a registered
    analysis's name is looked up again after the import, for modules that
    call :func:`register` when imported). Importing by name is what lets a
    fresh process (a loky or Dask worker) find an analysis defined in user
    code; the engine also sends each chunk's entries with the chunk.

    Raises
    ------
    KeyError
        Neither registered nor importable; the message lists the registered names.
    """
    if name in ANALYSES:
        return ANALYSES[name]
    if ":" in name:
        module_name, _, attribute = name.partition(":")
        try:
            found = getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError) as exc:
            raise KeyError(f"analysis {name!r}: cannot import {attribute!r} from {module_name!r} ({exc})") from exc
        if isinstance(found, AnalysisInfo):
            return found
        if name in ANALYSES:
            return ANALYSES[name]
        raise KeyError(f"analysis {name!r}: {module_name}.{attribute} is not an AnalysisInfo")
    raise KeyError(f"unknown analysis {name!r}; registered: {sorted(ANALYSES)} "
                   "(or give an importable 'module:attribute' naming an AnalysisInfo)")


def run_analysis(info: AnalysisInfo, judgements: Judgements, rng: np.random.Generator, options: dict) -> PairwiseResult:
    """Call an analysis, timing it and turning an unexpected exception into an 'error' result.

    An exception inside a fit is data (docs/estimands.md): it becomes a
    failed result with the exception's text, never a p-value.
    """
    n_pairs = judgements.n_systems * (judgements.n_systems - 1) // 2
    start = time.perf_counter()
    try:
        result = info.function(judgements, rng, **options)
    except Exception as exc:  # noqa: BLE001 -- any failure of a fit is recorded, not raised
        result = PairwiseResult.failed(n_pairs, ERROR, f"{type(exc).__name__}: {exc}")
    result.fit_seconds = time.perf_counter() - start
    return result


ADJUSTMENTS = ("none", "holm", "tukey")


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
    pairs = system_pairs(n_systems)
    contrast = np.zeros((len(pairs), n_systems))
    for row, (i, j) in enumerate(pairs):
        contrast[row, i] += 1.0
        contrast[row, j] -= 1.0
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
        p_value = 2.0 * stats.t.sf(np.abs(statistic), df)
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
