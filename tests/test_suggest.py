""""Did you mean": one rule (simdesign.core.suggest) for every kind of name, and YAML's duplicated keys.

One test per kind the issue names: config keys, tests, design kinds, presets, systems, commands.
"""
from pathlib import Path

import pandas as pd
import pytest

from simdesign import ConfigError, SimulationConfig, parse_config
from simdesign.cli import main
from simdesign.core.suggest import closest, did_you_mean, suggestions
from simdesign.core.yamlio import DuplicateKeyError, load_yaml

DESIGN = {"kind": "block", "blocks": 2, "docs_per_block": 4, "annotators_per_block": 2}
BASE = {"name": "s", "model": "coherence", "designs": [DESIGN], "tests": ["ttest"], "trials": 4}


def _message(raw: dict) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config(raw)
    return str(caught.value)


def test_the_rule_finds_close_names_and_stays_quiet_otherwise():
    assert closest("ttest_dco", ["ttest", "ttest_doc", "art"]) == ["ttest_doc"]
    assert closest("BART", ["bart", "seneca"]) == ["bart"]  # case is ignored
    assert closest("xyz", ["ttest", "art"]) == [] and did_you_mean("xyz", ["ttest"]) == ""
    assert closest(5, ["ttest"]) == []  # a non-string has no suggestion
    assert suggestions(["tirals", "qqq"], ["trials", "seed"]) == " (did you mean 'trials' for 'tirals'?)"


def test_unknown_config_keys():
    assert "Unknown config key(s) ['tirals']" in _message({**BASE, "tirals": 5})
    assert "(did you mean 'trials'?)" in _message({**BASE, "tirals": 5})
    assert "Unknown 'figure' key(s) ['estimnd']" in _message({**BASE, "figure": {"estimnd": "power"}})
    assert "(did you mean 'estimand'?)" in _message({**BASE, "figure": {"estimnd": "power"}})
    assert "did you mean 'docs_per_block'" in _message({**BASE, "designs": [{**DESIGN, "docs_per_blok": 4}]})


def test_unknown_tests():
    assert "(did you mean 'art_doc'?)" in _message({**BASE, "tests": ["ttest", "art_dco"]})
    with pytest.raises(ConfigError, match=r"'tests\[0\]' test 'wilcoxon' is unknown.*did you mean 'wilcoxon_doc'"):
        SimulationConfig(name="s", model="coherence", designs=[DESIGN], tests=["wilcoxon"])


def test_unknown_design_kinds():
    assert "got 'pol' (did you mean 'pool'?)" in _message({**BASE, "designs": [{**DESIGN, "kind": "pol"}]})


def test_unknown_presets():
    assert "got 'repetiton' (did you mean 'repetition'?)" in _message({**BASE, "model": "repetiton"})


def test_unknown_systems(tmp_path):
    import simdesign

    systems = ["__REFERENCE__", "abssentrw", "BART", "onmt_pg", "seneca"]
    frame = pd.DataFrame([(f"a{a}", f"d{d}", s, (a + 2 * d + 3 * k) % 7 + 1) for a in range(3) for d in range(2)
                          for k, s in enumerate(systems)], columns=["annotator", "document", "system", "score"])
    order = ["__REFERENCE__", "abssentrw", "bart", "onmt_pg", "seneca"]
    with pytest.raises(ConfigError, match=r"do not match.*\(did you mean 'BART'\?\)"):
        simdesign.analyse(frame, tests="ttest_doc", systems=order, bootstrap=100)
    from simdesign.clmm.prepare import _prepare
    with pytest.raises(ConfigError, match=r"reference system 'seneka'.*did you mean 'seneca'"):
        _prepare(frame, "intercepts", "seneka")


def test_unknown_commands(capsys):
    assert main(["anlyse", "study.csv"]) == 2
    err = capsys.readouterr().err
    assert "unknown command 'anlyse' (did you mean 'analyse'?)" in err and "commands: run," in err
    assert main(["frobnicate"]) == 2
    assert "did you mean" not in capsys.readouterr().err


def test_a_duplicated_yaml_key_is_an_error_in_every_reader(tmp_path):
    with pytest.raises(DuplicateKeyError, match=r"the key 'effect' is given twice \(lines 1 and 3\)"):
        load_yaml("effect: zero\ntrials: 5\neffect: fitted\n")
    # nested mappings too, and merges may still override what they merge
    with pytest.raises(DuplicateKeyError, match="'blocks'"):
        load_yaml("designs:\n  - {kind: block, blocks: 2, blocks: 3}\n")
    assert load_yaml("base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  x: 3\n")["other"] == {"x": 3, "y": 2}
    from simdesign.model import load_model
    from simdesign.studies.rates.config import load_config
    model = tmp_path / "model.yaml"
    model.write_text("name: m\nscale: [1, 2]\nname: n\n")
    with pytest.raises(ConfigError, match="the key 'name' is given twice"):
        load_model(model)
    config = tmp_path / "config.yaml"
    config.write_text("name: a\nmodel: coherence\neffect: zero\neffect: fitted\n")
    with pytest.raises(ConfigError, match=f"Could not parse {config} as YAML: the key 'effect' is given twice"):
        load_config(config)


def test_no_module_reads_yaml_around_the_loader():
    """One copy of the rule: every YAML read in the package goes through simdesign.core.yamlio."""
    from pathlib import Path

    package = Path(__file__).resolve().parents[1] / "simdesign"
    offenders = [str(path) for path in package.rglob("*.py") if path.name != "yamlio.py"
                 and ("yaml.safe_load(" in path.read_text() or "yaml.load(" in path.read_text())]
    assert offenders == []


@pytest.mark.parametrize("command", ["fit", "check", "reliability", "analyse"])
def test_an_unknown_method_option_is_refused_with_the_closest_method(command, capsys, tmp_path):
    table = str(Path(__file__).resolve().parent.parent / "examples" / "study.csv")
    arguments = {"fit": ["fit", table, "--out", str(tmp_path / "m.yaml")], "check": ["check", "coherence", table],
                 "reliability": ["reliability", table], "analyse": ["analyse", table]}[command]
    assert main([*arguments, "--method", "likrt"]) == 2
    error = capsys.readouterr().err
    assert "'--method'" in error and "did you mean 'likert'?" in error
    assert not any(tmp_path.iterdir())  # refused before any work
