"""Adaptive evaluation of the planner's candidates by simulation, and confirmation of the answer.

**Search.** Every simulated candidate first gets ``screen_trials`` trials;
after that, trials double (up to ``max_trials``) only for the candidates
whose decision still matters and is not yet made:

* goal ``target_power``: a candidate *passes* when the lower end of its
  power interval reaches the target, *fails* when the upper end is below
  it. Only candidates no costlier than the cheapest passing one (plus
  ``cost_tolerance``, so that near-ties in cost get decided too) need a
  decision; costlier ones keep their screening estimate ("not_needed").
* goal ``budget``: a candidate is *worse* when its upper end is below the
  best lower end among the *contenders*: the affordable candidates not
  shown to be liberal whose type I error holds max_type1 or may still be
  shown to (a candidate whose type I error is still undecided at
  ``max_trials`` can never be recommended, so it sets no bar: the search
  then refines the next most powerful ones). The rest are refined
  until their intervals are narrower than ``power_tolerance``. The pick is
  the cheapest of those shown to hold their level whose power estimate is
  within ``power_tolerance`` of the highest of them (more power than that
  cannot be told apart, less money can).

A candidate still open at ``max_trials`` is *undecided*, never passing.

**Screening order** (``screening``, target goal only). ``eager`` (the
default) screens every candidate in the first stage. ``by_cost`` screens
them lazily, cheapest first: the screened ones are refined by the rules
above, and each stage is filled up to ``SCREEN_BATCH`` x ``screen_trials``
trials with the cheapest candidates not yet screened whose cost is at most
the current threshold (the cheapest passing cost x (1 + ``cost_tolerance``),
infinite while none passes). So a
candidate is screened only if, when its batch starts, it costs no more
than the threshold of that moment; one never screened (it costs more than
the final threshold) is *not_needed* with no estimate. Since a candidate's
decision depends only on its own trials (trial t has its own seed, the
looks are the same) and every candidate within the final threshold is
screened and refined to a decision either way, ``by_cost`` picks the same
candidate as ``eager`` and confirms it on the same trials, simulating
fewer candidates. The budget goal has no such rule (power need not grow
with cost), so it screens eagerly.

Power is worth nothing if the test does not hold its level: the paper's
central finding is that tests on non-independent judgements (few
annotators judging many documents) reject a true null far more often than
alpha. So, unless ``max_type1`` is null, every candidate that could be the
answer is also simulated under ``effect: zero`` and must be *shown to hold*
``max_type1`` (default 1.5 x alpha): the upper end of its type I interval
must be at most ``max_type1`` (``type1_over: pooled``, the rate over all
pairs, or ``each_pair``, every pair's rate). One shown to exceed it is
*liberal*; one that cannot be shown either way stays undecided. Neither is
ever recommended.

Rates, MCSEs and intervals come from the summary's functions (one
aggregation path: :func:`~simdesign.studies.rates.summary.rejections`,
:func:`~simdesign.studies.rates.summary.share_rate`, :func:`~simdesign.studies.rates.summary.wilson_interval`):
Wilson intervals at the trial-level effective size. Each candidate is looked at
up to L times, so the search spends its error 1 - confidence across the
looks (half on the last look, the other half split evenly over the earlier
ones). With ``each_pair`` a candidate passes when *every* pair's lower
bound reaches the target (no correction is needed for "all pass") and
fails when *some* pair's upper bound is below it, with those upper bounds
Bonferroni-corrected over the pairs (else good candidates would be thrown
away by whichever pair happened to come out low); the same, mirrored, for
the type I check.

**Confirmation.** The search picks the cheapest of many passing candidates,
a selection: with many candidates just below the target, one of them
passes by chance more often than one candidate's rule allows. So the pick
is *confirmed* on fresh trial indices (``max_trials`` onwards, never used
by the search): ``confirm_trials`` new studies for its power and, unless
``max_type1`` is null, as many under the null for its type I check, each
bound applied once, at one-sided level (1 - confidence) / (2 m). If the
confirmation fails, the candidate is *not_confirmed*, the search goes on
without it and confirms its next pick, at most m = ``confirm_candidates``
picks in all (each on its own fresh trial range); after m failures the
answer is "no design confirmed". Since the confirmation data are
independent of everything that chose the candidate, by the union bound over
the m attempts:

    P(recommending a design whose true power is below the target) <= (1 - confidence) / 2
    P(recommending a design whose type I error is above max_type1) <= (1 - confidence) / 2

whatever the number of candidates (the budget goal confirms the type I
check only; its power is a best estimate, not a guarantee), and whatever
the order in which the candidates were screened: the bound rests on the
confirmation's fresh trials alone, so ``by_cost`` screening keeps it.
:func:`decide_plan` is the procedure; its outcomes come from an *outcome
source*: :class:`SimulatedOutcomes` (studies simulated by the engine) in
the planner, binomial draws at known rates in the test of the guarantee.

Trials come from the engine (:func:`simdesign.studies.rates.engine.simulate_chunk`) and
are stored in an ordinary results directory, so a re-run resumes and any
trial can be replayed with ``simdesign replay``. A candidate's later trials
continue its trial index (trial t always has the same seed), so the
outcome does not depend on how the work was staged.
"""
from __future__ import annotations

