"""``simdesign plan CONFIG``: the cheapest design reaching a target (or the best within a budget)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from simdesign import api
from simdesign.cli.options import backend_options


def cmd_plan(args) -> int:
    from simdesign.planning.planner import parse_plan
    from simdesign.studies.rates.config import read_config_mapping

    overrides = {key: value for key, value in (("max_trials", args.max_trials), ("screen_trials", args.screen_trials))
                 if value is not None}
    path = Path(args.config)
    raw = {**read_config_mapping(path, "plan config"), **overrides}  # read once, for either planner
    if "replication" in raw:  # a replication plan (simdesign.planning.replication_plan)
        from simdesign.planning.replication_plan import parse_replication_plan

        api.check_jobs(args.jobs)
        return _replication_plan(args, parse_replication_plan(raw, base_dir=path.parent))
    if "judge_plan" in raw:  # a judge plan (simdesign.planning.judge_plan)
        from simdesign.planning.judge_plan import parse_judge_plan

        return _judge_plan(args, parse_judge_plan(raw, base_dir=path.parent))
    config = parse_plan(raw, base_dir=path.parent)
    out_dir = Path(args.out) if args.out else Path("results") / config.name
    simulated = sum(1 for c in config.candidates if not c.excluded)
    api.check_jobs(args.jobs)
    print(f"planning {config.name}: {len(config.candidates)} candidates (design x test), {simulated} to simulate; "
              f"{config.screen_trials} screening trials, up to {config.max_trials}")
    outcome = api.plan(config, out_dir=out_dir, jobs=args.jobs, progress=not args.quiet, backend=args.backend,
                       figure=args.figure, scheduler=args.scheduler, workers=args.workers, retries=args.retries)
    paths = outcome.paths
    shown = outcome.candidates[outcome.candidates["trials"] > 0].head(args.show)
    with pd.option_context("display.width", 200, "display.max_rows", 200):
        # the weakest pair's power beside the pooled power: pooled power can hide a pair rarely detected
        print(shown[["rank", "design", "test", "judgements", "annotators", "cost", "power", "ci_low", "ci_high",
                     "weakest_pair_power", "trials", "decision"]].to_string(index=False,
                                                                            float_format=lambda v: f"{v:.3f}"))
    print()
    print(outcome.recommendation)
    print(outcome.effort)
    print(f"wrote {', '.join(str(path) for path in paths.values())}")
    return 0 if outcome.recommended is not None else 1


def _replication_plan(args, config) -> int:
    """``simdesign plan`` for a plan with a ``replication`` mapping, through :func:`simdesign.plan`."""
    from simdesign.planning.replication_plan import replication_plan_summary

    if args.backend not in (None, "loky"):  # before the summary line: nothing is started
        from simdesign.core.errors import ConfigError

        raise ConfigError(f"A replication plan runs on the loky backend only; got --backend {args.backend}")
    out_dir = Path(args.out) if args.out else Path("results") / config.plan.name
    print(replication_plan_summary(config) + f"; {config.plan.screen_trials} screening trials, up to "
                                             f"{config.plan.max_trials}")
    outcome = api.plan(config, out_dir=out_dir, jobs=args.jobs, progress=not args.quiet, figure=args.figure)
    shown = outcome.candidates[outcome.candidates["trials"] > 0].head(args.show)
    with pd.option_context("display.width", 200, "display.max_rows", 200):
        print(shown[["rank", "design", "test", "judgements", "cost", "probability", "ci_low", "ci_high", "trials",
                     "decision"]].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print()
    print(outcome.recommendation)
    paths = outcome.paths
    print(f"wrote {', '.join(str(path) for path in paths.values())}")
    return 0 if outcome.recommended is not None else 1


def _judge_plan(args, config) -> int:
    """``simdesign plan`` for a plan with a ``judge_plan`` mapping, through :func:`simdesign.plan`."""
    out_dir = Path(args.out) if args.out else Path("results") / config.plan.name
    print(f"planning {config.plan.name}: variants {', '.join(config.variants())}; "
          f"{sum(1 for c in config.plan.candidates if not c.excluded)} human designs each")
    outcome = api.plan(config, out_dir=out_dir, progress=not args.quiet, backend=args.backend, figure=args.figure)
    shown = outcome.candidates[outcome.candidates["trials"] > 0]
    with pd.option_context("display.width", 200, "display.max_rows", 200):
        print(shown[["variant", "design", "judgements", "cost", "judge_cost", "total_cost", "power", "ci_low",
                     "ci_high", "trials", "decision"]].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print()
    print(outcome.recommendation)
    paths = outcome.paths
    print(f"wrote {', '.join(str(path) for path in paths.values())}")
    return 0 if outcome.recommended is not None else 1


def add_parser(sub) -> None:
    """Add the command to the CLI's subparsers."""
    plan = sub.add_parser("plan", help="find the cheapest design reaching a target power (or the most powerful "
                                       "within a budget) under a cost model")
    plan.add_argument("config", help="plan config (YAML; see configs/plan_example.yaml)")
    plan.add_argument("--out", help="results directory (default results/<plan name>); a re-run resumes")
    plan.add_argument("--jobs", type=int, default=-1, help="parallel workers (default: all cores)")
    plan.add_argument("--screen-trials", type=int, help="override the config's screen_trials")
    plan.add_argument("--max-trials", type=int, help="override the config's max_trials")
    plan.add_argument("--figure", help="figure path without suffix (default <out>/<plan name>)")
    plan.add_argument("--show", type=int, default=15, help="rows of the ranked table to print")
    backend_options(plan)
    plan.add_argument("--quiet", action="store_true", help="no per-stage progress lines")
    plan.set_defaults(func=cmd_plan)
