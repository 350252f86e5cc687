"""Replication planner: the cheapest replication design that reproduces a given original study.

A plan config with a ``replication`` mapping (``simdesign plan``) fixes the *original* study (its design;
the model, effect and tests are the plan's) and searches the replication's design, as the budget planner
searches a study's, for the cheapest one whose replication reaches a target:

.. code-block:: yaml

    replication:
      original: {kind: overlap, shared_docs: 10, unique_docs_per_annotator: 30, annotators: 3}
      target: reproduced       # reproduced | f1 | r
      at_least: 0.8            # f1 and r: the threshold a replication must reach
      probability: 0.5         # the probability of reaching it (the plan's 'target_power' in its place)
      pairs: all               # as in a replication config: all | adjacent | first | [[a, b], ...]
      correction: none         # none | holm | bh, over each study's tested pairs
      tolerance: 0             # matching accuracy's "equal" (reported beside, no target)

Per trial t, the original is the study a replication run (``replication:`` in a simulation config) samples
for trial t of the original's design, and the replication is trial t's replication study of the
candidate's design (:func:`simdesign.core.seeds.replication_rng`), both analysed with the candidate's
test: when the candidate is the original's design the trial's values are the replication kind's. The
*event* of a trial is

* ``reproduced``: the replication's significance decisions (tested pairs, with direction, after the
  correction) are exactly the original's -- also when the original has none, since there is then
  nothing to reproduce and nothing new to add;
* ``f1``: the significance F1 is at least ``at_least`` (an undefined F1, the original finding nothing,
  counts as not reaching it: a conservative reading);
* ``r``: Pearson's r of the two studies' system mean scores is at least ``at_least`` (undefined: not).

The share of trials with the event is the candidate's "power" in the planner's decision procedure
(:func:`simdesign.planning.plan_search.decide_plan`, one indicator per trial, pooled), so the search,
the type I check of the candidate's test on the candidate's design (the replication must use a test
that holds its level there; ``max_type1``) and the confirmation on fresh trials are the planner's, and
so is the guarantee: P(recommending a replication design whose true probability of the event is below
``probability``) <= (1 - confidence) / 2, and likewise for its type I error, whatever the number of
candidates. The original's studies are the same for every candidate (common random numbers).

Per-trial values are stored in ``OUT/replication_outcomes`` (one file per study and test, keyed by the
model, effect and seed), so a re-run resumes.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from simdesign.significance import resolve_analysis, run_analysis
from simdesign.significance.base import FAILURES
from simdesign.core.designs import design_from_mapping
from simdesign.core.errors import ConfigError
from simdesign.core.seeds import analysis_rng, data_rng, replication_rng
from simdesign.core.suggest import suggestions
from simdesign.core.threads import single_threaded
from simdesign.methods import default_method
from simdesign.planning.plan_search import OutcomeSource, PlanResult, SimulatedOutcomes, decide_plan
from simdesign.planning.planner import PlanConfig, parse_plan
from simdesign.runner.execute import run_chunks
from simdesign.runner.stores import Store, StoreFormat
from simdesign.studies.rates.config import read_config_mapping, stable_digest
from simdesign.studies.replication.replication import (MATCHING_ACCURACY, REPLICATION_PREFIX, REPLICATION_R,
                                                       SIGNIFICANCE_F1, ReplicationSettings, chosen_pairs,
                                                       parse_replication)
from simdesign.stats.replication import corrected_decisions, row_correlations, trends

TARGETS = ("reproduced", "f1", "r")
PLAN_REPLICATION_KEYS = ("original", "target", "at_least", "probability", "pairs", "correction", "tolerance")
OUTCOMES_DIR = "replication_outcomes"
TRIALS_PER_TASK = 10  # trials per worker task: a few seconds of mixed-model fits, few enough to share 2 workers


@dataclass(frozen=True)
class ReplicationTarget:
    """What the replication must reach, and the original it replicates.

    Attributes
    ----------
    original : Design
        The original study's design (its model, effect and test are the plan's).
    target : {'reproduced', 'f1', 'r'}
    at_least : float or None
        The F1 or r threshold (None for ``reproduced``).
    probability : float or None
        The target probability of the event (None with a ``budget`` goal).
    settings : ReplicationSettings
        Tested pairs, correction and tolerance, as in a replication config.
    """

    original: object
    target: str
    at_least: float | None
    probability: float | None
    settings: ReplicationSettings

    def describe(self) -> str:
        # only the described target's text is formatted: 'reproduced' has no threshold (at_least is None)
        if self.target == "reproduced":
            return "reproduces every significance decision of the original"
        if self.target == "f1":
            return f"has a significance F1 of at least {self.at_least:g} (original as gold)"
        return f"has a Pearson r of the system scores of at least {self.at_least:g} with the original"


@dataclass(frozen=True)
class ReplicationPlan:
    """A replication plan: the planner's config (candidates, cost, search, checks) and the target."""

    plan: PlanConfig
    target: ReplicationTarget

    def __repr__(self) -> str:
        return f"<ReplicationPlan of {self.target.original.label}: {self.target.describe()}; {self.plan!r}>"


