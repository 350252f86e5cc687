"""Fit the generator to pilot annotations: judgements in, a model file out.

``simdesign fit JUDGEMENTS.csv --out model.yaml`` reads a table of
judgements (one row per annotator x document x system), checks it, fits the
cumulative link mixed model of docs/model.md with the native Laplace
fitter (:func:`simdesign.clmm.fit`) and writes the parameters in the
package's model format (docs/model.md), which every simulation config can
name as its ``model``. So a planned study can be simulated from a pilot of
its own task instead of the paper's.

Examples
--------
>>> import numpy as np
>>> from simdesign import BlockDesign, load_model
>>> frame = load_model("coherence").sample(BlockDesign(4, 5, 3), np.random.default_rng(2)).to_frame()
>>> outcome = fit_model(frame.drop(columns="block"), structure="intercepts", reference="__REFERENCE__")
>>> outcome.model.systems[0], outcome.result.status in ("ok", "singular")
('__REFERENCE__', True)
"""
from __future__ import annotations

import csv
import datetime as _dt
import hashlib
import io
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from simdesign.core.version import VERSION as simdesign_version
from simdesign import clmm
from simdesign.core.checks import missing_file_problem
from simdesign.core.errors import ConfigError, DataError
from simdesign.core.seeds import stream
from simdesign.core.results import Result
from simdesign.core.suggest import did_you_mean
from simdesign.core.yamlio import load_yaml
from simdesign.model import OrdinalMixedModel
from simdesign.studies.rates.store import package_versions
# The reader moved to simdesign.tables.judgements (issue 40); its public names stay importable from here.
from simdesign.tables.judgements import (REQUIRED_COLUMNS, checked_judgements, file_sha256, parse_columns,
                                         parse_scale, read_judgements, read_table_csv, validate_judgements)

# 'auto' picks the largest structure the pilot's design identifies (see choose_structure); the others are
# the analyses' structures (docs/model.md, "Random-effects structures").
STRUCTURES = ("auto", "paper", "maximal", "intercepts")
# simdesign's own version comes from the package itself: it need not be installed (a checkout on PYTHONPATH),
# and its distribution name differs from the import name.
SOFTWARE = ("numpy", "scipy", "pandas", "krippendorff")
# A generator is fitted to one real study (and parameter_recovery checks that same fitter): afford clmm.fit's
# refit rule, so the fitted model does not depend on the reference system (docs/model.md, "Starts").
FIT_STARTS = "codings"
RECOVERY_STREAM = "fit/recovery-round"  # parameter_recovery's rounds: stream(seed, RECOVERY_STREAM, round)


class FitError(RuntimeError):
    """The model could not be fitted (a numerical breakdown, not bad input)."""


