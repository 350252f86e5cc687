"""The planner's outputs: ranked table, recommendation, cost-versus-power figure."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure  # never pyplot: library code neither needs nor switches a backend

from simdesign.core.designs import plan_colours
from simdesign.planning.plan_search import (BEST, FAIL, LIBERAL, NOT_CONFIRMED, NOT_NEEDED, PASS, TIED,
                                   UNDECIDED, WORSE, PlanResult, run_plan, type1_stalled, weakest_pair_power)
from simdesign.planning.method_search import method_sentence
from simdesign.planning.planner import PlanConfig, max_judgements_per_annotator

PLAN_COLUMNS = ("rank", "design", "shape", "test", "method", "blocks", "docs_per_block", "annotators_per_block", "docs",
                "annotators", "judgements_per_output", "judgements", "max_judgements_per_annotator", "hours",
                "labour_cost", "annotator_cost", "document_cost", "cost", "power", "ci_low", "ci_high", "mcse",
                "confidence", "trials", "type1", "type1_low", "type1_high", "type1_trials", "confirmation",
                "confirm_first_trial", "confirm_trials", "confirm_power", "confirm_low", "confirm_type1",
                "confirm_type1_high", "confirm_type1_trials", "decision", "weakest_pair", "weakest_pair_power",
                "weakest_pair_low", "weakest_pair_high", "seconds_per_judgement", "seconds_source", "note")
DECISION_ORDER = {"recommended": 0, BEST: 0, PASS: 1, TIED: 1, UNDECIDED: 2, NOT_NEEDED: 3, NOT_CONFIRMED: 4,
                  FAIL: 4, WORSE: 4, LIBERAL: 5, "excluded": 6}
TEST_MARKERS = ("o", "s", "^", "D", "v", "P")
# Below this many judgements per annotator a plan that charges nothing per annotator is warned about: the
# paper's study, where the annotation times and the presets come from, had each annotator judge 25 outputs
# (5 documents x 5 systems; docs/how-to/plan.md, "Fixed cost per annotator").
MIN_JUDGEMENTS_PER_ANNOTATOR = 25


def plan_table(result: PlanResult) -> pd.DataFrame:
    """The ranked candidate table (one row per design x test).

    Ranking: the recommendation first; then passing (target goal) or tied
    (budget goal) candidates, undecided, unrefined, failing or worse ones,
    each group by cost (target goal) or by power (budget goal); excluded
    candidates last.
    """
    config = result.config
    n_systems = config.model.n_systems
    rows = []
    for r in result.results:
        design = r.candidate.design
        columns = design.columns()
        decision = "recommended" if r is result.recommended else r.decision
        rows.append({
            "design": design.label, "shape": design.shape, "test": r.candidate.test.label,
            "method": r.candidate.method,
            "blocks": columns["blocks"], "docs_per_block": columns["docs_per_block"],
            "annotators_per_block": columns["annotators_per_block"], "docs": design.docs,
            "annotators": design.annotators, "judgements_per_output": design.judgements_per_output,
            "judgements": design.judgements(n_systems),
            # what annotators see and are paid for: outputs, or the method's comparisons (CostModel.units)
            "items": config.method_costs.get(r.candidate.method, config.cost).units(design, n_systems),
            "max_judgements_per_annotator": max_judgements_per_annotator(design, n_systems),
            **{k: round(v, 4) for k, v in r.candidate.cost.items()},
            "power": r.power, "ci_low": r.ci_low, "ci_high": r.ci_high, "mcse": r.mcse,
            "confidence": result.look_confidence.get(r.trials, np.nan), "trials": r.trials,
            "type1": r.type1, "type1_low": r.type1_low, "type1_high": r.type1_high, "type1_trials": r.type1_trials,
            "confirmation": r.confirmation, "confirm_first_trial": r.confirm_first_trial if r.confirm_trials else 0,
            "confirm_trials": r.confirm_trials, "confirm_power": r.confirm_power, "confirm_low": r.confirm_low,
            "confirm_type1": r.confirm_type1, "confirm_type1_high": r.confirm_type1_high,
            "confirm_type1_trials": r.confirm_type1_trials, "decision": decision, **_weakest_columns(config, r),
            "seconds_per_judgement": config.method_costs.get(r.candidate.method, config.cost).seconds_per_judgement,
            "seconds_source": config.method_costs.get(r.candidate.method, config.cost).seconds_source,
            "note": r.candidate.excluded or _not_simulated_note(config, r) or _stalled_note(config, r),
        })
    table = pd.DataFrame(rows)
    secondary = "cost" if config.goal == "target_power" else "power"
    table["_group"] = table["decision"].map(DECISION_ORDER)
    table["_sort"] = table[secondary] if secondary == "cost" else -table[secondary].fillna(-1)
    table = table.sort_values(["_group", "_sort", "design", "test"], kind="stable").drop(columns=["_group", "_sort"])
    table.insert(0, "rank", np.arange(1, len(table) + 1))
    for column in ("blocks", "docs_per_block", "annotators_per_block"):
        table[column] = table[column].astype("Int64")
    columns = list(PLAN_COLUMNS)
    if any(cost.count_items is not None for cost in config.method_costs.values()):
        # what annotators see and are paid for where it is not one output (comparisons): only then, so that
        # plans of Likert and Rank keep their form
        columns.insert(columns.index("judgements") + 1, "items")
    return table[columns].reset_index(drop=True)


def _weakest_columns(config, r) -> dict:
    """The least powerful pair and its power with a plain 95% interval: pooled power can hide it."""
    weakest = weakest_pair_power(config, r)
    if weakest is None:
        return {"weakest_pair": r.weakest_pair, "weakest_pair_power": np.nan, "weakest_pair_low": np.nan,
                "weakest_pair_high": np.nan}
    return {"weakest_pair": weakest["pair"], "weakest_pair_power": weakest["power"],
            "weakest_pair_low": weakest["ci_low"], "weakest_pair_high": weakest["ci_high"]}


def _not_simulated_note(config, r) -> str:
    """Why an eligible candidate has no estimate (screening: by_cost), or ''."""
    if r.trials or r.decision != NOT_NEEDED:
        return ""
    return (f"not simulated: costs more than the cheapest candidate that passed the search (confirmed or not) "
            f"plus cost_tolerance ({config.cost_tolerance:g})")


def _stalled_note(config, r) -> str:
    """Why a candidate whose type I error stayed undecided cannot be recommended, or ''."""
    if r.decision != UNDECIDED or config.max_type1 is None or not type1_stalled(config, r):
        return ""
    return (f"type I error undecided at {r.type1_trials} trials: [{r.type1_low:.1%}, {r.type1_high:.1%}] "
            f"contains max_type1 {config.max_type1:g}")


def trials_to_decide(r, max_type1: float) -> float:
    """About how many null studies would show on which side of ``max_type1`` a candidate's type I error lies.

    If the true rate were the estimate, the interval's half-width on the side of ``max_type1`` (which
    shrinks as one over the square root of the trials) must fall below the distance between them.

    Parameters
    ----------
    r : CandidateResult
        With a type I estimate and interval from ``r.type1_trials`` studies.
    max_type1 : float

    Returns
    -------
    float
        Null studies in all (at least ``r.type1_trials``); infinite when the estimate equals ``max_type1``.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> # 800 x (0.02 / 0.015)^2 = 1422.2, rounded up
    >>> trials_to_decide(SimpleNamespace(type1=0.06, type1_low=0.05, type1_high=0.08, type1_trials=800), 0.075)
    1423.0
    """
    gap = abs(r.type1 - max_type1)
    if gap == 0:
        return float("inf")
    half_width = (r.type1_high - r.type1) if r.type1 < max_type1 else (r.type1 - r.type1_low)
    return float(max(r.type1_trials, np.ceil(r.type1_trials * (half_width / gap) ** 2)))


def _deciding_phrase(config, r) -> str:
    """What would decide an undecided type I check, in words."""
    needed = trials_to_decide(r, config.max_type1)
    if not np.isfinite(needed):
        return "its estimate equals max_type1, so no number of trials is likely to decide it"
    side = ("show it to hold its level" if r.type1 < config.max_type1
            else "most likely show it to be liberal, since its estimate is above max_type1")
    return (f"about {_round_up(needed):,} null studies (max_trials) would {side}")


def _round_up(value: float) -> int:
    """Up to two significant digits: a trial count to suggest, not to read as exact."""
    magnitude = 10 ** max(0, int(np.floor(np.log10(value))) - 1)
    return int(np.ceil(value / magnitude) * magnitude)


def _candidate_phrase(config, r) -> str:
    """'DESIGN with TEST (cost, power [ci], type I error [ci] from N studies)'."""
    return (f"{r.candidate.design.label} with {r.candidate.test.label} ({_money(config, r.candidate.total_cost)}, "
            f"power {r.power:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}], type I error {r.type1:.1%} "
            f"[{r.type1_low:.1%}, {r.type1_high:.1%}] from {r.type1_trials} studies)")


def _money(config, value: float) -> str:
    return f"{value:,.2f} {config.cost.currency}".strip()


def _describe_design(design, n_systems: int) -> str:
    return design.describe()


def _by_cost_of(results):
    return sorted(results, key=lambda r: (r.candidate.total_cost, -r.power, r.candidate.key))


def recommendation_text(result: PlanResult) -> str:
    """One plain-language paragraph justifying the recommendation, plus the assumptions."""
    config = result.config
    confidence = f"{config.confidence:.0%} confidence"
    active = [r for r in result.results if r.trials]
    goal = _goal_phrase(config)
    failed_confirmations = [r for r in result.confirmations if r.confirmation == NOT_CONFIRMED]
    if result.recommended is None:
        text = _no_recommendation_text(config, goal, active, failed_confirmations, confidence)
    else:
        text = _recommended_text(config, goal, result.recommended) + method_sentence(config, result.recommended, active)
        if config.goal == "target_power":
            text += _cheaper_candidates_text(config, result.recommended, active, failed_confirmations, confidence)
            text += _alternatives_text(config, result.recommended, active)
        else:
            text += _budget_rivals_text(config, result.recommended, active, confidence)
    warning = _workload_warning(config, result.recommended) if result.recommended is not None else ""
    return f"{text}\n\n{warning}{_assumptions_text(result)}\n\n{_effort_text(result)}\n"


def _workload_warning(config, best) -> str:
    """A paragraph when a plan that charges nothing per annotator recommends short workloads, else ''.

    With ``cost.per_annotator`` 0 the cost model prices an annotator judging 5 outputs like one judging
    100, so spreading the work over many annotators looks free. It is not: every annotator has to be
    recruited and instructed, and the measured seconds per judgement and the model's annotator effects
    come from annotators who judged MIN_JUDGEMENTS_PER_ANNOTATOR outputs each (docs/how-to/plan.md).
    """
    cost = config.method_costs.get(best.candidate.method, config.cost)
    load = max_judgements_per_annotator(best.candidate.design, config.model.n_systems)
    if cost.per_annotator > 0 or load >= MIN_JUDGEMENTS_PER_ANNOTATOR:
        return ""
    return (f"**Warning: short workloads.** Each of the {best.candidate.design.annotators} annotators judges at "
            f"most {load} outputs, fewer than {MIN_JUDGEMENTS_PER_ANNOTATOR}, the workload of the paper's study "
            "(60 annotators, 25 Likert judgements each), where the default annotation times and the preset "
            "models come from: the cost "
            "leaves out what each annotator costs besides judging (recruiting, reading the instructions: "
            "their first item took about twice as long), and the model has not seen annotators who judge so "
            "few outputs. This plan charges nothing per annotator (cost.per_annotator 0), which makes many "
            "annotators look free: set cost.per_annotator to that cost, or cap limits.max_annotators.\n\n")


def _order_pairs(config) -> list[str]:
    """The pairs of systems adjacent in the true order of the model's effects, best first ('A > B')."""
    effects, systems = config.model.effects, config.model.systems
    order = [int(s) for s in np.argsort(-np.asarray(effects, dtype=float), kind="stable")]
    return [f"{systems[a]} > {systems[b]}" for a, b in zip(order[:-1], order[1:]) if effects[a] != effects[b]]


