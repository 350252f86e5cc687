"""Sweeps: one simulation config run at every combination of a few top-level settings.

A sweep config is a simulation config (:mod:`simdesign.studies.rates.config`)
with one more key, ``sweep``: a mapping from top-level config keys to lists
of values, e.g.::

    sweep:
      effect: [zero, fitted]
      document_intercept_scale: [0, 1, 2, 3]

Every combination is an ordinary run (same seed, designs and tests; its
results directory ``<out>/<key>=<value>,...``, resumable as any run), and
the summaries are stacked with one column per swept key. Common random
numbers: every run derives its streams from the same root seed and design
labels, so the runs differ only in the swept settings.

A sweep is a driver over study kinds (:class:`SweepDriver`), not a kind: it has no trials, chunks or store of
its own; each run goes through its kind's one loop and store, and the sweep's directory holds only a manifest
naming the sweep's config (so ``simdesign plot DIR`` redraws it).
"""
from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from simdesign.core.errors import ConfigError, StoreError
from simdesign.core.estimands import Estimand, estimand_label, has_nominal_level, headline_estimand, register_estimand
from simdesign.core.seeds import analysis_rng
from simdesign.core.suggest import suggestions
from simdesign.model.common import effect_scale
from simdesign.runner.stores import MANIFEST, claim_store, read_manifest, release_stores_under, write_manifest
from simdesign.studies.rates.config import TOP_LEVEL_KEYS, SimulationConfig, parse_config, read_config_mapping
from simdesign.studies.rates.engine import run_simulation
from simdesign.studies.rates.store import rate_store
from simdesign.runner.study import REGISTERED, study_field_problems
from simdesign.studies.example_configs import read_examples
from simdesign.studies.rates.summary import size_adjusted_power, summarise
from simdesign.stats.montecarlo import default_max_type1, level_verdict

# Keys a sweep may vary: those that change the data or the tests' behaviour, not the run's identity.
SWEEPABLE = ("effect", "document_intercept_scale", "alpha", "art_resamples")
# A sweep of another study kind (panels, metric validation, a plug-in kind) may vary any key of that kind's
# config but these, which make a run what it is (its name and stream) or only cut its work into pieces.
RUN_IDENTITY = ("name", "study", "seed", "trials", "chunk_size", "sweep")


@dataclass(frozen=True)
class KindRun:
    """One combination of a sweep of another study kind: the registered kind and its parsed config."""

    kind: object
    config: object


def swept_kind(raw: dict, recognise=None):
    """The registered StudyKind of a sweep's runs (the kind of the config without its 'sweep'), or None when
    they are rate (or replication) studies, run by the engine.

    ``recognise(mapping) -> kind name`` tells a config's kind (:func:`simdesign.studies.kinds.study_kind`,
    given by the callers that know the kinds, so that this module does not import them); without it every
    sweep is a rate sweep.
    """
    if recognise is None:
        return None
    base = {key: value for key, value in raw.items() if key not in ("sweep", "study")}
    if raw.get("study") not in (None, "sweep"):
        base["study"] = raw["study"]
    kind = REGISTERED.get(recognise(base))  # replication is not a registered kind
    # rate studies are registered (the planner runs them through the kind interface) but swept by the engine
    return None if kind is None or getattr(kind, "sweeps_through_engine", False) else kind


def _repeated_value_problems(sweep: dict) -> list[str]:
    """A value listed twice in one of the sweep's lists: the two runs would be one study (same label, store and
    figure point), which the summary and the figure cannot tell apart."""
    problems = []
    for key, values in sweep.items():
        if not isinstance(values, list):
            continue
        repeated = [value for position, value in enumerate(values) if value in values[:position]]
        if repeated:
            problems.append(f"The 'sweep.{key}' field lists the value {repeated[0]!r} more than once "
                            f"({values!r}); each value of a sweep is one run: list it once")
    return problems


