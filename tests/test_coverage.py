"""Partial coverage: systems without outputs for some documents (issue 27 item 5).

The oracles are written from the long table (``to_frame``: one row per existing judgement) with pandas
and scipy, never from the analyses' own helpers.
"""
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from simdesign import BlockDesign, ConfigError, PoolDesign, load_model
from simdesign.significance import ANALYSES, AnalysisInfo, run_analysis
from simdesign.core.designs import OverlapDesign, design_from_mapping, design_to_mapping
from simdesign.studies.rates.config import parse_config
from simdesign.studies.rates.engine import run_simulation
from simdesign.studies.rates.summary import summarise

from conftest import within_mcse

SYSTEMS = ("__REFERENCE__", "abssentrw", "BART", "onmt_pg", "seneca")


def _defaults(name: str) -> dict:
    return {option: default for option, (_, default) in ANALYSES[name].options.items()}


def _partial_study(coherence, seed=3, design=None):
    design = design or BlockDesign(12, 3, 2, coverage={"abssentrw": 0.5, "BART": [0, 2, 4, 6, 8, 10, 12, 14, 16, 18,
                                                                                  20, 22, 24, 26, 28, 30, 32, 34]})
    return coherence.sample(design, np.random.default_rng(seed)), design


def _config(**changes) -> dict:
    raw = {"name": "cov", "model": "coherence", "effect": "zero", "trials": 10, "seed": 1,
           "designs": [{"kind": "block", "blocks": 10, "docs_per_block": 2, "annotators_per_block": 2,
                        "coverage": {"BART": 0.5}}],
           "tests": ["ttest_doc"]}
    raw.update(changes)
    return raw


# --- the design option -------------------------------------------------------------------------------------------

def test_a_complete_design_keeps_its_label_mapping_and_judgements():
    design = BlockDesign(20, 5, 3)
    assert design.coverage is None and design.label == "block-B20-D5-A3"
    assert design_to_mapping(design) == {"kind": "block", "blocks": 20, "docs_per_block": 5, "annotators_per_block": 3}
    assert design.judgements(5) == 1500
    config = parse_config(_config(designs=[{"kind": "block", "blocks": 2, "docs_per_block": 5,
                                            "annotators_per_block": 3}]))
    assert "coverage" not in config.to_mapping()["designs"][0]


def test_coverage_labels_round_trips_and_counts():
    share = PoolDesign(100, 30, 3, coverage=0.8)
    assert share.label == "pool-N100-M30-k3-cov0.8"
    assert design_from_mapping(design_to_mapping(share)) == share
    # every system covers 80 of 100 documents: 80 x 3 judgements each
    assert share.judgements(5) == 5 * 80 * 3
    listed = BlockDesign(2, 5, 3, coverage={"BART": [0, 1, 7]})
    assert listed.label.startswith("block-B2-D5-A3-cov") and listed.label != BlockDesign(2, 5, 3).label
    # BART has 3 documents of 10 (3 annotators each); the four other systems every document
    assert listed.judgements(5, SYSTEMS) == 4 * 30 + 3 * 3
    overlap = OverlapDesign(2, 3, 2, coverage={"BART": [0, 2]})  # document 0 is shared (2 annotators), 2 is own
    assert overlap.judgements(5, SYSTEMS) == 4 * overlap.pairs + 2 + 1
    config = parse_config(_config(designs=[{"kind": "block", "blocks": 2, "docs_per_block": 5,
                                            "annotators_per_block": 3, "coverage": {"BART": [0, 1, 7]}}]))
    assert config.designs == (listed,)
    assert parse_config(config.to_mapping()) == config
    assert "BART: documents [0, 1, 7]" in listed.describe()


