"""``simdesign fit-crowd TABLE.csv``: fit the worker-level crowd model to a real crowd pilot table.

Registered in :mod:`simdesign.cli` by :func:`add_parser`; the work is done by
:func:`simdesign.realdata.crowd_fit.fit_crowd_pilot`.
"""
from __future__ import annotations

from pathlib import Path


def add_parser(subparsers) -> None:
    """Add the ``fit-crowd`` subcommand to the CLI's subparsers."""
    parser = subparsers.add_parser(
        "fit-crowd", help="fit the worker-level crowd model (spammer share, competence distribution, leniency, "
                          "item spread) to a crowd pilot table; prints the values for a crowd-study config")
    parser.add_argument("table", help="CSV, one row per judgement: item, worker, score (optional: seconds); "
                                      "docs/how-to/crowd-workers.md")
    parser.add_argument("--scale", default="1..5", help="the score scale: LOW..HIGH or a comma-separated list (default %(default)s)")
    parser.add_argument("--out", help="directory for crowd_workers.csv and crowd_items.csv")
    parser.set_defaults(func=run)


def run(args) -> int:
    """Run ``simdesign fit-crowd``; bad input raises DataError/ConfigError (exit 2 in :func:`simdesign.cli.main`)."""
    from simdesign.realdata.crowd_fit import fit_crowd_pilot, read_crowd_pilot
    from simdesign.tables.judgements import parse_scale

    scale = parse_scale(args.scale)
    fit = fit_crowd_pilot(read_crowd_pilot(args.table, scale), scale)
    workers = fit.workers
    print(f"{args.table}: {len(fit.items)} items, {len(workers)} workers, {int(workers['judgements'].sum())} "
          f"judgements; log-likelihood {fit.log_likelihood:.1f}")
    print(f"likely spammers (posterior P(honest) < 0.5): {int((workers['honest'] < 0.5).sum())}")
    if fit.mace_starts is not None:
        agreed, starts = fit.mace_starts
        print(f"MACE competences: the best of {starts} EM starts; {agreed} of {starts} reached its log-likelihood"
              + ("" if agreed == starts else " (the likelihood has several optima: one start could stop short)"))
    print("fitted values for a crowd-study config (study: crowd):")
    print(fit.config_text())
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        workers.to_csv(out / "crowd_workers.csv", index=False)
        fit.items.to_csv(out / "crowd_items.csv", index=False)
        print(f"wrote {out / 'crowd_workers.csv'} and {out / 'crowd_items.csv'}")
    return 0