import dataclasses
import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from simdesign.significance import system_pairs
from simdesign.studies.rates.config import stable_digest
from simdesign.studies.backends import DEFAULT_RETRIES, BackendSpec, ChunkExecutor, check_backend, r_backed
from simdesign.planning.method_search import check_engine_method, method_config, method_of_label, store_suffix
from simdesign.planning.planner import Candidate, PlanConfig
from simdesign.runner.stores import atomic_write_bytes, release_stores_under
from simdesign.runner.study import REGISTERED
from simdesign.studies.kinds import RATE_STUDY
from simdesign.studies.rates.summary import rejections, share_rate, wilson_interval
from simdesign.stats.montecarlo import level_verdict

STUDIES_DIR = "studies"
CACHE_DIR = ".plan_cache"
# what the decisions read from a stored row (simdesign.studies.rates.summary.rejections)
CACHE_COLUMNS = ["design", "test", "trial", "pair", "p_value", "status", "estimate", "true_diff"]
NULL_STUDIES_DIR = "studies_null"
PASS, FAIL, UNDECIDED, NOT_NEEDED, LIBERAL = "pass", "fail", "undecided", "not_needed", "liberal"
BEST, TIED, WORSE = "best", "tied", "worse"
CONFIRMED, NOT_CONFIRMED = "confirmed", "not_confirmed"
OPEN = "open"
# screening: by_cost fills each stage up to this many screenings' worth of trials (16 x screen_trials), the
# refinements pending first: 16 candidates of 50 trials are enough chunks that neither of two workers waits long
# for the other at the end of a stage, and while cheaper candidates are still being refined (they decide the
# threshold) few or no dearer ones are screened, so little is simulated past the threshold.
SCREEN_BATCH = 16


@dataclass
class CandidateResult:
    """A candidate's evaluation.

    Attributes
    ----------
    candidate : Candidate
    trials : int
        Simulated studies behind the search's power estimate (0 if not simulated).
    power, ci_low, ci_high, mcse : float
        The power estimand (pooled, or the weakest pair's) with its interval
        at the per-look confidence (``each_pair``: ``ci_high`` is the
        smallest Bonferroni-corrected per-pair upper bound).
    weakest_pair : str
        The pair with the lowest power ('' for pooled power; the report names it either way,
        :func:`weakest_pair_power`).
    type1_trials : int
        Studies simulated under the null in the search (0 if not checked).
    type1, type1_low, type1_high : float
        Type I error rate (pooled, or the most liberal pair's) and its interval.
    decision : str
        pass / fail / liberal / undecided / not_needed / not_confirmed (target
        goal; with ``screening: by_cost`` a not_needed candidate may never have
        been simulated: ``trials`` 0, NaN estimates); best / tied / worse /
        liberal / undecided / not_confirmed (budget goal); 'excluded' if not
        simulated.
    confirmation : str
        '' (not confirmed, not attempted), 'confirmed' or 'not_confirmed'.
    confirm_first_trial, confirm_trials : int
        The fresh trial range of the confirmation (``confirm_trials`` 0 if none).
    confirm_power, confirm_low, confirm_type1, confirm_type1_high : float
        Confirmation estimates and the one-sided bounds that decided it
        (NaN where not run).
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
    confirmation: str = ""
    confirm_first_trial: int = 0
    confirm_trials: int = 0
    confirm_power: float = float("nan")
    confirm_low: float = float("nan")
    confirm_type1: float = float("nan")
    confirm_type1_high: float = float("nan")
    confirm_type1_trials: int = 0
    indicators: np.ndarray | None = field(default=None, repr=False)

    def __repr__(self) -> str:
        from simdesign.planning.plan_views import candidate_repr

        return candidate_repr(self)


@dataclass
class PlanResult:
    """Everything the report needs.

    Attributes
    ----------
    config : PlanConfig
    results : list of CandidateResult
        One per candidate, excluded ones included.
    recommended : CandidateResult or None
        The confirmed answer (None: nothing passed the search, or no pick was confirmed).
    look_confidence : dict
        Trials -> confidence of the interval at that look (see the module docstring).
    looks : list of int
        The trial counts a candidate can be evaluated at.
    confirm_level : float
        One-sided error level of each confirmation, (1 - confidence) / (2 m).
    confirmations : list of CandidateResult
        The confirmed or rejected picks, in order.
    adaptive_trials, full_trials : int
        Candidate-trials (one synthetic study analysed by one test; power,
        type I check and confirmation together) used, and what evaluating every
        simulated candidate at ``max_trials`` needs (without confirmation).
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
    confirm_level: float
    confirmations: list
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


def confirmation_confidence(confidence: float, candidates: int) -> float:
    """Two-sided confidence whose one-sided error is (1 - confidence) / (2 x candidates).

    >>> round(confirmation_confidence(0.95, 2), 6)
    0.975
    """
    return 1.0 - (1.0 - confidence) / candidates


