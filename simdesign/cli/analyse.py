"""``simdesign analyse JUDGEMENTS.csv``: which systems differ in a real Likert or Rank study, or in a
judge-plus-human table (an LLM judge's scores beside human scores, analysed by prediction-powered inference).

Registered in :mod:`simdesign.cli` by :func:`add_parser`; the work is done by
:func:`simdesign.realdata.analyse.analyse`, or for a judge-plus-human table (recognised by its ``judge`` and
``human`` columns, :func:`simdesign.tables.judge.is_judge_table`) by
:func:`simdesign.realdata.judge_analysis.analyse_judge_table`. Pairwise preferences and Arena battle logs go to their
method's analysis (:func:`simdesign.realdata.pairwise_analysis.analyse_pairwise`) through ``analyse``.
"""
from __future__ import annotations

from pathlib import Path

# What ``--out`` holds (docs/how-to/analyse-a-study.md lists the same; tests/test_output_lists.py compares them)
ANALYSE_OUTPUTS = ("analysis.csv", "pairs.csv", "analysis.md", "analysis.png", "analysis_info.csv")
# ... for pairwise preferences and battle logs (docs/how-to/arena-log.md lists the same)
PAIRWISE_ANALYSE_OUTPUTS = ("analysis.csv", "pairs.csv", "win_rates.csv", "analysis.md", "analysis.png",
                            "analysis_info.csv")
# ... and for a judge-plus-human table (docs/how-to/analyse-judge-and-human.md lists the same)
JUDGE_OUTPUTS = ("judge_analysis.csv", "judge_estimates.csv", "judge_analysis.md")


def add_parser(subparsers) -> None:
    """Add the ``analyse`` subcommand to the CLI's subparsers."""
    from simdesign.significance.mixed_native import STARTS
    from simdesign.cli.options import method_option
    from simdesign.realdata.analyse import ADJUST_CHOICES, DEFAULT_BOOTSTRAP, DEFAULT_STARTS

    parser = subparsers.add_parser(
        "analyse", help="analyse a real study (Likert or Rank): means with 95%% intervals, pairwise tests, "
                        "the ranks each system can take; or a judge-plus-human table: PPI and PPI++ means and "
                        "differences beside the human-only and judge-only ones")
    parser.add_argument("judgements", help="CSV, one row per judgement: annotator, document, system and score "
                                           "(Likert) or rank (Rank: 0..S-1 or 1..S per annotator and document); or "
                                           "a judge-plus-human table (CSV, JSON or JSONL): system, document, judge, "
                                           "human (empty where no human scored the output), optional annotator and "
                                           "judge_name; or pairwise preferences (annotator, document, system_a, "
                                           "system_b, preferred) or an Arena battle log (question_id, model_a, "
                                           "model_b, winner, optional judge), CSV, JSON or JSONL")
    method_option(parser, "default: inferred from a 'score' or 'rank' column")
    parser.add_argument("--columns", help="map column names, e.g. annotator=worker,rank=position")
    parser.add_argument("--scale", help="Likert: the scale's values, e.g. 1..7 (default: the observed values)")
    parser.add_argument("--tests", default="clmm_native",
                        help="comma-separated registered analyses, each with options as name[option=value,...] "
                             "or name[value], e.g. ttest_unpaired[mc] (Rankel et al.'s within-document swap "
                             "threshold); the first decides the groups (default clmm_native, the paper's analysis)")
    parser.add_argument("--structure", default="paper",
                        help="random-effects structure for tests that take one (default paper)")
    parser.add_argument("--starts", default=DEFAULT_STARTS, choices=STARTS,
                        help="refit rule of the mixed model (default codings: a singular or unconverged fit is "
                             "refitted from the optima of the other reference codings and the best kept; single: "
                             "one start)")
    parser.add_argument("--adjust", default="tukey", choices=ADJUST_CHOICES,
                        help="multiplicity adjustment (default tukey, as the paper's emmeans contrasts; tests "
                             "without a joint covariance get holm)")
    parser.add_argument("--df", choices=["z", "design", "satterthwaite"],
                        help="reference distribution of clmm_native's contrasts (docs/model.md, 'Small-sample "
                             "corrections'; default the test's own)")
    parser.add_argument("--alpha", type=float, default=0.05, help="significance level of the groups")
    parser.add_argument("--bootstrap", type=int, default=DEFAULT_BOOTSTRAP, help="bootstrap resamples")
    parser.add_argument("--systems", help="comma-separated output order (default: order of first appearance)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ties", choices=["half", "davidson"],
                        help="pairwise tables and battle logs: a tie is half a win to each side (default half, the "
                             "Arena's convention) or Davidson's tie model")
    parser.add_argument("--anchor", metavar="SYSTEM=VALUE",
                        help="pairwise tables and battle logs: that system's Elo (default: the mean at 1000)")
    parser.add_argument("--out", help=f"directory for {', '.join(ANALYSE_OUTPUTS[:-1])} and {ANALYSE_OUTPUTS[-1]} "
                                      f"(judge-plus-human tables: {', '.join(JUDGE_OUTPUTS)})")
    parser.set_defaults(func=run)


