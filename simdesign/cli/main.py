"""The command line's entry: one parser from every command module, option checks before any work, exit codes.

Exit codes: 0 done, 1 a command's own negative outcome (e.g. no design recommended), 2 a refused input
(ConfigError: the field, line or option and what is allowed), 128 + SIGTERM or 130 when stopped.
"""
from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading

import importlib

from simdesign.core.errors import ConfigError, MissingBackendError
from simdesign.methods import get_method

from simdesign.cli.fit import fit_option_problems
import simdesign.cli.fit_ranks  # noqa: F401,E402 -- gives Rank its command-line steps (simdesign fit and check call them)
import simdesign.cli.fit_pairs  # noqa: F401,E402 -- gives Pairwise its command-line steps (simdesign fit and check)
from simdesign.cli.out_paths import output_problems, write_failure


DESCRIPTION = "simdesign: simulate human-evaluation studies of NLP systems before paying annotators."
# One module per command (simdesign/cli/<module>.py, each with add_parser(sub)), in the order of --help.
COMMANDS = ("run", "plot", "replay", "plan", "reliability", "fit", "check", "presets", "analyse", "fit_crowd",
            "analyse_metrics", "panels", "sweep", "metric_validation", "draw_design", "explore")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="simdesign", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:  # in the order of `simdesign --help`
        importlib.import_module(f"simdesign.cli.{command}").add_parser(sub)
    return parser


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread so that a run stops exactly as it does on Ctrl-C."""


@contextlib.contextmanager
def sigterm_as_interrupt():
    """Turn SIGTERM into :class:`Terminated` while a command runs.

    Python's default SIGTERM action ends the process at once, without
    unwinding: joblib never aborts its pool, and the loky workers go on
    computing their chunks as orphans for a minute or more. As a
    KeyboardInterrupt, SIGTERM takes Ctrl-C's path instead (the pool is
    killed, a Dask cluster closed, the saved chunks reported).
    """
    if threading.current_thread() is not threading.main_thread():  # signal handlers live in the main thread only
        yield
        return

    def raise_terminated(signum, frame):
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


# Options that only matter beside another: (command, option dest, flag, needs, what it needs in words).
DEPENDENT_OPTIONS = (
    ("fit", "bootstrap", "--bootstrap", lambda a: a.likert_model, "--likert-model (a Rank table's rank_noise)"),
    ("fit", "check_trials", "--check-trials", lambda a: a.check, "--check"),
    ("fit", "check_out", "--check-out", lambda a: a.check, "--check"),
    ("analyse", "structure", "--structure", lambda a: tests_take(a.tests, "structure"),
     "a test that takes a structure (e.g. clmm_native) in --tests"),
    # (--scheduler and --workers without --backend dask are errors: BackendSpec.problems)
)


def tests_take(tests: str, option: str) -> bool:
    """Whether any of the comma-separated registered tests has ``option`` (unknown names: assumed so, the
    command itself names them)."""
    from simdesign.significance import ANALYSES

    names = [name.strip() for name in tests.split(",") if name.strip()]
    return any(name not in ANALYSES or option in ANALYSES[name].options for name in names)


def subcommands(parser: argparse.ArgumentParser) -> dict:
    """Command name -> its own parser (argparse keeps them in its subparsers action)."""
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))  # noqa: SLF001
    return action.choices


def option_problems(args) -> list[str]:
    """Option values refused before any work (each naming the option and what is allowed)."""
    problems = []
    if isinstance(getattr(args, "method", None), str):  # a registered method, or a plug-in's module:attribute
        try:
            get_method(args.method, "--method")
        except ConfigError as exc:
            problems += exc.messages
    if isinstance(getattr(args, "seed", None), int) and args.seed < 0:
        problems.append(f"The '--seed' option must be a non-negative integer; got {args.seed}")
    # every path the command writes, refused before any work when it cannot be written (out_paths.OUTPUTS)
    problems += output_problems(args)
    if args.command == "fit":
        problems += fit_option_problems(args)
    if args.command == "check" and args.trials < 2:
        problems.append(f"The '--trials' option must be at least 2 simulated studies; got {args.trials}")
    if args.command == "plan" and args.show < 0:
        problems.append(f"The '--show' option must be 0 or more rows; got {args.show}")
    return problems


def ignored_option_warnings(args, parser: argparse.ArgumentParser) -> list[str]:
    """Options given (not at their defaults) that the command will not use, so the user is not misled."""
    sub = subcommands(parser)[args.command]
    found = []
    for command, dest, flag, needed, needs in DEPENDENT_OPTIONS:
        if (command in (None, args.command) and hasattr(args, dest)
                and getattr(args, dest) != sub.get_default(dest) and not needed(args)):
            found.append(f"'{flag}' is ignored without {needs}")
    return found


def unknown_command_message(argv: list[str], parser: argparse.ArgumentParser) -> str | None:
    """For ``simdesign rn ...``: the unknown command with the closest ones, before argparse's own message."""
    from simdesign.core.suggest import did_you_mean

    commands = list(subcommands(parser))
    first = next((word for word in argv if not word.startswith("-")), None)
    if first is None or first in commands:
        return None
    return f"unknown command {first!r}{did_you_mean(first, commands)}; commands: {', '.join(commands)}"


def main(argv=None) -> int:
    parser = build_parser()
    words = list(sys.argv[1:] if argv is None else argv)
    unknown = unknown_command_message(words, parser)
    if unknown:
        print(f"error: {unknown}", file=sys.stderr)
        return 2
    args = parser.parse_args(words)
    try:
        with sigterm_as_interrupt():
            problems = option_problems(args)
            if problems:
                raise ConfigError(problems)
            for warning in ignored_option_warnings(args, parser):
                print(f"warning: {warning}", file=sys.stderr)
            return args.func(args)
    except (ConfigError, MissingBackendError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a write that failed after the checks (a disk filling up meanwhile): one line
        message = write_failure(exc, args)
        if message is None:
            raise
        print(f"error: {message}", file=sys.stderr)
        return 2
    except Terminated:
        return 128 + signal.SIGTERM
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
