"""Figures of the small-sample corrections of clmm_native, both tasks side by side (issue 30, part 2).

Reads the committed tables of ``configs/small_sample_fig4_{coherence,repetition}.yaml`` (type I error on
the Figure-4 grid) and ``configs/small_sample_fig5_{coherence,repetition}.yaml`` (power on the Figure-5
designs): ``figures/small_sample_fig{4,5}_<task>.csv``, written by
``simdesign plot results/small-sample-fig4-<task> --out figures/small_sample_fig4_<task>`` after the runs.
Draws ``figures/small_sample_type1.png`` and ``figures/small_sample_power.png`` and prints the type I table
of docs/model.md (rate +- MCSE, with the verdict against 0.075 by the rule written there).

The tests that refit the model (``configs/small_sample_refits_<task>.yaml``: ``test: lrt`` and ``test:
bootstrap`` at 3, 6 and 15 annotators) and lmer with Kenward-Roger df (``configs/small_sample_kr_<task>.yaml``)
are read from ``figures/small_sample_refits_<task>.csv`` where present (fewer trials per point: each row
carries its own), drawn on the type I panels beside the others and printed as their own table. With
``--collect RESULTS`` those tables are first updated from the runs' own tables under RESULTS
(``small-sample-refits-<task>/`` and ``small-sample-kr-<task>/``, as ``simdesign run`` writes them): a run's
rows replace the committed rows of the same design, test and estimand; rows of runs not found are kept.

    python scripts/small_sample_figure.py [--figures figures] [--collect results]
"""
from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from simdesign.stats.montecarlo import default_max_type1, level_verdict

ROOT = Path(__file__).resolve().parents[1]
TASKS = ("coherence", "repetition")
MAX_TYPE1 = default_max_type1(0.05)  # 0.075, the planner's default max_type1 at alpha 0.05 (docs/model.md)
TESTS = {  # summary label -> legend text, in drawing order
    "clmm_native[paper]": "Wald z (df: z)",  # the Figure-4 runs' label for it (configs/small_sample_fig4_*.yaml)
    "clmm_native[z,paper]": "Wald z (df: z)",
    "clmm_native[satterthwaite,paper]": "t, Satterthwaite df",
    "clmm_native[design,paper]": "t, containment df (design)",
    "ttest_doc": "ttest_doc",
    "art_block": "ARTagg (art_block)",
}
REFIT_TESTS = {  # the refitting tests' labels (configs/small_sample_refits_*.yaml, small_sample_kr_*.yaml)
    "clmm_native[lrt,paper]": "LRT, Bartlett factor (10 draws)",
    "clmm_native[bootstrap20,paper]": "bootstrap-t (20 draws)",
    "lmer[kr,paper]": "lmer, Kenward-Roger df",
}
RUNS = {"type1": "small_sample_fig4", "power": "small_sample_fig5"}  # kind -> committed tables' prefix


def verdict(low: float, high: float) -> str:
    """'holds', 'fails' or 'undecided' against MAX_TYPE1 (docs/model.md; the planner's rule)."""
    return level_verdict(low, high, MAX_TYPE1)


def table(figures: Path, kind: str = "type1") -> pd.DataFrame | None:
    """One row per task, design and test: the rate (column ``kind``), interval, MCSE, trials, failures and,
    for type I error, the verdict against MAX_TYPE1. None when a task's table is missing."""
    frames = []
    for task in TASKS:
        path = figures / f"{RUNS[kind]}_{task}.csv"
        if not path.exists():
            return None
        rates = pd.read_csv(path).query("estimand == @kind and test in @TESTS").copy()
        rates.insert(0, "task", task)
        frames.append(rates.rename(columns={"rate": kind}))
    if kind == "type1":
        frames += refit_rows(figures)
    frame = pd.concat(frames, ignore_index=True)
    if kind == "type1":
        frame["verdict"] = [verdict(low, high) for low, high in zip(frame["ci_low"], frame["ci_high"])]
    return frame


def refit_rows(figures: Path) -> list[pd.DataFrame]:
    """The refitting tests' type I rows of each task whose table exists (only their labels: the Wald tests'
    rows of those runs repeat, on fewer trials, the same studies as the Figure-4 tables')."""
    frames = []
    for task in TASKS:
        path = figures / f"small_sample_refits_{task}.csv"
        if path.exists():
            rates = pd.read_csv(path).query("estimand == 'type1' and test in @REFIT_TESTS").copy()
            rates.insert(0, "task", task)
            frames.append(rates.rename(columns={"rate": "type1"}))
    return frames


REFIT_RUNS = ("small-sample-refits-{task}", "small-sample-kr-{task}")  # run names (configs/small_sample_*.yaml)
KEY = ["design", "test", "estimand"]


def collect_refit_tables(results: Path, figures: Path) -> list[Path]:
    """Update each task's ``small_sample_refits_<task>.csv`` with the tables of the refitting runs found under
    ``results``; returns the tables written."""
    written = []
    for task in TASKS:
        runs = [results / name.format(task=task) / f"{name.format(task=task)}.csv" for name in REFIT_RUNS]
        found = [pd.read_csv(path) for path in runs if path.exists()]
        if not found:
            continue
        new = pd.concat(found, ignore_index=True)
        target = figures / f"small_sample_refits_{task}.csv"
        if target.exists():
            old = pd.read_csv(target)
            replaced = old.set_index(KEY).index.isin(new.set_index(KEY).index)
            new = pd.concat([old[~replaced], new], ignore_index=True)
        order = {label: k for k, label in enumerate({**TESTS, **REFIT_TESTS})}
        new = new.sort_values(["annotators", "test"], key=lambda column: column.map(order).fillna(len(order))
                              if column.name == "test" else column, kind="stable")
        new.to_csv(target, index=False)  # pandas quotes the labels with commas
        written.append(target)
    return written


