"""``simdesign panels CONFIG``: run a panel study (crowd vs expert annotators) and draw its figure.

Registered in :mod:`simdesign.cli` by :func:`add_parser`; the work is done by
:mod:`simdesign.studies.panels.panel_study` and :mod:`simdesign.studies.panels.panel_summary`.
"""
from __future__ import annotations

import sys
import time

from simdesign.cli.study_options import (add_study_arguments, register_report, run_and_report, save_and_copy,
                                         warn_if_deprecated)


def add_parser(subparsers) -> None:
    """Add the ``panels`` subcommand to the CLI's subparsers."""
    parser = subparsers.add_parser(
        "panels", help="deprecated, use `simdesign run CONFIG`: panel study: Spearman's rho of k crowd workers' aggregate with an expert panel (and the "
                       "truth) for k = 1..per_output, per aggregation method, with the knee of each curve")
    add_study_arguments(parser, "a panel-study config with a 'panels' key, e.g. configs/crowd_vs_expert.yaml",
                        out_help="; a re-run resumes",
                        figure_help="also write the figure as FIGURE.png and the summary as FIGURE.csv "
                                    "(e.g. figures/crowd_vs_expert)",
                        quiet_help="no progress bar or table")
    parser.set_defaults(func=run)


def run(args) -> int:
    """Run ``simdesign panels`` (deprecated: ``simdesign run CONFIG``, the same path); bad input raises
    ConfigError (exit code 2 in :func:`simdesign.cli.main`)."""
    warn_if_deprecated(args, "panels")
    return run_and_report(args, "panels")


def report_panels(args, result, started: float) -> int:
    """A panel study's report: its result saved (summary.csv, with tests significance.csv, the figure), and the
    knees (and tests) printed."""
    import pandas as pd

    from simdesign.studies.panels.panel_study import SIGNIFICANCE
    from simdesign.studies.panels.panel_summary import KNEE

    config = result.config
    seconds = time.perf_counter() - started
    summary, paths = save_and_copy(args, result)
    significance = result.extra_tables.get(SIGNIFICANCE)
    print(f"wrote {', '.join(str(p) for p in paths)} ({seconds:.0f} s)", file=sys.stderr)
    if not args.quiet:
        knees = summary[summary["estimand"] == KNEE.name]
        with pd.option_context("display.width", 160, "display.max_rows", 200):
            print(knees[["setting", "method", "target", "mean", "ci_low", "ci_high", "mcse"]]
                  .rename(columns={"mean": KNEE.name}).to_string(index=False, float_format=lambda v: f"{v:.3g}"))
            if config.tests:
                print(significance[["setting", "method", "test", "k", "estimand", "rate", "ci_low", "ci_high",
                                    "mcse"]].to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    return 0


register_report("panels", report_panels)
