"""The Python API: one call per task, results as objects (the CLI is a thin layer over these).

>>> import simdesign                                                      # doctest: +SKIP
>>> result = simdesign.simulate("configs/quick.yaml", trials=50)          # doctest: +SKIP
>>> result.summary()                                                      # doctest: +SKIP

* :func:`simulate` -> :class:`SimulationResult` (``trials``, ``summary()``,
  ``failures()``, ``plot()``, ``save()``); :func:`load_results` reads a
  results directory back;
* :func:`plan` -> :class:`PlanOutcome` (``candidates``, ``recommendation``, ``plot()``);

Every result derives from :class:`simdesign.core.results.Result` (``simdesign.Result``): ``summary()`` is a
DataFrame, ``table(...)`` a readable one, ``plot(path=None)`` the figure (or the files written), ``save(dir)``
a dict of the paths written.
* :func:`fit_model`, :func:`check_model`, :func:`reliability` on a judgements
  table or CSV; ``simdesign.analyse(...)`` analyses a real study;
* :func:`analyse_metrics`: automatic metrics against human scores on real data (correlations with
  bootstrap and Fisher intervals, tests comparing metrics).

Bad input raises :class:`~simdesign.core.errors.ConfigError` (configs),
:class:`~simdesign.core.errors.DataError` (tables) or
:class:`~simdesign.core.errors.StoreError` (results directories).
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import socket
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from simdesign.studies.rates.config import SimulationConfig, load_config, parse_config
from simdesign.studies.replication.replication import replication_work
from simdesign.core.errors import ConfigError, DataError
from simdesign.core.estimands import has_nominal_level
from simdesign.outputs import (config_from_results, failure_table, figure_estimands, figure_title, write_figures,
                               write_outputs)
from simdesign.studies.rates.store import ResultsStore
from simdesign.core.checks import is_integer
from simdesign.core.results import Result, figure_of_files, files_by_name, legacy_table

# The CLI's default for --jobs: every core (results do not depend on it).
DEFAULT_JOBS = -1


def check_jobs(jobs: int) -> int:
    """Refuse 0 workers now: joblib refuses it only once work starts, after a results directory is written."""
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs == 0:
        raise ConfigError("The '--jobs' option must be a positive number of workers, or negative to count back from "
                          f"all cores (-1: all, -2: all but one); got {jobs!r}")
    return jobs


def check_table_or_path(value, what: str = "judgements") -> None:
    """Refuse what is neither a DataFrame nor a path (a DataError naming the type), before anything reads it."""
    if not isinstance(value, (pd.DataFrame, str, os.PathLike)):
        raise DataError(f"The {what} must be a pandas DataFrame or a CSV file path; got {type(value).__name__}"
                        + (" (an array has no column names: build a DataFrame with columns annotator, document, "
                           "system, score)" if isinstance(value, np.ndarray) else ""))


def check_directory_option(value, option: str) -> Path | None:
    """A directory argument (``out_dir``...) as a Path, refusing other types and an existing file (ConfigError)."""
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)):
        raise ConfigError(f"The '{option}' argument must be a directory path; got {type(value).__name__}")
    path = Path(value)
    if path.exists() and not path.is_dir():
        raise ConfigError(f"The '{option}' {path} is a file; give a directory (created if missing)")
    return path


def check_scheduler_reachable(backend, backend_options: dict, timeout: float = 5.0) -> None:
    """Refuse a Dask scheduler address nothing answers at, before a results directory is written.

    Dask's client would try for 30 s and end in two tracebacks, after the run's manifest was written.
    """
    address = backend_options.get("scheduler")
    if getattr(backend, "name", backend) != "dask" or not address:
        return
    host, _, port = str(address).split("://")[-1].rpartition(":")
    if not host or not port.isdigit():
        raise ConfigError(f"The '--scheduler' option must be an address like tcp://host:8786; got {address!r}")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        raise ConfigError(f"No Dask scheduler answers at {address} (--scheduler): {exc}; start one (dask "
                          "scheduler) or check the address, or leave --scheduler out for a local cluster") from None


def as_config(config, trials: int | None = None, tests=None) -> SimulationConfig:
    """A SimulationConfig from a YAML path, a mapping or a SimulationConfig; ``trials`` and ``tests`` override
    the config's (``tests`` in any form the YAML key takes)."""
    if isinstance(config, SimulationConfig):
        result = config
    elif isinstance(config, dict):
        result = parse_config(config)
    elif isinstance(config, (str, Path)):
        result = load_config(config)
    else:
        raise ConfigError(f"A config must be a YAML file path, a mapping or a SimulationConfig; "
                          f"got {type(config).__name__}")
    if tests is not None:
        result = dataclasses.replace(result, tests=tests)
    return result if trials is None else dataclasses.replace(result, trials=trials)


