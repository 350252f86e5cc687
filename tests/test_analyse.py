"""simdesign analyse: Table 2 means, rank sets, bootstrap reproducibility, CLI outputs."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simdesign import BlockDesign, PoolDesign, load_model
from simdesign.realdata.analyse import analyse, bootstrap_intervals, rank_sets
from simdesign.cli import main
from simdesign.tables.recognise import read_table
from tests.conftest import SHARED_DATA

JUDGEMENTS = SHARED_DATA / "judgements"
needs_data = pytest.mark.skipif(not JUDGEMENTS.is_dir(), reason="the shared Steen & Markert data are not present")
ORDER = ["BART", "__REFERENCE__", "abssentrw", "onmt_pg", "seneca"]
# Steen & Markert (2021), Table 2: Likert mean scores, Rank mean ranks (1-based, 1 = best), in ORDER.
TABLE_2 = {
    "likert_coherence": [5.25, 4.33, 4.17, 4.81, 3.52],
    "rank_coherence": [1.73, 3.31, 3.17, 2.68, 4.11],
    "likert_repetition": [5.85, 6.14, 4.88, 5.63, 5.16],
    "rank_repetition": [2.88, 2.41, 3.51, 2.92, 3.27],
}


@pytest.mark.slow
@needs_data
@pytest.mark.parametrize("name", sorted(TABLE_2))
def test_table_2_means_to_two_decimals(name):
    frame, info = read_table(JUDGEMENTS / f"{name}_cnn_dm.csv")
    result = analyse(frame, tests=["ttest_doc"], systems=ORDER, bootstrap=200)
    np.testing.assert_array_equal(result.systems["mean"].round(2).to_numpy(), TABLE_2[name])
    assert (result.systems["ci_low"] < result.systems["mean"]).all()
    assert (result.systems["mean"] < result.systems["ci_high"]).all()
    assert result.info["bootstrap_scheme"] == "block_t" and result.info["blocks"] == 20
    assert result.systems["n"].tolist() == [300] * 5


@needs_data
@pytest.mark.slow
@pytest.mark.parametrize("name", ["likert_coherence", "rank_coherence"])
def test_paper_analysis_groups_coherence(name):
    # Table 2's brackets for coherence, Likert and Rank (all cells agree with the documented rule).
    frame, _ = read_table(JUDGEMENTS / f"{name}_cnn_dm.csv")
    result = analyse(frame, systems=ORDER, bootstrap=200)
    assert result.systems["groups"].tolist() == ["1", "3/4", "3/4", "2", "5"]
    assert result.pairs["test"].unique().tolist() == ["clmm_native[tukey,paper]"]


def test_rank_sets_on_hand_made_p_values():
    systems = ["a", "b", "c", "d"]
    # pairs: ab ac ad bc bd cd; estimates positive = first better
    everything = rank_sets(systems, np.full(6, 0.001), np.array([1, 2, 3, 1, 2, 1.0]))
    assert everything["groups"].tolist() == ["1", "2", "3", "4"]
    nothing = rank_sets(systems, np.full(6, 0.5), np.ones(6))
    assert nothing["groups"].tolist() == ["1/2/3/4"] * 4
    # only a > d and b > d significant: d is worse than 2 systems -> ranks 3..4; a and b beat one system
    # -> 1..3; c beats nobody and loses to nobody -> 1..4
    some = rank_sets(systems, np.array([0.5, 0.5, 0.01, 0.5, 0.02, 0.5]), np.array([0.1, 0.2, 1.5, 0.1, 1.4, 1.3]))
    assert some["groups"].tolist() == ["1/2/3", "1/2/3", "1/2/3/4", "3/4"]
    # the sign decides the direction: d better than a
    flipped = rank_sets(systems, np.array([0.5, 0.5, 0.01, 0.5, 0.5, 0.5]), np.array([0, 0, -1.0, 0, 0, 0]))
    assert flipped["groups"].tolist() == ["2/3/4", "1/2/3/4", "1/2/3/4", "1/2/3"]
    # a failed pair (NaN) counts as not significant; p exactly alpha is not significant
    failed = rank_sets(["a", "b"], np.array([np.nan]), np.array([1.0]))
    assert failed["groups"].tolist() == ["1/2", "1/2"]
    assert rank_sets(["a", "b"], np.array([0.05]), np.array([1.0]))["groups"].tolist() == ["1/2", "1/2"]


def _study(design, seed: int) -> pd.DataFrame:
    return load_model("coherence").sample(design, np.random.default_rng(seed)).to_frame().drop(columns="block")


@pytest.mark.slow
def test_bootstrap_reproducible_from_seed_and_scheme_by_blocks():
    frame = _study(BlockDesign(12, 3, 2), 5)
    systems = sorted(frame["system"].unique())
    first = bootstrap_intervals(frame, "score", systems, 300, np.random.default_rng(7))
    again = bootstrap_intervals(frame, "score", systems, 300, np.random.default_rng(7))
    other = bootstrap_intervals(frame, "score", systems, 300, np.random.default_rng(8))
    np.testing.assert_array_equal(first[0], again[0])
    assert not np.array_equal(first[0], other[0])
    assert first[2]["name"] == "block_t"
    few_blocks = bootstrap_intervals(_study(BlockDesign(4, 3, 2), 5), "score", systems, 300, np.random.default_rng(7))
    assert few_blocks[2]["name"] == "two_way" and "only 4 blocks" in few_blocks[2]["text"]
    pool = _study(PoolDesign(30, 6, 3), 6)
    low, high, scheme = bootstrap_intervals(pool, "score", systems, 300, np.random.default_rng(7))
    means = pool.groupby("system")["score"].mean().reindex(systems).to_numpy()
    assert scheme["name"] == "two_way" and np.all(low < means) and np.all(means < high)


@pytest.mark.slow
def test_analyse_reproducible_and_cli_writes_tables(tmp_path, capsys):
    frame = _study(BlockDesign(10, 3, 2), 11)
    a = analyse(frame, tests=["ttest_doc"], seed=3, bootstrap=200)
    b = analyse(frame, tests=["ttest_doc"], seed=3, bootstrap=200)
    pd.testing.assert_frame_equal(a.systems, b.systems)
    assert "holm" in a.pairs["adjust"].iloc[0]  # a pair-by-pair test gets Holm when Tukey is asked
    path = tmp_path / "j.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "out"
    assert main(["analyse", str(path), "--tests", "ttest_doc", "--bootstrap", "200", "--out", str(out)]) == 0
    table = pd.read_csv(out / "analysis.csv")
    assert {"system", "mean", "ci_low", "ci_high", "n", "groups"} <= set(table.columns)
    np.testing.assert_allclose(table.set_index("system")["mean"].sort_index(),
                               frame.groupby("system")["score"].mean().sort_index())
    assert (out / "analysis.md").is_file() and (out / "analysis.png").is_file() and (out / "pairs.csv").is_file()


@pytest.mark.slow
def test_analyse_rejects_bad_options(tmp_path, capsys):
    path = tmp_path / "j.csv"
    _study(BlockDesign(10, 3, 2), 11).to_csv(path, index=False)
    assert main(["analyse", str(path), "--tests", "no_such_test"]) == 2
    assert "no_such_test" in capsys.readouterr().err
    assert main(["analyse", str(path), "--systems", "a,b"]) == 2


@pytest.mark.slow
def test_block_bootstrap_t_covers_about_95_percent_on_the_papers_design():
    # 1000 simulated studies of the paper's design from the coherence preset; the study is the unit. With
    # MCSE about 0.0045 the tolerance (4 MCSE) would reject the plain percentile interval (93%).
    from simdesign.realdata.analyse import _block_bootstrap_t

    model = load_model("coherence")
    truth = model.expected_scores("fitted")
    shares = []
    for study in range(1000):
        streams = np.random.SeedSequence([77, study]).spawn(2)
        data = model.sample(BlockDesign(20, 5, 3), np.random.default_rng(streams[0]))
        sums = np.zeros((20, 5))
        np.add.at(sums, data.block, data.scores.astype(float))
        counts = np.zeros_like(sums)
        np.add.at(counts, data.block, 1.0)
        low, high = _block_bootstrap_t(sums, counts, 400, np.random.default_rng(streams[1]))
        shares.append(np.mean((low <= truth) & (truth <= high)))
    coverage, mcse = float(np.mean(shares)), float(np.std(shares, ddof=1) / np.sqrt(len(shares)))
    assert abs(coverage - 0.95) <= 4 * mcse, (coverage, mcse)


@pytest.mark.slow
def test_cli_on_a_rank_table_reports_one_based_mean_ranks(tmp_path, capsys):
    # Random complete rankings (0 = best) on a 10-block layout: the five mean ranks, 1-based, sum to 1+...+5.
    rng = np.random.default_rng(12)
    systems = ["s1", "s2", "s3", "s4", "s5"]
    rows = []
    for block in range(10):
        for annotator in range(3):
            for document in range(2):
                for system, rank in zip(systems, rng.permutation(5)):
                    rows.append({"annotator": f"a{block}-{annotator}", "document": f"d{block}-{document}",
                                 "system": system, "rank": int(rank)})
    path = tmp_path / "ranks.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    out = tmp_path / "out"
    assert main(["analyse", str(path), "--tests", "ttest_doc", "--bootstrap", "200", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "ranks 0..4 (0 = best)" in printed
    table = pd.read_csv(out / "analysis.csv")
    assert table["mean"].sum() == pytest.approx(15.0)
    expected = pd.DataFrame(rows).groupby("system")["rank"].mean() + 1
    np.testing.assert_allclose(table.set_index("system")["mean"].reindex(systems), expected.reindex(systems))
    pairs = pd.read_csv(out / "pairs.csv")
    first = pairs.iloc[0]  # s1 minus s2 on the reversed rank: positive when s1 has the smaller (better) mean rank
    assert np.sign(first["estimate"]) == np.sign(expected["s2"] - expected["s1"])


@pytest.mark.slow  # a second or more: the fast tier stays under a minute
def test_analyse_reports_the_mixed_models_loglik_structure_status_and_starts():
    """The model-fit line of `simdesign analyse`: what the fit reached and how (docs/model.md, "Starts")."""
    frame = _study(BlockDesign(4, 3, 3), 5)
    result = analyse(frame, bootstrap=100, structure="maximal")
    fit = result.info["fits"]["clmm_native[tukey,maximal]"]  # analyse's default rule stays out of the label
    assert fit["starts"] == "codings" and fit["structure"] == "maximal" and fit["terms"] == ["annotator", "document"]
    assert fit["starts_tried"] == (5 if fit["status"] in ("singular", "not_converged") else 1)
    assert np.isfinite(fit["loglik"]) and fit["status"] in ("ok", "singular", "not_converged", "error")
    text = result.report()
    assert f"log-likelihood {fit['loglik']:.4f}" in text and f"status {fit['status']}" in text
    assert "starts " in text and "## Model fits" in result.to_markdown()
    single = analyse(frame, bootstrap=100, structure="maximal", starts="single")
    fit_single = single.info["fits"]["clmm_native[tukey,single,maximal]"]
    assert fit_single["starts_tried"] == 1 and fit_single["loglik"] <= fit["loglik"] + 1e-6


def test_analyse_takes_rankels_thresholds_for_a_real_paired_table(tmp_path, capsys):
    """Issue 31: `analyse --tests ttest_unpaired[mc],...` runs the unpaired t with Rankel's within-document swap
    threshold on a table (the labels the summaries print read back); its p-values are swap_pvalues' on the
    table's document means, with the generator analyse gives the test's label (issue 40: was its position)."""
    from simdesign.significance.document_tests import document_means, swap_pvalues
    from simdesign.significance.base import system_pairs
    from simdesign.core.judgements import Judgements
    from simdesign.core.seeds import stream
    from simdesign.realdata.analyse import parse_test_text, split_tests
    from simdesign.tables.recognise import orient_any

    assert split_tests("ttest_unpaired[mc],ttest_doc[threshold=hb,bootstrap_resamples=300], wilcoxon_doc") == [
        "ttest_unpaired[mc]", "ttest_doc[threshold=hb,bootstrap_resamples=300]", "wilcoxon_doc"]
    assert parse_test_text("ttest_doc[threshold=hb,bootstrap_resamples=300]") == {
        "name": "ttest_doc", "threshold": "hb", "bootstrap_resamples": 300}
    model = load_model("coherence").with_document_intercept_scale(3.0)
    frame = model.sample(BlockDesign(30, 1, 3), np.random.default_rng(4)).to_frame()
    path = tmp_path / "paired.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "out"
    assert main(["analyse", str(path), "--tests", "ttest_unpaired[mc],ttest_unpaired[threshold=theory]",
                 "--adjust", "none", "--seed", "5", "--bootstrap", "200", "--out", str(out)]) == 0
    pairs = pd.read_csv(out / "pairs.csv")
    assert list(dict.fromkeys(pairs["test"])) == ["ttest_unpaired[mc]", "ttest_unpaired[theory]"]
    systems = list(dict.fromkeys(frame["system"]))
    oriented, _ = orient_any(read_table(path)[0], None)  # the table as analyse reads it (its document order: the
    # swaps' rows)
    means = document_means(Judgements.from_frame(oriented[["annotator", "document", "system", "score"]],
                                                 systems=systems))
    index = system_pairs(len(systems))
    expected = swap_pvalues(means[:, [i for i, _ in index]], means[:, [j for _, j in index]], "welch",
                            stream(5, "analyse/test", "ttest_unpaired[mc]"), 1000)
    np.testing.assert_allclose(pairs.loc[pairs["test"] == "ttest_unpaired[mc]", "p_value"], expected)
    # the swap threshold finds differences the conservative theoretical one misses here
    assert (pairs.loc[pairs["test"] == "ttest_unpaired[mc]", "p_value"].to_numpy()
            <= pairs.loc[pairs["test"] == "ttest_unpaired[theory]", "p_value"].to_numpy()).mean() > 0.5
    capsys.readouterr()
    assert main(["analyse", str(path), "--tests", "ttest_unpaired[swap]"]) == 2
    err = capsys.readouterr().err
    assert "'swap'" in err and "independent_bootstrap" in err and "mc" in err


@needs_data
def test_a_real_table_with_missing_outputs_is_analysed_by_the_tests_that_handle_them():
    """The paper's coherence Likert file without 100 random judgements (a system not judged by an annotator
    on a document): means over the judged outputs (pandas as the oracle), ttest_doc as a paired t-test of the
    per-document means over the documents both systems have (scipy as the oracle), a note; a test that
    needs complete data is refused by name, with the tests that can run (as `run` refuses them)."""
    from scipy import stats

    from simdesign.core.errors import ConfigError

    frame, _ = read_table(JUDGEMENTS / "likert_coherence_cnn_dm.csv")
    kept = frame.drop(index=np.random.default_rng(0).choice(frame.index, 100, replace=False))
    result = analyse(kept, tests=["ttest_doc"], systems=ORDER, adjust="none", bootstrap=200)
    means = kept.groupby("system")["score"].mean().reindex(ORDER)
    np.testing.assert_allclose(result.systems.set_index("system").loc[ORDER, "mean"], means, rtol=1e-12)
    assert result.systems.set_index("system").loc[ORDER, "n"].tolist() == kept["system"].value_counts()[ORDER].tolist()
    assert any("100 outputs are missing" in note for note in result.notes)
    per_document = kept.groupby(["document", "system"])["score"].mean().unstack()
    for row in result.pairs.itertuples():
        both = per_document[[row.system_a, row.system_b]].dropna()
        expected = stats.ttest_rel(both[row.system_a], both[row.system_b])
        assert row.estimate == pytest.approx((both[row.system_a] - both[row.system_b]).mean())
        assert row.p_value == pytest.approx(expected.pvalue, rel=1e-9)
        assert row.mean_difference == pytest.approx(means[row.system_a] - means[row.system_b])
    with pytest.raises(ConfigError, match="art_block cannot analyse a study.*ttest_doc"):
        analyse(kept, tests=["art_block"], bootstrap=200)
    duplicated = pd.concat([kept, kept.iloc[:1]])  # missing outputs allowed, a judgement twice still not
    with pytest.raises(ConfigError, match="repeat an .annotator, document, system. judgement"):
        analyse(duplicated, tests=["ttest_doc"], bootstrap=200)


@needs_data
def test_a_rank_table_with_a_missing_rank_is_refused():
    from simdesign.core.errors import ConfigError, DataError

    frame = pd.read_csv(JUDGEMENTS / "rank_coherence_cnn_dm.csv")
    with pytest.raises((ConfigError, DataError), match="must rank every system"):
        analyse(frame.iloc[1:], tests=["ttest_doc"], bootstrap=200)


@pytest.mark.slow  # moved from the fast tier (about 0.4-0.7 s; the tier's budget is 60 s)
def test_the_mixed_models_reference_is_the_first_system_in_the_file():
    # issue 39: docs/explanation/tests.md said the first in sorted order; analyse takes the first in the file
    root = Path(__file__).resolve().parents[1]
    table = pd.read_csv(root / "tests" / "fixtures" / "fit_nested" / "nested_30x4_3systems.csv")
    table = table[table["annotator"].isin(sorted(table["annotator"].unique())[:8])]
    last = sorted(table["system"].unique())[-1]
    table = pd.concat([table[table["system"] == last], table[table["system"] != last]])
    analysis = analyse(table, tests="clmm_native", bootstrap=100)
    assert analysis.info["fits"]["clmm_native[tukey,paper]"]["reference"] == last
    page = (root / "docs" / "explanation" / "tests.md").read_text()
    assert "in `analyse` the first system in the file" in " ".join(page.split())
