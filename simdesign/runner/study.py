"""Study kinds: what a kind of study supplies, and the generic runner for kinds that need nothing more.

A study kind (a subclass of :class:`StudyKind`, registered with :func:`register_study_kind`) tells the
runner how to read its config and what one trial is; the runner does the rest: chunks of trials per
cell, workers and backends (:mod:`simdesign.runner.backends`), random streams keyed by cell and trial,
the claimed, fingerprinted store (:class:`simdesign.runner.stores.Store`, the one store class of every
kind), resume and lost-worker retries
(:func:`simdesign.runner.execute.run_chunks`). ``simdesign run CONFIG`` and ``simdesign.simulate`` run
any registered kind, chosen by the config's ``study`` field or recognised from its :attr:`StudyKind.keys`.

A kind supplies

* :meth:`~StudyKind.parse`: a validated config from a mapping (raise ConfigError naming every problem;
  :meth:`~StudyKind.load` reads a file with overrides through it);
* :meth:`~StudyKind.examples`: small configs the contract checks (:func:`simdesign.testing.check_study_kind`)
  and the every-kind tests run;
* :meth:`~StudyKind.cells`, :meth:`~StudyKind.trials`, :meth:`~StudyKind.fingerprint` (everything the
  stored rows depend on; trial counts and cells excluded);
* one trial of one cell, from its own stream (so that results do not depend on workers or chunking):
  :meth:`~StudyKind.generate` its data and :meth:`~StudyKind.analyse` them into rows, with
  :meth:`~StudyKind.analyse_chunk` to analyse a whole chunk of trials at once (batched fits); or
  :meth:`~StudyKind.trial_rows` for both at once;
* :meth:`~StudyKind.summarise` and :meth:`~StudyKind.plot`.

Every kind runs through one loop (:func:`run_trials`, :func:`fill_store`): the kind plans the chunks its
store misses (:meth:`~StudyKind.trial_chunks`), says how a worker computes one
(:meth:`~StudyKind.chunk_task`) and how the coordinator keeps it (:meth:`~StudyKind.save_chunk`). The
defaults are those of a kind that generates and analyses trials; the rate studies override them to plan
per-test parts (a test added to a finished run computes only that test), panel studies to keep their
significance rows beside their trials, metric validation to keep its stored format.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd
from joblib import delayed
from simdesign.runner.progress import progress_bar

from simdesign.core.errors import ConfigError
from simdesign.core.registry import refuse_clash, same_entry
from simdesign.core.seeds import cell_trial_rng
from simdesign.core.threads import single_threaded
from simdesign.core.yamlio import read_config_mapping
from simdesign.runner.backends import BackendSpec, ChunkExecutor
from simdesign.runner.execute import backend_spec, run_chunks
from simdesign.runner.limits import check_trial_count
from simdesign.runner.stores import Store

log = logging.getLogger(__name__)


class StudyKind:
    """A kind of study (see the module docstring); subclass it and :func:`register_study_kind` an instance.

    Attributes
    ----------
    name : str
        The value of a config's ``study`` field.
    keys : tuple of str
        Config keys only this kind has, to recognise a config without a ``study`` field.
    """

    name: str = ""
    keys: tuple = ()

    def examples(self) -> dict[str, dict]:
        """Small configs of this kind, by label (each a mapping as its YAML would be): the contract checks
        (:func:`simdesign.testing.check_study_kind`) and the project's every-kind tests (backends, kill and
        resume) run them, so a plug-in kind is checked as the built-in ones are. Each should take seconds."""
        return {}

    def recognised_keys(self, mapping: dict) -> list[str]:
        """The keys of ``mapping`` that make it a config of this kind when it has no ``study`` field (default:
        those among :attr:`keys`); a kind sharing a key with another tells by the key's value."""
        return sorted(set(self.keys) & set(mapping))

    def parse(self, mapping: dict, base_dir: Path | None = None):
        """A validated config from a mapping (``study`` included); raise ConfigError on bad input."""
        raise NotImplementedError

    def load(self, path, overrides: dict | None = None):
        """A validated config from a YAML file, ``overrides`` replacing its keys: the one loader signature of
        every kind (:meth:`parse` of the file's mapping, relative paths resolved from its folder)."""
        return self.parse(read_config_mapping(path, f"{self.name} config", overrides), Path(path).parent)

    def config_name(self, config) -> str:
        """The config's name (default results directory ``results/<name>``)."""
        return str(getattr(config, "name"))

    def with_trials(self, config, trials: int):
        """``config`` with another trial count (``--trials``)."""
        import dataclasses

        return dataclasses.replace(config, trials=trials)

    # -- what the generic runner needs
    def cells(self, config) -> list[str]:
        """Labels of the cells (a design, a grid point); each has its own trials and streams."""
        raise NotImplementedError

    def trials(self, config) -> int:
        return int(getattr(config, "trials"))

    def chunk_trials(self, config) -> int:
        """Trials per stored chunk (results do not depend on it)."""
        return 20

    def fingerprint(self, config):
        """Everything the stored rows depend on (JSON-able); cells and the trial count left out."""
        raise NotImplementedError

    def seed(self, config) -> int:
        return int(getattr(config, "seed"))

    # -- one trial: generate its data, then analyse them into rows (R's SimDesign: generate, analyse, summarise)
    def generate(self, config, cell: str, trial: int, rng: np.random.Generator):
        """One trial's data (whatever :meth:`analyse` takes), drawn from ``rng``, the trial's own stream."""
        raise NotImplementedError

    def analyse(self, config, cell: str, trial: int, data, rng: np.random.Generator) -> pd.DataFrame:
        """The rows of one trial from its data; ``rng`` is the trial's stream after :meth:`generate` (for
        resamples and randomised tests)."""
        raise NotImplementedError

    def analyse_chunk(self, config, cell: str, trials: list[int], data: list, rngs: list) -> list[pd.DataFrame]:
        """The rows of several trials of one cell analysed together (default: :meth:`analyse` on each).

        A kind whose analysis batches across trials (model fits vectorised or compiled over a chunk) overrides
        it; each trial's rows must equal what :meth:`analyse` gives that trial alone.
        """
        return [self.analyse(config, cell, trial, one, rng) for trial, one, rng in zip(trials, data, rngs)]

    def trial_rows(self, config, cell: str, trial: int, rng: np.random.Generator) -> pd.DataFrame:
        """One trial of one cell, from ``rng`` (its own stream), as rows: :meth:`analyse` of :meth:`generate`.

        A kind that cannot separate the two may override this method instead (the runner then calls it).
        """
        return self.analyse(config, cell, trial, self.generate(config, cell, trial, rng), rng)

    def separates_trials(self) -> bool:
        """Whether the kind implements :meth:`generate` and :meth:`analyse` (the runner then analyses its
        trials a chunk at a time, :meth:`analyse_chunk`)."""
        own = type(self)
        return own.generate is not StudyKind.generate and own.analyse is not StudyKind.analyse

    # -- replaying one stored trial (``simdesign replay``)
    cell_column: str = "cell"
    """The column of :meth:`stored_rows` that names a row's cell (with 'trial', what a replay selects by)."""

    def stored_trial(self, config, rows: pd.DataFrame, cell: str, trial: int) -> pd.DataFrame:
        """The rows of one trial of one cell among :meth:`stored_rows` (default: by :attr:`cell_column`)."""
        return rows[(rows[self.cell_column] == cell) & (rows["trial"] == trial)].reset_index(drop=True)

    def replay_cells(self, config) -> list[str]:
        """The cells whose trials :meth:`replay` recomputes (default: :meth:`cells`)."""
        return self.cells(config)

    def replay(self, config, cell: str, trial: int) -> pd.DataFrame:
        """One trial of one cell recomputed from its seed, as the stored rows of that trial (default: the
        generic runner's :meth:`trial_rows` on the trial's stream). A kind that cannot replay raises
        NotImplementedError."""
        rows = self.trial_rows(config, cell, trial, trial_stream(self.seed(config), cell, trial)).copy()
        rows.insert(0, "trial", trial)
        rows.insert(0, "cell", cell)
        return rows

    # -- a run: the one loop (:func:`fill_store`) computes the chunks a kind plans, on any backend; the planner
    # computes chosen trials through the same hooks (:meth:`trial_chunks`, :meth:`compute_chunks`)
    def run(self, config, out_dir: Path, backend: BackendSpec, progress: bool) -> pd.DataFrame:
        """Compute what ``out_dir`` misses and return every stored row (:func:`run_trials`)."""
        return run_trials(self, config, out_dir, backend, progress)

    def check_run(self, config, spec: BackendSpec) -> None:
        """Refuse a run before any store is claimed (software a test needs missing, a backend that cannot run
        it); default: nothing to check."""

    def open_store(self, config, out_dir: Path) -> Store:
        """Claim the store ``out_dir`` for ``config`` (created or resumed) and return it; the caller releases it.

        The store tells the trials it holds (``completed(cell)``) and takes chunks (``write_chunk``). Default:
        the one store class in its default format, its manifest keyed by the kind and :meth:`fingerprint`.
        """
        store = Store(out_dir)
        store.prepare(self.name, self.fingerprint(config), self.to_mapping(config))
        return store

    def trial_chunks(self, config, store, trials: int) -> Iterable[TrialChunk]:
        """The chunks computing every trial < ``trials`` of ``config``'s cells that ``store`` misses (an
        iterable with ``cell``, ``first`` and ``stop``; default: runs of at most :meth:`chunk_trials`)."""
        chunk = self.chunk_trials(config)
        return [TrialChunk(cell, first, stop) for cell in self.cells(config)
                for first, stop in missing_runs(store.completed(cell), trials, chunk)]

    def chunk_task(self, config, chunk):
        """A joblib ``delayed`` call computing ``chunk`` in a worker, returning ``(chunk, result)`` (default:
        :meth:`generate` and :meth:`analyse_chunk`, or :meth:`trial_rows`, on each trial's stream)."""
        return delayed(_trial_chunk)(self, config, chunk)

    def order_chunks(self, config, chunks: Iterable) -> Iterable:
        """The planned chunks in the order to submit them (default: as planned)."""
        return chunks

    def save_chunk(self, config, store, chunk, result) -> None:
        """Keep one finished chunk in the claimed ``store`` (called in the coordinating process only)."""
        store.write_chunk(chunk.cell, chunk.first, chunk.stop, result)

    def needs_r(self, config) -> bool:
        """Whether the workers must be able to start R (default: no)."""
        return False

    def compute_chunks(self, config, executor: ChunkExecutor, chunks, save, retries: int) -> None:
        """Compute the chunks ``chunks()`` returns on an open executor; ``save(chunk, result)`` each as it
        finishes (the runner's loop: lost workers retried ``retries`` times)."""
        run_chunks(executor, chunks, lambda chunk: self.chunk_task(config, chunk), save, retries,
                   order=lambda planned: self.order_chunks(config, planned))

    def read_rows(self, config, store) -> pd.DataFrame:
        """Every stored row of ``config`` in the open ``store`` (default: every cell's trials < :meth:`trials`)."""
        return store.read(self.cells(config), self.trials(config))

    def to_mapping(self, config) -> dict | None:
        """The mapping ``config`` was read from (kept in the store's manifest, so ``simdesign plot`` can redraw
        it); default: the config itself if it is a mapping, else its ``raw`` attribute."""
        return config if isinstance(config, dict) else getattr(config, "raw", None)

    def stored_rows(self, config, out_dir: Path) -> pd.DataFrame:
        """Every stored row of ``config`` in ``out_dir``, computing nothing (default: the generic store's)."""
        store = Store(out_dir)
        store.open(self.name, self.fingerprint(config))
        return self.read_rows(config, store)

    def summarise(self, config, rows: pd.DataFrame) -> pd.DataFrame:
        raise NotImplementedError

    def plot(self, config, summary: pd.DataFrame, out_base: Path) -> list[Path]:
        """Draw the summary as ``out_base.png`` (and whatever else the kind writes); return the paths."""
        raise NotImplementedError

    def result_tables(self, config, rows: pd.DataFrame, out_dir: Path) -> dict[str, pd.DataFrame]:
        """Tables a result of this kind saves beside ``summary.csv``, as ``<name>.csv`` (name -> table; default
        none), read while the run's store ``out_dir`` exists (a run kept in memory removes it afterwards)."""
        return {}


