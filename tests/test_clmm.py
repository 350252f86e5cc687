"""Tests of simdesign.clmm, the native cumulative link mixed model.

Known-answer tests compare with ``ordinal::clmm`` fits stored as JSON under
tests/fixtures/clmm_r/ (made by scripts/r/clmm_fixtures.R from the data sets
written by scripts/clmm_fixture_data.py; R itself is not needed here).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simdesign import clmm
from simdesign.significance.base import relative_cholesky_is_singular, wald_contrasts
from simdesign.core.designs import BlockDesign, PoolDesign
from simdesign.core.errors import ConfigError
from simdesign.core.judgements import Judgements

FIXTURES = Path(__file__).parent / "fixtures" / "clmm_r"
R_FITS = sorted(FIXTURES.glob("*__*.json"))

# Agreement required with ordinal::clmm (issue 4).
PARAMETER_TOLERANCE = 0.005  # thresholds and fixed effects, absolute
LOGLIK_TOLERANCE = 0.01
SD_RELATIVE_TOLERANCE = 0.02  # relative; absolute below SD_FLOOR, where boundary SDs are ~0
SD_FLOOR = 0.05
Z_RELATIVE_TOLERANCE = 0.01  # relative; absolute below |z| = 1


def load_frame(name: str) -> pd.DataFrame:
    return pd.read_csv(FIXTURES / f"{name}.csv")


@pytest.fixture(scope="module")
def block_frame() -> pd.DataFrame:
    return load_frame("sim_coherence_block")


@pytest.fixture(scope="module")
def small_frame(block_frame) -> pd.DataFrame:
    """Two of the six blocks of the simulated block design: 150 judgements, fast to refit."""
    blocks = sorted(block_frame["annotator"].unique())[:6]
    return block_frame[block_frame["annotator"].isin(blocks)].reset_index(drop=True)


# ------------------------------------------------------------------------------------------------
# Known answers: ordinal::clmm
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", R_FITS, ids=[p.stem for p in R_FITS])
def test_matches_ordinal_clmm(path):
    reference = json.loads(path.read_text())
    systems = reference["systems"]
    result = clmm.fit(load_frame(reference["dataset"]), reference["structure"], reference=systems[0])
    assert result.systems == systems
    assert result.terms == sorted(reference["random_effects_cov"], key=["annotator", "document"].index)
    assert result.converged
    if reference["optimizer_convergence"] != 0:
        # R stopped early (nlminb's iteration limit): the native optimum must be at least as good.
        assert result.loglik >= reference["loglik"] - LOGLIK_TOLERANCE
        return

    assert result.loglik == pytest.approx(reference["loglik"], abs=LOGLIK_TOLERANCE)
    np.testing.assert_allclose(result.thresholds, reference["thresholds"], atol=PARAMETER_TOLERANCE)
    r_beta = np.array([reference["fixed_effects"][s] for s in systems])
    np.testing.assert_allclose(result.effects, r_beta, atol=PARAMETER_TOLERANCE)
    for name in result.terms:
        r_sd = np.atleast_1d(np.asarray(reference["random_effects_sd"][name], float))
        scale = np.maximum(r_sd, SD_FLOOR)
        assert np.all(np.abs(result.random_effects_sd[name] - r_sd) / scale < SD_RELATIVE_TOLERANCE), name
    if not reference.get("fixed_effects_cov"):
        # R's own Hessian was not positive definite (its vcov failed): nothing more to compare.
        assert reference.get("vcov_error")
        return
    r_est, r_se, _ = wald_contrasts(r_beta, np.atleast_2d(reference["fixed_effects_cov"]))
    r_z = r_est / r_se
    native_z = result.contrasts()["z"].to_numpy()
    assert np.all(np.abs(native_z - r_z) / np.maximum(np.abs(r_z), 1.0) < Z_RELATIVE_TOLERANCE)

    r_singular = any(relative_cholesky_is_singular(np.atleast_2d(c)) for c in reference["random_effects_cov"].values())
    assert result.status == ("singular" if r_singular else "ok")


R_AT_NATIVE = FIXTURES / "r_loglik_at_native_parameters.json"
NATIVE_PARAMETERS = FIXTURES / "native_parameters.json"


def r_loglik_at_native_cases() -> list:
    if not (R_AT_NATIVE.exists() and NATIVE_PARAMETERS.exists()):
        return []
    parameters = {entry["fit"]: entry for entry in json.loads(NATIVE_PARAMETERS.read_text())}
    return [(parameters[entry["fit"]], entry["r_loglik"]) for entry in json.loads(R_AT_NATIVE.read_text())]


@pytest.mark.parametrize("entry, r_loglik", r_loglik_at_native_cases(),
                         ids=[case[0]["fit"] for case in r_loglik_at_native_cases()])
def test_laplace_loglik_equals_ordinals_at_the_same_parameters(entry, r_loglik):
    """ordinal's own Laplace objective (getNLA), evaluated at stored parameters, equals ours there.

    This checks the likelihood itself, whichever optimiser found the parameters
    (it covers the fits where R stopped early at a lower optimum).
    """
    problem = clmm._prepare(load_frame(entry["dataset"]), entry["structure"], entry["systems"][0])
    layout = clmm._Layout(problem)
    cholesky = {}
    for name, parts in entry["cholesky"].items():
        q = len(parts["diagonal"])
        factor = np.diag(parts["diagonal"])
        cols, rows = np.triu_indices(q, 1)
        factor[rows, cols] = parts["lower"]
        cholesky[name] = factor
    vector = layout.pack(entry["thresholds"], entry["effects"], cholesky)
    nll, _ = clmm._Objective(problem, layout).natural(vector, with_gradient=False)
    # ordinal stops its mode search at max|gradient| < 1e-4, which moves its value by ~1e-8.
    assert -nll == pytest.approx(r_loglik, abs=1e-5)


# ------------------------------------------------------------------------------------------------
# The analytic gradient
# ------------------------------------------------------------------------------------------------

@pytest.fixture(params=["numpy", "compiled"])
def code_path(request):
    """Run a test on the numpy code and on the compiled kernels (skipped without numba)."""
    if request.param == "compiled":
        pytest.importorskip("numba")
    clmm.set_accelerator(request.param == "compiled")
    yield request.param
    clmm.set_accelerator(True)


@pytest.mark.parametrize("structure", ["maximal", "intercepts"])
def test_analytic_gradient_matches_finite_differences(small_frame, structure, code_path):
    problem = clmm._prepare(small_frame, structure, "__REFERENCE__")
    layout = clmm._Layout(problem)
    objective = clmm._Objective(problem, layout)
    rng = np.random.default_rng(4)
    point = clmm._starting_values(problem, layout) + 0.2 * rng.standard_normal(layout.size)
    point[:layout.n_thr] = np.sort(point[:layout.n_thr])
    _, gradient = objective.natural(point)
    step = 1e-5
    numeric = np.empty_like(point)
    for k in range(layout.size):
        plus, minus = point.copy(), point.copy()
        plus[k] += step
        minus[k] -= step
        numeric[k] = (objective.natural(plus, False)[0] - objective.natural(minus, False)[0]) / (2 * step)
    np.testing.assert_allclose(gradient, numeric, atol=1e-5 * max(1.0, np.abs(numeric).max()))


def test_laplace_value_matches_dense_computation(small_frame, code_path):
    """The structured (Schur complement, per-component) log-determinant equals a dense one."""
    problem = clmm._prepare(small_frame, "maximal", "__REFERENCE__")
    layout = clmm._Layout(problem)
    point = clmm._starting_values(problem, layout)
    thresholds, beta, cholesky = layout.unpack(point)
    beta_full = np.concatenate([[0.0], beta])
    start = {f.name: np.zeros((f.n_levels, problem.q)) for f in problem.factors}
    u, value, terms, fact, _, _ = clmm._mode(problem, thresholds, beta_full, cholesky, start)
    blocks = []
    for f in problem.factors:
        loading = problem.z @ cholesky[f.name]
        dense = np.zeros((problem.n_obs, f.n_levels * problem.q))
        for level in range(problem.q):
            dense[np.arange(problem.n_obs), f.codes * problem.q + level] = loading[:, level]
        blocks.append(dense)
    design = np.hstack(blocks)
    hessian = np.eye(design.shape[1]) + design.T @ (terms.w[:, None] * design)
    assert fact.log_det == pytest.approx(np.linalg.slogdet(hessian)[1], rel=1e-10)


@pytest.mark.parametrize("dataset, structure", [("sim_coherence_block", "maximal"), ("sim_coherence_block", "intercepts"),
                                                ("sim_coherence_nested", "paper")])
def test_compiled_kernels_give_the_numpy_value_and_gradient(dataset, structure):
    """The compiled kernels compute the numpy code's Laplace value and gradient at an arbitrary point.

    Covers two random-effects terms (with the Schur complement) and one term (the nested design).
    """
    pytest.importorskip("numba")
    problem = clmm._prepare(load_frame(dataset), structure, "__REFERENCE__")
    layout = clmm._Layout(problem)
    rng = np.random.default_rng(5)
    point = clmm._starting_values(problem, layout) + 0.3 * rng.standard_normal(layout.size)
    point[:layout.n_thr] = np.sort(point[:layout.n_thr])
    values = {}
    for compiled in (False, True):
        clmm.set_accelerator(compiled)
        try:
            values[compiled] = clmm._Objective(problem, layout).natural(point)
        finally:
            clmm.set_accelerator(True)
    assert values[True][0] == pytest.approx(values[False][0], rel=1e-12)
    np.testing.assert_allclose(values[True][1], values[False][1], rtol=1e-8,
                               atol=1e-8 * np.abs(values[False][1]).max())
    # Where probabilities underflow, both paths fail the same way (the optimiser then backs off).
    hopeless = point.copy()
    hopeless[layout.n_thr:layout.n_thr + layout.n_beta] = 800.0
    for compiled in (False, True):
        clmm.set_accelerator(compiled)
        try:
            with pytest.raises(clmm.ModeSearchError, match="underflow"):
                clmm._Objective(problem, layout).natural(hopeless)
        finally:
            clmm.set_accelerator(True)


def test_failing_compiled_kernels_fall_back_to_numpy_with_a_warning(monkeypatch, small_frame):
    pytest.importorskip("numba")
    from simdesign import _clmm_numba

    def broken(*args, **kwargs):
        raise TypeError("simulated compilation failure")

    monkeypatch.setattr(_clmm_numba, "evaluate", broken)  # the kernel a fit calls (one per evaluation)
    try:
        with pytest.warns(RuntimeWarning, match="numpy instead"):
            assert not clmm.set_accelerator(True)
        assert clmm.fit(small_frame, "intercepts").status in ("ok", "singular")
    finally:
        monkeypatch.undo()
        clmm.set_accelerator(True)


@pytest.mark.slow  # a second or more: the fast tier stays under a minute
def test_kernels_failing_for_a_later_dimension_fall_back_to_numpy_before_the_fit(monkeypatch, small_frame):
    # The kernels compile for each random-effects dimension q on its first use: a failure there must cost a
    # warning and the numpy code, not the fit.
    pytest.importorskip("numba")
    from simdesign import _clmm_numba
    from simdesign.clmm.compiled import _accelerator

    working = _clmm_numba.evaluate

    def fails_for_q5(*args):
        if any(isinstance(arg, tuple) and len(arg) == 5 for arg in args):
            raise TypeError("simulated compilation failure for q = 5")
        return working(*args)

    clmm.set_accelerator(False)
    numpy_fit = clmm.fit(small_frame, "maximal")
    monkeypatch.setattr(_clmm_numba, "evaluate", fails_for_q5)
    try:
        assert clmm.set_accelerator(True)  # q = 1 compiles
        with pytest.warns(RuntimeWarning, match="numpy instead"):
            result = clmm.fit(small_frame, "maximal")
        assert _accelerator() is None  # switched off for the rest of the process, as after a failed first check
        assert result.loglik == numpy_fit.loglik and result.status == numpy_fit.status
    finally:
        monkeypatch.undo()
        clmm.set_accelerator(True)


# ------------------------------------------------------------------------------------------------
# Behaviour
# ------------------------------------------------------------------------------------------------

def test_contrasts_orientation_and_p_values(small_frame):
    result = clmm.fit(small_frame, "intercepts", reference="__REFERENCE__")
    table = result.contrasts()
    systems = result.systems
    expected_pairs = [(systems[i], systems[j]) for i in range(len(systems)) for j in range(i + 1, len(systems))]
    assert list(zip(table["system_a"], table["system_b"])) == expected_pairs
    for row in table.itertuples():
        assert row.estimate == pytest.approx(result.fixed_effects[row.system_a] - result.fixed_effects[row.system_b])
    estimate, se, p = wald_contrasts(result.effects, result.fixed_effects_cov)
    np.testing.assert_allclose(table["estimate"], estimate)
    np.testing.assert_allclose(table["se"], se)
    np.testing.assert_allclose(table["p"], p)
    np.testing.assert_allclose(table["z"], estimate / se)


def test_effects_in_model_order_give_the_same_contrasts(small_frame):
    result = clmm.fit(small_frame, "intercepts", reference="__REFERENCE__")
    model_order = ["__REFERENCE__", "abssentrw", "BART", "onmt_pg", "seneca"]
    effects, covariance = result.effects_in(model_order)
    estimate, se, _ = wald_contrasts(effects, covariance)
    table = result.contrasts().set_index(["system_a", "system_b"])
    pairs = [(model_order[i], model_order[j]) for i in range(5) for j in range(i + 1, 5)]
    for (a, b), est, s in zip(pairs, estimate, se):
        sign = 1.0 if (a, b) in table.index else -1.0
        row = table.loc[(a, b)] if sign > 0 else table.loc[(b, a)]
        assert est == pytest.approx(sign * row["estimate"])
        assert s == pytest.approx(row["se"])
    with pytest.raises(ValueError, match="reference"):
        result.effects_in(model_order[1:] + model_order[:1])


def test_default_reference_is_first_in_python_sorted_order(small_frame):
    result = clmm.fit(small_frame, "intercepts")
    assert result.systems == sorted(small_frame["system"].unique())
    assert result.systems[0] == "BART"  # uppercase sorts before '_' in Python, unlike R's collation
    assert result.fixed_effects["BART"] == 0.0
    explicit = clmm.fit(small_frame, "intercepts", reference="__REFERENCE__")
    # Changing the reference only shifts the effects.
    shift = explicit.fixed_effects["BART"]
    for system in result.systems:
        assert result.fixed_effects[system] == pytest.approx(explicit.fixed_effects[system] - shift, abs=1e-4)
    assert result.loglik == pytest.approx(explicit.loglik, abs=1e-6)


def test_paper_structure_drops_document_term_only_for_nested_data(small_frame):
    nested = load_frame("sim_coherence_nested")
    assert clmm.is_nested(nested)
    paper = clmm.fit(nested, "paper", reference="__REFERENCE__")
    assert paper.terms == ["annotator"]
    assert set(paper.random_effects_cov) == {"annotator"}
    assert paper.random_effects_cov["annotator"].shape == (5, 5)
    assert not clmm.is_nested(small_frame)
    problem = clmm._prepare(small_frame, "paper", "__REFERENCE__")
    assert [f.name for f in problem.factors] == ["annotator", "document"]


@pytest.mark.parametrize("design, structure", [
    (BlockDesign(2, 5, 3), "paper"), (BlockDesign(10, 2, 1), "paper"), (BlockDesign(2, 5, 3), "intercepts"),
    (BlockDesign(2, 5, 3), {"annotator": "slopes", "document": "intercept"})],
    ids=["crossed-paper", "nested-paper", "crossed-intercepts", "mapping"])
def test_judgements_are_fitted_as_their_table(coherence, design, structure):
    """The analysis passes Judgements straight to fit (no table): every number must be the table's."""
    judgements = coherence.sample(design, np.random.default_rng(11))
    direct = clmm.fit(judgements, structure, reference=judgements.systems[1])
    via_table = clmm.fit(judgements.to_frame(), structure, reference=judgements.systems[1])
    assert direct.systems == via_table.systems and direct.terms == via_table.terms
    assert direct.status == via_table.status and direct.n_levels == via_table.n_levels
    assert direct.loglik == via_table.loglik and direct.n_evaluations == via_table.n_evaluations
    np.testing.assert_array_equal(direct.thresholds, via_table.thresholds)
    assert direct.fixed_effects == via_table.fixed_effects
    np.testing.assert_array_equal(direct.fixed_effects_cov, via_table.fixed_effects_cov)
    for name in direct.terms:
        np.testing.assert_array_equal(direct.cholesky_factors[name], via_table.cholesky_factors[name])


