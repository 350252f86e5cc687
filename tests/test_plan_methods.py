"""Likert or Rank as a planning dimension (search.methods)."""
import dataclasses

import numpy as np
import pytest
import yaml

from simdesign.core.errors import ConfigError
from simdesign.model import load_model
from simdesign.planning.method_search import check_engine_method
from simdesign.planning.plan_report import plan_table, recommendation_text
from simdesign.planning.plan_search import OutcomeSource, decide_plan
from simdesign.planning.planner import annotation_times, parse_plan


def plan(**changes):
    base = {
        "name": "methods", "model": "coherence", "effect": "fitted", "tests": ["art_block"], "alpha": 0.05,
        "target_power": 0.8, "cost": {"pay_per_hour": 12, "per_annotator": 0},
        "search": {"designs": [{"kind": "block", "blocks": 10, "docs_per_block": 5, "annotators_per_block": 2},
                               {"kind": "block", "blocks": 20, "docs_per_block": 5, "annotators_per_block": 3}],
                   "methods": ["likert", "rank"]},
        "screen_trials": 40, "max_trials": 160, "seed": 3, "max_type1": None,
    }
    base.update(changes)
    return parse_plan(base)


def test_rank_candidates_cost_the_papers_rank_time_and_have_their_own_store():
    config = plan()
    times = annotation_times()
    by_method = {m: [c for c in config.candidates if c.method == m] for m in ("likert", "rank")}
    assert len(by_method["likert"]) == len(by_method["rank"]) == 2
    assert all(c.test.label == "art_block@rank" for c in by_method["rank"])
    design = by_method["likert"][0].design  # 10 x 5 x 2 x 5 systems = 500 judged outputs at 12 per hour
    assert by_method["likert"][0].total_cost == pytest.approx(500 * times["likert"]["coherence"]["capped_mean_seconds"]
                                                              / 3600 * 12)
    assert by_method["rank"][0].design == design
    assert by_method["rank"][0].total_cost == pytest.approx(500 * 26.67 / 3600 * 12)
    mappings = config.simulation_config_mappings()
    assert set(mappings) == {"block", "block-rank"}
    assert mappings["block-rank"]["method"] == "rank" and "method" not in mappings["block"]
    # the plan's tests under their own labels: the engine labels their rank work items 'art_block@rank'
    assert [t["label"] for t in mappings["block-rank"]["tests"]] == ["art_block"]


def test_seconds_per_method_mapping_and_default():
    config = plan(cost={"pay_per_hour": 12, "seconds_per_judgement": {"likert": 10, "rank": 20}})
    assert config.method_costs["likert"].seconds_per_judgement == 10
    assert config.method_costs["rank"].seconds_per_judgement == 20
    only_likert = plan(search={"designs": [{"kind": "block", "blocks": 10, "docs_per_block": 5,
                                            "annotators_per_block": 2}]})
    assert only_likert.methods == ("likert",) and all(c.method == "likert" for c in only_likert.candidates)


def test_rank_needs_a_joint_model_and_methods_are_checked(tmp_path):
    likert_only = dataclasses.replace(load_model("coherence"), rank_noise=None)
    path = tmp_path / "likert.yaml"
    path.write_text(yaml.safe_dump(likert_only.to_dict()))
    with pytest.raises(ConfigError, match="search.methods.*joint Likert/Rank model"):
        plan(model=str(path), cost={"pay_per_hour": 12, "seconds_per_judgement": 20})
    with pytest.raises(ConfigError, match=r"search.methods.*\['likert', 'rank'\]"):
        plan(search={"designs": [{"kind": "block", "blocks": 2, "docs_per_block": 5, "annotators_per_block": 2}],
                     "methods": ["likert", "pairwise"]})


