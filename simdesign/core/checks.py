"""Type checks for values read from configs and options, shared by every boundary that validates input.

YAML and JSON give ``True``/``False`` for yes/no, and ``bool`` is a subclass of ``int`` in Python, so
"is this a count" must rule out booleans explicitly; numpy scalars (from arrays) count as numbers.
The callers word their own messages (naming the field and what is allowed).
"""
from __future__ import annotations

import numbers


def is_integer(value, minimum: int | None = None) -> bool:
    """Whether ``value`` is an integer (not a bool), at least ``minimum`` if given."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        return False
    return minimum is None or value >= minimum


def is_number(value) -> bool:
    """Whether ``value`` is a real number (int or float, numpy's included; not a bool). NaN and inf count."""
    return not isinstance(value, bool) and isinstance(value, numbers.Real)
