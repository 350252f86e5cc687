"""Exact replications (Ito & Gatt 2023, ReproHum): an engine extension.

With ``replication: {tolerance: 0}`` in a config, every trial simulates the original study (the same
study a run without replication has) and an independent replication of the same design: new
annotators, new documents, new noise, from a third stream of the trial's seed
(:func:`simdesign.core.seeds.replication_rng`). Every test runs on both.

What is stored (one results row per value, so runs resume like any other):

* ``scores:original`` and ``scores:replication`` -- each system's mean score (``pair`` = system index);
* ``replication:<test label>`` -- the test's per-pair results on the replication study (the original's
  are the test's own rows).

The original study's structure (issue 31 part 3) are options of the same mapping: ``pairs`` (which system
pairs the original tested: ``all``, ``adjacent`` in the model's system order, ``first`` -- the first system
against each other -- or a list of ``[a, b]`` names), ``correction`` (``holm`` or ``bh`` over each study's
tested pairs), ``criteria`` (several rating criteria, simulated as *independent* repetitions of the
study: the model has one criterion, so criteria that share annotators and outputs are not modelled),
``means`` (the original's reported mean score per system: the model's effects are solved so that
its expected scores equal them, :func:`model_from_means`) and ``kappa`` (Cohen's kappa on the documents
both annotators of a pair judged, mean over pairs, in each study: ``kappa_original``,
``kappa_replication``). ``pairs`` and ``correction``, like ``alpha`` and ``tolerance``, act in the summary
only, so one run can be read under several choices (:func:`replication_summary_rows` with other settings).

The summary derives, per trial, Pearson's r of the system scores (``replication_r``), the matching
accuracy (``matching_accuracy``, trends equal within ``tolerance``) and per test the significance F1
with the original as gold (``significance_f1``; undefined when the original has no significant pair,
counted in ``n_failed`` and in a ``significance_f1_undefined`` row), and the share of trials whose
replication reproduces every significance decision exactly (``significance_reproduced``, F1 = 1, among
the defined trials) -- from the stored rows, so
``alpha`` and ``tolerance`` are summary settings (:mod:`simdesign.stats.replication` has the formulas).
"""
from __future__ import annotations

import dataclasses
import math
import re
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from simdesign.significance import run_analysis, system_pairs
from simdesign.significance.base import FAILURES, OK
from simdesign.core.estimands import Estimand, register_estimand
from simdesign.core.judgements import Judgements
from simdesign.core.suggest import suggestions
from simdesign.core.errors import ConfigError
from simdesign.core.seeds import REPLICATION_STREAM, analysis_rng, replication_rng, stream
from simdesign.stats.montecarlo import mean_interval, wilson_interval
from simdesign.stats.replication import (CORRECTIONS, corrected_decisions, matching_accuracy, pairwise_kappa,
                                         score_correlation, significance_f1)
from simdesign.core.checks import is_number

REPLICATION_PREFIX = "replication:"
SCORES = "system_scores"  # the work item name of both studies' system scores (not an analysis)
KAPPA = "shared_kappa"  # the work item name of both studies' Cohen's kappa (not an analysis)
SCORE_LABELS = {"original": "scores:original", "replication": "scores:replication"}
KAPPA_LABELS = {"original": "kappa:original", "replication": "kappa:replication"}
REPLICATION_KEYS = ("tolerance", "pairs", "correction", "criteria", "means", "kappa")
PAIR_CHOICES = ("all", "adjacent", "first")
MAX_CRITERIA = 20


