"""Exceptions raised at simdesign's boundaries."""
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


class MissingBackendError(RuntimeError):
    """An analysis needs software that is not installed (for example R)."""
