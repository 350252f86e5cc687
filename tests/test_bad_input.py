"""Bad input to ``simdesign run`` and ``replay``: exit code 2, a message naming the field, nothing computed or written.

Each case is refused before any simulation: the results directory (or the file to save) must not exist
afterwards. A case is (command, config changes or replay arguments, extra options, message fragments).
"""
import pandas as pd
import pytest
import yaml

from simdesign.cli import main

BASE = {"name": "bad-input", "model": "coherence", "effect": "zero", "trials": 4, "seed": 1,
        "designs": [{"kind": "block", "blocks": [1, 2], "docs_per_block": [4, 2], "annotators_per_block": 2}],
        "tests": ["ttest", {"name": "art_doc", "resamples": 99}]}
STORED_DESIGN = "block-B2-D2-A2"

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
}


@pytest.fixture(scope="module")
def stored_results(tmp_path_factory):
    """A small finished run to replay from (4 trials)."""
    directory = tmp_path_factory.mktemp("stored")
    path = directory / "base.yaml"
    path.write_text(yaml.safe_dump(BASE))
    assert main(["run", str(path), "--out", str(directory / "out"), "--jobs", "1", "--quiet"]) == 0
    return directory / "out"


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_exits_2_naming_the_field_before_any_work(case, tmp_path, capsys, request):
    command, change, options, fragments = CASES[case]
    if command == "run":
        path = tmp_path / "bad.yaml"
        path.write_text(yaml.safe_dump({**BASE, **change}))
        out = tmp_path / "out"
        code = main(["run", str(path), "--out", str(out), "--jobs", "1", "--quiet", *options])
        written = out.exists()
    else:
        results = request.getfixturevalue("stored_results")
        arguments = [word.replace("{tmp}", str(tmp_path)) for word in change]
        before = sorted(p.name for p in results.rglob("*"))
        code = main(["replay", str(results), "--design", STORED_DESIGN, *arguments, *options])
        written = sorted(p.name for p in results.rglob("*")) != before or (tmp_path / "missing").exists()
    captured = capsys.readouterr()
    assert code == 2, captured.err
    for fragment in fragments:
        assert fragment in captured.err, f"{fragment!r} not in {captured.err!r}"
    assert not written, "files were written before the input was refused"
    assert "Traceback" not in captured.err


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
