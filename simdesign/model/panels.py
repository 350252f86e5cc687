"""Annotator panels: several groups of annotators judging the same outputs.

A panel study (Iskender, Polzehl & Möller 2021) has, for example, a small
expert panel that judges every output and a large crowd pool from which a
few workers judge each output. Both panels see the *same* outputs: the
document random effects v_d and the fixed effects beta are shared; each
panel has its own annotators, its own noise level and its own spammers.

Parameterisation, for an annotator ``a`` of panel ``p`` judging system ``s``
on document ``d`` (the model of :mod:`simdesign.model`, with three panel
parameters)::

    eta    = beta_s + slope_sd_p * z_s . u_a + z_s . v_d     u_a ~ N(0, Sigma_annotator)
    latent = eta + noise_p * epsilon                         epsilon ~ standard logistic
    score  = the scale value of the category latent falls in (thresholds theta)

* ``noise`` scales the latent logistic error (1 = the model's own error);
  larger noise flattens the response probabilities towards the thresholds'
  marginal split, i.e. a less attentive or less competent annotator.
* ``slope_sd`` scales each annotator's random intercept and slopes, so the
  panel's annotator covariance is ``slope_sd**2 * Sigma_annotator``
  (1 = the model's, 0 = annotators who differ only by noise).
* ``spammer_share``: ``round(spammer_share * n)`` of the panel's ``n``
  annotators, chosen at random in every study, are spammers: each of their
  judgements is a value drawn uniformly from the scale, independently of
  the output.

A panel either judges everything (``annotators: n, judge: all``: every
annotator judges every output) or is a pool (``pool: M, per_output: k``:
each document gets k distinct workers of the M, drawn as in a ``pool``
design, who judge the outputs of all systems for that document, the
package's convention for every design).

With a single panel of defaults (noise 1, slope_sd 1, no spammers),
:func:`sample_panels` makes exactly the draws of
:meth:`OrdinalMixedModel.sample` for the corresponding block or pool design,
so panels extend the model without changing it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from simdesign.core.designs import BlockDesign, PoolDesign
from simdesign.core.errors import ConfigError, from_mapping
from simdesign.core.judgements import Judgements
from simdesign.model import OrdinalMixedModel
from simdesign.model.common import fixed_order_product

PANEL_KEYS = ("annotators", "judge", "pool", "per_output", "noise", "slope_sd", "spammer_share")


@dataclass(frozen=True)
class PanelSpec:
    """One panel of annotators (see the module docstring for the parameterisation).

    Parameters
    ----------
    name : str
    annotators : int, optional
        Panel size when every annotator judges every output (``judge='all'``).
    judge : {'all'}, optional
    pool : int, optional
        Pool size M of a crowd panel.
    per_output : int, optional
        Distinct workers k of the pool judging each output.
    noise : float, default 1
        Scale of the latent logistic error (> 0).
    slope_sd : float, default 1
        Scale of the annotator random effects (>= 0); their covariance is multiplied by its square.
    spammer_share : float, default 0
        Share of the panel's annotators who answer uniformly at random on the scale, in [0, 1].

    Examples
    --------
    >>> PanelSpec("expert", annotators=2, judge="all", noise=0.5).judges_all
    True
    """

    name: str
    annotators: int | None = None
    judge: str | None = None
    pool: int | None = None
    per_output: int | None = None
    noise: float = 1.0
    slope_sd: float = 1.0
    spammer_share: float = 0.0

    def __post_init__(self):
        problems = panel_problems(self)
        if problems:
            raise ConfigError(problems)
        for key in ("noise", "slope_sd", "spammer_share"):
            object.__setattr__(self, key, float(getattr(self, key)))

    @property
    def judges_all(self) -> bool:
        return self.judge == "all"

    @property
    def judgements_per_output(self) -> int:
        return self.annotators if self.judges_all else self.per_output

    def design(self, docs: int):
        """The panel's assignment as a design: one block of all annotators, or a pool."""
        if self.judges_all:
            return BlockDesign(blocks=1, docs_per_block=docs, annotators_per_block=self.annotators)
        return PoolDesign(docs=docs, annotators=self.pool, judgements_per_output=self.per_output)

    def to_mapping(self) -> dict:
        """The panel as a config writes it (without its name)."""
        keys = ("annotators", "judge") if self.judges_all else ("pool", "per_output")
        return {**{key: getattr(self, key) for key in keys}, "noise": self.noise, "slope_sd": self.slope_sd,
                "spammer_share": self.spammer_share}


