"""``simdesign metric-validation CONFIG`` (deprecated: ``simdesign run CONFIG``): validate an automatic metric
against simulated human judgements; ``run`` calls :func:`cmd_metric_validation` for such configs.
"""
from __future__ import annotations

import time

import pandas as pd

from simdesign.cli.study_options import (add_study_arguments, register_report, run_and_report, warn_if_deprecated,
                                         write_study_figures)


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
    """A metric validation's report: trials.csv, summary.csv, the coverage figure, the summary printed."""
    from simdesign.studies.metrics.metric_validation import plot_coverage

    config, rows, out_dir = result.config, result.rows, result.out_dir
    summary = result.summary()
    rows.to_csv(out_dir / "trials.csv", index=False)
    summary.to_csv(out_dir / "summary.csv", index=False)
    paths = [out_dir / "trials.csv", out_dir / "summary.csv"]
    paths += write_study_figures(args, out_dir, config.name, summary,
                                 lambda base: [plot_coverage(summary, config, base)])
    print(f"wrote {', '.join(str(p) for p in paths)} in {time.perf_counter() - started:.0f} s")
    if not args.quiet:
        with pd.option_context("display.width", 180, "display.max_rows", 500):
            print(summary.drop(columns=["note"]).to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    return 0


register_report("metric-validation", report_metric_validation)
