"""The budget planner: config validation, cost model, effects, adaptive search, reports, CLI.

Statistical assertions use the trial-level Monte-Carlo SE (docs/estimands.md)
with fixed seeds; search spaces are small so the file runs in well under a
minute and a half on two busy cores.
"""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from simdesign.cli import main
from simdesign.designs import BlockDesign
from simdesign.engine import Chunk, simulate_chunk
from simdesign.errors import ConfigError
from simdesign.model import load_model
from simdesign.plan_report import pareto_front, plan_table
from simdesign.plan_search import assess, right_rejections, run_plan, trial_schedule
from simdesign.planner import (CostModel, annotation_times, parse_plan, plan_study, smallest_difference,
                               solve_effect_scale)
from simdesign.summary import summarise_group

SHARED_TIMES = Path(__file__).resolve().parents[2] / "shared" / "data" / "steen-markert-2021" / "times"


def plan(**changes) -> dict:
    """A small valid plan config mapping, with top-level changes."""
    base = {
        "name": "plan-test", "model": "coherence", "effect": "fitted", "tests": ["ttest_doc"], "alpha": 0.05,
        "target_power": 0.6, "cost": {"pay_per_hour": 12.0, "per_annotator": 0.0},
        "search": {"designs": [{"kind": "block", "blocks": 20, "docs_per_block": 5, "annotators_per_block": 1}]},
        "screen_trials": 40, "max_trials": 320, "seed": 11, "max_type1": None,
    }
    base.update(changes)
    return base


def row(table: pd.DataFrame, design: str, test: str) -> pd.Series:
    return table[(table["design"] == design) & (table["test"] == test)].iloc[0]


def difference_in_mcse(a: pd.Series, b: pd.Series) -> float:
    """(power a - power b) in units of the SE of the difference (independent streams per design)."""
    return (a["power"] - b["power"]) / np.hypot(a["mcse"], b["mcse"])


# ---------------------------------------------------------------------------------------------------------------
# Shipped data, cost model, effects


@pytest.mark.skipif(not SHARED_TIMES.is_dir(), reason="the shared study data are not available")
def test_shipped_annotation_times_are_the_medians_of_the_paper_data():
    shipped = annotation_times()
    for kind in ("likert", "rank"):
        for task in ("coherence", "repetition"):
            times = pd.read_csv(SHARED_TIMES / f"{kind}_{task}_cnn_dm.csv")["time_stamp"]
            assert shipped[kind][task]["median_seconds"] == pytest.approx(times.median(), abs=0.01)
            assert shipped[kind][task]["items"] == len(times)
    assert shipped["likert"]["coherence"]["median_seconds"] == pytest.approx(19.13)
    assert "Steen" in shipped["citation"]


def test_cost_model_adds_pay_and_fixed_costs():
    cost = CostModel(pay_per_hour=12.0, seconds_per_judgement=18.0, per_annotator=2.0, per_document=0.5)
    items = cost.breakdown(BlockDesign(20, 5, 3), n_systems=5)  # 1500 judgements, 60 annotators, 100 documents
    assert items["hours"] == pytest.approx(7.5)
    assert items["labour_cost"] == pytest.approx(90.0)
    assert items["cost"] == pytest.approx(90.0 + 120.0 + 50.0)


def test_auto_seconds_per_judgement_comes_from_the_models_task():
    assert parse_plan(plan()).cost.seconds_per_judgement == pytest.approx(19.13)
    assert parse_plan(plan(model="repetition")).cost.seconds_per_judgement == pytest.approx(17.31)


def test_min_difference_effect_in_latent_units_and_likert_points():
    model = load_model("coherence")
    latent = parse_plan(plan(effect={"min_difference": 0.5, "unit": "latent"}))
    assert smallest_difference(model, latent.effect, "latent") == pytest.approx(0.5)
    assert latent.effect == pytest.approx(0.5 / 0.24533068, rel=1e-6)
    likert = parse_plan(plan(effect={"min_difference": 0.2, "unit": "likert"}))
    assert smallest_difference(model, likert.effect, "likert") == pytest.approx(0.2, abs=1e-8)
    # the expected Likert difference of the closest pair, integrated over the random effects
    means = model.expected_scores(likert.effect)
    pairs = [abs(means[i] - means[j]) for i in range(5) for j in range(i + 1, 5)]
    assert min(pairs) == pytest.approx(0.2, abs=1e-8)
    with pytest.raises(ConfigError, match="cannot be reached"):
        solve_effect_scale(model, 7.0, "likert")


