"""The annotation method (Likert or Rank) as a planning dimension: ``search: {methods: [likert, rank]}``.

A candidate is then a (method, design, test): the same design costs differently by method (the
paper's measured seconds per judged output differ: Likert 30.5 s / 25.1 s, Rank 26.7 s / 19.5 s
per output for coherence / repetition, ``simdesign/model/presets/annotation_times.yaml``) and has
different power (ranks from the joint model's ``rank_noise``). Comparing both needs a joint
Likert/Rank model, so Likert and Rank live on one latent scale; ``min_difference`` with
``unit: likert`` is computed on the Likert side of the joint model and so sets the same latent
effect for both methods.

Rank candidates carry the method in their test label (``art_block@rank``, the engine's result
label for a rank work item), so every (design, test) key of the search stays unique, and their
studies go to a results store of their own (``block-rank``), whose simulation config has
``method: rank`` and the plan's tests under their own labels.
"""
from __future__ import annotations

import dataclasses

from simdesign.methods import get_method, method_names
from simdesign.studies.rates.method_specs import (DEFAULT_METHODS, imported_method_names, result_label,
                                                  split_result_label)
from simdesign.stats.montecarlo import level_verdict


def parse_methods(search_raw, model, errors: list[str]) -> tuple:
    """The ``search.methods`` list, checked against what the model can generate.

    Returns
    -------
    tuple of str
        Default: the default method (``('likert',)``), or the first the model generates if it does not
        generate that one (``('rank',)`` for a rank-only model).
    """
    raw = search_raw.get("methods") if isinstance(search_raw, dict) else None
    if isinstance(raw, str):
        raw = [raw]
    if isinstance(raw, list) and raw and all(isinstance(m, str) for m in raw):
        # a plug-in named by its import path is imported (and registered) before the model is asked what it
        # generates: asked first, the model did not know the plug-in yet and the plan failed on first use
        raw = list(imported_method_names(tuple(raw), "search.methods", errors))
    available = tuple(getattr(model, "methods", DEFAULT_METHODS)) if model is not None else DEFAULT_METHODS
    default = DEFAULT_METHODS if DEFAULT_METHODS[0] in available else available[:1]
    raw = list(default) if raw is None else raw
    if not isinstance(raw, list) or not raw or any(m not in method_names() for m in raw) or len(set(raw)) != len(raw):
        errors.append(f"The 'search.methods' field must be a non-empty list of distinct methods from "
                      f"{list(method_names())}; got {raw!r}")
        return default
    missing = [m for m in raw if m not in available]
    if missing and model is not None:
        need = "; ".join(get_method(m).planning_requirement for m in missing)
        errors.append(f"The 'search.methods' field asks for {missing}, which needs {need}; model "
                      f"'{model.name}' generates only {list(available)}")
        return default
    return tuple(raw)


def method_of_label(label: str) -> str:
    """The method a candidate's test label stands for (see the module docstring)."""
    return split_result_label(label)[1]


def tests_for_method(tests, method: str) -> tuple:
    """The plan's tests relabelled for ``method`` (Likert: unchanged), with the engine's result labels."""
    return tuple(test if split_result_label(test.label)[1] == method
                 else dataclasses.replace(test, label=result_label(test.label, method)) for test in tests)


def store_name(family: str, method: str) -> str:
    """The results store of one design family and method ('block', 'block-rank', ...)."""
    return family + store_suffix(method)


def store_suffix(method: str) -> str:
    """What a method adds to the name of its results stores: nothing for the default method, ``-NAME`` else."""
    return "" if get_method(method).is_default else f"-{method}"


ENGINE_HOOK = ("simulating Rank candidates needs the simulation engine's method dimension (issue 13, section 1): "
               "a simulation config with 'method: rank' whose work items are labelled '<test>@rank' "
               "(SimulationConfig.methods and .work_specs)")


def check_engine_method(method: str) -> None:
    """Refuse, before anything is simulated, a method the installed simulation engine cannot generate.

    Likert is the engine's default. Rank needs the engine hook of issue 13 section 1: a
    :class:`~simdesign.studies.rates.config.SimulationConfig` with a ``methods`` field, whose
    ``work_specs`` run each test on studies of that method under the result label ``<test>@rank``
    (the label the planner gives rank candidates).
    """
    if get_method(method).is_default:
        return
    from simdesign.core.errors import ConfigError
    from simdesign.studies.rates.config import SimulationConfig

    fields = getattr(SimulationConfig, "__dataclass_fields__", {})
    if "methods" not in fields or not hasattr(SimulationConfig, "work_specs"):
        raise ConfigError(f"The 'search.methods' field includes {method!r}, but this installation's simulation "
                          f"engine cannot generate {method} studies yet: {ENGINE_HOOK}")


def method_config(config, method: str):
    """The plan config restricted to one method: its candidates and its cost model (tests keep their labels)."""
    return dataclasses.replace(
        config, methods=(method,), candidates=tuple(c for c in config.candidates if c.method == method),
        cost=config.method_costs.get(method, config.cost))