def test_judgements_with_one_score_value_are_refused_as_their_table_is(coherence):
    judgements = coherence.sample(BlockDesign(2, 5, 3), np.random.default_rng(11))
    constant = Judgements(scores=np.full_like(judgements.scores, 3), annotator=judgements.annotator,
                          document=judgements.document, block=judgements.block, systems=judgements.systems)
    for data in (constant, constant.to_frame()):
        with pytest.raises(ConfigError, match="two distinct values"):
            clmm.fit(data)


@pytest.mark.parametrize("design, nested", [(BlockDesign(6, 2, 1), True), (BlockDesign(2, 5, 3), False),
                                            (PoolDesign(10, 6, 2), False), (PoolDesign(12, 6, 1), True)])
def test_nesting_is_read_alike_from_a_study_and_its_table(coherence, design, nested):
    judgements = coherence.sample(design, np.random.default_rng(3))
    assert clmm.is_nested(judgements) is nested
    assert clmm.is_nested(judgements.to_frame()) is nested


def test_intercepts_structure_returns_one_by_one_covariances(small_frame):
    result = clmm.fit(small_frame, "intercepts", reference="__REFERENCE__")
    assert result.terms == ["annotator", "document"]
    assert all(cov.shape == (1, 1) for cov in result.random_effects_cov.values())
    assert result.fixed_effects_cov.shape == (4, 4)
    assert result.thresholds.shape == (6,)


