"""``simdesign run CONFIG``: simulate a config of any study kind, write its summary and figure."""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from simdesign.cli import metric_validation, panels, sweep  # noqa: F401 -- register their kinds' reports
from simdesign.cli.options import backend_options
from simdesign.cli.study_options import register_report, run_and_report
from simdesign.core.estimands import estimands_of
from simdesign.outputs import failure_report, write_outputs
from simdesign.studies.kinds import RATE_STUDY
from simdesign.studies.rates.config import SimulationConfig


def print_failures(summary: pd.DataFrame) -> None:
    """The failure warning on stderr; exit with an error if some design x test failed in every trial."""
    warning, error = failure_report(summary)
    if warning:
        print(warning, file=sys.stderr)
    if error:
        raise SystemExit(error)


def write_and_report(config: SimulationConfig, summary: pd.DataFrame, out_dir: Path,
                     figure_base: Path | None = None) -> None:
    paths = write_outputs(config, summary, out_dir, figure_base)
    print(f"wrote {paths[0]} and {', '.join(str(p) for p in paths[1:])}")
    print_failures(summary)


def cmd_run(args) -> int:
    """``simdesign run CONFIG``: every study kind one way (:func:`simdesign.cli.study_options.run_and_report`):
    read by its kind, run by :func:`simdesign.api.run_study` as :func:`simdesign.simulate` runs it, then the
    kind's report (rates: :func:`report_rates`)."""
    return run_and_report(args)


def report_rates(args, result, started: float) -> int:
    """A rate (or replication) study's report: summary, figure and the table of headline rates."""
    config, out_dir = result.config, result.out_dir
    summary = result.summary()
    write_and_report(config, summary, out_dir)
    if args.figure:
        result.plot(args.figure)
    if not args.quiet:
        # the rates a valid test keeps at alpha, the headline power, the requested values and a replication's own
        shown = [info.name for info in estimands_of("rates") if info.nominal_level or "effect_rate" in info.roles]
        if config.replication:
            shown += [info.name for info in estimands_of("replication") if "rates" not in info.study_kinds
                      and info.unit == "value"]
        show = summary[summary["estimand"].isin([*shown, *config.estimands])]
        with pd.option_context("display.width", 160, "display.max_rows", 200):
            extra = [column for column in ("method", "criterion") if column in show]
            print(show[["design", "test", *extra, "estimand", "rate", "ci_low",
                        "ci_high", "mcse", "n_failed"]]
                  .to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    return 0


register_report(RATE_STUDY, report_rates)


def add_parser(sub) -> None:
    """Add the command to the CLI's subparsers."""
    run = sub.add_parser("run", help="simulate a config of any study kind (rates, replication, panels, "
                                     "metric-validation, "
                                     "sweep: its 'study' field or its keys say which; resumes stored trials) and "
                                     "write summary and figure")
    run.add_argument("config")
    run.add_argument("--out", help="results directory (default results/<config name>)")
    run.add_argument("--jobs", type=int, default=-1, help="parallel workers (default: all cores)")
    run.add_argument("--trials", type=int, help="override the config's trials")
    run.add_argument("--chunk-size", type=int, metavar="N",
                     help="override the config's chunk_size: trials per unit of work (results do not depend on it)")
    backend_options(run)
    run.add_argument("--quiet", action="store_true", help="no progress bar or table")
    run.add_argument("--figure", help="also write the figure and its table as FIGURE.png and FIGURE.csv")
    run.set_defaults(func=cmd_run)
