"""Budget planner: the cheapest annotation design that reaches a target power.

A plan config names a model, the effect to detect, the test(s) the study
will use, a cost model and a search space of designs. :func:`simdesign.planning.plan_report.plan_study`
evaluates the candidate designs by simulation, adaptively (see
:mod:`simdesign.planning.plan_search`), and reports a ranked table, a recommendation
and a cost-versus-power figure (:mod:`simdesign.planning.plan_report`).

Example plan config::

    name: plan-coherence
    model: coherence
    effect: fitted                 # fitted | scale factor | {min_difference: 0.5, unit: likert}
    tests: [art_block, ttest_doc]
    alpha: 0.05
    target_power: 0.8              # or: budget: 2000 (the most powerful affordable design)
    power_over: pooled             # pooled | each_pair | top_pair | adjacent_pairs (the systems' order)
    max_type1: auto                # a test must be shown to hold it: 1.5 x alpha; a number; or null (no check)
    type1_over: pooled             # pooled | each_pair
    cost: {pay_per_hour: 12, seconds_per_judgement: auto, per_annotator: 2, per_document: 0, currency: EUR}
    # seconds_per_judgement: auto (= capped_mean) | capped_mean | median | trimmed_mean (the paper's times
    # for a preset model's task) | coherence | repetition (that task's capped mean, whatever the model) | a number
    # | {times: FILE.csv, rule: capped_mean, outputs_per_item: 1} | one per method: {likert: auto, rank: 20}
    limits: {max_judgements_per_annotator: 125, min_annotators: 1, max_annotators: 200}
    search:
      shapes: [nested, block, crossed, pool]
      docs: [20, 50, 100]
      docs_per_block: [1, 2, 5]
      annotators_per_block: [2, 3]
      judgements_per_output: [1, 2, 3]
      annotators: [10, 20]       # pool size (pool designs)
    screen_trials: 50
    max_trials: 800
    confidence: 0.95
    confirm_trials: 800            # fresh studies confirming the pick (default max_trials)
    confirm_candidates: 2          # picks confirmed at most (each at one-sided (1 - confidence) / (2 x this))
    screening: eager               # eager: screen every candidate first; by_cost: cheapest first (target_power only)
    seed: 2021

A *candidate* is a (design, test) combination: the study analysed with that
test. Each design's synthetic studies are generated once and analysed by
every listed test, as in the engine.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path

import pandas as pd
from scipy import optimize

from simdesign.significance import ANALYSES, resolve_analysis, system_pairs
from simdesign.stats.annotation_time import DURATION_COLUMN, RULES, describe_rule, seconds_per_output
from simdesign.stats.montecarlo import default_max_type1
from simdesign.studies.rates.config import (AnalysisSpec, SimulationConfig, check_name, parse_analyses, parse_designs,
                                            read_config_mapping, resolve_model)
from simdesign.core.designs import DESIGN_KINDS, BlockDesign, PoolDesign, design_to_mapping, search_keys, search_shapes
from simdesign.core.errors import ConfigError
from simdesign.core.suggest import did_you_mean, suggestions
from simdesign.core.yamlio import load_yaml
from simdesign.methods import config_name, default_method, get_method, method_names
from simdesign.model import OrdinalMixedModel, effect_scale
from simdesign.planning.method_search import parse_methods, store_name, tests_for_method

PLAN_KEYS = ("name", "description", "model", "effect", "tests", "alpha", "target_power", "budget", "power_over",
             "cost", "limits", "search", "screen_trials", "max_trials", "confidence", "cost_tolerance",
             "power_tolerance", "max_type1", "type1_over", "confirm_trials", "confirm_candidates", "seed",
             "art_resamples", "art_exact", "chunk_size", "screening")
COST_KEYS = ("pay_per_hour", "seconds_per_judgement", "per_annotator", "per_document", "currency")
LIMIT_KEYS = ("max_judgements_per_annotator", "min_annotators", "max_annotators")


def plan_search_keys() -> tuple:
    """The 'search' keys: the planner's own and those the registered design kinds' planner hooks read.

    Read from the design-kind registry at call time (:func:`simdesign.core.designs.search_keys`), so a kind
    registered after this module was imported is searched too; a kind without hooks is searched only
    through 'search.designs'.
    """
    return ("shapes", "docs", *search_keys(), "designs", "methods")


POWER_OVER = ("pooled", "each_pair", "top_pair", "adjacent_pairs")
SCREENING = ("eager", "by_cost")  # plan_search: screen every candidate first, or the cheapest first (target goal)
TYPE1_OVER = ("pooled", "each_pair")
EFFECT_UNITS = ("latent", "likert")


@lru_cache(maxsize=1)
def annotation_times() -> dict:
    """The paper's measured annotation times, shipped with the package.

    Returns
    -------
    dict
        ``{'likert': {task: {'capped_mean_seconds': ..., 'median_seconds': ..., 'trimmed_mean_seconds': ...}},
        'rank': ..., 'citation': ...}``, seconds per judged output (see
        ``simdesign/model/presets/annotation_times.yaml`` and :mod:`simdesign.stats.annotation_time` for the rule).
    """
    text = resources.files("simdesign.model.presets").joinpath("annotation_times.yaml").read_text()
    return load_yaml(text)


@dataclass(frozen=True)
class CostModel:
    """What a study costs: annotator pay by the hour plus fixed costs.

    Parameters
    ----------
    pay_per_hour : float
        Annotator pay per hour of work.
    seconds_per_judgement : float
        Time one Likert judgement (one system output) takes.
    per_annotator : float
        Fixed cost per annotator (recruiting, instructions, qualification).
    per_document : float
        Cost per document (e.g. preparing or licensing it).
    currency : str
        Label only.
    seconds_source : str
        Where ``seconds_per_judgement`` comes from (shown in the report).

    Examples
    --------
    >>> cost = CostModel(pay_per_hour=12.0, seconds_per_judgement=18.0, per_annotator=2.0)
    >>> round(cost.total(BlockDesign(20, 5, 3), n_systems=5), 2)
    210.0
    """

    pay_per_hour: float
    seconds_per_judgement: float
    per_annotator: float = 0.0
    per_document: float = 0.0
    currency: str = ""
    seconds_source: str = "given in the config"
    # What an annotator is paid for, counted for a design: None for judged outputs (Likert, Rank: the paper's
    # times are per judged output); a method whose judgement covers a pair counts comparisons
    # (AnnotationMethod.items), and seconds_per_judgement is then per comparison.
    count_items: object = field(default=None, compare=False, repr=False)
    item_name: str = "judged output"

    def units(self, design, n_systems: int) -> float:
        """What the seconds are paid for in one study: judged outputs, or the method's items (comparisons)."""
        judgements = design.judgements(n_systems)
        return judgements if self.count_items is None else self.count_items(design, n_systems)

    def breakdown(self, design, n_systems: int) -> dict:
        """Hours and cost items of one design."""
        hours = self.units(design, n_systems) * self.seconds_per_judgement / 3600.0
        labour = hours * self.pay_per_hour
        annotator_cost = design.annotators * self.per_annotator
        document_cost = design.docs * self.per_document
        return {"hours": hours, "labour_cost": labour, "annotator_cost": annotator_cost,
                "document_cost": document_cost, "cost": labour + annotator_cost + document_cost}

    def total(self, design, n_systems: int) -> float:
        return self.breakdown(design, n_systems)["cost"]


