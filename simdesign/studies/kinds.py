"""The built-in study kinds, and which kind a config asks for.

``simdesign run CONFIG`` and ``simdesign.simulate`` run every kind registered with
:func:`simdesign.runner.study.register_study_kind` (issue 27). A config may say ``study: <kind>``;
without it the kind is recognised from keys that belong to one kind only (``panels``, ``sweep``, a
metric's ``population``/``metric``, or a plug-in kind's own keys), and a config with none of them is a
rate study (type I error, power, reliability; with ``replication:``, a replication study through the
same engine).

The built-in kinds other than rates are registered here as adapters of their modules (each runs
through the runner's loop and backends, in the one store class with its own format): ``panels``
(:mod:`simdesign.studies.panels.panel_study`), ``metric-validation``
(:mod:`simdesign.studies.metrics.metric_validation`) and ``sweep`` (:mod:`simdesign.studies.sweep`).
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from simdesign.core.errors import ConfigError
from simdesign.runner.study import REGISTERED, StudyKind, register_study_kind
from simdesign.studies.example_configs import read_examples

# kinds the rate engine runs from a SimulationConfig, with the keys that tell them
RATE_STUDY = "rates"
ENGINE_KINDS = (RATE_STUDY, "replication")
ENGINE_KEYS = {"rates": (), "replication": ("replication",)}


class RateStudies(StudyKind):
    """Rate studies (type I error, power, reliability; with ``replication:``, replications) through the engine
    (:mod:`simdesign.studies.rates.engine`). ``simdesign run`` and ``simdesign.simulate`` run them by their own
    path (``ENGINE_KINDS``); the planner runs its candidate designs through this kind's interface."""

    name, keys = "rates", ()
    # a sweep of rate studies is the engine's own loop of runs (simulation/sweep.py), not a sweep of a kind
    sweeps_through_engine = True

    def examples(self):
        return read_examples("rates", "rates-pairwise", "replication")

    def parse(self, mapping, base_dir=None):
        from simdesign.studies.rates.config import parse_config

        return parse_config(mapping, base_dir)

    def cells(self, config):
        return [design.label for design in config.designs]

    def fingerprint(self, config):
        return config.results_fingerprint()

    def to_mapping(self, config):
        return config.to_mapping()

    def run(self, config, out_dir, backend, progress):
        from simdesign.studies.rates.engine import run_simulation

        run_simulation(config, out_dir, config.to_mapping(), progress=progress, backend=backend)
        return self.stored_rows(config, out_dir)

    def stored_rows(self, config, out_dir):
        from simdesign.studies.replication.replication import replication_work
        from simdesign.studies.rates.store import rate_store

        return rate_store(out_dir).read(
            self.cells(config), config.trials, parts=[spec.label for spec in config.work_specs]
            + [item.label for item in replication_work(config)])

    cell_column = "design"

    def replay(self, config, cell, trial):
        """Every stored row of one trial of one design recomputed from its seeds: the engine's chunk of that one
        trial with all the config's work (tests, requested estimands, replication items), in the stored order."""
        from simdesign.studies.rates.engine import Chunk, simulate_chunk
        from simdesign.studies.rates.store import RATE_CHUNKS
        from simdesign.studies.replication.replication import replication_work

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

    def open_store(self, config, out_dir):
        from simdesign.studies.rates.engine import check_backends
        from simdesign.studies.rates.store import rate_store

        check_backends(config)  # before a store is claimed: a test that needs R says so first
        store = rate_store(out_dir)
        store.prepare(config)
        return store

    def trial_chunks(self, config, store, trials):
        from simdesign.studies.rates.engine import plan_chunks

        return plan_chunks(config, store, trials)

    def compute_chunks(self, config, executor, chunks, save, retries):
        from simdesign.studies.rates.engine import execute_chunks

        execute_chunks(executor, config.model, config.effect, config.seed, chunks, save, retries)


