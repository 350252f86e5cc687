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

The built-in kinds whose trials share more than a trial function (rates with their tests, panel
studies, metric validation, sweeps) override :meth:`~StudyKind.run` with their own planning of chunks,
still through the one store class, the runner's loop and backends.
"""
from __future__ import annotations

from pathlib import Path

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

    # -- results
    def run(self, config, out_dir: Path, backend: BackendSpec, progress: bool) -> pd.DataFrame:
        """Compute what ``out_dir`` misses and return every stored row (default: :func:`run_trials`)."""
        return run_trials(self, config, out_dir, backend, progress)

    def to_mapping(self, config) -> dict | None:
        """The mapping ``config`` was read from (kept in the store's manifest, so ``simdesign plot`` can redraw
        it); default: the config itself if it is a mapping, else its ``raw`` attribute."""
        return config if isinstance(config, dict) else getattr(config, "raw", None)

    def stored_rows(self, config, out_dir: Path) -> pd.DataFrame:
        """Every stored row of ``config`` in ``out_dir``, computing nothing (default: the generic store's)."""
        store = TrialStore(out_dir)
        store.open(self.name, self.fingerprint(config))
        return store.read(self.cells(config), self.trials(config))

    def summarise(self, config, rows: pd.DataFrame) -> pd.DataFrame:
        raise NotImplementedError

    def plot(self, config, summary: pd.DataFrame, out_base: Path) -> list[Path]:
        """Draw the summary as ``out_base.png`` (and whatever else the kind writes); return the paths."""
        raise NotImplementedError

    # -- for a client that chooses which trials of which cells to compute, on its own executor (the planner)
    def open_store(self, config, out_dir: Path):
        """Claim the store ``out_dir`` for ``config`` (created or resumed) and return it; the caller releases it.

        The store tells the trials it holds (``completed(cell)``) and takes chunks (``write_chunk``).
        """
        raise NotImplementedError(f"a {self.name} study cannot compute chosen trials")

    def trial_chunks(self, config, store, trials: int) -> list:
        """The chunks computing every trial < ``trials`` of ``config``'s cells and work that ``store`` misses."""
        raise NotImplementedError(f"a {self.name} study cannot compute chosen trials")

    def compute_chunks(self, config, executor: ChunkExecutor, chunks, save, retries: int) -> None:
        """Compute the chunks ``chunks()`` returns on an open executor; ``save(chunk, rows)`` each as it finishes
        (the runner's loop: lost workers retried ``retries`` times)."""
        raise NotImplementedError(f"a {self.name} study cannot compute chosen trials")


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


# The generic runner's store is the one store class of every kind, in its default format (issue 40).
TrialStore = Store


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


def _trial_chunk(kind: StudyKind, config, cell: str, first: int, stop: int):
    """One chunk of the generic runner: ``((cell, first, stop), rows)`` with a 'cell' and a 'trial' column."""
    seed, trials = kind.seed(config), list(range(first, stop))
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
    return (cell, first, stop), pd.concat(frames, ignore_index=True)


def run_trials(kind: StudyKind, config, out_dir, backend=None, progress: bool = False) -> pd.DataFrame:
    """The generic runner: every (cell, trial) ``out_dir`` misses, through the runner's loop; all rows back.

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
    spec = backend_spec(backend or "loky", 1)
    trials, cells, chunk = kind.trials(config), kind.cells(config), kind.chunk_trials(config)
    check_trial_count(trials)
    store = TrialStore(out_dir)
    store.prepare(kind.name, kind.fingerprint(config), kind.to_mapping(config))
    try:
        def plan():
            return [(cell, first, stop) for cell in cells
                    for first, stop in missing_runs(store.completed(cell), trials, chunk)]

        def save(piece, rows):
            cell, first, stop = piece
            store.write_chunk(cell, first, stop, rows)
            bar.update(stop - first)

        missing = sum(stop - first for _, first, stop in plan())
        total = len(cells) * trials
        with progress_bar(total, kind.config_name(config), initial=total - missing, enabled=progress) as bar, ChunkExecutor(spec) as executor:
            run_chunks(executor, plan, lambda piece: delayed(_trial_chunk)(kind, config, *piece), save,
                       spec.retries)
        return store.read(cells, trials)
    finally:
        store.release()
