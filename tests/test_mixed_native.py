"""clmm_native as a registry analysis: orientation, the paper's verdicts, failure handling."""
import numpy as np
import pandas as pd
import pytest

from simdesign import BlockDesign, Judgements, load_model
from simdesign.analyses import ANALYSES, system_pairs

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


def test_holm_adjustment_only_raises_p_values(paper):
    plain = ANALYSES["clmm_native"].function(paper, None, structure="intercepts")
    holm = ANALYSES["clmm_native"].function(paper, None, structure="intercepts", adjust="holm")
    assert np.all(holm.p_value >= plain.p_value - 1e-12)
    np.testing.assert_allclose(holm.estimate, plain.estimate)


def test_a_fit_that_cannot_work_is_a_failure_not_a_p_value():
    """One annotator judging everything: annotator variance is not identifiable with one level."""
    scores = np.random.default_rng(0).integers(1, 8, size=(6, 5))
    data = Judgements(scores=scores, annotator=np.zeros(6, dtype=int), document=np.arange(6), block=np.zeros(6, int),
                      systems=tuple(SYSTEMS))
    from simdesign.analyses.base import run_analysis
    result = run_analysis(ANALYSES["clmm_native"], data, None, {"structure": "maximal", "adjust": "none"})
    if result.fit_status in ("error", "not_converged"):
        assert np.isnan(result.p_value).all()
    else:  # a boundary fit is allowed, but then it must say so
        assert result.fit_status == "singular"
