"""Prediction-powered inference for LLM judges beside human annotators (issue 43, parts 2, 4 and 5).

* ``ppi_mean`` equals ppi-python's ``ppi_mean_pointestimate`` / ``ppi_mean_ci`` (the PPI authors' package,
  imported through tests/oracles.py: slow, numba) to 1e-8 on points and 1e-6 on interval ends, for PPI
  (lam = 1) and PPI++ (lam = None), on simulated tables without clustering; so do the independent intervals of
  ``ppi_study``, for systems and for pairs (on the per-document differences);
* ``ipw_ppi_mean`` against a computation written out in plain Python, and unbiased by simulation where
  unweighted PPI is not;
* the cluster bootstrap: without annotators and one score per output it agrees with the independent interval,
  with a few severe annotators it covers where the independent interval does not;
* ``simdesign analyse`` end to end on examples/judge_human.csv (the docs' example), and bad input.
"""
from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simdesign.cli import main
from simdesign.core.errors import ConfigError, DataError
from simdesign.realdata.judge_analysis import OUTPUTS, analyse_judge_table
from simdesign.tables.judge import check_judge_table, is_judge_table, read_judge_table, source_is_judge_table
from simdesign.stats.ppi import effective_human_n, ipw_ppi_mean, judge_study, ppi_lambda, ppi_mean, ppi_study
from tests.oracles import ppi_py

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "judge_human.csv"


def _arrays(seed: int):
    """Human scores of n outputs, the judge's on them and on N others: a judge with its own offset, scale, noise."""
    rng = np.random.default_rng(seed)
    n, rest = int(rng.integers(10, 300)), int(rng.integers(10, 3000))
    quality = rng.normal(size=n + rest)
    human = 3 + quality + rng.normal(0, rng.uniform(0.2, 1.5), n + rest)
    judge = rng.uniform(-2, 5) + rng.uniform(0.3, 3) * quality + rng.normal(0, rng.uniform(0.1, 3), n + rest)
    return human[:n], judge[:n], judge[n:]


def _table(seed: int = 0, systems: int = 3, documents: int = 40, scored: int = 15, annotators: int = 0,
           severity: float = 0.0, per_output: int = 1) -> pd.DataFrame:
    """A judge-plus-human table: humans score every system's output of the first ``scored`` documents."""
    rng = np.random.default_rng(seed)
    quality = rng.normal(size=(systems, documents)) + np.linspace(0.5, 0, systems)[:, None]
    judge = 5 + 2 * quality + rng.normal(0, 0.8, quality.shape)
    bias = rng.normal(0, severity, max(annotators, 1))
    rows = []
    for d in range(documents):
        who = rng.choice(annotators, per_output, replace=False) if annotators else [None] * per_output
        for s in range(systems):
            base = {"system": f"s{s}", "document": f"d{d}", "judge": judge[s, d]}
            if d >= scored:
                rows.append({**base, "human": np.nan, "annotator": None})
                continue
            rows += [{**base, "human": 3 + quality[s, d] + (bias[a] if a is not None else 0) + rng.normal(0, 0.5),
                      "annotator": None if a is None else f"a{a}"} for a in who]
    table = pd.DataFrame(rows)
    return table if annotators else table.drop(columns="annotator")


# ---------------------------------------------------------------------------------------------
# ppi-python as the oracle (slow: importing it compiles numba code)
# ---------------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("lam", [1.0, None])
def test_ppi_mean_equals_ppi_python(seed, lam):
    ppi = ppi_py()
    human, judge_on_human, judge_on_rest = _arrays(seed)
    mine = ppi_mean(human, judge_on_human, judge_on_rest, lam=lam, level=0.9)
    point = ppi.ppi_mean_pointestimate(human, judge_on_human, judge_on_rest, lam=lam)
    low, high = ppi.ppi_mean_ci(human, judge_on_human, judge_on_rest, alpha=0.1, lam=lam)
    assert mine.estimate == pytest.approx(float(np.squeeze(point)), abs=1e-8)
    assert (mine.lower, mine.upper) == pytest.approx((float(np.squeeze(low)), float(np.squeeze(high))), abs=1e-6)
    if lam is None:  # the tuned weight is the one ppi-python's point estimate used: recover it from the estimate
        tuned = mine.lam
        assert 0 <= tuned <= 1
        again = ppi.ppi_mean_pointestimate(human, judge_on_human, judge_on_rest, lam=tuned)
        assert float(np.squeeze(again)) == pytest.approx(mine.estimate, abs=1e-8)


