"""The planner's cost-ordered screening (``screening: by_cost``) on the decision procedure itself.

Outcomes are binomial draws at known rates or scripted rows (tests/test_planner.py's outcome
sources), so these tests run the search without simulating studies.
"""
import numpy as np
import pandas as pd
import pytest

from simdesign.core.errors import ConfigError
from simdesign.planning.plan_report import plan_table, recommendation_text
from simdesign.planning.plan_search import SCREEN_BATCH, OutcomeSource, decide_plan
from simdesign.planning.planner import parse_plan
from test_planner import KnownRates, ladder_config, plan, wrong_recommendation_rate


def by_cost_order(config) -> list:
    return [c.key for c in sorted(config.candidates, key=lambda c: (c.total_cost, c.key))]


class Recording(OutcomeSource):
    """Wraps an outcome source and records, per call, the candidates asked for their screening trials."""

    def __init__(self, inner, screen_trials):
        self.inner, self.screen_trials, self.screened = inner, screen_trials, []

    def power(self, wanted):
        self.screened.append({key for key, span in wanted.items() if span == (0, self.screen_trials)})
        return self.inner.power(wanted)

    def null(self, wanted):
        return self.inner.null(wanted)


def test_screening_setting_is_validated_naming_the_key_and_the_allowed_values():
    assert parse_plan(plan()).screening == "eager"
    assert parse_plan(plan(screening="by_cost")).screening == "by_cost"
    with pytest.raises(ConfigError, match=r"The 'screening' field must be one of \['eager', 'by_cost'\]; got 'lazy'"):
        parse_plan(plan(screening="lazy"))
    # power need not grow with cost: no cost bound for the budget goal
    with pytest.raises(ConfigError, match=r"'screening' field 'by_cost' applies only to the goal 'target_power'"):
        parse_plan(plan(target_power=None, budget=5000.0, screening="by_cost"))


def test_by_cost_picks_what_eager_picks_with_the_same_decisions_within_the_threshold():
    # 60 candidates whose power rises with cost through the target, type I errors around max_type1: the pick
    # needs refinement, and some cheap candidates are liberal or undecided.
    n = 60
    eager_config = ladder_config(n, max_type1=0.075)
    lazy_config = parse_plan({**eager_config.raw, "screening": "by_cost"})
    keys = by_cost_order(eager_config)
    power = {key: 0.55 + 0.4 * i / n for i, key in enumerate(keys)}
    type1 = {key: (0.09 if i % 7 == 3 else 0.05) for i, key in enumerate(keys)}
    fewer = recommended = 0
    for seed in range(12):
        eager = decide_plan(eager_config, KnownRates(eager_config, power, type1, np.random.SeedSequence([5, seed])))
        lazy = decide_plan(lazy_config, KnownRates(lazy_config, power, type1, np.random.SeedSequence([5, seed])))
        pick = lazy.recommended and lazy.recommended.candidate.key
        assert pick == (eager.recommended and eager.recommended.candidate.key)
        recommended += pick is not None
        assert [r.candidate.key for r in lazy.confirmations] == [r.candidate.key for r in eager.confirmations]
        # Every candidate within the threshold of the last pick is decided on the same trials either way (after
        # a last failed confirmation the search stops, leaving dearer ones where each order happened to pause them).
        last = lazy.confirmations[-1].candidate.total_cost if lazy.confirmations else np.inf
        threshold = last * (1 + lazy_config.cost_tolerance)
        for e, z in zip(eager.results, lazy.results):
            if e.candidate.total_cost <= threshold:
                assert (z.decision, z.trials, z.type1_trials, z.power) == (e.decision, e.trials, e.type1_trials,
                                                                         e.power)
            elif not z.trials:
                assert z.decision == "not_needed" and np.isnan(z.power)
        simulated = sum(r.trials > 0 for r in lazy.results)
        fewer += simulated < n
        assert simulated <= sum(r.trials > 0 for r in eager.results)
    # most plans confirm a pick near the middle of the ladder, and then the dearest candidates are never simulated
    assert recommended >= 8 and fewer >= recommended


