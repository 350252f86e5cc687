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


from simdesign.core.errors import ConfigError
from simdesign.runner.study import REGISTERED, StudyKind, register_study_kind
from simdesign.studies.example_configs import read_examples
from simdesign.studies.metrics.metric_validation import MetricValidation
from simdesign.studies.panels.panel_study import PANELS
from simdesign.studies.rates.engine import RATES

# kinds the rate engine runs from a SimulationConfig, with the keys that tell them
RATE_STUDY = "rates"
ENGINE_KINDS = (RATE_STUDY, "replication")
ENGINE_KEYS = {"rates": (), "replication": ("replication",)}


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

for _kind in (RATES, PANELS, MetricValidation(), Sweeps(), TacStudy()):
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
