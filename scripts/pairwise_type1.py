"""Type I error of the pairwise tests on the Figure-4 designs and two battle logs, the planner's verdict (issue 42).

    PYTHONPATH=$PWD python scripts/pairwise_type1.py [--jobs 1] [--results results] [--figures figures]

Runs ``configs/pairwise_type1_{coherence,repetition}.yaml`` (effect zero, 1000 trials per point: the
Figure-4 block designs, 100 documents and 3 annotators per block with 1..100 blocks, and two Arena-style
battle designs) and, on the block designs with two or more blocks, the sign test on blocks
(``pair_sign_block``: a battle design has no blocks, and with one block the test is undefined), into
``<results>/<config name>`` and ``<results>/<config name>-blocks`` (resumable: the store adds what is missing).
The block test's part samples the same studies (streams are keyed by design label and trial).

Writes ``<figures>/pairwise_type1.csv``: one row per task, design and test with the type I error, its 95%
Wilson interval, MCSE, the counts of tests and failed tests, and the verdict the planner uses
(:func:`simdesign.stats.montecarlo.level_verdict` of the interval against ``default_max_type1(alpha)``, 0.075 at
alpha 0.05: 'holds', 'fails' or 'undecided'); ``<figures>/pairwise_type1.png``; and prints the markdown table of
docs/how-to/pairwise.md.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

import simdesign  # noqa: E402
from simdesign.significance import resolve_analysis  # noqa: E402
from simdesign.studies.rates.config import load_config  # noqa: E402
from simdesign.stats.montecarlo import default_max_type1, level_verdict  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TASKS = ("coherence", "repetition")
BLOCK_TESTS = ["pair_sign_block"]
TESTS = {  # summary label -> what the docs call it, in table order
    "pair_sign": "sign test on documents",
    "pair_sign_block": "sign test on blocks",
    "bradley_terry": "Bradley-Terry, two-way robust",
    "bradley_terry_davidson": "Bradley-Terry (Davidson ties), two-way robust",
    "bradley_terry_naive": "Bradley-Terry, model-based errors (naive)",
}
COLUMNS = ["task", "design", "kind", "blocks", "docs_per_block", "annotators_per_block", "docs", "annotators",
           "battles", "items", "test", "estimand", "rate", "ci_low", "ci_high", "mcse", "n_tests", "n_failed",
           "trials", "effect", "alpha", "max_type1", "verdict", "note"]


def config_path(task: str) -> Path:
    return ROOT / "configs" / f"pairwise_type1_{task}.yaml"


def parts(path: Path) -> list[tuple[str, dict]]:
    """(name suffix, overrides) of each run: the config as written, then its block test on designs of >= 2 blocks."""
    config = load_config(path)
    multi_block = [d for d in config.to_mapping()["designs"] if d["kind"] == "block" and d["blocks"] >= 2]
    assert all(not resolve_analysis(a.name).needs_blocks for a in config.analyses)
    return [("", {}), ("-blocks", {"designs": multi_block, "tests": BLOCK_TESTS})]


def run_task(task: str, jobs: int, results: Path) -> pd.DataFrame:
    """Simulate both parts of the task's config (resumable) and return their type I rows."""
    path = config_path(task)
    frames = []
    for suffix, overrides in parts(path):
        config = load_config(path, overrides)
        out_dir = results / f"{config.name}{suffix}"
        started = time.time()
        result = simdesign.simulate(config, out_dir=out_dir, jobs=jobs, progress=False)
        print(f"{out_dir}: {[a.label for a in config.analyses]} x {len(config.designs)} designs x {config.trials} "
              f"trials in {time.time() - started:.0f} s", flush=True)
        summary = result.summary()
        frames.append(summary[summary["estimand"] == "type1"])
    frame = pd.concat(frames, ignore_index=True)
    frame.insert(0, "task", task)
    return frame


