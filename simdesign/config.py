"""Simulation configs: YAML in, validated frozen objects out.

Every problem found in a config is collected and raised together as one
:class:`~simdesign.errors.ConfigError`, each message naming the field and
what it allows. Nothing downstream re-validates.

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
import json
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from simdesign.analyses import ANALYSES
from simdesign.designs import DESIGN_KINDS, BlockDesign, PoolDesign
from simdesign.errors import ConfigError
from simdesign.model import OrdinalMixedModel, effect_scale, load_model
from simdesign.reliability import RELIABILITY_ESTIMANDS

TOP_LEVEL_KEYS = ("name", "model", "effect", "designs", "tests", "trials", "alpha", "seed", "art_resamples",
                  "art_exact", "chunk_size", "figure", "description", "estimands")
FIGURE_X = ("annotators", "judgements", "docs", "blocks", "annotators_per_block", "judgements_per_output")
FIGURE_COLOUR = ("test", "shape")
BLOCK_ONLY_X = ("blocks", "annotators_per_block")  # pool designs have no blocks: no value on these axes
# The summary's estimands for the tests, by hypothesis (simdesign.summary.summarise_group); a figure can draw
# only what the summary will hold, so 'figure.estimand' is checked against these before anything runs.
NULL_ESTIMANDS = ("type1", "familywise", "failure_rate", "singular_rate")
EFFECT_ESTIMANDS = ("power", "power_fitted", "type_s", "failure_rate", "singular_rate")
# Tests that fit one model per trial and so report a fit status: only they get a 'singular_rate' row.
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
    options: dict

    @property
    def fingerprint(self) -> str:
        """Hash of what determines this analysis's p-values (name and effective options)."""
        return stable_digest({"name": self.name, "options": self.options})


@dataclass(frozen=True)
class FigureSpec:
    x: str = "annotators"
    estimand: str | None = None  # default: type1 under effect zero, power otherwise
    colour: str = "test"
    log_x: bool = True


