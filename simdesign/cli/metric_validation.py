"""``simdesign metric-validation CONFIG`` (deprecated: ``simdesign run CONFIG``): validate an automatic metric
against simulated human judgements; ``run`` calls :func:`cmd_metric_validation` for such configs.
"""
from __future__ import annotations

import time

import pandas as pd

from simdesign.cli.study_options import (add_study_arguments, check_study_arguments, study_backend, study_out_dir,
                                 warn_if_deprecated, write_study_figures)


def add_parser(subparsers) -> None:
    """Add the ``metric-validation`` subcommand (deprecated: ``simdesign run CONFIG``) to the CLI's subparsers."""
    metric = subparsers.add_parser(
        "metric-validation", help="deprecated, use `simdesign run CONFIG`: validate an automatic metric against simulated human judgements: correlations, "
                                  "bootstrap interval coverage (systems, inputs, both), permutation test power")
    add_study_arguments(metric, figure_help="also write the coverage figure and its table as FIGURE.png and FIGURE.csv",
                        quiet_help="no progress bar or table")
    metric.set_defaults(func=cmd_metric_validation)


def cmd_metric_validation(args) -> int:
    """``simdesign metric-validation CONFIG``: run, write trials.csv, summary.csv and the coverage figure."""
    from simdesign.studies.metrics.metric_validation import (load_metric_config, plot_coverage, run_metric_validation,
                                                             summarise_metric_validation)

    warn_if_deprecated(args, "metric-validation")
    check_study_arguments(args)
    started = time.perf_counter()
    config = load_metric_config(args.config, None if args.trials is None else {"trials": args.trials})
    out_dir = study_out_dir(args, config.name)
    rows = run_metric_validation(config, out_dir, jobs=args.jobs, progress=not args.quiet,
                                 backend=study_backend(args))
    summary = summarise_metric_validation(rows, config)
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
