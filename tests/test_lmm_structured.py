"""The intercepts fast path of ``lmm_native`` (simdesign.lmm.structured) against the general path.

The general path (block elimination, L-BFGS-B in theta; ``lmm.fit(..., fast=False)``) equals lme4 and
lmerTest (tests/test_lmm_native.py); the fast path must give its numbers. Two kinds of checks:

* at the same theta, the two computations of the same quantities: REML criterion or deviance to 1e-8
  relative, fixed effects and their covariance to 1e-8, Satterthwaite df to 1e-6;
* at each path's own optimum: criterion to 1e-8 relative (the fast one never above the general one), fixed
  effects to 1e-8, Satterthwaite df to 1e-6. The covariance at the two optima differs by the general path's
  stopping rule (projected gradient 1e-7 in theta: theta to about 1e-7, measured up to 5e-6 at boundary
  optima, so covariances to about 1e-6 relative): it is compared at the same theta above, and to 1e-4 here.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simdesign import BlockDesign, Judgements, PoolDesign, load_model
from simdesign import lmm
from simdesign.significance.lmm_native import _contrast_rows
from simdesign.lmm import compiled, small_sample, structured
from simdesign.lmm.deviance import profile

SHARED = Path(__file__).parents[2] / "shared" / "data" / "steen-markert-2021" / "judgements"
SYSTEMS = ["__REFERENCE__", "abssentrw", "BART", "onmt_pg", "seneca"]


@pytest.fixture
def numpy_kernels():
    """The numpy kernels (the compiled ones are compared with them in their own test)."""
    compiled.use_numba(False)
    yield
    compiled.use_numba(True)


def _general_at(fit, theta):
    """The general path's numbers at ``theta``: criterion, fixed effects, covariance, Satterthwaite df and its
    note (tests/test_lmm_slopes.py compares its own fast path with them too)."""
    problem = fit.problem
    solved = profile(problem, theta)
    sigma = solved.sigma(problem.n_obs, fit.reml)
    covariance = sigma ** 2 * np.linalg.inv(solved.reduced[:problem.n_fixed, :problem.n_fixed])
    hessian, jacobian = small_sample.satterthwaite_parts(problem, theta, sigma, fit.reml)
    df, note = small_sample.satterthwaite_df(hessian, jacobian, covariance, _contrast_rows(len(fit.systems)))
    return solved.deviance(problem.n_obs, fit.reml), solved.beta, covariance, df, note


def _fast_df(fit):
    return structured.satterthwaite(fit.structured, fit.sigma, fit.covariance, _contrast_rows(len(fit.systems)))[0]


def check_same_theta(fit) -> dict:
    """The fast fit against the general path's formulas at the fast fit's theta."""
    deviance, beta, covariance, df, _ = _general_at(fit, fit.theta)
    scale = np.max(np.abs(covariance))
    gaps = {"deviance": abs(fit.deviance - deviance) / abs(deviance), "beta": np.max(np.abs(fit.beta - beta)),
            "covariance": np.max(np.abs(fit.covariance - covariance)) / scale,
            "df": np.max(np.abs(_fast_df(fit) / df - 1))}
    assert gaps["deviance"] < 1e-8 and gaps["beta"] < 1e-8 and gaps["covariance"] < 1e-8, gaps
    assert gaps["df"] < 1e-6, gaps
    return gaps


def check_own_optima(study, reml: bool) -> dict:
    """Both paths fitted: the same optimum."""
    fast = lmm.fit(study, "intercepts", reml=reml)
    general = lmm.fit(study, "intercepts", reml=reml, fast=False)
    assert fast.structured is not None and general.structured is None
    assert fast.status == general.status, (fast.status, general.status, fast.theta, general.theta)
    rows = _contrast_rows(len(fast.systems))
    hessian, jacobian = small_sample.satterthwaite_parts(general.problem, general.theta, general.sigma, reml)
    general_df, _ = small_sample.satterthwaite_df(hessian, jacobian, general.covariance, rows)
    gaps = {"deviance": (fast.deviance - general.deviance) / abs(general.deviance),
            "beta": np.max(np.abs(fast.beta - general.beta)),
            "covariance": np.max(np.abs(fast.covariance - general.covariance)) / np.max(np.abs(general.covariance)),
            "df": np.max(np.abs(_fast_df(fast) / general_df - 1))}
    assert gaps["deviance"] < 1e-8 and gaps["beta"] < 1e-8 and gaps["df"] < 1e-6, gaps
    assert gaps["covariance"] < 1e-4, gaps
    check_same_theta(fast)
    return gaps


def _unbalanced(study: Judgements, rng, keep=0.8) -> Judgements:
    """The study with a random fifth of its judgements left out (unequal counts per level)."""
    frame = study.to_frame()
    return frame[rng.random(len(frame)) < keep].reset_index(drop=True)


# --------------------------------------------------------------------------------------------- fast tests
def test_same_numbers_as_the_general_path_at_the_same_theta(numpy_kernels):
    study = load_model("coherence").sample(BlockDesign(1, 8, 3), np.random.default_rng(1))
    fit = lmm.fit(study, "intercepts")
    assert fit.structured is not None and fit.status in ("ok", "singular"), fit.message
    check_same_theta(fit)


def test_slopes_and_large_kept_terms_take_the_general_path(numpy_kernels):
    from simdesign.clmm.prepare import _columns

    study = load_model("coherence").sample(BlockDesign(1, 6, 3), np.random.default_rng(0))
    columns = _columns(study)
    assert structured.intercepts_problem(columns, {"annotator": "slopes", "document": "intercept"}) is None
    assert structured.intercepts_problem(columns, {"annotator": "intercept", "document": "intercept"}) is not None
    # the Problem of the general path is still there, made when asked for (Kenward-Roger, likelihood ratios)
    fit = lmm.fit(study, "intercepts")
    assert fit.structured is not None and fit.problem.n_obs == fit.n_obs == 90


def test_refusals_as_the_general_path(numpy_kernels):
    one_annotator = Judgements(scores=np.random.default_rng(0).integers(1, 8, size=(6, 5)),
                               annotator=np.zeros(6, dtype=np.int64), document=np.arange(6),
                               block=np.zeros(6, dtype=np.int64), systems=tuple(SYSTEMS))
    fast = lmm.fit(one_annotator, "intercepts")
    general = lmm.fit(one_annotator, "intercepts", fast=False)
    assert fast.status == general.status == "error" and fast.message == general.message


# ------------------------------------------------------------------------------------------------- slow
@pytest.mark.slow
def test_same_numbers_at_the_same_theta_on_every_kind_of_intercepts_fit(numpy_kernels):
    """Crossed, nested (two terms and one) and unbalanced data, REML and ML."""
    model = load_model("coherence")
    crossed = model.sample(BlockDesign(1, 12, 3), np.random.default_rng(1))
    nested = model.sample(BlockDesign(4, 3, 1), np.random.default_rng(2))
    unbalanced = _unbalanced(model.sample(BlockDesign(2, 6, 3), np.random.default_rng(3)), np.random.default_rng(4))
    for study, structure in ((crossed, "intercepts"), (nested, "intercepts"), (unbalanced, "intercepts"),
                             (crossed, {"document": "intercept"})):
        for reml in (True, False):
            fit = lmm.fit(study, structure, reml=reml)
            assert fit.structured is not None and fit.status in ("ok", "singular"), fit.message
            check_same_theta(fit)


def _designs():
    return {"crossed 3x100": BlockDesign(1, 100, 3), "crossed 3x40": BlockDesign(1, 40, 3),
            "blocks": BlockDesign(5, 8, 3), "nested": BlockDesign(12, 6, 1),
            "pool": PoolDesign(docs=40, annotators=12, judgements_per_output=3)}


@pytest.mark.slow
def test_same_optimum_as_the_general_path_on_random_designs(numpy_kernels):
    """Random studies of the regression designs of test_lmm_native (and the paper's crossed one), balanced and
    with a fifth of the judgements left out, REML and ML: 40 pairs of fits."""
    model = load_model("coherence")
    worst = {}
    for k, (name, design) in enumerate(_designs().items()):
        for seed in range(2):
            rng = np.random.default_rng(100 * k + seed)
            study = model.sample(design, rng)
            for data in (study, _unbalanced(study, rng)):
                for reml in (True, False):
                    for key, value in check_own_optima(data, reml).items():
                        worst[key] = max(worst.get(key, 0.0), value)
    print("largest gaps fast - general:", worst)


@pytest.mark.slow
def test_same_optimum_on_the_papers_likert_files(numpy_kernels):
    for task in ("coherence", "repetition"):
        path = SHARED / f"likert_{task}_cnn_dm.csv"
        if not path.exists():
            pytest.skip(f"the paper's judgements are not present at {path}")
        study = Judgements.from_frame(pd.read_csv(path), systems=SYSTEMS)
        for reml in (True, False):
            print(task, reml, check_own_optima(study, reml))


@pytest.mark.slow
def test_compiled_kernels_give_the_numpy_numbers():
    pytest.importorskip("numba")
    model = load_model("coherence")
    studies = [model.sample(design, np.random.default_rng(7)) for design in _designs().values()]
    fits = {}
    for use in (False, True):
        compiled.use_numba(use)
        try:
            assert compiled.is_compiled() == use
            fits[use] = [lmm.fit(study, "intercepts", reml=reml) for study in studies for reml in (True, False)]
            dfs = [_fast_df(fit) for fit in fits[use]]
        finally:
            compiled.use_numba(True)
        fits[use] = (fits[use], dfs)
    for a, b, df_a, df_b in zip(fits[False][0], fits[True][0], fits[False][1], fits[True][1]):
        assert a.status == b.status
        assert abs(a.deviance - b.deviance) < 1e-10 * abs(a.deviance)
        np.testing.assert_allclose(a.beta, b.beta, rtol=0, atol=1e-10)
        np.testing.assert_allclose(a.theta, b.theta, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(df_a, df_b, rtol=1e-7)


# ------------------------------------------------------------------------------- per-design reuse (issue 41)
def _fresh_problem(study, forms):
    """complete_intercepts_problem with its per-design cache emptied first (everything computed again)."""
    structured._LAYOUTS.clear()
    return structured.complete_intercepts_problem(study, forms)


def test_a_designs_cached_layout_gives_the_numbers_made_afresh():
    """The second study of a design reuses the first's codes and counts (structured._complete_layout): its
    problem equals one made with an empty cache, bit for bit, on balanced, nested and unbalanced (pool)
    designs; a problem's arrays are its own (changing them changes no later problem)."""
    model = load_model("coherence")
    forms = {"annotator": "intercept", "document": "intercept"}
    for design in (BlockDesign(1, 12, 3), BlockDesign(4, 3, 1), PoolDesign(docs=20, annotators=6,
                                                                         judgements_per_output=3)):
        first = model.sample(design, np.random.default_rng(1))
        fresh = [_fresh_problem(model.sample(design, np.random.default_rng(seed)), forms) for seed in (2, 3)]
        structured.complete_intercepts_problem(first, forms)
        for seed, expected in zip((2, 3), fresh):
            cached = structured.complete_intercepts_problem(model.sample(design, np.random.default_rng(seed)), forms)
            for name in ("grams", "counts", "numbers", "cross", "system_counts"):
                assert np.array_equal(getattr(cached, name), getattr(expected, name)), (design, name)
            assert (cached.names, cached.eliminated, cached.kept, cached.n_levels, cached.n_obs) == (
                expected.names, expected.eliminated, expected.kept, expected.n_levels, expected.n_obs)
            for name in ("grams", "counts", "numbers", "cross", "system_counts"):
                getattr(cached, name)[...] = np.nan
        again = structured.complete_intercepts_problem(model.sample(design, np.random.default_rng(2)), forms)
        assert np.array_equal(again.cross, fresh[0].cross) and np.array_equal(again.grams, fresh[0].grams)


def test_the_satterthwaite_pieces_kept_from_the_fit_equal_those_computed_again():
    """structured.satterthwaite_parts takes kernels.parts' numbers at the optimum from the fit (state.at): the
    same Hessian and Jacobian as computing them again at tau, bit for bit."""
    model = load_model("coherence")
    for design in (BlockDesign(1, 12, 3), BlockDesign(4, 3, 1)):
        for reml in (True, False):
            fit = lmm.fit(model.sample(design, np.random.default_rng(5)), "intercepts", reml=reml)
            assert fit.structured.at is not None
            kept = structured.satterthwaite_parts(fit.structured, fit.sigma)
            fit.structured.at = None
            again = structured.satterthwaite_parts(fit.structured, fit.sigma)
            assert np.array_equal(kept[0], again[0]) and np.array_equal(kept[1], again[1])


def test_a_study_too_large_for_the_layout_cache_is_computed_and_not_kept(monkeypatch):
    monkeypatch.setattr(structured, "LAYOUT_KEY_BYTES", 0)
    forms = {"annotator": "intercept", "document": "intercept"}
    study = load_model("coherence").sample(BlockDesign(1, 12, 3), np.random.default_rng(4))
    structured._LAYOUTS.clear()
    uncached = structured.complete_intercepts_problem(study, forms)
    assert not structured._LAYOUTS
    monkeypatch.setattr(structured, "LAYOUT_KEY_BYTES", 1 << 20)
    cached = structured.complete_intercepts_problem(study, forms)
    assert len(structured._LAYOUTS) == 1
    assert np.array_equal(uncached.grams, cached.grams) and np.array_equal(uncached.cross, cached.cross)


def test_the_first_fit_says_in_one_line_that_it_compiles_when_numbas_cache_is_empty(capsys):
    import types

    from simdesign.lmm.compiled import say_if_compiling

    def namespace(entries):  # the piece of numba's dispatcher the check reads: its on-disk cache index
        index = types.SimpleNamespace(_load_index=lambda: entries)
        return {"solve": types.SimpleNamespace(_cache=types.SimpleNamespace(_cache_file=index))}

    assert say_if_compiling(namespace({}))  # a fresh install: nothing cached yet
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "compiling lmm_native's kernels" in lines[0] and "warm_up" in lines[0]
    assert not say_if_compiling(namespace({("key",): "entry"})) and capsys.readouterr().err == ""
    assert not say_if_compiling({"solve": object()}) and capsys.readouterr().err == ""  # internals changed: silent


@pytest.mark.slow
def test_a_fresh_numba_cache_makes_the_first_fit_say_it_compiles(tmp_path):
    import subprocess
    import sys

    code = ("import numpy as np; from simdesign import BlockDesign, load_model; import simdesign.lmm as m; "
            "m.fit(load_model('coherence').sample(BlockDesign(1, 6, 3), np.random.default_rng(0)), 'intercepts')")
    env = {**__import__("os").environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    first, second = (subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
                     for _ in range(2))
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert "compiling lmm_native's kernels" in first.stderr
    assert "compiling" not in second.stderr  # the second process loads the cache
