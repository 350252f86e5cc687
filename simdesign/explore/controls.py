"""The explorer's controls: form values in, a checked config, totals and messages per control out.

Every value is read as YAML, exactly as it would be in a config file, and the config is checked by
:func:`simdesign.simulation.config.parse_config` and the planner's cost rules
(:func:`simdesign.planning.planner.parse_cost`): a bad value gets the message ``simdesign run`` (or
``simdesign plan``) gives for the same value in a file, shown next to the control whose field it names.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import yaml

from simdesign.analyses import ANALYSES
from simdesign.analyses.classical import CLASSICAL_TESTS
from simdesign.core.designs import DESIGN_KINDS
from simdesign.core.errors import ConfigError, MissingBackendError
from simdesign.core.yamlio import load_yaml
from simdesign.model import METHODS, PRESETS

# What the page starts with: the paper's design (Steen & Markert, 2021) under the null, the tests of its Figure 4.
DEFAULT_DESIGNS = {"block": {"blocks": 20, "docs_per_block": 5, "annotators_per_block": 3},
                   "pool": {"docs": 100, "annotators": 30, "judgements_per_output": 3}}
DEFAULTS = {"model": "coherence", "method": "likert", "effect": "zero", "effect_scale": "1.0", "kind": "block",
            "tests": ["ttest", "ttest_doc", "art_doc"], "trials": "1000", "seed": "2021", "alpha": "0.05",
            "pay_per_hour": "12", "seconds_per_judgement": "auto", "per_annotator": "0", "currency": "EUR"}
EFFECT_CHOICES = ("zero", "fitted", "scale")
COST_CONTROLS = ("pay_per_hour", "seconds_per_judgement", "per_annotator")
METHOD_LABELS = {"likert": "Likert", "rank": "Rank"}


def design_controls() -> dict:
    """Design kind -> its fields and default values (a kind without defaults starts empty)."""
    return {kind: {"label": cls.kind_label, "fields": list(cls.fields),
                   "defaults": {f: str(DEFAULT_DESIGNS.get(kind, {}).get(f, "")) for f in cls.fields}}
            for kind, cls in DESIGN_KINDS.items()}


def test_controls() -> list[dict]:
    """Every registered analysis, with whether it is a classical test (fast) and what it needs."""
    return [{"name": name, "classical": name in CLASSICAL_TESTS, "needs": info.needs or "",
             "needs_blocks": info.needs_blocks, "description": info.description, "methods": list(info.methods)}
            for name, info in sorted(ANALYSES.items())]


def options() -> dict:
    """What the page's controls offer (sent to the browser once)."""
    return {"presets": list(PRESETS), "designs": design_controls(), "tests": test_controls(),
            "effects": list(EFFECT_CHOICES), "defaults": DEFAULTS,
            "methods": [{"name": name, "label": METHOD_LABELS.get(name, name)} for name in METHODS]}


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
    except yaml.YAMLError:
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


def config_mapping(form: dict) -> dict:
    """The config mapping the controls describe (not checked)."""
    kind = form.get("kind") or DEFAULTS["kind"]
    fields = DESIGN_KINDS[kind].fields if kind in DESIGN_KINDS else ()
    design = {"kind": kind, **{name: yaml_value(form.get(name)) for name in fields}}
    effect = form.get("effect", DEFAULTS["effect"])
    tests = form.get("tests", DEFAULTS["tests"])
    if isinstance(tests, str):
        tests = [t for t in tests.split(",") if t]
    mapping = {
        "name": "explore", "model": yaml_value(form.get("model", DEFAULTS["model"])),
        # a method name is a word, never a number or a list: passed as typed, its rule names a bad one
        "method": form.get("method", DEFAULTS["method"]),
        "effect": yaml_value(form.get("effect_scale")) if effect == "scale" else effect,
        "designs": [design], "tests": list(tests),
        "trials": yaml_value(form.get("trials", DEFAULTS["trials"])),
        "seed": yaml_value(form.get("seed", DEFAULTS["seed"])),
        "alpha": yaml_value(form.get("alpha", DEFAULTS["alpha"])),
    }
    return mapping


def check_controls(form: dict) -> Checked:
    """Check the controls: a config and a cost model, or the messages per control.

    Parameters
    ----------
    form : dict
        Control name -> the text in it (``tests``: a list of names or comma-separated).

    Returns
    -------
    Checked
    """
    from simdesign.planning.planner import parse_cost
    from simdesign.simulation.config import config_warnings, parse_config
    from simdesign.simulation.engine import check_backends

    checked = Checked(mapping=config_mapping(form))
    try:
        checked.config = parse_config(checked.mapping)
    except ConfigError as exc:
        checked.add(exc.messages)
    if form.get("effect", DEFAULTS["effect"]) not in EFFECT_CHOICES:
        checked.add([f"The 'effect' control must be one of {list(EFFECT_CHOICES)}; got {form.get('effect')!r}"])
    cost_errors: list[str] = []
    cost_raw = {"pay_per_hour": yaml_value(form.get("pay_per_hour", DEFAULTS["pay_per_hour"])),
                "seconds_per_judgement": yaml_value(form.get("seconds_per_judgement",
                                                             DEFAULTS["seconds_per_judgement"])),
                "per_annotator": yaml_value(form.get("per_annotator", DEFAULTS["per_annotator"])),
                "currency": str(form.get("currency", DEFAULTS["currency"]))}
    model_source = checked.config.model_source if checked.config else str(checked.mapping["model"])
    # the paper's times per judged output differ between Likert and Rank: 'auto' takes the chosen method's
    method = checked.config.methods[0] if checked.config else DEFAULTS["method"]
    cost = parse_cost({"cost": {k: v for k, v in cost_raw.items() if v is not None}}, model_source, None,
                      cost_errors, method)
    checked.add(cost_errors)
    checked.cost = None if cost_errors else cost
    checked.methods = model_methods(checked)
    if checked.config is not None:
        checked.warnings = config_warnings(checked.config)
        try:  # a test that needs R on a machine without it: the message 'simdesign run' stops with
            check_backends(checked.config)
        except MissingBackendError as exc:
            checked.errors.setdefault("tests", []).extend(str(exc).splitlines())
    if checked.errors:
        checked.config = None
    return checked


def model_methods(checked: Checked) -> list | None:
    """The annotation methods the form's model generates (what the method control offers)."""
    from simdesign.simulation.config import resolve_model

    if checked.config is not None:
        return list(checked.config.model.methods)
    model, _ = resolve_model({"model": checked.mapping.get("model")}, None, [])  # its errors are reported already
    return list(model.methods) if model is not None and hasattr(model, "methods") else None


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
           "method": ", ".join(METHOD_LABELS.get(m, m) for m in config.methods), "documents": design.docs,
           "annotators": design.annotators, "judgements_per_output": design.judgements_per_output,
           "judgements": design.judgements(n_systems), "systems": n_systems,
           "max_judgements_per_annotator": design.max_judgements_per_annotator(n_systems)}
    if cost is not None:
        breakdown = cost.breakdown(design, n_systems)
        out.update({key: round(value, 2) for key, value in breakdown.items()}, currency=cost.currency,
                   seconds_per_judgement=round(cost.seconds_per_judgement, 2), seconds_source=cost.seconds_source)
    return out

