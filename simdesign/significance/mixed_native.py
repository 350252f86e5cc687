"""``clmm_native``: simdesign's own cumulative link mixed model as a registry analysis.

The same model as R's ``ordinal::clmm`` (logit link, Laplace approximation,
docs/model.md), fitted by :func:`simdesign.clmm.fit` in-process with
no R, so power curves of the paper's recommended analysis cost seconds per
trial instead of minutes.
"""
from __future__ import annotations

import numpy as np

from simdesign.significance.base import (ADJUSTMENTS, FAILURES, AnalysisInfo, PairwiseResult, pairwise_from_fit,
                                         register, system_pairs)
from simdesign.core.checks import is_integer
from simdesign.core.judgements import Judgements
from simdesign.core.seeds import helper_rng

STRUCTURES = ("maximal", "intercepts", "paper")
# Reference distributions of the contrasts (docs/model.md, "Small-sample corrections"); the same list as
# simdesign.clmm.small_sample.DF_RULES, which is not imported here so that registering stays cheap.
DF_RULES = ("z", "design", "satterthwaite")
# The default: the only rule measured to hold 0.075 at every design of the Figure-4 grid, both tasks
# (figures/small_sample_fig4_{coherence,repetition}.csv, docs/model.md); Wald z rejects a true null in 15-17% of tests with 3 crossed annotators.
DEFAULT_DF = "design"
# The test of each pair (docs/model.md, "Small-sample corrections"): the Wald statistic against the reference
# `df` names, or a test that refits the model: the likelihood ratio with a parametric-bootstrap Bartlett factor
# ('lrt') or the parametric bootstrap-t ('bootstrap'); simdesign.clmm.refits.REFIT_TESTS plus 'wald' (a test
# checks they agree). The refitting tests draw `resamples` data sets from the fit.
TESTS = ("wald", "lrt", "bootstrap")
# A bootstrap p-value (1 + k) / (1 + B) is significant when below alpha (simdesign's rule, p < alpha): with
# B = 200 that is k <= 9 exceedances, 10 of the 201 ranks, a level of 0.0498 were T and its draws exchangeable
# (B = 199 would give 9 of 200, 0.045). A p-value near 0.05 then has a Monte-Carlo standard error of
# sqrt(0.05 * 0.95 / 200) = 0.015; one real study refits 200 times in a minute or two.
DEFAULT_RESAMPLES = 200
# simdesign.clmm.START_RULES, repeated here so the registry need not import the fitter (a test checks they agree).
STARTS = ("single", "codings")
# In simulations one start (the measured cost and effect of 'codings' on the Figure-5/7 designs: docs/model.md,
# "Starts"); `simdesign analyse` and `simdesign fit`, which fit one real study, use 'codings'.
DEFAULT_STARTS = "single"


def _fit(judgements: Judgements, structure: str, starts: str = DEFAULT_STARTS):
    """The study's fit, made once per study, structure and start rule: tests of one trial that differ only
    in ``df`` or ``adjust`` share it (Judgements.derived), so listing several costs one fit."""
    from simdesign import clmm  # imported on use: the module is large and only this analysis needs it

    def compute(study):
        return clmm.fit(study, structure=structure, reference=study.systems[0], starts=starts)

    if isinstance(judgements, Judgements):
        key = ("clmm_native_fit", structure) + (() if starts == DEFAULT_STARTS else (starts,))
        return judgements.derived(key, compute)
    return compute(judgements)


def _fit_details(fit) -> dict:
    """The fit's log-likelihood, structure, status and starts, for a report on one study."""
    return {"loglik": float(fit.loglik), "structure": fit.structure, "terms": list(fit.terms),
            "status": fit.status, "reference": fit.systems[0], "starts": fit.starts,
            "starts_tried": int(fit.starts_tried), "start_kept": fit.start_kept,
            "start_gain": float(fit.start_gain), "starts_text": fit.starts_text}


