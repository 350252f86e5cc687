"""Tables of records from CSV, JSON (a list of records) or JSON Lines, read alike.

A judgements CSV is read by :func:`simdesign.tables.judgements.read_table_csv`; battle logs (Chatbot Arena, MT-Bench)
usually come as JSON or JSON Lines. :func:`read_records` reads all three into the form that function returns:
every value a string (missing values NaN), ``attrs['lines']`` the file line where each record starts, so a
check names the line of a bad record whatever the file's format. Nested values (an Arena log's conversations)
are kept as their JSON text.

Examples
--------
>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "log.jsonl"
>>> _ = path.write_text('{"question_id": 1, "winner": "tie"}\\n\\n{"question_id": 2, "winner": null}\\n')
>>> frame = read_records(path)
>>> frame["question_id"].tolist(), frame.attrs["lines"].tolist()
(['1', '2'], [1, 3])
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from simdesign.core.checks import missing_file_problem
from simdesign.core.errors import DataError
from simdesign.tables.judgements import REQUIRED_COLUMNS, _decode, read_table_csv

JSON_SUFFIXES = (".json",)
JSON_LINES_SUFFIXES = (".jsonl", ".ndjson")


def file_format(path) -> str:
    """'json', 'jsonl' or 'csv', by the file name's suffix (anything else is read as CSV)."""
    suffix = Path(path).suffix.lower()
    return "json" if suffix in JSON_SUFFIXES else "jsonl" if suffix in JSON_LINES_SUFFIXES else "csv"


def read_records(path, columns: dict | None = None, required=REQUIRED_COLUMNS) -> pd.DataFrame:
    """Read a table of records (CSV, JSON or JSON Lines, by the suffix) as strings, with each record's line.

    Parameters
    ----------
    path : str or path-like
    columns : dict, optional
        File column name -> our name, as for :func:`simdesign.tables.judgements.read_table_csv`.
    required : sequence of str
        Our column names, named in the message for an empty file.

    Returns
    -------
    pandas.DataFrame
        Every column as strings (NaN for a missing or null value), renamed by ``columns``;
        ``attrs['lines']`` holds the line where each record starts.

    Raises
    ------
    DataError
        A missing or empty file, text that is not UTF-8, JSON that does not parse (its line named), a record that
        is not an object, ``columns`` naming a column the file lacks; for CSV whatever ``read_table_csv`` refuses.
    """
    kind = file_format(path)
    if kind == "csv":
        return read_table_csv(path, columns, required)
    path = Path(path)
    problem = missing_file_problem(path, "judgements", "CSV, JSON or JSON Lines")
    if problem:
        raise DataError(problem)
    text = _decode(path)
    if not text.strip():
        raise DataError(f"{path} is empty: it needs one record per judgement with the fields {', '.join(required)}")
    records, lines = (_json_lines(text, path) if kind == "jsonl" else _json_list(text, path))
    if not records:
        raise DataError(f"{path} holds no records: it needs one record per judgement with the fields "
                        f"{', '.join(required)}")
    not_objects = [line for record, line in zip(records, lines) if not isinstance(record, dict)]
    if not_objects:
        raise DataError(f"{path}: every record must be a JSON object of field: value; line(s) "
                        f"{', '.join(map(str, not_objects[:5]))} hold something else")
    frame = pd.DataFrame.from_records([{key: _text(value) for key, value in record.items()} for record in records])
    frame = frame.astype(object).where(frame.notna(), np.nan)
    return _renamed(frame, columns, path, lines)


def read_header(path) -> list:
    """The column names of a table of records, reading as little as it can: a CSV's header line, a JSON Lines
    file's first record (a JSON list is parsed whole). Any problem raises (OSError, ValueError): the full reader
    names it."""
    path = Path(path)
    kind = file_format(path)
    with open(path, encoding="utf-8-sig", newline="") as handle:
        if kind == "csv":
            import csv

            return [name.strip() for name in next(csv.reader(handle), [])]
        if kind == "jsonl":
            first = next((line for line in handle if line.strip()), "{}")
            return list(json.loads(first))
        records = json.load(handle)
    return list(dict.fromkeys(key for record in records[:1000] for key in record))


def _text(value):
    """A JSON value as the string a CSV cell would hold (null: missing; nested values as their JSON text)."""
    if value is None:
        return np.nan
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value) if isinstance(value, float) else str(value)
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _json_lines(text: str, path: Path) -> tuple[list, list]:
    """The records of a JSON Lines text (blank lines skipped) and the line of each."""
    records, lines = [], []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}: line {number} is not a JSON record ({exc.msg} at character {exc.colno}); "
                            "a JSON Lines file holds one object per line") from None
        lines.append(number)
    return records, lines


def _json_list(text: str, path: Path) -> tuple[list, list]:
    """The records of a JSON list and the line where each starts (decoded one by one to know it)."""
    decoder = json.JSONDecoder()
    position = _skip_space(text, 0)
    if not text.startswith("[", position):
        what = "an object" if text.startswith("{", position) else "something else"
        raise DataError(f"{path}: a JSON file must hold a list of records ([{{...}}, {{...}}]); it holds {what}"
                        + (" (one object per line? name the file .jsonl)" if what == "an object" else ""))
    records, lines = [], []
    position = _skip_space(text, position + 1)
    while position < len(text) and text[position] != "]":
        try:
            record, end = decoder.raw_decode(text, position)
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}: line {exc.lineno} is not valid JSON ({exc.msg})") from None
        records.append(record)
        lines.append(text.count("\n", 0, position) + 1)
        position = _skip_space(text, end)
        if position < len(text) and text[position] == ",":
            position = _skip_space(text, position + 1)
        elif position >= len(text) or text[position] != "]":
            line = text.count("\n", 0, min(position, len(text))) + 1
            raise DataError(f"{path}: line {line} is not valid JSON (a ',' or ']' expected after a record)")
    if position >= len(text):
        raise DataError(f"{path}: the JSON list is not closed (']' expected at the end)")
    return records, lines


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position] in " \t\r\n":
        position += 1
    return position


def _renamed(frame: pd.DataFrame, columns: dict | None, path: Path, lines: list) -> pd.DataFrame:
    """``columns`` applied as :func:`read_table_csv` applies them (a mapped column must exist, not clash)."""
    columns = dict(columns or {})
    problems = []
    for theirs, ours in columns.items():
        if theirs not in frame.columns:
            problems.append(f"--columns maps {ours}={theirs}, but the file has no field '{theirs}' "
                            f"(its fields: {list(frame.columns)})")
        elif ours in frame.columns and ours != theirs and ours not in columns:
            problems.append(f"--columns maps {ours}={theirs}, but the file also has a field '{ours}': "
                            f"two '{ours}' fields; drop or rename one of them in the file")
    if problems:
        raise DataError(problems)
    frame = frame.rename(columns=columns)
    frame.attrs["lines"] = np.asarray(lines)  # an array: pandas deep-copies attrs on every operation
    return frame


__all__ = ["read_records", "read_header", "file_format"]