@pytest.mark.parametrize("coverage, words", [
    (1.5, "'coverage' share must be in (0, 1]"),
    ({"BART": 0}, "'coverage.BART' share must be in (0, 1]"),
    ({"BART": [0, 10]}, "below the design's 10 documents"),
    ({"BART": [1, 1]}, "some document twice"),
    ({"BART": "half"}, "'coverage.BART' field must be a share"),
    ({"BART": 0.01}, "covers no document"),
    ("most", "must be a share in (0, 1] for every system"),
])
def test_bad_coverage_is_refused_naming_the_field(coverage, words):
    with pytest.raises(ConfigError, match=None) as caught:
        BlockDesign(2, 5, 3, coverage=coverage)
    assert words in str(caught.value)


def test_a_coverage_naming_an_unknown_system_is_refused_by_the_config():
    with pytest.raises(ConfigError) as caught:
        parse_config(_config(designs=[{"kind": "block", "blocks": 2, "docs_per_block": 5, "annotators_per_block": 3,
                                       "coverage": {"bart": 0.5}}]))
    assert "names system(s) ['bart']" in str(caught.value) and "BART" in str(caught.value)


# --- the study -----------------------------------------------------------------------------------------------------

def test_missing_outputs_are_missing_and_the_others_are_the_complete_studys(coherence):
    study, design = _partial_study(coherence)
    complete = coherence.sample(BlockDesign(12, 3, 2), np.random.default_rng(3))
    observed = study.observed
    assert not study.complete and complete.complete and complete.observed is None
    # the outputs that exist have the scores of the complete design's study on the same stream
    np.testing.assert_array_equal(study.scores[observed], complete.scores[observed])
    assert np.isnan(study.scores[~observed]).all()
    # which documents each system covers: per document, all its annotators or none
    covered = pd.DataFrame(observed, columns=SYSTEMS).groupby(study.document).all()
    assert (covered == pd.DataFrame(observed, columns=SYSTEMS).groupby(study.document).any()).all().all()
    assert covered["abssentrw"].sum() == 18  # round(0.5 x 36)
    assert sorted(np.flatnonzero(covered["BART"])) == list(range(0, 36, 2))
    assert covered[["__REFERENCE__", "onmt_pg", "seneca"]].all().all()
    frame = study.to_frame()
    assert len(frame) == observed.sum() and frame["score"].dtype == np.int64
    assert not frame[frame["system"] == "BART"]["document"].isin(range(1, 36, 2)).any()


def test_the_share_draw_changes_between_trials(coherence):
    design = BlockDesign(10, 2, 1, coverage={"BART": 0.5})
    first = coherence.sample(design, np.random.default_rng(1)).observed[:, 2]
    second = coherence.sample(design, np.random.default_rng(2)).observed[:, 2]
    assert first.sum() == second.sum() == 10 and not np.array_equal(first, second)


# --- the analyses against oracles -----------------------------------------------------------------------------------

def _paired_document_differences(frame: pd.DataFrame, a: str, b: str) -> pd.Series:
    """Per-document mean of a minus mean of b over the documents where both systems have outputs."""
    means = frame.pivot_table(index="document", columns="system", values="score", aggfunc="mean")
    return (means[a] - means[b]).dropna()


def test_paired_tests_use_the_documents_both_systems_cover(coherence):
    study, _ = _partial_study(coherence)
    frame = study.to_frame()
    t_doc = run_analysis(ANALYSES["ttest_doc"], study, None, _defaults("ttest_doc"))
    wilcoxon = run_analysis(ANALYSES["wilcoxon_doc"], study, None, _defaults("wilcoxon_doc"))
    pairs = [(i, j) for i in range(5) for j in range(i + 1, 5)]
    for column, (i, j) in enumerate(pairs):
        differences = _paired_document_differences(frame, SYSTEMS[i], SYSTEMS[j])
        assert t_doc.estimate[column] == pytest.approx(differences.mean())
        assert t_doc.p_value[column] == pytest.approx(stats.ttest_1samp(differences, 0).pvalue, rel=1e-9)
        assert wilcoxon.p_value[column] == pytest.approx(stats.wilcoxon(differences, method="auto").pvalue,
                                                         rel=1e-9)
    # the pair (abssentrw, BART) has only the documents both cover
    both = _paired_document_differences(frame, "abssentrw", "BART")
    assert 0 < len(both) < 18


