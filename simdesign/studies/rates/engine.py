"""The Monte-Carlo engine: trials x designs x analyses, in parallel, resumable.

Only the engine owns loops, workers, seeds and failure handling
(failures are data: docs/estimands.md). Each trial's study is generated once and analysed by
every requested test (common random numbers sharpen test comparisons).
Work is cut into chunks of trials of one design; joblib runs chunks in
worker processes and the coordinating process stores each finished chunk
atomically, so an interrupted run loses only the chunks in flight.
"""
from __future__ import annotations

import bisect
import itertools
import logging
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np
import pandas as pd
from joblib import delayed

from simdesign.significance import ANALYSES, run_analysis, system_pairs
from simdesign.significance.base import BACKEND_CHECKS, DEGENERATE, OK, AnalysisInfo, resolve_analysis
from simdesign.runner.study import StudyKind, filled_store
from simdesign.studies.backends import DEFAULT_RETRIES, BackendSpec, check_backend, r_backed
from simdesign.studies.example_configs import read_examples
from simdesign.studies.rates.config import AnalysisSpec, SimulationConfig, parse_config
from simdesign.core.designs import Design, draw_layout
from simdesign.core.errors import ConfigError, MissingBackendError
from simdesign.core.judgements import Judgements
from simdesign.model import OrdinalMixedModel
from simdesign.studies.replication.replication import is_replication_item, replication_rows, replication_work
from simdesign.core.estimands import Estimand, estimand
from simdesign.stats.reliability import UndefinedReliability
from simdesign.core.seeds import analysis_rng, criterion_rng, data_rng
from simdesign.methods import default_method, get_method
from simdesign.core.threads import single_threaded
from simdesign.runner.limits import check_trial_count
from simdesign.studies.rates.method_specs import METHOD_COLUMN, spec_method
from simdesign.studies.rates.criteria import CRITERION_COLUMN, spec_criterion, split_criterion_label
from simdesign.runner.stores import Store
from simdesign.studies.rates.store import RATE_CHUNKS, RESULT_COLUMNS, rate_store

log = logging.getLogger(__name__)

# Chunk size when a config asks only for reliability estimands (cheap: milliseconds per trial).
RELIABILITY_CHUNK_TRIALS = 100

@dataclass(frozen=True)
class Chunk:
    """A unit of work: consecutive trials of one design, and the analyses they still need."""

    design: Design
    first_trial: int
    stop_trial: int
    analyses: tuple

    @property
    def trials(self) -> int:
        return self.stop_trial - self.first_trial

    # what the one loop (simdesign.runner.study.fill_store) reads of every kind's chunks
    @property
    def cell(self) -> str:
        return self.design.label

    @property
    def first(self) -> int:
        return self.first_trial

    @property
    def stop(self) -> int:
        return self.stop_trial


def check_backends(config: SimulationConfig) -> None:
    """Stop before any work if an analysis needs software that is missing (e.g. R)."""
    problems = []
    for spec in config.analyses:
        needs = resolve_analysis(spec.name).needs
        if needs:
            check = BACKEND_CHECKS.get(needs)
            ok, message = check() if check else (False, f"no check registered for {needs}")
            if not ok:
                problems.append(f"The test {spec.label} needs {needs}: {message}")
    if problems:
        raise MissingBackendError("\n".join(problems))


def plan_chunks(config: SimulationConfig, store: Store | None, trials: int) -> list[Chunk]:
    """Chunks covering every (design, trial < trials, analysis) not yet stored, as a list (:func:`iter_chunks`)."""
    return list(iter_chunks(config, store, trials))


