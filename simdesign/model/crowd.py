"""A worker-level crowd: recruiting with filters, platform assignment, competence, spammers, several criteria.

Iskender, Polzehl & Möller (2021) had crowd workers on a platform rate 50 summaries (single outputs) on a
5-point scale, each summary by 24 workers, each worker rating some 26 summaries, on several criteria at once,
after a qualification test; 2 experts rated every summary. This module samples such a study.

Items and criteria. Each item i has a true latent quality mu_ic on each criterion c:

* ``structure: single`` (the paper's): ``items`` independent outputs, mu_ic = location_c + item_sd_c * z_ic,
  on a ``points``-point scale cut at ``thresholds`` (default: 5 points, cuts -2.1, -0.7, 0.7, 2.1);
* ``structure: systems`` (the project's system comparison): ``docs`` documents x the model's systems,
  mu_ic = beta_s + item_sd_c * z_s.v_d (the model's fixed effects and its document effects, drawn per
  criterion), on the model's scale and thresholds.

A criterion's ``item_sd`` sets its reliability: the spread of true quality against the judges' noise.

Judges. A crowd worker w judging item i on criterion c answers the category of
``mu_ic + crowd_bias_c + b_w + s_w * e`` (e standard logistic), where b_w ~ N(0, leniency_sd) is the
worker's leniency and s_w = noise * exp(noise_spread * N(0, 1)) their noise scale: competence is
lognormally distributed over workers. A spammer answers every item without reading it: ``uniform`` on the
scale, or ``constant``: their one favourite value. Experts answer ``mu_ic + b_e + expert_noise * e`` with
b_e ~ N(0, expert_leniency_sd), no bias, no spammers. ``crowd_bias_c`` (latent units) is the crowd's shift
against the experts (the paper: crowd means 0.14-0.33 points lower on five scales).

Recruiting. Candidates come from a population with ``spammer_share`` spammers. With a qualification test
(``qualification_items`` > 0) a candidate answers that many gold items (true quality drawn like an item's,
first criterion) and passes if at least ``pass_share`` of the answers are within one scale point of the
gold answer (the category of the true quality). With ``min_seconds`` > 0 a candidate whose median seconds
per judgement (lognormal around ``work_seconds`` for attentive workers, ``spam_seconds`` for spammers,
log-SD ``seconds_spread``) is below it is excluded. Candidates are drawn until ``workers`` pass.

Assignment (as on a platform). Each item needs ``per_item`` distinct workers; items are taken in random
order, each by the ``per_item`` workers with the fewest judgements so far (ties at random), so every worker
judges ``items * per_item / workers`` items, give or take one (the paper's 50 x 24 / 46: about 26). A worker
judges all criteria of an item at once (one task).
"""
from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from simdesign.core.errors import ConfigError
from simdesign.model.common import fixed_order_product

SPAMMER_KINDS = ("uniform", "constant")
STRUCTURES = ("single", "systems")
# Candidates screened per worker needed before recruiting gives up: filters that reject nearly everybody.
MAX_CANDIDATES_PER_WORKER = 200


@dataclass(frozen=True)
class Criterion:
    """One rating criterion (module docstring): spread and location of true quality, the crowd's shift."""

    name: str
    item_sd: float | None = None
    location: float = 0.0
    crowd_bias: float = 0.0

    def spread(self, structure: str) -> float:
        """item_sd, or its default: 1.5 for single outputs, 1 (the model's own) for systems."""
        if self.item_sd is not None:
            return float(self.item_sd)
        return 1.5 if structure == "single" else 1.0


@dataclass(frozen=True)
class WorkerModel:
    """The crowd, its recruiting and its assignment (module docstring), with the expert panel."""

    workers: int = 46
    per_item: int = 24
    noise: float = 1.0
    noise_spread: float = 0.5
    leniency_sd: float = 0.3
    spammer_share: float = 0.0
    spammer_kind: str = "uniform"
    qualification_items: int = 0
    pass_share: float = 0.6
    min_seconds: float = 0.0
    work_seconds: float = 40.0
    spam_seconds: float = 12.0
    seconds_spread: float = 0.4
    experts: int = 2
    expert_noise: float = 0.5
    expert_leniency_sd: float = 0.2