def _df_of_fit(judgements: Judgements, structure: str, df: str):
    """``fit -> per-pair df`` (judgements' system order) of the t reference ``df`` names; None for 'z'."""
    if df == "z":
        return None
    from simdesign.clmm import small_sample  # imported on use, as the fit

    rule = {"design": small_sample.containment_df, "satterthwaite": small_sample.satterthwaite_df}[df]
    return lambda fit: rule(judgements, fit, judgements.systems, structure)


def _result_from_fit(fit, systems, adjust: str, df_of_fit=None) -> PairwiseResult:
    """The registry result of one fit: pairs in ``systems`` order, through the shared contrast guard.

    ``df_of_fit(fit)``: per-pair degrees of freedom of a t reference (asked only of a usable fit), or
    None for the z test.
    """
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
            df = None if df_of_fit is None else df_of_fit(fit)
            # a pair whose df could not be found has no p-value: pairwise_from_fit gives it status 'error'
            result = pairwise_from_fit(effects, covariance, df, adjust, fit.status, fit.message)
    result.fit_details = _fit_details(fit)
    return result


def _refit_result(fit, judgements: Judgements, structure: str, adjust: str, test: str, resamples: int,
                  rng) -> PairwiseResult:
    """The registry result of a refitting test ('lrt' or 'bootstrap') on a usable fit."""
    from simdesign.clmm import refits  # imported on use, as the fit

    n_pairs = len(system_pairs(judgements.n_systems))
    if rng is None:
        # only a direct call without a generator (the engine and analyse pass one): a fixed stream, reproducible
        rng = helper_rng("mixed_native/refits")
    run = refits.likelihood_ratio_tests if test == "lrt" else refits.bootstrap_t_tests
    p_value, summary = run(judgements, fit, judgements.systems, structure, resamples, rng, adjust)
    effects, _ = fit.effects_in(judgements.systems)
    estimate = np.array([effects[i] - effects[j] for i, j in system_pairs(len(effects))])
    message = "; ".join(part for part in (fit.message, summary.text()) if part)
    if test == "lrt" and adjust == "tukey":
        message += "; holm (tukey needs the joint covariance of Wald contrasts)"
    if not np.isfinite(p_value).any():
        result = PairwiseResult.failed(n_pairs, "error", f"too few usable refits: {message}")
    else:
        status = np.where(np.isfinite(p_value), fit.status, "error").astype(object)
        result = PairwiseResult(estimate=np.where(np.isfinite(p_value), estimate, np.nan), p_value=p_value,
                                status=status, message=message, fit_status=fit.status)
    return result


def clmm_native_analysis(judgements: Judgements, rng=None, structure: str = "paper",
                         adjust: str = "none", df: str = DEFAULT_DF,
                         starts: str = DEFAULT_STARTS, test: str = "wald",
                         resamples: int = DEFAULT_RESAMPLES) -> PairwiseResult:
    """Fit the CLMM and return pairwise Wald contrasts in the judgements' system order.

    ``df`` chooses the reference distribution of the Wald statistic: a t with per-pair degrees of
    freedom from the design ('design', the default) or from the fit ('satterthwaite'), or the standard
    normal ('z', the default until issue 30, as emmeans for ordinal::clmm); docs/model.md,
    "Small-sample corrections". A fit with status 'not_converged'
    or 'error' fails all pairs (no p-values); 'singular' fits keep their p-values and are counted
    by the summary. A pair without a positive finite standard error, or without finite df, gets
    status 'error' (:func:`simdesign.significance.base.pairwise_from_fit`, shared with the R backends).
    Tests of one study that differ only in ``df`` or ``adjust`` share one fit, so the analysis time
    of all but the first is the df computation alone. ``starts``: the refit rule of
    :func:`simdesign.clmm.fit` ('single' by default here; 'codings' refits a singular or unconverged fit
    from the other reference codings' optima and keeps the best). The result's ``fit_details`` hold the
    log-likelihood, structure, status and starts.

    ``test`` 'lrt' (likelihood ratio, Bartlett factor from ``resamples`` parametric-bootstrap draws) or
    'bootstrap' (parametric bootstrap-t with ``resamples`` draws) refits the model (docs/model.md,
    "Small-sample corrections"; :mod:`simdesign.clmm.refits`); ``df`` is then unused. Their draws come
    from ``rng``, so a run is reproducible from its seed; they share the study's unconstrained fit.
    """
    fit = _fit(judgements, structure, starts)
    if test == "wald" or fit.status in FAILURES:
        result = _result_from_fit(fit, judgements.systems, adjust, _df_of_fit(judgements, structure, df))
    else:
        result = _refit_result(fit, judgements, structure, adjust, test, resamples, rng)
        result.fit_details = _fit_details(fit)
    return result