def is_replication_plan(raw) -> bool:
    """Whether a plan mapping asks for a replication plan (it has a ``replication`` key)."""
    return isinstance(raw, dict) and "replication" in raw


def load_replication_plan(path, overrides: dict | None = None) -> ReplicationPlan:
    """Read a replication plan from YAML (see the module docstring); ``overrides`` as :func:`load_plan`'s."""
    path = Path(path)
    return parse_replication_plan(read_config_mapping(path, "plan config", overrides), base_dir=path.parent)


def parse_replication_plan(raw: dict, base_dir: Path | None = None) -> ReplicationPlan:
    """Validate a replication plan mapping; every problem is collected into one :class:`ConfigError`.

    The ``replication`` mapping's ``probability`` takes the place of ``target_power`` (give one of
    ``probability`` and the plan's ``budget``); the rest is an ordinary plan config, whose ``search``
    gives the replication's candidate designs.
    """
    errors: list[str] = []
    section = raw.get("replication")
    if not isinstance(section, dict):
        raise ConfigError(f"The 'replication' field of a plan must be a mapping with keys "
                          f"{list(PLAN_REPLICATION_KEYS)}; got {section!r}")
    unknown = sorted(set(section) - set(PLAN_REPLICATION_KEYS))
    if unknown:
        errors.append(f"Unknown 'replication' key(s) {unknown}; allowed: {list(PLAN_REPLICATION_KEYS)}"
                      f"{suggestions(unknown, PLAN_REPLICATION_KEYS)}")
    if "target_power" in raw:
        errors.append("A replication plan's target is 'replication.probability' (the probability of the "
                      "replication target), not 'target_power'")
    original = None
    if not isinstance(section.get("original"), dict):
        errors.append(f"The 'replication.original' field must be the original study's design mapping, e.g. "
                      f"{{kind: overlap, shared_docs: 10, unique_docs_per_annotator: 30, annotators: 3}}; "
                      f"got {section.get('original')!r}")
    else:
        try:
            original = design_from_mapping(section["original"])
        except ConfigError as exc:
            errors.extend(f"replication.original: {message}" for message in exc.messages)
    target = section.get("target", "reproduced")
    if target not in TARGETS:
        errors.append(f"The 'replication.target' field must be one of {list(TARGETS)}; got {target!r}"
                      f"{suggestions([str(target)], TARGETS)}")
    at_least = section.get("at_least")
    if target in ("f1", "r"):
        low = 0.0 if target == "f1" else -1.0
        if isinstance(at_least, bool) or not isinstance(at_least, (int, float)) or not low < at_least <= 1:
            errors.append(f"The 'replication.at_least' field must be a number in ({low:g}, 1] for target "
                          f"{target!r}; got {at_least!r}")
    elif at_least is not None:
        errors.append("The 'replication.at_least' field applies to targets 'f1' and 'r' only; "
                      f"got at_least {at_least!r} with target {target!r}")
    probability = section.get("probability")
    settings = parse_replication({key: section[key] for key in ("pairs", "correction", "tolerance")
                                  if key in section}, errors)
    plan_raw = {key: value for key, value in raw.items() if key != "replication"}
    plan_raw.update(_plan_goal(probability, raw.get("budget"), errors))
    if raw.get("power_over", "pooled") != "pooled":
        errors.append("A replication plan's probability is one event per trial: leave out 'power_over' "
                      "(or give 'pooled')")
    try:
        plan = parse_plan(plan_raw, base_dir)
    except ConfigError as exc:
        errors.extend(exc.messages)
        plan = None
    if plan is not None and settings is not None:
        try:
            chosen_pairs(settings, plan.model.systems)
        except ConfigError as exc:
            errors.extend(exc.messages)
    errors += _partial_coverage_problems(original, plan)
    if errors:
        raise ConfigError(list(dict.fromkeys(errors)))
    return ReplicationPlan(plan, ReplicationTarget(original, target, None if at_least is None else float(at_least),
                                                   None if probability is None else float(probability), settings))