def _goal_phrase(config) -> str:
    """The opening clause: what the plan was asked for, and which pairs its power is taken over."""
    n_systems = config.model.n_systems
    n_relevant = sum(1 for i in range(n_systems) for j in range(i + 1, n_systems)
                     if config.model.effects[i] != config.model.effects[j])
    estimand = {"pooled": f"pooled over the {n_relevant} system pairs with a true difference",
                "each_pair": "for every one of the system pairs with a true difference (the weakest pair counts)",
                "top_pair": f"to tell apart the true best two systems, {_order_pairs(config)[0]}: the probability "
                            "that their test rejects in the true direction",
                "adjacent_pairs": "to order every pair of systems adjacent in the true order ("
                                  + ", ".join(_order_pairs(config)) + "): the probability that all their tests "
                                  "reject in the true direction in one study"}[config.power_over]
    if config.goal == "target_power":
        return (f"To detect the {config.effect_label} of the {config.model.name} model at alpha {config.alpha:g} "
                f"with at least {config.target_power:.0%} power ({estimand})")
    return (f"To get the most power ({estimand}) for detecting the {config.effect_label} of the "
            f"{config.model.name} model at alpha {config.alpha:g} within a budget of "
            f"{_money(config, config.budget)}")


def _no_recommendation_text(config, goal: str, active: list, failed_confirmations: list, confidence: str) -> str:
    """Why no design is recommended, and what the user can change."""
    if failed_confirmations:
        return (f"{goal}, **no design was confirmed**: the search's pick(s) "
                + "; ".join(_confirmation_phrase(config, r) for r in failed_confirmations)
                + f". At most {config.confirm_candidates} pick(s) are confirmed (confirm_candidates), so that the "
                  "recommendation keeps its guarantee. The candidates near the target are too close to call: raise "
                  "max_trials and confirm_trials, lower the target, or widen the search space.")
    if config.goal == "budget":
        return _no_budget_answer_text(config, goal, active)
    undecided = [r for r in active if r.decision == UNDECIDED]
    return (f"{goal}, no design in the search space was shown to reach the target at {confidence}. "
            f"{len(undecided)} candidate(s) stayed undecided at {config.max_trials} trials"
            + (f" (the most powerful: {max(undecided, key=lambda r: r.power).candidate.design.label}, "
               f"power {max(r.power for r in undecided):.2f})" if undecided else "")
            + "; the rest fall short. Widen the search space (more documents, annotators or blocks), "
              "lower the target, or raise max_trials.")