def sweep_runs(raw: dict, kind=None) -> list[tuple[dict, dict]]:
    """(swept values, config mapping) for every combination, in the order of the sweep's lists.

    Raises
    ------
    ConfigError
        If 'sweep' is missing or names a key that cannot be swept, or a list is empty or repeats a value.
    """
    sweep = raw.get("sweep")
    if not isinstance(sweep, dict) or not sweep:
        raise ConfigError(f"A sweep config needs a 'sweep' mapping of keys from {list(SWEEPABLE)} to lists of "
                          f"values; got {sweep!r}")
    problems = [f"The 'sweep.{key}' key cannot be swept; allowed: {list(SWEEPABLE)}"
                for key in sweep if kind is None and key not in SWEEPABLE]
    problems += [f"The 'sweep.{key}' key cannot be swept: it makes a {kind.name} run what it is (its name and "
                 f"random stream) or only cuts its work; a sweep of a {kind.name} study may vary any other key of "
                 "its config" for key in sweep if kind is not None and key in RUN_IDENTITY]
    problems += [f"The 'sweep.{key}' field must be a non-empty list; got {values!r}"
                 for key, values in sweep.items() if not isinstance(values, list) or not values]
    problems += _repeated_value_problems(sweep)
    if problems:
        raise ConfigError(problems)
    problems = study_field_problems(raw, ("sweep",))
    if problems:
        raise ConfigError(problems)
    overridden = sorted(key for key in sweep if key in raw)
    if overridden:
        raise ConfigError(f"The top-level key(s) {overridden} are swept too ('sweep.{overridden[0]}'), so the "
                          "top-level value would be ignored in every run: remove it, or put it in the sweep's list")
    # each run is a study of the swept kind: the sweep's own keys are not its
    base = {key: value for key, value in raw.items() if key not in ("sweep", "study")}
    if kind is not None and raw.get("study") not in (None, "sweep"):
        base["study"] = raw["study"]
    runs = []
    for combination in itertools.product(*sweep.values()):
        values = dict(zip(sweep, combination))
        runs.append((values, {**base, **values}))
    return runs


def run_label(values: dict) -> str:
    """The results subdirectory of one combination, e.g. ``effect=zero,document_intercept_scale=2``."""
    return ",".join(f"{key}={value}" for key, value in values.items())


@dataclass(frozen=True)
class SweepConfig:
    """A sweep: its mapping as read and its runs, each ``(swept values, mapping, config)``; a run's config is a
    SimulationConfig, or for a sweep of another kind a :class:`KindRun`."""

    raw: dict
    runs: list

    @property
    def name(self) -> str:
        return str(self.raw.get("name"))


def load_sweep(path, overrides: dict | None = None, *, recognise=None) -> SweepConfig:
    """Read and validate a sweep config file, ``overrides`` replacing its keys (as every config loader).

    Raises
    ------
    ConfigError
        Every problem of the sweep or of any of its runs.
    """
    return parse_sweep(read_config_mapping(path, "sweep config", overrides), Path(path).parent, recognise=recognise)


def parse_sweep(raw: dict, base_dir: Path | None = None, *, recognise=None) -> SweepConfig:
    """Validate a sweep mapping: itself and (swept values, mapping, config) per run (ConfigError).

    A run's config is a SimulationConfig, or for a sweep of another kind (``recognise``: :func:`swept_kind`)
    a :class:`KindRun` with the kind's parsed config.
    """
    kind = swept_kind(raw, recognise)
    # a rate sweep's keys are checked here; another kind's by that kind's parser, run by run
    unknown = sorted(set(raw) - set(TOP_LEVEL_KEYS) - {"sweep"}) if kind is None else []
    if unknown:
        raise ConfigError(f"Unknown config key(s) {unknown}; allowed: {list(TOP_LEVEL_KEYS) + ['sweep']}"
                          f"{suggestions(unknown, [*TOP_LEVEL_KEYS, 'sweep'])}")
    runs = [(values, mapping, parse_config(mapping, base_dir=base_dir) if kind is None
             else KindRun(kind, kind.parse(mapping, base_dir))) for values, mapping in sweep_runs(raw, kind)]
    return SweepConfig(raw, runs)


