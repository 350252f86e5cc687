"""Every result speaks one protocol (issue 40): summary() a DataFrame, table() a readable one, plot(path) the files
written (or NoFigureError naming the class), save(dir) a dict of the paths written, a short repr, an HTML repr.

The classes come from ``Result.__subclasses__()`` (recursively, after importing every module of the package), so a
new result class without an example below fails :func:`test_every_result_class_has_an_example`.
"""
from __future__ import annotations

import functools
import importlib
import pkgutil
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import simdesign
from simdesign.core.results import LegacyTable, NoFigureError, Result

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
RATES = {"name": "proto", "model": "coherence", "effect": "zero", "tests": ["ttest_doc"], "trials": 4, "seed": 2,
         "designs": [{"kind": "block", "blocks": 4, "docs_per_block": 1, "annotators_per_block": 3}]}
METRIC = {"name": "mv", "model": "coherence", "population": {"kind": "normal"},
          "metric": {"summary_correlation": 0.5, "system_correlation": 0.8}, "systems": [5], "documents": [10],
          "methods": ["pearson"], "trials": 3, "bootstrap_resamples": 20, "permutation_resamples": 20, "seed": 3}
PLAN = {"name": "proto-plan", "model": "coherence", "effect": "fitted", "tests": ["ttest_doc"], "alpha": 0.05,
        "target_power": 0.5, "cost": {"pay_per_hour": 12.0, "per_annotator": 0.0}, "seed": 11, "max_type1": None,
        "search": {"designs": [{"kind": "block", "blocks": [4], "docs_per_block": 5, "annotators_per_block": 1}]},
        "screen_trials": 10, "max_trials": 10, "confirm_trials": 10}
JUDGE_PLAN = {"name": "jp", "model": "coherence", "effect": "fitted", "alpha": 0.05, "target_power": 0.8,
              "cost": {"pay_per_hour": 12.0, "seconds_per_judgement": 20, "per_annotator": 5},
              "search": {"designs": [{"kind": "block", "blocks": [2], "docs_per_block": 5, "annotators_per_block": 2}]},
              "judge_plan": {"judge": {"preset": "unbiased", "cost_per_call": 0.01}, "documents": 20,
                             "select": ["random"], "targets": ["BART - onmt_pg"], "bootstrap_resamples": 20},
              "screen_trials": 4, "max_trials": 4, "confirm_trials": 4, "confirm_candidates": 1, "seed": 5}
ORIGINAL = {"kind": "overlap", "shared_docs": 3, "unique_docs_per_annotator": 4, "annotators": 3}
REPLICATION_PLAN = {"name": "rp", "model": "coherence", "effect": "fitted", "tests": ["ttest_doc"], "alpha": 0.05,
                    "cost": {"pay_per_hour": 12.0, "seconds_per_judgement": 20, "per_annotator": 5},
                    "search": {"designs": [ORIGINAL]}, "screen_trials": 4, "max_trials": 4, "confirm_trials": 4,
                    "seed": 4, "max_type1": None,
                    "replication": {"original": ORIGINAL, "target": "r", "at_least": 0.5, "probability": 0.5}}


def _study_frame() -> pd.DataFrame:
    """A small Likert study: 4 blocks of 2 documents and 2 annotators, 3 systems."""
    rng = np.random.default_rng(0)
    rows = [{"annotator": f"a{block}{a}", "document": f"d{block}{d}", "system": system,
             "score": int(rng.integers(1, 6))}
            for block in range(4) for a in range(2) for d in range(2) for system in ("s1", "s2", "s3")]
    return pd.DataFrame(rows)


def _model_frame() -> pd.DataFrame:
    """A small study simulated from the coherence preset (its systems), for a predictive check."""
    model = simdesign.load_model("coherence")
    return model.sample(simdesign.BlockDesign(4, 3, 2), np.random.default_rng(3)).to_frame()