@pytest.mark.slow
def test_the_tuned_weight_is_clipped_to_one_as_ppi_python_clips_it():
    ppi = ppi_py()
    rng = np.random.default_rng(5)
    human = rng.normal(size=200)
    judge_on_human, judge_on_rest = 0.2 * human + rng.normal(0, 0.01, 200), 0.2 * rng.normal(size=2000)
    assert ppi_lambda(human, judge_on_human, judge_on_rest) == 1.0  # a judge on a 5x narrower scale
    low, high = ppi.ppi_mean_ci(human, judge_on_human, judge_on_rest, alpha=0.05, lam=None)
    mine = ppi_mean(human, judge_on_human, judge_on_rest)
    assert (mine.lower, mine.upper) == pytest.approx((float(low[0]), float(high[0])), abs=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3))
def test_the_studys_independent_intervals_equal_ppi_python_on_its_units(seed):
    """Without clustering, every system's PPI and PPI++ rows are ppi-python's on its human scores and the
    judge's scores of its other outputs; every pair's on the per-document differences."""
    ppi = ppi_py()
    table = _table(seed, systems=3, documents=60, scored=20 + seed)
    rows = ppi_study(judge_study(table), np.random.default_rng(seed), resamples=100)
    rows = rows[rows["interval"] == "independent"].set_index(["target", "estimator"])
    outputs = table.pivot(index="document", columns="system", values="judge")
    humans = table.pivot(index="document", columns="system", values="human")
    units = {s: (humans[s].dropna(), outputs[s][humans[s].notna()], outputs[s][humans[s].isna()])
             for s in ("s0", "s1", "s2")}
    units["s0 - s2"] = ((humans["s0"] - humans["s2"]).dropna(), (outputs["s0"] - outputs["s2"])[humans["s0"].notna()],
                        (outputs["s0"] - outputs["s2"])[humans["s0"].isna()])
    for target, (human, judged, rest) in units.items():
        for estimator, lam in (("ppi", 1.0), ("ppi++", None)):
            row = rows.loc[(target, estimator)]
            args = (human.to_numpy(), judged.to_numpy(), rest.to_numpy())
            assert row["estimate"] == pytest.approx(float(np.squeeze(ppi.ppi_mean_pointestimate(*args, lam=lam))),
                                                    abs=1e-8)
            low, high = ppi.ppi_mean_ci(*args, alpha=0.05, lam=lam)
            assert (row["low"], row["high"]) == pytest.approx((float(low[0]), float(high[0])), abs=1e-6)


# ---------------------------------------------------------------------------------------------
# Inverse-probability-weighted PPI
# ---------------------------------------------------------------------------------------------

def _ipw_by_hand(human, judge, probability, lam, level=0.95):
    """Horvitz-Thompson PPI written out in plain Python: (estimate, lower, upper, lam)."""
    terms_human = [(h / p if h == h else 0.0) for h, p in zip(human, probability)]
    terms_judge = [j * (1 - (1 / p if h == h else 0.0)) for h, j, p in zip(human, judge, probability)]
    if lam is None:  # minimise var(terms_human + lam * terms_judge); the ratio is the same with either divisor
        lam = -statistics.covariance(terms_human, terms_judge) / statistics.variance(terms_judge)
        lam = min(1.0, max(0.0, lam))
    psi = [a + lam * b for a, b in zip(terms_human, terms_judge)]
    estimate = math.fsum(psi) / len(psi)
    error = statistics.pstdev(psi) / math.sqrt(len(psi))
    z = statistics.NormalDist().inv_cdf(1 - (1 - level) / 2)
    return estimate, estimate - z * error, estimate + z * error, lam


