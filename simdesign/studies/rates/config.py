"""Simulation configs: YAML in, validated frozen objects out.

Every problem found in a config is collected and raised together as one
:class:`~simdesign.core.errors.ConfigError`, each message naming the field and
what it allows. A :class:`SimulationConfig` built in code is checked by the
same rules (:func:`config_problems`), so no config object is invalid and
nothing downstream re-validates.

Example config::

    name: paper-fig4-coherence
    model: coherence          # preset name or path to a model file
    effect: zero              # zero | fitted | <scale factor>
    designs:
      - {kind: block, blocks: [1, 2, 4], docs_per_block: [100, 50, 25], annotators_per_block: 3}
    tests: [ttest, ttest_doc, art, {name: art_block, resamples: 5000}]
    trials: 1000
    alpha: 0.05
    seed: 2021
    art_resamples: 1000
"""
from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path


from simdesign.runner.limits import study_size_problems
from simdesign.significance import ANALYSES, resolve_analysis
from simdesign.significance.base import current_options
from simdesign.core.designs import COVERAGE_FIELD, DESIGN_KINDS, design_to_mapping
from simdesign.core.fields import count_problem, field_problem
from simdesign.runner.study import study_field_problems
from simdesign.core.errors import ConfigError
from simdesign.core.suggest import did_you_mean, suggestions
from simdesign.core.yamlio import read_config_mapping
from simdesign.model import PRESETS, OrdinalMixedModel, RankOnlyModel, effect_scale, load_model
from simdesign.methods import config_name, get_method
from simdesign.studies.rates.method_specs import (DEFAULT_METHODS, design_method_problems, method_problems,
                                                  method_specs, method_warnings, parse_methods,
                                                  shared_model_digest_source, spec_method)
from simdesign.model.method_pair import load_rank_model, with_rank_model
from simdesign.studies.rates.coverage import coverage_problems
from simdesign.studies.rates.criteria import (Criterion, criteria_problems, criteria_to_mapping, criterion_specs,
                                              parse_criteria, spec_criterion)
from simdesign.studies.replication.replication import (ReplicationSettings, parse_replication, replication_problems,
                                                       with_reported_means)
from simdesign.core.estimands import ESTIMANDS, requestable_estimands
from simdesign.studies.rates.summary import estimand_names
from simdesign.core.checks import is_integer, is_number

TOP_LEVEL_KEYS = ("name", "model", "effect", "designs", "tests", "trials", "alpha", "seed", "art_resamples",
                  "art_exact", "chunk_size", "figure", "description", "estimands", "replication",
                  "document_intercept_scale", "method", "methods", "study", "criteria")
MODEL_TYPES = (OrdinalMixedModel, RankOnlyModel)  # a Likert (or joint Likert/Rank) model, or a rank-only one
FIGURE_X = ("annotators", "judgements", "docs", "blocks", "annotators_per_block", "judgements_per_output")
FIGURE_COLOUR = ("test", "shape")
BLOCK_ONLY_X = ("blocks", "annotators_per_block")  # pool and overlap designs have no blocks: no value here
# Bound on the largest scaled fixed effect (latent logit scale). The latent noise is logistic, and
# P(noise > 20) = 2e-9: beyond this every judgement of a system lands at one end of the scale, so a larger
# factor changes nothing but the share of tests that degenerate (and 1e308 overflows).
MAX_LATENT_EFFECT = 20.0
# Config-level defaults that ART analyses inherit unless their own options say otherwise.
ART_DEFAULT_KEYS = {"resamples": "art_resamples", "exact": "art_exact"}


@dataclass(frozen=True)
class AnalysisSpec:
    """One requested analysis.

    Attributes
    ----------
    name : str
        Registry name.
    label : str
        Unique label used in every output (e.g. ``clmm[paper]``).
    options : dict
        Effective options passed to the analysis (written + inherited + defaults).
    """

    name: str
    label: str
    options: dict = field(default_factory=dict)

    def __post_init__(self):
        # Options left out take the registry's defaults, so a spec built in code equals the parsed one.
        info = registered_analysis(self.name)
        if info is not None:
            defaults = {option: default for option, (_, default) in info.options.items()}
            object.__setattr__(self, "options", current_options(info, {**defaults, **dict(self.options)},
                                                                f"tests[{self.label}]"))
            problems = analysis_option_problems(self.name, self.options, f"tests[{self.label}]")
        elif self.name in requestable_estimands():
            problems = [] if not self.options else [f"The estimand {self.name} takes no options; got {self.options}"]
        else:
            problems = [f"The test {self.name!r} is unknown; available: {sorted(ANALYSES)}"
                        f"{did_you_mean(self.name, ANALYSES)}"]
        if not isinstance(self.label, str) or not self.label:
            problems.append(f"The label of test {self.name} must be a non-empty string; got {self.label!r}")
        if problems:
            raise ConfigError(problems)

    @property
    def fingerprint(self) -> str:
        """Hash of what determines this analysis's p-values (name and effective options)."""
        return stable_digest({"name": self.name, "options": self.options})

    @property
    def accepted_fingerprints(self) -> set[str]:
        """Stored fingerprints this analysis may resume from: its own, and those written before options it now
        has at their default values existed.

        An option is added with a default that keeps the test's old p-values (``threshold: theory`` of
        ttest_doc and wilcoxon_doc), so results stored before it existed are results at its default; where
        the default later changed (AnalysisInfo.former_defaults), at its former default instead. New
        stores keep every effective option in their fingerprint, so a later change of a default is still caught.
        """
        info = registered_analysis(self.name)
        # an option whose default changed after it was added: old stores hold its former default's results
        former = info.former_defaults if info else {}
        at_default = [option for option, (_, default) in (info.options.items() if info else ())
                      if option in self.options and self.options[option] == former.get(option, default)]
        # A store written when a renamed value had its old name ('threshold: bootstrap') holds the same test.
        variants = [self.options]
        for option, aliases in (info.deprecated_values.items() if info else ()):
            variants += [{**variant, option: old} for variant in list(variants)
                         for old, new in aliases.items() if variant.get(option) == new]
        return {stable_digest({"name": self.name,
                               "options": {k: v for k, v in variant.items() if k not in left_out}})
                for variant in variants
                for size in range(len(at_default) + 1) for left_out in itertools.combinations(at_default, size)}


