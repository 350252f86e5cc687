"""Tables and figures of the small-sample corrections of clmm_native (issue 30, part 2).

Reads the summaries of ``simdesign run configs/small_sample_fig4_{coherence,repetition}.yaml`` (type I
error on the Figure-4 grid) and writes ``figures/small_sample_type1.csv`` (per task, design and test:
rate, Monte-Carlo standard error, 95% interval, failures and the verdict against 0.075 by the rule of
docs/model.md, "Small-sample corrections") and ``figures/small_sample_type1.png``; with the summaries of
``configs/small_sample_fig5_{coherence,repetition}.yaml`` (power on the Figure-5 designs) present, also
``figures/small_sample_power.{csv,png}``.

    python scripts/small_sample_figure.py [--results results] [--out figures]
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
TASKS = ("coherence", "repetition")
MAX_TYPE1 = 0.075  # 1.5 alpha, the planner's default max_type1 (docs/model.md)
TESTS = {  # summary label -> legend text, in drawing order
    "clmm_native[paper]": "Wald z (df: z)",  # the Figure-4 runs' label for it (configs/small_sample_fig4_*.yaml)
    "clmm_native[z,paper]": "Wald z (df: z)",
    "clmm_native[satterthwaite,paper]": "t, Satterthwaite df",
    "clmm_native[design,paper]": "t, containment df (design)",
    "ttest_doc": "ttest_doc",
    "art_block": "ARTagg (art_block)",
}
RUNS = {"type1": ("small-sample-fig4", "type1"), "power": ("small-sample-fig5", "power")}


def verdict(low: float, high: float) -> str:
    """'holds' (interval at or below MAX_TYPE1), 'fails' (above it) or 'undecided' (docs/model.md)."""
    if high <= MAX_TYPE1:
        return "holds"
    if low > MAX_TYPE1:
        return "fails"
    return "undecided"


def table(results: Path, kind: str = "type1") -> pd.DataFrame | None:
    """One row per task, design and test: the rate, interval, MCSE, trials, failures (and type I's verdict).

    None when a run's summary is missing.
    """
    prefix, estimand = RUNS[kind]
    rows = []
    for task in TASKS:
        path = results / f"{prefix}-{task}" / "summary.csv"
        if not path.exists():
            return None
        summary = pd.read_csv(path)
        failures = summary[summary["estimand"] == "failure_rate"].set_index(["design", "test"])["rate"]
        rates = summary[(summary["estimand"] == estimand) & summary["test"].isin(TESTS)]
        for _, row in rates.iterrows():
            rows.append({"task": task, "design": row["design"], "annotators": int(row["annotators"]),
                         "documents": int(row["docs"]), "test": row["test"], kind: row["rate"],
                         "mcse": row["mcse"], "ci_low": row["ci_low"], "ci_high": row["ci_high"],
                         "trials": int(row["trials"]), "n_tests": int(row["n_tests"]),
                         "n_failed": int(row["n_failed"]),
                         "failure_rate": failures.get((row["design"], row["test"]), np.nan),
                         "mean_fit_seconds": row["mean_fit_seconds"],
                         **({"verdict_0.075": verdict(row["ci_low"], row["ci_high"])} if kind == "type1" else {})})
    order = {label: k for k, label in enumerate(TESTS)}
    frame = pd.DataFrame(rows)
    return frame.sort_values(["task", "annotators", "test"], key=lambda c: c.map(order) if c.name == "test" else c,
                             ignore_index=True)


def figure(frame: pd.DataFrame, out: Path, kind: str = "type1") -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(TASKS), figsize=(11, 4.2), sharey=True)
    for ax, task in zip(axes, TASKS):
        part = frame[frame["task"] == task]
        for k, (label, text) in enumerate(TESTS.items()):
            rows = part[part["test"] == label].sort_values("annotators")
            if rows.empty:
                continue
            shift = 1.0 + 0.03 * (k - 1.5)  # side by side on the log axis
            ax.errorbar(rows["annotators"] * shift, rows[kind],
                        yerr=[rows[kind] - rows["ci_low"], rows["ci_high"] - rows[kind]],
                        marker="o", ms=4, capsize=2, label=text)
        ax.set_xscale("log")
        if kind == "type1":
            ax.axhline(0.05, color="black", lw=0.8, ls="--")
            ax.axhline(MAX_TYPE1, color="grey", lw=0.8, ls=":")
            ax.set_yscale("log")
            ticks = [0.01, 0.025, 0.05, 0.075, 0.1, 0.2, 0.4]
            ax.set_yticks(ticks, [f"{t:g}" for t in ticks])
            ax.minorticks_off()
        ax.set_xlabel("annotators (3 per block, 100 documents)")
        trials = int(part["trials"].min()) if len(part) else 0
        ax.set_title(f"{task} ({trials} trials per point)")
        ax.grid(alpha=0.3)
    if kind == "type1":
        axes[0].set_ylabel("type I error (alpha 0.05; dotted 0.075)")
        axes[0].legend(fontsize=8, loc="upper right")
        title = "type I error on the Figure-4 grid"
    else:
        axes[0].set_ylabel("power (fitted differences, alpha 0.05)")
        axes[0].legend(fontsize=8, loc="lower right")
        title = "power on the Figure-5 designs"
    fig.suptitle(f"clmm_native with small-sample reference distributions: {title} (95% intervals)")
    fig.tight_layout()
    fig.savefig(out.with_suffix(".png"), dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=ROOT / "results")
    parser.add_argument("--out", type=Path, default=ROOT / "figures", help="directory of the tables and figures")
    args = parser.parse_args()
    for kind in RUNS:
        frame = table(args.results, kind)
        if frame is None:
            print(f"{kind}: no summaries of {RUNS[kind][0]}-* under {args.results}; skipped")
            continue
        out = args.out / f"small_sample_{kind}"
        frame.to_csv(out.with_suffix(".csv"), index=False, float_format="%.6g")
        figure(frame, out, kind)
        wide = frame.pivot_table(index=["task", "annotators"], columns="test", values=kind)
        print(wide.round(4).to_string())


if __name__ == "__main__":
    main()