class PanelStudies(StudyKind):
    """Panel studies: k crowd workers against an expert panel (:mod:`simdesign.studies.panels.panel_study`)."""

    name, keys = "panels", ("panels",)

    def examples(self):
        return read_examples("panels")

    def parse(self, mapping, base_dir=None):
        from simdesign.studies.panels.panel_study import parse_panel_study

        return parse_panel_study(mapping, base_dir=base_dir)

    def with_trials(self, config, trials):
        from simdesign.studies.panels.panel_study import parse_panel_study

        return parse_panel_study({**config.raw, "trials": trials})

    def run(self, config, out_dir, backend, progress):
        from simdesign.studies.panels.panel_study import run_panel_study

        return run_panel_study(config, out_dir, progress=progress, backend=backend)

    def stored_rows(self, config, out_dir):
        from simdesign.studies.panels.panel_study import stored_trials

        return stored_trials(config, out_dir)

    cell_column = "setting"

    def replay_cells(self, config):
        return [label for label, _ in config.settings()]

    def replay(self, config, cell, trial):
        from simdesign.studies.panels.panel_study import simulate_trial

        return simulate_trial(config, cell, dict(config.settings())[cell], trial)

    def summarise(self, config, rows):
        from simdesign.studies.panels.panel_summary import summarise_panel_study

        return summarise_panel_study(config, rows)

    def plot(self, config, summary, out_base):
        from simdesign.studies.panels.panel_plots import draw_panel_study

        return draw_panel_study(config, summary, Path(out_base))


class MetricValidation(StudyKind):
    """Validating an automatic metric (:mod:`simdesign.studies.metrics.metric_validation`)."""

    name, keys = "metric-validation", ("population", "metric", "second_metric")

    def examples(self):
        return read_examples("metric-validation")

    def parse(self, mapping, base_dir=None):
        from simdesign.studies.metrics.metric_validation import parse_metric_config

        return parse_metric_config(mapping, base_dir)

    def run(self, config, out_dir, backend, progress):
        from simdesign.studies.metrics.metric_validation import run_metric_validation

        return run_metric_validation(config, out_dir, progress=progress, backend=backend)

    def stored_rows(self, config, out_dir):
        from simdesign.studies.metrics.metric_store import ROW_COLUMNS, metric_store
        from simdesign.studies.metrics.metric_validation import cell_label

        cells = [cell_label(s, d) for s, d in config.cells()]
        return metric_store(out_dir).read(cells, config.trials)[list(ROW_COLUMNS)]

    def replay_cells(self, config):
        from simdesign.studies.metrics.metric_validation import cell_label

        return [cell_label(s, d) for s, d in config.cells()]

    def replay(self, config, cell, trial):
        from simdesign.studies.metrics.metric_store import ROW_COLUMNS
        from simdesign.studies.metrics.metric_validation import one_trial, system_level_targets

        rows = one_trial(config, *self._sizes(config, cell), trial, system_level_targets(config))
        return pd.DataFrame(rows, columns=list(ROW_COLUMNS))

    def stored_trial(self, config, rows, cell, trial):
        systems, documents = self._sizes(config, cell)
        return rows[(rows["systems"] == systems) & (rows["documents"] == documents)
                    & (rows["trial"] == trial)].reset_index(drop=True)

    @staticmethod
    def _sizes(config, cell):
        from simdesign.studies.metrics.metric_validation import cell_label

        return {cell_label(s, d): (s, d) for s, d in config.cells()}[cell]

    def summarise(self, config, rows):
        from simdesign.studies.metrics.metric_validation import summarise_metric_validation

        return summarise_metric_validation(rows, config)

    def plot(self, config, summary, out_base):
        from simdesign.studies.metrics.metric_validation import plot_coverage

        return [plot_coverage(summary, config, Path(out_base))]


