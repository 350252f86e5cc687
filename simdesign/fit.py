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

import datetime as _dt
import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from simdesign import clmm
from simdesign.errors import ConfigError
from simdesign.model import OrdinalMixedModel
from simdesign.store import package_versions

REQUIRED_COLUMNS = ("annotator", "document", "system", "score")
FORMULAS = {
    "maximal": "score ~ system + (1 + system | annotator) + (1 + system | document)",
    "intercepts": "score ~ system + (1 | annotator) + (1 | document)",
}
SOFTWARE = ("simdesign", "numpy", "scipy", "pandas", "krippendorff")
# How many offending rows an error message lists before it says "and N more".
EXAMPLES_SHOWN = 5


class FitError(RuntimeError):
    """The model could not be fitted (a numerical breakdown, not bad input)."""


# ---------------------------------------------------------------------------------------------
# Reading and checking judgements
# ---------------------------------------------------------------------------------------------

def parse_scale(text: str) -> tuple:
    """'1..7' or '1,2,3,4,5' -> (1, ..., 7): the ordered score values of a scale.

    Raises
    ------
    ConfigError
        Not integers, fewer than two values, or not increasing.
    """
    text = str(text).strip()
    try:
        if ".." in text:
            low, high = (int(part) for part in text.split(".."))
            values = tuple(range(low, high + 1))
        else:
            values = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError as exc:
        raise ConfigError(f"The scale must be 'LOW..HIGH' (e.g. 1..7) or a comma-separated list of integers; "
                          f"got {text!r}") from exc
    if len(values) < 2 or list(values) != sorted(set(values)):
        raise ConfigError(f"The scale must have at least two increasing values; got {text!r}")
    return values


def parse_columns(text: str | None) -> dict:
    """'annotator=worker,score=rating' -> {'worker': 'annotator', 'rating': 'score'} (file name -> ours)."""
    if not text:
        return {}
    mapping = {}
    for item in text.split(","):
        ours, _, theirs = item.partition("=")
        ours, theirs = ours.strip(), theirs.strip()
        if ours not in REQUIRED_COLUMNS or not theirs:
            raise ConfigError(f"--columns takes NAME=COLUMN items with NAME one of {list(REQUIRED_COLUMNS)}; "
                              f"got {item!r}")
        mapping[theirs] = ours
    return mapping


def _rows(index, limit: int = EXAMPLES_SHOWN) -> str:
    """File line numbers of table rows (header = line 1), shortened."""
    lines = [str(int(i) + 2) for i in list(index)[:limit]]
    more = len(index) - limit
    return ", ".join(lines) + (f" and {more} more" if more > 0 else "")


