"""``simdesign panels CONFIG``: run a panel study (crowd vs expert annotators) and draw its figure.

Registered in :mod:`simdesign.cli` by :func:`add_parser`; the work is done by
:mod:`simdesign.studies.panels.panel_study` and :mod:`simdesign.studies.panels.panel_summary`.
"""
from __future__ import annotations

import sys
import time

from simdesign.cli.study_options import (add_study_arguments, register_report, run_and_report, warn_if_deprecated,
                                         write_study_figures)


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
    """A panel study's report: summary.csv, significance.csv, the figure, and the knees (and tests) printed."""
    import pandas as pd

    from simdesign.studies.panels.panel_plots import draw_panel_study
    from simdesign.studies.panels.panel_study import read_significance
    from simdesign.studies.panels.panel_summary import KNEE
    from simdesign.studies.panels.panel_tests import summarise_significance

    config, out_dir = result.config, result.out_dir
    summary = result.summary()
    seconds = time.perf_counter() - started
    summary.to_csv(out_dir / "summary.csv", index=False)
    significance = summarise_significance(read_significance(config, out_dir), config.alpha)
    if config.tests:
        significance.to_csv(out_dir / "significance.csv", index=False)
    paths = write_study_figures(args, out_dir, config.name, summary,
                                lambda base: draw_panel_study(config, summary, base))
    print(f"wrote {out_dir / 'summary.csv'} and {', '.join(str(p) for p in paths)} ({seconds:.0f} s)",
          file=sys.stderr)
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