def test_boundary_fit_is_reported_singular():
    """No document variation at all: for this seed the document SD lands exactly on the bound 0."""
    rng = np.random.default_rng(2)
    rows = []
    annotator_effect = rng.normal(0, 1.0, 12)
    for annotator in range(12):
        for document in range(10):
            for system, beta in zip("ABC", (0.0, 0.5, 1.0)):
                latent = beta + annotator_effect[annotator] + rng.logistic()
                rows.append((annotator, document, system, int(np.digitize(latent, [-1.5, 0.0, 1.5]))))
    frame = pd.DataFrame(rows, columns=["annotator", "document", "system", "score"])
    result = clmm.fit(frame, "intercepts")
    assert result.status == "singular"
    assert result.converged
    assert result.boundary["document"][0]
    assert result.random_effects_cov["document"][0, 0] == 0.0
    assert "singular" in result.message


def test_numerical_failure_becomes_error_status(small_frame, monkeypatch):
    def broken(*args, **kwargs):
        raise clmm.ModeSearchError("simulated breakdown")

    monkeypatch.setattr(clmm.laplace, "_mode", broken)  # where _laplace looks it up
    monkeypatch.setattr(clmm.compiled._CompiledEvaluation, "__call__", broken)  # the compiled kernels' evaluation
    result = clmm.fit(small_frame, "intercepts")
    assert result.status == "error"
    assert not result.converged
    assert "simulated breakdown" in result.message
    assert np.isnan(result.loglik)


