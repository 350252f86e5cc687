"""Power at equal cost of Likert, Rank and pairwise preference on coherence; pairwise's assumptions (issue 42).

    PYTHONPATH=$PWD python scripts/pairwise_power.py [--jobs 1] [--trials 1000] [--results results] [--figures figures]

Everything but the budgets comes from the plan ``configs/plan_pairwise_coherence.yaml``: the model (Likert from the
coherence preset, Rank from the rank-only fit ``rank_model: coherence``, pairwise judgements from the Likert
part's latent values with every pairwise value assumed), each method's tests (the plan's tests that take its
judgements), the cost model (12 EUR an hour; the paper's seconds per judged output for Likert and Rank; an
assumed 1.3 x Likert's seconds per pairwise comparison; no fixed costs), alpha, ``max_type1`` and the seed. The
design family is the plan's search shape: blocks of 5 documents judged by 3 annotators each.

For each budget in :data:`BUDGETS` and each series (Likert, Rank, pairwise with the assumed values, and pairwise
showing 2 pairs per annotator and document instead of all 10, a variant of the assumptions), the design is the
largest number of blocks whose cost (the plan's cost model, to the cent) is within the budget. Each design is
simulated under the plan's effect (``fitted``: each method's own fitted differences; pairwise the Likert
part's) for power, and under effect zero for type I error, ``--trials`` each (1000), pooled over the 10 pairs
of systems. A series' *best valid test* at a design is its most powerful test whose type I interval holds the
planner's level (:func:`simdesign.stats.montecarlo.level_verdict` against ``max_type1``, 0.075); where no test
holds it, the most powerful test is shown and labelled with its verdict ('fails' or 'undecided').

Sensitivity (:data:`SENSITIVITY`, at :data:`SENSITIVITY_BUDGET`): both pairwise series with the tie band, the
noise or the seconds-per-comparison factor changed one at a time (the others at their assumed values), each at
the largest affordable design, with the method the plan's budget rule would pick (the most powerful candidate
shown to hold its level) among that pairwise series and the Likert and Rank series at the same budget (within
this design family; ``simdesign plan`` searches more shapes).

Writes ``<figures>/pairwise_vs_likert_rank.{png,csv}`` (one row per budget, series and test) and
``<figures>/pairwise_sensitivity.csv`` (one row per base series, assumption value and test), and prints the tables of
docs/how-to/pairwise.md. Runs go to ``<results>/pairwise-power-<series>-<effect>`` (resumable).
"""
from __future__ import annotations

import argparse
import copy
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import NullFormatter  # noqa: E402
import pandas as pd  # noqa: E402
import yaml  # noqa: E402

import simdesign  # noqa: E402
from simdesign.core.designs import BlockDesign  # noqa: E402
from simdesign.methods.pairwise import PAIRWISE_ASSUMPTIONS, SECONDS_PER_COMPARISON_FACTOR  # noqa: E402
from simdesign.planning.planner import parse_plan  # noqa: E402
from simdesign.stats.montecarlo import level_verdict  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PLAN = ROOT / "configs" / "plan_pairwise_coherence.yaml"
BUDGETS = (40, 60, 80, 120, 160, 240, 320)  # EUR
SENSITIVITY_BUDGET = 120  # EUR: the plan's budget, the middle of BUDGETS on a log scale
SENSITIVITY = {"tie_band": (0.0, 0.5, 1.0), "noise": (0.7, 1.0, 1.5), "seconds_factor": (1.0, 1.3, 2.0)}
COLOURS = {"likert": "tab:blue", "rank": "tab:orange", "pairwise": "tab:green", "pairwise_2pairs": "tab:olive"}


@dataclass(frozen=True)
class Series:
    """One curve: a method, with changes to the plan's pairwise preferences and seconds per comparison."""

    name: str
    method: str
    preferences: dict = field(default_factory=dict, hash=False, compare=False)
    seconds_factor: float | None = None  # pairwise seconds per comparison as a multiple of Likert's (None: plan's)
    label: str = ""


MAIN = (Series("likert", "likert", label="Likert (coherence preset)"),
        Series("rank", "rank", label="Rank (rank-only fit)"),
        Series("pairwise", "pairwise", label="pairwise, every pair (assumed values)"),
        Series("pairwise_2pairs", "pairwise", {"pairs": 2}, label="pairwise, 2 pairs per annotator and document"))


def plan_raw() -> dict:
    return yaml.safe_load(PLAN.read_text())


