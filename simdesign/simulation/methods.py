"""The annotation method as a dimension of a simulation: Likert scores or rankings (issue 13).

A config asks for ``method: likert | rank`` (default likert) or ``methods: [likert, rank]``.
Every test and reliability estimand is then run once per method, on studies generated
with that method (:meth:`simdesign.model.OrdinalMixedModel.sample`). What this module
keeps in one place:

* **result labels**: the store, the random streams and the trial rows know a (test,
  method) by its *result label*, the test's label for Likert (so Likert results of
  existing configs keep their keys and values) and ``<label>@rank`` for ranks;
* **checks** before anything runs: the method names, the model's ability to generate
  them, and every test's :attr:`~simdesign.analyses.AnalysisInfo.methods`;
* **measured miscalibration** on ranks, warned about before a run
  (:data:`RANK_CALIBRATION`).
"""
from __future__ import annotations

from dataclasses import dataclass

from simdesign.analyses import resolve_analysis
from simdesign.core.suggest import suggestions
from simdesign.model import METHODS

DEFAULT_METHODS = ("likert",)
METHOD_SEPARATOR = "@"
METHOD_COLUMN = "method"


def result_label(label: str, method: str) -> str:
    """The label a (test or estimand, method) has in the store and the trial rows.

    Examples
    --------
    >>> result_label("ttest_doc", "likert"), result_label("ttest_doc", "rank")
    ('ttest_doc', 'ttest_doc@rank')
    """
    return label if method == "likert" else f"{label}{METHOD_SEPARATOR}{method}"


def split_result_label(label: str) -> tuple[str, str]:
    """(test label, method) of a result label; the inverse of :func:`result_label`."""
    base, separator, method = label.rpartition(METHOD_SEPARATOR)
    if separator and method in METHODS and method != "likert":
        return base, method
    return label, "likert"


@dataclass(frozen=True)
class MethodSpec:
    """One requested analysis (or reliability estimand) on one annotation method: a unit of work.

    It reads like the :class:`~simdesign.simulation.config.AnalysisSpec` it wraps (``name``,
    ``label``, ``options``), with ``label`` the result label, so the engine and the store
    handle both alike.
    """

    spec: object
    method: str = "likert"

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def options(self) -> dict:
        return self.spec.options

    @property
    def test_label(self) -> str:
        return self.spec.label

    @property
    def label(self) -> str:
        return result_label(self.spec.label, self.method)


def method_specs(specs, methods) -> tuple:
    """Every spec on every method, methods outermost; Likert specs are the specs themselves."""
    return tuple(spec if method == "likert" else MethodSpec(spec, method) for method in methods for spec in specs)


def spec_method(spec) -> str:
    """The method of a work item (a plain AnalysisSpec is Likert, as before methods existed)."""
    return getattr(spec, "method", "likert")


def parse_methods(raw: dict, errors: list[str]) -> tuple:
    """The 'method' or 'methods' field of a config mapping (names are checked by :func:`method_problems`)."""
    if "method" in raw and "methods" in raw:
        errors.append("Give either 'method' (one of likert, rank) or 'methods' (a list of them), not both")
        return DEFAULT_METHODS
    if "method" in raw:
        value = raw["method"]
        if not isinstance(value, str):
            errors.append(f"The 'method' field must be one of {list(METHODS)}; got {value!r} "
                          "(use 'methods' for a list)")
            return DEFAULT_METHODS
        return (value,)
    if "methods" in raw:
        value = raw["methods"]
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, (list, tuple)) or not value or not all(isinstance(v, str) for v in value):
            errors.append(f"The 'methods' field must be a non-empty list of {list(METHODS)}; got {value!r}")
            return DEFAULT_METHODS
        return tuple(value)
    return DEFAULT_METHODS


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
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        return [f"The '{field_name}' field must name methods from {list(METHODS)}; got {list(unknown)!r}"
                f"{suggestions(unknown, METHODS)}"]
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
        refused = [m for m in methods if m not in info.methods]
        if refused:
            problems.append(f"The test {spec.label} cannot take {' or '.join(refused)} judgements (it accepts "
                            f"{', '.join(info.methods)}); remove it or set '{field_name}' to {list(info.methods)}")
    return problems


def _model_cannot(model, missing: list[str], field_name: str) -> str:
    if "rank" in missing:
        how = ("a Likert model generates ranks only with a 'rank_noise' (in its file, or "
               "model: {preset: NAME, rank_noise: VALUE}) or a rank model fitted to rankings "
               "(model: {preset: NAME, rank_model: NAME or FILE})")
    else:
        how = "a rank-only model (kind: rank_only) generates rankings only: set 'method: rank'"
    return (f"The '{field_name}' field asks for {' and '.join(missing)} judgements, which the model "
            f"{model.name!r} cannot generate (it generates {', '.join(model.methods)}): {how}")


def likert_model_digest_source(model) -> dict:
    """The part of a model that Likert trials depend on: its file form without ``rank_noise``.

    Stored Likert trials stay reusable when a model gains (or changes) its ``rank_noise``;
    rank trials carry the rank generator in their own fingerprints (:func:`rank_generator`).
    """
    mapping = dict(model.to_dict())
    mapping.pop("rank_noise", None)
    mapping.pop("rank_model", None)  # a separately fitted rank model (simdesign.model.method_pair)
    return mapping


def rank_generator(model) -> dict:
    """What rank trials depend on beyond the Likert part of a joint model (empty for a rank-only model)."""
    rank_model = getattr(model, "rank_model", None)
    if rank_model is not None:
        return {"rank_model": rank_model.to_dict()}
    noise = getattr(model, "rank_noise", None)
    return {} if noise is None else {"rank_noise": float(noise)}


# Tests measured to be miscalibrated on rankings (issue 13): test name -> (applies(design, n_systems), warning).
# With one document per annotator the mixed model's annotator slopes can reproduce every ranking of that
# one document. Measured as README "Rank studies" says (coherence, rank_noise 1.0,
# 40 documents x 3 annotators, each annotator ranks one document, effect zero, 50 trials, seed 13).
RANK_CALIBRATION = {
    "clmm_native": (
        lambda design, n_systems: design.max_judgements_per_annotator(n_systems) == n_systems,
        "each annotator ranks one document, so the mixed model's annotator slopes can reproduce every ranking; "
        "measured on ranks there (coherence, rank_noise 1.0, 40 documents x 3 annotators, 50 trials): type I "
        "error 0.22 [0.15, 0.31] with failed fits counted as non-rejections, and 60% of fits failing (not "
        "converged), against 0.064 [0.041, 0.099] and no failures on Likert scores (README, 'Rank studies'). "
        "Use a per-document or per-block test, or let each annotator rank several documents"),
}


def method_warnings(config) -> list[str]:
    """Warnings before a run: tests known to be miscalibrated on rankings for some of the config's designs."""
    if "rank" not in config.methods:
        return []
    found = []
    for spec in config.analyses:
        entry = RANK_CALIBRATION.get(spec.name)
        if entry is None:
            continue
        applies, text = entry
        designs = [d.label for d in config.designs if applies(d, config.model.n_systems)]
        if designs:
            found.append(f"The test {spec.label} on ranks is not calibrated for the design(s) {designs}: {text}")
    return found

