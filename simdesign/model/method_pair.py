"""Likert and Rank from separately fitted models over the same systems (issue 30 part 3).

The joint model (a Likert model with ``rank_noise``) puts both methods on one latent scale: the
rankings differ from the Likert scores only in their noise. On the paper's coherence rankings that
model is rejected (10 of 42 statistics outside their predictive ranges: BART is ranked first more
often and onmt_pg lower than the Likert effects predict; docs/how-to/fit-a-pilot.md), while the
rank-only model fitted to the rankings themselves (:mod:`simdesign.realdata.rank_fit`) passes. A
:class:`LikertRankModel` therefore simulates each method from the model fitted to that method's
own data:

* Likert judgements from its Likert part (an :class:`~simdesign.model.OrdinalMixedModel`, exactly
  as that model alone: same draws, so stored Likert trials stay valid);
* rankings from its ``rank_model`` (a :class:`~simdesign.model.RankOnlyModel`: Plackett-Luce with
  annotator and document random slopes, fitted to the Rank file).

The two parts share their systems (and reference system) but not a latent scale, so an effect
setting applies to each part's own fitted effects: ``fitted`` is each method's fitted system
differences (what the real data showed for that method), ``zero`` removes them on both, and a
scale factor k multiplies both (the same fraction of each method's fitted differences; the
planner's ``min_difference`` is solved on the Likert side and its factor applied to both).

The rank-only fits of the paper's two tasks ship as presets (``presets/rank_coherence.yaml``,
``presets/rank_repetition.yaml``, written by ``scripts/fit_rank_presets.py``); a config names them
as ``model: {preset: coherence, rank_model: coherence}`` (docs/how-to/likert-or-rank.md).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from simdesign.core.designs import Design
from simdesign.core.errors import ConfigError
from simdesign.core.judgements import Judgements
from simdesign.core.suggest import did_you_mean
from simdesign.core.yamlio import load_yaml
from simdesign.model import PRESETS, OrdinalMixedModel, RankOnlyModel, check_method, load_model

RANK_PRESET_FILE = "rank_{}.yaml"  # the rank-only fit of a preset's task, beside the preset's Likert file


def reordered(model: RankOnlyModel, systems) -> RankOnlyModel:
    """The same rank-only model with its systems in the order ``systems`` (same reference system).

    Parameters
    ----------
    model : RankOnlyModel
    systems : sequence of str
        A permutation of ``model.systems`` with the same first (reference) system.

    Returns
    -------
    RankOnlyModel

    Raises
    ------
    ConfigError
        Other systems, or another reference system (the effects and slopes are relative to it).

    Examples
    --------
    >>> toy = RankOnlyModel("toy", ("a", "b", "c"), [0.0, 0.5, 1.0], np.diag([0.1, 0.2]), np.diag([0.3, 0.4]))
    >>> reordered(toy, ["a", "c", "b"]).effects.tolist()
    [0.0, 1.0, 0.5]
    """
    systems = [str(s) for s in systems]
    if sorted(systems) != sorted(model.systems):
        raise ConfigError(f"The rank model {model.name!r} has the systems {list(model.systems)}, the Likert model "
                          f"{systems}: both parts of a Likert/Rank model must judge the same systems")
    if systems[0] != model.systems[0]:
        raise ConfigError(f"The rank model {model.name!r} is coded against {model.systems[0]!r}, the Likert model "
                          f"against {systems[0]!r}: refit the rank model with --reference {systems[0]}")
    position = [model.systems.index(s) for s in systems]
    slopes = np.asarray(position[1:]) - 1  # slope rows exclude the reference
    pick = np.ix_(slopes, slopes)
    return RankOnlyModel(name=model.name, systems=tuple(systems), effects=model.effects[position],
                         annotator_slope_cov=np.asarray(model.annotator_slope_cov, float)[pick],
                         document_slope_cov=np.asarray(model.document_slope_cov, float)[pick],
                         citation=model.citation, provenance=model.provenance, choice=model.choice)


@dataclass(frozen=True, eq=False)
class LikertRankModel(OrdinalMixedModel):
    """A Likert model and a rank-only model of the same systems: each method from its own fit.

    Every field of :class:`~simdesign.model.OrdinalMixedModel` describes the Likert part (its
    ``rank_noise`` must be left out); ``rank_model`` generates the rankings (module docstring).

    Parameters
    ----------
    rank_model : RankOnlyModel or dict
        The rank-only model (or its file form); put into the Likert model's system order.

    Examples
    --------
    >>> from simdesign.core.designs import BlockDesign
    >>> model = likert_rank_model("coherence", "coherence")
    >>> model.methods
    ('likert', 'rank')
    >>> model.sample(BlockDesign(2, 5, 3), np.random.default_rng(1), method="rank").scores.shape
    (30, 5)
    """

    rank_model: RankOnlyModel | None = None

    def __post_init__(self):
        super().__post_init__()
        rank_model = self.rank_model
        if isinstance(rank_model, dict):
            rank_model = RankOnlyModel.from_dict(rank_model)
        if not isinstance(rank_model, RankOnlyModel):
            raise ConfigError(f"Model '{self.name}': the 'rank_model' field must be a rank-only model "
                              f"(kind: rank_only); got {type(rank_model).__name__}")
        if self.rank_noise is not None:
            raise ConfigError(f"Model '{self.name}': give either 'rank_noise' (rankings from the Likert model) or "
                              "'rank_model' (rankings from a model fitted to rankings), not both")
        object.__setattr__(self, "rank_model", reordered(rank_model, self.systems))

    def __repr__(self) -> str:
        return (f"<LikertRankModel {self.name!r}: {len(self.systems)} systems ({', '.join(self.systems)}), "
                f"Likert scale {self.scale[0]}..{self.scale[-1]}, Rank from {self.rank_model.name!r}>")

    # Rankings come from the rank model; every other method's responses from the Likert part.
    generates_rankings = True

    def sample(self, design: Design, rng: np.random.Generator, effect="fitted", method=None,
               layout=None) -> Judgements:
        """One study: Likert scores from the Likert part, rankings from ``rank_model`` (their own draws)."""
        method = check_method(method, self)
        if method.rankings:  # a ranking study has no criteria (config checks), hence no shared layout
            return self.rank_model.sample(design, rng, effect, method=method)
        return super().sample(design, rng, effect, method, layout)

    def sample_with_document_part(self, design: Design, rng: np.random.Generator, effect="fitted", method=None,
                                  layout=None):
        method = check_method(method, self)
        if method.rankings:
            raise ConfigError(f"Model '{self.name}': its rankings come from a rank-only model, whose document "
                              "effects are on another scale than the Likert part's; only Likert studies give "
                              "their document parts")
        return super().sample_with_document_part(design, rng, effect, method, layout)

    def to_dict(self) -> dict:
        """The Likert part's file form with the rank model under ``rank_model``."""
        return {**super().to_dict(), "rank_model": self.rank_model.to_dict()}

    @classmethod
    def from_dict(cls, data: dict, name: str | None = None) -> "LikertRankModel":
        likert = OrdinalMixedModel.from_dict({k: v for k, v in data.items() if k != "rank_model"}, name)
        return with_rank_model(likert, data["rank_model"])