# ------------------------------------------------------------------------------------------------
# Bad input
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("column", ["annotator", "document", "system", "score"])
def test_missing_column_is_named(small_frame, column):
    with pytest.raises(ConfigError, match=column):
        clmm.fit(small_frame.drop(columns=column))


@pytest.mark.parametrize("column", ["annotator", "document", "system", "score"])
def test_missing_values_name_the_column(small_frame, column):
    frame = small_frame.copy()
    frame[column] = frame[column].astype(object)
    frame.loc[3, column] = None
    with pytest.raises(ConfigError, match=f"'{column}'"):
        clmm.fit(frame)


def test_non_numeric_score_is_rejected(small_frame):
    frame = small_frame.assign(score=small_frame["score"].astype(str))
    with pytest.raises(ConfigError, match="'score'"):
        clmm.fit(frame)


def test_bad_structure_and_reference_are_rejected(small_frame):
    with pytest.raises(ConfigError, match="structure"):
        clmm.fit(small_frame, structure="random")
    with pytest.raises(ConfigError, match="nonexistent"):
        clmm.fit(small_frame, reference="nonexistent")
    with pytest.raises(ConfigError, match="'system'"):
        clmm.fit(small_frame.assign(system="only"))


def test_hessian_null_direction_in_covariance_parameters_is_projected_out():
    """A flat direction among Cholesky elements gives the effects' covariance of fixing one of them."""
    rng = np.random.default_rng(3)
    n_fixed = 4
    basis = rng.standard_normal((6, 6))
    identified = basis @ basis.T + np.eye(6)
    # The likelihood depends on the last two of 7 parameters only through their sum.
    merge = np.hstack([np.eye(6), np.eye(6)[:, -1:]])
    hessian = merge.T @ identified @ merge
    cov, _, null_directions = clmm._invert_hessian(hessian, n_fixed)
    assert null_directions == 1
    np.testing.assert_allclose(cov[:n_fixed, :n_fixed], np.linalg.inv(identified)[:n_fixed, :n_fixed], rtol=1e-8)

    # A flat direction that moves a fixed effect, or a saddle, leaves no usable covariance.
    merge_fixed = np.hstack([np.eye(6), np.eye(6)[:, :1]])
    with pytest.raises(np.linalg.LinAlgError, match="fixed effects"):
        clmm._invert_hessian(merge_fixed.T @ identified @ merge_fixed, n_fixed)
    with pytest.raises(np.linalg.LinAlgError, match="saddle"):
        clmm._invert_hessian(np.diag([3.0, 2.0, 2.0, 1.0, 1.0, 1.0, -0.5]), n_fixed)


