"""Bad input to every command: exit code 2, a message naming the field or line, nothing computed or written.

One parametrised test over all cases. A case is (command, payload, extra options, message fragments):
- ``run``: the payload changes a small valid config; the results directory must not exist afterwards.
- ``replay``: the payload is replay arguments against a small stored run, which must not change.
- ``plan``: the payload changes a small valid plan config; nothing may be written.
- ``panels``, ``sweep``, ``metric-validation``: the payload changes a small valid config of the command;
  the results directory must not exist afterwards.
- ``fit``, ``check``, ``reliability``: the payload is the judgements file's bytes. The three commands share
  one reader and one validator (simdesign.pilot.fit.read_judgements), so each table case runs through all three.
"""
import pandas as pd
import pytest
import yaml

from simdesign.cli import main

BASE = {"name": "bad-input", "model": "coherence", "effect": "zero", "trials": 4, "seed": 1,
        "designs": [{"kind": "block", "blocks": [1, 2], "docs_per_block": [4, 2], "annotators_per_block": 2}],
        "tests": ["ttest", {"name": "art_doc", "resamples": 99}]}
STORED_DESIGN = "block-B2-D2-A2"
PLAN = {"name": "bad-plan", "model": "coherence", "effect": "fitted", "tests": ["ttest_doc"], "target_power": 0.8,
        "cost": {"pay_per_hour": 12.0, "seconds_per_judgement": 20.0},
        "search": {"shapes": ["nested"], "docs": [20], "docs_per_block": [5]},
        "screen_trials": 4, "max_trials": 8, "seed": 1}

# Small valid configs of the study commands (each runs in seconds as it is).
STUDIES = {
    "panels": {"name": "bad-panels", "model": "coherence", "docs": 4, "trials": 2, "subsamples": 2, "bootstrap": 10,
               "panels": {"expert": {"annotators": 2, "judge": "all"}, "crowd": {"pool": 12, "per_output": 3}}},
    "sweep": {"name": "bad-sweep", "model": "coherence", "trials": 2, "tests": ["ttest_doc"],
              "designs": [{"kind": "block", "blocks": 4, "docs_per_block": 1, "annotators_per_block": 2}],
              "sweep": {"effect": ["zero", 0.5]}},
    "metric-validation": {"name": "bad-metric", "model": "coherence", "systems": [5], "documents": [10], "trials": 2,
                          "metric": {"summary_correlation": 0.5, "system_correlation": 0.8}},
}
YAML_BASES = {"run": BASE, "plan": PLAN, **STUDIES}

SYSTEMS = ["__REFERENCE__", "abssentrw", "BART", "onmt_pg", "seneca"]
HEADER = "annotator,document,system,score"


def _good_rows() -> list:
    """3 annotators x 2 documents x the coherence systems, every score 1..7 used."""
    rows = []
    for a in range(3):
        for d in range(2):
            for s, system in enumerate(SYSTEMS):
                rows.append(f"a{a},d{d},{system},{(a + 2 * d + 3 * s) % 7 + 1}")
    return rows


def _table(*extra: str, header: str = HEADER) -> bytes:
    """The good table (lines 2..31) followed by ``extra`` rows (line 32 onwards)."""
    return ("\n".join([header, *_good_rows(), *extra]) + "\n").encode()


def _with_rating_column() -> bytes:
    """The good table with its scores also in a 'rating' column."""
    rows = [f"{row},{row.rsplit(',', 1)[1]}" for row in _good_rows()]
    return ("\n".join([HEADER + ",rating", *rows]) + "\n").encode()