def with_rank_model(likert: OrdinalMixedModel, rank_model) -> LikertRankModel:
    """``likert`` (its rank_noise dropped) with ``rank_model`` generating the rankings.

    Parameters
    ----------
    likert : OrdinalMixedModel
    rank_model : RankOnlyModel or dict
    """
    fields = {f.name: getattr(likert, f.name) for f in dataclasses.fields(OrdinalMixedModel) if f.init}
    fields["rank_noise"] = None
    return LikertRankModel(**fields, rank_model=rank_model)


def load_rank_model(source, base_dir: Path | None = None) -> RankOnlyModel:
    """A rank-only model: a preset task name (its shipped fit) or a ``kind: rank_only`` model file.

    Parameters
    ----------
    source : str or path-like or RankOnlyModel or dict
        'coherence' or 'repetition' (the fit to the paper's Rank file of that task), a model file,
        a model in the file form, or a model.
    base_dir : path-like, optional
        Where a relative file path is looked for (besides the working directory).

    Raises
    ------
    ConfigError
        Neither a preset nor a rank-only model file.
    """
    if isinstance(source, RankOnlyModel):
        return source
    if isinstance(source, dict):
        return RankOnlyModel.from_dict(source)
    text = str(source)
    if text in PRESETS:
        file_name = RANK_PRESET_FILE.format(text)
        raw = resources.files("simdesign.model.presets").joinpath(file_name).read_text()
        return RankOnlyModel.from_dict(load_yaml(raw), name=Path(file_name).stem)
    path = Path(text)
    if base_dir is not None and not path.is_absolute() and not path.exists() and (Path(base_dir) / path).exists():
        path = Path(base_dir) / path
    if not path.is_file():
        raise ConfigError(f"The 'model.rank_model' field must be a preset ({', '.join(PRESETS)}: the rank-only fit "
                          f"to that task's Rank file) or a rank-only model file; got {text!r}"
                          f"{did_you_mean(text, PRESETS)}")
    try:
        model = load_model(path)
    except ConfigError as exc:
        raise ConfigError([f"The 'model.rank_model' file {text!r}: {message}" for message in exc.messages]) from exc
    if not isinstance(model, RankOnlyModel):
        raise ConfigError(f"The 'model.rank_model' file {text!r} holds a Likert model; it needs a rank-only model "
                          "(kind: rank_only, from 'simdesign fit RANKS.csv')")
    return model


def likert_rank_model(likert, rank_model, base_dir: Path | None = None) -> LikertRankModel:
    """A :class:`LikertRankModel` from a Likert model (preset, file or model) and a rank-only one.

    Examples
    --------
    >>> likert_rank_model("repetition", "repetition").rank_model.name
    'rank_repetition'
    """
    base = load_model(likert)
    if not isinstance(base, OrdinalMixedModel):
        raise ConfigError(f"A Likert/Rank model needs a Likert model; {base.name!r} is rank-only")
    return with_rank_model(base, load_rank_model(rank_model, base_dir))
