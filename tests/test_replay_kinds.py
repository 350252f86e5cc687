"""`simdesign replay` for every study kind (issue 27, issue 40): a stored trial of any registered kind's example
recomputed from its seed equals the stored rows (rates included); kinds without trials of their own say how."""
from __future__ import annotations

import pandas as pd
import pytest
import yaml

import plugin_study_kind  # noqa: F401 -- registers the coin-flips kind
import simdesign
import simdesign.studies.kinds  # noqa: F401 -- registers the built-in kinds
from simdesign.cli import main, same_rows
from simdesign.runner.study import REGISTERED
from simdesign.testing import without_clock

PANEL = {"name": "ps", "model": "coherence", "docs": 4, "trials": 3, "subsamples": 2, "bootstrap": 20, "seed": 3,
         "panels": {"expert": {"annotators": 2, "judge": "all"}, "crowd": {"pool": 10, "per_output": 4}}}
COINS = {"name": "coins", "coins": [0.2, 0.7], "flips": 20, "trials": 5, "seed": 4}


# Every registered kind's examples (plug-ins included), three trials each; a sweep has no trials of its own.
EXAMPLES = [(kind_name, label, mapping) for kind_name, kind in REGISTERED.items()
            for label, mapping in kind.examples().items() if kind_name != "sweep"]
SLOW = ("panels", "metric-validation", "rates-pairwise")  # 1-10 s each: the slow tier


@pytest.mark.parametrize("kind_name, mapping", [
    pytest.param(kind_name, mapping, id=label, marks=[pytest.mark.slow] if label in SLOW else [])
    for kind_name, label, mapping in EXAMPLES])
def test_a_replayed_trial_equals_the_stored_rows(tmp_path, kind_name, mapping):
    result = simdesign.simulate({**mapping, "trials": 3}, out_dir=tmp_path / "out", jobs=1, backend="threading",
                                progress=False)
    kind = REGISTERED[kind_name]
    assert result.kind is kind  # every simulation result names its kind and holds its rows
    config, rows = result.config, result.rows
    cell = kind.replay_cells(config)[0]
    replayed = without_clock(kind.replay(config, cell, 2))
    stored = without_clock(kind.stored_trial(config, rows, cell, 2))
    assert len(stored) and same_rows(replayed, stored)
    # another trial's rows differ: the comparison can fail
    assert not same_rows(without_clock(kind.replay(config, cell, 1)), stored)


@pytest.mark.parametrize("mapping, cell", [pytest.param(PANEL, None, marks=pytest.mark.slow),  # 5-10 s
                                           (COINS, "p0.7")])
def test_simdesign_replay_recomputes_a_stored_trial_and_saves_it(tmp_path, capsys, mapping, cell):
    result = simdesign.simulate(mapping, out_dir=tmp_path / "out", jobs=1, progress=False)
    kind, config = result.kind, result.config
    cell = cell or kind.replay_cells(config)[0]
    stored = kind.stored_trial(config, result.rows, cell, 2)
    assert main(["replay", str(tmp_path / "out"), "--design", cell, "--trial", "2",
                 "--save", str(tmp_path / "trial.csv")]) == 0
    assert "replayed rows equal the stored ones" in capsys.readouterr().out
    assert len(pd.read_csv(tmp_path / "trial.csv")) == len(stored)


def test_replay_refusals_name_the_cells_and_the_trials(tmp_path, capsys):
    simdesign.simulate(COINS, out_dir=tmp_path / "out", jobs=1, progress=False)
    assert main(["replay", str(tmp_path / "out"), "--design", "p0.3", "--trial", "0"]) == 2
    assert "its cells: ['p0.2', 'p0.7']" in capsys.readouterr().err
    assert main(["replay", str(tmp_path / "out"), "--design", "p0.2", "--trial", "9"]) == 2
    assert "Trial 9 of p0.2 is not stored" in capsys.readouterr().err


@pytest.mark.slow  # two runs of a sweep: 5-12 s
def test_a_sweep_says_to_replay_one_of_its_runs(tmp_path, capsys):
    sweep = {"name": "sw", "model": "coherence", "tests": ["ttest_doc"], "trials": 2, "seed": 2,
             "designs": [{"kind": "block", "blocks": 3, "docs_per_block": 2, "annotators_per_block": 2}],
             "sweep": {"effect": ["zero", 0.5]}}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep))
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--jobs", "1", "--quiet"]) == 0
    assert main(["replay", str(tmp_path / "out"), "--design", "x", "--trial", "0"]) == 2
    assert "replay a trial of one of its runs" in capsys.readouterr().err
    run = tmp_path / "out" / "effect=0.5"
    assert main(["replay", str(run), "--design", "block-B3-D2-A2", "--trial", "1", "--test", "ttest_doc"]) == 0
    assert "replayed p-values and statuses equal the stored ones" in capsys.readouterr().out


def test_replay_save_writes_a_rank_trial_as_ranks_that_the_readers_take(tmp_path, capsys):
    # `replay --save` wrote every method's trial as scores (a Rank trial's reversed ranks under 'score'): it now
    # writes the method's own file form, which read_table reads back as that method (issue 40, item 7)
    from simdesign.tables.recognise import read_table

    config = {"name": "ranks", "model": {"preset": "coherence", "rank_model": "coherence"}, "method": "rank",
              "effect": "fitted", "tests": ["ttest_doc"], "trials": 2, "seed": 3,
              "designs": [{"kind": "block", "blocks": 3, "docs_per_block": 2, "annotators_per_block": 2}]}
    simdesign.simulate(config, out_dir=tmp_path / "out", jobs=1, progress=False)
    saved = tmp_path / "trial.csv"
    assert main(["replay", str(tmp_path / "out"), "--design", "block-B3-D2-A2", "--trial", "1",
                 "--test", "ttest_doc@rank", "--save", str(saved)]) == 0
    assert "column 'rank'" in capsys.readouterr().out
    table = pd.read_csv(saved)
    assert "rank" in table.columns and "score" not in table.columns
    ranks = table.groupby(["annotator", "document"])["rank"].apply(sorted)
    assert len(ranks) == 12 and all(found == [1, 2, 3, 4, 5] for found in ranks)  # each pair ranks 5 outputs
    read, info = read_table(saved)
    assert info["method"] == "rank" and len(read) == len(table)