@dataclass(frozen=True)
class Limits:
    """Practical limits a design must respect.

    Parameters
    ----------
    max_judgements_per_annotator : int or None
        Fatigue limit: most judgements one annotator may make.
    min_annotators, max_annotators : int or None
        Annotators available in total (e.g. a lab's pool) or required.
    """

    max_judgements_per_annotator: int | None = None
    min_annotators: int | None = None
    max_annotators: int | None = None

    def problem(self, design, n_systems: int, cost: "CostModel | None" = None) -> str | None:
        """Why ``design`` breaks a limit, or None. With a cost model that counts items (comparisons), the
        per-annotator limit counts them too (what an annotator sees, as the cost does)."""
        per_annotator = max_judgements_per_annotator(design, n_systems)
        what = "judgements"
        if cost is not None and cost.count_items is not None:
            share = cost.units(design, n_systems) / design.judgements(n_systems)
            per_annotator, what = math.ceil(per_annotator * share - 1e-9), f"{cost.item_name}s"
        if self.max_judgements_per_annotator is not None and per_annotator > self.max_judgements_per_annotator:
            return (f"{per_annotator} {what} per annotator exceed max_judgements_per_annotator "
                    f"{self.max_judgements_per_annotator}")
        if self.max_annotators is not None and design.annotators > self.max_annotators:
            return f"{design.annotators} annotators exceed max_annotators {self.max_annotators}"
        if self.min_annotators is not None and design.annotators < self.min_annotators:
            return f"{design.annotators} annotators are below min_annotators {self.min_annotators}"
        return None


def max_judgements_per_annotator(design, n_systems: int) -> int:
    """The heaviest annotator's load (the design kind knows it: pool loads differ by at most one document)."""
    return design.max_judgements_per_annotator(n_systems)


def design_mapping(design) -> dict:
    """A design as a simulation config writes it (:func:`simdesign.core.designs.design_to_mapping`)."""
    return design_to_mapping(design)


@dataclass(frozen=True)
class Candidate:
    """One (design, test) combination the planner can recommend.

    Attributes
    ----------
    design : BlockDesign or PoolDesign
    test : AnalysisSpec
    cost : dict
        :meth:`CostModel.breakdown` of the design.
    excluded : str
        Why the candidate is not simulated ('' if it is): a broken limit,
        a test that does not apply, or over the budget.
    """

    design: object
    test: AnalysisSpec
    cost: dict
    excluded: str = ""
    method: str = default_method().name  # annotation method (search.methods); others' test labels end in its suffix

    def __repr__(self) -> str:
        return (f"<Candidate {self.design.label} / {self.test.label}: cost {self.total_cost:.2f}"
                + (f", not simulated ({self.excluded})" if self.excluded else "") + ">")

    @property
    def key(self) -> tuple[str, str]:
        return (self.design.label, self.test.label)

    @property
    def total_cost(self) -> float:
        return self.cost["cost"]