@dataclass
class StudyResult(Result):
    """The result of a simulation of any study kind: its stored rows and what can be computed from them (the
    kind's summary and figure). A rate study's result is a :class:`SimulationResult`, this class with the
    engine's tables and figures.

    Attributes
    ----------
    kind : simdesign.runner.study.StudyKind
    config : the kind's config
    rows : pandas.DataFrame
        The per-trial rows (for a sweep: the stacked summaries of its runs).
    out_dir : Path or None

    Examples
    --------
    >>> result = simdesign.simulate("configs/crowd_vs_expert.yaml", trials=20)   # doctest: +SKIP
    >>> result.summary()                                                         # doctest: +SKIP
    """

    kind: object = field(repr=False)
    config: object = field(repr=False)
    rows: pd.DataFrame = field(repr=False)
    out_dir: Path | None = None
    extra_tables: dict = field(default_factory=dict, repr=False)
    """Tables :meth:`save` writes beside ``summary.csv`` (:meth:`StudyKind.result_tables`, read at the run)."""

    def __repr__(self) -> str:
        where = f"stored in {self.out_dir}" if self.out_dir else "in memory"
        return f"<{type(self).__name__} {self.kind.name} {self.kind.config_name(self.config)!r}: {len(self.rows)} rows, {where}>"

    @property
    def trials(self) -> pd.DataFrame:
        """The per-trial rows (as :attr:`SimulationResult.trials`)."""
        return self.rows

    def summary(self) -> pd.DataFrame:
        """The kind's summary (means or rates with their intervals and MCSE); computed once (a copy each call)."""
        if getattr(self, "_summary", None) is None:
            self._summary = self.kind.summarise(self.config, self.rows)
        return self._summary.copy()

    def figure(self):
        """The kind's figure as a matplotlib Figure (the kind draws files: its first image, shown)."""
        return figure_of_files(lambda base: self.kind.plot(self.config, self.summary(), base))

    def plot(self, path=None):
        """Draw the kind's figure: as ``path.png`` (``path`` without suffix; returns the files written), or,
        without ``path``, as a matplotlib Figure."""
        if path is None:
            return self.figure()
        return self.kind.plot(self.config, self.summary(), Path(path))

    def save(self, directory) -> dict:
        """Write ``summary.csv``, the kind's other tables (:attr:`extra_tables`, e.g. a panel study's
        ``significance.csv``) and the figure into ``directory`` (the trials stay in the run's store).

        Returns
        -------
        dict
            ``summary`` -> ``summary.csv``, each table's name -> its CSV and each figure file's name -> its path.
        """
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        summary = self.summary()
        written = [directory / "summary.csv"]
        summary.to_csv(written[0], index=False)
        for name, table in self.extra_tables.items():
            table.to_csv(directory / f"{name}.csv", index=False)
            written.append(directory / f"{name}.csv")
        figures = self.kind.plot(self.config, summary, directory / self.kind.config_name(self.config))
        return files_by_name([*written, *figures])


class SimulationResult(StudyResult):
    """The per-trial results of a rate study (type I error, power, reliability, replication) and what can be
    computed from them: a :class:`StudyResult` of the rates kind, with the engine's tables and figures.

    Attributes
    ----------
    config : SimulationConfig
    trials : pandas.DataFrame
        One row per (design, trial, test, system pair), and one per (design,
        trial, estimand) with ``pair`` -1; columns as
        :data:`simdesign.studies.rates.store.RESULT_COLUMNS`.
    out_dir : Path or None
        The results directory, or None for a run kept in memory.

    Parameters
    ----------
    config, trials, out_dir
        As the attributes; built by :func:`simulate` and :func:`load_results`.

    Examples
    --------
    >>> result = simdesign.simulate("configs/quick.yaml", trials=20)        # doctest: +SKIP
    >>> result.summary().query("estimand == 'type1'")                        # doctest: +SKIP
    """

    def __init__(self, config: SimulationConfig, trials: pd.DataFrame, out_dir: Path | None = None):
        from simdesign.studies.rates.engine import RATES

        super().__init__(RATES, config, trials, out_dir)

    def __repr__(self) -> str:
        where = f"stored in {self.out_dir}" if self.out_dir else "in memory"
        return (f"<SimulationResult {self.config.name!r}: {len(self.config.designs)} designs x "
                f"{len(self.config.analyses) + len(self.config.estimands)} tests/estimands x {self.config.trials} "
                f"trials, {len(self.trials)} rows, {where}>")

    def summary(self, alpha: float | None = None) -> pd.DataFrame:
        """One row per design x test x estimand with rate, 95% interval and MCSE (docs/estimands.md).

        Parameters
        ----------
        alpha : float, optional
            Significance level (default the config's); the trials are not re-simulated.
        """
        from simdesign.studies.rates.summary import summarise

        config = self.config if alpha is None else dataclasses.replace(self.config, alpha=alpha)
        return summarise(config, self.trials)

    def table(self, estimand: str | None = None, digits: int = 3, alpha: float | None = None,
              design_info: bool = False) -> pd.DataFrame:
        """One estimand as designs (rows) by tests (columns), cells "rate [low, high]" (95% interval).

        Parameters
        ----------
        estimand : str, optional
            'type1', 'power', 'familywise', 'failure_rate', a reliability estimand...; default type I
            error under the null, power otherwise.
        digits : int
            Decimals shown.
        alpha : float, optional
            Significance level (default the config's).
        design_info : bool
            Also show each design's kind, annotators, documents and judgements (first columns).

        Returns
        -------
        pandas.DataFrame
            See :func:`simdesign.studies.rates.views.wide_table`; ``summary()`` has every number.

        Examples
        --------
        >>> simdesign.simulate("configs/quick.yaml", trials=100).table("type1")   # doctest: +SKIP
        """
        from simdesign.studies.rates.views import default_estimand, wide_table

        summary = self.summary(alpha)
        return wide_table(summary, estimand or default_estimand(summary, self.config.effect), digits, design_info)

    def _repr_html_(self) -> str:
        from simdesign.studies.rates.views import result_html

        return result_html(self)

    def failures(self) -> pd.DataFrame:
        """Design x test combinations with failed tests (see :func:`simdesign.outputs.failure_table`)."""
        return failure_table(self.summary())

    def failed_rows(self) -> pd.DataFrame:
        """The per-trial rows whose test failed (no p-value), with their status and message."""
        from simdesign.significance.base import FAILURES

        return self.trials[self.trials["status"].isin(list(FAILURES))].reset_index(drop=True)

    def figure(self, estimand: str | None = None, alpha: float | None = None):
        """The summary's figure (a matplotlib Figure); as :meth:`plot` without a path."""
        return self.plot(None, estimand, alpha)

    def _size(self) -> str:
        return f"{len(self.trials)} rows"

    def plot(self, path=None, estimand: str | None = None, alpha: float | None = None):
        """Draw the summary as the CLI does.

        Parameters
        ----------
        path : str or path-like, optional
            Figure path without suffix: writes ``.png``, ``.pdf`` and the rows
            drawn as ``.csv`` (and so for each reliability estimand) and returns the paths. Without
            it, returns the matplotlib Figure (for a notebook: simdesign never picks a backend, so
            Jupyter shows it after ``%matplotlib inline``).
        estimand : str, optional
            Default: ``figure.estimand``, else type I error under the null, power otherwise.
        alpha : float, optional
            Significance level of the summary (default the config's).
        """
        from simdesign.studies.rates.plots import draw_summary, write_figure_table

        summary = self.summary(alpha)
        if path is not None and estimand is None and alpha is None:
            return write_figures(self.config, summary, Path(path))
        estimand = figure_estimands(self.config, estimand)[0]
        level = alpha if alpha is not None else self.config.alpha
        figure, _ = draw_summary(summary, self.config.figure, estimand, figure_title(self.config),
                                 alpha=level if has_nominal_level(estimand) else None,
                                 designs={design.label: design for design in self.config.designs})
        if path is None:
            return figure
        paths = []
        for suffix in (".png", ".pdf"):
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            figure.savefig(Path(path).with_suffix(suffix), dpi=150)
            paths.append(Path(path).with_suffix(suffix))
        return paths + [write_figure_table(summary, self.config.figure, estimand, Path(path))]

    def save(self, directory) -> dict:
        """Write a results directory (manifest, trials, summary.csv, figures) that ``simdesign plot``,
        ``replay`` and :func:`load_results` read.

        Returns
        -------
        dict
            ``summary`` -> ``summary.csv`` and each figure file's name -> its path (the trials are in the
            directory's store, read by :func:`load_results`).

        Raises
        ------
        StoreError
            If ``directory`` holds trials of another model, effect or seed.
        """
        directory = Path(directory)
        store = ResultsStore(directory)
        store.prepare(self.config)
        try:
            for design, frame in self.trials.groupby("design", sort=False):
                stop = int(frame["trial"].max()) + 1
                store.write_chunk(design, 0, stop, sorted(frame["test"].unique()), frame.reset_index(drop=True))
        finally:
            store.release()
        return files_by_name(write_outputs(self.config, self.summary(), directory))


