"""Crowd studies with a worker-level crowd: aggregation against experts, per study and across studies.

A crowd-study config (``study: crowd``; ``configs/crowd_spammers.yaml``, ``configs/crowd_paper.yaml``)
declares the items, the criteria and the worker model of :mod:`simdesign.model.crowd`, the numbers of
workers per item ``ks`` to subsample, the ``aggregations`` (:data:`simdesign.stats.aggregation.AGGREGATIONS`)
and optionally a ``grid`` of worker-model values (each combination a cell with its own streams).

One trial samples one study (:func:`simdesign.model.crowd.sample_crowd`), then, for each k and
``subsamples`` times, keeps k of each item's workers at random (the same workers for every criterion: a
worker rates all criteria of an item at once), aggregates per item and criterion, and takes Spearman's rho
across items with the experts' mean and with the true quality. Its rows:

* ``correlation`` (criterion, k, method): ``rho_expert`` and ``rho_truth``, means over the subsamples; the
  first subsample is one realised study: ``rho_study`` with its 95% interval within that study (Fisher z with
  Bonett & Wright's standard error for Spearman, sqrt((1 + rho^2 / 2) / (n - 3))) and ``beats_mos``: 1 if the
  method's rho with the experts exceeds MOS's in that study, 1/2 on a tie, 0 otherwise;
* ``bias`` (criterion): the crowd's mean score (all its workers) minus the experts' over the items and the
  paired t-test of it over the items (``p_value``);
* ``reliability`` (criterion): the single-worker reliability rho_1, the mean Pearson correlation across items
  between disjoint pairs of an item's workers (workers 1-2, 3-4, ...);
* ``pool``: the recruited workers' spammer share and the candidates screened.

The summary (trial = unit) gives means with MCSE and normal intervals, rates with Wilson intervals, each
method's paired difference from MOS, the knee of each mean curve (Kneedle over ``ks``, bootstrap interval
over trials) beside the Spearman-Brown knee at the mean rho_1 (what the curve family alone gives, see
:func:`spearman_brown_knee`), the spammer share from which a method beats MOS at each k (with a ``grid``
over ``spammer_share``), and, with a ``target``, the fewest workers per item reaching a target correlation
with their cost.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from simdesign.core.errors import ConfigError
from simdesign.core.fields import field_problem
from simdesign.core.seeds import entropy_rng
from simdesign.model.crowd import (Criterion, ItemStructure, WorkerModel, sample_crowd, structure_problems,
                                   worker_problems)
from simdesign.studies.panels.panel_summary import KNEE  # the same knee (Kneedle of the mean curve) as panel studies
from simdesign.runner.study import StudyKind, register_study_kind, study_field_problems
from simdesign.studies.example_configs import read_examples
from simdesign.stats.aggregation import AGGREGATIONS
from simdesign.stats.knee import kneedle, spearman_brown_knee
from simdesign.stats.montecarlo import mean_interval, wilson_interval

KEYS = ("study", "name", "description", "model", "effect", "items", "criteria", "workers", "ks", "subsamples",
        "aggregations", "grid", "trials", "seed", "bootstrap", "alpha", "target")
CRITERION_KEYS = ("item_sd", "location", "crowd_bias")
GRID_KEYS = ("spammer_share", "noise", "noise_spread", "per_item", "workers", "min_seconds", "qualification_items",
             "spammer_kind")
TARGET_KEYS = ("correlation", "cost_per_judgement", "method")


@dataclass(frozen=True)
class CrowdStudyConfig:
    """A validated crowd-study config (module docstring; built by :meth:`CrowdStudies.parse`)."""

    name: str
    structure: ItemStructure
    criteria: tuple
    workers: WorkerModel
    ks: tuple
    aggregations: tuple = ("mean", "median", "majority", "mace")
    grid: dict = field(default_factory=dict)
    subsamples: int = 5
    trials: int = 100
    seed: int = 0
    bootstrap: int = 500
    alpha: float = 0.05
    target: dict = field(default_factory=dict)
    model: object = None
    effect: object = "fitted"
    raw: dict = field(default_factory=dict)

    def settings(self) -> list[tuple[str, WorkerModel]]:
        """(label, worker model) per cell: every combination of the grid, or the config's own."""
        keys = list(self.grid)
        combos = itertools.product(*(self.grid[key] for key in keys)) if keys else [()]
        return [("-".join(f"{key}{value:g}" if not isinstance(value, str) else f"{key}-{value}"
                          for key, value in zip(keys, values)) or "base",
                 replace(self.workers, **dict(zip(keys, values)))) for values in combos]


