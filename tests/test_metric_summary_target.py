"""Summary-level correlation: its bootstrap and its population value (simdesign.stats.summary_bootstrap,
simdesign.studies.metrics.metric_targets)."""
import numpy as np
import pytest

from simdesign import BlockDesign
from simdesign.model.metric import human_scores, population_model, sample_with_quality
from simdesign.studies.metrics.metric_validation import (parse_metric_config, run_metric_validation,
                                                         summarise_metric_validation)
from simdesign.studies.metrics.metric_targets import summary_level_target
from simdesign.stats.metric_correlation import summary_level
from simdesign.stats.summary_bootstrap import bootstrap_summary_level

from conftest import within_mcse


def test_bootstrap_resamples_are_summary_levels_of_resampled_matrices():
    rng = np.random.default_rng(8)
    metric = np.round(rng.normal(size=(6, 9)), 1)
    human = np.round(metric + rng.normal(size=(6, 9)), 0)
    human[:, 0] = 3.0  # an undefined document: left out
    for scheme in ("systems", "inputs", "both"):
        boot = bootstrap_summary_level(metric, human, scheme, np.random.default_rng(1), 40, ["pearson", "kendall"])
        draws = np.random.default_rng(1)
        rows = draws.integers(0, 6, size=(40, 6)) if scheme != "inputs" else np.tile(np.arange(6), (40, 1))
        columns = draws.integers(0, 9, size=(40, 9)) if scheme != "systems" else np.tile(np.arange(9), (40, 1))
        for method in ("pearson", "kendall"):
            expected = [summary_level(metric[r][:, c], human[r][:, c], method) for r, c in zip(rows, columns)]
            np.testing.assert_allclose(boot[method], expected, rtol=1e-12, err_msg=f"{scheme} {method}")


def _config(**changes):
    raw = {"name": "t", "model": "coherence", "metric": {"system_correlation": 0.9, "summary_correlation": 0.6},
           "annotators_per_document": 3, "summary_intervals": True, "systems": [5], "documents": [10], "trials": 4,
           "bootstrap_resamples": 40, "methods": ["pearson"], "seed": 2}
    raw.update(changes)
    return parse_metric_config(raw)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["normal", "resample"])
def test_summary_level_target_matches_studies_with_many_systems(kind):
    """The quadrature value against the mean summary-level correlation of simulated studies with 300 systems
    (its finite-sample bias, about rho (1 - rho^2) / (2 S) = 0.0004, is far below the MC error)."""
    config = _config(population={"kind": kind})
    target = summary_level_target(config)
    rng = np.random.default_rng(31)
    values = []
    for _ in range(10):
        effects = config.population.draw(np.asarray(config.model.effects, float), 300, rng)
        model = population_model(config.model, 300, effects)
        judgements, quality = sample_with_quality(model, BlockDesign(60, 1, 3), rng)
        metric = config.generator.scores(quality, rng)[0]
        values.append(summary_level(metric, human_scores(judgements), "pearson"))
    values = np.asarray(values)
    assert 0.3 < target < 0.6
    assert within_mcse(values.mean(), target, values.std(ddof=1) / np.sqrt(values.size)), (values.mean(), target)


def test_summary_intervals_are_summarised_against_their_target(tmp_path):
    config = _config()
    summary = summarise_metric_validation(run_metric_validation(config, tmp_path), config)
    rows = summary[summary["estimand"].isin(["summary_coverage", "summary_width"])]
    assert len(rows) == 6 and set(rows["scheme"]) == {"BOOT-SYSTEMS", "BOOT-INPUTS", "BOOT-BOTH"}
    assert np.allclose(rows["target"], summary_level_target(config)) and (rows["trials"] == 4).all()
    assert set(summary.loc[summary["estimand"] == "summary_coverage", "nominal"]) == {0.95}
    with pytest.raises(Exception, match="'summary_intervals' field must be true or false"):
        _config(summary_intervals="yes")