REGISTERED: dict[str, StudyKind] = {}


def register_study_kind(kind: StudyKind) -> StudyKind:
    """Make ``kind`` runnable by ``simdesign run`` and ``simdesign.simulate`` (its ``name`` in ``study:``).

    Raises
    ------
    ConfigError
        A kind without a name, or a name already taken by another kind.
    """
    if not isinstance(kind, StudyKind) or not kind.name:
        raise ConfigError(f"A study kind must be a named StudyKind instance; got {kind!r}")
    if kind.name in REGISTERED and not same_entry(REGISTERED[kind.name], kind):
        raise refuse_clash("study kind", kind.name, REGISTERED[kind.name])
    REGISTERED[kind.name] = kind
    return kind


def unregister_study_kind(name: str) -> None:
    """Remove a study kind (a test's or a plug-in's; as every registry's unregister)."""
    REGISTERED.pop(name, None)


def study_field_problems(mapping: dict, kinds: tuple) -> list[str]:
    """Problems of a config's ``study`` field for a validator of ``kinds`` (none when absent or one of them)."""
    declared = mapping.get("study")
    if declared is None or declared in kinds:
        return []
    return [f"The 'study' field of this config must be {' or '.join(repr(k) for k in kinds)}; got {declared!r} "
            "(`simdesign run CONFIG` runs every study kind: it reads the kind from this field)"]


