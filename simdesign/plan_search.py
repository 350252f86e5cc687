"""Adaptive evaluation of the planner's candidates by simulation.

Every simulated candidate first gets ``screen_trials`` trials; after that,
trials double (up to ``max_trials``) only for the candidates whose decision
still matters and is not yet made:

* goal ``target_power``: a candidate *passes* when the lower end of its
  power interval reaches the target, *fails* when the upper end is below
  it. Only candidates no costlier than the cheapest passing one (plus
  ``cost_tolerance``, so that near-ties in cost get decided too) need a
  decision; costlier ones keep their screening estimate ("not_needed").
* goal ``budget``: a candidate is *worse* when its upper end is below the
  best lower end among the affordable candidates; the rest are refined
  until their intervals are narrower than ``power_tolerance``. The
  recommendation is the cheapest of those whose power estimate is within
  ``power_tolerance`` of the highest (more power than that cannot be told
  apart, less money can).

A candidate still open at ``max_trials`` is *undecided*, never passing.

Power is worth nothing if the test does not hold its level: the paper's
central finding is that tests on non-independent judgements (few
annotators judging many documents) reject a true null far more often than
alpha. So, unless ``max_type1`` is null, every candidate that could be the
answer is also simulated under ``effect: zero`` and must be shown to have a
type I error rate (over all pairs) of at most ``max_type1`` (default
2 x alpha); one shown to exceed it is *liberal* and never recommended. This
check is adaptive in the same way and starts only for candidates whose
power has not failed.

Intervals are Wilson intervals at the trial-level effective size (the
summary's :func:`~simdesign.summary.rate_from_shares` and
:func:`~simdesign.summary.wilson_from_mcse`). Each candidate is looked at
up to L times (screening plus each doubling), and deciding at the first
look whose interval clears the threshold would inflate the error rate. So
the error 1 - confidence is spent across the looks: half on the last look
(where the close calls are made) and the other half split evenly over the
earlier ones; by the union bound every decision holds at the stated
confidence despite the repeated looks.

Trials come from the engine (:func:`simdesign.engine.simulate_chunk`) and
are stored in an ordinary results directory, so a re-run resumes and any
trial can be replayed with ``simdesign replay``. A candidate's later trials
continue its trial index (trial t always has the same seed), so the
outcome does not depend on how the work was staged.
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed

from simdesign.analyses import FAILURES, system_pairs
from simdesign.config import parse_config
from simdesign.engine import check_backends, plan_chunks, simulate_chunk
from simdesign.planner import Candidate, PlanConfig
from simdesign.store import ResultsStore
from simdesign.summary import rate_from_shares, wilson_from_mcse

STUDIES_DIR = "studies"
NULL_STUDIES_DIR = "studies_null"
PASS, FAIL, UNDECIDED, NOT_NEEDED, LIBERAL = "pass", "fail", "undecided", "not_needed", "liberal"
BEST, TIED, WORSE = "best", "tied", "worse"
OPEN = "open"


@dataclass
class CandidateResult:
    """A candidate's evaluation.

    Attributes
    ----------
    candidate : Candidate
    trials : int
        Simulated studies behind the power estimate (0 if not simulated).
    power, ci_low, ci_high, mcse : float
        The power estimand (pooled, or the weakest pair's) with its interval
        at the per-look confidence.
    weakest_pair : str
        The pair with the lowest power ('' for pooled power).
    type1_trials : int
        Studies simulated under the null (0 if not checked).
    type1, type1_low, type1_high : float
        Type I error rate over all pairs and its interval.
    decision : str
        pass / fail / liberal / undecided / not_needed (target goal); best /
        tied / worse / liberal / undecided (budget goal); 'excluded' if not
        simulated.
    """

    candidate: Candidate
    trials: int = 0
    power: float = float("nan")
    ci_low: float = float("nan")
    ci_high: float = float("nan")
    mcse: float = float("nan")
    weakest_pair: str = ""
    type1_trials: int = 0
    type1: float = float("nan")
    type1_low: float = float("nan")
    type1_high: float = float("nan")
    decision: str = ""
    indicators: np.ndarray | None = field(default=None, repr=False)


@dataclass
class PlanResult:
    """Everything the report needs.

    Attributes
    ----------
    config : PlanConfig
    results : list of CandidateResult
        One per candidate, excluded ones included.
    recommended : CandidateResult or None
    look_confidence : dict
        Trials -> confidence of the interval at that look (see the module docstring).
    looks : list of int
        The trial counts a candidate can be evaluated at.
    adaptive_trials, full_trials : int
        Candidate-trials (one synthetic study analysed by one test; power
        and type I check together) used, and what evaluating every simulated
        candidate at ``max_trials`` needs for the same decisions.
    adaptive_studies, full_studies : int
        The same in simulated studies (one study serves all tests of a design).
    new_studies : int
        Studies simulated in this run (the rest were resumed from the store).
    seconds : float
    stages : list of dict
        Per stage: candidates refined for power and for type I error.
    """

    config: PlanConfig
    results: list
    recommended: CandidateResult | None
    look_confidence: dict
    looks: list
    adaptive_trials: int
    full_trials: int
    adaptive_studies: int
    full_studies: int
    new_studies: int
    seconds: float
    stages: list


def trial_schedule(screen_trials: int, max_trials: int) -> list[int]:
    """Trial counts of successive looks: screening, then doubling, ending at ``max_trials``.

    >>> trial_schedule(50, 800)
    [50, 100, 200, 400, 800]
    >>> trial_schedule(50, 300)
    [50, 100, 200, 300]
    """
    looks = [screen_trials]
    while looks[-1] < max_trials:
        looks.append(min(2 * looks[-1], max_trials))
    return looks


def look_confidences(looks: list[int], confidence: float) -> dict[int, float]:
    """Confidence of the interval at each look: half the error on the last, the rest split evenly.

    >>> look_confidences([50, 100, 200], 0.95)
    {50: 0.9875, 100: 0.9875, 200: 0.975}
    """
    error = 1.0 - confidence
    if len(looks) == 1:
        return {looks[0]: confidence}
    early = error / 2 / (len(looks) - 1)
    return {n: round(1.0 - (error / 2 if n == looks[-1] else early), 12) for n in looks}


def right_rejections(frame, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Per trial and pair with a true difference: rejected in the right direction?

    Parameters
    ----------
    frame : pandas.DataFrame
        Stored rows of one (design, test), sorted by trial and pair.

    Returns
    -------
    indicators : ndarray of bool, shape (trials, pairs with a true difference)
        As the summary's ``power`` estimand: failures count as non-rejections,
        the direction is judged on the latent scale.
    relevant : ndarray of int
        Indices of those pairs.
    """
    n_pairs = int(frame["pair"].max()) + 1
    trials = len(frame) // n_pairs
    shape = (trials, n_pairs)
    p_value = frame["p_value"].to_numpy().reshape(shape)
    failed = np.isin(frame["status"].to_numpy().reshape(shape), list(FAILURES))
    estimate = frame["estimate"].to_numpy().reshape(shape)
    true_diff = frame["true_diff"].to_numpy().reshape(shape)[0]
    relevant = np.flatnonzero(true_diff != 0)
    reject = (p_value[:, relevant] < alpha) & ~failed[:, relevant]
    right = reject & (np.sign(estimate[:, relevant]) == np.sign(true_diff[relevant]))
    return right, relevant


def assess(indicators: np.ndarray, power_over: str, confidence: float) -> dict:
    """Power and its interval from per-trial, per-pair right rejections.

    ``pooled``: the share over all pairs with a true difference, its MCSE
    from per-trial shares (the trial is the unit). ``each_pair``: the
    smallest per-pair power; its interval runs from the smallest lower to
    the smallest upper bound of the per-pair intervals, so "passes" means
    every pair passes and "fails" means some pair fails.
    """
    trials, n_relevant = indicators.shape
    if power_over == "pooled":
        rate = rate_from_shares(indicators.mean(axis=1), trials * n_relevant)
        low, high = wilson_from_mcse(rate.rate, rate.mcse, trials, rate.n_tests, confidence)
        return {"power": rate.rate, "ci_low": low, "ci_high": high, "mcse": rate.mcse, "weakest": -1}
    per_pair = [rate_from_shares(indicators[:, column].astype(float), trials) for column in range(n_relevant)]
    bounds = [wilson_from_mcse(r.rate, r.mcse, trials, trials, confidence) for r in per_pair]
    weakest = int(np.argmin([r.rate for r in per_pair]))
    return {"power": per_pair[weakest].rate, "ci_low": min(b[0] for b in bounds),
            "ci_high": min(b[1] for b in bounds), "mcse": per_pair[weakest].mcse, "weakest": weakest}


def _chunk_task(model, effect, seed, chunk):
    return chunk, simulate_chunk(model, effect, seed, chunk)


class _Evaluator:
    """Runs and reads the trials of (design, test) candidates through a results store."""

    def __init__(self, config: PlanConfig, out_dir: Path, jobs: int, effect, subdirectory: str):
        self.config = config
        self.jobs = jobs
        self.effect = effect
        self.sim_configs, self.stores = {}, {}
        for family, raw in config.simulation_config_mappings(effect).items():
            sim_config = parse_config(raw)
            check_backends(sim_config)
            store = ResultsStore(out_dir / subdirectory / family)
            store.prepare(sim_config, raw)
            self.sim_configs[family], self.stores[family] = sim_config, store
        self.designs = {d.label: d for c in self.sim_configs.values() for d in c.designs}
        self.specs = {s.label: s for s in config.tests}
        self.new_studies = 0

    def _family(self, design_label: str) -> str:
        return self.designs[design_label].kind

    def run(self, wanted: dict[tuple[str, str], int]) -> None:
        """Make sure every (design, test) in ``wanted`` has its first n trials stored."""
        by_design: dict[tuple[str, int], list[str]] = {}
        for (design, test), n in wanted.items():
            by_design.setdefault((design, n), []).append(test)
        chunks = []
        for (design, n), tests in by_design.items():
            family = self._family(design)
            sub = dataclasses.replace(self.sim_configs[family], designs=(self.designs[design],),
                                      analyses=tuple(self.specs[t] for t in sorted(tests)))
            chunks += plan_chunks(sub, self.stores[family], n)
        if not chunks:
            return
        # Largest chunks first, so that a slow design does not start last and idle the other workers.
        chunks.sort(key=lambda c: -(c.design.judgements(self.config.model.n_systems) * c.trials))
        studies = set()
        tasks = (delayed(_chunk_task)(self.config.model, self.effect, self.config.seed, chunk)
                 for chunk in chunks)
        for chunk, frame in Parallel(n_jobs=self.jobs, return_as="generator_unordered")(tasks):
            self.stores[chunk.design.kind].write_chunk(chunk.design.label, chunk.first_trial, chunk.stop_trial,
                                                       [s.label for s in chunk.analyses], frame)
            studies.update((chunk.design.label, trial) for trial in range(chunk.first_trial, chunk.stop_trial))
        self.new_studies += len(studies)

    def frames(self, trials: dict) -> dict:
        """Stored rows of the first ``trials[key]`` trials of each (design, test) key, sorted by trial and pair."""
        keys = list(trials)
        out = {}
        for design in sorted({d for d, _ in keys}):
            tests = [t for d, t in keys if d == design]
            table = self.stores[self._family(design)].read_trials(designs=[design], tests=tests,
                                           trials=max(trials[(design, t)] for t in tests))
            for test in tests:
                group = table[(table["test"] == test) & (table["trial"] < trials[(design, test)])]
                out[(design, test)] = group.sort_values(["trial", "pair"])
        return out


def null_rejections(frame, alpha: float) -> np.ndarray:
    """Per trial and pair: rejected under the null? (failures count as non-rejections, as in ``type1``)."""
    n_pairs = int(frame["pair"].max()) + 1
    shape = (len(frame) // n_pairs, n_pairs)
    failed = np.isin(frame["status"].to_numpy().reshape(shape), list(FAILURES))
    return (frame["p_value"].to_numpy().reshape(shape) < alpha) & ~failed


def run_plan(config: PlanConfig, out_dir: Path, jobs: int = 1, progress: bool = False,
             exhaustive: bool = False) -> PlanResult:
    """Evaluate the candidates of ``config`` adaptively (see the module docstring).

    Parameters
    ----------
    config : PlanConfig
    out_dir : Path
        Results directory for the simulated trials (created or resumed).
    jobs : int
    progress : bool
        Print one line per stage.
    exhaustive : bool
        Instead of searching adaptively, evaluate every candidate's power
        and type I error at ``max_trials`` in one look (at the plain
        ``confidence``), then decide by the same rules: the baseline that
        adaptive evaluation is measured against (scripts/bench_planner.py).

    Returns
    -------
    PlanResult
    """
    started = time.perf_counter()
    power_runs = _Evaluator(config, out_dir, jobs, config.effect, STUDIES_DIR)
    null_runs = _Evaluator(config, out_dir, jobs, "zero", NULL_STUDIES_DIR) if config.max_type1 is not None else None
    looks = [config.max_trials] if exhaustive else trial_schedule(config.screen_trials, config.max_trials)
    look_confidence = look_confidences(looks, config.confidence)
    results = {c.key: CandidateResult(candidate=c, decision="excluded") for c in config.candidates}
    active = [results[c.key] for c in config.candidates if not c.excluded]
    pairs = system_pairs(config.model.n_systems)
    relevant = [p for p, (i, j) in enumerate(pairs) if config.model.effects[i] != config.model.effects[j]]
    power_pending = {r.candidate.key: looks[0] for r in active}
    null_pending = {r.candidate.key: looks[0] for r in active} if exhaustive and null_runs is not None else {}
    stages = []
    while power_pending or null_pending:
        power_runs.run(power_pending)
        for key, frame in power_runs.frames(power_pending).items():
            result = results[key]
            matrix, _ = right_rejections(frame, config.alpha)
            result.trials, result.indicators = matrix.shape[0], matrix
            estimate = assess(matrix, config.power_over, look_confidence[result.trials])
            result.power, result.ci_low, result.ci_high, result.mcse = (
                estimate["power"], estimate["ci_low"], estimate["ci_high"], estimate["mcse"])
            if estimate["weakest"] >= 0:
                i, j = pairs[relevant[estimate["weakest"]]]
                result.weakest_pair = f"{config.model.systems[i]} vs {config.model.systems[j]}"
        if null_pending:
            null_runs.run(null_pending)
            for key, frame in null_runs.frames(null_pending).items():
                result = results[key]
                rejections = null_rejections(frame, config.alpha)
                rate = rate_from_shares(rejections.mean(axis=1), rejections.size)
                result.type1_trials = rejections.shape[0]
                result.type1 = rate.rate
                result.type1_low, result.type1_high = wilson_from_mcse(rate.rate, rate.mcse, result.type1_trials,
                                                                       rate.n_tests,
                                                                       look_confidence[result.type1_trials])
        stages.append({"power": len(power_pending), "type1": len(null_pending)})
        if progress:
            print(f"  stage {len(stages)}: power of {len(power_pending)} candidate(s)"
                  + (f", type I error of {len(null_pending)}" if null_runs is not None else "")
                  + f"; {power_runs.new_studies + (null_runs.new_studies if null_runs else 0)} studies simulated "
                    "so far", flush=True)
        power_pending, null_pending = ({}, {}) if exhaustive else _next_stage(config, active, looks)
    recommended = _decide(config, active)
    return PlanResult(
        config=config, results=list(results.values()), recommended=recommended, look_confidence=look_confidence,
        looks=looks, **_effort(config, active), new_studies=power_runs.new_studies + (null_runs.new_studies
                                                                                      if null_runs else 0),
        seconds=time.perf_counter() - started, stages=stages)


def _effort(config: PlanConfig, active: list) -> dict:
    """Trials used against trials for evaluating every candidate fully (power, and type I if checked)."""
    checks = 2 if config.max_type1 is not None else 1
    power_studies: dict[str, int] = {}
    null_studies: dict[str, int] = {}
    for r in active:
        label = r.candidate.design.label
        power_studies[label] = max(power_studies.get(label, 0), r.trials)
        null_studies[label] = max(null_studies.get(label, 0), r.type1_trials)
    return {"adaptive_trials": sum(r.trials + r.type1_trials for r in active),
            "full_trials": len(active) * config.max_trials * checks,
            "adaptive_studies": sum(power_studies.values()) + sum(null_studies.values()),
            "full_studies": len(power_studies) * config.max_trials * checks}


def _power_status(config: PlanConfig, r: CandidateResult) -> str:
    if config.goal == "budget":
        return OPEN if r.ci_high - r.ci_low > config.power_tolerance else PASS
    if r.ci_low >= config.target_power:
        return PASS
    return FAIL if r.ci_high < config.target_power else OPEN


def _type1_status(config: PlanConfig, r: CandidateResult) -> str:
    """'pass' (at most max_type1), 'liberal' (above it), 'open', or 'unchecked'."""
    if config.max_type1 is None:
        return PASS
    if not r.type1_trials:
        return "unchecked"
    if r.type1_high <= config.max_type1:
        return PASS
    return LIBERAL if r.type1_low > config.max_type1 else OPEN


def _overall(config: PlanConfig, r: CandidateResult) -> str:
    power, type1 = _power_status(config, r), _type1_status(config, r)
    if power == FAIL:
        return FAIL
    if type1 == LIBERAL:
        return LIBERAL
    return PASS if power == PASS and type1 == PASS else OPEN


def _next_level(looks: list, trials: int) -> int | None:
    later = [n for n in looks if n > trials]
    return later[0] if later else None


def _next_stage(config: PlanConfig, active: list, looks: list) -> tuple[dict, dict]:
    """Which candidates need more power trials, and which need (more) null trials.

    Target goal: the candidates no costlier than the cheapest passing one
    (plus ``cost_tolerance``) whose decision is still open. Budget goal:
    the candidates that may still be the most powerful (upper end at or
    above the best lower end among those not shown to be liberal).
    """
    if config.goal == "target_power":
        passing = [r.candidate.total_cost for r in active if _overall(config, r) == PASS]
        threshold = min(passing) * (1.0 + config.cost_tolerance) if passing else np.inf
        needed = [r for r in active if r.candidate.total_cost <= threshold and _overall(config, r) == OPEN]
    else:
        eligible = [r for r in active if _type1_status(config, r) != LIBERAL]
        best_low = max((r.ci_low for r in eligible), default=np.inf)
        needed = [r for r in eligible if r.ci_high >= best_low
                  and (_power_status(config, r) == OPEN or _type1_status(config, r) in (OPEN, "unchecked"))]
    power_pending, null_pending = {}, {}
    for r in needed:
        key = r.candidate.key
        if _power_status(config, r) == OPEN and (n := _next_level(looks, r.trials)):
            power_pending[key] = n
        type1 = _type1_status(config, r)
        if type1 == "unchecked":
            null_pending[key] = looks[0]
        elif type1 == OPEN and (n := _next_level(looks, r.type1_trials)):
            null_pending[key] = n
    return power_pending, null_pending


def _by_cost(results):
    return sorted(results, key=lambda r: (r.candidate.total_cost, -r.power, r.candidate.key))


def _decide(config: PlanConfig, active: list):
    """Label every simulated candidate and pick the recommendation."""
    if config.goal == "target_power":
        passing = [r.candidate.total_cost for r in active if _overall(config, r) == PASS]
        threshold = min(passing) * (1.0 + config.cost_tolerance) if passing else np.inf
        for r in active:
            overall = _overall(config, r)
            if overall != OPEN:
                r.decision = overall
            else:
                r.decision = UNDECIDED if r.candidate.total_cost <= threshold else NOT_NEEDED
        passing = _by_cost([r for r in active if r.decision == PASS])
        return passing[0] if passing else None
    eligible = [r for r in active if _type1_status(config, r) != LIBERAL]
    best_low = max((r.ci_low for r in eligible), default=np.inf)
    for r in active:
        if _type1_status(config, r) == LIBERAL:
            r.decision = LIBERAL
        elif r.ci_high < best_low:
            r.decision = WORSE
        elif _power_status(config, r) == OPEN or _type1_status(config, r) != PASS:
            r.decision = UNDECIDED
        else:
            r.decision = TIED
    # Power still too imprecise at max_trials does not disqualify: the answer is then the best known,
    # and the report lists the candidates it could not be told apart from. A type I check must have passed.
    valid = [r for r in eligible if r.decision != WORSE and _type1_status(config, r) == PASS]
    if not valid:
        return None
    # Designs whose power is within the tolerance of the top estimate are as good as it for the purpose;
    # the cheapest of them is the better buy.
    top = max(r.power for r in valid)
    best = min((r for r in valid if r.power >= top - config.power_tolerance),
               key=lambda r: (r.candidate.total_cost, -r.power, r.candidate.key))
    best.decision = BEST
    return best
