"""clmm_native as a registry analysis: orientation, the paper's verdicts, failure handling."""
import numpy as np
import pandas as pd
import pytest

from simdesign import BlockDesign, Judgements, load_model
from simdesign.significance import ANALYSES, system_pairs

from conftest import SHARED_DATA

SYSTEMS = ["__REFERENCE__", "abssentrw", "BART", "onmt_pg", "seneca"]


@pytest.fixture(scope="module")
def paper():
    frame = pd.read_csv(SHARED_DATA / "judgements" / "likert_coherence_cnn_dm.csv")
    return Judgements.from_frame(frame, systems=SYSTEMS)


@pytest.mark.parametrize("structure", ["intercepts", "paper"])
def test_paper_verdicts_on_the_real_coherence_data(paper, structure):
    """Steen & Markert (2021), Table 2: all pairs but ref vs ASR differ (BART > PG > ref, ASR > Seneca)."""
    result = ANALYSES["clmm_native"].function(paper, None, structure=structure)
    assert result.fit_status in ("ok", "singular")
    pairs = system_pairs(5)
    means = paper.scores.mean(axis=0)
    significant = result.p_value < 0.05
    assert not significant[pairs.index((0, 1))] and significant.sum() == 9
    for column, (i, j) in enumerate(pairs):
        if significant[column]:
            assert np.sign(result.estimate[column]) == np.sign(means[i] - means[j])


def test_estimates_follow_the_model_order_not_the_sorted_order():
    """The fit orders systems by name (BART first); the analysis must return model-order pairs."""
    model = load_model("coherence")
    data = model.sample(BlockDesign(10, 5, 2), np.random.default_rng(3), effect=2.0)
    result = ANALYSES["clmm_native"].function(data, None, structure="intercepts")
    from simdesign import clmm
    fit = clmm.fit(data.to_frame(), structure="intercepts", reference=SYSTEMS[0])
    for column, (i, j) in enumerate(system_pairs(5)):
        expected = fit.fixed_effects[SYSTEMS[i]] - fit.fixed_effects[SYSTEMS[j]]
        assert result.estimate[column] == pytest.approx(expected, abs=1e-10)
    # at twice the fitted effects, BART (index 2) beats Seneca (index 4) on the latent scale
    assert result.estimate[system_pairs(5).index((2, 4))] > 0


@pytest.mark.slow
def test_holm_adjustment_only_raises_p_values(paper):
    plain = ANALYSES["clmm_native"].function(paper, None, structure="intercepts")
    holm = ANALYSES["clmm_native"].function(paper, None, structure="intercepts", adjust="holm")
    assert np.all(holm.p_value >= plain.p_value - 1e-12)
    np.testing.assert_allclose(holm.estimate, plain.estimate)


@pytest.mark.slow
def test_a_fit_that_cannot_work_is_a_failure_not_a_p_value():
    """One annotator judging everything: annotator variance is not identifiable with one level."""
    scores = np.random.default_rng(0).integers(1, 8, size=(6, 5))
    data = Judgements(scores=scores, annotator=np.zeros(6, dtype=int), document=np.arange(6), block=np.zeros(6, int),
                      systems=tuple(SYSTEMS))
    from simdesign.significance.base import run_analysis
    result = run_analysis(ANALYSES["clmm_native"], data, None, {"structure": "maximal", "adjust": "none"})
    if result.fit_status in ("error", "not_converged"):
        assert np.isnan(result.p_value).all()
    else:  # a boundary fit is allowed, but then it must say so
        assert result.fit_status == "singular"


class _ZeroVarianceFit:
    """Stands in for a ClmmResult whose covariance gives one contrast a zero standard error."""

    status, message, optimizer_message, hessian_condition = "ok", "", "", 1.0
    loglik, structure, terms, systems = -100.0, "intercepts", ["annotator", "document"], ["a", "b", "c", "d", "e"]
    starts, starts_tried, start_kept, start_gain, starts_text = "single", 1, "default", 0.0, "1"

    def effects_in(self, order):
        effects = np.array([0.0, 0.5, 1.0, -0.2, 0.3])
        covariance = np.eye(4) * 0.04
        covariance[2, 2] = covariance[3, 3] = covariance[2, 3] = covariance[3, 2] = 0.04  # var(b3 - b4) = 0
        return effects, covariance


