"""Bad judgement tables: every command that reads judgements exits 2 with a message naming the line or field.

``fit``, ``check`` and ``reliability`` share one reader and one validator
(simdesign.fit.read_judgements), so each case is run through all three.
"""
import pytest

from simdesign.cli import main

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


# name, file contents, extra arguments, text the message must contain
CASES = [
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


def _command(name: str, path, tmp_path) -> list:
    if name == "fit":
        return ["fit", str(path), "--out", str(tmp_path / "model.yaml")]
    if name == "check":
        return ["check", "coherence", str(path), "--trials", "5", "--out", str(tmp_path / "check")]
    return ["reliability", str(path)]


@pytest.mark.parametrize("command", ["fit", "check", "reliability"])
@pytest.mark.parametrize("case, contents, extra, expected", CASES, ids=[case[0] for case in CASES])
def test_bad_judgement_tables_exit_2_naming_the_line_or_field(case, contents, extra, expected, command, tmp_path,
                                                              capsys):
    path = tmp_path / "judgements.csv"
    path.write_bytes(contents)
    assert main(_command(command, path, tmp_path) + extra) == 2
    captured = capsys.readouterr()
    assert expected in captured.err, captured.err
    assert not (tmp_path / "model.yaml").exists() and not (tmp_path / "check").exists()


def test_the_good_table_passes_every_reader(tmp_path, capsys):
    """The cases above fail because of what they add, not because the base table is bad."""
    path = tmp_path / "judgements.csv"
    path.write_bytes(_table())
    assert main(["reliability", str(path)]) == 0
    assert "30 judgements, 3 annotators, 2 documents, 5 systems" in capsys.readouterr().out
    from simdesign.fit import read_judgements
    frame, scale = read_judgements(path)
    assert scale == tuple(range(1, 8)) and frame.attrs["lines"] == list(range(2, 32))