@dataclass(frozen=True)
class ReplicationSettings:
    """The config's ``replication`` mapping.

    Attributes
    ----------
    tolerance : float, default 0
        System-score differences with absolute value at most this count as "equal" in the matching
        accuracy (0: sign agreement).
    pairs : str or tuple of (str, str), default 'all'
        The system pairs the original tested (the significance F1's decisions): ``all``, ``adjacent``
        (each system and the next, in the model's order), ``first`` (the first system against each
        other) or pairs of system names. r and the matching accuracy stay over every system (pair).
    correction : {'none', 'holm', 'bh'}, default 'none'
        Multiplicity correction over each study's tested pairs (per criterion).
    criteria : int, default 1
        Rating criteria, each an independent repetition of both studies (own streams); the F1 pools
        the decisions of every criterion, r is the mean of the criteria's r, the matching accuracy
        pools their pairs.
    means : tuple of float or None
        The original's reported mean score per system (model order): the effects are solved from them.
    kappa : bool, default False
        Store Cohen's kappa of each study (:func:`simdesign.stats.replication.pairwise_kappa`).
    """

    tolerance: float = 0.0
    pairs: object = "all"
    correction: str = "none"
    criteria: int = 1
    means: tuple | None = None
    kappa: bool = False

    def to_mapping(self) -> dict:
        mapping = {"tolerance": self.tolerance}
        for key in REPLICATION_KEYS[1:]:
            value = getattr(self, key)
            if value != getattr(ReplicationSettings, key, None):
                mapping[key] = [list(v) for v in value] if key == "pairs" and not isinstance(value, str) else \
                    (list(value) if isinstance(value, tuple) else value)
        return mapping


@dataclass(frozen=True)
class ReplicationItem:
    """A unit of stored work: a test on the replication study, or one study's system scores.

    ``label`` is the stored ``test`` value; ``analysis`` the test's spec (None for scores).
    """

    label: str
    analysis: object = None
    study: str = "replication"
    criterion: int = 1
    kappa: bool = False  # Cohen's kappa of the study instead of its system scores (analysis None)

    @property
    def name(self) -> str:
        if self.analysis is not None:
            return self.analysis.name
        return KAPPA if self.kappa else SCORES


def parse_replication(value, errors: list[str]) -> ReplicationSettings | None:
    """The config's ``replication`` field: absent/false (off), true (defaults) or ``{tolerance: x}``."""
    if value is None or value is False or isinstance(value, ReplicationSettings):
        return value or None
    if value is True:
        return ReplicationSettings()
    if not isinstance(value, dict):
        errors.append(f"The 'replication' field must be true, false or a mapping with keys {list(REPLICATION_KEYS)}; "
                      f"got {value!r}")
        return None
    unknown = sorted(set(value) - set(REPLICATION_KEYS))
    if unknown:
        errors.append(f"Unknown 'replication' key(s) {unknown}; allowed: {list(REPLICATION_KEYS)}"
                      f"{suggestions(unknown, REPLICATION_KEYS)}")
    tolerance = value.get("tolerance", 0.0)
    if not is_number(tolerance) or not math.isfinite(tolerance) \
            or tolerance < 0:
        errors.append(f"The 'replication.tolerance' field must be a non-negative number (score points); "
                      f"got {tolerance!r}")
        return None
    found: list[str] = []
    pairs = _parse_pairs(value.get("pairs", "all"), found)
    correction = value.get("correction", "none")
    if correction not in CORRECTIONS:
        found.append(f"The 'replication.correction' field must be one of {list(CORRECTIONS)}; got {correction!r}"
                     f"{suggestions([str(correction)], CORRECTIONS)}")
    criteria = value.get("criteria", 1)
    if isinstance(criteria, bool) or not isinstance(criteria, int) or not 1 <= criteria <= MAX_CRITERIA:
        found.append(f"The 'replication.criteria' field must be a whole number from 1 to {MAX_CRITERIA}; "
                     f"got {criteria!r}")
    means = value.get("means")
    if means is not None and (not isinstance(means, (list, tuple)) or len(means) < 2
                              or not all(is_number(m) and math.isfinite(m) for m in means)):
        found.append(f"The 'replication.means' field must be a list of finite mean scores, one per system; "
                     f"got {means!r}")
    kappa = value.get("kappa", False)
    if not isinstance(kappa, bool):
        found.append(f"The 'replication.kappa' field must be true or false; got {kappa!r}")
    if found:
        errors.extend(found)
        return None
    return ReplicationSettings(float(tolerance), pairs, correction, criteria,
                               None if means is None else tuple(float(m) for m in means), kappa)


