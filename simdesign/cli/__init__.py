"""The command line: ``simdesign <command>``, one module per command (:data:`simdesign.cli.main.COMMANDS`).

:mod:`simdesign.cli.main` builds the parser from the modules and checks options before any work;
:mod:`simdesign.cli.options` and :mod:`simdesign.cli.study_options` hold the options commands share.
"""
from simdesign.cli.main import build_parser, main  # noqa: F401 -- the entry point (pyproject: simdesign.cli:main)
from simdesign.cli.replay import same_rows  # noqa: F401 -- compared rows of a replay, used by tests and scripts
