"""The contract every registered annotation method keeps, and a plug-in method run end to end (issue 28, part 1).

Run over the built-in methods and a test-only one (:mod:`plugin_method`, pass/fail judgements) registered
from this module: each is found by name (with a hint for a misspelt one), keeps its own random stream and
result labels, samples judgements of the right shape and range from every model that generates it, reads a
small table of its own into the common oriented form, names callable steps, and says what a judged output
costs where the paper measured it. The plug-in then runs through ``simdesign.simulate``, the summary, the
figures and a plan without any edit to the package.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import simdesign
import simdesign.cli.fit_ranks  # noqa: F401 -- the layers that own the built-in methods' steps register
import simdesign.realdata.method_steps  # noqa: F401    them (a method never names a layer above it)
from simdesign.core.designs import BlockDesign
from simdesign.core.errors import ConfigError
from simdesign.core.seeds import DATA_STREAM, data_rng, label_key
from simdesign.methods import (all_methods, default_method, get_method, method_names, registered,
                               split_result_label)
from simdesign.model import RankOnlyModel, load_model
from simdesign.tables.recognise import orient, read_table
from simdesign.planning.planner import annotation_times

from plugin_method import PASS_FAIL, pass_mark

# A small table per method, in its own file form, and the oriented scores read_table must give.
EXAMPLES = {
    "likert": (pd.DataFrame({"annotator": ["a"] * 3 + ["b"] * 3, "document": ["d"] * 6, "system": list("xyz") * 2,
                             "score": [1, 3, 2, 2, 3, 1]}), [1, 3, 2, 2, 3, 1]),
    "rank": (pd.DataFrame({"annotator": ["a"] * 3 + ["b"] * 3, "document": ["d"] * 6, "system": list("xyz") * 2,
                           "rank": [3, 1, 2, 2, 1, 3]}), [1, 3, 2, 2, 3, 1]),  # reversed: S + 1 - rank
    "passfail": (pd.DataFrame({"annotator": ["a"] * 3 + ["b"] * 3, "document": ["d"] * 6, "system": list("xyz") * 2,
                               "passed": [0, 1, 1, 0, 1, 0]}), [0, 1, 1, 0, 1, 0]),
    # a judgement of a pair: read as the comparisons themselves, the preferred output (or 'tie') per row
    "pairwise": (pd.DataFrame({"annotator": ["a", "a", "b"], "document": ["d", "d", "d"],
                               "system_a": ["x", "y", "x"], "system_b": ["y", "z", "z"],
                               "preferred": ["x", "tie", "z"]}), ["x", "tie", "z"]),
}
EXAMPLE_COLUMN = {"pairwise": "preferred"}  # the column read back (one value per output: the oriented 'score')


@pytest.fixture(params=[*method_names(), "passfail"])
def method(request):
    """Every registered method (from the registry, no list here), and the plug-in registered for the test's
    duration."""
    if request.param == PASS_FAIL.name:
        with registered(PASS_FAIL):
            yield PASS_FAIL
    else:
        yield get_method(request.param)


def models():
    joint = load_model("coherence")  # a preset with a fitted rank_noise: Likert and Rank
    rank_only = RankOnlyModel("toy", ("a", "b", "c"), [0.0, 0.5, 1.0], np.eye(2) * 0.2, np.eye(2) * 0.1)
    # the preset with pairwise preferences, every value assumed (Likert, Rank and pairwise)
    return [joint, dataclasses.replace(joint, preferences={}), rank_only]


def test_the_built_in_methods_are_registered_with_likert_the_default():
    assert method_names()[:2] == ("likert", "rank") and default_method().name == "likert"
    assert PASS_FAIL.name not in method_names()  # registered only inside the tests that use it


def test_found_by_name_and_a_misspelt_name_gets_a_hint(method):
    assert get_method(method.name) is method and method.name in method_names()
    with pytest.raises(ConfigError, match=f"did you mean '{method.name}'"):
        get_method(method.name[:-1] + "x")
    assert method.label and method.value_column and method.value_name


def test_stream_suffix(method):
    """The default method's stream is the plain (design, trial) key; every other method's key adds its labels."""
    expected = np.random.Generator(np.random.PCG64(np.random.SeedSequence(
        7, spawn_key=(label_key("block-design"), 3, DATA_STREAM) + tuple(label_key(s) for s in method.stream_suffix))))
    assert data_rng(7, "block-design", 3, method.stream_suffix).random(4).tolist() == expected.random(4).tolist()
    plain = data_rng(7, "block-design", 3).random(4).tolist()
    assert (plain == data_rng(7, "block-design", 3, method.stream_suffix).random(4).tolist()) == method.is_default
    suffixes = [m.stream_suffix for m in all_methods()]
    assert len(set(suffixes)) == len(suffixes)


def test_result_labels_round_trip(method):
    label = method.result_label("ttest_doc")
    assert split_result_label(label) == ("ttest_doc", method.name)
    assert (label == "ttest_doc") == method.is_default


def test_sampling_shapes_and_ranges(method):
    design = BlockDesign(4, 3, 2)
    generating = [model for model in models() if method.can_generate(model)]
    assert generating, f"no test model generates {method.name}"
    for model in generating:
        assert method.name in model.methods
        data = model.sample(design, np.random.default_rng(1), method=method.name)
        assert data.scores.shape == (design.blocks * design.docs_per_block * design.annotators_per_block,
                                     model.n_systems)
        if method.covers == "pair":  # one verdict per (annotator, document) and pair of systems shown
            shown = data.preferences[~np.isnan(data.preferences)]
            assert data.preferences.shape == (design.pairs, model.n_systems * (model.n_systems - 1) // 2)
            assert set(np.unique(shown)) <= {0.0, 0.5, 1.0} and shown.size
            continue
        assert data.scores.dtype.kind == "i"
        if method.rankings:  # every (annotator, document) gives each output a different value, 1..S
            assert (np.sort(data.scores, axis=1) == np.arange(1, model.n_systems + 1)).all()
    for model in models():
        if not method.can_generate(model):
            with pytest.raises(ConfigError, match=method.name):
                model.sample(design, np.random.default_rng(1), method=method.name)


def test_reading_a_small_table_gives_the_oriented_scores(method, tmp_path):
    frame, scores = EXAMPLES[method.name]
    path = tmp_path / "table.csv"
    frame.to_csv(path, index=False)
    read, info = read_table(path)  # the method is inferred from its judgement column
    assert info["method"] == method.name
    assert read[EXAMPLE_COLUMN.get(method.name, "score")].tolist() == scores
    assert method.step("describe")(info)


# A simulated study in each method's own file form (the inverse of its orientation), S = number of systems.
FILE_FORMS = {
    "likert": lambda frame, S: frame,
    "rank": lambda frame, S: frame.assign(rank=S + 1 - frame["score"]).drop(columns="score"),
    "passfail": lambda frame, S: frame.rename(columns={"score": "passed"}),
}


def test_check_statistics_of_a_study_from_the_model_itself(method):
    """The method's predictive check on a study simulated from the checked model: its table has the observed
    and simulated values, and nearly every statistic lies inside its simulated 95% range."""
    model = next(model for model in models() if method.can_generate(model) and len(model.systems) == 5)
    sampled = model.sample(BlockDesign(8, 5, 3), np.random.default_rng(11), method=method.name)
    if method.covers == "pair":  # its file form is its comparisons (AnnotationMethod.study_table)
        table_form = method.study_table(sampled).drop(columns=["block", "comparison"]).astype({"annotator": str,
                                                                                             "document": str})
    else:
        table_form = FILE_FORMS[method.name](sampled.to_frame().drop(columns="block"), model.n_systems)
    oriented, _ = orient(table_form, method.name)
    table, simulated = method.step("check")(model, oriented, trials=40, seed=2)
    assert {"statistic", "system", "observed", "sim_low", "sim_high", "inside"} <= set(table.columns)
    assert simulated.shape == (40, len(table)) and (table["sim_low"] <= table["sim_high"]).all()
    assert table["inside"].mean() >= 0.8, table[~table["inside"]]


def test_steps_resolve_to_functions(method):
    for role in method.steps:
        assert callable(method.step(role))
    with pytest.raises(ConfigError, match="no 'no_such_step' step"):
        method.step("no_such_step")


def test_cost_per_output():
    """The paper measured Likert and Rank times (seconds per judged output); the plug-in has none."""
    times = annotation_times()
    for name in ("likert", "rank"):
        measured = get_method(name).measured_seconds(times)
        assert set(measured) == {"coherence", "repetition"}
        assert all(entry["capped_mean_seconds"] > 0 for entry in measured.values())
    assert get_method("rank").measured_seconds(times)["coherence"]["capped_mean_seconds"] == pytest.approx(26.67,
                                                                                                         abs=0.01)
    assert PASS_FAIL.measured_seconds(times) == {}


def test_a_plan_needs_the_seconds_of_a_method_the_paper_did_not_time():
    from simdesign.planning.planner import parse_plan

    plan = {"name": "p", "model": "coherence", "effect": "fitted", "tests": ["ttest_doc"], "target_power": 0.8,
            "cost": {"pay_per_hour": 12}, "max_type1": None,
            "search": {"designs": [{"kind": "block", "blocks": 4, "docs_per_block": 5, "annotators_per_block": 2}],
                       "methods": ["passfail"]}}
    with registered(PASS_FAIL):
        with pytest.raises(ConfigError, match="measured none for the Pass/fail method"):
            parse_plan(plan)
        config = parse_plan({**plan, "cost": {"pay_per_hour": 12, "seconds_per_judgement": {"passfail": 5}}})
    assert config.method_costs["passfail"].seconds_per_judgement == 5
    assert [c.test.label for c in config.candidates] == ["ttest_doc@passfail"]


def test_accepted_tests():
    """Rankings are taken only by tests declared valid on them; scores and pass/fail by every test."""
    from simdesign.significance import ANALYSES

    assert not get_method("rank").accepts(ANALYSES["art"]) and get_method("rank").accepts(ANALYSES["ttest_doc"])
    one_value_per_output = [info for info in ANALYSES.values() if not info.takes_preferences]
    assert all(get_method("likert").accepts(info) and PASS_FAIL.accepts(info) for info in one_value_per_output)
    # pairwise preferences go only to the tests that read them, and those tests take no other method's values
    for info in ANALYSES.values():
        assert get_method("pairwise").accepts(info) == info.takes_preferences, info.name
        assert not (info.takes_preferences and get_method("likert").accepts(info)), info.name


def test_pass_fail_share_matches_the_model(tmp_path):
    """Monte Carlo: the share of passes per system is the model's P(latent > pass mark), within 4 MCSE."""
    model = load_model("coherence")
    probabilities = model.marginal_probabilities()  # P(category) per system, integrated over random effects
    passing = probabilities[:, len(model.thresholds) // 2 + 1:].sum(axis=1)  # categories above the mark
    with registered(PASS_FAIL):
        shares = np.array([model.sample(BlockDesign(20, 5, 3), np.random.default_rng(seed), method="passfail")
                           .scores.mean(axis=0) for seed in range(200)])
    mcse = shares.std(axis=0, ddof=1) / np.sqrt(len(shares))  # studies are the independent unit
    assert np.all(np.abs(shares.mean(axis=0) - passing) < 4 * mcse), (shares.mean(axis=0), passing, mcse)
    assert pass_mark(model) == model.thresholds[3]


@pytest.mark.slow
def test_a_plug_in_method_runs_end_to_end(tmp_path):
    """simulate (a config naming the plug-in), summarise, plot and plan, with no edit to the package."""
    config = {"name": "passfail", "model": "coherence", "effect": "fitted", "method": "passfail",
              "designs": [{"kind": "block", "blocks": 4, "docs_per_block": 5, "annotators_per_block": 2}],
              "tests": ["ttest_doc", "art_doc"], "trials": 20, "seed": 5}
    with registered(PASS_FAIL):
        # two workers: the method travels with the chunks to processes that never registered it
        result = simdesign.simulate(config, out_dir=tmp_path / "run", jobs=2, progress=False)
        summary = result.summary()
        power = summary[summary["estimand"] == "power"]
        assert set(power["method"]) == {"passfail"} and set(power["test"]) == {"ttest_doc", "art_doc"}
        assert (power["trials"] == 20).all() and power["rate"].between(0, 1).all()
        assert set(result.trials["test"]) == {"ttest_doc@passfail", "art_doc@passfail"}
        paths = result.plot(tmp_path / "figures")
        assert paths and all(path.exists() for path in paths)
        # the same trials again from the store (keys and fingerprints of the plug-in's results)
        again = simdesign.simulate(config, out_dir=tmp_path / "run", jobs=1, progress=False)
        pd.testing.assert_frame_equal(again.summary(), summary)
        # a real study's table of the method, read by its 'passed' column and analysed
        frame = result.config.model.sample(BlockDesign(6, 5, 2), np.random.default_rng(3), method="passfail").to_frame()
        frame.rename(columns={"score": "passed"}).to_csv(tmp_path / "study.csv", index=False)
        analysis = simdesign.analyse(tmp_path / "study.csv", tests=["ttest_doc"], bootstrap=200)
        assert analysis.method == "passfail" and analysis.value_name == "share passing"
        assert analysis.systems["mean"].between(0, 1).all() and len(analysis.systems) == 5
        plan = simdesign.plan({
            "name": "passfail-plan", "model": "coherence", "effect": "fitted", "tests": ["ttest_doc"],
            "target_power": 0.8, "cost": {"pay_per_hour": 12, "seconds_per_judgement": {"passfail": 5}},
            "search": {"designs": [{"kind": "block", "blocks": 4, "docs_per_block": 5, "annotators_per_block": 2},
                                   {"kind": "block", "blocks": 10, "docs_per_block": 5, "annotators_per_block": 2}],
                       "methods": ["likert", "passfail"]},
            "screen_trials": 10, "max_trials": 20, "confirm_trials": 10, "max_type1": None, "seed": 2},
            out_dir=tmp_path / "plan", jobs=1, progress=False)
        table = plan.table
        assert set(table["method"]) == {"likert", "passfail"}
        assert set(table.loc[table["method"] == "passfail", "test"]) == {"ttest_doc@passfail"}
        assert (tmp_path / "plan" / "studies-passfail").exists()


@pytest.mark.slow
def test_a_plug_in_method_named_by_its_import_path_runs_from_the_command_line(tmp_path):
    """`simdesign run` with `method: plugin_method:PASS_FAIL`, then `simdesign plot` in a fresh process that
    finds the method again from the stored config (fresh processes: nothing is registered beforehand)."""
    import os
    import subprocess
    import sys

    import yaml

    config = {"name": "passfail-cli", "model": "coherence", "effect": "zero", "method": "plugin_method:PASS_FAIL",
              "designs": [{"kind": "block", "blocks": 3, "docs_per_block": 4, "annotators_per_block": 2}],
              "tests": ["ttest_doc"], "trials": 12, "seed": 4}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    tests_dir = str(Path(__file__).resolve().parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([tests_dir, os.environ.get("PYTHONPATH", "")])}
    out = tmp_path / "results"
    for command in (["run", str(tmp_path / "config.yaml"), "--out", str(out), "--jobs", "1"],
                    ["plot", str(out)]):
        done = subprocess.run([sys.executable, "-m", "simdesign.cli", *command], capture_output=True, text=True,
                              env=env, cwd=tmp_path, timeout=600)
        assert done.returncode == 0, done.stderr
    summary = pd.read_csv(out / "summary.csv")
    assert set(summary.loc[summary["estimand"] == "type1", "method"]) == {"passfail"}
    assert "passfail" not in method_names()  # this process never registered it


def test_the_contract_checks_plug_in_authors_run_pass(method):
    from simdesign.testing import check_method

    check_method(method, models())  # what simdesign.testing checks for a plug-in's method (issue 40)


PLUGIN_BY_PATH = '''
import numpy as np
from simdesign.methods import AnnotationMethod, register_method


class Coin(AnnotationMethod):
    name, label, value_column, value_name = "coin_by_path", "Coin", "heads", "share heads"
    stream_suffix, result_suffix = ("coin_by_path",), "@coin_by_path"

    def can_generate(self, model):
        return getattr(model, "thresholds", None) is not None

    def responses(self, model, eta, rng):
        return (eta + rng.logistic(size=eta.shape) > 0).astype(np.int64)


COIN = register_method(Coin())
'''


def test_a_plan_naming_a_plug_in_method_by_its_path_works_on_first_use(tmp_path, monkeypatch):
    # the model was asked what it generates before the plug-in was imported: the first plan failed (issue 40)
    from simdesign.methods import unregister_method
    from simdesign.planning.method_search import parse_methods

    (tmp_path / "coin_by_path_plugin.py").write_text(PLUGIN_BY_PATH)
    monkeypatch.syspath_prepend(str(tmp_path))
    errors: list = []
    try:
        found = parse_methods({"methods": ["likert", "coin_by_path_plugin:COIN"]}, load_model("coherence"), errors)
        assert errors == [] and found == ("likert", "coin_by_path")
    finally:
        unregister_method("coin_by_path")


def test_simdesign_check_calls_a_plug_in_methods_own_check_step(tmp_path, capsys):
    # `simdesign check` called only a method's command-line step, never its check step (issue 40, item 7)
    from simdesign.cli import main

    model = load_model("coherence")
    with registered(PASS_FAIL):
        study = model.sample(BlockDesign(6, 4, 2), np.random.default_rng(5), method=PASS_FAIL.name)
        path = tmp_path / "passfail.csv"
        FILE_FORMS["passfail"](study.to_frame().drop(columns="block"), model.n_systems).to_csv(path, index=False)
        out = tmp_path / "check"
        assert main(["check", "coherence", str(path), "--method", "passfail", "--trials", "20",
                     "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "predictive check (Pass/fail): 20 studies" in printed
    table = pd.read_csv(out / "check.csv")
    assert {"statistic", "observed", "sim_low", "sim_high", "inside"} <= set(table.columns)


def test_a_refused_test_says_why():
    # accepts() gave a bare no; the refusal now says why (issue 40, item 7), and a plug-in can give its own reason
    from simdesign.significance import ANALYSES
    from simdesign.studies.rates.config import parse_config

    rank = get_method("rank")
    assert rank.accepts(ANALYSES["art"]) is False and "are rankings" in rank.refusal(ANALYSES["art"])
    assert rank.accepts(ANALYSES["ttest_doc"]) is True and rank.refusal(ANALYSES["ttest_doc"]) == ""
    with pytest.raises(ConfigError, match=r"cannot take rank judgements \(Rank judgements are rankings"):
        parse_config({"name": "x", "model": {"preset": "coherence", "rank_model": "coherence"}, "method": "rank",
                      "designs": [{"kind": "block", "blocks": 2, "docs_per_block": 5, "annotators_per_block": 2}],
                      "tests": ["art"], "trials": 2})


def test_a_plug_in_method_without_table_steps_named_by_its_path_is_analysed(tmp_path, monkeypatch):
    # `simdesign analyse --method module:OBJ` resolved the plug-in (as run and plan do) and then stopped: it had no
    # 'read_table' step. A one-value-per-output method without table steps is now read as a Likert table is.
    import simdesign
    from simdesign.methods import unregister_method

    (tmp_path / "coin_by_path_plugin.py").write_text(PLUGIN_BY_PATH)
    monkeypatch.syspath_prepend(str(tmp_path))
    frame = load_model("coherence").sample(BlockDesign(6, 4, 3), np.random.default_rng(1)).to_frame()
    frame = frame.drop(columns=["block", "score"]).assign(heads=(frame["score"] > 3).astype(int))
    frame.to_csv(tmp_path / "coin.csv", index=False)
    try:
        result = simdesign.analyse(tmp_path / "coin.csv", method="coin_by_path_plugin:COIN", tests=["ttest_doc"])
        means = frame.groupby("system")["heads"].mean()
        found = result.systems.set_index("system")["mean"]
        assert np.allclose(found.reindex(means.index).to_numpy(), means.to_numpy())
        assert len(result.pairs) == 10 and result.method == "coin_by_path"
    finally:
        unregister_method("coin_by_path")