COUNT_FIELDS = ("workers", "per_item", "experts")
POSITIVE_FIELDS = ("noise", "work_seconds", "spam_seconds", "expert_noise")
NON_NEGATIVE_FIELDS = ("noise_spread", "leniency_sd", "min_seconds", "seconds_spread", "expert_leniency_sd",
                       "qualification_items")
SHARE_FIELDS = ("spammer_share", "pass_share")
WORKER_KEYS = tuple(f.name for f in fields(WorkerModel))


def _number(value) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float, np.integer, np.floating)) \
        and bool(np.isfinite(value))


def worker_problems(settings: dict, where: str = "workers") -> list[str]:
    """Every problem of a ``workers`` mapping, each naming ``<where>.<field>`` and what it allows."""
    if not isinstance(settings, dict):
        return [f"The '{where}' field must be a mapping of {list(WORKER_KEYS)}; got {settings!r}"]
    problems = []
    unknown = sorted(set(settings) - set(WORKER_KEYS), key=str)
    if unknown:
        problems.append(f"Unknown '{where}' key(s) {unknown}; allowed: {list(WORKER_KEYS)}")
    for key, value in settings.items():
        name = f"'{where}.{key}' field"
        if key in COUNT_FIELDS + ("qualification_items",):
            low = 0 if key == "qualification_items" else 1
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
                problems.append(f"The {name} must be an integer >= {low}; got {value!r}")
        elif key in POSITIVE_FIELDS and (not _number(value) or value <= 0):
            problems.append(f"The {name} must be a number > 0; got {value!r}")
        elif key in NON_NEGATIVE_FIELDS and (not _number(value) or value < 0):
            problems.append(f"The {name} must be a number >= 0; got {value!r}")
        elif key in SHARE_FIELDS and (not _number(value) or not 0 <= value <= 1):
            problems.append(f"The {name} must be a number in [0, 1]; got {value!r}")
        elif key == "spammer_kind" and value not in SPAMMER_KINDS:
            problems.append(f"The {name} must be one of {list(SPAMMER_KINDS)}; got {value!r}")
    if not problems:
        model = WorkerModel(**settings)
        if model.per_item > model.workers:
            problems.append(f"The '{where}.per_item' field must be at most '{where}.workers' ({model.workers}): "
                            f"each item needs that many distinct workers; got {model.per_item}")
    return problems


@dataclass(frozen=True)
class ItemStructure:
    """What is judged: ``single`` outputs on their own scale, or the model's ``systems`` x ``docs`` outputs."""

    structure: str = "single"
    items: int = 50
    points: int = 5
    thresholds: tuple = ()
    docs: int = 10

    def cuts(self, model=None) -> np.ndarray:
        if self.structure == "systems":
            return np.asarray(model.thresholds, dtype=float)
        if self.thresholds:
            return np.asarray(self.thresholds, dtype=float)
        return np.array([-2.1, -0.7, 0.7, 2.1]) if self.points == 5 else np.linspace(-2.5, 2.5, self.points - 1)

    def scale(self, model=None) -> np.ndarray:
        if self.structure == "systems":
            return np.asarray(model.scale, dtype=np.int64)
        return np.arange(1, self.points + 1)

    def n_items(self, model=None) -> int:
        return self.docs * model.n_systems if self.structure == "systems" else self.items