def load_study(out_dir) -> StudyResult:
    """The stored results of a study of another kind than rates (its manifest's config), simulating nothing.

    Raises
    ------
    StoreError
        ``out_dir`` is not a results directory of a registered kind, or does not record its config.
    """
    from simdesign.core.errors import StoreError
    from simdesign.runner.stores import MANIFEST, read_manifest
    from simdesign.runner.study import REGISTERED
    from simdesign.studies.kinds import DRIVERS  # and registers the built-in kinds

    manifest = read_manifest(Path(out_dir) / MANIFEST)
    kind = REGISTERED.get(manifest.get("kind")) or DRIVERS.get(manifest.get("kind"))
    if kind is None or not isinstance(manifest.get("config"), dict):
        raise StoreError(f"{out_dir} holds a {manifest.get('kind')!r} study that cannot be redrawn here (kinds: "
                         f"{sorted(REGISTERED)}); run its config again with `simdesign run`")
    config = kind.parse(manifest["config"])
    rows = kind.stored_rows(config, Path(out_dir))
    return StudyResult(kind, config, rows, Path(out_dir), kind.result_tables(config, rows, Path(out_dir)))


def study_of(config, trials: int | None = None, tests=None):
    """``(kind, config)``: the registered study kind of ``config`` and its parsed config; a rate (or replication)
    study's kind is ``rates`` and its config a :class:`SimulationConfig` (``tests`` replacing its tests)."""
    from simdesign.runner.study import REGISTERED
    from simdesign.studies.rates.config import read_config_mapping
    from simdesign.studies.kinds import ENGINE_KINDS, RATE_STUDY, kind_or_driver, study_kind

    if isinstance(config, (str, Path)):
        mapping, base_dir = read_config_mapping(Path(config), "config"), Path(config).parent
    elif isinstance(config, dict):
        mapping, base_dir = config, None
    else:
        return REGISTERED[RATE_STUDY], as_config(config, trials, tests)
    name = study_kind(mapping)
    if name in ENGINE_KINDS:
        return REGISTERED[RATE_STUDY], as_config(config, trials, tests)
    if tests is not None:
        raise ConfigError(f"tests= replaces a rate study's tests; this config is a {name!r} study: give its own keys")
    kind = kind_or_driver(name)  # a StudyKind, or a driver over kinds (a sweep) answering the same calls
    parsed = kind.parse(mapping, base_dir)
    return kind, (parsed if trials is None else kind.with_trials(parsed, trials))


def simulate(config, *, out_dir=None, jobs: int | None = None, backend="loky", trials: int | None = None,
             tests=None, progress: bool = True, **backend_options):
    """Simulate a config of any study kind: for rates, every (design, trial, test) it asks for.

    Parameters
    ----------
    config : str, path-like, dict or SimulationConfig
        A YAML file, a mapping in the same form, or a config object. The study kind is the config's
        ``study`` field or recognised from its keys (:mod:`simdesign.studies.kinds`): rates and
        replication give a :class:`SimulationResult`, every other kind (panels, metric-validation, sweep,
        a registered plug-in) a :class:`StudyResult`; both have ``summary()``, ``plot()`` and ``save()``.
    out_dir : path-like, optional
        Results directory, created or resumed (only missing trials are
        simulated). Without it the run is kept in memory: a temporary
        directory is used and removed.
    jobs : int, optional
        Parallel workers (default -1, all cores, as the CLI); results do not depend on it.
    backend : {'loky', 'threading', 'dask'} or BackendSpec
        See :func:`simdesign.studies.rates.engine.run_simulation`.
    trials : int, optional
        Overrides the config's trials.
    tests : list, optional
        Overrides the config's tests: names or mappings, as the YAML's ``tests:`` key.
    progress : bool
        Show a progress bar.
    **backend_options
        ``scheduler``, ``workers``, ``retries`` (see :func:`simdesign.studies.rates.engine.run_simulation`).

    Returns
    -------
    SimulationResult or StudyResult
        A rate study's result, or the stored rows of another kind (panels, metric validation, a sweep).

    Raises
    ------
    ConfigError
        A bad config or argument, naming the field; :class:`~simdesign.core.errors.StoreError` if
        ``out_dir`` holds trials of another model, effect or seed.

    Examples
    --------
    >>> result = simdesign.simulate("configs/quick.yaml", trials=50, tests=["ttest_doc"])   # doctest: +SKIP
    >>> result.summary()                                                                   # doctest: +SKIP
    """
    from simdesign.runner.backends import BackendSpec

    jobs = check_jobs(DEFAULT_JOBS if jobs is None else jobs)
    out_dir = check_directory_option(out_dir, "out_dir")
    check_scheduler_reachable(backend, backend_options)
    kind, config = study_of(config, trials, tests)
    # one path for every kind, rates included: the kind's runner, then its result
    spec = backend if isinstance(backend, BackendSpec) else BackendSpec(backend, jobs, **backend_options)
    # the options were checked above (run_study would check them again); without out_dir, a temporary store
    where = contextlib.nullcontext(out_dir) if out_dir is not None else tempfile.TemporaryDirectory(prefix="simdesign-")
    with where as directory:
        return _result_of(kind, config, kind.run(config, Path(directory), spec, progress), Path(directory),
                          kept=out_dir is not None)