def trial_stream(seed: int, cell: str, trial: int) -> np.random.Generator:
    """The random stream of one trial of one cell, keyed by the root seed, cell and trial
    (:func:`simdesign.core.seeds.cell_trial_rng`, the same numbers as ever)."""
    return cell_trial_rng(seed, cell, trial)


def missing_runs(done: set[int], trials: int, chunk: int) -> list[tuple[int, int]]:
    """(first, stop) runs of at most ``chunk`` consecutive trials < ``trials`` not in ``done``."""
    runs, first = [], None
    for trial in range(trials + 1):
        if first is not None and (trial == trials or trial in done or trial - first == chunk):
            runs.append((first, trial))
            first = None
        if first is None and trial < trials and trial not in done:
            first = trial
    return runs


@dataclass(frozen=True)
class TrialChunk:
    """Consecutive trials ``first`` <= trial < ``stop`` of one cell: the unit the one loop computes and saves."""

    cell: str
    first: int
    stop: int


def _trial_chunk(kind: StudyKind, config, chunk: TrialChunk):
    """One chunk of the generic kinds: ``(chunk, rows)`` with a 'cell' and a 'trial' column."""
    seed, cell, trials = kind.seed(config), chunk.cell, list(range(chunk.first, chunk.stop))
    with single_threaded():
        streams = [trial_stream(seed, cell, trial) for trial in trials]
        if kind.separates_trials():  # generate every trial, then analyse the chunk (a kind may batch its fits)
            data = [kind.generate(config, cell, trial, stream) for trial, stream in zip(trials, streams)]
            found = kind.analyse_chunk(config, cell, trials, data, streams)
        else:
            found = [kind.trial_rows(config, cell, trial, stream) for trial, stream in zip(trials, streams)]
    frames = []
    for trial, rows in zip(trials, found):
        rows = rows.copy()
        rows.insert(0, "trial", trial)
        rows.insert(0, "cell", cell)
        frames.append(rows)
    return chunk, pd.concat(frames, ignore_index=True)