def _no_budget_answer_text(config, goal: str, active: list) -> str:
    """Budget goal, nothing recommended: which candidate came closest to holding its level, what would decide it."""
    if config.max_type1 is None:  # without a type I check only an empty search space leaves no answer
        return f"{goal}, no affordable design was simulated."
    text = (f"{goal}, no affordable design could be recommended: none was shown to hold its level "
            f"(type I error at most {config.max_type1:g}).")
    stalled = [r for r in active if r.decision == UNDECIDED and type1_stalled(config, r)]
    liberal = [r for r in active if r.decision == LIBERAL]
    if stalled:
        # closest: the one whose interval reaches lowest, i.e. the nearest to being shown to hold max_type1
        closest = min(stalled, key=lambda r: (r.type1_high, -r.power))
        text += (f" {len(stalled)} candidate(s) stayed undecided at {config.max_trials} null studies; the closest "
                 f"to holding it: {_candidate_phrase(config, closest)}: {_deciding_phrase(config, closest)}.")
        strongest = max(stalled, key=lambda r: r.power)
        if strongest is not closest:
            text += (f" The most powerful of them: {_candidate_phrase(config, strongest)}: "
                     f"{_deciding_phrase(config, strongest)}.")
    if liberal:
        least = min(liberal, key=lambda r: r.type1)
        text += (f" {len(liberal)} candidate(s) were shown to reject a true null hypothesis too often (the least "
                 f"liberal: {_candidate_phrase(config, least)}).")
    return text + (" Raise max_trials as suggested, add tests that hold their level on these designs (block-level "
                   "tests such as art_block), or widen the search space (more annotators, each judging fewer "
                   "documents).")