def rate_over_pairs(indicators: np.ndarray, over: str, confidence: float, worst: str) -> dict:
    """A rate over system pairs with the interval its decision rules need.

    Parameters
    ----------
    indicators : ndarray of bool, shape (trials, pairs)
    over : {'pooled', 'each_pair'}
        ``pooled``: the share over all pairs, its MCSE from per-trial shares
        (the trial is the unit; the summary's estimand). ``each_pair``: the
        worst pair's rate.
    confidence : float
        Two-sided confidence of the intervals (one-sided error (1 - confidence) / 2 per bound).
    worst : {'min', 'max'}
        Which pair is the worst: the least powerful ('min', power) or the
        most liberal ('max', type I error).

    Returns
    -------
    dict
        ``rate, ci_low, ci_high, mcse, worst`` (index of the worst pair, -1 if pooled).
        With ``each_pair`` and ``worst='min'``, ``ci_low`` is the smallest
        per-pair lower bound ("every pair reaches t" if ci_low >= t: needs
        no correction) and ``ci_high`` the smallest per-pair upper bound at
        the Bonferroni-corrected confidence over the pairs ("some pair is
        below t" if ci_high < t: one of several chances, hence the
        correction); mirrored for ``worst='max'``.
    """
    trials, n_pairs = indicators.shape
    if over == "pooled":
        rate, mcse = share_rate(indicators.mean(axis=1))
        low, high = wilson_interval(rate, mcse, trials, trials * n_pairs, confidence)
        return {"rate": rate, "ci_low": low, "ci_high": high, "mcse": mcse, "worst": -1}
    corrected = 1.0 - (1.0 - confidence) / n_pairs
    rates, mcses = share_rate(indicators)
    plain = [wilson_interval(float(r), float(m), trials, trials, confidence) for r, m in zip(rates, mcses)]
    bonferroni = [wilson_interval(float(r), float(m), trials, trials, corrected) for r, m in zip(rates, mcses)]
    if worst == "min":
        index = int(np.argmin(rates))
        low, high = min(b[0] for b in plain), min(b[1] for b in bonferroni)
    else:
        index = int(np.argmax(rates))
        low, high = max(b[0] for b in bonferroni), max(b[1] for b in plain)
    return {"rate": float(rates[index]), "ci_low": low, "ci_high": high, "mcse": float(mcses[index]),
            "worst": index}


ORDER_GOALS = ("top_pair", "adjacent_pairs")
"""``power_over`` goals about the systems' order (an Arena-style "how many battles" question): the probability
that the true best two systems are told apart (``top_pair``), or that every pair of systems adjacent in the true
order is (``adjacent_pairs``), each a right rejection at ``alpha``."""


def goal_indicators(config: PlanConfig, right: np.ndarray) -> np.ndarray:
    """The per-trial indicators the power goal is assessed on: the right rejections of the pairs with a true
    difference (trials, pairs) for ``pooled`` and ``each_pair``; for an order goal one column (trials, 1):
    whether the trial separated the top pair, or every adjacent pair (model order of effects, ties skipped)."""
    if config.power_over not in ORDER_GOALS:
        return right
    effects = np.asarray(config.model.effects, dtype=float)
    relevant = [(i, j) for i, j in system_pairs(config.model.n_systems) if effects[i] != effects[j]]
    column = {pair: k for k, pair in enumerate(relevant)}
    order = [int(s) for s in np.argsort(-effects, kind="stable")]
    adjacent = [tuple(sorted((a, b))) for a, b in zip(order[:-1], order[1:]) if effects[a] != effects[b]]
    wanted = adjacent[:1] if config.power_over == "top_pair" else adjacent
    return right[:, [column[pair] for pair in wanted]].all(axis=1, keepdims=True)


def assess(indicators: np.ndarray, power_over: str, confidence: float) -> dict:
    """Power and its interval from per-trial, per-pair right rejections.

    ``pooled``: the share over all pairs with a true difference.
    ``each_pair``: the smallest per-pair power; "passes" means every pair's
    lower bound reaches the target, "fails" means some pair's
    Bonferroni-corrected upper bound is below it (see :func:`rate_over_pairs`).
    """
    # an order goal's indicators are one column already (goal_indicators): its rate is that column's share
    estimate = rate_over_pairs(indicators, "pooled" if power_over in ORDER_GOALS else power_over, confidence, "min")
    return {"power": estimate["rate"], "ci_low": estimate["ci_low"], "ci_high": estimate["ci_high"],
            "mcse": estimate["mcse"], "weakest": estimate["worst"]}


# ----------------------------------------------------------------------------------------------------------------
# Outcome sources


class OutcomeSource:
    """Where the decision procedure gets its outcomes from.

    ``power(wanted)`` and ``null(wanted)`` take ``{(design label, test
    label): (first_trial, stop_trial)}`` and return, per key, a boolean
    matrix of shape (stop - first, pairs): right rejections of the pairs
    with a true difference (power) or rejections of every pair under the
    null. Trial t of a key must always give the same row, whatever the
    range asked for: the search extends a candidate's trials, and the
    confirmation relies on trial ranges being disjoint and independent.
    """

    new_studies = 0

    def power(self, wanted: dict) -> dict:
        raise NotImplementedError

    def null(self, wanted: dict) -> dict:
        raise NotImplementedError

    def flush(self) -> None:
        """Called once the decisions are made (e.g. to save caches)."""


