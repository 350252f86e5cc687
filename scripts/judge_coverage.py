"""Coverage of the judge-plus-human intervals (issue 43's "Must show"): PPI and PPI++ with clustered human labels.

    python scripts/judge_coverage.py [--trials N] [--out results/judge_coverage]

Runs configs/judge_coverage.yaml (study: judge; 500 documents judged, 100 of them by humans from a pool of 10 or
3 annotators, two per document) for the ``unbiased`` and the ``self_preferring`` judge
(simdesign/model/judge.py: +0.5 on the latent scale for the model's last system, seneca) at effect zero and
fitted, one worker, each run resumable under --out, and writes figures/judge_coverage.csv: one row per judge,
effect, human design, target (each system's mean, each pair's difference, and the pooled share of systems or
pairs covered per trial), estimator and interval, with the coverage of the true value (the model's expected
human score, Gauss-Hermite) and its Wilson interval, the rejection rate of pairs, bias, width and effective
number of human judgements. ``verdict``: 'nominal' when the Wilson interval of the coverage contains the
nominal 0.95 or lies above it, 'under' when it lies below. tests/test_judge_coverage.py reads the table.
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import pandas as pd

import simdesign
from simdesign.simulation.config import read_config_mapping

ROOT = Path(__file__).resolve().parents[1]
JUDGES = ("unbiased", "self_preferring")
EFFECTS = ("zero", "fitted")


def verdict(row) -> str:
    if pd.isna(row["coverage_low"]):
        return ""
    if row["coverage_high"] < row["nominal"]:
        return "under"
    return "nominal"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default=str(ROOT / "configs" / "judge_coverage.yaml"))
    parser.add_argument("--out", default=str(ROOT / "results" / "judge_coverage"))
    parser.add_argument("--table", default=str(ROOT / "figures" / "judge_coverage.csv"))
    parser.add_argument("--trials", type=int, default=None)
    args = parser.parse_args()
    raw = read_config_mapping(Path(args.config), "judge-study config")
    if args.trials is not None:
        raw["trials"] = args.trials
    tables = []
    for judge in JUDGES:
        for effect in EFFECTS:
            started, load = time.perf_counter(), os.getloadavg()[0]
            config = {**raw, "judge": judge, "effect": effect, "name": f"judge_coverage_{judge}_{effect}"}
            result = simdesign.simulate(config, out_dir=Path(args.out) / f"{judge}-{effect}", jobs=1, progress=False)
            summary = result.summary()
            annotators = {d.label: d.annotators for d in result.config.designs}
            summary.insert(0, "judge", judge)
            summary.insert(1, "effect_setting", effect)
            summary.insert(3, "annotators", summary["cell"].map(annotators))
            summary["resamples"] = raw["bootstrap_resamples"]
            tables.append(summary)
            print(f"{judge} {effect}: {time.perf_counter() - started:.0f} s (load average {load:.1f} at start)",
                  flush=True)
    table = pd.concat(tables, ignore_index=True).drop(columns=["effect", "judges"])
    table["verdict"] = table.apply(verdict, axis=1)
    Path(args.table).parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.table, index=False, float_format="%.6g")
    print(f"wrote {args.table}")


if __name__ == "__main__":
    main()