# ---------------------------------------------------------------------------------------------
# Fitting
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True, repr=False)
class FitOutcome(Result):
    """A fitted model and how it was obtained (``summary()``: the fit's coefficients; ``save(dir)``: the model
    file and the coefficients; no figure).

    Attributes
    ----------
    model : OrdinalMixedModel
        Ready to simulate from; systems in the fit's order (reference first).
    result : simdesign.clmm.ClmmResult
    provenance : dict
        What the model file records under ``provenance``.
    """

    model: OrdinalMixedModel
    result: object
    provenance: dict

    def __repr__(self) -> str:
        # short: .model, .result.summary() and .provenance hold the parameters, tables and sources
        status = getattr(self.result, "status", "?")
        loglik = getattr(self.result, "loglik", float("nan"))
        return (f"<FitOutcome {self.model.name!r}: {len(self.model.systems)} systems, scale "
                f"{self.model.scale[0]}..{self.model.scale[-1]}; fit {status}, log-likelihood {loglik:.2f}; "
                f".model, .summary()>")

    def summary(self) -> pd.DataFrame:
        """The fit's coefficients, one row per threshold and fixed effect: ``term, estimate, se, z, p, ci_lower,
        ci_upper`` (the random effects are in ``result.summary().random_effects``)."""
        coefficients = self.result.summary().coefficients
        return coefficients.rename_axis("term").reset_index()

    def save(self, directory) -> dict:
        """Write the model file (``<model name>.yaml``, loadable by :func:`simdesign.model.load_model`) and
        ``summary.csv`` (:meth:`summary`) into ``directory``; returns ``model`` and ``summary`` -> path."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        paths = {"model": directory / f"{self.model.name}.yaml", "summary": directory / "summary.csv"}
        write_model(self.model, paths["model"])
        self.summary().to_csv(paths["summary"], index=False)
        return paths


def _full_covariance(result, term: str, n_systems: int) -> np.ndarray:
    """The S x S covariance of (intercept, slopes) for a term, zeros for what was not fitted.

    An intercepts-only fit gives Var(u_0) in [0, 0]: then z_s . u = u_0 for
    every system, which is exactly the intercepts-only model. A term the fit
    left out (the document term of a nested design under 'paper') is 0.
    """
    full = np.zeros((n_systems, n_systems))
    cov = result.random_effects_cov.get(term)
    if cov is not None:
        cov = np.asarray(cov, dtype=float)
        full[:cov.shape[0], :cov.shape[1]] = cov
    return full


@dataclass(frozen=True)
class StructureChoice:
    """The random-effects terms a fit uses, and why.

    Attributes
    ----------
    structure : str
        As requested (one of :data:`STRUCTURES`).
    forms : dict
        Term -> 'slopes' ``(1 + system | term)`` or 'intercept' ``(1 | term)``;
        a term left out is not fitted (see :func:`simdesign.clmm.term_forms`).
    reduced : dict
        Term -> why its slopes were dropped (``allow_reduced``).
    notes : list of str
        What a reader of the model file must know about the choice.
    """

    structure: str
    forms: dict
    reduced: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)

    @property
    def formula(self) -> str:
        terms = [f"({'1 + system' if form == 'slopes' else '1'} | {term})" for term, form in self.forms.items()]
        return "score ~ system + " + " + ".join(terms)


def choose_structure(frame: pd.DataFrame, structure: str = "auto", allow_reduced: bool = False) -> StructureChoice:
    """The terms to fit to a pilot, refusing what its design cannot identify.

    Parameters
    ----------
    frame : pandas.DataFrame
        Checked judgements.
    structure : {'auto', 'paper', 'maximal', 'intercepts'}
        'auto' (for fitting a generator): ``(1 + system | annotator) +
        (1 + system | document)`` when some document is judged by two or more
        annotators; ``(1 + system | annotator) + (1 | document)`` when every
        document has one annotator and some annotator judges two or more
        documents (each (document, system) is then judged once, so document
        slopes cannot be told apart from the judgement noise, but the
        document intercept can); the annotator term alone when every
        annotator judges one document of their own (annotator and document
        are then one grouping). The others are the analyses' structures
        (docs/model.md, "Random-effects structures").
    allow_reduced : bool
        With fewer levels than systems + 1 (too few for a full covariance of
        intercept and slopes), fit that term's intercept only instead of
        refusing; recorded in ``reduced``.

    Returns
    -------
    StructureChoice

    Raises
    ------
    ConfigError
        Naming the reason: a single annotator; fewer annotators (documents)
        than systems + 1 for a full covariance without ``allow_reduced``; a
        document term the design cannot separate from the annotator term or
        from the noise.
    """
    if structure not in STRUCTURES:
        raise ConfigError(f"--structure must be one of {list(STRUCTURES)}; got {structure!r}")
    n_systems = frame["system"].nunique()
    _require_several_annotators(frame, n_systems)
    annotators_per_document = frame.groupby("document")["annotator"].nunique()
    documents_per_annotator = frame.groupby("annotator")["document"].nunique()
    shared = bool((annotators_per_document >= 2).any())
    one_each = not shared and bool((documents_per_annotator == 1).all())
    forms = _identifiable_forms(frame, structure, shared, one_each)
    reduced = _reduce_small_terms(frame, forms, structure, allow_reduced)
    choice = StructureChoice(structure=structure, forms=forms, reduced=reduced)
    choice.notes.extend(reduced.values())
    choice.notes.extend(_structure_notes(forms, structure, shared, one_each))
    return choice


def _require_several_annotators(frame: pd.DataFrame, n_systems: int) -> None:
    """Refuse a pilot of one annotator: its generator would make every judgement independent."""
    if frame["annotator"].nunique() < 2:
        raise ConfigError(
            f"The pilot has a single annotator ({frame['annotator'].iloc[0]!r}): the variation between annotators "
            "cannot be estimated from one, and a generator without it would treat every judgement as independent "
            "(the error simulated studies exist to catch). Collect judgements from several annotators "
            f"(a full annotator covariance needs at least {n_systems + 1}).")


def _identifiable_forms(frame: pd.DataFrame, structure: str, shared: bool, one_each: bool) -> dict:
    """Term -> form for the structure, refusing a document term the pilot's design cannot separate.

    ``shared``: some document is judged by two or more annotators; ``one_each``: every annotator judged
    a single document of their own.
    """
    if structure == "auto":
        if shared:
            forms = {"annotator": "slopes", "document": "slopes"}
        elif not one_each:
            forms = {"annotator": "slopes", "document": "intercept"}
        else:
            forms = {"annotator": "slopes"}
    else:
        forms = clmm.term_forms(frame, structure)
    if "document" in forms and one_each:
        raise ConfigError(f"--structure {structure}: every annotator judged a single document of their own, so "
                          "annotator and document effects are one grouping and cannot be told apart; use "
                          "--structure auto (the annotator term alone, carrying both)")
    if forms.get("document") == "slopes" and not shared:
        raise ConfigError(f"--structure {structure}: every document is judged by one annotator, so each (document, "
                          "system) output is judged once and document slopes cannot be told apart from the judgement "
                          "noise; use --structure auto ((1 | document)) or paper (no document term)")
    return forms


def _reduce_small_terms(frame: pd.DataFrame, forms: dict, structure: str, allow_reduced: bool) -> dict:
    """Term -> why its slopes were dropped; ``forms`` is changed in place.

    A term with fewer levels than systems + 1 cannot identify a full covariance: refused unless
    ``allow_reduced``, then fitted as an intercept.
    """
    n_systems = frame["system"].nunique()
    reduced = {}
    for term, form in list(forms.items()):
        levels = frame[term].nunique()
        if form != "slopes" or levels >= n_systems + 1:
            continue
        reason = (f"{levels} {term}s for {n_systems} systems: a full {term} covariance (intercept and "
                  f"{n_systems - 1} slopes, {n_systems * (n_systems + 1) // 2} parameters) needs at least "
                  f"systems + 1 = {n_systems + 1} {term}s")
        if not allow_reduced:
            raise ConfigError(f"--structure {structure}: {reason}. Collect more, or pass --allow-reduced to fit "
                              f"(1 | {term}) instead (recorded in the model's provenance)")
        forms[term] = "intercept"
        reduced[term] = f"(1 + system | {term}) reduced to (1 | {term}) by --allow-reduced: {reason}"
    return reduced


def _structure_notes(forms: dict, structure: str, shared: bool, one_each: bool) -> list:
    """What a reader of the model file must know about terms left out or fitted as intercepts only."""
    notes = []
    if "document" not in forms:
        if one_each:
            notes.append("Every annotator judged one document of their own: annotator and document effects "
                         "are one grouping, so only the annotator term was fitted; its covariance carries "
                         "both (their sum) and document_cov is 0.")
        else:
            notes.append(f"The document term was not fitted (structure {structure!r} on a nested pilot): "
                         "document_cov is 0, so the variation between documents is missing from the model "
                         "(the annotator covariance does not carry it); --structure auto fits "
                         "(1 | document) for such pilots.")
    elif forms["document"] == "intercept" and not shared:
        notes.append("Nested pilot (each document judged by one annotator): each (document, system) output "
                     "is judged once, so document slopes cannot be told apart from the judgement noise and "
                     "only the document intercept was fitted. document_cov has its variance in [0, 0] and "
                     "zeros elsewhere: simulations give documents a common difficulty but no "
                     "document-specific system differences.")
    if set(forms.values()) == {"intercept"}:
        notes.append("Random intercepts only: each covariance has the intercept variance in [0, 0] and "
                     "zeros elsewhere, so z_s . u = u_0 for every system.")
    return notes


def fit_model(frame: pd.DataFrame, structure: str = "auto", reference=None, scale=None, name: str = "fitted",
              source: dict | None = None, allow_reduced: bool = False) -> FitOutcome:
    """Fit the cumulative link mixed model to judgements and wrap it as a generator.

    Parameters
    ----------
    frame : pandas.DataFrame
        Checked judgements (see :func:`read_judgements`).
    structure : {'auto', 'paper', 'maximal', 'intercepts'}
        Random-effects structure (docs/model.md, "Random-effects structures"); 'auto' is chosen
        from the pilot's design by :func:`choose_structure`.
    reference : str, optional
        Reference system; default the first in sorted order (as
        :func:`simdesign.clmm.fit`), so to compare with the paper's models
        pass '__REFERENCE__'.
    scale : sequence of int, optional
        Default: the observed score values.
    name : str
    source : dict, optional
        Recorded in the provenance (e.g. file name and sha256).
    allow_reduced : bool
        Fit intercepts only for a term with too few levels for a full
        covariance instead of refusing (recorded in the provenance).

    Returns
    -------
    FitOutcome

    Raises
    ------
    ConfigError
        Bad judgements, or a structure the pilot cannot identify (see
        :func:`choose_structure`).
    FitError
        The fit broke down numerically (status 'error').
    """
    scale = validate_judgements(frame, scale)
    choice = choose_structure(frame, structure, allow_reduced)
    result = clmm.fit(frame, structure=choice.forms, reference=reference, starts=FIT_STARTS)
    if result.status == "error":
        raise FitError(f"The model fit failed: {result.message}")
    systems = list(result.systems)
    n_systems = len(systems)
    annotator_cov = _full_covariance(result, "annotator", n_systems)
    document_cov = _full_covariance(result, "document", n_systems)
    provenance = _provenance(frame, result, choice, structure, source)
    model = OrdinalMixedModel(name=name, scale=tuple(scale), systems=tuple(systems), thresholds=result.thresholds,
                              effects=result.effects, annotator_cov=annotator_cov, document_cov=document_cov,
                              citation="", provenance=yaml.safe_dump(provenance, sort_keys=False, width=110))
    return FitOutcome(model=model, result=result, provenance=provenance)


def _fit_notes(result, choice: StructureChoice) -> list:
    """The structure's notes, plus warnings about a boundary or unconverged fit."""
    notes = list(choice.notes)
    if result.status == "singular":
        usual = (", as is usual for a model with random slopes" if "slopes" in choice.forms.values()
                 else " (a variance estimated as 0)")
        notes.append(f"Singular (boundary) fit: some random-effects variance or correlation is at its bound{usual}; "
                     "the covariance matrices are positive semi-definite.")
    if result.status == "not_converged":
        notes.append(f"The optimiser did not converge: {result.message}. Treat the parameters with caution.")
    return notes


