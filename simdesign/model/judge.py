"""An LLM judge in the generative model: a score for every output from the latent quality the annotators see.

The model (:mod:`simdesign.model`) gives output ``(s, d)`` (system s on document d) the latent quality::

    q_sd = beta_s + z_s . v_d

the part of an annotator's latent value that does not depend on who judges (an annotator adds
``z_s . u_a`` and logistic noise, then the thresholds make a Likert score). A judge sees the same
quality with its own noise and its own per-system bias::

    J*_sd = q_sd + b_s + sigma e_sd          e_sd ~ N(0, 1)

* ``correlation`` rho: the correlation of J* with q across the documents of one system (the output-level
  part the judge must track; the documents' random parts have mean variance ``V`` over the systems,
  :func:`simdesign.model.metric.exchangeable_moments`), so ``sigma^2 = V (1 / rho^2 - 1)``. It is the
  correlation with the *latent* quality: the correlation with one annotator's score is lower, as annotator
  effects, logistic noise and the coarse scale come between (:func:`implied_human_correlation`).
* ``bias``: ``b_s`` per named system on the latent (logit) scale of the model's effects; a
  self-preferring judge has a positive bias for its own family's systems. Systems not named have 0.
* ``scale``: what the judge reports, from J* standardised by its marginal mean ``m`` and SD ``t`` over the
  model's systems and documents (one fixed transformation per judge and model, the same in every study):
  ``ordinal`` (scores 1..``levels``, cut at ``m + t Phi^-1(k / levels)``: every category about equally used;
  or, given ``thresholds`` (a fitted judge's, :mod:`simdesign.realdata.judge_fit`), score k + 1 where J* is above
  k of them: the cuts on the latent scale itself, with the biases centred as the fit reports them),
  ``probability`` (``expit(1.7 (J* - m) / t)``, a probability that the output is good) or ``continuous``
  (J* itself).
* A ``pairwise`` judge compares two outputs of one document instead (as the pairwise method's annotators do,
  :mod:`simdesign.methods.pairwise`): shown output i first and j second it prefers i when
  ``J*_id - J*_jd + position_bias > tie_band``, j when it is below ``-tie_band``, and ties in between (with
  ``position_bias`` subtracted when j is shown first). Each judge draws its own order of presentation per
  (document, pair), a fair coin, so its position bias is noise, not a system bias; ``bias`` (self-preference)
  acts through J* as for the other scales. Its verdict for the pair (i before j in the model's order) is 1, 0.5
  or 0: the target is the human win rate (:func:`simdesign.methods.pairwise.expected_win_rates`).
* Several judges (:class:`JudgePanel`): each judge its own noise; with ``error_correlation`` r their noises
  share a common part (``sqrt(r) c + sqrt(1 - r) e``): judges of one family make the same mistakes.

Presets (:data:`JUDGE_PRESETS`) say what they assume. Random numbers come only from the generators passed
in (each judge's from its own label-keyed stream, :func:`simdesign.core.seeds.judge_rng`), drawn in a fixed
order without BLAS (:func:`simdesign.model.common.fixed_order_product`).

Human scores for any set of outputs (:func:`human_scores`) are drawn from the same document parts, so
the judge and the annotators see the same outputs; the expected human score of a system over the
annotator and document populations, what every estimator of a judge-plus-human study targets, is
:meth:`simdesign.model.OrdinalMixedModel.expected_scores` (Gauss-Hermite integration).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import special

from simdesign.core.checks import is_integer, is_number
from simdesign.core.errors import ConfigError
from simdesign.core.suggest import did_you_mean
from simdesign.methods import default_method
from simdesign.methods.pairwise import PAIRWISE, pairwise_verdicts, system_pair_indices, verdict_of
from simdesign.model.common import fixed_order_product
from simdesign.model.metric import exchangeable_moments

# ordinal: scores 1..levels, as a Likert item has; pairwise: a verdict on two outputs of one document
PAIRWISE_SCALE = PAIRWISE.name  # a verdict on two outputs, as the pairwise method's annotators give
SCALES = ("ordinal", "probability", "continuous", PAIRWISE_SCALE)
PAIRWISE_KEYS = ("position_bias", "tie_band")  # a pairwise judge's own settings
JUDGE_KEYS = ("name", "preset", "scale", "levels", "correlation", "bias", "cost_per_call", "assumes", "thresholds",
              *PAIRWISE_KEYS)
PROBABILITY_SLOPE = 1.7  # expit(1.7 x) is within 0.01 of the standard normal CDF: a probability judge calibrated so

JUDGE_PRESETS = {
    "unbiased": {"scale": "ordinal", "levels": 10, "correlation": 0.7, "bias": {},
                 "assumes": "correlation 0.7 with the outputs' latent quality within a system, no system bias, a "
                            "1-10 scale whose categories are about equally used; assumed, not fitted"},
    "self_preferring": {"scale": "ordinal", "levels": 10, "correlation": 0.7, "bias": "prefers",
                        "assumes": "as 'unbiased', and +0.5 on the latent scale (about 0.7 of the outputs' SD within "
                                   "a system) for one system, its own family's (the 'prefers' field; default the "
                                   "model's last system); assumed, not fitted"},
    PAIRWISE_SCALE: {"scale": PAIRWISE_SCALE, "correlation": 0.7, "bias": {}, "position_bias": 0.25, "tie_band": 0.0,
                 "assumes": "a pairwise verdict from latent scores of correlation 0.7 with the outputs' latent "
                            "quality within a system, +0.25 on the latent scale for the output shown first "
                            "(position bias), no ties, no system bias; assumed, not fitted"},
}
SELF_PREFERENCE = 0.5


@dataclass(frozen=True)
class Judge:
    """One judge (module docstring): its scale, its correlation with the latent quality, its system biases.

    Parameters
    ----------
    name : str
    scale : {'ordinal', 'probability', 'continuous'}
    levels : int
        Categories of an ordinal judge (at least 2).
    correlation : float
        rho in (0, 1]: the correlation of the judge's latent score with the latent quality within a system.
    bias : mapping of str to float
        Latent bias per named system (others 0).
    cost_per_call : float
        What one judge call costs (the planner's unit; 0 by default).
    assumes : str
        What the judge's settings assume, for reports.
    position_bias : float
        A pairwise judge's latent advantage of the output shown first (0 by default).
    tie_band : float
        A pairwise judge's band of latent differences it calls a tie (0 by default: it always chooses).
    thresholds : tuple of float
        An ordinal judge's cut points on the latent scale (``levels - 1``, increasing), as fitted; empty (the
        default): cut so that its categories are about equally used.
    """

    name: str = "judge"
    scale: str = "ordinal"
    levels: int = 10
    correlation: float = 0.7
    bias: dict = field(default_factory=dict)
    cost_per_call: float = 0.0
    assumes: str = "settings given in the config"
    position_bias: float = 0.0
    tie_band: float = 0.0
    thresholds: tuple = ()

    def __post_init__(self):
        problems = judge_problems(self)
        if problems:
            raise ConfigError(problems)
        object.__setattr__(self, "bias", {str(k): float(v) for k, v in dict(self.bias).items()})
        object.__setattr__(self, "thresholds", tuple(float(v) for v in self.thresholds))

    def bias_vector(self, systems) -> np.ndarray:
        """b_s for every system of a model (0 for systems not named)."""
        unknown = sorted(set(self.bias) - set(systems))
        if unknown:
            raise ConfigError(f"The judge '{self.name}' has a bias for system(s) {unknown} the model does not have; "
                              f"its systems: {list(systems)}{did_you_mean(unknown[0], list(systems))}")
        return np.array([self.bias.get(s, 0.0) for s in systems], dtype=float)

    def noise_sd(self, model) -> float:
        """sigma: the judge's noise SD on the latent scale, from its correlation (module docstring)."""
        variance, _ = exchangeable_moments(model.sampled_document_cov)
        return float(np.sqrt(variance * (1.0 / self.correlation ** 2 - 1.0)))

    def marginal(self, model) -> tuple[float, float]:
        """(m, t): the mean and SD of J* over the model's systems (equally weighted, at their fitted effects) and
        documents: the judge's scale is fixed by the judge and the model, whatever effect a study simulates."""
        beta = np.asarray(model.effects, float) + self.bias_vector(model.systems)
        variance, _ = exchangeable_moments(model.sampled_document_cov)
        return float(beta.mean()), float(np.sqrt(beta.var() + variance + self.noise_sd(model) ** 2))

    @property
    def pairwise(self) -> bool:
        """Whether the judge compares two outputs (its verdicts) rather than scoring one."""
        return self.scale == PAIRWISE_SCALE

    def verdicts(self, latent: np.ndarray, first_shown: np.ndarray) -> np.ndarray:
        """A pairwise judge's verdicts from latent scores J* (documents, systems), shape (documents, pairs).

        ``first_shown``: bool (documents, pairs), True where the pair's first system (in the model's order) was
        shown first. 1: the first system preferred, 0.5: a tie, 0: the second (module docstring).
        """
        first, second = system_pair_indices(np.shape(latent)[1])
        latent = np.asarray(latent, float)
        delta = latent[:, first] - latent[:, second] + self.position_bias * np.where(first_shown, 1.0, -1.0)
        return verdict_of(delta, self.tie_band)

    def report(self, latent: np.ndarray, model) -> np.ndarray:
        """The judge's reported scores from latent scores J* (module docstring: its scale)."""
        if self.pairwise:
            raise ValueError(f"The pairwise judge '{self.name}' gives verdicts on pairs (Judge.verdicts), not scores")
        if self.scale == "continuous":
            return np.asarray(latent, float)
        if self.thresholds:  # fitted cuts on the latent scale (side as the fit's likelihood counts them)
            return 1.0 + np.searchsorted(np.asarray(self.thresholds), np.asarray(latent, float)).astype(float)
        centre, spread = self.marginal(model)
        standard = (np.asarray(latent, float) - centre) / spread
        if self.scale == "probability":
            return special.expit(PROBABILITY_SLOPE * standard)
        cuts = special.ndtri(np.arange(1, self.levels) / self.levels)
        return 1.0 + np.searchsorted(cuts, standard, side="right").astype(float)

    def uncertainty(self, scores: np.ndarray) -> np.ndarray:
        """How unsure a reported score is, in [0, 1]: 1 at the middle of the judge's scale, 0 at its ends.

        A judge is least certain where its score is nearest the scale's middle (a probability near 0.5, a
        Likert score near the middle category); a continuous judge's middle is the scores' own median.
        """
        scores = np.asarray(scores, float)
        if self.pairwise:  # a verdict: unsure only when it is a tie
            return 1.0 - np.abs(2.0 * scores - 1.0)
        if self.scale == "probability":
            position = scores
        elif self.scale == "ordinal":
            position = (scores - 1.0) / (self.levels - 1.0)
        else:
            position = special.ndtr((scores - np.median(scores)) / (scores.std() or 1.0))
        return 1.0 - np.abs(2.0 * position - 1.0)

    def to_config(self) -> dict:
        config = {"name": self.name, "scale": self.scale, "levels": self.levels, "correlation": self.correlation,
                  "bias": dict(self.bias), "cost_per_call": self.cost_per_call, "assumes": self.assumes}
        # written only for a pairwise judge (thresholds: only when given), so the other judges' study
        # fingerprints stay as they were
        return {**config, **({key: getattr(self, key) for key in PAIRWISE_KEYS} if self.pairwise else {}),
                **({"thresholds": list(self.thresholds)} if self.thresholds else {})}


