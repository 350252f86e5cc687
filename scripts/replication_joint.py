"""How often one exact replication shows the paper's pattern: a low significance F1 together with a high r.

    python scripts/replication_joint.py [--out results/replication] [--design overlap-S10-U30-A3]
                                        [--f1-max 0.29] [--r-min 0.89]

Reads the stored per-trial rows of a replication run (scripts/replication_figure.py writes them to
results/replication) and prints, per test, the trials whose F1 is at most --f1-max, whose Pearson r of the
system scores is at least --r-min, and both (Wilson 95% intervals, the trial as the unit). Ito & Gatt
(2023) report F1 0.25-0.29 with r 0.89-0.90. A trial whose original has no significant pair has no F1
(counted apart); failed tests make no decision (as in the summary's significance_f1).
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
from statsmodels.stats.proportion import proportion_confint

from simdesign.studies.replication.replication import FAILURES, REPLICATION_PREFIX, SCORE_LABELS
from simdesign.stats.replication import score_correlation, significance_decisions, significance_f1

ROOT = Path(__file__).resolve().parents[1]


def _wide(rows: pd.DataFrame, trials: np.ndarray, column: str) -> np.ndarray:
    return rows.pivot(index="trial", columns="pair", values=column).reindex(trials).to_numpy()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(ROOT / "results" / "replication"))
    parser.add_argument("--design", default="overlap-S10-U30-A3")
    parser.add_argument("--f1-max", type=float, default=0.29)
    parser.add_argument("--r-min", type=float, default=0.89)
    parser.add_argument("--alpha", type=float, default=0.05)
    args = parser.parse_args()
    files = sorted((Path(args.out) / "trials" / args.design).glob("*.parquet"))
    if not files:
        raise SystemExit(f"no stored trials of design {args.design!r} under {args.out}")
    rows = pd.concat([pd.read_parquet(path) for path in files], ignore_index=True)
    original, replicate = (rows[rows["test"] == SCORE_LABELS[study]] for study in ("original", "replication"))
    trials = np.intersect1d(original["trial"].unique(), replicate["trial"].unique())
    r = np.array([score_correlation(a, b) for a, b in zip(_wide(original, trials, "estimate"),
                                                          _wide(replicate, trials, "estimate"))])
    high_r = r >= args.r_min
    print(f"{args.design}: {trials.size} trials, r >= {args.r_min:g} in {int(high_r.sum())}")
    labels = set(rows["test"].unique())
    # the tests run on both studies (estimands such as krippendorff_alpha have no replication rows)
    tests = [t for t in sorted(labels) if REPLICATION_PREFIX + t in labels and t not in SCORE_LABELS.values()]
    for test in tests:
        decisions = []
        for study_rows in (rows[rows["test"] == test], rows[rows["test"] == REPLICATION_PREFIX + test]):
            study_rows = study_rows[study_rows["trial"].isin(trials)]
            usable = ~np.isin(_wide(study_rows, trials, "status").astype(str), list(FAILURES))
            decisions.append(significance_decisions(_wide(study_rows, trials, "p_value"),
                                                    _wide(study_rows, trials, "estimate"), usable, args.alpha))
        f1 = np.array([np.nan if score is None else score for score in map(significance_f1, *decisions)])
        low = f1 <= args.f1_max  # NaN (undefined F1) compares False
        both = int((low & high_r).sum())
        low_ci, high_ci = proportion_confint(both, trials.size, method="wilson")
        print(f"  {test}: F1 undefined in {int(np.isnan(f1).sum())}, F1 <= {args.f1_max:g} in {int(low.sum())}, "
              f"both in {both} of {trials.size} ({both / trials.size:.3f}, 95% {low_ci:.3f}-{high_ci:.3f})")


if __name__ == "__main__":
    main()
