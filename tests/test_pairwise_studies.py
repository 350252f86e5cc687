"""Issue 42's pairwise studies: the committed tables against what docs/how-to/pairwise.md says of them.

The tables are measurements (scripts/pairwise_type1.py, scripts/pairwise_power.py,
scripts/pairwise_bootstrap_coverage.py); these tests read them, never rerun them: each claim of the page is
checked against the committed numbers, and the page's tables against the committed rows, so that a rerun that
changes a verdict or a headline fails here until the page says so.
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import pandas as pd
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "figures"
PAGE = ROOT / "docs" / "how-to" / "pairwise.md"
TASKS = ("coherence", "repetition")
MAX_TYPE1 = 0.075  # the planner's max_type1 at alpha 0.05 (1.5 alpha), which the page's verdicts use
TRIALS = 1000


@lru_cache(maxsize=None)
def table(name: str) -> pd.DataFrame:
    return pd.read_csv(FIGURES / f"{name}.csv")


@lru_cache(maxsize=None)
def page() -> str:
    return PAGE.read_text()


def verdict(low: float, high: float) -> str:
    """The planner's rule, written out: the 95% interval at or below the limit holds, wholly above it fails."""
    return "holds" if high <= MAX_TYPE1 else ("fails" if low > MAX_TYPE1 else "undecided")


def figure4_labels(task: str) -> list[str]:
    """The block designs of the paper's Figure-4 config of the task (configs/paper_fig4_<task>.yaml)."""
    raw = yaml.safe_load((ROOT / "configs" / f"paper_fig4_{task}.yaml").read_text())
    (design,) = raw["designs"]
    return [f"block-B{b}-D{d}-A{design['annotators_per_block']}"
            for b, d in zip(design["blocks"], design["docs_per_block"])]


# --- type I error ------------------------------------------------------------------------------------------

TYPE1_TESTS = ("pair_sign", "pair_sign_block", "bradley_terry", "bradley_terry_davidson", "bradley_terry_naive")
BATTLES = ("battles-N2000-P500-J50", "battles-N10000-P1000-J100")


def test_the_type1_table_has_every_figure4_and_battle_design_and_test_at_1000_trials():
    type1 = table("pairwise_type1")
    assert (type1["estimand"] == "type1").all() and (type1["trials"] == TRIALS).all()
    assert (type1["effect"] == "zero").all() and (type1["alpha"] == 0.05).all()
    for task in TASKS:
        rows = type1[type1["task"] == task]
        blocks = figure4_labels(task)
        expected = {(d, t) for d in blocks + list(BATTLES) for t in TYPE1_TESTS if t != "pair_sign_block"}
        expected |= {(d, "pair_sign_block") for d in blocks if not d.startswith("block-B1-")}  # >= 2 blocks
        assert set(zip(rows["design"], rows["test"])) == expected and len(rows) == len(expected)
    assert (type1["ci_low"] <= type1["rate"]).all() and (type1["rate"] <= type1["ci_high"]).all()
    assert (type1["n_failed"] <= 0.001 * type1["n_tests"]).all()  # at most a handful of degenerate tests


def test_the_stored_verdicts_are_the_planners_rule_on_the_committed_intervals():
    type1 = table("pairwise_type1")
    assert (type1["max_type1"] == MAX_TYPE1).all()
    assert list(type1["verdict"]) == [verdict(lo, hi) for lo, hi in zip(type1["ci_low"], type1["ci_high"])]


CELL = re.compile(r"^(\*\*)?(\d\.\d{3}) \[(\d\.\d{3}), (\d\.\d{3})\]( (fails|undecided))?(\*\*)?$")


def page_type1_tables() -> dict:
    """{(task, design name, test): (rate, low, high, verdict)} from the page's type I tables."""
    found = {}
    lines = page().splitlines()
    for k, line in enumerate(lines):
        header = re.match(r"^\| (coherence|repetition): design \| (.*) \|$", line)
        if not header:
            continue
        task, tests = header.group(1), [t.strip().strip("`") for t in header.group(2).split("|")]
        for row in lines[k + 2:]:
            if not row.startswith("|"):
                break
            cells = [c.strip() for c in row.strip("|").split("|")]
            for test, cell in zip(tests, cells[1:]):
                if cell == "n/a":
                    continue
                match = CELL.match(cell)
                assert match, (task, cells[0], test, cell)
                found[(task, cells[0], test)] = (float(match.group(2)), float(match.group(3)),
                                                 float(match.group(4)), match.group(6) or "holds")
    return found


def design_name(row) -> str:
    """How the page names a design (scripts/pairwise_type1.py writes the page's table the same way)."""
    if row.kind == "battles":
        return f"{int(row.battles):,} battles ({int(row.docs)} prompts, {int(row.annotators)} judges)"
    return f"{int(row.blocks)} x {int(row.docs_per_block)} docs, {int(row.annotators)} annotators"


