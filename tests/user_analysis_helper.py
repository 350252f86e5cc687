"""An analysis defined outside simdesign, as a user would write one (used by tests/test_backends.py).

Not a test module: it is imported by the tests, and by worker processes when they unpickle
the analysis that a chunk carries, or when a config names it as ``user_analysis_helper:SIGN_TEST``.
"""
import numpy as np
from scipy import stats

from simdesign.significance import ANALYSES, AnalysisInfo, PairwiseResult, register, system_pairs


def sign_test(judgements, rng, **options):
    """Two-sided sign test per system pair on the unaggregated judgements (ties dropped)."""
    pairs = system_pairs(judgements.n_systems)
    estimate, p_value = np.empty(len(pairs)), np.empty(len(pairs))
    for index, (i, j) in enumerate(pairs):
        difference = judgements.scores[:, i].astype(float) - judgements.scores[:, j]
        wins, losses = int((difference > 0).sum()), int((difference < 0).sum())
        estimate[index] = float(np.mean(difference))
        p_value[index] = stats.binomtest(wins, wins + losses).pvalue if wins + losses else 1.0
    return PairwiseResult(estimate=estimate, p_value=p_value, status=np.full(len(pairs), "ok", dtype=object))


SIGN_TEST = AnalysisInfo(name="user_sign_test", function=sign_test, description="sign test (user code)")


def register_sign_test() -> AnalysisInfo:
    """Register the analysis in this process only (as user code in a notebook would)."""
    return ANALYSES.get(SIGN_TEST.name) or register(SIGN_TEST)
