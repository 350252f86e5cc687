"""Rank tables: checks with line numbers, orientation, method inference, reliability on ranks."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from simdesign.cli import main
from simdesign.core.errors import ConfigError
from simdesign.tables.ranks import check_ranks, reversed_ranks
from simdesign.tables.recognise import infer_method, read_table
from tests.conftest import SHARED_DATA

JUDGEMENTS = SHARED_DATA / "judgements"
needs_data = pytest.mark.skipif(not JUDGEMENTS.is_dir(), reason="the shared Steen & Markert data are not present")
SYSTEMS = ["a", "b", "c"]


def _good_rows(base: int = 0) -> list[dict]:
    """Two annotators x two documents, each ranking a, b, c with a permutation."""
    rows = []
    orders = [[0, 1, 2], [2, 0, 1], [1, 2, 0], [0, 2, 1]]
    for k, (annotator, document) in enumerate([("x", "d1"), ("x", "d2"), ("y", "d1"), ("y", "d2")]):
        for system, rank in zip(SYSTEMS, orders[k]):
            rows.append({"annotator": annotator, "document": document, "system": system, "rank": rank + base})
    return rows


def _write(tmp_path, rows, name="ranks.csv"):
    path = tmp_path / name
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


@pytest.mark.parametrize("base", [0, 1])
def test_good_table_reads_with_its_base_and_reversed_scores(tmp_path, base):
    frame, info = read_table(_write(tmp_path, _good_rows(base)))
    assert info["method"] == "rank" and info["base"] == base and info["scale"] == (1, 2, 3)
    # first row: system a, rank 0 (base 0) -> 1-based rank 1 (best) -> reversed score 3 (highest)
    assert frame.loc[0, "rank"] == 1 and frame.loc[0, "score"] == 3
    assert set(frame["rank"] + frame["score"]) == {4}  # S + 1


def test_reversed_ranks_by_hand():
    assert reversed_ranks([0, 1, 2, 3, 4], base=0, n_systems=5).tolist() == [5, 4, 3, 2, 1]
    assert reversed_ranks([1, 5], base=1, n_systems=5).tolist() == [5, 1]


def test_method_inference():
    assert infer_method(["annotator", "document", "system", "score"]) == "likert"
    assert infer_method(["annotator", "document", "system", "rank"]) == "rank"
    assert infer_method(["annotator", "document", "system", "position"], mapping={"position": "rank"}) == "rank"
    with pytest.raises(ConfigError, match="--method"):
        infer_method(["annotator", "document", "system", "value"])
    with pytest.raises(ConfigError, match="both"):
        infer_method(["score", "rank"])


def _bad(kind: str) -> tuple[list[dict], str, str]:
    """Rows with one defect, the text its message must carry and the line it must name."""
    rows = _good_rows()
    if kind == "rank twice":
        rows[1]["rank"] = rows[0]["rank"]  # x/d1: a and b both rank 0; file lines 2 and 3
        return rows, "reuse a rank", "lines 2, 3"
    if kind == "missing system":
        del rows[5]  # x/d2 loses system c (file line 7), its other rows are lines 5 and 6
        return rows, "lacks ['c']", "lines 5, 6"
    if kind == "out of range":
        rows[8]["rank"] = 7  # y/d1, system c: file line 10
        return rows, "outside 0..2", "lines 10"
    if kind == "not a number":
        rows[3]["rank"] = "first"
        return rows, "non-numeric", "lines 5"
    if kind == "mixed base":
        for row in rows[9:]:
            row["rank"] += 1  # y/d2 ranks 1..3 while the others use 0..2 (file lines 11-13)
        return rows, "mixes bases", "lines 11, 12, 13"
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["rank twice", "missing system", "out of range", "not a number", "mixed base"])
def test_bad_rank_tables_give_line_numbers(tmp_path, kind):
    rows, text, lines = _bad(kind)
    with pytest.raises(ConfigError) as caught:
        read_table(_write(tmp_path, rows))
    message = str(caught.value)
    assert text in message and lines in message, message


@pytest.mark.parametrize("kind", ["rank twice", "missing system", "out of range"])
@pytest.mark.parametrize("command", ["analyse", "reliability"])
def test_bad_rank_tables_exit_2_on_the_cli(tmp_path, capsys, kind, command):
    rows, text, lines = _bad(kind)
    assert main([command, str(_write(tmp_path, rows))]) == 2
    error = capsys.readouterr().err
    assert text in error and lines in error, error


def test_in_memory_check_returns_base():
    assert check_ranks(pd.DataFrame(_good_rows(1))) == 1


@needs_data
@pytest.mark.slow
def test_rank_reliability_reproduces_table_3(capsys):
    # Paper's Table 3, Rank rows, with DESIGN 7c's rule (every distinct split): 0.434 / 0.980 and 0.183 / 0.904.
    expected = {"coherence": ("0.4344", "0.980"), "repetition": ("0.1832", "0.904")}
    for task, (alpha, shr) in expected.items():
        assert main(["reliability", str(JUDGEMENTS / f"rank_{task}_cnn_dm.csv")]) == 0
        out = capsys.readouterr().out
        assert f"): {alpha}" in out
        value = float(out.strip().splitlines()[-1].rsplit(":", 1)[1])
        assert round(value, 3) == float(shr) or abs(value - float(shr)) < 6e-4, out


@pytest.mark.slow
@needs_data
def test_shared_rank_files_read_with_base_0():
    for task in ("coherence", "repetition"):
        frame, info = read_table(JUDGEMENTS / f"rank_{task}_cnn_dm.csv")
        assert info["base"] == 0 and len(frame) == 1500
        assert np.all(frame.groupby(["annotator", "document"])["rank"].apply(sorted).map(list)
                      .map(lambda r: r == [1, 2, 3, 4, 5]))


def test_columns_mapping_for_rank_files(tmp_path):
    rows = [{"worker": r["annotator"], "document": r["document"], "system": r["system"], "position": r["rank"]}
            for r in _good_rows(1)]
    path = _write(tmp_path, rows)
    assert main(["reliability", str(path), "--columns", "annotator=worker,rank=position"]) == 0
    from simdesign.tables.recognise import parse_columns_any
    frame, info = read_table(path, columns=parse_columns_any("annotator=worker,rank=position"))
    assert info["method"] == "rank" and info["base"] == 1 and frame["rank"].min() == 1
    with pytest.raises(ConfigError, match="--scale applies to Likert"):
        read_table(path, columns=parse_columns_any("annotator=worker,rank=position"), scale=(1, 2, 3))


def test_the_moved_table_functions_are_deprecated_aliases_for_one_release():
    import simdesign.tables.ranks as ranks
    import simdesign.tables.recognise as tables

    with pytest.warns(DeprecationWarning, match="moved to simdesign.tables.recognise.read_table"):
        assert ranks.read_table is tables.read_table
    with pytest.raises(AttributeError):
        ranks.no_such_name