def iter_chunks(config: SimulationConfig, store: Store | None, trials: int) -> Iterator[Chunk]:
    """Chunks covering every (design, trial < trials, analysis) not yet stored, planned lazily.

    Consecutive trials that miss the same set of analyses are grouped, so
    raising ``trials`` or adding a test computes only what is new. Memory
    grows with the trials already stored, never with ``trials`` (issue 29):
    where nothing is stored, whole chunks are cut without visiting each trial.
    """
    check_trial_count(trials)
    chunk_size = config.chunk_size or min((resolve_analysis(spec.name).chunk_trials for spec in config.analyses),
                                          default=RELIABILITY_CHUNK_TRIALS)
    # Reliability estimands are stored like tests (one row per trial), so they resume the same way.
    # One work item per (test or estimand, method), keyed by result label (simulation/method_specs.py).
    work = tuple(config.work_specs) + replication_work(config)
    for design in config.designs:
        done = store.completed(design.label) if store is not None else {}
        yield from _design_chunks(design, work, done, trials, chunk_size)


def _design_chunks(design: Design, work: tuple, done: dict, trials: int, chunk_size: int) -> Iterator[Chunk]:
    """The chunks of one design: runs of at most ``chunk_size`` consecutive trials missing the same work."""
    stored = sorted({trial for indices in done.values() for trial in indices if 0 <= trial < trials})
    stored_set = set(stored)

    def missing(trial: int) -> tuple:
        if trial not in stored_set:
            return work
        return tuple(spec for spec in work if trial not in done.get(spec.label, ()))

    start = 0
    while start < trials:
        wanted = missing(start)
        stop, cap = start + 1, min(start + chunk_size, trials)
        while stop < cap:
            if stop not in stored_set:
                if wanted != work:
                    break
                # every trial up to the next stored one misses all the work: jump there
                stop = min(cap, _next_stored(stored, stop))
                continue
            if missing(stop) != wanted:
                break
            stop += 1
        if wanted:
            yield Chunk(design, start, stop, wanted)
        start = stop


def _next_stored(stored: list[int], trial: int) -> int:
    """The first stored trial index after ``trial`` (``stored`` sorted), or a number past every trial."""
    position = bisect.bisect_right(stored, trial)
    return stored[position] if position < len(stored) else sys.maxsize


def simulate_chunk(model: OrdinalMixedModel, effect, root_seed: int, chunk: Chunk,
                   registry: dict | None = None) -> pd.DataFrame:
    """Generate and analyse the trials of one chunk (runs in a worker process).

    ``registry`` maps the chunk's analysis names to their
    :class:`~simdesign.significance.AnalysisInfo`; the coordinator sends it with
    the chunk (:func:`chunk_registry`), so an analysis registered by user code
    runs in worker processes and on Dask workers, whose own :data:`ANALYSES`
    holds only the built-in ones. Default: look the names up here.

    BLAS is limited to one thread (:mod:`simdesign.core.threads`: faster for
    the small matrices of one trial, and the same rounding as any other caller's).

    Returns
    -------
    pandas.DataFrame
        One row per (trial, analysis, system pair), and one per (trial,
        estimand) with ``pair`` -1; columns as :data:`simdesign.studies.rates.store.RESULT_COLUMNS`.
    """
    with single_threaded():
        return _simulate_chunk(model, effect, root_seed, chunk, registry or chunk_registry(chunk.analyses))


def chunk_registry(specs) -> dict:
    """Work item name -> its registry entry: the AnalysisInfo of a test, the Estimand of a requested per-trial
    value (:mod:`simdesign.core.estimands`); a replication's system scores need none. ``METHOD_ENTRY + name`` ->
    the annotation method of each of their methods (a method registered by user code is sent to the workers
    with its chunks, as an analysis is)."""
    registry = {}
    for spec in specs:
        if is_replication_item(spec) and spec.analysis is None:
            continue
        info = estimand(spec.name)
        registry[spec.name] = info if info is not None and info.requestable else resolve_analysis(spec.name)
    for name in dict.fromkeys(spec_method(spec) for spec in specs):
        registry[METHOD_ENTRY + name] = get_method(name)
    return registry


# The prefix of a chunk registry's annotation-method entries (no analysis name starts with '@').
METHOD_ENTRY = "@method:"