# ---------------------------------------------------------------------------------------------------------------
# Validation


def test_bad_plan_config_collects_every_problem_with_its_field():
    bad = plan(target_power=1.2, alpha=0, power_over="mean", colour="red",
               cost={"pay_per_hour": -1, "seconds_per_judgement": "slow"},
               search={"shapes": ["nested", "triangle"], "docs": [10]})
    with pytest.raises(ConfigError) as caught:
        parse_plan(bad)
    text = str(caught.value)
    for needle in ("'target_power' field must be a number > 0 and < 1; got 1.2", "'alpha' field",
                   "'power_over' field", "Unknown plan config key(s) ['colour']", "'cost.pay_per_hour' field",
                   "'cost.seconds_per_judgement' field", "'search.shapes' field"):
        assert needle in text, needle
    assert len(caught.value.messages) >= 7


def test_empty_search_space_is_an_error_naming_search():
    with pytest.raises(ConfigError, match="'search' field gives no design"):
        parse_plan(plan(search={"shapes": ["nested"], "docs": [7], "docs_per_block": [2, 5]}))
    with pytest.raises(ConfigError, match=r"empty search space.*max_judgements_per_annotator"):
        parse_plan(plan(limits={"max_judgements_per_annotator": 10}))


def test_budget_below_the_cheapest_design_is_an_error_naming_budget():
    config = plan(target_power=None, budget=1.0)
    with pytest.raises(ConfigError, match=r"The 'budget' field \(1\) is below the cheapest design .* costs 31\.88"):
        parse_plan(config)


def test_exactly_one_goal_and_max_type1_at_least_alpha():
    with pytest.raises(ConfigError, match="exactly one goal"):
        parse_plan(plan(budget=100.0))
    with pytest.raises(ConfigError, match="'max_type1' field"):
        parse_plan(plan(max_type1=0.01))


def test_grid_builds_shapes_and_excludes_what_does_not_apply():
    config = parse_plan(plan(tests=["art_block", "ttest_doc"], search={
        "shapes": ["nested", "block", "crossed", "pool"], "docs": [20], "docs_per_block": [5, 20],
        "annotators_per_block": [3], "judgements_per_output": [2], "annotators": [4]}))
    labels = {c.design.label for c in config.candidates}
    assert labels == {"block-B4-D5-A1", "block-B1-D20-A1", "block-B4-D5-A3", "block-B1-D20-A3", "pool-N20-M4-k2"}
    excluded = {c.key: c.excluded for c in config.candidates if c.excluded}
    assert excluded[("pool-N20-M4-k2", "art_block")].startswith("n/a")
    assert excluded[("block-B1-D20-A3", "art_block")].startswith("n/a")


# ---------------------------------------------------------------------------------------------------------------
# Estimands and the adaptive search


def test_planner_power_is_the_summary_power_estimand():
    model = load_model("coherence")
    spec = parse_plan(plan()).tests[0]
    frame = simulate_chunk(model, "fitted", 3, Chunk(BlockDesign(6, 5, 2), 0, 60, (spec,)))
    frame = frame.sort_values(["trial", "pair"])
    rows = {r["estimand"]: r for r in summarise_group(frame, 0.05, is_null=False)}
    indicators, relevant = right_rejections(frame, 0.05)
    pooled = assess(indicators, "pooled", 0.95)
    assert pooled["power"] == pytest.approx(rows["power"]["rate"])
    assert pooled["mcse"] == pytest.approx(rows["power"]["mcse"])
    assert (pooled["ci_low"], pooled["ci_high"]) == pytest.approx((rows["power"]["ci_low"], rows["power"]["ci_high"]))
    weakest = assess(indicators, "each_pair", 0.95)
    assert weakest["power"] == pytest.approx(indicators.mean(axis=0).min())
    assert weakest["ci_high"] <= pooled["ci_high"] + 1e-12 and len(relevant) == 10


def test_trial_schedule_doubles_up_to_the_cap():
    assert trial_schedule(40, 320) == [40, 80, 160, 320]
    assert trial_schedule(50, 50) == [50]


