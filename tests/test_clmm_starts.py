"""The refit rule of ``clmm.fit`` (``starts='codings'``): the same optimum whatever the reference system.

The oracle is R: ``ordinal::clmm(score ~ system + (system|annotator) + (system|document))``
(logit, Laplace) on the four files of Steen & Markert (2021), coded against ``__REFERENCE__``;
its log-likelihoods are written here as R printed them (4 decimals; the Likert ones are also in
tests/fixtures/clmm_r/paper_*__maximal.json). Before the rule, 3 of the 20 (file, coding) fits
stopped at a worse boundary optimum (rank_repetition against __REFERENCE__ or BART: -2297.4295;
likert_repetition against abssentrw: -2201.1298).
"""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from simdesign import BlockDesign, clmm, load_model
from simdesign.clmm.codings import map_coding
from simdesign.core.errors import ConfigError
from tests.conftest import REPO, SHARED_DATA

JUDGEMENTS = SHARED_DATA / "judgements"
needs_data = pytest.mark.skipif(not JUDGEMENTS.is_dir(), reason="the shared Steen & Markert data are not present")

# logLik of ordinal::clmm, maximal structure, reference __REFERENCE__ (the independent check of issue 30).
R_LOGLIK = {"likert_coherence": -2544.1884, "likert_repetition": -2200.9332,
            "rank_coherence": -2013.4352, "rank_repetition": -2296.3931}
CODINGS = ("__REFERENCE__", "abssentrw", "BART", "onmt_pg", "seneca")


def _paper_table(name: str) -> pd.DataFrame:
    """A file as ``simdesign analyse`` models it (ranks reversed: higher = better, as the paper and R did)."""
    from simdesign.tables.recognise import orient

    frame = pd.read_csv(JUDGEMENTS / f"{name}_cnn_dm.csv")
    return orient(frame, "rank" if name.startswith("rank") else "likert")[0]


def test_the_r_values_agree_with_the_committed_r_fits():
    """The Likert oracle values are the committed R fits' (so the numbers above are R's, not ours)."""
    for name, fixture in (("likert_coherence", "paper_coherence"), ("likert_repetition", "paper_repetition")):
        fitted = json.loads((REPO / "tests/fixtures/clmm_r" / f"{fixture}__maximal.json").read_text())
        assert fitted["loglik"] == pytest.approx(R_LOGLIK[name], abs=5e-5)


@needs_data
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(R_LOGLIK))
def test_every_coding_reaches_r_optimum(name):
    frame = _paper_table(name)
    fits = {reference: clmm.fit(frame, "maximal", reference=reference) for reference in CODINGS}
    loglik = np.array([fit.loglik for fit in fits.values()])
    assert np.ptp(loglik) < 1e-4, dict(zip(CODINGS, loglik))
    assert loglik == pytest.approx(R_LOGLIK[name], abs=1e-4)
    for fit in fits.values():
        assert fit.status in ("ok", "singular") and fit.starts == "codings"
        assert fit.starts_tried == (len(CODINGS) if fit.status == "singular" else 1)


@needs_data
def test_rank_repetition_against_bart_keeps_another_codings_optimum():
    """The case the rule was made for, in the fast tier: BART's own start stops short of R's optimum."""
    frame = _paper_table("rank_repetition")
    fit = clmm.fit(frame, "maximal", reference="BART")
    single = clmm.fit(frame, "maximal", reference="BART", starts="single")
    assert fit.loglik == pytest.approx(R_LOGLIK["rank_repetition"], abs=1e-4)
    assert fit.starts_tried == 5 and fit.start_kept.startswith("reference ") and fit.start_gain > 1e-4
    assert fit.loglik - single.loglik == pytest.approx(fit.start_gain, abs=1e-6)
    assert single.starts_tried == 1 and single.start_kept == "default" and single.starts == "single"
    assert "5 tried" in str(fit.summary()) and "kept the optimum from reference" in fit.starts_text


