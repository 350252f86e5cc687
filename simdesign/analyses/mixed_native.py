"""``clmm_native``: simdesign's own cumulative link mixed model as a registry analysis.

The same model as R's ``ordinal::clmm`` (logit link, Laplace approximation,
docs/model.md), fitted by :func:`simdesign.clmm.fit` in-process with
no R, so power curves of the paper's recommended analysis cost seconds per
trial instead of minutes.
"""
from __future__ import annotations

import numpy as np

from simdesign.analyses.base import (ADJUSTMENTS, FAILURES, AnalysisInfo, PairwiseResult, pairwise_from_fit,
                                     register, system_pairs)
from simdesign.core.judgements import Judgements

STRUCTURES = ("maximal", "intercepts", "paper")
# simdesign.clmm.START_RULES, repeated here so the registry need not import the fitter (a test checks they agree).
STARTS = ("single", "codings")
# In simulations one start (the measured cost and effect of 'codings' on the Figure-5/7 designs: docs/model.md,
# "Starts"); `simdesign analyse` and `simdesign fit`, which fit one real study, use 'codings'.
DEFAULT_STARTS = "single"


def _fit(judgements: Judgements, structure: str, starts: str = DEFAULT_STARTS):
    from simdesign import clmm  # imported on use: the module is large and only this analysis needs it

    return clmm.fit(judgements, structure=structure, reference=judgements.systems[0], starts=starts)


def _fit_details(fit) -> dict:
    """The fit's log-likelihood, structure, status and starts, for a report on one study."""
    return {"loglik": float(fit.loglik), "structure": fit.structure, "terms": list(fit.terms),
            "status": fit.status, "reference": fit.systems[0], "starts": fit.starts,
            "starts_tried": int(fit.starts_tried), "start_kept": fit.start_kept,
            "start_gain": float(fit.start_gain), "starts_text": fit.starts_text}


def _result_from_fit(fit, systems, adjust: str) -> PairwiseResult:
    """The registry result of one fit: pairs in ``systems`` order, through the shared contrast guard."""
    n_pairs = len(system_pairs(len(systems)))
    if fit.status in FAILURES:
        result = PairwiseResult.failed(n_pairs, fit.status, fit.message or fit.optimizer_message)
    else:
        # the fit orders non-reference systems by name; the registry contract uses the model's order
        effects, covariance = fit.effects_in(systems)
        if not np.all(np.isfinite(covariance)):
            result = PairwiseResult.failed(n_pairs, "error", "fixed-effect covariance is not finite "
                                           f"(Hessian condition {fit.hessian_condition:.3g})")
        else:
            result = pairwise_from_fit(effects, covariance, None, adjust, fit.status, fit.message)
    result.fit_details = _fit_details(fit)
    return result


def clmm_native_analysis(judgements: Judgements, rng=None, structure: str = "paper",
                         adjust: str = "none", starts: str = DEFAULT_STARTS) -> PairwiseResult:
    """Fit the CLMM and return pairwise Wald z contrasts in the judgements' system order.

    A fit with status 'not_converged' or 'error' fails all pairs (no p-values);
    'singular' fits keep their p-values and are counted by the summary. A
    pair without a positive finite standard error gets status 'error'
    (:func:`simdesign.analyses.base.pairwise_from_fit`, shared with the R
    backends). ``starts``: the refit rule of :func:`simdesign.clmm.fit`
    ('single' by default here; 'codings' refits a singular or unconverged fit
    from the other reference codings' optima and keeps the best). The result's
    ``fit_details`` hold the log-likelihood, structure, status and starts.
    """
    return _result_from_fit(_fit(judgements, structure, starts), judgements.systems, adjust)


def clmm_native_verbose(judgements: Judgements, structure: str = "paper", adjust: str = "none",
                        starts: str = DEFAULT_STARTS) -> str:
    """The fitted parameters, diagnostics and pairwise contrasts, for ``simdesign replay --verbose``.

    The contrasts are printed as the analysis stores them: pairs (i, j), i < j in
    ``judgements.systems`` (the model's order), estimate beta_i - beta_j.
    """
    fit = _fit(judgements, structure, starts)
    lines = [f"clmm_native, structure {structure}", str(fit.summary())]
    # the same pairs, order and signs as the stored rows: the model's system order, beta_i - beta_j
    table = fit.contrasts(judgements.systems)
    result = _result_from_fit(fit, judgements.systems, adjust)
    if adjust != "none":
        table[f"p_{adjust}"] = result.p_value
    table["status"] = result.status
    lines += [f"pairwise contrasts (model order, estimate = system_a - system_b; p unadjusted"
              f"{'' if adjust == 'none' else f', p_{adjust} as stored'}):", table.to_string(index=False)]
    return "\n".join(lines)


register(AnalysisInfo(
    name="clmm_native", function=clmm_native_analysis,
    options={"structure": (STRUCTURES, "paper"), "adjust": (ADJUSTMENTS, "none"),
             "starts": (STARTS, DEFAULT_STARTS)},
    verbose=clmm_native_verbose, chunk_trials=10, random_effects=True,
    # On rankings it fits reversed ranks as ordered categories 1..S, as the paper analysed its Rank data.
    methods=("likert", "rank"),
    description="simdesign's cumulative link mixed model (same model as ordinal::clmm), pairwise Wald z contrasts"))
