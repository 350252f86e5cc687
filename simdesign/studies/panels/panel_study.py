"""Panel studies: how well do k crowd workers agree with an expert panel, by aggregation method?

A panel-study config (``configs/crowd_vs_expert.yaml``) declares ``panels``
(:mod:`simdesign.model.panels`), a reference panel (the experts) and a crowd
panel. Each trial samples one study in which both panels judge the same
``docs`` x S outputs. For every k = 1..per_output, ``subsamples`` times, k of
each document's crowd workers are drawn at random (without replacement,
the same k for all systems of the document, who were judged together), their
scores are aggregated per output by each method
(:data:`simdesign.stats.aggregation.AGGREGATIONS`), and Spearman's rho across
outputs is taken between the aggregate and

* ``expert``: the reference panel's mean score per output, and
* ``truth``: the outputs' expected scores under the model
  (:func:`simdesign.model.panels.expected_output_scores`).

A trial's value is the mean of rho over its subsamples; the trial is the
Monte-Carlo unit (mean, MCSE = sd / sqrt(trials), normal 95% interval).
The knee of each mean curve is found by Kneedle
(:func:`simdesign.stats.knee.kneedle`), with a percentile interval from
resampling the trials (``bootstrap`` times).

With ``tests`` (e.g. ``[ttest_doc]``), each subsample's aggregates are also
tested pair by pair over documents, for the k in ``test_k`` (default all), at
level ``alpha``: type I error or power per method and k
(:mod:`simdesign.studies.panels.panel_tests`).

An optional ``sensitivity`` grid (``{noise: [...], spammer_share: [...]}``)
repeats the study for every combination of the crowd panel's settings, each
with its own random streams (keyed by the setting's label).
"""
from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd
from joblib import delayed
from scipy import stats
from simdesign.core.threads import single_threaded

from simdesign.core.errors import ConfigError
from simdesign.core.seeds import analysis_rng, data_rng
from simdesign.model import OrdinalMixedModel, effect_scale
from simdesign.model.panels import PanelSpec, expected_output_scores, parse_panels, sample_panels
from simdesign.core.suggest import suggestions
from simdesign.studies.rates.config import likert_model_or_problem, read_config_mapping, resolve_model
from simdesign.runner.study import StudyKind, TrialChunk, run_trials, study_field_problems
from simdesign.studies.panels.panel_summary import SUMMARY_COLUMNS, summarise_panel_study  # noqa: F401 (re-export)
from simdesign.studies.panels.panel_tests import (PANEL_TESTS, TRIAL_COLUMNS, significance_rows,
                                                   summarise_significance, true_differences)
from simdesign.runner.execute import backend_spec
from simdesign.studies.example_configs import read_examples
from simdesign.runner.stores import ManifestRequest, Store, StoreFormat
from simdesign.stats.aggregation import AGGREGATIONS
from simdesign.core.checks import is_integer
from simdesign.core.fields import field_problem

STUDY_KEYS = ("name", "description", "model", "effect", "docs", "panels", "reference", "crowd", "aggregations",
              "subsamples", "trials", "seed", "chunk_size", "bootstrap", "sensitivity", "tests", "test_k", "alpha",
              "study")
TARGETS = ("expert", "truth")
SENSITIVITY_KEYS = ("noise", "spammer_share", "slope_sd")
RESULT_FREE_KEYS = ("trials", "bootstrap", "description", "chunk_size", "study")


@dataclass(frozen=True, eq=False)
class PanelStudyConfig:
    """A validated panel-study config (module docstring; built by :func:`parse_panel_study`)."""

    name: str
    model: OrdinalMixedModel
    panels: dict
    docs: int = 10
    reference: str = "expert"
    crowd: str = "crowd"
    aggregations: tuple = ("mean", "median", "majority", "dawid_skene")
    subsamples: int = 20
    trials: int = 200
    seed: int = 0
    effect: object = "fitted"
    chunk_size: int = 10
    bootstrap: int = 1000
    sensitivity: dict = field(default_factory=dict)
    tests: tuple = ()
    test_k: tuple = ()
    alpha: float = 0.05
    description: str = ""
    raw: dict = field(default_factory=dict)

    @property
    def ks(self) -> np.ndarray:
        return np.arange(1, self.panels[self.crowd].per_output + 1)

    def settings(self) -> list[tuple[str, dict]]:
        """(label, panels) per crowd setting: the config's own, or every combination of the sensitivity grid."""
        crowd = self.panels[self.crowd]
        keys = [key for key in SENSITIVITY_KEYS if key in self.sensitivity]
        grid = itertools.product(*(self.sensitivity[key] for key in keys)) if keys else [()]
        settings = []
        for values in grid:
            changed = replace(crowd, **dict(zip(keys, values)))
            label = f"noise{changed.noise:g}-slope{changed.slope_sd:g}-spam{changed.spammer_share:g}"
            settings.append((label, {**self.panels, self.crowd: changed}))
        return settings

    def fingerprint(self, ignored: tuple = RESULT_FREE_KEYS) -> str:
        """What determines the stored trials (the model's content, not its source path).

        ``ignored``: keys the trials do not depend on (the trial count, the summary's bootstrap, the
        description and ``chunk_size``: streams are keyed by trial, so a re-run may chunk differently).
        """
        content = {key: value for key, value in self.raw.items() if key not in ignored}
        content["model"] = self.model.to_dict()
        # The panels draw from one stream in their order (model.panels.sample_panels), which the sorted JSON
        # below would lose: the same panels in another order are other trials.
        content["panel_order"] = list(self.panels)
        return hashlib.sha256(json.dumps(content, sort_keys=True, default=str).encode()).hexdigest()