def _simulate_chunk(model: OrdinalMixedModel, effect, root_seed: int, chunk: Chunk, registry: dict) -> pd.DataFrame:
    pairs = system_pairs(model.n_systems)
    beta = model.effects_for(effect)
    true_diff = np.array([beta[i] - beta[j] for i, j in pairs])
    system_a = [model.systems[i] for i, _ in pairs]
    system_b = [model.systems[j] for _, j in pairs]
    n_pairs = len(pairs)
    tested = []  # (trial, label, PairwiseResult), in row order
    estimand_rows = []
    methods = [registry.get(METHOD_ENTRY + name) or get_method(name)
               for name in dict.fromkeys(spec_method(spec) for spec in chunk.analyses)]
    # several criteria (simulation/criteria.py): one study per criterion, all on the trial's one layout
    criteria = {spec.criterion: spec.model for spec in chunk.analyses if spec_criterion(spec) is not None}
    criterion_diffs = {name: _true_differences(criterion_model, effect, pairs)
                       for name, criterion_model in criteria.items()}
    tested_diffs = []  # each tested result's true differences, with criteria (their models differ)
    design_label = chunk.design.label  # a property formatting its string on every call
    # Replication items (simdesign.studies.replication.replication) share one replication study per trial (Likert).
    replicated = [spec for spec in chunk.analyses if is_replication_item(spec)]
    for trial in range(chunk.first_trial, chunk.stop_trial):
        # One study per method and trial, each from its own stream; Likert's stream is the one it always had.
        if criteria:
            studies = _criterion_studies(model, criteria, effect, root_seed, chunk.design, trial)
        else:
            studies = {method.name: model.sample(chunk.design, data_rng(root_seed, design_label, trial,
                                                                        method.stream_suffix), effect, method=method)
                       for method in methods}
        if replicated:  # replication runs on the default method only (the config refuses others)
            estimand_rows += replication_rows(replicated, model, effect, root_seed, chunk.design, trial,
                                              studies[default_method().name], registry)
        for spec in chunk.analyses:
            if is_replication_item(spec):
                continue
            judgements = studies[spec_criterion(spec) if criteria else spec_method(spec)]
            if isinstance(registry[spec.name], Estimand):
                estimand_rows.append(reliability_row(judgements, spec, root_seed, design_label, trial,
                                                     registry[spec.name]))
                continue
            tested.append((trial, spec.label, analyse(judgements, spec, root_seed, design_label, trial,
                                                      registry[spec.name])))
            if criteria:
                tested_diffs.append(criterion_diffs[spec.criterion])
    # built only when needed (about a millisecond even when empty)
    estimand_frame = None if tested and not estimand_rows else pd.DataFrame(
        estimand_rows, columns=list(RESULT_COLUMNS)).astype(
        {"trial": np.int64, "pair": np.int64, "estimate": float, "fit_status": "string"})
    rows = len(tested)
    if rows == 0:
        return with_criterion_column(with_method_column(estimand_frame, methods), criteria)
    flat = _result_columns(tested, n_pairs)
    frame = pd.DataFrame({
        "design": design_label,
        "trial": flat["trial"].astype(np.int64),
        "test": flat["test"].astype(str),
        "pair": np.tile(np.arange(n_pairs), rows),
        "system_a": np.tile(system_a, rows),
        "system_b": np.tile(system_b, rows),
        "true_diff": np.concatenate(tested_diffs) if criteria else np.tile(true_diff, rows),
        "estimate": flat["estimate"].astype(float),
        "p_value": flat["p_value"].astype(float),
        "status": flat["status"].astype(str),
        "message": flat["message"].astype(str),
        "fit_status": pd.array(flat["fit_status"], dtype="string"),
        "fit_seconds": flat["fit_seconds"].astype(float),
    })
    if estimand_rows:
        frame = pd.concat([frame, estimand_frame], ignore_index=True)
    return with_criterion_column(with_method_column(frame, methods), criteria)


def _true_differences(model, effect, pairs) -> np.ndarray:
    """beta_i - beta_j of every pair under ``effect`` (the latent scale)."""
    beta = model.effects_for(effect)
    return np.array([beta[i] - beta[j] for i, j in pairs])