class _PlanStudies:
    """A cache over the rate-study stores of one effect (power or null): what they hold, read once.

    The stored chunk files stay the only record. But a finished plan has
    about a thousand of them and reading each costs more than deciding, so
    the columns the decisions need are also kept in one file per store,
    ``DIR/.plan_cache/<studies dir>-<family>.parquet``, with the names of the
    chunk files it holds and the store's fingerprint (model, effect, seed,
    test options): a re-run reads that file plus only the chunk files it does
    not hold, and simulates nothing it has. A cache whose fingerprint or file
    list does not match the store is ignored and rebuilt. The stores are the
    one :class:`~simdesign.runner.stores.Store` class (rate format), opened
    through the rate study kind; chunk files are read through them (a chunk
    whose tests have other fingerprints than its store's is not read).
    """

    def __init__(self, config: PlanConfig, out_dir: Path, executor: ChunkExecutor, effect, subdirectory: str,
                 retries: int = DEFAULT_RETRIES):
        self.config = config
        self.executor = executor
        self.retries = retries
        self.effect = effect
        self.sim_configs, self.stores, self.cache_paths = {}, {}, {}
        # One store object per annotation method (config.methods has one entry here, see SimulatedOutcomes);
        # the mapping keys are store names ('block', 'block-rank'), the dicts below are keyed by design kind.
        self.method = config.methods[0]
        check_engine_method(self.method)
        # The candidates' studies are rate studies, run through that study kind's interface like any client's.
        self.kind = REGISTERED[RATE_STUDY]
        for name, (family, sim_config) in config.simulation_configs(effect).items():
            store = self.kind.open_store(sim_config, out_dir / subdirectory / name)
            self.sim_configs[family], self.stores[family] = sim_config, store
            self.cache_paths[family] = out_dir / CACHE_DIR / f"{subdirectory}-{name}.parquet"
        self.designs = {d.label: d for c in self.sim_configs.values() for d in c.designs}
        # Result label -> work item: the engine's work_specs label rank items '<test>@rank' (issue 13).
        self.specs = {s.label: s for c in self.sim_configs.values() for s in getattr(c, "work_specs", c.analyses)}
        self.new_studies = 0
        self._done: dict[str, dict[str, set]] = {}
        self._rows: dict[str, list] = {}
        self._files: dict[str, set] = {}
        self._dirty: set[str] = set()

    def _cache_key(self, family: str) -> str:
        manifest = self.stores[family].manifest()
        return stable_digest({"fingerprint": manifest.get("fingerprint"), "analyses": manifest.get("analyses")})

    def _load_family(self, family: str) -> None:
        """Read a store once: its cache file, then the chunk files the cache does not hold."""
        if family in self._files:
            return
        store = self.stores[family]
        files = {str(path.relative_to(store.directory)) for path in store.chunk_files()}
        cache, meta = self.cache_paths[family], self.cache_paths[family].with_suffix(".json")
        frames, known = [], set()
        if cache.is_file() and meta.is_file():
            stored = json.loads(meta.read_text())
            if stored.get("key") == self._cache_key(family) and set(stored.get("files", ())) <= files:
                frames.append(pd.read_parquet(cache))
                known = set(stored["files"])
        missing = sorted(files - known)
        frames += [frame for frame in (store.read_chunk(store.directory / name, columns=CACHE_COLUMNS)
                                       for name in missing) if frame is not None]
        if missing:
            self._dirty.add(family)
        table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=CACHE_COLUMNS)
        self._files[family] = files
        for label in (d for d, design in self.designs.items() if design.kind == family):
            self._rows[label], self._done[label] = [], {}
        for label, group in table.groupby("design", sort=False):
            if label in self._rows:
                self._rows[label] = [group]
                self._done[label] = {test: set(trials.tolist()) for test, trials in group.groupby("test")["trial"]}

    def _load(self, design_label: str) -> None:
        self._load_family(self.designs[design_label].kind)

    def completed(self, design_label: str) -> dict[str, set[int]]:
        """Test label -> stored trial indices (the store interface the rate study kind's trial_chunks needs)."""
        self._load(design_label)
        return self._done[design_label]

    def flush(self) -> None:
        """Write the cache of every store that gained rows (all designs of the store, needed columns)."""
        for family in sorted(self._dirty):
            labels = [label for label, design in self.designs.items() if design.kind == family]
            frames = [frame[CACHE_COLUMNS] for label in labels for frame in self._rows.get(label, [])]
            if not frames:
                continue
            table = pd.concat(frames, ignore_index=True)
            cache = self.cache_paths[family]
            cache.parent.mkdir(parents=True, exist_ok=True)
            # the table first, the file list last: a crash in between leaves a list that does not match
            atomic_write_bytes(cache, table.to_parquet(index=False))
            atomic_write_bytes(cache.with_suffix(".json"), json.dumps(
                {"key": self._cache_key(family), "files": sorted(self._files[family])}).encode())
        self._dirty.clear()

    def run(self, wanted: dict) -> None:
        """Make sure every (design, test): (first, stop) in ``wanted`` has those trials stored."""
        studies = set()

        def save(chunk, frame) -> None:
            label = chunk.design.label
            tests = [s.label for s in chunk.analyses]
            store = self.stores[chunk.design.kind]
            path = store.write_chunk(label, chunk.first_trial, chunk.stop_trial, tests, frame)
            self._load(label)
            self._files[chunk.design.kind].add(str(path.relative_to(store.directory)))
            self._dirty.add(chunk.design.kind)
            self._rows[label].append(frame[CACHE_COLUMNS])
            for test in tests:
                self._done[label].setdefault(test, set()).update(range(chunk.first_trial, chunk.stop_trial))
            studies.update((label, trial) for trial in range(chunk.first_trial, chunk.stop_trial))

        # the runner's chunk loop: the same backends and lost-worker retry as `run` (every store of this object
        # has the plan's model, effect and seed, so any of its configs computes any of its chunks)
        self.kind.compute_chunks(next(iter(self.sim_configs.values())), self.executor,
                                 lambda: self._missing_chunks(wanted), save, self.retries)
        self.new_studies += len(studies)

    def _missing_chunks(self, wanted: dict) -> list:
        """Chunks for the trials of ``wanted`` not yet stored (asked again after a lost worker)."""
        groups: dict[tuple[str, int, int], list[str]] = {}
        for (design, test), (first, stop) in wanted.items():
            groups.setdefault((design, first, stop), []).append(test)
        chunks = []
        for (design, first, stop), tests in groups.items():
            family = self.designs[design].kind
            # a method's work item wraps its test ('.spec'); the config's methods wrap it again
            sub = dataclasses.replace(self.sim_configs[family], designs=(self.designs[design],),
                                      analyses=tuple(getattr(self.specs[t], "spec", self.specs[t]) for t in sorted(tests)))
            # the chunks cover trials 0..stop-1; a confirmation range starts later (fresh trials only)
            for chunk in self.kind.trial_chunks(sub, self, stop):
                if chunk.stop_trial > first:
                    chunks.append(dataclasses.replace(chunk, first_trial=max(chunk.first_trial, first)))
        return chunks

    def frames(self, wanted: dict) -> dict:
        """Stored rows of each (design, test): (first, stop) in ``wanted``, sorted by trial and pair."""
        out = {}
        for design in sorted({d for d, _ in wanted}):
            self._load(design)
            rows = self._rows[design]
            if len(rows) > 1:
                self._rows[design] = rows = [pd.concat(rows, ignore_index=True)]
            table = rows[0] if rows else pd.DataFrame(columns=["test", "trial", "pair"])
            for (d, test), (first, stop) in wanted.items():
                if d != design:
                    continue
                group = table[(table["test"] == test) & (table["trial"] >= first) & (table["trial"] < stop)]
                group = group.sort_values(["trial", "pair"])
                if group["trial"].nunique() != stop - first:
                    raise RuntimeError(f"{design} / {test}: trials {first}-{stop - 1} are not all stored")
                out[(design, test)] = group
        return out


