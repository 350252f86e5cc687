"""``simdesign analyse-metrics``: metric correlations with intervals and metric comparisons on real-format tables.

The oracle is ``nlpstats`` (0.0.1, Deutsch et al.'s own package; the ``test`` extra installs it): its
bootstrap and permutation loops resample with ``np.random`` and correlate with scipy, a code path that
shares nothing with simdesign's vectorised one. Its PERM-BOTH is not the paper's (it swaps whole systems,
then whole inputs; the paper's code, sacrerouge's ``permute_both``, swaps single outputs), so the paper's
per-output swap is handed to its permutation loop as a callable written here. The tests that need it are
skipped when it is absent; a plain-loop oracle below checks BOOT-BOTH without it.
"""
from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import simdesign
from simdesign.cli import main
from simdesign.core.seeds import analysis_rng
from simdesign.realdata.metric_analysis import STREAM, read_metric_table
from simdesign.stats.metric_comparison import (bootstrap_correlations, fisher_interval, permutation_p_values,
                                               williams_test)

from conftest import within_mcse

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "metric_scores.csv"


@pytest.fixture(scope="module")
def example():
    return read_metric_table(EXAMPLE)


def _oracle():
    return pytest.importorskip("nlpstats.correlations", reason="nlpstats (the test extra) is not installed")


def _quantile_se(samples: np.ndarray, p: float, h: float = 0.01) -> float:
    """Monte-Carlo SE of the p-quantile of R draws: sqrt(p (1 - p) / R) / density, the density from the samples."""
    low, high = np.quantile(samples, [max(p - h, 0.0), min(p + h, 1.0)])
    return np.sqrt(p * (1 - p) / samples.size) * (high - low) / (2 * h)


def _p_se(p: float, *sizes: int) -> float:
    p = min(max(p, 1.0 / max(sizes)), 1 - 1.0 / max(sizes))  # a p-value near 0 or 1 still has its grain
    return np.sqrt(p * (1 - p) * sum(1.0 / n for n in sizes))


# ---------------------------------------------------------------------------------------------
# The command on the committed example table
# ---------------------------------------------------------------------------------------------

