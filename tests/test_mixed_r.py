"""Model-based analyses: R's clmm and lmer through rpy2, and statsmodels' clm.

Known answers come from the paper's own coherence judgements (Steen & Markert
2021), fitted with random intercepts to stay fast. Tests marked ``needs_r``
skip when R is missing on a developer machine, but fail in CI (env var CI
set), where scripts/setup.sh installs R.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simdesign import BlockDesign, Judgements
from simdesign.significance import mixed_r
from simdesign.significance.base import ANALYSES, BACKEND_CHECKS, ERROR, NOT_CONVERGED, OK, SINGULAR, system_pairs
from simdesign.significance.rsession import r_available

# Fits in R: its start-up and the fits take tens of seconds in all.
pytestmark = pytest.mark.slow

PAPER_DATA = (Path(__file__).parents[2] / "shared" / "data" / "steen-markert-2021" / "judgements"
              / "likert_coherence_cnn_dm.csv")
SYSTEMS = ["__REFERENCE__", "abssentrw", "BART", "onmt_pg", "seneca"]
REF_VS_ASR = 0  # pair (0, 1) in system_pairs order


def require(ok_message: tuple[bool, str]) -> None:
    """Skip on a developer machine without the software; fail in CI, which must have it."""
    ok, message = ok_message
    if ok:
        return
    if os.environ.get("CI"):
        pytest.fail(f"CI must run the R-backed tests: {message}")
    pytest.skip(message)


@pytest.fixture(scope="module")
def r_session():
    require(r_available())


@pytest.fixture(scope="module")
def paper() -> Judgements:
    if not PAPER_DATA.exists():
        pytest.skip(f"the paper's judgements are not present at {PAPER_DATA} (a clone without ../shared)")
    return Judgements.from_frame(pd.read_csv(PAPER_DATA), systems=SYSTEMS)


@pytest.fixture(scope="module")
def mean_differences(paper) -> np.ndarray:
    """Observed mean score of system i minus system j, per pair."""
    means = paper.scores.mean(axis=0)
    return np.array([means[i] - means[j] for i, j in system_pairs(len(SYSTEMS))])


@pytest.fixture(scope="module")
def clmm_paper_fit(r_session, paper) -> dict:
    # One ~10 s fit shared by the clmm tests that need the paper's data.
    return mixed_r._fit_clmm(paper, "intercepts")


@pytest.fixture(scope="module")
def lmer_paper_fit(r_session, paper) -> dict:
    return mixed_r._fit_lmer(paper, "intercepts")


def assert_paper_verdicts(result, mean_differences) -> None:
    """The paper's verdicts: 9 of 10 pairs differ at 0.05, in the direction of the means; ref vs ASR does not.

    System means order BART > PG > ref > ASR > Seneca.
    """
    assert result.fit_status in (OK, SINGULAR), result.message
    significant = result.p_value < 0.05
    assert significant.sum() == 9
    assert not significant[REF_VS_ASR]
    others = np.arange(len(significant)) != REF_VS_ASR
    np.testing.assert_array_equal(np.sign(result.estimate[others]), np.sign(mean_differences[others]))


# ---------------------------------------------------------------- no R needed
def test_registry_entries():
    shared = {"structure": (("maximal", "intercepts", "paper"), "paper"), "adjust": (("none", "holm", "tukey"), "none")}
    for name in ("clmm", "lmer"):
        assert ANALYSES[name].needs == "R"
    assert ANALYSES["clmm"].options == shared
    # lmer's df: lmerTest's Satterthwaite (default) or Kenward-Roger through pbkrtest
    assert ANALYSES["lmer"].options == {**shared, "df": (("satterthwaite", "kr"), "satterthwaite")}
    assert BACKEND_CHECKS["R"] is r_available
    assert ANALYSES["clm"].needs is None
    assert ANALYSES["clm"].options == {"adjust": (("none", "holm", "tukey"), "none")}


def test_formulas_follow_structure_and_design(coherence, rng):
    crossed = coherence.sample(BlockDesign(2, 3, 2), rng)
    nested = coherence.sample(BlockDesign(6, 2, 1), rng)
    maximal = "score ~ system + (1 + system | annotator) + (1 + system | document)"
    assert mixed_r.formula_for(crossed, "maximal") == maximal
    assert mixed_r.formula_for(crossed, "paper") == maximal
    assert mixed_r.formula_for(nested, "maximal") == maximal
    assert mixed_r.formula_for(nested, "paper") == "score ~ system + (1 + system | annotator)"
    assert mixed_r.formula_for(nested, "intercepts") == "score ~ system + (1 | annotator) + (1 | document)"
    with pytest.raises(ValueError, match="structure"):
        mixed_r.formula_for(crossed, "random")


def test_module_imports_and_reports_without_rpy2():
    # A machine without R must still import the package and get a helpful message.
    code = ("import sys; sys.modules['rpy2'] = None\n"
            "import simdesign.significance.mixed_r as m\n"
            "from simdesign.significance.rsession import r_available\n"
            "ok, message = r_available()\n"
            "assert not ok and 'scripts/setup.sh' in message, message\n"
            "import numpy as np\n"
            "j = m.Judgements(scores=np.ones((3, 2), int), annotator=np.arange(3), document=np.arange(3),\n"
            "                 block=np.zeros(3, int), systems=('a', 'b'))\n"
            "r = m.clmm_analysis(j)\n"
            "assert r.fit_status == 'error' and 'scripts/setup.sh' in r.message and np.isnan(r.p_value).all()\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_clm_on_paper_data(paper, mean_differences):
    result = mixed_r.clm_analysis(paper, rng=None)
    assert_paper_verdicts(result, mean_differences)
    assert set(result.status) == {OK}
    # Ignoring annotators and documents makes the test overconfident: its
    # ref-vs-ASR p (0.23) is not the point, but the fixed effects are close to
    # clmm's, as the thresholds absorb most of the scale.
    assert 0.15 < result.p_value[REF_VS_ASR] < 0.35


def test_clm_adjustments_are_monotone(paper):
    raw = mixed_r.clm_analysis(paper, rng=None)
    for adjust in ("holm", "tukey"):
        adjusted = mixed_r.clm_analysis(paper, rng=None, adjust=adjust)
        np.testing.assert_allclose(adjusted.estimate, raw.estimate)
        assert np.all(adjusted.p_value >= raw.p_value - 1e-12)


def test_failed_fits_never_give_p_values():
    not_converged = {"beta": np.zeros(4), "vcov": np.eye(4), "random_terms": ["annotator"],
                     "random_covariances": [np.eye(1)], "convergence": np.array([1.0]),
                     "optimizer_message": ["false convergence (8)"], "warnings": []}
    result = mixed_r._clmm_result(not_converged, 5, "none")
    assert result.fit_status == NOT_CONVERGED and "false convergence" in result.message
    assert np.isnan(result.p_value).all() and set(result.status) == {NOT_CONVERGED}

    lmer_fit = {"beta": np.array([4.0, 0.1, 0.9, 0.5, -0.8]), "vcov": np.eye(5) * 0.01,
                "contrast_df": np.full(10, 50.0), "singular": np.array([1.0]), "singular_terms": ["annotator"],
                "optimizer_code": np.array([0.0]), "optimizer_warnings": [],
                "lme4_messages": ["boundary (singular) fit: see help('isSingular')"],
                "warnings": ["Model failed to converge with 1 negative eigenvalue: -1.8e+00"]}
    boundary_and_hessian = mixed_r._lmer_result(lmer_fit, 5, "none")
    # A convergence failure is a failure at a boundary fit too (DESIGN.md section 3).
    assert boundary_and_hessian.fit_status == NOT_CONVERGED and np.isnan(boundary_and_hessian.p_value).all()
    assert set(boundary_and_hessian.status) == {NOT_CONVERGED}
    assert "negative eigenvalue" in boundary_and_hessian.message and "annotator" in boundary_and_hessian.message

    lmer_fit["warnings"] = []
    singular = mixed_r._lmer_result(lmer_fit, 5, "none")
    # Without a convergence warning a boundary fit keeps its p-values.
    assert singular.fit_status == SINGULAR and np.isfinite(singular.p_value).all()
    assert set(singular.status) == {SINGULAR} and "annotator" in singular.message

    lmer_fit["lme4_messages"] = ["Model failed to converge with max|grad| = 0.0123 (tol = 0.002, component 1)"]
    failed = mixed_r._lmer_result(lmer_fit, 5, "none")
    assert failed.fit_status == NOT_CONVERGED and np.isnan(failed.p_value).all()

    lmer_fit.update(singular=np.array([0.0]), lme4_messages=[],
                    warnings=["Model failed to converge with 1 negative eigenvalue: -1.8e+00"])
    interior = mixed_r._lmer_result(lmer_fit, 5, "none")
    assert interior.fit_status == NOT_CONVERGED  # the same Hessian warning away from the boundary


# The first text was captured from a real fit (test_real_lmer_fit_with_a_convergence_warning_is_not_converged);
# the others follow the formats of lme4 1.1-31's checkConv, checkHess and optwrap (read with deparse in R).
BOUNDARY_NOTE = "boundary (singular) fit: see help('isSingular')"
CONVERGENCE_TEXTS = [
    ("warnings", "Model failed to converge with 1 negative eigenvalue: -8.2e-02"),  # lmerTest's Hessian check
    ("lme4_messages", "Model failed to converge with max|grad| = 0.0123 (tol = 0.002, component 1)"),
    ("lme4_messages", "unable to evaluate scaled gradient"),
    ("lme4_messages", "Model failed to converge: degenerate  Hessian with 1 negative eigenvalues"),
    ("optimizer_warnings", "convergence code 1 from bobyqa: bobyqa -- maximum number of function evaluations "
                           "exceeded"),
]


@pytest.mark.parametrize("singular", [True, False])
@pytest.mark.parametrize("where, text", CONVERGENCE_TEXTS)
def test_lmer_fit_status_convergence_failures_win_over_singular(singular, where, text):
    texts = {"lme4_messages": [BOUNDARY_NOTE] if singular else [], "optimizer_warnings": [], "warnings": []}
    texts[where] = texts[where] + [text]
    status, problems = mixed_r.lmer_fit_status(singular, 0, **texts)
    assert status == NOT_CONVERGED and problems == [text]


def test_lmer_fit_status_without_convergence_trouble():
    assert mixed_r.lmer_fit_status(True, 0, [BOUNDARY_NOTE], [], []) == (SINGULAR, [])
    # a warning that is not about convergence leaves a boundary fit singular
    assert mixed_r.lmer_fit_status(True, 0, [BOUNDARY_NOTE], [], ["some levels of system are empty"]) == (
        SINGULAR, [])
    assert mixed_r.lmer_fit_status(False, 0, [], [], []) == (OK, [])
    assert mixed_r.lmer_fit_status(False, 4, [], [], []) == (NOT_CONVERGED, ["optimizer code 4"])


def test_shared_guard_turns_a_zero_standard_error_into_an_error():
    """One rule for every model-based analysis: no positive finite SE, no test (not z = inf, p = 0)."""
    from simdesign.significance.base import pairwise_from_fit

    effects = np.array([0.0, 0.4, -0.3])
    covariance = np.array([[0.04, 0.04], [0.04, 0.04]])  # var(beta_1 - beta_2) = 0
    for df in (None, np.full(3, 20.0)):
        for adjust in ("none", "holm", "tukey"):
            result = pairwise_from_fit(effects, covariance, df, adjust, SINGULAR, "boundary")
            assert list(result.status) == [SINGULAR, SINGULAR, ERROR]
            assert np.isnan(result.p_value[2]) and np.isnan(result.estimate[2])
            assert np.all((result.p_value[:2] > 0) & (result.p_value[:2] < 1))
            assert result.fit_status == SINGULAR and result.message.startswith("boundary; 1 contrast")
    # clm goes through it too
    assert mixed_r.pairwise_from_fit is pairwise_from_fit


# ---------------------------------------------------------------- R
@pytest.mark.needs_r
def test_clmm_paper_verdicts(clmm_paper_fit, mean_differences):
    result = mixed_r._clmm_result(clmm_paper_fit, len(SYSTEMS), "none")
    assert_paper_verdicts(result, mean_differences)
    assert result.fit_status == OK
    # R: ref - ASR = 0.227 (SE 0.147), z = 1.55, p = 0.122.
    assert result.p_value[REF_VS_ASR] == pytest.approx(0.122, abs=0.01)
    assert result.estimate[REF_VS_ASR] == pytest.approx(0.227, abs=0.01)


@pytest.mark.needs_r
def test_clmm_in_process_matches_rscript_fixture(clmm_paper_fit):
    # The same model fitted by Rscript (scripts/r/clmm_fixtures.R), with the
    # non-reference systems in another order, hence a slightly different
    # optimiser path.
    import json

    fixture = json.loads((Path(__file__).parent / "fixtures" / "clmm_r" / "paper_coherence__intercepts.json")
                         .read_text())
    order = [fixture["systems"][1:].index(name) for name in SYSTEMS[1:]]
    r_beta = np.array([fixture["fixed_effects"][name] for name in SYSTEMS[1:]])
    r_cov = np.array(fixture["fixed_effects_cov"])[np.ix_(order, order)]
    np.testing.assert_allclose(clmm_paper_fit["beta"], r_beta, atol=5e-4)  # measured 5e-5
    np.testing.assert_allclose(clmm_paper_fit["vcov"], r_cov, rtol=1e-3)  # measured 1e-5
    annotator_variance = clmm_paper_fit["random_covariances"][clmm_paper_fit["random_terms"].index("annotator")]
    assert annotator_variance[0, 0] == pytest.approx(fixture["random_effects_cov"]["annotator"][0], rel=1e-3)


@pytest.mark.needs_r
def test_clmm_adjustments(clmm_paper_fit):
    raw = mixed_r._clmm_result(clmm_paper_fit, len(SYSTEMS), "none")
    holm = mixed_r._clmm_result(clmm_paper_fit, len(SYSTEMS), "holm")
    tukey = mixed_r._clmm_result(clmm_paper_fit, len(SYSTEMS), "tukey")
    assert np.all(holm.p_value >= raw.p_value - 1e-12) and np.all(tukey.p_value >= raw.p_value - 1e-12)
    assert (holm.p_value < 0.05).sum() == 9 and (tukey.p_value < 0.05).sum() == 9


@pytest.mark.needs_r
def test_lmer_paper_verdicts(lmer_paper_fit, mean_differences):
    result = mixed_r._lmer_result(lmer_paper_fit, len(SYSTEMS), "none")
    assert_paper_verdicts(result, mean_differences)
    assert result.fit_status == OK
    # With a balanced design the lmer estimates are the raw mean differences.
    np.testing.assert_allclose(result.estimate, mean_differences, atol=1e-8)
    # Our Wald t tests reproduce lmerTest's own per-contrast tests.
    np.testing.assert_allclose(result.estimate, lmer_paper_fit["contrast_estimate"], rtol=1e-10)
    np.testing.assert_allclose(result.p_value, lmer_paper_fit["contrast_p"], rtol=1e-6)
    assert result.p_value[REF_VS_ASR] == pytest.approx(0.186, abs=0.01)


@pytest.mark.needs_r
def test_lmer_public_api_and_adjustment(r_session, paper):
    raw = mixed_r.lmer_analysis(paper, rng=None, structure="intercepts")
    holm = mixed_r.lmer_analysis(paper, rng=None, structure="intercepts", adjust="holm")
    assert raw.fit_status == OK and raw.fit_status == holm.fit_status
    assert np.all(holm.p_value >= raw.p_value - 1e-12)


@pytest.mark.needs_r
def test_lmer_direct_matches_pymer4(lmer_paper_fit, paper):
    # The fast path must be the same model that pymer4 users fit.
    try:
        import polars
        from pymer4.models import lmer as Pymer4Lmer
    except Exception as exc:  # noqa: BLE001 -- pymer4 raises RRuntimeError for missing R packages
        require((False, f"pymer4 does not import ({type(exc).__name__}: {exc}); run `bash scripts/setup.sh`"))
    frame = paper.to_frame()[["annotator", "document", "system", "score"]]
    model = Pymer4Lmer("score ~ system + (1 | annotator) + (1 | document)", data=polars.from_pandas(frame))
    model.set_factors({"system": SYSTEMS})
    model.fit()
    table = model.result_fit
    np.testing.assert_allclose(table["estimate"].to_numpy(), lmer_paper_fit["beta"], rtol=1e-6)
    np.testing.assert_allclose(table["std_error"].to_numpy(), np.sqrt(np.diag(lmer_paper_fit["vcov"])), rtol=1e-6)
    # pymer4's per-coefficient Satterthwaite df are the df of the ref-vs-system contrasts.
    ref_pairs = [k for k, (i, _) in enumerate(system_pairs(len(SYSTEMS))) if i == 0]
    np.testing.assert_allclose(table["df"].to_numpy()[1:], lmer_paper_fit["contrast_df"][ref_pairs], rtol=1e-4)


@pytest.mark.needs_r
def test_clm_matches_r_ordinal_clm(r_session, paper):
    from rpy2 import robjects

    from simdesign.significance.rsession import session

    r = session()
    with r.lock:
        fit = robjects.r("function(d) { f <- ordinal::clm(score ~ system, data = d, link = 'logit');"
                         " list(beta = unname(f$beta), se = unname(sqrt(diag(vcov(f)))[names(f$beta)])) }")(
            r.data_frame(paper, ordinal=True))
    r_beta, r_se = np.array(fit.rx2("beta")), np.array(fit.rx2("se"))
    fitted, _ = mixed_r._fit_clm(paper)
    np.testing.assert_allclose(np.asarray(fitted.params)[:4], r_beta, atol=1e-3)
    np.testing.assert_allclose(np.sqrt(np.diag(fitted.cov_params()))[:4], r_se, rtol=1e-3)


@pytest.mark.needs_r
@pytest.mark.parametrize("analysis", [mixed_r.clmm_analysis, mixed_r.lmer_analysis])
def test_broken_input_is_an_error_not_a_p_value(r_session, analysis):
    # One annotator judged everything: no annotator variance can be estimated.
    rng = np.random.default_rng(0)
    one_annotator = Judgements(scores=rng.integers(1, 8, size=(6, 5)), annotator=np.zeros(6, dtype=np.int64),
                               document=np.arange(6), block=np.zeros(6, dtype=np.int64), systems=tuple(SYSTEMS))
    result = analysis(one_annotator, rng=None, structure="intercepts")
    assert result.fit_status == ERROR
    assert set(result.status) == {ERROR}
    assert np.isnan(result.p_value).all() and np.isnan(result.estimate).all()
    assert result.message


@pytest.mark.slow
@pytest.mark.needs_r
def test_real_lmer_fit_with_a_convergence_warning_is_not_converged(r_session, coherence):
    """A 40-judgement maximal fit: lme4 stops at a boundary and lmerTest warns "Model failed to converge
    with 1 negative eigenvalue" (measured -1.3): a failure, no p-values, though the fit is singular. Seed 7: the
    first such study under generator version 2 (seed 0's under version 1)."""
    data = coherence.sample(BlockDesign(2, 5, 2), np.random.default_rng(7))
    fit = mixed_r._fit_lmer(data, "maximal")
    assert bool(fit["singular"][0])
    assert any("Model failed to converge" in w for w in fit["warnings"]), fit["warnings"]
    result = mixed_r._lmer_result(fit, len(SYSTEMS), "none")
    assert result.fit_status == NOT_CONVERGED and set(result.status) == {NOT_CONVERGED}
    assert np.isnan(result.p_value).all() and "Model failed to converge" in result.message


@pytest.mark.needs_r
def test_singular_fits_keep_p_values_and_fit_verbose(r_session, coherence):
    # A 300-judgement study: its document variance is estimated at zero.
    small = coherence.sample(BlockDesign(4, 5, 3), np.random.default_rng(3))
    result = mixed_r.lmer_analysis(small, rng=None, structure="intercepts")
    assert result.fit_status == SINGULAR and "document" in result.message
    assert np.isfinite(result.p_value).all()
    clmm = mixed_r.clmm_analysis(small, rng=None, structure="intercepts")
    assert clmm.fit_status in (OK, SINGULAR) and np.isfinite(clmm.p_value).all()

    text = mixed_r.fit_verbose(small, "lmer", "intercepts")
    assert "Linear mixed model fit by REML" in text and "status: singular" in text
    assert "Satterthwaite" in text
    text = mixed_r.fit_verbose(small, "clmm", "intercepts")
    assert "Cumulative Link Mixed Model" in text and "status:" in text
    assert "OrderedModel" in mixed_r.fit_verbose(small, "clm")


def test_run_and_replay_with_full_r_output(r_session, tmp_path, capsys):
    """A mixed-model run stores fit status and seconds; replay refits one trial and prints R's summary."""
    import yaml

    from simdesign.cli import main

    config = {"name": "mixed", "model": "coherence", "effect": "fitted", "trials": 3, "seed": 4,
              "designs": [{"kind": "block", "blocks": 4, "docs_per_block": 5, "annotators_per_block": 2}],
              "tests": [{"name": "lmer", "structure": "intercepts"}, "clm"]}
    path = tmp_path / "mixed.yaml"
    path.write_text(yaml.safe_dump(config))
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "--jobs", "1", "--quiet"]) == 0
    summary = pd.read_csv(out / "summary.csv")
    lmer_rows = summary[summary["test"] == "lmer[intercepts]"]
    assert {"power", "power_fitted", "failure_rate", "singular_rate"} <= set(lmer_rows["estimand"])
    assert (lmer_rows["mean_fit_seconds"] > 0).all()
    capsys.readouterr()
    assert main(["replay", str(out), "--design", "block-B4-D5-A2", "--trial", "1", "--test", "lmer[intercepts]",
                 "--verbose"]) == 0
    printed = capsys.readouterr().out
    assert "Linear mixed model" in printed and "fit status" in printed
