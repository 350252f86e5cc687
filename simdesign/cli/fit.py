"""``simdesign fit TABLE``: fit the generator to judgements and write a model file (``--check``: then check it)."""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from simdesign import api
from simdesign.core.errors import ConfigError
from simdesign.cli.options import judgements_options, method_option


def read_judgements_args(args):
    # One reader and one validator for fit, check and reliability: a table one refuses, all refuse.
    from simdesign.tables.judgements import parse_columns, parse_scale

    scale = parse_scale(args.scale) if args.scale else None
    return api.read_judgements_table(args.judgements, parse_columns(args.columns), scale)


def cmd_fit(args) -> int:
    from simdesign.realdata.fit import FitError, write_model
    from simdesign.tables.judgements import file_sha256
    from simdesign.tables.recognise import table_method

    from simdesign.realdata.judge_pairwise import source_is_judge_pairwise
    from simdesign.tables.judge import source_is_judge_table

    if source_is_judge_pairwise(args.judgements, args.columns):  # pairwise judge verdicts beside human ones
        from simdesign.cli.fit_judge import fit_pairwise
        return fit_pairwise(args)
    if source_is_judge_table(args.judgements, args.columns):  # judge-plus-human: the judge against --likert-model
        from simdesign.cli.fit_judge import fit as fit_judge_table
        return fit_judge_table(args)
    method = table_method(args)
    if "cli_fit" in method.steps:  # a method with a fit command of its own (Rank: simdesign/cli/fit_ranks.py)
        return method.step("cli_fit")(args)
    if args.likert_model:
        raise ConfigError("--likert-model applies to Rank tables (it fits rank_noise for a joint model); "
                          f"{args.judgements} was read as Likert scores")
    frame, scale = read_judgements_args(args)
    source = {"file": Path(args.judgements).name, "sha256": file_sha256(args.judgements), "rows": len(frame)}
    if args.columns:
        source["columns"] = args.columns
    name = args.name or Path(args.out).stem
    try:
        outcome = api.fit_model(frame, structure=args.structure, reference=args.reference, scale=scale, name=name,
                                source=source, allow_reduced=args.allow_reduced)
    except FitError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    model, result = outcome.model, outcome.result
    header = (f"Fitted by 'simdesign fit {Path(args.judgements).name} --structure {args.structure}"
              f"{' --allow-reduced' if args.allow_reduced else ''}'; "
              f"load with simdesign.model.load_model or name it as 'model' in a config.")
    path = write_model(model, args.out, header=header)
    print(f"fitted {len(frame)} judgements (structure {args.structure}: {outcome.provenance['formula']}): "
          f"status {result.status}, "
          f"log-likelihood {result.loglik:.2f}, {result.seconds:.1f} s")
    print(f"  starts:     {result.starts_text}")
    print(f"  thresholds: {', '.join(f'{v:.3f}' for v in model.thresholds)}")
    print(f"  effects:    {', '.join(f'{s}={b:+.3f}' for s, b in zip(model.systems, model.effects))} "
          f"(reference {model.systems[0]})")
    for term, sd in result.random_effects_sd.items():
        print(f"  {term} SDs: {', '.join(f'{v:.3f}' for v in sd)}")
    for note in outcome.provenance["notes"]:
        print(f"  note: {note}")
    print(f"wrote {path}")
    if result.status == "not_converged":
        print("WARNING: the fit did not converge; the model file records this in its provenance", file=sys.stderr)
    if args.check:
        run_check_command(model, frame, check_directory(args), args.check_trials, args.seed)
    return 0


def check_directory(args) -> Path:
    """Where ``fit --check`` writes check.csv and check.png: ``--check-out``, else the folder of ``--out``."""
    return Path(args.check_out) if args.check_out else Path(args.out).parent