class SimulatedOutcomes(OutcomeSource):
    """Outcomes of studies simulated by the engine and kept in ``out_dir/studies*`` (resumable).

    Parameters
    ----------
    config : PlanConfig
    out_dir : Path
        Results directory (created or resumed).
    executor : ChunkExecutor
        An open executor (:mod:`simdesign.studies.backends`); outcomes do not depend on it.
    retries : int
        Resubmissions after lost workers, as in ``run``.
    """

    def __init__(self, config: PlanConfig, out_dir: Path, executor: ChunkExecutor, retries: int = DEFAULT_RETRIES):
        self.alpha = config.alpha
        # One study store per annotation method: a Likert and a Rank study of one design are different data.
        self._power, self._null = {}, {}
        for method in config.methods:
            part = method_config(config, method)
            suffix = store_suffix(method)
            self._power[method] = _PlanStudies(part, out_dir, executor, config.effect, STUDIES_DIR + suffix, retries)
            if config.max_type1 is not None:
                self._null[method] = _PlanStudies(part, out_dir, executor, "zero", NULL_STUDIES_DIR + suffix, retries)

    @property
    def new_studies(self) -> int:
        return sum(store.new_studies for store in (*self._power.values(), *self._null.values()))

    @staticmethod
    def _by_method(wanted: dict) -> dict:
        parts: dict = {}
        for key, span in wanted.items():
            parts.setdefault(method_of_label(key[1]), {})[key] = span
        return parts

    def power(self, wanted: dict) -> dict:
        out = {}
        for method, part in self._by_method(wanted).items():
            self._power[method].run(part)
            out.update({key: rejections(frame, self.alpha).right()
                        for key, frame in self._power[method].frames(part).items()})
        return out

    def null(self, wanted: dict) -> dict:
        out = {}
        for method, part in self._by_method(wanted).items():
            self._null[method].run(part)
            out.update({key: rejections(frame, self.alpha).reject
                        for key, frame in self._null[method].frames(part).items()})
        return out

    def flush(self) -> None:
        for store in (*self._power.values(), *self._null.values()):
            store.flush()


# ----------------------------------------------------------------------------------------------------------------
# The decision procedure


