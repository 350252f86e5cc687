"""``lmm_native`` (simdesign.lmm): the native linear mixed model against hand computations and lme4.

The fast tests check the fit against computations done here by hand: the ANOVA (closed-form REML) estimates
of a balanced crossed design, the dense multivariate-normal REML likelihood and its gradient at the optimum of
an unbalanced maximal fit, and failed fits giving failures, never p-values. The tests marked ``needs_r``
compare with lme4, lmerTest and the Kenward-Roger computation of :mod:`simdesign.significance.rsession` (equal to
pbkrtest's; one check against pbkrtest itself) on the paper's two Likert files and three simulated designs.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simdesign import BlockDesign, Judgements, PoolDesign, load_model
from simdesign import lmm
from simdesign.significance import ANALYSES, run_analysis
from simdesign.significance.base import ERROR, NOT_CONVERGED, system_pairs
from simdesign.lmm import small_sample
from simdesign.significance.lmm_native import _contrast_rows
from simdesign.lmm.deviance import profile, split_theta
from simdesign.lmm.problem import prepare

SHARED = Path(__file__).parents[2] / "shared" / "data" / "steen-markert-2021" / "judgements"
SYSTEMS = ["__REFERENCE__", "abssentrw", "BART", "onmt_pg", "seneca"]


def _crossed(n_annotators: int, n_documents: int, n_systems: int, rng, sd_annotator=0.8, sd_document=0.6,
             sd_slope=0.0) -> Judgements:
    """A fully crossed study of normal scores (every annotator judges every output once)."""
    pairs = [(a, d) for a in range(n_annotators) for d in range(n_documents)]
    annotator = np.array([a for a, _ in pairs])
    document = np.array([d for _, d in pairs])
    effects = np.linspace(0, 0.5, n_systems)
    scores = (effects[None, :] + rng.normal(0, sd_annotator, n_annotators)[annotator, None]
              + rng.normal(0, sd_document, n_documents)[document, None]
              + rng.normal(0, sd_slope, (n_annotators, n_systems))[annotator]
              + rng.normal(0, 1.0, (len(pairs), n_systems)))
    return Judgements(scores=scores, annotator=annotator, document=document, block=np.full(len(pairs), -1),
                      systems=tuple(f"s{k}" for k in range(n_systems)))


# --------------------------------------------------------------------------------------------- fast tests
def test_balanced_crossed_intercepts_equal_the_anova_estimates():
    """Balanced crossed data with random intercepts: REML equals the ANOVA (expected mean squares) estimates."""
    rng = np.random.default_rng(3)
    n_a, n_d, n_s = 4, 12, 3
    study = _crossed(n_a, n_d, n_s, rng)
    fit = lmm.fit(study, "intercepts")
    y = study.scores  # pairs x systems, pairs ordered annotator-major
    cube = y.reshape(n_a, n_d, n_s)
    grand = cube.mean()
    by_a, by_d, by_s = cube.mean(axis=(1, 2)), cube.mean(axis=(0, 2)), cube.mean(axis=(0, 1))
    resid = cube - by_a[:, None, None] - by_d[None, :, None] - by_s[None, None, :] + 2 * grand
    ms_error = (resid ** 2).sum() / (cube.size - 1 - (n_a - 1) - (n_d - 1) - (n_s - 1))
    ms_a = n_d * n_s * ((by_a - grand) ** 2).sum() / (n_a - 1)
    ms_d = n_a * n_s * ((by_d - grand) ** 2).sum() / (n_d - 1)
    variances = fit.random_covariances()
    assert fit.status == "ok"
    np.testing.assert_allclose(fit.sigma ** 2, ms_error, rtol=1e-7)
    np.testing.assert_allclose(variances["annotator"][0, 0], (ms_a - ms_error) / (n_d * n_s), rtol=1e-6)
    np.testing.assert_allclose(variances["document"][0, 0], (ms_d - ms_error) / (n_a * n_s), rtol=1e-6)
    # balanced: the fixed effects are the system means, and a contrast's variance is 2 sigma^2 / (A D)
    np.testing.assert_allclose(fit.beta[1:], by_s[1:] - by_s[0], atol=1e-10)
    np.testing.assert_allclose(fit.covariance[1, 1] - 2 * fit.covariance[1, 2] + fit.covariance[2, 2],
                               2 * ms_error / (n_a * n_d), rtol=1e-6)


def _dense_reml(study: Judgements, fit, theta: np.ndarray, sigma: float) -> float:
    """-2 REML log-likelihood from the n x n marginal covariance, the textbook formula."""
    problem = fit.problem
    z = problem.z_matrix().toarray()
    factors = split_theta(problem, theta)
    covariance = np.zeros((z.shape[1], z.shape[1]))
    start = 0
    for term in problem.terms:
        block = np.kron(np.eye(term.n_levels), factors[term.name] @ factors[term.name].T)
        covariance[start:start + len(block), start:start + len(block)] = block
        start += len(block)
    sigma_y = sigma ** 2 * (np.eye(problem.n_obs) + z @ covariance @ z.T)
    x, y = problem.x, problem.y
    inverse = np.linalg.inv(sigma_y)
    xvx = x.T @ inverse @ x
    beta = np.linalg.solve(xvx, x.T @ inverse @ y)
    r = y - x @ beta
    n, p = x.shape
    return float(np.linalg.slogdet(sigma_y)[1] + np.linalg.slogdet(xvx)[1] + r @ inverse @ r
                 + (n - p) * np.log(2 * np.pi))


def test_unbalanced_maximal_fit_is_the_dense_likelihood_optimum():
    """An unbalanced pool design, maximal structure: at the fit the profiled REML criterion equals the dense
    multivariate-normal one, and no free direction of the dense criterion lowers it."""
    study = load_model("coherence").sample(PoolDesign(docs=16, annotators=5, judgements_per_output=2),
                                           np.random.default_rng(5))
    fit = lmm.fit(study, {"annotator": "slopes", "document": "intercept"})
    assert fit.status in ("ok", "singular")
    dense = _dense_reml(study, fit, fit.theta, fit.sigma)
    assert abs(dense - fit.deviance) < 1e-8 * abs(fit.deviance)
    lower = np.concatenate([term.lower_bounds for term in fit.problem.terms])
    step = 1e-5
    for k in range(len(fit.theta)):
        for sign in (1, -1):
            moved = fit.theta.copy()
            moved[k] += sign * step
            if moved[k] < lower[k]:
                continue
            # sigma profiled: the dense criterion at its own best sigma for the moved theta
            sigma = profile(fit.problem, moved).sigma(fit.problem.n_obs, True)
            assert _dense_reml(study, fit, moved, sigma) > fit.deviance - 1e-7


def test_profiled_gradient_matches_finite_differences():
    study = _crossed(3, 8, 3, np.random.default_rng(2), sd_slope=0.5)
    problem = prepare(study, "maximal")
    theta = np.random.default_rng(0).uniform(-0.3, 0.9, problem.n_theta)
    for reml in (True, False):
        _, gradient = profile(problem, theta, gradient=True, reml=reml)
        numeric = [(profile(problem, theta + h).deviance(problem.n_obs, reml)
                    - profile(problem, theta - h).deviance(problem.n_obs, reml)) / 2e-6
                   for h in np.eye(len(theta)) * 1e-6]
        np.testing.assert_allclose(gradient, numeric, atol=2e-5 * max(1.0, np.abs(gradient).max()))


def test_satterthwaite_hessian_matches_finite_differences_of_the_deviance():
    """The analytic Hessian in (theta, sigma) against second differences of lmerTest's devfun_vp."""
    study = _crossed(3, 8, 3, np.random.default_rng(4), sd_slope=0.5)
    fit = lmm.fit(study, {"annotator": "slopes", "document": "intercept"})
    problem = fit.problem

    def deviance(point):
        theta, sigma = point[:-1], point[-1]
        solved = profile(problem, theta)
        p = problem.n_fixed
        residual = solved.pwrss
        return (solved.log_det_a + residual / sigma ** 2 + problem.n_obs * np.log(2 * np.pi * sigma ** 2)
                + solved.log_det_rx - p * np.log(2 * np.pi * sigma ** 2))

    point = np.append(fit.theta + 0.05, fit.sigma * 1.1)  # any point: the formula is not only for the optimum
    hessian, _ = small_sample.satterthwaite_parts(problem, point[:-1], point[-1], True)
    h = 1e-4
    numeric = np.empty_like(hessian)
    for k in range(len(point)):
        for m in range(len(point)):
            e_k, e_m = np.eye(len(point))[k] * h, np.eye(len(point))[m] * h
            numeric[k, m] = (deviance(point + e_k + e_m) - deviance(point + e_k - e_m)
                             - deviance(point - e_k + e_m) + deviance(point - e_k - e_m)) / (4 * h * h)
    np.testing.assert_allclose(hessian, numeric, atol=1e-4 * np.abs(hessian).max())


