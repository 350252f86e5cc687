"""``clmm_native``: simdesign's own cumulative link mixed model as a registry analysis.

The same model as R's ``ordinal::clmm`` (logit link, Laplace approximation,
docs/model.md), fitted by :func:`simdesign.clmm.fit` in-process with
no R, so power curves of the paper's recommended analysis cost seconds per
trial instead of minutes.
"""
from __future__ import annotations

import numpy as np

from simdesign.analyses.base import (ADJUSTMENTS, FAILURES, AnalysisInfo, PairwiseResult, register,
                                     system_pairs, wald_contrasts)
from simdesign.judgements import Judgements

STRUCTURES = ("maximal", "intercepts", "paper")


def _fit(judgements: Judgements, structure: str):
    from simdesign import clmm  # imported on use: the module is large and only this analysis needs it

    return clmm.fit(judgements.to_frame(), structure=structure, reference=judgements.systems[0])


def clmm_native_analysis(judgements: Judgements, rng=None, structure: str = "paper",
                         adjust: str = "none") -> PairwiseResult:
    """Fit the CLMM and return pairwise Wald z contrasts in the judgements' system order.

    A fit with status 'not_converged' or 'error' fails all pairs (no p-values);
    'singular' fits keep their p-values and are counted by the summary.
    """
    n_pairs = len(system_pairs(judgements.n_systems))
    fit = _fit(judgements, structure)
    if fit.status in FAILURES:
        return PairwiseResult.failed(n_pairs, fit.status, fit.message or fit.optimizer_message)
    # the fit orders non-reference systems by name; the registry contract uses the model's order
    effects, covariance = fit.effects_in(judgements.systems)
    if not np.all(np.isfinite(covariance)):
        return PairwiseResult.failed(n_pairs, "error", "fixed-effect covariance is not finite "
                                     f"(Hessian condition {fit.hessian_condition:.3g})")
    estimate, _, p_value = wald_contrasts(effects, covariance, adjust=adjust)
    return PairwiseResult(estimate=estimate, p_value=p_value, status=np.full(n_pairs, fit.status, dtype=object),
                          message=fit.message, fit_status=fit.status)


def clmm_native_verbose(judgements: Judgements, structure: str = "paper", adjust: str = "none") -> str:
    """The fitted parameters and diagnostics, for ``simdesign replay --verbose``."""
    fit = _fit(judgements, structure)
    lines = [f"clmm_native, structure {structure} (terms: {', '.join(fit.terms) or 'none'}), {fit.n_obs} judgements",
             f"status {fit.status}; converged {fit.converged}; log-likelihood {fit.loglik:.6f}; "
             f"max gradient {fit.max_gradient:.3g}; Hessian condition {fit.hessian_condition:.3g}; "
             f"{fit.seconds:.2f} s", f"message: {fit.message or '-'}",
             "thresholds: " + ", ".join(f"{t:.4f}" for t in fit.thresholds),
             "fixed effects: " + ", ".join(f"{s}={b:+.4f}" for s, b in fit.fixed_effects.items())]
    for term, cov in fit.random_effects_cov.items():
        lines.append(f"{term} random-effect SDs: " + ", ".join(f"{v:.4f}" for v in np.sqrt(np.diag(cov)))
                     + f"; boundary {np.asarray(fit.boundary.get(term, [])).astype(int).tolist()}")
    lines.append(fit.contrasts().to_string(index=False))
    return "\n".join(lines)


register(AnalysisInfo(
    name="clmm_native", function=clmm_native_analysis,
    options={"structure": (STRUCTURES, "paper"), "adjust": (ADJUSTMENTS, "none")},
    verbose=clmm_native_verbose, chunk_trials=10,
    description="simdesign's cumulative link mixed model (same model as ordinal::clmm), pairwise Wald z contrasts"))
