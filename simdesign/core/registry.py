"""What every registry of simdesign (annotation methods, design kinds, estimands, tests, study kinds) shares:
when registering a name again is the same entry, and the one error a clash raises.

A notebook that reloads a plug-in module defines its classes and functions anew: the entry it registers again
is another object of the same definition, and must not be refused as a clash (issue 40). Another entry under
a taken name is refused with :class:`~simdesign.core.errors.ConfigError` (a ValueError) in every registry.
"""
from __future__ import annotations

import dataclasses

from simdesign.core.errors import ConfigError


def _definition(value):
    """A value as a reload leaves it: a function or class by where it is defined, anything else as it is."""
    if callable(value) and hasattr(value, "__qualname__"):
        return ("defined", getattr(value, "__module__", None), value.__qualname__)
    return value


def _origin(entry):
    """What identifies an entry's definition across a module reload."""
    if isinstance(entry, type):
        return ("class", entry.__module__, entry.__qualname__)
    if callable(entry) and hasattr(entry, "__qualname__"):  # a function (a method's step)
        return _definition(entry)
    if dataclasses.is_dataclass(entry):  # a record (a test's AnalysisInfo, an Estimand): every field, functions
        # by where they are defined, so the same record again is the same and one with another option is not
        return ("record", type(entry).__qualname__,
                tuple((f.name, _definition(getattr(entry, f.name))) for f in dataclasses.fields(entry)))
    return ("instance", type(entry).__module__, type(entry).__qualname__)  # a subclass instance (method, kind)


def same_entry(old, new) -> bool:
    """Whether registering ``new`` under ``old``'s name registers the same entry again (harmless)."""
    if old is new:
        return True
    try:
        return _origin(old) == _origin(new)
    except Exception:  # noqa: BLE001 - fields that cannot be compared are not the same entry
        return False


def refuse_clash(registry: str, name: str, old) -> ConfigError:
    """The error of another entry under a taken name."""
    shown = old.__name__ if isinstance(old, type) else type(old).__name__
    return ConfigError(f"The {registry} {name!r} is registered already (by {shown}); unregister it first or "
                       "choose another name")