def test_the_single_judgement_ttest_pairs_judgements_both_outputs_have(coherence):
    study, _ = _partial_study(coherence)
    wide = study.to_frame().pivot_table(index=["annotator", "document"], columns="system", values="score")
    result = run_analysis(ANALYSES["ttest"], study, None, {})
    paired = wide[["abssentrw", "BART"]].dropna()
    assert result.p_value[4] == pytest.approx(stats.ttest_rel(paired["abssentrw"], paired["BART"]).pvalue, rel=1e-9)


def test_the_unpaired_test_takes_each_systems_own_documents(coherence):
    study, _ = _partial_study(coherence)
    means = study.to_frame().pivot_table(index="document", columns="system", values="score", aggfunc="mean")
    result = run_analysis(ANALYSES["ttest_unpaired"], study, None, _defaults("ttest_unpaired"))
    a, b = means["abssentrw"].dropna(), means["BART"].dropna()
    assert result.estimate[4] == pytest.approx(a.mean() - b.mean())
    assert result.p_value[4] == pytest.approx(stats.ttest_ind(a, b, equal_var=False).pvalue, rel=1e-9)


def test_art_is_the_randomisation_test_over_the_covered_documents(coherence):
    # 8 documents: all 2^n sign vectors are enumerated, so the p-value is exact and can be counted by hand
    design = BlockDesign(8, 1, 1, coverage={"BART": [0, 1, 2, 3, 5, 6]})
    study = coherence.sample(design, np.random.default_rng(11))
    result = run_analysis(ANALYSES["art_doc"], study, np.random.default_rng(0), _defaults("art_doc"))
    frame = study.to_frame()
    for column, (a, b) in ((1, ("__REFERENCE__", "BART")), (4, ("abssentrw", "BART")), (0, ("__REFERENCE__",
                                                                                             "abssentrw"))):
        d = _paired_document_differences(frame, a, b).to_numpy()
        signs = np.array(np.meshgrid(*[[-1, 1]] * len(d))).reshape(len(d), -1).T
        expected = np.mean(np.abs(signs @ d) >= abs(d.sum()) - 1e-9)
        assert result.p_value[column] == pytest.approx(expected)
        assert result.estimate[column] == pytest.approx(d.mean())


@pytest.mark.slow  # about 2 s: the first fit of a process compiles the kernels
def test_clmm_native_fits_the_judgements_there_are(coherence):
    from simdesign import clmm

    study, _ = _partial_study(coherence, seed=6)
    result = run_analysis(ANALYSES["clmm_native"], study, None, _defaults("clmm_native"))
    assert set(result.status) <= {"ok", "singular"}, result.status  # a fit that did not converge has no estimate
    # the same model fitted from the long table, whose rows are the existing judgements only
    fit = clmm.fit(study.to_frame(), structure="paper", reference="__REFERENCE__", starts="single")
    effects, _ = fit.effects_in(list(SYSTEMS))
    pairs = [(i, j) for i in range(5) for j in range(i + 1, 5)]
    np.testing.assert_allclose(result.estimate, [effects[i] - effects[j] for i, j in pairs], rtol=1e-6, atol=1e-8)


# --- refusals --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("changes, words", [
    ({"tests": ["art_block"]}, "The test art_block cannot analyse the design block-B10-D2-A2-cov"),
    ({"tests": [{"name": "ttest_doc", "threshold": "mc"}]}, "resampling thresholds"),
    ({"tests": ["ttest_doc"], "estimands": ["krippendorff_alpha"]}, "reliability estimands"),
    ({"tests": ["ttest_doc"], "model": {"preset": "coherence", "rank_noise": 1.0}, "methods": ["likert", "rank"]},
     "a ranking needs every system's output"),
])
def test_a_config_asking_what_needs_complete_data_is_refused(changes, words):
    with pytest.raises(ConfigError) as caught:
        parse_config(_config(**changes))
    assert words in str(caught.value)


