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


def missing_file_problem(path, what: str, form: str = "YAML") -> str | None:
    """Why ``path`` cannot be read as a ``what`` file (None when it is a regular file).

    A path that exists but is not a regular file (``/dev/null``, a pipe, a socket) is said to be one: "not
    found" would send the user looking for a file that is there.

    Examples
    --------
    >>> missing_file_problem("/dev/null", "config")
    'The config file /dev/null is not a regular file (a character device); give a YAML file'
    >>> missing_file_problem("no/such.yaml", "config")
    'Config file not found: no/such.yaml'
    """
    import stat
    from pathlib import Path

    path = Path(path)
    if path.is_file():
        return None
    if not path.exists():
        return f"{what[:1].upper()}{what[1:]} file not found: {path}"
    mode = path.stat().st_mode
    kind = ("a directory" if stat.S_ISDIR(mode) else "a character device" if stat.S_ISCHR(mode) else
            "a block device" if stat.S_ISBLK(mode) else "a named pipe" if stat.S_ISFIFO(mode) else
            "a socket" if stat.S_ISSOCK(mode) else "not a file")
    return f"The {what} file {path} is not a regular file ({kind}); give a {form} file"