def structure_problems(settings, where: str = "items") -> list[str]:
    """Every problem of an ``items`` mapping, naming the field."""
    if not isinstance(settings, dict):
        return [f"The '{where}' field must be a mapping with 'structure' ({list(STRUCTURES)}); got {settings!r}"]
    allowed = ("structure", "items", "points", "thresholds", "docs")
    problems = [f"Unknown '{where}' key(s) {sorted(set(settings) - set(allowed), key=str)}; allowed: "
                f"{list(allowed)}"] if set(settings) - set(allowed) else []
    structure = settings.get("structure", "single")
    if structure not in STRUCTURES:
        problems.append(f"The '{where}.structure' field must be one of {list(STRUCTURES)}; got {structure!r}")
    for key, low in (("items", 3), ("points", 2), ("docs", 2)):
        value = settings.get(key, low)
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            problems.append(f"The '{where}.{key}' field must be an integer >= {low}; got {value!r}")
    cuts = settings.get("thresholds", [])
    points = settings.get("points", 5)
    if cuts and (not isinstance(cuts, list) or not all(_number(c) for c in cuts)
                 or np.any(np.diff(cuts) <= 0) or len(cuts) != (points if isinstance(points, int) else 0) - 1):
        problems.append(f"The '{where}.thresholds' field must be {points!r} - 1 increasing numbers; got {cuts!r}")
    if structure == "systems" and any(key in settings for key in ("items", "points", "thresholds")):
        problems.append(f"The '{where}' field with structure 'systems' takes 'docs' only (the model gives the "
                        f"systems, scale and thresholds); got {sorted(settings)}")
    return problems


@dataclass(frozen=True)
class CrowdSample:
    """One simulated crowd study.

    Attributes
    ----------
    crowd : ndarray, shape (criteria, items, per_item)
        The crowd's scores; ``workers[i, j]`` gave ``crowd[:, i, j]``.
    workers : ndarray, shape (items, per_item)
        Worker ids 0..workers-1.
    experts : ndarray, shape (criteria, items, experts)
    truth : ndarray, shape (criteria, items)
        The items' true latent quality.
    is_spammer : ndarray of bool, shape (workers,)
    candidates : int
        Candidates screened to recruit the workers.
    candidate_spammers : int
        Spammers among the candidates.
    """

    crowd: np.ndarray
    workers: np.ndarray
    experts: np.ndarray
    truth: np.ndarray
    is_spammer: np.ndarray
    candidates: int
    candidate_spammers: int


