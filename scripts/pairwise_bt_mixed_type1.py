"""Type I error of ``bt_mixed`` (Bradley-Terry with annotator and document random effects, R) on three Figure-4 designs.

    PYTHONPATH=$PWD .venv/bin/python scripts/pairwise_bt_mixed_type1.py [--trials 200] [--ordinal-trials 0]
        [--independent-trials 0] [--results results] [--figures figures]

The coherence preset with every pairwise value assumed (``model: {preset: coherence, preferences: {}}``: noise 1,
tie band 0.5, no position bias, every pair of systems per annotator and document), effect zero, the Figure-4 seed
(2021) and three of its designs (configs/paper_fig4_coherence.yaml, 100 documents, 3 annotators per block): 1
block (3 annotators crossed with 100 documents), 20 blocks of 5 documents, 100 blocks of 1 document (300
annotators, each judging one document). Design labels and seed are those of configs/pairwise_type1_coherence.yaml,
so the trials are the same studies as the native pairwise tests' in figures/pairwise_type1.csv (streams are keyed
by design label and trial).

Runs ``bt_mixed`` with its defaults (ties as half a win, glmer; ``structure: intercepts``) at ``--trials``
trials (200: the issue's count for R-backed tests), and optionally ``ties: ordinal`` (ordinal::clmm, about 10 s
per fit) at ``--ordinal-trials`` and ``structure: independent`` (glmer, one variance per system and grouping
factor, about 7 s per fit) at ``--independent-trials`` (0: not run), one worker, into
``<results>/pairwise-bt-mixed-type1[-LABEL]`` (resumable). The committed table:
``--trials 200 --ordinal-trials 40 --independent-trials 50``.

Writes ``<figures>/pairwise_bt_mixed_type1.csv``: one row per design and test with the type I error, its 95%
Wilson interval and MCSE (the summary's, over trials x pairs at the effective size the MCSE implies), the counts of
tests and failed tests, the verdict the planner uses (:func:`simdesign.stats.montecarlo.level_verdict` of the
interval against ``default_max_type1(alpha)``, 0.075 at alpha 0.05), the lowest and highest type I error of a
single pair of systems (and which pairs), the design's failure and singular rates, the mean seconds per fit, and the run's wall time and load averages (``uptime``) at its start and end; prints the
markdown table.
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import pandas as pd

import simdesign
from simdesign.stats.montecarlo import default_max_type1, level_verdict

ROOT = Path(__file__).resolve().parents[1]
NAME = "pairwise-bt-mixed-type1"
DESIGNS = [{"kind": "block", "blocks": [1, 20, 100], "docs_per_block": [100, 5, 1], "annotators_per_block": 3}]
TESTS = {  # label -> (test mapping, what the table calls it)
    "bt_mixed": ({"name": "bt_mixed"}, "Bradley-Terry mixed, ties half a win (glmer)"),
    "bt_mixed_ordinal": ({"name": "bt_mixed", "label": "bt_mixed_ordinal", "ties": "ordinal"},
                         "Bradley-Terry mixed, ordinal ties (clmm)"),
    "bt_mixed_independent": ({"name": "bt_mixed", "label": "bt_mixed_independent", "structure": "independent"},
                             "Bradley-Terry mixed, one variance per system (glmer)"),
}
COLUMNS = ["design", "kind", "blocks", "docs_per_block", "annotators_per_block", "docs", "annotators", "items",
           "test", "estimand", "rate", "ci_low", "ci_high", "mcse", "n_tests", "n_failed", "trials", "effect",
           "alpha", "max_type1", "verdict", "pair_type1_min", "pair_min", "pair_type1_max", "pair_max",
           "failure_rate", "singular_rate", "mean_fit_seconds", "wall_seconds", "load_start", "load_end", "note"]


def config(label: str, trials: int) -> dict:
    return {"name": NAME if label == "bt_mixed" else f"{NAME}-{label}", "model": {"preset": "coherence",
            "preferences": {}}, "method": "pairwise", "effect": "zero", "designs": DESIGNS,
            "tests": [TESTS[label][0]], "trials": trials, "alpha": 0.05, "seed": 2021}


def load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def run(label: str, trials: int, results: Path, before: pd.DataFrame | None) -> pd.DataFrame:
    """Simulate one test's config (resumable) and return its type I rows with the design's other rates.

    The run's wall time and load averages are those of this call; a call that found every trial stored (it took
    under a fifth of the fits' time) keeps those of the table it rewrites (``before``), where it has the test."""
    mapping = config(label, trials)
    started, load_start = time.time(), load()
    result = simdesign.simulate(mapping, out_dir=results / mapping["name"], jobs=1, progress=False)
    wall, load_end = time.time() - started, load()
    print(f"{label}: {trials} trials x 3 designs in {wall:.0f} s (load {load_start} -> {load_end})", flush=True)
    summary = result.summary()
    rates = summary.pivot_table(index="design", columns="estimand", values="rate", aggfunc="first")
    frame = summary[summary["estimand"] == "type1"].copy()
    for estimand in ("failure_rate", "singular_rate"):
        frame[estimand] = frame["design"].map(rates[estimand])
    timing = {"wall_seconds": round(wall, 1), "load_start": load_start, "load_end": load_end}
    resumed = wall < 0.2 * float((frame["mean_fit_seconds"] * frame["trials"]).sum())
    if resumed and before is not None and label in set(before["test"]):
        timing = before[before["test"] == label].iloc[0][list(timing)].to_dict()
    for column, value in timing.items():
        frame[column] = value
    return frame.merge(pair_spread(result.trials, mapping["alpha"]), on="design", how="left")


