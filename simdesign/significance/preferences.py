"""Tests of pairwise preference judgements (:mod:`simdesign.methods.pairwise`), registered for simulations.

* ``pair_sign`` and ``pair_sign_block``: per pair of systems, the exact sign (binomial) test over documents
  (blocks): on each unit the share of the pair's comparisons the first system won (ties half), and the test
  that a unit favours either system with probability 1/2. A unit is one observation, so annotators' and
  documents' shared effects cannot make it liberal as long as units are independent.
* ``bradley_terry``: the Bradley-Terry model (Bradley & Terry, 1952) fitted by maximum likelihood over every
  comparison, ties counted as half a win to each side (the Chatbot Arena's convention, Chiang et al., 2024) or
  by Davidson's (1970) tie model, and a Wald z-test of each pair's log-strength difference. Its standard errors
  are cluster-robust by annotator and document (Cameron, Gelbach & Miller, 2011: two-way) by default; with
  ``errors: model`` the model-based ones, which treat every comparison as independent (liberal when one
  annotator or prompt judges many pairs, shown so in docs/how-to/pairwise.md).

Estimates are oriented i minus j for each pair (i, j), i < j in model order: a positive estimate means the
first system is preferred.
"""
from __future__ import annotations

import numpy as np
from scipy import stats

from simdesign.significance.base import (DEGENERATE, NOT_CONVERGED, OK, AnalysisInfo, PairwiseResult, register,
                                         system_pairs)
from simdesign.core.judgements import Judgements

# the pairwise tests are cheap (no model with random effects): chunks as large as the classical tests'
PREFERENCE_CHUNK_TRIALS = 100


def _comparisons(judgements: Judgements) -> dict:
    return judgements.comparisons()


def pair_sign(judgements: Judgements, rng=None, unit: str = "document") -> PairwiseResult:
    """The exact sign test per pair of systems over documents or blocks (see the module's docstring)."""
    from simdesign.stats.preferences import pair_sign_arrays

    found = _comparisons(judgements)
    # pairs come in model order i < j, as system_pairs gives them
    tests = pair_sign_arrays(found["first"], found["second"], found["outcome"], found[unit], judgements.n_systems)
    informative = tests["n_informative"] > 0
    status = np.where(informative, OK, DEGENERATE).astype(object)
    message = "" if informative.all() else "a pair of systems has no informative unit (every unit tied)"
    return PairwiseResult(estimate=tests["estimate"], p_value=tests["p_value"], status=status, message=message)


BT_ERRORS = ("two_way", "annotator", "document", "model")
BT_TIES = ("half", "davidson")


def bradley_terry_test(judgements: Judgements, rng=None, ties: str = "half", errors: str = "two_way"
                       ) -> PairwiseResult:
    """Wald z-tests of the Bradley-Terry log-strength differences (see the module's docstring)."""
    from simdesign.stats.preferences import bradley_terry, robust_covariance

    found = _comparisons(judgements)
    n_pairs = judgements.n_systems * (judgements.n_systems - 1) // 2
    fit = bradley_terry(found["first"], found["second"], found["outcome"], judgements.n_systems, ties=ties)
    if not fit.converged:
        return PairwiseResult.failed(n_pairs, NOT_CONVERGED, getattr(fit, "message", "") or
                                     "the Bradley-Terry fit did not converge (a system won or lost every comparison)")
    if errors == "model":
        covariance = fit.covariance
    else:
        clusters = {"two_way": [found["annotator"], found["document"]], "annotator": [found["annotator"]],
                    "document": [found["document"]]}[errors]
        covariance = robust_covariance(fit, found["first"], found["second"], found["outcome"], clusters)
    estimate, p_value = [], []
    for i, j in system_pairs(judgements.n_systems):
        contrast = np.zeros(judgements.n_systems)
        contrast[i], contrast[j] = 1.0, -1.0
        difference = float(contrast @ fit.strength)
        variance = float(contrast @ covariance @ contrast)
        estimate.append(difference)
        p_value.append(float(2 * stats.norm.sf(abs(difference) / np.sqrt(variance))) if variance > 0 else np.nan)
    p_value = np.array(p_value)
    status = np.where(np.isfinite(p_value), OK, DEGENERATE).astype(object)
    return PairwiseResult(estimate=np.array(estimate), p_value=p_value, status=status,
                          message="" if (status == OK).all() else "a contrast's variance is zero",
                          fit_status=OK)


for _unit, _suffix in (("document", ""), ("block", "_block")):
    register(AnalysisInfo(
        name=f"pair_sign{_suffix}",
        function=lambda j, rng, _unit=_unit: pair_sign(j, rng, unit=_unit),
        needs_blocks=_unit == "block",
        description=f"Pairwise preferences: exact sign test per pair of systems over {_unit}s "
                    "(each unit's share of the pair's wins, ties half).",
        takes_preferences=True, uses_rng=False, needs_complete=False, chunk_trials=PREFERENCE_CHUNK_TRIALS,
    ))

register(AnalysisInfo(
    name="bradley_terry",
    function=bradley_terry_test,
    options={"ties": (BT_TIES, "half"), "errors": (BT_ERRORS, "two_way")},
    description="Pairwise preferences: Bradley-Terry log-strengths (ties half a win, or Davidson's model), Wald "
                "z-test per pair with cluster-robust errors by annotator and document.",
    takes_preferences=True, uses_rng=False, needs_complete=False, chunk_trials=PREFERENCE_CHUNK_TRIALS,
))