def test_a_failed_fit_gives_failures_never_p_values(monkeypatch):
    one_annotator = Judgements(scores=np.random.default_rng(0).integers(1, 8, size=(6, 5)),
                               annotator=np.zeros(6, dtype=np.int64), document=np.arange(6),
                               block=np.zeros(6, dtype=np.int64), systems=tuple(SYSTEMS))
    info = ANALYSES["lmm_native"]
    result = run_analysis(info, one_annotator, None, {"structure": "intercepts"})
    assert result.fit_status == ERROR and set(result.status) == {ERROR}
    assert np.isnan(result.p_value).all() and "grouping factors" in result.message
    # an optimiser that stops far from the optimum: not converged, no p-values (the general path's L-BFGS-B:
    # structure maximal; intercepts take the fast path, simdesign.lmm.structured)
    from simdesign.lmm import fitting as fit_module

    study = _crossed(3, 6, 3, np.random.default_rng(1))
    monkeypatch.setattr(fit_module, "MAX_ITERATIONS", 1)
    result = run_analysis(info, study, None, {"structure": "maximal", "df": "kr"})
    assert result.fit_status == NOT_CONVERGED and set(result.status) == {NOT_CONVERGED}
    assert np.isnan(result.p_value).all() and "converge" in result.message


def test_registered_like_clmm_native_and_shares_one_fit_per_study():
    info = ANALYSES["lmm_native"]
    assert info.options["structure"] == (("maximal", "intercepts", "paper"), "paper")
    assert info.options["df"] == (("satterthwaite", "kr", "z"), "satterthwaite")
    assert info.options["test"] == (("wald", "lrt"), "wald")
    assert info.random_effects and not info.requires_complete({})
    study = load_model("coherence").sample(BlockDesign(2, 6, 3), np.random.default_rng(0))
    results = {df: run_analysis(info, study, None, {"structure": "intercepts", "df": df})
               for df in ("satterthwaite", "kr", "z")}
    assert len([key for key in study._derived if key[0] == "lmm_native_fit"]) == 1
    for result in results.values():
        assert result.fit_status in ("ok", "singular") and np.isfinite(result.p_value).all()
    # z is the least conservative of the three
    assert np.all(results["z"].p_value <= results["satterthwaite"].p_value + 1e-12)
    assert len(results["z"].p_value) == len(system_pairs(5))
    assert "lmm_native, structure intercepts" in info.verbose(study, structure="intercepts", df="kr")


