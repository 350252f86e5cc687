"""The original study's structure in a replication (issue 31 part 3): tested pairs, multiplicity correction,
several criteria, the original's reported means as the effects, Cohen's kappa on the shared documents."""
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.multitest import multipletests

from simdesign import api
from simdesign.significance import system_pairs
from simdesign.core.errors import ConfigError
from simdesign.model import load_model
from simdesign.studies.rates.config import parse_config
from simdesign.studies.replication.replication import (REPLICATION_PREFIX, ReplicationSettings, model_from_means,
                                                       replication_trials, chosen_pairs)
from simdesign.stats.replication import adjusted_p_values, corrected_decisions, pairwise_kappa

SMALL = {"kind": "overlap", "shared_docs": 3, "unique_docs_per_annotator": 4, "annotators": 3}


def _config(**changes):
    return {"name": "r", "model": "coherence", "effect": "fitted", "designs": [SMALL], "tests": ["ttest_doc"],
            "trials": 6, "seed": 5, **changes}


# ---------------------------------------------------------------------------------------------------------------
# Pure statistics, against hand-computed answers and other libraries


def test_holm_and_bh_by_hand_and_a_failed_test_is_not_in_the_family():
    p = np.array([[0.01, 0.02, 0.03, 0.2]])
    estimates = np.array([[0.5, -0.5, 0.5, 0.5]])
    usable = np.ones_like(p, bool)
    # uncorrected: three below 0.05, directions kept
    assert corrected_decisions(p, estimates, usable, 0.05).tolist() == [[1, -1, 1, 0]]
    # Holm over 4: 0.01 x 4 = 0.04 rejected, then 0.02 x 3 = 0.06 stops
    assert corrected_decisions(p, estimates, usable, 0.05, "holm").tolist() == [[1, 0, 0, 0]]
    # Benjamini-Hochberg: 0.03 <= 3/4 x 0.05 = 0.0375, so the three smallest
    assert corrected_decisions(p, estimates, usable, 0.05, "bh").tolist() == [[1, -1, 1, 0]]
    # the fourth test failed: Holm over 3 (0.03, 0.04, 0.03 adjusted) rejects all three
    usable[0, 3] = False
    assert corrected_decisions(p, estimates, usable, 0.05, "holm").tolist() == [[1, -1, 1, 0]]


def test_pairwise_kappa_equals_sklearns_mean_over_annotator_pairs_on_shared_documents():
    design = parse_config(_config(designs=[{**SMALL, "shared_docs": 10, "unique_docs_per_annotator": 5}])).designs[0]
    study = load_model("coherence").sample(design, np.random.default_rng(3))
    expected = []
    for a, b in ((0, 1), (0, 2), (1, 2)):
        first = dict(zip(study.document[study.annotator == a], study.scores[study.annotator == a]))
        second = dict(zip(study.document[study.annotator == b], study.scores[study.annotator == b]))
        shared = sorted(set(first) & set(second))
        assert len(shared) == 10  # the shared documents only
        expected.append(cohen_kappa_score(np.concatenate([first[d] for d in shared]),
                                          np.concatenate([second[d] for d in shared])))
    assert pairwise_kappa(study.scores, study.annotator, study.document) == pytest.approx(np.mean(expected), abs=1e-12)


def test_pairwise_kappa_is_one_for_identical_annotators_and_nan_without_shared_documents():
    scores = np.array([[1, 2, 3], [3, 2, 1], [1, 2, 3], [3, 2, 1]])
    assert pairwise_kappa(scores, np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1])) == pytest.approx(1.0)
    assert np.isnan(pairwise_kappa(scores, np.array([0, 0, 1, 1]), np.array([0, 1, 2, 3])))


@pytest.mark.slow  # moved from the fast tier (about 0.5-1 s; the tier's budget is 60 s)
def test_means_solved_into_effects_give_those_means_in_an_independent_simulation_of_the_latent_model():
    model = load_model("coherence")
    means = [4.3, 4.34, 4.38, 5.3, 3.5]
    solved = model_from_means(model, means)
    assert solved.effects[0] == 0.0 and tuple(solved.systems) == tuple(model.systems)
    rng = np.random.default_rng(11)
    n = 200_000
    for s in range(model.n_systems):
        z = np.zeros(model.n_systems)
        z[0] = 1.0
        if s:
            z[s] = 1.0
        sd = np.sqrt(z @ (model.annotator_cov + model.document_cov) @ z)  # covariances unchanged
        latent = solved.effects[s] + sd * rng.standard_normal(n) + rng.logistic(size=n)
        scores = np.asarray(model.scale)[np.searchsorted(solved.thresholds, latent)]
        assert abs(scores.mean() - means[s]) < 4 * scores.std() / np.sqrt(n), s
    # the first three are 0.04 apart on the 1-7 scale: effects in that order, close together
    assert 0 < solved.effects[1] < solved.effects[2] < 0.2


