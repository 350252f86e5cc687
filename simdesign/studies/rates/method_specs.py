"""The annotation method as a dimension of a simulation (issue 13; the methods themselves: :mod:`simdesign.methods`).

A config asks for ``method: NAME`` (default: the default method, Likert) or ``methods: [NAME, ...]``.
Every test and reliability estimand is then run once per method, on studies generated
with that method (:meth:`simdesign.model.OrdinalMixedModel.sample`). What this module
keeps in one place, asking each method object for what differs:

* **result labels**: the store, the random streams and the trial rows know a (test,
  method) by its *result label*, the test's label plus the method's ``result_suffix``
  (none for the default method, so results of existing configs keep their keys and values);
* **checks** before anything runs: the method names, the model's ability to generate
  them, and whether every test accepts them (:meth:`~simdesign.methods.AnnotationMethod.accepts`);
* **warnings** of tests measured to be miscalibrated on a method, before a run.
"""
from __future__ import annotations

from dataclasses import dataclass

from simdesign.significance import resolve_analysis
from simdesign.core.errors import ConfigError
from simdesign.core.suggest import suggestions
from simdesign.methods import all_methods, default_method, get_method, method_names
from simdesign.methods import split_result_label  # noqa: F401 -- public here since issue 13

DEFAULT_METHODS = (default_method().name,)
METHOD_SEPARATOR = "@"
METHOD_COLUMN = "method"


def result_label(label: str, method: str) -> str:
    """The label a (test or estimand, method) has in the store and the trial rows (the method's suffix).

    Examples
    --------
    >>> result_label("ttest_doc", "likert"), result_label("ttest_doc", "rank")
    ('ttest_doc', 'ttest_doc@rank')
    """
    return get_method(method).result_label(label)


class WrappedSpec:
    """A unit of work that runs another spec's analysis under one more setting (an annotation method, a
    criterion): its ``name``, ``options`` and ``test_label`` are the wrapped spec's; a subclass gives ``label``."""

    spec: object

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def options(self) -> dict:
        return self.spec.options

    @property
    def test_label(self) -> str:
        return self.spec.label


@dataclass(frozen=True)
class MethodSpec(WrappedSpec):
    """One requested analysis (or reliability estimand) on one annotation method: a unit of work.

    It reads like the :class:`~simdesign.studies.rates.config.AnalysisSpec` it wraps (``name``,
    ``label``, ``options``), with ``label`` the result label, so the engine and the store
    handle both alike.
    """

    spec: object
    method: str = DEFAULT_METHODS[0]
    result_suffix: str | None = None
    """The method's label suffix, kept with the item (a worker's registry may lack a method registered by
    user code); None: looked up by the method's name."""

    @property
    def label(self) -> str:
        if self.result_suffix is None:
            return result_label(self.spec.label, self.method)
        return f"{self.spec.label}{self.result_suffix}"


def method_specs(specs, methods) -> tuple:
    """Every spec on every method, methods outermost; the default method's specs are the specs themselves."""
    methods = [get_method(method) for method in methods]
    return tuple(spec if method.is_default else MethodSpec(spec, method.name, method.result_suffix)
                 for method in methods for spec in specs)


def spec_method(spec) -> str:
    """The method of a work item (a plain AnalysisSpec is on the default method, as before methods existed)."""
    return getattr(spec, "method", DEFAULT_METHODS[0])


def parse_methods(raw: dict, errors: list[str]) -> tuple:
    """The 'method' or 'methods' field of a config mapping (names are checked by :func:`method_problems`)."""
    if "method" in raw and "methods" in raw:
        errors.append(f"Give either 'method' (one of {', '.join(method_names())}) or 'methods' (a list of them), "
                      "not both")
        return DEFAULT_METHODS
    if "method" in raw:
        value = raw["method"]
        if not isinstance(value, str):
            errors.append(f"The 'method' field must be one of {list(method_names())}; got {value!r} "
                          "(use 'methods' for a list)")
            return DEFAULT_METHODS
        return imported_method_names((value,), "method", errors)
    if "methods" in raw:
        value = raw["methods"]
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, (list, tuple)) or not value or not all(isinstance(v, str) for v in value):
            errors.append(f"The 'methods' field must be a non-empty list of {list(method_names())}; got {value!r}")
            return DEFAULT_METHODS
        return imported_method_names(tuple(value), "methods", errors)
    return DEFAULT_METHODS