def test_paper_structure_drops_the_document_term_of_a_nested_design():
    nested = load_model("coherence").sample(BlockDesign(6, 2, 1), np.random.default_rng(0))
    assert lmm.fit(nested, "paper").terms == ("annotator",)
    assert lmm.fit(nested, "maximal").terms == ("annotator", "document")
    # Kenward-Roger needs REML: asked of an ML fit, a failure with the reason, never a p-value
    result = run_analysis(ANALYSES["lmm_native"], nested, None, {"estimation": "ml", "df": "kr"})
    assert result.fit_status == ERROR and np.isnan(result.p_value).all() and "REML" in result.message


def test_likelihood_ratio_equals_the_fit_of_the_merged_systems():
    """Intercepts: the constrained model of the pair (1, 3) is the model of the data with system 3 renamed
    system 1, fitted from the table (an independent route to the same likelihood)."""
    from scipy.stats import chi2

    from simdesign.lmm.fitting import likelihood_ratios

    study = _crossed(4, 10, 4, np.random.default_rng(6))
    full = lmm.fit(study, "intercepts", reml=False)
    rows = _contrast_rows(4)
    ratios = likelihood_ratios(full, rows)
    frame = study.to_frame()
    merged = frame.assign(system=frame["system"].replace({"s3": "s1"}))
    expected = lmm.fit(merged, "intercepts", reml=False).deviance - full.deviance
    pair = system_pairs(4).index((1, 3))
    assert ratios[pair] == pytest.approx(expected, rel=1e-7, abs=1e-7)
    assert np.all(ratios >= 0)
    result = run_analysis(ANALYSES["lmm_native"], study, None, {"structure": "intercepts", "test": "lrt"})
    np.testing.assert_allclose(result.p_value, chi2.sf(ratios, 1))


