"""Results do not change under restructuring: summaries and a plan equal the stored fixtures.

The fixtures were written by scripts/make_regression_fixtures.py from the code as it was before the
package was restructured (issue 11). Rates, intervals and counts must be equal (floating-point
columns to 1e-12 relative: the same arithmetic in another order may move the last bits); wall-clock
columns are left out. A change that is meant to alter results regenerates the fixtures knowingly.
Regenerated once for generator version 2 (issue 38: the same draws on every BLAS kernel).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import simdesign

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "regression"
TIMING_COLUMNS = ("mean_fit_seconds", "run_seconds")
PLAN_COLUMNS = ("rank", "design", "test", "judgements", "annotators", "cost", "power", "ci_low", "ci_high", "trials",
                "decision")

# (fixture name, committed config, overrides): small trial counts, so the whole file takes seconds.
SUMMARY_CASES = {
    "quick": ("configs/quick.yaml", {"trials": 40}),
    "fig5_coherence_native": ("configs/paper_fig5_coherence.yaml",
                              {"trials": 6, "designs": [{"kind": "block", "blocks": 4, "docs_per_block": 25,
                                                         "annotators_per_block": 3}]}),
    "pool_wilcoxon_effect": ("configs/quick.yaml",
                             {"trials": 30, "effect": "fitted", "tests": ["wilcoxon_doc", "ttest_doc", "art_doc"],
                              "designs": [{"kind": "pool", "docs": 30, "annotators": 10,
                                           "judgements_per_output": 2},
                                          {"kind": "block", "blocks": 6, "docs_per_block": 5,
                                           "annotators_per_block": 2}]}),
}
# The other study kinds (issue 27): a Rank config, a replication, a panel study, a metric validation and a
# sweep, each at a few trials; stored before the runner was shared, so the restructuring is seen to change nothing.
RANK_CASE = ("configs/rank_vs_likert_coherence.yaml",
             {"trials": 8, "designs": [{"kind": "block", "blocks": 4, "docs_per_block": 10,
                                        "annotators_per_block": 3}],
              "tests": ["ttest_doc", "art_block", {"name": "clmm_native", "structure": "paper"}]})
# The replication case keeps the tests it was stored with (configs/replication.yaml now uses clmm_native and
# ttest_doc, issue 31 part 3): it checks the replication machinery, not the config's choice of tests.
REPLICATION_CASE = ("configs/replication.yaml",
                    {"trials": 20, "tests": ["ttest", "ttest_doc", "wilcoxon_doc", "art_doc"],
                     "designs": [{"kind": "overlap", "shared_docs": 10,
                                  "unique_docs_per_annotator": [0, 10], "annotators": [3, 6]}]})
PANEL_CASE = ("configs/crowd_vs_expert.yaml",
              {"trials": 6, "subsamples": 3, "bootstrap": 50, "chunk_size": 4, "docs": 6,
               "panels": {"expert": {"annotators": 2, "judge": "all", "noise": 0.5},
                          "crowd": {"pool": 20, "per_output": 5, "noise": 1.5, "slope_sd": 1.5,
                                    "spammer_share": 0.1}},
               "tests": ["ttest_doc"], "test_k": [1, 5]})
METRIC_CASE = ("configs/metric_validation.yaml",
               {"trials": 6, "systems": [5, 8], "documents": [10], "bootstrap_resamples": 40,
                "permutation_resamples": 40})
SWEEP_CASE = ("configs/paired_vs_unpaired.yaml",
              {"trials": 12, "tests": ["ttest_unpaired", "ttest_doc", "wilcoxon_doc"],
               "designs": [{"kind": "block", "blocks": 12, "docs_per_block": 1, "annotators_per_block": 3}],
               "sweep": {"effect": ["zero", 0.5], "document_intercept_scale": [0, 2]}})
PLAN = {"name": "regression-plan", "model": "coherence", "effect": "fitted", "tests": ["ttest_doc", "art_block"],
        "target_power": 0.8, "cost": {"pay_per_hour": 12.0, "seconds_per_judgement": "capped_mean",
                                      "per_annotator": 5.0},
        "search": {"shapes": ["nested", "block"], "docs": [40, 100], "docs_per_block": [5, 10],
                   "annotators_per_block": [3]},
        "screen_trials": 20, "max_trials": 80, "seed": 7}


def _config_mapping(path: str, overrides: dict) -> dict:
    import yaml

    mapping = yaml.safe_load((ROOT / path).read_text())
    mapping.update(overrides)
    mapping.pop("figure", None)
    return mapping


def summary_cases() -> dict[str, pd.DataFrame]:
    """The summaries the fixtures hold, computed by the current code (in memory, one worker)."""
    out = {}
    for name, (path, overrides) in SUMMARY_CASES.items():
        result = simdesign.simulate(_config_mapping(path, overrides), jobs=1, progress=False)
        out[name] = result.summary().drop(columns=list(TIMING_COLUMNS), errors="ignore")
    return out


def study_cases(directory: Path) -> dict[str, pd.DataFrame]:
    """The summaries of the other study kinds, computed by the current code (one worker) under ``directory``."""
    import yaml

    from simdesign.simulation.metric_validation import (parse_metric_config, run_metric_validation,
                                                        summarise_metric_validation)
    from simdesign.simulation.panel_study import parse_panel_study, read_significance, run_panel_study
    from simdesign.simulation.panel_summary import summarise_panel_study
    from simdesign.simulation.panel_tests import summarise_significance
    from simdesign.simulation.sweep import run_sweep

    out = {}
    for name, case in (("rank_likert", RANK_CASE), ("replication", REPLICATION_CASE)):
        result = simdesign.simulate(_config_mapping(*case), jobs=1, progress=False)
        out[name] = result.summary().drop(columns=list(TIMING_COLUMNS), errors="ignore")
    panel = parse_panel_study(_config_mapping(*PANEL_CASE), base_dir=ROOT / "configs")
    trials = run_panel_study(panel, directory / "panel", jobs=1)
    out["panel_study"] = summarise_panel_study(panel, trials)
    out["panel_significance"] = summarise_significance(read_significance(panel, directory / "panel"), panel.alpha)
    metric = parse_metric_config(_config_mapping(*METRIC_CASE), ROOT / "configs")
    out["metric_validation"] = summarise_metric_validation(run_metric_validation(metric, directory / "metric"),
                                                           metric)
    sweep_path = directory / "sweep.yaml"
    sweep_path.write_text(yaml.safe_dump(_config_mapping(*SWEEP_CASE)))
    summary, _ = run_sweep(sweep_path, out_dir=directory / "sweep", jobs=1)
    out["sweep"] = summary.drop(columns=list(TIMING_COLUMNS), errors="ignore")
    return out


def plan_case() -> tuple[pd.DataFrame, str]:
    outcome = simdesign.plan(PLAN, jobs=1, progress=False)
    recommended = outcome.recommended
    text = "none" if recommended is None else f"{recommended.candidate.design.label} {recommended.candidate.test.label}"
    return outcome.table, text


def _assert_frames_equal(computed: pd.DataFrame, stored: pd.DataFrame) -> None:
    assert list(computed.columns) == list(stored.columns)
    assert len(computed) == len(stored)
    for column in stored.columns:
        left, right = computed[column].reset_index(drop=True), stored[column].reset_index(drop=True)
        if pd.api.types.is_float_dtype(right) or pd.api.types.is_float_dtype(left):
            np.testing.assert_allclose(left.astype(float), right.astype(float), rtol=1e-12, atol=1e-15,
                                       equal_nan=True, err_msg=column)
        else:
            assert left.fillna("").astype(str).tolist() == right.fillna("").astype(str).tolist(), column


@pytest.mark.slow
def test_summaries_equal_the_stored_ones():
    if not FIXTURES.is_dir():
        pytest.fail(f"missing {FIXTURES}: run scripts/make_regression_fixtures.py")
    for name, summary in summary_cases().items():
        stored = pd.read_csv(FIXTURES / f"{name}.csv")
        # through CSV like the fixture, so both sides have the same dtypes
        computed = pd.read_csv(pd.io.common.StringIO(summary.to_csv(index=False)))
        _assert_frames_equal(computed, stored)


@pytest.mark.slow
def test_study_kinds_equal_the_stored_ones(tmp_path):
    for name, summary in study_cases(tmp_path).items():
        path = FIXTURES / f"{name}.csv"
        assert path.is_file(), f"missing {path}: run scripts/make_regression_fixtures.py"
        stored = pd.read_csv(path)
        computed = pd.read_csv(pd.io.common.StringIO(summary.to_csv(index=False)))
        _assert_frames_equal(computed, stored)


@pytest.mark.slow
def test_plan_equals_the_stored_one():
    table, recommendation = plan_case()
    stored = pd.read_csv(FIXTURES / "plan.csv")
    computed = pd.read_csv(pd.io.common.StringIO(table[list(PLAN_COLUMNS)].to_csv(index=False)))
    _assert_frames_equal(computed, stored)
    assert recommendation == (FIXTURES / "plan_recommendation.txt").read_text().strip()
