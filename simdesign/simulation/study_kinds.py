"""Which study kind a config asks for: its ``study:`` field, or the keys only that kind has.

``simdesign run CONFIG`` runs every kind (issue 27). A config may say ``study: <kind>``; without it the
kind is recognised from keys that belong to one kind only (``panels``, ``sweep``, a metric's
``population``/``metric``), and a config with none of them is a rate study (type I error, power,
reliability; with ``replication:``, a replication study through the same engine).
"""
from __future__ import annotations

from simdesign.core.errors import ConfigError

# kind -> keys that only configs of that kind have (rates: the default, recognised by none)
STUDY_KINDS = {
    "rates": (),
    "replication": ("replication",),
    "panels": ("panels",),
    "metric-validation": ("population", "metric", "second_metric"),
    "sweep": ("sweep",),
}
# kinds the rate engine runs from a SimulationConfig
ENGINE_KINDS = ("rates", "replication")


def study_kind(mapping: dict) -> str:
    """The study kind of a config mapping (see the module docstring).

    Raises
    ------
    ConfigError
        An unknown ``study`` value, one that contradicts the config's keys, or keys of two kinds.
    """
    declared = mapping.get("study")
    # a replication config is a rate config with one more key: it takes precedence over 'rates' only
    recognised = [kind for kind, keys in STUDY_KINDS.items() if keys and set(keys) & set(mapping)]
    if "sweep" in recognised and "replication" in recognised:
        recognised.remove("replication")  # a sweep may sweep a replication config
    if declared is not None:
        if declared not in STUDY_KINDS:
            raise ConfigError(f"The 'study' field must be one of {list(STUDY_KINDS)}; got {declared!r}")
        others = [kind for kind in recognised if kind != declared and not
                  (declared == "rates" and kind == "replication")]
        if others:
            raise ConfigError(f"The config says 'study: {declared}' but has keys of a {others[0]} study "
                              f"({sorted(set(STUDY_KINDS[others[0]]) & set(mapping))}); remove them or change 'study'")
        return declared
    if len(recognised) > 1:
        raise ConfigError(f"The config has keys of several study kinds ({', '.join(recognised)}); say which it is "
                          f"with a 'study' field, one of {list(STUDY_KINDS)}")
    return recognised[0] if recognised else "rates"


def without_study_field(mapping: dict) -> dict:
    """The mapping without ``study`` (each kind's own validator knows only its own keys)."""
    return {key: value for key, value in mapping.items() if key != "study"}


def study_field_problems(mapping: dict, kinds: tuple) -> list[str]:
    """Problems of a config's ``study`` field for a validator of ``kinds`` (none when absent or one of them)."""
    declared = mapping.get("study")
    if declared is None or declared in kinds:
        return []
    return [f"The 'study' field of this config must be {' or '.join(repr(k) for k in kinds)}; got {declared!r} "
            f"(`simdesign run CONFIG` runs every kind: {list(STUDY_KINDS)})"]