def _parse_pairs(value, errors: list[str]):
    """'all' / 'adjacent' / 'first', or a list of [a, b] system names (checked against the model later)."""
    if isinstance(value, str):
        if value not in PAIR_CHOICES:
            errors.append(f"The 'replication.pairs' field must be one of {list(PAIR_CHOICES)} or a list of "
                          f"[system, system] pairs; got {value!r}{suggestions([value], PAIR_CHOICES)}")
        return value
    if not isinstance(value, (list, tuple)) or not value or not all(
            isinstance(pair, (list, tuple)) and len(pair) == 2 and all(isinstance(s, str) for s in pair)
            for pair in value):
        errors.append(f"The 'replication.pairs' field must be one of {list(PAIR_CHOICES)} or a non-empty list "
                      f"of [system, system] pairs (system names); got {value!r}")
        return "all"
    return tuple(tuple(pair) for pair in value)


def chosen_pairs(settings: ReplicationSettings, systems) -> np.ndarray:
    """Indices into :func:`simdesign.significance.system_pairs` of the pairs the original tested.

    Raises
    ------
    ConfigError
        A named system the model does not have, a pair of one system, or a pair named twice.
    """
    systems = list(systems)
    pairs = system_pairs(len(systems))
    choice = settings.pairs
    if choice == "all":
        return np.arange(len(pairs))
    if choice == "adjacent":
        return np.array([p for p, (i, j) in enumerate(pairs) if j == i + 1])
    if choice == "first":
        return np.array([p for p, (i, _) in enumerate(pairs) if i == 0])
    problems, wanted = [], []
    for a, b in choice:
        unknown = [s for s in (a, b) if s not in systems]
        if unknown:
            problems.append(f"The 'replication.pairs' entry [{a}, {b}] names system(s) {unknown} the model does "
                            f"not have; its systems: {systems}{suggestions(unknown, systems)}")
            continue
        i, j = sorted((systems.index(a), systems.index(b)))
        if i == j:
            problems.append(f"The 'replication.pairs' entry [{a}, {b}] pairs a system with itself")
            continue
        wanted.append(pairs.index((i, j)))
    if len(set(wanted)) != len(wanted):
        problems.append(f"The 'replication.pairs' list names a pair twice: {[list(p) for p in choice]}")
    if problems:
        raise ConfigError(problems)
    return np.array(sorted(wanted))


def model_from_means(model, means) -> object:
    """The model with its effects (and thresholds) set so that its expected scores are ``means``.

    Each system's expected score, integrated over the random effects
    (:meth:`~simdesign.model.OrdinalMixedModel.expected_scores`), rises with its effect, so each
    effect is found by bisection; the covariances stay the model's. Shifting every effect and every
    threshold by one constant leaves the scores unchanged, so the reference system's effect is set
    to 0 by moving the thresholds.

    Parameters
    ----------
    model : OrdinalMixedModel
    means : sequence of float
        One mean score per system, in the model's order, strictly inside the scale's range.

    Returns
    -------
    OrdinalMixedModel

    Raises
    ------
    ConfigError
        A wrong number of means, or a mean at or outside the ends of the scale.
    """
    from simdesign.model import OrdinalMixedModel

    means = np.asarray(means, float)
    low, high = float(model.scale[0]), float(model.scale[-1])
    if means.shape != (model.n_systems,):
        raise ConfigError(f"The 'replication.means' field must give one mean per system of model "
                          f"{model.name!r} ({model.n_systems}: {list(model.systems)}); got {means.size}")
    if np.any(means <= low) or np.any(means >= high):
        raise ConfigError(f"The 'replication.means' values must lie strictly between the scale's ends {low:g} "
                          f"and {high:g}; got {means.tolist()}")
    if np.allclose(model.expected_scores(), means, rtol=0, atol=1e-9):
        return model  # already these means (a config parsed twice): unchanged, so its fingerprint is too
    data = model.to_dict()
    thresholds = np.asarray(data["thresholds"], float)

    def expected(beta: np.ndarray) -> np.ndarray:
        shifted = dict(data, effects=(beta - beta[0]).tolist(), thresholds=(thresholds - beta[0]).tolist())
        return OrdinalMixedModel.from_dict(shifted, name=model.name).expected_scores()

    lower = np.full(model.n_systems, -MAX_MEAN_EFFECT)
    upper = np.full(model.n_systems, MAX_MEAN_EFFECT)
    for _ in range(60):  # 2 * 25 / 2**60: far below any score difference that matters
        middle = (lower + upper) / 2
        above = expected(middle) > means
        upper = np.where(above, middle, upper)
        lower = np.where(above, lower, middle)
    beta = (lower + upper) / 2
    solved = dict(data, effects=(beta - beta[0]).tolist(), thresholds=(thresholds - beta[0]).tolist(),
                  provenance=f"{data.get('provenance', '')}; effects solved from the reported means "
                             f"{means.tolist()} (simdesign.studies.replication.replication.model_from_means)")
    return OrdinalMixedModel.from_dict(solved, name=model.name)


