"""Every plan shows the weakest pair's power beside pooled power, and warns about short workloads (issue 39).

Scripted outcomes (exact rates per pair) on small plans: the decision procedure is not what is tested.
"""
import numpy as np
import pytest

from simdesign.planning.plan_report import MIN_JUDGEMENTS_PER_ANNOTATOR, plan_table, recommendation_text
from simdesign.planning.plan_search import OutcomeSource, decide_plan
from simdesign.planning.planner import parse_plan
from test_planner import plan

CLOSE = 0.2  # the power of the closest pair (the first relevant pair); every other pair is detected at 0.95


class PerPair(OutcomeSource):
    """Trial t rejects pair j when (t x rate_j) crosses an integer: every span has exactly the pair's rate."""

    def __init__(self, n_pairs: int, type1: float = 0.02):
        self.rates = np.full(n_pairs, 0.95)
        self.rates[0] = CLOSE
        self.type1 = type1

    @staticmethod
    def _rows(first, stop, rates):
        t = np.arange(first, stop)[:, None]
        return np.floor((t + 1) * rates) > np.floor(t * rates)

    def power(self, wanted):
        return {key: self._rows(first, stop, self.rates) for key, (first, stop) in wanted.items()}

    def null(self, wanted):
        return {key: self._rows(first, stop, np.full(10, self.type1)) for key, (first, stop) in wanted.items()}


def small_plan(per_annotator: float, docs_per_block: int, **changes):
    return parse_plan(plan(cost={"pay_per_hour": 12.0, "per_annotator": per_annotator, "seconds_per_judgement": 20},
                           search={"designs": [{"kind": "block", "blocks": 20, "docs_per_block": docs_per_block,
                                                "annotators_per_block": 1}]},
                           screen_trials=40, max_trials=160, **changes))


def decided(config):
    n_pairs = sum(1 for i in range(5) for j in range(i + 1, 5) if config.model.effects[i] != config.model.effects[j])
    return decide_plan(config, PerPair(n_pairs))


def test_a_pooled_plan_shows_the_weakest_pairs_power_in_its_table_and_recommendation():
    config = small_plan(5.0, 5)
    result = decided(config)
    assert result.recommended is not None
    pooled = result.recommended.power
    assert pooled > 0.8  # pooled power looks fine ...
    row = plan_table(result).iloc[0]
    assert row["weakest_pair_power"] == pytest.approx(CLOSE)  # ... while the closest pair is rarely detected
    assert row["weakest_pair_low"] < CLOSE < row["weakest_pair_high"]
    assert " vs " in row["weakest_pair"]
    text = recommendation_text(result)
    assert f"its weakest pair, {row['weakest_pair']}: 0.200 [" in text
    assert "power_over: each_pair plans for every pair" in text


def test_an_each_pair_plan_names_its_weakest_pair_too():
    config = small_plan(5.0, 5, power_over="each_pair", target_power=0.1)
    result = decided(config)
    table = plan_table(result)
    assert table.loc[0, "weakest_pair_power"] == pytest.approx(CLOSE) == table.loc[0, "power"]
    assert "power_over: each_pair plans" not in recommendation_text(result)


def test_short_workloads_without_a_fixed_cost_per_annotator_are_warned_about():
    # 20 blocks of 2 documents, one annotator each: 10 judgements per annotator (5 systems)
    words = recommendation_text(decided(small_plan(0.0, 2)))
    assert "Warning: short workloads" in words and f"fewer than {MIN_JUDGEMENTS_PER_ANNOTATOR}" in words
    assert "at most 10 outputs" in words
    # a fixed cost per annotator prices the spread in; a workload at the minimum needs no warning
    assert "short workloads" not in recommendation_text(decided(small_plan(5.0, 2)))
    assert "short workloads" not in recommendation_text(decided(small_plan(0.0, 5)))


@pytest.mark.slow  # real runs, half a second or more: the fast tier stays under a minute
def test_the_command_prints_the_weakest_pairs_power(tmp_path, capsys):
    from simdesign.cli import main

    config = tmp_path / "tiny.yaml"
    config.write_text("name: tiny\nmodel: coherence\neffect: fitted\ntests: [ttest_doc]\ntarget_power: 0.3\n"
                      "cost: {pay_per_hour: 12, per_annotator: 1}\nmax_type1: null\n"
                      "search: {designs: [{kind: block, blocks: 20, docs_per_block: 5, annotators_per_block: 1}]}\n"
                      "screen_trials: 10\nmax_trials: 20\nconfirm_trials: 20\nseed: 1\n")
    assert main(["plan", str(config), "--out", str(tmp_path / "out"), "--jobs", "1", "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "weakest_pair_power" in printed.splitlines()[1] and "its weakest pair, " in printed


def test_a_budget_plan_spreading_the_work_for_free_is_warned_about_too():
    config = small_plan(0.0, 2, target_power=None, budget=1000.0, max_type1=0.075)
    result = decided(config)
    assert result.recommended is not None and result.config.goal == "budget"
    words = recommendation_text(result)
    assert "Warning: short workloads" in words and "cost.per_annotator 0" in words
    assert plan_table(result).loc[0, "weakest_pair_power"] == pytest.approx(CLOSE)
