"""Validating an automatic metric by simulation (Deutsch, Dror and Roth 2021): a config, a runner, a figure.

Each trial draws ``systems`` systems from a population around the model
(:mod:`simdesign.model.metric`), simulates a study in which every one of
``documents`` documents is judged by ``annotators_per_document`` annotators
of its own (a block design with one document per block, so annotators
average out over documents), scores every output with one or two
automatic metrics, and computes

* ``system_correlation`` and ``summary_correlation``: the correlation
  (Pearson, Spearman, Kendall) between the first metric and the human
  scores (mean judgement per output) at the system and summary level;
* ``coverage`` and ``width`` of the 95% percentile bootstrap intervals of the
  system-level correlation that resample systems, inputs or both
  (:mod:`simdesign.stats.metric_correlation`). The target an interval is
  meant to cover is the system-level correlation over both populations
  (infinitely many systems and documents): for Pearson
  rho_sys x corr(beta, h(beta)), where h(beta) is the expected human score of
  a system with effect beta (one-dimensional Gauss-Hermite integrals over
  the population and the random effects); for Spearman and Kendall, as h is
  increasing, those of a bivariate normal with correlation rho_sys,
  (6 / pi) asin(rho_sys / 2) and (2 / pi) asin(rho_sys) (normal populations
  only: with resampled effects the rank targets are left empty);
* with ``summary_intervals: true``, ``summary_coverage`` and
  ``summary_width`` of the same three intervals of the summary-level Pearson
  correlation (:mod:`simdesign.stats.summary_bootstrap`), whose target is
  its population value: rho_sum times the within-document correlation of
  the latent quality with the human score, a few-dimensional integral over
  the model (:mod:`simdesign.studies.metrics.metric_targets`);
* with ``heldout: true``, ``heldout_coverage``: Deutsch et al.'s held-out
  protocol, the share of trials in which each interval (the three bootstrap
  ones and Fisher's) covers the system-level correlation of an independent
  study of new systems and documents of the same sizes
  (``heldout_correlation``); it answers "will a replication's correlation
  fall in my interval?", while ``coverage`` answers "does my interval hold
  the population correlation?". The held-out correlation varies from study
  to study, so the held-out protocol asks more of an interval;
* ``coverage`` and ``width`` with scheme ``Fisher``: the Fisher z interval of
  the same correlation (n = systems; Bonett and Wright's variances for
  Spearman and Kendall; :func:`simdesign.stats.metric_comparison.fisher_interval`),
  the baseline the bootstrap intervals are compared with;
* ``permutation_power``: the share of trials in which the permutation test
  (PERM-SYSTEMS, swapping whole systems, PERM-INPUTS, whole documents, and
  PERM-BOTH, single outputs) finds the two metrics' system-level Pearson
  correlations with the human scores different at ``alpha``, two-sided (its
  type I error when both metrics have the same targets; PERM-BOTH is not
  valid when the metrics have system biases of their own, see
  :func:`simdesign.stats.metric_correlation.permutation_test`);
  ``paired_bootstrap_power`` and ``williams_power`` the same for the paired
  bootstrap test on BOOT-BOTH resamples and Williams' test
  (:mod:`simdesign.stats.metric_comparison`).

scripts/check_bootstrap_coverage.py checks a different interval (``simdesign analyse``'s intervals
of each system's mean score); the conventions are shared: the trial (study) is the unit, rates get
Wilson intervals.

The trial is the unit: every rate's MCSE is the SD of its per-trial values
over sqrt(trials), its interval Wilson's; means get mean +- 1.96 MCSE.
Streams: one data stream per (cell, trial) and one per (cell, trial,
interval scheme or test), from the root seed (:mod:`simdesign.core.seeds`),
so the results do not depend on the number of workers or the chunking.
Each finished chunk of trials is stored at once
(:mod:`simdesign.studies.metrics.metric_store`): an interrupted run resumes.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from joblib import delayed
from scipy import special
from simdesign.core.threads import single_threaded

from simdesign.core.designs import BlockDesign
from simdesign.core.errors import ConfigError, from_mapping
from simdesign.core.estimands import Estimand, is_rate, register_estimand
from simdesign.core.seeds import analysis_rng, data_rng
from simdesign.model.metric import (MetricGenerator, MetricSpec, SystemPopulation, exchangeable_moments,
                                    human_scores, population_model, sample_with_quality)
from simdesign.core.suggest import suggestions
from simdesign.studies.rates.config import likert_model_or_problem, read_config_mapping, resolve_model
from simdesign.runner.execute import backend_spec
from simdesign.runner.study import StudyKind, TrialChunk, run_trials, study_field_problems
from simdesign.studies.example_configs import read_examples
from simdesign.studies.metrics.metric_store import ROW_COLUMNS, metric_store
from simdesign.studies.metrics.metric_targets import summary_level_target
from simdesign.stats.metric_comparison import fisher_interval, paired_bootstrap_test, williams_test
from simdesign.stats.metric_correlation import (METHODS, SCHEMES, bootstrap_system_level, percentile_interval,
                                                permutation_test, summary_level, system_level)
from simdesign.stats.montecarlo import mean_interval, wilson_interval
from simdesign.stats.summary_bootstrap import bootstrap_summary_level
from simdesign.core.checks import is_integer, is_number
from simdesign.core.fields import field_problem

KEYS = ("name", "description", "model", "population", "metric", "second_metric", "error_correlation", "systems",
        "documents", "annotators_per_document", "methods", "trials", "bootstrap_resamples",
        "permutation_resamples", "confidence", "alpha", "seed", "summary_intervals", "heldout", "study")
SUMMARY_TARGET = "summary:pearson"
SCHEME_NAMES = {"systems": "BOOT-SYSTEMS", "inputs": "BOOT-INPUTS", "both": "BOOT-BOTH", "fisher": "Fisher"}
PERMUTATION_NAMES = {"systems": "PERM-SYSTEMS", "inputs": "PERM-INPUTS", "both": "PERM-BOTH"}
# The tests comparing the two metrics: estimand -> the names of its schemes in the summary.
COMPARISON_ESTIMANDS = {"permutation_power": PERMUTATION_NAMES, "paired_bootstrap_power": {"both": "BOOT-BOTH"},
                        "williams_power": {"": ""}}
# The comparison table's test name of each comparison estimand (None: the scheme's name, one per scheme).
COMPARISON_TEST_NAMES = {"permutation_power": None, "paired_bootstrap_power": "paired bootstrap",
                         "williams_power": "Williams"}
HELDOUT_STREAM = "/heldout"
COVERAGE_ESTIMANDS = ("coverage", "summary_coverage", "heldout_coverage")
# Which estimands a trial computes; part of the store's fingerprint, so that stores of trials computed
# before the Fisher baseline and the comparison tests were added are refused, not mixed in.
ESTIMANDS_VERSION = 2


@dataclass(frozen=True, eq=False)
class MetricValidationConfig:
    """A validated metric-validation config (module docstring; configs/metric_validation.yaml)."""

    name: str
    model: object
    population: SystemPopulation
    metrics: tuple
    error_correlation: float = 0.0
    systems: tuple = (5, 10, 20, 40)
    documents: tuple = (20, 50, 100)
    annotators_per_document: int = 3
    methods: tuple = ("pearson", "kendall")
    trials: int = 300
    bootstrap_resamples: int = 500
    permutation_resamples: int = 500
    confidence: float = 0.95
    alpha: float = 0.05
    seed: int = 0
    summary_intervals: bool = False
    heldout: bool = False
    description: str = ""
    raw: dict = field(default_factory=dict, repr=False)  # the mapping it was read from (the store's manifest)
    generator: MetricGenerator = field(init=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "generator", MetricGenerator.for_population(
            self.model, self.population, self.metrics, self.error_correlation))

    def cells(self) -> list[tuple[int, int]]:
        return [(s, d) for s in self.systems for d in self.documents]


def _integers(raw: dict, key: str, default, problems: list[str]) -> tuple:
    """A positive integer (non-negative for 'seed'), or for 'systems' and 'documents' a list of them."""
    value = raw.get(key, default)
    if key not in ("systems", "documents"):  # a shared field: its one rule
        problem = field_problem(key, value)
        problems += [problem] if problem else []
        return (default,) if problem else (value,)
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    if not values or any(not is_integer(v, 1) for v in values):
        problems.append(f"The '{key}' field must be a positive integer or a list of them; got {value!r}")
        return tuple(default)
    return tuple(values)


def _mapping(raw: dict, key: str, cls, problems: list[str]):
    found: list[str] = []
    value = from_mapping(cls, raw.get(key, {}), key, list(cls.__dataclass_fields__), found)
    # MetricSpec names its fields 'metric.<field>' whichever metric it is
    problems.extend(message.replace("'metric.", f"'{key}.") for message in found)
    return value


def resample_problems(raw: dict, sizes: dict) -> list[str]:
    """Too few resamples for the rates to mean anything (1 bootstrap resample gives coverage 0).

    A percentile interval at confidence c needs at least 1 / (1 - c) resamples for each tail to hold
    half a resample (20 at 95%); a permutation p-value is at least 1 / (B + 1), so B >= 1 / alpha
    (20 at 0.05) for a rejection to be possible at all.
    """
    confidence, alpha = raw.get("confidence", 0.95), raw.get("alpha", 0.05)
    problems = []
    for key, level, what in (("bootstrap_resamples", confidence, "confidence"), ("permutation_resamples", alpha,
                                                                                 "alpha")):
        if not is_number(level) or not 0 < level < 1:
            continue  # reported by its own rule
        least = math.ceil(1 / (1 - level) - 1e-9) if key == "bootstrap_resamples" else math.ceil(1 / level - 1e-9)
        if sizes[key][0] < least:
            why = ("for each tail of the percentile interval to hold a resample" if key == "bootstrap_resamples"
                   else "for a permutation p-value (at least 1/(B+1)) to fall below alpha")
            problems.append(f"The '{key}' field must be at least {least} at {what} {level} ({why}); "
                            f"got {sizes[key][0]}")
    return problems


def parse_metric_config(raw: dict, base_dir: Path | None = None) -> MetricValidationConfig:
    """Validate a metric-validation mapping; every problem is reported at once (ConfigError)."""
    problems = []
    unknown = sorted(set(raw) - set(KEYS))
    if unknown:
        problems.append(f"Unknown key(s) {unknown}; allowed: {list(KEYS)}{suggestions(unknown, KEYS)}")
    problems += study_field_problems(raw, ("metric-validation",))
    problems += [problem for problem in (field_problem("name", raw.get("name", "metric-validation")),) if problem]
    model, _ = resolve_model(raw, base_dir, problems)
    model = likert_model_or_problem(model, "metric validation", problems)
    population = _mapping(raw, "population", SystemPopulation, problems)
    metrics = [_mapping(raw, "metric", MetricSpec, problems)]
    if raw.get("second_metric") is not None:
        metrics.append(_mapping(raw, "second_metric", MetricSpec, problems))
    sizes = {key: _integers(raw, key, default, problems) for key, default in
             (("systems", (5, 10, 20, 40)), ("documents", (20, 50, 100)), ("annotators_per_document", 3),
              ("trials", 300), ("bootstrap_resamples", 500), ("permutation_resamples", 500), ("seed", 0))}
    if any(s < 3 for s in sizes["systems"]):
        problems.append(f"The 'systems' field must be at least 3 (a correlation needs three systems); "
                        f"got {list(sizes['systems'])}")
    methods = raw.get("methods", ["pearson", "kendall"])
    if not isinstance(methods, list) or not methods or any(m not in METHODS for m in methods):
        problems.append(f"The 'methods' field must be a non-empty list from {list(METHODS)}; got {methods!r}")
    problems += [problem for key, default in (("confidence", 0.95), ("alpha", 0.05))
                 if (problem := field_problem(key, raw.get(key, default)))]
    for key in ("summary_intervals", "heldout"):
        if not isinstance(raw.get(key, False), bool):
            problems.append(f"The '{key}' field must be true or false; got {raw[key]!r}")
    error_correlation = raw.get("error_correlation", 0.0)
    if not is_number(error_correlation) or not -1 <= error_correlation <= 1:
        problems.append(f"The 'error_correlation' field must be a number in [-1, 1]; got {error_correlation!r}")
    elif error_correlation != 0 and raw.get("second_metric") is None:
        problems.append(f"The 'error_correlation' field ({error_correlation!r}) correlates the errors of two metrics, "
                        "and this config has one: add a 'second_metric' or remove 'error_correlation' (it would be "
                        "ignored)")
    problems += resample_problems(raw, sizes)
    if problems or None in metrics or population is None:
        raise ConfigError(problems or ["invalid metric-validation config"])
    try:
        return MetricValidationConfig(
            name=str(raw.get("name", "metric-validation")), model=model, population=population,
            metrics=tuple(metrics), error_correlation=float(error_correlation),
            systems=sizes["systems"], documents=sizes["documents"],
            annotators_per_document=sizes["annotators_per_document"][0], methods=tuple(methods),
            trials=sizes["trials"][0], bootstrap_resamples=sizes["bootstrap_resamples"][0],
            permutation_resamples=sizes["permutation_resamples"][0], confidence=float(raw.get("confidence", 0.95)),
            alpha=float(raw.get("alpha", 0.05)), seed=sizes["seed"][0],
            summary_intervals=raw.get("summary_intervals", False), heldout=raw.get("heldout", False),
            description=str(raw.get("description", "")), raw=dict(raw))
    except ConfigError as exc:
        raise ConfigError([m.replace("'metric.", "'metric or second_metric.") for m in exc.messages]) from exc


def load_metric_config(path, overrides: dict | None = None) -> MetricValidationConfig:
    """Read and validate a metric-validation config file, ``overrides`` replacing its keys (as every config
    loader: ``load_<kind>(path, overrides)``, ``parse_<kind>(mapping, base_dir)``)."""
    return parse_metric_config(read_config_mapping(path, "metric-validation config", overrides), Path(path).parent)


def expected_human_score(model, betas: np.ndarray, nodes: int = 60) -> np.ndarray:
    """E[score | beta] for systems of the population (random parts integrated out, Gauss-Hermite)."""
    variance = exchangeable_moments(model.annotator_cov)[0] + exchangeable_moments(model.sampled_document_cov)[0]
    x, w = np.polynomial.hermite_e.hermegauss(nodes)
    w = w / w.sum()
    eta = np.asarray(betas, float)[:, None] + np.sqrt(variance) * x[None, :]
    cumulative = special.expit(model.thresholds[None, :, None] - eta[:, None, :])
    cumulative = np.concatenate([np.zeros_like(cumulative[:, :1]), cumulative, np.ones_like(cumulative[:, :1])], 1)
    probabilities = np.diff(cumulative, axis=1) @ w
    return probabilities @ np.asarray(model.scale, float)


def system_level_targets(config: MetricValidationConfig, nodes: int = 80) -> dict:
    """The population system-level correlation of the first metric with the human scores, per method.

    With ``summary_intervals``, also the population summary-level Pearson correlation under the key
    :data:`SUMMARY_TARGET` (:func:`simdesign.studies.metrics.metric_targets.summary_level_target`).
    """
    base_effects = np.asarray(config.model.effects, float)
    if config.population.kind == "resample":
        betas, weights = base_effects, np.full(base_effects.size, 1.0 / base_effects.size)
    else:
        mean, variance = config.population.moments(base_effects)
        x, weights = np.polynomial.hermite_e.hermegauss(nodes)
        betas, weights = mean + np.sqrt(variance) * x, weights / weights.sum()
    human = expected_human_score(config.model, betas)
    centred_beta, centred_human = betas - weights @ betas, human - weights @ human
    beta_human = (weights @ (centred_beta * centred_human)) / np.sqrt(
        (weights @ centred_beta ** 2) * (weights @ centred_human ** 2))
    rho = config.metrics[0].system_correlation
    normal = config.population.kind == "normal"
    targets = {"pearson": rho * beta_human,
               "spearman": 6 / np.pi * np.arcsin(rho / 2) if normal else np.nan,
               "kendall": 2 / np.pi * np.arcsin(rho) if normal else np.nan}
    if config.summary_intervals:  # a few-dimensional integral: only when its intervals are asked for
        targets[SUMMARY_TARGET] = summary_level_target(config)
    return targets


def cell_label(n_systems: int, n_documents: int) -> str:
    return f"S{n_systems}-D{n_documents}"


def simulate_study(config: MetricValidationConfig, n_systems: int, n_documents: int, trial: int,
                   stream: str = ""):
    """One trial's study: (metric scores (k, S, D), human scores (S, D), latent quality (D, S)).

    ``stream`` '' is the study itself; HELDOUT_STREAM an independent study of new systems and documents
    of the same sizes (the held-out protocol's), from its own data stream.
    """
    rng = data_rng(config.seed, cell_label(n_systems, n_documents) + stream, trial)
    effects = config.population.draw(np.asarray(config.model.effects, float), n_systems, rng)
    model = population_model(config.model, n_systems, effects)
    judgements, quality = sample_with_quality(model, BlockDesign(n_documents, 1, config.annotators_per_document), rng)
    return config.generator.scores(quality, rng), human_scores(judgements), quality


def example_table(config: MetricValidationConfig, n_systems: int, n_documents: int, trial: int = 0,
                  names=("metric_a", "metric_b"), decimals: int = 4) -> pd.DataFrame:
    """One simulated study as the long table ``simdesign analyse-metrics`` reads (examples/metric_scores.csv).

    Columns ``system, input``, one per metric of the config (named by ``names``) and ``human`` (each
    output's mean judgement), scores rounded to ``decimals``; the study is trial ``trial`` of the cell
    (n_systems, n_documents), as :func:`simulate_study` draws it.
    """
    metric, human, _ = simulate_study(config, n_systems, n_documents, trial)
    systems, documents = np.meshgrid(np.arange(n_systems), np.arange(n_documents), indexing="ij")
    table = pd.DataFrame({"system": [f"system{s:02d}" for s in systems.ravel()],
                          "input": [f"doc{d:03d}" for d in documents.ravel()]})
    for name, scores in zip(names, metric):
        table[name] = scores.ravel().round(decimals)
    table["human"] = human.ravel().round(decimals)
    return table


def one_trial(config: MetricValidationConfig, n_systems: int, n_documents: int, trial: int,
              targets: dict) -> list[dict]:
    """Per-trial values of every estimand (module docstring) for one cell."""
    metric, human, _ = simulate_study(config, n_systems, n_documents, trial)
    label = cell_label(n_systems, n_documents)
    rows = []
    for method in config.methods:
        rows.append(("system_correlation", method, "", system_level(metric[0], human, method)))
        rows.append(("summary_correlation", method, "", summary_level(metric[0], human, method)))
    intervals = {}
    for scheme in SCHEMES:
        rng = analysis_rng(config.seed, label, trial, f"boot-{scheme}")
        boot = bootstrap_system_level(metric[0], human, scheme, rng, config.bootstrap_resamples, config.methods)
        for method in config.methods:
            intervals[method, scheme] = percentile_interval(boot[method], config.confidence)
    for method in config.methods:
        intervals[method, "fisher"] = fisher_interval(system_level(metric[0], human, method), n_systems, method,
                                                      config.confidence)
    for (method, scheme), (low, high) in intervals.items():
        rows.append(("coverage", method, scheme, _covers(low, high, targets[method])))
        rows.append(("width", method, scheme, high - low))
    if config.heldout:
        rows += heldout_rows(config, n_systems, n_documents, trial, intervals)
    if config.summary_intervals:
        rows += summary_interval_rows(config, metric[0], human, label, trial, targets[SUMMARY_TARGET])
    if len(config.metrics) > 1:
        rows += comparison_rows(config, metric, human, label, trial)
    return [{"systems": n_systems, "documents": n_documents, "trial": trial, "estimand": estimand,
             "method": method, "scheme": scheme, "value": value} for estimand, method, scheme, value in rows]


def _covers(low: float, high: float, target: float) -> float:
    return float(low <= target <= high) if np.isfinite(target) and np.isfinite(low) else np.nan


def heldout_rows(config: MetricValidationConfig, n_systems: int, n_documents: int, trial: int,
                 intervals: dict) -> list[tuple]:
    """Deutsch et al.'s held-out protocol: does the interval cover the correlation of an independent study?

    The held-out study has new systems (from the same population) and new documents, as many as the
    study's (the paper splits its systems and inputs into halves); its system-level correlation, not
    the population value, is the target.
    """
    metric, human, _ = simulate_study(config, n_systems, n_documents, trial, HELDOUT_STREAM)
    rows = []
    for method in config.methods:
        target = system_level(metric[0], human, method)
        rows.append(("heldout_correlation", method, "", target))
        for scheme in (*SCHEMES, "fisher"):
            rows.append(("heldout_coverage", method, scheme, _covers(*intervals[method, scheme], target)))
    return rows


def comparison_rows(config: MetricValidationConfig, metric: np.ndarray, human: np.ndarray, label: str,
                    trial: int) -> list[tuple]:
    """Rejections (p < alpha, two-sided) of H0 'equal system-level Pearson correlations' by each test."""
    rows = []
    for scheme in SCHEMES:
        rng = analysis_rng(config.seed, label, trial, f"perm-{scheme}")
        _, p_value = permutation_test(metric[0], metric[1], human, rng, config.permutation_resamples, scheme=scheme)
        rows.append(("permutation_power", "pearson", scheme, float(p_value < config.alpha)))
    # the same resamples for both metrics: two generators in the same state (metric_comparison's docstring)
    boot = [bootstrap_system_level(scores, human, "both", analysis_rng(config.seed, label, trial, "paired-boot"),
                                   config.bootstrap_resamples, ("pearson",))["pearson"] for scores in metric[:2]]
    first, second = system_level(metric[0], human), system_level(metric[1], human)
    p_value = paired_bootstrap_test(first - second, boot[0], boot[1], ("two-sided",))["p_two-sided"]
    rows.append(("paired_bootstrap_power", "pearson", "both", float(p_value < config.alpha)
                 if np.isfinite(p_value) else np.nan))
    _, p_value = williams_test(first, second, system_level(metric[0], metric[1]), metric.shape[1])
    rows.append(("williams_power", "pearson", "", float(p_value < config.alpha) if np.isfinite(p_value) else np.nan))
    return rows


def summary_interval_rows(config: MetricValidationConfig, metric: np.ndarray, human: np.ndarray, label: str,
                          trial: int, target: float) -> list[tuple]:
    """Coverage and width of the three bootstrap intervals of the summary-level Pearson correlation."""
    rows = []
    for scheme in SCHEMES:
        rng = analysis_rng(config.seed, label, trial, f"summary-boot-{scheme}")
        boot = bootstrap_summary_level(metric, human, scheme, rng, config.bootstrap_resamples)["pearson"]
        low, high = percentile_interval(boot, config.confidence)
        covered = float(low <= target <= high) if np.isfinite(low) else np.nan
        rows.append(("summary_coverage", "pearson", scheme, covered))
        rows.append(("summary_width", "pearson", scheme, high - low))
    return rows


def _chunk(config, chunk: TrialChunk, n_systems: int, n_documents: int, targets: dict):
    """One chunk's (chunk, rows), as the runner's loop wants it."""
    with single_threaded():  # the arrays of one trial are small: BLAS threads only compete
        rows = [row for trial in range(chunk.first, chunk.stop)
                for row in one_trial(config, n_systems, n_documents, trial, targets)]
    return chunk, pd.DataFrame(rows, columns=list(ROW_COLUMNS))


def stored_settings(config: MetricValidationConfig) -> dict:
    """Everything that determines a cell's per-trial rows (the store's fingerprint; not cells or trials)."""
    return {"model": config.model.to_dict(), "population": asdict(config.population),
            "metrics": [asdict(spec) for spec in config.metrics], "error_correlation": config.error_correlation,
            "annotators_per_document": config.annotators_per_document, "methods": list(config.methods),
            "bootstrap_resamples": config.bootstrap_resamples,
            "permutation_resamples": config.permutation_resamples, "confidence": config.confidence,
            "alpha": config.alpha, "seed": config.seed, "summary_intervals": config.summary_intervals,
            "heldout": config.heldout,
            "estimands_version": ESTIMANDS_VERSION}


def run_metric_validation(config: MetricValidationConfig, out_dir, jobs: int = 1, chunk_trials: int = 20,
                          progress: bool = False, backend="loky") -> pd.DataFrame:
    """Every cell's trials not yet stored in ``out_dir``; return all rows (one per trial and estimand).

    Each finished chunk of trials is stored at once (:mod:`simdesign.studies.metrics.metric_store`), so
    an interrupted run resumes where it stopped. Every trial draws from streams keyed by its cell and
    index, so the rows do not depend on ``jobs``, ``chunk_trials`` or interruptions.

    Parameters
    ----------
    config : MetricValidationConfig
    out_dir : path-like
        The results directory (created if needed).
    jobs : int
        Parallel workers (local backends).
    chunk_trials : int
        Trials per stored chunk.
    progress : bool
        Show progress (trials done, rate, time left): a bar on a terminal, plain lines in a log.
    backend : {'loky', 'threading', 'fork', 'dask'} or BackendSpec
        Where chunks are computed (:mod:`simdesign.runner.backends`); the rows do not depend on it.

    Raises
    ------
    StoreError
        If ``out_dir`` holds trials computed with other settings.
    """
    return run_trials(MetricValidation(chunk_trials), config, out_dir, backend_spec(backend, jobs), progress)


class MetricValidation(StudyKind):
    """Validating an automatic metric: its cells are (systems, documents) sizes, labelled ``S<s>-D<d>``; the
    stored rows keep the metric store's format (:mod:`simdesign.studies.metrics.metric_store`)."""

    name, keys = "metric-validation", ("population", "metric", "second_metric")
    cell_column = "cell"

    def __init__(self, trials_per_chunk: int = 20):
        self.trials_per_chunk = trials_per_chunk

    def examples(self):
        return read_examples("metric-validation")

    def parse(self, mapping, base_dir=None):
        return parse_metric_config(mapping, base_dir)

    def cells(self, config):
        return [cell_label(s, d) for s, d in config.cells()]

    def chunk_trials(self, config):
        return self.trials_per_chunk

    def open_store(self, config, out_dir):
        store = metric_store(out_dir)
        store.prepare(stored_settings(config), config.seed, config.raw)
        return store

    def chunk_task(self, config, chunk):
        return delayed(_chunk)(config, chunk, *self._sizes(config, chunk.cell), system_level_targets(config))

    def read_rows(self, config, store):
        return store.read(self.cells(config), config.trials)[list(ROW_COLUMNS)]

    def stored_rows(self, config, out_dir):
        return self.read_rows(config, metric_store(out_dir))

    def replay(self, config, cell, trial):
        rows = one_trial(config, *self._sizes(config, cell), trial, system_level_targets(config))
        return pd.DataFrame(rows, columns=list(ROW_COLUMNS))

    def stored_trial(self, config, rows, cell, trial):
        systems, documents = self._sizes(config, cell)
        return rows[(rows["systems"] == systems) & (rows["documents"] == documents)
                    & (rows["trial"] == trial)].reset_index(drop=True)

    @staticmethod
    def _sizes(config, cell):
        return {cell_label(s, d): (s, d) for s, d in config.cells()}[cell]

    def summarise(self, config, rows):
        return summarise_metric_validation(rows, config)

    def plot(self, config, summary, out_base):
        return [plot_coverage(summary, config, Path(out_base))]

    def result_tables(self, config, rows, out_dir):
        """``trials``: every per-trial row (a metric validation's trials are few and small)."""
        return {"trials": rows}


def summarise_metric_validation(rows: pd.DataFrame, config: MetricValidationConfig) -> pd.DataFrame:
    """Means over trials with MCSE and 95% intervals (Wilson for rates), and the coverage targets."""
    targets = system_level_targets(config)
    out = []
    for (s, d, estimand, method, scheme), group in rows.groupby(
            ["systems", "documents", "estimand", "method", "scheme"], sort=False):
        values = group["value"].to_numpy(float)
        values = values[np.isfinite(values)]
        n = values.size
        mean, mcse, low, high = mean_interval(values)
        if is_rate(estimand) and n:  # coverage and the comparison tests' power: shares of trials
            low, high = wilson_interval(mean, mcse, n, n)
        out.append({"systems": s, "documents": d, "estimand": estimand, "method": method,
                    "scheme": COMPARISON_ESTIMANDS.get(estimand, SCHEME_NAMES).get(scheme, ""), "value": mean,
                    "ci_low": low, "ci_high": high,
                    "mcse": mcse, "trials": n,
                    "target": (targets[method] if estimand in ("coverage", "width") else targets.get(SUMMARY_TARGET)
                               if estimand in ("summary_coverage", "summary_width") else np.nan),
                    "nominal": config.confidence if estimand in COVERAGE_ESTIMANDS else np.nan,
                    "note": "" if n else "undefined: no target for rank correlations with resampled effects"})
    return pd.DataFrame(out)


def plot_coverage(summary: pd.DataFrame, config: MetricValidationConfig, out_base: Path) -> Path:
    """Coverage of the intervals against the number of systems: a subplot per method and documents.

    Solid lines: coverage of the population correlation; with ``heldout``, dashed lines (hollow
    markers): coverage of a held-out study's correlation (the paper's protocol), colours as the solid ones.
    """
    import matplotlib.ticker
    from matplotlib.figure import Figure

    from simdesign.studies.rates.plots import save_png

    shown = summary[summary["estimand"].isin(["coverage", "heldout_coverage"]) & (summary["trials"] > 0)]
    methods = [m for m in config.methods if (shown["method"] == m).any()]
    documents = sorted(shown["documents"].unique())
    fig = Figure(figsize=(3.6 * len(documents), 3.2 * len(methods)))
    axes = fig.subplots(len(methods), len(documents), squeeze=False, sharex=True, sharey=True)
    for row, method in enumerate(methods):
        for column, n_documents in enumerate(documents):
            axis = axes[row][column]
            cell = shown[(shown["method"] == method) & (shown["documents"] == n_documents)]
            for colour, scheme in enumerate(SCHEME_NAMES.values()):
                for estimand, style, face in (("coverage", "-", None), ("heldout_coverage", "--", "white")):
                    line = cell[(cell["scheme"] == scheme) & (cell["estimand"] == estimand)].sort_values("systems")
                    if line.empty:
                        continue
                    label = scheme if estimand == "coverage" else f"{scheme}, held-out"
                    axis.plot(line["systems"], line["value"], marker="o", linestyle=style, color=f"C{colour}",
                              mfc=face, label=label)
                    axis.fill_between(line["systems"], line["ci_low"], line["ci_high"], color=f"C{colour}",
                                      alpha=0.15 if estimand == "coverage" else 0.08)
            axis.axhline(config.confidence, color="grey", linestyle=":", linewidth=1, label="nominal")
            axis.set_xscale("log")
            axis.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            axis.set_xticks(list(config.systems), [str(s) for s in config.systems])
            axis.set_title(f"{method}, {n_documents} documents", fontsize=9)
            axis.grid(alpha=0.3)
            if column == 0:
                axis.set_ylabel("coverage of the population correlation"
                                + ("\n(dashed: of a held-out study's)" if config.heldout else ""))
            if row == len(methods) - 1:
                axis.set_xlabel("systems")
    axes[0][0].legend(fontsize=6 if config.heldout else 7)
    spec = config.metrics[0]
    fig.suptitle(f"{config.name}: 95% bootstrap and Fisher intervals of the system-level correlation,\nmetric with "
                 f"rho_sys {spec.system_correlation:g}, rho_sum {spec.summary_correlation:g}; "
                 f"{config.trials} trials per point, {config.bootstrap_resamples} resamples (Wilson bands)",
                 fontsize=9)
    fig.tight_layout()
    return save_png(fig, out_base)


# Metric validation's estimands, in the estimand registry (all come from summarise_metric_validation).
for _name, _unit, _label, _description in (
    ("system_correlation", "value", "system-level correlation", "the metric's system-level correlation with humans"),
    ("summary_correlation", "value", "summary-level correlation", "the metric's summary-level correlation"),
    ("coverage", "rate", "coverage", "share of trials whose interval covers the population's system-level "
                                     "correlation"),
    ("width", "value", "interval width", "mean width of the system-level interval"),
    ("heldout_correlation", "value", "held-out correlation", "a held-out study's system-level correlation"),
    ("heldout_coverage", "rate", "held-out coverage", "share of trials whose interval covers a held-out "
                                                      "study's correlation"),
    ("summary_coverage", "rate", "summary-level coverage", "coverage of the summary-level interval"),
    ("summary_width", "value", "summary-level interval width", "mean width of the summary-level interval"),
    ("permutation_power", "rate", "permutation test power", "share of trials in which the permutation test "
                                                            "tells the two metrics apart"),
    ("paired_bootstrap_power", "rate", "paired bootstrap power", "share of trials in which the paired bootstrap "
                                                                 "tells the two metrics apart"),
    ("williams_power", "rate", "Williams test power", "share of trials in which Williams' test tells the two "
                                                      "metrics apart"),
):
    register_estimand(Estimand(_name, ("metric-validation",), _unit, _label, summarise_metric_validation,
                               _description))