def run_study(kind, config, out_dir, backend, progress: bool = True):
    """Run a config already parsed by its study kind into ``out_dir`` (created or resumed) and return its result:
    the one path :func:`simulate` and ``simdesign run`` take for every kind.

    Parameters
    ----------
    kind : simdesign.runner.study.StudyKind
    config : the kind's parsed config (:func:`study_of`, or ``kind.load(path, overrides)``)
    out_dir : path-like
    backend : BackendSpec
    progress : bool
    """
    out_dir = check_directory_option(out_dir, "out_dir")
    check_scheduler_reachable(backend, {"scheduler": getattr(backend, "scheduler", None)})
    return _result_of(kind, config, kind.run(config, out_dir, backend, progress), out_dir)


def _result_of(kind, config, rows: pd.DataFrame, out_dir: Path, kept: bool = True):
    """A finished run's result: a rate study's :class:`SimulationResult` (its summary and figures know the
    engine's tests and estimands), another kind's :class:`StudyResult` with the kind's other tables, read from
    ``out_dir`` while it exists (``kept``: whether the run's directory stays, else the result is in memory)."""
    from simdesign.studies.kinds import RATE_STUDY

    if kind.name == RATE_STUDY:
        return SimulationResult(config, rows, out_dir if kept else None)
    return StudyResult(kind, config, rows, out_dir if kept else None, kind.result_tables(config, rows, out_dir))


def read_config_trials(store: ResultsStore, config: SimulationConfig) -> pd.DataFrame:
    """The stored rows of ``config``'s designs, tests and estimands, trials below ``config.trials``."""
    return store.read_trials(designs=[d.label for d in config.designs],
                             tests=[a.label for a in config.work_specs]
                             + [item.label for item in replication_work(config)], trials=config.trials)


def load_results(out_dir, trials: int | None = None, config: SimulationConfig | None = None) -> SimulationResult:
    """A results directory as a :class:`SimulationResult` (its manifest's config, unless ``config`` is given).

    Parameters
    ----------
    out_dir : path-like
        A directory written by ``simdesign run`` or :func:`simulate`.
    trials : int, optional
        Read only the first ``trials`` trials.
    config : SimulationConfig, optional
        Read the trials of this config (default: the one in the manifest).

    Returns
    -------
    SimulationResult

    Examples
    --------
    >>> result = simdesign.load_results("results/quick")                     # doctest: +SKIP
    >>> result.summary()                                                      # doctest: +SKIP

    Raises
    ------
    StoreError
        If ``out_dir`` is not a results directory, or its trials are corrupt.
    """
    config = config if config is not None else config_from_results(out_dir, trials)
    if trials is not None:
        config = dataclasses.replace(config, trials=trials)
    return SimulationResult(config, read_config_trials(ResultsStore(out_dir), config), Path(out_dir))


@dataclass
class PlanOutcome(Result):
    """A finished plan.

    Attributes
    ----------
    result : simdesign.planning.plan_search.PlanResult
        Everything the search found (per-candidate results, confirmations, effort).
    candidates : pandas.DataFrame
        The ranked candidates (as ``plan.csv``; ``summary()`` is a copy, ``table()`` rounded). Called
        ``table`` before issue 40: ``outcome.table`` is still these rows for one release.
    recommendation : str
        The recommendation in words (as ``recommendation.md``).
    recommended : CandidateResult or None
        The confirmed answer; None when nothing qualified.
    effort : str
        One line on how many trials the search used.
    paths : dict
        What :meth:`save` wrote (``table``, ``recommendation`` and each figure file's name); empty for a
        plan run without ``out_dir``.

    Parameters
    ----------
    result, candidates, recommendation, recommended, effort, paths
        As the attributes; built by :func:`plan`.

    Examples
    --------
    >>> outcome = simdesign.plan("configs/plan_example.yaml", out_dir="results/plan")  # doctest: +SKIP
    >>> outcome.table().head(), outcome.paths["recommendation"]                    # doctest: +SKIP
    """

    result: object = field(repr=False)
    candidates: pd.DataFrame = field(repr=False)
    recommendation: str = field(repr=False)
    recommended: object = field(repr=False)
    effort: str = ""
    paths: dict = field(default_factory=dict, repr=False)

    def __repr__(self) -> str:
        pick = "nothing recommended" if self.recommended is None else \
            f"recommended {self.recommended.candidate.design.label} / {self.recommended.candidate.test.label}"
        config = self.result.config
        name = config.name if hasattr(config, "name") else config.plan.name  # a judge plan: its humans-only plan's
        return f"<{type(self).__name__} {name!r}: {len(self.candidates)} candidates, {pick}>"

    @property
    def table(self):
        """The readable candidates, called: ``outcome.table(digits=3)``; used as a DataFrame (the spelling
        before issue 40), the candidates themselves for one release."""
        return legacy_table(self.candidates, lambda *args, **options: Result.table(self, *args, **options))

    def summary(self) -> pd.DataFrame:
        """The ranked candidates (a copy of :attr:`candidates`, as ``plan.csv``)."""
        return self.candidates.copy()

    def _repr_html_(self) -> str:
        from simdesign.planning.plan_views import plan_html

        return plan_html(self)

    def figure(self):
        """The plan's figure as a matplotlib Figure (its first image, drawn as :meth:`plot` draws it)."""
        return figure_of_files(self._draw)

    def plot(self, path=None):
        """Draw cost against power (as ``simdesign plan``): ``path`` without suffix, returns the files written;
        without ``path``, a matplotlib Figure."""
        return self.figure() if path is None else self._draw(Path(path))

    def _draw(self, base: Path) -> list[Path]:
        from simdesign.planning.plan_report import plot_plan

        return plot_plan(self.result, self.candidates, base)

    def save(self, directory, figure=None) -> dict:
        """Write ``plan.csv``, ``recommendation.md`` and the figure (default ``directory/<plan name>``).

        Returns
        -------
        dict
            ``table`` and ``recommendation`` paths, and each figure file's name -> its path.
        """
        from simdesign.planning.plan_report import write_plan_outputs

        self.paths = _flat_paths(write_plan_outputs(self.result, Path(directory), Path(figure) if figure else None))
        return self.paths