@pytest.mark.slow
def test_a_config_with_means_keeps_its_model_through_a_round_trip():
    config = parse_config(_config(replication={"means": [4.3, 4.4, 4.5, 5.3, 3.5]}))
    assert np.allclose(config.model.expected_scores(), [4.3, 4.4, 4.5, 5.3, 3.5], atol=1e-9)
    again = parse_config(config.to_mapping())
    assert again.model.to_dict() == config.model.to_dict() and again.replication == config.replication


def test_tested_pair_choices():
    systems = load_model("coherence").systems
    pairs = system_pairs(len(systems))

    def named(choice):
        return [(systems[pairs[p][0]], systems[pairs[p][1]]) for p in chosen_pairs(ReplicationSettings(pairs=choice),
                                                                                    systems)]
    assert named("all") == [(systems[i], systems[j]) for i, j in pairs]
    assert named("adjacent") == list(zip(systems[:-1], systems[1:]))
    assert named("first") == [(systems[0], s) for s in systems[1:]]
    assert named((("BART", "abssentrw"),)) == [("abssentrw", "BART")]  # either order


@pytest.mark.parametrize("replication, message", [
    ({"pairs": "neighbours"}, r"'replication.pairs' field must be one of \['all', 'adjacent', 'first'\]"),
    ({"pairs": [["BART", "bart"]]}, r"names system\(s\) \['bart'\] the model does not have"),
    ({"pairs": [["BART", "BART"]]}, "pairs a system with itself"),
    ({"pairs": [["BART", "seneca"], ["seneca", "BART"]]}, "names a pair twice"),
    ({"correction": "bonferroni"}, r"'replication.correction' field must be one of \['none', 'holm', 'bh'\]"),
    ({"criteria": 0}, "'replication.criteria' field must be a whole number from 1 to 20; got 0"),
    ({"means": [4, 4, 4]}, r"one mean per system of model 'coherence' \(5"),
    ({"means": [4, 4, 4, 4, 7]}, "strictly between the scale's ends 1 and 7"),
    ({"kappa": "yes"}, "'replication.kappa' field must be true or false"),
])
def test_bad_structure_options_are_refused_naming_the_field(replication, message):
    with pytest.raises(ConfigError, match=message):
        parse_config(_config(replication=replication))


# ---------------------------------------------------------------------------------------------------------------
# Through the engine and summary


def _run(**replication):
    return api.simulate(_config(tests=["ttest_doc", "ttest"], replication={"tolerance": 0, **replication}),
                        jobs=1, progress=False)


def test_first_criterion_is_the_study_without_criteria_and_the_others_are_new_studies():
    one, three = _run().trials, _run(criteria=3, kappa=True).trials
    key = ["test", "trial", "pair"]
    shared = three[three["test"].isin(one["test"].unique())].sort_values(key, ignore_index=True)
    pd.testing.assert_frame_equal(shared.drop(columns="fit_seconds"),
                                  one.sort_values(key, ignore_index=True).drop(columns="fit_seconds"))
    for label in ("c2:ttest_doc", "c3:ttest_doc", REPLICATION_PREFIX + "c3:ttest_doc", "c2:kappa:original"):
        assert label in set(three["test"])
    p = {label: three[three["test"] == label].sort_values(["trial", "pair"])["p_value"].to_numpy()
         for label in ("ttest_doc", "c2:ttest_doc", "c3:ttest_doc")}
    assert not np.allclose(p["ttest_doc"], p["c2:ttest_doc"]) and not np.allclose(p["c2:ttest_doc"], p["c3:ttest_doc"])


def _rejected(p: np.ndarray, method: str) -> np.ndarray:
    """Holm written out as its step-down rule (statsmodels' Holm runs gc.collect on every call: slow), BH by
    statsmodels."""
    if method == "fdr_bh":
        return multipletests(p, alpha=0.05, method=method)[1] < 0.05
    reject = np.zeros(p.size, bool)
    for step, index in enumerate(np.argsort(p, kind="stable")):
        if p[index] * (p.size - step) >= 0.05:
            break
        reject[index] = True
    return reject


