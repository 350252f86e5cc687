"""Small-sample reference distributions of clmm_native (docs/model.md, "Small-sample corrections")."""
import numpy as np
import pytest
from scipy import stats

from simdesign import BlockDesign, load_model
from simdesign import clmm
from simdesign.significance import ANALYSES, system_pairs
from simdesign.clmm import small_sample
from simdesign.clmm.layout import _Layout, _Objective
from simdesign.clmm.optimise import HESSIAN_BOUNDARY
from simdesign.clmm.prepare import _prepare
from simdesign.core.errors import ConfigError
from simdesign.studies.rates.config import parse_config


def _study(blocks, docs_per_block, annotators_per_block=3, seed=1):
    return load_model("coherence").sample(BlockDesign(blocks, docs_per_block, annotators_per_block),
                                          np.random.default_rng(seed))


@pytest.mark.parametrize("blocks, expected", [(1, 2), (2, 5), (4, 11), (5, 14), (10, 29),
                                               pytest.param(100, 99, marks=pytest.mark.slow)])  # 0.5 s: slow tier
def test_containment_df_on_the_figure4_grid(blocks, expected):
    """3 annotators per block and 100 documents: min(annotators - 1, documents - 1), as docs/model.md lists."""
    study = _study(blocks, 100 // blocks)
    fit = clmm.fit(study, structure="paper", reference=study.systems[0])
    df = small_sample.containment_df(study, fit, study.systems, "paper")
    assert df.shape == (10,) and np.all(df == expected)


def test_containment_df_counts_only_slope_terms():
    """Intercept-only terms do not contain the system effect: with none left, the residual df."""
    study = _study(2, 5)
    fit = clmm.fit(study, structure="intercepts", reference=study.systems[0])
    n_obs = study.scores.size
    n_thresholds = len(np.unique(study.scores)) - 1
    df = small_sample.containment_df(study, fit, study.systems, "intercepts")
    assert np.all(df == n_obs - n_thresholds - 4)
    # annotator slopes with document intercepts: the 6 annotators carry every contrast
    mixed = {"annotator": "slopes", "document": "intercept"}
    fit = clmm.fit(study, structure=mixed, reference=study.systems[0])
    assert np.all(small_sample.containment_df(study, fit, study.systems, mixed) == 5)


def _variance_of_contrast(objective, layout, natural, contrast):
    """c' H(theta)^-1 c with H the (thresholds, effects) Hessian by central differences: brute force."""
    n_fixed = layout.n_thr + layout.n_beta
    hessian = np.empty((n_fixed, n_fixed))
    for k in range(n_fixed):
        step = 1e-4 * max(1.0, abs(natural[k]))
        plus, minus = natural.copy(), natural.copy()
        plus[k] += step
        minus[k] -= step
        hessian[:, k] = (objective.natural(plus)[1][:n_fixed] - objective.natural(minus)[1][:n_fixed]) / (2 * step)
    return float(contrast @ np.linalg.solve(0.5 * (hessian + hessian.T), contrast))


@pytest.mark.slow  # a second or more: the fast tier stays under a minute
def test_satterthwaite_df_matches_brute_force_derivatives_of_the_variance():
    """The mixed-partial shortcut (docs/model.md) against dV/dtheta by differencing V(theta) itself."""
    structure = {"annotator": "slopes", "document": "intercept"}  # slopes make V depend on theta
    study = _study(4, 5, seed=4)  # every contrast's variance carried by the slopes (seed 3's, generator 1)
    fit = clmm.fit(study, structure=structure, reference=study.systems[0])
    assert fit.parameter_cov is not None
    df = small_sample.satterthwaite_df(study, fit, study.systems, structure)
    problem = _prepare(study, structure, study.systems[0])
    layout = _Layout(problem)
    objective = _Objective(problem, layout)
    natural = small_sample._natural_vector(layout, fit)
    n_fixed = layout.n_thr + layout.n_beta
    free = np.flatnonzero(~(layout.diagonal_mask() & (natural < HESSIAN_BOUNDARY)) & ~layout.fixed_mask())
    theta = free[n_fixed:]
    assert len(theta) >= 1  # a variance parameter is free, else df would be infinite
    theta_cov = fit.parameter_cov[n_fixed:, n_fixed:]
    position = {name: fit.systems.index(name) - 1 for name in fit.systems[1:]}
    for row, (i, j) in enumerate(system_pairs(5)):
        contrast = np.zeros(n_fixed)
        for name, sign in ((study.systems[i], 1.0), (study.systems[j], -1.0)):
            if name in position:
                contrast[layout.n_thr + position[name]] += sign
        variance = _variance_of_contrast(objective, layout, natural, contrast)
        gradient = []
        for k in theta:
            step = 1e-3 * max(1.0, abs(natural[k]))
            plus, minus = natural.copy(), natural.copy()
            plus[k] += step
            minus[k] -= step
            gradient.append((_variance_of_contrast(objective, layout, plus, contrast)
                             - _variance_of_contrast(objective, layout, minus, contrast)) / (2 * step))
        gradient = np.array(gradient)
        expected = 2 * variance ** 2 / float(gradient @ theta_cov @ gradient)
        assert expected < 200  # a contrast whose variance the slopes carry, not a near-z one
        # both are finite differences of finite differences (about 1e-3 relative each): 1% catches any slip
        # in the derivation (a factor, a sign, a wrong block of the covariance) and none of the rounding
        assert df[row] == pytest.approx(expected, rel=1e-2), (row, df[row], expected)


@pytest.mark.parametrize("df", ["design", "satterthwaite"])
def test_a_t_reference_keeps_the_statistic_and_the_shared_fit(df):
    """Same estimates and Wald statistics as z; p = 2 P(t_df > |z|) >= the z p-value; one fit per study."""
    study = _study(1, 30, seed=4)
    analysis = ANALYSES["clmm_native"].function
    plain = analysis(study, None, structure="paper", df="z")
    fit = study.derived(("clmm_native_fit", "paper"), None)  # made by the first call, reused by the next
    corrected = analysis(study, None, structure="paper", df=df)
    assert study.derived(("clmm_native_fit", "paper"), None) is fit
    np.testing.assert_array_equal(corrected.estimate, plain.estimate)
    rule = {"design": small_sample.containment_df, "satterthwaite": small_sample.satterthwaite_df}[df]
    degrees = rule(study, fit, study.systems, "paper")
    assert np.all(np.isfinite(degrees) & (degrees > 0))
    statistic = stats.norm.isf(plain.p_value / 2)
    np.testing.assert_allclose(corrected.p_value, 2 * stats.t.sf(statistic, degrees), rtol=1e-6, atol=1e-12)
    assert np.all(corrected.p_value >= plain.p_value)


def test_an_unknown_df_is_refused_with_the_allowed_values():
    raw = {"name": "x", "model": "coherence", "effect": "zero", "trials": 2, "seed": 1,
           "designs": [{"kind": "block", "blocks": 1, "docs_per_block": 4, "annotators_per_block": 3}],
           "tests": [{"name": "clmm_native", "df": "kenward"}]}
    with pytest.raises(ConfigError, match="satterthwaite"):
        parse_config(raw)


@pytest.mark.slow
def test_containment_df_holds_alpha_with_three_and_six_crossed_annotators(tmp_path):
    """The option that holds its level on the Figure-4 grid (figures/small_sample_fig4_*.csv): at 3 and 6
    crossed annotators (1 and 2 blocks, 100 documents) its type I error may not exceed alpha by 4 MCSE.
    Wald z exceeds it there (about 0.16 and 0.09), so the test can fail."""
    from simdesign.studies.rates.engine import run_simulation
    from simdesign.studies.rates.summary import summarise

    raw = {"name": "small-sample", "model": "coherence", "effect": "zero", "trials": 300, "seed": 30,
           "designs": [{"kind": "block", "blocks": [1, 2], "docs_per_block": [100, 50], "annotators_per_block": 3}],
           "tests": [{"name": "clmm_native", "structure": "paper", "df": "design"}]}
    config = parse_config(raw)
    store = run_simulation(config, tmp_path / "run", raw, jobs=2, progress=False)
    summary = summarise(config, store.read_trials(trials=config.trials)).query("estimand == 'type1'")
    assert len(summary) == 2
    for row in summary.itertuples():
        assert row.trials == 300 and row.mcse < 0.01  # enough trials for the bound to mean something
        assert row.rate <= 0.05 + 4 * row.mcse, (row.design, row.rate, row.mcse)


def test_stores_from_before_df_are_accepted_only_by_the_z_test():
    """clmm_native's results stored before ``df`` existed are Wald z results, while the default is now
    'design' (AnalysisInfo.former_defaults): a test may resume them only with df z."""
    from simdesign.studies.rates.config import parse_analyses, stable_digest

    def spec(**options):
        errors = []
        specs = parse_analyses([{"name": "clmm_native", "structure": "paper", **options}], errors, {})
        assert not errors
        return specs[0]

    before_df = stable_digest({"name": "clmm_native", "options": {"structure": "paper", "adjust": "none"}})
    assert spec().options["df"] == "design" and before_df not in spec().accepted_fingerprints
    assert before_df not in spec(df="satterthwaite").accepted_fingerprints
    assert before_df in spec(df="z").accepted_fingerprints
    # an option without a former default still accepts the stores from before it at its default
    assert stable_digest({"name": "clmm_native", "options": {"structure": "paper", "df": "z"}}) \
        in spec(df="z").accepted_fingerprints


def test_verbose_prints_the_df_and_the_stored_p_values():
    from simdesign.significance.mixed_native import clmm_native_verbose

    study = _study(2, 5, seed=5)
    result = ANALYSES["clmm_native"].function(study, None, structure="paper")  # the default: df design
    text = clmm_native_verbose(study, structure="paper")
    header = text.index("pairwise contrasts")
    assert "p_stored: t with design df" in text[header:].splitlines()[0]
    rows = [line.split() for line in text[header:].splitlines()[2:]]
    assert len(rows) == 10
    for row, p_value in zip(rows, result.p_value):
        assert float(row[6]) == 5.0  # 6 annotators, 10 documents: containment df 5
        assert float(row[7]) == pytest.approx(p_value, rel=1e-4, abs=1e-6)  # printed to 6 decimals