def _items_phrase(config, candidate, n_systems: int) -> str:
    """'(N comparisons) ' where the method's annotators see something else than one output at a time."""
    cost = config.method_costs.get(candidate.method, config.cost)
    if cost.count_items is None:
        return ""
    return f"as {cost.units(candidate.design, n_systems):g} {cost.item_name}s "


def _recommended_text(config, goal: str, best) -> str:
    """The recommended design, its cost, its power and type I error, and its confirmation."""
    n_systems = config.model.n_systems
    c = best.candidate
    design = c.design
    cost = c.cost
    text = (f"{goal}, the recommended study is **{design.label}** analysed with **{c.test.label}**: "
            f"{_describe_design(design, n_systems)}, {design.judgements(n_systems)} judgements in all "
            + _items_phrase(config, c, n_systems) +
            f"({max_judgements_per_annotator(design, n_systems)} per annotator at most, "
            f"about {cost['hours']:.1f} hours of annotation). It costs {_money(config, cost['cost'])} "
            f"(pay {_money(config, cost['labour_cost'])}, fixed per annotator "
            f"{_money(config, cost['annotator_cost'])}"
            + (f", documents {_money(config, cost['document_cost'])}" if cost["document_cost"] else "")
            + f"). In the search its power was {best.power:.3f} [{best.ci_low:.3f}, {best.ci_high:.3f}] "
            f"from {best.trials} simulated studies" + _weakest_phrase(config, best))
    if config.max_type1 is not None:
        text += (f" and, with no true differences, it rejected {best.type1:.1%} [{best.type1_low:.1%}, "
                 f"{best.type1_high:.1%}] of the tests ({best.type1_trials} studies)")
    text += "."
    if best.confirmation:
        text += (" Confirmed on fresh studies (trial indices the search did not use): "
                 f"{_confirmation_phrase(config, best)}.")
    return text