def run_plan(config: PlanConfig, out_dir: Path, jobs: int = 1, progress: bool = False,
             exhaustive: bool = False, backend: str | BackendSpec = "loky", scheduler: str | None = None,
             workers: int | None = None, retries: int = DEFAULT_RETRIES) -> PlanResult:
    """Evaluate the candidates of ``config`` by simulation and confirm the answer (see the module docstring).

    Parameters
    ----------
    config : PlanConfig
    out_dir : Path
        Results directory for the simulated trials (created or resumed).
    jobs : int
        Workers of the loky or threading backend; the plan does not depend on it.
    progress : bool
        Print one line per stage.
    exhaustive : bool
        Instead of searching adaptively, evaluate every candidate's power
        and type I error at ``max_trials`` in one look (at the plain
        ``confidence``), then decide and confirm by the same rules: the
        baseline that adaptive evaluation is measured against
        (scripts/bench_planner.py).
    backend, scheduler, workers, retries
        Where the studies are computed, as for :func:`simdesign.studies.rates.engine.run_simulation`
        (loky, threading or Dask, with the same lost-worker retry); the plan does not depend on it.

    Returns
    -------
    PlanResult
    """
    spec = backend if isinstance(backend, BackendSpec) else BackendSpec(backend, jobs, scheduler, workers, retries)
    check_backend(spec, config.tests)
    try:
        with ChunkExecutor(spec, needs_r=bool(r_backed(config.tests))) as executor:
            outcomes = SimulatedOutcomes(config, Path(out_dir), executor, spec.retries)
            return decide_plan(config, outcomes, progress=progress, exhaustive=exhaustive)
    finally:
        release_stores_under(out_dir)  # the study stores SimulatedOutcomes claimed


def decide_plan(config: PlanConfig, outcomes: OutcomeSource, progress: bool = False,
                exhaustive: bool = False) -> PlanResult:
    """The planner's decision procedure: adaptive search, then confirmation of its pick.

    Parameters
    ----------
    config : PlanConfig
    outcomes : OutcomeSource
        Supplies per-trial rejections (:class:`SimulatedOutcomes` in the
        planner; known-rate draws in tests of the guarantee).
    progress : bool
    exhaustive : bool
        See :func:`run_plan` (it screens every candidate, whatever ``config.screening``).

    Returns
    -------
    PlanResult
    """
    started = time.perf_counter()
    checks_type1 = config.max_type1 is not None
    looks = [config.max_trials] if exhaustive else trial_schedule(config.screen_trials, config.max_trials)
    look_confidence = look_confidences(looks, config.confidence)
    results = {c.key: CandidateResult(candidate=c, decision="excluded") for c in config.candidates}
    active = [results[c.key] for c in config.candidates if not c.excluded]
    lazy = config.screening == "by_cost" and not exhaustive
    screened = [] if lazy else list(active)  # by_cost: candidates join in cost order, batch by batch
    power_pending = {} if lazy else {r.candidate.key: looks[0] for r in active}
    null_pending = {r.candidate.key: looks[0] for r in active} if exhaustive and checks_type1 else {}
    stages, confirmations = [], []
    level = confirmation_confidence(config.confidence, config.confirm_candidates)
    needs_confirmation = config.goal == "target_power" or checks_type1
    while True:
        while True:
            batch = _screening_batch(config, active, screened, power_pending, null_pending) if lazy else []
            screened += batch
            power_pending.update({r.candidate.key: looks[0] for r in batch})
            if not (power_pending or null_pending):
                break
            _run_stage(config, outcomes, results, power_pending, null_pending, look_confidence)
            stages.append({"power": len(power_pending), "type1": len(null_pending), "screened": len(batch)})
            if progress:
                print(f"  stage {len(stages)}: power of {len(power_pending)} candidate(s)"
                      + (f" ({len(batch)} screened first, {len(screened)} of {len(active)} so far)" if lazy else "")
                      + (f", type I error of {len(null_pending)}" if checks_type1 else "")
                      + f"; {outcomes.new_studies} studies simulated so far", flush=True)
            power_pending, null_pending = ({}, {}) if exhaustive else _next_stage(config, screened, looks)
        pick = _decide(config, screened)
        if pick is None or not needs_confirmation:
            break
        _confirm(config, outcomes, pick, len(confirmations), level)
        confirmations.append(pick)
        if progress:
            print(f"  confirmation {len(confirmations)}: {pick.candidate.design.label} with "
                  f"{pick.candidate.test.label} on trials {pick.confirm_first_trial}-"
                  f"{pick.confirm_first_trial + pick.confirm_trials - 1}: {pick.confirmation}", flush=True)
        if pick.confirmation == CONFIRMED:
            break
        if len(confirmations) == config.confirm_candidates:
            _decide(config, screened)  # labels the rejected pick not_confirmed
            pick = None  # every allowed confirmation was spent: no design confirmed (searching on would be waste)
            break
        if not exhaustive:
            power_pending, null_pending = _next_stage(config, screened, looks)
    outcomes.flush()
    for r in active:
        if not r.trials:  # by_cost: never screened, because it costs more than the threshold
            r.decision = NOT_NEEDED
    recommended = pick
    if recommended is not None and needs_confirmation:
        recommended.decision = BEST if config.goal == "budget" else PASS
    return PlanResult(
        config=config, results=list(results.values()), recommended=recommended, look_confidence=look_confidence,
        looks=looks, confirm_level=(1.0 - level) / 2, confirmations=confirmations,
        **_effort(config, active), new_studies=outcomes.new_studies, seconds=time.perf_counter() - started,
        stages=stages)