@pytest.mark.slow  # a second or more: the fast tier stays under a minute
def test_the_command_prints_intervals_and_tests_and_writes_its_outputs(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["analyse-metrics", str(EXAMPLE), "--resamples", "200", "--methods", "pearson,kendall",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    for text in ("12 systems x 30 inputs", "BOOT-SYSTEMS", "BOOT-INPUTS", "BOOT-BOTH", "Fisher", "PERM-SYSTEMS",
                 "PERM-INPUTS", "PERM-BOTH", "Williams", "paired bootstrap", "default", "paper", "summary", "global"):
        assert text in printed, text
    correlations = pd.read_csv(out / "correlations.csv")
    comparisons = pd.read_csv(out / "comparisons.csv")
    assert set(correlations["level"]) == {"system", "summary", "global"}
    assert len(correlations) == 3 * 2 * 2 * 4  # levels x methods x metrics x intervals
    inside = correlations.dropna(subset=["low"])
    assert ((inside["low"] <= inside["estimate"] + 1e-12) | (inside["interval"] != "Fisher")).all()
    assert (comparisons["p_value"].between(0, 1)).all()
    # Williams only where n independent triples exist
    assert set(comparisons.loc[comparisons["test"] == "Williams", "level"]) == {"system", "global"}
    assert (out / "metric_analysis.png").stat().st_size > 10_000 and "## Comparisons" in (
        out / "metric_analysis.md").read_text()


def test_the_system_level_estimates_are_scipys(example):
    result = simdesign.analyse_metrics(EXAMPLE, levels=["system", "global"], resamples=20)
    table = result.correlations[result.correlations["interval"] == "Fisher"].set_index(["level", "method", "metric"])
    means = {name: m.mean(axis=1) for name, m in example.metrics.items()}
    human = example.human.mean(axis=1)
    for method, function in (("pearson", stats.pearsonr), ("spearman", stats.spearmanr),
                             ("kendall", stats.kendalltau)):
        for name in example.metrics:
            assert table.loc[("system", method, name), "estimate"] == pytest.approx(function(means[name], human)[0])
            assert table.loc[("global", method, name), "estimate"] == pytest.approx(
                function(example.metrics[name].ravel(), example.human.ravel())[0])


@pytest.mark.slow  # moved from the fast tier (about 0.4-0.7 s; the tier's budget is 60 s)
def test_results_do_not_depend_on_what_else_is_asked_for():
    """Streams are keyed by level and scheme (bootstrap) or by level, method, scheme and pair (permutations)."""
    alone = simdesign.analyse_metrics(EXAMPLE, levels=["system"], methods=["pearson"], resamples=100, seed=3)
    full = simdesign.analyse_metrics(EXAMPLE, levels=["global", "system"], methods=["kendall", "pearson"],
                                     resamples=100, seed=3)
    keys = ["level", "method", "metric", "interval"]
    merged = alone.correlations.merge(full.correlations, on=keys, suffixes=("", "_full"))
    assert len(merged) == len(alone.correlations)
    np.testing.assert_array_equal(merged[["low", "high"]].to_numpy(), merged[["low_full", "high_full"]].to_numpy())
    keys = ["level", "method", "test", "alternative"]
    merged = alone.comparisons.merge(full.comparisons, on=keys, suffixes=("", "_full"))
    np.testing.assert_array_equal(merged["p_value"].to_numpy(), merged["p_value_full"].to_numpy())


def test_the_committed_example_is_what_the_generator_writes():
    import runpy

    script = runpy.run_path(str(REPO / "examples" / "make_metric_scores.py"))
    made, committed = script["make_table"](), pd.read_csv(EXAMPLE)
    assert list(made.columns) == ["system", "input", "metric_a", "metric_b", "human"]
    assert made[["system", "input"]].equals(committed[["system", "input"]])
    np.testing.assert_allclose(made[["metric_a", "metric_b", "human"]].to_numpy(),
                               committed[["metric_a", "metric_b", "human"]].to_numpy(), atol=1e-9)


# ---------------------------------------------------------------------------------------------
# Agreement with independent implementations
# ---------------------------------------------------------------------------------------------

@pytest.mark.slow  # moved from the fast tier (about 0.5-1 s; the tier's budget is 60 s)
def test_boot_both_agrees_with_a_plain_loop(example):
    """A loop over resamples (systems, then inputs, drawn with replacement; scipy's Pearson of the means)."""
    metric, human, resamples = example.metrics["metric_a"], example.human, 2000
    rng = np.random.default_rng(11)
    loop = []
    for _ in range(resamples):
        rows = rng.choice(metric.shape[0], metric.shape[0])
        columns = rng.choice(metric.shape[1], metric.shape[1])
        x, y = metric[rows][:, columns].mean(axis=1), human[rows][:, columns].mean(axis=1)
        if np.ptp(x) > 0 and np.ptp(y) > 0:
            loop.append(stats.pearsonr(x, y)[0])
    loop = np.array(loop)
    ours = bootstrap_correlations(metric, human, "system", "both", analysis_rng(0, STREAM, 0, "boot:system:both"),
                                  resamples, ["pearson"])["pearson"]
    assert stats.ks_2samp(ours, loop).pvalue > 1e-3
    for p in (0.025, 0.975):
        se = np.hypot(_quantile_se(loop, p), _quantile_se(ours, p))
        assert within_mcse(np.quantile(ours, p), np.quantile(loop, p), se), p


@pytest.mark.slow  # 0.7 s each: the fast tier stays under a minute
@pytest.mark.parametrize("method", ["pearson", "kendall"])
def test_boot_both_interval_agrees_with_nlpstats_on_the_example(example, method):
    correlations = _oracle()
    metric, human = example.metrics["metric_a"], example.human
    np.random.seed(5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns of constant resamples; nlpstats drops their NaN
        oracle = correlations.bootstrap(metric, human, "system", method, "both", n_resamples=2000)
    samples = np.asarray(oracle.samples)
    result = simdesign.analyse_metrics(EXAMPLE, levels=["system"], methods=[method], resamples=2000)
    row = result.correlations.query("metric == 'metric_a' and interval == 'BOOT-BOTH'").iloc[0]
    ours = bootstrap_correlations(metric, human, "system", "both", analysis_rng(0, STREAM, 0, "boot:system:both"),
                                  2000, [method])[method]
    assert (row["low"], row["high"]) == pytest.approx(tuple(np.quantile(ours[np.isfinite(ours)], [0.025, 0.975])))
    assert stats.ks_2samp(ours[np.isfinite(ours)], samples).pvalue > 1e-3
    for p, ours_end, oracle_end in ((0.025, row["low"], oracle.lower), (0.975, row["high"], oracle.upper)):
        assert within_mcse(ours_end, oracle_end, np.sqrt(2) * _quantile_se(samples, p)), (p, ours_end, oracle_end)


def _per_output_swap(X, Y):
    """The paper's PERM-BOTH (sacrerouge's permute_both): each output's two scores swapped with probability 1/2."""
    mask = np.random.rand(*X.shape) > 0.5
    return np.where(mask, Y, X), np.where(mask, X, Y)


@pytest.mark.slow  # a second or more: the full suite runs it, the fast tier stays under a minute
@pytest.mark.parametrize("level,scheme", [("system", "systems"), ("system", "inputs"), ("system", "both"),
                                          ("global", "inputs"), ("global", "both")])
def test_permutation_p_values_agree_with_nlpstats_on_the_example(example, level, scheme):
    correlations = _oracle()
    a, b, human = example.metrics["metric_a"], example.metrics["metric_b"], example.human
    resamples = 1000
    ours = permutation_p_values(a, b, human, level, "pearson", scheme, np.random.default_rng(8), resamples)
    method = _per_output_swap if scheme == "both" else scheme
    for alternative in ("two-sided", "greater"):
        np.random.seed(9)
        oracle = correlations.permutation_test(a, b, human, level, "pearson", method, alternative=alternative,
                                               n_resamples=resamples).pvalue
        mine = ours[f"p_{alternative}"]
        assert within_mcse(mine, oracle, _p_se(oracle, resamples, resamples) + 1.0 / resamples), (alternative, mine,
                                                                                                 oracle)


@pytest.mark.slow
@pytest.mark.parametrize("level,scheme", [("summary", "both"), ("summary", "systems"), ("global", "both")])
def test_summary_and_global_intervals_and_p_values_agree_with_nlpstats(example, level, scheme):
    """The slower levels of nlpstats' loops: a correlation per input per resample (summary), all outputs (global).

    On the example's first 15 inputs: nlpstats computes the summary level input by input in Python."""
    correlations = _oracle()
    a, b, human = (matrix[:, :15] for matrix in (example.metrics["metric_a"], example.metrics["metric_b"],
                                                  example.human))
    oracle_level = "input" if level == "summary" else level
    resamples = 800
    np.random.seed(12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        oracle = np.asarray(correlations.bootstrap(a, human, oracle_level, "kendall", scheme,
                                                   n_resamples=resamples).samples)
    ours = bootstrap_correlations(a, human, level, scheme, np.random.default_rng(13), resamples, ["kendall"])["kendall"]
    assert stats.ks_2samp(ours, oracle).pvalue > 1e-3
    for p in (0.025, 0.975):
        assert within_mcse(np.quantile(ours, p), np.quantile(oracle, p),
                           np.hypot(_quantile_se(oracle, p), _quantile_se(ours, p))), p
    method = _per_output_swap if scheme == "both" else scheme
    mine = permutation_p_values(a, b, human, level, "pearson", method if scheme != "both" else "both",
                                np.random.default_rng(14), resamples)["p_two-sided"]
    np.random.seed(15)
    theirs = correlations.permutation_test(a, b, human, oracle_level, "pearson", method,
                                           n_resamples=resamples).pvalue
    assert within_mcse(mine, theirs, _p_se(theirs, resamples, resamples) + 1.0 / resamples), (mine, theirs)


# ---------------------------------------------------------------------------------------------
# Williams' test and the Fisher interval
# ---------------------------------------------------------------------------------------------

def test_williams_test_matches_the_formula_by_hand():
    # r12 = 0.6, r13 = 0.4, r23 = 0.5, n = 20, by hand:
    # |R| = 1 - 0.36 - 0.16 - 0.25 + 2 * 0.6 * 0.4 * 0.5 = 0.47
    # denominator = 2 * 19 / 17 * 0.47 + 0.5^2 * 0.5^3 = 1.0505882 + 0.03125 = 1.0818382
    # t = 0.2 * sqrt(19 * 1.5 / 1.0818382) = 0.2 * sqrt(26.344051) = 0.2 * 5.1326456 = 1.0265291
    t, p = williams_test(0.6, 0.4, 0.5, 20)
    assert t == pytest.approx(1.0265291, abs=1e-6)
    assert p == pytest.approx(2 * stats.t.sf(1.0265291, 17), rel=1e-5)
    assert williams_test(0.6, 0.4, 0.5, 20, "greater")[1] == pytest.approx(p / 2, rel=1e-9)
    assert williams_test(0.4, 0.6, 0.5, 20, "greater")[1] == pytest.approx(1 - p / 2, rel=1e-9)
    assert np.isnan(williams_test(0.6, 0.4, 0.5, 3)[1])


def test_williams_and_fisher_agree_with_nlpstats_on_the_example(example):
    correlations = _oracle()
    result = simdesign.analyse_metrics(EXAMPLE, levels=["system"], methods=["pearson", "spearman", "kendall"],
                                       resamples=10)
    williams = result.comparisons.query("test == 'Williams'").set_index(["method", "alternative"])["p_value"]
    fisher = result.correlations.query("interval == 'Fisher'").set_index(["method", "metric"])
    a, b, human = example.metrics["metric_a"], example.metrics["metric_b"], example.human
    for method in ("pearson", "spearman", "kendall"):
        # nlpstats takes absolute correlations (as psych's r.test): the same here, all are positive
        for alternative in ("two-sided", "greater"):
            theirs = correlations.williams_test(a, b, human, "system", method, alternative=alternative).pvalue
            assert williams.loc[(method, alternative)] == pytest.approx(theirs, rel=1e-9)
        for name, matrix in example.metrics.items():
            lower, upper = correlations.fisher(matrix, human, "system", method)
            assert (fisher.loc[(method, name), "low"], fisher.loc[(method, name), "high"]) == pytest.approx(
                (lower, upper), rel=1e-9)


def test_fisher_interval_by_hand():
    # atanh(0.5) = 0.5493061; 1.959964 / sqrt(12 - 3) = 0.6533213; tanh(-0.1040152) = -0.1036418;
    # tanh(1.2026274) = (e^2.4052548 - 1) / (e^2.4052548 + 1) = 10.081253 / 12.081253 = 0.834454
    assert fisher_interval(0.5, 12) == pytest.approx((-0.1036418, 0.834454), abs=2e-6)
    assert all(np.isnan(fisher_interval(0.5, 4, "kendall")))


# ---------------------------------------------------------------------------------------------
# Bad input: exit 2, naming columns and lines
# ---------------------------------------------------------------------------------------------

def _write(tmp_path, rows, header="system,input,m1,m2,human") -> Path:
    path = tmp_path / "scores.csv"
    path.write_text(header + "\n" + "\n".join(rows) + "\n")
    return path


def _complete_rows(systems=4, inputs=3):
    return [f"s{s},d{d},{s + 0.1 * d},{(s * d) % 3},{s + 0.2 * (d % 2)}" for s in range(systems) for d in range(inputs)]


def _error(capsys, *argv) -> str:
    assert main(["analyse-metrics", *map(str, argv), "--resamples", "20"]) == 2
    return capsys.readouterr().err


def test_bad_tables_exit_2_naming_columns_and_lines(tmp_path, capsys):
    assert "lacks the column(s) ['human']" in _error(capsys, _write(tmp_path, _complete_rows(), "system,input,m1,m2,h"))
    assert "lacks the column(s) ['m3']" in _error(capsys, _write(tmp_path, _complete_rows()), "--metrics", "m1,m3")
    rows = _complete_rows()
    rows[4] = "s1,d1,abc,1,2"  # line 6 (header = line 1)
    rows[7] = "s2,d1,,1,2"
    error = _error(capsys, _write(tmp_path, rows))
    assert "'m1' column must hold finite numbers, but line(s) 6, 9 hold 'abc'" in error
    rows = _complete_rows() + ["s0,d1,1,1,1"]
    error = _error(capsys, _write(tmp_path, rows))
    assert "2 rows repeat a (system, input) pair (lines 3, 14)" in error
    rows = [row for row in _complete_rows() if not row.startswith("s2,d1,")]
    error = _error(capsys, _write(tmp_path, rows))
    assert "system 's2' lacks 1 of 3 inputs, e.g. ['d1']" in error and "--drop-incomplete-inputs" in error
    assert "at least 3 systems" in _error(capsys, _write(tmp_path, _complete_rows(systems=2)))
    assert "not found" in _error(capsys, tmp_path / "absent.csv")
    assert "--level must name levels" in _error(capsys, _write(tmp_path, _complete_rows()), "--level", "document")


def test_missing_cells_can_drop_their_inputs(tmp_path, capsys):
    rows = [row for row in _complete_rows(inputs=4) if not row.startswith("s2,d1,")]
    assert main(["analyse-metrics", str(_write(tmp_path, rows)), "--drop-incomplete-inputs", "--resamples", "20",
                 "--level", "system", "--methods", "pearson"]) == 0
    printed = capsys.readouterr().out
    assert "4 systems x 3 inputs" in printed and "dropped 1 of 4 inputs" in printed


def test_a_dataframe_with_bad_values_raises_dataerror_with_row_lines():
    frame = pd.DataFrame({"system": ["a", "a", "b", "b", "c", "c"], "input": ["x", "y"] * 3,
                          "m": [1.0, 2.0, np.inf, 1.0, 0.5, 0.1], "human": [1, 2, 3, 4, 5, 6]})
    with pytest.raises(simdesign.DataError, match=r"'m' column must hold finite numbers, but line\(s\) 4 hold"):
        simdesign.analyse_metrics(frame)


# ---------------------------------------------------------------------------------------------
# The Fisher baseline and the comparison tests in the metric-validation study
# ---------------------------------------------------------------------------------------------

def test_fisher_interval_covers_a_bivariate_normal_correlation_at_its_level():
    """Known answer: for n normal pairs the Fisher interval of Pearson's r covers rho about 95% of the time."""
    rng, trials, rho, n = np.random.default_rng(21), 4000, 0.6, 15
    pairs = rng.multivariate_normal([0, 0], [[1, rho], [rho, 1]], size=(trials, n))
    centred = pairs - pairs.mean(axis=1, keepdims=True)
    r = (centred[..., 0] * centred[..., 1]).sum(axis=1) / np.sqrt((centred ** 2).sum(axis=1).prod(axis=1))
    covered = [low <= rho <= high for low, high in (fisher_interval(value, n) for value in r)]
    assert within_mcse(np.mean(covered), 0.95, np.sqrt(0.95 * 0.05 / trials))


@pytest.mark.slow  # a second or more: the fast tier stays under a minute
def test_williams_test_holds_its_level_for_equal_correlations_with_the_human_scores():
    """Known answer: normal triples with r12 = r13 = 0.5, r23 = 0.6: Williams rejects about 5% at alpha 0.05."""
    rng, trials, n = np.random.default_rng(22), 4000, 20
    cov = np.array([[1, 0.5, 0.5], [0.5, 1, 0.6], [0.5, 0.6, 1]])
    triples = rng.multivariate_normal(np.zeros(3), cov, size=(trials, n))
    rejected = []
    for x in triples:
        r = np.corrcoef(x.T)
        rejected.append(williams_test(r[0, 1], r[0, 2], r[1, 2], n)[1] < 0.05)
    assert within_mcse(np.mean(rejected), 0.05, np.sqrt(0.05 * 0.95 / trials))


def test_a_validation_trial_has_the_fisher_baseline_and_every_comparison_test():
    from simdesign.studies.metrics.metric_validation import one_trial, parse_metric_config, system_level_targets

    config = parse_metric_config({"name": "t", "model": "coherence",
                                  "metric": {"system_correlation": 0.8, "summary_correlation": 0.5},
                                  "second_metric": {"system_correlation": 0.6, "summary_correlation": 0.5},
                                  "systems": [6], "documents": [8], "bootstrap_resamples": 50,
                                  "permutation_resamples": 50, "methods": ["pearson", "kendall"]})
    rows = pd.DataFrame(one_trial(config, 6, 8, 0, system_level_targets(config)))
    found = set(zip(rows["estimand"], rows["scheme"]))
    assert {("coverage", "fisher"), ("width", "fisher"), ("permutation_power", "systems"),
            ("permutation_power", "inputs"), ("permutation_power", "both"), ("paired_bootstrap_power", "both"),
            ("williams_power", "")} <= found
    assert rows.loc[rows["estimand"].str.endswith("power"), "value"].isin([0.0, 1.0]).all()


@pytest.mark.slow  # real runs, half a second or more: the fast tier stays under a minute
def test_power_curves_run_per_difference_and_draw(tmp_path):
    from simdesign.studies.metrics.metric_power import plot_power_curves, run_power_curve

    raw = {"name": "p", "model": "coherence", "metric": {"system_correlation": 0.8, "summary_correlation": 0.5},
           "second_metric": {"system_correlation": 0.8, "summary_correlation": 0.5}, "systems": [5],
           "documents": [6], "trials": 3, "bootstrap_resamples": 20, "permutation_resamples": 20,
           "methods": ["pearson"]}
    curves = run_power_curve(raw, [0.8, 0.6], tmp_path / "runs")
    assert set(curves["test"]) == {"PERM-SYSTEMS", "PERM-INPUTS", "PERM-BOTH", "paired bootstrap", "Williams"}
    by_value = curves.groupby("second_system_correlation")["difference"].first()
    assert by_value[0.8] == pytest.approx(0.0, abs=1e-12) and by_value[0.6] > 0.15
    assert (tmp_path / "runs" / "p-r0.6" / "manifest.json").is_file()
    assert plot_power_curves(curves, tmp_path / "figure", curves[curves["difference"] == 0]).is_file()


def test_kendall_in_pieces_and_by_scipy_for_many_pairs_is_the_same_tau_b(monkeypatch):
    """Large tables (the global level of thousands of outputs) cannot hold all pairs at once."""
    from simdesign.stats import metric_correlation

    rng = np.random.default_rng(23)
    x = rng.normal(size=(6, 40)).round(1)  # ties, so tau-b's correction matters
    y = (x + rng.normal(size=(6, 40))).round(1)
    expected = [stats.kendalltau(a, b).statistic for a, b in zip(x, y)]
    for budget, longest in ((10 ** 6, 100), (1000, 100), (100, 100), (10 ** 6, 20)):
        # all at once, rows in pieces, row by row with scipy (too many pairs, or rows too long)
        monkeypatch.setattr(metric_correlation, "KENDALL_PAIRS_AT_ONCE", budget)
        monkeypatch.setattr(metric_correlation, "KENDALL_SCIPY_FROM", longest)
        np.testing.assert_allclose(metric_correlation.correlation(x, y, "kendall"), expected, rtol=1e-12)


def test_the_heldout_protocol_scores_every_interval_against_an_independent_study():
    from simdesign.core.errors import ConfigError
    from simdesign.studies.metrics.metric_validation import (HELDOUT_STREAM, one_trial, parse_metric_config,
                                                             simulate_study, system_level_targets)

    raw = {"name": "h", "model": "coherence", "metric": {"system_correlation": 0.8, "summary_correlation": 0.5},
           "systems": [6], "documents": [8], "bootstrap_resamples": 50, "methods": ["pearson"], "heldout": True}
    config = parse_metric_config(raw)
    study, heldout = simulate_study(config, 6, 8, 0), simulate_study(config, 6, 8, 0, HELDOUT_STREAM)
    assert study[1].shape == heldout[1].shape and not np.allclose(study[1], heldout[1])
    rows = pd.DataFrame(one_trial(config, 6, 8, 0, system_level_targets(config)))
    heldout_rows = rows[rows["estimand"] == "heldout_coverage"]
    assert sorted(heldout_rows["scheme"]) == ["both", "fisher", "inputs", "systems"]
    target = rows.loc[rows["estimand"] == "heldout_correlation", "value"].item()
    from simdesign.stats.metric_correlation import system_level
    assert target == pytest.approx(system_level(heldout[0][0], heldout[1]))
    with pytest.raises(ConfigError, match="'heldout' field must be true or false"):
        parse_metric_config({**raw, "heldout": "yes"})


def test_a_lower_is_better_metric_is_compared_as_the_negated_higher_is_better_one(tmp_path, capsys):
    from simdesign.core.errors import DataError
    from simdesign.realdata.metric_analysis import analyse_metrics

    # Williams' test compares signed correlations: an error rate (lower is better) correlates negatively, and
    # without saying so it loses every comparison (issue 39)
    table = pd.read_csv(EXAMPLE)[["system", "input", "metric_a", "metric_b", "human"]]
    flipped = table.assign(metric_b=-table["metric_b"])  # as an error rate: same name, so the same resampling streams
    options = dict(levels=["system"], methods=["pearson"], resamples=100)
    plain = analyse_metrics(table, **options)
    told = analyse_metrics(flipped, lower_is_better=["metric_b"], **options)
    untold = analyse_metrics(flipped, **options)
    columns = ["test", "alternative", "difference", "p_value"]
    pd.testing.assert_frame_equal(told.comparisons[columns], plain.comparisons[columns])
    williams = untold.comparisons[(untold.comparisons["test"] == "Williams")
                                  & (untold.comparisons["alternative"] == "two-sided")]
    assert williams["p_value"].iloc[0] < 0.05 < plain.comparisons.loc[
        (plain.comparisons["test"] == "Williams") & (plain.comparisons["alternative"] == "two-sided"), "p_value"].iloc[0]
    assert any("metric_b correlates negatively" in note and "--lower-is-better metric_b" in note for note in untold.notes)
    assert any("metric_b is lower-is-better" in note for note in told.notes)
    assert not any("correlates negatively" in note for note in told.notes)
    with pytest.raises(DataError, match=r"names \['nope'\], not metrics of the table"):
        analyse_metrics(flipped, lower_is_better=["nope"], **options)
    path = tmp_path / "flipped.csv"
    flipped.to_csv(path, index=False)
    assert main(["analyse-metrics", str(path), "--level", "system", "--methods", "pearson", "--resamples", "50",
                 "--lower-is-better", "metric_b"]) == 0
    assert "metric_b is lower-is-better" in capsys.readouterr().out


def test_a_table_beyond_the_outputs_ceiling_is_refused_before_it_is_read(tmp_path, capsys):
    # A 900,000-row table ran minutes with no answer (issue 39): refused when its rows are counted, in constant
    # memory, naming the count, the ceiling and how to raise it.
    from simdesign.core.errors import DataError
    from simdesign.realdata.metric_analysis import _count_rows, analyse_metrics

    table = pd.read_csv(EXAMPLE)  # 360 rows
    path = tmp_path / "scores.csv"
    table.to_csv(path, index=False)
    assert _count_rows(path) == 360
    path.write_bytes(path.read_bytes().rstrip(b"\n"))  # no newline after the last row
    assert _count_rows(path) == 360
    with pytest.raises(DataError, match=r"has 360 rows \(outputs\); analyse-metrics takes at most 359 .*--max-outputs"):
        analyse_metrics(path, max_outputs=359, resamples=10)
    with pytest.raises(DataError, match=r"The metric table has 360 rows"):
        analyse_metrics(table, max_outputs=100, resamples=10)
    with pytest.raises(DataError, match="must be a positive integer"):
        analyse_metrics(table, max_outputs=0, resamples=10)
    out = tmp_path / "out"
    assert main(["analyse-metrics", str(path), "--max-outputs", "300", "--out", str(out)]) == 2
    assert "has 360 rows" in capsys.readouterr().err and not out.exists()
    assert analyse_metrics(path, max_outputs=360, levels=["system"], methods=["pearson"], resamples=10) is not None