@dataclass(frozen=True)
class PlanConfig:
    """A validated plan config (see the module docstring for the YAML form)."""

    name: str
    model: OrdinalMixedModel
    model_source: str
    effect_request: object
    effect: float
    effect_label: str
    tests: tuple
    alpha: float
    target_power: float | None
    budget: float | None
    power_over: str
    max_type1: float | None
    type1_over: str
    confirm_trials: int
    confirm_candidates: int
    cost: CostModel
    limits: Limits
    candidates: tuple
    screen_trials: int
    max_trials: int
    confidence: float
    cost_tolerance: float
    power_tolerance: float
    seed: int
    art_resamples: int
    art_exact: str
    chunk_size: int | None
    description: str = ""
    raw: dict = field(default_factory=dict, repr=False, compare=False)
    methods: tuple = (default_method().name,)
    method_costs: dict = field(default_factory=dict, repr=False, compare=False)  # method -> CostModel
    screening: str = "eager"
    # what the columns of the power events are, when not the model's differing pairs (a judge plan's targets)
    target_labels: tuple = field(default=(), compare=False)

    def __repr__(self) -> str:
        # short: the model's covariances and every candidate are in .model and .candidates
        goal = (f"target power {self.target_power:g}" if self.target_power is not None
                else f"budget {self.budget:g}{' ' + self.cost.currency if self.cost.currency else ''}")
        simulated = sum(1 for c in self.candidates if not c.excluded)
        return (f"<PlanConfig {self.name!r}: model {self.model.name!r}, {self.effect_label}; {goal}; tests "
                f"{', '.join(t.label for t in self.tests)}; {len(self.candidates)} candidates, {simulated} to "
                f"simulate; {self.screen_trials}-{self.max_trials} trials, max_type1 {self.max_type1}>")

    @property
    def goal(self) -> str:
        return "target_power" if self.target_power is not None else "budget"

    @property
    def designs(self) -> tuple:
        """Distinct designs with at least one simulated candidate, in candidate order."""
        seen = {}
        for candidate in self.candidates:
            if not candidate.excluded:
                seen.setdefault(candidate.design.label, candidate.design)
        return tuple(seen.values())

    def store_groups(self) -> list[tuple[str, str, list, list]]:
        """(method, design kind, designs, tests) of each results store, read from the design-kind registry now.

        Block-level tests do not apply to designs without blocks, and a simulation config must not mix
        them, so each design kind (and each annotation method) gets its own store.
        """
        groups = []
        for method, family in ((m, f) for m in self.methods for f in DESIGN_KINDS):
            kind = DESIGN_KINDS[family]
            designs = [d for d in self.designs if d.kind == family]
            # each method's store simulates the tests that take its judgements (scores or preferences)
            tests = [t for t in self.tests if (kind.has_blocks or not resolve_analysis(t.name).needs_blocks)
                     and get_method(method).accepts(resolve_analysis(t.name))]
            if designs and tests:
                groups.append((method, family, designs, tests))
        return groups

    def simulation_configs(self, effect=None) -> dict:
        """The simulation configs over the planner's designs, as objects, for the results stores.

        The planner's own parsed designs, tests and model go in unchanged (no mapping is written and read
        back), so a design kind or analysis registered at run time is simulated like a built-in one. They make
        a plan's results directories ordinary ones: ``simdesign replay DIR/studies/block`` re-creates any of
        their trials.

        Parameters
        ----------
        effect : optional
            Defaults to the effect to detect; 'zero' for the type I check.

        Returns
        -------
        dict
            Store name ('block', 'pool', 'block-rank', ...) -> (design kind, SimulationConfig).
        """
        configs = {}
        for method, family, designs, tests in self.store_groups():
            name = store_name(family, method)
            configs[name] = (family, SimulationConfig(
                name=f"{self.name}-{name}", model=self.model, model_source=self.model_source,
                effect=self.effect if effect is None else effect, designs=tuple(designs), analyses=tuple(tests),
                trials=self.max_trials, alpha=self.alpha, seed=self.seed, art_resamples=self.art_resamples,
                art_exact=self.art_exact, chunk_size=self.chunk_size or None, methods=(method,),
                description=f"trials simulated by 'simdesign plan' for {self.name}"))
        return configs

    def simulation_config_mappings(self, effect=None) -> dict:
        """The configs of :meth:`simulation_configs` as YAML mappings (store name -> mapping), as a user writes them.

        Parameters
        ----------
        effect : optional
            Defaults to the effect to detect; 'zero' for the type I check.
        """
        mappings = {}
        for method, family, designs, tests in self.store_groups():
            # Rank studies: their own store, and the engine's 'method' key (issue 13, section 1).
            mappings[store_name(family, method)] = {
                **({} if get_method(method).is_default else {"method": config_name(method)}),
                # a model given inline (e.g. {preset: ..., rank_model: ...}) has no source: its file form
                "name": f"{self.name}-{store_name(family, method)}", "model": self.model_source or self.model.to_dict(),
                "effect": self.effect if effect is None else effect,
                "designs": [design_mapping(d) for d in designs],
                "tests": [{"name": t.name, "label": t.label, **t.options} for t in tests],
                "trials": self.max_trials, "alpha": self.alpha, "seed": self.seed,
                "art_resamples": self.art_resamples, "art_exact": self.art_exact,
                **({"chunk_size": self.chunk_size} if self.chunk_size else {}),
                "description": f"trials simulated by 'simdesign plan' for {self.name}"}
        return mappings


# ----------------------------------------------------------------------------------------------------------------
# Effects


def smallest_difference(model: OrdinalMixedModel, scale: float, unit: str) -> float:
    """Smallest |difference| over the system pairs whose latent effects differ, at ``scale`` x beta.

    Parameters
    ----------
    unit : {'latent', 'likert'}
        Latent units, or expected Likert points (integrated over the random
        effects by :meth:`OrdinalMixedModel.expected_scores`).
    """
    pairs = [(i, j) for i, j in system_pairs(model.n_systems) if model.effects[i] != model.effects[j]]
    values = model.effects * scale if unit == "latent" else model.expected_scores(scale)
    return min(abs(values[i] - values[j]) for i, j in pairs)