def _run_stage(config: PlanConfig, outcomes: OutcomeSource, results: dict, power_pending: dict,
               null_pending: dict, look_confidence: dict) -> None:
    """Simulate (or read) the pending trials and update the candidates' estimates."""
    labels = _pair_labels(config)
    for key, matrix in outcomes.power({k: (0, n) for k, n in power_pending.items()}).items():
        result = results[key]
        estimate = assess(goal_indicators(config, matrix), config.power_over, look_confidence[matrix.shape[0]])
        result.trials, result.indicators = matrix.shape[0], matrix
        result.power, result.ci_low, result.ci_high, result.mcse = (
            estimate["power"], estimate["ci_low"], estimate["ci_high"], estimate["mcse"])
        result.weakest_pair = labels["power"][estimate["weakest"]] if estimate["weakest"] >= 0 else ""
    if null_pending:
        for key, matrix in outcomes.null({k: (0, n) for k, n in null_pending.items()}).items():
            result = results[key]
            estimate = rate_over_pairs(matrix, config.type1_over, look_confidence[matrix.shape[0]], "max")
            result.type1_trials = matrix.shape[0]
            result.type1, result.type1_low, result.type1_high = (
                estimate["rate"], estimate["ci_low"], estimate["ci_high"])


def _screening_batch(config: PlanConfig, active: list, screened: list, power_pending: dict,
                     null_pending: dict) -> list:
    """``screening: by_cost``: the next candidates to screen, cheapest first.

    The cheapest candidates not yet screened whose cost is at most the
    current threshold (:func:`cost_threshold` of the screened ones), as
    many as fill the stage up to ``SCREEN_BATCH`` x ``screen_trials`` trials
    besides the refinements already pending (which come first: they decide
    the threshold), extended to the end of the last one's design so that a
    design's studies are simulated once for all its tests. Empty when every
    candidate within the threshold has been screened.
    """
    threshold = cost_threshold(config, screened)
    done = {r.candidate.key: r for r in screened}
    pending = (sum(n - done[key].trials for key, n in power_pending.items())
               + sum(n - done[key].type1_trials for key, n in null_pending.items()))
    size = max(0, SCREEN_BATCH - math.ceil(pending / config.screen_trials))
    waiting = [r for r in _by_cost_only(active) if r.candidate.key not in done and r.candidate.total_cost <= threshold]
    while 0 < size < len(waiting) and waiting[size].candidate.design.label == waiting[size - 1].candidate.design.label:
        size += 1
    return waiting[:size]


def _by_cost_only(results: list) -> list:
    """In order of cost; a design's candidates next to each other (ties broken by design, then test)."""
    return sorted(results, key=lambda r: (r.candidate.total_cost, r.candidate.key))


def cost_threshold(config: PlanConfig, results: list) -> float:
    """The most a candidate may cost and still matter: the cheapest passing one's cost x (1 + cost_tolerance).

    Infinite while no candidate of ``results`` passes (target-power goal).
    """
    passing = [r.candidate.total_cost for r in results if _overall(config, r) == PASS]
    return min(passing) * (1.0 + config.cost_tolerance) if passing else np.inf


def _pair_labels(config: PlanConfig) -> dict:
    if config.target_labels:
        return {"power": list(config.target_labels)}
    pairs = system_pairs(config.model.n_systems)
    systems = config.model.systems
    relevant = [(i, j) for i, j in pairs if config.model.effects[i] != config.model.effects[j]]
    return {"power": [f"{systems[i]} vs {systems[j]}" for i, j in relevant]}


def weakest_pair_power(config: PlanConfig, r: CandidateResult, confidence: float = 0.95) -> dict | None:
    """The least powerful pair of a simulated candidate: its label, power and plain Wilson interval (trial = unit).

    For the report, beside pooled power, which can be high while the closest pair is rarely detected.
    A description, not a decision: the interval is not widened for picking the lowest of the pairs.
    Computed from the search's trials when asked, so the search does not pay for it. None if the
    candidate was not simulated.

    Returns
    -------
    dict or None
        ``pair`` (its label), ``power``, ``ci_low``, ``ci_high``.
    """
    if r.indicators is None or not r.indicators.size:
        return None
    rates, mcses = share_rate(r.indicators)
    index = int(np.argmin(rates))
    trials = r.indicators.shape[0]
    low, high = wilson_interval(float(rates[index]), float(mcses[index]), trials, trials, confidence)
    return {"pair": _pair_labels(config)["power"][index], "power": float(rates[index]), "ci_low": low,
            "ci_high": high}


def _confirm(config: PlanConfig, outcomes: OutcomeSource, r: CandidateResult, attempt: int, level: float) -> None:
    """Re-evaluate ``r`` once on its own fresh trial range; set ``r.confirmation``.

    Attempt k uses trials max_trials + k x confirm_trials onwards, so no two
    confirmations and no search share a study (trial t of a design has its
    own seed).
    """
    first = config.max_trials + attempt * config.confirm_trials
    span = {r.candidate.key: (first, first + config.confirm_trials)}
    r.confirm_first_trial, r.confirm_trials = first, config.confirm_trials
    confirmed = True
    if config.goal == "target_power":
        estimate = assess(goal_indicators(config, outcomes.power(span)[r.candidate.key]), config.power_over, level)
        r.confirm_power, r.confirm_low = estimate["power"], estimate["ci_low"]
        confirmed = estimate["ci_low"] >= config.target_power
    # no null studies for a pick whose power already failed: the answer is the same, and they cost time
    if confirmed and config.max_type1 is not None:
        estimate = rate_over_pairs(outcomes.null(span)[r.candidate.key], config.type1_over, level, "max")
        r.confirm_type1, r.confirm_type1_high = estimate["rate"], estimate["ci_high"]
        r.confirm_type1_trials = config.confirm_trials
        confirmed = estimate["ci_high"] <= config.max_type1
    r.confirmation = CONFIRMED if confirmed else NOT_CONFIRMED


