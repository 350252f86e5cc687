"""The built-in study kinds, and which kind a config asks for.

``simdesign run CONFIG`` and ``simdesign.simulate`` run every kind registered with
:func:`simdesign.runner.study.register_study_kind` (issue 27). A config may say ``study: <kind>``;
without it the kind is recognised from keys that belong to one kind only (``panels``, ``sweep``, a
metric's ``population``/``metric``, or a plug-in kind's own keys), and a config with none of them is a
rate study (type I error, power, reliability; with ``replication:``, a replication study through the
same engine).

The built-in kinds other than rates are registered here as adapters of their modules (each runs
through the runner's loop and backends with its own store): ``panels``
(:mod:`simdesign.simulation.panel_study`), ``metric-validation``
(:mod:`simdesign.simulation.metric_validation`) and ``sweep`` (:mod:`simdesign.simulation.sweep`).
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from simdesign.core.errors import ConfigError
from simdesign.runner.study import REGISTERED, StudyKind, register_study_kind

# kinds the rate engine runs from a SimulationConfig, with the keys that tell them
ENGINE_KINDS = ("rates", "replication")
ENGINE_KEYS = {"rates": (), "replication": ("replication",)}


class PanelStudies(StudyKind):
    """Panel studies: k crowd workers against an expert panel (:mod:`simdesign.simulation.panel_study`)."""

    name, keys = "panels", ("panels",)

    def parse(self, mapping, base_dir=None):
        from simdesign.simulation.panel_study import parse_panel_study

        return parse_panel_study(mapping, base_dir=base_dir)

    def with_trials(self, config, trials):
        from simdesign.simulation.panel_study import parse_panel_study

        return parse_panel_study({**config.raw, "trials": trials})

    def run(self, config, out_dir, backend, progress):
        from simdesign.simulation.panel_study import run_panel_study

        return run_panel_study(config, out_dir, progress=progress, backend=backend)

    def stored_rows(self, config, out_dir):
        from simdesign.simulation.panel_study import stored_trials

        return stored_trials(config, out_dir)

    def summarise(self, config, rows):
        from simdesign.simulation.panel_summary import summarise_panel_study

        return summarise_panel_study(config, rows)

    def plot(self, config, summary, out_base):
        from simdesign.simulation.panel_plots import draw_panel_study

        return draw_panel_study(config, summary, Path(out_base))


class MetricValidation(StudyKind):
    """Validating an automatic metric (:mod:`simdesign.simulation.metric_validation`)."""

    name, keys = "metric-validation", ("population", "metric", "second_metric")

    def parse(self, mapping, base_dir=None):
        from simdesign.simulation.metric_validation import parse_metric_config

        return parse_metric_config(mapping, base_dir)

    def run(self, config, out_dir, backend, progress):
        from simdesign.simulation.metric_validation import run_metric_validation

        return run_metric_validation(config, out_dir, progress=progress, backend=backend)

    def stored_rows(self, config, out_dir):
        from simdesign.simulation.metric_store import MetricValidationStore
        from simdesign.simulation.metric_validation import cell_label

        return MetricValidationStore(out_dir).read([cell_label(s, d) for s, d in config.cells()], config.trials)

    def summarise(self, config, rows):
        from simdesign.simulation.metric_validation import summarise_metric_validation

        return summarise_metric_validation(rows, config)

    def plot(self, config, summary, out_base):
        from simdesign.simulation.metric_validation import plot_coverage

        return [plot_coverage(summary, config, Path(out_base))]


class Sweeps(StudyKind):
    """A rate study at every combination of a few settings (:mod:`simdesign.simulation.sweep`); its rows are
    the stacked summaries of the runs."""

    name, keys = "sweep", ("sweep",)

    def parse(self, mapping, base_dir=None):
        from simdesign.simulation.sweep import parse_sweep

        return parse_sweep(mapping, base_dir)

    def config_name(self, config):
        return str(config[0].get("name"))

    def with_trials(self, config, trials):
        from simdesign.simulation.sweep import parse_sweep

        return parse_sweep({**config[0], "trials": trials})

    def run(self, config, out_dir, backend, progress):
        from simdesign.simulation.sweep import run_parsed_sweep

        return run_parsed_sweep(config[0], config[1], out_dir, progress=progress, backend=backend)

    def summarise(self, config, rows):
        return rows

    def plot(self, config, summary, out_base):
        from simdesign.simulation.sweep import draw_sweep

        return draw_sweep(config[0], summary, Path(out_base))


for _kind in (PanelStudies(), MetricValidation(), Sweeps()):
    register_study_kind(_kind)

from simdesign.simulation import crowd_study  # noqa: E402,F401 -- registers 'crowd' (worker-level crowd studies)


def known_kinds() -> list[str]:
    """Every value a config's ``study`` field may take."""
    return list(ENGINE_KINDS) + [name for name in REGISTERED if name not in ENGINE_KINDS]


def _kind_keys() -> dict[str, tuple]:
    return {**ENGINE_KEYS, **{name: kind.keys for name, kind in REGISTERED.items()}}


def study_kind(mapping: dict) -> str:
    """The study kind of a config mapping (see the module docstring).

    Raises
    ------
    ConfigError
        An unknown ``study`` value, one that contradicts the config's keys, or keys of two kinds.
    """
    declared = mapping.get("study")
    keys = _kind_keys()
    recognised = [kind for kind, own in keys.items() if own and set(own) & set(mapping)]
    if "replication" in recognised and len(recognised) > 1:
        recognised.remove("replication")  # e.g. a sweep of a replication config
    if declared is not None:
        if declared not in keys:
            raise ConfigError(f"The 'study' field must be one of {known_kinds()}; got {declared!r}")
        others = [kind for kind in recognised if kind != declared and not
                  (declared == "rates" and kind == "replication")]
        if others:
            raise ConfigError(f"The config says 'study: {declared}' but has keys of a {others[0]} study "
                              f"({sorted(set(keys[others[0]]) & set(mapping))}); remove them or change 'study'")
        return declared
    if len(recognised) > 1:
        raise ConfigError(f"The config has keys of several study kinds ({', '.join(recognised)}); say which it is "
                          f"with a 'study' field, one of {known_kinds()}")
    return recognised[0] if recognised else "rates"