def clmm_native_verbose(judgements: Judgements, structure: str = "paper", adjust: str = "none",
                        df: str = DEFAULT_DF, starts: str = DEFAULT_STARTS, test: str = "wald",
                        resamples: int = DEFAULT_RESAMPLES) -> str:
    """The fitted parameters, diagnostics and pairwise contrasts, for ``simdesign replay --verbose``.

    The contrasts are printed as the analysis stores them: pairs (i, j), i < j in
    ``judgements.systems`` (the model's order), estimate beta_i - beta_j.
    """
    fit = _fit(judgements, structure, starts)
    lines = [f"clmm_native, structure {structure}", str(fit.summary())]
    # the same pairs, order and signs as the stored rows: the model's system order, beta_i - beta_j
    table = fit.contrasts(judgements.systems)
    df_of_fit = _df_of_fit(judgements, structure, df)
    result = _result_from_fit(fit, judgements.systems, adjust, df_of_fit)
    stored = [] if df == "z" else [f"t with {df} df"]
    if df_of_fit is not None and fit.status not in FAILURES:
        table[f"df_{df}"] = df_of_fit(fit)
    if adjust != "none":
        stored.append(adjust)
    if stored:
        table["p_stored"] = result.p_value
    table["status"] = result.status
    if test != "wald":
        # the refitting tests' draws come from the trial's generator, which replay does not rebuild here
        stored = [f"{test} with {resamples} parametric-bootstrap refits (not recomputed here; "
                  "p_stored is the Wald statistic's)"] + stored[1:] if stored else [f"{test}: not recomputed"]
    lines += [f"pairwise contrasts (model order, estimate = system_a - system_b; p: z, unadjusted"
              f"{'; p_stored: ' + ', '.join(stored) + ', as stored' if stored else ''}):",
              table.to_string(index=False)]
    return "\n".join(lines)


def _positive_int(value) -> str | None:
    if not is_integer(value, 1):
        return f"must be a positive integer (parametric-bootstrap draws); got {value!r}"
    return None


register(AnalysisInfo(
    name="clmm_native", function=clmm_native_analysis,
    options={"structure": (STRUCTURES, "paper"), "adjust": (ADJUSTMENTS, "none"), "df": (DF_RULES, DEFAULT_DF),
             "starts": (STARTS, DEFAULT_STARTS), "test": (TESTS, "wald"),
             "resamples": (_positive_int, DEFAULT_RESAMPLES)},
    # stores written before the option existed hold Wald z results: only a test with df z may resume them
    former_defaults={"df": "z"},
    verbose=clmm_native_verbose, chunk_trials=10, random_effects=True,
    # the likelihood is a sum over the judgements there are: unbalanced data need nothing else
    needs_complete=False,
    # On rankings it fits reversed ranks as ordered categories 1..S, as the paper analysed its Rank data.
    takes_rankings=True,
    description="simdesign's cumulative link mixed model (same model as ordinal::clmm), pairwise Wald contrasts "
                "(t with containment df by default; Satterthwaite df or z: option df); or refitting tests (option "
                "test: lrt, a Bartlett-corrected likelihood ratio; bootstrap, a parametric bootstrap-t)"))