MARKS = {"holds": "", "fails": " (fails)", "undecided": " (undecided)"}


def _task_table(task: str, part: pd.DataFrame, legends: dict, cell) -> list[str]:
    """One task's markdown table: a row per annotator count, a column per test in ``legends`` that ``part``
    has, ``cell(row)`` in each (``not run`` where the test has no row at that count)."""
    tests = [label for label in legends if label in set(part["test"])]
    lines = [f"| {task}: annotators | " + " | ".join(legends[label] for label in tests) + " |",
             "|---" * (len(tests) + 1) + "|"]
    for annotators, rows in part.groupby("annotators"):
        cells = [cell(rows[rows["test"] == label].iloc[0]) if (rows["test"] == label).any() else "not run"
                 for label in tests]
        lines.append(f"| {annotators} | " + " | ".join(cells) + " |")
    return lines + [""]


def refit_markdown(frame: pd.DataFrame) -> str:
    """docs/model.md's table of the refitting tests: per task and annotator count, rate +- MCSE (trials),
    with the Figure-4 tables' Wald z, design df and Satterthwaite rows at the same designs."""
    shown = {**{label: TESTS[label] for label in ("clmm_native[paper]", "clmm_native[design,paper]",
                                                 "clmm_native[satterthwaite,paper]")}, **REFIT_TESTS}
    lines = []
    for task in TASKS:
        part = frame[(frame["task"] == task) & frame["test"].isin(list(REFIT_TESTS))]
        if part.empty:
            continue
        part = frame[(frame["task"] == task) & frame["annotators"].isin(part["annotators"].unique())]
        lines += _task_table(task, part, shown, lambda row: f"{row['type1']:.3f} ± {row['mcse']:.3f} "
                                                            f"({int(row['trials'])})" + MARKS[row["verdict"]])
    return "\n".join(lines)


def markdown(frame: pd.DataFrame, kind: str) -> str:
    """The docs/model.md table of one kind: per task, a row per annotator count, rate +- MCSE per test."""
    lines = []
    for task in TASKS:
        part = frame[(frame["task"] == task) & frame["test"].isin(list(TESTS))]
        lines += _task_table(task, part, TESTS, lambda row: f"{row[kind]:.3f} ± {row['mcse']:.3f}"
                             + (MARKS[row["verdict"]] if kind == "type1" else ""))
    return "\n".join(lines)


def figure(frame: pd.DataFrame, out: Path, kind: str = "type1") -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker  # noqa: F401 (matplotlib.ticker.NullLocator below)

    fig, axes = plt.subplots(1, len(TASKS), figsize=(11, 4.2), sharey=True)
    for ax, task in zip(axes, TASKS):
        part = frame[frame["task"] == task]
        for k, (label, text) in enumerate({**TESTS, **REFIT_TESTS}.items()):
            rows = part[part["test"] == label].sort_values("annotators")
            if rows.empty:
                continue
            shift = 1.0 + 0.03 * (k - 1.5)  # side by side on the log axis
            refit = label in REFIT_TESTS
            if refit:
                low, high = int(rows["trials"].min()), int(rows["trials"].max())
                text = f"{text}, {low} trials" if low == high else f"{text}, {low}-{high} trials"
            ax.errorbar(rows["annotators"] * shift, rows[kind],
                        yerr=[rows[kind] - rows["ci_low"], rows["ci_high"] - rows[kind]],
                        marker="s" if refit else "o", ms=4, capsize=2, ls=":" if refit else "-", label=text)
        ax.set_xscale("log")
        counts = sorted(part["annotators"].unique())
        ax.set_xticks(counts, [str(c) for c in counts])
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        if kind == "type1":
            ax.axhline(0.05, color="black", lw=0.8, ls="--")
            ax.axhline(MAX_TYPE1, color="grey", lw=0.8, ls=":")
            ax.set_yscale("log")
            ticks = [0.01, 0.025, 0.05, 0.075, 0.1, 0.2, 0.4]
            ax.set_yticks(ticks, [f"{t:g}" for t in ticks])
            ax.minorticks_off()
        ax.set_xlabel("annotators (3 per block, 100 documents)")
        plain = part[part["test"].isin(list(TESTS))]
        trials = int(plain["trials"].min()) if len(plain) else 0
        ax.set_title(f"{task} ({trials} trials per point" + (", refitting tests fewer" if len(plain) < len(part)
                                                              else "") + ")")
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
    parser.add_argument("--figures", type=Path, default=ROOT / "figures", help="where the tables are and the "
                                                                             "figures go")
    parser.add_argument("--collect", type=Path, metavar="RESULTS",
                        help="first update figures/small_sample_refits_<task>.csv from the runs under RESULTS")
    args = parser.parse_args()
    if args.collect is not None:
        for path in collect_refit_tables(args.collect, args.figures):
            print(f"updated {path}")
    for kind in RUNS:
        frame = table(args.figures, kind)
        if frame is None:
            print(f"{kind}: no tables {RUNS[kind]}_<task>.csv in {args.figures}; skipped")
            continue
        figure(frame, args.figures / f"small_sample_{kind}", kind)
        print(markdown(frame, kind))
        if kind == "type1":
            print(refit_markdown(frame))


if __name__ == "__main__":
    main()