def _list_problem(key, values, check, allowed: str) -> list[str]:
    if not isinstance(values, list) or not values or not all(check(v) for v in values) \
            or len(set(map(str, values))) != len(values):
        return [f"The '{key}' field must be a non-empty list of distinct {allowed}; got {values!r}"]
    return []


def _criteria(raw, errors: list[str]) -> tuple:
    if not isinstance(raw, dict) or not raw:
        errors.append("The 'criteria' field must be a non-empty mapping of criterion name -> {item_sd, location, "
                      f"crowd_bias}}; got {raw!r}")
        return ()
    criteria = []
    for name, settings in raw.items():
        settings = settings or {}
        if not isinstance(settings, dict) or set(settings) - set(CRITERION_KEYS):
            errors.append(f"The 'criteria.{name}' field must be a mapping of {list(CRITERION_KEYS)}; got {settings!r}")
            continue
        for key, value in settings.items():
            number = not isinstance(value, bool) and isinstance(value, (int, float)) and np.isfinite(value)
            if not number or (key == "item_sd" and value <= 0):
                errors.append(f"The 'criteria.{name}.{key}' field must be a number{' > 0' if key == 'item_sd' else ''}"
                              f"; got {value!r}")
        criteria.append(Criterion(str(name), **settings))
    return tuple(criteria)


def parse_crowd_study(raw: dict, base_dir: Path | None = None) -> CrowdStudyConfig:
    """Validate a crowd-study mapping; every problem at once in one ConfigError naming its field."""
    if not isinstance(raw, dict):
        raise ConfigError(f"A crowd-study config must be a mapping; got {type(raw).__name__}")
    errors = study_field_problems(raw, ("crowd",))
    unknown = sorted(set(raw) - set(KEYS), key=str)
    if unknown:
        errors.append(f"Unknown crowd-study key(s) {unknown}; allowed: {list(KEYS)}")
    values = {"trials": 100, "seed": 0, "subsamples": 5, "bootstrap": 500, "alpha": 0.05}
    values.update({key: raw[key] for key in values if key in raw})
    errors += [p for key, value in [("name", raw.get("name"))] + list(values.items()) if (p := field_problem(key, value))]
    items = raw.get("items", {"structure": "single"})
    errors += structure_problems(items)
    workers = raw.get("workers", {})
    errors += worker_problems(workers)
    criteria = _criteria(raw.get("criteria", {"overall": {}}), errors)
    per_item = workers.get("per_item", WorkerModel.per_item) if isinstance(workers, dict) else 0
    ks = raw.get("ks", [1, 3, 5, 7, 9, 12, 16, 24])
    errors += _list_problem("ks", ks, lambda k: isinstance(k, int) and not isinstance(k, bool) and 1 <= k <= per_item,
                            f"integers in 1..workers.per_item ({per_item})")
    aggregations = raw.get("aggregations", list(CrowdStudyConfig.aggregations))
    errors += _list_problem("aggregations", aggregations, lambda a: a in AGGREGATIONS, f"names from {list(AGGREGATIONS)}")
    if isinstance(aggregations, list) and "mean" not in aggregations:
        errors.append(f"The 'aggregations' field must include 'mean' (MOS, every comparison's baseline); got "
                      f"{aggregations!r}")
    grid = raw.get("grid", {}) or {}
    if not isinstance(grid, dict) or set(grid) - set(GRID_KEYS):
        errors.append(f"The 'grid' field must be a mapping from {list(GRID_KEYS)} to lists of values; got {grid!r}")
        grid = {}
    for key, options in grid.items():
        if not isinstance(options, list) or not options:
            errors.append(f"The 'grid.{key}' field must be a non-empty list; got {options!r}")
            continue
        for value in options:
            errors += [p.replace("'workers.", "'grid: workers.") for p in
                       worker_problems({**(workers if isinstance(workers, dict) else {}), key: value})]
    target = raw.get("target", {}) or {}
    if not target:
        pass
    elif not isinstance(target, dict) or set(target) - set(TARGET_KEYS) or "correlation" not in target:
        errors.append(f"The 'target' field must be a mapping with 'correlation' (in (0, 1)) and optionally "
                      f"'cost_per_judgement' and 'method'; got {target!r}")
    else:
        if not isinstance(target["correlation"], (int, float)) or not 0 < target["correlation"] < 1:
            errors.append(f"The 'target.correlation' field must be a number in (0, 1); got {target['correlation']!r}")
        if target.get("method", "mean") not in (aggregations if isinstance(aggregations, list) else []):
            errors.append(f"The 'target.method' field must be one of 'aggregations'; got {target.get('method')!r}")
        cost = target.get("cost_per_judgement", 1.0)
        if isinstance(cost, bool) or not isinstance(cost, (int, float)) or cost <= 0:
            errors.append(f"The 'target.cost_per_judgement' field must be a number > 0; got {cost!r}")
    model = None
    if isinstance(items, dict) and items.get("structure") == "systems":
        from simdesign.studies.rates.config import likert_model_or_problem, resolve_model

        model, _ = resolve_model(raw, base_dir, errors)
        model = likert_model_or_problem(model, "a crowd study", errors)
    elif "model" in raw:
        errors.append("The 'model' field is used only with items.structure 'systems' (single outputs have their "
                      "own scale); remove it")
    if errors:
        raise ConfigError(list(dict.fromkeys(errors)))
    structure = ItemStructure(**{**items, "thresholds": tuple(items.get("thresholds", ()))})
    config = CrowdStudyConfig(name=raw["name"], structure=structure, criteria=criteria, workers=WorkerModel(**workers),
                              ks=tuple(ks), aggregations=tuple(aggregations), grid=dict(grid),
                              target=dict(target), model=model, effect=raw.get("effect", "fitted"), raw=dict(raw),
                              **{key: values[key] for key in ("subsamples", "trials", "seed", "bootstrap")},
                              alpha=float(values["alpha"]))
    problems = crowd_size_problems(config)
    if problems:
        raise ConfigError(problems)
    return config