def test_known_optimum_is_found_and_the_search_is_cheaper_than_full_evaluation(tmp_path):
    # By construction: art_block with 4 blocks cannot reject at 0.05 (exact test: p >= 2/2^4), so the cheap
    # design fails for sure; 20 nested blocks pass 0.5 easily; everything else costs at least twice as much.
    config = parse_plan(plan(tests=["art_block"], target_power=0.5, max_type1=0.1, search={"designs": [
        {"kind": "block", "blocks": 4, "docs_per_block": 5, "annotators_per_block": 1},
        {"kind": "block", "blocks": 20, "docs_per_block": 5, "annotators_per_block": 1},
        {"kind": "block", "blocks": [20, 40, 10], "docs_per_block": [5, 5, 10], "annotators_per_block": [2, 1, 3]},
    ]}))
    result = plan_study(config, tmp_path / "plan")
    assert result.recommended.candidate.design.label == "block-B20-D5-A1"
    table = plan_table(result)
    cheap = row(table, "block-B4-D5-A1", "art_block")
    assert cheap["power"] == 0 and cheap["decision"] == "fail" and cheap["trials"] == 40
    best = row(table, "block-B20-D5-A1", "art_block")
    assert best["decision"] == "recommended" and best["ci_low"] >= 0.5 and best["type1_high"] <= 0.1
    # costlier candidates never needed more than the screening trials
    assert (table[table["cost"] > best["cost"] * 1.05]["trials"] == 40).all()
    assert result.adaptive_trials < result.full_trials / 3
    # evaluating every candidate fully (power and type I error at max_trials) reaches the same answer
    full = run_plan(config, tmp_path / "plan", exhaustive=True)
    assert full.adaptive_trials == full.full_trials == result.full_trials
    assert full.recommended.candidate.key == result.recommended.candidate.key
    full_decisions = plan_table(full).set_index(["design", "test"])["decision"]
    for key, decision in table.set_index(["design", "test"])["decision"].items():
        if decision in ("pass", "fail", "liberal", "recommended"):
            assert full_decisions[key] == decision, key
    assert (tmp_path / "plan" / "recommendation.md").read_text().count("block-B20-D5-A1") >= 1
    assert (tmp_path / "plan" / "plan-test.png").is_file() and (tmp_path / "plan" / "plan-test.pdf").is_file()
    # a re-run resumes: nothing new is simulated and the answer is identical
    again = plan_study(config, tmp_path / "plan")
    assert again.new_studies == 0
    pd.testing.assert_frame_equal(plan_table(again), table)


def test_undecided_at_the_cap_is_never_passing(tmp_path):
    # a target right at a candidate's power cannot be decided with few trials
    config = parse_plan(plan(tests=["ttest_doc"], target_power=0.705, screen_trials=20, max_trials=40, search={
        "designs": [{"kind": "block", "blocks": 20, "docs_per_block": 3, "annotators_per_block": 1}]}))
    result = plan_study(config)
    assert result.recommended is None
    assert result.results[0].decision == "undecided" and result.results[0].trials == 40


# ---------------------------------------------------------------------------------------------------------------
# The paper's conclusions, as the planner's choices


def test_nested_beats_crossed_at_the_same_number_of_judgements(tmp_path):
    # 300 judgements each: 20 annotators with 3 documents of their own vs 3 annotators sharing 20 documents
    config = parse_plan(plan(target_power=None, budget=100.0, screen_trials=200, max_trials=200, max_type1=0.1,
                             search={"designs": [
                                 {"kind": "block", "blocks": 20, "docs_per_block": 3, "annotators_per_block": 1},
                                 {"kind": "block", "blocks": 1, "docs_per_block": 20, "annotators_per_block": 3}]}))
    costs = {c.design.label: c.total_cost for c in config.candidates}
    assert costs["block-B20-D3-A1"] == pytest.approx(costs["block-B1-D20-A3"])
    result = plan_study(config)
    table = plan_table(result)
    nested, crossed = row(table, "block-B20-D3-A1", "ttest_doc"), row(table, "block-B1-D20-A3", "ttest_doc")
    assert result.recommended.candidate.design.label == "block-B20-D3-A1"
    assert difference_in_mcse(nested, crossed) > 3
    # shown to have less power, the crossed design needed no type I check
    assert crossed["decision"] == "worse" and crossed["type1_trials"] == 0


