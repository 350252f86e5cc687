"""The explorer's controls: form values in, a checked config, totals and messages per control out.

Every value is read as YAML, exactly as it would be in a config file, and the config is checked by
:func:`simdesign.studies.rates.config.parse_config` and the planner's cost rules
(:func:`simdesign.planning.planner.parse_cost`): a bad value gets the message ``simdesign run`` (or
``simdesign plan``) gives for the same value in a file, shown next to the control whose field it names.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import yaml

from simdesign.significance import ANALYSES
from simdesign.significance.classical import CLASSICAL_TESTS
from simdesign.core.designs import DESIGN_KINDS
from simdesign.core.errors import ConfigError, MissingBackendError
from simdesign.core.yamlio import load_yaml
from simdesign.explore.fields import model_choice, name_problems
from simdesign.methods import all_methods, default_method, get_method, method_names
from simdesign.methods.rank import RANK
from simdesign.model import PRESETS

# What the page starts with: the paper's design (Steen & Markert, 2021) under the null, the tests of its Figure 4.
# Every built-in kind starts at a valid design of the paper's 100 documents, so that choosing a kind shows a
# design rather than a message per empty field (an overlap design: 10 shared documents plus 30 of each of 3
# annotators' own, ReproHum's layout).
DEFAULT_DESIGNS = {"block": {"blocks": 20, "docs_per_block": 5, "annotators_per_block": 3},
                   "pool": {"docs": 100, "annotators": 30, "judgements_per_output": 3},
                   "overlap": {"shared_docs": 10, "unique_docs_per_annotator": 30, "annotators": 3},
                   "battles": {"battles": 2000, "prompts": 500, "judges": 50}}
DEFAULT_METHOD = default_method().name
DEFAULTS = {"model": "coherence", "method": DEFAULT_METHOD, "effect": "zero", "effect_scale": "1.0", "kind": "block",
            "tests": ["ttest", "ttest_doc", "art_doc"], "trials": "1000", "seed": "2021", "alpha": "0.05",
            "pay_per_hour": "12", "seconds_per_judgement": "auto", "per_annotator": "0", "currency": "EUR"}
EFFECT_CHOICES = ("zero", "fitted", "scale")
COST_CONTROLS = ("pay_per_hour", "seconds_per_judgement", "per_annotator")

# The server's ceilings (docs/explorer.md): one request's study must fit in the server and its workers and
# answer within a lesson, while the server goes on answering. 'simdesign run' has none of these.
# Measured on the paper's design with ttest, ttest_doc and art_doc: one trial of n judgements peaks at
# about 460 bytes per judgement in the process computing it, at 2-5e5 judgements per second per core.
CEILINGS = {"blocks": 10_000, "docs": 10_000, "annotators": 10_000, "trials": 100_000}
MAX_JUDGEMENTS_PER_TRIAL = 300_000  # ~140 MB at the peak of a trial, in each of the (up to 3) processes computing
MAX_JUDGEMENTS_IN_ALL = 1_000_000_000  # trials x judgements (x2 beside power): about half an hour on 2 cores
MAX_CONTROL_CHARS = 200  # no control needs more; a longer value (a number of a million digits) is refused as is
MAX_REQUEST_BYTES = 64 * 1024  # the controls' JSON is well under 2 kB

# One-click settings for a lesson (the page's "Scenarios"): control -> value, the rest left as they are.
PAPER_TESTS = ["ttest", "ttest_doc", "art_doc"]
SCENARIOS = [
    {"name": "paper", "label": "Paper", "title": "Steen & Markert (2021): 100 documents in 20 blocks of 5, "
     "3 annotators per block (60 annotators), effect zero: type I error", "values": {
         "effect": "zero", "kind": "block", "blocks": "20", "docs_per_block": "5", "annotators_per_block": "3",
         "method": DEFAULT_METHOD, "tests": PAPER_TESTS}},
    {"name": "crossed3", "label": "Crossed 3", "title": "Figure 4's left end: 3 annotators all judging "
     "the same 100 documents (fully crossed), effect zero: the unaggregated t-test is liberal", "values": {
         "effect": "zero", "kind": "block", "blocks": "1", "docs_per_block": "100", "annotators_per_block": "3",
         "method": DEFAULT_METHOD, "tests": PAPER_TESTS}},
    {"name": "crossed3_power", "label": "Crossed 3: power", "title": "The same fully crossed design with the fitted "
     "effect: compare each test's power with its type I error beside it", "values": {
         "effect": "fitted", "kind": "block", "blocks": "1", "docs_per_block": "100", "annotators_per_block": "3",
         "method": DEFAULT_METHOD, "tests": PAPER_TESTS}},
    {"name": "nested20", "label": "Nested 20: power", "title": "Figure 7's nested design: 20 annotators, each "
     "judging their own 5 documents (100 documents, one judgement per output), fitted effect: power", "values": {
         "effect": "fitted", "kind": "block", "blocks": "20", "docs_per_block": "5", "annotators_per_block": "1",
         "method": DEFAULT_METHOD, "tests": ["ttest_doc", "art_doc", "art_block"]}},
    {"name": RANK.name, "label": "Rank: power", "title": "The paper's design judged by ranking the 5 outputs "
     "instead of Likert scores, fitted effect: power", "values": {
         "effect": "fitted", "kind": "block", "blocks": "20", "docs_per_block": "5", "annotators_per_block": "3",
         "method": RANK.name, "tests": ["ttest", "ttest_doc", "art_doc"]}},
    {"name": "crowd", "label": "Crowd pool", "title": "A crowd pool: 100 documents, 30 workers, 3 judgements per "
     "output, drawn anew in every trial, effect zero: type I error", "values": {
         "effect": "zero", "kind": "pool", "docs": "100", "annotators": "30", "judgements_per_output": "3",
         "method": DEFAULT_METHOD, "tests": PAPER_TESTS}},
]


def design_controls() -> dict:
    """Design kind -> its fields and default values (a kind without defaults starts empty). A kind made for the
    methods whose judgement covers a pair (battles) also names the method and the tests it starts with."""
    controls = {}
    for kind, cls in DESIGN_KINDS.items():
        spec = {"label": cls.kind_label, "fields": list(cls.fields),
                "defaults": {f: str(DEFAULT_DESIGNS.get(kind, {}).get(f, "")) for f in cls.fields}}
        covering = [m for m in all_methods() if m.covers == getattr(cls, "only_covering", None)]
        if covering:
            tests = sorted(name for name, info in ANALYSES.items() if covering[0].accepts(info) and not info.needs
                           and (cls.has_blocks or not info.needs_blocks))
            spec["defaults"] = {**spec["defaults"], "method": covering[0].name, "tests": tests}
        controls[kind] = spec
    return controls


def with_assumed_preferences(model, method_name: str):
    """A preset or model file as a config's model: with a method whose judgement covers a pair, the model with its
    pairwise values all assumed (``preferences: {}``; simdesign/methods/pairwise.py says what they are)."""
    if not isinstance(model, str) or get_method(method_name).covers != "pair":
        return model
    return {"preset" if model in PRESETS else "file": model, "preferences": {}}


def test_controls() -> list[dict]:
    """Every registered analysis, with whether it is a classical test (fast) and what it needs."""
    return [{"name": name, "classical": name in CLASSICAL_TESTS, "needs": info.needs or "",
             "needs_blocks": info.needs_blocks, "description": info.description, "methods": list(info.methods)}
            for name, info in sorted(ANALYSES.items())]


def options(models: dict | None = None) -> dict:
    """What the page's controls offer (sent to the browser once); ``models``: the server's model files by name."""
    return {"presets": [*PRESETS, *(models or {})], "designs": design_controls(), "tests": test_controls(),
            "effects": list(EFFECT_CHOICES), "defaults": DEFAULTS, "scenarios": SCENARIOS,
            "ceilings": {**CEILINGS, "judgements_per_trial": MAX_JUDGEMENTS_PER_TRIAL,
                         "judgements_in_all": MAX_JUDGEMENTS_IN_ALL},
            "methods": [{"name": method.name, "label": method.label} for method in all_methods()]}


def yaml_value(text):
    """A form value as a config file would read it ('3' -> 3, '-1' -> -1, 'abc' -> 'abc', '' -> None)."""
    if text is None:
        return None
    if not isinstance(text, str):
        return text
    if not text.strip():
        return None
    try:
        return load_yaml(text)
    except (yaml.YAMLError, ValueError):  # ValueError: an integer of more digits than Python converts
        return text  # not YAML: the field's own rule then names it as the string it is


@dataclass
class Checked:
    """The outcome of checking the controls.

    Attributes
    ----------
    config : SimulationConfig or None
        None when some control is bad.
    cost : CostModel or None
    errors : dict
        Control name -> messages ('' for messages that name no control).
    mapping : dict
        The config mapping built from the controls (as a YAML config would hold it).
    methods : list of str or None
        The annotation methods the chosen model generates (None when it cannot be loaded).
    warnings : list of str
        What 'simdesign run' warns about before running this config.
    """

    config: object = None
    cost: object = None
    errors: dict = field(default_factory=dict)
    mapping: dict = field(default_factory=dict)
    methods: list | None = None
    warnings: list = field(default_factory=list)

    def add(self, messages) -> None:
        for message in messages:
            self.errors.setdefault(control_of(message), []).append(message)


def config_mapping(form: dict, models: dict | None = None) -> dict:
    """The config mapping the controls describe (not checked; the model named by a preset's name or the name of
    one of ``models``, the server's model files: any other model text is left as typed, for the caller to refuse)."""
    kind = form.get("kind") or DEFAULTS["kind"]
    fields = DESIGN_KINDS[kind].fields if kind in DESIGN_KINDS else ()
    design = {"kind": kind, **{name: yaml_value(form.get(name)) for name in fields}}
    effect = form.get("effect", DEFAULTS["effect"])
    tests = form.get("tests", DEFAULTS["tests"])
    if isinstance(tests, str):
        tests = [t for t in tests.split(",") if t]
    mapping = {
        "name": "explore", "model": _model_for(form, models or {}),
        # a method name is a word, never a number or a list: passed as typed, its rule names a bad one
        "method": form.get("method", DEFAULTS["method"]),
        "effect": yaml_value(form.get("effect_scale")) if effect == "scale" else effect,
        "designs": [design], "tests": list(tests),
        "trials": yaml_value(form.get("trials", DEFAULTS["trials"])),
        "seed": yaml_value(form.get("seed", DEFAULTS["seed"])),
        "alpha": yaml_value(form.get("alpha", DEFAULTS["alpha"])),
    }
    return mapping


def _model_for(form: dict, models: dict):
    """The config's model: the control's model, with assumed pairwise values for a pair-covering method."""
    model = model_value(form.get("model", DEFAULTS["model"]), models)
    method = form.get("method", DEFAULTS["method"])
    return with_assumed_preferences(model, method) if method in method_names() else model


def model_value(text, models: dict):
    """The 'model' control's value in a config mapping: a preset's name, a server model's path, None when empty."""
    if not isinstance(text, str) or not text.strip():
        return text or None
    return model_choice(text.strip(), models) or text


def registered_only(form: dict, models: dict) -> tuple[dict, list[str]]:
    """The form with every unregistered name replaced by the default (so that the other controls are still checked
    and nothing a client names is opened or imported), and the messages naming them."""
    problems = name_problems(form, models)
    if not problems:
        return form, []
    safe = dict(form)
    if any(p.startswith("The 'model'") for p in problems):
        safe["model"] = DEFAULTS["model"]
    if any(p.startswith("The 'method'") for p in problems):
        safe["method"] = DEFAULTS["method"]
    tests = form.get("tests")
    names = [t for t in tests.split(",") if t] if isinstance(tests, str) else list(tests or [])
    # none left: the defaults stand in, so that the tests' one message is the one naming the unknown names
    safe["tests"] = [name for name in names if name in ANALYSES] or DEFAULTS["tests"]
    return safe, problems


def check_controls(form: dict, models: dict | None = None) -> Checked:
    """Check the controls: a config and a cost model, or the messages per control.

    Parameters
    ----------
    form : dict
        Control name -> the text in it (``tests``: a list of names or comma-separated). Its JSON types are
        :func:`simdesign.explore.fields.request_problems`' to check (the server answers a wrong one with 400).
    models : dict, optional
        Name -> model file the server offers beside the presets (``simdesign explore --model``); no other file
        is opened, and only registered methods and tests are taken.

    Returns
    -------
    Checked
    """
    from simdesign.planning.planner import parse_cost, preset_of
    from simdesign.studies.rates.config import config_warnings, parse_config
    from simdesign.studies.rates.engine import check_backends

    too_long = long_values(form)
    if too_long:  # refused before reading them as YAML (a number of a million digits costs seconds to read)
        checked = Checked()
        checked.add(too_long)
        return checked
    models = models or {}
    form, unregistered = registered_only(form, models)
    checked = Checked(mapping=config_mapping(form, models))
    checked.add(unregistered)
    try:
        checked.config = parse_config(checked.mapping)
    except ConfigError as exc:
        # A design beyond a run's own size ceilings is beyond the server's lower ones too: say so in the
        # server's words, at the control to lower, rather than in the run's (which name no control).
        early = early_ceiling_problems(checked.mapping)
        if early:
            checked.add(early)
            return checked
        checked.add(exc.messages)
    if checked.config is not None:
        checked.add(ceiling_problems(checked.config))
    if form.get("effect", DEFAULTS["effect"]) not in EFFECT_CHOICES:
        checked.add([f"The 'effect' control must be one of {list(EFFECT_CHOICES)}; got {form.get('effect')!r}"])
    cost_errors: list[str] = []
    cost_raw = cost_values(form, cost_errors)
    source = checked.config.model_source if checked.config else checked.mapping["model"]
    model_source = source if isinstance(source, str) and source else preset_of(checked.mapping["model"]) or str(source)
    # the paper's times per judged output differ between Likert and Rank: 'auto' takes the chosen method's
    method = checked.config.methods[0] if checked.config else DEFAULTS["method"]
    cost = parse_cost({"cost": {k: v for k, v in cost_raw.items() if v is not None}}, model_source, None,
                      cost_errors, method)
    checked.add(cost_errors)
    checked.cost = None if cost_errors else cost
    checked.methods = None if "model" in checked.errors else model_methods(checked)
    if checked.config is not None:
        checked.warnings = config_warnings(checked.config)
        try:  # a test that needs R on a machine without it: the message 'simdesign run' stops with
            check_backends(checked.config)
        except MissingBackendError as exc:
            checked.errors.setdefault("tests", []).extend(str(exc).splitlines())
    if checked.errors:
        checked.config = None
    return checked


def cost_values(form: dict, errors: list[str]) -> dict:
    """The cost controls as a config's 'cost' mapping would hold them. A mapping or list is refused: a config's
    'seconds_per_judgement' may name a times table, a file the server must not open for a client."""
    values = {}
    for name in COST_CONTROLS:
        value = yaml_value(form.get(name, DEFAULTS[name]))
        if isinstance(value, (dict, list)):
            errors.append(f"The 'cost.{name}' control takes one number (or, for seconds_per_judgement, a word such "
                          f"as auto or a paper task); got {form.get(name)!r}")
            value = None
        values[name] = value
    values["currency"] = str(form.get("currency", DEFAULTS["currency"]))
    return values


def long_values(form: dict) -> list[str]:
    """Messages for control values longer than any control needs (:data:`MAX_CONTROL_CHARS`)."""
    values = [(name, value) for name, value in form.items() if name != "tests"]
    values += [("tests", name) for name in (form.get("tests") or []) if isinstance(form.get("tests"), list)]
    return [f"The '{name}' field holds {len(str(value)):,} characters; the explorer takes at most "
            f"{MAX_CONTROL_CHARS}" for name, value in values if len(str(value)) > MAX_CONTROL_CHARS]


def early_ceiling_problems(mapping: dict) -> list[str]:
    """:func:`design_ceiling_problems` of the controls' design, when it and the model can be read at all."""
    from simdesign.model import load_model
    from simdesign.studies.rates.config import parse_designs

    errors: list[str] = []
    designs = parse_designs(mapping["designs"], errors)
    if errors or not designs:
        return []  # the config's own rules name these
    try:
        model = load_model(mapping["model"])
    except Exception:  # noqa: BLE001 - a bad model is the config's to report
        return []
    return design_ceiling_problems(designs, model.n_systems)


def design_ceiling_problems(designs, n_systems: int) -> list[str]:
    """The design part of :func:`ceiling_problems`, checked before the config is (sizes only: nothing is built),
    so that an oversized design is named at its control by the server's own ceilings."""
    design = designs[0]
    fields = sorted(DESIGN_KINDS[design.kind].fields, key=lambda name: -getattr(design, name))
    named = " x ".join(f"'{name}'" for name in fields)
    advice = "; 'simdesign run' takes larger studies"
    problems = []
    if len(designs) > 1:
        problems.append(f"The explorer shows one design at a time; the fields {named} describe "
                        f"{len(designs)} (give one number in each)")
    sizes = [(getattr(design, "blocks", None), CEILINGS["blocks"], "blocks"),
             (design.docs, CEILINGS["docs"], "documents"), (design.annotators, CEILINGS["annotators"], "annotators"),
             (design.judgements(n_systems), MAX_JUDGEMENTS_PER_TRIAL, "judgements per trial")]
    over = [(value, ceiling, what) for value, ceiling, what in sizes if value is not None and value > ceiling]
    if over:
        problems.append(f"The design has {_and(f'{_count(value)} {what}' for value, _, what in over)} (from {named}, "
                        f"{n_systems} systems); the explorer's server takes at most "
                        f"{_and(f'{ceiling:,} {what}' for _, ceiling, what in over)}{advice}")
    return problems


def ceiling_problems(config) -> list[str]:
    """Messages for a study larger than the server takes (:data:`CEILINGS`), each naming the field to lower.

    Only sizes are read (the design's counts are arithmetic): nothing of the study's size is built. A size
    made of several fields names them largest first, so the largest is marked on the page.
    """
    problems = design_ceiling_problems(config.designs, config.model.n_systems)
    design = config.designs[0]
    advice = "; 'simdesign run' takes larger studies"
    judgements = design.judgements(config.model.n_systems)
    if config.trials > CEILINGS["trials"]:
        problems.append(f"The 'trials' field is {_count(config.trials)}; the explorer's server takes at most "
                        f"{CEILINGS['trials']:,}{advice}")
    runs = 1 if config.is_null else 2  # a power run computes its type I error beside it
    work = config.trials * judgements * runs
    if not problems and work > MAX_JUDGEMENTS_IN_ALL:
        problems.append(f"The 'trials' field asks for {work:,} judgements in all ({config.trials:,} trials x "
                        f"{judgements:,} judgements" + (" x 2 for the type I error beside power" if runs == 2 else "")
                        + f"); the explorer's server takes at most {MAX_JUDGEMENTS_IN_ALL:,}: fewer trials or a "
                          f"smaller design{advice}")
    return problems


def _count(value: int) -> str:
    """A count for a message: with thousands separators, or in powers of ten when it is astronomical."""
    return f"{value:,}" if value < 10**15 else f"about 10^{len(str(value)) - 1}"  # (a float may overflow)


def _and(items) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def model_methods(checked: Checked) -> list | None:
    """The annotation methods the form's model generates (what the method control offers)."""
    from simdesign.studies.rates.config import resolve_model

    if checked.config is not None:
        model = checked.config.model
    else:
        model, _ = resolve_model({"model": checked.mapping.get("model")}, None, [])  # its errors are reported already
    if model is None or not hasattr(model, "methods"):
        return None
    # a Likert model generates pairwise judgements with assumed values (with_assumed_preferences): offered too
    extra = [m.name for m in all_methods() if m.covers == "pair" and getattr(model, "thresholds", None) is not None]
    return list(dict.fromkeys([*model.methods, *extra]))


# A message names its control by the field it quotes; the longest names first ('docs_per_block' before 'docs').
_FIELD_PATTERN = re.compile(r"'(?:designs\[\d+\]\.)?(cost\.)?([a-z_]+)(?:\.[a-z_]+)?'")


def control_of(message: str) -> str:
    """The control a config message is about ('' when it names none of the page's controls)."""
    design_fields = {f for cls in DESIGN_KINDS.values() for f in cls.fields}
    if "block-level test" in message or message.startswith("The test ") or re.match(r"The 'tests\[", message) \
            or "'tests'" in message:
        return "tests"
    for match in _FIELD_PATTERN.finditer(message):
        name = match.group(2)
        if match.group(1) and name in COST_CONTROLS:
            return name
        if name in design_fields or name in ("kind", "trials", "seed", "alpha", "model", "method"):
            return name
        if name == "effect":
            return "effect_scale"
    if "design" in message and ("designs[" in message or "pool design" in message):
        return "kind"
    if "model" in message.lower():
        return "model"
    return ""


def totals(config, cost) -> dict:
    """Judgements, annotators, documents, hours and cost of the config's design (the planner's cost model)."""
    design = config.designs[0]
    n_systems = config.model.n_systems
    out = {"design": design.label, "description": design.describe(),
           "method": ", ".join(get_method(m).label for m in config.methods), "documents": design.docs,
           "annotators": design.annotators, "judgements_per_output": design.judgements_per_output,
           "judgements": design.judgements(n_systems), "systems": n_systems,
           "max_judgements_per_annotator": design.max_judgements_per_annotator(n_systems)}
    if cost is not None:
        breakdown = cost.breakdown(design, n_systems)
        out.update({key: round(value, 2) for key, value in breakdown.items()}, currency=cost.currency,
                   seconds_per_judgement=round(cost.seconds_per_judgement, 2), seconds_source=cost.seconds_source)
    return out