def test_a_config_names_it():
    from simdesign.studies.rates.config import parse_config

    config = parse_config({
        "name": "t", "model": "coherence", "effect": "zero", "trials": 2, "seed": 1,
        "designs": [{"kind": "block", "blocks": 2, "docs_per_block": 5, "annotators_per_block": 3}],
        "tests": [{"name": "lmm_native", "structure": "maximal", "df": "kr"}]})
    assert [test.name for test in config.tests] == ["lmm_native"]
    assert config.tests[0].options == {"structure": "maximal", "df": "kr", "adjust": "none", "estimation": "reml",
                                       "test": "wald"}


# ------------------------------------------------------------------------------------------------- with R
def _require_r():
    from simdesign.significance.rsession import kenward_roger_available, r_available

    for ok, message in (r_available(), kenward_roger_available()):
        if not ok:
            if os.environ.get("CI"):
                pytest.fail(message)
            pytest.skip(message)


_R_REFERENCE = r"""
function(d, form, reml, start, contrasts, kr) {
  control <- if (is.null(start)) lme4::lmerControl() else lme4::lmerControl(optimizer = NULL)
  f <- lme4::lmer(stats::as.formula(form), data = d, REML = reml, contrasts = list(system = "contr.treatment"),
                  start = if (is.null(start)) NULL else list(theta = start), control = control)
  out <- list(theta = unname(lme4::getME(f, "theta")), ntheta = lme4::getME(f, "n_rtrms"),
              crit = if (reml) lme4::REMLcrit(f) else stats::deviance(f), loglik = as.numeric(stats::logLik(f)),
              beta = unname(lme4::fixef(f)), sigma = stats::sigma(f))
  g <- suppressWarnings(lmerTest::as_lmerModLmerTest(f))
  out$satterthwaite <- suppressWarnings(lmerTest::contest(g, contrasts, joint = FALSE))$df
  if (reml && kr) out$kr <- kenward_roger(f, contrasts)$df
  out
}
"""


@pytest.fixture(scope="module")
def reference():
    _require_r()
    from rpy2 import robjects

    from simdesign.significance.rsession import as_dict, session

    r = session()
    with r.lock:
        helpers = robjects.r("environment")(r.fit_lmer)
        function = robjects.r(f"function(env) {{ f <- {_R_REFERENCE}; environment(f) <- env; f }}")(helpers)

    def call(study, structure, reml=True, start=None, kr=True):
        from simdesign.significance.mixed_r import _pair_contrast_rows, formula_for

        with r.lock:
            out = function(r.data_frame(study, ordinal=False), formula_for(study, structure), reml,
                           robjects.NULL if start is None else robjects.FloatVector(start),
                           r.matrix(_pair_contrast_rows(study.n_systems)), kr)
            return as_dict(out)
    return call