def solve_effect_scale(model: OrdinalMixedModel, min_difference: float, unit: str) -> float:
    """The k that makes the smallest pairwise |difference| of k x beta equal ``min_difference``.

    On the latent scale this is a ratio. In Likert points the smallest
    difference of expected scores is found with brentq; it is not exactly
    proportional to k because the scale is bounded and the systems differ in
    random-effect variance (so at k = 0 the expected means still differ by a
    few thousandths of a point).

    Raises
    ------
    ConfigError
        If the model has no two systems with different effects, or the
        requested difference cannot be reached.

    Examples
    --------
    >>> from simdesign.model import load_model
    >>> model = load_model("coherence")
    >>> k = solve_effect_scale(model, 0.5, "likert")
    >>> round(float(smallest_difference(model, k, "likert")), 6)
    0.5
    """
    if len({float(b) for b in model.effects}) < 2:
        raise ConfigError("The 'effect.min_difference' setting needs a model whose systems differ in effect")
    if unit == "latent":
        return min_difference / smallest_difference(model, 1.0, "latent")

    def gap(k):
        return smallest_difference(model, k, "likert") - min_difference

    if gap(0.0) >= 0:
        raise ConfigError(f"The 'effect.min_difference' field ({min_difference}) is below the expected Likert "
                          f"differences the model has without any fixed effect ({gap(0.0) + min_difference:.4f})")
    upper = 1.0
    while gap(upper) < 0:
        upper *= 2.0
        if upper > 1e3:
            raise ConfigError(f"The 'effect.min_difference' field ({min_difference} Likert points) cannot be "
                              f"reached by scaling the model's effects (the scale spans "
                              f"{model.scale[-1] - model.scale[0]} points)")
    return float(optimize.brentq(gap, 0.0, upper, xtol=1e-10))


def parse_effect(raw, model: OrdinalMixedModel | None, errors: list[str]) -> tuple[float, str]:
    """Effect setting -> (scale factor k, label for reports)."""
    if isinstance(raw, dict):
        unknown = sorted(set(raw) - {"min_difference", "unit"})
        value = raw.get("min_difference")
        unit = raw.get("unit", "latent")
        problems = []
        if unknown:
            problems.append(f"The 'effect' mapping has unknown key(s) {unknown}; allowed: min_difference, unit"
                            f"{suggestions(unknown, ('min_difference', 'unit'))}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            problems.append(f"The 'effect.min_difference' field must be a positive number; got {value!r}")
        if unit not in EFFECT_UNITS:
            problems.append(f"The 'effect.unit' field must be one of {list(EFFECT_UNITS)}; got {unit!r}")
        if problems or model is None:
            errors.extend(problems)
            return 1.0, "fitted"
        try:
            scale = solve_effect_scale(model, float(value), unit)
        except ConfigError as exc:
            errors.extend(exc.messages)
            return 1.0, "fitted"
        unit_name = "latent units" if unit == "latent" else "expected Likert points"
        return scale, f"smallest pairwise difference {value:g} {unit_name} (fitted effects x {scale:.4g})"
    if raw is None:
        errors.append("The 'effect' field is empty: write 'fitted', a scale factor, or {min_difference: ..., unit: ...}")
        return 1.0, "fitted"
    try:
        scale = effect_scale(raw)
    except ConfigError:
        errors.append(f"The 'effect' field must be 'fitted', a positive scale factor or "
                      f"{{min_difference: <number>, unit: latent|likert}}; got {raw!r}")
        return 1.0, "fitted"
    if scale <= 0:
        errors.append(f"The 'effect' field must describe a non-zero effect (power needs one); got {raw!r}")
        return 1.0, "fitted"
    return scale, ("fitted effects" if scale == 1.0 else f"fitted effects x {scale:g}")


# ----------------------------------------------------------------------------------------------------------------
# Config parsing


def _number(errors, mapping, key, where, default, low=None, high=None, low_open=False, high_open=False,
            integer=False, allow_none=False):
    value = mapping.get(key, default)
    if value is None and allow_none:
        return None
    kind = "an integer" if integer else "a number"
    ok = not isinstance(value, bool) and isinstance(value, (int,) if integer else (int, float))
    if ok:
        ok = math.isfinite(value) and (low is None or (value > low if low_open else value >= low)) \
            and (high is None or (value < high if high_open else value <= high))
    if not ok:
        bounds = []
        if low is not None:
            bounds.append(f"{'>' if low_open else '>='} {low}")
        if high is not None:
            bounds.append(f"{'<' if high_open else '<='} {high}")
        errors.append(f"The '{where}{key}' field must be {kind}{' ' + ' and '.join(bounds) if bounds else ''}; "
                      f"got {value!r}")
        return default if default is not None else (low or 0)
    return value


def _int_list(errors, mapping, key, default) -> list[int]:
    value = mapping.get(key, default)
    items = value if isinstance(value, list) else [value]
    if not items or any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in items):
        errors.append(f"The 'search.{key}' field must be a positive integer or a non-empty list of them; "
                      f"got {value!r}")
        return []
    return sorted(set(items))