def _plan_goal(probability, budget, errors: list[str]) -> dict:
    """The plan's goal from the replication's ``probability`` or the plan's ``budget`` (exactly one), as the plan
    keys it takes; problems go to ``errors``.

    Both together are refused, as the ordinary planner refuses 'target_power' beside 'budget': the two goals
    conflict (the cheapest design reaching the probability, or the most probable one within the budget), and
    combining them silently dropped the candidates over the budget while the recommendation spoke only of the
    probability. A bad probability stands in as a valid one, so that the plan's own checks run without also
    naming 'target_power', a field the config does not have.
    """
    if probability is None and budget is None:
        errors.append("A replication plan needs 'replication.probability' (the probability of reaching the "
                      "target, e.g. 0.8) or the plan's 'budget'")
        return {"target_power": 0.5}
    if probability is not None and budget is not None:
        errors.append(f"A replication plan takes one goal: 'replication.probability' ({probability!r}: the cheapest "
                      f"design reaching it) or the plan's 'budget' ({budget!r}: the most probable design within it), "
                      "not both; remove one")
        return {"budget": budget}
    if probability is None:
        return {"budget": budget}
    if isinstance(probability, bool) or not isinstance(probability, (int, float)) or not 0 < probability < 1:
        errors.append(f"The 'replication.probability' field must be a number strictly between 0 and 1; "
                      f"got {probability!r}")
        return {"target_power": 0.5}
    return {"target_power": probability}


def _partial_coverage_problems(original, plan) -> list[str]:
    """The original or a searched design with partial coverage: refused as a replication run refuses it (the
    replication estimands compare complete studies; a partial original made every r undefined, counted as a
    failure, and every candidate's probability 0.000)."""
    from simdesign.core.designs import design_coverage
    from simdesign.studies.rates.coverage import COMPLETE_ONLY_SETTINGS

    problems = []
    if original is not None and design_coverage(original) is not None:
        problems.append(f"The 'replication.original' design {original.label} has partial coverage: a replication "
                        f"plan, like a replication run, cannot use it ({COMPLETE_ONLY_SETTINGS['replication']}); "
                        "leave out its 'coverage'")
    partial = sorted({candidate.design.label for candidate in (plan.candidates if plan is not None else ())
                      if design_coverage(candidate.design) is not None})
    if partial:
        problems.append(f"The 'search' designs {partial[:5]} have partial coverage: a replication plan cannot use "
                        f"them ({COMPLETE_ONLY_SETTINGS['replication']}); leave out their 'coverage'")
    return problems


# ----------------------------------------------------------------------------------------------------------------
# Per-trial outcomes


def study_outcomes(model, effect: float, seed: int, design, spec, study: str, first: int, stop: int) -> dict:
    """p-values, estimates, usable flags (per system pair) and system mean scores of trials first..stop-1.

    ``study`` 'original': the study a replication run samples as trial t's original (the engine's data
    stream of the design); 'replication': trial t's replication study of the design. Runs in a worker.
    """
    info = resolve_analysis(spec.name)
    label = spec.label if study == "original" else REPLICATION_PREFIX + spec.label
    p_values, estimates, usable, means = [], [], [], []
    with single_threaded():
        for trial in range(first, stop):
            # the original: the engine's stream of the default method's study (replication is on it only)
            rng = data_rng(seed, design.label, trial, default_method().stream_suffix) if study == "original" else \
                replication_rng(seed, design.label, trial)
            judgements = model.sample(design, rng, effect)
            result = run_analysis(info, judgements, analysis_rng(seed, design.label, trial, label), spec.options)
            p_values.append(np.asarray(result.p_value, float))
            estimates.append(np.asarray(result.estimate, float))
            usable.append(~np.isin(np.asarray(result.status).astype(str), list(FAILURES)))
            means.append(judgements.scores.mean(axis=0))
    return {"p_value": np.array(p_values), "estimate": np.array(estimates), "usable": np.array(usable),
            "means": np.array(means)}


