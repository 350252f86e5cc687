"""The slopes fast path of ``lmm_native`` (simdesign.lmm.slopes) against the general path.

The general path (block elimination, L-BFGS-B in theta; ``lmm.fit(..., fast=False)``) equals lme4 and
lmerTest (tests/test_lmm_native.py); the slopes path (annotator slopes with or without document intercepts:
lme4's ``(1 + system | annotator) + (1 | document)``, and 'paper' on nested data) must give its numbers:

* at the same theta, the two computations of the same quantities: REML criterion or deviance to 1e-8
  relative, fixed effects and their covariance to 1e-8, Satterthwaite df to 1e-6 (measured: 2e-14, 1e-12,
  1e-13 and 1e-10);
* at each path's own optimum: the fast criterion never above the general one by more than 1e-10 relative,
  fixed effects to 1e-6. The two optima differ by the general path's stopping rule (L-BFGS-B's projected
  gradient 1e-7 in theta: theta to about 1e-7, measured up to 7e-7 at these rank-deficient optima), which moves
  the fixed effects of unbalanced data by about 1e-9 (measured up to 2e-8); in balanced data they are the
  system means whatever theta (1e-13). Where the general path stops short of the optimum (lmerTest's
  negative-eigenvalue note at its fit) the fast one is lower and the fixed effects differ more (measured
  once: 1.7e-5 relative lower, fixed effects 3e-4 apart): such seeds are not used for the 1e-6 check.
"""
from __future__ import annotations

import numpy as np
import pytest

from simdesign import BlockDesign, Judgements, PoolDesign, load_model
from simdesign import lmm
from simdesign.significance import ANALYSES, run_analysis
from simdesign.significance.lmm_native import _contrast_rows
from simdesign.lmm import compiled, slopes

# the numpy-kernels fixture and the general path's numbers at a theta, shared with the intercepts' fast path
from test_lmm_structured import _general_at, numpy_kernels  # noqa: F401

SLOPES = {"annotator": "slopes", "document": "intercept"}


def _fast_df(fit):
    return fit.structured.satterthwaite(fit.sigma, fit.covariance, _contrast_rows(len(fit.systems)))


def check_same_theta(fit) -> dict:
    """The fast fit against the general path's formulas at the fast fit's theta."""
    assert isinstance(fit.structured, slopes.SlopesState), fit.structure
    deviance, beta, covariance, df, note = _general_at(fit, fit.theta)
    fast_df, fast_note = _fast_df(fit)
    gaps = {"deviance": abs(fit.deviance - deviance) / abs(deviance), "beta": np.max(np.abs(fit.beta - beta)),
            "covariance": np.max(np.abs(fit.covariance - covariance)) / np.max(np.abs(covariance)),
            "df": np.max(np.abs(fast_df / df - 1))}
    assert gaps["deviance"] < 1e-8 and gaps["beta"] < 1e-8 and gaps["covariance"] < 1e-8, gaps
    assert gaps["df"] < 1e-6 and bool(fast_note) == bool(note), (gaps, fast_note, note)
    return gaps


def check_own_optima(study, structure, reml: bool) -> dict:
    """Both paths fitted: the fast optimum at or below the general one, the same fixed effects."""
    fast = lmm.fit(study, structure, reml=reml)
    general = lmm.fit(study, structure, reml=reml, fast=False)
    assert general.structured is None
    assert fast.status == general.status, (fast.status, general.status, fast.message, general.message)
    gap = (fast.deviance - general.deviance) / abs(general.deviance)
    assert gap < 1e-10, (gap, fast.theta, general.theta)
    *_, general_df, note = _general_at(general, general.theta)
    gaps = {"deviance": gap, "beta": np.max(np.abs(fast.beta - general.beta))}
    if not note:  # the general path at an optimum (else it stopped short of it: see the module docstring)
        assert gaps["beta"] < 1e-6, gaps
        gaps["df"] = np.max(np.abs(_fast_df(fast)[0] / general_df - 1))
        assert gaps["df"] < 1e-4, gaps
    check_same_theta(fast)
    return gaps


def _unbalanced(study: Judgements, rng, keep=0.8):
    """The study with a random fifth of its judgements left out (unequal counts per level)."""
    frame = study.to_frame()
    return frame[rng.random(len(frame)) < keep].reset_index(drop=True)


def _systems(study: Judgements, n: int) -> Judgements:
    """The study's first ``n`` systems only (n = 2: MCPower's binary treatment with a random slope)."""
    return Judgements(scores=study.scores[:, :n], annotator=study.annotator, document=study.document,
                      block=study.block, systems=tuple(study.systems[:n]))


@pytest.mark.slow
def test_same_numbers_at_the_same_theta_on_every_kind_of_slopes_fit(numpy_kernels):
    """Crossed (5 and 2 systems), blocks, nested (with and without the document term), pool and unbalanced
    data, REML and ML."""
    model = load_model("coherence")
    crossed = model.sample(BlockDesign(1, 30, 3), np.random.default_rng(1))
    nested = model.sample(BlockDesign(6, 4, 1), np.random.default_rng(2))
    cases = [(crossed, SLOPES), (_systems(crossed, 2), SLOPES), (nested, "paper"), (nested, SLOPES),
             (model.sample(BlockDesign(4, 6, 3), np.random.default_rng(3)), SLOPES),
             (model.sample(PoolDesign(docs=20, annotators=8, judgements_per_output=3), np.random.default_rng(4)),
              SLOPES),
             (_unbalanced(model.sample(BlockDesign(2, 8, 3), np.random.default_rng(5)), np.random.default_rng(6)),
              SLOPES)]
    for study, structure in cases:
        for reml in (True, False):
            fit = lmm.fit(study, structure, reml=reml)
            assert fit.status in ("ok", "singular"), fit.message
            check_same_theta(fit)