def _provenance(frame: pd.DataFrame, result, choice: StructureChoice, structure: str, source) -> dict:
    """What the model file records about how it was fitted: formula, data, diagnostics, versions, notes."""
    systems = list(result.systems)
    effect_cov = np.asarray(result.fixed_effects_cov, dtype=float)
    effect_se = np.sqrt(np.clip(np.diag(effect_cov), 0, None)) if effect_cov.size else np.array([])
    provenance = {
        "software": "simdesign.clmm (native Laplace maximum likelihood, like ordinal::clmm)",
        "formula": choice.formula,
        "structure": structure,
        "terms_fitted": dict(choice.forms),
        "reduced": dict(choice.reduced),
        "reference": systems[0],
        "fitted_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "source": dict(source or {}),
        "data": {"judgements": int(len(frame)), "annotators": int(frame["annotator"].nunique()),
                 "documents": int(frame["document"].nunique()), "systems": len(systems)},
        "diagnostics": {
            "status": result.status, "converged": bool(result.converged), "message": result.message,
            "loglik": float(result.loglik), "max_gradient": float(result.max_gradient),
            "hessian_condition": float(result.hessian_condition),
            "boundary": {term: np.asarray(mask, dtype=bool).tolist() for term, mask in result.boundary.items()},
            "evaluations": int(result.n_evaluations), "seconds": round(float(result.seconds), 3),
            # the refit rule of clmm.fit (docs/model.md, "Starts"): which start's optimum this is
            "starts": {"rule": result.starts, "tried": int(result.starts_tried), "kept": result.start_kept,
                       "loglik_gain": float(result.start_gain)},
        },
        "effect_standard_errors": {system: float(se) for system, se in zip(systems[1:], effect_se)},
        "versions": {"simdesign": simdesign_version, **package_versions(SOFTWARE)},
        "notes": _fit_notes(result, choice),
    }
    return provenance


