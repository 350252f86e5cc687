"""A test-only estimand and a test-only design kind, registered from test modules, run end to end (issue 28).

Nothing in the package is edited for them: tests/plugin_estimand.py and tests/plugin_design_kind.py register
them as a user's module would; a study simulates, summarises and plots them, and the planner searches the
design kind (the shapes and 'search' keys are read from the registry when a plan is parsed).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import plugin_design_kind
import plugin_estimand
import simdesign
from simdesign.core.estimands import ESTIMANDS
from simdesign.core.errors import ConfigError
from simdesign.core.seeds import data_rng
from simdesign.methods import default_method
from simdesign.planning.plan_report import plan_study, plan_table
from simdesign.planning.planner import parse_plan
from simdesign.studies.rates.config import SimulationConfig, parse_config
from simdesign.studies.rates.summary import summarise

SEED = 5
BLOCKS = {"kind": "block", "blocks": 4, "docs_per_block": 3, "annotators_per_block": 2}


def rates_config(**changes) -> dict:
    base = {"name": "plug", "model": "coherence", "effect": "zero", "designs": [BLOCKS], "tests": ["ttest_doc"],
            "trials": 30, "seed": SEED, "chunk_size": 10}
    base.update(changes)
    return base


@pytest.mark.slow  # worker processes (loky): several seconds
def test_a_requested_test_only_estimand_is_simulated_summarised_and_plotted(tmp_path):
    config = parse_config(rates_config(estimands=["mean_score"], figure={"estimand": "mean_score"}))
    result = simdesign.simulate(config, out_dir=tmp_path / "run", jobs=2)  # two loky workers: not this process
    stored = result.trials[result.trials["test"] == "mean_score"].sort_values("trial")
    design = config.designs[0]
    # each trial's value from the trial's own data, sampled again here from its seed
    expected = [config.model.sample(design, data_rng(SEED, design.label, trial, default_method().stream_suffix), "zero").scores.mean()
                for trial in range(30)]
    assert stored["estimate"].to_numpy() == pytest.approx(expected)
    row = result.summary().set_index("estimand").loc["mean_score"]
    assert row["rate"] == pytest.approx(np.mean(expected))
    assert row["mcse"] == pytest.approx(np.std(expected, ddof=1) / np.sqrt(30))
    assert row["ci_low"] < row["rate"] < row["ci_high"] and row["trials"] == 30
    figure = result.plot(estimand="mean_score")
    axis = figure.axes[0]
    assert axis.get_ylabel() == plugin_estimand.MEAN_SCORE.label == ESTIMANDS["mean_score"].label
    assert "normal intervals" in axis.get_title()  # a value, not a rate: the registry's unit says so
    paths = result.plot(tmp_path / "figure")
    assert any(path.suffix == ".png" and path.is_file() for path in paths)


def test_an_unknown_estimand_is_refused_naming_the_registered_ones():
    with pytest.raises(ConfigError, match=r"unknown estimand\(s\) \['mean_scor'\].*mean_score"):
        parse_config(rates_config(estimands=["mean_scor"]))


def test_a_test_only_rate_estimand_is_in_every_summary_while_registered(tmp_path):
    config = parse_config(rates_config(trials=40))
    result = simdesign.simulate(config, out_dir=tmp_path / "run", jobs=1)
    assert "half_alpha_type1" not in set(result.summary()["estimand"])
    with plugin_estimand.half_alpha_rate():
        summary = summarise(config, result.trials)
        row = summary.set_index("estimand").loc["half_alpha_type1"]
        rows = result.trials.sort_values(["trial", "pair"])
        failed = rows["status"].isin(["not_converged", "degenerate", "error"]).to_numpy()
        by_hand = ((rows["p_value"].to_numpy() < 0.025) & ~failed).reshape(40, -1)
        assert row["rate"] == pytest.approx(by_hand.mean())
        assert row["mcse"] == pytest.approx(by_hand.mean(axis=1).std(ddof=1) / np.sqrt(40))
        # the config accepts it as the figure's estimand now (read from the registry when the config is checked)
        with_figure = parse_config(rates_config(trials=40, figure={"estimand": "half_alpha_type1"}))
        result = simdesign.load_results(tmp_path / "run", config=with_figure)
        axis = result.plot(estimand="half_alpha_type1").axes[0]
        assert axis.get_ylabel() == "type I error at alpha / 2"
        # the alpha line, as the registry's nominal_level asks
        assert any(line.get_label() == "nominal 0.05" for line in axis.get_lines())
    assert "half_alpha_type1" not in ESTIMANDS
    with pytest.raises(ConfigError, match="figure.estimand"):
        parse_config(rates_config(figure={"estimand": "half_alpha_type1"}))


@pytest.fixture
def ring():
    with plugin_design_kind.ring_kind() as cls:
        yield cls


@pytest.mark.slow  # worker processes (loky): several seconds
def test_a_test_only_design_kind_is_simulated_summarised_and_plotted(tmp_path, ring):
    mapping = rates_config(designs=[{"kind": "ring", "docs": [9, 12], "ring_size": 4, "judgements_per_output": 2},
                                    BLOCKS],
                           estimands=["krippendorff_alpha"], figure={"x": "annotators"})
    config = parse_config(mapping)
    assert [d.label for d in config.designs] == ["ring-N9-R4-k2", "ring-N12-R4-k2", "block-B4-D3-A2"]
    result = simdesign.simulate(config, out_dir=tmp_path / "run", jobs=2)
    summary = result.summary()
    ring_rows = summary[summary["kind"] == "ring"]
    assert set(ring_rows["design"]) == {"ring-N9-R4-k2", "ring-N12-R4-k2"}
    assert (ring_rows["judgements"].isin([9 * 2 * 5, 12 * 2 * 5])).all()
    type1 = ring_rows[ring_rows["estimand"] == "type1"]
    assert len(type1) == 2 and type1["trials"].eq(30).all() and type1["rate"].between(0, 1).all()
    # the same data whoever samples it: the stored trial 3 of a ring design, sampled again here
    design = config.designs[0]
    again = config.model.sample(design, data_rng(SEED, design.label, 3, default_method().stream_suffix), "zero")
    trials = result.trials
    alpha_row = trials[(trials["design"] == design.label) & (trials["test"] == "krippendorff_alpha")
                       & (trials["trial"] == 3)]
    from simdesign.stats.reliability import krippendorff_alpha

    assert alpha_row["estimate"].iloc[0] == pytest.approx(krippendorff_alpha(again))
    paths = result.plot(tmp_path / "figure")
    assert any(path.suffix == ".png" and path.is_file() for path in paths)
    drawn = result.plot()
    assert any(line.get_marker() == "D" for line in drawn.axes[0].get_lines())  # the ring kind's plot_style


def test_a_design_kind_without_blocks_refuses_block_tests_with_its_own_reason(ring):
    with pytest.raises(ConfigError, match="neighbouring documents of a ring share annotators"):
        parse_config(rates_config(designs=[{"kind": "ring", "docs": 9, "ring_size": 4, "judgements_per_output": 2}],
                                  tests=["ttest_block"]))


def plan_mapping(**changes) -> dict:
    base = {"name": "plan-ring", "model": "coherence", "effect": "fitted", "tests": ["ttest_doc"], "alpha": 0.05,
            "target_power": 0.5, "cost": {"pay_per_hour": 12.0, "seconds_per_judgement": 20},
            "search": {"shapes": ["ring", "crossed"], "docs": [12, 24], "ring_size": [3, 6],
                       "judgements_per_output": [2], "annotators_per_block": [2]},
            "screen_trials": 20, "max_trials": 40, "confirm_trials": 40, "seed": 13, "max_type1": None}
    base.update(changes)
    return base


def test_the_planner_refuses_a_kind_that_is_not_registered():
    with pytest.raises(ConfigError, match=r"Unknown 'search' key\(s\) \['ring_size'\]"):
        parse_plan(plan_mapping())


@pytest.mark.slow  # worker processes (loky): several seconds
def test_the_planner_searches_a_design_kind_registered_after_it_was_imported(tmp_path, ring):
    config = parse_plan(plan_mapping())
    rings = [c.design for c in config.candidates if c.design.kind == "ring"]
    assert sorted(d.label for d in rings) == ["ring-N12-R3-k2", "ring-N12-R6-k2", "ring-N24-R3-k2", "ring-N24-R6-k2"]
    result = plan_study(config, tmp_path / "plan", jobs=1)
    table = plan_table(result)
    simulated = table[(table["trials"] > 0)]
    assert {"ring", "crossed"} <= set(simulated["shape"])
    ring_rows = simulated[simulated["shape"] == "ring"]
    assert ring_rows["power"].between(0, 1).all() and (ring_rows["ci_low"] <= ring_rows["power"]).all()
    # the plan's studies are an ordinary results store of ring designs, as a rate study's
    store = simdesign.load_results(tmp_path / "plan" / "studies" / "ring")
    assert {d.kind for d in store.config.designs} == {"ring"}
    assert isinstance(store.config, SimulationConfig) and not store.trials.empty
    assert (tmp_path / "plan" / "plan.csv").is_file()
    assert any(path.suffix == ".png" for path in (tmp_path / "plan").iterdir())  # the cost-power figure


def test_the_rate_study_kind_runs_chosen_trials_as_the_engine_does(tmp_path):
    """The planner's path (the rate study kind's interface: open_store, trial_chunks, compute_chunks) stores
    the rows a plain run stores."""
    from simdesign.runner.backends import BackendSpec, ChunkExecutor
    from simdesign.runner.study import REGISTERED
    from simdesign.runner.stores import release_stores_under

    config = parse_config(rates_config(trials=12, estimands=["mean_score"]))
    plain = simdesign.simulate(config, out_dir=tmp_path / "plain", backend="threading", jobs=1).trials
    kind = REGISTERED["rates"]
    store = kind.open_store(config, tmp_path / "chosen")
    try:
        with ChunkExecutor(BackendSpec("threading", 1)) as executor:
            for first, stop in ((0, 5), (5, 12)):  # in two looks, as the planner extends a candidate
                chunks = [chunk for chunk in kind.trial_chunks(config, store, stop) if chunk.stop_trial > first]
                kind.compute_chunks(config, executor, lambda: chunks, lambda chunk, rows: store.write_chunk(
                    chunk.design.label, chunk.first_trial, chunk.stop_trial, [s.label for s in chunk.analyses],
                    rows), 0)
    finally:
        release_stores_under(tmp_path / "chosen")
    chosen = kind.stored_rows(config, tmp_path / "chosen")
    columns = [c for c in plain.columns if c != "fit_seconds"]
    order = ["design", "test", "trial", "pair"]
    pd.testing.assert_frame_equal(chosen[columns].sort_values(order, ignore_index=True),
                                  plain[columns].sort_values(order, ignore_index=True))
    assert kind.summarise(config, chosen)["estimand"].tolist() == result_estimands(config, plain)


def result_estimands(config, rows) -> list:
    return summarise(config, rows)["estimand"].tolist()
