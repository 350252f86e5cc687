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


class ConfigError(ValueError):
    """Invalid user input (config, design, model file), with every problem found.

    Parameters
    ----------
    messages : str or list of str
        One message per problem, each naming the field and what is allowed.
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
    """An input table (judgements, ranks, annotation times) that cannot be used, naming the column or line."""


class StoreError(ConfigError):
    """A results directory that cannot be used: no manifest, trials of another config, or corrupt files."""


class MissingBackendError(RuntimeError):
    """An analysis needs software that is not installed (for example R)."""