class _BlockStringDumper(yaml.SafeDumper):
    """Writes multi-line strings as literal blocks (readable provenance)."""


def _represent_string(dumper, value):
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockStringDumper.add_representer(str, _represent_string)


def write_model(model: OrdinalMixedModel, path, header: str = "") -> Path:
    """Write ``model`` in the package's model format (YAML, docs/model.md).

    ``provenance`` is a YAML document inside a literal string, so the file
    loads with :func:`simdesign.model.load_model` and the provenance can be
    read back with :func:`read_provenance`.
    """
    path = Path(path)
    data = model.to_dict()
    for key in ("annotator_cov", "document_cov"):
        data[key] = [[float(v) for v in row] for row in data[key]]
    text = yaml.dump(data, Dumper=_BlockStringDumper, sort_keys=False, width=110)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(model_file_text(data, path, header, text))
    return path


MODEL_FILE_SUFFIXES = (".yaml", ".yml", ".json")  # what load_model reads (.json with a JSON parser)


def model_file_text(data: dict, path, header: str = "", yaml_text: str | None = None) -> str:
    """A model file's text for ``path``: JSON for a .json name (load_model reads it as JSON; JSON has no comments,
    so the header is left out and the provenance field carries the fit's record), else YAML with the header as
    comments."""
    if Path(path).suffix.lower() == ".json":
        import json

        return json.dumps(data, indent=2) + "\n"
    text = yaml_text if yaml_text is not None else yaml.safe_dump(data, sort_keys=False, width=110)
    return "".join(f"# {line}\n" for line in header.splitlines()) + text