CASES = {
    # a pool of 30 where only 5 judged pairs exist: 25 annotators would never judge anything
    "pool-idle-annotators": ("run", {"designs": [{"kind": "pool", "docs": 5, "annotators": 30,
                                                  "judgements_per_output": 1}]}, [],
                             ["'docs' x 'judgements_per_output' >= 'annotators'",
                              "docs 5 x judgements_per_output 1 = 5 judged pairs for annotators 30"]),
    "empty-design-list": ("run", {"designs": [{"kind": "block", "blocks": [], "docs_per_block": 5,
                                               "annotators_per_block": 3}]}, [],
                          ["designs[0] (block)", "['blocks'] are empty"]),
    "figure-estimand-typo": ("run", {"figure": {"estimand": "powr"}}, [],
                             ["'figure.estimand' field must be one of ['type1', 'familywise'", "got 'powr'"]),
    "figure-power-under-null": ("run", {"figure": {"estimand": "power"}}, [],
                                ["'figure.estimand'", "'power' needs a non-zero 'effect'"]),
    "figure-type1-under-effect": ("run", {"effect": "fitted", "figure": {"estimand": "type1"}}, [],
                                  ["'figure.estimand'", "'type1' needs 'effect: zero'", "'power'"]),
    "figure-singular-rate-without-model-fits": ("run", {"figure": {"estimand": "singular_rate"}}, [],
                                                ["'figure.estimand'", "'singular_rate' needs a test that fits"]),
    "effect-overflow": ("run", {"effect": 1e308}, [],
                        ["'effect' field scales", "at most 20 is allowed", "|effect| <= 14.58", "got 1e+308"]),
    "effect-too-large": ("run", {"effect": 15}, [], ["'effect' field", "|effect| <= 14.58", "got 15"]),
    "effect-as-yaml-text": ("run", {"effect": "1e308"}, [],
                            ["'effect' field must be 'zero', 'fitted' or a number", "YAML read it as text"]),
    "chunk-size-zero": ("run", {}, ["--chunk-size", "0"], ["'chunk_size' field must be a positive integer"]),
    "replay-save-into-missing-directory": ("replay", ["--trial", "1", "--test", "ttest", "--save",
                                                      "{tmp}/missing/trial.csv"], [],
                                           ["--save", "the directory", "missing", "does not exist"]),
    "replay-trial-never-stored": ("replay", ["--trial", "4", "--test", "ttest"], [],
                                  ["--trial", "4", "never stored", "stored trials: 0..3 (4 trials)"]),
    "replay-test-label-without-options": ("replay", ["--trial", "1", "--test", "art_doc"], [],
                                          ["--test", "test labels: ['art_doc[99]', 'ttest']"]),
    "replay-negative-trial": ("replay", ["--trial", "-1", "--test", "ttest"], [],
                              ["--trial", "non-negative integer; got -1"]),
    "plan-jobs-zero": ("plan", {}, ["--jobs", "0"], ["'--jobs' option must be a positive number", "got 0"]),
    "panels-aggregation-typo": ("panels", {"aggregations": ["mean", "mode"]}, [],
                                ["'aggregations' field", "['mean', 'median', 'majority', 'dawid_skene']",
                                 "got ['mean', 'mode']"]),
    "panels-negative-noise-in-grid": ("panels", {"sensitivity": {"noise": [0.5, -1]}}, [],
                                      ["'sensitivity grid: panels.crowd.noise' field", "> 0", "got -1"]),
    "panels-trials-zero": ("panels", {}, ["--trials", "0"], ["'--trials' option must be a positive integer", "got 0"]),
    "sweep-unsweepable-key": ("sweep", {"sweep": {"effect": ["zero"], "seed": [1, 2]}}, [],
                              ["'sweep.seed' key cannot be swept", "allowed: ['effect'"]),
    "sweep-jobs-zero": ("sweep", {}, ["--jobs", "0"], ["'--jobs' option must be a positive number", "got 0"]),
    "metric-validation-method-typo": ("metric-validation", {"methods": ["pearson", "spearmann"]}, [],
                                      ["'methods' field", "['pearson', 'spearman', 'kendall']", "'spearmann'"]),
    "metric-validation-error-correlation-text": ("metric-validation", {"error_correlation": "high"}, [],
                                                 ["'error_correlation' field must be a number in [-1, 1]",
                                                  "got 'high'"]),
    "metric-validation-unknown-population-key": ("metric-validation", {"population": {"kind": "normal", "colour": 1}},
                                                 [], ["Unknown key(s) ['colour'] in 'population'",
                                                      "allowed: ['kind', 'mean', 'sd']"]),
    "metric-validation-jobs-zero": ("metric-validation", {}, ["--jobs", "0"],
                                    ["'--jobs' option must be a positive number", "got 0"]),
}
# Bad judgement tables: (name, file contents, extra options, text the message must contain).
TABLE_CASES = [
    ("empty file", b"", [], "is empty"),
    ("non-UTF-8 byte", _table() + b"a0,d2,seneca,\xff4\n", [], "line 32 is not UTF-8"),
    ("extra field", _table("a0,d2,seneca,4,5"), [], "line 32 has 5"),
    ("two score columns", _with_rating_column(), ["--columns", "score=rating"], "also has a column 'score'"),
    ("missing mapped column", _table(), ["--columns", "annotator=worker"], "no column 'worker'"),
    ("system with a leading space", _table("a0,d0, seneca,4"), [], "[' seneca'] (lines 32)"),
    ("system differing in case", _table("a0,d0,bart,4"), [], "['bart'] (lines 32)"),
    ("system with a single judgement", _table("a0,d0,gpt,4"), [], "['gpt'] have a single judgement (lines 32)"),
    # A blank line is skipped by the reader but still counts: the bad score is on line 33.
    ("line numbers count blank lines", _table("", "a0,d2,seneca,x"), [], "non-numeric value(s) (lines 33)"),
    ("missing value", _table("a1,d3,seneca,"), [], "'score' column has 1 missing value(s) (lines 32)"),
]
for _name, _contents, _extra, _expected in TABLE_CASES:
    for _command in ("fit", "check", "reliability"):
        CASES[f"{_command}-{_name.replace(' ', '-')}"] = (_command, _contents, _extra, [_expected])


