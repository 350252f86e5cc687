"""``simdesign sweep CONFIG`` (deprecated: ``simdesign run CONFIG``): a config at every combination of its
'sweep' settings, the rates drawn against the swept setting; ``run`` calls :func:`cmd_sweep` for sweeps.
"""
from __future__ import annotations

import sys
import time

import pandas as pd

from simdesign.core.estimands import headline_estimand
from simdesign.cli.study_options import (add_study_arguments, register_report, run_and_report, save_and_copy,
                                         warn_if_deprecated)


def add_parser(subparsers) -> None:
    """Add the ``sweep`` subcommand (deprecated: ``simdesign run CONFIG``) to the CLI's subparsers."""
    sweep = subparsers.add_parser(
        "sweep", help="deprecated, use `simdesign run CONFIG`: run a config at every combination of its 'sweep' settings (e.g. effect and "
                      "document_intercept_scale) and draw the rates against the swept setting")
    add_study_arguments(sweep, jobs_help="parallel workers per run (default 1)", quiet_help="no progress bars or table")
    sweep.set_defaults(func=cmd_sweep)


def cmd_sweep(args) -> int:
    """``simdesign sweep CONFIG`` (deprecated: ``simdesign run CONFIG``, the same path)."""
    warn_if_deprecated(args, "sweep")
    return run_and_report(args, "sweep")


def report_sweep(args, result, started: float) -> int:
    """A sweep's report: the stacked summaries, the figure against the swept setting, the headline rates."""
    from simdesign.studies.sweep import SIZE_ADJUSTED, kind_of_runs, level_warning

    raw, configs = result.config.raw, result.config.runs
    summary, paths = save_and_copy(args, result)
    other_kind = kind_of_runs(configs) is not None  # a sweep of a panel study, a metric validation, a plug-in kind
    print(f"wrote {', '.join(str(p) for p in paths)} in {time.perf_counter() - started:.0f} s")
    _print_sweep(args, summary, raw, other_kind, SIZE_ADJUSTED)
    warning = level_warning(summary)
    if warning:
        print(warning, file=sys.stderr)
    return 0


def _print_sweep(args, summary, raw: dict, other_kind: bool, size_adjusted) -> None:
    if not args.quiet and other_kind:
        with pd.option_context("display.width", 160, "display.max_rows", 500):
            print(summary.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    elif not args.quiet:
        show = summary[summary["estimand"].isin([headline_estimand(True), headline_estimand(False),
                                                 size_adjusted.name])]
        columns = [c for c in raw["sweep"] if c in show.columns] + ["test", "estimand", "rate", "mcse", "n_failed"]
        with pd.option_context("display.width", 160, "display.max_rows", 500):
            print(show[columns].to_string(index=False, float_format=lambda v: f"{v:.4f}"))


register_report("sweep", report_sweep)
