"""Pairwise judge verdicts beside human verdicts (issue 43, part 4): each pair's win rate by PPI.

Fast: the reduction to PPI units and every refused table. Slow: the PPI and PPI++ win rates equal ppi-python's
on the unclustered reduction, the example file is what its script writes, and ``simdesign analyse`` end to
end on it (and through ``simdesign.analyse``).
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simdesign.cli import main
from simdesign.core.errors import DataError
from simdesign.realdata.judge_pairwise import (OUTPUTS, analyse_judge_pairwise, check_judge_pairwise, pair_units,
                                               reduction)
from tests.oracles import ppi_py

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "judge_pairwise.csv"


def _table(**changes) -> pd.DataFrame:
    table = pd.DataFrame({"document": ["d1", "d1", "d2", "d2", "d3", "d3"],
                          "system_a": ["x", "z", "y", "x", "x", "y"], "system_b": ["y", "x", "x", "z", "y", "z"],
                          "judge_preferred": ["x", "x", "tie", "z", "y", "y"],
                          "preferred": ["x", "z", "", "", "y", "z"]})
    return table.assign(**changes)


def test_units_are_oriented_to_the_first_system_and_cells_averaged():
    units = pair_units(*check_judge_pairwise(_table()))
    assert units["pair"].tolist() == ["x vs y", "x vs z", "x vs y", "x vs z", "x vs y", "y vs z"]
    assert units["judge"].tolist() == [1.0, 1.0, 0.5, 0.0, 0.0, 1.0]
    np.testing.assert_array_equal(units["human"], [1.0, 0.0, np.nan, np.nan, 0.0, 0.0])
    doubled = pd.concat([units, units.iloc[[0]].assign(judge=0.0, human=np.nan)], ignore_index=True)
    frame = reduction(doubled)  # two comparisons of (x vs y, d1): the judge's verdicts averaged, one label
    cell = frame[(frame["system"] == "x vs y") & (frame["document"] == "d1")]
    assert cell["judge"].tolist() == [0.5] and cell["human"].tolist() == [1.0]


def test_bad_tables_are_refused_saying_what_and_where():
    cases = {"names neither system of its row": _table(judge_preferred=["x", "x", "w", "z", "y", "y"]),
             "no human verdict": _table(preferred=[""] * 6),
             "No human verdict on the pair(s) x vs z": _table(preferred=["x", "", "", "", "y", "z"]),
             "is a tie on every row: a constant judge": _table(judge_preferred=["tie"] * 6),
             "is the system shown first (system_a) on every row": _table(judge_preferred=["x", "z", "y", "x", "x",
                                                                                           "y"])}
    for said, table in cases.items():
        with pytest.raises(DataError, match=r"(?s)" + said.replace("(", r"\(").replace(")", r"\)")) as caught:
            analyse_judge_pairwise(table, bootstrap=100)
        if "neither" in said:
            assert "row(s) 3" in str(caught.value) and "'w'" in str(caught.value)


@pytest.mark.slow
def test_ppi_win_rates_equal_ppi_python_on_the_unclustered_reduction():
    ppi = ppi_py()
    table = pd.read_csv(EXAMPLE, dtype=str, keep_default_na=False)
    result = analyse_judge_pairwise(table.drop(columns="annotator"), bootstrap=100)
    units = pair_units(*check_judge_pairwise(table))
    assert units.groupby(["pair", "document"]).size().max() == 1  # one comparison per cell: no averaging
    summary = result.summary().set_index("pair")
    assert len(summary) == 10
    for pair, rows in units.groupby("pair"):
        labelled = np.isfinite(rows["human"].to_numpy())
        human, judge = rows["human"].to_numpy()[labelled], rows["judge"].to_numpy()[labelled]
        rest = rows["judge"].to_numpy()[~labelled]
        for column, lam in (("ppi", 1), ("ppi_pp", None)):
            expected = float(np.ravel(ppi.ppi_mean_pointestimate(human, judge, rest, lam=lam))[0])
            assert summary.loc[pair, column] == pytest.approx(expected, abs=1e-8), (pair, column)
        assert summary.loc[pair, "human_only"] == pytest.approx(human.mean(), abs=1e-12)
        assert summary.loc[pair, "judge_bias"] == pytest.approx(judge.mean() - human.mean(), abs=1e-12)
    # the test of 'win rate = 0.5' from the estimate and its SE, not ppi_study's test of 'difference = 0'
    estimates = result.estimates.set_index(["target", "estimator", "interval"])
    row = estimates.loc[(summary.index[0], "ppi++", "clustered")]
    from scipy import stats
    assert summary["p_value"].iloc[0] == pytest.approx(2 * stats.norm.sf(abs(row["estimate"] - 0.5)
                                                                         / row["standard_error"]))


@pytest.mark.slow
def test_example_end_to_end(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("make_judge_pairwise", ROOT / "examples" / "make_judge_pairwise.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    written = pd.read_csv(EXAMPLE, dtype=str, keep_default_na=False)
    pd.testing.assert_frame_equal(script.make_table().astype(str).reset_index(drop=True), written)

    assert main(["analyse", str(EXAMPLE), "--bootstrap", "200", "--out", str(tmp_path)]) == 0
    assert "Pairwise judge verdicts beside human verdicts" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(OUTPUTS)
    summary = pd.read_csv(tmp_path / OUTPUTS[0])
    assert len(summary) == 10 and summary["n_human"].sum() == (written["preferred"] != "").sum()
    assert (summary["ppi_pp_low"] < summary["ppi_pp"]).all() and (summary["ppi_pp"] < summary["ppi_pp_high"]).all()
    # few-clusters corrected (10 annotators): wider than the interval ignoring clustering
    assert ((summary["ppi_pp_high"] - summary["ppi_pp_low"])
            > (summary["ppi_pp_independent_high"] - summary["ppi_pp_independent_low"])).all()
    assert summary["effective_n"].gt(0).all() and summary["p_adjusted"].ge(summary["p_value"]).all()

    import simdesign
    again = simdesign.analyse(str(EXAMPLE), bootstrap=200)
    assert np.allclose(again.summary()["ppi_pp"], summary["ppi_pp"])
    assert main(["analyse", str(EXAMPLE), "--method", "likert"]) == 2  # an option that does not apply: refused