def judge_problems(judge: Judge) -> list[str]:
    """Every problem of a judge's settings, each naming its field."""
    where = f"judge '{judge.name}'"
    problems = []
    if judge.scale not in SCALES:
        problems.append(f"The {where}'s 'scale' must be one of {list(SCALES)}; got {judge.scale!r}"
                        f"{did_you_mean(str(judge.scale), SCALES)}")
    if not is_integer(judge.levels, 2) or judge.levels > 1000:
        problems.append(f"The {where}'s 'levels' must be an integer from 2 to 1000; got {judge.levels!r}")
    if not is_number(judge.correlation) or not 0 < judge.correlation <= 1:
        problems.append(f"The {where}'s 'correlation' must be in (0, 1]; got {judge.correlation!r}")
    if not is_number(judge.cost_per_call) or not 0 <= judge.cost_per_call < np.inf:
        problems.append(f"The {where}'s 'cost_per_call' must be a non-negative number; got {judge.cost_per_call!r}")
    if not isinstance(judge.bias, dict) or not all(is_number(v) and np.isfinite(v) for v in judge.bias.values()):
        problems.append(f"The {where}'s 'bias' must map system names to numbers (latent bias); got {judge.bias!r}")
    if not is_number(judge.position_bias) or not np.isfinite(judge.position_bias):
        problems.append(f"The {where}'s 'position_bias' must be a number (latent units); got {judge.position_bias!r}")
    if not is_number(judge.tie_band) or not 0 <= judge.tie_band < np.inf:
        problems.append(f"The {where}'s 'tie_band' must be a non-negative number; got {judge.tie_band!r}")
    problems += _threshold_problems(judge, where)
    if judge.scale != PAIRWISE_SCALE and (judge.position_bias != 0 or judge.tie_band != 0):
        problems.append(f"The {where}'s 'position_bias' and 'tie_band' apply to a pairwise judge only "
                        f"(scale: {PAIRWISE_SCALE}); its scale is {judge.scale!r}")
    return problems