@pytest.mark.parametrize("lam", [1.0, 0.4, None])
def test_ipw_ppi_equals_a_computation_by_hand(lam):
    rng = np.random.default_rng(3)
    judge = rng.normal(size=400)
    probability = np.clip(0.05 + 0.4 * np.abs(rng.normal(size=400)), 0.05, 1.0)
    human = np.where(rng.random(400) < probability, 1 + judge + rng.normal(0, 0.5, 400), np.nan)
    mine = ipw_ppi_mean(human, judge, probability, lam=lam)
    estimate, low, high, used = _ipw_by_hand(list(human), list(judge), list(probability), lam)
    assert (mine.estimate, mine.lower, mine.upper, mine.lam) == pytest.approx((estimate, low, high, used), abs=1e-10)
    assert mine.n_labelled == int(np.isfinite(human).sum())


@pytest.mark.slow  # 400 simulated studies, a tenth of a second
def test_ipw_ppi_is_unbiased_where_the_judge_is_least_certain_and_unweighted_ppi_is_not():
    """Humans score more often where the judge is unsure, which is where it errs upwards here: PPI treating the
    scored outputs as a random sample is biased; the weighted estimate is not (mean over 400 studies)."""
    rng = np.random.default_rng(11)
    ipw, plain = [], []
    for _ in range(400):
        quality = rng.normal(size=600)
        uncertainty = rng.random(600)
        judge = quality + 1.5 * uncertainty * rng.random(600)  # an unsure judge overrates
        probability = 0.05 + 0.5 * uncertainty
        sent = rng.random(600) < probability
        human = np.where(sent, quality, np.nan)
        ipw.append(ipw_ppi_mean(human, judge, probability).estimate)
        plain.append(ppi_mean(quality[sent], judge[sent], judge[~sent], lam=1.0).estimate)
    error = np.std(ipw) / np.sqrt(len(ipw))
    assert abs(np.mean(ipw)) < 4 * error  # the human mean is 0
    assert np.mean(plain) < -0.1 and abs(np.mean(plain)) > 10 * error  # the scored outputs are the overrated ones


def test_ipw_ppi_refuses_a_zero_probability_and_mismatched_lengths():
    with pytest.raises(ValueError, match=r"probability must be in \(0, 1\]"):
        ipw_ppi_mean([1.0, np.nan, 2.0], [1.0, 2.0, 3.0], [0.5, 0.0, 0.5])
    with pytest.raises(ValueError, match="as long"):
        ipw_ppi_mean([1.0, 2.0], [1.0, 2.0, 3.0], [0.5, 0.5, 0.5])


# ---------------------------------------------------------------------------------------------
# The study: stratified estimates, clustered and independent intervals
# ---------------------------------------------------------------------------------------------

def test_the_study_reports_every_estimator_with_both_intervals_and_the_effective_n():
    rows = ppi_study(judge_study(_table(1)), np.random.default_rng(0), resamples=100)
    assert sorted(rows["target"].unique()) == ["s0", "s0 - s1", "s0 - s2", "s1", "s1 - s2", "s2"]
    assert len(rows) == 6 * 5 * 2 and (rows["status"] == "ok").all()
    tuned = rows[(rows["estimator"] == "ppi++")].set_index(["target", "interval"])
    human = rows[(rows["estimator"] == "human_only")].set_index(["target", "interval"])
    for key, row in tuned.iterrows():
        assert row["effective_n"] == pytest.approx(
            effective_human_n(row["n_human"], human.loc[key, "standard_error"] ** 2, row["standard_error"] ** 2))
    # The human-only estimate is the mean of the human scores; the judge-only one the judge's mean
    table = _table(1)
    s0 = rows[(rows["target"] == "s0")].set_index("estimator")
    assert s0.loc["human_only", "estimate"].iloc[0] == pytest.approx(table.loc[table.system == "s0", "human"].mean())
    assert s0.loc["judge_only", "estimate"].iloc[0] == pytest.approx(table.loc[table.system == "s0", "judge"].mean())


def test_the_bootstrap_depends_on_the_generator_passed_in_only():
    study = judge_study(_table(2))
    first = ppi_study(study, np.random.default_rng(7), resamples=100)
    pd.testing.assert_frame_equal(first, ppi_study(study, np.random.default_rng(7), resamples=100))
    other = ppi_study(study, np.random.default_rng(8), resamples=100)
    assert np.allclose(first["estimate"], other["estimate"], equal_nan=True)
    clustered = first["interval"] == "clustered"
    assert not np.allclose(first.loc[clustered, "standard_error"], other.loc[clustered, "standard_error"])
    with pytest.raises(TypeError, match="Generator"):
        ppi_study(study, 7)