def _by_hand_f1(trials: pd.DataFrame, test: str, tested: list[int], criteria: int, method: str | None) -> list:
    """Per trial F1 from the stored p-values, written out with statsmodels' multipletests (NaN: undefined)."""
    values = []
    for trial in sorted(trials["trial"].unique()):
        decided = {}
        for study, prefix in (("original", ""), ("replication", REPLICATION_PREFIX)):
            signs = []
            for c in range(1, criteria + 1):
                label = prefix + (test if c == 1 else f"c{c}:{test}")
                rows = trials[(trials["test"] == label) & (trials["trial"] == trial)].set_index("pair").loc[tested]
                p = rows["p_value"].to_numpy()
                reject = p < 0.05 if method is None else _rejected(p, method)
                signs += [int(np.sign(e)) if r else 0 for r, e in zip(reject, rows["estimate"])]
            decided[study] = np.array(signs)
        gold, got = decided["original"], decided["replication"]
        hits = np.sum((gold != 0) & (gold == got))
        values.append(np.nan if not np.any(gold) else 2 * hits / (np.count_nonzero(gold) + np.count_nonzero(got)))
    return values


@pytest.mark.parametrize("pairs, tested, correction, method", [
    ("adjacent", [0, 4, 7, 9], "none", None),
    pytest.param("first", [0, 1, 2, 3], "holm", "holm", marks=pytest.mark.slow),  # 0.3-0.5 s each: one fast
    pytest.param([["BART", "seneca"], ["__REFERENCE__", "onmt_pg"]], [2, 8], "bh", "fdr_bh", marks=pytest.mark.slow),
])
def test_per_trial_f1_and_the_summary_follow_the_tested_pairs_correction_and_criteria(pairs, tested, correction,
                                                                                     method):
    result = _run(criteria=2, pairs=pairs, correction=correction)
    design_rows = result.trials
    table = replication_trials(result.config, design_rows)
    for test in ("ttest_doc", "ttest"):
        got = table[table["test"] == test].sort_values("trial")["significance_f1"].to_numpy()
        np.testing.assert_allclose(got, _by_hand_f1(design_rows, test, tested, 2, method), equal_nan=True)
        row = result.summary().query("test == @test and estimand == 'significance_f1'").iloc[0]
        assert row["rate"] == pytest.approx(np.nanmean(got)) and row["n_failed"] == int(np.isnan(got).sum())
    # pairs and correction are summary settings: the same trials read under another plan
    everything = replication_trials(result.config, design_rows, ReplicationSettings(criteria=2))
    assert len(everything) == len(table)


def test_replication_r_with_criteria_is_the_mean_of_the_criteria_r():
    result = _run(criteria=2)
    rows = result.trials
    per_trial = replication_trials(result.config, rows).drop_duplicates("trial").sort_values("trial")
    expected = []
    for trial in sorted(rows["trial"].unique()):
        rs = []
        for prefix in ("", "c2:"):
            a, b = (rows[(rows["test"] == prefix + f"scores:{study}") & (rows["trial"] == trial)]
                    .sort_values("pair")["estimate"].to_numpy() for study in ("original", "replication"))
            rs.append(np.corrcoef(a, b)[0, 1])
        expected.append(np.mean(rs))
    np.testing.assert_allclose(per_trial["replication_r"], expected)
    summary = result.summary()
    assert summary.query("estimand == 'replication_r'")["rate"].iloc[0] == pytest.approx(np.mean(expected))


def test_kappa_rows_are_the_mean_of_the_stored_per_study_kappas():
    result = _run(kappa=True)
    stored = result.trials[result.trials["test"] == "kappa:original"]["estimate"]
    row = result.summary().query("estimand == 'kappa_original'").iloc[0]
    assert len(stored) == 6 and row["rate"] == pytest.approx(stored.mean())
    assert "kappa_replication" in set(result.summary()["estimand"])


@pytest.mark.parametrize("correction, method", [("holm", "holm"), ("bh", "fdr_bh")])
@pytest.mark.slow  # a second or more: the fast tier stays under a minute
def test_adjusted_p_values_equal_statsmodels(correction, method):
    rng = np.random.default_rng(8)
    for size in (1, 2, 5, 10, 40):
        p = np.concatenate([rng.uniform(size=size), rng.uniform(size=size) ** 4])
        p[:2] = p[0]  # a tie
        np.testing.assert_allclose(adjusted_p_values(p, correction), multipletests(p, method=method)[1],
                                   rtol=1e-12)
