"""Pairwise preference: an annotator sees two outputs for the same document and says which is better, or ties.

The protocol of most evaluations of chat models (A/B judgements, Chatbot Arena's battles, RLHF preference
data). It is generated from the same latent values as Likert and Rank: for a pair (i, j) shown to annotator
``a`` on document ``d`` the latent difference

    delta = eta_i - eta_j + position_bias * (+1 if i is shown first else -1) + noise * L,   L ~ Logistic(0, 1)

decides the verdict: i preferred when delta > tie_band, j when delta < -tie_band, a tie in between. With
``tie_band`` 0 and no position bias, P(i preferred) = expit((eta_i - eta_j) / noise): the Bradley-Terry model
on the model's latent scale (Bradley & Terry, 1952), the model a rank-only model's rankings imply for pairs.

Which pairs each (annotator, document) judges (drawn after every other draw, like partial coverage, so the
verdicts a subset shows are those the all-pairs study on the same stream gives):

* ``pairs: all`` (the default): every pair of systems;
* ``pairs: K``: K pairs per (annotator, document), a balanced subset (every pair equally often over the rows:
  one random order of the pairs, cycled from a random offset);
* a ``battles`` design (:class:`simdesign.core.designs.BattleDesign`): one pair per judgement, drawn uniformly
  with the prompt and the judge, as in an Arena log.

The paper (Steen & Markert, 2021) measured no pairwise judgements: ``noise``, ``tie_band``, ``position_bias``
and the seconds per comparison are *assumptions*, labelled so wherever they appear
(:data:`PAIRWISE_ASSUMPTIONS`; docs/how-to/pairwise.md has a sensitivity table). A model generates pairwise
judgements only when it says so: ``model: {preset: coherence, preferences: {}}`` (every value assumed) or with
values of its own, ``preferences: {tie_band: 0.3, position_bias: 0.1, pairs: 3}``.

Judgements: the study's :attr:`~simdesign.core.judgements.Judgements.preferences` hold one verdict per
(annotator, document) row and pair of systems (1 = the first system of the pair, in model order, preferred;
0.5 a tie; 0 the second; NaN a pair not shown); its ``scores`` are each output's points in that row (wins plus
half the ties over the pairs shown, NaN for an output not shown), which no test reads: pairwise judgements go
only to tests declaring ``takes_preferences``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simdesign.core.errors import ConfigError
from simdesign.core.checks import is_number
from simdesign.methods.base import AnnotationMethod, register_method

PAIRWISE_ASSUMPTIONS = {
    # Bradley-Terry on the latent scale: P(i preferred | delta) = expit(delta) without ties (the Likert noise
    # also has scale 1)
    "noise": 1.0,
    # a band of +-0.5 latent units: 24.5% ties between outputs of equal latent value (Chatbot Arena logs have
    # about a third ties, 'tie' and 'tie (bothbad)' together: Chiang et al., 2024)
    "tie_band": 0.5,
    "position_bias": 0.0,
    "pairs": "all",
}
"""The values a model's ``preferences`` mapping assumes for what it leaves out (none measured by the paper)."""

# The column that marks a Chatbot Arena battle log (question_id, model_a, model_b, winner; simdesign.realdata reads it).
ARENA_WINNER_COLUMN = "winner"

SECONDS_PER_COMPARISON_FACTOR = 1.3
"""Assumed seconds per comparison, as a multiple of the paper's measured Likert seconds per judged output of the
same task. A comparison shows two outputs, and reading dominates a Likert judgement's time, but one verdict is
quicker to give than two scores: 1.3 is an assumption, not a measurement (docs/how-to/pairwise.md has the plan's
sensitivity to it); give ``cost.seconds_per_judgement: {pairwise: SECONDS}`` where you have measured times."""