def test_recommendation_names_the_method_and_the_other_methods_best():
    config = plan()
    cheapest = min(config.candidates, key=lambda c: c.total_cost)
    assert cheapest.method == "rank"  # 26.7 s against 30.5 s per output

    class Scripted(OutcomeSource):
        def power(self, wanted):  # every candidate has full power
            return {key: np.ones((stop - first, 1), bool) for key, (first, stop) in wanted.items()}

    result = decide_plan(config, Scripted())
    assert result.recommended.candidate.key == cheapest.key
    table = plan_table(result)
    assert table.loc[0, "method"] == "rank" and set(table["method"]) == {"likert", "rank"}
    assert table.loc[0, "seconds_per_judgement"] == pytest.approx(26.67)
    text = recommendation_text(result)
    assert "Annotation method: **Rank**" in text and "with Likert" in text


def test_planning_rank_refuses_on_an_engine_without_the_method_hook():
    from simdesign.studies.rates.config import SimulationConfig

    check_engine_method("likert")
    if "methods" in getattr(SimulationConfig, "__dataclass_fields__", {}):
        check_engine_method("rank")
    else:
        with pytest.raises(ConfigError, match="work_specs"):
            check_engine_method("rank")


def test_budget_recommendation_compares_with_the_other_methods_best_that_holds_its_level():
    # issue 39: the Likert side of a budget plan was summarised by its most powerful candidate, a liberal one
    from test_plan_budget import Scripted

    config = plan(target_power=None, budget=10_000.0, tests=["art_block", "ttest_doc"], max_type1=0.075,
                  screen_trials=50, max_trials=800)
    power, type1 = {}, {}
    for c in config.candidates:
        liberal = c.method == "likert" and c.test.label == "ttest_doc"
        power[c.key] = 0.95 if liberal else (0.85 if c.method == "rank" else 0.70)
        type1[c.key] = 0.20 if liberal else 0.02
    result = decide_plan(config, Scripted(power, type1))
    assert result.recommended.candidate.method == "rank"
    text = recommendation_text(result)
    assert "with Likert" in text
    sentence = text.split("with Likert", 1)[1]
    assert "candidate shown to hold its level reached 0.700" in sentence
    assert "with art_block, type I error 2.0%" in sentence
    # the liberal one is named only as what it is
    assert "a more powerful one, 0.950" in sentence and "ttest_doc" in sentence and "was shown to exceed" in sentence


class _FailsItsConfirmation(OutcomeSource):
    """Full power everywhere; type I error 2%, except one key's fresh (confirmation) trials at 30%."""

    def __init__(self, failing, max_trials):
        self.failing, self.max_trials = failing, max_trials

    def power(self, wanted):
        return {key: np.ones((stop - first, 1), bool) for key, (first, stop) in wanted.items()}

    def null(self, wanted):
        out = {}
        for key, (first, stop) in wanted.items():
            t = np.arange(first, stop)
            rate = np.where((key == self.failing) & (t >= self.max_trials), 0.3, 0.02)
            out[key] = (np.floor((t + 1) * rate) > np.floor(t * rate))[:, None]
        return out


def test_target_recommendation_never_names_a_rival_that_failed_its_confirmation():
    # issue 39: the coherence method plan named Likert's block-B12-D5-A2 (which failed its type I confirmation)
    # as "the cheapest candidate shown to reach the target"
    config = plan(cost={"pay_per_hour": 12, "per_annotator": 0, "seconds_per_judgement": {"likert": 10, "rank": 20}},
                  max_type1=0.075, screen_trials=50, max_trials=800)
    likert = sorted((c for c in config.candidates if c.method == "likert"), key=lambda c: c.total_cost)
    result = decide_plan(config, _FailsItsConfirmation(likert[0].key, config.max_trials))
    assert result.recommended.candidate.method == "rank"
    sentence = recommendation_text(result).split("with Likert", 1)[1].split(". ")[0]
    assert f"the cheapest candidate shown to reach the target, {likert[1].design.label} with art_block" in sentence
    assert f"failed its confirmation on fresh studies: {likert[0].design.label} with art_block" in sentence