def _is_count(value) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, np.integer)) and value >= 1


def _is_number(value) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and bool(np.isfinite(value))


def panel_problems(spec: PanelSpec) -> list[str]:
    """Every problem with a panel's fields, each naming ``panels.<name>.<field>`` and what it allows."""
    where = f"panels.{spec.name}"
    problems = []
    if spec.judge is not None or spec.annotators is not None:
        if spec.judge != "all":
            problems.append(f"The '{where}.judge' field must be 'all' (with 'annotators'); got {spec.judge!r}")
        if not _is_count(spec.annotators):
            problems.append(f"The '{where}.annotators' field must be a positive integer; got {spec.annotators!r}")
        if spec.pool is not None or spec.per_output is not None:
            problems.append(f"The panel '{spec.name}' either judges all outputs ('annotators', 'judge: all') or is "
                            f"a pool ('pool', 'per_output'), not both")
    elif not _is_count(spec.pool) or not _is_count(spec.per_output):
        problems.append(f"The panel '{spec.name}' needs 'annotators' with 'judge: all', or 'pool' and 'per_output' "
                        f"(positive integers); got pool {spec.pool!r}, per_output {spec.per_output!r}")
    elif spec.per_output > spec.pool:
        problems.append(f"The '{where}.per_output' field must be at most 'pool' ({spec.pool}); got {spec.per_output}")
    if not _is_number(spec.noise) or spec.noise <= 0:
        problems.append(f"The '{where}.noise' field must be a number > 0; got {spec.noise!r}")
    if not _is_number(spec.slope_sd) or spec.slope_sd < 0:
        problems.append(f"The '{where}.slope_sd' field must be a number >= 0; got {spec.slope_sd!r}")
    if not _is_number(spec.spammer_share) or not 0 <= spec.spammer_share <= 1:
        problems.append(f"The '{where}.spammer_share' field must be a number in [0, 1]; got {spec.spammer_share!r}")
    return problems


def parse_panels(raw, errors: list[str]) -> dict:
    """The ``panels`` mapping of a config -> ``{name: PanelSpec}``, in the order written.

    Problems are appended to ``errors`` (each naming the field), so a config reports them all at once.
    """
    if not isinstance(raw, dict) or not raw:
        errors.append("The 'panels' field must be a non-empty mapping of panel name -> settings, e.g. "
                      "{expert: {annotators: 2, judge: all}, crowd: {pool: 200, per_output: 24}}")
        return {}
    panels = {str(name): from_mapping(PanelSpec, settings, f"panels.{name}", PANEL_KEYS, errors, name=str(name))
              for name, settings in raw.items()}
    return {name: spec for name, spec in panels.items() if spec is not None}


@dataclass(frozen=True)
class PanelSample:
    """One simulated panel study.

    Attributes
    ----------
    judgements : dict of str -> Judgements
        Per panel, the wide table (one row per assigned annotator and document, one column per system).
    spammers : dict of str -> ndarray of bool
        Per panel, which of its annotators (dense ids as in its judgements) are spammers.
    document_part : ndarray, shape (docs, n_systems)
        The shared document contributions z_s . v_d.
    """

    judgements: dict
    spammers: dict
    document_part: np.ndarray


