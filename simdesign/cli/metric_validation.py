"""``simdesign metric-validation CONFIG`` (deprecated: ``simdesign run CONFIG``): validate an automatic metric
against simulated human judgements; ``run`` calls :func:`cmd_metric_validation` for such configs.
"""
from __future__ import annotations

import time

import pandas as pd

from simdesign.cli.study_options import (add_study_arguments, register_report, run_and_report, save_and_copy,
                                         warn_if_deprecated)


def add_parser(subparsers) -> None:
    """Add the ``metric-validation`` subcommand (deprecated: ``simdesign run CONFIG``) to the CLI's subparsers."""
    metric = subparsers.add_parser(
        "metric-validation", help="deprecated, use `simdesign run CONFIG`: validate an automatic metric against simulated human judgements: correlations, "
                                  "bootstrap interval coverage (systems, inputs, both), permutation test power")
    add_study_arguments(metric, figure_help="also write the coverage figure and its table as FIGURE.png and FIGURE.csv",
                        quiet_help="no progress bar or table")
    metric.set_defaults(func=cmd_metric_validation)


def cmd_metric_validation(args) -> int:
    """``simdesign metric-validation CONFIG`` (deprecated: ``simdesign run CONFIG``, the same path)."""
    warn_if_deprecated(args, "metric-validation")
    return run_and_report(args, "metric-validation")


def report_metric_validation(args, result, started: float) -> int:
    """A metric validation's report: its result saved (summary.csv, trials.csv, the coverage figure), the
    summary printed."""
    summary, paths = save_and_copy(args, result)
    print(f"wrote {', '.join(str(p) for p in paths)} in {time.perf_counter() - started:.0f} s")
    if not args.quiet:
        with pd.option_context("display.width", 180, "display.max_rows", 500):
            print(summary.drop(columns=["note"]).to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    return 0


register_report("metric-validation", report_metric_validation)