def model_file_problem(path, option: str = "--out") -> str | None:
    """A model file name whose suffix load_model cannot read back (``fit --out model.csv`` wrote YAML under a
    CSV name), naming the allowed suffixes."""
    if Path(path).suffix.lower() in MODEL_FILE_SUFFIXES:
        return None
    return (f"The '{option}' option names the model file to write: it must end in one of "
            f"{list(MODEL_FILE_SUFFIXES)}; got {str(path)!r}")


def read_provenance(model: OrdinalMixedModel) -> dict:
    """The provenance of a model written by :func:`write_model`, as a mapping ({} if it is free text)."""
    try:
        data = load_yaml(model.provenance) if model.provenance else {}
    except yaml.YAMLError:
        return {}
    return data if isinstance(data, dict) else {}


# ---------------------------------------------------------------------------------------------
# Parameter recovery
# ---------------------------------------------------------------------------------------------

def _fit_parameters(result, systems) -> tuple[dict, dict]:
    """Estimates and Wald standard errors by parameter name (thresholds, effects, random-effect SDs)."""
    estimates, errors = {}, {}
    n_thr = len(result.thresholds)
    parameter_se = (np.sqrt(np.clip(np.diag(result.parameter_cov), 0, None))
                    if result.parameter_cov is not None else np.full(n_thr, np.nan))
    for k, value in enumerate(result.thresholds):
        estimates[f"theta_{k + 1}"] = float(value)
        errors[f"theta_{k + 1}"] = float(parameter_se[k]) if k < len(parameter_se) else float("nan")
    effect_se = np.sqrt(np.clip(np.diag(np.atleast_2d(result.fixed_effects_cov)), 0, None))
    for position, system in enumerate(result.systems[1:]):
        estimates[f"beta[{system}]"] = float(result.fixed_effects[system])
        errors[f"beta[{system}]"] = float(effect_se[position])
    for term, sd in result.random_effects_sd.items():
        names = ["intercept"] + [f"slope[{s}]" for s in result.systems[1:]]
        for name, value in zip(names, sd):
            estimates[f"sd_{term}[{name}]"] = float(value)
    return estimates, errors


def _true_parameters(model: OrdinalMixedModel) -> dict:
    truth = {f"theta_{k + 1}": float(v) for k, v in enumerate(model.thresholds)}
    truth.update({f"beta[{s}]": float(b) for s, b in zip(model.systems[1:], model.effects[1:])})
    names = ["intercept"] + [f"slope[{s}]" for s in model.systems[1:]]
    for term, cov in (("annotator", model.annotator_cov), ("document", model.document_cov)):
        truth.update({f"sd_{term}[{name}]": float(v) for name, v in zip(names, np.sqrt(np.diag(cov)))})
    return truth


