"""Analyses (significance tests) and their registry.

Importing this package registers every built-in analysis in :data:`ANALYSES`.
Analyses that need R register too, but check for R only when they run.
"""
from simdesign.analyses.base import (ANALYSES, FAILURES, AnalysisInfo, PairwiseResult, register, resolve_analysis,
                                     run_analysis, system_pairs, wald_contrasts)
from simdesign.analyses import classical  # noqa: F401  (registers the classical tests)

__all__ = ["ANALYSES", "FAILURES", "AnalysisInfo", "PairwiseResult", "register", "resolve_analysis", "run_analysis", "system_pairs",
           "wald_contrasts"]
from simdesign.analyses import mixed_r  # noqa: F401,E402  (registers clmm, lmer, clm; R starts only when they run)
from simdesign.analyses import mixed_native  # noqa: F401,E402  (registers clmm_native)
from simdesign.analyses import lmm_native  # noqa: F401,E402  (registers lmm_native)
from simdesign.analyses import document_tests  # noqa: F401,E402  (ttest_unpaired; resampling thresholds)
from simdesign.analyses import preferences  # noqa: F401,E402  (registers pair_sign, pair_sign_block, bradley_terry)
from simdesign.analyses import preferences_r  # noqa: F401,E402  (registers bt_mixed; R starts only when it runs)