def crowd_size_problems(config: CrowdStudyConfig) -> list[str]:
    """Messages for a crowd study larger than a run can hold, checked from the sizes before anything is sampled.

    One trial holds every judgement (items x (per_item + experts) x criteria) in memory, and assigning each
    item looks at the whole pool (items x workers), so both are bounded by the runner's ceiling on the
    judgements of one study (:data:`simdesign.runner.limits.MAX_JUDGEMENTS_PER_STUDY`, docs/runner.md): a
    typo such as ``items: 100000000`` would otherwise fill the memory while the first study is sampled.
    """
    from simdesign.runner.limits import MAX_JUDGEMENTS_PER_STUDY

    n_items = config.structure.n_items(config.model)
    where = "'items.docs' x the model's systems" if config.structure.structure == "systems" else "'items.items'"
    problems = []
    for label, workers in config.settings():
        cell = "" if label == "base" else f" (grid cell {label})"
        judgements = n_items * (workers.per_item + workers.experts) * len(config.criteria)
        if judgements > MAX_JUDGEMENTS_PER_STUDY:
            problems.append(f"The crowd study{cell} holds {judgements:,} judgements per simulated study ({where} "
                            f"{n_items:,} x ('workers.per_item' + 'workers.experts') x {len(config.criteria)} "
                            f"criteria); the ceiling is {MAX_JUDGEMENTS_PER_STUDY:,} (each study is held in memory "
                            "whole)")
        if n_items * workers.workers > MAX_JUDGEMENTS_PER_STUDY:
            problems.append(f"The crowd study{cell} assigns {n_items:,} items ({where}) among 'workers.workers' "
                            f"{workers.workers:,}: {n_items * workers.workers:,} item-worker pairs to weigh per "
                            f"study; the ceiling is {MAX_JUDGEMENTS_PER_STUDY:,}")
    return list(dict.fromkeys(problems))


