"""Coverage of the judge-plus-human intervals (issue 43's "Must show"): PPI and PPI++ with clustered human labels.

    python scripts/judge_coverage.py [--trials N] [--out results/judge_coverage]

Runs configs/judge_coverage.yaml (study: judge; 500 documents judged, 100 of them by humans from a pool of 10 or
3 annotators, two per document) for the ``unbiased`` and the ``self_preferring`` judge
(simdesign/model/judge.py: +0.5 on the latent scale for the model's last system, seneca) at effect zero (2,000
trials: every system has nearly the same expected score, so pair differences are about 0 and the judge-only
test's type I error shows) and at the fitted effects (500 trials: differences up to 1.7), one worker, each run resumable under --out, and writes figures/judge_coverage.csv: one row per judge,
effect, human design, target (each system's mean, each pair's difference, and the pooled share of systems or
pairs covered per trial), estimator and interval, with the coverage of the true value (the model's expected
human score, Gauss-Hermite) and its Wilson interval, the rejection rate of pairs, bias, width and effective
number of human judgements. ``verdict``: 'nominal' when the Wilson interval of the coverage contains the
nominal 0.95 or lies above it, 'under' when it lies below. tests/test_judge_coverage.py reads the table.

    python scripts/judge_coverage.py --pairwise

does the same for pairwise verdicts (configs/judge_pairwise_coverage.yaml: a pairwise judge with a position bias,
and the same judge preferring seneca; humans compare every pair of 100 documents) -> figures/
judge_pairwise_coverage.csv, whose targets are each pair's human win rate.

    python scripts/judge_coverage.py --check-resamples 300

recomputes the first 300 trials of the self-preferring judge's 10-annotator cell (effect zero) with 1,000
bootstrap resamples instead of the table's 200 and prints how much the clustered standard errors and the
coverage move (the same studies: only the bootstrap's resamples differ).
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import pandas as pd

import simdesign
from simdesign.studies.rates.config import read_config_mapping

ROOT = Path(__file__).resolve().parents[1]
JUDGES = {"unbiased": "unbiased", "self_preferring": "self_preferring"}
# --pairwise: verdicts on pairs; the same judge, then made to prefer seneca (the coherence model's last system)
PAIRWISE_JUDGES = {"pairwise": {"preset": "pairwise"},
                   "pairwise_self_preferring": {"preset": "pairwise", "prefers": "seneca"}}
EFFECTS = ("zero", "fitted")


def verdict(row) -> str:
    if pd.isna(row["coverage_low"]):
        return ""
    if row["coverage_high"] < row["nominal"]:
        return "under"
    return "nominal"


def check_resamples(config_path: Path, out: Path, trials: int, resamples: int = 1000) -> None:
    """Clustered SEs and coverage of the same studies with the config's resamples and with ``resamples``."""
    import numpy as np

    from simdesign.studies.judge.judge_study import parse_judge_study, trial_rows

    raw = {**read_config_mapping(config_path, "judge-study config"), "judge": "self_preferring", "effect": "zero"}
    few, many = parse_judge_study(raw), parse_judge_study({**raw, "bootstrap_resamples": resamples})
    cell = few.designs[0].label
    started = time.perf_counter()
    pairs = []
    for trial in range(trials):
        a, b = trial_rows(few, cell, trial), trial_rows(many, cell, trial)
        keep = a["interval"].isin(["clustered", "clustered_t"]) & a["estimator"].isin(["human_only", "ppi", "ppi++"])
        pairs.append(a[keep].assign(se_many=(b["high"] - b["low"])[keep].to_numpy(), covered_many=b["covered"][keep]
                                    .to_numpy(), se_few=(a["high"] - a["low"])[keep].to_numpy()))
    both = pd.concat(pairs, ignore_index=True)
    ratio = both["se_few"] / both["se_many"]
    print(f"{trials} trials of {cell}, {few.bootstrap_resamples} vs {resamples} resamples "
          f"({time.perf_counter() - started:.0f} s): interval width ratio median {ratio.median():.3f}, "
          f"5-95% {np.quantile(ratio, 0.05):.3f}-{np.quantile(ratio, 0.95):.3f}")
    print(both.groupby(["interval", "estimator", both["system_b"].notna().map({True: "pairs", False: "systems"})])
          [["covered", "covered_many"]].mean().to_string())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairwise", action="store_true",
                        help="pairwise judges and human verdicts: configs/judge_pairwise_coverage.yaml -> "
                             "figures/judge_pairwise_coverage.csv (unless --config, --out, --table say otherwise)")
    parser.add_argument("--config", default=None)
    parser.add_argument("--out", default=None)
    parser.add_argument("--table", default=None)
    parser.add_argument("--trials", type=int, default=None)
    parser.add_argument("--fitted-trials", type=int, default=500,
                        help="trials at the fitted effects (the CPU budget: 2,000 at effect zero, the Must-show's)")
    parser.add_argument("--check-resamples", type=int, default=0, metavar="TRIALS")
    args = parser.parse_args()
    stem = "judge_pairwise_coverage" if args.pairwise else "judge_coverage"
    args.config = args.config or str(ROOT / "configs" / f"{stem}.yaml")
    args.out = args.out or str(ROOT / "results" / stem)
    args.table = args.table or str(ROOT / "figures" / f"{stem}.csv")
    judges = PAIRWISE_JUDGES if args.pairwise else JUDGES
    if args.check_resamples:
        check_resamples(Path(args.config), Path(args.out), args.check_resamples)
        return
    raw = read_config_mapping(Path(args.config), "judge-study config")
    if args.trials is not None:
        raw["trials"] = args.trials
    tables = []
    for judge, spec in judges.items():
        for effect in EFFECTS:
            started, load = time.perf_counter(), os.getloadavg()[0]
            trials = raw["trials"] if effect == "zero" else min(raw["trials"], args.fitted_trials)
            config = {**raw, "judge": spec, "effect": effect, "name": f"{stem}_{judge}_{effect}", "trials": trials}
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
