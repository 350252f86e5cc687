"""Rank judgements from the latent model: an annotator orders the outputs of one document.

The latent value of output ``s`` for (annotator ``a``, document ``d``) is
``x_s.beta + z_s.u_a + z_s.v_d + e_{a,d,s}`` as for Likert; a ranking sorts it
(rank 1 = largest latent value = best; ties have probability 0). Judgements
store *reversed* ranks, ``S + 1 - rank`` (S = best), so that, as for Likert
scores, higher means better and every test reads them the same way.

Two facts shape rank models. A ranking depends only on differences within one
(annotator, document): random intercepts cancel. And scaling beta, the random
slopes and the noise by one factor leaves rank probabilities unchanged, so
ranks fix the scale only relative to the noise. Hence two kinds of rank model:

* joint with a Likert model (:class:`simdesign.model.OrdinalMixedModel` with
  ``rank_noise``): the Likert model's beta and covariances with logistic noise
  of scale ``rank_noise`` (the Likert noise has scale 1);
* rank-only (:class:`RankOnlyModel`): beta and the slope covariances on the
  scale where the noise is standard Gumbel, the rank-ordered logit
  (Plackett-Luce) family, whose ranking likelihood is closed form given the
  random effects.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from simdesign.core.designs import Design, design_coverage
from simdesign.core.errors import ConfigError
from simdesign.core.judgements import Judgements
from simdesign.methods import all_methods, default_method, get_method, method_names
from simdesign.methods.rank import reversed_ranks  # noqa: F401 -- public here since issue 13
from simdesign.model.common import covariance_square_root, effect_scale, fixed_order_product


def __getattr__(name: str):
    # METHODS: the registered methods' names, read when asked (a plug-in registered later is included)
    if name == "METHODS":
        return method_names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


CHOICES = ("best_first", "worst_first")  # how a rank-only model builds a ranking (RankOnlyModel.choice)


def generated_methods(model) -> tuple:
    """The names of the registered methods that ``model`` generates, in registration order."""
    return tuple(method.name for method in all_methods() if method.can_generate(model))


def check_method(method, model):
    """The annotation method (an object), refused with the allowed values if the model cannot generate it."""
    method = default_method() if method is None else get_method(method)
    if not method.can_generate(model):
        raise ConfigError(f"The model generates only {', '.join(generated_methods(model))} judgements, not "
                          f"{method.name!r} ({method.model_requirement})")
    return method


@dataclass(frozen=True, eq=False)
class RankOnlyModel:
    """Rank-ordered logit (Plackett-Luce) model with annotator and document random slopes.

    Parameters
    ----------
    name : str
    systems : sequence of str
        The first is the reference (effect 0, no slope).
    effects : sequence of float
        beta per system, on the scale where the noise is standard Gumbel.
    annotator_slope_cov, document_slope_cov : array-like, shape (S-1, S-1)
        Covariance of the slopes of the non-reference systems (intercepts cancel in a ranking).
    citation, provenance : str, optional
    choice : {'best_first', 'worst_first'}, default 'best_first'
        The order in which the ranking is built: the latent value is ``eta + e`` with standard
        Gumbel ``e`` (the best output is a logit choice among all, then the best of the rest, ...;
        the usual rank-ordered logit), or ``eta - e`` (the *worst* output is a logit choice, then
        the worst of the rest, ...). Both have closed-form ranking probabilities; they differ in
        where the ranking is most decisive. On the paper's rank files worst-first fits better
        (:mod:`simdesign.realdata.rank_model_fit`).

    Examples
    --------
    >>> import numpy as np
    >>> from simdesign.core.designs import BlockDesign
    >>> model = RankOnlyModel("toy", ("a", "b", "c"), [0.0, 0.5, 1.0], np.eye(2) * 0.2, np.eye(2) * 0.1)
    >>> data = model.sample(BlockDesign(2, 3, 2), np.random.default_rng(0), method="rank")
    >>> sorted(data.scores[0].tolist())
    [1, 2, 3]
    """

    name: str
    systems: tuple
    effects: np.ndarray
    annotator_slope_cov: np.ndarray
    document_slope_cov: np.ndarray
    citation: str = ""
    provenance: str = ""
    choice: str = "best_first"
    _loadings: dict = field(init=False, repr=False)

    def __post_init__(self):
        errors: list[str] = []
        systems = tuple(str(s) for s in self.systems)
        effects = np.asarray(self.effects, dtype=float)
        if len(systems) < 2 or len(set(systems)) != len(systems):
            errors.append(f"The 'systems' field must name at least two distinct systems; got {list(systems)!r}")
        if effects.shape != (len(systems),) or not np.all(np.isfinite(effects)) or effects[0] != 0:
            errors.append(f"The 'effects' field must have one finite value per system ({len(systems)}), "
                          f"the reference's 0; got {effects.tolist()}")
        loadings = {}
        for key in ("annotator_slope_cov", "document_slope_cov"):
            cov = np.asarray(getattr(self, key), dtype=float)
            size = len(systems) - 1
            if cov.shape != (size, size) or not np.all(np.isfinite(cov)) or not np.allclose(cov, cov.T):
                errors.append(f"The '{key}' field must be a finite symmetric {size} x {size} matrix "
                              f"(one slope per non-reference system); got shape {cov.shape}")
                continue
            try:
                loadings[key] = covariance_square_root((cov + cov.T) / 2, key)
            except ConfigError as exc:
                errors.extend(exc.messages)
        if self.choice not in CHOICES:
            errors.append(f"The 'choice' field must be one of {', '.join(CHOICES)}; got {self.choice!r}")
        if errors:
            raise ConfigError([f"Model '{self.name}': {m}" for m in errors])
        object.__setattr__(self, "systems", systems)
        object.__setattr__(self, "effects", effects)
        object.__setattr__(self, "_loadings", loadings)

    @property
    def n_systems(self) -> int:
        return len(self.systems)

    @property
    def methods(self) -> tuple:
        """Annotation methods this model generates (each registered method says whether it can)."""
        return generated_methods(self)

    # A rank-only model generates rankings and nothing else.
    generates_rankings = True

    def ranking_noise(self, rng: np.random.Generator, shape: tuple) -> np.ndarray:
        """The latent noise of a ranking: standard Gumbel (the rank-ordered logit), subtracted when the
        ranking is built worst first (``choice``: the same draws, so both orders share their streams)."""
        noise = rng.gumbel(size=shape)
        return noise if self.choice == "best_first" else -noise

    def effects_for(self, effect) -> np.ndarray:
        """Fixed effects beta under an effect setting ('fitted', 'zero' or a scale factor)."""
        return self.effects * effect_scale(effect)

    def sample(self, design: Design, rng: np.random.Generator, effect="fitted", method=None) -> Judgements:
        """Sample one ranking study; scores are reversed ranks (S = best).

        Draw order: assignment, annotator slopes, document slopes, Gumbel noise (added for
        ``choice`` best_first, subtracted for worst_first). ``method``: the annotation method
        (default: the only one the model generates).
        """
        method = check_method(generated_methods(self)[0] if method is None else method, self)
        if design_coverage(design) is not None:
            raise ConfigError(f"The design {design.label} has partial coverage: a ranking needs every system's "
                              "output for the document, so a rank-only model cannot simulate it")
        assignment = design.assign(rng)
        slopes = np.zeros((assignment.n_annotators, self.n_systems))
        slopes[:, 1:] = fixed_order_product(rng.standard_normal((assignment.n_annotators, self.n_systems - 1)),
                                            self._loadings["annotator_slope_cov"].T)
        document = np.zeros((assignment.n_documents, self.n_systems))
        document[:, 1:] = fixed_order_product(rng.standard_normal((assignment.n_documents, self.n_systems - 1)),
                                               self._loadings["document_slope_cov"].T)
        eta = self.effects_for(effect) + slopes[assignment.annotator] + document[assignment.document]
        return Judgements(scores=method.responses(self, eta, rng), annotator=assignment.annotator,
                          document=assignment.document, block=assignment.block, systems=self.systems)

    def to_dict(self) -> dict:
        """The model in the package's file format (``kind: rank_only``)."""
        return {"kind": "rank_only", "name": self.name, "systems": list(self.systems),
                "effects": self.effects.tolist(), "annotator_slope_cov": np.asarray(self.annotator_slope_cov).tolist(),
                "document_slope_cov": np.asarray(self.document_slope_cov).tolist(),
                "citation": self.citation, "provenance": self.provenance,
                # written only when not the default, so existing models (and their fingerprints) are unchanged
                **({} if self.choice == "best_first" else {"choice": self.choice})}

    @classmethod
    def from_dict(cls, data: dict, name: str | None = None) -> "RankOnlyModel":
        required = ("systems", "effects", "annotator_slope_cov", "document_slope_cov")
        missing = [key for key in required if key not in data]
        if missing:
            raise ConfigError(f"A rank-only model file needs the fields {list(required)}; missing {missing}")
        return cls(name=str(data.get("name", name or "model")), systems=tuple(data["systems"]),
                   effects=data["effects"], annotator_slope_cov=data["annotator_slope_cov"],
                   document_slope_cov=data["document_slope_cov"], citation=str(data.get("citation", "")),
                   provenance=str(data.get("provenance", "")), choice=data.get("choice", "best_first"))