def _threshold_problems(judge: Judge, where: str) -> list[str]:
    thresholds = judge.thresholds
    if thresholds is None or (isinstance(thresholds, (list, tuple)) and not thresholds):
        return []
    if judge.scale != "ordinal":
        return [f"The {where}'s 'thresholds' apply to an ordinal judge only; its scale is {judge.scale!r}"]
    values = list(thresholds) if isinstance(thresholds, (list, tuple)) else None
    levels = judge.levels if is_integer(judge.levels, 2) else None
    if values is None or not all(is_number(v) and np.isfinite(v) for v in values):
        return [f"The {where}'s 'thresholds' must be a list of numbers (cut points on the latent scale); got "
                f"{thresholds!r}"]
    if levels is not None and len(values) != levels - 1:
        return [f"The {where}'s 'thresholds' must have levels - 1 = {levels - 1} values; got {len(values)}"]
    if np.any(np.diff(values) <= 0):
        return [f"The {where}'s 'thresholds' must be increasing; got {values}"]
    return []


def parse_judge(raw, model, default_name: str = "judge") -> Judge:
    """A judge from a config value: a preset's name, or a mapping (``preset`` plus fields overriding it).

    ``prefers`` (a self-preferring preset's system, default the model's last) may be given in the mapping.

    Examples
    --------
    >>> from simdesign.model import load_model
    >>> judge = parse_judge({"preset": "self_preferring", "prefers": "BART"}, load_model("coherence"))
    >>> judge.bias, judge.correlation
    ({'BART': 0.5}, 0.7)
    """
    if isinstance(raw, str):
        raw = {"preset": raw}
    if not isinstance(raw, dict):
        raise ConfigError(f"A judge must be a preset name ({', '.join(JUDGE_PRESETS)}) or a mapping of "
                          f"{list(JUDGE_KEYS) + ['prefers']}; got {raw!r}")
    unknown = sorted(set(raw) - set(JUDGE_KEYS) - {"prefers"})
    if unknown:
        raise ConfigError(f"Unknown judge key(s) {unknown}; allowed: {list(JUDGE_KEYS) + ['prefers']}")
    values = {}
    preset = raw.get("preset")
    if preset is not None:
        if preset not in JUDGE_PRESETS:
            raise ConfigError(f"The judge 'preset' must be one of {list(JUDGE_PRESETS)}; got {preset!r}"
                              f"{did_you_mean(str(preset), list(JUDGE_PRESETS))}")
        values = dict(JUDGE_PRESETS[preset])
        if values["bias"] == "prefers":
            prefers = raw.get("prefers", model.systems[-1])
            values["bias"] = {str(prefers): SELF_PREFERENCE}
            values["assumes"] = values["assumes"].replace("the 'prefers' field; default the model's last system",
                                                          f"here {prefers}")
        elif "prefers" in raw:  # any other preset made self-preferring
            values["bias"] = {str(raw["prefers"]): SELF_PREFERENCE}
            values["assumes"] += (f"; and +{SELF_PREFERENCE} on the latent scale for {raw['prefers']} (its own "
                                  "family's system: self-preference)")
    elif "prefers" in raw:
        raise ConfigError("The judge field 'prefers' goes with a 'preset' (self_preferring, or any other to make it "
                          "self-preferring); give 'bias' otherwise")
    if "prefers" in raw and "bias" in raw:
        raise ConfigError("Give the judge's 'prefers' (a self-preferring preset's system) or its 'bias', not both")
    values.update({key: value for key, value in raw.items() if key not in ("preset", "prefers")})
    values.setdefault("name", preset or default_name)
    judge = Judge(**values)
    judge.bias_vector(model.systems)  # a bias for a system the model lacks is refused here
    return judge


