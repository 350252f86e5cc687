"""``simdesign plot RESULTS``: redraw the summary and figures from stored results, simulating nothing."""
from __future__ import annotations

import sys
from pathlib import Path

from simdesign import api
from simdesign.cli.run import write_and_report


def cmd_plot(args) -> int:
    from simdesign.runner.stores import MANIFEST, read_manifest

    out_dir = Path(args.results)
    kind = read_manifest(out_dir / MANIFEST).get("kind") if (out_dir / MANIFEST).is_file() else None
    if kind not in (None, "rates"):
        return plot_other_kind(out_dir, Path(args.out) if args.out else None)
    result = api.load_results(out_dir)
    write_and_report(result.config, result.summary(), out_dir, Path(args.out) if args.out else None)
    return 0


def plot_other_kind(out_dir: Path, figure: Path | None) -> int:
    """``plot`` of a study of another kind: its result saved again from the stored rows (summary, the kind's other
    tables, the figure; with ``--out``, the summary and the figure there), simulating nothing."""
    result = api.load_study(out_dir)
    if figure is None:
        paths = list(result.save(out_dir).values())
    else:
        result.summary().to_csv(out_dir / "summary.csv", index=False)
        paths = [out_dir / "summary.csv", *result.plot(figure)]
    print(f"wrote {', '.join(str(p) for p in paths)}", file=sys.stderr)
    return 0


def add_parser(sub) -> None:
    """Add the command to the CLI's subparsers."""
    plot = sub.add_parser("plot", help="redraw summary and figures from stored results, without simulating")
    plot.add_argument("results")
    plot.add_argument("--out", help="figure path without suffix (default <results>/<config name>)")
    plot.set_defaults(func=cmd_plot)