def run_check_command(model, frame, out_dir, trials: int, seed: int) -> None:
    table = api.check_model(model, frame, trials=trials, seed=seed, out_dir=out_dir).statistics
    paths = [Path(out_dir) / "check.csv", Path(out_dir) / "check.png"]
    outside = table[~table["inside"]]
    print(f"predictive check: {trials} studies simulated with the data's own design; "
          f"{len(table) - len(outside)} of {len(table)} statistics inside the simulated 95% range")
    singles = table[table["category"].isna()]
    with pd.option_context("display.width", 160):
        print(singles[["statistic", "system", "observed", "sim_low", "sim_high", "inside"]]
              .to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if not outside.empty:
        print("outside the range: " + "; ".join(
            f"{r.statistic} {r.system} {'' if pd.isna(r.category) else r.category} observed {r.observed:.3f}, "
            f"range {r.sim_low:.3f}..{r.sim_high:.3f}" for r in outside.itertuples()))
    print(f"wrote {', '.join(str(p) for p in paths)}")


def fit_option_problems(args) -> list[str]:
    """``fit``'s own options: a model name that is a file name, a model file name load_model reads back, a check
    that can run, a bootstrap that can."""
    from simdesign.realdata.fit import model_file_problem

    problems = []
    if args.name is not None and (not args.name.strip() or any(c in args.name for c in "/\\")
                                  or args.name.strip(".") == ""):
        problems.append(f"The '--name' option names the model (and the check's results): a non-empty name "
                        f"without slashes, not '.' or '..'; got {args.name!r}")
    if args.check and args.check_trials < 2:
        problems.append(f"The '--check-trials' option must be at least 2 simulated studies; got {args.check_trials}")
    # (--out and --check-out that cannot be written: simdesign.cli.out_paths, for every command)
    problems += [problem for problem in [model_file_problem(args.out)] if problem]
    if args.likert_model and args.bootstrap < 0:
        problems.append(f"The '--bootstrap' option must be 0 (none) or more replicates; got {args.bootstrap}")
    return problems


def add_parser(sub) -> None:
    """Add the command to the CLI's subparsers."""
    fit = sub.add_parser("fit", help="fit the generator (cumulative link mixed model) to judgements; "
                                     "write a model file (a Rank table, with a 'rank' column, gets a rank model)")
    judgements_options(fit)
    fit.add_argument("--out", required=True, help="model file to write (YAML)")
    fit.add_argument("--structure", default="auto", choices=["auto", "paper", "maximal", "intercepts"],
                     help="random effects (default auto: the largest the pilot's design identifies; see the README)")
    fit.add_argument("--allow-reduced", action="store_true",
                     help="with fewer annotators (documents) than systems + 1, fit that term's intercept only "
                          "instead of refusing (recorded in the model's provenance)")
    fit.add_argument("--reference", help="reference system (default: first in sorted order; the paper's "
                                         "models use __REFERENCE__)")
    fit.add_argument("--name", help="model name (default: the output file's stem)")
    fit.add_argument("--check", action="store_true", help="then run the predictive check")
    fit.add_argument("--check-trials", type=int, default=200, help="simulated studies for --check")
    fit.add_argument("--check-out", help="directory for the check's CSV and PNG (default: next to --out)")
    fit.add_argument("--seed", type=int, default=0, help="seed of the check's simulations (and of --bootstrap)")
    method_option(fit, "default: from a score or rank column; a Rank table fits the rank-only model "
                       "(rank-ordered logit with random slopes)")
    fit.add_argument("--likert-model", help="Rank tables: fit only rank_noise for this Likert model (preset or "
                     "file), writing it as a joint Likert/Rank model; pairwise tables: their pairwise parameters; "
                     "judge-plus-human tables (scores or pairwise verdicts): the judge, written as a judge file")
    fit.add_argument("--bootstrap", type=int, default=200, help="with --likert-model: parametric-bootstrap "
                     "replicates for rank_noise's standard error")
    fit.set_defaults(func=cmd_fit)