def _flat_paths(paths: dict) -> dict:
    """A plan writer's paths with its list of ``figures`` spread out, each under its file name."""
    return {**{key: path for key, path in paths.items() if key != "figures"},
            **files_by_name(paths.get("figures", []))}


def plan(config, *, out_dir=None, jobs: int | None = None, progress: bool = True, backend="loky",
         figure=None, **backend_options) -> PlanOutcome:
    """Find the cheapest design reaching a target power (or the most powerful within a budget).

    Parameters
    ----------
    config : str, path-like, dict or PlanConfig
        A plan YAML file (see configs/plan_example.yaml), a mapping in that form, or a parsed plan.
    out_dir : path-like, optional
        Results directory (created or resumed). The plan's outputs are written there as
        ``simdesign plan`` writes them: ``plan.csv``, ``recommendation.md`` and the figure
        (:meth:`PlanOutcome.save`; their paths in ``outcome.paths``). Without it a temporary
        directory is used and removed, and nothing is written.
    figure : path-like, optional
        With ``out_dir``: the figure's path without suffix (default ``out_dir/<plan name>``).
    jobs : int, optional
        Parallel workers (default -1, all cores, as the CLI).
    progress : bool
        Print one line per stage.
    backend : {'loky', 'threading', 'dask'} or BackendSpec, default 'loky'
        Where the studies are computed; ``backend_options`` (scheduler, workers, retries) as for
        :func:`simulate`. The plan does not depend on it.

    Returns
    -------
    PlanOutcome

    Examples
    --------
    >>> outcome = simdesign.plan("configs/plan_example.yaml", out_dir="results/plan", jobs=2)  # doctest: +SKIP
    >>> outcome.recommendation                                                             # doctest: +SKIP
    """
    from simdesign.planning.plan_report import effort_line, plan_table, recommendation_text
    from simdesign.planning.plan_search import run_plan
    from simdesign.planning.planner import PlanConfig

    config = _plan_config(config)
    jobs = check_jobs(DEFAULT_JOBS if jobs is None else jobs)
    out_dir = check_directory_option(out_dir, "out_dir")
    if _is_judge_plan(config):  # a judge plan (a 'judge_plan' mapping): computed in this process, one trial at a time
        return _judge_plan(config, out_dir, progress, backend, figure)
    if not isinstance(config, PlanConfig):  # a replication plan (a 'replication' mapping), as `simdesign plan` takes
        return _replication_plan(config, out_dir, jobs, progress, backend, figure)
    check_scheduler_reachable(backend, backend_options)

    def outcome(directory) -> PlanOutcome:
        result = run_plan(config, Path(directory), jobs=jobs, progress=progress, backend=backend, **backend_options)
        return PlanOutcome(result, plan_table(result), recommendation_text(result), result.recommended,
                           effort_line(result))

    return _outcome_in(out_dir, outcome, figure)


def _outcome_in(out_dir, outcome, figure):
    """A plan's outcome computed in ``out_dir`` (its outputs saved there) or in a temporary directory removed
    afterwards (nothing written)."""
    if out_dir is not None:
        found = outcome(out_dir)
        found.save(out_dir, figure)
        return found
    with tempfile.TemporaryDirectory(prefix="simdesign-plan-") as temporary:
        return outcome(temporary)


def _plan_config(config):
    """A parsed plan from a path, a mapping or a parsed plan: a ``replication`` mapping makes it a replication plan
    (simdesign.planning.replication_plan), the same rule as ``simdesign plan``."""
    from simdesign.planning.judge_plan import JudgePlan, parse_judge_plan
    from simdesign.planning.planner import PlanConfig, parse_plan
    from simdesign.planning.replication_plan import ReplicationPlan, parse_replication_plan
    from simdesign.studies.rates.config import read_config_mapping

    if isinstance(config, (PlanConfig, ReplicationPlan, JudgePlan)):
        return config
    base_dir = None
    if isinstance(config, (str, os.PathLike)):
        base_dir = Path(config).parent
        config = read_config_mapping(Path(config), "plan config")
    if not isinstance(config, dict):
        raise ConfigError(f"A plan config must be a YAML file path, a mapping, a PlanConfig or a ReplicationPlan; "
                          f"got {type(config).__name__}")
    if "judge_plan" in config:  # a judge plan (simdesign.planning.judge_plan)
        return parse_judge_plan(config, base_dir)
    return parse_replication_plan(config, base_dir) if "replication" in config else parse_plan(config, base_dir)


def _is_judge_plan(config) -> bool:
    from simdesign.planning.judge_plan import JudgePlan

    return isinstance(config, JudgePlan)


@dataclass(repr=False)
class JudgePlanOutcome(PlanOutcome):
    """A finished judge plan: :class:`PlanOutcome` with a ``variant`` column in its table (humans only, and the
    judge with each selection), the humans-only pick as ``recommended`` and every variant's in ``result.results``;
    ``save`` writes ``plan.csv``, ``recommendation.md`` and one figure."""

    def _draw(self, base: Path) -> list[Path]:
        from simdesign.planning.judge_plan import plot_judge_plan

        return plot_judge_plan(self.candidates, base)

    def save(self, directory, figure=None) -> dict:
        from simdesign.planning.judge_plan import write_judge_plan

        self.paths = _flat_paths(write_judge_plan(self.result, Path(directory), Path(figure) if figure else None))
        return self.paths


