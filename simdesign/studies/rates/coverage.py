"""What a config may ask of designs with partial coverage (some systems lack outputs for some documents).

The design side is :class:`simdesign.core.designs.Coverage`; the analyses say whether they handle
missing outputs (:attr:`simdesign.significance.AnalysisInfo.needs_complete`). This module holds the config's
refusals, each naming the design, the test or setting, and the reason (docs/designs.md, "Partial coverage").
"""
from __future__ import annotations

from simdesign.significance import resolve_analysis
from simdesign.significance.base import partial_coverage_refusal
from simdesign.core.designs import design_coverage
from simdesign.core.suggest import suggestions
from simdesign.methods import default_method, get_method

# Settings computed on complete studies only, with the reason a refusal gives.
COMPLETE_ONLY_SETTINGS = {
    "estimands": "the reliability estimands (Krippendorff's alpha, SHR) are computed here on complete studies",
    "replication": "the replication estimands compare complete studies",
    "rankings": "a ranking needs every system's output for the document",
}


def coverage_problems(designs, analyses, estimands=(), model=None, methods=None, replication=None
                      ) -> list[str]:
    """The refusals of a config whose designs have partial coverage (empty when none has).

    Parameters
    ----------
    designs : sequence of design objects
    analyses : sequence of AnalysisSpec
    estimands : sequence of str
        Reliability estimands asked for.
    model : OrdinalMixedModel or None
        To check the system names the coverage gives.
    methods : sequence of str, optional
        The annotation methods (default: the default method only).
    replication : ReplicationSettings or None
    """
    partial = [d for d in designs if design_coverage(d) is not None]
    if not partial:
        return []
    labels = [d.label for d in partial]
    problems = []
    systems = list(getattr(model, "systems", ()) or ())
    for design in partial:
        unknown = sorted(set(design.coverage.named()) - set(systems)) if systems else []
        if unknown:
            problems.append(f"The design {design.label}'s 'coverage' names system(s) {unknown} the model does not "
                            f"have; its systems: {systems}{suggestions(unknown, systems)}")
    for spec in analyses:
        refusal = partial_coverage_refusal(resolve_analysis(spec.name), spec.label, spec.options,
                                           ", ".join(labels))
        if refusal:
            problems.append(refusal)
    if estimands:
        problems.append(f"The 'estimands' field {list(estimands)} cannot be used with the partial-coverage design(s) "
                        f"{labels}: {COMPLETE_ONLY_SETTINGS['estimands']}")
    if replication is not None:
        problems.append(f"The 'replication' field cannot be used with the partial-coverage design(s) {labels}: "
                        f"{COMPLETE_ONLY_SETTINGS['replication']}")
    ranking = [name for name in (methods or (default_method().name,)) if get_method(name).rankings]
    if ranking:
        problems.append(f"The {' and '.join(ranking)} method cannot be used with the partial-coverage design(s) "
                        f"{labels}: {COMPLETE_ONLY_SETTINGS['rankings']}")
    return problems