def with_verdicts(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.copy()
    frame["battles"] = frame["items"].where(frame["kind"] == "battles")  # one comparison per battle
    frame["max_type1"] = [default_max_type1(alpha) for alpha in frame["alpha"]]
    frame["verdict"] = [level_verdict(low, high, limit)
                        for low, high, limit in zip(frame["ci_low"], frame["ci_high"], frame["max_type1"])]
    for column in COLUMNS:
        if column not in frame:
            frame[column] = pd.NA
    order = {label: k for k, label in enumerate(TESTS)}
    frame = frame.assign(_kind=frame["kind"].map({"block": 0, "battles": 1}), _test=frame["test"].map(order))
    frame = frame.sort_values(["task", "_kind", "annotators", "battles", "_test"], kind="stable")
    return frame[COLUMNS].reset_index(drop=True)


def design_name(row) -> str:
    if row.kind == "battles":
        return f"{int(row.battles):,} battles ({int(row.docs)} prompts, {int(row.annotators)} judges)"
    return f"{int(row.blocks)} x {int(row.docs_per_block)} docs, {int(row.annotators)} annotators"


def markdown(table: pd.DataFrame) -> str:
    """One table per task: rows designs, columns tests, 'rate [low, high]' with the verdict where not 'holds'."""
    out = []
    for task, rows in table.groupby("task", sort=False):
        tests = [t for t in TESTS if t in set(rows["test"])]
        out.append(f"| {task}: design | " + " | ".join(f"`{t}`" for t in tests) + " |")
        out.append("|---" * (len(tests) + 1) + "|")
        for design, cells in rows.groupby("design", sort=False):
            by_test = {row.test: row for row in cells.itertuples()}
            texts = []
            for test in tests:
                row = by_test.get(test)
                if row is None:
                    texts.append("n/a")
                    continue
                text = f"{row.rate:.3f} [{row.ci_low:.3f}, {row.ci_high:.3f}]"
                texts.append(text if row.verdict == "holds" else f"**{text} {row.verdict}**")
            out.append(f"| {design_name(cells.iloc[0])} | " + " | ".join(texts) + " |")
        out.append("")
    return "\n".join(out)


def draw(table: pd.DataFrame, path: Path) -> None:
    """Rows: tasks; left: block designs against annotators, right: the battle designs."""
    fig, axes = plt.subplots(len(TASKS), 2, figsize=(10, 3.4 * len(TASKS)), squeeze=False,
                             gridspec_kw={"width_ratios": [3, 1]}, constrained_layout=True)
    colours = dict(zip(TESTS, ("tab:blue", "tab:cyan", "tab:green", "tab:olive", "tab:red")))
    for r, task in enumerate(TASKS):
        rows = table[table["task"] == task]
        block, battles = rows[rows["kind"] == "block"], rows[rows["kind"] == "battles"]
        left, right = axes[r]
        for test, colour in colours.items():
            part = block[block["test"] == test].sort_values("annotators")
            if len(part):
                left.plot(part["annotators"], part["rate"], "o-", color=colour, label=TESTS[test] + f" ({test})")
                left.fill_between(part["annotators"], part["ci_low"], part["ci_high"], color=colour, alpha=0.15)
            part = battles[battles["test"] == test].sort_values("battles")
            offset = list(colours).index(test) * 0.12 - 0.24
            for k, row in enumerate(part.itertuples()):
                right.errorbar(k + offset, row.rate, yerr=[[row.rate - row.ci_low], [row.ci_high - row.rate]],
                               fmt="o", color=colour)
        for axis in (left, right):
            axis.axhline(0.05, color="black", lw=0.8)
            axis.axhline(default_max_type1(0.05), color="black", lw=0.8, ls="--")
            axis.set_ylim(0.0, max(0.2, float(table["ci_high"].max()) + 0.02))
        left.set_xscale("log")
        left.set_xlabel("annotators (100 documents, 3 annotators per block)")
        left.set_ylabel(f"{task}: type I error")
        names = [f"{int(b):,} battles\n{int(p)} prompts\n{int(j)} judges" for b, p, j in
                 battles.drop_duplicates("design").sort_values("battles")[["battles", "docs", "annotators"]].itertuples(
                     index=False)]
        right.set_xticks(range(len(names)), names, fontsize=7)
        right.set_xlim(-0.6, len(names) - 0.4)
        if r == 0:
            left.legend(fontsize=7, loc="upper right", framealpha=0.9)
    fig.suptitle("Pairwise tests, type I error (1000 trials per point; bands and bars: 95% Wilson intervals). "
                 "Solid: alpha 0.05; dashed: 0.075, the planner's limit.\nPresets with every pairwise value assumed "
                 "(noise 1, tie band 0.5, no position bias, every pair per annotator and document)", fontsize=8)
    fig.savefig(path, dpi=150)
    plt.close(fig)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--results", type=Path, default=ROOT / "results")
    parser.add_argument("--figures", type=Path, default=ROOT / "figures")
    args = parser.parse_args(argv)
    table = with_verdicts(pd.concat([run_task(task, args.jobs, args.results) for task in TASKS], ignore_index=True))
    args.figures.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.figures / "pairwise_type1.csv", index=False)
    draw(table, args.figures / "pairwise_type1.png")
    print(markdown(table))
    print(f"wrote {args.figures / 'pairwise_type1.csv'} and {args.figures / 'pairwise_type1.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