def pair_spread(trials: pd.DataFrame, alpha: float) -> pd.DataFrame:
    """Per design, the lowest and highest type I error of a single pair of systems (a failed fit: no rejection)."""
    rows = trials[trials["pair"] >= 0].assign(rejected=lambda t: t["p_value"] < alpha,
                                              name=lambda t: t["system_a"] + " - " + t["system_b"])
    rates = rows.groupby(["design", "name"])["rejected"].mean().reset_index()
    out = []
    for design, part in rates.groupby("design"):
        low, high = part.loc[part["rejected"].idxmin()], part.loc[part["rejected"].idxmax()]
        out.append({"design": design, "pair_type1_min": low["rejected"], "pair_min": low["name"],
                    "pair_type1_max": high["rejected"], "pair_max": high["name"]})
    return pd.DataFrame(out)


def with_verdicts(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.copy()
    frame["max_type1"] = [default_max_type1(alpha) for alpha in frame["alpha"]]
    frame["verdict"] = [level_verdict(low, high, limit)
                        for low, high, limit in zip(frame["ci_low"], frame["ci_high"], frame["max_type1"])]
    order = {label: k for k, label in enumerate(TESTS)}
    frame = frame.assign(_test=frame["test"].map(order)).sort_values(["_test", "annotators"], kind="stable")
    return frame[COLUMNS].reset_index(drop=True)


def markdown(table: pd.DataFrame) -> str:
    lines = ["| design | test | trials | type I [95% interval] | verdict | one pair: lowest, highest | singular | "
             "failed | s per fit |", "|---|---|---|---|---|---|---|---|---|"]
    for row in table.itertuples():
        lines.append(f"| {int(row.blocks)} x {int(row.docs_per_block)} docs, {int(row.annotators)} annotators | "
                     f"`{row.test}` | {int(row.trials)} | {row.rate:.3f} [{row.ci_low:.3f}, {row.ci_high:.3f}] | "
                     f"{row.verdict} | {row.pair_type1_min:.3f}, {row.pair_type1_max:.3f} ({row.pair_max}) | "
                     f"{row.singular_rate:.2f} | {row.failure_rate:.3f} | "
                     f"{row.mean_fit_seconds:.2f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--ordinal-trials", type=int, default=0)
    parser.add_argument("--independent-trials", type=int, default=0)
    parser.add_argument("--results", type=Path, default=ROOT / "results")
    parser.add_argument("--figures", type=Path, default=ROOT / "figures")
    args = parser.parse_args(argv)
    path = args.figures / "pairwise_bt_mixed_type1.csv"
    before = pd.read_csv(path) if path.exists() else None
    runs = {"bt_mixed": args.trials, "bt_mixed_ordinal": args.ordinal_trials,
            "bt_mixed_independent": args.independent_trials}
    frames = [run(label, trials, args.results, before) for label, trials in runs.items() if trials]
    table = with_verdicts(pd.concat(frames, ignore_index=True))
    args.figures.mkdir(parents=True, exist_ok=True)
    table.to_csv(path, index=False)
    print(markdown(table))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