def _lme4_order(fit) -> np.ndarray:
    """The fit's theta in lme4's order of terms (more levels first; ties keep the formula's order)."""
    problem = fit.problem
    order = sorted(range(len(problem.terms)), key=lambda t: -problem.terms[t].n_levels)
    starts = np.cumsum([0] + [term.n_theta for term in problem.terms])
    return np.concatenate([fit.theta[starts[t]:starts[t + 1]] for t in order])


def _paper(task: str) -> Judgements:
    path = SHARED / f"likert_{task}_cnn_dm.csv"
    if not path.exists():
        pytest.skip(f"the paper's judgements are not present at {path} (a clone without ../shared)")
    return Judgements.from_frame(pd.read_csv(path), systems=SYSTEMS)


def _simulated(name: str) -> Judgements:
    model = load_model("coherence")
    designs = {"crossed": BlockDesign(1, 40, 3), "blocks": BlockDesign(5, 8, 3), "nested": BlockDesign(12, 6, 1),
               "pool": PoolDesign(docs=40, annotators=12, judgements_per_output=3)}
    return model.sample(designs[name], np.random.default_rng(11))


def compare_with_lme4(reference, study, structure) -> dict:
    """lmm_native against lme4 (REML and ML) and lmerTest / Kenward-Roger at the same optimum; the numbers."""
    rows = _contrast_rows(study.n_systems)
    out = {}
    for reml in (True, False):
        fit = lmm.fit(study, structure, reml=reml)
        assert fit.status in ("ok", "singular"), fit.message
        # lmm_native reaches lme4's optimum or a lower one (maximal fits have several boundary optima). lme4's own
        # maximal ML fit is left out (about 5 s each; the suite must stay under 15 minutes on 2 cores): measured once
        # it ended 6e-6 to 11.4 above lmm_native's (issue 41's note); the ML numbers at lmm_native's optimum below
        # are still compared.
        free = reference(study, structure, reml, kr=False) if reml or structure != "maximal" else None
        if free is not None:
            assert fit.deviance <= free["crit"][0] + 1e-6
        same = free is not None and abs(fit.deviance - free["crit"][0]) < 1e-6
        if same:
            np.testing.assert_allclose(fit.beta, free["beta"], rtol=0, atol=1e-6)
        # lme4 and lmerTest evaluated at lmm_native's optimum (optimizer NULL): the same numbers to 1e-6
        at = reference(study, structure, reml, start=_lme4_order(fit), kr=reml)
        assert abs(fit.deviance - at["crit"][0]) < 1e-6
        assert abs(fit.loglik - at["loglik"][0]) < 1e-6
        np.testing.assert_allclose(fit.beta, at["beta"], rtol=0, atol=1e-6)
        key = "reml" if reml else "ml"
        out[key] = {"crit": fit.deviance - at["crit"][0], "same_optimum_as_lme4": same,
                    "below_lme4": np.nan if free is None else free["crit"][0] - fit.deviance,
                    "beta": np.max(np.abs(fit.beta - at["beta"]))}
        # Satterthwaite from the REML or the ML deviance, as lmerTest on a REML or an ML fit
        hessian, jacobian = small_sample.satterthwaite_parts(fit.problem, fit.theta, fit.sigma, reml)
        satterthwaite, _ = small_sample.satterthwaite_df(hessian, jacobian, fit.covariance, rows)
        np.testing.assert_allclose(satterthwaite, at["satterthwaite"], rtol=1e-4)
        out[key]["satterthwaite"] = np.max(np.abs(satterthwaite / at["satterthwaite"] - 1))
        if reml:
            kr = small_sample.kenward_roger(fit.problem, fit.theta, fit.sigma, fit.covariance).df(rows)
            np.testing.assert_allclose(kr, at["kr"], rtol=1e-6)
            out[key]["kr"] = np.max(np.abs(kr / at["kr"] - 1))
    return out