def run_sweep(path, out_dir=None, jobs: int = 1, trials: int | None = None,
              progress: bool = False, backend="loky", recognise=None) -> tuple[pd.DataFrame, dict]:
    """Run every combination of a sweep config and stack the summaries.

    Parameters
    ----------
    path : path-like
        The sweep config (YAML).
    out_dir : path-like, optional
        Default ``results/<name>``.
    jobs : int
    trials : int, optional
        Overrides the config's trials.
    progress : bool
    backend : {'loky', 'threading', 'fork', 'dask'} or BackendSpec
        Where every run's chunks are computed; the results do not depend on it.

    Returns
    -------
    summary : pandas.DataFrame
        The runs' summaries with one column per swept key, plus
        ``document_intercept_variance`` (the sampled document intercept
        variance of the model) and ``run_seconds``; where the sweep has a
        null run (``effect: zero``) for an effect run, ``power_size_adjusted``
        rows (:func:`size_adjusted_rows`).
    raw : dict
        The config mapping as read.
    """
    sweep = load_sweep(path, None if trials is None else {"trials": trials}, recognise=recognise)
    return run_parsed_sweep(sweep.raw, sweep.runs, out_dir, jobs, progress, backend), sweep.raw


def run_parsed_sweep(raw: dict, configs: list, out_dir=None, jobs: int = 1, progress: bool = False,
                     backend="loky") -> pd.DataFrame:
    """:func:`run_sweep` of a sweep already read (:func:`parse_sweep`): the stacked summaries."""
    out_dir = Path(out_dir) if out_dir else Path("results") / str(raw.get("name"))
    claim_store(out_dir)  # the whole sweep is one run: a second one into the same --out is refused at once
    try:
        _write_sweep_manifest(raw, configs, out_dir)
        return _run_combinations(configs, out_dir, jobs, progress, backend)
    finally:
        release_stores_under(out_dir)


def _write_sweep_manifest(raw: dict, configs: list, out_dir: Path) -> None:
    """The sweep's own manifest (kind 'sweep', its config), from which ``simdesign plot DIR`` redraws it.

    Each combination's run keeps its own store and manifest below; this one records the sweep (the latest
    run's mapping: its trial count), its model written as the runs resolved it (a preset, an absolute file
    path or inline), so the directory is redrawn from anywhere. A directory holding another kind is refused.
    """
    path = out_dir / MANIFEST
    held = read_manifest(path).get("kind") if path.is_file() else "sweep"
    if held != "sweep":
        raise StoreError(f"{out_dir} holds a {held or 'rates'} study, not a sweep; write the sweep elsewhere with "
                         "--out DIR")
    if configs and isinstance(configs[0][2], SimulationConfig):  # a rate study's model as its runs resolved it
        raw = {**raw, "model": configs[0][2].to_mapping()["model"]}
    write_manifest(path, {"kind": "sweep", "config": raw})


def stored_sweep_summary(configs: list, out_dir) -> pd.DataFrame:
    """The stacked summaries of a sweep's stored runs (:func:`run_parsed_sweep`'s table), simulating nothing.

    For ``simdesign plot`` of a sweep directory; ``run_seconds`` is empty (nothing was run).

    Raises
    ------
    StoreError
        A combination's run is missing or damaged (its directory is named).
    """
    kind = kind_of_runs(configs)
    if kind is not None:
        stored = [(values, run.config, kind.stored_rows(run.config, Path(out_dir) / run_label(values)),
                   float("nan")) for values, _, run in configs]
        return _stacked_kind_summaries(kind, stored)
    runs = [(values, config, rate_store(Path(out_dir) / run_label(values)).read(trials=config.trials),
             float("nan")) for values, _, config in configs]
    return _stacked_summaries(runs)