@pytest.mark.slow
def test_same_optimum_as_the_general_path(numpy_kernels):
    """The benchmark's design (3 annotators x 100 documents) and a nested one, balanced and with a fifth of the
    judgements left out, REML and ML; the binary treatment of MCPower's one-slope design."""
    model = load_model("coherence")
    worst = {}
    studies = [(model.sample(BlockDesign(1, 100, 3), np.random.default_rng(7001)), SLOPES),
               (model.sample(BlockDesign(4, 6, 1), np.random.default_rng(7002)), "paper")]
    studies.append((_unbalanced(studies[0][0], np.random.default_rng(7003)), SLOPES))
    studies.append((_systems(model.sample(BlockDesign(1, 40, 3), np.random.default_rng(7004)), 2), SLOPES))
    for study, structure in studies:
        for reml in (True, False):
            for key, value in check_own_optima(study, structure, reml).items():
                worst[key] = max(worst.get(key, -np.inf), value)
    print("largest gaps fast - general:", worst)


@pytest.mark.slow
def test_which_structures_take_the_slopes_path(numpy_kernels):
    model = load_model("coherence")
    crossed = model.sample(BlockDesign(1, 10, 3), np.random.default_rng(0))
    assert isinstance(lmm.fit(crossed, SLOPES).structured, slopes.SlopesState)
    assert isinstance(lmm.fit(crossed.to_frame(), SLOPES).structured, slopes.SlopesState)  # a long table
    assert lmm.fit(crossed, {"annotator": "slopes", "document": "slopes"}, fast=True).structured is None
    assert lmm.fit(crossed, "maximal").structured is None
    # more kept columns than MAX_KEPT_COLUMNS (17 annotators x 5 systems): the general path
    many = model.sample(BlockDesign(17, 2, 1), np.random.default_rng(1))
    assert lmm.fit(many, "paper").structured is None
    fit = lmm.fit(crossed, SLOPES)
    assert fit.terms == ("annotator", "document") and len(fit.theta) == 16 and fit.problem.n_obs == fit.n_obs
    # lme4's refusal: as many random effects as judgements (2 annotators x 5 systems, 10 judgements)
    tiny = Judgements(scores=np.arange(10.0).reshape(2, 5), annotator=np.array([0, 1]), document=np.array([0, 1]),
                      block=np.zeros(2, dtype=np.int64), systems=tuple(crossed.systems))
    fast, general = lmm.fit(tiny, SLOPES), lmm.fit(tiny, SLOPES, fast=False)
    assert fast.status == general.status == "error" and fast.message == general.message
    assert fast.theta.shape == general.theta.shape


@pytest.mark.slow
def test_lmm_native_on_a_nested_design_takes_the_slopes_path_with_the_general_paths_p_values(numpy_kernels,
                                                                                              monkeypatch):
    """'paper' on nested data (annotator slopes alone): the registry's analysis through the slopes path gives the
    general path's p-values."""
    study = load_model("coherence").sample(BlockDesign(4, 6, 1), np.random.default_rng(8))
    info = ANALYSES["lmm_native"]
    fast = run_analysis(info, study, None, {})
    original, general_fits = lmm.fit, []

    def general_fit(*args, **kwargs):
        general_fits.append(original(*args, **kwargs, fast=False))
        return general_fits[-1]

    monkeypatch.setattr(lmm, "fit", general_fit)
    general = run_analysis(info, load_model("coherence").sample(BlockDesign(4, 6, 1), np.random.default_rng(8)),
                           None, {})
    assert len(general_fits) == 1 and general_fits[0].structured is None
    assert fast.fit_status == general.fit_status
    np.testing.assert_allclose(fast.p_value, general.p_value, rtol=1e-5, atol=1e-10)


@pytest.mark.slow
def test_compiled_slopes_kernels_give_the_numpy_numbers():
    pytest.importorskip("numba")
    model = load_model("coherence")
    studies = [model.sample(BlockDesign(1, 40, 3), np.random.default_rng(9)),
               model.sample(BlockDesign(3, 6, 3), np.random.default_rng(10))]
    out = {}
    for use in (False, True):
        compiled.use_numba(use)
        try:
            assert compiled.is_compiled() == use
            fits = [lmm.fit(study, SLOPES, reml=reml) for study in studies for reml in (True, False)]
            out[use] = [(fit, _fast_df(fit)[0]) for fit in fits]
        finally:
            compiled.use_numba(True)
    for (a, df_a), (b, df_b) in zip(out[False], out[True]):
        assert a.status == b.status
        assert abs(a.deviance - b.deviance) < 1e-10 * abs(a.deviance)
        np.testing.assert_allclose(a.beta, b.beta, rtol=0, atol=1e-10)
        np.testing.assert_allclose(a.theta, b.theta, rtol=0, atol=1e-6)
        np.testing.assert_allclose(df_a, df_b, rtol=1e-6)
