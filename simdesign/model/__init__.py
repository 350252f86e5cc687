"""The generative model: an ordinal-logit (cumulative link) mixed model.

An annotator ``a`` judges system ``s`` on document ``d`` (docs/model.md)::

    z_s = (1, e_s)
    eta = beta_s + z_s . u_a + z_s . v_d     u_a ~ N(0, Sigma_annotator), v_d ~ N(0, Sigma_document)
    P(Y <= c) = logistic(theta_c - eta)

Random effects are drawn fresh in every call to :meth:`OrdinalMixedModel.sample`.
The paper's annotator covariance matrices are singular (rank 3 of 5), so the
square root is taken by eigen-decomposition, which accepts positive
semi-definite matrices; plain Cholesky would fail on them.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np
import yaml
from scipy import special

from simdesign.core.designs import Design, design_coverage
from simdesign.core.errors import ConfigError
from simdesign.core.judgements import Judgements
from simdesign.model.common import (PSD_TOLERANCE, covariance_square_root,  # noqa: F401 (public)
                                    effect_scale, fixed_order_product)
from simdesign.methods import get_method, method_names
from simdesign.methods.pairwise import PairwiseParameters
from simdesign.model.ranks import RankOnlyModel, check_method, generated_methods, reversed_ranks  # noqa: F401
from simdesign.core.checks import is_number
from simdesign.core.suggest import did_you_mean
from simdesign.core.yamlio import load_yaml, read_text

PRESETS = ("coherence", "repetition")


def __getattr__(name: str):
    # METHODS: the registered annotation methods' names, read when asked (a plug-in registered later is included)
    if name == "METHODS":
        return method_names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True, eq=False)
class OrdinalMixedModel:
    """Cumulative-logit model with annotator and document random intercepts and slopes.

    Parameters
    ----------
    name : str
    scale : sequence of int
        Ordered score values, e.g. ``[1, ..., 7]``; samples use these values.
    systems : sequence of str
        System names; the first is the reference.
    thresholds : sequence of float
        theta_1 < ... < theta_{K-1}, K = len(scale).
    effects : sequence of float
        beta per system on the latent scale (first is 0).
    annotator_cov, document_cov : array-like, shape (S, S)
        Covariance of (intercept, slope for each non-reference system).
    citation, provenance : str, optional
    rank_noise : float, optional
        Scale of the logistic latent noise when this model generates rankings
        (relative to the Likert noise, scale 1): a joint Likert/Rank model
        (:mod:`simdesign.model.ranks`). Without it the model generates Likert only.
    document_intercept_scale : float, default 1
        "Document difficulty" (Rankel et al. 2011): the document random
        intercept's standard deviation is multiplied by this factor, i.e. the
        sampled document covariance is ``D @ document_cov @ D`` with
        ``D = diag(scale, 1, ..., 1)`` (the intercept variance times scale^2,
        its covariances with the slopes times scale). The intercept is shared
        by every system's output for a document, so paired tests cancel it and
        unpaired tests do not. At 1 the model and its draws are exactly
        today's; ``document_cov`` always holds the unscaled matrix.

    Examples
    --------
    >>> import numpy as np
    >>> from simdesign.core.designs import BlockDesign
    >>> model = load_model("coherence")
    >>> data = model.sample(BlockDesign(20, 5, 3), np.random.default_rng(1))
    >>> data.scores.shape
    (300, 5)
    """

    name: str
    scale: tuple
    systems: tuple
    thresholds: np.ndarray
    effects: np.ndarray
    annotator_cov: np.ndarray
    document_cov: np.ndarray
    citation: str = ""
    provenance: str = ""
    rank_noise: float | None = None
    document_intercept_scale: float = 1.0
    preferences: object = None
    _annotator_loading: np.ndarray = field(init=False, repr=False)
    _document_loading: np.ndarray = field(init=False, repr=False)

    def __repr__(self) -> str:
        # short: the parameters (two S x S covariances among them) are in to_dict() and the model file
        scale = f"{self.scale[0]}..{self.scale[-1]}"
        return (f"<OrdinalMixedModel {self.name!r}: {len(self.systems)} systems ({', '.join(self.systems)}), "
                f"scale {scale}" + (f", {' and '.join(get_method(m).label for m in self.methods)}"
                                    if len(self.methods) > 1 else "") + ">")

    def __post_init__(self):
        errors: list[str] = []
        scale = tuple(self.scale)
        systems = tuple(str(s) for s in self.systems)
        n_systems = len(systems)
        thresholds = np.asarray(self.thresholds, dtype=float)
        effects = np.asarray(self.effects, dtype=float)
        if len(scale) < 2 or any(not isinstance(v, (int, np.integer)) or isinstance(v, bool) for v in scale) \
                or list(scale) != sorted(set(scale)):
            errors.append(f"The 'scale' field must list at least two increasing integer score values; got {list(scale)!r}")
        if n_systems < 2 or len(set(systems)) != n_systems:
            errors.append(f"The 'systems' field must name at least two distinct systems; got {list(systems)!r}")
        if thresholds.ndim != 1 or len(thresholds) != len(scale) - 1:
            errors.append(f"The 'thresholds' field must have len(scale) - 1 = {len(scale) - 1} values; "
                          f"got {thresholds.size}")
        elif not np.all(np.isfinite(thresholds)) or np.any(np.diff(thresholds) <= 0):
            errors.append(f"The 'thresholds' field must be finite and strictly increasing; got {thresholds.tolist()}")
        if effects.shape != (n_systems,):
            errors.append(f"The 'effects' field must have one value per system ({n_systems}); got {effects.size}")
        elif not np.all(np.isfinite(effects)) or effects[0] != 0:
            errors.append(f"The 'effects' field must be finite with the reference system's effect 0; "
                          f"got {effects.tolist()}")
        intercept_scale = self.document_intercept_scale
        if not is_number(intercept_scale) or not np.isfinite(intercept_scale) or intercept_scale < 0:
            errors.append(f"The 'document_intercept_scale' field must be a non-negative number; got {intercept_scale!r}")
            intercept_scale = 1.0
        covs = {}
        for key in ("annotator_cov", "document_cov"):
            cov = np.asarray(getattr(self, key), dtype=float)
            if cov.shape != (n_systems, n_systems):
                errors.append(f"The '{key}' field must be a {n_systems} x {n_systems} matrix "
                              f"(intercept + one slope per non-reference system); got shape {cov.shape}")
                continue
            if not np.all(np.isfinite(cov)) or not np.allclose(cov, cov.T, rtol=1e-8, atol=1e-10):
                errors.append(f"The '{key}' matrix must be finite and symmetric")
                continue
            if key == "document_cov" and intercept_scale != 1:
                cov = _scale_intercept(cov, intercept_scale)
            try:
                covs[key] = covariance_square_root((cov + cov.T) / 2, key)
            except ConfigError as exc:
                errors.extend(exc.messages)
        if self.rank_noise is not None and (not is_number(self.rank_noise) or not np.isfinite(self.rank_noise)
                                            or self.rank_noise <= 0):
            errors.append(f"The 'rank_noise' field must be a positive number (or left out); got {self.rank_noise!r}")
        if self.preferences is not None:
            try:
                object.__setattr__(self, "preferences", PairwiseParameters.from_config(self.preferences))
            except ConfigError as exc:
                errors.extend(exc.messages)
        if errors:
            raise ConfigError([f"Model '{self.name}': {m}" for m in errors])

        # Row s of the design matrix is z_s = (1, e_s); z_s . u = u_0 + u_s for s > 0.
        design_rows = np.eye(n_systems)
        design_rows[:, 0] = 1.0
        set_ = object.__setattr__
        set_(self, "scale", scale)
        set_(self, "systems", systems)
        set_(self, "thresholds", thresholds)
        set_(self, "effects", effects)
        set_(self, "document_intercept_scale", float(intercept_scale))
        set_(self, "annotator_cov", (np.asarray(self.annotator_cov, float) + np.asarray(self.annotator_cov, float).T) / 2)
        set_(self, "document_cov", (np.asarray(self.document_cov, float) + np.asarray(self.document_cov, float).T) / 2)
        # Loadings map iid standard normals straight to per-system random contributions.
        set_(self, "_annotator_loading", fixed_order_product(design_rows, covs["annotator_cov"]))
        set_(self, "_document_loading", fixed_order_product(design_rows, covs["document_cov"]))

    @property
    def n_systems(self) -> int:
        return len(self.systems)

    @property
    def methods(self) -> tuple:
        """Annotation methods this model generates (each registered method says whether it can)."""
        return generated_methods(self)

    @property
    def generates_rankings(self) -> bool:
        """Whether the model generates rankings: with a ``rank_noise`` (a joint Likert/Rank model)."""
        return self.rank_noise is not None

    def ranking_noise(self, rng: np.random.Generator, shape: tuple) -> np.ndarray:
        """The latent noise of a ranking: logistic of scale ``rank_noise`` (the Likert noise has scale 1)."""
        return self.rank_noise * rng.logistic(size=shape)

    @property
    def sampled_document_cov(self) -> np.ndarray:
        """The document covariance the model samples from: ``document_cov`` with its intercept scaled."""
        if self.document_intercept_scale == 1:
            return self.document_cov
        return _scale_intercept(self.document_cov, self.document_intercept_scale)

    def with_document_intercept_scale(self, scale: float) -> "OrdinalMixedModel":
        """The same model with another document intercept scale (see the class docstring)."""
        data = self.to_dict()
        data["document_intercept_scale"] = scale
        return OrdinalMixedModel.from_dict(data, name=self.name)

    def effects_for(self, effect) -> np.ndarray:
        """Fixed effects beta under an effect setting ('fitted', 'zero' or a scale factor)."""
        return self.effects * effect_scale(effect)

    def sample(self, design: Design, rng: np.random.Generator, effect="fitted", method=None,
               layout=None) -> Judgements:
        """Sample one study: fresh random effects, assignment and scores.

        Parameters
        ----------
        design : BlockDesign or PoolDesign
        rng : numpy.random.Generator
            The only source of randomness. Draw order is fixed (assignment,
            annotator effects, document effects, latent noise), so a seed
            reproduces a study exactly.
        effect : {'fitted', 'zero'} or float, default 'fitted'
        method : str or AnnotationMethod, optional
            A registered annotation method (:mod:`simdesign.methods`; default the
            default method, Likert). The method turns the latent values into its
            responses (Rank: reversed ranks, S = best); the model's draws come first,
            in the same order for every method.

        layout : simdesign.core.designs.Layout, optional
            A layout drawn before (:func:`~simdesign.core.designs.draw_layout`): its assignment and
            coverage are used instead of drawing them from ``rng`` (several criteria of one study).

        Returns
        -------
        Judgements
        """
        return self.sample_with_document_part(design, rng, effect, method, layout)[0]

    def sample_with_document_part(self, design: Design, rng: np.random.Generator, effect="fitted",
                                  method=None, layout=None) -> tuple[Judgements, np.ndarray]:
        """:meth:`sample`, and the study's document random parts z_s . v_d, shape (n_documents, S).

        The same draws as :meth:`sample` (one generator, one draw order), for callers that need the
        outputs' latent quality (metric validation).
        """
        method = check_method(method, self)
        beta = self.effects_for(effect)
        assignment = design.assign(rng) if layout is None else layout.assignment
        n_systems = self.n_systems
        annotator_part = fixed_order_product(rng.standard_normal((assignment.n_annotators, n_systems)),
                                             self._annotator_loading.T)
        document_part = fixed_order_product(rng.standard_normal((assignment.n_documents, n_systems)),
                                            self._document_loading.T)
        eta = beta + annotator_part[assignment.annotator] + document_part[assignment.document]
        coverage = design_coverage(design)
        if coverage is not None and method.rankings:
            raise ConfigError(f"The design {design.label} has partial coverage: a ranking needs every system's "
                              f"output for the document, so 'method: {method.name}' cannot be used with 'coverage'")
        judged = method.judge(self, eta, rng, design)
        scores = judged.pop("scores")
        if coverage is not None and judged:
            raise ConfigError(f"The design {design.label} has partial coverage, which 'method: {method.name}' "
                              "does not support (its judgements cover several outputs)")
        if coverage is not None:
            # drawn after every other draw, so the outputs that exist have the scores the complete design's
            # study on the same stream would have; the others do not exist (NaN, never a score)
            covered = coverage.covered(rng, self.systems, assignment.n_documents) if layout is None \
                else layout.covered
            scores = np.where(covered[assignment.document], scores, np.nan)
        return Judgements(scores=scores, annotator=assignment.annotator, document=assignment.document,
                          block=assignment.block, systems=self.systems, **judged), document_part

    def marginal_probabilities(self, effect="fitted", nodes: int = 80) -> np.ndarray:
        """P(score = category) per system, integrating over the random effects.

        Per system, the random part z_s.(u + v) is normal with variance
        z_s' (Sigma_a + Sigma_d) z_s, so a 1-D Gauss-Hermite rule is exact
        up to quadrature error (about 1e-12 with 80 nodes here).

        Returns
        -------
        ndarray, shape (n_systems, len(scale))
        """
        beta = self.effects_for(effect)
        design_rows = np.eye(self.n_systems)
        design_rows[:, 0] = 1.0
        total = self.annotator_cov + self.sampled_document_cov
        sd = np.sqrt(np.einsum("si,ij,sj->s", design_rows, total, design_rows))
        x, w = np.polynomial.hermite_e.hermegauss(nodes)
        w = w / w.sum()
        eta = beta[:, None] + sd[:, None] * x[None, :]  # (S, nodes)
        cum = special.expit(self.thresholds[None, :, None] - eta[:, None, :])  # (S, K-1, nodes)
        cum = np.concatenate([np.zeros((self.n_systems, 1, nodes)), cum, np.ones((self.n_systems, 1, nodes))], axis=1)
        return np.diff(cum, axis=1) @ w

    def expected_scores(self, effect="fitted") -> np.ndarray:
        """Expected score per system (on the scale's values), integrated over random effects."""
        return self.marginal_probabilities(effect) @ np.asarray(self.scale, dtype=float)

    def to_dict(self) -> dict:
        """The model in the package's file format (docs/model.md, "Model files")."""
        data = {
            "name": self.name, "scale": [int(v) for v in self.scale], "systems": list(self.systems),
            "thresholds": self.thresholds.tolist(), "effects": self.effects.tolist(),
            "annotator_cov": self.annotator_cov.tolist(), "document_cov": self.document_cov.tolist(),
            "citation": self.citation, "provenance": self.provenance,
            **({} if self.rank_noise is None else {"rank_noise": float(self.rank_noise)}),
        }
        # Written only when it differs from 1, so existing models (and their results fingerprints) are unchanged.
        if self.document_intercept_scale != 1:
            data["document_intercept_scale"] = self.document_intercept_scale
        if self.preferences is not None:  # written only when set, for the same reason
            data["preferences"] = self.preferences.to_config()
        return data

    @classmethod
    def from_dict(cls, data: dict, name: str | None = None) -> "OrdinalMixedModel | RankOnlyModel":
        """Build from the package's model format or the shared JSON layout (docs/model.md)."""
        if not isinstance(data, dict):
            raise ConfigError("A model file must contain a mapping")
        if "system_names" in data:  # the shared JSON layout of ordinal::clmm fits
            return _from_shared_json(data, name)
        if data.get("kind") == "rank_only":
            return RankOnlyModel.from_dict(data, name)
        if "rank_model" in data:  # Likert and Rank from separate fits (simdesign.model.method_pair)
            from simdesign.model.method_pair import LikertRankModel

            return LikertRankModel.from_dict(data, name)
        required = ("scale", "systems", "thresholds", "effects", "annotator_cov", "document_cov")
        missing = [key for key in required if key not in data]
        if missing:
            raise ConfigError(f"A model file needs the fields {list(required)}; missing {missing}")
        not_lists = [f"The '{key}' field must be a list{' of lists (a matrix)' if key.endswith('_cov') else ''}; "
                     f"got {type(data[key]).__name__} {_shortened(data[key])}"
                     for key in required if not isinstance(data[key], list)]
        not_numbers = [problem for key in required[2:] for problem in _number_problems(key, data[key])]
        if not_lists or not_numbers:
            raise ConfigError(not_lists + not_numbers)
        return cls(name=str(data.get("name", name or "model")), scale=tuple(data["scale"]),
                   systems=tuple(data["systems"]), thresholds=data["thresholds"], effects=data["effects"],
                   annotator_cov=data["annotator_cov"], document_cov=data["document_cov"],
                   citation=str(data.get("citation", "")), provenance=str(data.get("provenance", "")),
                   rank_noise=data.get("rank_noise"),
                   document_intercept_scale=data.get("document_intercept_scale", 1.0),
                   preferences=data.get("preferences"))


def _number_problems(key: str, values) -> list[str]:
    """The entries of a model file's list of numbers (or matrix's rows) that are not numbers, each named by
    its position (a mapping or a text there reached numpy as a raw TypeError or ValueError)."""
    if not isinstance(values, list):
        return []  # said by the caller
    matrix = key.endswith("_cov")
    problems = []
    for i, value in enumerate(values):
        if matrix and not isinstance(value, list):
            problems.append(f"The '{key}' field's row {i} must be a list of numbers; got {type(value).__name__} "
                            f"{_shortened(value)}")
            continue
        for j, entry in enumerate(value if matrix else [value]):
            if isinstance(entry, bool) or not isinstance(entry, (int, float)):
                where = f"'{key}' field's entry [{i}][{j}]" if matrix else f"'{key}' field's entry {i}"
                problems.append(f"The {where} must be a number; got {type(entry).__name__} {_shortened(entry)}")
    return problems[:5]  # the first few: a wholly wrong field would list every entry


def _shortened(value, limit: int = 60) -> str:
    """repr of a value, cut for a message."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _scale_intercept(cov: np.ndarray, scale: float) -> np.ndarray:
    """D @ cov @ D with D = diag(scale, 1, ..., 1): the intercept's SD times ``scale``."""
    factors = np.ones(cov.shape[0])
    factors[0] = scale
    return np.asarray(cov, float) * np.outer(factors, factors)


def _from_shared_json(data: dict, name: str | None) -> OrdinalMixedModel:
    try:
        systems = list(data["system_names"])
        n_systems = len(systems)
        random_effects = data["random_effects"]
        annotator = np.asarray(random_effects["annotator"], float).reshape(n_systems, n_systems)
        document = np.asarray(random_effects["document"], float).reshape(n_systems, n_systems)
        thresholds = list(data["thresholds"])
        effects = list(data["coefficients"])
    except (KeyError, ValueError, TypeError) as exc:
        raise ConfigError("A model in the shared JSON layout needs system_names, coefficients, thresholds and "
                          "random_effects.annotator/document (S*S values each, row-major); "
                          f"problem: {exc}") from exc
    scale = data.get("scale", list(range(1, len(thresholds) + 2)))
    return OrdinalMixedModel(name=name or "model", scale=tuple(scale), systems=tuple(systems),
                             thresholds=thresholds, effects=effects, annotator_cov=annotator, document_cov=document,
                             citation=data.get("citation", ""), provenance=data.get("provenance", ""))


def load_model(source) -> "OrdinalMixedModel | RankOnlyModel":
    """A preset by name ('coherence', 'repetition') or a model file (YAML or JSON).

    Parameters
    ----------
    source : str or path-like or OrdinalMixedModel
        A preset name, a model file (see docs/model.md), or a model (returned as it is).

    Returns
    -------
    OrdinalMixedModel or RankOnlyModel

    Raises
    ------
    ConfigError
        Neither a preset (with the closest preset suggested) nor a readable model file.

    Examples
    --------
    >>> load_model("coherence").systems[0]
    '__REFERENCE__'
    """
    if isinstance(source, (OrdinalMixedModel, RankOnlyModel)):
        return source
    text_source = str(source)
    if text_source in PRESETS:
        text = resources.files("simdesign.model.presets").joinpath(f"{text_source}.yaml").read_text()
        return OrdinalMixedModel.from_dict(load_yaml(text), name=text_source)
    path = Path(text_source)
    if not path.is_file():
        raise ConfigError(f"The 'model' field must be a preset ({', '.join(PRESETS)}) or an existing model file; "
                          f"got {text_source!r}{did_you_mean(text_source, PRESETS)}")
    text = read_text(path, "model")
    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else load_yaml(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"Could not parse model file {path}: {exc}") from exc
    return OrdinalMixedModel.from_dict(data, name=path.stem)