def _seconds_per_judgement(raw_value, model_source, base_dir, errors, method: str | None = None) -> tuple[float, str]:
    """The cost model's seconds per judgement, and a sentence saying where they come from.

    Accepted: a positive number; ``auto`` (= ``capped_mean``), ``capped_mean``, ``median`` or
    ``trimmed_mean`` of the paper's Likert times for a preset model's task; a task name
    (``coherence``, ``repetition``: that task's capped mean); or a times table
    ``{times: FILE.csv, rule: capped_mean, outputs_per_item: 1, column: time_stamp}``.
    """
    field_name = "The 'cost.seconds_per_judgement' field"
    method = get_method(method or default_method().name)
    # seconds per judged output the paper measured for the method (Likert, Rank), by task; none for others
    times = method.measured_seconds(annotation_times())
    method = method.name
    if raw_value is None:
        raw_value = "auto"
    if isinstance(raw_value, dict) and raw_value and set(raw_value) <= set(method_names()):
        # one entry per method ({likert: auto, rank: 20}); a method left out takes the paper's times
        return _seconds_per_judgement(raw_value.get(method, "auto"), model_source, base_dir, errors, method)
    if isinstance(raw_value, dict):
        return _seconds_from_table(raw_value, base_dir, errors)
    if isinstance(raw_value, str) and (raw_value in ("auto",) + RULES or raw_value in times):
        rule = "capped_mean" if raw_value in ("auto",) + tuple(times) else raw_value
        task = raw_value if raw_value in times else model_source
        if not times:
            errors.append(f"{field_name} is {raw_value!r}, which takes the paper's measured times, but the paper "
                          f"measured none for the {get_method(method).label} method: give its seconds per judged "
                          f"output as a number, e.g. seconds_per_judgement: {{{method}: 5}}")
            return 1.0, ""
        if task not in times:
            errors.append(
                f"{field_name} is {raw_value!r}, which takes the measured Likert times of the paper's task of a "
                f"preset model ({sorted(times)}); the model {model_source!r} is a model file, whose task's times "
                "simdesign does not know. Give the seconds per judgement as a number (e.g. 25), or a times table "
                "of your own: {times: FILE.csv, rule: capped_mean} (one row per judged item, its duration in "
                "seconds in a 'time_stamp' column), or a paper task (coherence, repetition)")
            return 1.0, ""
        outputs = int(times[task].get("outputs_per_item", 1))
        if times[task].get("assumed"):  # not measured (pairwise): the method says what it assumes
            return float(times[task][f"{rule}_seconds"]), f"{times[task]['assumed']} (rule {rule})"
        return float(times[task][f"{rule}_seconds"]), (
            f"{describe_rule(rule, outputs)} of the {get_method(method).label} annotation times of the {task} task in "
            f"Steen & Markert (2021); rule {rule}")
    if isinstance(raw_value, bool) or not isinstance(raw_value, (int, float)) or not math.isfinite(raw_value) \
            or not raw_value > 0:
        errors.append(f"{field_name} must be a positive number, 'auto' (= capped_mean), one of {list(RULES)} "
                      f"(the paper's times for a preset model's task), one of the paper's tasks {sorted(times)} "
                      f"(that task's capped mean, whatever the model), a times table "
                      f"{{times: FILE.csv, rule: capped_mean}}, or one of these per method "
                      f"({{likert: auto, rank: 20}}; methods {list(method_names())}); got {raw_value!r}"
                      f"{suggestions([raw_value], ('auto',) + RULES + tuple(times)) if isinstance(raw_value, str) else ''}")
        return 1.0, ""
    return float(raw_value), "given in the config"


def _seconds_from_table(raw: dict, base_dir, errors) -> tuple[float, str]:
    """``{times: FILE.csv, rule, outputs_per_item, column}`` -> seconds per output under the rule."""
    where = "cost.seconds_per_judgement"
    allowed = ("times", "rule", "outputs_per_item", "column")
    unknown = sorted(set(raw) - set(allowed))
    if unknown:
        errors.append(f"Unknown '{where}' key(s) {unknown}; allowed: {list(allowed)}{suggestions(unknown, allowed)}")
        return 1.0, ""
    rule = raw.get("rule", "capped_mean")
    if rule not in RULES:
        errors.append(f"The '{where}.rule' field must be one of {list(RULES)}; got {rule!r}")
        return 1.0, ""
    outputs = raw.get("outputs_per_item", 1)
    if isinstance(outputs, bool) or not isinstance(outputs, int) or outputs < 1:
        errors.append(f"The '{where}.outputs_per_item' field must be a positive integer; got {outputs!r}")
        return 1.0, ""
    column = str(raw.get("column", DURATION_COLUMN))
    if "times" not in raw:
        errors.append(f"The '{where}.times' field is required in a times table: a CSV file with one row per "
                      f"judged item and its duration in seconds in a {column!r} column")
        return 1.0, ""
    path = Path(str(raw["times"]))
    if base_dir is not None and not path.is_absolute() and not path.exists() and (base_dir / path).exists():
        path = base_dir / path
    try:
        table = pd.read_csv(path)
        seconds = seconds_per_output(table, rule, outputs, column=column)
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
        errors.append(f"The '{where}.times' field ({raw['times']!r}): cannot use this times table: {exc}")
        return 1.0, ""
    return seconds, f"{describe_rule(rule, outputs)} of {len(table)} items in {path}; rule {rule}"


def load_plan(path, overrides: dict | None = None) -> PlanConfig:
    """Read and validate a plan config file (YAML).

    Parameters
    ----------
    path : str or path-like
    overrides : dict, optional
        Top-level keys replacing the file's.

    Returns
    -------
    PlanConfig

    Raises
    ------
    ConfigError
        With every problem found, each naming its field.
    """
    path = Path(path)
    return parse_plan(read_config_mapping(path, "plan config", overrides), base_dir=path.parent)


def preset_of(model_field) -> str:
    """The preset a config's model mapping overrides (``{preset: coherence, rank_noise: ...}``), else ''."""
    return str(model_field.get("preset", "")) if isinstance(model_field, dict) else ""