@dataclass(frozen=True)
class SimulationConfig:
    """A validated simulation config (see the module docstring for the YAML form)."""

    name: str
    model: OrdinalMixedModel
    model_source: str
    effect: object
    designs: tuple
    analyses: tuple
    trials: int
    alpha: float
    seed: int
    art_resamples: int
    art_exact: str
    chunk_size: int | None
    figure: FigureSpec = field(default_factory=FigureSpec)
    description: str = ""
    estimands: tuple = ()  # per-trial reliability estimands (docs/reliability.md), e.g. ('krippendorff_alpha',)

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

    def results_fingerprint(self) -> dict:
        """What must match for stored trials to be reused: model, effect and seed.

        Designs and analyses have their own keys (label, options), so adding
        one to a config never invalidates the others; ``alpha`` and
        ``trials`` only change the summary.
        """
        return {"model": stable_digest(self.model.to_dict()), "effect": effect_scale(self.effect),
                "seed": self.seed, "format": 1}

    def to_dict(self) -> dict:
        return {
            "name": self.name, "model": self.model_source, "effect": self.effect,
            "designs": [d.columns() for d in self.designs],
            "tests": [{"name": a.name, "label": a.label, **a.options} for a in self.analyses],
            "trials": self.trials, "alpha": self.alpha, "seed": self.seed,
            "art_resamples": self.art_resamples, "art_exact": self.art_exact,
            **({"estimands": list(self.estimands)} if self.estimands else {}),
        }


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
    """
    path = Path(path)
    raw = read_config_mapping(path, "config")
    return parse_config({**raw, **(overrides or {})}, base_dir=path.parent)


def read_config_mapping(path: Path, what: str) -> dict:
    """The top-level mapping of a YAML config file, or a ConfigError saying what is wrong."""
    if not path.is_file():
        raise ConfigError(f"{what.capitalize()} file not found: {path}")
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ConfigError(f"Could not parse {path} as YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"{path} must contain a mapping of {what} keys")
    return raw


def check_name(raw: dict, errors: list[str]) -> str | None:
    """The 'name' field, which names results directories: non-empty, no slashes."""
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip() or any(c in name for c in "/\\"):
        errors.append(f"The 'name' field must be a non-empty string without slashes; got {name!r}")
    return name


def resolve_model(raw: dict, base_dir: Path | None, errors: list[str]) -> tuple[OrdinalMixedModel | None, str | None]:
    """Load the 'model' field: a preset, or a file path relative to the working directory or the config's.

    Returns the model (None after an error) and its source: the preset name or the file's absolute path,
    so that stored configs find the file from anywhere.
    """
    source = raw.get("model")
    if source is None:
        errors.append("The 'model' field is required: a preset (coherence, repetition) or a model file path")
        return None, None
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


def parse_config(raw: dict, base_dir: Path | None = None) -> SimulationConfig:
    """Validate a config mapping; see :func:`load_config`."""
    errors: list[str] = []
    unknown = sorted(set(raw) - set(TOP_LEVEL_KEYS))
    if unknown:
        errors.append(f"Unknown config key(s) {unknown}; allowed: {list(TOP_LEVEL_KEYS)}")

    name = check_name(raw, errors)
    model, model_source = resolve_model(raw, base_dir, errors)

    effect = raw.get("effect", "fitted")
    try:
        scale = effect_scale(effect)
    except ConfigError as exc:
        errors.extend(exc.messages)
        scale = None
    if scale is not None and model is not None:
        check_effect_size(effect, scale, model, errors)
    if effect is None:
        errors.append("The 'effect' field is empty (YAML reads 'null' as nothing): write 'zero' for the null hypothesis")

    trials = _positive_int(errors, raw, "trials", 1000)
    seed = raw.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        errors.append(f"The 'seed' field must be a non-negative integer; got {seed!r}")
    alpha = raw.get("alpha", 0.05)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        errors.append(f"The 'alpha' field must be in (0, 1); got {alpha!r}")
    art_resamples = _positive_int(errors, raw, "art_resamples", 1000)
    art_exact = raw.get("art_exact", "auto")
    if art_exact not in ("auto", "never"):
        errors.append(f"The 'art_exact' field must be 'auto' or 'never'; got {art_exact!r}")
    chunk_size = raw.get("chunk_size")
    if chunk_size is not None:
        chunk_size = _positive_int(errors, raw, "chunk_size", None)

    designs = parse_designs(raw.get("designs"), errors)
    estimands = parse_estimands(raw.get("estimands"), errors)
    # A reliability-only config needs no tests; otherwise 'tests' stays required.
    if estimands and not raw.get("tests"):
        analyses = []
    else:
        analyses = parse_analyses(raw.get("tests"), errors, {"resamples": art_resamples, "exact": art_exact})
    clashes = sorted({a.label for a in analyses} & set(estimands))
    if clashes:
        errors.append(f"The test label(s) {clashes} are estimand names; give the test(s) another 'label'")
    if designs and analyses:
        pool_labels = [d.label for d in designs if not d.has_blocks]
        block_tests = [a.label for a in analyses if ANALYSES[a.name].needs_blocks]
        if pool_labels and block_tests:
            errors.append(f"The block-level test(s) {block_tests} do not apply to pool designs "
                          f"{pool_labels}: pool designs have no blocks")
    figure = parse_figure(raw.get("figure"), errors)
    if designs and figure.x in BLOCK_ONLY_X and not any(d.has_blocks for d in designs):
        errors.append(f"The 'figure.x' field {figure.x!r} has no value for pool designs, and this config has only "
                      f"pool designs; use one of {[x for x in FIGURE_X if x not in BLOCK_ONLY_X]}")
    if figure.estimand is not None and scale is not None and not any("'estimands'" in e for e in errors):
        check_figure_estimand(figure.estimand, scale == 0.0, bool(analyses) or not estimands, estimands, errors,
                              fits_models=any(ANALYSES[a.name].random_effects for a in analyses))

    if errors:
        raise ConfigError(errors)
    return SimulationConfig(name=name, model=model, model_source=str(model_source), effect=effect,
                            designs=tuple(designs), analyses=tuple(analyses), trials=trials, alpha=float(alpha),
                            seed=seed, art_resamples=art_resamples, art_exact=art_exact, chunk_size=chunk_size,
                            figure=figure, description=str(raw.get("description", "")),
                            estimands=tuple(estimands))


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
    """'figure.estimand' must be one the summary will have: under the effect given, or a requested estimand."""
    allowed = ([e for e in (NULL_ESTIMANDS if is_null else EFFECT_ESTIMANDS)
                if fits_models or e != "singular_rate"] if has_tests else []) + list(estimands)
    if estimand in allowed:
        return
    why = ""
    other = EFFECT_ESTIMANDS if is_null else NULL_ESTIMANDS
    if has_tests and estimand in other and estimand != "singular_rate":
        why = (f" ({estimand!r} needs " + ("a non-zero 'effect'" if is_null else "'effect: zero'") + ")")
    elif has_tests and estimand == "singular_rate":
        mixed = sorted(name for name, info in ANALYSES.items() if info.random_effects)
        why = f" ('singular_rate' needs a test that fits random effects: {', '.join(mixed)})"
    errors.append(f"The 'figure.estimand' field must be one of {allowed} under 'effect' "
                  f"{'zero' if is_null else 'non-zero'}{why}; got {estimand!r}")


def config_warnings(config: SimulationConfig) -> list[str]:
    """Settings that are legitimate but unusual enough to say so before a run."""
    found = []
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
        errors.append(f"The 'estimands' field must be a list of names from {sorted(RELIABILITY_ESTIMANDS)}; "
                      f"got {items!r}")
        return []
    unknown = [item for item in items if item not in RELIABILITY_ESTIMANDS]
    if unknown:
        errors.append(f"The 'estimands' field names unknown estimand(s) {unknown}; "
                      f"available: {sorted(RELIABILITY_ESTIMANDS)}")
    duplicates = sorted({item for item in items if items.count(item) > 1})
    if duplicates:
        errors.append(f"The 'estimands' field lists {duplicates} more than once")
    return list(dict.fromkeys(item for item in items if item in RELIABILITY_ESTIMANDS))


def _positive_int(errors, raw, key, default):
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        errors.append(f"The '{key}' field must be a positive integer; got {value!r}")
        return default if isinstance(default, int) else 1
    return value


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
            errors.append(f"The '{where}.kind' field must be one of {list(DESIGN_KINDS)}; got {kind!r}")
            continue
        cls = DESIGN_KINDS[kind]
        fields = [f.name for f in dataclasses.fields(cls)]
        extra = sorted(set(item) - set(fields) - {"kind"})
        missing = [f for f in fields if f not in item]
        if extra or missing:
            errors.append(f"{where} ({kind}) needs exactly the fields {fields}"
                          + (f"; unknown {extra}" if extra else "") + (f"; missing {missing}" if missing else ""))
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
            values = {f: (item[f][index] if isinstance(item[f], list) else item[f]) for f in fields}
            try:
                designs.append(cls(**values))
            except ConfigError as exc:
                errors.extend(f"{where}: {m}" for m in exc.messages)
    labels = [d.label for d in designs]
    duplicates = sorted({lab for lab in labels if labels.count(lab) > 1})
    if duplicates:
        errors.append(f"The 'designs' field lists the same design more than once: {duplicates}")
    return designs


def analysis_label(name: str, written: dict) -> str:
    """``name[value,...]`` with the written options' values sorted by option name."""
    if not written:
        return name
    return f"{name}[{','.join(str(written[key]) for key in sorted(written))}]"