@dataclass(frozen=True)
class JudgePanel:
    """One or more judges whose noises are correlated with ``error_correlation`` (module docstring)."""

    judges: tuple
    error_correlation: float = 0.0

    def __post_init__(self):
        if not self.judges:
            raise ConfigError("A judge-plus-human study needs at least one judge")
        names = [judge.name for judge in self.judges]
        if len(set(names)) != len(names):
            raise ConfigError(f"The judges' names must differ; got {names}")
        if not is_number(self.error_correlation) or not 0 <= self.error_correlation < 1:
            raise ConfigError(f"The 'error_correlation' field must be in [0, 1); got {self.error_correlation!r}")
        if len({judge.pairwise for judge in self.judges}) > 1:
            raise ConfigError(f"The judges must all give pairwise verdicts or all score outputs (their mean is what "
                              f"PPI uses); scales: {[judge.scale for judge in self.judges]}")

    @property
    def pairwise(self) -> bool:
        """Whether the panel's judges give verdicts on pairs."""
        return self.judges[0].pairwise

    def scores(self, model, quality: np.ndarray, streams) -> np.ndarray:
        """Every judge's reported score of every output, shape (judges, documents, systems); for pairwise judges
        every judge's verdict on every pair of every document, shape (judges, documents, pairs).

        ``quality``: q, shape (documents, systems); ``streams``: one generator per judge (its own draws: the
        noise, then a pairwise judge's order of presentation), and with ``error_correlation`` a last one for the
        common part.
        """
        quality = np.asarray(quality, float)
        r = float(self.error_correlation)
        common = streams[len(self.judges)].standard_normal(quality.shape) if r > 0 else 0.0
        n_pairs = quality.shape[1] * (quality.shape[1] - 1) // 2
        out = np.empty((len(self.judges), quality.shape[0], n_pairs if self.pairwise else quality.shape[1]))
        for k, judge in enumerate(self.judges):
            own = streams[k].standard_normal(quality.shape)
            noise = np.sqrt(r) * common + np.sqrt(1.0 - r) * own
            latent = quality + judge.bias_vector(model.systems)[None, :] + judge.noise_sd(model) * noise
            if judge.pairwise:
                out[k] = judge.verdicts(latent, streams[k].random((quality.shape[0], n_pairs)) < 0.5)
            else:
                out[k] = judge.report(latent, model)
        return out

    def combined(self, scores: np.ndarray) -> np.ndarray:
        """The one prediction PPI uses: the judges' mean score (one judge: its score)."""
        return scores.mean(axis=0)