def with_reported_means(model, settings: ReplicationSettings, problems: list[str]):
    """:func:`model_from_means` with the settings' means; problems appended (the model kept) on bad means."""
    try:
        return model_from_means(model, settings.means)
    except ConfigError as exc:
        problems.extend(exc.messages)
        return model


MAX_MEAN_EFFECT = 25.0  # latent logit bound of the bisection (the config's effect ceiling is 20)


def replication_problems(settings, analyses, model=None) -> list[str]:
    """Test labels that would clash with the stored replication rows; pairs the model does not have."""
    if settings is None or not isinstance(settings, ReplicationSettings):
        return []
    reserved = set(SCORE_LABELS.values()) | set(KAPPA_LABELS.values())
    clashes = [spec.label for spec in analyses if spec.label in reserved or spec.label.startswith(REPLICATION_PREFIX)
               or re.match(CRITERION_PATTERN, spec.label)]
    problems = []
    if clashes:
        problems.append(f"With 'replication', test labels may not start with {REPLICATION_PREFIX!r} or "
                        f"'c<number>:', or be one of {sorted(reserved)}; got {clashes}")
    if model is not None and hasattr(model, "systems"):
        try:
            chosen_pairs(settings, model.systems)
        except ConfigError as exc:
            problems.extend(exc.messages)
    return problems


CRITERION_PATTERN = r"c\d+:"


def criterion_label(label: str, criterion: int) -> str:
    """The stored label of a criterion's row: the label itself for the first criterion, ``c<k>:label`` after."""
    return label if criterion == 1 else f"c{criterion}:{label}"


def replication_work(config) -> tuple:
    """The work items a config with ``replication`` adds to every trial (none without it)."""
    settings = getattr(config, "replication", None)
    if settings is None:
        return ()
    items = []
    for criterion in range(1, settings.criteria + 1):
        def named(label):
            return criterion_label(label, criterion)

        items += [ReplicationItem(named(SCORE_LABELS[study]), None, study, criterion)
                  for study in ("original", "replication")]
        if settings.kappa:
            items += [ReplicationItem(named(KAPPA_LABELS[study]), None, study, criterion, kappa=True)
                      for study in ("original", "replication")]
        if criterion > 1:  # the first criterion's original is the trial's study, tested by the config's tests
            items += [ReplicationItem(named(spec.label), dataclasses.replace(spec, label=named(spec.label)),
                                      "original", criterion) for spec in config.analyses]
        items += [ReplicationItem(REPLICATION_PREFIX + named(spec.label), dataclasses.replace(
            spec, label=REPLICATION_PREFIX + named(spec.label)), "replication", criterion) for spec in config.analyses]
    return tuple(items)


def is_replication_item(item) -> bool:
    return isinstance(item, ReplicationItem)


def _row(design_label: str, trial: int, label: str, **values) -> dict:
    row = {"design": design_label, "trial": trial, "test": label, "pair": -1, "system_a": "", "system_b": "",
           "true_diff": float("nan"), "estimate": float("nan"), "p_value": float("nan"), "status": OK,
           "message": "", "fit_status": pd.NA, "fit_seconds": 0.0}
    row.update(values)
    return row