def kind_of_runs(configs: list):
    """The StudyKind of a sweep's parsed runs (None for rate runs, SimulationConfig objects)."""
    return configs[0][2].kind if configs and isinstance(configs[0][2], KindRun) else None


def _stacked_kind_summaries(kind, runs: list) -> pd.DataFrame:
    """(swept values, config, rows, seconds) of every run of another kind -> its summaries with the swept values."""
    tables = []
    for values, config, rows, seconds in runs:
        table = kind.summarise(config, rows).copy()
        for key, value in values.items():
            if key in table.columns:
                table[key] = value
            else:
                table.insert(0, key, value)
        table["run_seconds"] = seconds
        tables.append(table)
    return pd.concat(tables, ignore_index=True)


def _run_combinations(configs: list, out_dir: Path, jobs: int, progress: bool, backend) -> pd.DataFrame:
    """Every combination's run (each its own store under ``out_dir``), summaries stacked."""
    kind = kind_of_runs(configs)
    if kind is not None:  # another study kind: each run through the kind's own runner and store
        from simdesign.runner.execute import backend_spec

        spec, runs = backend_spec(backend, jobs), []
        for values, _, run in configs:
            started = time.perf_counter()
            rows = kind.run(run.config, out_dir / run_label(values), spec, progress)
            runs.append((values, run.config, rows, time.perf_counter() - started))
        return _stacked_kind_summaries(kind, runs)
    runs = []
    for values, mapping, config in configs:
        started = time.perf_counter()
        store = run_simulation(config, out_dir / run_label(values), mapping, jobs=jobs, progress=progress,
                               backend=backend)
        runs.append((values, config, store.read(trials=config.trials), time.perf_counter() - started))
    return _stacked_summaries(runs)


def _stacked_summaries(runs_with_seconds: list) -> pd.DataFrame:
    """(swept values, config, trial rows, seconds) of every run -> the stacked summaries and size-adjusted rows."""
    tables, runs = [], []
    for values, config, trial_rows, seconds in runs_with_seconds:
        runs.append((values, config, trial_rows))
        table = summarise(config, trial_rows)
        for key, value in values.items():
            if key not in table.columns:  # the summary has 'effect' and 'alpha' already
                table.insert(0, key, value)
        table["document_intercept_variance"] = float(config.model.sampled_document_cov[0, 0])
        table["shared_document_covariance"] = shared_document_covariance(config.model)
        table["run_seconds"] = seconds
        tables.append(table)
    nulls = {_null_key(values): table for (values, config, _), table in zip(runs, tables) if config.is_null}
    for (values, config, _), table in zip(runs, tables):
        if not config.is_null and _null_key(values) in nulls:
            note_level(table, nulls[_null_key(values)], default_max_type1(config.alpha))
    summary = pd.concat(tables, ignore_index=True)
    return pd.concat([summary, size_adjusted_rows(summary, runs)], ignore_index=True)


def _null_key(values: dict) -> str:
    """The label an effect run shares with its null run: the swept values other than the effect."""
    return run_label({key: value for key, value in values.items() if key != "effect"})


LEVEL_MARK = "the test does not hold its level at this design"
LEVEL_NOTE = (LEVEL_MARK + ": type I error {rate:.3f} [{low:.3f}, {high:.3f}] in the sweep's null run, above "
              "{max_type1:g} (1.5 x alpha), so this power is no evidence")


def level_warning(summary: pd.DataFrame) -> str:
    """The warning for the console: the power rows :func:`note_level` marked ('' when none)."""
    if "note" not in summary or "estimand" not in summary:  # a sweep of another study kind: no rates
        return ""
    notes = summary["note"].astype("string").fillna("")
    marked = summary[notes.str.contains(LEVEL_MARK, regex=False)
                     & (summary["estimand"] == headline_estimand(is_null=False))]
    if marked.empty:
        return ""
    lines = sorted({f"  {design} / {test}" for design, test in zip(marked["design"], marked["test"])})
    return ("WARNING: power of tests that do not hold their level (their null run's type I error interval is "
            "above 1.5 x alpha): no evidence, see the note in summary.csv:\n" + "\n".join(lines))


