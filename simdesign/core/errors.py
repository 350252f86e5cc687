"""Exceptions raised at simdesign's boundaries.

Three kinds of bad input, each with every problem found and messages that
name the field (or line) and what is allowed; the CLI maps all three to exit
code 2:

* :class:`ConfigError`: a config, a design, a model file, a command-line option;
* :class:`DataError`: an input table (judgements, ranks, annotation times);
* :class:`StoreError`: a results directory (missing manifest, incompatible or corrupt trials).

``DataError`` and ``StoreError`` subclass ``ConfigError``: code written when
every input problem was a ConfigError (``except ConfigError``) keeps catching
them, while new code can tell them apart.
"""
from __future__ import annotations

from simdesign.core.suggest import suggestions


class ConfigError(ValueError):
    """Invalid user input (config, design, model file), with every problem found.

    Parameters
    ----------
    messages : str or list of str
        One message per problem, each naming the field and what is allowed.

    Attributes
    ----------
    messages : list of str
        The problems, one per entry (``str(error)`` lists them all).

    Examples
    --------
    >>> try:
    ...     simdesign.parse_config({"name": "x", "model": "coherance"})      # doctest: +SKIP
    ... except simdesign.ConfigError as error:
    ...     print(error.messages)
    """

    def __init__(self, messages):
        if isinstance(messages, str):
            messages = [messages]
        self.messages = list(messages)
        if len(self.messages) == 1:
            text = self.messages[0]
        else:
            text = f"{len(self.messages)} problems:\n" + "\n".join(f"  - {m}" for m in self.messages)
        super().__init__(text)


class DataError(ConfigError):
    """An input table (judgements, ranks, annotation times) that cannot be used, naming the column or line.

    Parameters
    ----------
    messages : str or list of str
        As :class:`ConfigError`, each naming the column or the file's lines.

    Examples
    --------
    >>> simdesign.reliability(5)                                              # doctest: +SKIP
    Traceback (most recent call last):
    DataError: The judgements must be a pandas DataFrame or a CSV file path; got int
    """


class StoreError(ConfigError):
    """A results directory that cannot be used: no manifest, trials of another config, or corrupt files.

    Parameters
    ----------
    messages : str or list of str
        As :class:`ConfigError`, each naming the directory or file and how to recover.

    Examples
    --------
    >>> simdesign.load_results("not-a-results-directory")                     # doctest: +SKIP
    Traceback (most recent call last):
    StoreError: ...
    """


class MissingBackendError(RuntimeError):
    """An analysis needs software that is not installed (for example R)."""


def from_mapping(cls, value, where: str, allowed, errors: list[str], **fixed):
    """Build ``cls(**value, **fixed)`` from a config sub-mapping, or append its problems to ``errors``.

    One rule for every sub-mapping of a config (``panels.<name>``, ``population``, ``metric``...): a
    non-mapping and unknown keys are reported naming the field and the allowed keys, and the
    class's own ConfigError messages are kept.

    Parameters
    ----------
    cls : type
        Raises ConfigError on bad values.
    value : object
        The config's value of the field.
    where : str
        The field's name in messages, e.g. ``panels.crowd``.
    allowed : sequence of str
        The keys the mapping may have.
    errors : list of str
        Problems are appended here.
    **fixed
        Arguments that do not come from the mapping (e.g. a panel's name).

    Returns
    -------
    object or None
        None when there was a problem.
    """
    if not isinstance(value, dict):
        errors.append(f"The '{where}' field must be a mapping with keys from {list(allowed)}; got {value!r}")
        return None
    unknown = sorted(set(value) - set(allowed), key=str)
    if unknown:
        errors.append(f"Unknown key(s) {unknown} in '{where}'; allowed: {list(allowed)}{suggestions(unknown, allowed)}")
        return None
    try:
        return cls(**value, **fixed)
    except ConfigError as exc:
        errors.extend(exc.messages)
        return None
