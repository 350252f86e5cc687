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
    """``plot`` of a study of another kind: its summary and figure from the stored rows, simulating nothing."""
    result = api.load_study(out_dir)
    summary = result.summary()
    summary.to_csv(out_dir / "summary.csv", index=False)
    name = result.kind.config_name(result.config)
    paths = result.plot(figure or out_dir / name)
    print(f"wrote {out_dir / 'summary.csv'} and {', '.join(str(p) for p in paths)}", file=sys.stderr)
    return 0


def add_parser(sub) -> None:
    """Add the command to the CLI's subparsers."""
    plot = sub.add_parser("plot", help="redraw summary and figures from stored results, without simulating")
    plot.add_argument("results")
    plot.add_argument("--out", help="figure path without suffix (default <results>/<config name>)")
    plot.set_defaults(func=cmd_plot)