@dataclass(frozen=True)
class PairwiseParameters:
    """A model's pairwise-judgement parameters (see the module's docstring); :meth:`from_config` checks them."""

    noise: float = PAIRWISE_ASSUMPTIONS["noise"]
    tie_band: float = PAIRWISE_ASSUMPTIONS["tie_band"]
    position_bias: float = PAIRWISE_ASSUMPTIONS["position_bias"]
    pairs: object = PAIRWISE_ASSUMPTIONS["pairs"]
    given: tuple = ()  # the fields the model set (the others are assumptions)

    @classmethod
    def from_config(cls, value) -> "PairwiseParameters":
        """From a model's ``preferences`` mapping (``{}``: every value assumed).

        Raises
        ------
        ConfigError
            Naming the field and what it allows.
        """
        if isinstance(value, PairwiseParameters):
            return value
        if value is None or value is True:
            value = {}
        if not isinstance(value, dict):
            raise ConfigError(f"The model's 'preferences' field must be a mapping of {sorted(PAIRWISE_ASSUMPTIONS)} "
                              f"(empty: every value assumed); got {value!r}")
        unknown = sorted(set(value) - set(PAIRWISE_ASSUMPTIONS))
        errors = [f"The model's 'preferences' field has unknown key(s) {unknown}; allowed: "
                  f"{sorted(PAIRWISE_ASSUMPTIONS)}"] if unknown else []
        checks = {"noise": lambda v: is_number(v) and np.isfinite(v) and v > 0,
                  "tie_band": lambda v: is_number(v) and np.isfinite(v) and v >= 0,
                  "position_bias": lambda v: is_number(v) and np.isfinite(v),
                  "pairs": lambda v: v == "all" or (isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                                                    and v >= 1)}
        allowed = {"noise": "a positive number", "tie_band": "a number >= 0", "position_bias": "a number",
                   "pairs": "'all' or a whole number of pairs >= 1 per (annotator, document)"}
        for key in sorted(set(value) & set(checks)):
            if not checks[key](value[key]):
                errors.append(f"The model's 'preferences.{key}' field must be {allowed[key]}; got {value[key]!r}")
        if errors:
            raise ConfigError(errors)
        numbers = {key: float(value[key]) for key in ("noise", "tie_band", "position_bias") if key in value}
        pairs = value.get("pairs", PAIRWISE_ASSUMPTIONS["pairs"])
        return cls(**numbers, pairs=pairs if pairs == "all" else int(pairs), given=tuple(sorted(value)))

    def to_config(self) -> dict:
        """The model file's form: only the fields the model set (the others stay assumptions)."""
        return {key: getattr(self, key) for key in self.given}

    @property
    def assumed(self) -> tuple:
        """The fields left to :data:`PAIRWISE_ASSUMPTIONS`."""
        return tuple(key for key in PAIRWISE_ASSUMPTIONS if key not in self.given)

    def describe(self) -> str:
        """One phrase for figure titles and reports, marking the assumed values."""
        parts = []
        for key in PAIRWISE_ASSUMPTIONS:
            value = getattr(self, key)
            text = f"{key} {value:g}" if isinstance(value, float) else f"{key} {value}"
            parts.append(text + (" (assumed)" if key in self.assumed else ""))
        return "preferences: " + ", ".join(parts)


# Tests measured to be miscalibrated on pairwise preferences (figures/pairwise_type1.csv, scripts/pairwise_type1.py:
# the Figure-4 designs of both tasks, 3 annotators per block, and two battle designs, 1000 trials each, every
# pairwise value assumed): test name -> (applies(design, options), warning).
PAIRWISE_CALIBRATION = {
    "bradley_terry": (
        lambda design, options: options.get("errors") == "model" or (
            design.has_blocks and design.annotators < 15 and options.get("errors", "two_way") != "model"),
        "measured liberal (docs/how-to/pairwise.md): with errors: model on every design (type I error 0.13 to "
        "0.62, comparisons of one annotator or prompt are not independent), and with the two-way cluster-robust "
        "errors on block designs with fewer than 15 annotators (0.16 at 3, 0.10 at 6; too few clusters)"),
    "pair_sign": (
        lambda design, options: design.has_blocks and design.annotators < 60,
        "measured liberal on block designs with fewer than 60 annotators (0.38 at 3, 0.09 at 30: an annotator's "
        "preferences are shared by the documents it judges); use pair_sign_block or bradley_terry there"),
}