def _criterion_studies(model, criteria: dict, effect, root_seed: int, design: Design, trial: int) -> dict:
    """One study per criterion of one trial: the layout from the trial's data stream, each criterion's own
    draws from its stream (simulation/criteria.py)."""
    layout = draw_layout(design, data_rng(root_seed, design.label, trial), model.systems)
    return {name: criterion_model.sample(design, criterion_rng(root_seed, design.label, trial, name), effect,
                                         layout=layout)
            for name, criterion_model in criteria.items()}


def with_criterion_column(frame: pd.DataFrame, criteria: dict) -> pd.DataFrame:
    """Add the 'criterion' column to a chunk's rows when the config has criteria (other rows keep their form)."""
    if criteria:
        frame[CRITERION_COLUMN] = [split_criterion_label(label)[1] for label in frame["test"]]
    return frame


def _result_columns(tested: list, n_pairs: int) -> dict:
    """The per-pair columns of (trial, label, result) records: a result's arrays, or its scalars repeated."""
    results = [result for _, _, result in tested]

    def per_result(values, dtype):
        return np.repeat(np.array(values, dtype=dtype), n_pairs)

    return {
        "trial": per_result([trial for trial, _, _ in tested], np.int64),
        "test": per_result([label for _, label, _ in tested], object),
        "estimate": np.concatenate([np.asarray(result.estimate, dtype=float) for result in results]),
        "p_value": np.concatenate([np.asarray(result.p_value, dtype=float) for result in results]),
        "status": np.concatenate([np.asarray(result.status, dtype=object) for result in results]),
        "message": per_result([result.message for result in results], object),
        "fit_status": per_result([result.fit_status for result in results], object),
        "fit_seconds": per_result([result.fit_seconds for result in results], float),
    }


def with_method_column(frame: pd.DataFrame, methods: list) -> pd.DataFrame:
    """Add the 'method' column to a chunk's rows when it has a method other than the default (rows of the
    default method alone keep their form)."""
    methods = [get_method(method) for method in methods]
    if methods and [m.name for m in methods] != [default_method().name]:
        # the chunk's own method objects (a worker's registry may lack a method registered by user code)
        suffixed = [m for m in methods if m.result_suffix]
        default = default_method().name
        frame[METHOD_COLUMN] = [next((m.name for m in suffixed if label.endswith(m.result_suffix)), default)
                                for label in frame["test"]]
    return frame


def reliability_row(judgements: Judgements, spec: AnalysisSpec, root_seed: int, design_label: str,
                    trial: int, info: Estimand | None = None) -> dict:
    """One trial's value of a requested per-trial estimand as a results row (``pair`` -1, no p-value).

    ``info`` is its registry entry (default: looked up here; a chunk carries it, so an estimand
    registered by user code is computed in worker processes too).

    Where the estimand is undefined for the design (SHR with fewer than two
    blocks, alpha with one judgement per output) the row has status
    'degenerate' and the reason as its message; the summary reports it.
    """
    # SHR draws random splits (22 or more blocks) from the trial's stream for this label, like a test.
    rng = analysis_rng(root_seed, design_label, trial, spec.label)
    started = time.perf_counter()
    try:
        info = info or estimand(spec.name)
        value, status, message = float(info.per_trial(judgements, rng)), OK, ""
    except UndefinedReliability as exc:
        value, status, message = float("nan"), DEGENERATE, str(exc)
    return {"design": design_label, "trial": trial, "test": spec.label, "pair": -1, "system_a": "",
            "system_b": "", "true_diff": float("nan"), "estimate": value, "p_value": float("nan"),
            "status": status, "message": message, "fit_status": pd.NA,
            "fit_seconds": time.perf_counter() - started}


def analyse(judgements: Judgements, spec: AnalysisSpec, root_seed: int, design_label: str, trial: int,
            info: AnalysisInfo | None = None):
    """Run one analysis on one trial's data with its own random stream (``info``: default from the registry).

    An analysis that draws no random numbers with these options gets ``rng=None`` (AnalysisInfo.uses_rng).
    """
    info = info or resolve_analysis(spec.name)
    rng = analysis_rng(root_seed, design_label, trial, spec.label) if info.draws_random_numbers(spec.options) else None
    return run_analysis(info, judgements, rng, spec.options)