def _numbered_round(number: int, model, design, structure: str, root: int) -> tuple:
    """``(number, outcome)`` of :func:`_recovery_round`: the runner's loop returns rounds as they finish."""
    return number, _recovery_round(model, design, structure, stream(root, RECOVERY_STREAM, number))


def _recovery_round(model: OrdinalMixedModel, design, structure: str, rng: np.random.Generator):
    """One simulate-and-fit round: (estimates, standard errors) or (None, why it failed)."""
    frame = model.sample(design, rng).to_frame().drop(columns="block")
    if frame["score"].nunique() != len(model.scale):
        # A category nobody used: the fit has fewer thresholds than the truth.
        return None, f"score values {sorted(set(model.scale) - set(frame['score']))} unused"
    try:
        forms = choose_structure(frame, structure).forms
    except ConfigError as exc:
        return None, f"structure: {exc}"
    result = clmm.fit(frame, structure=forms, reference=model.systems[0], starts=FIT_STARTS)
    if result.status in ("error", "not_converged"):
        return None, f"{result.status}: {result.message}"
    return _fit_parameters(result, model.systems)


def parameter_recovery(model: OrdinalMixedModel, design, rounds: int, rng: int | np.random.Generator,
                       structure: str = "paper", jobs: int = 1) -> pd.DataFrame:
    """Simulate from ``model``, refit, repeat: the bias and Wald coverage of the fitter.

    Parameters
    ----------
    model : OrdinalMixedModel
        The truth; its first system is the reference of every fit.
    design : BlockDesign or PoolDesign
    rounds : int
    rng : int or numpy.random.Generator
        The root seed of the rounds' streams: round i draws from ``stream(seed, "fit/recovery-round", i)``
        (:mod:`simdesign.core.seeds`); a Generator gives the root as its first draw.
    structure : str
        Random-effects structure of the fits (:data:`STRUCTURES`, chosen per
        simulated data set by :func:`choose_structure`). It should match the
        truth ('paper' or 'maximal' for the presets): a smaller structure
        attenuates thresholds and effects (the latent scale shrinks).
    jobs : int
        joblib workers. Each round has its own stream keyed by its number,
        so the result does not depend on ``jobs``.

    Returns
    -------
    pandas.DataFrame
        One row per parameter: ``parameter, truth, mean, sd, mcse, bias,
        coverage`` (share of rounds whose 95% Wald interval covers the
        truth; NaN for the random-effect SDs, which have none), ``rounds``
        (fits used; failed fits and data missing a score category are left
        out), ``failed``. ``table.attrs['failures']`` lists why rounds failed.
    """
    from joblib import delayed

    from simdesign.runner.backends import ChunkExecutor
    from simdesign.runner.execute import backend_spec, run_chunks

    truth = _true_parameters(model)
    root = int(rng.integers(0, 2 ** 63)) if isinstance(rng, np.random.Generator) else int(rng)
    finished: dict[int, tuple] = {}
    # each round is a chunk of the runner's loop (workers, lost-worker retries), kept in memory
    with ChunkExecutor(backend_spec("loky", jobs)) as executor:
        run_chunks(executor, lambda: [i for i in range(rounds) if i not in finished],
                   lambda i: delayed(_numbered_round)(i, model, design, structure, root), finished.__setitem__)
    outcomes = [finished[i] for i in range(rounds)]
    estimates, covered, failures = [], [], []
    for values, errors in outcomes:
        if values is None:
            failures.append(errors)
            continue
        estimates.append(values)
        covered.append({name: abs(values[name] - truth[name]) <= 1.959963984540054 * se
                        for name, se in errors.items() if np.isfinite(se) and se > 0})
    values = pd.DataFrame(estimates)
    coverage = pd.DataFrame(covered)
    rows = []
    for name, true_value in truth.items():
        if name not in values:
            continue  # e.g. the document SDs of a fit that dropped the document term
        column = values[name].dropna()
        n = len(column)
        sd = float(column.std(ddof=1)) if n > 1 else float("nan")
        rows.append({"parameter": name, "truth": true_value, "mean": float(column.mean()), "sd": sd,
                     "mcse": sd / np.sqrt(n) if n > 1 else float("nan"), "bias": float(column.mean()) - true_value,
                     "coverage": float(coverage[name].mean()) if name in coverage else float("nan"),
                     "rounds": n, "failed": len(failures)})
    table = pd.DataFrame(rows)
    table.attrs["failures"] = failures
    return table