def study_rng(root_seed: int, design_label: str, trial: int, study: str, criterion: int) -> np.random.Generator:
    """The generator of one trial's study: the replication of the first criterion as it always was
    (:func:`~simdesign.core.seeds.replication_rng`); another criterion's original or replication from the
    replication stream's own child (extra spawn-key entries), independent of every other study."""
    if criterion == 1 and study == "replication":
        return replication_rng(root_seed, design_label, trial)
    return stream(root_seed, design_label, trial, REPLICATION_STREAM, criterion, 0 if study == "original" else 1)


def replication_rows(items, model, effect, root_seed: int, design, trial: int, original: Judgements,
                     registry: dict) -> list[dict]:
    """Results rows of one trial's replication work items (the replication study is sampled once, if needed).

    Parameters
    ----------
    items : sequence of ReplicationItem
    model : OrdinalMixedModel
    effect
        The config's effect setting.
    root_seed : int
    design
        The chunk's design.
    trial : int
    original : Judgements
        The trial's original study.
    registry : dict
        Analysis name -> AnalysisInfo (the engine's chunk registry).
    """
    label = design.label
    studies = {("original", 1): original}
    rows = []
    pairs = system_pairs(model.n_systems)
    true_diff = model.effects_for(effect)
    for item in items:
        key = (item.study, item.criterion)
        if key not in studies:
            studies[key] = model.sample(design, study_rng(root_seed, label, trial, *key), effect)
        study = studies[key]
        if item.kappa:
            rows.append(_row(label, trial, item.label, estimate=pairwise_kappa(study.scores, study.annotator,
                                                                               study.document)))
            continue
        if item.analysis is None:
            means = study.scores.mean(axis=0)
            rows += [_row(label, trial, item.label, pair=s, system_a=name, estimate=float(means[s]))
                     for s, name in enumerate(model.systems)]
            continue
        started = time.perf_counter()
        result = run_analysis(registry[item.name], study, analysis_rng(root_seed, label, trial, item.label),
                              item.analysis.options)
        seconds = time.perf_counter() - started
        rows += [_row(label, trial, item.label, pair=p, system_a=model.systems[i], system_b=model.systems[j],
                      true_diff=float(true_diff[i] - true_diff[j]), estimate=float(result.estimate[p]),
                      p_value=float(result.p_value[p]), status=str(result.status[p]), message=result.message,
                      fit_status=result.fit_status, fit_seconds=seconds)
                 for p, (i, j) in enumerate(pairs)]
    return rows


# ---------------------------------------------------------------------------------------------------------------
# Summary


def _mean_row(values: np.ndarray, n_trials: int, n_undefined: int, note: str, confidence: float = 0.95) -> dict:
    """Mean of per-trial values with MCSE (sd ddof 1 / sqrt(n)) and a normal interval clipped to [-1, 1]."""
    if values.size == 0:
        nan = float("nan")
        return {"rate": nan, "ci_low": nan, "ci_high": nan, "mcse": nan, "n_tests": 0, "n_failed": n_undefined,
                "note": f"undefined in every trial; {note}"}
    mean, mcse, low, high = mean_interval(values, confidence)
    if n_undefined:
        note = f"{note}; undefined in {n_undefined} of {n_trials} trials, mean over the other {values.size}"
    return {"rate": mean, "ci_low": max(-1.0, low), "ci_high": min(1.0, high), "mcse": mcse,
            "n_tests": int(values.size), "n_failed": n_undefined, "note": note}


def _wide(rows: pd.DataFrame, trials: np.ndarray, column: str) -> np.ndarray:
    """A (trials, pairs or systems) matrix of ``column`` from stored rows, NaN where a trial has none."""
    table = rows.pivot(index="trial", columns="pair", values=column).reindex(trials)
    return table.to_numpy()


def _criterion_trials(design_rows: pd.DataFrame, labels: list[str]) -> np.ndarray:
    """Trials that hold every one of ``labels``."""
    trials = None
    for label in labels:
        found = design_rows.loc[design_rows["test"] == label, "trial"].unique()
        trials = found if trials is None else np.intersect1d(trials, found)
    return np.sort(trials) if trials is not None else np.array([], dtype=int)


