"""Plans with pairwise preference (issue 42, part 5): Likert, Rank and pairwise compared, a cost per comparison,
and the Arena-style "how many battles" goals (power_over: top_pair, adjacent_pairs)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import yaml

import simdesign
from simdesign.methods.pairwise import SECONDS_PER_COMPARISON_FACTOR
from simdesign.planning.plan_search import goal_indicators
from simdesign.planning.planner import annotation_times

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]


def test_order_goals_read_the_adjacent_pairs_of_the_true_order():
    # effects 0, 2, 1: the true order is system 1 > system 2 > system 0; the pairs with a true difference, in
    # model order, are (0, 1), (0, 2), (1, 2); the adjacent ones are (1, 2) (the top pair) and (0, 2)
    config = SimpleNamespace(model=SimpleNamespace(effects=np.array([0.0, 2.0, 1.0]), n_systems=3))
    right = np.array([[True, False, True],    # top pair yes, (0, 2) no
                      [False, True, True],    # both adjacent pairs
                      [True, True, False]])   # top pair no
    config.power_over = "top_pair"
    assert goal_indicators(config, right)[:, 0].tolist() == [True, True, False]
    config.power_over = "adjacent_pairs"
    assert goal_indicators(config, right)[:, 0].tolist() == [False, True, False]
    config.power_over = "pooled"
    assert goal_indicators(config, right) is right


def _tiny(path, **changes) -> dict:
    raw = yaml.safe_load((ROOT / path).read_text())
    return {**raw, "screen_trials": 20, "max_trials": 40, "confirm_trials": 40, **changes}


@pytest.mark.slow
def test_a_plan_compares_likert_rank_and_pairwise_paying_per_comparison(tmp_path):
    raw = _tiny("configs/plan_methods_pairwise.yaml", tests=["ttest_doc", "pair_sign"],
                search={"methods": ["likert", "rank", "pairwise"], "shapes": ["block"], "docs": [20, 40],
                        "docs_per_block": [5], "annotators_per_block": [3]})
    table = simdesign.plan(raw, jobs=1, progress=False).table
    assert set(table["method"]) == {"likert", "rank", "pairwise"}
    # each method got only the tests that take its judgements
    assert set(table.loc[table["method"] == "pairwise", "test"]) == {"pair_sign@pairwise"}
    assert set(table.loc[table["method"] != "pairwise", "test"]) == {"ttest_doc", "ttest_doc@rank"}
    # the cost of a pairwise candidate: every pair of the 5 systems per annotator and document (10), at the
    # assumed seconds per comparison, plus 5 EUR per annotator (computed here from the design, not by the planner)
    likert_seconds = annotation_times()["likert"]["coherence"]["capped_mean_seconds"]
    for _, row in table[table["method"] == "pairwise"].iterrows():
        comparisons = row["docs"] * 3 * 10
        expected = comparisons * SECONDS_PER_COMPARISON_FACTOR * likert_seconds / 3600 * 12 + 5 * row["annotators"]
        assert row["items"] == comparisons and row["cost"] == pytest.approx(expected, rel=1e-3)


@pytest.mark.slow
def test_how_many_battles_to_separate_the_top_pair(tmp_path):
    raw = _tiny("configs/plan_battles.yaml", tests=["bradley_terry"],
                search={"methods": ["pairwise"], "shapes": ["battles"], "docs": [200], "battles": [250, 4000],
                        "judges": [20]})
    outcome = simdesign.plan(raw, jobs=1, progress=False)
    table = outcome.candidates.set_index("design")
    # 4,000 battles separate the top pair (coherence: BART > onmt_pg) nearly always, 250 rarely
    assert table.loc["battles-N4000-P200-J20", "power"] > 0.8 > table.loc["battles-N250-P200-J20", "power"]
    assert "BART > onmt_pg" in outcome.recommendation