def validate_judgements(frame: pd.DataFrame, scale=None, *, for_fit: bool = True, names: dict | None = None) -> tuple:
    """Check a judgements table; return its scale. Every problem is reported, nothing is dropped.

    Parameters
    ----------
    frame : pandas.DataFrame
        Columns ``annotator, document, system, score`` (others are ignored).
    scale : sequence of int, optional
        The scale's score values. When given, every score must be one of
        them and every value must occur (a category nobody used leaves its
        thresholds unidentified). Default: the observed values.
    for_fit : bool
        Also require what a model fit needs: two or more systems, and no
        system with a single judgement.
    names : dict, optional
        Our column name -> the file's, so messages name the file's columns.

    Returns
    -------
    tuple of int
        The scale.

    Raises
    ------
    ConfigError
        With one message per problem: missing columns, missing values,
        non-integer scores, duplicate judgements (an annotator scoring the
        same system's output for a document twice), systems with one
        judgement, scores outside the scale, unused scale values.
    """
    names = names or {}

    def column_text(column):
        theirs = names.get(column, column)
        return f"'{column}'" if theirs == column else f"'{column}' (file column '{theirs}')"

    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise ConfigError(f"The judgements table lacks the column(s) {missing}; it has {list(frame.columns)} "
                          "(map other names with --columns annotator=...,document=...,system=...,score=...)")
    errors = []
    if frame.empty:
        raise ConfigError("The judgements table has no rows")
    for column in REQUIRED_COLUMNS:
        absent = frame.index[frame[column].isna()]
        if len(absent):
            errors.append(f"The {column_text(column)} column has {len(absent)} missing value(s) (lines {_rows(absent)}); "
                          "fill or remove them: rows are never dropped silently")
    score = pd.to_numeric(frame["score"], errors="coerce")
    not_numeric = frame.index[score.isna() & frame["score"].notna()]
    if len(not_numeric):
        errors.append(f"The {column_text('score')} column has {len(not_numeric)} non-numeric value(s) (lines {_rows(not_numeric)}), "
                      f"e.g. {frame.loc[not_numeric[0], 'score']!r}")
    fractional = frame.index[score.notna() & (score != score.round())]
    if len(fractional):
        errors.append(f"The {column_text('score')} column has {len(fractional)} non-integer value(s) (lines "
                      f"{_rows(fractional)}), e.g. {float(score[fractional[0]])!r}; scores are points of an ordinal scale")
    keys = list(REQUIRED_COLUMNS[:3])
    duplicated = frame.index[frame.duplicated(keys, keep=False) & frame[keys].notna().all(axis=1)]
    if len(duplicated):
        first = frame.loc[duplicated[0], keys].to_dict()
        errors.append(f"{len(duplicated)} rows repeat an (annotator, document, system) judgement (lines "
                      f"{_rows(duplicated)}; e.g. {first}); keep one judgement per annotator and output")
    if for_fit:
        per_system = frame["system"].value_counts()
        lonely = sorted(per_system.index[per_system == 1].astype(str))
        if lonely:
            errors.append(f"The system(s) {lonely} have a single judgement: too few to estimate an effect")
        if frame["system"].nunique() < 2:
            errors.append("The 'system' column needs at least two systems to compare")
    observed = np.unique(score[score.notna() & (score == score.round())].to_numpy()).astype(np.int64)
    if scale is None:
        scale = tuple(int(v) for v in observed)
    else:
        scale = tuple(int(v) for v in scale)
        outside = sorted(set(observed.tolist()) - set(scale))
        if outside:
            lines = frame.index[score.isin(outside)]
            errors.append(f"Scores {outside} are outside the scale {list(scale)} (lines {_rows(lines)})")
        unused = sorted(set(scale) - set(observed.tolist()))
        if unused:
            remedy = "merge the unused categories into their neighbours"
            if not outside:
                remedy = f"fit on the observed values (--scale {','.join(str(v) for v in observed)}) or " + remedy
            errors.append(f"The scale value(s) {unused} of {list(scale)} never occur: the thresholds around them "
                          f"cannot be estimated; {remedy}")
    if len(scale) < 2 and not errors:
        errors.append(f"The 'score' column needs at least two distinct values; got {list(scale)}")
    if errors:
        raise ConfigError(errors)
    return scale


def read_judgements(path, columns: dict | None = None, scale=None, *, for_fit: bool = True):
    """Read and check a judgements CSV.

    Parameters
    ----------
    path : str or path-like
    columns : dict, optional
        File column name -> our name (see :func:`parse_columns`).
    scale : sequence of int, optional
    for_fit : bool

    Returns
    -------
    frame : pandas.DataFrame
        Columns ``annotator, document, system, score`` (scores as int64;
        ids as strings, so '07' and '7' stay distinct).
    scale : tuple of int
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"Judgements file not found: {path}")
    raw = pd.read_csv(path, dtype=str, keep_default_na=True)
    raw = raw.rename(columns=columns or {})
    scale = validate_judgements(raw, scale, for_fit=for_fit,
                                names={ours: theirs for theirs, ours in (columns or {}).items()})
    frame = raw[list(REQUIRED_COLUMNS)].copy()
    frame["score"] = pd.to_numeric(frame["score"]).round().astype(np.int64)
    return frame, scale


def file_sha256(path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# ---------------------------------------------------------------------------------------------
# Fitting
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class FitOutcome:
    """A fitted model and how it was obtained.

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


