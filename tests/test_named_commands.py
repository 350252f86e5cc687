"""Every ``simdesign COMMAND`` the docs, the README and the package's messages name exists (issue 39).

``simdesign fit-ranks`` was named by docs/how-to/python-api.md and by the error fit_model raises on a Rank
table, but the command is ``simdesign fit`` (it hands a Rank table to simdesign/cli/fit_ranks.py).
"""
import argparse
import re
import shlex
from pathlib import Path

import pandas as pd
import pytest

import simdesign
from simdesign.cli.main import build_parser
from simdesign.core.errors import DataError

ROOT = Path(__file__).resolve().parents[1]
# `simdesign COMMAND` in backticks (pages, docstrings), or followed by an argument (messages in the code)
NAMED = re.compile(r"`(?:\.venv/bin/)?simdesign ([a-z][a-z_-]*)|simdesign ([a-z][a-z_-]*) (?:[A-Z]{2,}|--)")
TYPO_EXAMPLES = {"rn"}  # the suggestion for an unknown command is shown with a typo on purpose


def commands() -> set[str]:
    parser = build_parser()
    return set(next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices)


def test_every_command_named_in_the_docs_and_the_code_exists():
    files = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(ROOT / "simdesign").rglob("*.py")]
    named = {}
    for path in files:
        for match in NAMED.finditer(path.read_text()):
            named.setdefault(match.group(1) or match.group(2), set()).add(str(path.relative_to(ROOT)))
    unknown = {name: sorted(paths) for name, paths in named.items()
               if name not in commands() and name not in TYPO_EXAMPLES}
    assert not unknown, unknown


def test_the_rank_table_error_names_commands_that_parse():
    frame = pd.DataFrame({"annotator": ["a"] * 5, "document": ["d"] * 5, "system": list("ABCDE"),
                          "rank": [1, 2, 3, 4, 5]})
    with pytest.raises(DataError) as error:
        simdesign.fit_model(frame)
    named = re.findall(r"(simdesign [a-z-]+(?: [A-Z][A-Za-z.]*| --[a-z-]+)*) \(", str(error.value))
    assert len(named) == 2, str(error.value)
    parser = build_parser()
    for command in named:
        parser.parse_args(shlex.split(command)[1:])  # exits (SystemExit) on an unknown command or option
