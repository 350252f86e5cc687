"""The arguments and checks the study commands share: ``run`` for panel studies, sweeps and metric validation,
and their deprecated commands ``panels``, ``sweep`` and ``metric-validation``.

Each of them reads one YAML config, writes a results directory and optionally a figure with its table;
bad arguments raise ConfigError before any work (exit code 2 in :func:`simdesign.cli.main`).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from simdesign.api import check_jobs, run_study
from simdesign.core.errors import ConfigError

# A study kind's name -> its command-line report ``report(args, result, started) -> exit code`` (the command
# modules register theirs; a kind without one, e.g. a plug-in's, gets :func:`report_study`).
REPORTS: dict = {}


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


def figure_copy(args, summary, draw) -> list[Path]:
    """With ``--figure PATH``: the figure drawn there too, with the summary beside it as ``PATH.csv`` (the results
    directory has both already, from the result's ``save``); the paths written.

    Parameters
    ----------
    args : argparse.Namespace
        With ``figure`` (a path without suffix, or None).
    summary : pandas.DataFrame
    draw : callable
        ``draw(base)`` draws the figure as ``base.png`` and returns the written paths.
    """
    if not args.figure:
        return []
    base = Path(args.figure)
    paths = list(draw(base))
    summary.to_csv(base.with_suffix(".csv"), index=False)
    return paths + [base.with_suffix(".csv")]


def save_and_copy(args, result) -> tuple:
    """``(summary, paths)``: the result saved into its results directory (``result.save``: summary, the kind's
    other tables, the figure) and, with ``--figure``, the figure copied (:func:`figure_copy`)."""
    summary = result.summary()
    paths = list(result.save(result.out_dir).values())
    return summary, paths + figure_copy(args, summary, lambda base: result.kind.plot(result.config, summary, base))


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


def register_report(kind_name: str, report):
    """Give a study kind its command-line report (what ``simdesign run`` writes and prints after the run)."""
    REPORTS[kind_name] = report
    return report


def parsed_study(args, kind_name: str | None = None):
    """``(kind, config)``: the config file's study kind (or ``kind_name``'s: a deprecated command reads only its
    own kind, whose parser refuses another) and its config parsed by the kind with the command's overrides
    (``--trials``, and ``--chunk-size`` for rate studies); refuses bad options first."""
    from simdesign.studies.kinds import RATE_STUDY, kind_or_driver, study_kind
    from simdesign.studies.rates.config import config_warnings, read_config_mapping

    path = Path(args.config)
    # read once: by `run` to tell its kind, else (a deprecated command) after the options are checked
    mapping = None if kind_name else read_config_mapping(path, "config")
    name = kind_name or study_kind(mapping)
    kind = kind_or_driver(name)
    chunk_size = getattr(args, "chunk_size", None)
    overrides = {} if args.trials is None else {"trials": args.trials}
    if kind.name == RATE_STUDY:
        check_jobs(args.jobs)
        overrides.update({} if chunk_size is None else {"chunk_size": chunk_size})
    else:
        check_study_arguments(args)  # --jobs and --trials
        if chunk_size is not None:
            print(f"warning: --chunk-size applies to rate studies; a {name} config is chunked by its own settings "
                  "(ignored)", file=sys.stderr)
    if mapping is None:
        mapping = read_config_mapping(path, f"{kind.name} config")
    config = kind.parse({**mapping, **overrides}, path.parent)  # what kind.load(path, overrides) does
    for warning in (config_warnings(config) if kind.name == RATE_STUDY else ()):
        print(f"warning: {warning}", file=sys.stderr)
    return kind, config


def run_and_report(args, kind_name: str | None = None) -> int:
    """Every study kind one way: its config read by :func:`parsed_study`, run by
    :func:`simdesign.api.run_study` (the path :func:`simdesign.simulate` takes), then reported by the kind's
    report (:data:`REPORTS`). ``kind_name``: the kind a deprecated command reads (default: the config's)."""
    kind, config = parsed_study(args, kind_name)
    started = time.perf_counter()
    out_dir = study_out_dir(args, kind.config_name(config))
    result = run_study(kind, config, out_dir, study_backend(args), not args.quiet)
    return REPORTS.get(kind.name, report_study)(args, result, started)


def report_study(args, result, started: float) -> int:
    """The report of a kind without its own (a plug-in's): summary.csv and the figure into the results, the
    summary printed."""
    summary, paths = save_and_copy(args, result)
    print(f"wrote {', '.join(str(p) for p in paths)}", file=sys.stderr)
    if not args.quiet:
        print(summary.to_string(index=False))
    return 0