def _judge_plan(config, out_dir, progress: bool, backend, figure) -> JudgePlanOutcome:
    """:func:`plan` for a judge plan: its studies are computed in this process (each a fraction of a second)."""
    from simdesign.planning.judge_plan import judge_plan_table, judge_recommendation, run_judge_plan

    if backend not in (None, "loky"):
        raise ConfigError(f"A judge plan runs in this process (the loky backend's default); got backend {backend!r}")

    def outcome(directory) -> JudgePlanOutcome:
        result = run_judge_plan(config, Path(directory), progress=progress)
        found = JudgePlanOutcome(result, judge_plan_table(result), judge_recommendation(result), result.recommended,
                                 "; ".join(f"{variant}: {r.new_studies:,} studies simulated"
                                           for variant, r in result.results.items()))
        return found

    return _outcome_in(out_dir, outcome, figure)


@dataclass(repr=False)
class ReplicationPlanOutcome(PlanOutcome):
    """A finished replication plan: :class:`PlanOutcome` with ``probability`` for power in its table, and the
    replication plan's own outputs (``save`` writes ``plan.csv``, ``recommendation.md`` and one figure)."""

    config: object = field(default=None, repr=False)

    def _draw(self, base: Path) -> list[Path]:
        from simdesign.planning.replication_plan import plot_replication_plan

        return plot_replication_plan(self.candidates, self.config, base)

    def save(self, directory, figure=None) -> dict:
        from simdesign.planning.replication_plan import write_replication_plan

        paths = write_replication_plan(self.config, self.result, Path(directory), Path(figure) if figure else None)
        self.paths = {"table": paths["table"], "recommendation": paths["recommendation"],
                      **files_by_name([paths["figure"]])}
        return self.paths


def _replication_plan(config, out_dir, jobs: int, progress: bool, backend, figure) -> ReplicationPlanOutcome:
    """:func:`plan` for a replication plan: local worker processes only (its outcome files are written by the
    plan itself, not through a backend's store)."""
    from simdesign.planning.plan_report import effort_line
    from simdesign.planning.replication_plan import (replication_plan_table, replication_recommendation,
                                                     run_replication_plan)
    from simdesign.runner.workers import available_cores

    if backend not in (None, "loky"):
        raise ConfigError(f"A replication plan runs on the loky backend only; got backend {backend!r}")
    jobs = jobs if jobs > 0 else max(1, available_cores() + 1 + jobs)  # joblib's meaning of -1, -2, ...

    def outcome(directory) -> ReplicationPlanOutcome:
        result = run_replication_plan(config, Path(directory), jobs=jobs, progress=progress)
        return ReplicationPlanOutcome(result, replication_plan_table(config, result),
                                      replication_recommendation(config, result), result.recommended,
                                      effort_line(result), config=config)

    return _outcome_in(out_dir, outcome, figure)


def read_judgements_table(frame_or_path, columns: dict | None = None, scale=None) -> tuple[pd.DataFrame, tuple]:
    """Checked Likert judgements and their scale, from a DataFrame or a CSV path (one validator for both).

    Raises
    ------
    DataError
        A missing column, a bad score, a repeated judgement..., naming the column or line.
    """
    from simdesign.tables.judgements import checked_judgements, read_judgements

    check_table_or_path(frame_or_path)
    _refuse_other_methods(frame_or_path, columns)
    if isinstance(frame_or_path, pd.DataFrame):
        columns = dict(columns or {})
        frame = frame_or_path.rename(columns=columns)
        return checked_judgements(frame, scale, names={ours: theirs for theirs, ours in columns.items()})
    return read_judgements(frame_or_path, columns, scale)


def _refuse_other_methods(frame_or_path, columns: dict | None) -> None:
    """A table of another method (a ``rank`` column, no ``score``) named as such, with the way to use it:
    the Likert functions would only say that ``score`` is missing."""
    from simdesign.methods import default_method, get_method
    from simdesign.tables.judgements import read_table_csv
    from simdesign.tables.recognise import infer_method

    header = (frame_or_path.columns if isinstance(frame_or_path, pd.DataFrame) else
              read_table_csv(frame_or_path, required=("annotator", "document", "system", "score or rank")).columns)
    try:
        method = infer_method(header, None, columns)
    except DataError:  # no method's column, or several: the Likert reader names what is missing
        return
    if method != default_method().name:
        from simdesign.tables.recognise import load_steps

        load_steps()
        info = get_method(method)
        # the commands that take such a table: `fit` and `check` hand it to the method's own fit and check steps
        # (its pilot-layer steps; the command line's own steps sit above this module and are not imported here)
        commands = [text for step, text in (("fit", "simdesign fit FILE --out MODEL.yaml (fit)"),
                                            ("check", "simdesign check MODEL FILE (check)")) if step in info.steps]
        raise DataError(f"The judgements are a {method} table (its column '{info.value_column}'); fit_model and "
                        f"check_model take Likert judgements ('score'). For {method} judgements "
                        + (f"use the command line: {', '.join(commands)}; " if commands else "")
                        + "simdesign.reliability and simdesign.analyse read them too")


def fit_model(frame_or_path, *, structure: str = "auto", reference=None, scale=None, name: str = "fitted",
              columns: dict | None = None, allow_reduced: bool = False, source: dict | None = None):
    """Fit the generator (cumulative link mixed model) to judgements.

    Parameters
    ----------
    frame_or_path : pandas.DataFrame or path-like
        Columns ``annotator, document, system, score`` (``columns`` maps a file's names to these).
    structure, reference, scale, name, allow_reduced
        As :func:`simdesign.realdata.fit.fit_model`.
    columns : dict, optional
        File column name -> ours (annotator, document, system, score).
    source : dict, optional
        Recorded in the model's provenance (default for a CSV: its name, sha256 and rows).

    Returns
    -------
    simdesign.realdata.fit.FitOutcome
        ``.model`` (an OrdinalMixedModel to simulate from), ``.result`` (the
        fit: status, log-likelihood, random-effect SDs), ``.provenance``.

    Examples
    --------
    >>> outcome = simdesign.fit_model("pilot.csv", structure="auto")          # doctest: +SKIP
    >>> simdesign.simulate({**config, "model": outcome.model})                # doctest: +SKIP

    Raises
    ------
    DataError
        The table cannot be used. :class:`simdesign.realdata.fit.FitError` if the fit fails.
    """
    from simdesign.tables.judgements import file_sha256
    from simdesign.realdata.fit import fit_model as fit

    frame, scale = read_judgements_table(frame_or_path, columns, scale)
    if source is None and not isinstance(frame_or_path, pd.DataFrame):
        source = {"file": Path(frame_or_path).name, "sha256": file_sha256(frame_or_path), "rows": len(frame)}
        if columns:
            source["columns"] = ",".join(f"{ours}={theirs}" for theirs, ours in columns.items())
    return fit(frame, structure=structure, reference=reference, scale=scale, name=name, source=source,
               allow_reduced=allow_reduced)


