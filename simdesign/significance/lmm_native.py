"""``lmm_native``: simdesign's own linear mixed model of the scores as a registry analysis.

The model of ``lmer`` (:mod:`simdesign.significance.mixed_r`: the scores as interval data,
``score ~ system + (1 + system | annotator) + (1 + system | document)`` and the same structures), fitted
by :func:`simdesign.lmm.fit` in-process with no R, with lmerTest's Satterthwaite df, pbkrtest's
Kenward-Roger df and adjusted covariance, or a z reference (docs/model.md, "lmm_native").
"""
from __future__ import annotations

import numpy as np

from simdesign.significance.base import (ADJUSTMENTS, FAILURES, NOT_CONVERGED, AnalysisInfo, PairwiseResult,
                                         pairwise_from_fit, register, system_pairs)
from simdesign.core.judgements import Judgements

STRUCTURES = ("maximal", "intercepts", "paper")
# Reference distributions of the contrasts: lmerTest's Satterthwaite df (the default, as lmer), Kenward-Roger
# df with its adjusted covariance (as lmer with df: kr), or the standard normal. simdesign.lmm.DF_RULES.
DF_RULES = ("satterthwaite", "kr", "z")
DEFAULT_DF = "satterthwaite"
ESTIMATIONS = ("reml", "ml")
# The test of each pair: the Wald t (or z) statistic against the reference `df` names, or the likelihood ratio
# of ML fits with and without the pair's constraint against chi-square(1) ('lrt'; `df` and `estimation` unused).
TESTS = ("wald", "lrt")


def _fit(judgements: Judgements, structure: str, estimation: str):
    """The study's fit, made once per study, structure and estimation: tests that differ only in ``df`` or
    ``adjust`` share it (Judgements.derived)."""
    from simdesign import lmm  # imported on use, as clmm_native's fitter

    def compute(study):
        return lmm.fit(study, structure=structure, reml=estimation == "reml")

    if isinstance(judgements, Judgements):
        return judgements.derived(("lmm_native_fit", structure, estimation), compute)
    return compute(judgements)


_ROWS: dict = {}


def _contrast_rows(n_systems: int) -> np.ndarray:
    """Rows over the fixed effects (intercept, one per non-reference system) of every pair's difference
    (read-only: made once per number of systems)."""
    rows = _ROWS.get(n_systems)
    if rows is None:
        pairs = system_pairs(n_systems)
        rows = np.zeros((len(pairs), n_systems))
        for k, (i, j) in enumerate(pairs):
            if i > 0:  # column 0 is the intercept, the reference's level: the reference adds no column
                rows[k, i] += 1.0
            rows[k, j] -= 1.0
        rows.flags.writeable = False
        rows = _ROWS.setdefault(n_systems, rows)
    return rows


def _fit_details(fit) -> dict:
    return {"loglik": float(fit.loglik), "deviance": float(fit.deviance), "reml": fit.reml,
            "structure": fit.structure, "terms": list(fit.terms), "status": fit.status,
            "theta": [float(v) for v in fit.theta], "sigma": float(fit.sigma)}


def _tested(fit, df: str) -> tuple:
    """(covariance of all fixed effects used for T, per-pair df or None, status, message) of a usable fit."""
    from simdesign.lmm import small_sample  # imported on use

    rows = _contrast_rows(len(fit.systems))
    if df == "z":
        return fit.covariance, None, fit.status, fit.message
    if df == "kr":
        if not fit.reml:
            raise ValueError("Kenward-Roger df need a REML fit (estimation: reml)")
        kr = small_sample.kenward_roger(fit.problem, fit.theta, fit.sigma, fit.covariance)
        return kr.adjusted, kr.df(rows), fit.status, fit.message
    if fit.structured is not None:  # a fast path (simdesign.lmm.structured, simdesign.lmm.slopes)
        pair_df, note = fit.structured.satterthwaite(fit.sigma, fit.covariance, rows)
    else:
        hessian, jacobian = small_sample.satterthwaite_parts(fit.problem, fit.theta, fit.sigma, fit.reml)
        pair_df, note = small_sample.satterthwaite_df(hessian, jacobian, fit.covariance, rows)
    # lmer's rule (mixed_r.lmer_fit_status): lmerTest's warnings about the Hessian of the variance parameters
    # mention convergence, and a fit with such a warning has not converged, at a boundary fit too
    status = NOT_CONVERGED if note else fit.status
    message = "; ".join(part for part in (fit.message, note) if part)
    return fit.covariance, pair_df, status, message