def test_zero_standard_error_is_an_error_not_a_rejection(monkeypatch):
    """A zero SE would give z = inf and p = 0; the shared guard makes that pair an 'error'."""
    from simdesign.significance import mixed_native

    monkeypatch.setattr(mixed_native, "_fit", lambda judgements, structure, starts: _ZeroVarianceFit())
    data = load_model("coherence").sample(BlockDesign(4, 5, 2), np.random.default_rng(0))
    result = ANALYSES["clmm_native"].function(data, None, structure="intercepts", df="z")
    broken = system_pairs(5).index((3, 4))
    assert result.status[broken] == "error" and np.isnan(result.p_value[broken]) and np.isnan(result.estimate[broken])
    others = np.arange(10) != broken
    assert set(result.status[others]) == {"ok"} and np.all(result.p_value[others] > 0)
    assert "standard error" in result.message
    # the same rule as the R backends' (one function)
    from simdesign.significance import mixed_r
    from simdesign.significance.base import pairwise_from_fit
    assert mixed_native.pairwise_from_fit is pairwise_from_fit is mixed_r.pairwise_from_fit


def test_verbose_prints_contrasts_as_stored():
    """replay --verbose: the model's system order and beta_i - beta_j, the same rows as the stored results
    (the fit itself orders systems by name: BART before abssentrw)."""
    from simdesign.significance.mixed_native import clmm_native_verbose

    data = load_model("coherence").sample(BlockDesign(6, 5, 2), np.random.default_rng(5))
    result = ANALYSES["clmm_native"].function(data, None, structure="intercepts", df="z")
    text = clmm_native_verbose(data, structure="intercepts", df="z")
    header = text.index("pairwise contrasts")
    rows = [line.split() for line in text[header:].splitlines()[2:]]
    assert len(rows) == 10
    for row, (i, j), estimate, p_value in zip(rows, system_pairs(5), result.estimate, result.p_value):
        assert row[:2] == [SYSTEMS[i], SYSTEMS[j]]
        assert float(row[2]) == pytest.approx(estimate, abs=1e-5)
        assert float(row[5]) == pytest.approx(p_value, rel=1e-4, abs=1e-12)
    # a hand-made check of one sign: abssentrw minus BART from the fitted effects
    from simdesign import clmm
    fit = clmm.fit(data.to_frame(), structure="intercepts", reference=SYSTEMS[0])
    asr_bart = fit.fixed_effects["abssentrw"] - fit.fixed_effects["BART"]
    assert float(rows[system_pairs(5).index((1, 2))][2]) == pytest.approx(asr_bart, abs=1e-5)


def test_fit_contrasts_follow_the_order_given():
    from simdesign import clmm

    data = load_model("coherence").sample(BlockDesign(6, 5, 2), np.random.default_rng(5))
    fit = clmm.fit(data.to_frame(), structure="intercepts", reference=SYSTEMS[0])
    assert fit.systems[1] == "BART"  # the fit's own order: the others sorted by name
    for order in (fit.systems, SYSTEMS):
        table = fit.contrasts(order)
        assert list(zip(table["system_a"], table["system_b"])) == [(order[i], order[j]) for i, j in system_pairs(5)]
        expected = [fit.fixed_effects[a] - fit.fixed_effects[b] for a, b in zip(table["system_a"], table["system_b"])]
        np.testing.assert_allclose(table["estimate"], expected, atol=1e-12)
        np.testing.assert_allclose(table["z"], table["estimate"] / table["se"])
    default = fit.contrasts()
    assert list(default["system_a"])[:4] == [fit.systems[0]] * 4
