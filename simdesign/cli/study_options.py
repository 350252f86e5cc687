"""The arguments and checks the study commands share: ``run`` for panel studies, sweeps and metric validation,
and their deprecated commands ``panels``, ``sweep`` and ``metric-validation``.

Each of them reads one YAML config, writes a results directory and optionally a figure with its table;
bad arguments raise ConfigError before any work (exit code 2 in :func:`simdesign.cli.main`).
"""
from __future__ import annotations

import sys
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


def write_study_figures(args, out_dir: Path, name: str, summary, draw) -> list[Path]:
    """Draw the figure into the results directory and, with ``--figure``, also there with the summary beside it.

    Parameters
    ----------
    args : argparse.Namespace
        With ``figure`` (a path without suffix, or None).
    out_dir : Path
    name : str
        The figure's name in the results directory.
    summary : pandas.DataFrame
        Written as ``FIGURE.csv`` beside the ``--figure`` copy.
    draw : callable
        ``draw(base)`` draws the figure as ``base.png`` and returns the written paths.

    Returns
    -------
    list of Path
        Every file written.
    """
    paths = list(draw(out_dir / str(name)))
    if args.figure:
        base = Path(args.figure)
        paths += draw(base)
        summary.to_csv(base.with_suffix(".csv"), index=False)
        paths.append(base.with_suffix(".csv"))
    return paths


def warn_if_deprecated(args, command: str) -> None:
    """The deprecation note of the old study commands (kept one release): ``run`` runs every study kind."""
    if getattr(args, "command", None) == command:
        print(f"warning: `simdesign {command}` is deprecated and will be removed in the next release; use "
              f"`simdesign run {args.config}` (it runs every study kind)", file=sys.stderr)


def study_backend(args):
    """Where a study's chunks are computed: ``run``'s --backend options, or loky with --jobs for the old commands."""
    from simdesign.runner.backends import DEFAULT_RETRIES, BackendSpec

    return BackendSpec(getattr(args, "backend", "loky"), args.jobs, getattr(args, "scheduler", None),
                       getattr(args, "workers", None), getattr(args, "retries", DEFAULT_RETRIES))