def _method_test_problems(methods, tests) -> list[str]:
    """Before anything runs, in the plan's own keys (the engine would say 'method'). With one method every test
    must take its judgements; comparing methods whose judgements differ in kind (scores, preferences) each test
    goes to the methods that take it, and every method needs a test."""
    problems = []
    takes = {spec.label: [m for m in methods if get_method(m).accepts(resolve_analysis(spec.name))] for spec in tests}

    def other_kind(method: str, spec) -> bool:  # scores for a test of preferences, or the other way round
        return bool(resolve_analysis(spec.name).takes_preferences) != (get_method(method).covers == "pair")

    for spec in tests:
        refused = [m for m in methods if m not in takes[spec.label]]
        if refused and (len(methods) == 1 or not takes[spec.label]
                        or not all(other_kind(m, spec) for m in refused)):
            why = "; ".join(get_method(m).refusal(resolve_analysis(spec.name)) for m in refused)
            problems.append(f"The test {spec.label} cannot take {' or '.join(refused)} judgements ({why}; it "
                            f"accepts {', '.join(resolve_analysis(spec.name).methods)}); remove it from 'tests' or "
                            f"leave {refused} out of 'search.methods'")
    if len(methods) > 1 and all(takes.values()):
        for method in methods:
            if not any(method in found for found in takes.values()):
                accepted = sorted(name for name, info in ANALYSES.items() if get_method(method).accepts(info))
                problems.append(f"No test in 'tests' takes {get_method(method).label} judgements; add one of "
                                f"{accepted}")
    return problems


def parse_plan(raw: dict, base_dir: Path | None = None) -> PlanConfig:
    """Validate a plan config mapping; see :func:`load_plan`."""
    errors: list[str] = []
    unknown = sorted(set(raw) - set(PLAN_KEYS))
    if unknown:
        errors.append(f"Unknown plan config key(s) {unknown}; allowed: {list(PLAN_KEYS)}"
                      f"{suggestions(unknown, PLAN_KEYS)}")
    name = check_name(raw, errors)
    model, model_source = resolve_model(raw, base_dir, errors)
    effect, effect_label = parse_effect(raw.get("effect", "fitted"), model, errors)

    alpha = _number(errors, raw, "alpha", "", 0.05, 0, 1, low_open=True, high_open=True)
    seed = _number(errors, raw, "seed", "", 0, 0, integer=True)
    art_resamples = _number(errors, raw, "art_resamples", "", 1000, 1, integer=True)
    art_exact = raw.get("art_exact", "auto")
    if art_exact not in ("auto", "never"):
        errors.append(f"The 'art_exact' field must be 'auto' or 'never'; got {art_exact!r}")
    # methods (plug-ins named by path imported) before tests, in the order 'simdesign run' resolves them
    methods = parse_methods(raw.get("search"), model, errors)
    tests = parse_analyses(raw.get("tests"), errors, {"resamples": art_resamples, "exact": art_exact})

    goal = _parse_goal(raw, alpha, errors)
    errors.extend(_method_test_problems(methods, tests))
    # the paper's times ('auto') are a preset's task's: a preset given with overrides ({preset: coherence, ...})
    # is still that task
    task = model_source or preset_of(raw.get("model"))
    method_costs = {method: _parse_cost(raw, task, base_dir, errors, method, model) for method in methods}
    cost = method_costs[methods[0]]
    limits = _parse_limits(raw, errors)
    trials = _parse_trial_settings(raw, errors)
    screening = _parse_screening(raw, goal, errors)
    candidates = _search_candidates(raw, tests, method_costs, limits, model, goal["budget"], errors)
    if errors:
        raise ConfigError(errors)
    target_power, budget, max_type1 = goal["target_power"], goal["budget"], goal["max_type1"]
    return PlanConfig(
        name=name, model=model, model_source=str(model_source), effect_request=raw.get("effect", "fitted"),
        effect=float(effect), effect_label=effect_label, tests=tuple(tests), alpha=float(alpha),
        target_power=None if target_power is None else float(target_power),
        budget=None if budget is None else float(budget), power_over=goal["power_over"],
        max_type1=None if max_type1 is None else float(max_type1), type1_over=goal["type1_over"],
        confirm_trials=trials["confirm_trials"], confirm_candidates=trials["confirm_candidates"], cost=cost,
        limits=limits, candidates=tuple(candidates), screen_trials=trials["screen_trials"],
        max_trials=trials["max_trials"], confidence=float(trials["confidence"]),
        cost_tolerance=float(trials["cost_tolerance"]), power_tolerance=float(trials["power_tolerance"]),
        seed=seed, art_resamples=art_resamples, art_exact=art_exact, chunk_size=trials["chunk_size"],
        description=str(raw.get("description", "")), raw=dict(raw), methods=methods, method_costs=method_costs,
        screening=screening)


def _parse_screening(raw: dict, goal: dict, errors: list[str]) -> str:
    """How the search screens its candidates (:mod:`simdesign.planning.plan_search`)."""
    screening = raw.get("screening", "eager")
    if screening not in SCREENING:
        errors.append(f"The 'screening' field must be one of {list(SCREENING)}; got {screening!r}")
    elif screening == "by_cost" and goal["budget"] is not None:
        # Power need not grow with cost, so no cost bound tells which unscreened design cannot be the most powerful.
        errors.append("The 'screening' field 'by_cost' applies only to the goal 'target_power' (the cheapest "
                      "passing design bounds what is worth simulating); with 'budget' use 'eager'")
    return screening