def check_model(model, frame_or_path, *, trials: int = 200, seed: int = 0, out_dir=None,
                columns: dict | None = None, scale=None, progress: bool = True) -> pd.DataFrame:
    """Predictive check: simulate studies with the data's own design from ``model`` and compare statistics.

    Parameters
    ----------
    model : OrdinalMixedModel, FitOutcome, preset name or model file path
    frame_or_path : pandas.DataFrame or path-like
    trials, seed : int
    out_dir : path-like, optional
        Also write ``check.csv`` and ``check.png`` there.
    columns, scale
        As :func:`fit_model`.
    progress : bool
        Show the simulated studies' progress (a bar on a terminal, plain lines in a log).

    Returns
    -------
    ModelCheck
        ``statistics`` (``summary()``): one row per statistic, observed value, simulated 95% range,
        ``inside``; ``plot()`` the check's figure. (A DataFrame before issue 40: indexing it still works, with a
        warning, for one release.)

    Examples
    --------
    >>> check = simdesign.check_model("coherence", "pilot.csv", trials=100)  # doctest: +SKIP
    >>> check.statistics.query("not inside")                                 # doctest: +SKIP
    """
    from simdesign.realdata.check import check_title, predictive_check
    from simdesign.model import load_model

    check_table_or_path(frame_or_path)
    problems = [f"The '{name}' argument must be a {rule}; got {value!r}"
                for name, value, ok, rule in (("trials", trials, is_integer(trials, 1), "positive integer"),
                                              ("seed", seed, is_integer(seed, 0), "non-negative integer"))
                if not ok]
    if problems:
        raise ConfigError(problems)
    out_dir = check_directory_option(out_dir, "out_dir")
    model = load_model(getattr(model, "model", model))
    frame, _ = read_judgements_table(frame_or_path, columns, scale)
    table, simulated = predictive_check(model, frame, trials=trials, seed=seed, progress=progress)
    check = ModelCheck(table, simulated, check_title(f"model '{model.name}'", trials, table))
    if out_dir is not None:
        check.save(out_dir)
    return check


@dataclass(repr=False)
class ModelCheck(Result):
    """A predictive check of a model against a study (:func:`check_model`).

    Attributes
    ----------
    statistics : pandas.DataFrame
        One row per statistic (``statistic, system, category, observed, sim_mean, sim_low, sim_high, inside``).
    simulated : numpy.ndarray
        The statistics of each simulated study (studies x statistics), drawn by :meth:`plot`.
    title : str
        The figure's title.
    out_dir : Path or None
        Where :meth:`save` wrote the check last.
    """

    statistics: pd.DataFrame
    simulated: np.ndarray
    title: str = ""
    out_dir: Path | None = None

    def summary(self) -> pd.DataFrame:
        """Every statistic with its observed value and simulated 95% range (a copy of :attr:`statistics`)."""
        return self.statistics.copy()

    def _what(self) -> str:
        return f"{len(self.simulated)} simulated studies"

    def _size(self) -> str:
        return f"{int(self.statistics['inside'].sum())} of {len(self.statistics)} statistics inside their range"

    def plot(self, path=None):
        """The check's figure (per-system score shares, system means, spreads, reliability): a matplotlib Figure,
        or with ``path`` (.png added to any other suffix) the file written."""
        from simdesign.core.results import figure_of_files, figure_path
        from simdesign.realdata.check import plot_check

        def draw(base):
            return [plot_check(self.statistics, self.simulated, self.title, figure_path(base))]

        return figure_of_files(draw) if path is None else draw(path)

    def save(self, directory) -> dict:
        """Write ``check.csv`` (:attr:`statistics`) and ``check.png`` into ``directory``; returns ``table`` and
        ``figure`` -> path."""
        from simdesign.realdata.check import write_check

        paths = write_check(self.statistics, self.simulated, directory, "check", self.title)
        self.out_dir = Path(directory)
        return dict(zip(("table", "figure"), paths))

    # The DataFrame check_model returned before issue 40, kept one release: indexing and its methods warn.
    def __getitem__(self, key):
        _warn_check_frame()
        return self.statistics[key]

    def __len__(self) -> int:
        return len(self.statistics)

    def __getattr__(self, name: str):
        if name.startswith("_") or name in ("statistics", "simulated", "title", "out_dir"):
            raise AttributeError(name)
        _warn_check_frame()
        return getattr(self.statistics, name)


def _warn_check_frame() -> None:
    import warnings

    warnings.warn("check_model returns a ModelCheck (issue 40): its table is .statistics (or .summary()); using the "
                  "check as a DataFrame will stop working in the next release", FutureWarning, stacklevel=3)


@dataclass(repr=False)
class Reliability(Result):
    """Krippendorff's alpha and split-half reliability of a study; an undefined one is None with its reason.

    Parameters
    ----------
    krippendorff_alpha : float or None
        Ordinal alpha (unit = document x system, coders = annotators); None when undefined.
    split_half : SplitHalf or None
        Split-half reliability of the system means between halves of the blocks (``.value``); None when
        undefined (fewer than two blocks).
    notes : list of str
        Why an estimate is undefined.

    Attributes
    ----------
    shr : float or None
        ``split_half.value``.

    Examples
    --------
    >>> simdesign.reliability("study.csv").krippendorff_alpha               # doctest: +SKIP
    """

    krippendorff_alpha: float | None
    split_half: object | None
    notes: list

    @property
    def shr(self) -> float | None:
        return None if self.split_half is None else self.split_half.value

    def summary(self) -> pd.DataFrame:
        """One row per measure (``Krippendorff's alpha (ordinal)``, ``split-half reliability``): ``measure``,
        ``value`` (NaN when undefined), ``splits``, ``exact``, ``blocks`` (split-half only) and ``note`` (why a
        measure is undefined)."""
        split = self.split_half
        alpha, halves = RELIABILITY_MEASURES
        notes = [next((note for note in self.notes if note.startswith(measure[:10])), "") for measure in (alpha, halves)]
        return pd.DataFrame([
            {"measure": alpha, "value": _or_nan(self.krippendorff_alpha), "splits": None, "exact": None,
             "blocks": None, "note": notes[0]},
            {"measure": halves, "value": _or_nan(self.shr), "splits": None if split is None else split.n_splits,
             "exact": None if split is None else split.exact, "blocks": None if split is None else split.n_blocks,
             "note": notes[1]}])

    def __repr__(self) -> str:
        from simdesign.studies.rates.views import reliability_text

        return reliability_text(self)