@lru_cache(maxsize=None)
def plan_for(preferences: tuple = (), seconds_factor: float | None = None):
    """The plan config with the model's preferences changed and pairwise seconds = factor x Likert's."""
    raw = plan_raw()
    raw["model"] = {**raw["model"], "preferences": {**raw["model"].get("preferences", {}), **dict(preferences)}}
    if seconds_factor is not None:
        likert = parse_plan(plan_raw(), PLAN.parent).method_costs["likert"].seconds_per_judgement
        task = raw["cost"]["seconds_per_judgement"]
        raw["cost"] = {**raw["cost"], "seconds_per_judgement": {"likert": task, "rank": task,
                                                                "pairwise": round(seconds_factor * likert, 6)}}
    return parse_plan(raw, PLAN.parent)


def plan_of(series: Series):
    return plan_for(tuple(sorted(series.preferences.items())), series.seconds_factor)


def shape() -> dict:
    search = plan_raw()["search"]
    return {"docs_per_block": search["docs_per_block"][0], "annotators_per_block": search["annotators_per_block"][0]}


def cost_of(series: Series, blocks: int) -> float:
    plan = plan_of(series)
    return float(plan.method_costs[series.method].total(BlockDesign(blocks, **shape()), plan.model.n_systems))


def affordable_blocks(series: Series, budget: float) -> int:
    """The most blocks whose cost, to the cent, is within ``budget`` (0 when not even one block is)."""
    blocks = 0
    while round(cost_of(series, blocks + 1), 2) <= budget:
        blocks += 1
    return blocks


def simulate_series(series: Series, blocks: list[int], trials: int, jobs: int, results: Path) -> pd.DataFrame:
    """Power and type I rows of ``series`` at each number of blocks (one row per design and test)."""
    plan = plan_of(series)
    key = {"likert": "block", "rank": "block-rank", "pairwise": "block-pairwise"}[series.method]
    base = plan.simulation_config_mappings()[key]
    frames = []
    for effect in (base["effect"], "zero"):
        mapping = copy.deepcopy(base)
        label = "zero" if effect == "zero" else "fitted"
        mapping.update(name=f"pairwise-power-{series.name}-{label}", effect=effect, trials=trials,
                       designs=[{"kind": "block", "blocks": b, **shape()} for b in sorted(set(blocks))])
        mapping.pop("description", None)
        out_dir = results / mapping["name"]
        started = time.time()
        result = simdesign.simulate(mapping, out_dir=out_dir, jobs=jobs, progress=False)
        print(f"{out_dir}: {len(mapping['designs'])} designs x {trials} trials in {time.time() - started:.0f} s",
              flush=True)
        summary = result.summary()
        frames.append(summary[summary["estimand"] == ("type1" if effect == "zero" else "power")])
    power, type1 = frames
    keys = ["design", "test"]
    merged = power.merge(type1[keys + ["rate", "ci_low", "ci_high", "mcse", "trials"]], on=keys,
                         suffixes=("", "_type1"), validate="one_to_one")
    merged = merged.rename(columns={"rate": "power", "ci_low": "power_low", "ci_high": "power_high",
                                    "mcse": "power_mcse", "trials": "trials_power", "rate_type1": "type1",
                                    "ci_low_type1": "type1_low", "ci_high_type1": "type1_high",
                                    "mcse_type1": "type1_mcse"})
    merged["test"] = merged["test"].str.replace(r"@\w+$", "", regex=True)
    merged["max_type1"] = plan.max_type1
    merged["verdict"] = [level_verdict(low, high, plan.max_type1)
                         for low, high in zip(merged["type1_low"], merged["type1_high"])]
    cost = plan.method_costs[series.method]
    merged["cost"] = [cost_of(series, int(b)) for b in merged["blocks"]]
    merged["seconds_per_item"] = cost.seconds_per_judgement
    merged["item"] = cost.item_name
    for name in ("tie_band", "noise", "pairs"):
        merged[name] = series.preferences.get(name, PAIRWISE_ASSUMPTIONS[name]) if series.method == "pairwise" \
            else pd.NA
    merged.insert(0, "series", series.name)
    return merged


def mark_best(rows: pd.DataFrame) -> pd.DataFrame:
    """``best``: per (budget, series), the most powerful test that holds its level, else the most powerful."""
    rows = rows.copy()
    rows["best"] = False
    for _, group in rows.groupby(["budget", "series"], sort=False):
        valid = group[group["verdict"] == "holds"]
        pick = (valid if len(valid) else group)["power"].idxmax()
        rows.loc[pick, "best"] = True
    return rows


COLUMNS = ["budget", "series", "method", "tie_band", "noise", "pairs", "seconds_per_item", "item", "design", "blocks",
           "docs", "annotators", "judgements", "items", "cost", "test", "power", "power_low", "power_high",
           "power_mcse", "trials_power", "type1", "type1_low", "type1_high", "type1_mcse", "trials_type1",
           "max_type1", "verdict", "best"]


def budget_rows(frame: pd.DataFrame, series: Series, budgets) -> pd.DataFrame:
    out = []
    for budget in budgets:
        blocks = affordable_blocks(series, budget)
        rows = frame[frame["blocks"] == blocks].copy()
        rows.insert(0, "budget", budget)
        out.append(rows)
    return pd.concat(out, ignore_index=True)


