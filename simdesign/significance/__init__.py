"""Significance tests (the registered analyses: classical, resampling, mixed models) and their registry.

Importing this package registers every built-in analysis in :data:`ANALYSES`.
Analyses that need R register too, but check for R only when they run.
"""
from simdesign.significance.base import (ANALYSES, FAILURES, AnalysisInfo, PairwiseResult, register, resolve_analysis,
                                         run_analysis, system_pairs, wald_contrasts)
from simdesign.significance import classical  # noqa: F401  (registers the classical tests)

__all__ = ["ANALYSES", "FAILURES", "AnalysisInfo", "PairwiseResult", "register", "resolve_analysis", "run_analysis", "system_pairs",
           "wald_contrasts"]
from simdesign.significance import mixed_r  # noqa: F401,E402  (registers clmm, lmer, clm; R starts only when they run)
from simdesign.significance import mixed_native  # noqa: F401,E402  (registers clmm_native)
from simdesign.significance import lmm_native  # noqa: F401,E402  (registers lmm_native)
from simdesign.significance import document_tests  # noqa: F401,E402  (ttest_unpaired; resampling thresholds)
from simdesign.significance import preferences  # noqa: F401,E402  (registers pair_sign, pair_sign_block, bradley_terry)
from simdesign.significance import preferences_r  # noqa: F401,E402  (registers bt_mixed; R starts only when it runs)
