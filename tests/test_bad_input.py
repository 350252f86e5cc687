"""Bad input to every command: exit code 2, a message naming the field or line, nothing computed or written.

One parametrised test over all cases. A case is (command, payload, extra options, message fragments):
- ``run``: the payload changes a small valid config; the results directory must not exist afterwards.
- ``replay``: the payload is replay arguments against a small stored run, which must not change.
- ``plan``: the payload changes a small valid plan config; nothing may be written.
- ``panels``, ``sweep``, ``metric-validation``: the payload changes a small valid config of the command;
  the results directory must not exist afterwards.
- ``fit``, ``check``, ``reliability``, ``analyse``: the payload is the judgements file's bytes. The commands share
  one reader and one validator (simdesign.tables.judgements.read_judgements), so each table case runs through all four.
- ``<command>-text``: the payload is the bytes of the command's config file (a duplicated key, non-UTF-8).
- ``cli``: the payload is the command line; ``{tmp}`` is the test's directory, ``{good}`` a good judgements
  table and ``{file}`` an existing plain file.

The Python API's wrong types are in ``API_CASES``: each raises ConfigError/DataError naming the thing.
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


def _rank_table(column: str) -> bytes:
    """3 annotators x 2 documents, each ranking the 5 systems 1..5, the ranks in column ``column``."""
    rows = [f"a{a},d{d},{system},{(s + a + d) % 5 + 1}" for a in range(3) for d in range(2)
            for s, system in enumerate(SYSTEMS)]
    return ("\n".join([f"annotator,document,system,{column}", *rows]) + "\n").encode()


def _likert_in_rank_column() -> bytes:
    """The good Likert table with its scores in a column named 'rank'."""
    return _table(header="annotator,document,system,rank")


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
                                ["'aggregations' field", "['mean', 'median', 'majority', 'dawid_skene', 'mace']",
                                 "got ['mean', 'mode']"]),
    "panels-negative-noise-in-grid": ("panels", {"sensitivity": {"noise": [0.5, -1]}}, [],
                                      ["'sensitivity grid: panels.crowd.noise' field", "> 0", "got -1"]),
    "panels-trials-zero": ("panels", {}, ["--trials", "0"], ["'--trials' option must be a positive integer", "got 0"]),
    "sweep-unsweepable-key": ("sweep", {"sweep": {"effect": ["zero"], "seed": [1, 2]}}, [],
                              ["'sweep.seed' key cannot be swept", "allowed: ['effect'"]),
    "sweep-jobs-zero": ("sweep", {}, ["--jobs", "0"], ["'--jobs' option must be a positive number", "got 0"]),
    # issue 39: a repeated value ended in a TypeError in the figure, after the runs and the summary
    "sweep-repeated-effect-name": ("sweep", {"sweep": {"effect": ["zero", "zero"]}}, [],
                                   ["'sweep.effect' field lists the value 'zero' more than once"]),
    "sweep-repeated-effect-number": ("sweep", {"sweep": {"effect": [0.5, 0.5]}}, [],
                                     ["'sweep.effect' field lists the value 0.5 more than once"]),
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
    # without --scale the observed scores must be a contiguous range: a typo is not a category (with counts)
    ("score typo outside the range", _table("a0,d2,seneca,9"), [],
     "not a contiguous range of integers (counts {1: 5, 2: 4, 3: 5, 4: 4, 5: 4, 6: 4, 7: 4, 9: 1}; [8] never "
     "occur): a typo such as 9 (lines 32)"),
    ("score far beyond any scale", _table("a0,d2,seneca,1e30"), [], "1 value(s) beyond +-1e+06 (lines 32)"),
    ("infinite score", _table("a0,d2,seneca,inf"), [], "1 value(s) beyond +-1e+06 (lines 32)"),
    # a Rank file whose column is named 'score' would be analysed as Likert, reversing the conclusions
    ("ranks in a score column", _rank_table("score"), [], "'score' column looks like ranks, not Likert scores"),
    ("likert scores in a rank column", _likert_in_rank_column(), [],
     "'rank' column looks like Likert scores rather than ranks"),
    ("method rank on a likert file", _table(), ["--method", "rank"],
     "--method rank needs a 'rank' column; {path} has ['annotator', 'document', 'system', 'score']"),
]
for _name, _contents, _extra, _expected in TABLE_CASES:
    for _command in ("fit", "check", "reliability", "analyse"):
        if _command == "check" and "--method" in _extra:
            continue  # check takes a model's method
        CASES[f"{_command}-{_name.replace(' ', '-')}"] = (_command, _contents, _extra, [_expected])

# Config files as text: YAML keeps the last of two equal keys silently (``effect: zero`` then ``effect: fitted``
# turned a type I run into a power run), and a non-UTF-8 byte was a traceback. Every base config has a 'name'.
TEXT_CASES = {
    "duplicated-key": (b"name: first\n", b"",
                       ["the key 'name' is given twice (lines 1 and", "YAML would silently keep only the last"]),
    "non-utf8": (b"# written in Latin-1: caf\xe9\n", b"", ["line 1 is not UTF-8 (byte 0xe9)", "save it as UTF-8"]),
}
for _command in YAML_BASES:
    for _name, (_first, _last, _fragments) in TEXT_CASES.items():
        CASES[f"{_command}-text-{_name}"] = (f"{_command}-text", (_first, _last), [], _fragments)

CLI_CASES = {
    # did you mean: commands
    "unknown-command": (["rn", "{tmp}/x.yaml"], ["unknown command 'rn' (did you mean 'run'?)", "commands: run,"]),
    "unknown-command-typo": (["reliabilty", "{good}"], ["(did you mean 'reliability'?)"]),
    # --seed -1
    "reliability-negative-seed": (["reliability", "{good}", "--seed", "-1"], ["'--seed' option", "got -1"]),
    "analyse-negative-seed": (["analyse", "{good}", "--seed", "-1", "--out", "{tmp}/out"], ["'--seed'", "got -1"]),
    "check-negative-seed": (["check", "coherence", "{good}", "--seed", "-1", "--out", "{tmp}/out"], ["'--seed'"]),
    "fit-check-negative-seed": (["fit", "{good}", "--out", "{tmp}/out/m.yaml", "--check", "--seed", "-1"],
                                ["'--seed' option must be a non-negative integer; got -1"]),
    # --out of the wrong kind
    "run-out-is-a-file": (["run", "configs/quick.yaml", "--out", "{file}"], ["'--out' option", "is a file"]),
    "analyse-out-is-a-file": (["analyse", "{good}", "--out", "{file}"], ["'--out' option", "is a file"]),
    "check-out-is-a-file": (["check", "coherence", "{good}", "--out", "{file}"], ["is a file; give a directory"]),
    "fit-out-is-a-directory": (["fit", "{good}", "--out", "{tmp}"], ["'--out' option", "is a directory",
                                                                     "model.yaml"]),
    # fit: a model name that escapes the results directory; a check that cannot run, refused before fitting
    # issue 39: a model written under a name load_model cannot read back (YAML under .csv)
    "fit-out-csv-suffix": (["fit", "{good}", "--out", "{tmp}/out/model.csv"],
                           ["'--out' option names the model file to write", "['.yaml', '.yml', '.json']",
                            "model.csv"]),
    "fit-name-path-traversal": (["fit", "{good}", "--out", "{tmp}/out/m.yaml", "--name", "../../../escaped"],
                                ["'--name' option", "without slashes", "'../../../escaped'"]),
    "fit-check-trials-zero": (["fit", "{good}", "--out", "{tmp}/out/m.yaml", "--check", "--check-trials", "0"],
                              ["'--check-trials' option must be at least 2", "got 0"]),
    "check-trials-one": (["check", "coherence", "{good}", "--trials", "1", "--out", "{tmp}/out"], ["'--trials'"]),
    "plan-show-negative": (["plan", "configs/plan_example.yaml", "--show", "-1", "--out", "{tmp}/out"],
                           ["'--show' option must be 0 or more", "got -1"]),
    "draw-design-columns-zero": (["draw-design", "--kind", "block", "--blocks", "2", "--docs-per-block", "2",
                                  "--annotators-per-block", "2", "--out", "{tmp}/out/d.png", "--columns", "0"],
                                 ["'--columns' option", "got 0"]),
    # issue 39: ceilings of the runner, checked where the option is read
    "draw-design-blocks-beyond-the-ceiling": (["draw-design", "--kind", "block", "--blocks", "100000000",
                                               "--docs-per-block", "5", "--annotators-per-block", "3", "--out",
                                               "{tmp}/d.png"], ["7,500,000,000 judgements",
                                                                    "the ceiling is 10,000,000"]),
    "analyse-metrics-resamples-beyond-the-ceiling": (["analyse-metrics", "examples/metric_scores.csv",
                                                      "--resamples", "1000000000", "--out", "{tmp}/out"],
                                                     ["--resamples asks for 1,000,000,000", "ceiling is 1,000,000"]),
    # issue 39: a path that exists but is not a regular file was "not found"
    "run-config-is-dev-null": (["run", "/dev/null", "--out", "{tmp}/out"],
                               ["The config file /dev/null is not a regular file (a character device)"]),
    "reliability-table-is-dev-null": (["reliability", "/dev/null"],
                                      ["The judgements file /dev/null is not a regular file (a character device)"]),
    # issue 39: a crowd table without variation was fitted without a word
    "fit-crowd-identical-scores": (["fit-crowd", "{crowd_same}", "--out", "{tmp}/out"],
                                   ["Every score in the crowd pilot table is 3 (12 judgements)",
                                    "cannot be estimated"]),
    "explore-missing-figures": (["explore", "--figures", "{tmp}/nonexistent"], ["'--figures' option",
                                                                               "does not exist"]),
    "explore-bad-host": (["explore", "--host", "999.1.1.1", "--port", "0", "--workers", "0"],
                         ["'--host' option '999.1.1.1' is not an address", "127.0.0.1"]),
    # analyse applies fit's refusal, and run's refusal of a test that cannot take ranks
    "analyse-single-annotator": (["analyse", "{single}", "--out", "{tmp}/out"],
                                 ["single annotator ('a0')", "fit annotator random effects", "ttest_doc"]),
    "analyse-art-on-ranks": (["analyse", "{ranks}", "--tests", "art", "--out", "{tmp}/out"],
                             ["The test art does not take Rank judgements", "tests for rank data: ["]),
    # a Dask scheduler nothing answers at: refused at once, before the results directory is written
    "run-unreachable-dask-scheduler": (["run", "configs/quick.yaml", "--out", "{tmp}/out", "--backend", "dask",
                                        "--scheduler", "tcp://127.0.0.1:1"],
                                       ["No Dask scheduler answers at tcp://127.0.0.1:1 (--scheduler)"]),
    # did you mean: systems
    "reliability-columns-typo": (["reliability", "{good}", "--columns", "annotatr=worker"],
                                 ["--columns takes NAME=COLUMN items", "(did you mean 'annotator'?)"]),
    "fit-reference-typo": (["fit", "{good}", "--out", "{tmp}/out/m.yaml", "--reference", "bart",
                            "--allow-reduced"], ["reference system 'bart'", "(did you mean 'BART'?)"]),
}
for _name, (_argv, _fragments) in CLI_CASES.items():
    CASES[f"cli-{_name}"] = ("cli", _argv, [], _fragments)

# A study config key another key makes meaningless is an error, not silently ignored.
CASES.update({
    "sweep-top-level-effect-ignored": ("sweep", {"effect": "fitted"}, [],
                                       ["top-level key(s) ['effect'] are swept too", "ignored in every run"]),
    "metric-validation-error-correlation-without-second-metric": (
        "metric-validation", {"error_correlation": 0.5}, [],
        ["'error_correlation' field (0.5) correlates the errors of two metrics", "add a 'second_metric'"]),
    "metric-validation-one-bootstrap-resample": ("metric-validation", {"bootstrap_resamples": 1}, [],
                                                 ["'bootstrap_resamples' field must be at least 20 at confidence 0.95",
                                                  "got 1"]),
    "run-block-test-on-one-block-designs": ("run", {"designs": [{"kind": "block", "blocks": 1, "docs_per_block": 4,
                                                                  "annotators_per_block": 2}],
                                                    "tests": ["art_block"]}, [],
                                            ["['art_block'] need two or more blocks", "every design has one"]),
    "run-plugin-test-failing-import": ("run", {"tests": ["no_such_module_xyz:analysis"]}, [],
                                       ["'tests[0]' test 'no_such_module_xyz:analysis' cannot be used",
                                        "ModuleNotFoundError"]),
    "run-model-effects-as-mapping": ("run", {"model": "{effects_mapping}"}, [],
                                     ["The 'effects' field must be a list; got dict"]),
    # issue 39: a mapping where a number belongs was a raw TypeError from numpy
    "run-model-threshold-as-mapping": ("run", {"model": "{threshold_mapping}"}, [],
                                       ["The 'thresholds' field's entry 1 must be a number; got dict {'low': 1}"]),
    "panels-rank-only-model": ("panels", {"model": "{rank_only}"}, [],
                               ["a panel study simulates Likert judgements", "is a rank-only model"]),
    "metric-validation-rank-only-model": ("metric-validation", {"model": "{rank_only}"}, [],
                                          ["metric validation simulates Likert judgements", "rank-only model"]),
    "plan-test-refusing-a-searched-method": ("plan", {"tests": ["ttest_doc", "art"],
                                                      "search": {**PLAN["search"], "methods": ["likert", "rank"]}},
                                             [], ["The test art cannot take rank judgements",
                                                  "leave ['rank'] out of 'search.methods'"]),
    # issue 39: a 'criteria:' list is a rate study's (it was routed to the crowd-study parser): its own messages
    "run-criteria-repeated": ("run", {"criteria": ["coherence", "coherence"]}, [],
                              ["The 'criteria' field lists ['coherence'] more than once"]),
    "run-criteria-empty": ("run", {"criteria": []}, [], ["The 'criteria' field must be a non-empty list"]),
    "run-criteria-without-name": ("run", {"criteria": [{"model": "repetition"}]}, [],
                                  ["The 'criteria[0]' entry must be a criterion name or a mapping with a 'name'"]),
    "run-criteria-unknown-key": ("run", {"criteria": [{"name": "a", "colour": 1}]}, [],
                                 ["The 'criteria[0]' entry has unknown key(s) ['colour']"]),
    "run-criteria-name-with-hash": ("run", {"criteria": ["a#b"]}, [],
                                    ["The criterion name 'a#b' must be a non-empty string without '/', '#'"]),
    "run-criteria-unknown-model": ("run", {"criteria": [{"name": "a", "model": "nosuch"}]}, [],
                                   ["criteria[0]: The 'model' field must be a preset"]),
    "run-criteria-with-replication": ("run", {"criteria": ["coherence"], "replication": {"tolerance": 0}}, [],
                                      ["The 'criteria' field cannot be combined with 'replication'"]),
    "run-criteria-as-rates-with-crowd-keys": ("run", {"study": "rates", "criteria": ["coherence"],
                                                      "workers": {"workers": 4}}, [],
                                              ["says 'study: rates' but has keys of a crowd study (['workers'])"]),
    # did you mean: config keys, tests, design kinds, presets
    "run-key-typo": ("run", {"tirals": 4}, [], ["Unknown config key(s) ['tirals']", "(did you mean 'trials'?)"]),
    "run-test-typo": ("run", {"tests": ["ttest_dco"]}, [], ["test 'ttest_dco' is unknown", "(did you mean "
                                                                                          "'ttest_doc'?)"]),
    "run-kind-typo": ("run", {"designs": [{"kind": "blok", "blocks": 2, "docs_per_block": 4,
                                           "annotators_per_block": 2}]}, [], ["(did you mean 'block'?)"]),
    "run-preset-typo": ("run", {"model": "coherance"}, [], ["got 'coherance' (did you mean 'coherence'?)"]),
    "plan-key-typo": ("plan", {"serch": {}}, [], ["Unknown plan config key(s) ['serch']", "did you mean 'search'"]),
    "panels-key-typo": ("panels", {"subsamples": 2, "subsample": 2}, [], ["did you mean 'subsamples'"]),
})


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
    if command == "analyse":
        return ["analyse", str(path), "--tests", "ttest_doc", "--bootstrap", "100", "--out", str(tmp_path / "out")]
    return ["reliability", str(path)]


def _files(tmp_path) -> dict:
    """The files the ``cli`` cases and model cases name: a good table, a plain file, ranks, a one-annotator
    study, a rank-only model, model files whose effects are a mapping or with a mapping as a threshold, and a
    crowd pilot table of identical scores."""
    import numpy as np

    from simdesign.model import load_model
    from simdesign.model.ranks import RankOnlyModel

    files = {"tmp": tmp_path, "good": tmp_path / "good.csv", "file": tmp_path / "plain.txt",
             "ranks": tmp_path / "ranks.csv", "single": tmp_path / "single.csv",
             "rank_only": tmp_path / "rank_only.yaml", "effects_mapping": tmp_path / "effects_mapping.yaml",
             "threshold_mapping": tmp_path / "threshold_mapping.yaml", "crowd_same": tmp_path / "crowd_same.csv"}
    files["good"].write_bytes(_table())
    files["file"].write_text("not a directory")
    files["ranks"].write_bytes(_rank_table("rank"))
    single = [row for row in _good_rows() if row.startswith("a0,")] + \
        [f"a0,d{d},{system},{(d + s) % 7 + 1}" for d in range(2, 4) for s, system in enumerate(SYSTEMS)]
    files["single"].write_text("\n".join([HEADER, *single]) + "\n")
    rank_only = RankOnlyModel("toy", tuple(SYSTEMS), [0.0, 0.5, 1.0, 0.2, 0.1], np.eye(4) * 0.2, np.eye(4) * 0.1)
    files["rank_only"].write_text(yaml.safe_dump(rank_only.to_dict()))
    mapping = load_model("coherence").to_dict()
    mapping["effects"] = {system: 0.1 for system in mapping["systems"]}
    files["effects_mapping"].write_text(yaml.safe_dump(mapping))
    mapping = load_model("coherence").to_dict()
    mapping["thresholds"][1] = {"low": 1}
    files["threshold_mapping"].write_text(yaml.safe_dump(mapping))
    files["crowd_same"].write_text("item,worker,score\n" + "".join(f"i{i},w{w},3\n" for i in range(4) for w in range(3)))
    return {key: str(value) for key, value in files.items()}


def _filled(value, files: dict):
    """``value`` with ``{name}`` placeholders replaced by the paths of :func:`_files`."""
    if isinstance(value, str):
        return value.format(**files) if "{" in value else value
    if isinstance(value, list):
        return [_filled(item, files) for item in value]
    if isinstance(value, dict):
        return {key: _filled(item, files) for key, item in value.items()}
    return value


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_exits_2_naming_the_field_before_any_work(case, tmp_path, capsys, request):
    command, payload, options, fragments = CASES[case]
    out = tmp_path / "out"
    files = _files(tmp_path)
    if command.endswith("-text"):
        command = command[:-len("-text")]
        path = tmp_path / "bad.yaml"
        first, last = payload
        path.write_bytes(first + yaml.safe_dump(YAML_BASES[command]).encode() + last)
        code = main([command, str(path), "--out", str(out), "--quiet"])
        written = out.exists()
    elif command == "cli":
        code = main(_filled(payload, files))
        written = out.exists() or (tmp_path.parent / "escaped").exists()
    elif command in YAML_BASES:
        path = tmp_path / "bad.yaml"
        path.write_text(yaml.safe_dump({**YAML_BASES[command], **_filled(payload, files)}))
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
        fragment = fragment.replace("{path}", str(tmp_path / "judgements.csv"))
        assert fragment in captured.err, f"{fragment!r} not in {captured.err!r}"
    assert not written, "files were written before the input was refused"
    assert "Traceback" not in captured.err


def test_the_good_table_passes_every_reader(tmp_path, capsys):
    """The table cases fail because of what they add, not because the base table is bad."""
    path = tmp_path / "judgements.csv"
    path.write_bytes(_table())
    assert main(["reliability", str(path)]) == 0
    assert "30 judgements, 3 annotators, 2 documents, 5 systems" in capsys.readouterr().out
    from simdesign.tables.judgements import read_judgements
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


def _api_cases() -> dict:
    """Python API calls with wrong types or values: (call, error class, message fragments)."""
    import numpy as np

    import simdesign
    from simdesign import ConfigError, DataError

    frame = pd.DataFrame([row.split(",") for row in _good_rows()], columns=HEADER.split(","))
    frame["score"] = frame["score"].astype(int)
    return {
        "analyse-int": (lambda: simdesign.analyse(5), DataError, ["DataFrame or a CSV file path; got int"]),
        "analyse-alpha-text": (lambda: simdesign.analyse(frame, alpha="0.05"), ConfigError,
                               ["alpha must be a number between 0 and 1; got '0.05'"]),
        "analyse-negative-seed": (lambda: simdesign.analyse(frame, seed=-1), ConfigError, ["seed", "got -1"]),
        "analyse-test-typo": (lambda: simdesign.analyse(frame, tests="ttest_dco"), ConfigError,
                              ["'ttest_dco' is unknown", "did you mean 'ttest_doc'"]),
        "analyse-empty-tests": (lambda: simdesign.analyse(frame, tests=[]), ConfigError, ["tests must be"]),
        "fit-model-int": (lambda: simdesign.fit_model(5), DataError, ["got int"]),
        "fit-model-array": (lambda: simdesign.fit_model(np.zeros((3, 4))), DataError,
                            ["got ndarray", "an array has no column names"]),
        "reliability-int": (lambda: simdesign.reliability(5), DataError, ["got int"]),
        "reliability-negative-seed": (lambda: simdesign.reliability(frame, seed=-1), ConfigError, ["'seed'"]),
        "check-model-int": (lambda: simdesign.check_model("coherence", 5), DataError, ["got int"]),
        "check-model-zero-trials": (lambda: simdesign.check_model("coherence", frame, trials=0), ConfigError,
                                    ["'trials' argument must be a positive integer; got 0"]),
        "simulate-out-dir-int": (lambda: simdesign.simulate(BASE, out_dir=5, jobs=1), ConfigError,
                                 ["'out_dir' argument must be a directory path; got int"]),
        "simulate-test-typo": (lambda: simdesign.simulate(BASE, tests=["ttest_dco"], jobs=1), ConfigError,
                               ["'tests[0]' test 'ttest_dco' is unknown", "did you mean 'ttest_doc'"]),
        "config-both-test-keywords": (lambda: simdesign.SimulationConfig(
            name="x", model="coherence", designs=BASE["designs"], tests=["ttest"], analyses=["ttest"]),
            ConfigError, ["'tests' (or its alias 'analyses'), not both"]),
        "plan-int": (lambda: simdesign.plan(5), ConfigError, ["A plan config must be", "got int"]),
        "analyse-metrics-none": (lambda: simdesign.analyse_metrics(None), DataError,
                                 ["The metric table must be a pandas DataFrame or a CSV file path; got NoneType"]),
    }


API_CASE_NAMES = ["analyse-int", "analyse-alpha-text", "analyse-negative-seed", "analyse-test-typo",
                  "analyse-empty-tests", "fit-model-int", "fit-model-array", "reliability-int",
                  "reliability-negative-seed", "check-model-int", "check-model-zero-trials", "simulate-out-dir-int",
                  "simulate-test-typo", "config-both-test-keywords", "plan-int", "analyse-metrics-none"]


@pytest.mark.parametrize("case", API_CASE_NAMES)
def test_the_api_refuses_wrong_types_with_the_projects_errors(case):
    """Where a raw TypeError or AttributeError came out (issue 29), the README promises ConfigError/DataError."""
    call, error, fragments = _api_cases()[case]
    with pytest.raises(error) as caught:
        call()
    for fragment in fragments:
        assert fragment in str(caught.value), f"{fragment!r} not in {str(caught.value)!r}"


def test_every_api_case_is_run():
    assert sorted(API_CASE_NAMES) == sorted(_api_cases())


def test_a_gap_in_the_scores_is_accepted_when_the_scale_says_so(tmp_path, capsys):
    """The contiguity rule is lifted by --scale: the scale's values are then the user's statement."""
    path = tmp_path / "judgements.csv"
    path.write_bytes(_table("a0,d2,seneca,9"))
    assert main(["reliability", str(path), "--scale", "1,2,3,4,5,6,7,9"]) == 0
    path.write_bytes(_rank_table("score"))  # rank-like scores, declared Likert by their scale
    assert main(["reliability", str(path), "--scale", "1..5"]) == 0
    assert main(["reliability", str(path), "--method", "rank", "--columns", "rank=score"]) == 0
    assert "Rank table" in capsys.readouterr().out


@pytest.mark.slow  # 0.8 s: the fast tier stays under a minute
def test_an_ignored_option_is_warned_about(tmp_path, capsys):
    path = tmp_path / "judgements.csv"
    path.write_bytes(_table())
    code = main(["fit", str(path), "--out", str(tmp_path / "m.yaml"), "--bootstrap", "50", "--check-trials", "9",
                 "--structure", "intercepts"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "warning: '--bootstrap' is ignored without --likert-model" in err
    assert "warning: '--check-trials' is ignored without --check" in err
    main(["fit", str(path), "--out", str(tmp_path / "m2.yaml"), "--structure", "intercepts"])
    assert "ignored" not in capsys.readouterr().err  # defaults are not "given"
    assert main(["analyse", str(path), "--tests", "ttest_doc", "--structure", "maximal", "--bootstrap", "100"]) == 0
    assert "warning: '--structure' is ignored without a test that takes a structure" in capsys.readouterr().err


def test_a_one_block_design_beside_others_is_warned_about_not_refused():
    from simdesign.studies.rates.config import config_warnings, parse_config

    config = parse_config({**BASE, "designs": [{"kind": "block", "blocks": [1, 2], "docs_per_block": 4,
                                                "annotators_per_block": 2}], "tests": ["art_block"]})
    assert any("undefined on the one-block design(s) ['block-B1-D4-A2']" in w for w in config_warnings(config))


@pytest.mark.slow  # moved from the fast tier (about 0.5-1 s; the tier's budget is 60 s)
def test_analyse_says_why_too_few_annotators_make_its_answer_unreliable():
    import simdesign

    frame = pd.DataFrame([row.split(",") for row in _good_rows()], columns=HEADER.split(","))
    frame["score"] = frame["score"].astype(int)
    notes = simdesign.analyse(frame, tests=[{"name": "clmm_native", "structure": "paper"}], bootstrap=100).notes
    assert any("3 annotators for 5 systems" in note and "systems + 1 = 6" in note for note in notes)
    assert not any("annotators for" in note
                   for note in simdesign.analyse(frame, tests="ttest_doc", bootstrap=100).notes)


@pytest.mark.parametrize("change, named", [
    ({"designs": [{"kind": "block", "blocks": 100_000_000, "docs_per_block": 5, "annotators_per_block": 3}]},
     "7,500,000,000 judgements"),
    ({"designs": [{"kind": "pool", "docs": 3_000_000, "annotators": 100, "judgements_per_output": 1}]},
     "15,000,000 judgements"),
    ({"art_resamples": 10**9}, "1,000,000,000 resamples"),
    ({"tests": [{"name": "ttest_doc", "threshold": "mc", "bootstrap_resamples": 2_000_000}]}, "2,000,000 resamples"),
])
def test_a_study_larger_than_a_run_can_hold_is_refused_when_read(change, named):
    """Issue 29: sizes beyond the ceilings are refused before anything is built, naming the size and ceiling."""
    import time

    from simdesign.core.errors import ConfigError
    from simdesign.studies.rates.config import parse_config

    raw = {"name": "huge", "model": "coherence", "effect": "zero", "trials": 10, "tests": ["ttest_doc"],
           "designs": [{"kind": "block", "blocks": 2, "docs_per_block": 5, "annotators_per_block": 3}], **change}
    started = time.perf_counter()
    with pytest.raises(ConfigError) as refused:
        parse_config(raw)
    assert named in str(refused.value) and "ceiling" in str(refused.value)
    assert time.perf_counter() - started < 5  # refused from the sizes, not after building a study