def _weakest_phrase(config, r) -> str:
    """' (weakest pair X vs Y: 0.21 [0.17, 0.26])', so that pooled power does not hide a pair rarely detected."""
    weakest = weakest_pair_power(config, r)
    if weakest is None:
        return ""
    text = (f" (its weakest pair, {weakest['pair']}: {weakest['power']:.3f} [{weakest['ci_low']:.3f}, "
            f"{weakest['ci_high']:.3f}]")
    if config.power_over == "pooled":
        text += "; power_over: each_pair plans for every pair"
    return text + ")"


def _cheaper_candidates_text(config, best, active: list, failed_confirmations: list, confidence: str) -> str:
    """Why no cheaper candidate was recommended (target-power goal): each fell short, was liberal or undecided."""
    cheaper = [r for r in active if r.candidate.total_cost < best.candidate.total_cost]
    failed = sum(r.decision == FAIL for r in cheaper)
    liberal = sum(r.decision == LIBERAL for r in cheaper)
    undecided = _by_cost_of([r for r in cheaper if r.decision == UNDECIDED])
    text = ""
    if failed_confirmations:
        text += (" Cheaper pick(s) of the search failed their confirmation: "
                 + "; ".join(_confirmation_phrase(config, r) for r in failed_confirmations) + ".")
    text += (f" It is the cheapest candidate the search showed to reach the target at {confidence}: "
             f"{failed} of the {len(cheaper)} cheaper simulated candidates were shown to fall short")
    if liberal:
        text += (f", {liberal} were shown to reject a true null hypothesis too often (type I error above "
                 f"{config.max_type1:.1%}: annotators judging many documents make their judgements "
                 f"dependent, which the test ignores), so their power is not real")
    if not undecided:
        return text + "."
    first = undecided[0]
    return text + (f", and {len(undecided)} stayed undecided at {config.max_trials} trials (power, or type I "
                   f"error, too close to its limit to be shown on the right side; the cheapest: "
                   f"{first.candidate.design.label} with {first.candidate.test.label}, "
                   f"{_money(config, first.candidate.total_cost)}, power {first.power:.3f} "
                   f"[{first.ci_low:.3f}, {first.ci_high:.3f}]"
                   + (f", type I error {first.type1:.1%} [{first.type1_low:.1%}, {first.type1_high:.1%}]"
                      if first.type1_trials else "") + ").")


def _alternatives_text(config, best, active: list) -> str:
    """Passing designs a user may prefer (target-power goal): with another test, or nearly as cheap."""
    c = best.candidate
    text = ""
    others = {}
    for r in _by_cost_of([r for r in active if r.decision == PASS]):
        if r.candidate.test.label != c.test.label:
            others.setdefault(r.candidate.test.label, r)
    if others:
        text += (" For the other tests, the cheapest design shown to pass (the search did not need to "
                 "decide every cheaper one): ") + "; ".join(
            f"{label}: {r.candidate.design.label} ({_money(config, r.candidate.total_cost)}, power "
            f"{r.power:.2f})" for label, r in others.items()) + "."
    near = [r for r in active if r is not best and r.decision == PASS
            and r.candidate.total_cost <= c.total_cost * (1 + config.cost_tolerance)]
    if near:
        alt = max(near, key=lambda r: r.power)
        text += (f" Within {config.cost_tolerance:.0%} of its cost, {alt.candidate.design.label} with "
                 f"{alt.candidate.test.label} also passes ({_money(config, alt.candidate.total_cost)}, "
                 f"power {alt.power:.2f}).")
    return text