def best_rows(table: pd.DataFrame) -> pd.DataFrame:
    return table[table["best"]].set_index(["budget", "series"])


def draw(table: pd.DataFrame, path: Path, trials: int) -> None:
    """Left: each series' best valid test's power against cost (every test thin); right: type I error."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.6), constrained_layout=True)
    labels = {s.name: s.label for s in MAIN}
    designs = table.drop_duplicates(["series", "design", "test"])
    for series, colour in COLOURS.items():
        rows = designs[designs["series"] == series]
        for k, (test, part) in enumerate(rows.groupby("test", sort=False)):
            part = part.sort_values("cost")
            style = ("-", "--", ":", "-.")[k % 4]
            left.plot(part["cost"], part["power"], style, color=colour, lw=0.8, alpha=0.6)
            right.plot(part["cost"], part["type1"], style, color=colour, lw=1, marker=".",
                       label=f"{series}: {test}")
        best = table[(table["series"] == series) & table["best"]].sort_values("budget")
        holds = best["verdict"] == "holds"
        left.plot(best["cost"], best["power"], "-", color=colour, lw=2.2, label=labels[series])
        left.errorbar(best["cost"][holds], best["power"][holds],
                      yerr=[best["power"][holds] - best["power_low"][holds],
                            best["power_high"][holds] - best["power"][holds]], fmt="o", color=colour, ms=4)
        for row in best[~holds].itertuples():
            left.plot(row.cost, row.power, "x", color=colour, ms=9, mew=2)
            left.annotate(f"{row.test}: {row.verdict}", (row.cost, row.power), fontsize=6, color=colour,
                          xytext=(4, -10), textcoords="offset points")
    for budget in BUDGETS:
        left.axvline(budget, color="grey", lw=0.4, alpha=0.5)
    for axis in (left, right):
        axis.set_xscale("log")
        axis.set_xticks(BUDGETS, [str(b) for b in BUDGETS])
        axis.xaxis.set_minor_formatter(NullFormatter())
    left.set_xlabel("cost of the study, EUR (12 EUR/h; budgets: grey lines)")
    left.set_ylabel("pooled power (10 pairs), best test that holds its level")
    left.set_ylim(0, 1)
    left.legend(fontsize=7, loc="lower right")
    right.axhline(0.05, color="black", lw=0.8)
    right.axhline(float(table["max_type1"].iloc[0]), color="black", lw=0.8, ls="--")
    right.set_xlabel("cost of the study, EUR")
    right.set_ylabel("type I error (effect zero)")
    right.legend(fontsize=6, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.14))
    fig.suptitle(f"Coherence, blocks of 5 documents x 3 annotators, the largest design each budget buys; {trials} "
                 "trials per point. Likert 30.53 s and Rank 26.67 s per output (the paper's);\npairwise "
                 f"{SECONDS_PER_COMPARISON_FACTOR:g} x 30.53 s per comparison, noise 1, tie band 0.5 (assumed). "
                 "Thick: the best test holding its level (x: none holds, labelled); thin: every test (styles as on "
                 "the right).", fontsize=8)
    fig.savefig(path, dpi=150)
    plt.close(fig)


SENSITIVITY_BASES = ("pairwise", "pairwise_2pairs")  # the pairwise series whose assumptions are varied


def sensitivity_series() -> list[tuple[str, str, float, Series]]:
    """(base series, assumption, value, series) for every value of every assumption, one at a time."""
    out = []
    for base in (s for s in MAIN if s.name in SENSITIVITY_BASES):
        for parameter, values in SENSITIVITY.items():
            for value in values:
                assumed = (SECONDS_PER_COMPARISON_FACTOR if parameter == "seconds_factor"
                           else PAIRWISE_ASSUMPTIONS[parameter])
                if value == assumed:
                    series = base  # the assumed values: the main series (its stored trials)
                elif parameter == "seconds_factor":
                    series = Series(f"{base.name}_seconds{value:g}", "pairwise", base.preferences, seconds_factor=value)
                else:
                    series = Series(f"{base.name}_{parameter}{value:g}", "pairwise",
                                    {**base.preferences, parameter: value})
                out.append((base.name, parameter, value, series))
    return out


def sensitivity_table(rows: pd.DataFrame, main: pd.DataFrame) -> pd.DataFrame:
    """Per base series and assumption value: pairwise's best valid test and power at the budget, and the pick of
    the plan's budget rule among it and the Likert and Rank series at the same budget."""
    rivals = best_rows(main).loc[SENSITIVITY_BUDGET]
    out = []
    for (base, parameter, value), group in rows.groupby(["base", "parameter", "value"], sort=False):
        group = group.copy()
        group["budget"] = SENSITIVITY_BUDGET
        group = mark_best(group)
        best = group[group["best"]].iloc[0]
        candidates = {"pairwise": best}
        for method in ("likert", "rank"):
            candidates[method] = rivals.loc[method]
        valid = {m: r for m, r in candidates.items() if r["verdict"] == "holds"}
        order = sorted(valid, key=lambda m: valid[m]["power"], reverse=True)
        group["plan_pick"] = order[0] if order else "none holds its level"
        group["runner_up"] = order[1] if len(order) > 1 else ""
        # clear: the pick's 95% power interval lies above the runner-up's (else a tie within Monte-Carlo error)
        group["pick_clear"] = len(order) < 2 or bool(valid[order[0]]["power_low"] > valid[order[1]]["power_high"])
        for method in ("likert", "rank"):
            group[f"{method}_power"] = rivals.loc[method, "power"]
            group[f"{method}_test"] = rivals.loc[method, "test"]
        out.append(group)
    return pd.concat(out, ignore_index=True)