def run(args) -> int:
    """Run ``simdesign analyse``; bad input raises ConfigError (exit code 2 in :func:`simdesign.cli.main`)."""
    from simdesign.core.errors import ConfigError
    from simdesign.realdata.analyse import analyse
    from simdesign.tables.judgements import parse_scale
    from simdesign.tables.recognise import parse_columns_any

    from simdesign.realdata.analyse import split_tests
    from simdesign.tables.judge import source_is_judge_table

    from simdesign.realdata.judge_pairwise import source_is_judge_pairwise

    if source_is_judge_pairwise(args.judgements, args.columns):  # a judge_preferred column beside 'preferred'
        return run_method_analysis(args)  # analyse() dispatches it
    if _analysed_by_its_method(args):  # pairwise preferences and battle logs (CSV, JSON or JSONL)
        return run_method_analysis(args)
    if args.ties or args.anchor:
        raise ConfigError("--ties and --anchor apply to tables of pairwise preferences and battle logs; "
                          f"{args.judgements} is not one")
    if source_is_judge_table(args.judgements, args.columns):
        return run_judge_table(args)
    tests = split_tests(args.tests)
    if not tests:
        raise ConfigError("--tests needs at least one registered analysis, e.g. clmm_native")
    systems = [s.strip() for s in args.systems.split(",")] if args.systems else None
    # the path itself: analyse reads it as every command does (one reader, the --scale kept)
    result = analyse(args.judgements, method=args.method, tests=tests, adjust=args.adjust, structure=args.structure,
                     alpha=args.alpha, seed=args.seed, bootstrap=args.bootstrap, systems=systems, starts=args.starts,
                     df=args.df,
                     columns=parse_columns_any(args.columns), scale=parse_scale(args.scale) if args.scale else None)
    print(f"{args.judgements}:")
    print(result.report())
    if args.out:
        paths = result.save(args.out, title=f"{Path(args.judgements).name}: {result.info['primary_test']}")
        print("wrote " + ", ".join(str(path) for path in paths.values()))
    return 0


def run_judge_table(args) -> int:
    """``simdesign analyse`` on a judge-plus-human table: the report printed, the outputs written with --out
    (nothing is written when the table or an option is refused)."""
    from simdesign.realdata.analyse import DEFAULT_STARTS
    from simdesign.realdata.judge_analysis import analyse_judge_table, refuse_other_options

    refuse_other_options(**{"--method": args.method is not None, "--tests": args.tests != "clmm_native",
                            "--structure": args.structure != "paper", "--starts": args.starts != DEFAULT_STARTS,
                            "--df": args.df is not None, "--scale": args.scale is not None})
    systems = [s.strip() for s in args.systems.split(",")] if args.systems else None
    result = analyse_judge_table(args.judgements, columns=args.columns, systems=systems, bootstrap=args.bootstrap,
                                 seed=args.seed, alpha=args.alpha, adjust=args.adjust)
    print(f"{args.judgements}:")
    print(result.report())
    if args.out:
        print("wrote " + ", ".join(str(path) for path in result.save(args.out).values()))
    return 0


def _analysed_by_its_method(args) -> bool:
    """Whether the table's method analyses its tables itself (an 'analyse' step: pairwise preferences)."""
    from simdesign.core.errors import ConfigError
    from simdesign.tables.recognise import parse_columns_any, source_method

    try:
        columns = parse_columns_any(args.columns)
    except ConfigError:
        columns = {}
    found = source_method(args.judgements, args.method, columns)
    return found is not None and "analyse" in found.steps


def run_method_analysis(args) -> int:
    """``simdesign analyse`` on a table of pairwise preferences or a battle log: the report printed, the outputs
    written with --out (nothing is written when the table or an option is refused)."""
    from simdesign.core.errors import ConfigError
    from simdesign.realdata.analyse import analyse, split_tests
    from simdesign.tables.judgements import parse_scale
    from simdesign.tables.recognise import parse_columns_any

    tests = split_tests(args.tests)
    if not tests:
        raise ConfigError("--tests needs at least one registered analysis, e.g. bradley_terry")
    systems = [s.strip() for s in args.systems.split(",")] if args.systems else None
    result = analyse(args.judgements, method=args.method, tests=tests, adjust=args.adjust, alpha=args.alpha,
                     seed=args.seed, bootstrap=args.bootstrap, systems=systems, columns=parse_columns_any(args.columns),
                     scale=parse_scale(args.scale) if args.scale else None, ties=args.ties, anchor=args.anchor)
    print(f"{args.judgements}:")
    print(result.report())
    if args.out:
        print("wrote " + ", ".join(str(path) for path in result.save(args.out).values()))
    return 0
