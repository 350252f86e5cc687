"""Exact replications: simulate configs/replication.yaml (resumable) and draw figures/replication_f1.png + .csv.

    python scripts/replication_figure.py [--config configs/replication.yaml] [--out results/replication] [--jobs 2]
                                         [--main-test LABEL]

The run goes to ``--out`` (an ordinary results directory: re-running computes only missing trials);
the figure's table is the run's summary rows of the estimands it draws (columns as summary.csv).
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from simdesign import api
from simdesign.studies.replication.replication_plots import plot_replication, replication_table, trial_counts

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default=str(ROOT / "configs" / "replication.yaml"))
    parser.add_argument("--out", default=str(ROOT / "results" / "replication"))
    parser.add_argument("--figure", default=str(ROOT / "figures" / "replication_f1"))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--trials", type=int, default=None)
    parser.add_argument("--main-test", default=None,
                        help="the test of the right panel (default: the config's first test, which should hold "
                             "its level in the layout; see configs/replication_type1.yaml)")
    args = parser.parse_args()
    started = time.perf_counter()
    result = api.simulate(args.config, out_dir=args.out, jobs=args.jobs, trials=args.trials)
    table = replication_table(result.summary())
    base = Path(args.figure)
    base.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(base.with_suffix(".csv"), index=False)
    config = result.config
    title = (f"Exact replications of overlap designs (10 shared documents + own ones): model {config.model.name}, "
             f"effect {config.effect_label}, alpha {config.alpha:g}, {trial_counts(table)} per design "
             f"(each: original + independent replication)")
    main_test = args.main_test or config.tests[0].label
    paths = plot_replication(table, base, title, main_test=main_test)
    print(f"wrote {base.with_suffix('.csv')} and {', '.join(map(str, paths))} in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