def categorise(latent: np.ndarray, cuts: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """The scale value of the category each latent value falls in."""
    return scale[np.searchsorted(cuts, latent, side="left")]


def true_quality(structure: ItemStructure, criteria: tuple, rng: np.random.Generator, model=None,
                 effect="fitted") -> np.ndarray:
    """mu (criteria, items): the items' true latent quality per criterion (module docstring)."""
    rows = []
    for criterion in criteria:
        spread = criterion.spread(structure.structure)
        if structure.structure == "single":
            rows.append(criterion.location + spread * rng.standard_normal(structure.items))
        else:
            document = fixed_order_product(rng.standard_normal((structure.docs, model.n_systems)),
                                           model._document_loading.T)
            rows.append((model.effects_for(effect) + spread * document).ravel() + criterion.location)
    return np.array(rows)


def recruit(workers: WorkerModel, quality: np.ndarray, bias: float, rng: np.random.Generator,
            cuts: np.ndarray, scale: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int]:
    """Screen candidates until ``workers.workers`` pass the filters.

    ``quality``: the true quality of the items gold questions are drawn from; ``bias``: the crowd's shift on them.

    Returns
    -------
    is_spammer, noise_scale, leniency : ndarray, shape (workers,)
    candidates, candidate_spammers : int
    """
    need, batch = workers.workers, max(workers.workers, 16)
    kept = {"spammer": [], "noise": [], "leniency": []}
    candidates = candidate_spammers = 0
    while len(kept["spammer"]) < need:
        if candidates >= MAX_CANDIDATES_PER_WORKER * need:
            raise ConfigError(f"The filters passed {len(kept['spammer'])} of {candidates} candidates, fewer than "
                              f"'workers.workers' ({need}): lower 'workers.pass_share' or 'workers.min_seconds'")
        spammer = rng.random(batch) < workers.spammer_share
        noise = workers.noise * np.exp(workers.noise_spread * rng.standard_normal(batch))
        leniency = workers.leniency_sd * rng.standard_normal(batch)
        passed = np.ones(batch, dtype=bool)
        if workers.qualification_items:
            gold = rng.choice(quality, size=(batch, workers.qualification_items))
            answer = categorise(gold + bias + leniency[:, None]
                                + noise[:, None] * rng.logistic(size=gold.shape), cuts, scale)
            random_answer = rng.choice(scale, size=gold.shape)
            answer = np.where(spammer[:, None], random_answer, answer)
            close = np.abs(answer - categorise(gold, cuts, scale)) <= 1
            passed &= close.mean(axis=1) >= workers.pass_share
        if workers.min_seconds:
            typical = np.where(spammer, workers.spam_seconds, workers.work_seconds)
            seconds = typical * np.exp(workers.seconds_spread * rng.standard_normal(batch))
            passed &= seconds >= workers.min_seconds
        # count the candidates screened up to the one that filled the last place, not the whole batch
        missing = need - len(kept["spammer"])
        screened = batch if passed.sum() <= missing else int(np.flatnonzero(passed)[missing - 1]) + 1
        candidates += screened
        candidate_spammers += int(spammer[:screened].sum())
        for key, values in (("spammer", spammer), ("noise", noise), ("leniency", leniency)):
            kept[key].extend(values[passed].tolist())
    return (np.array(kept["spammer"][:need], dtype=bool), np.array(kept["noise"][:need]),
            np.array(kept["leniency"][:need]), candidates, candidate_spammers)


def assign(n_items: int, n_workers: int, per_item: int, rng: np.random.Generator) -> np.ndarray:
    """(items, per_item) worker ids: each item by the per_item least-loaded workers, items in random order."""
    load = np.zeros(n_workers)
    chosen = np.empty((n_items, per_item), dtype=np.int64)
    for item in rng.permutation(n_items):
        pick = np.argsort(load + rng.random(n_workers), kind="stable")[:per_item]
        chosen[item] = np.sort(pick)
        load[pick] += 1
    return chosen


def sample_crowd(structure: ItemStructure, criteria: tuple, workers: WorkerModel, rng: np.random.Generator,
                 model=None, effect="fitted") -> CrowdSample:
    """Sample one crowd study (module docstring), in a fixed draw order so a seed reproduces it.

    Parameters
    ----------
    structure : ItemStructure
    criteria : tuple of Criterion
    workers : WorkerModel
    rng : numpy.random.Generator
    model : OrdinalMixedModel, optional
        Needed for ``structure='systems'``.
    effect : {'fitted', 'zero'} or float

    Returns
    -------
    CrowdSample
    """
    cuts, scale = structure.cuts(model), structure.scale(model)
    truth = true_quality(structure, criteria, rng, model, effect)
    n_items = truth.shape[1]
    is_spammer, noise, leniency, candidates, candidate_spammers = recruit(workers, truth[0], criteria[0].crowd_bias,
                                                                          rng, cuts, scale)
    who = assign(n_items, workers.workers, workers.per_item, rng)
    bias = np.array([c.crowd_bias for c in criteria])[:, None, None]
    latent = (truth[:, :, None] + bias + leniency[who][None] +
              noise[who][None] * rng.logistic(size=(len(criteria),) + who.shape))
    crowd = categorise(latent, cuts, scale)
    spam_rows = is_spammer[who]
    if spam_rows.any():
        if workers.spammer_kind == "uniform":
            spam = rng.choice(scale, size=crowd.shape)
        else:  # each spammer's favourite value, the same on every criterion
            spam = np.broadcast_to(rng.choice(scale, size=workers.workers)[who], crowd.shape)
        crowd = np.where(spam_rows[None], spam, crowd)
    expert_leniency = workers.expert_leniency_sd * rng.standard_normal(workers.experts)
    experts = categorise(truth[:, :, None] + expert_leniency +
                         workers.expert_noise * rng.logistic(size=truth.shape + (workers.experts,)), cuts, scale)
    return CrowdSample(crowd=crowd, workers=who, experts=experts, truth=truth, is_spammer=is_spammer,
                       candidates=candidates, candidate_spammers=candidate_spammers)
