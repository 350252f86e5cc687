"""Issue 39, section 3: hostile inputs that reached the simulation, config and analysis code.

Each case was a wrong answer, a memory blow-up or a traceback; each is now refused where the config or
option is read (exit code 2, a message naming the field and the allowed values, nothing written), or
answered correctly. Every test here is fast: nothing simulates more than a few trials.
"""
from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest
import yaml

from simdesign.cli import main


def _run_config(tmp_path, mapping: dict, *options: str) -> int:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(mapping))
    return main(["run", str(path), "--out", str(tmp_path / "out"), "--jobs", "1", "--quiet", *options])


def _refused_quickly(code: int, err: str, fragments, started: float, written) -> None:
    assert code == 2, err
    for fragment in fragments:
        assert fragment in err, f"{fragment!r} not in {err!r}"
    assert "Traceback" not in err
    assert not written.exists(), "files were written before the input was refused"
    assert time.perf_counter() - started < 5  # refused from the sizes, before anything is built


# ---------------------------------------------------------------------------------- 1. ceilings before any work
def test_draw_design_refuses_a_design_the_runner_would_refuse(tmp_path, capsys):
    started = time.perf_counter()
    code = main(["draw-design", "--kind", "block", "--blocks", "100000000", "--docs-per-block", "5",
                 "--annotators-per-block", "3", "--out", str(tmp_path / "design.png")])
    _refused_quickly(code, capsys.readouterr().err, ["'block-B100000000-D5-A3' holds 7,500,000,000 judgements",
                                                     "the ceiling is 10,000,000"], started, tmp_path / "design.png")


@pytest.mark.parametrize("change, fragments", [
    ({"items": {"structure": "single", "items": 100_000_000}, "workers": {"workers": 100_000_000, "per_item": 6}},
     ["holds 800,000,000 judgements", "'items.items' 100,000,000", "'workers.workers' 100,000,000",
      "the ceiling is 10,000,000"]),
    ({"items": {"structure": "single", "items": 20}, "workers": {"workers": 12, "per_item": 6},
      "grid": {"workers": [12, 10_000_000]}},
     ["(grid cell workers1e+07) assigns 20 items", "the ceiling is 10,000,000"]),
])
def test_a_crowd_study_too_large_to_hold_is_refused_when_read(tmp_path, capsys, change, fragments):
    started = time.perf_counter()
    code = _run_config(tmp_path, {"study": "crowd", "name": "huge", "ks": [1, 3], "trials": 2, **change})
    _refused_quickly(code, capsys.readouterr().err, fragments, started, tmp_path / "out")


@pytest.mark.parametrize("change, fragments", [
    ({"documents": 10_000_000}, ["510,000,000 scores per simulated year", "'documents' 10,000,000",
                                 "the ceiling is 10,000,000"]),
    ({"documents": 20, "machines": {"count": 2000}}, ["(system pair, document) cells", "the ceiling is 10,000,000"]),
    ({"bootstrap_resamples": 10**9}, ["'bootstrap_resamples' field asks for 1,000,000,000", "1,000,000"]),
])
def test_a_tac_study_too_large_to_hold_is_refused_when_read(tmp_path, capsys, change, fragments):
    started = time.perf_counter()
    code = _run_config(tmp_path, {"study": "tac", "name": "huge", "trials": 2, **change})
    _refused_quickly(code, capsys.readouterr().err, fragments, started, tmp_path / "out")


def test_analyse_metrics_refuses_resamples_beyond_the_runners_ceiling(tmp_path, capsys):
    started = time.perf_counter()
    code = main(["analyse-metrics", "examples/metric_scores.csv", "--resamples", "1000000000",
                 "--out", str(tmp_path / "out")])
    _refused_quickly(code, capsys.readouterr().err, ["--resamples asks for 1,000,000,000", "the ceiling is "
                                                     "1,000,000"], started, tmp_path / "out")