def fit_model(frame: pd.DataFrame, structure: str = "paper", reference=None, scale=None, name: str = "fitted",
              source: dict | None = None) -> FitOutcome:
    """Fit the cumulative link mixed model to judgements and wrap it as a generator.

    Parameters
    ----------
    frame : pandas.DataFrame
        Checked judgements (see :func:`read_judgements`).
    structure : {'paper', 'maximal', 'intercepts'}
        Random-effects structure (docs/model.md, "Random-effects structures"); 'paper' is maximal
        without the document term when every document has one annotator.
    reference : str, optional
        Reference system; default the first in sorted order (as
        :func:`simdesign.clmm.fit`), so to compare with the paper's models
        pass '__REFERENCE__'.
    scale : sequence of int, optional
        Default: the observed score values.
    name : str
    source : dict, optional
        Recorded in the provenance (e.g. file name and sha256).

    Returns
    -------
    FitOutcome

    Raises
    ------
    FitError
        The fit broke down numerically (status 'error').
    """
    scale = validate_judgements(frame, scale)
    result = clmm.fit(frame, structure=structure, reference=reference)
    if result.status == "error":
        raise FitError(f"The model fit failed: {result.message}")
    systems = list(result.systems)
    n_systems = len(systems)
    annotator_cov = _full_covariance(result, "annotator", n_systems)
    document_cov = _full_covariance(result, "document", n_systems)
    effect_cov = np.asarray(result.fixed_effects_cov, dtype=float)
    effect_se = np.sqrt(np.clip(np.diag(effect_cov), 0, None)) if effect_cov.size else np.array([])
    notes = []
    if "document" not in result.terms:
        notes.append("The document term was not fitted (every document has one annotator, structure 'paper'): "
                     "document_cov is 0 and the annotator covariance also carries the document variation.")
    if structure == "intercepts":
        notes.append("Random intercepts only: each covariance has the intercept variance in [0, 0] and zeros "
                     "elsewhere, so z_s . u = u_0 for every system.")
    if result.status == "singular":
        notes.append("Singular (boundary) fit: some random-effects variance or correlation is at its bound, as is "
                     "usual for the maximal model; the covariance matrices are positive semi-definite.")
    if result.status == "not_converged":
        notes.append(f"The optimiser did not converge: {result.message}. Treat the parameters with caution.")
    provenance = {
        "software": "simdesign.clmm (native Laplace maximum likelihood, like ordinal::clmm)",
        "formula": FORMULAS["intercepts" if structure == "intercepts" else "maximal"],
        "structure": structure,
        "terms_fitted": list(result.terms),
        "reference": systems[0],
        "fitted_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "source": dict(source or {}),
        "data": {"judgements": int(len(frame)), "annotators": int(frame["annotator"].nunique()),
                 "documents": int(frame["document"].nunique()), "systems": n_systems},
        "diagnostics": {
            "status": result.status, "converged": bool(result.converged), "message": result.message,
            "loglik": float(result.loglik), "max_gradient": float(result.max_gradient),
            "hessian_condition": float(result.hessian_condition),
            "boundary": {term: np.asarray(mask, dtype=bool).tolist() for term, mask in result.boundary.items()},
            "evaluations": int(result.n_evaluations), "seconds": round(float(result.seconds), 3),
        },
        "effect_standard_errors": {system: float(se) for system, se in zip(systems[1:], effect_se)},
        "versions": package_versions(SOFTWARE),
        "notes": notes,
    }
    model = OrdinalMixedModel(name=name, scale=tuple(scale), systems=tuple(systems), thresholds=result.thresholds,
                              effects=result.effects, annotator_cov=annotator_cov, document_cov=document_cov,
                              citation="", provenance=yaml.safe_dump(provenance, sort_keys=False, width=110))
    return FitOutcome(model=model, result=result, provenance=provenance)


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
    comment = "".join(f"# {line}\n" for line in header.splitlines())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(comment + text)
    return path


def read_provenance(model: OrdinalMixedModel) -> dict:
    """The provenance of a model written by :func:`write_model`, as a mapping ({} if it is free text)."""
    try:
        data = yaml.safe_load(model.provenance) if model.provenance else {}
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


def _recovery_round(model: OrdinalMixedModel, design, structure: str, rng: np.random.Generator):
    """One simulate-and-fit round: (estimates, standard errors) or (None, why it failed)."""
    frame = model.sample(design, rng).to_frame().drop(columns="block")
    if frame["score"].nunique() != len(model.scale):
        # A category nobody used: the fit has fewer thresholds than the truth.
        return None, f"score values {sorted(set(model.scale) - set(frame['score']))} unused"
    result = clmm.fit(frame, structure=structure, reference=model.systems[0])
    if result.status in ("error", "not_converged"):
        return None, f"{result.status}: {result.message}"
    return _fit_parameters(result, model.systems)


def parameter_recovery(model: OrdinalMixedModel, design, rounds: int, rng: np.random.Generator,
                       structure: str = "paper", jobs: int = 1) -> pd.DataFrame:
    """Simulate from ``model``, refit, repeat: the bias and Wald coverage of the fitter.

    Parameters
    ----------
    model : OrdinalMixedModel
        The truth; its first system is the reference of every fit.
    design : BlockDesign or PoolDesign
    rounds : int
    rng : numpy.random.Generator
    structure : str
        Random-effects structure of the fits. It should match the truth
        ('paper' or 'maximal' for the presets): a smaller structure
        attenuates thresholds and effects (the latent scale shrinks).
    jobs : int
        joblib workers. Each round has its own stream spawned from ``rng``,
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
    from joblib import Parallel, delayed

    truth = _true_parameters(model)
    outcomes = Parallel(n_jobs=jobs)(delayed(_recovery_round)(model, design, structure, stream)
                                     for stream in rng.spawn(rounds))
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
