"""Power of the metric-comparison tests against the difference in correlation, and their type I errors.

    python scripts/metric_comparison_power.py [--jobs 2] [--trials N]

Runs configs/metric_validation_null.yaml (two metrics with their own system biases) once per second-metric
system correlation in --second (the first metric's is 0.8; 0.8 is the true null) and
configs/metric_validation_null_nobias.yaml (no metric-specific system bias, scores exchangeable output by
output) once, each resumable under --out; writes figures/metric_comparison_power.png and its table (.csv,
one row per run, cell and test; 'exchangeable' marks the no-bias null). See
simdesign/studies/metrics/metric_power.py.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd

from simdesign.studies.rates.config import read_config_mapping
from simdesign.studies.metrics.metric_power import plot_power_curves, run_power_curve

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default=str(ROOT / "configs" / "metric_validation_null.yaml"))
    parser.add_argument("--null-config", default=str(ROOT / "configs" / "metric_validation_null_nobias.yaml"))
    parser.add_argument("--second", default="0.8,0.75,0.7,0.6,0.5",
                        help="second-metric system correlations (comma-separated)")
    parser.add_argument("--out", default=str(ROOT / "results" / "metric-comparison-power"))
    parser.add_argument("--figure", default=str(ROOT / "figures" / "metric_comparison_power"))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--trials", type=int, default=None)
    args = parser.parse_args()
    started = time.perf_counter()
    runs = []
    for path, values in ((Path(args.config), [float(v) for v in args.second.split(",")]),
                         (Path(args.null_config), None)):
        raw = read_config_mapping(path, "metric-validation config")
        if args.trials is not None:
            raw["trials"] = args.trials
        values = values or [raw["second_metric"]["system_correlation"]]
        table = run_power_curve(raw, values, args.out, jobs=args.jobs, base_dir=path.parent)
        runs.append(table)
    curves, exchangeable = runs[0].assign(exchangeable=False), runs[1].assign(exchangeable=True)
    base = Path(args.figure)
    base.parent.mkdir(parents=True, exist_ok=True)
    pd.concat([curves, exchangeable], ignore_index=True).to_csv(base.with_suffix(".csv"), index=False)
    trials = int(curves["trials"].max())
    title = (f"Tests of equal system-level Pearson correlations of two metrics with the human scores\n"
             f"filled: each metric with its own system biases; hollow (at 0): without them; {trials} trials per "
             f"point, Wilson bands")
    path = plot_power_curves(curves, base, exchangeable, title=title)
    print(f"wrote {base.with_suffix('.csv')} and {path} in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
