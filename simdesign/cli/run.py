"""``simdesign run CONFIG``: simulate a config of any study kind, write its summary and figure."""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from simdesign import api
from simdesign.studies.rates.config import SimulationConfig, config_warnings, load_config
from simdesign.core.estimands import estimands_of
from simdesign.outputs import failure_report, write_outputs
from simdesign.cli.options import backend_options


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
    """``simdesign run CONFIG``: every study kind (:mod:`simdesign.studies.kinds`)."""
    from simdesign.studies.rates.config import read_config_mapping
    from simdesign.studies.kinds import ENGINE_KINDS, study_kind

    kind = study_kind(read_config_mapping(Path(args.config), "config"))
    if kind not in ENGINE_KINDS:
        return run_other_kind(kind, args)
    return run_rates(args)


def run_other_kind(kind: str, args) -> int:
    """Run a panel study, a sweep or a metric validation with ``run``'s arguments."""
    from simdesign.cli import metric_validation, panels, sweep
    from simdesign.cli.study_options import check_study_arguments

    check_study_arguments(args)
    if args.chunk_size is not None:
        print(f"warning: --chunk-size applies to rate studies; a {kind} config is chunked by its own settings "
              "(ignored)", file=sys.stderr)
    commands = {"panels": panels.run, "sweep": sweep.cmd_sweep, "metric-validation": metric_validation.cmd_metric_validation}
    if kind in commands:
        return commands[kind](args)
    return run_registered_kind(args)


def run_registered_kind(args) -> int:
    """``run`` for a plug-in study kind: simulate, then write summary.csv and the figure into the results."""
    from simdesign.cli.study_options import study_backend, study_out_dir, write_study_figures

    kind, config = api.study_of(args.config, args.trials)
    out_dir = study_out_dir(args, kind.config_name(config))
    result = api.StudyResult(kind, config, kind.run(config, out_dir, study_backend(args), not args.quiet), out_dir)
    summary = result.summary()
    summary.to_csv(result.out_dir / "summary.csv", index=False)
    paths = write_study_figures(args, result.out_dir, result.kind.config_name(result.config), summary,
                                lambda base: result.kind.plot(result.config, summary, base))
    print(f"wrote {result.out_dir / 'summary.csv'} and {', '.join(str(p) for p in paths)}", file=sys.stderr)
    if not args.quiet:
        print(summary.to_string(index=False))
    return 0


def run_rates(args) -> int:
    """``run`` for a rate (or replication) study: the engine, summary, figure and table."""
    from simdesign.studies.rates.engine import default_out_dir

    overrides = {key: value for key, value in (("trials", args.trials), ("chunk_size", args.chunk_size))
                 if value is not None}
    config = load_config(args.config, overrides)
    for warning in config_warnings(config):
        print(f"warning: {warning}", file=sys.stderr)
    out_dir = Path(args.out) if args.out else default_out_dir(config)
    result = api.simulate(config, out_dir=out_dir, jobs=args.jobs, progress=not args.quiet, backend=args.backend,
                          scheduler=args.scheduler, workers=args.workers, retries=args.retries)
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
