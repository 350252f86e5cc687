"""The paper's Figures 2, 3 and 6 from its real data (Steen & Markert 2021).

    PYTHONPATH=$PWD python scripts/paper_real_figures.py [--data ../shared/data/steen-markert-2021]
        [--fig3-repetitions 200] [--fig6-repetitions 1000] [--seed 2021] [--out figures] [--tables results/real]

Writes figures/paper_fig2_likert_scores, paper_fig3_cost_efficiency and
paper_fig6_nested_vs_crossed (.png and .pdf), and the numbers behind them
as CSV under --tables (not committed).

* Figure 2: share of each Likert score per system, coherence and repetition.
* Figure 3: for 2..19 of the 20 blocks (--fig3-repetitions samples per size),
  the sampled annotators' annotation time (capped: 300 s per judged output,
  1500 s per ranking of 5) against Pearson's r between the sample's system
  scores and the full study's; 10-minute bins, mean r with the 95% t
  interval of that mean; Likert vs Rank.
* Figure 6: nested samples (one annotator from each of k blocks) vs crossed
  samples (all 3 annotators of k/3 blocks), k = 3, 6, ..., 18, same number
  of judgements; mean r with its 95% interval, Likert and Rank.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from simdesign.tables.recognise import read_table  # noqa: E402
from simdesign.realdata.resample import (StudyTable, bin_by_time, capped_annotation_seconds, mean_with_interval,
                                         resample)

TASKS = ("coherence", "repetition")
METHODS = ("likert", "rank")
COLOURS = {"likert": "tab:blue", "rank": "tab:orange"}
LABELS = {"__REFERENCE__": "ref", "abssentrw": "ASR", "onmt_pg": "PG", "BART": "BART", "seneca": "seneca"}
ORDER = ["BART", "__REFERENCE__", "abssentrw", "onmt_pg", "seneca"]


def load(data: Path, method: str, task: str):
    frame, info = read_table(data / "judgements" / f"{method}_{task}_cnn_dm.csv", method)
    times = pd.read_csv(data / "times" / f"{method}_{task}_cnn_dm.csv", dtype={"annotator": str})
    outputs_per_item = info["n_systems"] if method == "rank" else 1
    return frame, capped_annotation_seconds(times, outputs_per_item)


def figure_2(data: Path, out: Path, tables: Path) -> None:
    figure, axes = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True)
    rows = []
    for ax, task in zip(axes, TASKS):
        frame, _ = load(data, "likert", task)
        shares = pd.crosstab(frame["system"], frame["score"], normalize="index").reindex(ORDER)
        width = 0.16
        for k, system in enumerate(ORDER):
            ax.bar(shares.columns + (k - 2) * width, shares.loc[system], width=width, label=LABELS[system])
        ax.set_title(f"{task}: {len(frame)} Likert judgements", fontsize=10)
        ax.set_xlabel("score (7 = best)")
        ax.set_xticks(shares.columns)
        rows.append(shares.assign(task=task).reset_index())
    axes[0].set_ylabel("share of the system's judgements")
    axes[1].legend(title="system", fontsize=8)
    figure.suptitle("Figure 2 (real data): distribution of Likert scores per system (no resampling)", fontsize=11)
    _save(figure, out / "paper_fig2_likert_scores")
    pd.concat(rows).to_csv(tables / "fig2_shares.csv", index=False)


def figure_3(data: Path, out: Path, tables: Path, repetitions: int, seed: int) -> pd.DataFrame:
    figure, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=False)
    binned_all = []
    for ax, task in zip(axes, TASKS):
        for method in METHODS:
            frame, seconds = load(data, method, task)
            table = StudyTable.from_frame(frame, systems=ORDER)
            draws = resample(table, "blocks", range(2, table.n_blocks), repetitions, seed, seconds=seconds)
            draws.assign(task=task, method=method).to_csv(tables / f"fig3_draws_{method}_{task}.csv", index=False)
            binned = bin_by_time(draws, minutes=10)
            binned = binned[binned["n"] >= 5]  # a bin with fewer samples has no useful interval
            binned_all.append(binned.assign(task=task, method=method))
            hours = binned["bin_mid_min"] / 60
            ax.plot(hours, binned["mean"], color=COLOURS[method], label=method.capitalize())
            ax.fill_between(hours, binned["ci_low"], binned["ci_high"], color=COLOURS[method], alpha=0.25)
        ax.set_title(task, fontsize=10)
        ax.set_xlabel("annotation time of the sample (hours; capped 300 s per output)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("Pearson r with the full study's system scores")
    axes[0].legend()
    figure.suptitle(f"Figure 3 (real data): cost-efficiency, {repetitions} random samples of k blocks per "
                    f"k = 2..19; 10-minute bins, mean r and its 95% interval", fontsize=10)
    _save(figure, out / "paper_fig3_cost_efficiency")
    result = pd.concat(binned_all)
    result.to_csv(tables / "fig3_bins.csv", index=False)
    return result


def figure_6(data: Path, out: Path, tables: Path, repetitions: int, seed: int) -> pd.DataFrame:
    figure, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=False)
    rows = []
    styles = {"nested": "-", "crossed": "--"}
    for ax, task in zip(axes, TASKS):
        for method in METHODS:
            frame, _ = load(data, method, task)
            table = StudyTable.from_frame(frame, systems=ORDER)
            sizes = list(range(3, 19, 3))
            for scheme in ("nested", "crossed"):
                draws = resample(table, scheme, sizes, repetitions, seed)
                summary = pd.DataFrame([{"size": size, "judgements": int(group["judgements"].iloc[0]),
                                         **mean_with_interval(group["estimate"])}
                                        for size, group in draws.groupby("size")])
                rows.append(summary.assign(task=task, method=method, scheme=scheme))
                ax.errorbar(summary["judgements"], summary["mean"],
                            yerr=[summary["mean"] - summary["ci_low"], summary["ci_high"] - summary["mean"]],
                            color=COLOURS[method], linestyle=styles[scheme], marker="o", markersize=3, capsize=2,
                            label=f"{method.capitalize()}, {scheme}")
        ax.set_title(task, fontsize=10)
        ax.set_xlabel("judgements in the sample (k annotators x 25)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("Pearson r with the full study's system scores")
    axes[0].legend(fontsize=8)
    figure.suptitle(f"Figure 6 (real data): nested (1 annotator from each of k blocks) vs crossed (all 3 of k/3 "
                    f"blocks), k = 3..18; {repetitions} samples per point, mean r and 95% interval", fontsize=10)
    _save(figure, out / "paper_fig6_nested_vs_crossed")
    result = pd.concat(rows)
    result.to_csv(tables / "fig6_points.csv", index=False)
    return result


def _save(figure, base: Path) -> None:
    figure.tight_layout()
    for suffix in (".png", ".pdf"):
        figure.savefig(base.with_suffix(suffix), dpi=150)
    plt.close(figure)
    print(f"wrote {base}.png/.pdf")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(Path(__file__).resolve().parents[1].parent / "shared" / "data"
                                              / "steen-markert-2021"))
    parser.add_argument("--fig3-repetitions", type=int, default=200)
    parser.add_argument("--fig6-repetitions", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=2021)
    parser.add_argument("--out", default="figures")
    parser.add_argument("--tables", default="results/real_figures")
    args = parser.parse_args()
    data, out, tables = Path(args.data), Path(args.out), Path(args.tables)
    out.mkdir(parents=True, exist_ok=True)
    tables.mkdir(parents=True, exist_ok=True)
    figure_2(data, out, tables)
    bins = figure_3(data, out, tables, args.fig3_repetitions, args.seed)
    points = figure_6(data, out, tables, args.fig6_repetitions, args.seed)
    with pd.option_context("display.width", 200, "display.max_rows", 400):
        print(bins.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        print(points.to_string(index=False, float_format=lambda v: f"{v:.3f}"))


if __name__ == "__main__":
    main()