def _lrt_result(judgements: Judgements, structure: str, adjust: str) -> PairwiseResult:
    """Likelihood-ratio tests of every pair from ML fits (simdesign.lmm.fitting.likelihood_ratios)."""
    from scipy.stats import chi2
    from statsmodels.stats.multitest import multipletests

    from simdesign.lmm.fitting import likelihood_ratios

    n_pairs = len(system_pairs(judgements.n_systems))
    fit = _fit(judgements, structure, "ml")
    if fit.status in FAILURES:
        result = PairwiseResult.failed(n_pairs, fit.status, fit.message)
    else:
        rows = _contrast_rows(len(fit.systems))
        p_value = chi2.sf(likelihood_ratios(fit, rows), 1)
        message = fit.message
        if adjust != "none":  # Tukey needs a joint distribution of Wald statistics: Holm for both
            p_value = multipletests(p_value, method="holm")[1]
            message = "; ".join(part for part in (message, "holm" if adjust == "tukey" else "") if part)
        result = PairwiseResult(estimate=rows @ fit.beta, p_value=p_value,
                                status=np.full(n_pairs, fit.status, dtype=object), message=message,
                                fit_status=fit.status)
    result.fit_details = _fit_details(fit)
    return result


def lmm_native_analysis(judgements: Judgements, rng=None, structure: str = "paper", adjust: str = "none",
                        df: str = DEFAULT_DF, estimation: str = "reml", test: str = "wald") -> PairwiseResult:
    """Fit the linear mixed model and return pairwise t (or z) contrasts in the judgements' system order.

    ``df``: 'satterthwaite' (lmerTest's), 'kr' (Kenward-Roger: pbkrtest's adjusted covariance gives T and
    its df; REML only) or 'z'. A fit with status 'not_converged' or 'error' fails all pairs (no p-values);
    'singular' fits keep their p-values, as lme4's. With 'satterthwaite', a Hessian of the variance
    parameters with a negative or near-zero eigenvalue makes the fit 'not_converged', lmerTest's warning
    and lmer's rule. Tests of one study that differ only in ``df`` or ``adjust`` share one fit.

    ``test='lrt'``: per pair, twice the log-likelihood ratio of ML fits without and with the pair's
    constraint against chi-square(1) (``df`` and ``estimation`` unused; ``adjust: tukey`` gives Holm).
    """
    if test == "lrt":
        return _lrt_result(judgements, structure, adjust)
    n_pairs = len(system_pairs(judgements.n_systems))
    fit = _fit(judgements, structure, estimation)
    if fit.status in FAILURES:
        result = PairwiseResult.failed(n_pairs, fit.status, fit.message)
    else:
        covariance, pair_df, status, message = _tested(fit, df)
        if status in FAILURES:
            result = PairwiseResult.failed(n_pairs, status, message)
        elif not np.all(np.isfinite(covariance)):
            result = PairwiseResult.failed(n_pairs, "error", "fixed-effect covariance is not finite")
        else:
            effects = np.concatenate([[0.0], fit.beta[1:]])
            result = pairwise_from_fit(effects, covariance[1:, 1:], pair_df, adjust, status, message)
    result.fit_details = _fit_details(fit)
    return result


def lmm_native_verbose(judgements: Judgements, structure: str = "paper", adjust: str = "none",
                       df: str = DEFAULT_DF, estimation: str = "reml", test: str = "wald") -> str:
    """The fit and the pairwise contrasts as stored, for ``simdesign replay --verbose``."""
    fit = _fit(judgements, structure, "ml" if test == "lrt" else estimation)
    result = lmm_native_analysis(judgements, None, structure, adjust, df, estimation, test)
    lines = [f"lmm_native, structure {fit.structure} ({', '.join(fit.terms)}), "
             f"{'REML criterion' if fit.reml else 'deviance'} {fit.deviance:.6f}, sigma {fit.sigma:.6g}, "
             f"status {result.fit_status}" + (f" ({result.message})" if result.message else ""),
             "fixed effects: " + ", ".join(f"{name} {value:.6g}" for name, value in zip(
                 ("(Intercept)",) + tuple(fit.systems[1:]), fit.beta)),
             f"pairwise contrasts (model order, estimate = system_a - system_b; "
             f"{'likelihood ratio' if test == 'lrt' else 'df ' + df}, adjust {adjust}):"]
    for (i, j), estimate, p_value, status in zip(system_pairs(len(fit.systems)), result.estimate,
                                                  result.p_value, result.status):
        lines.append(f"  {fit.systems[i] + ' - ' + fit.systems[j]:<36} {estimate:>9.4f} {p_value:>10.4g}  {status}")
    return "\n".join(lines)


register(AnalysisInfo(
    name="lmm_native", function=lmm_native_analysis,
    options={"structure": (STRUCTURES, "paper"), "adjust": (ADJUSTMENTS, "none"), "df": (DF_RULES, DEFAULT_DF),
             "estimation": (ESTIMATIONS, "reml"), "test": (TESTS, "wald")},
    verbose=lmm_native_verbose, chunk_trials=10, random_effects=True, uses_rng=False,
    # the likelihood is a sum over the judgements there are: unbalanced data need nothing else
    needs_complete=False,
    description="simdesign's linear mixed model of the scores (same model as lme4::lmer), pairwise t contrasts "
                "with Satterthwaite df (lmerTest; default), Kenward-Roger df and covariance (df: kr) or z; or "
                "likelihood-ratio tests of ML fits (test: lrt)"))