@pytest.mark.slow
def test_the_clustered_interval_covers_where_ignoring_a_few_severe_annotators_does_not():
    """8 annotators with severities (sd 0.6) score the outputs of 20 documents: the system means' clustered
    PPI++ intervals cover the expected human score (3 + system effect) about as often as they should; the
    independent ones, which take 40 scores from 8 annotators for 40 independent ones, do not. Without
    annotators and one score per output the two standard errors agree."""
    covered = {"clustered": [], "independent": []}
    effects = np.linspace(0.5, 0, 3)
    for seed in range(120):
        rows = ppi_study(judge_study(_table(100 + seed, documents=40, scored=20, annotators=8, severity=0.6,
                                            per_output=2)), np.random.default_rng(seed), resamples=200)
        tuned = rows[(rows["estimator"] == "ppi++") & rows["system_b"].isna()]
        for interval, group in tuned.groupby("interval"):
            truth = 3 + effects[[int(s[1]) for s in group["target"]]]
            covered[interval] += list((group["low"] <= truth) & (truth <= group["high"]))
    assert np.mean(covered["clustered"]) > 0.9
    assert np.mean(covered["independent"]) < np.mean(covered["clustered"]) - 0.15
    rows = ppi_study(judge_study(_table(3, documents=300, scored=150)), np.random.default_rng(1), resamples=2000)
    errors = rows.pivot_table(index=["target", "estimator"], columns="interval", values="standard_error")
    assert np.allclose(errors["clustered"], errors["independent"], rtol=0.15)


# ---------------------------------------------------------------------------------------------
# simdesign analyse on a judge-plus-human table
# ---------------------------------------------------------------------------------------------

def test_the_example_table_is_what_its_script_writes():
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_judge_human", ROOT / "examples" / "make_judge_human.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    committed = pd.read_csv(EXAMPLE, dtype={"human": "Int64"})
    pd.testing.assert_frame_equal(committed, script.make_table(), check_dtype=False)


def test_the_table_kinds_are_told_apart_by_their_columns(tmp_path):
    assert is_judge_table(["system", "document", "judge", "human", "annotator"])
    assert is_judge_table(["system", "document", "human"])  # lacks judge: refused as a judge table, naming it
    assert not is_judge_table(["annotator", "document", "system", "score"])
    assert not is_judge_table(["annotator", "document", "system", "rank"])
    assert not is_judge_table(["system", "input", "metric_a", "human"])  # analyse-metrics' table
    assert not source_is_judge_table(ROOT / "examples" / "study.csv")
    assert source_is_judge_table(EXAMPLE)
    (tmp_path / "t.jsonl").write_text('\n{"system": "a", "document": "d", "judge": 3, "human": null}\n')
    (tmp_path / "t.json").write_text('[{"annotator": "a", "document": "d", "system": "s", "score": 3}]')
    assert source_is_judge_table(tmp_path / "t.jsonl") and not source_is_judge_table(tmp_path / "t.json")
    assert source_is_judge_table(pd.DataFrame(columns=["system", "document", "gpt4", "human"]), {"gpt4": "judge"})
    assert source_is_judge_table(pd.DataFrame(columns=["system", "document", "gpt4", "human"]), "judge=gpt4")


def _listed_outputs() -> set:
    from tests.test_output_lists import listed

    return listed("analyse-judge-and-human.md")