def test_by_cost_screens_the_cheapest_within_the_threshold_of_the_moment_after_pending_refinements():
    # Scripted outcomes. The cheapest candidate rejects in exactly 80% of every look's trials: open at every
    # look, refined up to max_trials. Its pending refinement trials come first, so each stage screens
    # SCREEN_BATCH - (its pending trials / screen_trials) new candidates: K, K-1, K-2, K-4, K-8. One candidate,
    # the last of the fourth stage's screening, always rejects (passes at its screening look); the others never
    # (fail at screening). The fifth stage screens only those within cost_tolerance of it; nothing dearer is
    # ever simulated.
    sizes = [SCREEN_BATCH - extra for extra in (0, 1, 2, 4, 8)]
    ends = np.cumsum(sizes)
    n = ends[3] + 12
    config = ladder_config(n, max_type1=None, screening="by_cost")
    keys = by_cost_order(config)
    borderline, passing = keys[0], keys[ends[3] - 1]
    costs = {c.key: c.total_cost for c in config.candidates}

    class Scripted(OutcomeSource):
        def power(self, wanted):
            rows = {}
            for key, (first, stop) in wanted.items():
                trials = np.arange(first, stop)
                rows[key] = (trials % 5 != 4 if key == borderline else np.full(stop - first, key == passing))[:, None]
            return rows

    outcomes = Recording(Scripted(), config.screen_trials)
    result = decide_plan(config, outcomes)
    threshold = costs[passing] * (1 + config.cost_tolerance)
    within = [key for key in keys[ends[3]:] if costs[key] <= threshold]
    assert 0 < len(within) < min(sizes[4], n - ends[3])  # the setting exercises both sides of the threshold
    expected = [set(keys[a:b]) for a, b in zip([0, *ends[:3]], ends[:4])] + [set(within)]
    assert [asked for asked in outcomes.screened if asked] == expected
    by_key = {r.candidate.key: r for r in result.results}
    assert by_key[borderline].decision == "undecided" and by_key[borderline].trials == config.max_trials
    assert result.recommended.candidate.key == passing and result.recommended.confirmation == "confirmed"
    for key in keys[ends[3] + len(within):]:
        assert by_key[key].trials == 0 and by_key[key].decision == "not_needed"


def test_not_simulated_candidates_are_reported_as_such_never_as_numbers(tmp_path):
    n = 3 * SCREEN_BATCH
    config = ladder_config(n, max_type1=None, screening="by_cost")
    keys = by_cost_order(config)
    power = {key: (0.99 if i >= 5 else 0.3) for i, key in enumerate(keys)}
    result = decide_plan(config, KnownRates(config, power, {}, np.random.SeedSequence(1)))
    table = plan_table(result)
    unsimulated = table[table["trials"] == 0]
    assert len(unsimulated) == n - SCREEN_BATCH  # the first batch holds the pick and everything within 5% of it
    assert (unsimulated["decision"] == "not_needed").all()
    assert unsimulated["note"].str.startswith("not simulated").all()
    table.to_csv(tmp_path / "plan.csv", index=False)
    text = (tmp_path / "plan.csv").read_text()
    assert "nan" not in text.lower()
    read = pd.read_csv(tmp_path / "plan.csv")
    assert read.loc[read["trials"] == 0, "power"].isna().all()
    words = recommendation_text(result)
    assert "nan" not in words.lower()
    assert f"{SCREEN_BATCH} of the {n} candidates were simulated" in words


@pytest.mark.slow
def test_recommending_a_design_below_the_target_power_is_at_most_the_bound_by_cost():
    # The guarantee rests on the confirmation's fresh trials, not on the order of screening: the worst case of
    # tests/test_planner.py (30 candidates at 0.795 cheaper than one at 0.85) with screening by cost.
    config = ladder_config(31, max_type1=None, screening="by_cost")
    keys = by_cost_order(config)
    power = {key: 0.795 for key in keys[:-1]} | {keys[-1]: 0.85}
    bound = (1 - config.confidence) / 2
    rate, mcse = wrong_recommendation_rate(config, power, {}, lambda key: power[key] < 0.8, 2000, seed=31)
    print(f"by_cost, 30 candidates at 0.795: wrong recommendations {rate:.4f} (MCSE {mcse:.4f}), bound {bound}")
    assert rate <= bound + 3 * mcse
