"""``simdesign sweep CONFIG`` (deprecated: ``simdesign run CONFIG``): a config at every combination of its
'sweep' settings, the rates drawn against the swept setting; ``run`` calls :func:`cmd_sweep` for sweeps.
"""
from __future__ import annotations

import sys
import time

import pandas as pd

from simdesign.core.estimands import headline_estimand
from simdesign.cli.study_options import (add_study_arguments, check_study_arguments, study_backend, study_out_dir,
                                 warn_if_deprecated, write_study_figures)


def add_parser(subparsers) -> None:
    """Add the ``sweep`` subcommand (deprecated: ``simdesign run CONFIG``) to the CLI's subparsers."""
    sweep = subparsers.add_parser(
        "sweep", help="deprecated, use `simdesign run CONFIG`: run a config at every combination of its 'sweep' settings (e.g. effect and "
                      "document_intercept_scale) and draw the rates against the swept setting")
    add_study_arguments(sweep, jobs_help="parallel workers per run (default 1)", quiet_help="no progress bars or table")
    sweep.set_defaults(func=cmd_sweep)


def cmd_sweep(args) -> int:
    from simdesign.studies.kinds import study_kind
    from simdesign.studies.sweep import (SIZE_ADJUSTED, draw_kind_sweep, draw_sweep, kind_of_runs, level_warning,
                                         load_sweep, run_sweep)

    warn_if_deprecated(args, "sweep")
    check_study_arguments(args)
    started = time.perf_counter()
    summary, raw = run_sweep(args.config, out_dir=args.out, jobs=args.jobs, trials=args.trials,
                             progress=not args.quiet, backend=study_backend(args), recognise=study_kind)
    out_dir = study_out_dir(args, raw["name"])
    paths = [out_dir / "summary.csv"]
    summary.to_csv(paths[0], index=False)
    configs = load_sweep(args.config, None if args.trials is None else {"trials": args.trials},
                         recognise=study_kind).runs
    other_kind = kind_of_runs(configs) is not None  # a sweep of a panel study, a metric validation, a plug-in kind
    if other_kind:
        paths += write_study_figures(args, out_dir, raw["name"], summary,
                                     lambda base: draw_kind_sweep(configs, summary, base))
    else:
        paths += write_study_figures(args, out_dir, raw["name"], summary, lambda base: draw_sweep(raw, summary, base))
    print(f"wrote {', '.join(str(p) for p in paths)} in {time.perf_counter() - started:.0f} s")
    if not args.quiet and other_kind:
        with pd.option_context("display.width", 160, "display.max_rows", 500):
            print(summary.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    elif not args.quiet:
        show = summary[summary["estimand"].isin([headline_estimand(True), headline_estimand(False),
                                                 SIZE_ADJUSTED.name])]
        columns = [c for c in raw["sweep"] if c in show.columns] + ["test", "estimand", "rate", "mcse", "n_failed"]
        with pd.option_context("display.width", 160, "display.max_rows", 500):
            print(show[columns].to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    warning = level_warning(summary)
    if warning:
        print(warning, file=sys.stderr)
    return 0