def system_pair_indices(n_systems: int) -> tuple[np.ndarray, np.ndarray]:
    """(i, j) of every pair of systems, i < j, in the order of :func:`simdesign.significance.system_pairs`.

    >>> system_pair_indices(3)
    (array([0, 0, 1]), array([1, 2, 2]))
    """
    first, second = np.triu_indices(n_systems, k=1)
    return first.astype(np.int64), second.astype(np.int64)


def shown_pairs(rng: np.random.Generator, n_rows: int, n_pairs: int, per_row, one_at_random: bool) -> np.ndarray:
    """Which pairs each row judges, bool (n_rows, n_pairs): every pair, a balanced subset of ``per_row``, or
    one pair drawn uniformly per row (``one_at_random``: an Arena battle)."""
    if one_at_random:
        shown = np.zeros((n_rows, n_pairs), dtype=bool)
        shown[np.arange(n_rows), rng.integers(n_pairs, size=n_rows)] = True
        return shown
    if per_row == "all" or per_row >= n_pairs:
        return np.ones((n_rows, n_pairs), dtype=bool)
    # a balanced subset: one random order of the pairs cycled from a random start, so that over the rows every
    # pair is shown equally often (to within one) and a row never shows a pair twice
    order = rng.permutation(n_pairs)
    start = int(rng.integers(n_pairs))
    positions = (start + np.arange(n_rows)[:, None] * per_row + np.arange(per_row)[None, :]) % n_pairs
    shown = np.zeros((n_rows, n_pairs), dtype=bool)
    shown[np.arange(n_rows)[:, None], order[positions]] = True
    return shown


def output_points(preferences: np.ndarray, n_systems: int) -> np.ndarray:
    """Each output's points in its row (wins plus half the ties over the pairs shown; NaN: not shown).

    >>> output_points(np.array([[1.0, 0.5, np.nan]]), 3)
    array([[1.5, 0. , 0.5]])
    """
    first, second = system_pair_indices(n_systems)
    shown = ~np.isnan(preferences)
    verdict = np.where(shown, preferences, 0.0)
    points = np.zeros((preferences.shape[0], n_systems))
    appearances = np.zeros((preferences.shape[0], n_systems))
    for column, (i, j) in enumerate(zip(first, second)):
        points[:, i] += verdict[:, column]
        points[:, j] += np.where(shown[:, column], 1.0 - verdict[:, column], 0.0)
        appearances[:, i] += shown[:, column]
        appearances[:, j] += shown[:, column]
    return np.where(appearances > 0, points, np.nan)


def verdict_of(delta, tie_band: float) -> np.ndarray:
    """The verdict rule (module docstring) for latent differences ``delta`` (position bias and noise included):
    1 the first preferred above ``tie_band``, 0 the second below ``-tie_band``, 0.5 a tie in between. Annotators,
    LLM judges (:meth:`simdesign.model.judge.Judge.verdicts`) and the fits' simulations all use it."""
    return np.where(delta > tie_band, 1.0, np.where(delta < -tie_band, 0.0, 0.5))


def pairwise_verdicts(parameters: PairwiseParameters, eta: np.ndarray, rng: np.random.Generator,
                      one_at_random: bool) -> tuple[np.ndarray, np.ndarray]:
    """(preferences, first_shown), each (n_rows, n_pairs): the verdicts and which system of each pair came first.

    Draw order (fixed): the order of presentation, the noise, then which pairs are shown.
    """
    n_rows, n_systems = eta.shape
    first, second = system_pair_indices(n_systems)
    first_shown = rng.random((n_rows, first.size)) < 0.5
    noise = parameters.noise * rng.logistic(size=(n_rows, first.size))
    delta = eta[:, first] - eta[:, second] + parameters.position_bias * np.where(first_shown, 1.0, -1.0) + noise
    verdict = verdict_of(delta, parameters.tie_band)
    shown = shown_pairs(rng, n_rows, first.size, parameters.pairs, one_at_random)
    return np.where(shown, verdict, np.nan), first_shown & shown