def method_sentence(config, best, active: list) -> str:
    """Why the recommendation's annotation method (only when the plan compares methods).

    Names the method, its seconds per judged output, and the best candidate of every other method
    (target-power goal: the cheapest that passed the search, and any cheaper one that failed its
    confirmation; budget goal: the most powerful affordable one among those shown to hold their level).
    """
    if len(config.methods) < 2:
        return ""
    method = best.candidate.method
    costs = config.method_costs
    text = (f" Annotation method: **{get_method(method).label}** ({costs[method].seconds_per_judgement:g} s per "
            f"{costs[method].item_name}, {costs[method].seconds_source})")
    for other in (m for m in config.methods if m != method):
        rivals = [r for r in active if r.candidate.method == other]
        per = f"{costs[other].seconds_per_judgement:g} s per {costs[other].item_name.replace('judged ', '')}"
        if config.goal == "target_power":
            text += f"; with {get_method(other).label} ({per}) " + _cheapest_phrase(config, rivals)
        else:
            text += f"; with {get_method(other).label} ({per}) " + _strongest_phrase(config, rivals)
    return text + "."


def _cheapest_phrase(config, rivals: list) -> str:
    """Target goal: the other method's cheapest candidate that passed the search, and any cheaper one that
    passed it but failed its confirmation on fresh studies (no rival: it did not hold up)."""
    passing = [r for r in rivals if r.decision == "pass"]
    cheapest = min(passing, key=lambda r: r.candidate.total_cost, default=None)
    if cheapest is None:
        text = _no_pass_phrase(config, rivals)
    else:
        text = (f"the cheapest candidate shown to reach the target, {cheapest.candidate.design.label} with "
                f"{cheapest.candidate.test.label}, costs {cheapest.candidate.total_cost:.2f}")
    failed = [r for r in rivals if r.decision == "not_confirmed"
              and (cheapest is None or r.candidate.total_cost < cheapest.candidate.total_cost)]
    if failed:
        text += " (cheaper, but failed its confirmation on fresh studies: " + ", ".join(
            f"{r.candidate.design.label} with {r.candidate.test.label} at {r.candidate.total_cost:.2f}"
            for r in sorted(failed, key=lambda r: r.candidate.total_cost)) + ")"
    return text


def holds_level(config, r) -> bool:
    """Whether a candidate's type I error was shown to be at most ``max_type1`` (always, without a type I check)."""
    if config.max_type1 is None:
        return True
    return bool(r.type1_trials) and level_verdict(r.type1_low, r.type1_high, config.max_type1) == "holds"


def _strongest_phrase(config, rivals: list) -> str:
    """Budget goal: the other method's most powerful affordable candidate among those that hold their level.

    A candidate not shown to hold its level (liberal, or undecided) is no rival, however powerful:
    naming it as the other method's best would compare a valid design with an invalid one. It is
    still mentioned when it is more powerful, with its type I error, so the reader sees why it lost.
    """
    holding = [r for r in rivals if holds_level(config, r)]
    strongest = max(holding, key=lambda r: r.power, default=None)
    shown = "" if config.max_type1 is None else " shown to hold its level"
    text = (f"the most powerful affordable candidate{shown} reached {_power_and_type1(strongest)}"
            if strongest is not None else f"no affordable candidate was{shown or ' simulated'}")
    stronger = [r for r in rivals if r not in holding and (strongest is None or r.power > strongest.power)]
    if stronger:
        top = max(stronger, key=lambda r: r.power)
        liberal = top.type1_trials and level_verdict(top.type1_low, top.type1_high, config.max_type1) == "fails"
        verdict = "was shown to exceed" if liberal else "was not shown to hold"
        text += (f"; a more powerful one, {_power_and_type1(top)}, {verdict} max_type1 {config.max_type1:g}, so "
                 "it is no rival")
    return text


def _power_and_type1(r) -> str:
    """'0.899 [0.870, 0.920] (DESIGN with TEST, type I error 4.0% [2.1%, 6.3%])'."""
    type1 = (f", type I error {r.type1:.1%} [{r.type1_low:.1%}, {r.type1_high:.1%}]" if r.type1_trials
             else ", type I error not checked")
    return (f"{r.power:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}] ({r.candidate.design.label} with "
            f"{r.candidate.test.label}{type1})")


def _no_pass_phrase(config, rivals: list) -> str:
    """What the other method offers when none of its candidates was shown to reach the target."""
    # a liberal candidate's power is not a rival's (it rejects too often under the null as well), nor is one
    # that failed its confirmation (named by _cheapest_phrase)
    estimated = [r for r in rivals if r.power >= config.target_power and r.decision not in ("liberal", "not_confirmed")]
    if not estimated:
        return "no candidate was shown to reach the target"
    cheapest = min(estimated, key=lambda r: r.candidate.total_cost)
    return (f"none shown to reach the target; the cheapest estimated to reach it, "
            f"{cheapest.candidate.design.label} with {cheapest.candidate.test.label} (power {cheapest.power:.2f} "
            f"from {cheapest.trials} studies, not refined because it costs more), costs "
            f"{cheapest.candidate.total_cost:.2f}")
