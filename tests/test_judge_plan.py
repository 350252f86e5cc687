"""Judge plans (issue 43, part 3): parsing, the recommendation's guarantee on the decision procedure with events
at known rates (as the planner's and the replication planner's guarantee tests), and a small plan end to end."""
from __future__ import annotations

import numpy as np
import pytest

import simdesign
from simdesign.core.errors import ConfigError
from simdesign.planning.judge_plan import HUMANS_ONLY, JudgeOutcomes, _TrialFiles, parse_judge_plan
from simdesign.planning.plan_search import decide_plan


def plan(**changes) -> dict:
    raw = {"name": "jp", "model": "coherence", "effect": "fitted", "alpha": 0.05, "target_power": 0.8,
           "cost": {"pay_per_hour": 12.0, "seconds_per_judgement": 20, "per_annotator": 5},
           "search": {"designs": [{"kind": "block", "blocks": [2, 4], "docs_per_block": 5,
                                   "annotators_per_block": 2}]},
           "judge_plan": {"judge": {"preset": "unbiased", "cost_per_call": 0.01}, "documents": 60,
                          "select": ["random", "least_certain"], "targets": ["BART - onmt_pg"],
                          "bootstrap_resamples": 20},
           "screen_trials": 10, "max_trials": 20, "confirm_trials": 20, "confirm_candidates": 1, "seed": 5}
    section = changes.pop("judge_plan", {})
    raw["judge_plan"] = {**raw["judge_plan"], **section}
    return {**raw, **changes}


@pytest.mark.parametrize("changes, message", [
    ({"tests": ["ttest_doc"]}, "leave out 'tests'"),
    ({"max_type1": 0.075}, "checks no type I error"),
    ({"judge_plan": {"select": ["cheapest"]}}, "'judge_plan.select'"),
    ({"judge_plan": {"interval": "wide"}}, "'judge_plan.interval'"),
    pytest.param({"judge_plan": {"targets": ["BART - GPT"]}}, "'judge_plan.targets'", marks=pytest.mark.slow),
    ({"judge_plan": {"judges": 1, "colour": 2}}, r"Unknown 'judge_plan' key\(s\) \['colour'\]"),
])
def test_bad_judge_plans_are_refused_naming_the_field(changes, message):
    with pytest.raises(ConfigError, match=message):
        parse_judge_plan(plan(**changes))


@pytest.mark.slow  # 0.1 s: the judge studies of two selections parsed
def test_a_judge_plan_has_a_humans_only_variant_and_one_per_selection_with_the_judge_cost():
    config = parse_judge_plan(plan())
    assert config.variants() == [HUMANS_ONLY, "judge + random", "judge + least_certain"]
    assert config.judge_cost == pytest.approx(0.01 * 60 * 5)  # per call x documents x systems


class KnownRates(JudgeOutcomes):
    """Each candidate's event at a known rate (one target pair): trial t is row t of fixed uniforms, so later
    looks extend a candidate's trials and the confirmation's trials are fresh draws, as with simulated studies."""

    def __init__(self, config, variant, rates: dict, seed):
        super().__init__(config, variant, _TrialFiles("/nonexistent", config))
        length = config.plan.max_trials + config.plan.confirm_candidates * config.plan.confirm_trials
        rng = np.random.default_rng(seed)
        self.rates = rates
        self.uniforms = {label: rng.random(length) for label in rates}

    def events(self, label, first, stop):
        return (self.uniforms[label][first:stop] < self.rates[label])[:, None]


@pytest.mark.slow
def test_recommending_a_judge_design_below_the_target_power_is_at_most_the_bound():
    # 10 cheap human designs just below the target (0.795) and one dearer above it (0.85), in a judge variant
    config = parse_judge_plan(plan(search={"designs": [{"kind": "block", "blocks": list(range(2, 13)),
                                                        "docs_per_block": 5, "annotators_per_block": 2}]},
                                   screen_trials=50, max_trials=800, confirm_trials=800, confidence=0.95))
    variant = "judge + least_certain"
    candidates = sorted(config.plans[variant].candidates, key=lambda c: c.total_cost)
    rates = {c.design.label: 0.795 for c in candidates[:-1]} | {candidates[-1].design.label: 0.85}
    bound = (1 - config.plan.confidence) / 2
    wrong, replications = 0, 600
    for replication in range(replications):
        outcomes = KnownRates(config, variant, rates, np.random.SeedSequence([43, replication]))
        recommended = decide_plan(config.plans[variant], outcomes).recommended
        wrong += recommended is not None and rates[recommended.candidate.design.label] < 0.8
    rate = wrong / replications
    mcse = max(np.sqrt(rate * (1 - rate) / replications), 1 / replications)
    print(f"10 judge designs at power 0.795: wrong recommendations {rate:.4f} (MCSE {mcse:.4f}), bound {bound}")
    assert rate <= bound + 3 * mcse


@pytest.mark.slow
def test_a_small_judge_plan_runs_end_to_end_and_resumes(tmp_path):
    outcome = simdesign.plan(plan(), out_dir=tmp_path, progress=False)
    assert set(outcome.candidates["variant"]) == {HUMANS_ONLY, "judge + random", "judge + least_certain"}
    judged = outcome.candidates[outcome.candidates["variant"] != HUMANS_ONLY]
    assert (judged["total_cost"] - judged["cost"]).round(9).eq(3.0).all()
    assert "humans only" in outcome.recommendation and (tmp_path / "recommendation.md").is_file()
    again = simdesign.plan(plan(), out_dir=tmp_path, progress=False)
    assert again.effort.count(": 0 studies simulated") == 3  # every trial read back from OUT/judge_outcomes
    assert again.candidates["power"].equals(outcome.candidates["power"])