def parse_analyses(items, errors: list[str], art_defaults: dict) -> list[AnalysisSpec]:
    """Test names or mappings ``{name: ..., label: ..., <option>: ...}`` -> specs."""
    if not isinstance(items, list) or not items:
        errors.append(f"The 'tests' field must be a non-empty list; available tests: {sorted(ANALYSES)}")
        return []
    specs = []
    for position, item in enumerate(items):
        where = f"tests[{position}]"
        if isinstance(item, str):
            item = {"name": item}
        if not isinstance(item, dict) or "name" not in item:
            errors.append(f"{where} must be a test name or a mapping with a 'name'; got {item!r}")
            continue
        name = item["name"]
        if name not in ANALYSES:
            errors.append(f"The '{where}' test {name!r} is unknown; available: {sorted(ANALYSES)}")
            continue
        info = ANALYSES[name]
        written = {k: v for k, v in item.items() if k not in ("name", "label")}
        options = {}
        for option, (allowed, default) in info.options.items():
            if option in written:
                value = written[option]
            elif option in ART_DEFAULT_KEYS and option in art_defaults:
                value = art_defaults[option]
            else:
                value = default
            problem = allowed(value) if callable(allowed) else (
                None if value in allowed else f"must be one of {list(allowed)}; got {value!r}")
            if problem:
                errors.append(f"The '{where}.{option}' option of {name} {problem}")
            options[option] = value
        unknown = sorted(set(written) - set(info.options))
        if unknown:
            errors.append(f"The test {name} has no option(s) {unknown}; "
                          f"its options: {sorted(info.options) or 'none'}")
        label = item.get("label") or analysis_label(name, written)
        specs.append(AnalysisSpec(name=name, label=str(label), options=options))
    labels = [s.label for s in specs]
    duplicates = sorted({lab for lab in labels if labels.count(lab) > 1})
    if duplicates:
        errors.append(f"The 'tests' field lists the same analysis more than once: {duplicates} "
                      "(give different options or a 'label')")
    return specs


def parse_figure(raw, errors: list[str]) -> FigureSpec:
    if raw is None:
        return FigureSpec()
    if not isinstance(raw, dict):
        errors.append(f"The 'figure' field must be a mapping; got {raw!r}")
        return FigureSpec()
    unknown = sorted(set(raw) - {"x", "estimand", "colour", "log_x"})
    if unknown:
        errors.append(f"Unknown 'figure' key(s) {unknown}; allowed: x, estimand, colour, log_x")
    spec = FigureSpec(**{k: v for k, v in raw.items() if k in ("x", "estimand", "colour", "log_x")})
    if spec.x not in FIGURE_X:
        errors.append(f"The 'figure.x' field must be one of {list(FIGURE_X)}; got {spec.x!r}")
    if spec.colour not in FIGURE_COLOUR:
        errors.append(f"The 'figure.colour' field must be one of {list(FIGURE_COLOUR)}; got {spec.colour!r}")
    return spec
