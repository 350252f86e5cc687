"""Tests of clmm_native that refit the model, and lmer's Kenward-Roger df (docs/model.md, "Tests that refit
the model"; simdesign/clmm/refits.py)."""
import numpy as np
import pytest
from scipy import stats

from simdesign import BlockDesign, load_model
from simdesign import clmm
from simdesign.significance import ANALYSES
from simdesign.clmm import refits
from simdesign.core.errors import ConfigError
from simdesign.core.judgements import Judgements
from simdesign.studies.rates.config import parse_config


def _study(blocks, docs_per_block, annotators_per_block=3, seed=1, model="coherence"):
    return load_model(model).sample(BlockDesign(blocks, docs_per_block, annotators_per_block),
                                    np.random.default_rng(seed))


def test_the_refit_tests_are_the_registry_values():
    from simdesign.significance.mixed_native import TESTS

    assert TESTS == ("wald",) + refits.REFIT_TESTS


@pytest.mark.parametrize("pair", [(0, 1), (1, 3), (2, 4)])
def test_a_constrained_refit_equals_the_fit_of_the_merged_systems(pair):
    """With random intercepts only, beta_a = beta_b is the model of the data with a and b one system: fitted
    directly (its own start, no refits code), its log-likelihood gives the same LR."""
    study = _study(2, 8, seed=3)
    fit = clmm.fit(study, structure="intercepts", reference=study.systems[0], starts="single")
    ratios = refits.likelihood_ratios(study, fit, study.systems, "intercepts")
    position = {(i, j): k for k, (i, j) in enumerate(refits.system_pairs(5))}
    a, b = (study.systems[k] for k in pair)
    merged = study.to_frame()
    merged["system"] = merged["system"].replace({b: a})
    constrained = clmm.fit(merged, structure="intercepts", reference=study.systems[0], starts="single")
    expected = 2 * (fit.loglik - constrained.loglik)
    assert ratios[position[pair]] == pytest.approx(expected, abs=2e-5)


@pytest.mark.slow
def test_likelihood_ratios_are_close_to_the_wald_statistics_with_many_annotators():
    """Asymptotically LR and z^2 agree; with 40 annotators they are within 15% of each other for clear pairs."""
    study = _study(1, 40, annotators_per_block=40, seed=2)
    fit = clmm.fit(study, structure="intercepts", reference=study.systems[0], starts="single")
    ratios = refits.likelihood_ratios(study, fit, study.systems, "intercepts")
    squared = fit.contrasts(study.systems)["z"].to_numpy() ** 2
    clear = squared > 4
    assert clear.sum() >= 3
    np.testing.assert_allclose(ratios[clear], squared[clear], rtol=0.15)


def test_drawn_data_follow_the_fitted_model():
    """A data set drawn from a fit, fitted again, gives effects within 4 standard errors of the fit's
    (a large study: 60 annotators, 120 documents, random intercepts)."""
    study = _study(20, 6, seed=8)
    fit = clmm.fit(study, structure="intercepts", reference=study.systems[0], starts="single")
    draw = refits.draw_judgements(study, fit, "intercepts", np.random.default_rng(5))
    assert isinstance(draw, Judgements) and draw.scores.shape == study.scores.shape
    assert set(np.unique(draw.scores)) <= set(np.unique(study.scores))
    np.testing.assert_array_equal(draw.annotator, study.annotator)
    again = clmm.fit(draw, structure="intercepts", reference=study.systems[0], starts="single")
    se = np.sqrt(np.diag(fit.fixed_effects_cov))
    assert np.all(np.abs(again.effects[1:] - fit.effects[1:]) < 4 * se * np.sqrt(2))