# ---------------------------------------------------------------------------------------------------------
# Outputs and human scores drawn from the model with the document parts the judge sees
# ---------------------------------------------------------------------------------------------------------

def document_parts(model, n_documents: int, rng: np.random.Generator) -> np.ndarray:
    """z_s . v_d for ``n_documents`` fresh documents, shape (documents, systems), in the model's own draw."""
    loading = model._document_loading  # the model's fixed root of its (intercept-scaled) document covariance
    return fixed_order_product(rng.standard_normal((n_documents, model.n_systems)), loading.T)


def latent_quality(model, document_part: np.ndarray, effect=1.0) -> np.ndarray:
    """q = beta + z_s . v_d, shape (documents, systems)."""
    return np.asarray(model.effects_for(effect), float)[None, :] + document_part


@dataclass(frozen=True)
class HumanScores:
    """Human scores of chosen outputs: one entry per score."""

    system: np.ndarray
    document: np.ndarray
    annotator: np.ndarray
    score: np.ndarray
    n_annotators: int


def human_scores(model, assignment, slots: np.ndarray, document_part: np.ndarray, rng: np.random.Generator,
                 effect=1.0, keep=None) -> HumanScores:
    """Likert scores of a realised human design over chosen outputs (the model's own rule, module docstring).

    Parameters
    ----------
    model : OrdinalMixedModel
    assignment : simdesign.core.designs.Assignment
        Who judges which document *slot*.
    slots : ndarray of int, shape (slots, systems)
        The document whose output of system s fills slot j (the same column for every system when humans
        judge every system's output of a document).
    document_part : ndarray, shape (documents, systems)
        The documents' random parts (those the judge saw).
    rng : numpy.random.Generator
        The annotators' random parts, then the latent noise.
    keep : ndarray of bool, shape (slots,), optional
        Slots that exist (a last block partly filled); default all.
    """
    eta, documents = _human_latent(model, assignment, slots, document_part, rng, effect)
    scores = default_method().responses(model, eta, rng)
    return _kept_scores(np.asarray(scores, float), documents, assignment, keep)


