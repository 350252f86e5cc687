"""bt_mixed: the Bradley-Terry model with annotator and document random effects (simdesign/significance/preferences_r.py).

What is checked, and with which tolerance:

* the multiple-membership fit is lme4's (ordinal's) own formula model with tied variances, on a block study and on
  a sparse battle log (more effects than comparisons: glmer's frame padded, clmm's terms resized): the model
  ``(0 + x_1 | annotator) + ... + (0 + x_S | document)`` built here from its formula, on data built here, has at
  the wrapper's estimates (its variances tied) the wrapper's Laplace deviance to 1e-4 (lme4's penalised
  iterations start from the last conditional modes, so a deviance evaluated twice differs around 1e-5 on ~500),
  and maximised here with a generic optimiser (bobyqa for glmer's objective, nlminb for clmm's), tied, the same
  fixed effects to 1e-3 for glmer (bobyqa's stopping rule on a flat optimum: 2e-4 measured, under 1% of a
  standard error) and 1e-4 for clmm (1.5e-5 measured);
* ``structure: independent``, a plain formula: the wrapper's fixed effects and covariance equal a direct glmer
  call to 1e-6 (the same optimiser on the same data);
* with no random effects in the data the fitted variances go to the boundary and the fixed effects are the plain
  Bradley-Terry MLE with ties as half wins (:func:`simdesign.stats.preferences.bradley_terry`): at zero variance
  glmer's Laplace objective is the half-win log-likelihood exactly (plus a constant), so only the optimisers'
  stopping rules separate them (6e-7 measured; 1e-5 allowed); a positive fitted variance widens the allowance by
  twice the conditional/marginal attenuation of a logistic model with a normal random part of that variance
  (Zeger, Liang & Albert 1988: sqrt(1 + 0.346 V), V = 2 sigma_A^2 + 2 sigma_D^2);
* statuses: failed fits never give p-values (no R needed);
* the committed type I table (figures/pairwise_bt_mixed_type1.csv) holds its designs and the planner's verdicts.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from simdesign.significance.base import ERROR, NOT_CONVERGED, OK, SINGULAR, system_pairs
from simdesign.significance.preferences_r import bt_mixed, bt_mixed_result, fit_bt_mixed, r_formula
from simdesign.core.designs import BattleDesign, BlockDesign
from simdesign.methods import all_methods
from simdesign.model import load_model
from simdesign.stats.preferences import bradley_terry

R_MARKS = [pytest.mark.needs_r, pytest.mark.slow]

# The tied-variance model built from lme4's and ordinal's formulas: its objective at given values, and its optimum.
DIRECT_R = r"""
function(first, second, wins, annotator, document, n_systems, ties, beta, tau, variances, variance_names,
         independent) {
  S <- n_systems
  x <- outer(first, seq_len(S), "==") * 1 - outer(second, seq_len(S), "==") * 1
  colnames(x) <- paste0("x", seq_len(S))
  frame <- data.frame(x, wins = wins, losses = 2L - wins, half = 0.5,
                      verdict = factor(c("second", "tie", "first")[wins + 1L], levels = c("second", "tie", "first"),
                                       ordered = TRUE),
                      annotator = factor(annotator), document = factor(document))
  random <- paste(c(sprintf("(0 + x%d | annotator)", seq_len(S)), sprintf("(0 + x%d | document)", seq_len(S))),
                  collapse = " + ")
  fixed <- paste0("x", 2:S, collapse = " + ")
  sd_of <- stats::setNames(sqrt(variances), sub("_system$", "", variance_names))
  if (ties == "half") {
    formula <- stats::as.formula(paste("cbind(wins, losses) ~ 0 +", fixed, "+", random))
    objective <- lme4::glmer(formula, data = frame, family = stats::binomial, weights = half, devFunOnly = TRUE)
    groups <- names(lme4::glFormula(formula, data = frame, family = stats::binomial, weights = half)$reTrms$cnms)
    tied <- function(p) objective(c(ifelse(groups == "annotator", p[1], p[2]), p[-(1:2)]))
    if (independent) {  # the formula fitted as it stands, one variance per system and grouping factor
      fit <- lme4::glmer(formula, data = frame, family = stats::binomial, weights = half,
                         control = lme4::glmerControl(optimizer = "bobyqa"))
      return(list(beta = unname(lme4::fixef(fit)), vcov = unname(as.matrix(stats::vcov(fit)))))
    }
  } else {
    formula <- stats::as.formula(paste("verdict ~", fixed, "+", random))
    rho <- ordinal::clmm(formula, data = frame, link = "logit", threshold = "symmetric2", doFit = FALSE)
    groups <- names(rho$dims$nlev.re)
    tied <- function(p) 2 * ordinal:::getNLA(rho, c(p[-(1:2)], ifelse(groups == "annotator", p[1], p[2])))
  }
  at_fit <- c(sd_of[["annotator"]], sd_of[["document"]], if (ties == "half") beta else c(tau, beta))
  start <- at_fit + c(0.2, 0.2, rep(0.1, length(at_fit) - 2))
  lower <- c(0, 0, rep(-Inf, length(at_fit) - 2))
  optimum <- if (ties == "half") minqa::bobyqa(start, tied, lower = lower) else {
    found <- stats::nlminb(start, tied, lower = lower)
    list(fval = found$objective, par = found$par)
  }
  list(at_fit = tied(at_fit), optimum_value = optimum$fval, optimum = optimum$par)
}
"""


def _r_missing() -> str | None:
    from simdesign.significance.rsession import r_available

    ok, message = r_available()
    return None if ok else message


@pytest.fixture(scope="module")
def r_ready():
    if why := _r_missing():
        pytest.skip(f"bt_mixed needs R: {why}")


def _pairwise_model(**changes):
    return dataclasses.replace(load_model("coherence"), preferences={}, **changes)


def _pairwise_method():
    return next(m for m in all_methods() if m.covers == "pair")


@pytest.fixture(scope="module")
def small_study():
    return _pairwise_model().sample(BlockDesign(4, 5, 2), np.random.default_rng(5), "zero", method=_pairwise_method())


@pytest.fixture(scope="module")
def battle_log():
    """A sparse battle log: more (prompt, system) effects than battles (the fit pads or resizes its terms)."""
    study = _pairwise_model().sample(BattleDesign(battles=150, prompts=60, judges=5), np.random.default_rng(3),
                                     "zero", method=_pairwise_method())
    found = study.comparisons()
    effects = len(set(zip(found["document"], found["first"])) | set(zip(found["document"], found["second"])))
    assert effects > len(found["outcome"])
    return study


def _direct(study, fit, ties, independent=False):
    import rpy2.robjects as ro

    from simdesign.significance.rsession import as_dict, session

    found = study.comparisons()
    r = session()
    with r.lock:
        direct = ro.r(DIRECT_R)
        out = direct(ro.IntVector((found["first"] + 1).tolist()), ro.IntVector((found["second"] + 1).tolist()),
                     ro.IntVector(np.rint(2 * found["outcome"]).astype(int).tolist()),
                     ro.IntVector(found["annotator"].tolist()), ro.IntVector(found["document"].tolist()),
                     study.n_systems, ties, ro.FloatVector(fit["beta"]), ro.FloatVector(fit.get("tau", [0.0])),
                     ro.FloatVector(fit["variances"]), ro.StrVector(fit["variance_names"]), independent)
        return as_dict(out)


@pytest.mark.parametrize("ties, which", [pytest.param(ties, which, marks=R_MARKS) for ties in ("half", "ordinal")
                                         for which in ("small_study", "battle_log")])
def test_the_fit_is_the_formula_model_with_its_variances_tied(ties, which, request, r_ready):
    small_study = request.getfixturevalue(which)
    fit = fit_bt_mixed(small_study, ties, "intercepts")
    assert fit.get("error") is None, fit
    assert sorted(fit["variance_names"]) == ["annotator_system", "document_system"]
    direct = _direct(small_study, fit, ties)
    assert float(direct["at_fit"][0]) == pytest.approx(float(fit["deviance"][0]), abs=1e-4)
    # the formula model's own optimum, tied, is the wrapper's (no lower deviance, the same fixed effects)
    assert float(direct["optimum_value"][0]) >= float(fit["deviance"][0]) - 1e-4
    fixed = direct["optimum"][2:] if ties == "half" else direct["optimum"][3:]
    np.testing.assert_allclose(fixed, fit["beta"], atol=1e-3 if ties == "half" else 1e-4)
    result = bt_mixed_result(fit, small_study.n_systems, ties)
    assert result.fit_status in (OK, SINGULAR) and np.isfinite(result.p_value).all()
    if ties == "ordinal" and which == "small_study":  # the generator's tie band (0.5, noise 1) is the threshold
        assert 0.3 < float(fit["tau"][0]) < 0.7


@pytest.mark.needs_r
@pytest.mark.slow
def test_the_independent_structure_is_a_direct_glmer_call(small_study, r_ready):
    fit = fit_bt_mixed(small_study, "half", "independent")
    assert fit.get("error") is None, fit
    assert fit["formula"][0] == r_formula(small_study.n_systems, "half", "independent")
    direct = _direct(small_study, fit, "half", independent=True)
    np.testing.assert_allclose(fit["beta"], direct["beta"], atol=1e-6)
    np.testing.assert_allclose(fit["vcov"], direct["vcov"], atol=1e-6)


@pytest.mark.needs_r
@pytest.mark.slow
def test_without_random_effects_the_fixed_effects_are_the_half_win_bradley_terry_mle(r_ready):
    base = load_model("coherence")
    model = _pairwise_model(annotator_cov=np.zeros_like(base.annotator_cov),
                            document_cov=np.zeros_like(base.document_cov))
    study = model.sample(BlockDesign(4, 25, 2), np.random.default_rng(0), "fitted", method=_pairwise_method())
    found = study.comparisons()
    mle = bradley_terry(found["first"], found["second"], found["outcome"], study.n_systems, ties="half")
    differences = np.array([mle.strength[i] - mle.strength[j] for i, j in system_pairs(study.n_systems)])
    fit = fit_bt_mixed(study)
    result = bt_mixed_result(fit, study.n_systems)
    variance = 2 * float(np.sum(fit["variances"]))
    allowed = 1e-5 + 2 * np.abs(differences) * (np.sqrt(1 + 0.346 * variance) - 1)
    assert result.fit_status in (OK, SINGULAR)
    assert (np.abs(result.estimate - differences) <= allowed).all(), (result.estimate, differences, fit["variances"])
    assert np.abs(differences).max() > 0.5  # the effects are there: the check is not of zeros against zeros


def _glmer_fit(**changes) -> dict:
    fit = {"beta": np.array([0.2, -0.1]), "vcov": np.eye(2) * 0.01, "singular": np.array([0.0]),
           "singular_terms": [], "optimizer_code": np.array([0.0]), "lme4_messages": [], "optimizer_warnings": [],
           "warnings": [], "variances": np.array([0.1, 0.2]), "variance_names": ["document_system", "annotator_system"]}
    return {**fit, **changes}


def _clmm_fit(**changes) -> dict:
    fit = {"beta": np.array([0.2, -0.1]), "vcov": np.eye(2) * 0.01, "tau": np.array([0.5]),
           "variances": np.array([0.1, 0.2]), "variance_names": ["document_system", "annotator_system"],
           "convergence": np.array([0.0]), "optimizer_message": ["relative convergence (4)"], "warnings": []}
    return {**fit, **changes}


@pytest.mark.parametrize("fit, ties, status", [
    (_glmer_fit(), "half", OK),
    (_glmer_fit(singular=np.array([1.0]), singular_terms=["annotator_system"]), "half", SINGULAR),
    (_glmer_fit(lme4_messages=["Model failed to converge with max|grad| = 0.01"]), "half", NOT_CONVERGED),
    (_glmer_fit(singular=np.array([1.0]), optimizer_code=np.array([-4.0])), "half", NOT_CONVERGED),
    (_glmer_fit(beta=np.array([0.2])), "half", ERROR),
    ({"error": ["glmer: something"], "warnings": []}, "half", ERROR),
    (_clmm_fit(), "ordinal", OK),
    (_clmm_fit(variances=np.array([0.0, 0.2])), "ordinal", SINGULAR),
    (_clmm_fit(convergence=np.array([1.0])), "ordinal", NOT_CONVERGED),
    (_clmm_fit(warnings=["optimizer nlminb failed to converge"]), "ordinal", NOT_CONVERGED),
    (_clmm_fit(vcov=np.full((2, 2), np.nan)), "ordinal", ERROR),
])
def test_a_fits_status_and_no_p_value_from_a_failed_fit(fit, ties, status):
    result = bt_mixed_result(fit, 3, ties)
    assert result.fit_status == status and set(result.status) == {status}
    assert np.isfinite(result.p_value).all() == (status in (OK, SINGULAR))
    assert np.isnan(result.p_value).all() == (status not in (OK, SINGULAR))


def test_bad_options_are_a_failed_fit_naming_them(small_study):
    result = bt_mixed(small_study, ties="davidson")
    assert result.fit_status == ERROR and "ties must be one of" in result.message


def test_the_committed_type1_table_has_three_designs_and_the_planners_verdicts():
    """figures/pairwise_bt_mixed_type1.csv (scripts/pairwise_bt_mixed_type1.py): three Figure-4 designs at 200
    trials, the verdicts level_verdict gives for its intervals."""
    import pandas as pd

    from simdesign.stats.montecarlo import default_max_type1, level_verdict

    table = pd.read_csv(Path(__file__).resolve().parents[1] / "figures" / "pairwise_bt_mixed_type1.csv")
    default = table[table["test"] == "bt_mixed"]
    assert sorted(default["blocks"]) == [1, 20, 100] and (default["trials"] == 200).all()
    assert (default["n_tests"] == 10 * default["trials"]).all() and (table["estimand"] == "type1").all()
    for row in table.itertuples():
        assert row.ci_low <= row.rate <= row.ci_high and row.max_type1 == default_max_type1(row.alpha)
        assert row.verdict == level_verdict(row.ci_low, row.ci_high, row.max_type1)
        assert row.mean_fit_seconds > 0