# The measures of Reliability.summary(), named as its notes name them (a note starts with the measure's words).
RELIABILITY_MEASURES = ("Krippendorff's alpha (ordinal)", "split-half reliability")


def _or_nan(value) -> float:
    return float("nan") if value is None else float(value)


def reliability(frame_or_path, *, method: str | None = None, columns: dict | None = None, scale=None,
                seed: int = 0) -> Reliability:
    """Krippendorff's alpha (ordinal) and split-half reliability of a real study.

    Parameters
    ----------
    frame_or_path : pandas.DataFrame or path-like
        Likert (``score``) or Rank (``rank``) judgements, the method inferred from the columns; a CSV is
        read by :func:`simdesign.tables.recognise.read_table`, a DataFrame checked by the same rules.
    method : {'likert', 'rank'}, optional
        Default: from a ``score`` or ``rank`` column.
    seed : int
        For random splits (more than 100,000 distinct splits).

    Returns
    -------
    Reliability

    Examples
    --------
    >>> simdesign.reliability("study.csv").shr                              # doctest: +SKIP
    """
    from simdesign.tables.recognise import read_table

    check_table_or_path(frame_or_path)
    if not is_integer(seed, 0):
        raise ConfigError(f"The 'seed' argument must be a non-negative integer; got {seed!r}")
    if isinstance(frame_or_path, pd.DataFrame):
        from simdesign.methods import default_method
        from simdesign.tables.recognise import infer_method, orient_any, read_form_method

        renamed = frame_or_path.rename(columns=dict(columns or {}))
        if read_form_method(renamed) is None and infer_method(renamed.columns, method) == default_method().name:
            # Likert: its reader names a bad cell by the caller's column names
            frame, scale = read_judgements_table(frame_or_path, columns, scale)
        else:  # another method's columns, or read_table's form of them
            frame, info = orient_any(renamed, method, scale)
            scale = info["scale"]
    else:
        frame, info = read_table(frame_or_path, method, columns, scale)
        scale = info["scale"]
    return reliability_of_checked(frame, scale, seed)


def reliability_of_checked(frame: pd.DataFrame, scale, seed: int = 0) -> Reliability:
    """:func:`reliability` of a table already checked (by :func:`read_judgements_table` or ``read_table``)."""
    from simdesign.core.judgements import Judgements
    from simdesign.core.seeds import stream
    from simdesign.stats.reliability import UndefinedReliability, krippendorff_alpha, split_half_reliability

    notes, alpha, split = [], None, None
    try:
        alpha = krippendorff_alpha(frame, value_domain=scale)
    except UndefinedReliability as exc:
        notes.append(f"Krippendorff's alpha: undefined ({exc})")
    try:
        split = split_half_reliability(Judgements.from_frame(frame), stream(seed, "reliability/split-half"))
    except ConfigError as exc:  # UndefinedReliability, or a table that is not complete (annotator, document) pairs
        notes.append(f"split-half reliability: undefined ({exc})")
    return Reliability(alpha, split, notes)


def analyse_metrics(table, *, metrics=None, human: str = "human", levels=("system", "summary", "global"),
                    methods=("pearson", "spearman", "kendall"), resamples: int = 1000, seed: int = 0,
                    confidence: float = 0.95, drop_incomplete_inputs: bool = False, lower_is_better=(),
                    max_outputs: int = 200_000):
    """Correlations of automatic metrics with human scores and tests comparing metrics (Deutsch et al. 2021).

    ``simdesign analyse-metrics`` in Python (docs/how-to/analyse-metrics.md).

    Parameters
    ----------
    table : path-like or pandas.DataFrame
        One row per (system, input): columns ``system``, ``input``, one column per metric and the human score.
    metrics : sequence of str, optional
        The metric columns (default: all but system, input and ``human``).
    human : str
        The human score's column.
    levels : sequence of {'system', 'summary', 'global'}
        Correlation levels: over system means, within each input (averaged), over all outputs.
    methods : sequence of {'pearson', 'spearman', 'kendall'}
    resamples : int
        Bootstrap resamples and permutations.
    seed : int
        Seeds every resampling (numpy SeedSequence), so the output is reproducible.
    confidence : float
        Level of the intervals.
    drop_incomplete_inputs : bool
        Keep only the inputs every system has (default: a missing (system, input) cell is an error).
    lower_is_better : sequence of str
        Metrics whose lower scores are better (an error rate): negated first, so that a higher correlation
        means a better metric in every comparison (Williams' test compares signed correlations).
    max_outputs : int
        The most rows (outputs) a table may have, checked before a file is read (default 200,000).

    Returns
    -------
    simdesign.realdata.metric_analysis.MetricAnalysis
        ``correlations`` and ``comparisons`` tables, ``summary()``, ``plot()``, ``save(out_dir)``.

    Raises
    ------
    DataError
        A table or option that cannot be used, naming columns and file lines.

    Examples
    --------
    >>> import simdesign
    >>> result = simdesign.analyse_metrics("examples/metric_scores.csv", resamples=200)   # doctest: +SKIP
    >>> result.correlations                                                              # doctest: +SKIP
    """
    from simdesign.realdata.metric_analysis import analyse_metrics as analyse

    return analyse(table, metrics=metrics, human=human, levels=levels, methods=methods, resamples=resamples,
                   seed=seed, confidence=confidence, drop_incomplete_inputs=drop_incomplete_inputs,
                   lower_is_better=lower_is_better, max_outputs=max_outputs)