def test_a_change_of_reference_maps_a_point_to_the_same_loglik():
    """map_coding is exact: a point and its image in another coding have the same Laplace log-likelihood,
    also for a singular factor (rank-deficient Cholesky factors), and mapping back returns the point."""
    from simdesign.clmm.layout import _Layout, _Objective
    from simdesign.clmm.prepare import _prepare

    frame = load_model("coherence").sample(BlockDesign(3, 5, 3), np.random.default_rng(4)).to_frame()
    layouts = {ref: _Layout(_prepare(frame, "maximal", ref)) for ref in ("__REFERENCE__", "BART")}
    source = layouts["__REFERENCE__"]
    rng = np.random.default_rng(7)
    factor = np.tril(rng.normal(0.0, 0.4, (5, 5)))
    factor[:, 3:] = 0.0  # rank 3, as the paper's annotator covariances
    np.fill_diagonal(factor, np.abs(np.diag(factor)))
    point = source.pack(np.linspace(-2.0, 2.0, 6), rng.normal(0.0, 0.5, 4),
                        {"annotator": factor, "document": np.eye(5) * 0.3})
    image = map_coding(point, source, layouts["BART"])
    value = {ref: _Objective(layout.problem, layout).natural(vector, with_gradient=False)[0]
             for ref, layout, vector in (("__REFERENCE__", source, point), ("BART", layouts["BART"], image))}
    assert value["BART"] == pytest.approx(value["__REFERENCE__"], rel=1e-10)
    back = map_coding(image, layouts["BART"], source)
    _, _, cholesky = source.unpack(back)
    assert np.allclose(back[:10], point[:10], atol=1e-12)
    assert np.allclose(cholesky["annotator"] @ cholesky["annotator"].T, factor @ factor.T, atol=1e-12)


def test_codings_rule_is_deterministic_and_only_refits_boundary_or_unconverged_fits():
    frame = load_model("repetition").sample(BlockDesign(2, 5, 3), np.random.default_rng(11)).to_frame()
    first, second = (clmm.fit(frame, "paper", reference="__REFERENCE__") for _ in range(2))
    assert first.loglik == second.loglik and np.array_equal(first.effects, second.effects)
    assert first.start_kept == second.start_kept and first.starts_tried == second.starts_tried
    assert first.starts_tried == (5 if first.status in clmm.REFIT_STATUSES else 1)
    single = clmm.fit(frame, "paper", reference="__REFERENCE__", starts="single")
    assert first.loglik >= single.loglik - clmm.STARTS_MIN_GAIN
    if first.start_kept == "default":  # the default start's optimum, untouched by the other starts
        assert np.array_equal(first.effects, single.effects) and first.loglik == single.loglik


def test_bad_start_rule_is_a_config_error():
    frame = load_model("coherence").sample(BlockDesign(1, 3, 2), np.random.default_rng(0)).to_frame()
    with pytest.raises(ConfigError, match="starts must be one of"):
        clmm.fit(frame, "intercepts", starts="jitter")


def test_the_registry_offers_the_fitters_start_rules():
    from simdesign.significance import ANALYSES
    from simdesign.significance.mixed_native import STARTS

    assert STARTS == clmm.START_RULES
    assert ANALYSES["clmm_native"].options["starts"] == (STARTS, "single")


def test_an_intercept_only_term_maps_onto_itself():
    """With (1 + system | annotator) + (1 | document) (simdesign fit's 'auto' on a nested pilot) the
    document intercept keeps its variance and its held elements stay 0 in every coding."""
    from simdesign.clmm.layout import _Layout, _Objective
    from simdesign.clmm.prepare import _prepare

    frame = load_model("coherence").sample(BlockDesign(8, 5, 1), np.random.default_rng(3)).to_frame()
    structure = {"annotator": "slopes", "document": "intercept"}
    layouts = {ref: _Layout(_prepare(frame, structure, ref)) for ref in ("__REFERENCE__", "seneca")}
    fitted = clmm.fit(frame, structure, reference="__REFERENCE__", starts="single")
    source = layouts["__REFERENCE__"]
    point = source.pack(fitted.thresholds, fitted.effects[1:],
                        {"annotator": fitted.cholesky_factors["annotator"],
                         "document": np.pad(fitted.cholesky_factors["document"], ((0, 4), (0, 4)))})
    image = map_coding(point, source, layouts["seneca"])
    assert np.all(image[layouts["seneca"].fixed_mask()] == 0.0)
    _, _, cholesky = layouts["seneca"].unpack(image)
    assert cholesky["document"][0, 0] == pytest.approx(fitted.cholesky_factors["document"][0, 0], rel=1e-12)
    value = {ref: _Objective(layout.problem, layout).natural(vector, with_gradient=False)[0]
             for ref, layout, vector in (("__REFERENCE__", source, point), ("seneca", layouts["seneca"], image))}
    assert value["seneca"] == pytest.approx(value["__REFERENCE__"], rel=1e-10)
    assert value["__REFERENCE__"] == pytest.approx(-fitted.loglik, rel=1e-10)