def _parse_goal(raw: dict, alpha, errors: list[str]) -> dict:
    """The plan's goal (exactly one of target power and budget) and the rates the goal is judged on."""
    target_power, budget = raw.get("target_power"), raw.get("budget")
    if (target_power is None) == (budget is None):
        errors.append("Give exactly one goal: 'target_power' (find the cheapest design reaching it) or "
                      "'budget' (find the most powerful design within it)")
    if target_power is not None:
        target_power = _number(errors, raw, "target_power", "", 0.8, 0, 1, low_open=True, high_open=True)
    if budget is not None:
        budget = _number(errors, raw, "budget", "", 1.0, 0, low_open=True)
    max_type1 = raw.get("max_type1", "auto")
    if max_type1 == "auto":
        max_type1 = (default_max_type1(alpha) if isinstance(alpha, float) and 0 < alpha < 0.5
                     else None)
    elif max_type1 is not None:
        max_type1 = _number(errors, raw, "max_type1", "", 0.1, 0, 1, low_open=True, high_open=True)
        if isinstance(alpha, float) and max_type1 < alpha:
            errors.append(f"The 'max_type1' field ({max_type1}) must be at least 'alpha' ({alpha}): a test at "
                          "level alpha rejects a true null at rate alpha")
    power_over = raw.get("power_over", "pooled")
    if power_over not in POWER_OVER:
        errors.append(f"The 'power_over' field must be one of {list(POWER_OVER)}; got {power_over!r}")
    type1_over = raw.get("type1_over", "pooled")
    if type1_over not in TYPE1_OVER:
        errors.append(f"The 'type1_over' field must be one of {list(TYPE1_OVER)}; got {type1_over!r}")
    return {"target_power": target_power, "budget": budget, "max_type1": max_type1, "power_over": power_over,
            "type1_over": type1_over}


def _sub_mapping(raw: dict, key: str, allowed, errors: list[str]) -> dict:
    """The mapping under ``key`` (empty if absent or null), its unknown keys reported; {} if it is not a mapping."""
    mapping = raw.get(key) or {}
    if not isinstance(mapping, dict):
        errors.append(f"The '{key}' field must be a mapping with keys {list(allowed)}; got {mapping!r}")
        return {}
    unknown = sorted(set(mapping) - set(allowed))
    if unknown:
        errors.append(f"Unknown '{key}' key(s) {unknown}; allowed: {list(allowed)}{suggestions(unknown, allowed)}")
    return mapping


def _parse_cost(raw: dict, model_source, base_dir: Path | None, errors: list[str], method: str | None = None,
                model=None) -> CostModel:
    """The 'cost' mapping; pay per hour is required because no default price would mean anything.

    For a method whose judgement covers a pair of outputs the seconds are per comparison and the cost counts
    comparisons (``model``: the plan's model, which says how many pairs an annotator judges per document).
    """
    cost_raw = _sub_mapping(raw, "cost", COST_KEYS, errors)
    if "pay_per_hour" not in cost_raw:
        errors.append("The 'cost.pay_per_hour' field is required (annotator pay per hour)")
    seconds, seconds_source = _seconds_per_judgement(cost_raw.get("seconds_per_judgement", "auto"), model_source,
                                                     base_dir, errors, method)
    per_pair = method is not None and get_method(method).covers == "pair"
    counting = {} if not per_pair else {
        "count_items": lambda design, n_systems, _method=get_method(method): _method.items(
            design.judgements(n_systems), n_systems, design, model),
        "item_name": "comparison"}
    return CostModel(**counting,
        pay_per_hour=float(_number(errors, cost_raw, "pay_per_hour", "cost.", 0.0, 0)),
        seconds_per_judgement=seconds,
        per_annotator=float(_number(errors, cost_raw, "per_annotator", "cost.", 0.0, 0)),
        per_document=float(_number(errors, cost_raw, "per_document", "cost.", 0.0, 0)),
        currency=str(cost_raw.get("currency", "")), seconds_source=seconds_source)


parse_cost = _parse_cost  # public name: the explorer checks its cost controls by the same rules


def _parse_limits(raw: dict, errors: list[str]) -> Limits:
    """The 'limits' mapping (every key optional)."""
    limits_raw = _sub_mapping(raw, "limits", LIMIT_KEYS, errors)
    limits = Limits(**{key: _number(errors, limits_raw, key, "limits.", None, 1, integer=True, allow_none=True)
                       for key in LIMIT_KEYS})
    if limits.min_annotators and limits.max_annotators and limits.min_annotators > limits.max_annotators:
        errors.append(f"The 'limits.min_annotators' field ({limits.min_annotators}) exceeds "
                      f"'limits.max_annotators' ({limits.max_annotators})")
    return limits


def _parse_trial_settings(raw: dict, errors: list[str]) -> dict:
    """How many trials the search spends where, its confidence and tolerances, and the chunk size."""
    screen_trials = _number(errors, raw, "screen_trials", "", 50, 2, integer=True)
    max_trials = _number(errors, raw, "max_trials", "", 800, 2, integer=True)
    if isinstance(screen_trials, int) and isinstance(max_trials, int) and screen_trials > max_trials:
        errors.append(f"The 'screen_trials' field ({screen_trials}) must not exceed 'max_trials' ({max_trials})")
    confidence = _number(errors, raw, "confidence", "", 0.95, 0, 1, low_open=True, high_open=True)
    # Confirmation on fresh trials (plan_search): by default as many as a fully evaluated candidate had.
    confirm_trials = _number(errors, raw, "confirm_trials", "", max_trials if isinstance(max_trials, int) else 800,
                             2, integer=True)
    confirm_candidates = _number(errors, raw, "confirm_candidates", "", 2, 1, integer=True)
    cost_tolerance = _number(errors, raw, "cost_tolerance", "", 0.05, 0)
    power_tolerance = _number(errors, raw, "power_tolerance", "", 0.02, 0, 1, low_open=True, high_open=True)
    # None lets the engine choose per test (slow mixed-model fits get short chunks, so little is lost on a crash)
    chunk_size = _number(errors, raw, "chunk_size", "", None, 1, integer=True, allow_none=True)
    return {"screen_trials": screen_trials, "max_trials": max_trials, "confidence": confidence,
            "confirm_trials": confirm_trials, "confirm_candidates": confirm_candidates,
            "cost_tolerance": cost_tolerance, "power_tolerance": power_tolerance, "chunk_size": chunk_size}


