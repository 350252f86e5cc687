"""Several criteria per study: the same outputs judged on, e.g., coherence and repetition (issue 27 item 5).

A config may list ``criteria``: each is a name and, optionally, its own model (a preset, a model
file or an inline model, as the top-level ``model``; by default the top-level one)::

    model: coherence
    criteria:
      - coherence
      - {name: repetition, model: repetition}

Every test and reliability estimand then runs once per criterion, on a study generated with that
criterion's model. The criteria of one trial share the study's layout: the same annotators judge the
same existing outputs on every criterion (the assignment and the partial coverage are drawn once, from
the trial's data stream, :func:`simdesign.core.designs.draw_layout`); each criterion's random effects
and noise come from its own stream (:func:`simdesign.core.seeds.criterion_rng`), independent of the
other criteria's (correlations between criteria are not modelled). What this module keeps in one place:

* **result labels** ``<test label>#<criterion>``: the store, the streams of the tests and the trial rows
  know a (test, criterion) by it; rows and summaries carry a ``criterion`` column;
* **checks** before anything runs: names, models whose systems are the top-level model's (the same
  outputs), and what criteria do not combine with (ranks, replication).

A config without ``criteria`` is exactly what it was before (labels, streams, stored results).
"""
from __future__ import annotations

from dataclasses import dataclass

from simdesign.core.fields import field_problem
from simdesign.methods import default_method
from simdesign.studies.rates.method_specs import WrappedSpec

CRITERION_SEPARATOR = "#"
CRITERION_COLUMN = "criterion"


@dataclass(frozen=True, eq=False)
class Criterion:
    """One criterion of a study: its name, its model, and where the model came from ('' inline).

    Compared by name and model content (models hold arrays and compare by identity).
    """

    name: str
    model: object
    model_source: str = ""

    def __eq__(self, other) -> bool:
        if not isinstance(other, Criterion):
            return NotImplemented
        return (self.name, self.model_source, self.model.to_dict()) == \
            (other.name, other.model_source, other.model.to_dict())

    __hash__ = None


def criterion_label(label: str, criterion: str) -> str:
    """The result label of a (test or estimand, criterion).

    Examples
    --------
    >>> criterion_label("ttest_doc", "repetition")
    'ttest_doc#repetition'
    """
    return f"{label}{CRITERION_SEPARATOR}{criterion}"


def split_criterion_label(label: str) -> tuple[str, str | None]:
    """(test label, criterion) of a result label; the criterion is None for a label without one."""
    base, separator, criterion = label.rpartition(CRITERION_SEPARATOR)
    return (base, criterion) if separator else (label, None)


@dataclass(frozen=True)
class CriterionSpec(WrappedSpec):
    """One requested analysis (or reliability estimand) on one criterion: a unit of work.

    It reads like the :class:`~simdesign.studies.rates.config.AnalysisSpec` it wraps (``name``, ``label``,
    ``options``), with ``label`` the result label, so the engine and the store handle it alike; it
    carries the criterion's model, so a worker generates the criterion's study from the chunk alone.
    """

    spec: object
    criterion: str
    model: object

    @property
    def label(self) -> str:
        return criterion_label(self.spec.label, self.criterion)


def criterion_specs(specs, criteria) -> tuple:
    """Every spec on every criterion, criteria outermost (no criteria: the specs themselves)."""
    if not criteria:
        return tuple(specs)
    return tuple(CriterionSpec(spec, criterion.name, criterion.model) for criterion in criteria for spec in specs)


def spec_criterion(spec) -> str | None:
    """The criterion of a work item (None for a config without criteria; a replication item's own
    ``criterion`` is its repetition number, not one of these)."""
    return spec.criterion if isinstance(spec, CriterionSpec) else None


def parse_criteria(raw: dict, base_dir, resolve_model, errors: list[str]) -> tuple:
    """The 'criteria' field of a config mapping -> Criterion tuple (empty without the field).

    ``resolve_model(mapping, base_dir, errors) -> (model, source)`` reads a criterion's ``model`` as
    the top-level one is read (simulation/config.py).
    """
    items = raw.get("criteria")
    if items is None:
        return ()
    if isinstance(items, (str, dict)):
        items = [items]
    if not isinstance(items, list) or not items:
        errors.append("The 'criteria' field must be a non-empty list of criterion names or mappings "
                      "{name: ..., model: ...}; got " + repr(items))
        return ()
    top = raw.get("model")
    criteria = []
    for position, item in enumerate(items):
        where = f"criteria[{position}]"
        if isinstance(item, str):
            item = {"name": item}
        if not isinstance(item, dict) or "name" not in item:
            errors.append(f"The '{where}' entry must be a criterion name or a mapping with a 'name' (and "
                          f"optionally a 'model'); got {item!r}")
            continue
        unknown = sorted(set(item) - {"name", "model"})
        if unknown:
            errors.append(f"The '{where}' entry has unknown key(s) {unknown}; a criterion has 'name' and 'model'")
            continue
        found: list[str] = []
        model, source = resolve_model({"model": item.get("model", top)}, base_dir, found)
        errors.extend(f"{where}: {message}" for message in found)
        if model is not None:
            criteria.append(Criterion(str(item["name"]), model, source or ""))
    return tuple(criteria)


def criteria_to_mapping(criteria) -> list:
    """The criteria as a config writes them (a model as its source, or inline)."""
    return [{"name": c.name, "model": c.model_source if c.model_source else c.model.to_dict()} for c in criteria]


def criteria_problems(criteria, model, methods, replication, model_types) -> list[str]:
    """Refusals before simulating: bad or repeated names, a model without the study's systems or not a
    Likert model, and the settings criteria do not combine with."""
    if not criteria:
        return []
    problems = []
    names = [c.name for c in criteria]
    for name in dict.fromkeys(names):
        problem = field_problem("name", name)
        if problem or CRITERION_SEPARATOR in name or "@" in name:
            problems.append(f"The criterion name {name!r} must be a non-empty string without '/', "
                            f"'{CRITERION_SEPARATOR}' or '@' (it is part of result labels)")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        problems.append(f"The 'criteria' field lists {repeated} more than once")
    systems = tuple(getattr(model, "systems", ()))
    for criterion in criteria:
        generates_default = default_method().can_generate(criterion.model)
        if not isinstance(criterion.model, model_types) or not generates_default:
            problems.append(f"The criterion {criterion.name!r} needs a {default_method().label} model; got "
                            f"{criterion.model!r}")
        elif systems and tuple(criterion.model.systems) != systems:
            problems.append(f"The criterion {criterion.name!r}'s model has the systems "
                            f"{list(criterion.model.systems)}; every criterion judges the same outputs, so its "
                            f"model must have the systems of the config's model, in order: {list(systems)}")
    if tuple(methods) != (default_method().name,):
        problems.append(f"The 'criteria' field cannot be combined with 'methods' {list(methods)}: criteria are "
                        f"{default_method().label} judgements of the same outputs")
    if replication is not None:
        problems.append("The 'criteria' field cannot be combined with 'replication' (its estimands compare one "
                        "criterion's studies)")
    return problems