def trial_scores(design_rows: pd.DataFrame, settings: ReplicationSettings,
                 n_systems: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per trial: Pearson r of the system scores and the matching accuracy (trials, r, matching).

    With several criteria, a trial's r is the mean of its criteria's r (criteria with an undefined r
    left out; NaN when every one is) and its matching accuracy pools the pairs of every criterion.
    """
    criteria = range(1, settings.criteria + 1)
    labels = [criterion_label(SCORE_LABELS[study], c) for c in criteria for study in ("original", "replication")]
    trials = _criterion_trials(design_rows, labels)
    pairs = system_pairs(n_systems)
    left, right = [i for i, _ in pairs], [j for _, j in pairs]
    correlations, matches = np.full((len(criteria), trials.size), np.nan), np.zeros((len(criteria), trials.size))
    for row, c in enumerate(criteria):
        first, second = (_wide(design_rows[design_rows["test"] == criterion_label(SCORE_LABELS[study], c)], trials,
                               "estimate") for study in ("original", "replication"))
        correlations[row] = [score_correlation(a, b) for a, b in zip(first, second)]
        matches[row] = [matching_accuracy(a[left] - a[right], b[left] - b[right], settings.tolerance)
                        for a, b in zip(first, second)]
    finite = np.isfinite(correlations)
    counts = finite.sum(axis=0)
    per_trial_r = np.where(counts > 0, np.where(finite, correlations, 0).sum(axis=0) / np.maximum(counts, 1), np.nan)
    return trials, per_trial_r, matches.mean(axis=0)


def score_rows(design_rows: pd.DataFrame, settings: ReplicationSettings, n_systems: int) -> list[dict]:
    """``replication_r`` and ``matching_accuracy`` rows from both studies' stored system scores."""
    trials, per_trial_r, matching = trial_scores(design_rows, settings, n_systems)
    if trials.size == 0:
        return []
    defined = np.isfinite(per_trial_r)
    over = "" if settings.criteria == 1 else f"; mean over {settings.criteria} criteria per trial"
    return [
        {"test": "", "estimand": "replication_r", "trials": int(trials.size),
         **_mean_row(per_trial_r[defined], trials.size, int((~defined).sum()),
                     f"Pearson r of the system mean scores, original vs replication{over}; mean of per-trial values")},
        {"test": "", "estimand": "matching_accuracy", "trials": int(trials.size),
         **_mean_row(matching, trials.size, 0, f"share of system pairs with the same trend (equal within "
                                               f"{settings.tolerance:g}){over}; mean of per-trial values")},
    ]


def kappa_rows(design_rows: pd.DataFrame, settings: ReplicationSettings) -> list[dict]:
    """``kappa_original`` and ``kappa_replication``: each study's Cohen's kappa, mean over criteria per trial."""
    if not settings.kappa:
        return []
    rows = []
    for study in ("original", "replication"):
        labels = [criterion_label(KAPPA_LABELS[study], c) for c in range(1, settings.criteria + 1)]
        trials = _criterion_trials(design_rows, labels)
        if trials.size == 0:
            continue
        values = np.array([_wide(design_rows[design_rows["test"] == label], trials, "estimate")[:, 0]
                           for label in labels])
        defined = np.isfinite(values).all(axis=0)
        per_trial = values[:, defined].mean(axis=0)
        rows.append({"test": "", "estimand": f"kappa_{study}", "trials": int(trials.size),
                     **_mean_row(per_trial, trials.size, int((~defined).sum()),
                                 f"Cohen's kappa of the {study} study on the outputs both annotators of a pair "
                                 f"judged (shared documents), mean over annotator pairs"
                                 + ("" if settings.criteria == 1 else f" and {settings.criteria} criteria")
                                 + "; mean of per-trial values")})
    return rows


def study_decisions(design_rows: pd.DataFrame, label: str, trials: np.ndarray, tested: np.ndarray, alpha: float,
                    correction: str) -> np.ndarray:
    """(trials, tested pairs) decisions of one study's stored test rows (+1 / -1 significant, 0 not)."""
    rows = design_rows[(design_rows["test"] == label) & design_rows["trial"].isin(trials)]
    usable = ~np.isin(_wide(rows, trials, "status").astype(str), list(FAILURES))
    return corrected_decisions(_wide(rows, trials, "p_value")[:, tested], _wide(rows, trials, "estimate")[:, tested],
                               usable[:, tested], alpha, correction)


def trial_f1(design_rows: pd.DataFrame, test_label: str, alpha: float, settings: ReplicationSettings,
             tested: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per trial: the significance F1 of one test (trials, F1 with NaN where undefined).

    The decisions are those of the tested pairs (``tested``, default all), after the settings'
    correction, pooled over the criteria.
    """
    labels = [criterion_label(test_label, c) for c in range(1, settings.criteria + 1)]
    trials = _criterion_trials(design_rows, labels + [REPLICATION_PREFIX + label for label in labels])
    if trials.size == 0:
        return trials, np.array([])
    if tested is None:
        tested = np.arange(int(design_rows.loc[design_rows["test"] == test_label, "pair"].max()) + 1)
    decisions = [np.hstack([study_decisions(design_rows, prefix + label, trials, tested, alpha, settings.correction)
                            for label in labels]) for prefix in ("", REPLICATION_PREFIX)]
    scores = [significance_f1(a, b) for a, b in zip(*decisions)]
    return trials, np.array([np.nan if score is None else score for score in scores], dtype=float)


def f1_rows(design_rows: pd.DataFrame, test_label: str, alpha: float,
            settings: ReplicationSettings | None = None, tested: np.ndarray | None = None) -> list[dict]:
    """``significance_f1``, ``significance_reproduced`` and ``significance_f1_undefined`` rows of one test."""
    settings = settings or ReplicationSettings()
    trials, f1 = trial_f1(design_rows, test_label, alpha, settings, tested)
    if trials.size == 0:
        return []
    undefined = np.isnan(f1)
    values = f1[~undefined]
    n = int(trials.size)
    n_tested = tested.size if tested is not None else \
        int(design_rows.loc[design_rows["test"] == test_label, "pair"].max()) + 1
    scope = _decision_scope(settings, n_tested)
    return [
        {"test": test_label, "estimand": "significance_f1", "trials": n,
         **_mean_row(values, n, int(undefined.sum()), "F1 of the replication's significant pairs (with direction), "
                                                      f"original as gold{scope}; mean of per-trial values")},
        {"test": test_label, "estimand": "significance_reproduced", "trials": n,
         **_share_row(values == 1.0, int(undefined.sum()), "share of trials (original with a significant pair) "
                                                           "whose replication has exactly the same significant "
                                                           f"pairs and directions (F1 = 1){scope}")},
        {"test": test_label, "estimand": "significance_f1_undefined", "trials": n,
         **_share_row(undefined, 0, "share of trials whose original study has no significant pair (F1 undefined)"
                                    f"{scope}")},
    ]


def replication_trials(config, design_rows: pd.DataFrame, settings: ReplicationSettings | None = None) -> pd.DataFrame:
    """One row per (trial, test): r, matching accuracy and significance F1 (NaN: undefined).

    The per-trial values the summary averages (the same functions), for joint counts such as "F1 at
    most 0.29 with r at least 0.89". ``settings`` defaults to the config's; pass others (e.g. other
    ``pairs`` or ``correction``) to read the same stored trials under another analysis plan.
    """
    settings = settings or config.replication
    trials, r, matching = trial_scores(design_rows, settings, config.model.n_systems)
    scores = pd.DataFrame({"trial": trials, "replication_r": r, "matching_accuracy": matching})
    tested = chosen_pairs(settings, config.model.systems)
    frames = []
    for spec in config.analyses:
        f1_trials, f1 = trial_f1(design_rows, spec.label, config.alpha, settings, tested)
        frames.append(scores.merge(pd.DataFrame({"trial": f1_trials, "test": spec.label, "significance_f1": f1}),
                                   on="trial"))
    columns = ["trial", "test", "replication_r", "matching_accuracy", "significance_f1"]
    return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)


def _decision_scope(settings: ReplicationSettings, n_tested: int) -> str:
    """The note's words for non-default decisions ('' for every pair, uncorrected, one criterion)."""
    parts = []
    if settings.pairs != "all":
        shown = settings.pairs if isinstance(settings.pairs, str) else "; ".join("-".join(p) for p in settings.pairs)
        parts.append(f"tested pairs {shown} ({n_tested})")
    if settings.correction != "none":
        parts.append(f"{settings.correction} correction per study")
    if settings.criteria > 1:
        parts.append(f"decisions of {settings.criteria} criteria pooled")
    return "" if not parts else " (" + ", ".join(parts) + ")"


def _share_row(events: np.ndarray, n_failed: int, note: str) -> dict:
    """A share of trials with its binomial MCSE and Wilson interval (the summary's rule for any rate)."""
    n = int(events.size)
    if n == 0:
        nan = float("nan")
        return {"rate": nan, "ci_low": nan, "ci_high": nan, "mcse": nan, "n_tests": 0, "n_failed": n_failed,
                "note": note}
    share = float(np.mean(events))
    mcse = math.sqrt(share * (1 - share) / (n - 1)) if n > 1 else float("nan")
    # at the MCSE of 0/1 values n_eff = n - 1 is clipped up to the n trials: Wilson's interval for k of n
    low, high = wilson_interval(share, mcse, n, n)
    return {"rate": share, "ci_low": float(low), "ci_high": float(high), "mcse": mcse, "n_tests": n,
            "n_failed": n_failed, "note": note}


def replication_summary_rows(config, design_rows: pd.DataFrame) -> list[dict]:
    """The replication estimands of one design (empty without ``replication``): summary-row fragments.

    Each dict has ``test``, ``estimand``, ``rate``, ``ci_low``, ``ci_high``, ``mcse``, ``n_tests``,
    ``n_failed``, ``note`` and ``trials``; the summary adds the design columns.
    """
    settings = getattr(config, "replication", None)
    if settings is None:
        return []
    rows = score_rows(design_rows, settings, config.model.n_systems)
    rows += kappa_rows(design_rows, settings)
    tested = chosen_pairs(settings, config.model.systems)
    for spec in config.analyses:
        rows += f1_rows(design_rows, spec.label, config.alpha, settings, tested)
    return rows


# The replication study's estimands, in the estimand registry (all five come from replication_summary_rows);
# other modules name them through these entries.
REPLICATION_R = register_estimand(Estimand(
    "replication_r", ("replication",), "value", "Pearson r of system scores", replication_summary_rows,
    "Pearson r of the system mean scores, original vs replication; mean of per-trial values"))
MATCHING_ACCURACY = register_estimand(Estimand(
    "matching_accuracy", ("replication",), "value", "matching accuracy (same order)", replication_summary_rows,
    "share of system pairs with the same trend; mean of per-trial values"))
SIGNIFICANCE_F1 = register_estimand(Estimand(
    "significance_f1", ("replication",), "value", "significance F1", replication_summary_rows,
    "F1 of the replication's significant pairs (with direction), original as gold"))
SIGNIFICANCE_REPRODUCED = register_estimand(Estimand(
    "significance_reproduced", ("replication",), "rate", "all significance decisions reproduced",
    replication_summary_rows, "share of trials whose replication has exactly the original's significant pairs and "
                              "directions (F1 = 1)"))
F1_UNDEFINED = register_estimand(Estimand(
    "significance_f1_undefined", ("replication",), "rate", "significance F1 undefined", replication_summary_rows,
    "share of trials whose original study has no significant pair"))
KAPPA_ORIGINAL = register_estimand(Estimand(
    "kappa_original", ("replication",), "value", "Cohen's kappa, original study", replication_summary_rows,
    "Cohen's kappa of the original study's annotator pairs on its shared documents (replication 'kappa: true'); "
    "mean of per-trial values"))
KAPPA_REPLICATION = register_estimand(Estimand(
    "kappa_replication", ("replication",), "value", "Cohen's kappa, replication", replication_summary_rows,
    "Cohen's kappa of the replication's annotator pairs on its shared documents (replication 'kappa: true'); "
    "mean of per-trial values"))