def _chunk_task(model, effect, root_seed, chunk, registry):
    return chunk, simulate_chunk(model, effect, root_seed, chunk, registry)


# Chunks ordered largest first are taken from the plan at most this many at a time: enough for any run
# a machine finishes (one chunk per design and 100 trials), bounded for a plan of billions of trials.
SORT_WINDOW = 100_000


def largest_first(chunks: Iterable[Chunk], n_systems: int) -> Iterator[Chunk]:
    """``chunks`` with the largest first, so the slowest designs do not start last and idle the other workers.

    At most :data:`SORT_WINDOW` chunks are held at once (a lazy plan stays lazy): the first window is
    sorted and sent, then the next.
    """
    chunks = iter(chunks)
    while window := list(itertools.islice(chunks, SORT_WINDOW)):
        window.sort(key=lambda c: -(c.design.judgements(n_systems) * c.trials * len(c.analyses)))
        yield from window


def run_simulation(config: SimulationConfig, out_dir, raw_config: dict, jobs: int = -1,
                   progress: bool = True, backend: str | BackendSpec = "loky", scheduler: str | None = None,
                   workers: int | None = None, retries: int = DEFAULT_RETRIES) -> Store:
    """Simulate every missing (design, trial, analysis) of ``config`` into ``out_dir``.

    Parameters
    ----------
    config : SimulationConfig
    out_dir : path-like
        Results directory; created, or resumed if it holds compatible trials.
    raw_config : dict
        The config mapping as read; kept for callers (the manifest records ``config.to_mapping()``, see
        :func:`simdesign.studies.rates.store.rate_manifest`).
    jobs : int, default -1
        joblib workers (-1: all cores). Results do not depend on it.
    progress : bool
        Show progress (trials done, rate, time left): a bar on a terminal, plain lines in a log.
    backend : {'loky', 'threading', 'dask'} or BackendSpec, default 'loky'
        Where chunks are computed (:mod:`simdesign.studies.backends`); results do not
        depend on it. A :class:`~simdesign.studies.backends.BackendSpec` overrides
        ``jobs``, ``scheduler``, ``workers`` and ``retries``.
    scheduler : str, optional
        Address of a running Dask scheduler (``dask`` only; default: start a
        local cluster for the run).
    workers : int, optional
        Worker processes of that local cluster (default: all cores).
    retries : int, default 3
        How often the chunks not yet saved are resubmitted after losing
        workers made the run fail (Dask first reschedules a lost worker's
        task by itself).

    Returns
    -------
    Store
        The rate study's store (:func:`simdesign.studies.rates.store.rate_store`), released.
    """
    spec = backend if isinstance(backend, BackendSpec) else BackendSpec(backend, jobs, scheduler, workers, retries)
    return filled_store(RATES, config, out_dir, spec, progress)


