"""Results that read well (issue 33, part 3): wide tables, notebook HTML, short reprs, honest figures."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.lines import Line2D

import simdesign
from simdesign.studies.rates.config import FigureSpec, load_config
from simdesign.studies.rates.plots import design_series, draw_summary
from simdesign.studies.rates.views import significant, wide_table


@pytest.fixture(scope="module")
def quick():
    # three designs: crossed 3 annotators, 20 blocks of 3, 100 nested annotators; all on 100 documents
    return simdesign.simulate("configs/quick.yaml", trials=30, jobs=1, progress=False)


def fake_summary(config_path: str, tests=("ttest_doc", "art_block")) -> pd.DataFrame:
    """Summary rows for every design of a config, rates made up: only the layout of the figure is tested."""
    config = load_config(config_path)
    rows = []
    for i, design in enumerate(config.designs):
        for test in tests:
            rows.append({**design.columns(), "judgements": design.judgements(5), "test": test, "estimand": "power",
                         "rate": 0.1 + 0.01 * i, "ci_low": 0.05, "ci_high": 0.2, "trials": 100})
    return pd.DataFrame(rows)


def drawn_lines(figure) -> list[Line2D]:
    """The data lines of a figure (markers joined by a line), not error bars or the nominal level."""
    return [line for line in figure.axes[0].get_lines()
            if line.get_linestyle() not in ("None", "none", "") and len(line.get_xdata()) > 1
            and line.get_label() != "_nolegend_" and not str(line.get_label()).startswith("nominal")]


# ---------------------------------------------------------------------------------------------------------------
# The wide table


def test_table_is_designs_by_tests_with_the_summary_rates_and_intervals(quick):
    summary = quick.summary()
    table = quick.table("type1")
    assert list(table.index) == [d.label for d in quick.config.designs]
    assert list(table.columns) == [a.label for a in quick.config.analyses]
    for _, row in summary[summary["estimand"] == "type1"].iterrows():
        assert table.loc[row["design"], row["test"]] == (
            f"{row['rate']:.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}]")
    # the default estimand of a null run is the type I error; other estimands and precisions on request
    pd.testing.assert_frame_equal(quick.table(), table)
    described = quick.table("type1", design_info=True)
    assert list(described.columns[:3]) == ["kind", "annotators", "docs"]
    assert described["annotators"].tolist() == [3, 60, 100]
    pd.testing.assert_frame_equal(described[table.columns], table)
    familywise = quick.table("familywise", digits=2)
    row = summary[(summary["estimand"] == "familywise") & (summary["test"] == "art")].iloc[0]
    assert familywise.loc[row["design"], "art"] == f"{row['rate']:.2f} [{row['ci_low']:.2f}, {row['ci_high']:.2f}]"
    with pytest.raises(ValueError, match=r"no rows for the estimand 'power'; they have \['type1', 'familywise'"):
        quick.table("power")


def test_table_of_power_and_of_a_reliability_estimand_names_its_columns():
    summary = pd.DataFrame([
        {"design": "d1", "kind": "block", "test": "ttest", "estimand": "power", "rate": 0.5, "ci_low": 0.4,
         "ci_high": 0.6},
        {"design": "d2", "kind": "block", "test": "ttest", "estimand": "power", "rate": 0.75, "ci_low": 0.7,
         "ci_high": 0.8},
        {"design": "d1", "kind": "block", "test": "", "estimand": "shr", "rate": 0.81234, "ci_low": 0.8,
         "ci_high": 0.83},
        {"design": "d2", "kind": "block", "test": "", "estimand": "shr", "rate": np.nan, "ci_low": np.nan,
         "ci_high": np.nan}])
    power = wide_table(summary, "power")
    assert power.to_dict() == {"ttest": {"d1": "0.500 [0.400, 0.600]", "d2": "0.750 [0.700, 0.800]"}}
    assert wide_table(summary, "shr").to_dict() == {"shr": {"d1": "0.812 [0.800, 0.830]", "d2": "n/a"}}


def test_notebook_html_of_a_result_shows_the_wide_table(quick):
    page = quick._repr_html_()
    assert "<table" in page and "type1" in page and "quick" in page
    first = quick.table("type1").iloc[0, 0]
    assert first in page and "failures()" in page


# ---------------------------------------------------------------------------------------------------------------
# Short reprs


def test_config_and_model_reprs_are_short(quick):
    text = repr(quick.config)
    assert len(text) < 300 and "\n" not in text and "array" not in text
    assert "quick" in text and "block-B20-D5-A3" in text and "ttest_doc" in text and "30 trials" in text
    assert str(quick.config) == text
    model = repr(quick.config.model)
    assert len(model) < 200 and "coherence" in model and "array" not in model


def test_reliability_prints_three_significant_digits():
    from simdesign.api import Reliability
    from simdesign.stats.reliability import SplitHalfResult

    result = Reliability(0.22108750305794422, SplitHalfResult(0.9137, 92378, True, 0, 20), [])
    text = repr(result)
    assert "0.221" in text and "0.22108" not in text and "0.914" in text and "92378" in text
    assert result.krippendorff_alpha == 0.22108750305794422  # the value itself is not rounded
    assert significant(1234.5) == "1230" and significant(0.000123456) == "0.000123"


def test_plan_pick_repr_is_one_line():
    from test_plan_budget import Scripted, budget_config
    from simdesign.planning.plan_search import decide_plan

    config = budget_config(2)
    keys = [c.key for c in config.candidates]
    result = decide_plan(config, Scripted(dict(zip(keys, [0.6, 0.7])), dict(zip(keys, [0.03, 0.03]))))
    text = repr(result.recommended)
    assert "\n" not in text and len(text) < 300 and "array" not in text
    assert result.recommended.candidate.design.label in text and "power 0.700" in text and "confirmed" in text
    for short in (repr(config), repr(config.candidates[0])):
        assert "\n" not in short and len(short) < 300 and "array" not in short
    assert "budget 10000" in repr(config) and "2 to simulate" in repr(config)
    # a finished plan in a notebook: the answer in words, then the ranked candidates
    from simdesign.api import PlanOutcome
    from simdesign.planning.plan_report import plan_table, recommendation_text

    outcome = PlanOutcome(result, plan_table(result), recommendation_text(result), result.recommended)
    page = outcome._repr_html_()
    assert page.index("the recommended study is") < page.index("<table")
    assert result.recommended.candidate.design.label in page and "recommended</td>" in page


def test_fit_repr_is_short():
    from simdesign.core.designs import BlockDesign
    from simdesign.model import load_model

    data = load_model("coherence").sample(BlockDesign(6, 4, 2), np.random.default_rng(3))
    fit = simdesign.fit_model(data.to_frame(), structure="intercepts")
    for text in (repr(fit), repr(fit.result)):
        assert "\n" not in text and len(text) < 300 and "array" not in text and "summary()" in text
    assert "log-likelihood" in repr(fit.result) and "240 judgements" in repr(fit.result)


# ---------------------------------------------------------------------------------------------------------------
# Figures: lines only along real series


def test_designs_of_different_shapes_are_labelled_points_not_a_line():
    # the case: a crossed design with 3 annotators and a nested one with 20, both on 20 documents
    summary = pd.DataFrame([
        {"design": "block-B1-D20-A3", "kind": "block", "blocks": 1, "docs_per_block": 20, "annotators_per_block": 3,
         "docs": 20, "annotators": 3, "judgements_per_output": 3, "judgements": 300},
        {"design": "block-B20-D1-A1", "kind": "block", "blocks": 20, "docs_per_block": 1, "annotators_per_block": 1,
         "docs": 20, "annotators": 20, "judgements_per_output": 1, "judgements": 100}])
    summary = summary.assign(test="ttest_doc", estimand="type1", rate=[0.3, 0.05], ci_low=[0.25, 0.03],
                             ci_high=[0.35, 0.08], trials=200)
    figure, _ = draw_summary(summary, FigureSpec(x="annotators"), "type1", "t", alpha=0.05)
    assert drawn_lines(figure) == []
    texts = [t.get_text() for t in figure.axes[0].texts]
    assert "block-B1-D20-A3" in texts and "block-B20-D1-A1" in texts


def test_quick_config_joins_only_its_series(quick):
    # crossed 3 annotators and 20 blocks of 3 share documents (100) and annotators per output (3): the paper's
    # Figure 4 series; 100 nested annotators (1 per output) is a point of its own
    figure = quick.plot(estimand="type1")
    lines = drawn_lines(figure)
    assert len(lines) == len(quick.config.analyses)
    assert all(sorted(line.get_xdata().tolist()) == [3.0, 60.0] for line in lines)
    assert [t.get_text() for t in figure.axes[0].texts] == ["block-B100-D1-A1"]


@pytest.mark.parametrize("path, series", [("configs/paper_fig4_coherence.yaml", 1),
                                          ("configs/paper_fig5_coherence.yaml", 1),
                                          ("configs/paper_fig7_coherence.yaml", 2),
                                          ("configs/reliability_nested_vs_crossed.yaml", 2)])
def test_the_papers_series_stay_lines(path, series):
    summary = fake_summary(path)
    for _, part in summary.groupby("test"):
        lines, points = design_series(part, load_config(path).figure.x)
        assert len(lines) == series and points.empty
    config = load_config(path)
    figure, _ = draw_summary(summary, config.figure, "power", "t")
    assert len(drawn_lines(figure)) == 2 * series and len(figure.axes[0].texts) == 0


# ---------------------------------------------------------------------------------------------------------------
# The analysed study


@pytest.mark.slow  # a second or more: the fast tier stays under a minute
def test_analysed_study_table_is_in_rank_order_unless_an_order_is_given():
    from simdesign.core.designs import BlockDesign
    from simdesign.model import load_model
    from simdesign.realdata.analyse import analyse

    frame = load_model("coherence").sample(BlockDesign(12, 3, 2), np.random.default_rng(5)).to_frame()
    frame = frame.drop(columns="block")
    result = analyse(frame, tests=["ttest_doc"], seed=3, bootstrap=200)
    means = frame.groupby("system")["score"].mean()
    assert result.systems["system"].tolist() == means.sort_values(ascending=False).index.tolist()
    np.testing.assert_allclose(result.systems.set_index("system")["mean"], means.reindex(result.systems["system"]))
    given = sorted(means.index)
    assert analyse(frame, tests=["ttest_doc"], seed=3, bootstrap=200, systems=given).systems["system"].tolist() == given
    text = repr(result)
    assert "\n" not in text and len(text) < 200 and f"{len(means)} systems" in text
    assert "<table" in result._repr_html_()
    # Rank data: the lowest mean rank (1 = best) first
    ranks = frame.assign(rank=frame.groupby(["annotator", "document"])["score"].rank(method="first",
                                                                                     ascending=False))
    ranked = analyse(ranks.drop(columns="score"), tests=["ttest_doc"], seed=3, bootstrap=200)
    assert ranked.systems["mean"].is_monotonic_increasing


def test_a_ladder_of_overlap_designs_is_two_series_by_their_own_fields():
    # configs/replication.yaml: unique documents grow with 3 annotators, then annotators grow with 30 unique
    # documents each; no summary column other than the design's own fields holds either series together
    config = load_config("configs/replication.yaml")
    rows = pd.DataFrame([{**d.columns(), "judgements": d.judgements(5)} for d in config.designs])
    assert design_series(rows, "judgements")[0] == []  # without the design objects: all points
    lines, points = design_series(rows, "judgements", {d.label: d for d in config.designs})
    assert [line["design"].tolist() for line in lines] == [
        ["overlap-S10-U0-A3", "overlap-S10-U3-A3", "overlap-S10-U10-A3", "overlap-S10-U30-A3"],
        ["overlap-S10-U30-A3", "overlap-S10-U30-A6", "overlap-S10-U30-A12", "overlap-S10-U30-A24"]]
    assert points.empty


def test_a_grid_of_designs_is_not_drawn_as_a_mesh():
    # nested and crossed blocks of 5 documents at two sizes each: two lines along the blocks, not four
    designs = [simdesign.BlockDesign(b, 5, a) for b, a in ((10, 1), (20, 1), (10, 3), (20, 3))]
    rows = pd.DataFrame([{**d.columns(), "judgements": d.judgements(5)} for d in designs])
    lines, points = design_series(rows, "annotators", {d.label: d for d in designs})
    assert sorted(line["design"].tolist() for line in lines) == [
        ["block-B10-D5-A1", "block-B20-D5-A1"], ["block-B10-D5-A3", "block-B20-D5-A3"]]
    assert points.empty


# ---------------------------------------------------------------------------------------------------------------
# Cells where every test failed (issue 39): no rate, in the table, the summary's notes and the figure


@pytest.fixture(scope="module")
def one_block():
    # art_block on one block has no statistic: every one of its tests is 'degenerate'
    config = {"name": "one-block", "model": "coherence", "effect": "zero",
              "designs": [{"kind": "block", "blocks": [1, 4, 20], "docs_per_block": [20, 5, 1],
                           "annotators_per_block": 2}],
              "tests": ["ttest_doc", "art_block"], "trials": 6, "seed": 1}
    return simdesign.simulate(config, jobs=1, progress=False)


def test_a_cell_whose_every_test_failed_says_so_in_table_and_summary(one_block):
    table = one_block.table("type1")
    assert table.loc["block-B1-D20-A2", "art_block"] == "degenerate (every test)"
    assert table.loc["block-B4-D5-A2", "art_block"].startswith("0.")  # a real rate where the test runs
    assert table.loc["block-B1-D20-A2", "ttest_doc"].startswith("0.")
    assert one_block.table("familywise").loc["block-B1-D20-A2", "art_block"] == "degenerate (every test)"
    summary = one_block.summary()
    notes = summary.set_index(["design", "test", "estimand"])["note"]
    assert notes[("block-B1-D20-A2", "art_block", "type1")].startswith("every test degenerate (60 tests)")
    assert notes[("block-B1-D20-A2", "art_block", "familywise")].endswith("share of trials with at least one rejection")
    assert notes[("block-B1-D20-A2", "art_block", "failure_rate")] == "degenerate: 60"  # the failure report's form
    assert notes[("block-B4-D5-A2", "art_block", "type1")] == ""
    assert one_block.table("failure_rate").loc["block-B1-D20-A2", "art_block"].startswith("1.000 [")


def test_a_cell_whose_every_test_failed_is_not_drawn_or_joined(one_block):
    figure, notes = draw_summary(one_block.summary(), one_block.config.figure, "type1", "t")
    art = [line for line in drawn_lines(figure) if line.get_label() == "art_block"]
    assert len(art) == 1
    rates = np.asarray(art[0].get_ydata(), float)
    assert np.isnan(rates[0]) and np.isfinite(rates[1:]).all()  # a gap, not a point at 0 joined to the next
    assert any("block-B1-D20-A2 / art_block (degenerate)" in note for note in notes)
    assert "not drawn, every test failed: block-B1-D20-A2 / art_block" in figure.axes[0].get_title()


def test_some_failed_tests_are_counted_in_the_cell():
    from simdesign.studies.rates.views import cell_texts

    rows = pd.DataFrame({"test": ["t", "t"], "estimand": ["type1", "type1"], "rate": [0.05, 0.0],
                         "ci_low": [0.04, 0.0], "ci_high": [0.06, 0.1], "n_failed": [3, 20],
                         "note": ["3 of 200 tests failed (error: 3; no p-value)",
                                  "every test failed (error: 20): no p-value, so the rate is not an estimate"]})
    assert cell_texts(rows) == ["0.050 [0.040, 0.060] (3 failed)", "failed (every test)"]