def note_level(effect_table: pd.DataFrame, null_table: pd.DataFrame, max_type1: float) -> None:
    """Say so on the power rows of every (design, test) that its null run shows to reject a true null more
    often than ``max_type1`` (the planner's rule, :func:`simdesign.stats.montecarlo.level_verdict`): a liberal
    test's power is inflated by its wrong size. Undecided tests are left alone (the null run's interval says
    how far they are)."""
    type1 = null_table[null_table["estimand"] == headline_estimand(is_null=True)].set_index(["design", "test"])
    power = effect_table["estimand"] == headline_estimand(is_null=False)
    for index in effect_table.index[power]:
        key = (effect_table.at[index, "design"], effect_table.at[index, "test"])
        if key not in type1.index:
            continue
        row = type1.loc[key]
        if level_verdict(row["ci_low"], row["ci_high"], max_type1) != "fails":
            continue
        note = LEVEL_NOTE.format(rate=row["rate"], low=row["ci_low"], high=row["ci_high"], max_type1=max_type1)
        if effect_table["note"].dtype != object:  # an all-empty note column is read as floats
            effect_table["note"] = effect_table["note"].astype(object)
        before = effect_table.at[index, "note"]
        effect_table.at[index, "note"] = f"{before}; {note}" if isinstance(before, str) and before else note


def size_adjusted_rows(summary: pd.DataFrame, runs: list) -> pd.DataFrame:
    """``power_size_adjusted`` rows: every effect run's tests at the critical values of their null run.

    The null run of an effect run is the sweep's run with ``effect: zero`` and the same other swept values
    (:func:`simdesign.studies.rates.summary.size_adjusted_power`); effect runs without one get no rows.
    Each row copies its ``power`` row's columns, with the rate, interval, MCSE and note replaced.
    """
    null_runs = {_null_key(values): trial_rows for values, config, trial_rows in runs if config.is_null}
    rows = []
    for values, config, trial_rows in runs:
        null_rows = null_runs.get(_null_key(values))
        if config.is_null or null_rows is None:
            continue
        for design in config.designs:
            for spec in config.analyses:
                effect_group = trial_rows[(trial_rows["design"] == design.label) & (trial_rows["test"] == spec.label)]
                null_group = null_rows[(null_rows["design"] == design.label) & (null_rows["test"] == spec.label)]
                power = summary[(summary["design"] == design.label) & (summary["test"] == spec.label)
                                & (summary["estimand"] == headline_estimand(is_null=False))
                                & np.logical_and.reduce([summary[k] == v for k, v in values.items()
                                                         if k != "effect" and k in summary.columns])]
                if effect_group.empty or null_group.empty or len(power) != 1:
                    continue
                # the interval's resamples have a stream of their own per (design, test, run): reproducible
                rng = analysis_rng(config.seed, design.label, 0, f"size-adjusted:{spec.label}:{run_label(values)}")
                adjusted = size_adjusted_power(null_group.sort_values(["trial", "pair"]),
                                               effect_group.sort_values(["trial", "pair"]), config.alpha, rng)
                if adjusted is not None:
                    adjusted.pop("critical_p")
                    rows.append({**power.iloc[0].to_dict(), "estimand": SIZE_ADJUSTED.name, **adjusted})
    return pd.DataFrame(rows, columns=summary.columns)


SIZE_ADJUSTED = register_estimand(Estimand(
    "power_size_adjusted", ("sweep",), "rate", "size-adjusted power\n(at the critical p of its own null run)",
    size_adjusted_rows, "power at the critical p-value that gives the test level alpha in its own null run",
    under="effect"))