def _budget_rivals_text(config, best, active: list, confidence: str) -> str:
    """How the other affordable candidates compare (budget goal): less power, liberal, or tied."""
    stalled = [r for r in active if r.decision == UNDECIDED and config.max_type1 is not None
               and type1_stalled(config, r)]
    tied = [r for r in active if r is not best and r.decision in (TIED, UNDECIDED) and r not in stalled]
    worse = sum(r.decision == WORSE for r in active)
    liberal = [r for r in active if r.decision == LIBERAL]
    text = (f" {worse} affordable candidate(s) were shown to have less power at {confidence}")
    if liberal:
        text += (f" and {len(liberal)} to reject a true null hypothesis too often (type I error above "
                 f"{config.max_type1:.1%})")
        stronger = [r for r in liberal if r.power > best.power]
        if stronger:
            top = max(stronger, key=lambda r: r.power)
            text += (f"; {len(stronger)} of those had more power, which is not real (the most powerful: "
                     f"{_candidate_phrase(config, top)})")
    if stalled:
        top = max(stalled, key=lambda r: r.power)
        text += (f"; {len(stalled)} could not be shown to hold their level in {config.max_trials} null studies "
                 f"and cannot be recommended (the most powerful: {_candidate_phrase(config, top)}: "
                 f"{_deciding_phrase(config, top)})")
    if tied:
        cheapest = min(tied, key=lambda r: r.candidate.total_cost)
        text += (f"; {len(tied)} could not be told apart from it (within {config.power_tolerance:.0%} "
                 f"power, or its power undecided), the cheapest of them {cheapest.candidate.design.label} with "
                 f"{cheapest.candidate.test.label} at {_money(config, cheapest.candidate.total_cost)} "
                 f"(power {cheapest.power:.2f})")
    return text + "."


def _assumptions_text(result: PlanResult) -> str:
    """The model, costs, type I rule and interval confidences the recommendation rests on."""
    config = result.config
    return (
        f"Assumptions: judgements come from the {config.model.name} model (cumulative link mixed model with "
        f"annotator and document random intercepts and slopes); {config.cost.seconds_per_judgement:g} s per "
        f"judgement ({config.cost.seconds_source}) at {_money(config, config.cost.pay_per_hour)} per hour, "
        f"{_money(config, config.cost.per_annotator)} per annotator, {_money(config, config.cost.per_document)} "
        f"per document. "
        + ("No type I error check (max_type1: null). " if config.max_type1 is None else
           f"A test must be shown to hold its level: the upper end of its type I interval "
           f"({'pooled over all pairs' if config.type1_over == 'pooled' else 'every pair'}) at most max_type1 "
           f"{config.max_type1:g}. ")
        + f"Search intervals are two-sided Wilson intervals with the trial as the unit, at "
        f"{result.look_confidence[result.looks[-1]]:.2%} confidence at {result.looks[-1]} trials"
        + (f" and {result.look_confidence[result.looks[0]]:.2%} at fewer" if len(result.looks) > 1 else "")
        + f" (the {config.confidence:.0%} confidence spent over up to {len(result.looks)} looks per candidate). "
        + _guarantee_sentence(result))


def _effort_text(result: PlanResult) -> str:
    """The adaptive search's simulation effort against evaluating every candidate fully."""
    eligible = [r for r in result.results if r.decision != "excluded"]
    simulated = sum(1 for r in eligible if r.trials)
    screening = (f" Screening by cost (cheapest first): {simulated} of the {len(eligible)} candidates were "
                 f"simulated; the other {len(eligible) - simulated} cost more than the cheapest candidate that "
                 f"passed the search (confirmed or not) plus {result.config.cost_tolerance:.0%} and were not "
                 "simulated."
                 if result.config.screening == "by_cost" else "")
    return (f"Simulation effort: {result.adaptive_trials:,} candidate-trials ({result.adaptive_studies:,} "
            f"simulated studies) adaptively, against {result.full_trials:,} ({result.full_studies:,} studies) "
            f"for evaluating every candidate at {result.config.max_trials} trials.{screening}")