def contrast_variances(n_systems: int, cov) -> np.ndarray:
    """(S, S): the variance of ``(z_a - z_b) . u`` for u with covariance ``cov`` (the model's coding: z_s has a 1
    for the intercept and one for system s), the random part of the latent difference of systems a and b."""
    rows = np.eye(n_systems)
    rows[:, 0] = 1.0
    contrast = rows[:, None, :] - rows[None, :, :]
    return np.einsum("abi,ij,abj->ab", contrast, np.asarray(cov, float), contrast)


def verdict_probabilities(delta, parameters: PairwiseParameters) -> tuple[np.ndarray, np.ndarray]:
    """(P(first preferred), P(first not beaten)) given the latent difference ``delta`` without the noise (the
    position bias included): the logistic noise of the verdict rule, integrated. A win rate (a tie half) is their
    mean."""
    from scipy import special

    return (special.expit((delta - parameters.tie_band) / parameters.noise),
            special.expit((delta + parameters.tie_band) / parameters.noise))


def expected_win_rates(model, parameters: PairwiseParameters, effect="fitted", nodes: int = 80) -> np.ndarray:
    """Each pair's expected human win rate (first system over second, a tie half), integrated over annotators,
    documents, the noise and the order of presentation (a fair coin), shape (pairs,) in
    :func:`system_pair_indices` order.

    The verdict rule (module docstring) gives, for a latent difference x shown in one order (``s`` = +1 when
    the first system is shown first, else -1), a win rate of ``(F((x + s p - t) / n) + F((x + s p + t) / n)) / 2``
    (F the logistic CDF, p the position bias, t the tie band, n the noise): P(win) plus half P(tie). The random
    part of x, ``(z_i - z_j) . (u_a + v_d)``, is normal with variance ``c' (Sigma_a + Sigma_d) c``, c = z_i - z_j,
    so a one-dimensional Gauss-Hermite rule integrates it (as
    :meth:`simdesign.model.OrdinalMixedModel.marginal_probabilities` does for one system).
    """
    beta = np.asarray(model.effects_for(effect), float)
    first, second = system_pair_indices(model.n_systems)
    total = np.asarray(model.annotator_cov, float) + np.asarray(model.sampled_document_cov, float)
    sd = np.sqrt(contrast_variances(model.n_systems, total)[first, second])
    nodes_x, weights = np.polynomial.hermite_e.hermegauss(nodes)
    weights = weights / weights.sum()
    x = (beta[first] - beta[second])[:, None] + sd[:, None] * nodes_x[None, :]
    rate = sum(sum(verdict_probabilities(x + side * parameters.position_bias, parameters)) for side in (1.0, -1.0))
    return (rate / 4.0) @ weights


def _registered_defaults():
    """The default method (whose measured times the assumed pairwise times scale), if registered."""
    from simdesign.methods.base import all_methods

    return [m for m in all_methods() if m.is_default]


def pairwise_parameters(model) -> PairwiseParameters | None:
    """A model's pairwise parameters, or None when it does not generate pairwise judgements."""
    value = getattr(model, "preferences", None)
    return None if value is None else PairwiseParameters.from_config(value)