def _metric_table(systems: int = 5, inputs: int = 6, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    quality = rng.normal(size=(systems, inputs))
    return pd.DataFrame({"system": np.repeat([f"s{i}" for i in range(systems)], inputs),
                         "input": np.tile([f"i{j}" for j in range(inputs)], systems),
                         "m1": (quality + rng.normal(size=quality.shape)).ravel(),
                         "m2": (quality + rng.normal(size=quality.shape)).ravel(), "human": quality.ravel()})


def test_a_large_metric_analysis_shows_its_progress_and_a_small_one_does_not(capsys, monkeypatch):
    import simdesign
    from simdesign.realdata import metric_analysis

    simdesign.analyse_metrics(_metric_table(), levels=["system"], methods=["pearson"], resamples=20)
    assert "steps" not in capsys.readouterr().err
    monkeypatch.setattr(metric_analysis, "PROGRESS_FROM", 1)  # as if the table were large
    simdesign.analyse_metrics(_metric_table(), levels=["system"], methods=["pearson"], resamples=20)
    # 6 bootstraps (a scheme's for each metric) and 3 permutation tests (one per scheme) of the pair of metrics
    assert "analyse-metrics (5 systems x 6 inputs): 9/9 steps (100%)" in capsys.readouterr().err


# ------------------------------------------------------------------------ 3. criteria rate studies from a config
def docs_criteria_example() -> dict:
    """The criteria example of docs/designs.md ("Several criteria per study"), as the page shows it."""
    from pathlib import Path
    import re

    page = (Path(__file__).resolve().parents[1] / "docs" / "designs.md").read_text()
    section = page.split("## Several criteria per study", 1)[1]
    return yaml.safe_load(re.search(r"```yaml\n(.*?)```", section, re.DOTALL).group(1))


def _small_criteria_config(**extra) -> dict:
    """The docs' example with a small design and its fast test, a few trials."""
    return {**docs_criteria_example(), "name": "criteria", "trials": 2, "seed": 1, "tests": ["ttest_doc"],
            "designs": [{"kind": "pool", "docs": 6, "annotators": 4, "judgements_per_output": 2}], **extra}


@pytest.mark.parametrize("extra, kind", [({}, "rates"), ({"study": "rates"}, "rates")])
def test_a_criteria_list_is_a_rate_study(extra, kind):
    from simdesign.studies.kinds import study_kind

    assert study_kind({**docs_criteria_example(), **extra}) == kind
    # a crowd study's criteria (a mapping of criterion name -> settings) still tell a crowd study
    assert study_kind({"name": "c", "criteria": {"a": {"item_sd": 1.0}}}) == "crowd"
    with pytest.raises(Exception, match=r"says 'study: rates' but has keys of a crowd study \(\['workers'\]\)"):
        study_kind({**docs_criteria_example(), "study": "rates", "workers": {"workers": 4}})


@pytest.mark.slow  # 1.2 s, mostly the figure `run` draws; the fast tier routes criteria through simulate below
def test_a_criteria_config_runs_from_the_command_line_and_resumes(tmp_path, capsys):
    import simdesign

    assert _run_config(tmp_path, _small_criteria_config()) == 0, capsys.readouterr().err
    summary = pd.read_csv(tmp_path / "out" / "summary.csv")
    assert set(summary["criterion"]) == {"coherence", "repetition"} and set(summary["trials"]) == {2}
    # resumed: the stored 2 trials kept, one more computed (the store's fingerprint matched the config's)
    resumed = simdesign.simulate(str(tmp_path / "config.yaml"), out_dir=tmp_path / "out", trials=3, jobs=1,
                                 progress=False)
    assert set(resumed.summary()["trials"]) == {3}


@pytest.mark.parametrize("as_path", [False, True], ids=["dict", "path"])
def test_a_criteria_config_runs_through_simulate(tmp_path, as_path):
    import simdesign

    config = _small_criteria_config()
    if as_path:
        (tmp_path / "criteria.yaml").write_text(yaml.safe_dump(config))
        config = str(tmp_path / "criteria.yaml")
    result = simdesign.simulate(config, out_dir=tmp_path / "out", jobs=1, progress=False)
    assert set(result.summary()["criterion"]) == {"coherence", "repetition"}
    resumed = simdesign.simulate(config, out_dir=tmp_path / "out", trials=3, jobs=1, progress=False)
    assert set(resumed.summary()["trials"]) == {3}


# ------------------------------------------------------------------------------ 4. tracebacks, misleading words
@pytest.mark.parametrize("values, shown", [(["zero", "zero"], "'zero'"), ([0.5, 0.5], "0.5"), ([1, 1.0], "1.0")])
def test_a_sweep_repeating_a_value_is_refused_when_read(tmp_path, capsys, values, shown):
    """It ran every combination, wrote the summary, then ended in a TypeError in plot_sweep."""
    config = {"name": "sweep", "model": "coherence", "trials": 2, "tests": ["ttest_doc"],
              "designs": [{"kind": "block", "blocks": 4, "docs_per_block": 1, "annotators_per_block": 2}],
              "sweep": {"effect": values}}
    started = time.perf_counter()
    code = _run_config(tmp_path, config)
    _refused_quickly(code, capsys.readouterr().err, [f"'sweep.effect' field lists the value {shown} more than once"],
                     started, tmp_path / "out")


def test_a_constant_human_column_is_refused_naming_it(tmp_path, capsys):
    """It was a KeyError from the summary's table: every correlation with a constant column is undefined."""
    table = _metric_table().assign(human=3.0)
    table.to_csv(tmp_path / "scores.csv", index=False)
    code = main(["analyse-metrics", str(tmp_path / "scores.csv"), "--resamples", "20", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and not (tmp_path / "out").exists()
    assert "The human score column 'human' holds the same value (3) on every output" in err
    assert "correlation with any metric is undefined" in err


def test_a_constant_metric_is_shown_undefined_not_a_keyerror():
    import simdesign

    result = simdesign.analyse_metrics(_metric_table()[["system", "input", "m1", "human"]].assign(m1=1.0),
                                       levels=["system"], methods=["pearson"], resamples=20)
    report = result.report()
    assert "the 'm1' scores are all equal: its correlations are undefined" in report
    assert len(result.wide()) == 1 and np.isnan(result.wide()["estimate"].iloc[0])


SYSTEMS = ["__REFERENCE__", "abssentrw", "BART", "onmt_pg", "seneca"]


def _rank_rows() -> list[list]:
    """3 annotators x 2 documents, each ranking the 5 systems 1..5 (a genuine rank table)."""
    return [[f"a{a}", f"d{d}", system, (s + a + d) % 5 + 1] for a in range(3) for d in range(2)
            for s, system in enumerate(SYSTEMS)]


def _first_ranking(rows: list[list], ranks) -> list[list]:
    for row, rank in zip(rows, ranks):
        row[3] = rank
    return rows


@pytest.mark.parametrize("ranks, first_problem", [
    ([1, 1, 3, 4, 5], "gives rank 1 twice"),              # a tie
    ([1, 2, 3, 4, 6], "outside 1..5"),                    # a gap
    ([-1, 2, 3, 4, 5], "outside 1..5"),                   # a negative rank
    ([0, 1, 2, 3, 5], "mixes bases"),                     # 0 and S in one ranking
    ([0, 1, 2, 3, 4], "mixes bases"),                     # one ranking 0-based among 1-based ones
])
@pytest.mark.parametrize("command", ["reliability", "analyse"])
def test_a_genuine_rank_table_is_not_called_likert_scores(tmp_path, capsys, ranks, first_problem, command):
    """Every rank-table error added "looks like Likert scores rather than ranks", false on these tables."""
    path = tmp_path / "ranks.csv"
    pd.DataFrame(_first_ranking(_rank_rows(), ranks), columns=["annotator", "document", "system", "rank"]).to_csv(
        path, index=False)
    argv = [command, str(path)] + (["--tests", "ttest_doc", "--out", str(tmp_path / "out")] if command == "analyse"
                                   else [])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert first_problem in err and "Traceback" not in err
    assert "looks like Likert" not in err


@pytest.mark.slow  # 1.5 s: two fits of a small table
@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_fit_writes_a_model_file_load_model_reads_back(tmp_path, capsys, suffix):
    """A .json name gets JSON (load_model parses .json as JSON; it was YAML under that name)."""
    from simdesign.model import load_model

    table = tmp_path / "judgements.csv"
    rows = [f"a{a},d{d},{system},{(a + 2 * d + 3 * s) % 7 + 1}" for a in range(3) for d in range(2)
            for s, system in enumerate(SYSTEMS)]
    table.write_text("\n".join(["annotator,document,system,score", *rows]) + "\n")
    out = tmp_path / f"model{suffix}"
    assert main(["fit", str(table), "--out", str(out), "--structure", "intercepts"]) == 0, capsys.readouterr().err
    assert sorted(load_model(out).systems) == sorted(SYSTEMS)


def test_fit_crowd_refuses_a_table_of_identical_scores(tmp_path, capsys):
    """It was fitted without a word: item_sd 5e-12 and leniency_sd 4e-11 printed as config values."""
    path = tmp_path / "crowd.csv"
    rows = [f"i{item},w{worker},3" for item in range(10) for worker in range(6)]
    path.write_text("\n".join(["item,worker,score", *rows]) + "\n")
    code = main(["fit-crowd", str(path), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and not (tmp_path / "out").exists()
    assert "Every score in the crowd pilot table is 3 (60 judgements)" in err and "cannot be estimated" in err


# ------------------------------------------------------------------------------------ 2. replication plans
def _replication_plan(change) -> dict:
    from pathlib import Path
    import copy

    plan = yaml.safe_load((Path(__file__).resolve().parents[1] / "configs" / "plan_replication.yaml").read_text())
    plan = copy.deepcopy(plan)
    change(plan)
    return plan


@pytest.mark.parametrize("change, fragments, absent", [
    # a partial original made every r undefined: every candidate "probability 0.000" after 93 s
    (lambda p: p["replication"]["original"].update(coverage=0.5),
     ["'replication.original' design overlap-S10-U30-A3-cov0.5 has partial coverage",
      "the replication estimands compare complete studies"], []),
    (lambda p: p["search"]["designs"][0].update(coverage=0.5), ["'search' designs", "have partial coverage"], []),
    # the budget silently dropped the candidates over it while the recommendation spoke of the probability
    (lambda p: p.update(budget=500), ["takes one goal: 'replication.probability' (0.6", "'budget' (500",
                                      "not both"], []),
    (lambda p: p["replication"].update(probability=0), ["'replication.probability' field must be a number "
                                                        "strictly between 0 and 1; got 0"], ["target_power"]),
    (lambda p: p["replication"].update(probability=1), ["strictly between 0 and 1; got 1"], ["target_power"]),
], ids=["partial-original", "partial-search", "budget-beside-probability", "probability-0", "probability-1"])
def test_a_replication_plan_that_cannot_answer_is_refused_when_read(tmp_path, capsys, change, fragments, absent):
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(_replication_plan(change)))
    started = time.perf_counter()
    code = main(["plan", str(path), "--out", str(tmp_path / "out"), "--jobs", "1"])
    err = capsys.readouterr().err
    _refused_quickly(code, err, fragments, started, tmp_path / "out")
    for word in absent:
        assert word not in err, f"{word!r} named but the config has no such field: {err!r}"


def test_a_constant_metric_has_no_bootstrap_interval_from_rounding_noise():
    """Resampled inputs make a constant metric's system means weighted sums of equal values, equal only up to
    rounding: their correlation was noise, shown as a -0.000..0.000 interval beside an undefined estimate."""
    import simdesign

    result = simdesign.analyse_metrics(_metric_table().assign(m1=1.0), levels=["system"], methods=["pearson"],
                                       resamples=50)
    rows = result.correlations[result.correlations["metric"] == "m1"]
    assert rows["low"].isna().all() and rows["high"].isna().all()
    assert np.isfinite(result.correlations.loc[result.correlations["metric"] == "m2", "low"]).all()
