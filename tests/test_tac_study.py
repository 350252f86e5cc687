"""The TAC-sized paired-vs-unpaired study (issue 31 part 2) and its tests on partially covered pairs.

Oracles are independent of the code under test: scipy's tests on each pair's own documents, a
brute-force swap loop written out here, and the complete-data swap test of document_tests.py.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats

import simdesign
from simdesign.significance.document_tests import swap_pvalues
from simdesign.significance.partial_pairs import PARTIAL_TESTS, partial_pair_pvalues, unpaired_swap_pvalues
from simdesign.cli import main
from simdesign.core.errors import ConfigError
from simdesign.core.threads import single_threaded
from simdesign.studies.tac.tac_study import parse_tac_config, simulate_year, trial_counts

ROOT = Path(__file__).resolve().parents[1]
SMALL = {"study": "tac", "name": "tac-small", "documents": 12, "machines": {"count": 5, "missing": 0.2},
         "humans": {"count": 4, "per_document": 2}, "bootstrap_resamples": 99, "trials": 6, "seed": 5,
         "tests": ["ttest_unpaired", {"name": "ttest_unpaired", "threshold": "mc"}, "ttest_doc",
                   {"name": "ttest_doc", "threshold": "hb"}, "wilcoxon_doc", {"name": "wilcoxon_doc", "threshold": "mc"}],
         "multiplicity": ["none", "holm"]}
ALL_TESTS = [(test, threshold) for test, thresholds in PARTIAL_TESTS.items() for threshold in thresholds]


def partial_data(seed=0, n_systems=6, n_documents=15, missing=0.3):
    rng = np.random.default_rng(seed)
    scores = rng.normal(size=(n_systems, n_documents)) + rng.normal(size=(1, n_documents)) * 2
    scores += np.arange(n_systems)[:, None] * 0.3
    available = rng.random((n_systems, n_documents)) >= missing
    return np.where(available, scores, np.nan), available


PAIRS = [(i, j) for i in range(6) for j in range(i + 1, 6)]


@pytest.mark.parametrize("test, threshold", ALL_TESTS)
def test_a_missing_output_is_never_read(test, threshold):
    scores, available = partial_data()
    with_nan = partial_pair_pvalues(scores, available, PAIRS, test, threshold, np.random.default_rng(1), 199)
    filled = np.where(available, scores, np.random.default_rng(9).normal(size=scores.shape) * 100)
    with_numbers = partial_pair_pvalues(filled, available, PAIRS, test, threshold, np.random.default_rng(1), 199)
    np.testing.assert_array_equal(with_nan, with_numbers)
    assert np.isfinite(with_nan).all()


def test_an_available_nan_is_refused():
    scores, available = partial_data()
    scores[~available] = 0.0
    scores[0, np.flatnonzero(available[0])[0]] = np.nan
    with pytest.raises(ValueError, match="marked unavailable"):
        partial_pair_pvalues(scores, available, PAIRS, "ttest_doc", "theory", np.random.default_rng(0))


def test_theoretical_thresholds_are_scipys_tests_on_each_pairs_documents():
    scores, available = partial_data(seed=3)
    found = {test: partial_pair_pvalues(scores, available, PAIRS, test, "theory", np.random.default_rng(0))
             for test in PARTIAL_TESTS}
    for index, (i, j) in enumerate(PAIRS):
        both = available[i] & available[j]
        x, y = scores[i, available[i]], scores[j, available[j]]
        assert found["ttest_unpaired"][index] == pytest.approx(stats.ttest_ind(x, y, equal_var=False).pvalue)
        assert found["ttest_doc"][index] == pytest.approx(stats.ttest_rel(scores[i, both], scores[j, both]).pvalue)
        assert found["wilcoxon_doc"][index] == pytest.approx(stats.wilcoxon(scores[i, both], scores[j, both]).pvalue)


def test_unpaired_mc_with_full_coverage_is_the_complete_data_swap_test():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(30, 7)) + rng.normal(size=(30, 1)) * 3
    y = x + rng.normal(size=(30, 7)) + 0.4
    covers = np.ones(30, bool)
    mine = unpaired_swap_pvalues(x, y, covers, covers, np.random.default_rng(8), 500)
    np.testing.assert_allclose(mine, swap_pvalues(x, y, "welch", np.random.default_rng(8), 500), rtol=1e-12)


def test_unpaired_mc_on_partial_coverage_matches_a_brute_force_swap_loop():
    rng = np.random.default_rng(6)
    n, resamples = 14, 300
    x, y = rng.normal(size=n) + 0.5, rng.normal(size=n)
    x_covers = np.ones(n, bool)
    x_covers[[0, 3]] = False
    y_covers = np.ones(n, bool)
    y_covers[[5, 6, 9]] = False
    shared = np.flatnonzero(x_covers & y_covers)
    # the signs the function draws: swap_signs's rng.choice over the shared documents, in one batch here
    signs = np.random.default_rng(2).choice(np.array([-1.0, 1.0]), size=(resamples, shared.size))

    def welch(a, b):
        return (a.mean() - b.mean()) / np.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)

    observed = abs(welch(x[x_covers], y[y_covers]))
    exceed = 0
    for row in signs:
        xs, ys = x.copy(), y.copy()
        swapped = shared[row < 0]
        xs[swapped], ys[swapped] = y[swapped], x[swapped]
        exceed += abs(welch(xs[x_covers], ys[y_covers])) >= observed * (1 - 1e-9)
    found = unpaired_swap_pvalues(x[:, None], y[:, None], x_covers, y_covers, np.random.default_rng(2), resamples)
    assert found[0] == pytest.approx((1 + exceed) / (resamples + 1))


def test_a_pair_with_fewer_than_two_shared_documents_is_undefined_not_decided():
    scores = np.arange(12.0).reshape(2, 6) ** 1.5
    available = np.array([[1, 1, 1, 0, 0, 0], [0, 0, 1, 1, 1, 1]], bool)
    for test, threshold in ALL_TESTS:
        p = partial_pair_pvalues(scores, available, [(0, 1)], test, threshold, np.random.default_rng(0), 50)
        assert np.isnan(p[0]) != (test == "ttest_unpaired"), (test, threshold)


def test_the_year_has_tacs_coverage_one_assessor_per_document_and_nan_only_where_missing():
    config = parse_tac_config({"study": "tac", "machines": {"missing": 0.25}})
    year = simulate_year(config, np.random.default_rng(3))
    humans = year.available[config.machines.count:]
    assert (humans.sum(axis=0) == 4).all()  # four human summaries per topic
    assert 0.15 < 1 - year.available[:config.machines.count].mean() < 0.35
    assert humans[year.assessor, np.arange(config.documents)].all()  # the assessor wrote for the topic
    assert np.isnan(year.scores[~year.available]).all() and np.isfinite(year.scores[year.available]).all()


@pytest.mark.slow  # statsmodels' first import: seconds
def test_a_tests_counts_do_not_depend_on_the_other_tests_listed():
    config = parse_tac_config(SMALL)
    alone = parse_tac_config({**SMALL, "tests": [{"name": "wilcoxon_doc", "threshold": "mc"}]})
    both = trial_counts(config, np.random.default_rng(11))
    one = trial_counts(alone, np.random.default_rng(11))
    pd.testing.assert_frame_equal(both[both["label"] == "wilcoxon_doc[mc]"].reset_index(drop=True), one)


@pytest.mark.parametrize("change, named", [
    ({"humans": {"count": 8, "per_document": 9}}, "humans.per_document"),
    ({"tests": [{"name": "ttest_unpaired", "threshold": "hb"}]}, "threshold 'hb' of ttest_unpaired"),
    ({"tests": ["ttest_dok"]}, "did you mean 'ttest_doc'"),
    ({"multiplicity": "bh"}, "'multiplicity' field"),
    ({"machines": {"missing": 1.5}}, "machines.missing"),
    ({"machines": {"population": {"sd": -1}}}, "machines.population.sd"),
    ({"metric_generator": {"summary_correlation": 2}}, "metric_generator.summary_correlation"),
    ({"score": {"scale": 0}}, "score.scale"),
    ({"documents": 1}, "'documents' field"),
    ({"assessors": {"system_sd": "x"}}, "assessors.system_sd"),
    ({"humanz": {}}, "Unknown key"),
])
def test_bad_inputs_exit_2_naming_the_field(tmp_path, capsys, change, named):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({**SMALL, **change}))
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    assert named in capsys.readouterr().err
    with pytest.raises(ConfigError, match=named.replace("(", r"\(").replace("[", r"\[")):
        parse_tac_config({**SMALL, **change})


@pytest.mark.slow  # a worker pool and a figure
def test_run_summary_and_figure(tmp_path):
    result = simdesign.simulate(SMALL, out_dir=tmp_path / "run", jobs=1, progress=False)
    summary = result.summary()
    counts = summary[summary["measure"] == "significant"]
    assert set(counts["pairs"]) == {"all", "human-machine", "machine-machine", "human-human"}
    assert (counts.groupby(["label", "correction"]).size() == 4).all()
    assert {"mean", "mcse", "ci_low", "ci_high", "trial_low", "trial_high", "paper_2010"} <= set(summary.columns)
    hm = counts[counts["pairs"] == "human-machine"]
    assert (hm["n_pairs"] == 20).all() and (hm["mean"] <= 20).all()
    # holm never finds more than no correction
    wide = counts.pivot_table(index=["label", "pairs"], columns="correction", values="mean")
    assert (wide["holm"] <= wide["none"] + 1e-12).all()
    margins = summary[summary["measure"] == "margin_over_unpaired"]
    assert "ttest_unpaired" not in set(margins["label"]) and margins["share_above"].between(0, 1).all()
    assert result.plot(tmp_path / "figure")[0].is_file()


@pytest.mark.slow
def test_level_under_the_null_with_missing_outputs_and_unequal_variances():
    """All systems equal; machines miss 30% of their outputs (a pair shares about half the documents),
    document spreads differ, documents share a large difficulty, one assessor per document. Over the
    machine-machine pairs (trial = unit: the share of pairs rejected per trial), the paired t with Rankel's
    MC threshold, an exact randomisation test, rejects at its attainable level 0.049 (p = (1 + k) / 1000
    < 0.05 for k <= 48) within 4 MCSE; the Wilcoxon test is not liberal; the unpaired t with the theoretical
    threshold is conservative (the shared difficulty stays in its error term)."""
    null = {"study": "tac", "name": "tac-null", "documents": 30,
            "machines": {"count": 20, "missing": 0.3, "population": {"sd": 1e-9}},
            "humans": {"count": 4, "per_document": 2, "advantage": 0.0, "sd": 0.0},
            "metric_generator": {"system_correlation": 1.0, "document_sd": 2.5}, "assessors": {"sd": 0.5},
            "score": {"spread": 0.5}, "bootstrap_resamples": 999, "trials": 200, "seed": 31,
            "tests": [{"name": "ttest_doc", "threshold": "mc"}, "wilcoxon_doc", "ttest_unpaired"]}
    config = parse_tac_config(null)
    with single_threaded():
        rows = pd.concat([trial_counts(config, np.random.default_rng([31, trial])) for trial in range(config.trials)])
    n_pairs = 20 * 19 // 2
    rates = {}
    for label, group in rows.groupby("label"):
        share = group["significant_machine-machine"].to_numpy() / (n_pairs - group["undefined_machine-machine"])
        rates[label] = share.mean(), share.std(ddof=1) / np.sqrt(share.size)
    rate, mcse = rates["ttest_doc[mc]"]
    assert abs(rate - 0.049) < 4 * mcse, rates
    rate, mcse = rates["wilcoxon_doc"]
    assert rate < 0.05 + 4 * mcse, rates
    rate, mcse = rates["ttest_unpaired"]
    assert rate + 4 * mcse < 0.05, rates