def spearman_rows(values: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Spearman's rho of each row of ``values`` (R, n) with ``target`` (n,); NaN for a constant row."""
    x = stats.rankdata(values, axis=1)
    x -= x.mean(axis=1, keepdims=True)
    y = stats.rankdata(target)
    y -= y.mean()
    denominator = np.sqrt((x ** 2).sum(axis=1) * (y ** 2).sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, (x @ y) / denominator, np.nan)


def spearman_interval(rho: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Fisher-z interval of a Spearman correlation with Bonett & Wright's (2000) standard error."""
    if not np.isfinite(rho) or n <= 3:
        return float("nan"), float("nan")
    z = np.arctanh(np.clip(rho, -0.999999, 0.999999))
    half = stats.norm.isf((1 - confidence) / 2) * np.sqrt((1 + rho ** 2 / 2) / (n - 3))
    return float(np.tanh(z - half)), float(np.tanh(z + half))


def trial_rows(config: CrowdStudyConfig, workers: WorkerModel, rng: np.random.Generator) -> pd.DataFrame:
    """One trial of one cell (module docstring): the data first, then the subsamples, from ``rng``."""
    return crowd_rows(config, draw_crowd(config, workers, rng), rng)


def draw_crowd(config: CrowdStudyConfig, workers: WorkerModel, rng: np.random.Generator):
    """One trial's data: the crowd's, the experts' and the true scores of every item."""
    return sample_crowd(config.structure, config.criteria, workers, rng, config.model, config.effect)


def crowd_rows(config: CrowdStudyConfig, sample, rng: np.random.Generator) -> pd.DataFrame:
    """One trial's rows from its data (:func:`draw_crowd`); ``rng`` draws the subsamples."""
    scale = config.structure.scale(config.model)
    n_items, per_item = sample.workers.shape
    rows = [{"quantity": "pool", "spammer_share": float(sample.is_spammer.mean()),
             "candidates": sample.candidates, "candidate_spammers": sample.candidate_spammers}]
    expert_mean = sample.experts.mean(axis=2)
    for c, criterion in enumerate(config.criteria):
        crowd_mean = sample.crowd[c].mean(axis=1)
        difference = crowd_mean - expert_mean[c]
        p_value = float(stats.ttest_rel(crowd_mean, expert_mean[c]).pvalue) if np.ptp(difference) > 0 else \
            (1.0 if difference[0] == 0 else 0.0)
        pairs = [np.corrcoef(sample.crowd[c][:, j], sample.crowd[c][:, j + 1])[0, 1]
                 for j in range(0, per_item - 1, 2)]
        rows += [{"quantity": "bias", "criterion": criterion.name, "difference": float(difference.mean()),
                  "p_value": p_value},
                 {"quantity": "reliability", "criterion": criterion.name, "rho_1": float(np.nanmean(pairs))}]
    items = np.arange(n_items)[:, None]
    for k in config.ks:
        found = {}  # (criterion, method) -> (subsamples,) rho with experts, with truth
        for r in range(config.subsamples):
            keep = np.argsort(rng.random((n_items, per_item)), axis=1)[:, :k]
            who = sample.workers[items, keep]
            for c, criterion in enumerate(config.criteria):
                ratings = sample.crowd[c][items, keep]
                for method in config.aggregations:
                    value = AGGREGATIONS[method](ratings, who, scale)
                    found.setdefault((criterion.name, method), []).append(
                        (spearman_rows(value[None], expert_mean[c])[0], spearman_rows(value[None], sample.truth[c])[0]))
        for (name, method), pairs in found.items():
            pairs = np.array(pairs)
            study = pairs[0, 0]
            mos = np.array(found[(name, "mean")])[0, 0]
            low, high = spearman_interval(study, n_items)
            beats = np.nan if method == "mean" else (0.5 if study == mos else float(study > mos))
            rows.append({"quantity": "correlation", "criterion": name, "k": k, "method": method,
                         "rho_expert": float(np.nanmean(pairs[:, 0])), "rho_truth": float(np.nanmean(pairs[:, 1])),
                         "rho_study": float(study), "study_low": low, "study_high": high, "beats_mos": beats})
    return pd.DataFrame(rows)


def _mean_row(values) -> dict:
    mean, mcse, low, high = mean_interval(np.asarray(values, dtype=float)[np.isfinite(values)])
    return {"mean": mean, "mcse": mcse, "ci_low": low, "ci_high": high}


def _rate_row(values) -> dict:
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    rate = float(values.mean()) if values.size else float("nan")
    mcse = float(values.std(ddof=1) / np.sqrt(values.size)) if values.size > 1 else float("nan")
    low, high = wilson_interval(rate, mcse, values.size, values.size) if values.size else (np.nan, np.nan)
    return {"mean": rate, "mcse": mcse, "ci_low": low, "ci_high": high}


def _knee_rows(cell: str, rows: pd.DataFrame, reliability: pd.DataFrame, ks, bootstrap: int,
               rng: np.random.Generator) -> list[dict]:
    out = []
    for (criterion, method), group in rows.groupby(["criterion", "method"], sort=False):
        curves = group.pivot(index="trial", columns="k", values="rho_expert")[list(ks)].to_numpy()
        knee = kneedle(ks, np.nanmean(curves, axis=0))
        draws = [kneedle(ks, np.nanmean(curves[rng.integers(0, len(curves), len(curves))], axis=0))
                 for _ in range(bootstrap)]
        rho_1 = float(reliability.loc[reliability["criterion"] == criterion, "rho_1"].mean())
        out.append({"cell": cell, "quantity": KNEE.name, "criterion": criterion, "method": method, "mean": knee,
                    "ci_low": float(np.nanpercentile(draws, 2.5)), "ci_high": float(np.nanpercentile(draws, 97.5)),
                    "rho_1": rho_1, "spearman_brown_knee": spearman_brown_knee(rho_1, ks),
                    "trials": len(curves)})
    return out


def summarise_crowd_study(config: CrowdStudyConfig, rows: pd.DataFrame) -> pd.DataFrame:
    """One row per (cell, quantity, criterion, method, k) with mean, MCSE and 95% interval (module docstring)."""
    out = []
    rng = entropy_rng(config.seed, "crowd/knee-bootstrap")  # the knee bootstrap's own stream (seeds.FIXED_KEYS)
    for cell, _ in config.settings():
        here = rows[rows["cell"] == cell]
        pool = here[here["quantity"] == "pool"]
        trials = len(pool)
        out.append({"cell": cell, "quantity": "pool_spammer_share", "trials": trials,
                    **_mean_row(pool["spammer_share"])})
        out.append({"cell": cell, "quantity": "candidates_per_worker", "trials": trials,
                    **_mean_row(pool["candidates"] / config.workers.workers)})
        for criterion, group in here[here["quantity"] == "bias"].groupby("criterion", sort=False):
            out.append({"cell": cell, "quantity": "crowd_minus_expert", "criterion": criterion, "trials": len(group),
                        **_mean_row(group["difference"])})
            out.append({"cell": cell, "quantity": "bias_rejected", "criterion": criterion, "trials": len(group),
                        **_rate_row((group["p_value"] < config.alpha).astype(float))})
        reliability = here[here["quantity"] == "reliability"]
        for criterion, group in reliability.groupby("criterion", sort=False):
            out.append({"cell": cell, "quantity": "rho_1", "criterion": criterion, "trials": len(group),
                        **_mean_row(group["rho_1"])})
        correlation = here[here["quantity"] == "correlation"]
        mos = correlation[correlation["method"] == "mean"].set_index(["criterion", "k", "trial"])
        for (criterion, method, k), group in correlation.groupby(["criterion", "method", "k"], sort=False):
            key = dict(cell=cell, criterion=criterion, method=method, k=int(k), trials=len(group))
            out.append({**key, "quantity": "rho_expert", **_mean_row(group["rho_expert"]),
                        "study_width": float((group["study_high"] - group["study_low"]).mean())})
            out.append({**key, "quantity": "rho_truth", **_mean_row(group["rho_truth"])})
            if method != "mean":
                base = mos.loc[[(criterion, k, t) for t in group["trial"]], "rho_expert"].to_numpy()
                out.append({**key, "quantity": "minus_mos", **_mean_row(group["rho_expert"].to_numpy() - base)})
                out.append({**key, "quantity": "p_beats_mos", **_rate_row(group["beats_mos"])})
        out += _knee_rows(cell, correlation, reliability, list(config.ks), config.bootstrap, rng)
    table = pd.DataFrame(out)
    return pd.concat([table, threshold_rows(config, table), plan_rows(config, table)], ignore_index=True)


def threshold_rows(config: CrowdStudyConfig, table: pd.DataFrame) -> pd.DataFrame:
    """With a grid over spammer_share: per method, k (and values of the grid's other keys), the smallest share
    from which the method beats MOS.

    'Beats' means the 95% interval of the mean difference from MOS lies above 0 at that share and at every larger
    share of the grid; NaN when it never does.
    """
    if "spammer_share" not in config.grid:
        return pd.DataFrame()
    others = [key for key in config.grid if key != "spammer_share"]
    labels = [label for label, _ in config.settings()]
    combos = list(itertools.product(*(config.grid[key] for key in config.grid)))
    share = {label: dict(zip(config.grid, values))["spammer_share"] for label, values in zip(labels, combos)}
    rest = {label: "-".join(f"{key}-{dict(zip(config.grid, values))[key]}" for key in others) or "grid"
            for label, values in zip(labels, combos)}
    minus = table[table["quantity"] == "minus_mos"].assign(share=lambda t: t["cell"].map(share),
                                                            rest=lambda t: t["cell"].map(rest))
    out = []
    for (group_label, criterion, method, k), group in minus.groupby(["rest", "criterion", "method", "k"], sort=False):
        group = group.sort_values("share")
        above = (group["ci_low"] > 0).to_numpy()
        from_here = np.flip(np.logical_and.accumulate(np.flip(above)))  # above at this share and every larger one
        threshold = float(group["share"].to_numpy()[from_here][0]) if from_here.any() else float("nan")
        out.append({"cell": group_label, "quantity": "spammer_threshold", "criterion": criterion, "method": method,
                    "k": int(k), "mean": threshold, "trials": int(group["trials"].min())})
    return pd.DataFrame(out)


def plan_rows(config: CrowdStudyConfig, table: pd.DataFrame) -> pd.DataFrame:
    """With a ``target``: per cell and criterion, the fewest workers per item whose mean correlation with the
    experts reaches the target (``k_mean``) and whose interval's lower end does (``k_sure``), with the cost
    of the judgements and of the screened candidates' qualification items."""
    if not config.target:
        return pd.DataFrame()
    goal, method = config.target["correlation"], config.target.get("method", "mean")
    price = float(config.target.get("cost_per_judgement", 1.0))
    n_items = config.structure.n_items(config.model)
    curves = table[(table["quantity"] == "rho_expert") & (table["method"] == method)]
    out = []
    for (cell, criterion), group in curves.groupby(["cell", "criterion"], sort=False):
        group = group.sort_values("k")
        workers = dict(config.settings())[cell]
        screening = float(table.loc[(table["cell"] == cell) & (table["quantity"] == "candidates_per_worker"),
                                    "mean"].iloc[0]) * workers.workers * workers.qualification_items
        row = {"cell": cell, "quantity": "plan", "criterion": criterion, "method": method, "target": goal}
        for name, column in (("k_mean", "mean"), ("k_sure", "ci_low")):
            reached = group[group[column] >= goal]
            k = int(reached["k"].iloc[0]) if len(reached) else np.nan
            row[name] = k
            row[f"cost_{name[2:]}"] = (n_items * k + screening) * price if len(reached) else np.nan
        out.append(row)
    return pd.DataFrame(out)


class CrowdStudies(StudyKind):
    """Crowd studies with a worker-level crowd (this module), through the runner's generic loop and store."""

    name, keys = "crowd", ("workers", "ks", "items")

    def recognised_keys(self, mapping):
        # 'criteria' is also a rate study's key (a list of criteria judged on the same outputs, docs/designs.md):
        # only the crowd's form of it, a mapping of criterion name -> settings, tells a crowd study
        criteria = mapping.get("criteria")
        crowd_criteria = isinstance(criteria, dict) and "name" not in criteria and "designs" not in mapping
        return super().recognised_keys(mapping) + (["criteria"] if crowd_criteria else [])

    def parse(self, mapping, base_dir=None):
        return parse_crowd_study(mapping, base_dir)

    def with_trials(self, config, trials):
        return replace(config, trials=trials, raw={**config.raw, "trials": trials})

    def cells(self, config):
        return [label for label, _ in config.settings()]

    def chunk_trials(self, config):
        return 5

    def fingerprint(self, config):
        content = {key: value for key, value in config.raw.items()
                   if key not in ("trials", "bootstrap", "description", "target", "alpha", "name")}
        if config.model is not None:
            content["model"] = config.model.to_dict()
        return {"crowd_study": 1, **content}

    def examples(self):
        return read_examples("crowd")

    def generate(self, config, cell, trial, rng):
        return draw_crowd(config, dict(config.settings())[cell], rng)

    def analyse(self, config, cell, trial, data, rng):
        return crowd_rows(config, data, rng)

    def summarise(self, config, rows):
        return summarise_crowd_study(config, rows)

    def plot(self, config, summary, out_base):
        from simdesign.studies.crowd.crowd_plots import draw_crowd_study

        return draw_crowd_study(config, summary, Path(out_base))


CROWD_STUDIES = register_study_kind(CrowdStudies())