def test_the_pages_type1_tables_are_the_committed_rates_and_verdicts():
    stated = page_type1_tables()
    type1 = table("pairwise_type1")
    assert len(stated) == len(type1)
    for row in type1.itertuples():
        rate, low, high, said = stated[(row.task, design_name(row), row.test)]
        assert (rate, low, high) == (round(row.rate, 3), round(row.ci_low, 3), round(row.ci_high, 3)), row.design
        assert said == row.verdict, (row.task, row.design, row.test)


@lru_cache(maxsize=None)
def all_verdicts() -> dict:
    type1 = table("pairwise_type1")
    found: dict = {}
    for task, test, design, said in zip(type1["task"], type1["test"], type1["design"], type1["verdict"]):
        found.setdefault((test, task), {})[design] = said
    return found


def verdicts(test: str, task: str) -> dict:
    return all_verdicts()[(test, task)]


@pytest.mark.parametrize("task", TASKS)
def test_the_pages_summary_of_each_test_holds(task):
    blocks = figure4_labels(task)  # 3, 6, 12, 15, 30, 60, 150, 300 annotators
    # "ignoring the clustering costs the level everywhere": the naive Bradley-Terry test fails on every design
    assert set(verdicts("bradley_terry_naive", task).values()) == {"fails"}
    # "the sign test on blocks holds on every design with two or more blocks (it cannot reject with five or fewer)"
    assert set(verdicts("pair_sign_block", task).values()) == {"holds"}
    type1 = table("pairwise_type1")
    rows = type1[(type1["test"] == "pair_sign_block") & (type1["task"] == task) & (type1["blocks"] <= 5)]
    assert len(rows) == 3 and (rows["rate"] < 0.001).all()
    # "two-way robust Bradley-Terry, either tie model: fails with 3 and 6 annotators, undecided with 12, holds from
    # 15 annotators on and on both battle logs"
    for test in ("bradley_terry", "bradley_terry_davidson"):
        found = verdicts(test, task)
        assert [found[d] for d in blocks] == ["fails", "fails", "undecided"] + ["holds"] * 5, test
        assert [found[d] for d in BATTLES] == ["holds", "holds"], test
    # "the sign test on documents holds only from 60 annotators on; on the battle logs undecided and failing"
    found = verdicts("pair_sign", task)
    assert [found[d] for d in blocks] == ["fails"] * 5 + ["holds"] * 3
    assert [found[d] for d in BATTLES] == ["undecided", "fails"]


# --- power at equal cost ------------------------------------------------------------------------------------

SERIES = ("likert", "rank", "pairwise", "pairwise_2pairs")
BUDGETS = (40, 60, 80, 120, 160, 240, 320)
# The seconds the page states: the paper's capped means (Likert, Rank) and the assumed 1.3 x Likert per comparison
SECONDS = {"likert": 30.53, "rank": 26.67, "pairwise": 1.3 * 30.53, "pairwise_2pairs": 1.3 * 30.53}


def best(frame: pd.DataFrame) -> dict:
    """{(budget, series): row} of each series' best test at each budget."""
    return {(row.budget, row.series): row for row in frame[frame["best"]].itertuples()}


def test_each_budget_buys_each_series_one_design_within_it():
    power = table("pairwise_vs_likert_rank")
    assert set(power["budget"]) == set(BUDGETS) and set(power["series"]) == set(SERIES)
    assert (power["trials_power"] == TRIALS).all() and (power["trials_type1"] == TRIALS).all()
    assert (power["docs"] == 5 * power["blocks"]).all() and (power["annotators"] == 3 * power["blocks"]).all()
    designs = power.drop_duplicates(["budget", "series", "design"])
    assert len(designs) == len(BUDGETS) * len(SERIES)  # one design per budget and series
    assert not power.duplicated(["budget", "series", "test"]).any()
    for row in designs.itertuples():
        # within the budget, and one more block would not be (no fixed costs: the cost is linear in blocks)
        assert round(row.cost, 2) <= row.budget < round(row.cost * (row.blocks + 1) / row.blocks, 2), row
        assert row.seconds_per_item == pytest.approx(SECONDS[row.series])


def test_the_best_test_is_the_most_powerful_that_holds_its_level():
    power = table("pairwise_vs_likert_rank")
    assert list(power["verdict"]) == [verdict(lo, hi) for lo, hi in zip(power["type1_low"], power["type1_high"])]
    keys = [power["budget"], power["series"]]
    assert power["best"].groupby(keys).sum().eq(1).all()
    holds = power["verdict"].eq("holds")
    pool = power[holds | ~holds.groupby(keys).transform("any")]  # the valid tests, or every test where none is
    most = pool.groupby(["budget", "series"])["power"].max()
    assert power[power["best"]].set_index(["budget", "series"])["power"].sort_index().equals(most)