class RateStudies(StudyKind):
    """Rate studies (type I error, power, reliability; with ``replication:``, replications): a study kind whose
    chunks carry the work they still miss (tests, requested estimands, replication items), so a test added to a
    finished run computes only that test. Each trial's study is generated once per method and analysed by every
    test of the chunk (:func:`simulate_chunk`)."""

    name, keys = "rates", ()
    cell_column = "design"
    # a sweep of rate studies is the engine's own loop of runs (studies/sweep.py), not a sweep of a kind
    sweeps_through_engine = True

    def examples(self):
        return read_examples("rates", "rates-pairwise", "replication")

    def parse(self, mapping, base_dir=None):
        return parse_config(mapping, base_dir)

    def cells(self, config):
        return [design.label for design in config.designs]

    def fingerprint(self, config):
        return config.results_fingerprint()

    def to_mapping(self, config):
        return config.to_mapping()

    def check_run(self, config, spec):
        check_backend(spec, config.analyses)
        check_backends(config)  # before a store is claimed: a test that needs R says so first

    def open_store(self, config, out_dir):
        store = rate_store(out_dir)
        store.prepare(config, self.to_mapping(config))
        return store

    def trial_chunks(self, config, store, trials):
        return iter_chunks(config, store, trials)

    def chunk_task(self, config, chunk):
        return delayed(_chunk_task)(config.model, config.effect, config.seed, chunk, chunk_registry(chunk.analyses))

    def order_chunks(self, config, chunks):
        return largest_first(chunks, config.model.n_systems)

    def save_chunk(self, config, store, chunk, result):
        store.write_chunk(chunk.cell, chunk.first, chunk.stop, [spec.label for spec in chunk.analyses], result)

    def needs_r(self, config):
        return bool(r_backed(config.analyses))

    def read_rows(self, config, store):
        return store.read(self.cells(config), config.trials, parts=[spec.label for spec in config.work_specs]
                          + [item.label for item in replication_work(config)])

    def stored_rows(self, config, out_dir):
        return self.read_rows(config, rate_store(out_dir))

    def replay(self, config, cell, trial):
        """Every stored row of one trial of one design recomputed from its seeds: the engine's chunk of that one
        trial with all the config's work (tests, requested estimands, replication items), in the stored order."""
        designs = {design.label: design for design in config.designs}
        work = tuple(config.work_specs) + tuple(replication_work(config))
        rows = simulate_chunk(config.model, config.effect, config.seed, Chunk(designs[cell], trial, trial + 1, work))
        # as the store reads rows back: its defaults filled (a Likert-only chunk has no method column), its order
        return RATE_CHUNKS.with_defaults(rows).sort_values(list(RATE_CHUNKS.order), ignore_index=True)

    def summarise(self, config, rows):
        from simdesign.studies.rates.summary import summarise

        return summarise(config, rows)

    # plot: a rate study's figures are drawn by simdesign.outputs.write_figures (a higher layer), on the path
    # `simdesign run` and `simdesign plot` take for rate studies


RATES = RateStudies()


def check_replay_request(config: SimulationConfig, design_label: str, trial: int, test_label: str) -> None:
    """Refuse a replay of a design or test the config does not have, or a negative trial index.

    Test labels include written options (``art_doc[5000]``, :func:`simdesign.studies.rates.config.analysis_label`),
    so the message lists them as they must be given.
    """
    designs = sorted(d.label for d in config.designs)
    tests = sorted(s.label for s in config.work_specs if s.name not in config.estimands)
    if design_label not in designs:
        raise ConfigError(f"The design {design_label!r} (--design) is not in this config; designs: {designs}")
    if test_label not in tests:
        raise ConfigError(f"The test {test_label!r} (--test) is not in this config; test labels: {tests} "
                          "(a test written with options is labelled with their values, e.g. art_doc[5000])")
    if not 0 <= trial:
        raise ConfigError(f"The trial (--trial) must be a non-negative integer; got {trial}")


def replay_trial(config: SimulationConfig, design_label: str, trial: int, test_label: str):
    """Re-create one trial's data from its seed and re-run one analysis.

    Returns
    -------
    judgements : Judgements
    result : PairwiseResult
    """
    check_replay_request(config, design_label, trial, test_label)
    designs = {d.label: d for d in config.designs}
    specs = {s.label: s for s in config.work_specs}
    spec = specs[test_label]
    if spec_criterion(spec) is not None:
        criteria = {spec.criterion: spec.model}
        judgements = _criterion_studies(config.model, criteria, config.effect, config.seed, designs[design_label],
                                        trial)[spec.criterion]
        return judgements, analyse(judgements, spec, config.seed, design_label, trial)
    method = get_method(spec_method(spec))
    judgements = config.model.sample(designs[design_label],
                                     data_rng(config.seed, design_label, trial, method.stream_suffix),
                                     config.effect, method=method)
    return judgements, analyse(judgements, specs[test_label], config.seed, design_label, trial)


def default_out_dir(config: SimulationConfig) -> Path:
    return Path("results") / config.name
