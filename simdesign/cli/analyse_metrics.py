"""``simdesign analyse-metrics TABLE.csv``: automatic metrics against human scores on real data.

Registered in :mod:`simdesign.cli` by :func:`add_parser`; the work is done by
:func:`simdesign.realdata.metric_analysis.analyse_metrics`.
"""
from __future__ import annotations

from pathlib import Path


def _names(text: str | None, option: str) -> list | None:
    from simdesign.core.errors import ConfigError

    if text is None:
        return None
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise ConfigError(f"{option} needs at least one name; got {text!r}")
    return names


def add_parser(subparsers) -> None:
    """Add the ``analyse-metrics`` subcommand to the CLI's subparsers."""
    parser = subparsers.add_parser(
        "analyse-metrics", help="correlations of automatic metrics with human scores (system, summary, global "
                                "level) with bootstrap and Fisher intervals, and tests comparing two metrics")
    parser.add_argument("table", help="CSV, one row per output: system, input, one column per metric, the human "
                                      "score (docs/how-to/analyse-metrics.md)")
    parser.add_argument("--metrics", help="comma-separated metric columns (default: every column but system, "
                                          "input and the human column)")
    parser.add_argument("--human", default="human", help="the human score column (default %(default)s)")
    parser.add_argument("--level", default="system,summary,global",
                        help="comma-separated levels from system, summary, global (default: all three)")
    parser.add_argument("--methods", default="pearson,spearman,kendall",
                        help="comma-separated correlations from pearson, spearman, kendall (default: all three)")
    parser.add_argument("--resamples", type=int, default=1000,
                        help="bootstrap resamples and permutations per interval and test (default %(default)s)")
    parser.add_argument("--confidence", type=float, default=0.95, help="interval level (default %(default)s)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-outputs", type=int, default=200_000,
                        help="the most rows (outputs) a table may have, checked before it is read (default "
                             "%(default)s): the resamples' time grows with the outputs")
    parser.add_argument("--lower-is-better", help="comma-separated metrics whose lower scores are better (an error "
                                                  "rate): negated first, so a higher correlation is better for every "
                                                  "metric (default: none)")
    parser.add_argument("--drop-incomplete-inputs", action="store_true",
                        help="keep only the inputs every system was scored on (default: refuse missing cells)")
    parser.add_argument("--out", help="directory for correlations.csv, comparisons.csv, metric_analysis.md and "
                                      "metric_analysis.png")
    parser.set_defaults(func=run)


def run(args) -> int:
    """Run ``simdesign analyse-metrics``; bad input raises DataError (exit 2 in :func:`simdesign.cli.main`)."""
    from simdesign.api import analyse_metrics

    result = analyse_metrics(args.table, metrics=_names(args.metrics, "--metrics"), human=args.human,
                             levels=_names(args.level, "--level"), methods=_names(args.methods, "--methods"),
                             resamples=args.resamples, seed=args.seed, confidence=args.confidence,
                             drop_incomplete_inputs=args.drop_incomplete_inputs,
                             lower_is_better=_names(args.lower_is_better, "--lower-is-better") or (),
                             max_outputs=args.max_outputs)
    print(f"{args.table}:")
    print(result.report())
    if args.out:
        paths = result.save(Path(args.out))
        print(f"wrote {', '.join(str(path) for path in paths.values())}")
    return 0
