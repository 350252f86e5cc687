"""The built-in study kinds, and which kind a config asks for.

``simdesign run CONFIG`` and ``simdesign.simulate`` run every kind registered with
:func:`simdesign.runner.study.register_study_kind` (issue 27). A config may say ``study: <kind>``;
without it the kind is recognised from keys that belong to one kind only (``panels``, ``sweep``, a
metric's ``population``/``metric``, or a plug-in kind's own keys), and a config with none of them is a
rate study (type I error, power, reliability; with ``replication:``, a replication study through the
same engine).

The built-in kinds are registered here: ``rates`` (:mod:`simdesign.studies.rates.engine`), ``panels``
(:mod:`simdesign.studies.panels.panel_study`), ``metric-validation``
(:mod:`simdesign.studies.metrics.metric_validation`), ``tac``, ``crowd`` and ``judge``; each runs through the
runner's one loop and the one store class. A ``sweep`` (:mod:`simdesign.studies.sweep`) is a driver over them,
not a kind: :data:`DRIVERS`, found by :func:`kind_or_driver`.
"""
from __future__ import annotations

from simdesign.core.errors import ConfigError
from simdesign.runner.study import REGISTERED, register_study_kind
from simdesign.studies.metrics.metric_validation import MetricValidation
from simdesign.studies.panels.panel_study import PANELS
from simdesign.studies.rates.engine import RATES
from simdesign.studies.sweep import SweepDriver

# kinds the rate engine runs from a SimulationConfig, with the keys that tell them
RATE_STUDY = "rates"
ENGINE_KINDS = (RATE_STUDY, "replication")
ENGINE_KEYS = {"rates": (), "replication": ("replication",)}


from simdesign.studies.tac.tac_study import TacStudy  # noqa: E402 -- the TAC-sized study (issue 31), a generic kind

for _kind in (RATES, PANELS, MetricValidation(), TacStudy()):
    register_study_kind(_kind)

from simdesign.studies.crowd import crowd_study  # noqa: E402,F401 -- registers 'crowd' (worker-level crowd studies)
from simdesign.studies.judge import judge_study  # noqa: E402,F401 -- registers 'judge' (LLM judge plus humans, issue 43)


def known_kinds() -> list[str]:
    """Every value a config's ``study`` field may take (the kinds and the drivers over them)."""
    return list(ENGINE_KINDS) + [name for name in REGISTERED if name not in ENGINE_KINDS] + list(DRIVERS)


def kind_or_driver(name: str):
    """The registered study kind ``name`` (``replication``: the rates kind), or the driver ``name`` (a sweep)."""
    if name in DRIVERS:
        return DRIVERS[name]
    return REGISTERED[RATE_STUDY if name in ENGINE_KINDS else name]


def _kind_keys() -> dict[str, tuple]:
    return {**ENGINE_KEYS, **{name: kind.keys for name, kind in REGISTERED.items()},
            **{name: driver.keys for name, driver in DRIVERS.items()}}


def _recognised_keys(kind: str, mapping: dict) -> list[str]:
    """The keys of ``mapping`` that belong to ``kind`` only (a registered kind may tell by a key's value)."""
    if kind in REGISTERED or kind in DRIVERS:
        return (REGISTERED.get(kind) or DRIVERS[kind]).recognised_keys(mapping)
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


# Drivers over the study kinds, by the 'study' value that asks for them: they run kinds, and hold no trials.
DRIVERS = {SweepDriver.name: SweepDriver(recognise=study_kind)}
