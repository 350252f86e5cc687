"""Human judgements needed for 80% power with and without an LLM judge, against the judge's correlation with humans.

    python scripts/judge_human_needed.py [--trials 200] [--out results/judge_human_needed]

On the paper's coherence model (fitted effects), the target is the difference between BART and onmt_pg
(true expected human scores 5.27 and 4.86 on the 1-7 scale, a difference of 0.41), tested two-sided at 0.05
with the clustered (two-way annotator/document bootstrap) interval of simdesign.stats.ppi.ppi_study. An
unbiased judge (Likert 1-10) scores every system's output on 1,000 documents; humans judge a random subset in
blocks of 10 documents with 2 annotators each (every annotator judges the 5 systems' outputs of its block's
documents: 100 judgements), 2 to 24 blocks. For each judge correlation rho (0.3, 0.5, 0.7, 0.9: the correlation
of the judge's latent score with the outputs' latent quality within a system; the column
``correlation_with_one_annotator`` gives the implied correlation with one annotator's score, by simulation),
a study kind run (study: judge) per correlation gives the rejection rate of human-only, PPI and PPI++ at each
number of blocks (the human data are the same across correlations: common random numbers). The human
judgements needed for 80% power are interpolated linearly in log(judgements) between the two block counts
around 0.8 (NaN when no count reaches it). Writes figures/judge_human_needed.csv (one row per correlation,
estimator and block count with the rejection rate and its Wilson interval, plus the interpolated
``needed_80`` per correlation and estimator) and figures/judge_human_needed.png.
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

import simdesign
from simdesign.model import load_model
from simdesign.model.judge import implied_human_correlation, parse_judge

ROOT = Path(__file__).resolve().parents[1]
CORRELATIONS = (0.3, 0.5, 0.7, 0.9)
BLOCKS = (2, 3, 4, 6, 8, 12, 16, 24)
TARGET = "BART - onmt_pg"
ESTIMATORS = ("human_only", "ppi", "ppi++")
SYSTEMS = 5


def config(correlation: float, trials: int) -> dict:
    return {"study": "judge", "name": f"judge_human_needed_{correlation:g}", "model": "coherence",
            "effect": "fitted", "documents": 1000, "select": "random",
            "judge": {"preset": "unbiased", "name": "judge", "correlation": correlation},
            "designs": [{"kind": "block", "blocks": list(BLOCKS), "docs_per_block": 10, "annotators_per_block": 2}],
            "bootstrap_resamples": 100, "trials": trials, "seed": 4343, "chunk_size": 25}


def needed(curve: pd.DataFrame, power: float = 0.8) -> float:
    """Judgements where the rejection rate first reaches ``power`` (linear in log judgements), NaN if never."""
    curve = curve.sort_values("human_judgements")
    x, y = np.log(curve["human_judgements"].to_numpy(float)), curve["rejection_rate"].to_numpy(float)
    above = np.flatnonzero(y >= power)
    if not above.size:
        return float("nan")
    i = above[0]
    if i == 0:
        return float(np.exp(x[0]))
    return float(np.exp(x[i - 1] + (power - y[i - 1]) * (x[i] - x[i - 1]) / (y[i] - y[i - 1])))


def run(trials: int, out: Path) -> pd.DataFrame:
    model, rows = load_model("coherence"), []
    for correlation in CORRELATIONS:
        started, load = time.perf_counter(), os.getloadavg()[0]
        result = simdesign.simulate(config(correlation, trials), out_dir=out / f"rho{correlation:g}", jobs=1,
                                    progress=False)
        summary = result.summary()
        chosen = summary[(summary["target"] == TARGET) & (summary["interval"] == "clustered")
                         & summary["estimator"].isin(ESTIMATORS)]
        judge = parse_judge({"preset": "unbiased", "correlation": correlation}, model)
        implied = implied_human_correlation(model, judge, np.random.default_rng(43))
        for _, row in chosen.iterrows():
            blocks = int(row["cell"].split("-")[1][1:])
            rows.append({"correlation": correlation, "correlation_with_one_annotator": implied,
                         "estimator": row["estimator"], "blocks": blocks, "annotators": 2 * blocks,
                         "human_documents": 10 * blocks, "human_judgements": 10 * blocks * 2 * SYSTEMS,
                         "rejection_rate": row["rejection_rate"], "rejection_low": row["rejection_low"],
                         "rejection_high": row["rejection_high"], "coverage": row["coverage"],
                         "mean_effective_n": row["mean_effective_n"], "trials": row["trials"], "truth": row["truth"]})
        print(f"rho {correlation}: {time.perf_counter() - started:.0f} s (load average {load:.1f} at start)",
              flush=True)
    table = pd.DataFrame(rows)
    table["needed_80"] = np.nan
    for (correlation, estimator), curve in table.groupby(["correlation", "estimator"]):
        table.loc[curve.index, "needed_80"] = needed(curve)
    return table


def plot(table: pd.DataFrame, path: Path) -> Path:
    from matplotlib.figure import Figure
    from matplotlib.ticker import FixedLocator, NullLocator

    figure = Figure(figsize=(12, 4.8))
    left, right = figure.subplots(1, 2)
    best = table.groupby(["correlation", "estimator"])["needed_80"].first().unstack()
    left.plot(best.index, best["human_only"], "k--", label="humans only")
    left.plot(best.index, best["ppi++"], "s-", color="tab:orange", label="with the judge: PPI++")
    never = best["ppi"].isna()
    if never.any():
        left.plot([], [], "o", color="tab:blue", label=f"with the judge: PPI (weight 1): below 80% at every count "
                                                        f"up to {int(table['human_judgements'].max()):,}")
    left.set_ylim(0, float(np.nanmax(best.to_numpy())) * 1.15)
    implied = table.groupby("correlation")["correlation_with_one_annotator"].first()
    left.set_xticks(list(implied.index), [f"{rho:g}\n({one:.2f})" for rho, one in implied.items()])
    left.set_xlabel("judge's correlation with the outputs' latent quality\n(with one annotator's score)")
    left.set_ylabel("human judgements for 80% power")
    left.set_title(f"{TARGET} (difference {table['truth'].iloc[0]:.2f}), coherence model", fontsize=10)
    left.legend(fontsize=8, loc="lower left")
    for correlation, colour in zip(CORRELATIONS, ("tab:blue", "tab:orange", "tab:green", "tab:red")):
        part = table[(table["correlation"] == correlation) & (table["estimator"] == "ppi++")].sort_values("blocks")
        right.plot(part["human_judgements"], part["rejection_rate"], "o-", color=colour, ms=3,
                   label=f"PPI++, rho {correlation:g}")
    human = table[(table["correlation"] == CORRELATIONS[0]) & (table["estimator"] == "human_only")]
    human = human.sort_values("blocks")
    right.plot(human["human_judgements"], human["rejection_rate"], "k--", label="humans only (Wilson 95%)")
    right.fill_between(human["human_judgements"], human["rejection_low"], human["rejection_high"], color="grey",
                       alpha=0.2)
    right.axhline(0.8, color="grey", lw=0.8)
    right.set_xscale("log")
    right.xaxis.set_major_locator(FixedLocator(list(human["human_judgements"])))
    right.xaxis.set_minor_locator(NullLocator())
    right.set_xticks(list(human["human_judgements"]), [f"{v:,}" for v in human["human_judgements"]], fontsize=8)
    right.set_xlabel("human judgements (blocks of 10 documents x 2 annotators x 5 systems)")
    right.set_ylabel("power (clustered interval, alpha 0.05)")
    right.legend(fontsize=8)
    figure.suptitle(f"Human judgements needed with and without an unbiased LLM judge scoring 1,000 documents "
                    f"({int(table['trials'].min())} trials per point)", fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--out", default=str(ROOT / "results" / "judge_human_needed"))
    parser.add_argument("--figure", default=str(ROOT / "figures" / "judge_human_needed"))
    parser.add_argument("--plot-only", action="store_true", help="redraw the figure from the committed table")
    args = parser.parse_args()
    base = Path(args.figure)
    if args.plot_only:
        print(f"wrote {plot(pd.read_csv(base.with_suffix('.csv')), base.with_suffix('.png'))}")
        return
    table = run(args.trials, Path(args.out))
    base.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(base.with_suffix(".csv"), index=False, float_format="%.6g")
    print(f"wrote {base.with_suffix('.csv')} and {plot(table, base.with_suffix('.png'))}")


if __name__ == "__main__":
    main()
