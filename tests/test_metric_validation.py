"""The metric generator, its correlations, bootstrap intervals and permutation test (issue 16, part 4)."""
import numpy as np
import pytest
import yaml
from scipy import stats

from simdesign import BlockDesign, ConfigError, load_model
from simdesign.cli import main
from simdesign.model import covariance_square_root
from simdesign.model.metric import (MetricGenerator, MetricSpec, SystemPopulation, exchangeable_moments,
                                    population_model, sample_with_quality)
from simdesign.studies.metrics.metric_validation import parse_metric_config, system_level_targets
from simdesign.stats.metric_correlation import (bootstrap_system_level, correlation, percentile_interval,
                                                permutation_test, summary_level, system_level)

from conftest import within_mcse


def test_correlations_are_scipys():
    rng = np.random.default_rng(4)
    x = np.round(rng.standard_normal((4, 15)), 0)  # ties
    y = np.round(x + rng.standard_normal((4, 15)), 0)
    for method, function in (("pearson", stats.pearsonr), ("spearman", stats.spearmanr),
                             ("kendall", stats.kendalltau)):
        expected = [function(x[i], y[i])[0] for i in range(4)]
        np.testing.assert_allclose(correlation(x, y, method), expected, rtol=1e-12)
    metric, human = x, y  # rows systems, columns documents
    assert system_level(metric, human, "kendall") == pytest.approx(
        stats.kendalltau(metric.mean(axis=1), human.mean(axis=1))[0])
    assert summary_level(metric, human, "pearson") == pytest.approx(
        np.mean([stats.pearsonr(metric[:, d], human[:, d])[0] for d in range(15)]))


def test_sample_with_quality_is_sample_plus_the_document_parts(coherence):
    model = population_model(coherence, 6, np.random.default_rng(1).normal(size=6))
    design = BlockDesign(5, 1, 2)
    judgements, quality = sample_with_quality(model, design, np.random.default_rng(9))
    np.testing.assert_array_equal(judgements.scores, model.sample(design, np.random.default_rng(9)).scores)
    # the document parts written out from the model's definition: assignment, annotator normals, document normals
    rng = np.random.default_rng(9)
    assignment = design.assign(rng)
    rng.standard_normal((assignment.n_annotators, 6))
    rows = np.eye(6)
    rows[:, 0] = 1
    document = rng.standard_normal((assignment.n_documents, 6)) @ (rows @ covariance_square_root(
        model.document_cov, "d")).T
    np.testing.assert_allclose(quality, model.effects + document)


def test_population_model_has_exchangeable_parts_and_unchanged_probabilities(coherence):
    effects = np.array([0.3, -0.5, 1.2, 0.0])
    model = population_model(coherence, 4, effects)
    rows = np.eye(4)
    rows[:, 0] = 1
    parts = rows @ model.document_cov @ rows.T
    variance, covariance = exchangeable_moments(coherence.document_cov)
    np.testing.assert_allclose(np.diag(parts), variance)
    np.testing.assert_allclose(parts[~np.eye(4, dtype=bool)], covariance, atol=1e-12)
    # shifting effects and thresholds together leaves every threshold - effect difference as drawn
    np.testing.assert_allclose(model.thresholds[None, :] - model.effects[:, None],
                               coherence.thresholds[None, :] - effects[:, None])


@pytest.mark.slow
def test_generator_correlations_match_their_analytic_values(coherence):
    """Within-document correlation with quality = rho_sum; system-level with the effects at D documents, analytic."""
    population = SystemPopulation("normal")
    spec = MetricSpec(summary_correlation=0.6, system_correlation=0.8, document_sd=2.0)
    generator = MetricGenerator.for_population(coherence, population, [spec])
    bias_sd, noise_sd = spec.noise_sds(generator.effect_variance, generator.quality_variance)
    n_systems, n_documents, replicates = 60, 40, 60
    variance, covariance = exchangeable_moments(coherence.document_cov)
    summary_values, system_values = [], []
    rng = np.random.default_rng(2021)
    for _ in range(replicates):
        effects = population.draw(coherence.effects, n_systems, rng)
        model = population_model(coherence, n_systems, effects)
        _, quality = sample_with_quality(model, BlockDesign(n_documents, 1, 1), rng)
        metric = generator.scores(quality, rng)[0]
        # pooled within-document correlation: centring per document scales both variances and the covariance
        # by the same (S - 1) / S, so it estimates the population within-document correlation without bias
        q = quality.T - quality.T.mean(axis=0)
        m = metric - metric.mean(axis=0)
        summary_values.append((q * m).sum() / np.sqrt((q * q).sum() * (m * m).sum()))
        system_values.append(correlation(metric.mean(axis=1), effects))
    tau2 = generator.effect_variance
    system_target = np.sqrt(tau2) / np.sqrt(tau2 + bias_sd ** 2 + (variance - covariance + noise_sd ** 2) / n_documents)
    for values, target in ((summary_values, 0.6), (system_values, system_target)):
        values = np.asarray(values)
        assert within_mcse(values.mean(), target, values.std(ddof=1) / np.sqrt(replicates)), (values.mean(), target)


def test_impossible_metric_targets_are_refused(coherence):
    with pytest.raises(ConfigError, match="summary_correlation.*above"):
        MetricGenerator.for_population(coherence, SystemPopulation(), [MetricSpec(0.95, 0.5)])
    with pytest.raises(ConfigError, match=r"'metric.system_correlation' field must be in \(0, 1\]"):
        MetricSpec(0.5, 1.5)