def _role_problems(panels: dict, reference, crowd) -> list[str]:
    problems = []
    if reference not in panels:
        problems.append(f"The 'reference' field must name a panel ({list(panels)}); got {reference!r}")
    if crowd not in panels:
        problems.append(f"The 'crowd' field must name a panel ({list(panels)}); got {crowd!r}")
    elif panels[crowd].judges_all:
        problems.append(f"The crowd panel '{crowd}' must be a pool ('pool', 'per_output'): k of its workers per "
                        f"output are subsampled")
    elif panels[crowd].per_output < 3:
        problems.append(f"The 'panels.{crowd}.per_output' field must be at least 3 for a curve with a knee; "
                        f"got {panels[crowd].per_output}")
    if reference == crowd and reference in panels:
        problems.append("The 'reference' and 'crowd' panels must differ")
    return problems


def _pool_problems(panels: dict, docs) -> list[str]:
    if not isinstance(docs, int) or isinstance(docs, bool):
        return []
    return [f"The pool panel '{name}' needs docs x per_output >= pool so that every worker judges something; "
            f"got {docs} x {spec.per_output} < {spec.pool}" for name, spec in panels.items()
            if not spec.judges_all and docs * spec.per_output < spec.pool]


def _sensitivity_problems(grid) -> list[str]:
    if not isinstance(grid, dict):
        return [f"The 'sensitivity' field must be a mapping from {list(SENSITIVITY_KEYS)} to lists; got {grid!r}"]
    unknown = sorted(set(grid) - set(SENSITIVITY_KEYS), key=str)
    problems = [f"Unknown 'sensitivity' key(s) {unknown}; allowed: {list(SENSITIVITY_KEYS)}"
                f"{suggestions(unknown, SENSITIVITY_KEYS)}"] if unknown else []
    for key, values in grid.items():
        if key in SENSITIVITY_KEYS and (not isinstance(values, list) or not values):
            problems.append(f"The 'sensitivity.{key}' field must be a non-empty list of values; got {values!r}")
        elif key in SENSITIVITY_KEYS:
            for value in values:  # each value is checked by the panel's own rules
                problems += [message.replace("panels.", "sensitivity grid: panels.")
                             for message in _panel_value_problems(key, value)]
    return problems


def _test_problems(raw: dict, panels: dict, crowd) -> list[str]:
    """Problems of the optional 'tests', 'test_k' and 'alpha' keys."""
    problems = []
    tests = raw.get("tests", [])
    if not isinstance(tests, list) or any(t not in PANEL_TESTS for t in tests) or len(set(tests)) != len(tests):
        problems.append(f"The 'tests' field must be a list of distinct names from {list(PANEL_TESTS)}; got {tests!r}")
    per_output = panels[crowd].per_output if crowd in panels and not panels[crowd].judges_all else None
    test_k = raw.get("test_k", [])
    if not isinstance(test_k, list) or any(not is_integer(k, 1)
                                           or (per_output and k > per_output) for k in test_k):
        problems.append(f"The 'test_k' field must be a list of integers in 1..per_output ({per_output}); "
                        f"got {test_k!r}")
    problems += [problem for problem in (field_problem("alpha", raw.get("alpha", 0.05)),) if problem]
    return problems


def _panel_value_problems(key: str, value) -> list[str]:
    try:
        PanelSpec("crowd", pool=2, per_output=1, **{key: value})
    except ConfigError as exc:
        return exc.messages
    return []