def _human_latent(model, assignment, slots, document_part, rng, effect) -> tuple[np.ndarray, np.ndarray]:
    """(eta, documents), each (annotator-slot rows, systems): the annotators' latent values of the outputs they
    judge (annotator parts drawn here) and the document of each."""
    annotator_part = fixed_order_product(rng.standard_normal((assignment.n_annotators, model.n_systems)),
                                         model._annotator_loading.T)
    documents = slots[assignment.document]  # (rows, systems)
    part = np.take_along_axis(document_part, documents, axis=0) if documents.size else documents.astype(float)
    return np.asarray(model.effects_for(effect), float)[None, :] + annotator_part[assignment.annotator] + part, \
        documents


def _kept_scores(scores: np.ndarray, documents: np.ndarray, assignment, keep) -> HumanScores:
    """One entry per score of kept slots (and, for verdicts, pairs shown): column k of ``scores`` is the
    'system' (a system, or a pair for verdicts)."""
    rows = np.ones(assignment.annotator.size, bool) if keep is None else keep[assignment.document]
    columns = np.broadcast_to(np.arange(scores.shape[1]), scores.shape)
    annotators = np.broadcast_to(assignment.annotator[:, None], scores.shape)
    if documents.shape != scores.shape:  # verdicts: a row's pairs are all of its one document
        documents = np.broadcast_to(documents[:, :1], scores.shape)
    shown = rows[:, None] & np.isfinite(scores)
    return HumanScores(columns[shown], documents[shown], annotators[shown], scores[shown], assignment.n_annotators)


def human_verdicts(model, parameters, assignment, slots: np.ndarray, document_part: np.ndarray,
                   rng: np.random.Generator, effect=1.0, keep=None) -> HumanScores:
    """Human pairwise verdicts over chosen documents: each annotator-slot row judges the document's pairs as the
    pairwise method's annotators do (:func:`simdesign.methods.pairwise.pairwise_verdicts` with ``parameters``).

    As :func:`human_scores` (``slots``: the same document for every system), but the entries' ``system`` is the
    pair's index (in :func:`numpy.triu_indices` order) and ``score`` the verdict for the pair's first system.
    """
    eta, documents = _human_latent(model, assignment, slots, document_part, rng, effect)
    verdicts, _ = pairwise_verdicts(parameters, eta, rng, one_at_random=False)
    return _kept_scores(verdicts, documents, assignment, keep)


def implied_human_correlation(model, judge: Judge, rng: np.random.Generator, documents: int = 20000,
                              effect="zero") -> float:
    """The correlation of the judge's reported score with one annotator's score within a system (by simulation).

    Mean over systems of the correlation, across ``documents`` outputs, of the judge's score with the score
    of a fresh annotator (each output its own annotator), at ``effect``.
    """
    part = document_parts(model, documents, rng)
    quality = latent_quality(model, part, effect)
    judged = JudgePanel((judge,)).scores(model, quality, [rng])[0]
    annotator_part = fixed_order_product(rng.standard_normal((documents, model.n_systems)),
                                         model._annotator_loading.T)
    human = default_method().responses(model, quality + annotator_part, rng).astype(float)
    return float(np.mean([np.corrcoef(judged[:, s], human[:, s])[0, 1] for s in range(model.n_systems)]))
