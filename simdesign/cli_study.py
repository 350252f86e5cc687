"""The arguments and checks the study commands share: ``panels``, ``sweep`` and ``metric-validation``.

Each of them reads one YAML config, writes a results directory and optionally a figure with its table;
bad arguments raise ConfigError before any work (exit code 2 in :func:`simdesign.cli.main`).
"""
from __future__ import annotations

from pathlib import Path

from simdesign.api import check_jobs
from simdesign.core.errors import ConfigError


def add_study_arguments(parser, config_help: str | None = None, out_help: str = "",
                        jobs_help: str = "parallel workers (default 1); results do not depend on it",
                        figure_help: str = "also write the figure and its table as FIGURE.png and FIGURE.csv",
                        quiet_help: str = "no table") -> None:
    """Add ``config``, ``--out``, ``--jobs``, ``--trials``, ``--figure`` and ``--quiet`` to a subcommand."""
    parser.add_argument("config", help=config_help)
    parser.add_argument("--out", help="results directory (default results/<config name>)" + out_help)
    parser.add_argument("--jobs", type=int, default=1, help=jobs_help)
    parser.add_argument("--trials", type=int, help="override the config's trials")
    parser.add_argument("--figure", help=figure_help)
    parser.add_argument("--quiet", action="store_true", help=quiet_help)


def check_study_arguments(args) -> None:
    """Refuse ``--jobs 0`` and ``--trials`` below 1 before anything is read or written.

    Raises
    ------
    ConfigError
        Naming the option and the allowed values.
    """
    check_jobs(args.jobs)
    if args.trials is not None and args.trials < 1:
        raise ConfigError(f"The '--trials' option must be a positive integer; got {args.trials}")


def study_out_dir(args, name: str) -> Path:
    """``--out``, or ``results/<name>``."""
    return Path(args.out) if args.out else Path("results") / str(name)