AXIS_LABELS = {"shared_document_covariance": "document difficulty shared by the systems\n"
                                             "(mean covariance of their document random parts)",
               "effect_multiple": "effect (multiple of the fitted effects)"}


def shared_document_covariance(model) -> float:
    """Mean covariance, over pairs of systems, of their outputs' document random parts z_s . v_d.

    The part of document difficulty that all systems share, which a paired test cancels: it grows as
    the intercept's variance when the intercept is scaled, but the paper's models have intercepts
    negatively correlated with the slopes, so at scale 1 it is near 0 (coherence: -0.03).
    """
    rows = np.eye(model.n_systems)
    rows[:, 0] = 1.0
    parts = rows @ model.sampled_document_cov @ rows.T
    return float(parts[~np.eye(model.n_systems, dtype=bool)].mean())


LINESTYLES = ("-", "--", ":", "-.")


def plot_sweep(summary: pd.DataFrame, x: str, title: str, out_base: Path,
               estimands=None, alpha: float = 0.05) -> list[Path]:
    """One panel per estimand: the rate of every test against the swept ``x``, with 95% bands.

    ``estimands`` default: the headline rates under the null and an effect, and the size-adjusted power.

    A test's colour is its registry name and its line style its options (the label's brackets), so that
    the thresholds of one test read as one family. Returns the written paths (``out_base.png``).
    """
    from matplotlib.figure import Figure

    from simdesign.studies.rates.plots import save_png

    # rows without a test (a replication's r and matching accuracy) are not rates of a test: not drawn here
    summary = summary[summary["test"].notna() & (summary["test"] != "")]
    # a summary built in memory may hold its rates as objects (rows with missing values): matplotlib needs floats
    summary = summary.assign(**{column: pd.to_numeric(summary[column]) for column in ("rate", "ci_low", "ci_high")})
    if estimands is None:
        estimands = (headline_estimand(is_null=True), headline_estimand(is_null=False), SIZE_ADJUSTED.name)
    present = [e for e in estimands if (summary["estimand"] == e).any()]
    fig = Figure(figsize=(5.2 * len(present), 4.6))
    axes = fig.subplots(1, len(present), squeeze=False)
    labels = list(dict.fromkeys(summary["test"]))
    names = list(dict.fromkeys(label.split("[")[0] for label in labels))
    variants = list(dict.fromkeys(label.partition("[")[2] for label in labels))
    colours = {name: f"C{index}" for index, name in enumerate(names)}
    for axis, estimand in zip(axes[0], present):
        rows = summary[summary["estimand"] == estimand]
        for (design, test), group in rows.groupby(["design", "test"], sort=False):
            group = group.sort_values(x)
            label = test if rows["design"].nunique() == 1 else f"{test}, {design}"
            style = LINESTYLES[variants.index(test.partition("[")[2]) % len(LINESTYLES)]
            line, = axis.plot(group[x], group["rate"], marker="o", markersize=3, linestyle=style,
                              color=colours[test.split("[")[0]], label=label)
            axis.fill_between(group[x], group["ci_low"], group["ci_high"], color=line.get_color(), alpha=0.08)
        if has_nominal_level(estimand):
            axis.axhline(alpha, color="grey", linestyle="--", linewidth=1, label=f"nominal {alpha:g}")
        axis.set_xlabel(AXIS_LABELS.get(x, x.replace("_", " ")))
        axis.set_ylabel(estimand_label(estimand))
        axis.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return [save_png(fig, out_base)]


def draw_kind_sweep(configs: list, summary: pd.DataFrame, out_base: Path) -> list[Path]:
    """The figures of a sweep of another study kind: each run's own figure, ``<out_base>_<run label>``."""
    kind = kind_of_runs(configs)
    paths = []
    for values, _, run in configs:
        part = summary[np.logical_and.reduce([summary[key].astype(str) == str(value)
                                              for key, value in values.items()])]
        # the run's summary with the swept columns beside it (a kind's figure reads the columns it knows)
        paths += kind.plot(run.config, part.reset_index(drop=True), Path(f"{out_base}_{run_label(values)}"))
    return paths