class ParsedTests(tuple):
    """A built config's tests (AnalysisSpec objects): a tuple that says it was read back from a config.

    Only :meth:`SimulationConfig._take_tests_keyword` tells it from a plain tuple.
    """

    __slots__ = ()


@dataclass(frozen=True)
class FigureSpec:
    x: str = "annotators"
    estimand: str | None = None  # default: type1 under effect zero, power otherwise
    colour: str = "test"
    log_x: bool = True


@dataclass(frozen=True, eq=False)
class SimulationConfig:
    """A validated simulation config (see the module docstring for the YAML form).

    However it is built (:func:`parse_config`, or directly in code), it is
    validated by the same rules and raises :class:`~simdesign.core.errors.ConfigError`
    with every problem found. Built in code, ``model`` may be a preset name or
    a model file path, ``designs`` design objects or mappings and ``tests``
    specs, test names or mappings (as in YAML).

    The tests' keyword is ``tests``, as the YAML key; ``analyses`` (its name before) is accepted as an
    alias and is the attribute that holds them (``config.tests`` reads the same tuple). Messages name
    the keyword that was written.

    ``parse_config(config.to_mapping()) == config`` for every config.

    Parameters
    ----------
    name : str
        Names the results directory (no slashes).
    model : OrdinalMixedModel, RankOnlyModel or str
        A model, a preset name or a model file path.
    effect : 'zero', 'fitted' or float
        The null hypothesis, the model's effects, or them scaled by a factor.
    designs : sequence
        Design objects or their config mappings.
    tests : sequence
        Test names, ``{name: ..., <option>: ...}`` mappings or AnalysisSpec objects (alias ``analyses``).
    trials, alpha, seed, art_resamples, art_exact, chunk_size, figure, description, estimands, replication, \
document_intercept_scale, methods
        As the YAML keys of the same names (docs/config.md).

    Examples
    --------
    >>> SimulationConfig(name="demo", model="coherence", effect="fitted",
    ...                  designs=[{"kind": "block", "blocks": 20, "docs_per_block": 5,
    ...                            "annotators_per_block": 3}],
    ...                  tests=["ttest", "art_doc"], trials=100)     # doctest: +SKIP
    """

    name: str
    model: OrdinalMixedModel
    model_source: str = ""
    effect: object = "fitted"
    designs: tuple = ()
    analyses: tuple = ()
    trials: int = 1000
    alpha: float = 0.05
    seed: int = 0
    art_resamples: int = 1000
    art_exact: str = "auto"
    chunk_size: int | None = None
    figure: FigureSpec = field(default_factory=FigureSpec)
    description: str = ""
    estimands: tuple = ()  # per-trial reliability estimands (docs/reliability.md), e.g. ('krippendorff_alpha',)
    replication: ReplicationSettings | None = None  # exact replications (simdesign.studies.replication.replication)
    document_intercept_scale: float | None = None  # sets the model's (OrdinalMixedModel); None: the model's own
    methods: tuple = DEFAULT_METHODS  # annotation methods, each a dimension of the results (simulation/method_specs.py)
    criteria: tuple = ()  # several criteria per study, each a dimension of the results (simulation/criteria.py)
    # The YAML's name for the tests; stored in 'analyses' (an init-only alias: see the class docstring).
    tests: dataclasses.InitVar[object] = None

    def __repr__(self) -> str:
        # short: the model's covariances and every test option are in to_mapping()
        designs = [d.label for d in self.designs]
        shown = ", ".join(designs[:4]) + (f", ... ({len(designs)} in all)" if len(designs) > 4 else "")
        work = [a.label for a in self.analyses] + list(self.estimands)
        return (f"<SimulationConfig {self.name!r}: model {getattr(self.model, 'name', self.model)!r}, effect "
                f"{self.effect!r}; designs {shown}; tests {', '.join(work)}; {self.trials} trials, alpha "
                f"{self.alpha:g}, seed {self.seed}>")

    def __post_init__(self, tests=None):
        problems: list[str] = []
        self._coerce_parts(problems, self._take_tests_keyword(tests, problems))
        values = {key: value for key, value in self.__dict__.items()
                  if not (key == "model" and value is None and problems)}  # a model that failed is reported once
        problems += config_problems(values, check_empty=not problems)
        if problems:
            raise ConfigError(problems)
        object.__setattr__(self, "alpha", float(self.alpha))

    def _take_tests_keyword(self, tests, problems: list[str]) -> str:
        """Store ``tests=`` (the YAML key) in ``analyses``; returns the keyword the tests were given with.

        ``dataclasses.replace`` passes both keywords, read back from the config (``config.tests`` and
        ``config.analyses`` are :class:`ParsedTests`): a value given afresh wins over one read back, so
        ``replace(config, tests=[...])`` and ``replace(config, analyses=[...])`` both work. Two fresh
        values are refused rather than one silently winning.
        """
        given_tests = tests is not None and not (isinstance(tests, ParsedTests) and self.analyses)
        if not given_tests:
            return "analyses"
        if self.analyses and not isinstance(self.analyses, ParsedTests):
            problems.append("Give the tests as 'tests' (or its alias 'analyses'), not both")
        else:
            object.__setattr__(self, "analyses", tests)
        return "tests"

    def _coerce_parts(self, problems: list[str], tests_field: str = "tests") -> None:
        """Accept the YAML forms in code (a model name, design and test mappings); store the parsed objects."""
        if isinstance(self.methods, (str, list)):
            object.__setattr__(self, "methods", tuple([self.methods] if isinstance(self.methods, str) else self.methods))
        if not isinstance(self.model, MODEL_TYPES):
            model, source = resolve_model({"model": self.model}, None, problems)
            object.__setattr__(self, "model", model)
            object.__setattr__(self, "model_source", source or "")
        object.__setattr__(self, "model", with_intercept_scale(self.model, self.document_intercept_scale, problems))
        designs = list(self.designs) if isinstance(self.designs, (list, tuple)) else self.designs
        if isinstance(designs, list) and any(isinstance(d, dict) for d in designs):
            designs = [d for item in designs for d in (parse_designs([item], problems) if isinstance(item, dict)
                                                       else [item])]
        object.__setattr__(self, "designs", tuple(designs) if isinstance(designs, list) else designs)
        analyses = list(self.analyses) if isinstance(self.analyses, (list, tuple)) else self.analyses
        if isinstance(analyses, str):  # one test name: a list of one, as in YAML
            analyses = [analyses]
        if isinstance(analyses, list) and any(not isinstance(a, AnalysisSpec) for a in analyses):
            inherited = art_inherited(self.art_resamples, self.art_exact)
            analyses = [a for position, item in enumerate(analyses)
                        for a in (self._parsed_test(item, position, tests_field, problems, inherited)
                                  if not isinstance(item, AnalysisSpec) else [item])]
        object.__setattr__(self, "analyses", ParsedTests(analyses) if isinstance(analyses, (list, tuple)) else analyses)
        if isinstance(self.criteria, (list, str, dict)) or any(not isinstance(c, Criterion) for c in self.criteria):
            object.__setattr__(self, "criteria", parse_criteria({"criteria": self.criteria, "model": self.model},
                                                                None, resolve_model, problems))
        if isinstance(self.estimands, (list, str)):
            object.__setattr__(self, "estimands", tuple([self.estimands] if isinstance(self.estimands, str)
                                                        else self.estimands))
        if isinstance(self.figure, dict):
            object.__setattr__(self, "figure", parse_figure(self.figure, problems))
        if not isinstance(self.replication, ReplicationSettings):
            object.__setattr__(self, "replication", parse_replication(self.replication, problems))
        if getattr(self.replication, "means", None) is not None and isinstance(self.model, OrdinalMixedModel):
            # the original's reported means as the effects (idempotent: a model with those means is kept)
            object.__setattr__(self, "model", with_reported_means(self.model, self.replication, problems))

    @staticmethod
    def _parsed_test(item, position: int, tests_field: str, problems: list[str], inherited: dict) -> list:
        """One test given in code as a name or mapping, parsed as YAML's; messages say ``<tests_field>[position]``."""
        found: list[str] = []
        specs = parse_analyses([item], found, inherited, field_name=tests_field)
        problems.extend(message.replace(f"{tests_field}[0]", f"{tests_field}[{position}]") for message in found)
        return specs

    def __eq__(self, other) -> bool:
        # The model compares by content (OrdinalMixedModel holds arrays and compares by identity).
        if not isinstance(other, SimulationConfig):
            return NotImplemented
        mine, theirs = dict(self.__dict__), dict(other.__dict__)
        return (stable_digest(mine.pop("model").to_dict()) == stable_digest(theirs.pop("model").to_dict())
                and mine == theirs)

    __hash__ = None  # equal by content, and its tests' options are dicts: not hashable (as before)

    @property
    def effect_label(self) -> str:
        return self.effect if isinstance(self.effect, str) else f"x{self.effect:g}"

    @property
    def is_null(self) -> bool:
        return effect_scale(self.effect) == 0.0

    @property
    def estimand_specs(self) -> tuple:
        """The requested estimands as work items for the engine (label = estimand name, no options)."""
        return tuple(AnalysisSpec(name=name, label=name, options={}) for name in self.estimands)

    @property
    def work_specs(self) -> tuple:
        """Every (test or estimand, method) the engine runs and the store keys, by result label.

        Likert items are the specs themselves; others are :class:`~simdesign.studies.rates.method_specs.MethodSpec`
        labelled ``<label>@<method>``.
        """
        if self.criteria:  # criteria and methods other than Likert do not combine (criteria_problems)
            return criterion_specs(tuple(self.analyses) + self.estimand_specs, self.criteria)
        return method_specs(tuple(self.analyses) + self.estimand_specs, self.methods)

    def analysis_fingerprints(self) -> dict:
        """Result label -> what determines its stored rows beyond :meth:`results_fingerprint`.

        A default-method (Likert) test's is its :attr:`AnalysisSpec.fingerprint`, as before methods
        existed; another method's adds the method and what its trials depend on in the model
        (:meth:`~simdesign.methods.AnnotationMethod.fingerprint`: Rank's, the ``rank_noise``).
        """
        found = {}
        for spec in self.work_specs:
            method = get_method(spec_method(spec))
            if spec_criterion(spec) is not None:  # the criterion and its model's shared part (simulation/criteria.py)
                found[spec.label] = stable_digest({
                    "name": spec.name, "options": spec.options, "criterion": spec.criterion,
                    "model": stable_digest(shared_model_digest_source(spec.model))})
            elif method.is_default:
                found[spec.label] = spec.fingerprint if isinstance(spec, AnalysisSpec) else ""
            else:
                found[spec.label] = stable_digest({"name": spec.name, "options": spec.options, "method": method.name,
                                                   **method.fingerprint(self.model)})
        return found

    def results_fingerprint(self) -> dict:
        """What must match for stored trials to be reused: model, effect and seed.

        Designs and analyses have their own keys (label, options), so adding
        one to a config never invalidates the others; ``alpha`` and
        ``trials`` only change the summary.
        """
        # Without rank_noise: a model gaining one keeps its stored Likert trials (analysis_fingerprints).
        return {"model": stable_digest(shared_model_digest_source(self.model)), "effect": effect_scale(self.effect),
                "seed": self.seed, "format": 1}

    def to_mapping(self) -> dict:
        """The config as a YAML-ready mapping that :func:`parse_config` turns back into an equal config.

        This is what a results manifest stores, so ``simdesign plot`` and
        ``replay`` rebuild the config of any run, from a file or from code.
        Designs are written one by one (a grid is expanded), each test with
        its label and the options that differ from what it would inherit, and
        a model that is neither a preset nor a file is written inline.
        """
        inherited = art_inherited(self.art_resamples, self.art_exact)
        tests = []
        for spec in self.analyses:
            defaults = {option: inherited.get(option, default)
                        for option, (_, default) in resolve_analysis(spec.name).options.items()}
            written = {key: value for key, value in spec.options.items() if defaults.get(key) != value}
            tests.append({"name": spec.name, **({} if analysis_label(spec.name, written) == spec.label
                                                else {"label": spec.label}), **written})
        mapping = {
            "name": self.name, "model": self.model_source if self.model_source else self.model.to_dict(),
            "effect": self.effect,
            "designs": [design_to_mapping(d) for d in self.designs],
            "tests": tests, "trials": self.trials, "alpha": self.alpha, "seed": self.seed,
            "art_resamples": self.art_resamples, "art_exact": self.art_exact,
            "figure": dataclasses.asdict(self.figure),
        }
        if self.chunk_size is not None:
            mapping["chunk_size"] = self.chunk_size
        if self.description:
            mapping["description"] = self.description
        if self.estimands:
            mapping["estimands"] = list(self.estimands)
        if self.replication is not None:
            mapping["replication"] = self.replication.to_mapping()
        if self.document_intercept_scale is not None:
            mapping["document_intercept_scale"] = self.document_intercept_scale
        if tuple(self.methods) != DEFAULT_METHODS:  # left out for Likert, so existing configs hash as before
            mapping["methods"] = [config_name(method) for method in self.methods]  # a plug-in by its import path
        if self.criteria:
            mapping["criteria"] = criteria_to_mapping(self.criteria)
        return mapping

    to_dict = to_mapping  # the name before 0.2; kept for callers