def test_the_refusal_comes_from_the_registry_flag_and_a_plug_in_is_refused_by_default(coherence):
    assert ANALYSES["art_block"].requires_complete({}) and not ANALYSES["art_doc"].requires_complete({})
    assert ANALYSES["ttest_doc"].requires_complete({"threshold": "hb"})
    plug_in = AnalysisInfo(name="plug", function=lambda judgements, rng: None)
    study, _ = _partial_study(coherence)
    with pytest.raises(ConfigError, match="plug cannot analyse a study"):
        run_analysis(plug_in, study, None, {})


def test_a_partial_coverage_run_stores_and_summarises(tmp_path):
    config = parse_config(_config(tests=["ttest_doc", "clmm_native"], trials=4))
    store = run_simulation(config, tmp_path / "out", config.to_mapping(), jobs=1, progress=False)
    summary = summarise(config, store.read_trials())
    label = config.designs[0].label
    assert set(summary["design"]) == {label} and label.startswith("block-B10-D2-A2-cov")
    # the judgements column counts the outputs that exist: BART has half of the 20 documents
    assert set(summary["judgements"]) == {4 * 40 + 20}
    assert (summary["n_failed"] == 0).all()


# --- type I error under the null ------------------------------------------------------------------------------------

@pytest.mark.slow
def test_type1_error_holds_under_partial_coverage(tmp_path):
    """Every classical test allowed on partial coverage keeps its level where it does on complete data.

    One annotator per document (nested, 60 documents), so document differences are independent and the
    per-document tests are exact on complete data; coverage leaves abssentrw 60% of the documents (drawn per
    trial) and BART a fixed 40. 1000 trials, seed fixed; tolerance 4 MCSE around alpha (the unpaired test,
    conservative where documents are shared, only above).
    """
    raw = _config(trials=1000, seed=2027,
                  designs=[{"kind": "block", "blocks": 60, "docs_per_block": 1, "annotators_per_block": 1,
                            "coverage": {"abssentrw": 0.6, "BART": list(range(40))}}],
                  tests=["ttest_doc", "art_doc", "wilcoxon_doc", "ttest", "ttest_unpaired"])
    config = parse_config(raw)
    store = run_simulation(config, tmp_path / "out", raw, jobs=2, progress=False)
    summary = summarise(config, store.read_trials()).set_index(["test", "estimand"])
    for test in ("ttest_doc", "art_doc", "wilcoxon_doc", "ttest"):
        row = summary.loc[(test, "type1")]
        assert row["n_failed"] == 0
        assert within_mcse(row["rate"], 0.05, row["mcse"]), (test, row["rate"], row["mcse"])
    unpaired = summary.loc[("ttest_unpaired", "type1")]
    assert unpaired["rate"] <= 0.05 + 4 * unpaired["mcse"]


@pytest.mark.slow
def test_clmm_native_type1_error_holds_under_partial_coverage(tmp_path):
    """clmm_native (containment df) fitted to unbalanced data keeps its level: 200 trials of a crossed block
    design (10 blocks of 4 documents, 3 annotators) where abssentrw covers 60% and BART 75% of the documents.
    Failed fits are counted (never a p-value); tolerance 4 MCSE. About a minute on 2 cores."""
    raw = _config(trials=200, seed=2028, tests=["clmm_native"],
                  designs=[{"kind": "block", "blocks": 10, "docs_per_block": 4, "annotators_per_block": 3,
                            "coverage": {"abssentrw": 0.6, "BART": 0.75}}])
    config = parse_config(raw)
    store = run_simulation(config, tmp_path / "out", raw, jobs=2, progress=False)
    row = summarise(config, store.read_trials()).set_index(["test", "estimand"]).loc[("clmm_native", "type1")]
    assert row["n_failed"] <= 0.02 * row["n_tests"]
    assert within_mcse(row["rate"], 0.05, row["mcse"]), (row["rate"], row["mcse"])