def test_a_test_that_does_not_hold_its_level_is_never_recommended(tmp_path):
    # 3 annotators judging all 40 documents: the per-document t-test is powerful but rejects a true null far
    # more often than alpha (the paper's Figure 4), so the planner pays for the nested design instead.
    config = parse_plan(plan(target_power=0.6, max_type1=0.1, search={"designs": [
        {"kind": "block", "blocks": 1, "docs_per_block": 40, "annotators_per_block": 3},
        {"kind": "block", "blocks": 40, "docs_per_block": 5, "annotators_per_block": 1}]}))
    result = plan_study(config)
    table = plan_table(result)
    crossed = row(table, "block-B1-D40-A3", "ttest_doc")
    assert crossed["cost"] < row(table, "block-B40-D5-A1", "ttest_doc")["cost"]
    assert crossed["ci_low"] >= 0.6 and crossed["decision"] == "liberal" and crossed["type1_low"] > 0.1
    assert result.recommended.candidate.design.label == "block-B40-D5-A1"


def test_more_annotators_buy_more_power_than_more_judgements_per_output(tmp_path):
    # 900 judgements each: 36 annotators with one judgement per output, or 12 annotators with three
    config = parse_plan(plan(target_power=None, budget=100.0, screen_trials=200, max_trials=200, search={"designs": [
        {"kind": "block", "blocks": 36, "docs_per_block": 5, "annotators_per_block": 1},
        {"kind": "block", "blocks": 4, "docs_per_block": 15, "annotators_per_block": 3},
        {"kind": "pool", "docs": [180, 60], "annotators": [36, 12], "judgements_per_output": [1, 3]}]}))
    assert len({round(c.total_cost, 6) for c in config.candidates}) == 1
    result = plan_study(config)
    table = plan_table(result)
    assert result.recommended.candidate.design.annotators == 36
    assert difference_in_mcse(row(table, "block-B36-D5-A1", "ttest_doc"), row(table, "block-B4-D15-A3", "ttest_doc")) > 3
    assert difference_in_mcse(row(table, "pool-N180-M36-k1", "ttest_doc"), row(table, "pool-N60-M12-k3", "ttest_doc")) > 3


def test_art_block_needs_more_than_five_blocks(tmp_path):
    # Strong per-block signal (20 documents per block) and still no rejection with 5 or fewer blocks: the exact
    # randomisation test's smallest p-value is 2 / 2^B > 0.05. With 10 blocks the same test has power.
    config = parse_plan(plan(tests=["art_block"], target_power=0.3, screen_trials=60, max_trials=60, search={
        "designs": [{"kind": "block", "blocks": [3, 5, 10], "docs_per_block": 20, "annotators_per_block": 1}]}))
    result = plan_study(config)
    table = plan_table(result)
    for blocks in (3, 5):
        few = row(table, f"block-B{blocks}-D20-A1", "art_block")
        assert few["power"] == 0.0 and few["decision"] == "fail"
    enough = row(table, "block-B10-D20-A1", "art_block")
    assert enough["power"] > 0.3 and enough["decision"] == "recommended"


# ---------------------------------------------------------------------------------------------------------------
# Reports and CLI


def test_pareto_front_keeps_the_non_dominated_candidates():
    cost = np.array([10.0, 20.0, 20.0, 30.0, 40.0])
    power = np.array([0.3, 0.5, 0.6, 0.55, 0.9])
    assert pareto_front(cost, power).tolist() == [0, 2, 4]


def test_cli_plan_writes_table_recommendation_and_figure(tmp_path, capsys):
    config = plan(tests=["art_block", "ttest_doc"], target_power=0.5, screen_trials=30, max_trials=120,
                  search={"shapes": ["nested", "crossed"], "docs": [20, 60], "docs_per_block": [5],
                          "annotators_per_block": [3]})
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(config))
    out = tmp_path / "out"
    assert main(["plan", str(path), "--out", str(out), "--jobs", "1", "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "candidate-trials" in printed and "every candidate at max_trials" in printed
    table = pd.read_csv(out / "plan.csv")
    assert table["rank"].tolist() == list(range(1, len(table) + 1))
    assert table.iloc[0]["decision"] == "recommended"
    assert {"cost", "power", "ci_low", "ci_high", "trials", "decision"} <= set(table.columns)
    assert "recommended study is" in (out / "recommendation.md").read_text()
    assert (out / "plan-test.png").is_file()
    # the stored trials form an ordinary results directory: any trial can be replayed
    assert main(["replay", str(out / "studies" / "block"), "--design", "block-B12-D5-A1", "--trial", "3",
                 "--test", "ttest_doc"]) == 0


def test_cli_plan_reports_config_errors(tmp_path, capsys):
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan(target_power=1.5)))
    assert main(["plan", str(path), "--out", str(tmp_path / "o")]) == 2
    assert "The 'target_power' field must be a number > 0 and < 1; got 1.5" in capsys.readouterr().err
