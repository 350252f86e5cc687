"""Every study kind runs through one loop and returns one result type (issue 40).

The kinds come from the registry, so a built-in kind that brings back a run loop of its own fails here.
"""
from __future__ import annotations

import pandas as pd
import pytest

import simdesign
from simdesign.api import SimulationResult, StudyResult
from simdesign.runner.study import REGISTERED, StudyKind
from simdesign.studies.kinds import known_kinds  # noqa: F401 -- registers the built-in kinds
from simdesign.studies.panels.panel_study import PANELS

# A sweep drives runs of another kind (each through the one loop); it has no trials of its own.
DRIVERS = {"sweep"}

PANEL_WITH_TESTS = {**PANELS.examples()["panels"], "effect": "fitted", "tests": ["ttest_doc"], "test_k": [1, 4],
                    "trials": 4}


@pytest.mark.parametrize("name", sorted(set(REGISTERED) - DRIVERS))
def test_no_kind_has_a_run_loop_of_its_own(name):
    kind = REGISTERED[name]
    assert type(kind).run is StudyKind.run, f"the {name} kind overrides run(): it must plan chunks through the hooks"


def test_a_rate_result_is_a_study_result_of_the_rates_kind(tmp_path):
    raw = {"name": "one", "model": "coherence", "effect": "zero", "tests": ["ttest_doc"], "trials": 3, "seed": 1,
           "designs": [{"kind": "block", "blocks": 2, "docs_per_block": 2, "annotators_per_block": 3}]}
    result = simdesign.simulate(raw, out_dir=tmp_path / "run", jobs=1, progress=False)
    assert isinstance(result, SimulationResult) and isinstance(result, StudyResult)
    assert result.kind is REGISTERED["rates"]
    assert result.rows is result.trials and len(result.rows) == 3 * 1 * 10  # trials x tests x system pairs


def test_a_panel_result_saves_its_significance_table_also_from_memory(tmp_path):
    stored = simdesign.simulate(PANEL_WITH_TESTS, out_dir=tmp_path / "run", jobs=1, progress=False)
    in_memory = simdesign.simulate(PANEL_WITH_TESTS, jobs=1, progress=False)
    assert in_memory.out_dir is None
    written = in_memory.save(tmp_path / "saved")
    assert {"summary", "significance.csv"} <= set(written)
    significance = pd.read_csv(written["significance.csv"])
    # what the result saves is the tests' rates over the stored trials: one row per (setting, method, test, k,
    # estimand), each from the 4 trials
    assert set(significance["k"]) == {1, 4} and set(significance["test"]) == {"ttest_doc"}
    assert (significance["trials"] == 4).all()
    pd.testing.assert_frame_equal(significance, pd.read_csv(stored.save(tmp_path / "again")["significance.csv"]))


def test_a_metric_result_saves_its_trials(tmp_path):
    kind = REGISTERED["metric-validation"]
    mapping = kind.examples()["metric-validation"]
    result = simdesign.simulate(mapping, jobs=1, progress=False)
    written = result.save(tmp_path)
    assert len(pd.read_csv(written["trials.csv"])) == len(result.rows) > 0