def _chunk_outcomes(chunk: tuple, model, effect: float, seed: int) -> tuple[tuple, dict]:
    """A runner task: ``(chunk, study_outcomes of its trials)``; chunk = (study, design, test, first, stop)."""
    study, design, spec, first, stop = chunk
    return chunk, study_outcomes(model, effect, seed, design, spec, study, first, stop)


def trial_events(original: dict, replication: dict, target: ReplicationTarget, alpha: float,
                 tested: np.ndarray) -> pd.DataFrame:
    """Per trial: the replication's F1, r, matching accuracy, whether it reproduced every decision, and the event.

    ``original`` and ``replication`` are :func:`study_outcomes` of the same trials.
    """
    return pd.DataFrame(_event_columns(original, replication, target, alpha, tested))


def _event_columns(original: dict, replication: dict, target: ReplicationTarget, alpha: float,
                   tested: np.ndarray) -> dict:
    """:func:`trial_events` as a dict of columns (the planner asks for them thousands of times)."""
    settings = target.settings
    decisions = [corrected_decisions(study["p_value"][:, tested], study["estimate"][:, tested],
                                     study["usable"][:, tested], alpha, settings.correction)
                 for study in (original, replication)]
    # the per-trial rules of simdesign.stats.replication, row-wise over trials (the planner reads thousands)
    gold, got = decisions
    hits = np.count_nonzero((gold != 0) & (gold == got), axis=1)
    n_gold, n_got = np.count_nonzero(gold, axis=1), np.count_nonzero(got, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = np.where(n_gold > 0, 2.0 * hits / (n_gold + n_got), np.nan)
    reproduced = np.all(gold == got, axis=1)
    r = row_correlations(original["means"], replication["means"])
    n_systems = original["means"].shape[1]
    left, right = np.triu_indices(n_systems, 1)  # the order of simdesign.significance.system_pairs
    first = trends(original["means"][:, left] - original["means"][:, right], settings.tolerance)
    second = trends(replication["means"][:, left] - replication["means"][:, right], settings.tolerance)
    matching = np.mean(first == second, axis=1)
    with np.errstate(invalid="ignore"):
        event = {"reproduced": reproduced, "f1": f1 >= (target.at_least or 0),
                 "r": r >= (target.at_least or 0)}[target.target]
    return {SIGNIFICANCE_F1.name: f1, "reproduced": reproduced, REPLICATION_R.name: r,
            MATCHING_ACCURACY.name: matching, "event": np.asarray(event, bool)}


# The replication plan's per-trial outcomes, in the one store class: a cell per (study, design, test), one row per
# trial with the outcome arrays spread over columns (p_value_<pair>, estimate_<pair>, usable_<pair>, means_<system>).
OUTCOME_CHUNKS = StoreFormat(kind="replication-outcomes", folders=("trials",))
OUTCOME_FIELDS = ("p_value", "estimate", "usable", "means")


class _OutcomeFiles:
    """Per-trial study outcomes on disk (a :class:`~simdesign.runner.stores.Store` of :data:`OUTCOME_CHUNKS`),
    keyed by model, effect, seed and original design; claimed for the plan's run (released with the plan's
    other stores), every chunk written atomically, so a killed plan leaves whole chunks only.

    Outcome pickles of earlier versions (``<digest>.pkl`` beside a ``fingerprint.json``) are not read: their
    trials are computed again, with the same numbers (the streams are keyed by design and trial).
    """

    def __init__(self, out_dir: Path, fingerprint: dict):
        self.store = Store(Path(out_dir) / OUTCOMES_DIR, OUTCOME_CHUNKS)
        self.store.prepare(OUTCOME_CHUNKS.kind, fingerprint, None)
        self.directory = self.store.directory
        self.cache: dict = {}

    @staticmethod
    def _cell(key) -> str:
        return stable_digest(list(key))[:16]

    def get(self, key) -> dict:
        """trial -> (p_values, estimates, usable, means) of the (study, design label, test label) ``key``."""
        if key not in self.cache:
            rows = self.store.read([self._cell(key)])
            self.cache[key] = {int(trial): outcome for trial, outcome in
                               zip(rows["trial"], zip(*_outcome_arrays(rows)))} if len(rows) else {}
        return self.cache[key]

    def write(self, key, first: int, stop: int, outcomes: dict) -> None:
        """Store the outcomes (:func:`study_outcomes`) of trials ``first`` to ``stop - 1`` of ``key``."""
        columns = {"trial": np.arange(first, stop)}
        for name in OUTCOME_FIELDS:
            values = np.asarray(outcomes[name])
            columns.update({f"{name}_{index}": values[:, index] for index in range(values.shape[1])})
        self.store.write_chunk(self._cell(key), first, stop, pd.DataFrame(columns))
        have = self.get(key)
        for offset, trial in enumerate(range(first, stop)):
            have[trial] = tuple(outcomes[name][offset] for name in OUTCOME_FIELDS)


def _outcome_arrays(rows: pd.DataFrame) -> list[np.ndarray]:
    """The (trials, width) array of each outcome field from stored rows (:meth:`_OutcomeFiles.write`'s columns)."""
    arrays = []
    for name in OUTCOME_FIELDS:
        spread = [column for column in rows.columns if column.startswith(f"{name}_")]
        spread.sort(key=lambda column: int(column.rsplit("_", 1)[1]))
        arrays.append(rows[spread].to_numpy(bool if name == "usable" else float))
    return arrays


class ReplicationOutcomes(OutcomeSource):
    """The planner's outcome source for a replication plan.

    ``power`` gives each candidate's per-trial event (shape (trials, 1)); ``null`` is the ordinary
    planner's type I check of the candidate's test on the candidate's design (``null_source``).

    Parameters
    ----------
    config : ReplicationPlan
    out_dir : Path
    null_source : OutcomeSource or None
        Where the type I checks come from (:class:`~simdesign.planning.plan_search.SimulatedOutcomes`).
    executor : ChunkExecutor or None
        The runner's executor for the studies (None: computed here, one after another); the outcomes do
        not depend on it.
    """

    def __init__(self, config: ReplicationPlan, out_dir: Path, null_source: OutcomeSource | None = None,
                 executor=None):
        plan = config.plan
        self.config, self.null_source, self.executor = config, null_source, executor
        self.tests = {spec.label: spec for spec in plan.tests}
        self.designs = {d.label: d for d in plan.designs}
        self.tested = chosen_pairs(config.target.settings, plan.model.systems)
        self.files = _OutcomeFiles(out_dir, {"model": stable_digest(plan.model.to_dict()), "effect": plan.effect,
                                             "seed": plan.seed, "original": config.target.original.label})
        self._new = 0
        self._events: dict = {}  # (design label, test label) -> the columns of every power() call, in order

    @property
    def tables(self) -> dict:
        """(design label, test label) -> per-trial table of every trial computed so far (a trial once)."""
        return {key: pd.DataFrame({name: np.concatenate([part[name] for part in parts]) for name in parts[0]})
                .drop_duplicates("trial").sort_values("trial", ignore_index=True)
                for key, parts in self._events.items()}

    @property
    def new_studies(self) -> int:
        return self._new + (self.null_source.new_studies if self.null_source is not None else 0)

    def _studies(self, requests: list) -> None:
        """Compute and store the missing trials of (study, design, test, first, stop) requests."""
        plan = self.config.plan

        def missing() -> list:
            tasks = {}
            for study, design, spec, first, stop in requests:
                have = self.files.get((study, design.label, spec.label))
                trials = [t for t in range(first, stop) if t not in have]
                # missing trials are consecutive runs in practice (looks extend ranges); a gap splits a task
                for run in (np.split(trials, np.where(np.diff(trials) != 1)[0] + 1) if trials else []):
                    for start in range(0, len(run), TRIALS_PER_TASK):
                        piece = run[start:start + TRIALS_PER_TASK]
                        tasks[(study, design.label, spec.label, int(piece[0]))] = (study, design, spec, int(piece[0]),
                                                                                   int(piece[-1]) + 1)
            return list(tasks.values())  # the original's trials once, however many candidates ask

        def task(chunk):
            from joblib import delayed

            return delayed(_chunk_outcomes)(chunk, plan.model, plan.effect, plan.seed)

        def save(chunk, result) -> None:
            study, design, spec, first, stop = chunk
            self.files.write((study, design.label, spec.label), first, stop, result)
            self._new += stop - first

        if self.executor is None:
            for chunk in missing():
                save(*_chunk_outcomes(chunk, plan.model, plan.effect, plan.seed))
        else:
            run_chunks(self.executor, missing, task, save)

    def _read(self, study: str, design_label: str, test_label: str, first: int, stop: int) -> dict:
        store = self.files.get((study, design_label, test_label))
        rows = [store[t] for t in range(first, stop)]
        return {name: np.array([row[i] for row in rows]) for i, name in
                enumerate(("p_value", "estimate", "usable", "means"))}

    def power(self, wanted: dict) -> dict:
        original = self.config.target.original
        requests = []
        for (design_label, test_label), (first, stop) in wanted.items():
            spec = self.tests[test_label]
            requests.append(("original", original, spec, first, stop))
            requests.append(("replication", self.designs[design_label], spec, first, stop))
        self._studies(requests)
        out = {}
        for key, (first, stop) in wanted.items():
            design_label, test_label = key
            columns = {"trial": np.arange(first, stop),
                       **_event_columns(self._read("original", original.label, test_label, first, stop),
                                        self._read("replication", design_label, test_label, first, stop),
                                        self.config.target, self.config.plan.alpha, self.tested)}
            self._events.setdefault(key, []).append(columns)
            out[key] = columns["event"][:, None]
        return out

    def null(self, wanted: dict) -> dict:
        if self.null_source is None:
            raise ConfigError("This replication plan checks type I error (max_type1) but has no null source")
        return self.null_source.null(wanted)

    def flush(self) -> None:
        if self.null_source is not None:
            self.null_source.flush()


def run_replication_plan(config: ReplicationPlan, out_dir: Path, jobs: int = 1, progress: bool = False) -> PlanResult:
    """Search and confirm the cheapest replication design (see the module docstring).

    Parameters
    ----------
    config : ReplicationPlan
    out_dir : Path
        Results directory (created or resumed): ``replication_outcomes`` and the type I check's stores.
    jobs : int
        Worker processes; the plan does not depend on it.
    progress : bool

    Returns
    -------
    PlanResult
        As the planner's, with ``power`` the probability of the replication target; the per-trial values
        of every simulated candidate are in ``result.replication_tables``.
    """
    from simdesign.runner.stores import release_stores_under
    from simdesign.studies.backends import DEFAULT_RETRIES, BackendSpec, ChunkExecutor

    out_dir = Path(out_dir)
    spec = BackendSpec("loky", max(1, jobs), None, None, DEFAULT_RETRIES)
    try:
        with ChunkExecutor(spec, needs_r=False) as executor:
            null_source = SimulatedOutcomes(config.plan, out_dir, executor) if config.plan.max_type1 is not None \
                else None
            outcomes = ReplicationOutcomes(config, out_dir, null_source, executor)
            result = decide_plan(config.plan, outcomes, progress=progress)
    finally:
        release_stores_under(out_dir)
    result.replication_tables = outcomes.tables
    return result


# ----------------------------------------------------------------------------------------------------------------
# Report


def replication_plan_table(config: ReplicationPlan, result: PlanResult) -> pd.DataFrame:
    """The planner's ranked table with ``power`` named ``probability``, and each candidate's mean F1, r,
    matching accuracy and share of trials reproducing every decision (over its search and confirmation
    trials)."""
    from simdesign.planning.plan_report import plan_table

    table = plan_table(result).rename(columns={"power": "probability", "confirm_power": "confirm_probability"})
    extra = []
    for key, trials in getattr(result, "replication_tables", {}).items():
        extra.append({"design": key[0], "test": key[1], "event_trials": len(trials),
                      "mean_f1": float(np.nanmean(trials[SIGNIFICANCE_F1.name])) if trials[SIGNIFICANCE_F1.name].notna().any()
                      else float("nan"),
                      "f1_undefined": int(trials[SIGNIFICANCE_F1.name].isna().sum()),
                      "mean_r": float(np.nanmean(trials[REPLICATION_R.name])),
                      "mean_matching": float(trials[MATCHING_ACCURACY.name].mean()),
                      "reproduced_share": float(trials["reproduced"].mean())})
    if not extra:
        return table
    return table.merge(pd.DataFrame(extra), on=["design", "test"], how="left")


def replication_recommendation(config: ReplicationPlan, result: PlanResult) -> str:
    """The answer in words: the design, its cost, the probability with its bounds, and the guarantee."""
    plan, target = config.plan, config.target
    original = target.original
    money = (lambda v: f"{v:,.2f} {plan.cost.currency}".strip())
    goal = (f"with probability at least {target.probability:g}" if target.probability is not None
            else f"as often as possible within a budget of {money(plan.budget)}")
    text = (f"Replicating the original {original.label} ({original.judgements(plan.model.n_systems)} judgements; "
            f"model {plan.model.name}, {plan.effect_label}, tests: {', '.join(t.label for t in plan.tests)}), "
            f"the replication should be the cheapest design that {target.describe()} {goal}")
    if target.settings.pairs != "all" or target.settings.correction != "none":
        text += f" (tested pairs: {target.settings.pairs}, correction: {target.settings.correction})"
    best = result.recommended
    if best is None:
        simulated = [r for r in result.results if r.trials]
        top = max(simulated, key=lambda r: r.power, default=None)
        text += (". No candidate design was confirmed to reach it"
                 + (f"; the most likely was {top.candidate.design.label} with {top.candidate.test.label}: "
                    f"probability {top.power:.3f} [{top.ci_low:.3f}, {top.ci_high:.3f}] from {top.trials} trials"
                    if top is not None else "") + ".")
        return text + "\n"
    candidate = best.candidate
    text += (f": **{candidate.design.label} analysed with {candidate.test.label}**, costing "
             f"{money(candidate.total_cost)} ({candidate.design.judgements(plan.model.n_systems)} judgements). "
             f"In the search its probability was {best.power:.3f} [{best.ci_low:.3f}, {best.ci_high:.3f}] from "
             f"{best.trials} simulated original-replication pairs")
    if plan.max_type1 is not None:
        text += (f"; its test's type I error on that design {best.type1:.3f} (upper bound {best.type1_high:.3f}, "
                 f"at most {plan.max_type1:g} required)")
    if best.confirm_trials:
        text += (f". Confirmed on {best.confirm_trials} fresh pairs (trials {best.confirm_first_trial}-"
                 f"{best.confirm_first_trial + best.confirm_trials - 1}): probability {best.confirm_power:.3f}, "
                 f"one-sided {result.confirm_level:.2%} lower bound {best.confirm_low:.3f}")
    tables = getattr(result, "replication_tables", {})
    trials = tables.get(candidate.key)
    if trials is not None and len(trials):
        f1 = trials[SIGNIFICANCE_F1.name]
        text += (f". Over all its trials (search and confirmation) the replication's mean F1 was "
                 f"{np.nanmean(f1) if f1.notna().any() else float('nan'):.3f} (undefined in {int(f1.isna().sum())}), "
                 f"mean r {np.nanmean(trials[REPLICATION_R.name]):.3f}, every decision reproduced in "
                 f"{trials['reproduced'].mean():.1%}")
    text += (f". Guarantee: the chance of recommending a replication design whose true probability is below the "
             f"target (or whose test's type I error is above max_type1) is at most {(1 - plan.confidence) / 2:.3g} "
             f"each, whatever the number of candidates (the confirmation's trials are fresh).")
    return text + _undecided_cheaper(config, result, candidate.total_cost) + "\n"


def _trials_to_settle(estimate: float, low: float, high: float, trials: int, bound: float) -> str:
    """About how many trials would put the interval on one side of ``bound`` if the estimate held: the
    interval's half-width shrinks as 1 / sqrt(trials)."""
    distance = abs(estimate - bound)
    if not trials or not np.isfinite(low) or distance == 0:
        return "more trials cannot settle it at this estimate"
    needed = int(np.ceil(trials * ((high - low) / 2 / distance) ** 2 / 10) * 10)
    return f"about {max(needed, trials + 10)} trials would settle it if its estimate held"


def _undecided_cheaper(config: ReplicationPlan, result: PlanResult, cost: float) -> str:
    """The cheaper candidates the search left undecided (issue 39): an undecided candidate is never recommended,
    so a cheaper design that may well meet the target is passed over; the user should know which and what it
    would take to settle it (a larger max_trials)."""
    plan, target = config.plan, config.target
    parts = []
    for r in sorted(result.results, key=lambda r: r.candidate.total_cost):
        if r.candidate.total_cost >= cost or r.decision != "undecided" or not r.trials:
            continue
        reasons = []
        if target.probability is not None and r.ci_low <= target.probability <= r.ci_high:
            reasons.append(f"probability {r.power:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}] after {r.trials} trials "
                           f"contains the target {target.probability:g}: "
                           + _trials_to_settle(r.power, r.ci_low, r.ci_high, r.trials, target.probability))
        if plan.max_type1 is not None and r.type1_trials and r.type1_low <= plan.max_type1 <= r.type1_high:
            reasons.append(f"type I error {r.type1:.3f} [{r.type1_low:.3f}, {r.type1_high:.3f}] after "
                           f"{r.type1_trials} trials contains max_type1 {plan.max_type1:g}: "
                           + _trials_to_settle(r.type1, r.type1_low, r.type1_high, r.type1_trials, plan.max_type1))
        if reasons:
            parts.append(f"{r.candidate.design.label} with {r.candidate.test.label} "
                         f"({r.candidate.total_cost:,.2f} {plan.cost.currency}".rstrip() + f"): {'; '.join(reasons)}")
    if not parts:
        return ""
    return ("\n\nCheaper candidates left undecided (never recommended: their intervals contain the bound; raise "
            "max_trials to settle them): " + ". ".join(parts) + ".")


def plot_replication_plan(table: pd.DataFrame, config: ReplicationPlan, out_base: Path) -> list[Path]:
    """Cost against the probability of the replication target for every simulated candidate."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = table[table["trials"] > 0]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for marker, (test, group) in zip("osD^v", shown.groupby("test", sort=False)):
        err = np.clip(np.vstack([group["probability"] - group["ci_low"], group["ci_high"] - group["probability"]]),
                      0, None)
        ax.errorbar(group["cost"], group["probability"], yerr=err, fmt=marker, capsize=2, label=test)
        for row in group.itertuples():
            ax.annotate(row.design.replace("overlap-", ""), (row.cost, row.probability), fontsize=6,
                        xytext=(3, 3), textcoords="offset points")
    target = config.target
    if target.probability is not None:
        ax.axhline(target.probability, color="grey", ls="--", lw=1, label=f"target {target.probability:g}")
    chosen = table[table["decision"] == "recommended"]
    if len(chosen):
        ax.scatter(chosen["cost"], chosen["probability"], s=160, facecolors="none", edgecolors="red",
                   label="recommended (confirmed)")
    ax.set(xlabel=f"cost ({config.plan.cost.currency or 'currency units'})",
           ylabel=f"P(replication {target.target}"
                  + (f" >= {target.at_least:g})" if target.at_least is not None else ")"),
           ylim=(-0.02, 1.02),
           title=f"Replicating {target.original.label}: each replication design's probability of the target "
                 f"(search intervals at the look's confidence)")
    ax.title.set_fontsize(8)
    ax.legend(fontsize=7)
    fig.tight_layout()
    paths = []
    for suffix in (".png",):
        path = Path(out_base).with_suffix(suffix)
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=130)
        paths.append(path)
    plt.close(fig)
    return paths


def write_replication_plan(config: ReplicationPlan, result: PlanResult, out_dir: Path,
                           figure: Path | None = None) -> dict:
    """Write plan.csv, recommendation.md and the figure into ``out_dir``; returns their paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    table = replication_plan_table(config, result)
    paths = {"table": out_dir / "plan.csv", "recommendation": out_dir / "recommendation.md"}
    table.to_csv(paths["table"], index=False)
    paths["recommendation"].write_text(f"# {config.plan.name}\n\n{replication_recommendation(config, result)}")
    paths["figure"] = plot_replication_plan(table, config, figure or out_dir / config.plan.name)[0]
    return paths


def replication_plan_summary(config: ReplicationPlan) -> str:
    """One line for the CLI before the search: candidates and target."""
    simulated = sum(1 for c in config.plan.candidates if not c.excluded)
    return (f"planning the replication of {config.target.original.label}: {len(config.plan.candidates)} candidates "
            f"(design x test), {simulated} to simulate; target: the replication {config.target.describe()}"
            + (f" with probability {config.target.probability:g}" if config.target.probability is not None else ""))


__all__ = ["ReplicationPlan", "ReplicationTarget", "ReplicationOutcomes", "load_replication_plan",
           "parse_replication_plan", "run_replication_plan", "trial_events", "study_outcomes",
           "replication_recommendation", "replication_plan_table", "write_replication_plan", "is_replication_plan",
           ]
