"""Command-line interface: ``simdesign run | plot | replay | presets``."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd
import yaml

from simdesign.config import SimulationConfig, load_config, parse_config
from simdesign.errors import ConfigError, MissingBackendError
from simdesign.model import PRESETS, load_model


def _figure_estimand(config: SimulationConfig) -> str:
    if config.figure.estimand:
        return config.figure.estimand
    if not config.analyses and config.estimands:  # a reliability-only config has no rates to draw
        return config.estimands[0]
    return "type1" if config.is_null else "power"


def write_outputs(config: SimulationConfig, out_dir: Path, figure_base: Path | None = None) -> pd.DataFrame:
    """Summarise the stored trials of ``config``: summary.csv, figures, and a failure report."""
    from simdesign.plots import plot_summary
    from simdesign.store import ResultsStore
    from simdesign.summary import summarise

    store = ResultsStore(out_dir)
    table = store.read_trials(designs=[d.label for d in config.designs],
                              tests=[a.label for a in config.analyses] + list(config.estimands), trials=config.trials)
    summary = summarise(config, table)
    summary.to_csv(out_dir / "summary.csv", index=False)
    estimand = _figure_estimand(config)
    title = f"{config.name}: model {config.model.name}, effect {config.effect_label}"
    base = figure_base or (out_dir / config.name)
    paths = plot_summary(summary, config.figure, estimand, title, base,
                         alpha=config.alpha if estimand in ("type1", "familywise") else None)
    # Each requested reliability estimand also gets its own figure (the main one shows a single estimand).
    for extra in config.estimands:
        if extra != estimand:
            paths += plot_summary(summary, config.figure, extra, title, base.with_name(f"{base.name}-{extra}"))
    print(f"wrote {out_dir / 'summary.csv'} and {', '.join(str(p) for p in paths)}")
    report_failures(summary)
    return summary


def report_failures(summary: pd.DataFrame) -> None:
    """One warning with failure counts; an error if some design x test failed in every test."""
    failures = summary[(summary["estimand"] == "failure_rate") & (summary["n_failed"] > 0)]
    if failures.empty:
        return
    lines = [f"  {row.design} / {row.test}: {row.n_failed} of {row.n_tests} tests failed ({row.rate:.1%})"
             for row in failures.itertuples()]
    print("WARNING: failed tests (no p-value; counted as non-rejections in 'power', excluded in 'power_fitted'; "
          "see status/message in the trial files, replay with 'simdesign replay'):\n" + "\n".join(lines),
          file=sys.stderr)
    total = failures[failures["rate"] >= 1.0]
    if not total.empty:
        raise SystemExit("ERROR: every test failed for " + ", ".join(f"{r.design} / {r.test}" for r in total.itertuples()))


def cmd_run(args) -> int:
    from simdesign.engine import default_out_dir, run_simulation

    overrides = {"trials": args.trials} if args.trials is not None else {}
    config = load_config(args.config, overrides)
    raw = yaml.safe_load(Path(args.config).read_text())
    raw.update(overrides)
    model_path = Path(args.config).parent / str(raw.get("model", ""))
    if str(raw.get("model")) not in PRESETS and model_path.is_file():
        raw["model"] = str(model_path.resolve())  # so that 'plot' and 'replay' find it from anywhere
    out_dir = Path(args.out) if args.out else default_out_dir(config)
    run_simulation(config, out_dir, raw, jobs=args.jobs, progress=not args.quiet)
    summary = write_outputs(config, out_dir)
    if not args.quiet:
        show = summary[summary["estimand"].isin(["type1", "power", "familywise", *config.estimands])]
        with pd.option_context("display.width", 160, "display.max_rows", 200):
            print(show[["design", "test", "estimand", "rate", "ci_low", "ci_high", "mcse", "n_failed"]]
                  .to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    return 0


def config_from_results(out_dir: Path, trials: int | None = None) -> SimulationConfig:
    from simdesign.store import ResultsStore

    manifest = ResultsStore(out_dir).manifest()
    raw = dict(manifest["config"])
    if trials is not None:
        raw["trials"] = trials
    return parse_config(raw)


def cmd_plot(args) -> int:
    out_dir = Path(args.results)
    config = config_from_results(out_dir)
    write_outputs(config, out_dir, Path(args.out) if args.out else None)
    return 0


def cmd_replay(args) -> int:
    from simdesign.engine import replay_trial

    config = config_from_results(Path(args.results))
    judgements, result = replay_trial(config, args.design, args.trial, args.test)
    print(f"design {args.design}, trial {args.trial}, test {args.test}, root seed {config.seed}")
    print(f"data: {judgements.n_pairs} (annotator, document) pairs x {judgements.n_systems} systems; "
          f"system means {dict(zip(judgements.systems, judgements.scores.mean(axis=0).round(3)))}")
    from simdesign.analyses import system_pairs
    pairs = system_pairs(judgements.n_systems)
    table = pd.DataFrame({
        "system_a": [judgements.systems[i] for i, _ in pairs], "system_b": [judgements.systems[j] for _, j in pairs],
        "estimate": result.estimate, "p_value": result.p_value, "status": result.status,
    })
    print(table.to_string(index=False))
    print(f"fit status: {result.fit_status}; seconds: {result.fit_seconds:.3f}; message: {result.message or '-'}")
    if args.verbose:
        from simdesign.analyses import ANALYSES
        spec = {s.label: s for s in config.analyses}[args.test]
        verbose = ANALYSES[spec.name].verbose
        print(verbose(judgements, **spec.options) if verbose else f"({spec.name} has no verbose output)")
    if args.save:
        judgements.to_frame().to_csv(args.save, index=False)
        print(f"wrote the trial's judgements to {args.save}")
    return 0


def cmd_presets(args) -> int:
    for name in PRESETS:
        model = load_model(name)
        means = model.expected_scores("fitted")
        print(f"{name}: {len(model.scale)}-point scale, systems {', '.join(model.systems)}")
        print(f"  effects (latent): {', '.join(f'{s}={b:+.3f}' for s, b in zip(model.systems, model.effects))}")
        print(f"  expected scores:  {', '.join(f'{s}={m:.2f}' for s, m in zip(model.systems, means))}")
        print(f"  source: {model.citation}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="simdesign", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="simulate a config (resumes stored trials) and write summary and figure")
    run.add_argument("config")
    run.add_argument("--out", help="results directory (default results/<config name>)")
    run.add_argument("--jobs", type=int, default=-1, help="parallel workers (default: all cores)")
    run.add_argument("--trials", type=int, help="override the config's trials")
    run.add_argument("--quiet", action="store_true", help="no progress bar or table")
    run.set_defaults(func=cmd_run)

    plot = sub.add_parser("plot", help="redraw summary and figures from stored results, without simulating")
    plot.add_argument("results")
    plot.add_argument("--out", help="figure path without suffix (default <results>/<config name>)")
    plot.set_defaults(func=cmd_plot)

    replay = sub.add_parser("replay", help="re-create one trial from its seed and re-run one test")
    replay.add_argument("results")
    replay.add_argument("--design", required=True)
    replay.add_argument("--trial", type=int, required=True)
    replay.add_argument("--test", required=True)
    replay.add_argument("--verbose", action="store_true", help="print the full fit output where available")
    replay.add_argument("--save", help="write the trial's judgements to this CSV")
    replay.set_defaults(func=cmd_replay)

    presets = sub.add_parser("presets", help="list the built-in models")
    presets.set_defaults(func=cmd_presets)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ConfigError, MissingBackendError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