def parse_panel_study(raw: dict, base_dir: Path | None = None) -> PanelStudyConfig:
    """Validate a panel-study mapping; every problem is reported at once in one ConfigError."""
    if not isinstance(raw, dict):
        raise ConfigError(f"A panel-study config must be a mapping; got {type(raw).__name__}")
    errors: list[str] = []
    unknown = sorted(set(raw) - set(STUDY_KEYS))
    if unknown:
        errors.append(f"Unknown panel-study key(s) {unknown}; allowed: {list(STUDY_KEYS)}"
                      f"{suggestions(unknown, STUDY_KEYS)}")
    errors += study_field_problems(raw, ("panels",))
    name = raw.get("name")
    errors += [problem for problem in (field_problem("name", name),) if problem]
    model, _ = resolve_model(raw, base_dir, errors)
    model = likert_model_or_problem(model, "a panel study", errors)
    try:
        effect_scale(raw.get("effect", "fitted"))
    except ConfigError as exc:
        errors.extend(exc.messages)
    panels = parse_panels(raw.get("panels"), errors)
    values = {"docs": 10, "subsamples": 20, "trials": 200, "seed": 0, "chunk_size": 10, "bootstrap": 1000}
    values.update({key: raw[key] for key in values if key in raw})
    errors += [problem for key, value in values.items() if (problem := field_problem(key, value))]
    reference, crowd = raw.get("reference", "expert"), raw.get("crowd", "crowd")
    if panels:
        errors += _role_problems(panels, reference, crowd) + _pool_problems(panels, values["docs"])
    aggregations = raw.get("aggregations", list(PanelStudyConfig.aggregations))
    if not isinstance(aggregations, list) or not aggregations or any(a not in AGGREGATIONS for a in aggregations) \
            or len(set(aggregations)) != len(aggregations):
        errors.append(f"The 'aggregations' field must be a list of distinct names from {list(AGGREGATIONS)}; "
                      f"got {aggregations!r}")
    sensitivity = raw.get("sensitivity", {}) or {}
    errors += _sensitivity_problems(sensitivity)
    errors += _test_problems(raw, panels or {}, crowd)
    if errors:
        raise ConfigError(list(dict.fromkeys(errors)))
    return PanelStudyConfig(name=name, model=model, panels=panels, reference=reference, crowd=crowd,
                            aggregations=tuple(aggregations), effect=raw.get("effect", "fitted"),
                            sensitivity=sensitivity, tests=tuple(raw.get("tests", [])),
                            test_k=tuple(sorted(set(raw.get("test_k", [])))), alpha=float(raw.get("alpha", 0.05)),
                            description=str(raw.get("description", "")), raw=dict(raw), **values)


def load_panel_study(path, overrides: dict | None = None) -> PanelStudyConfig:
    """Read and validate a panel-study YAML file (``overrides`` replace top-level keys, e.g. trials)."""
    path = Path(path)
    return parse_panel_study(read_config_mapping(path, "panel-study config", overrides), base_dir=path.parent)


def per_document(judgements) -> tuple[np.ndarray, np.ndarray]:
    """A panel's wide judgements as (docs, judges per document, S) scores and (docs, judges) annotator ids."""
    order = np.lexsort((judgements.annotator, judgements.document))
    n_docs = int(judgements.document.max()) + 1
    scores = judgements.scores[order].reshape(n_docs, -1, judgements.n_systems)
    return scores, judgements.annotator[order].reshape(n_docs, -1)


def ranked(values: np.ndarray) -> np.ndarray:
    """Average ranks along the last axis (ties share their mean rank, as in Spearman's rho)."""
    return stats.rankdata(values, axis=-1)


def rank_correlations(aggregates: np.ndarray, target_ranks: np.ndarray) -> np.ndarray:
    """Spearman's rho of each row of ``aggregates`` (R, n) with a target given by its ranks; NaN if constant."""
    x = ranked(aggregates)
    x = x - x.mean(axis=1, keepdims=True)
    y = target_ranks - target_ranks.mean()
    denominator = np.sqrt((x ** 2).sum(axis=1) * (y ** 2).sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, (x @ y) / denominator, np.nan)


def simulate_trial(config: PanelStudyConfig, label: str, panels: dict, trial: int) -> pd.DataFrame:
    """One trial of one crowd setting: mean Spearman's rho over subsamples, per method, target and k."""
    return simulate_trial_with_tests(config, label, panels, trial)[0]