def _confirmation_phrase(config, r) -> str:
    """What one confirmation found, in words."""
    level = 1.0 - (1.0 - config.confidence) / (2 * config.confirm_candidates)
    label = f"{r.candidate.design.label} with {r.candidate.test.label}"
    span = f"trials {r.confirm_first_trial}-{r.confirm_first_trial + r.confirm_trials - 1}"
    parts = []
    if np.isfinite(r.confirm_power):
        parts.append(f"power {r.confirm_power:.3f}, one-sided {level:.2%} lower bound {r.confirm_low:.3f} "
                     f"({'reaches' if r.confirm_low >= config.target_power else 'below'} the target "
                     f"{config.target_power:g})")
    if np.isfinite(r.confirm_type1):
        parts.append(f"type I error {r.confirm_type1:.1%}, one-sided {level:.2%} upper bound "
                     f"{r.confirm_type1_high:.1%} ({'within' if r.confirm_type1_high <= config.max_type1 else 'above'}"
                     f" max_type1 {config.max_type1:g})")
    return f"{label} on {span}: " + ", ".join(parts) + (" (not confirmed)" if r.confirmation == NOT_CONFIRMED
                                                        else "")


def _guarantee_sentence(result: PlanResult) -> str:
    config = result.config
    bound = (1.0 - config.confidence) / 2
    what = []
    if config.goal == "target_power":
        what.append(f"power below the target {config.target_power:g}")
    if config.max_type1 is not None:
        what.append(f"type I error above {config.max_type1:g}")
    if not what:
        return "No guarantee applies (budget goal without a type I check)."
    return (f"Guarantee: the probability that the planner recommends a design with {' or with '.join(what)} is at "
            f"most {bound:.3g} for each ((1 - confidence) / 2), whatever the number of candidates: the pick is "
            f"confirmed on {config.confirm_trials} fresh studies with each bound applied once at one-sided level "
            f"{result.confirm_level:.3g}, for at most {config.confirm_candidates} pick(s).")


def pareto_front(cost: np.ndarray, power: np.ndarray) -> np.ndarray:
    """Indices of the candidates no other candidate beats on both cost and power, by cost.

    >>> pareto_front(np.array([1.0, 2.0, 3.0, 2.5]), np.array([0.2, 0.5, 0.4, 0.7])).tolist()
    [0, 1, 3]
    """
    order = np.lexsort((-power, cost))
    front, best = [], -np.inf
    for index in order:
        if power[index] > best:
            front.append(int(index))
            best = power[index]
    return np.array(front, dtype=int)