@pytest.mark.slow
@pytest.mark.needs_r
@pytest.mark.parametrize("task", ["coherence", "repetition"])
@pytest.mark.parametrize("structure", ["intercepts", "maximal"])
def test_equals_lme4_on_the_papers_likert_files(reference, task, structure):
    numbers = compare_with_lme4(reference, _paper(task), structure)
    print(task, structure, numbers)
    if structure == "intercepts":
        assert numbers["reml"]["same_optimum_as_lme4"] and numbers["ml"]["same_optimum_as_lme4"]


@pytest.mark.slow
@pytest.mark.needs_r
@pytest.mark.parametrize("design", ["crossed", "blocks", "pool"])
@pytest.mark.parametrize("structure", ["intercepts", "maximal"])
def test_equals_lme4_on_simulated_designs(reference, design, structure):
    numbers = compare_with_lme4(reference, _simulated(design), structure)
    print(design, structure, numbers)


@pytest.mark.slow
@pytest.mark.needs_r
def test_likelihood_ratios_equal_lme4s_on_the_papers_coherence_file():
    """lme4's deviance difference of ML fits with the two systems merged into one factor level."""
    _require_r()
    from rpy2 import robjects

    from simdesign.significance.rsession import session
    from simdesign.lmm.fitting import likelihood_ratios

    study = _paper("coherence")
    ratios = likelihood_ratios(lmm.fit(study, "intercepts", reml=False), _contrast_rows(study.n_systems))
    r = session()
    with r.lock:
        expected = np.array(robjects.r("""function(d) {
          out <- c(); lv <- levels(d$system)
          full <- lme4::lmer(score ~ system + (1 | annotator) + (1 | document), data = d, REML = FALSE)
          for (i in 1:(length(lv) - 1)) for (k in (i + 1):length(lv)) {
            s <- as.character(d$system); s[s == lv[k]] <- lv[i]; d$merged <- factor(s, levels = lv[-k])
            m0 <- lme4::lmer(score ~ merged + (1 | annotator) + (1 | document), data = d, REML = FALSE)
            out <- c(out, stats::deviance(m0) - stats::deviance(full)) }
          out }""")(r.data_frame(study, ordinal=False)))
    np.testing.assert_allclose(ratios, expected, rtol=1e-6, atol=1e-6)


@pytest.mark.slow
@pytest.mark.needs_r
def test_equals_lme4_on_a_nested_design_with_the_papers_structure(reference):
    """One annotator per document: 'paper' keeps the annotator term alone (one term, no Schur complement)."""
    study = _simulated("nested")
    assert lmm.fit(study, "paper").terms == ("annotator",)
    print(compare_with_lme4(reference, study, "paper"))


@pytest.mark.slow
@pytest.mark.needs_r
def test_kenward_roger_equals_pbkrtest_itself(reference):
    """The rsession Kenward-Roger the other tests compare with, checked once against pbkrtest::vcovAdj (lme4
    evaluated at lmm_native's optimum)."""
    from rpy2 import robjects

    from simdesign.significance.mixed_r import _pair_contrast_rows, formula_for
    from simdesign.significance.rsession import as_dict, session

    study = _simulated("blocks")
    fit = lmm.fit(study, "intercepts")
    r = session()
    with r.lock:
        out = as_dict(robjects.r("""function(d, form, L, start) {
          f <- lme4::lmer(stats::as.formula(form), data = d, REML = TRUE, contrasts = list(system = "contr.treatment"),
                          start = list(theta = start), control = lme4::lmerControl(optimizer = NULL))
          v <- pbkrtest::vcovAdj(f)
          list(vcov = as.matrix(v), df = apply(L, 1, function(l) pbkrtest::Lb_ddf(l, stats::vcov(f), v)))
        }""")(r.data_frame(study, ordinal=False), formula_for(study, "intercepts"),
              r.matrix(_pair_contrast_rows(study.n_systems)), robjects.FloatVector(_lme4_order(fit))))
    kr = small_sample.kenward_roger(fit.problem, fit.theta, fit.sigma, fit.covariance)
    rows = _pair_contrast_rows(study.n_systems)
    np.testing.assert_allclose(kr.df(rows), out["df"], rtol=1e-6)
    np.testing.assert_allclose(kr.adjusted, out["vcov"], rtol=1e-6)