def simulate_trial_with_tests(config: PanelStudyConfig, label: str, panels: dict,
                              trial: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One trial: the Spearman rows and the significance-test rows (empty without ``tests``).

    The test rows have columns :data:`simdesign.studies.panels.panel_tests.TRIAL_COLUMNS`.
    """
    sample = sample_panels(config.model, config.docs, panels, data_rng(config.seed, label, trial), config.effect)
    reference_scores, _ = per_document(sample.judgements[config.reference])
    targets = {"expert": reference_scores.mean(axis=1).ravel(),
               "truth": expected_output_scores(config.model, sample.document_part, config.effect).ravel()}
    target_ranks = {name: ranked(values) for name, values in targets.items()}
    crowd_scores, crowd_workers = per_document(sample.judgements[config.crowd])
    n_docs, per_output, n_systems = crowd_scores.shape
    # Subsamples come from their own stream, so the data of a trial do not depend on how it is subsampled.
    rng = analysis_rng(config.seed, label, trial, "subsample")
    rows, test_rows = [], []
    tested_ks = set(config.test_k or config.ks.tolist()) if config.tests else set()
    true_diff = true_differences(config.model, config.effect)
    for k in config.ks:
        # With all workers every subsample is the same set: one suffices (every method ignores their order).
        repeats = 1 if k == per_output else config.subsamples
        chosen = np.argsort(rng.random((repeats, n_docs, per_output)), axis=2)[:, :, :k]
        # ratings[r, d, s, :] = scores of the chosen workers of document d for system s
        ratings = np.take_along_axis(crowd_scores[None], chosen[..., None], axis=2).transpose(0, 1, 3, 2)
        workers = np.broadcast_to(np.take_along_axis(crowd_workers[None], chosen, axis=2)[:, :, None, :],
                                  ratings.shape)
        for method in config.aggregations:
            aggregate = AGGREGATIONS[method]
            values = np.stack([aggregate(ratings[r].reshape(n_docs * n_systems, k),
                                         workers[r].reshape(n_docs * n_systems, k), config.model.scale)
                               for r in range(repeats)])
            for target in TARGETS:
                rho = rank_correlations(values, target_ranks[target])
                defined = np.isfinite(rho)
                rows.append((label, trial, method, target, int(k),
                             float(rho[defined].mean()) if defined.any() else np.nan, int((~defined).sum())))
            for test in config.tests if int(k) in tested_ks else ():
                # a stream per (test, method, k), so adding a test or a k leaves the others' draws unchanged
                test_rng = analysis_rng(config.seed, label, trial, f"test-{test}-{method}-k{int(k)}")
                for estimand, value, n_tests, n_failed in significance_rows(
                        test, values.reshape(repeats, n_docs, n_systems), true_diff, config.alpha,
                        config.model.systems, test_rng):
                    test_rows.append((label, trial, method, test, int(k), estimand, value, n_tests, n_failed))
    return (pd.DataFrame(rows, columns=["setting", "trial", "method", "target", "k", "spearman", "n_undefined"]),
            pd.DataFrame(test_rows, columns=list(TRIAL_COLUMNS)))


def _chunk(config: PanelStudyConfig, chunk: TrialChunk, panels: dict):
    """One chunk's (chunk, (Spearman rows, test rows)), as the runner's loop wants it."""
    with single_threaded():
        parts = [simulate_trial_with_tests(config, chunk.cell, panels, trial)
                 for trial in range(chunk.first, chunk.stop)]
    return chunk, (pd.concat([rows for rows, _ in parts], ignore_index=True),
                   pd.concat([tests for _, tests in parts], ignore_index=True))


CHUNKS, SIGNIFICANCE = "chunks", "significance"
TRIAL_KEYS = ["setting", "trial", "method", "target", "k"]


def panel_manifest(config: PanelStudyConfig) -> ManifestRequest:
    """What a panel study's run asks of its store (``Store.prepare(config)`` in :data:`PANEL_CHUNKS`): the
    config's fingerprint, and the latest run's config (its trial count), from which ``simdesign plot``
    redraws the study."""
    def mismatch(directory, stored: dict) -> str:
        return (f"{directory} holds trials of a different panel-study config (model, panels, seed, docs, "
                "subsamples, aggregations or tests changed); use another --out or delete it")

    return ManifestRequest(config.fingerprint(), {"kind": "panels", "fingerprint": config.fingerprint(),
                                                  "config": config.raw}, mismatch)


PANEL_CHUNKS = StoreFormat(kind="panels", folders=(CHUNKS, SIGNIFICANCE), cell_folders=False, digits=6,
                           file_type="csv", order="files", columns=tuple(TRIAL_KEYS), describe=panel_manifest)
"""Panel studies' format: ``chunks/<setting>-<first>-<stop>-<fingerprint>.csv`` (Spearman rows) and, with
``tests``, ``significance/`` under the same name (written first, so that a stored chunk always has them)."""


def panel_store(out_dir) -> Store:
    """The store of a panel study in ``out_dir`` (:data:`PANEL_CHUNKS`)."""
    return Store(out_dir, PANEL_CHUNKS)


def run_panel_study(config: PanelStudyConfig, out_dir, jobs: int = 1, progress: bool = False,
                    backend="loky") -> pd.DataFrame:
    """Simulate every trial of every crowd setting not yet stored in ``out_dir``; return all per-trial rows.

    Each chunk of trials is written as its own CSV (atomically, by rename) as
    soon as it finishes, so an interrupted run resumes where it stopped,
    losing at most the chunks in flight. Results do not depend on ``jobs``
    or ``backend`` (streams are keyed by setting label and trial). The significance-test
    rows of a chunk (with ``tests``) go to ``significance/`` under the same
    name, written first, so that a stored chunk always has them
    (:func:`read_significance`).

    Parameters
    ----------
    backend : {'loky', 'threading', 'fork', 'dask'} or BackendSpec
        Where chunks are computed (:mod:`simdesign.runner.backends`).
    """
    return run_trials(PANELS, config, out_dir, backend_spec(backend, jobs), progress)


class PanelStudies(StudyKind):
    """Panel studies: k crowd workers against an expert panel. A chunk's significance-test rows (with
    ``tests``) are kept beside its trials, written first."""

    name, keys = "panels", ("panels",)
    cell_column = "setting"

    def examples(self):
        return read_examples("panels")

    def parse(self, mapping, base_dir=None):
        return parse_panel_study(mapping, base_dir=base_dir)

    def with_trials(self, config, trials):
        return parse_panel_study({**config.raw, "trials": trials})

    def cells(self, config):
        return [label for label, _ in config.settings()]

    def chunk_trials(self, config):
        return config.chunk_size

    def open_store(self, config, out_dir):
        store = panel_store(out_dir)
        store.prepare(config)
        return store

    def chunk_task(self, config, chunk):
        return delayed(_chunk)(config, chunk, dict(config.settings())[chunk.cell])

    def save_chunk(self, config, store, chunk, result):
        rows, tests = result
        if config.tests:
            store.write_chunk(chunk.cell, chunk.first, chunk.stop, tests, folder=SIGNIFICANCE)
        store.write_chunk(chunk.cell, chunk.first, chunk.stop, rows)

    def read_rows(self, config, store):
        return _read_chunks(config, store, CHUNKS, TRIAL_KEYS)

    def stored_rows(self, config, out_dir):
        return stored_trials(config, out_dir)

    def replay(self, config, cell, trial):
        return simulate_trial(config, cell, dict(config.settings())[cell], trial)

    def summarise(self, config, rows):
        return summarise_panel_study(config, rows)

    def plot(self, config, summary, out_base):
        from simdesign.studies.panels.panel_plots import draw_panel_study  # matplotlib only when drawing

        return draw_panel_study(config, summary, Path(out_base))

    def result_tables(self, config, rows, out_dir):
        """With ``tests``: ``significance``, the tests' rates (:func:`summarise_significance`)."""
        if not config.tests:
            return {}
        return {SIGNIFICANCE: summarise_significance(read_significance(config, out_dir), config.alpha)}