def _search_candidates(raw: dict, tests, method_costs: dict, limits: Limits, model, budget,
                       errors: list[str]) -> list:
    """The candidate designs of the 'search' field; an empty search space is an error that says why.

    Candidates are built only when the rest of the config is valid, since they need the tests, model and cost.
    ``method_costs`` maps each annotation method searched to its cost model.
    """
    designs = parse_search(raw.get("search"), errors)
    candidates: list[Candidate] = []
    if designs and tests and model is not None and not errors:
        for method, cost in method_costs.items():
            # each method gets the tests that take its judgements (scores or preferences: _method_test_problems)
            taken = tuple(spec for spec in tests if get_method(method).accepts(resolve_analysis(spec.name)))
            candidates += build_candidates(designs, tests_for_method(taken, method), cost, limits, model.n_systems,
                                           budget, method)
        simulated = [c for c in candidates if not c.excluded]
        if not simulated:
            within_limits = [c for c in candidates if c.excluded.startswith("over budget")]
            if budget is not None and within_limits:
                cheapest = min(within_limits, key=lambda c: c.total_cost)
                errors.append(f"The 'budget' field ({budget:g}) is below the cheapest design in the search space: "
                              f"{cheapest.design.label} costs {cheapest.total_cost:.2f}")
            else:
                reasons = sorted({c.excluded for c in candidates})[:5]
                errors.append("The 'search' field gives no design that respects the 'limits' and suits the "
                              f"'tests' (empty search space); reasons, e.g.: {reasons}")
    return candidates


def parse_search(raw, errors: list[str]) -> list:
    """The search space -> designs (shape grids plus explicitly listed designs), without duplicates.

    Each design kind generates its shapes from total documents N and its own
    'search' keys (its ``search_designs`` hook): block designs with documents
    per block D (B = N / D blocks, only where D divides N): *nested* with A = 1,
    *block* with B >= 2 and A >= 2 from ``annotators_per_block``, *crossed*
    with B = 1 (D = N). Pool designs combine N, the pool size M
    (``annotators``) and k (``judgements_per_output``) with k <= M. Overlap
    designs take S shared documents (``shared_docs``) and A annotators
    (``annotators``) where A divides N - S.
    """
    allowed_keys, shapes_allowed = plan_search_keys(), search_shapes()
    if not isinstance(raw, dict) or not raw:
        errors.append(f"The 'search' field must be a non-empty mapping with keys {list(allowed_keys)}; got {raw!r}")
        return []
    unknown = sorted(set(raw) - set(allowed_keys))
    if unknown:
        errors.append(f"Unknown 'search' key(s) {unknown}; allowed: {list(allowed_keys)}"
                      f"{suggestions(unknown, allowed_keys)}")
    explicit_only = "designs" in raw and "shapes" not in raw
    shapes = raw.get("shapes", [] if explicit_only else ["nested", "block", "crossed"])
    if not isinstance(shapes, list) or any(s not in shapes_allowed for s in shapes):
        errors.append(f"The 'search.shapes' field must be a list of {list(shapes_allowed)}; got {shapes!r}")
        shapes = []
    designs: list = []
    if shapes:
        docs = _int_list(errors, raw, "docs", None) if "docs" in raw else (
            errors.append("The 'search.docs' field is required with 'search.shapes' (total documents)") or [])
        lists: dict = {}
        reported: set = set()

        def grid(key, default):
            # Kinds read their own keys with their own defaults; a bad value is reported once.
            memo = (key, tuple(default))
            if memo not in lists:
                lists[memo] = _int_list(errors if key not in reported else [], raw, key, default)
                reported.add(key)
            return lists[memo]

        for n_docs in docs:
            for kind in DESIGN_KINDS.values():
                designs += [design for shape in getattr(kind, "search_shapes", ()) if shape in shapes
                            for design in kind.search_designs(shape, n_docs, grid)]
    if "designs" in raw:
        designs += parse_designs(raw["designs"], errors)
    unique = {}
    for design in designs:
        unique.setdefault(design.label, design)
    if not unique and not errors:
        errors.append("The 'search' field gives no design (empty search space): check 'search.docs' against "
                      "'search.docs_per_block' (D must divide the number of documents) and 'search.shapes'")
    return list(unique.values())


def build_candidates(designs, tests, cost: CostModel, limits: Limits, n_systems: int,
                     budget: float | None, method: str | None = None) -> list[Candidate]:
    """Every (design, test) with its cost, marking the ones that are not simulated and why."""
    candidates = []
    for design in designs:
        breakdown = cost.breakdown(design, n_systems)
        limit_problem = limits.problem(design, n_systems, cost)
        for test in tests:
            info = resolve_analysis(test.name)
            if info.needs_blocks and not design.has_blocks:
                excluded = f"n/a: block-level test on a{'n' if design.kind[0] in 'aeiou' else ''} {design.kind} design"
            elif info.needs_blocks and design.blocks < 2:
                excluded = "n/a: block-level test needs two or more blocks"
            elif limit_problem:
                excluded = f"limit: {limit_problem}"
            elif budget is not None and breakdown["cost"] > budget:
                excluded = f"over budget: costs {breakdown['cost']:.2f}"
            else:
                excluded = ""
            candidates.append(Candidate(design=design, test=test, cost=breakdown, excluded=excluded,
                                        method=method or default_method().name))
    return candidates