def with_intercept_scale(model, scale, problems: list[str]):
    """``model`` with its document intercept scale set to ``scale`` (None: unchanged); problems appended."""
    if scale is None or not isinstance(model, OrdinalMixedModel) or model.document_intercept_scale == scale:
        return model
    try:
        return model.with_document_intercept_scale(scale)
    except ConfigError as exc:
        problems.extend(exc.messages)
        return model


def stable_digest(obj) -> str:
    """sha256 of a canonical JSON form (stable across runs and machines)."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def load_config(path, overrides: dict | None = None) -> SimulationConfig:
    """Read and validate a YAML config file.

    Parameters
    ----------
    path : str or path-like
    overrides : dict, optional
        Top-level keys replacing the file's (e.g. ``{'trials': 50}`` from the CLI).

    Returns
    -------
    SimulationConfig

    Raises
    ------
    ConfigError
        Every problem of the file at once: not UTF-8, not YAML, a duplicated key, unknown keys (with the
        closest allowed ones), bad values naming the field.

    Examples
    --------
    >>> load_config("configs/quick.yaml", {"trials": 20}).trials         # doctest: +SKIP
    20
    """
    path = Path(path)
    return parse_config(read_config_mapping(path, "config", overrides), base_dir=path.parent)


def _name_problem(name) -> str | None:
    """The 'name' field names results directories (the shared rule, :mod:`simdesign.core.fields`)."""
    return field_problem("name", name)


def _positive_int_problem(key: str, value) -> str | None:
    return count_problem(key, value, 1)


def _seed_problem(seed) -> str | None:
    return field_problem("seed", seed)


def _alpha_problem(alpha) -> str | None:
    return field_problem("alpha", alpha)


def _art_exact_problem(value) -> str | None:
    return None if value in ("auto", "never") else f"The 'art_exact' field must be 'auto' or 'never'; got {value!r}"


# One rule per scalar field, applied to a YAML mapping (parse_config) and to a built config (__post_init__).
SCALAR_RULES = {
    "name": _name_problem,
    "trials": lambda value: _positive_int_problem("trials", value),
    "seed": _seed_problem,
    "alpha": _alpha_problem,
    "art_resamples": lambda value: _positive_int_problem("art_resamples", value),
    "art_exact": _art_exact_problem,
    "chunk_size": lambda value: None if value is None else _positive_int_problem("chunk_size", value),
}
SCALAR_DEFAULTS = {"trials": 1000, "seed": 0, "alpha": 0.05, "art_resamples": 1000, "art_exact": "auto",
                   "chunk_size": None}


def art_inherited(art_resamples, art_exact) -> dict:
    """The config-level ART settings that tests inherit (only valid ones: a bad one is reported once, by its field)."""
    inherited = {}
    if SCALAR_RULES["art_resamples"](art_resamples) is None:
        inherited["resamples"] = art_resamples
    if SCALAR_RULES["art_exact"](art_exact) is None:
        inherited["exact"] = art_exact
    return inherited


def effect_problems(effect, model, problems: list[str]) -> float | None:
    """Check the 'effect' field (against the model when there is one); returns its scale factor or None."""
    if effect is None:
        problems.append("The 'effect' field is empty (YAML reads 'null' as nothing): write 'zero' for the null "
                        "hypothesis")
        return None
    try:
        scale = effect_scale(effect)
    except ConfigError as exc:
        problems.extend(exc.messages)
        return None
    if isinstance(model, MODEL_TYPES):
        check_effect_size(effect, scale, model, problems)
    return scale


def estimand_list_problems(estimands) -> list[str]:
    problems = []
    available = requestable_estimands()
    unknown = [item for item in estimands if item not in available]
    if unknown:
        problems.append(f"The 'estimands' field names unknown estimand(s) {unknown}; "
                        f"available: {sorted(available)}{suggestions(unknown, available)}")
    duplicates = sorted({item for item in estimands if list(estimands).count(item) > 1})
    if duplicates:
        problems.append(f"The 'estimands' field lists {duplicates} more than once")
    return problems


def config_problems(values: dict, check_empty: bool = True) -> list[str]:
    """Every problem of a config's parsed values (the rules shared by :func:`parse_config` and SimulationConfig).

    Parameters
    ----------
    values : dict
        Field name -> value, as SimulationConfig holds them; missing fields are not checked.
    check_empty : bool
        Report an empty 'designs' or 'tests'. The parser reports these itself, with the item that failed.
    """
    problems = [problem for key, rule in SCALAR_RULES.items() if key in values
                for problem in [rule(values[key])] if problem]
    model = values.get("model")
    if "model" in values and not isinstance(model, MODEL_TYPES):
        problems.append(f"The 'model' field must be a preset ({', '.join(PRESETS)}), a model file path or an "
                        f"OrdinalMixedModel; got {model!r}")
        model = None
    scale = effect_problems(values.get("effect", "fitted"), model, problems)
    designs, analyses = tuple(values.get("designs") or ()), tuple(values.get("analyses") or ())
    estimands = tuple(values.get("estimands") or ())
    estimand_problems = estimand_list_problems(estimands)
    problems += estimand_problems
    if check_empty and not designs:
        problems.append("The 'designs' field must be a non-empty list of design mappings, e.g. "
                        "{kind: block, blocks: 20, docs_per_block: 5, annotators_per_block: 3}")
    if check_empty and not analyses and not estimands:
        problems.append(f"The 'tests' field must be a non-empty list; available tests: {sorted(ANALYSES)}")
    strays = [d for d in designs if type(d) not in DESIGN_KINDS.values()] + \
             [a for a in analyses if not isinstance(a, AnalysisSpec)]
    if strays:
        problems.append(f"designs must be design objects ({', '.join(DESIGN_KINDS)}) or mappings, and tests "
                        f"AnalysisSpec objects, names or mappings; got {strays!r}")
        return problems
    problems += repeated_problems([d.label for d in designs], "designs")
    problems += repeated_problems([s.label for s in analyses], "tests")
    problems += method_problems(values.get("methods", DEFAULT_METHODS), model, analyses)
    problems += design_method_problems(designs, values.get("methods") or DEFAULT_METHODS)
    clashes = sorted({a.label for a in analyses} & set(estimands))
    if clashes:
        problems.append(f"The test label(s) {clashes} are estimand names; give the test(s) another 'label'")
    problems += blockless_problems(designs, analyses, estimands)
    if hasattr(model, "n_systems"):
        problems += study_size_problems(designs, model.n_systems, analyses, values.get("art_resamples")
                                        if isinstance(values.get("art_resamples"), int) else None)
    problems += replication_problems(values.get("replication"), analyses, model)
    problems += coverage_problems(designs, analyses, estimands, model, values.get("methods") or DEFAULT_METHODS,
                                  values.get("replication"))
    problems += criteria_problems(values.get("criteria") or (), model, values.get("methods") or DEFAULT_METHODS,
                                  values.get("replication"), MODEL_TYPES)
    if values.get("replication") is not None and tuple(values.get("methods") or DEFAULT_METHODS) != DEFAULT_METHODS:
        problems.append("The 'replication' estimands are computed on Likert studies only; "
                        f"leave out 'method'/'methods' (got {list(values.get('methods'))})")
    figure = values.get("figure", FigureSpec())
    if not isinstance(figure, FigureSpec):
        problems.append(f"The 'figure' field must be a mapping; got {figure!r}")
        return problems
    problems += figure_problems(figure)
    if designs and figure.x in BLOCK_ONLY_X and not any(d.has_blocks for d in designs):
        kinds = "/".join(dict.fromkeys(d.kind for d in designs))
        problems.append(f"The 'figure.x' field {figure.x!r} has no value for {kinds} designs (no blocks), and this "
                        f"config has only such designs; use one of {[x for x in FIGURE_X if x not in BLOCK_ONLY_X]}")
    if figure.estimand is not None and scale is not None and not estimand_problems:
        check_figure_estimand(figure.estimand, scale == 0.0, bool(analyses) or not estimands, list(estimands),
                              problems, fits_models=any(getattr(registered_analysis(a.name), "random_effects", False)
                                                        for a in analyses))
    return problems


def blockless_problems(designs, analyses, estimands) -> list[str]:
    """Block-level tests (and estimands a design kind refuses, e.g. SHR) on designs without blocks.

    Each design kind without blocks says why in ``no_blocks_reason`` and lists the estimands it
    refuses in ``refused_estimands`` (both optional class attributes).
    """
    problems = []
    block_tests = [a.label for a in analyses if getattr(registered_analysis(a.name), "needs_blocks", False)]
    one_block = [d.label for d in designs if d.has_blocks and getattr(d, "blocks", 2) < 2]
    if block_tests and one_block and len(one_block) == len(designs):
        # every trial of every design would be 'degenerate': the run would report rates of 0.0 and nothing else
        problems.append(f"The block-level test(s) {block_tests} need two or more blocks, and every design has one "
                        f"({one_block}): every test would fail; add designs with more blocks or use a test on "
                        "documents (e.g. ttest_doc, art_doc)")
    for kind in dict.fromkeys(type(d) for d in designs if not d.has_blocks):
        labels = [d.label for d in designs if type(d) is kind]
        reason = getattr(kind, "no_blocks_reason", f"{kind.kind} designs have no blocks")
        if block_tests:
            problems.append(f"The block-level test(s) {block_tests} do not apply to {kind.kind} designs "
                            f"{labels}: {reason}")
        refused = [name for name in estimands if name in getattr(kind, "refused_estimands", ())]
        if refused:
            problems.append(f"The 'estimands' field asks for {refused}, which do not apply to {kind.kind} designs "
                            f"{labels}: {reason}")
    return problems


def repeated_problems(labels: list[str], field_name: str) -> list[str]:
    """A design or test listed twice (by label): its results would be mixed in one output row."""
    duplicates = sorted({label for label in labels if labels.count(label) > 1})
    if not duplicates:
        return []
    if field_name == "designs":
        return [f"The 'designs' field lists the same design more than once: {duplicates}"]
    return [f"The 'tests' field lists the same analysis more than once: {duplicates} "
            "(give different options or a 'label')"]


def check_name(raw: dict, errors: list[str]) -> str | None:
    """The 'name' field of a config mapping (the planner's too); a problem is appended to ``errors``."""
    name = raw.get("name")
    problem = _name_problem(name)
    if problem:
        errors.append(problem)
    return name


def figure_problems(spec: FigureSpec) -> list[str]:
    problems = []
    if spec.x not in FIGURE_X:
        problems.append(f"The 'figure.x' field must be one of {list(FIGURE_X)}; got {spec.x!r}"
                        f"{did_you_mean(spec.x, FIGURE_X)}")
    if spec.colour not in FIGURE_COLOUR:
        problems.append(f"The 'figure.colour' field must be one of {list(FIGURE_COLOUR)}; got {spec.colour!r}")
    return problems


def resolve_model(raw: dict, base_dir: Path | None, errors: list[str]) -> tuple[OrdinalMixedModel | None, str | None]:
    """Load the 'model' field: a preset, a file path relative to the working directory or the config's, or inline.

    Returns the model (None after an error) and its source: the preset name or the file's absolute path,
    so that stored configs find the file from anywhere; '' for a model given inline (a mapping in the
    model file format, or an OrdinalMixedModel in code), which :meth:`SimulationConfig.to_mapping` writes inline.
    """
    source = raw.get("model")
    if source is None:
        errors.append("The 'model' field is required: a preset (coherence, repetition) or a model file path")
        return None, None
    if isinstance(source, MODEL_TYPES):
        return source, ""
    if isinstance(source, dict) and set(source) & {"preset", "file"}:
        return model_with_overrides(source, base_dir, errors), ""
    if isinstance(source, dict):
        try:
            return OrdinalMixedModel.from_dict(source), ""
        except ConfigError as exc:
            errors.extend(exc.messages)
            return None, ""
    candidate = Path(str(source))
    if base_dir is not None and not candidate.is_absolute() and not candidate.exists() \
            and (base_dir / candidate).exists():
        candidate = base_dir / candidate
    resolved = str(candidate.resolve()) if candidate.is_file() else str(source)
    try:
        return load_model(resolved), resolved
    except ConfigError as exc:
        errors.extend(exc.messages)
        return None, str(source)


def likert_model_or_problem(model, study: str, errors: list[str]):
    """``model`` if it generates Likert judgements; else None, with a problem naming the model (a study kind that
    simulates Likert scores cannot use a rank-only model)."""
    if isinstance(model, RankOnlyModel):
        errors.append(f"The 'model' field: {study} simulates Likert judgements, and {model.name!r} is a rank-only "
                      "model (fitted to a Rank table); use a Likert model (a preset, or a model fitted to Likert "
                      "scores; a joint model from 'simdesign fit --likert-model' also works)")
        return None
    return model


def parse_config(raw: dict, base_dir: Path | None = None) -> SimulationConfig:
    """Validate a config mapping (the YAML form, e.g. from ``yaml.safe_load``); see :func:`load_config`.

    Parameters
    ----------
    raw : dict
        Config keys (:data:`TOP_LEVEL_KEYS`) to values.
    base_dir : path-like, optional
        Where a relative model file path is looked for (besides the working directory).

    Returns
    -------
    SimulationConfig

    Raises
    ------
    ConfigError
        Every problem at once, naming the field.

    Examples
    --------
    >>> config = parse_config({"name": "demo", "model": "coherence", "effect": "zero", "trials": 10,
    ...                        "designs": [{"kind": "block", "blocks": 4, "docs_per_block": 5,
    ...                                     "annotators_per_block": 3}],
    ...                        "tests": ["ttest_doc"]})
    >>> [d.label for d in config.designs], [t.label for t in config.tests]
    (['block-B4-D5-A3'], ['ttest_doc'])
    """
    if not isinstance(raw, dict):
        raise ConfigError(f"A config must be a mapping of config keys; got {type(raw).__name__}")
    errors: list[str] = []
    unknown = sorted(set(raw) - set(TOP_LEVEL_KEYS))
    if unknown:
        errors.append(f"Unknown config key(s) {unknown}; allowed: {list(TOP_LEVEL_KEYS)}"
                      + suggestions(unknown, TOP_LEVEL_KEYS)
                      + (" (a config with 'panels' is a panel study: run it with `simdesign run`)"
                         if "panels" in unknown else ""))
    errors += study_field_problems(raw, ("rates", "replication"))
    model, model_source = resolve_model(raw, base_dir, errors)
    values = {key: raw.get(key, default) for key, default in SCALAR_DEFAULTS.items()}
    values.update(name=raw.get("name"), effect=raw.get("effect", "fitted"), description=str(raw.get("description", "")))
    values["document_intercept_scale"] = raw.get("document_intercept_scale")
    values["methods"] = parse_methods(raw, errors)
    values["criteria"] = parse_criteria(raw, base_dir, resolve_model, errors)
    if model is not None:
        values["model"] = with_intercept_scale(model, values["document_intercept_scale"], errors)
    values["designs"] = parse_designs(raw.get("designs"), errors)
    values["estimands"] = parse_estimands(raw.get("estimands"), errors)
    # A reliability-only config needs no tests; otherwise 'tests' stays required.
    if values["estimands"] and not raw.get("tests"):
        values["analyses"] = []
    else:
        values["analyses"] = parse_analyses(raw.get("tests"), errors,
                                            art_inherited(values["art_resamples"], values["art_exact"]))
    values["figure"] = parse_figure(raw.get("figure"), errors)
    values["replication"] = parse_replication(raw.get("replication"), errors)
    errors += config_problems(values, check_empty=False)
    if errors:
        raise ConfigError(list(dict.fromkeys(errors)))
    return SimulationConfig(model_source=str(model_source), **{key: tuple(value) if isinstance(value, list) else value
                                                               for key, value in values.items()})


def check_effect_size(effect, scale: float, model: OrdinalMixedModel, errors: list[str]) -> None:
    """Refuse a scale factor that pushes the largest fixed effect past :data:`MAX_LATENT_EFFECT`."""
    largest = float(abs(model.effects).max())
    if largest == 0.0 or abs(scale) * largest <= MAX_LATENT_EFFECT:
        return
    errors.append(
        f"The 'effect' field scales the model's largest fixed effect ({largest:.3f} on the latent logit scale) "
        f"to {abs(scale) * largest:.3g}; at most {MAX_LATENT_EFFECT:g} is allowed, i.e. |effect| <= "
        f"{MAX_LATENT_EFFECT / largest:.2f} for the model {model.name!r}: beyond it every judgement of a system "
        f"lands at one end of the scale and tests only degenerate; got {effect!r}")


def check_figure_estimand(estimand: str, is_null: bool, has_tests: bool, estimands: list[str],
                          errors: list[str], fits_models: bool = True) -> None:
    """'figure.estimand' must be one the summary will have: under the effect given, or a requested estimand.

    The summary's rates of a test come from the estimand registry (:mod:`simdesign.core.estimands`), read now:
    an estimand registered after this module was imported is allowed too.
    """
    needs_fit = getattr(ESTIMANDS.get(estimand), "random_effects_only", False)
    allowed = ([e for e in estimand_names(is_null) if fits_models or not ESTIMANDS[e].random_effects_only]
               if has_tests else []) + list(estimands)
    if estimand in allowed:
        return
    why = ""
    other = estimand_names(not is_null)
    if has_tests and needs_fit and estimand in estimand_names(is_null):
        mixed = sorted(name for name, info in ANALYSES.items() if info.random_effects)
        why = f" ({estimand!r} needs a test that fits random effects: {', '.join(mixed)})"
    elif has_tests and estimand in other:
        why = (f" ({estimand!r} needs " + ("a non-zero 'effect'" if is_null else "'effect: zero'") + ")")
    errors.append(f"The 'figure.estimand' field must be one of {allowed} under 'effect' "
                  f"{'zero' if is_null else 'non-zero'}{why}; got {estimand!r}{'' if why else did_you_mean(estimand, allowed)}")


def config_warnings(config: SimulationConfig) -> list[str]:
    """Settings that are legitimate but unusual enough to say so before a run."""
    found = method_warnings(config)
    block_tests = [a.label for a in config.analyses if getattr(registered_analysis(a.name), "needs_blocks", False)]
    one_block = [d.label for d in config.designs if d.has_blocks and getattr(d, "blocks", 2) < 2]
    if block_tests and one_block:
        found.append(f"The block-level test(s) {block_tests} are undefined on the one-block design(s) {one_block}: "
                     "every such test fails ('degenerate'), its rates read 0.0 with failure_rate 1.0")
    if effect_scale(config.effect) < 0:
        found.append(f"The 'effect' field is negative ({config.effect!r}): every fitted effect changes sign, so "
                     f"the systems' ranking is reversed (power counts rejections in the reversed direction); "
                     f"write a positive factor unless that is what you want")
    return found


def parse_estimands(items, errors: list[str]) -> list[str]:
    """Per-trial estimands beside the tests' rates: ``[krippendorff_alpha, shr]``.

    Where one is undefined for a design (SHR with fewer than two blocks,
    alpha with one judgement per output) the summary reports it empty with
    a note rather than rejecting the config, so one config can compare
    nested, blocked and crossed designs.
    """
    if items is None:
        return []
    if isinstance(items, str):
        items = [items]
    if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
        errors.append(f"The 'estimands' field must be a list of names from {sorted(requestable_estimands())}; "
                      f"got {items!r}")
        return []
    return list(items)  # unknown names and repeats: config_problems


def parse_designs(items, errors: list[str]) -> list:
    """Design mappings and grid mappings (list fields zipped, scalars broadcast) -> designs."""
    if not isinstance(items, list) or not items:
        errors.append("The 'designs' field must be a non-empty list of design mappings, e.g. "
                      "{kind: block, blocks: 20, docs_per_block: 5, annotators_per_block: 3}")
        return []
    designs = []
    for position, item in enumerate(items):
        where = f"designs[{position}]"
        if not isinstance(item, dict):
            errors.append(f"{where} must be a mapping; got {item!r}")
            continue
        kind = item.get("kind")
        if kind not in DESIGN_KINDS:
            errors.append(f"The '{where}.kind' field must be one of {list(DESIGN_KINDS)}; got {kind!r}"
                          f"{did_you_mean(kind, DESIGN_KINDS)}")
            continue
        cls = DESIGN_KINDS[kind]
        fields = list(cls.fields)
        optional = [COVERAGE_FIELD] if COVERAGE_FIELD in item else []  # partial coverage (docs/designs.md)
        extra = sorted(set(item) - set(fields) - {"kind", *optional})
        missing = [f for f in fields if f not in item]
        if extra or missing:
            errors.append(f"{where} ({kind}) needs exactly the fields {fields} (and optionally '{COVERAGE_FIELD}')"
                          + (f"; unknown {extra}" if extra else "") + (f"; missing {missing}" if missing else "")
                          + suggestions(extra, fields))
            continue
        empty = sorted(key for key, value in item.items() if isinstance(value, list) and not value)
        if empty:
            errors.append(f"{where} ({kind}): the list-valued field(s) {empty} are empty; give at least one value "
                          f"(a list is zipped element-wise with the other fields, a scalar is used for every design)")
            continue
        lengths = {len(v) for v in item.values() if isinstance(v, list)}
        if len(lengths) > 1:
            errors.append(f"{where}: list-valued fields are zipped element-wise and must have equal lengths; "
                          f"got lengths {sorted(lengths)}")
            continue
        count = lengths.pop() if lengths else 1
        for index in range(count):
            values = {f: (item[f][index] if isinstance(item[f], list) else item[f]) for f in fields + optional}
            try:
                designs.append(cls(**values))
            except ConfigError as exc:
                errors.extend(f"{where}: {m}" for m in exc.messages)
    errors.extend(repeated_problems([d.label for d in designs], "designs"))
    return designs


def analysis_label(name: str, written: dict) -> str:
    """``name[value,...]`` with the written options' values sorted by option name."""
    if not written:
        return name
    return f"{name}[{','.join(str(written[key]) for key in sorted(written))}]"


def parse_analyses(items, errors: list[str], art_defaults: dict, field_name: str = "tests") -> list[AnalysisSpec]:
    """Test names or mappings ``{name: ..., label: ..., <option>: ...}`` -> specs.

    ``field_name`` is the key the user wrote (``tests`` in YAML and mappings; ``analyses`` for the keyword
    alias of :class:`SimulationConfig`), so messages name it. One test name alone counts as a list of one.
    """
    if isinstance(items, str):
        items = [items]
    if isinstance(items, tuple):
        items = list(items)
    if not isinstance(items, list) or not items:
        errors.append(f"The '{field_name}' field must be a non-empty list; available tests: {sorted(ANALYSES)}")
        return []
    specs = []
    for position, item in enumerate(items):
        where = f"{field_name}[{position}]"
        if isinstance(item, str):
            item = {"name": item}
        if not isinstance(item, dict) or "name" not in item:
            errors.append(f"{where} must be a test name or a mapping with a 'name'; got {item!r}")
            continue
        name = item["name"]
        try:
            info = resolve_analysis(name) if isinstance(name, str) else None
        except KeyError as exc:
            info = None
            if ":" in name:  # a plug-in that fails to import must say why, not that it is unknown
                errors.append(f"The '{where}' test {name!r} cannot be used: {exc.args[0]}")
                continue
        if info is None:
            errors.append(f"The '{where}' test {name!r} is unknown; available: {sorted(ANALYSES)}, or an importable "
                          f"'module:attribute' naming an AnalysisInfo{did_you_mean(name, ANALYSES)}")
            continue
        written = {k: v for k, v in item.items() if k not in ("name", "label")}
        options = {option: written[option] if option in written
                   else art_defaults[option] if option in ART_DEFAULT_KEYS and option in art_defaults else default
                   for option, (_, default) in info.options.items()}
        options.update({k: v for k, v in written.items() if k not in options})
        # Renamed option values (threshold 'bootstrap') take their current name; the label keeps the written one,
        # so old labels, their random streams and their stores are unchanged.
        options = current_options(info, options, where)
        problems = analysis_option_problems(name, options, where)
        if problems:
            errors.extend(problems)
            continue
        label = item.get("label") or analysis_label(name, written)
        specs.append(AnalysisSpec(name=name, label=str(label), options=options))
    errors.extend(repeated_problems([spec.label for spec in specs], "tests"))
    return specs


def registered_analysis(name: str):
    """The registry entry of ``name`` (a registered name or an importable ``module:attribute``), or None."""
    if not isinstance(name, str):
        return None
    try:
        return resolve_analysis(name)
    except KeyError:
        return None


def analysis_option_problems(name: str, options: dict, where: str) -> list[str]:
    """The options of the registered analysis ``name`` against its allowed values (one rule for YAML and code)."""
    info = resolve_analysis(name)
    problems = []
    for option, (allowed, _) in info.options.items():
        if option not in options:
            continue
        value = options[option]
        problem = allowed(value) if callable(allowed) else (
            None if value in allowed else f"must be one of {list(allowed)}; got {value!r}")
        if problem:
            problems.append(f"The '{where}.{option}' option of {name} {problem}")
    unknown = sorted(set(options) - set(info.options))
    if unknown:
        problems.append(f"The test {name} has no option(s) {unknown}; its options: {sorted(info.options) or 'none'}"
                        f"{suggestions(unknown, info.options)}")
    return problems


def parse_figure(raw, errors: list[str]) -> FigureSpec:
    if raw is None:
        return FigureSpec()
    if not isinstance(raw, dict):
        errors.append(f"The 'figure' field must be a mapping; got {raw!r}")
        return FigureSpec()
    unknown = sorted(set(raw) - {"x", "estimand", "colour", "log_x"})
    if unknown:
        errors.append(f"Unknown 'figure' key(s) {unknown}; allowed: x, estimand, colour, log_x"
                      f"{suggestions(unknown, ('x', 'estimand', 'colour', 'log_x'))}")
    return FigureSpec(**{k: v for k, v in raw.items() if k in ("x", "estimand", "colour", "log_x")})


MODEL_OVERRIDE_KEYS = ("rank_noise", "rank_model", "preferences")


def model_with_overrides(source: dict, base_dir: Path | None, errors: list[str]):
    """``model: {preset: coherence, rank_noise: 1.0}`` (or ``{file: PATH, ...}``): a model with fields replaced.

    Only ``rank_noise`` can be replaced: it turns a Likert model into a joint Likert/Rank one
    (issue 13) without writing a model file. Or ``rank_model`` (a preset task or a rank-only model
    file) is added: rankings then come from that model (:mod:`simdesign.model.method_pair`). The
    result is written inline in stored configs.
    """
    unknown = sorted(set(source) - {"preset", "file", *MODEL_OVERRIDE_KEYS})
    if unknown or ("preset" in source) == ("file" in source):
        errors.append(f"A 'model' mapping with 'preset' or 'file' takes exactly one of them and the override(s) "
                      f"{list(MODEL_OVERRIDE_KEYS)}; got keys {sorted(source)}")
        return None
    base, _ = resolve_model({"model": source.get("preset", source.get("file"))}, base_dir, errors)
    if base is None:
        return None
    if not isinstance(base, OrdinalMixedModel):
        errors.append(f"The 'model.{'rank_model' if 'rank_model' in source else 'rank_noise'}' override needs a "
                      f"Likert model; {base.name!r} is rank-only")
        return None
    if "rank_model" in source:  # rankings from a model fitted to rankings (simdesign.model.method_pair)
        if "rank_noise" in source:
            errors.append("A 'model' mapping takes 'rank_noise' (rankings from the Likert model) or 'rank_model' "
                          "(rankings from a rank-only fit), not both")
            return None
        try:
            if "preferences" in source:  # pairwise preferences from the Likert part's latent values
                base = dataclasses.replace(base, preferences=source["preferences"])
            return with_rank_model(base, load_rank_model(source["rank_model"], base_dir))
        except ConfigError as exc:
            errors.extend(exc.messages)
            return None
    try:
        return dataclasses.replace(base, **{key: source[key] for key in MODEL_OVERRIDE_KEYS if key in source})
    except ConfigError as exc:
        errors.extend(exc.messages)
        return None


# ``config.tests``: the YAML's name for ``config.analyses``. Set after the class body because the dataclass
# needs the class attribute 'tests' as the init-only keyword's default while it builds __init__.
SimulationConfig.tests = property(lambda self: self.analyses,
                                  doc="The tests (AnalysisSpec tuple); the same as ``analyses``.")