def sample_panels(model: OrdinalMixedModel, docs: int, panels: dict, rng: np.random.Generator,
                  effect="fitted") -> PanelSample:
    """Sample one study in which every panel judges the same ``docs`` documents' outputs.

    Draw order (fixed, so a seed reproduces a study): per panel in the
    order given, its assignment, its annotator effects, then (after the
    first panel's annotator effects only) the shared document effects, its
    latent noise, then its spammers and their answers. One panel of
    defaults thus draws exactly as :meth:`OrdinalMixedModel.sample` does.

    Parameters
    ----------
    model : OrdinalMixedModel
    docs : int
        Documents; every panel judges the outputs of all systems for them.
    panels : dict of str -> PanelSpec
    rng : numpy.random.Generator
    effect : {'fitted', 'zero'} or float

    Returns
    -------
    PanelSample
    """
    beta = model.effects_for(effect)
    n_systems = model.n_systems
    scale = np.asarray(model.scale, dtype=np.int64)
    judgements, spammers, document_part = {}, {}, None
    for name, spec in panels.items():
        assignment = spec.design(docs).assign(rng)
        # The loading maps iid normals to z_s . u_a; scaling it by slope_sd scales the covariance by its square.
        annotator_part = fixed_order_product(rng.standard_normal((assignment.n_annotators, n_systems)),
                                             model._annotator_loading.T)
        if spec.slope_sd != 1.0:
            annotator_part = annotator_part * spec.slope_sd
        if document_part is None:
            document_part = fixed_order_product(rng.standard_normal((docs, n_systems)), model._document_loading.T)
        eta = beta + annotator_part[assignment.annotator] + document_part[assignment.document]
        noise = rng.logistic(size=eta.shape)
        latent = eta + (noise if spec.noise == 1.0 else spec.noise * noise)
        scores = scale[np.searchsorted(model.thresholds, latent, side="left")]
        is_spammer = np.zeros(assignment.n_annotators, dtype=bool)
        n_spammers = int(round(spec.spammer_share * assignment.n_annotators))
        if n_spammers:
            is_spammer[rng.choice(assignment.n_annotators, size=n_spammers, replace=False)] = True
            rows = is_spammer[assignment.annotator]
            scores[rows] = rng.choice(scale, size=(int(rows.sum()), n_systems))
        judgements[name] = Judgements(scores=scores, annotator=assignment.annotator, document=assignment.document,
                                      block=assignment.block, systems=model.systems)
        spammers[name] = is_spammer
    return PanelSample(judgements=judgements, spammers=spammers, document_part=document_part)


def expected_output_scores(model: OrdinalMixedModel, document_part: np.ndarray, effect="fitted",
                           nodes: int = 40) -> np.ndarray:
    """Each output's expected score for a random annotator of the model (noise 1, slope_sd 1, no spammer).

    Given the output's fixed and document parts, the annotator part z_s . u_a
    is normal with variance z_s' Sigma_annotator z_s, so the expectation
    over annotators and latent noise is a 1-D Gauss-Hermite integral.

    Parameters
    ----------
    model : OrdinalMixedModel
    document_part : ndarray, shape (docs, n_systems)
    effect : {'fitted', 'zero'} or float
    nodes : int, default 40

    Returns
    -------
    ndarray, shape (docs, n_systems)
    """
    beta = model.effects_for(effect)
    design_rows = np.eye(model.n_systems)
    design_rows[:, 0] = 1.0
    sd = np.sqrt(np.einsum("si,ij,sj->s", design_rows, model.annotator_cov, design_rows))
    x, w = np.polynomial.hermite_e.hermegauss(nodes)
    w = w / w.sum()
    eta = (beta + document_part)[..., None] + sd[None, :, None] * x  # (docs, S, nodes)
    cumulative = special.expit(model.thresholds[:, None, None, None] - eta[None])  # (K-1, docs, S, nodes)
    scale = np.asarray(model.scale, dtype=float)
    # E[Y] = scale_K - sum_c (scale_{c+1} - scale_c) P(Y <= c)
    steps = np.diff(scale)[:, None, None, None]
    return (scale[-1] - (steps * cumulative).sum(axis=0)) @ w