def test_a_bootstrap_is_reproducible_from_its_seed_and_its_p_values_are_counts():
    study = _study(2, 5, seed=4)
    analysis = ANALYSES["clmm_native"].function
    first = analysis(study, np.random.default_rng(11), structure="intercepts", test="bootstrap", resamples=9)
    again = analysis(study, np.random.default_rng(11), structure="intercepts", test="bootstrap", resamples=9)
    np.testing.assert_array_equal(first.p_value, again.p_value)
    counts = first.p_value * 10  # (1 + exceedances) / (1 + 9 usable draws)
    np.testing.assert_allclose(counts, np.round(counts), atol=1e-9)
    assert "9 of 9 parametric-bootstrap refits usable" in first.message
    wald = analysis(study, None, structure="intercepts", df="z")
    np.testing.assert_allclose(first.estimate, wald.estimate)


def test_a_bootstrap_with_too_few_usable_draws_fails_every_pair(monkeypatch):
    """A p-value never rests on a handful of draws: fewer than half usable fails the test (counted)."""
    study = _study(2, 5, seed=4)
    calls = {"n": 0}
    original = refits._refit_draw

    def every_other_fails(refitter, draw, covariance=True):
        calls["n"] += 1
        return None if calls["n"] % 3 else original(refitter, draw, covariance)

    monkeypatch.setattr(refits, "_refit_draw", every_other_fails)
    result = ANALYSES["clmm_native"].function(study, np.random.default_rng(1), structure="intercepts",
                                              test="bootstrap", resamples=6)
    assert result.fit_status == "error" and np.all(np.isnan(result.p_value))
    assert "2 of 6 parametric-bootstrap refits usable" in result.message


def test_the_lrt_divides_by_its_bartlett_factor():
    study = _study(2, 5, seed=6)
    fit = clmm.fit(study, structure="intercepts", reference=study.systems[0], starts="single")
    p_value, summary = refits.likelihood_ratio_tests(study, fit, study.systems, "intercepts", 5,
                                                     np.random.default_rng(2))
    assert summary.usable == 5 and summary.bartlett > 0
    ratios = refits.likelihood_ratios(study, fit, study.systems, "intercepts")
    np.testing.assert_allclose(p_value, stats.chi2.sf(ratios / summary.bartlett, 1), rtol=1e-4)


@pytest.mark.parametrize("option, value, allowed", [("test", "kenward", "bootstrap"),
                                                    ("resamples", 0, "positive integer")])
def test_bad_refit_options_are_refused(option, value, allowed):
    raw = {"name": "x", "model": "coherence", "effect": "zero", "trials": 2, "seed": 1,
           "designs": [{"kind": "block", "blocks": 1, "docs_per_block": 4, "annotators_per_block": 3}],
           "tests": [{"name": "clmm_native", option: value}]}
    with pytest.raises(ConfigError, match=allowed):
        parse_config(raw)


def test_analyse_reads_the_refit_tests_from_text():
    from simdesign.realdata.analyse import parse_test_text

    assert parse_test_text("clmm_native[bootstrap,resamples=99]") == {
        "name": "clmm_native", "test": "bootstrap", "resamples": 99}
    assert parse_test_text("clmm_native[lrt]") == {"name": "clmm_native", "test": "lrt"}
    assert parse_test_text("lmer[kr]") == {"name": "lmer", "df": "kr"}


# ------------------------------------------------------------------ Kenward-Roger (R)
def _require_kr():
    from simdesign.significance.rsession import kenward_roger_available

    ok, message = kenward_roger_available()
    if not ok:
        pytest.skip(message)


@pytest.mark.slow
def test_kenward_roger_is_close_to_satterthwaite_on_a_nearly_balanced_intercepts_design():
    """Kenward-Roger and Satterthwaite coincide for balanced designs (Kenward & Roger 1997); a block design
    with random intercepts is close to one, so their p-values agree to a few percent (lmerTest's own
    Satterthwaite as the reference), and the estimates exactly."""
    _require_kr()
    study = _study(2, 10, seed=3)
    lmer = ANALYSES["lmer"].function
    satterthwaite = lmer(study, None, structure="intercepts")
    kenward_roger = lmer(study, None, structure="intercepts", df="kr")
    assert kenward_roger.fit_status in ("ok", "singular"), kenward_roger.message
    np.testing.assert_allclose(kenward_roger.estimate, satterthwaite.estimate, rtol=1e-8)
    np.testing.assert_allclose(kenward_roger.p_value, satterthwaite.p_value, rtol=0.05, atol=1e-4)
    assert not np.array_equal(kenward_roger.p_value, satterthwaite.p_value)  # KR did run