def test_the_pages_power_headline():
    chosen = best(table("pairwise_vs_likert_rank"))
    assert all(row.verdict == "holds" for row in chosen.values())  # every series has a valid test at every budget
    for budget in BUDGETS:
        likert, rank = chosen[(budget, "likert")], chosen[(budget, "rank")]
        strongest = max((likert, rank), key=lambda row: row.power)
        two_pairs, every_pair = chosen[(budget, "pairwise_2pairs")], chosen[(budget, "pairwise")]
        # "two pairs per annotator and document beat both at every budget, with intervals apart"
        assert two_pairs.power_low > strongest.power_high, budget
        # "every pair per annotator and document: below the better of Likert and Rank from 60 EUR on (intervals
        # apart); at 40 EUR their only valid test, art_block on 5 blocks, cannot reject"
        if budget >= 60:
            assert every_pair.power_high < strongest.power_low, budget
        else:
            assert strongest.power == 0 and likert.test == rank.test == "art_block" and every_pair.power > 0.3


def test_the_sensitivity_table_is_at_one_budget_and_agrees_with_the_power_table():
    sensitivity = table("pairwise_sensitivity")
    assert (sensitivity["budget"] == 120).all()
    assert set(sensitivity["base"]) == {"pairwise", "pairwise_2pairs"}
    assert {(p, v) for p, v in zip(sensitivity["parameter"], sensitivity["value"])} == {
        ("tie_band", 0.0), ("tie_band", 0.5), ("tie_band", 1.0), ("noise", 0.7), ("noise", 1.0), ("noise", 1.5),
        ("seconds_factor", 1.0), ("seconds_factor", 1.3), ("seconds_factor", 2.0)}
    power = table("pairwise_vs_likert_rank")
    main = {(r.series, r.test): r for r in power[power["budget"] == 120].itertuples()}
    assumed = {("tie_band", 0.5), ("noise", 1.0), ("seconds_factor", 1.3)}
    rows = [row for row in sensitivity.itertuples() if (row.parameter, row.value) in assumed]
    assert len(rows) == 3 * 2 * 3  # three assumptions, two series, three tests
    for row in rows:  # the assumed values are the power table's rows at the same budget
        same = main[(row.base, row.test)]
        assert (row.power, row.type1, row.blocks) == (same.power, same.type1, same.blocks)
    for row in sensitivity.itertuples():
        assert round(row.cost, 2) <= 120


def test_the_pages_sensitivity_claims():
    sensitivity = table("pairwise_sensitivity")
    chosen = sensitivity[sensitivity["best"]]
    # "with every pair, the plan picks Rank (tied with Likert) whatever the assumptions; with two pairs, pairwise"
    picks = {base: set(chosen.loc[chosen["base"] == base, "plan_pick"]) for base in ("pairwise", "pairwise_2pairs")}
    assert picks == {"pairwise": {"rank"}, "pairwise_2pairs": {"pairwise"}}
    # "a wider tie band gives more power (a tie is information), more noise less"
    for base in ("pairwise", "pairwise_2pairs"):
        mine = chosen[chosen["base"] == base]
        ties = mine[mine["parameter"] == "tie_band"].sort_values("value")["power"]
        noise = mine[mine["parameter"] == "noise"].sort_values("value")["power"]
        assert len(ties) == len(noise) == 3, base
        assert ties.is_monotonic_increasing and noise.is_monotonic_decreasing, base


# --- bootstrap coverage -------------------------------------------------------------------------------------

def test_bootstrap_intervals_cover_the_target_at_their_nominal_rate():
    """Issue 42: over >= 1,000 logs the Wilson interval of the coverage contains 0.95 or lies above it (the
    percentile intervals resampling prompts and judges, each system and all at once)."""
    coverage = table("pairwise_bootstrap_coverage")
    assert (coverage["logs"] >= 1000).all() and (coverage["level"] == 0.95).all()
    assert (coverage["target_battles"] == 1_000_000).all()
    main = coverage[(coverage["scheme"] == "prompts_and_judges") & (coverage["interval"] == "percentile")]
    assert len(main) == 6  # five systems and the simultaneous row
    assert (main["ci_high"] >= 0.95).all(), main[["system", "coverage", "ci_low", "ci_high"]]
    # the target's own error is negligible beside the intervals (its SE under 2% of their mean width)
    systems = main[main["system"] != "all (simultaneous)"]
    assert (systems["target_se"] < 0.02 * systems["mean_width"]).all()


def test_the_pages_coverage_investigation():
    coverage = table("pairwise_bootstrap_coverage").set_index(["scheme", "interval", "system"]).sort_index()
    systems = [s for s in coverage.loc[("prompts", "percentile")].index if s != "all (simultaneous)"]
    # "resampling prompts alone misses the judges' share and covers less than 95%"
    assert all(coverage.loc[("prompts", "percentile", s), "ci_high"] < 0.95 for s in systems)
    # "the two-way bootstrap is conservative: its SD exceeds the estimates' SD over logs"
    two_way = coverage.loc[("prompts_and_judges", "percentile")].loc[systems]
    assert (two_way["mean_boot_sd"] > two_way["sd_estimates"]).all() and (two_way["ci_low"] > 0.95).all()