@pytest.mark.slow  # a real run with its bootstrap: a few tenths of a second
def test_analyse_on_the_example_writes_the_report_and_what_its_page_lists(tmp_path, capsys):
    assert main(["analyse", str(EXAMPLE), "--bootstrap", "200", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert {path.name for path in tmp_path.iterdir()} == set(OUTPUTS) == _listed_outputs()
    summary = pd.read_csv(tmp_path / "judge_analysis.csv")
    assert list(summary["target"][:4]) == ["sys_a", "sys_b", "sys_c", "judge_family"] and len(summary) == 4 + 6
    assert "the scales differ" in printed and "sys_b - judge_family" in printed
    assert (tmp_path / "judge_analysis.md").read_text() in printed
    # The pipeline's PPI++ interval that ignores clustering is ppi_mean on sys_a's own rows
    table = pd.read_csv(EXAMPLE)
    mine = table[table["system"] == "sys_a"]
    scored = mine[mine["human"].notna()]
    rest = mine[mine["human"].isna()]
    expected = ppi_mean(scored["human"], scored["judge"], rest["judge"])
    row = summary.set_index("target").loc["sys_a"]
    assert (row["ppi_pp"], row["ppi_pp_independent_low"], row["ppi_pp_independent_high"], row["lam"]) == \
        pytest.approx((expected.estimate, expected.lower, expected.upper, expected.lam), abs=1e-9)
    estimates = pd.read_csv(tmp_path / "judge_estimates.csv")
    assert set(estimates["estimator"]) == {"human_only", "judge_only", "ppi", "ppi++", "judge_bias"}
    assert set(estimates["interval"]) == {"clustered", "independent"}


def test_json_and_json_lines_tables_read_as_the_csv_table(tmp_path):
    table = _table(4, documents=12, scored=6)
    table["human"] = table["human"].round(6)
    table.to_csv(tmp_path / "t.csv", index=False)
    records = [{k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in row.items()}
               for row in table.to_dict("records")]
    (tmp_path / "t.json").write_text(json.dumps(records))
    (tmp_path / "t.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    read = [check_judge_table(read_judge_table(tmp_path / name))[0] for name in ("t.csv", "t.json", "t.jsonl")]
    for other in read[1:]:
        pd.testing.assert_frame_equal(read[0], other)
    assert read_judge_table(tmp_path / "t.json").attrs["unit"] == "record"


@pytest.mark.slow  # three analyses, a tenth of a second
def test_several_judges_are_analysed_each_on_its_own_rows():
    one, two = _table(5, documents=20, scored=8), _table(6, documents=20, scored=8)
    both = pd.concat([one.assign(judge_name="j1"), one.assign(judge_name="j2", judge=two["judge"])])
    result = analyse_judge_table(both, bootstrap=100)
    assert list(pd.unique(result.estimates["judge_name"])) == ["j1", "j2"]
    alone = analyse_judge_table(one, bootstrap=100).estimates
    first = result.estimates[result.estimates["judge_name"] == "j1"]
    assert np.allclose(first["estimate"], alone["estimate"], equal_nan=True)


def test_judge_and_human_on_different_scales_are_accepted_and_corrected():
    """A judge on 1-10 that is an exact linear function of the human score (2 h + 3): the judge-only mean is far
    off the human scale, PPI and PPI++ are on it, and the report says the scales differ."""
    rng = np.random.default_rng(9)
    human = np.round(rng.uniform(1, 5, (2, 60)))
    judge = 2 * human + 3
    table = pd.DataFrame({"system": np.repeat(["a", "b"], 60), "document": np.tile(np.arange(60), 2),
                          "judge": judge.ravel(), "human": np.where(np.arange(120) % 60 < 20, human.ravel(), np.nan)})
    result = analyse_judge_table(table, bootstrap=100)
    summary = result.summary().set_index("target")
    truth = human.mean(axis=1)
    assert summary.loc["a", "judge_only"] > 6
    for system, value in zip("ab", truth):
        assert abs(summary.loc[system, "ppi"] - value) < 0.6 and abs(summary.loc[system, "ppi_pp"] - value) < 0.3
        assert summary.loc[system, "ppi_pp_low"] <= value <= summary.loc[system, "ppi_pp_high"]
    assert any("the scales differ" in note for note in result.notes)


# ---------------------------------------------------------------------------------------------
# Bad input: a clear message naming the field or the line, nothing written
# ---------------------------------------------------------------------------------------------

BAD_TABLES = {
    "no human-judged rows": ("system,document,judge,human\na,d1,5,\nb,d1,6,\n", "no human-judged rows"),
    "a system without human scores": ("system,document,judge,human\na,d1,5,3\na,d2,6,4\nb,d1,6,\nb,d2,7,\n",
                                      "System 'b' has no human-judged rows (its rows: lines 4, 5)"),
    "a constant judge": ("system,document,judge,human\na,d1,5,3\na,d2,5,4\nb,d1,5,3\nb,d2,5,2\n",
                         "The 'judge' column holds the same value (5) on every row"),
    "non-numeric scores": ("system,document,judge,human\na,d1,good,3\na,d2,5,x\nb,d1,6,3\nb,d2,7,2\n",
                           "but line 2 holds 'good'"),
    "a missing column": ("system,doc,judge,human\na,d1,5,3\n", "lacks the column(s) ['document']"),
    "a missing human column": ("system,document,judge\na,d1,5\n", "lacks the column(s) ['human']"),
    "two judge scores of one output": ("system,document,judge,human,annotator\na,d1,5,3,x\na,d1,6,4,y\na,d2,4,,\n"
                                       "b,d1,6,3,x\nb,d2,7,2,x\n", "differs between rows of the same output"),
    "an annotator scoring an output twice": ("system,document,judge,human,annotator\na,d1,5,3,x\na,d1,5,4,x\n"
                                             "a,d2,4,2,y\nb,d1,6,3,x\nb,d2,7,2,x\n", "scored the same output twice"),
}


@pytest.mark.parametrize("name", list(BAD_TABLES))
def test_a_bad_table_is_refused_naming_the_problem_and_nothing_is_written(name, tmp_path, capsys):
    text, expected = BAD_TABLES[name]
    path = tmp_path / "table.csv"
    path.write_text(text)
    out = tmp_path / "out"
    assert main(["analyse", str(path), "--bootstrap", "100", "--out", str(out)]) == 2
    assert expected in capsys.readouterr().err
    assert not out.exists()


def test_the_problems_of_one_table_are_reported_together():
    table = pd.DataFrame({"system": ["a", "a", "", "b"], "document": ["d1", "d2", "d1", "d2"],
                          "judge": [5, "x", 6, None], "human": [3, 4, "n/a", 2]})
    with pytest.raises(DataError) as error:
        analyse_judge_table(table)
    messages = " | ".join(error.value.messages)
    assert "'system' column is empty on row 2" in messages
    assert "'judge' column must hold a finite number on every row" in messages and "rows 1, 3" in messages
    assert "'human' column must hold a finite number, or nothing" in messages and "'n/a'" in messages


def test_a_bad_json_line_and_a_json_boolean_are_named(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"system": "a", "document": "d1", "judge": 5, "human": 3}\n\nnot json\n')
    with pytest.raises(DataError, match="line 3 is not valid JSON"):
        analyse_judge_table(path)
    path.write_text('{"system": "a", "document": "d1", "judge": true, "human": 3}\n')
    with pytest.raises(DataError, match="line 1 holds True"):
        analyse_judge_table(path)
    (tmp_path / "t.json").write_text('{"system": "a"}')
    with pytest.raises(DataError, match="must be a list of objects"):
        analyse_judge_table(tmp_path / "t.json")


def test_options_of_the_likert_analysis_are_refused_for_a_judge_table(tmp_path, capsys):
    path = tmp_path / "table.csv"
    path.write_text(BAD_TABLES["a system without human scores"][0])
    assert main(["analyse", str(path), "--tests", "ttest", "--scale", "1..5"]) == 2
    assert "--tests, --scale apply to Likert and Rank tables" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="--method"):
        import simdesign

        simdesign.analyse(path, method="likert")
    with pytest.raises(ConfigError, match="bootstrap must be an integer of at least 100"):
        analyse_judge_table(path, bootstrap=10)


def test_columns_map_other_names_onto_a_judge_table(tmp_path, capsys):
    path = tmp_path / "table.csv"
    path.write_text(BAD_TABLES["a system without human scores"][0].replace("judge,human", "gpt4,rating", 1))
    assert main(["analyse", str(path), "--columns", "judge=gpt4,human=rating"]) == 2
    assert "System 'b' has no human-judged rows" in capsys.readouterr().err


def test_a_study_of_inconsistent_arrays_is_refused():
    with pytest.raises(ValueError, match="as long"):
        ppi_study(judge_study(_table(1)).__class__(("a",), [0, 0], [0, 1], [1.0], [0], [3.0]),
                  np.random.default_rng(0))
    with pytest.raises(ValueError, match="index the outputs"):
        judge_study(_table(1)).__class__(("a",), [0, 0], [0, 1], [1.0, 2.0], [5], [3.0])