class Pairwise(AnnotationMethod):
    name = "pairwise"
    label = "Pairwise"
    colour = "tab:green"
    value_column = "preferred"
    value_name = "win rate (ties half)"
    covers = "pair"
    stream_suffix = ("pairwise",)
    result_suffix = "@pairwise"
    model_requirement = ("a Likert model generates pairwise judgements only with a 'preferences' mapping "
                         "(model: {preset: NAME, preferences: {}} assumes every value; or give noise, tie_band, "
                         "position_bias, pairs)")
    planning_requirement = "a Likert model with a 'preferences' mapping (model: {preset: NAME, preferences: {}})"
    analysis_note = ("Pairwise data: estimates are differences of win rates or Bradley-Terry log-strengths "
                     "(positive = the first system better); a tie counts half a win to each side")
    steps: dict = {}

    def can_generate(self, model) -> bool:
        return pairwise_parameters(model) is not None

    def recognises(self, columns) -> bool:
        """A pairwise table (its ``preferred`` column) or a Chatbot Arena battle log (its ``winner`` column)."""
        return bool({self.value_column, ARENA_WINNER_COLUMN} & set(columns))

    def judge(self, model, eta: np.ndarray, rng: np.random.Generator, design=None) -> dict:
        parameters = pairwise_parameters(model)
        preferences, first_shown = pairwise_verdicts(parameters, eta, rng,
                                                     one_at_random=bool(getattr(design, "one_pair_each", False)))
        return {"scores": output_points(preferences, eta.shape[1]), "preferences": preferences,
                "first_shown": first_shown}

    def responses(self, model, eta: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return self.judge(model, eta, rng)["scores"]

    def items(self, n_outputs_judged: float, n_systems: int, design=None, model=None) -> float:
        """Comparisons of a study (what an annotator sees and is paid for): pairs per row times rows."""
        if getattr(design, "one_pair_each", False):
            return design.pairs  # one comparison per battle
        rows = n_outputs_judged / n_systems
        per_row = pairwise_parameters(model).pairs if model is not None else "all"
        n_pairs = n_systems * (n_systems - 1) // 2
        return rows * (n_pairs if per_row == "all" else min(per_row, n_pairs))

    def measured_seconds(self, times: dict) -> dict:
        """Assumed seconds per comparison by task (:data:`SECONDS_PER_COMPARISON_FACTOR` x the paper's Likert
        seconds per output), each marked ``assumed`` with the sentence a plan shows."""
        likert = next((m for m in _registered_defaults()), None)
        measured = likert.measured_seconds(times) if likert is not None else {}
        found = {}
        for task, entry in measured.items():
            if not isinstance(entry, dict):
                continue
            found[task] = {key: SECONDS_PER_COMPARISON_FACTOR * value for key, value in entry.items()
                           if key.endswith("_seconds") and is_number(value)}
            found[task]["assumed"] = (f"assumed: {SECONDS_PER_COMPARISON_FACTOR:g} x the {likert.label} seconds per "
                                      f"judged output of the {task} task in Steen & Markert (2021), per comparison "
                                      f"(no pairwise times were measured)")
        return found

    def file_form(self, frame, n_systems: int):
        raise ConfigError("A pairwise study's table is its comparisons (study_table: Judgements.comparisons_frame), "
                          "not one value per output")

    def study_table(self, judgements):
        # one comparison a row: annotator, document, block, system_a (shown first), system_b, preferred
        return judgements.comparisons_frame()

    def fingerprint(self, model) -> dict:
        parameters = pairwise_parameters(model)
        return {} if parameters is None else {"preferences": {key: getattr(parameters, key)
                                                           for key in PAIRWISE_ASSUMPTIONS}}

    def warnings(self, config) -> list[str]:
        found = []
        parameters = pairwise_parameters(config.model)
        if parameters is not None and parameters.assumed:
            found.append(f"Pairwise judgements with assumed values (the paper measured none): {parameters.describe()}; "
                         "docs/how-to/pairwise.md has the sensitivity to them")
        for spec in config.analyses:
            entry = PAIRWISE_CALIBRATION.get(spec.name)
            if entry is None:
                continue
            applies, text = entry
            designs = [d.label for d in config.designs if applies(d, spec.options)]
            if designs:
                found.append(f"The test {spec.label} on pairwise preferences is not calibrated for the design(s) "
                             f"{designs}: {text}")
        return found

    def model_note(self, model) -> str:
        parameters = pairwise_parameters(model)
        return "" if parameters is None else parameters.describe()


PAIRWISE = register_method(Pairwise())