def plot_plan(result: PlanResult, table: pd.DataFrame, out_base: Path) -> list[Path]:
    """Cost against power for every simulated candidate, the Pareto front, and the target or budget line."""
    config = result.config
    simulated = table[table["trials"] > 0]
    shown = simulated[simulated["decision"] != LIBERAL].reset_index(drop=True)
    liberal = simulated[simulated["decision"] == LIBERAL]
    fig = Figure(figsize=(8.0, 5.2))
    ax = fig.subplots()
    tests = list(dict.fromkeys(shown["test"]))
    for (shape, test), group in shown.groupby(["shape", "test"], sort=False):
        # clipped: at power 0 or 1 the Wilson bound equals the estimate up to rounding
        err = np.clip(np.vstack([group["power"] - group["ci_low"], group["ci_high"] - group["power"]]), 0, None)
        ax.errorbar(group["cost"], group["power"], yerr=err, fmt=TEST_MARKERS[tests.index(test) % len(TEST_MARKERS)],
                    color=plan_colours().get(shape, "grey"), ms=5, alpha=0.75, elinewidth=0.8, capsize=0,
                    label=f"{shape}, {test}")
    if len(liberal):
        ax.plot(liberal["cost"], liberal["power"], "x", color="grey", ms=5, alpha=0.6,
                label=f"type I error above {config.max_type1:g} (not eligible)")
    front = pareto_front(shown["cost"].to_numpy(float), shown["power"].to_numpy(float))
    if len(front):
        ax.step(shown["cost"].to_numpy()[front], shown["power"].to_numpy()[front], where="post", color="black",
                lw=1.2, label="Pareto front (estimates)")
    if config.goal == "target_power":
        ax.axhline(config.target_power, color="grey", ls="--", lw=1, label=f"target power {config.target_power:g}")
    else:
        ax.axvline(config.budget, color="grey", ls="--", lw=1, label=f"budget {config.budget:g}")
    if result.recommended is not None:
        best = result.recommended
        ax.plot(best.candidate.total_cost, best.power, marker="*", ms=18, mfc="gold", mec="black", ls="none",
                label=f"recommended: {best.candidate.design.label}, {best.candidate.test.label}")
    ax.set_xscale("log")
    ax.set_xlabel(f"cost ({config.cost.currency})" if config.cost.currency else "cost")
    ylabel = "power (pooled over pairs)" if config.power_over == "pooled" else "power (weakest pair)"
    ax.set_ylabel(ylabel)
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(f"{config.name}: {config.model.name}, {config.effect_label}", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower right", ncol=1 if len(tests) < 3 else 2)
    fig.tight_layout()
    paths = [out_base.with_suffix(".png"), out_base.with_suffix(".pdf")]
    out_base.parent.mkdir(parents=True, exist_ok=True)
    for path in paths:
        fig.savefig(path, dpi=150)
    return paths


def effort_line(result: PlanResult) -> str:
    saved = 1 - result.adaptive_trials / result.full_trials if result.full_trials else 0.0
    return (f"trials: adaptive {result.adaptive_trials:,} candidate-trials ({result.adaptive_studies:,} studies); "
            f"every candidate at max_trials {result.full_trials:,} ({result.full_studies:,} studies): "
            f"{saved:.0%} fewer; {result.new_studies:,} studies simulated in this run, "
            f"{result.seconds:.1f} s")


def write_plan_outputs(result: PlanResult, out_dir: Path, figure_base: Path | None = None) -> dict:
    """Write ``plan.csv``, ``recommendation.md``, the figure and the recommended design's picture
    (``recommended_design.png``, shown in ``recommendation.md``) into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    table = plan_table(result)
    table.to_csv(out_dir / "plan.csv", index=False)
    text = recommendation_text(result)
    picture = write_recommended_design(result, out_dir)
    shown = f"![The recommended design: who judges what]({picture.name})\n\n" if picture else ""
    (out_dir / "recommendation.md").write_text(f"# Plan: {result.config.name}\n\n{shown}{text}")
    figures = plot_plan(result, table, Path(figure_base) if figure_base else out_dir / result.config.name)
    if picture:
        figures = [*figures, picture]
    return {"table": out_dir / "plan.csv", "recommendation": out_dir / "recommendation.md", "figures": figures}


def write_recommended_design(result: PlanResult, out_dir: Path) -> Path | None:
    """Draw the recommended design (annotators x documents) to ``out_dir/recommended_design.png``; None without one."""
    from simdesign.studies.design_picture import write_design_picture

    stale = out_dir / "recommended_design.png"
    if result.recommended is None:
        stale.unlink(missing_ok=True)  # a picture from an earlier run of this directory would be read as the answer
        return None
    return write_design_picture([result.recommended.candidate.design], stale, n_systems=result.config.model.n_systems,
                                seed=result.config.seed)


def plan_study(config: PlanConfig, out_dir=None, jobs: int = 1, progress: bool = False, figure_base=None,
               backend="loky", **backend_options):
    """Find the cheapest design reaching the target power (or the most powerful within the budget).

    Parameters
    ----------
    config : PlanConfig
        From :func:`load_plan` or :func:`parse_plan`.
    out_dir : path-like, optional
        Results directory: simulated trials (resumable), ``plan.csv``,
        ``recommendation.md`` and the figure. Without it a temporary
        directory holds the trials and nothing is written.
    jobs : int
        joblib workers; results do not depend on it.
    progress : bool
        Print one line per evaluation stage.
    figure_base : path-like, optional
        Figure path without suffix (default ``out_dir/<name>``).
    backend : {'loky', 'threading', 'dask'} or BackendSpec, default 'loky'
        Where the studies are computed; ``backend_options`` (scheduler, workers,
        retries) as for :func:`simdesign.studies.rates.engine.run_simulation`. Results do not depend on it.

    Returns
    -------
    simdesign.planning.plan_search.PlanResult

    Examples
    --------
    >>> config = load_plan("configs/plan_example.yaml")                # doctest: +SKIP
    >>> result = plan_study(config, "results/plan_example", jobs=2)    # doctest: +SKIP
    >>> result.recommended.candidate.design.label                      # doctest: +SKIP
    'block-B20-D5-A1'
    """
    import tempfile

    if out_dir is None:
        with tempfile.TemporaryDirectory(prefix="simdesign-plan-") as scratch:
            return run_plan(config, Path(scratch), jobs=jobs, progress=progress, backend=backend,
                            **backend_options)
    result = run_plan(config, Path(out_dir), jobs=jobs, progress=progress, backend=backend, **backend_options)
    write_plan_outputs(result, Path(out_dir), figure_base)
    return result
