"""Compare two results tables rate by rate, in Monte-Carlo standard errors: did a change move any rate?

    .venv/bin/python scripts/compare_rates.py OLD.csv NEW.csv [--limit 4]

Both tables are summaries (or figure tables) with the columns ``design, test, estimand, rate, mcse``
(a figure table of another study kind: ``cell, quantity, mean, mcse`` and whatever else names a row).
Rows are matched on every column that names a row; for each, the difference of the two rates is divided
by the Monte-Carlo standard error of the difference, sqrt(mcse_old^2 + mcse_new^2) (two independent sets
of trials), and by the old rate's own MCSE. Prints every row beyond ``--limit`` and a one-line verdict;
exits 1 if a row is beyond it. Rows whose rates are both 0 or both 1 (MCSE 0), or missing in both,
count as equal when equal.
Used when the generator changes (issue 38: generator version 2 against the committed version-1 tables).
"""
from __future__ import annotations

import argparse
import sys

import numpy as np
import pandas as pd

RATE_TABLE_KEYS = ("design", "test", "estimand")
STUDY_TABLE_KEYS = ("cell", "quantity", "criterion", "method", "k", "level", "metric", "panel", "test")


def _keys_and_value(frame: pd.DataFrame) -> tuple[list[str], str]:
    if set(RATE_TABLE_KEYS) <= set(frame.columns) and "rate" in frame.columns:
        return list(RATE_TABLE_KEYS), "rate"
    keys = [key for key in STUDY_TABLE_KEYS if key in frame.columns]
    if not keys or "mean" not in frame.columns or "mcse" not in frame.columns:
        raise SystemExit(f"Cannot tell rows apart: the table needs {list(RATE_TABLE_KEYS)} and 'rate', or some of "
                         f"{list(STUDY_TABLE_KEYS)} with 'mean' and 'mcse'; it has {list(frame.columns)}")
    return keys, "mean"


def compare(old: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """One row per matched table row: both values, both MCSEs, the difference in combined and in old MCSEs."""
    keys, value = _keys_and_value(old)
    old = old.copy()
    new = new.copy()
    for frame in (old, new):
        for key in keys:
            frame[key] = frame[key].astype(str)
    merged = old[keys + [value, "mcse"]].merge(new[keys + [value, "mcse"]], on=keys, suffixes=("_old", "_new"),
                                                how="outer", indicator=True)
    unmatched = merged[merged["_merge"] != "both"]
    if not unmatched.empty:
        raise SystemExit(f"{len(unmatched)} row(s) are in one table only, e.g. {unmatched[keys].iloc[0].tolist()}")
    # a row without a value in both tables (a plan row, an undefined rate) is equal; in one only, it is not
    both_missing = merged[f"{value}_new"].isna() & merged[f"{value}_old"].isna()
    difference = (merged[f"{value}_new"] - merged[f"{value}_old"]).where(~both_missing, 0.0).fillna(np.inf)
    merged[["mcse_old", "mcse_new"]] = merged[["mcse_old", "mcse_new"]].fillna(0.0)
    combined = np.sqrt(merged["mcse_old"] ** 2 + merged["mcse_new"] ** 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        merged["z_combined"] = np.where(combined > 0, difference / combined, np.where(difference == 0, 0.0, np.inf))
        merged["z_old"] = np.where(merged["mcse_old"] > 0, difference / merged["mcse_old"],
                                   np.where(difference == 0, 0.0, np.inf))
    return merged.drop(columns="_merge")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--limit", type=float, default=4.0, help="Monte-Carlo SEs of the difference (default 4)")
    args = parser.parse_args(argv)
    table = compare(pd.read_csv(args.old), pd.read_csv(args.new))
    beyond = table[np.abs(table["z_combined"]) > args.limit]
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        if not beyond.empty:
            print(beyond.to_string(index=False))
    worst = table.loc[np.abs(table["z_combined"]).idxmax()]
    print(f"{len(table)} rows; largest |difference| {np.abs(table['z_combined']).max():.2f} SE of the difference "
          f"({np.abs(table['z_old']).max():.2f} of the old rate's SE) at {worst.iloc[0]} {worst.iloc[1]}; "
          f"{len(beyond)} beyond {args.limit:g}; mean difference in SEs {table['z_combined'].mean():+.2f}")
    return 1 if len(beyond) else 0


if __name__ == "__main__":
    sys.exit(main())