def imported_method_names(methods: tuple, field: str, errors: list[str]) -> tuple:
    """``methods`` with each ``module:attribute`` imported, registered and replaced by the method's name."""
    found = []
    for method in methods:
        if ":" in method:
            try:
                method = get_method(method, field).name
            except ConfigError as exc:
                errors.extend(exc.messages)
                continue
        found.append(method)
    return tuple(found) or DEFAULT_METHODS


def method_problems(methods, model, analyses) -> list[str]:
    """Refusals before simulating: unknown methods, a model that cannot generate one, a test that cannot take one.

    Parameters
    ----------
    methods : sequence of str
    model : OrdinalMixedModel or RankOnlyModel or None
        None when the model itself could not be loaded (reported elsewhere).
    analyses : sequence of AnalysisSpec
    """
    methods = tuple(methods)
    field_name = "method" if len(methods) == 1 else "methods"
    unknown = [m for m in methods if m not in method_names()]
    if unknown:
        return [f"The '{field_name}' field must name methods from {list(method_names())}; got {list(unknown)!r}"
                f"{suggestions(unknown, method_names())}"]
    problems = []
    repeated = sorted({m for m in methods if methods.count(m) > 1})
    if repeated:
        problems.append(f"The 'methods' field lists {repeated} more than once")
    if model is not None:
        missing = [m for m in methods if m not in model.methods]
        if missing:
            problems.append(_model_cannot(model, missing, field_name))
    for spec in analyses:
        info = resolve_analysis(spec.name)
        refused = [m for m in methods if not get_method(m).accepts(info)]
        if refused:
            why = "; ".join(get_method(m).refusal(info) for m in refused)
            problems.append(f"The test {spec.label} cannot take {' or '.join(refused)} judgements ({why}; it accepts "
                            f"{', '.join(info.methods)}); remove it or set '{field_name}' to {list(info.methods)}")
    return problems


def design_method_problems(designs, methods) -> list[str]:
    """Designs made for some methods only (a battles design: pairwise preference) asked for by another."""
    problems = []
    for design in designs:
        covering = getattr(design, "only_covering", None)  # what a judgement must cover under this design
        if covering is None:
            continue
        fitting = [m.name for m in all_methods() if m.covers == covering]
        others = [m for m in methods if m not in fitting]
        if others:
            problems.append(f"The design {design.label} ({design.kind_label}) is for {' or '.join(fitting)} "
                            f"judgements only; the config's methods include {others}: set 'method' to one of "
                            f"{fitting}")
    return problems


def _model_cannot(model, missing: list[str], field_name: str) -> str:
    how = "; ".join(get_method(m).model_requirement for m in missing)
    generated = tuple(model.methods)
    if len(generated) == 1:
        how += f"; or set 'method: {generated[0]}'"
    return (f"The '{field_name}' field asks for {' and '.join(missing)} judgements, which the model "
            f"{model.name!r} cannot generate (it generates {', '.join(model.methods)}): {how}")


def shared_model_digest_source(model) -> dict:
    """The part of a model that every method's trials depend on: its file form without ``rank_noise``.

    Stored Likert trials stay reusable when a model gains (or changes) its ``rank_noise``;
    a method's trials carry what else they depend on in their own fingerprints
    (:meth:`simdesign.methods.AnnotationMethod.fingerprint`).
    """
    mapping = dict(model.to_dict())
    mapping.pop("rank_noise", None)
    mapping.pop("rank_model", None)  # a separately fitted rank model (simdesign.model.method_pair)
    mapping.pop("preferences", None)  # pairwise-preference parameters: that method's own fingerprint
    return mapping


likert_model_digest_source = shared_model_digest_source  # the name before issue 28


def method_warnings(config) -> list[str]:
    """Warnings before a run: tests known to be miscalibrated on one of the config's methods."""
    return [text for method in config.methods for text in get_method(method).warnings(config)]
