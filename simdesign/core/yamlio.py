"""Reading YAML: one loader for every config, model and design file simdesign reads.

PyYAML's safe loader keeps the last of two equal keys in a mapping without a word, so
``effect: zero`` followed by ``effect: fitted`` silently turns a type I run into a power run.
:class:`UniqueKeyLoader` refuses such a mapping, naming the key and both lines. Files are
decoded as UTF-8 with the first undecodable line named (the CSV readers do the same).
"""
from __future__ import annotations

from pathlib import Path

import yaml

from simdesign.core.checks import missing_file_problem
from simdesign.core.errors import ConfigError


class DuplicateKeyError(yaml.constructor.ConstructorError):
    """A mapping with the same key twice (a :class:`yaml.YAMLError`, so callers' YAML handling catches it)."""


class UniqueKeyLoader(yaml.SafeLoader):
    """:class:`yaml.SafeLoader` that refuses a mapping holding a key twice."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":  # '<<: *anchor' may be overridden on purpose
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.setdefault(key, key_node)
                except TypeError:  # an unhashable key: the base class reports it
                    continue
                if first is not key_node:
                    raise DuplicateKeyError(
                        problem=f"the key {key!r} is given twice (lines {first.start_mark.line + 1} and "
                                f"{key_node.start_mark.line + 1}) in one mapping; YAML would silently keep only "
                                "the last: remove one")
        return super().construct_mapping(node, deep=deep)


def load_yaml(text: str):
    """Parse YAML text with :class:`UniqueKeyLoader` (a duplicated key raises :class:`DuplicateKeyError`).

    Parameters
    ----------
    text : str

    Returns
    -------
    object
        What ``yaml.safe_load`` returns.

    Examples
    --------
    >>> load_yaml("trials: 10")
    {'trials': 10}
    """
    return yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506 (a SafeLoader subclass)


def read_text(path, what: str = "file") -> str:
    """A text file decoded as UTF-8, or a ConfigError naming the file and the first line that is not UTF-8.

    Parameters
    ----------
    path : str or path-like
    what : str
        What the file is, for the message (e.g. ``config``).

    Returns
    -------
    str
    """
    path = Path(path)
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise ConfigError(f"The {what} file {path}: line {line} is not UTF-8 (byte {data[exc.start]:#04x}); "
                          "save it as UTF-8") from None


def read_yaml_file(path, what: str = "file"):
    """Read and parse a YAML file (UTF-8, no duplicated keys); any problem is a ConfigError naming the file.

    Parameters
    ----------
    path : str or path-like
    what : str
        What the file is, for messages (e.g. ``config``, ``model``).

    Returns
    -------
    object
        The parsed document.
    """
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"The {what} file {path} is a directory; give a YAML file")
    problem = missing_file_problem(path, what)
    if problem:  # a missing path, or one that is not a regular file (/dev/null)
        raise ConfigError(problem)
    text = read_text(path, what)
    try:
        return load_yaml(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"Could not parse {path} as YAML: {exc}") from None


def read_config_mapping(path, what: str, overrides: dict | None = None) -> dict:
    """The top-level mapping of a YAML config file with ``overrides`` replacing its keys (what every config
    loader, ``load_<kind>(path, overrides)``, reads), or a ConfigError saying what is wrong.

    Parameters
    ----------
    path : str or path-like
    what : str
        What the file is, for messages (e.g. ``config``, ``sweep config``).
    overrides : dict, optional
        Top-level keys replacing the file's (e.g. ``{'trials': 50}`` from the command line).
    """
    if overrides is not None and not isinstance(overrides, dict):
        raise ConfigError(f"overrides must be a mapping of config keys (e.g. {{'trials': 100}}); got {overrides!r}")
    raw = read_yaml_file(path, what)  # UTF-8, no duplicated key
    if not isinstance(raw, dict):
        raise ConfigError(f"{path} must contain a mapping of {what} keys")
    return {**raw, **(overrides or {})}