def main_table_markdown(table: pd.DataFrame) -> str:
    best = best_rows(table)
    series = [s.name for s in MAIN]
    lines = ["| budget (EUR) | " + " | ".join(series) + " |", "|---" * (len(series) + 1) + "|"]
    for budget in BUDGETS:
        cells = []
        for name in series:
            row = best.loc[(budget, name)]
            text = (f"{row['power']:.3f} [{row['power_low']:.3f}, {row['power_high']:.3f}] `{row['test']}`, "
                    f"{int(row['blocks'])} blocks, {row['cost']:.2f}")
            cells.append(text if row["verdict"] == "holds" else f"**{text} ({row['verdict']})**")
        lines.append(f"| {budget} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def sensitivity_markdown(table: pd.DataFrame) -> str:
    best = table[table["best"]].set_index(["base", "parameter", "value"])
    lines = ["| assumption | value | " + " | ".join(f"{base}: best valid test, power (blocks, EUR) | plan's pick"
                                                    for base in SENSITIVITY_BASES) + " |",
             "|---|---" + "|---|---" * len(SENSITIVITY_BASES) + "|"]
    for parameter, values in SENSITIVITY.items():
        for value in values:
            cells = []
            for base in SENSITIVITY_BASES:
                row = best.loc[(base, parameter, value)]
                verdict = "" if row["verdict"] == "holds" else f" ({row['verdict']})"
                cells.append(f"`{row['test']}`{verdict} {row['power']:.3f} [{row['power_low']:.3f}, "
                             f"{row['power_high']:.3f}] ({int(row['blocks'])}, {row['cost']:.2f}) | {row['plan_pick']}"
                             + ("" if row["pick_clear"] else f" (tie with {row['runner_up']})"))
            lines.append(f"| {parameter} | {value:g} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--results", type=Path, default=ROOT / "results")
    parser.add_argument("--figures", type=Path, default=ROOT / "figures")
    parser.add_argument("--skip-sensitivity", action="store_true")
    args = parser.parse_args(argv)
    frames = []
    for series in MAIN:
        blocks = [affordable_blocks(series, budget) for budget in BUDGETS]
        frame = simulate_series(series, blocks, args.trials, args.jobs, args.results)
        frames.append(budget_rows(frame, series, BUDGETS))
    table = mark_best(pd.concat(frames, ignore_index=True))
    table["method"] = table["series"].map({s.name: s.method for s in MAIN})
    table = table[COLUMNS]
    args.figures.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.figures / "pairwise_vs_likert_rank.csv", index=False)
    draw(table, args.figures / "pairwise_vs_likert_rank.png", args.trials)
    print(main_table_markdown(table) + "\n")
    if args.skip_sensitivity:
        return 0
    rows = []
    for base, parameter, value, series in sensitivity_series():
        blocks = affordable_blocks(series, SENSITIVITY_BUDGET)
        frame = simulate_series(series, [blocks], args.trials, args.jobs, args.results)
        frame.insert(0, "value", value)
        frame.insert(0, "parameter", parameter)
        frame.insert(0, "base", base)
        rows.append(frame)
    sensitivity = sensitivity_table(pd.concat(rows, ignore_index=True), table)
    sensitivity["method"] = "pairwise"
    sensitivity = sensitivity[["base", "parameter", "value"] + COLUMNS + ["likert_power", "likert_test", "rank_power",
                                                                  "rank_test", "plan_pick", "runner_up", "pick_clear"]]
    sensitivity.to_csv(args.figures / "pairwise_sensitivity.csv", index=False)
    print(sensitivity_markdown(sensitivity))
    print(f"wrote {args.figures / 'pairwise_vs_likert_rank.png'}, .csv and {args.figures / 'pairwise_sensitivity.csv'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
