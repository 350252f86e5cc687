"""The one registry of estimands: every quantity a study kind's summary reports, with what it is.

Each study kind registers its estimands here from the module that computes them (issue 28): the rate
study's rates and per-trial values (:mod:`simdesign.studies.rates.summary`), the replication study's
(:mod:`simdesign.studies.replication.replication`), the panel study's (:mod:`simdesign.studies.panels.panel_summary`)
and metric validation's (:mod:`simdesign.studies.metrics.metric_validation`). Everything else asks the
registry what an estimand is -- its unit, its plot label, the hypothesis it exists under, whether a
config may request it, how one trial's value is computed -- and never compares an estimand's name
(tests/test_registries.py reads the source for such comparisons).

This module imports nothing else of simdesign, so every layer may read it.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Callable

from simdesign.core.errors import ConfigError

UNITS = ("rate", "value", "count")
"""What an estimand's number is: ``rate`` a share of tests or trials in [0, 1] with a Wilson interval;
``value`` a mean of per-trial values with a normal interval; ``count`` a number of items (e.g. a knee's k)."""

ROLES = ("null_rate", "effect_rate", "failure_share")
"""Roles a view asks for instead of a name: the rate shown by default under the null (effect zero) and under
an effect, and the share of tests that failed (what failure reports read). At most one registered estimand
holds each role."""


@dataclass(frozen=True)
class Estimand:
    """A registry entry.

    Attributes
    ----------
    name : str
        The value of the summary's ``estimand`` column.
    study_kinds : tuple of str
        The study kinds whose summaries report it (``rates``, ``replication``, ``panels``, ...).
    unit : {'rate', 'value', 'count'}
        See :data:`UNITS`; a figure draws rates on [0, 1] with Wilson intervals, values with normal ones.
    label : str
        The axis or panel label of figures.
    summarise : callable
        How the owning study kind's summary computes it; the signature is that kind's (a rate study's
        ``compute(rejections, group) -> (Rate, n_failed, note)``, a per-trial value's ``summarise(group)``,
        a replication estimand's ``replication_summary_rows(config, design_rows)``).
    description : str
    under : {'null', 'effect', 'both'}
        The hypothesis under which the summary has it (``effect: zero`` is the null).
    random_effects_only : bool
        Only for analyses that fit random effects (a boundary fit exists only for them).
    per_trial : callable, optional
        For an estimand a config may request in its ``estimands`` list: ``per_trial(judgements, rng) ->
        float``, one trial's value (raise ``simdesign.stats.reliability.UndefinedReliability`` where it is
        undefined for the design; the summary counts such trials).
    nominal_level : bool
        A rate that a valid test keeps at or below alpha (figures draw the alpha line beside it).
    roles : tuple of str
        See :data:`ROLES`.
    """

    name: str
    study_kinds: tuple
    unit: str
    label: str
    summarise: Callable
    description: str = ""
    under: str = "both"
    random_effects_only: bool = False
    per_trial: Callable | None = field(default=None, compare=False)
    nominal_level: bool = False
    roles: tuple = ()

    @property
    def compute(self) -> Callable:
        """The rate study's name for :attr:`summarise` (kept for code written against EstimandInfo)."""
        return self.summarise

    @property
    def requestable(self) -> bool:
        """Whether a config may name it in its ``estimands`` list (it has a per-trial function)."""
        return self.per_trial is not None

    def applies(self, is_null: bool, random_effects: bool) -> bool:
        """Whether a summary has this estimand under that hypothesis for such an analysis."""
        return (self.under in ("both", "null" if is_null else "effect")
                and (random_effects or not self.random_effects_only))

    def problems(self) -> list[str]:
        """What is wrong with the entry (empty for a valid one)."""
        found = []
        if not isinstance(self.name, str) or not self.name:
            found.append(f"an estimand needs a non-empty name; got {self.name!r}")
        if not self.study_kinds or not all(isinstance(kind, str) and kind for kind in self.study_kinds):
            found.append(f"estimand {self.name!r}: 'study_kinds' must name at least one study kind")
        if self.unit not in UNITS:
            found.append(f"estimand {self.name!r}: 'unit' must be one of {list(UNITS)}; got {self.unit!r}")
        if self.under not in ("null", "effect", "both"):
            found.append(f"estimand {self.name!r}: 'under' must be null, effect or both; got {self.under!r}")
        if not isinstance(self.label, str) or not self.label:
            found.append(f"estimand {self.name!r}: needs a plot label")
        if not callable(self.summarise):
            found.append(f"estimand {self.name!r}: 'summarise' must be callable")
        if self.per_trial is not None and not callable(self.per_trial):
            found.append(f"estimand {self.name!r}: 'per_trial' must be callable")
        unknown_roles = sorted(set(self.roles) - set(ROLES))
        if unknown_roles:
            found.append(f"estimand {self.name!r}: unknown role(s) {unknown_roles}; roles: {list(ROLES)}")
        return found


ESTIMANDS: dict[str, Estimand] = {}
"""Registry: estimand name -> :class:`Estimand`, in registration order (the order of a summary's rows)."""

REGISTERED_IN: dict[str, str] = {}
"""Estimand name -> the module that registered it: the one place its name may be written
(tests/test_registries.py reads every other module's source for it)."""


def register_estimand(info: Estimand) -> Estimand:
    """Add ``info`` to :data:`ESTIMANDS`.

    Raises
    ------
    ConfigError
        An invalid entry, another estimand under a taken name, or a role another estimand holds (the same
        estimand again is harmless).
    """
    from simdesign.core.registry import refuse_clash, same_entry

    problems = info.problems()
    if info.name in ESTIMANDS:
        if not same_entry(ESTIMANDS[info.name], info):
            raise refuse_clash("estimand", info.name, ESTIMANDS[info.name])
        unregister_estimand(info.name)  # the same definition again (a reloaded module): registered anew
    for role in info.roles:
        holder = role_holder(role)
        if holder is not None:
            problems.append(f"estimand {info.name!r}: the role {role!r} is held by {holder.name!r} already")
    if problems:
        raise ConfigError(problems)
    ESTIMANDS[info.name] = info
    caller = inspect.currentframe().f_back
    REGISTERED_IN[info.name] = caller.f_globals.get("__name__", "") if caller is not None else ""
    return info


def unregister_estimand(name: str) -> None:
    """Remove an estimand (for tests that register one of their own for a while)."""
    ESTIMANDS.pop(name, None)
    REGISTERED_IN.pop(name, None)


def estimand(name: str) -> Estimand | None:
    """The registry entry of ``name``, or None for a name no study kind registered."""
    return ESTIMANDS.get(name)


def estimands_of(study_kind: str) -> tuple[Estimand, ...]:
    """The entries a study kind's summary may report, in registration order."""
    return tuple(info for info in ESTIMANDS.values() if study_kind in info.study_kinds)


def requestable_estimands() -> tuple[str, ...]:
    """Names a config may list under ``estimands`` (those with a per-trial function)."""
    return tuple(name for name, info in ESTIMANDS.items() if info.requestable)


def role_holder(role: str) -> Estimand | None:
    """The estimand holding ``role`` (:data:`ROLES`), or None."""
    return next((info for info in ESTIMANDS.values() if role in info.roles), None)


def headline_estimand(is_null: bool) -> str:
    """The rate a view shows by default: the ``null_rate`` under effect zero, else the ``effect_rate``."""
    return role_name("null_rate" if is_null else "effect_rate")


def role_name(role: str) -> str:
    """The name of the estimand holding ``role`` (:data:`ROLES`).

    Raises
    ------
    LookupError
        No registered estimand holds it.
    """
    holder = role_holder(role)
    if holder is None:
        raise LookupError(f"no estimand holds the role {role!r}")
    return holder.name


def estimand_label(name: str) -> str:
    """The plot label of ``name`` (the name itself for a summary row no study kind registered)."""
    info = ESTIMANDS.get(name)
    return info.label if info is not None else name


def is_rate(name: str) -> bool:
    """Whether ``name`` is a rate in [0, 1] (unregistered names are taken as rates, the summary's default)."""
    info = ESTIMANDS.get(name)
    return info is None or info.unit == "rate"


def has_nominal_level(name: str) -> bool:
    """Whether a figure of ``name`` draws the alpha line (a rate a valid test keeps at alpha)."""
    info = ESTIMANDS.get(name)
    return info is not None and info.nominal_level