PANELS = PanelStudies()


def stored_trials(config: PanelStudyConfig, out_dir) -> pd.DataFrame:
    """The stored per-trial rows of ``config`` in ``out_dir``, computing nothing.

    Raises
    ------
    StoreError
        ``out_dir`` is not a results directory of this panel-study config.
    """
    store = panel_store(out_dir)
    store.open(config)
    return _read_chunks(config, store, CHUNKS, TRIAL_KEYS)


def _read_chunks(config: PanelStudyConfig, store: Store, folder: str, keys: list[str]) -> pd.DataFrame:
    trials = store.read([name for name, _ in config.settings()], config.trials, folder=folder)
    if trials.empty:
        return pd.DataFrame(columns=keys)
    # chunks never overlap (the store refuses those that do); dropping duplicates is a safeguard
    return trials.drop_duplicates(keys).reset_index(drop=True)


def read_significance(config: PanelStudyConfig, out_dir) -> pd.DataFrame:
    """The stored per-trial significance rows of a panel study (empty without ``tests``)."""
    if not config.tests:
        return pd.DataFrame(columns=list(TRIAL_COLUMNS))
    return _read_chunks(config, panel_store(out_dir), SIGNIFICANCE, ["setting", "trial", "method", "test", "k",
                                                                     "estimand"])