class Sweeps(StudyKind):
    """A rate study at every combination of a few settings (:mod:`simdesign.studies.sweep`); its rows are
    the stacked summaries of the runs."""

    name, keys = "sweep", ("sweep",)

    def examples(self):
        return read_examples("sweep")

    def parse(self, mapping, base_dir=None):
        from simdesign.studies.sweep import parse_sweep

        return parse_sweep(mapping, base_dir, recognise=study_kind)

    def config_name(self, config):
        return config.name

    def with_trials(self, config, trials):
        from simdesign.studies.sweep import parse_sweep

        return parse_sweep({**config.raw, "trials": trials}, None, recognise=study_kind)

    def run(self, config, out_dir, backend, progress):
        from simdesign.studies.sweep import run_parsed_sweep

        return run_parsed_sweep(config.raw, config.runs, out_dir, progress=progress, backend=backend)

    def stored_rows(self, config, out_dir):
        from simdesign.studies.sweep import stored_sweep_summary

        return stored_sweep_summary(config.runs, out_dir)

    def summarise(self, config, rows):
        return rows

    def plot(self, config, summary, out_base):
        from simdesign.studies.sweep import draw_kind_sweep, draw_sweep, kind_of_runs

        if kind_of_runs(config.runs) is not None:  # a sweep of another kind: each run's own figure
            return draw_kind_sweep(config.runs, summary, Path(out_base))
        return draw_sweep(config.raw, summary, Path(out_base))


from simdesign.studies.tac.tac_study import TacStudy  # noqa: E402 -- the TAC-sized study (issue 31), a generic kind

for _kind in (RateStudies(), PanelStudies(), MetricValidation(), Sweeps(), TacStudy()):
    register_study_kind(_kind)

from simdesign.studies.crowd import crowd_study  # noqa: E402,F401 -- registers 'crowd' (worker-level crowd studies)
from simdesign.studies.judge import judge_study  # noqa: E402,F401 -- registers 'judge' (LLM judge plus humans, issue 43)


def known_kinds() -> list[str]:
    """Every value a config's ``study`` field may take."""
    return list(ENGINE_KINDS) + [name for name in REGISTERED if name not in ENGINE_KINDS]


def _kind_keys() -> dict[str, tuple]:
    return {**ENGINE_KEYS, **{name: kind.keys for name, kind in REGISTERED.items()}}


def _recognised_keys(kind: str, mapping: dict) -> list[str]:
    """The keys of ``mapping`` that belong to ``kind`` only (a registered kind may tell by a key's value)."""
    if kind in REGISTERED:
        return REGISTERED[kind].recognised_keys(mapping)
    return sorted(set(ENGINE_KEYS.get(kind, ())) & set(mapping))


def study_kind(mapping: dict) -> str:
    """The study kind of a config mapping (see the module docstring).

    Raises
    ------
    ConfigError
        An unknown ``study`` value, one that contradicts the config's keys, or keys of two kinds.
    """
    declared = mapping.get("study")
    keys = _kind_keys()
    recognised = [kind for kind in keys if _recognised_keys(kind, mapping)]
    if "replication" in recognised and len(recognised) > 1:
        recognised.remove("replication")  # e.g. a sweep of a replication config
    if "sweep" in recognised or declared == "sweep":  # a sweep of any kind: its runs are of that kind
        recognised = ["sweep"]
    if declared is not None:
        if declared not in keys:
            raise ConfigError(f"The 'study' field must be one of {known_kinds()}; got {declared!r}")
        others = [kind for kind in recognised if kind != declared and not
                  (declared == "rates" and kind == "replication")]
        if others:
            raise ConfigError(f"The config says 'study: {declared}' but has keys of a {others[0]} study "
                              f"({_recognised_keys(others[0], mapping)}); remove them or change 'study'")
        return declared
    if len(recognised) > 1:
        raise ConfigError(f"The config has keys of several study kinds ({', '.join(recognised)}); say which it is "
                          f"with a 'study' field, one of {known_kinds()}")
    return recognised[0] if recognised else "rates"