@pytest.fixture(scope="module")
def stored_results(tmp_path_factory):
    """A small finished run to replay from (4 trials)."""
    directory = tmp_path_factory.mktemp("stored")
    path = directory / "base.yaml"
    path.write_text(yaml.safe_dump(BASE))
    assert main(["run", str(path), "--out", str(directory / "out"), "--jobs", "1", "--quiet"]) == 0
    return directory / "out"


def _judgements_command(command: str, path, tmp_path) -> list:
    if command == "fit":
        return ["fit", str(path), "--out", str(tmp_path / "out" / "model.yaml")]
    if command == "check":
        return ["check", "coherence", str(path), "--trials", "5", "--out", str(tmp_path / "out")]
    return ["reliability", str(path)]


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_exits_2_naming_the_field_before_any_work(case, tmp_path, capsys, request):
    command, payload, options, fragments = CASES[case]
    out = tmp_path / "out"
    if command in YAML_BASES:
        path = tmp_path / "bad.yaml"
        path.write_text(yaml.safe_dump({**YAML_BASES[command], **payload}))
        code = main([command, str(path), "--out", str(out), "--quiet", *(["--jobs", "1"] if not options else []),
                     *options])
        written = out.exists()
    elif command == "replay":
        results = request.getfixturevalue("stored_results")
        arguments = [word.replace("{tmp}", str(tmp_path)) for word in payload]
        before = sorted(p.name for p in results.rglob("*"))
        code = main(["replay", str(results), "--design", STORED_DESIGN, *arguments, *options])
        written = sorted(p.name for p in results.rglob("*")) != before or (tmp_path / "missing").exists()
    else:
        path = tmp_path / "judgements.csv"
        path.write_bytes(payload)
        code = main(_judgements_command(command, path, tmp_path) + options)
        written = out.exists()
    captured = capsys.readouterr()
    assert code == 2, captured.err
    for fragment in fragments:
        assert fragment in captured.err, f"{fragment!r} not in {captured.err!r}"
    assert not written, "files were written before the input was refused"
    assert "Traceback" not in captured.err


def test_the_good_table_passes_every_reader(tmp_path, capsys):
    """The table cases fail because of what they add, not because the base table is bad."""
    path = tmp_path / "judgements.csv"
    path.write_bytes(_table())
    assert main(["reliability", str(path)]) == 0
    assert "30 judgements, 3 annotators, 2 documents, 5 systems" in capsys.readouterr().out
    from simdesign.pilot.fit import read_judgements
    frame, scale = read_judgements(path)
    assert scale == tuple(range(1, 8)) and frame.attrs["lines"] == list(range(2, 32))


@pytest.mark.slow
def test_negative_effect_runs_with_a_warning(tmp_path, capsys):
    # Legitimate (the ranking reversed) but unusual: said, not refused.
    path = tmp_path / "negative.yaml"
    path.write_text(yaml.safe_dump({**BASE, "effect": -1, "trials": 2}))
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--jobs", "1", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "warning: The 'effect' field is negative (-1)" in err and "reversed" in err
    summary = pd.read_csv(tmp_path / "out" / "summary.csv")
    assert "power" in set(summary["estimand"])
    # a positive factor gets no such warning
    path.write_text(yaml.safe_dump({**BASE, "effect": 1.5, "trials": 2}))
    assert main(["run", str(path), "--out", str(tmp_path / "out2"), "--jobs", "1", "--quiet"]) == 0
    assert "negative" not in capsys.readouterr().err


def test_replay_shows_the_stored_p_values_beside_the_replayed_ones(stored_results, capsys):
    stored = pd.read_parquet(next((stored_results / "trials" / STORED_DESIGN).glob("*.parquet")))
    row = stored[(stored["test"] == "art_doc[99]") & (stored["trial"] == 2)].sort_values("pair")
    assert main(["replay", str(stored_results), "--design", STORED_DESIGN, "--trial", "2",
                 "--test", "art_doc[99]"]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if "stored_p_value" in line).split()
    assert header[-2:] == ["stored_p_value", "stored_status"]
    lines = [line.split() for line in out.splitlines() if line.split()[:1] in ([s] for s in row["system_a"])]
    assert len(lines) == len(row) == 10
    for words, p_value in zip(lines, row["p_value"]):
        assert float(words[-2]) == pytest.approx(p_value, abs=5e-4)  # printed with 3 decimals
    assert "replayed p-values and statuses equal the stored ones" in out


@pytest.mark.slow
@pytest.mark.parametrize("command", sorted(STUDIES))
def test_the_good_study_configs_run(command, tmp_path, capsys):
    """The study cases fail because of what they change, not because the base config is bad."""
    path = tmp_path / "good.yaml"
    path.write_text(yaml.safe_dump(STUDIES[command]))
    assert main([command, str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 0, capsys.readouterr().err