def _bivariate_study(rng, n_systems, n_documents, rho, noise_sd):
    """Rows: systems drawn with (human, metric) effects bivariate normal, correlation rho; plus per-output noise."""
    effects = rng.multivariate_normal([0, 0], [[1, rho], [rho, 1]], size=n_systems)
    human = effects[:, :1] + noise_sd * rng.standard_normal((n_systems, n_documents))
    metric = effects[:, 1:] + noise_sd * rng.standard_normal((n_systems, n_documents))
    return metric, human


@pytest.mark.slow
def test_bootstrap_coverage_on_a_case_with_a_known_answer():
    """Negligible document noise: BOOT-SYSTEMS covers the population correlation about 95% of the time, and
    BOOT-INPUTS, which treats the systems as fixed, almost never does."""
    rng = np.random.default_rng(16)
    trials, rho = 400, 0.6
    covered = {"systems": [], "inputs": []}
    for trial in range(trials):
        metric, human = _bivariate_study(rng, 40, 50, rho, noise_sd=0.05)
        for scheme in covered:
            boot = bootstrap_system_level(metric, human, scheme, np.random.default_rng([trial, 1]), 400, ["pearson"])
            low, high = percentile_interval(boot["pearson"])
            covered[scheme].append(low <= rho <= high)
    systems, inputs = np.mean(covered["systems"]), np.mean(covered["inputs"])
    assert within_mcse(systems, 0.95, np.sqrt(0.95 * 0.05 / trials)), systems
    assert inputs < 0.2, inputs


def _null_rejections(system_bias: float, scheme: str, trials: int = 300) -> float:
    """Two metrics with the same population correlation with the human scores; share of p < 0.05."""
    rng = np.random.default_rng(7)
    rejections = []
    for trial in range(trials):
        base = rng.standard_normal((10, 1))
        human = base + rng.standard_normal((10, 20))
        first = base + rng.standard_normal((10, 20)) + system_bias * rng.standard_normal((10, 1))
        second = base + rng.standard_normal((10, 20)) + system_bias * rng.standard_normal((10, 1))
        p_value = permutation_test(first, second, human, np.random.default_rng(trial), 200, scheme=scheme)[1]
        rejections.append(p_value < 0.05)
    return float(np.mean(rejections))


@pytest.mark.slow
def test_permutation_tests_hold_their_level_when_their_units_are_exchangeable():
    standard_error = np.sqrt(0.05 * 0.95 / 300)
    # outputs exchangeable (no system bias): per-output and per-system swaps are both exact
    for scheme in ("both", "systems"):
        rate = _null_rejections(0.0, scheme)
        assert within_mcse(rate, 0.05, standard_error), (scheme, rate)
    # each metric with its own system biases: only whole systems are exchangeable
    assert within_mcse(_null_rejections(1.0, "systems"), 0.05, standard_error)
    assert _null_rejections(1.0, "both") > 0.3


def test_system_level_targets_of_a_normal_population(coherence):
    config = parse_metric_config({"name": "t", "model": "coherence", "metric": {"system_correlation": 0.8,
                                                                               "summary_correlation": 0.5}})
    targets = system_level_targets(config)
    assert targets["kendall"] == pytest.approx(2 / np.pi * np.arcsin(0.8))
    assert targets["spearman"] == pytest.approx(6 / np.pi * np.arcsin(0.4))
    # the expected human score is increasing and nearly linear in the effect over the population: Pearson just
    # below rho_sys
    assert 0.79 < targets["pearson"] < 0.8


@pytest.mark.slow
def test_metric_validation_command_runs_and_rejects_bad_input(tmp_path, capsys):
    config = {"name": "tiny", "model": "coherence", "metric": {"system_correlation": 0.8, "summary_correlation": 0.5},
              "second_metric": {"system_correlation": 0.5, "summary_correlation": 0.4}, "systems": [5],
              "documents": [8], "trials": 4, "bootstrap_resamples": 50, "permutation_resamples": 50, "seed": 1}
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(config))
    assert main(["metric-validation", str(path), "--out", str(tmp_path / "out"), "--quiet",
                 "--figure", str(tmp_path / "figure")]) == 0
    assert (tmp_path / "figure.png").is_file() and (tmp_path / "out" / "summary.csv").is_file()
    path.write_text(yaml.safe_dump({**config, "systems": [2], "population": {"kind": "uniform"}}))
    assert main(["metric-validation", str(path), "--quiet"]) == 2
    error = capsys.readouterr().err
    assert "'systems' field must be at least 3" in error and "'population.kind' field must be one of" in error


def test_resampled_population_draws_the_presets_effects_and_leaves_rank_targets_empty(coherence):
    draws = SystemPopulation("resample").draw(coherence.effects, 200, np.random.default_rng(3))
    assert set(np.round(draws, 12)) <= set(np.round(coherence.effects, 12)) and len(set(draws)) == 5
    config = parse_metric_config({"name": "t", "model": "coherence", "population": {"kind": "resample"},
                                  "metric": {"system_correlation": 0.8, "summary_correlation": 0.5}})
    targets = system_level_targets(config)
    assert np.isnan(targets["kendall"]) and np.isnan(targets["spearman"]) and 0.7 < targets["pearson"] < 0.8
