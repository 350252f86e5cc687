"""Exact replications (Ito & Gatt 2023, ReproHum): an engine extension.

With ``replication: {tolerance: 0}`` in a config, every trial simulates the original study (the same
study a run without replication has) and an independent replication of the same design: new
annotators, new documents, new noise, from a third stream of the trial's seed
(:func:`simdesign.core.seeds.replication_rng`). Every test runs on both.

What is stored (one results row per value, so runs resume like any other):

* ``scores:original`` and ``scores:replication`` -- each system's mean score (``pair`` = system index);
* ``replication:<test label>`` -- the test's per-pair results on the replication study (the original's
  are the test's own rows).

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
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from simdesign.analyses import run_analysis, system_pairs
from simdesign.analyses.base import FAILURES, OK
from simdesign.core.estimands import Estimand, register_estimand
from simdesign.core.judgements import Judgements
from simdesign.core.suggest import suggestions
from simdesign.core.seeds import analysis_rng, replication_rng
from simdesign.stats.montecarlo import mean_interval, wilson_interval
from simdesign.stats.replication import (matching_accuracy, score_correlation, significance_decisions,
                                         significance_f1)
from simdesign.core.checks import is_number

REPLICATION_PREFIX = "replication:"
SCORES = "system_scores"  # the work item name of both studies' system scores (not an analysis)
SCORE_LABELS = {"original": "scores:original", "replication": "scores:replication"}
REPLICATION_KEYS = ("tolerance",)


@dataclass(frozen=True)
class ReplicationSettings:
    """The config's ``replication`` mapping.

    Attributes
    ----------
    tolerance : float, default 0
        System-score differences with absolute value at most this count as "equal" in the matching
        accuracy (0: sign agreement).
    """

    tolerance: float = 0.0

    def to_mapping(self) -> dict:
        return {"tolerance": self.tolerance}


@dataclass(frozen=True)
class ReplicationItem:
    """A unit of stored work: a test on the replication study, or one study's system scores.

    ``label`` is the stored ``test`` value; ``analysis`` the test's spec (None for scores).
    """

    label: str
    analysis: object = None
    study: str = "replication"

    @property
    def name(self) -> str:
        return self.analysis.name if self.analysis is not None else SCORES


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
    return ReplicationSettings(float(tolerance))


def replication_problems(settings, analyses) -> list[str]:
    """Test labels that would clash with the stored replication rows."""
    if settings is None:
        return []
    reserved = set(SCORE_LABELS.values())
    clashes = [spec.label for spec in analyses if spec.label in reserved or spec.label.startswith(REPLICATION_PREFIX)]
    if clashes:
        return [f"With 'replication', test labels may not start with {REPLICATION_PREFIX!r} or be one of "
                f"{sorted(reserved)}; got {clashes}"]
    return []


def replication_work(config) -> tuple:
    """The work items a config with ``replication`` adds to every trial (none without it)."""
    if getattr(config, "replication", None) is None:
        return ()
    tests = tuple(ReplicationItem(REPLICATION_PREFIX + spec.label, dataclasses.replace(
        spec, label=REPLICATION_PREFIX + spec.label)) for spec in config.analyses)
    return (ReplicationItem(SCORE_LABELS["original"], None, "original"),
            ReplicationItem(SCORE_LABELS["replication"], None, "replication")) + tests


def is_replication_item(item) -> bool:
    return isinstance(item, ReplicationItem)


def _row(design_label: str, trial: int, label: str, **values) -> dict:
    row = {"design": design_label, "trial": trial, "test": label, "pair": -1, "system_a": "", "system_b": "",
           "true_diff": float("nan"), "estimate": float("nan"), "p_value": float("nan"), "status": OK,
           "message": "", "fit_status": pd.NA, "fit_seconds": 0.0}
    row.update(values)
    return row


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
    replicate = None
    rows = []
    pairs = system_pairs(model.n_systems)
    true_diff = model.effects_for(effect)
    for item in items:
        if item.study == "replication" and replicate is None:
            replicate = model.sample(design, replication_rng(root_seed, label, trial), effect)
        study = original if item.study == "original" else replicate
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


def score_rows(design_rows: pd.DataFrame, settings: ReplicationSettings, n_systems: int) -> list[dict]:
    """``replication_r`` and ``matching_accuracy`` rows from both studies' stored system scores."""
    original = design_rows[design_rows["test"] == SCORE_LABELS["original"]]
    replicate = design_rows[design_rows["test"] == SCORE_LABELS["replication"]]
    trials = np.intersect1d(original["trial"].unique(), replicate["trial"].unique())
    if trials.size == 0:
        return []
    first, second = _wide(original, trials, "estimate"), _wide(replicate, trials, "estimate")
    pairs = system_pairs(n_systems)
    left, right = [i for i, _ in pairs], [j for _, j in pairs]
    correlations = np.array([score_correlation(a, b) for a, b in zip(first, second)])
    defined = np.isfinite(correlations)
    matching = np.array([matching_accuracy(a[left] - a[right], b[left] - b[right], settings.tolerance)
                         for a, b in zip(first, second)])
    return [
        {"test": "", "estimand": "replication_r", "trials": int(trials.size),
         **_mean_row(correlations[defined], trials.size, int((~defined).sum()),
                     "Pearson r of the system mean scores, original vs replication; mean of per-trial values")},
        {"test": "", "estimand": "matching_accuracy", "trials": int(trials.size),
         **_mean_row(matching, trials.size, 0, f"share of system pairs with the same trend (equal within "
                                               f"{settings.tolerance:g}); mean of per-trial values")},
    ]


def f1_rows(design_rows: pd.DataFrame, test_label: str, alpha: float) -> list[dict]:
    """``significance_f1`` and ``significance_f1_undefined`` rows of one test."""
    original = design_rows[design_rows["test"] == test_label]
    replicate = design_rows[design_rows["test"] == REPLICATION_PREFIX + test_label]
    trials = np.intersect1d(original["trial"].unique(), replicate["trial"].unique())
    if trials.size == 0:
        return []
    decisions = []
    for rows in (original, replicate):
        rows = rows[rows["trial"].isin(trials)]
        usable = ~np.isin(_wide(rows, trials, "status").astype(str), list(FAILURES))
        decisions.append(significance_decisions(_wide(rows, trials, "p_value"), _wide(rows, trials, "estimate"),
                                                usable, alpha))
    scores = [significance_f1(a, b) for a, b in zip(*decisions)]
    undefined = np.array([score is None for score in scores])
    values = np.array([score for score in scores if score is not None], dtype=float)
    n = int(trials.size)
    return [
        {"test": test_label, "estimand": "significance_f1", "trials": n,
         **_mean_row(values, n, int(undefined.sum()), "F1 of the replication's significant pairs (with direction), "
                                                      "original as gold; mean of per-trial values")},
        {"test": test_label, "estimand": "significance_reproduced", "trials": n,
         **_share_row(values == 1.0, int(undefined.sum()), "share of trials (original with a significant pair) "
                                                           "whose replication has exactly the same significant "
                                                           "pairs and directions (F1 = 1)")},
        {"test": test_label, "estimand": "significance_f1_undefined", "trials": n,
         **_share_row(undefined, 0, "share of trials whose original study has no significant pair (F1 undefined)")},
    ]


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
    for spec in config.analyses:
        rows += f1_rows(design_rows, spec.label, config.alpha)
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
