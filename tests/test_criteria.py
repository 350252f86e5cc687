"""Several criteria per study (issue 27 item 5): criteria as a dimension of a rate study."""
import numpy as np
import pytest

from simdesign import ConfigError, load_model
from simdesign.core.designs import PoolDesign
from simdesign.studies.rates.config import parse_config
from simdesign.studies.rates.engine import _criterion_studies, plan_chunks, replay_trial, run_simulation
from simdesign.studies.rates.store import rate_store
from simdesign.studies.rates.summary import summarise


def _raw(**changes) -> dict:
    raw = {"name": "crit", "model": "coherence", "effect": "fitted", "trials": 6, "seed": 4,
           "criteria": ["coherence", {"name": "repetition", "model": "repetition"}],
           "designs": [{"kind": "pool", "docs": 12, "annotators": 6, "judgements_per_output": 2}],
           "tests": ["ttest_doc", "art_doc"]}
    raw.update(changes)
    return raw


def test_criteria_parse_round_trip_and_label_results():
    config = parse_config(_raw())
    assert [c.name for c in config.criteria] == ["coherence", "repetition"]
    assert config.criteria[1].model.name == "repetition" and config.criteria[0].model.name == "coherence"
    assert [s.label for s in config.work_specs] == ["ttest_doc#coherence", "art_doc#coherence",
                                                    "ttest_doc#repetition", "art_doc#repetition"]
    assert parse_config(config.to_mapping()) == config
    # a config without criteria keeps its labels and mapping
    plain = parse_config({k: v for k, v in _raw().items() if k != "criteria"})
    assert [s.label for s in plain.work_specs] == ["ttest_doc", "art_doc"] and "criteria" not in plain.to_mapping()


@pytest.mark.parametrize("changes, words", [
    ({"criteria": ["a#b"]}, "without '/', '#' or '@'"),
    ({"criteria": ["x", "x"]}, "lists ['x'] more than once"),
    ({"criteria": [{"name": "x", "weight": 2}]}, "unknown key(s) ['weight']"),
    ({"criteria": [{"name": "x", "model": "coherense"}]}, "criteria[0]: The 'model' field must be a preset"),
    ({"criteria": ["x"], "model": {"preset": "coherence", "rank_noise": 1.0}, "methods": ["likert", "rank"]},
     "cannot be combined with 'methods'"),
    ({"criteria": []}, "non-empty list"),
])
def test_bad_criteria_are_refused_naming_the_field(changes, words):
    with pytest.raises(ConfigError) as caught:
        parse_config(_raw(**changes))
    assert words in str(caught.value)


def test_a_criterion_model_needs_the_studys_systems(tmp_path):
    model = load_model("coherence").to_dict()
    model["systems"] = ["__REFERENCE__", "a", "b", "c", "d"]
    with pytest.raises(ConfigError, match="must have the systems of the config's model"):
        parse_config(_raw(criteria=["coherence", {"name": "other", "model": model}]))


def test_criteria_share_the_layout_and_have_their_own_draws():
    config = parse_config(_raw(designs=[{"kind": "pool", "docs": 12, "annotators": 6, "judgements_per_output": 2,
                                         "coverage": {"BART": 0.5}}]))
    design = config.designs[0]
    criteria = {c.name: c.model for c in config.criteria}
    studies = _criterion_studies(config.model, criteria, config.effect, config.seed, design, trial=2)
    first, second = studies["coherence"], studies["repetition"]
    # the same annotators judged the same existing outputs on both criteria (the pool is drawn per trial)
    np.testing.assert_array_equal(first.annotator, second.annotator)
    np.testing.assert_array_equal(first.document, second.document)
    np.testing.assert_array_equal(first.observed, second.observed)
    assert not np.array_equal(first.scores[first.observed], second.scores[second.observed])
    # a criterion's study does not depend on which other criteria the config lists
    alone = _criterion_studies(config.model, {"repetition": criteria["repetition"]}, config.effect, config.seed,
                               design, trial=2)["repetition"]
    np.testing.assert_array_equal(alone.scores, second.scores)
    # another trial draws another pool
    other = _criterion_studies(config.model, criteria, config.effect, config.seed, design, trial=3)["coherence"]
    assert not np.array_equal(other.annotator, first.annotator)


def test_rows_and_summaries_carry_the_criterion_and_its_models_effects(tmp_path):
    config = parse_config(_raw())
    store = run_simulation(config, tmp_path / "out", config.to_mapping(), jobs=1, progress=False)
    trials = store.read_trials()
    assert set(trials["criterion"]) == {"coherence", "repetition"}
    for criterion in config.criteria:
        beta = criterion.model.effects
        rows = trials[(trials["criterion"] == criterion.name) & (trials["trial"] == 0)
                      & (trials["test"] == f"ttest_doc#{criterion.name}")].sort_values("pair")
        np.testing.assert_allclose(rows["true_diff"], [beta[i] - beta[j] for i in range(5) for j in range(i + 1, 5)])
    summary = summarise(config, trials)
    assert list(summary.columns[summary.columns.get_loc("test"):][:2]) == ["test", "criterion"]
    assert set(zip(summary["test"], summary["criterion"])) == {(t, c) for t in ("ttest_doc", "art_doc")
                                                               for c in ("coherence", "repetition")}
    # a replayed trial gives the stored p-values
    _, result = replay_trial(config, config.designs[0].label, 4, "art_doc#repetition")
    stored = trials[(trials["test"] == "art_doc#repetition") & (trials["trial"] == 4)].sort_values("pair")
    np.testing.assert_array_equal(result.p_value, stored["p_value"].to_numpy())


def test_adding_a_criterion_reuses_the_stored_ones(tmp_path):
    one = parse_config(_raw(criteria=[{"name": "repetition", "model": "repetition"}]))
    store = run_simulation(one, tmp_path / "out", one.to_mapping(), jobs=1, progress=False)
    before = store.read_trials()
    both = parse_config(_raw())
    # only the new criterion's work is planned: the stored criterion's rows are kept
    planned = {spec.label for chunk in plan_chunks(both, rate_store(tmp_path / "out"), both.trials)
               for spec in chunk.analyses}
    assert planned == {"ttest_doc#coherence", "art_doc#coherence"}
    after = run_simulation(both, tmp_path / "out", both.to_mapping(), jobs=1, progress=False).read_trials()
    kept = after[after["criterion"] == "repetition"].sort_values(["test", "trial", "pair"]).reset_index(drop=True)
    np.testing.assert_array_equal(kept["p_value"], before.sort_values(["test", "trial", "pair"])["p_value"])