# ------------------------------------------------------------------------------------------------
# summary()
# ------------------------------------------------------------------------------------------------

def _header_value(text: str, label: str) -> str:
    line = next(line for line in text.splitlines() if line.startswith(label))
    return line[len(label):].strip()


def test_summary_reports_the_fits_own_numbers(small_frame):
    result = clmm.fit(small_frame, {"annotator": "slopes", "document": "intercept"}, reference="__REFERENCE__")
    summary = result.summary()
    text = str(summary)
    assert _header_value(text, "Formula:") == "score ~ system + (1 + system | annotator) + (1 | document)"
    assert int(_header_value(text, "Judgements:")) == len(small_frame) == 150
    assert int(_header_value(text, "Annotators:")) == small_frame["annotator"].nunique()
    assert int(_header_value(text, "Documents:")) == small_frame["document"].nunique()
    assert float(_header_value(text, "Log-likelihood:")) == round(result.loglik, 4)
    assert _header_value(text, "Status:") == result.status
    table = summary.coefficients
    assert len(table) == len(result.thresholds) + len(result.systems) - 1
    effects = table.loc[[f"system[{s}]" for s in result.systems[1:]]]
    np.testing.assert_allclose(effects["estimate"], result.effects[1:])
    np.testing.assert_allclose(effects["se"], np.sqrt(np.diag(result.fixed_effects_cov)))
    np.testing.assert_allclose(table["estimate"].iloc[:len(result.thresholds)], result.thresholds)
    # the threshold SEs come from the inverse Hessian's leading block
    np.testing.assert_allclose(table["se"].iloc[:len(result.thresholds)],
                               np.sqrt(np.diag(result.parameter_cov))[:len(result.thresholds)])
    np.testing.assert_allclose(table["ci_upper"] - table["estimate"], 1.959964 * table["se"], rtol=1e-6)
    # the system pairs that include the reference: the same z and p as contrasts() (sign flipped)
    reference_pairs = result.contrasts().iloc[:len(result.systems) - 1]
    np.testing.assert_allclose(effects["z"], -reference_pairs["z"].to_numpy())
    np.testing.assert_allclose(effects["p"], reference_pairs["p"].to_numpy())
    sds = summary.random_effects
    np.testing.assert_allclose(sds.loc[sds["term"] == "annotator", "sd"], result.random_effects_sd["annotator"])
    np.testing.assert_allclose(sds.loc[sds["term"] == "document", "sd"], result.random_effects_sd["document"])
    cov = result.random_effects_cov["annotator"]
    expected = cov[1, 0] / np.sqrt(cov[0, 0] * cov[1, 1])
    assert sds.loc[(sds["term"] == "annotator") & (sds["component"] != "(intercept)"), "corr with 1"].iloc[0] \
        == pytest.approx(expected)
    for label in table.index:
        assert label in text


def test_summary_of_a_failed_fit_prints_without_numbers(small_frame, monkeypatch):
    def broken(*args, **kwargs):
        raise clmm.ModeSearchError("simulated breakdown")

    monkeypatch.setattr(clmm.laplace, "_mode", broken)  # where _laplace looks it up
    monkeypatch.setattr(clmm.compiled._CompiledEvaluation, "__call__", broken)  # the compiled kernels' evaluation
    text = str(clmm.fit(small_frame, "intercepts").summary())
    assert _header_value(text, "Status:") == "error"
    assert "simulated breakdown" in text


@pytest.mark.slow
def test_summary_loglik_matches_ordinal_clmm_to_the_printed_digits():
    reference = json.loads((FIXTURES / "paper_coherence__intercepts.json").read_text())
    result = clmm.fit(load_frame("paper_coherence"), "intercepts", reference=reference["systems"][0])
    text = str(result.summary())
    printed = float(_header_value(text, "Log-likelihood:"))
    assert printed == pytest.approx(reference["loglik"], abs=0.5e-4 + 1e-3)
    assert int(_header_value(text, "Judgements:")) == reference["n_judgements"]
    assert _header_value(text, "Formula:") == reference["formula"]