def draw_sweep(raw: dict, summary: pd.DataFrame, out_base: Path) -> list[Path]:
    """The sweep's figure: rates against the first swept key (or the shared document covariance)."""
    # the shared part of document difficulty (what a paired test cancels), not the intercept variance alone:
    # the paper's models have intercepts negatively correlated with the slopes (shared_document_covariance)
    x = "shared_document_covariance" if "document_intercept_scale" in raw["sweep"] else next(iter(raw["sweep"]))
    if x == "effect":
        # the summary labels effects ('x0.5', 'zero', 'fitted'); the axis needs their multiples of the fitted ones
        scales = {}
        for value in raw["sweep"]["effect"]:
            scale = effect_scale(value)
            scales[value if isinstance(value, str) else f"x{value:g}"] = scale
            if scale == 0:
                scales["zero"] = 0.0
        summary = summary.assign(effect_multiple=summary["effect"].map(scales))
        x = "effect_multiple"
    trials = int(summary["trials"].max())
    designs = ", ".join(summary["design"].unique())
    title = (f"{raw['name']}: model {raw['model']}, {designs}; {trials} trials per point "
             f"(95% bands; power at effect {[v for v in raw['sweep'].get('effect', []) if v != 'zero']})")
    return plot_sweep(summary, x, title, out_base, alpha=float(raw.get("alpha", 0.05)))


class SweepDriver:
    """A sweep as ``simdesign run`` and :func:`simdesign.simulate` run it: a driver over the study kinds (see the
    module docstring), answering the calls they make of a kind (parse, load, run, the stored summary, the figure).
    Its "rows" are the stacked summaries of its runs, so its summary is its rows.

    Parameters
    ----------
    recognise : callable
        ``recognise(mapping)`` -> the study kind of a run's mapping (:func:`simdesign.studies.kinds.study_kind`).
    """

    name, keys = "sweep", ("sweep",)

    def __init__(self, recognise):
        self.recognise = recognise

    def examples(self) -> dict:
        return read_examples("sweep")

    def recognised_keys(self, mapping: dict) -> list[str]:
        return sorted(set(self.keys) & set(mapping))

    def parse(self, mapping: dict, base_dir: Path | None = None) -> SweepConfig:
        return parse_sweep(mapping, base_dir, recognise=self.recognise)

    def load(self, path, overrides: dict | None = None) -> SweepConfig:
        return load_sweep(path, overrides, recognise=self.recognise)

    def config_name(self, config: SweepConfig) -> str:
        return config.name

    def with_trials(self, config: SweepConfig, trials: int) -> SweepConfig:
        return parse_sweep({**config.raw, "trials": trials}, None, recognise=self.recognise)

    def run(self, config: SweepConfig, out_dir: Path, backend, progress: bool) -> pd.DataFrame:
        return run_parsed_sweep(config.raw, config.runs, out_dir, progress=progress, backend=backend)

    def stored_rows(self, config: SweepConfig, out_dir: Path) -> pd.DataFrame:
        return stored_sweep_summary(config.runs, out_dir)

    def summarise(self, config: SweepConfig, rows: pd.DataFrame) -> pd.DataFrame:
        return rows

    def plot(self, config: SweepConfig, summary: pd.DataFrame, out_base: Path) -> list[Path]:
        if kind_of_runs(config.runs) is not None:  # a sweep of another kind: each run's own figure
            return draw_kind_sweep(config.runs, summary, Path(out_base))
        return draw_sweep(config.raw, summary, Path(out_base))

    def result_tables(self, config: SweepConfig, rows: pd.DataFrame, out_dir: Path) -> dict:
        return {}
