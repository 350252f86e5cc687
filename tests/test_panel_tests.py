"""Significance tests on aggregated crowd judgements in panel studies (simdesign.studies.panels.panel_tests)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from simdesign.core.errors import ConfigError
from simdesign.studies.panels.panel_study import parse_panel_study, read_significance, run_panel_study
from simdesign.studies.panels.panel_tests import pairwise_test, significance_rows, summarise_significance

from conftest import within_mcse

SYSTEMS = ("a", "b", "c")


def test_paired_tests_on_aggregates_are_scipys():
    rng = np.random.default_rng(3)
    aggregates = rng.normal(size=(12, 3)) + np.array([0.0, 0.4, 0.9])
    for test, reference in (("ttest_doc", lambda x, y: stats.ttest_rel(x, y).pvalue),
                            ("wilcoxon_doc", lambda x, y: stats.wilcoxon(x - y).pvalue)):
        estimate, p_value, succeeded = pairwise_test(test, aggregates, SYSTEMS, np.random.default_rng(0))
        expected = [reference(aggregates[:, i], aggregates[:, j]) for i, j in ((0, 1), (0, 2), (1, 2))]
        np.testing.assert_allclose(p_value, expected, rtol=1e-10)
        np.testing.assert_allclose(estimate, [aggregates[:, i].mean() - aggregates[:, j].mean()
                                              for i, j in ((0, 1), (0, 2), (1, 2))])
        assert succeeded.all()
    # 2^12 sign vectors > 1000 flips: the randomisation test is random, but close to the t-test here
    _, p_art, _ = pairwise_test("art_doc", aggregates, SYSTEMS, np.random.default_rng(0))
    assert np.all((p_art > 0) & (p_art <= 1))


def test_rejections_are_counted_by_direction_and_failures_never_reject():
    aggregates = np.tile(np.array([[3.0, 3.0, 5.0], [3.0, 3.0, 5.0]]), (5, 1))[None].repeat(2, axis=0)
    aggregates[:, :, 2] += np.linspace(-0.1, 0.1, 10)  # c far above a and b; a and b identical (degenerate)
    # true effects: a < c, b < c, and a > b (the a-b test fails: zero variance, so it cannot reject)
    rows = significance_rows("ttest_doc", aggregates, np.array([0.5, -1.0, -1.0]), 0.05, SYSTEMS,
                             np.random.default_rng(0))
    assert rows == [("power", pytest.approx(2 / 3), 6, 2), ("type_s", 0.0, 6, 2)]
    rows = significance_rows("ttest_doc", aggregates, np.array([-0.5, 1.0, 1.0]), 0.05, SYSTEMS,
                             np.random.default_rng(0))
    assert rows[1] == ("type_s", pytest.approx(2 / 3), 6, 2)
    assert significance_rows("ttest_doc", aggregates, np.zeros(3), 0.05, SYSTEMS, np.random.default_rng(0)) == [
        ("type1", pytest.approx(2 / 3), 6, 2)]


def _study(**changes) -> dict:
    # the pool is docs x per_output, so every worker judges one document: documents are independent units
    raw = {"name": "tests", "model": "coherence", "docs": 20, "effect": "zero",
           "panels": {"expert": {"annotators": 1, "judge": "all"},
                      "crowd": {"pool": 80, "per_output": 4, "noise": 1.5, "slope_sd": 1.5, "spammer_share": 0.1}},
           "aggregations": ["mean"], "subsamples": 2, "trials": 6, "seed": 11, "chunk_size": 3, "bootstrap": 20,
           "tests": ["ttest_doc"], "test_k": [1, 4]}
    raw.update(changes)
    return raw


def test_test_keys_are_validated():
    with pytest.raises(ConfigError) as caught:
        parse_panel_study(_study(tests=["ttest"], test_k=[0, 5], alpha=1.5))
    text = str(caught.value)
    assert "'tests' field must be a list of distinct names from ['ttest_doc', 'art_doc', 'wilcoxon_doc']" in text
    assert "'test_k' field must be a list of integers in 1..per_output (4)" in text
    assert "'alpha' field must be in (0, 1)" in text


def test_significance_rows_are_stored_with_their_chunks_and_resume(tmp_path):
    from simdesign.runner.stores import short_fingerprint

    short = parse_panel_study(_study(trials=4))
    run_panel_study(short, tmp_path / "grown")
    config = parse_panel_study(_study())
    grown = run_panel_study(config, tmp_path / "grown")  # computes trials 4 and 5 only
    # each chunk's name: setting, trial range and the config's fingerprint (the store reads only its own)
    key = short_fingerprint(config.fingerprint())
    assert sorted(path.name for path in (tmp_path / "grown" / "chunks").iterdir()) == [
        f"noise1.5-slope1.5-spam0.1-000000-000003-{key}.csv", f"noise1.5-slope1.5-spam0.1-000003-000004-{key}.csv",
        f"noise1.5-slope1.5-spam0.1-000004-000006-{key}.csv"]
    fresh = run_panel_study(config, tmp_path / "fresh")
    pd.testing.assert_frame_equal(grown, fresh)
    rows = read_significance(config, tmp_path / "grown")
    pd.testing.assert_frame_equal(rows, read_significance(config, tmp_path / "fresh"))
    assert len(rows) == 6 * 2 and set(rows["estimand"]) == {"type1"} and set(rows["k"]) == {1, 4}
    # 2 subsamples x 10 pairs at k = 1; one subsample at k = per_output (all workers: every subsample is the same)
    assert rows.groupby("k")["n_tests"].unique().to_dict() == {1: [20], 4: [10]}
    assert rows["value"].between(0, 1).all()


@pytest.mark.slow
def test_mos_per_document_ttest_holds_its_level_under_effect_zero(tmp_path):
    """Effect zero, independent documents: the MOS-aggregated per-document t-test rejects about 5%."""
    config = parse_panel_study(_study(trials=300, test_k=[4], subsamples=1, tests=["ttest_doc", "wilcoxon_doc"]))
    run_panel_study(config, tmp_path)
    summary = summarise_significance(read_significance(config, tmp_path), config.alpha)
    assert len(summary) == 2
    for row in summary.itertuples():
        assert row.trials == 300 and row.estimand == "type1"
        assert within_mcse(row.rate, 0.05, row.mcse), (row.test, row.rate, row.mcse)