@pytest.mark.slow
def test_kenward_roger_df_of_the_maximal_model_are_finite_with_the_same_estimates():
    _require_kr()
    from simdesign.significance.mixed_r import _fit_lmer

    study = _study(2, 4, seed=2)
    satterthwaite = _fit_lmer(study, "maximal")
    kenward_roger = _fit_lmer(study, "maximal", df="kr")
    assert kenward_roger.get("error") is None, kenward_roger
    assert np.all(np.isfinite(kenward_roger["contrast_df"]) & (kenward_roger["contrast_df"] > 0))
    np.testing.assert_allclose(kenward_roger["beta"], satterthwaite["beta"], rtol=1e-6)
    assert kenward_roger["vcov"].shape == satterthwaite["vcov"].shape


@pytest.mark.slow
@pytest.mark.parametrize("blocks, docs_per_block, annotators_per_block, structure",
                         [(1, 5, 3, "maximal"), (6, 2, 1, "paper"), (3, 4, 3, "intercepts")])
def test_kenward_roger_covariance_and_df_equal_pbkrtests_own(blocks, docs_per_block, annotators_per_block,
                                                             structure):
    """simdesign computes Kenward-Roger's adjusted covariance through the random effects' design instead of
    pbkrtest's n x n matrices (rsession.py): pbkrtest::vcovAdj itself is the oracle, for the covariance, the
    matrices Lb_ddf reads, and every pair contrast's df."""
    _require_kr()
    import rpy2.robjects as robjects

    from simdesign.significance.mixed_r import _pair_contrast_rows, formula_for
    from simdesign.significance.rsession import session

    study = _study(blocks, docs_per_block, annotators_per_block, seed=5)
    r = session()
    with r.lock:
        data = r.data_frame(study, ordinal=False)
        fit = robjects.r("function(f, d) suppressMessages(lme4::lmer(stats::as.formula(f), data = d, REML = TRUE))")(
            formula_for(study, structure), data)
        ours = r.kenward_roger_vcov(fit)
        theirs = robjects.r("pbkrtest::vcovAdj")(fit)
        compare = robjects.r("""function(ours, theirs, fit, rows) list(
            vcov = max(abs(as.matrix(ours) - as.matrix(theirs))) / max(abs(as.matrix(theirs))),
            W = max(abs(attr(ours, "W") - as.matrix(attr(theirs, "W")))) / max(abs(as.matrix(attr(theirs, "W")))),
            P = max(mapply(function(a, b) max(abs(a - as.matrix(b))) / max(abs(as.matrix(b))),
                           attr(ours, "P"), attr(theirs, "P"))),
            df_ours = apply(rows, 1, function(L) pbkrtest::Lb_ddf(matrix(L, 1), vcov(fit), ours)),
            df_theirs = apply(rows, 1, function(L) pbkrtest::Lb_ddf(matrix(L, 1), vcov(fit), theirs)))""")
        result = compare(ours, theirs, fit, r.matrix(_pair_contrast_rows(study.n_systems)))
    values = {name: np.asarray(value) for name, value in zip(result.names, result)}
    assert values["vcov"][0] < 1e-8 and values["W"][0] < 1e-8 and values["P"][0] < 1e-8  # relative
    np.testing.assert_allclose(values["df_ours"], values["df_theirs"], rtol=1e-7)
    assert np.all(np.isfinite(values["df_theirs"]))


def test_kenward_roger_without_pbkrtest_names_the_package(monkeypatch):
    from simdesign.significance import rsession

    monkeypatch.setattr(rsession, "kenward_roger_available", lambda: (False, "needs the R package pbkrtest"))
    result = ANALYSES["lmer"].function(_study(1, 4), None, structure="intercepts", df="kr")
    assert result.fit_status == "error" and "pbkrtest" in result.message
    assert np.all(np.isnan(result.p_value))