def run_trials(kind: StudyKind, config, out_dir, backend=None, progress: bool = False) -> pd.DataFrame:
    """Run ``config``: every (cell, trial) ``out_dir`` misses, through the one loop; every stored row back.

    Parameters
    ----------
    kind : StudyKind
    config : the kind's config
    out_dir : path-like
        Created or resumed.
    backend : str or BackendSpec, optional
        Default loky with one worker.
    progress : bool
    """
    return kind.read_rows(config, filled_store(kind, config, out_dir, backend_spec(backend or "loky", 1), progress))


def filled_store(kind: StudyKind, config, out_dir, spec: BackendSpec, progress: bool) -> Store:
    """``config``'s store in ``out_dir`` with every (cell, trial) it missed computed (:func:`fill_store`), its
    claim released: the checks before anything is written, the claim, the loop."""
    check_trial_count(kind.trials(config))  # before anything is written
    kind.check_run(config, spec)
    store = kind.open_store(config, out_dir)
    try:
        fill_store(kind, config, store, spec, progress)
    finally:
        store.release()
    return store


def fill_store(kind: StudyKind, config, store, spec: BackendSpec, progress: bool) -> None:
    """The one loop of every run: compute and save the chunks the claimed ``store`` misses for ``config``, with
    a progress bar; a Ctrl-C says what was saved, and lost workers' chunks are computed again."""
    trials = kind.trials(config)

    def plan():
        return kind.trial_chunks(config, store, trials)

    planned, missing = 0, 0  # one pass over a lazy plan: nothing is held for the trials to come
    for chunk in plan():
        planned, missing = planned + 1, missing + chunk.stop - chunk.first
    if not planned:
        return
    total, saved = len(kind.cells(config)) * trials, 0

    def save(chunk, result) -> None:
        nonlocal saved
        kind.save_chunk(config, store, chunk, result)
        saved += 1
        bar.update(chunk.stop - chunk.first)

    bar = progress_bar(total, kind.config_name(config), initial=total - missing, enabled=progress)
    try:
        with ChunkExecutor(spec, needs_r=kind.needs_r(config)) as executor:
            kind.compute_chunks(config, executor, plan, save, spec.retries)
            lost = executor.workers_lost()
            if lost:
                log.warning("%d Dask worker(s) left the cluster during the run; the chunks they were computing "
                            "were computed again (each chunk is stored once)", lost)
    except KeyboardInterrupt:
        bar.close()
        print(f"\nInterrupted: {saved} of {planned} chunks were saved in {store.directory}; "
              "run the same command again to resume.")
        raise
    bar.close()