# One small example per result class: class name -> a function of a temporary folder returning the result.
EXAMPLES_BY_CLASS = {
    "SimulationResult": lambda tmp: simdesign.simulate(RATES, jobs=1, progress=False),
    "StudyResult": lambda tmp: simdesign.simulate(METRIC, out_dir=tmp / "metric", jobs=1, progress=False),
    "PlanOutcome": lambda tmp: simdesign.plan(PLAN, jobs=1, progress=False),
    "JudgePlanOutcome": lambda tmp: simdesign.plan(JUDGE_PLAN, progress=False),
    "ReplicationPlanOutcome": lambda tmp: simdesign.plan(REPLICATION_PLAN, jobs=1, progress=False),
    "Reliability": lambda tmp: simdesign.reliability(_study_frame()),
    "FitOutcome": lambda tmp: simdesign.fit_model(_study_frame(), structure="intercepts"),
    "ModelCheck": lambda tmp: simdesign.check_model("coherence", _model_frame(), trials=5, progress=False),
    "Analysis": lambda tmp: simdesign.analyse(_study_frame(), tests=["ttest_doc"], bootstrap=100),
    "PairwiseAnalysis": lambda tmp: simdesign.analyse(EXAMPLES / "pairwise_study.csv", bootstrap=100),
    "JudgeAnalysis": lambda tmp: simdesign.analyse(EXAMPLES / "judge_human.csv", bootstrap=100),
    "JudgePairwiseAnalysis": lambda tmp: simdesign.analyse(EXAMPLES / "judge_pairwise.csv", bootstrap=100),
    "MetricAnalysis": lambda tmp: simdesign.analyse_metrics(EXAMPLES / "metric_scores.csv", resamples=100,
                                                            levels=("system",), methods=("pearson",)),
}


@functools.lru_cache(maxsize=None)
def result_classes() -> tuple[type, ...]:
    """Every subclass of Result (recursively), after importing every module of the package."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for module in pkgutil.walk_packages(simdesign.__path__, "simdesign."):
            if module.name.endswith("__main__"):  # runs the command line
                continue
            try:
                importlib.import_module(module.name)
            except ImportError:  # an optional dependency (the explorer's, R's) that is not installed
                pass
    found, stack = [], [Result]
    while stack:
        for subclass in stack.pop().__subclasses__():
            if subclass not in found and subclass.__module__.startswith("simdesign."):
                found.append(subclass)
                stack.append(subclass)
    return tuple(found)


def test_every_result_class_has_an_example():
    names = {cls.__name__ for cls in result_classes()}
    assert names - set(EXAMPLES_BY_CLASS) == set(), "add an example of each new result class to EXAMPLES_BY_CLASS"
    assert set(EXAMPLES_BY_CLASS) - names == set(), "an example of a class that no longer derives from Result"


def test_the_result_base_is_exported():
    assert simdesign.Result is Result
    assert simdesign.NoFigureError is NoFigureError


@pytest.mark.parametrize("name", sorted(EXAMPLES_BY_CLASS))
def test_each_result_keeps_the_protocol(name, tmp_path):
    import matplotlib
    matplotlib.use("Agg")  # the plan and study figures are drawn by modules that use pyplot

    result = EXAMPLES_BY_CLASS[name](tmp_path)
    assert type(result).__name__ == name and isinstance(result, Result)
    summary = result.summary()
    assert isinstance(summary, pd.DataFrame) and not summary.empty
    assert isinstance(result.table(), pd.DataFrame)
    text = repr(result)
    assert "\n" not in text and len(text) < 200 and text.startswith(f"<{name}"), text
    assert isinstance(result._repr_html_(), str)
    saved = result.save(tmp_path / "saved")
    assert isinstance(saved, dict) and saved
    for key, path in saved.items():
        assert isinstance(path, Path) and path.is_file(), (key, path)
        assert path.resolve().is_relative_to((tmp_path / "saved").resolve()), (key, path)
    try:
        written = result.plot(tmp_path / "figure" / "drawn")
    except NoFigureError as error:
        assert name in str(error)
        return
    assert written and all(Path(path).is_file() for path in written)


def test_a_result_without_a_figure_says_so_naming_its_class():
    with pytest.raises(NoFigureError, match="Reliability has no figure"):
        simdesign.reliability(_study_frame()).plot()


def test_the_old_table_attribute_still_reads_as_the_rows():
    """``result.table`` was a DataFrame attribute of an analysis and a plan: it still is (the rows), and called it
    is the readable table."""
    analysis = EXAMPLES_BY_CLASS["Analysis"](None)
    assert isinstance(analysis.table, LegacyTable)
    with pytest.warns(FutureWarning, match="result.table is a method"):
        assert analysis.table["system"].tolist() == analysis.systems["system"].tolist()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # calling it is the new spelling: no warning
        pd.testing.assert_frame_equal(analysis.table(), Result.table(analysis))
    with pytest.warns(FutureWarning):
        assert type(analysis.table[analysis.table["n"] > 0]) is pd.DataFrame
    assert "judgements" in analysis.report() and str(analysis) == analysis.report()