def _effort(config: PlanConfig, active: list) -> dict:
    """Trials used against trials for evaluating every candidate fully (power, and type I if checked)."""
    checks = 2 if config.max_type1 is not None else 1
    power_studies: dict[str, int] = {}
    null_studies: dict[str, int] = {}
    confirm_studies: dict[str, int] = {}
    for r in active:
        label = r.candidate.design.label
        power_studies[label] = max(power_studies.get(label, 0), r.trials)
        null_studies[label] = max(null_studies.get(label, 0), r.type1_trials)
        # confirmation ranges of one design never overlap, and each is simulated once for its power and null runs
        confirm_studies[label] = confirm_studies.get(label, 0) + r.confirm_trials + r.confirm_type1_trials
    return {"adaptive_trials": sum(r.trials + r.type1_trials + r.confirm_trials + r.confirm_type1_trials
                                   for r in active),
            "full_trials": len(active) * config.max_trials * checks,
            "adaptive_studies": sum(power_studies.values()) + sum(null_studies.values())
            + sum(confirm_studies.values()),
            "full_studies": len(power_studies) * config.max_trials * checks}


def _power_status(config: PlanConfig, r: CandidateResult) -> str:
    if config.goal == "budget":
        return OPEN if r.ci_high - r.ci_low > config.power_tolerance else PASS
    if r.ci_low >= config.target_power:
        return PASS
    return FAIL if r.ci_high < config.target_power else OPEN


def _type1_status(config: PlanConfig, r: CandidateResult) -> str:
    """'pass' (shown to be at most max_type1), 'liberal' (shown above it), 'open', or 'unchecked'."""
    if config.max_type1 is None:
        return PASS
    if not r.type1_trials:
        return "unchecked"
    return {"holds": PASS, "fails": LIBERAL, "undecided": OPEN}[
        level_verdict(r.type1_low, r.type1_high, config.max_type1)]


def _overall(config: PlanConfig, r: CandidateResult) -> str:
    if r.confirmation == NOT_CONFIRMED:
        return NOT_CONFIRMED
    power, type1 = _power_status(config, r), _type1_status(config, r)
    if power == FAIL:
        return FAIL
    if type1 == LIBERAL:
        return LIBERAL
    return PASS if power == PASS and type1 == PASS else OPEN


def _next_level(looks: list, trials: int) -> int | None:
    later = [n for n in looks if n > trials]
    return later[0] if later else None


def _eligible_for_budget(config: PlanConfig, active: list) -> list:
    return [r for r in active if _type1_status(config, r) != LIBERAL and r.confirmation != NOT_CONFIRMED]


def type1_stalled(config: PlanConfig, r: CandidateResult) -> bool:
    """Its type I error is still open at ``max_trials``: this search can never show it to hold its level."""
    return _type1_status(config, r) == OPEN and r.type1_trials >= config.max_trials


def _budget_contenders(config: PlanConfig, active: list) -> list:
    """The budget goal's contenders: eligible candidates shown to hold their level, or that still may be.

    Only they set the bar (the best lower power bound) below which a candidate is *worse*: a candidate
    that can never be recommended (liberal, not confirmed, or its type I error undecided at
    ``max_trials``) must not stop the search from refining the less powerful ones that might hold
    their level, else the answer is "nothing" while a valid design was in reach (issue 33).
    """
    return [r for r in _eligible_for_budget(config, active) if not type1_stalled(config, r)]


def _next_stage(config: PlanConfig, active: list, looks: list) -> tuple[dict, dict]:
    """Which candidates need more power trials, and which need (more) null trials.

    Target goal: the candidates no costlier than the cheapest passing one
    (plus ``cost_tolerance``) whose decision is still open. Budget goal:
    the contenders (:func:`_budget_contenders`) that may still be the most
    powerful (upper end at or above the best lower end among the contenders).
    """
    if config.goal == "target_power":
        threshold = cost_threshold(config, active)
        needed = [r for r in active if r.candidate.total_cost <= threshold and _overall(config, r) == OPEN]
    else:
        contenders = _budget_contenders(config, active)
        best_low = max((r.ci_low for r in contenders), default=-np.inf)  # no contender: no bar
        needed = [r for r in contenders if r.ci_high >= best_low
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
    """Label every simulated candidate and return the search's pick (before its confirmation)."""
    if config.goal == "target_power":
        threshold = cost_threshold(config, active)
        for r in active:
            overall = _overall(config, r)
            if overall != OPEN:
                r.decision = overall
            else:
                r.decision = UNDECIDED if r.candidate.total_cost <= threshold else NOT_NEEDED
        passing = _by_cost([r for r in active if r.decision == PASS])
        return passing[0] if passing else None
    eligible = _eligible_for_budget(config, active)
    best_low = max((r.ci_low for r in _budget_contenders(config, active)), default=-np.inf)
    for r in active:
        if r.confirmation == NOT_CONFIRMED:
            r.decision = NOT_CONFIRMED
        elif _type1_status(config, r) == LIBERAL:
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
