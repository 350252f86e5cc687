"""Do configs give the very same results as at a base revision? Bit-identical trial rows and summaries.

    .venv/bin/python scripts/same_as_base.py BASE CONFIG[:TRIALS] [CONFIG[:TRIALS] ...] [--jobs 2]

Each config is run from a fresh store twice: by the package of git revision BASE (exported to a temporary
directory) and by this checkout, with ``simdesign run CONFIG --trials TRIALS --out DIR --quiet``. Then every
stored row (the chunk files under each store, Parquet or CSV, wall-clock ``*_seconds`` columns left out,
sorted) and every ``summary.csv`` are compared for exact equality. Prints one line per config and exits 1
if any differs. Used when code moves without meaning to change results (issue 40's restructuring).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from _bench_util import export_package  # scripts/ is on sys.path when a script runs

ROOT = Path(__file__).resolve().parents[1]


def run(package_root: Path, config: str, trials: str | None, out: Path, jobs: int) -> float:
    command = [sys.executable, "-c", "import sys; from simdesign.cli import main; sys.exit(main(sys.argv[1:]))",
               "run", config, "--out", str(out), "--quiet", "--jobs", str(jobs)]
    if trials:
        command += ["--trials", trials]
    start = time.perf_counter()
    subprocess.run(command, check=True, env={**os.environ, "PYTHONPATH": str(package_root)}, cwd=ROOT,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def rows(store: Path) -> pd.DataFrame:
    frames = [pd.read_parquet(path) for path in sorted(store.rglob("*.parquet")) if ".plan_cache" not in path.parts]
    frames += [pd.read_csv(path) for path in sorted(store.rglob("chunks/*.csv"))]
    if not frames:
        return pd.DataFrame()
    table = pd.concat(frames, ignore_index=True)
    table = table.drop(columns=[c for c in table if str(c).endswith("_seconds")])
    return table.sort_values(list(table.columns), ignore_index=True, kind="stable")


def summaries(store: Path) -> dict:
    found = {}
    for path in sorted(store.rglob("summary.csv")):
        table = pd.read_csv(path)
        found[str(path.relative_to(store))] = table.drop(columns=[c for c in table if "seconds" in str(c)])
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("base")
    parser.add_argument("configs", nargs="+", help="CONFIG or CONFIG:TRIALS")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    failed = 0
    with tempfile.TemporaryDirectory(prefix="same-as-base-") as temporary:
        base = export_package(args.base, Path(temporary) / "base")
        for item in args.configs:
            config, _, trials = item.partition(":")
            name = Path(config).stem
            outs = {"base": Path(temporary) / f"{name}-base", "head": Path(temporary) / f"{name}-head"}
            seconds = {"base": run(base, config, trials or None, outs["base"], args.jobs),
                       "head": run(ROOT, config, trials or None, outs["head"], args.jobs)}
            old, new = rows(outs["base"]), rows(outs["head"])
            same_rows = len(old) > 0 and old.equals(new)
            old_s, new_s = summaries(outs["base"]), summaries(outs["head"])
            same_summaries = bool(old_s) and old_s.keys() == new_s.keys() and all(
                old_s[key].equals(new_s[key]) for key in old_s)
            failed += not (same_rows and same_summaries)
            print(f"{item}: {len(old)} stored rows {'identical' if same_rows else 'DIFFER'}, {len(old_s)} summaries "
                  f"{'identical' if same_summaries else 'DIFFER'} (base {seconds['base']:.0f} s, "
                  f"this checkout {seconds['head']:.0f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
