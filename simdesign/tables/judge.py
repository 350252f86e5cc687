"""Judge-plus-human tables: an LLM judge's score of every output beside human scores of some.

One row per judged output and human (CSV, JSON or JSON Lines)::

    system,document,judge,human,annotator
    sysA,doc01,8,4,ann1        # sysA's output for doc01: the judge gave 8, ann1 gave 4
    sysA,doc01,8,5,ann2        # ... and ann2 gave 5 (the judge's score repeated)
    sysA,doc02,6,,             # no human scored this output

``system``, ``document`` and ``judge`` (the judge's score, a number) are needed on every row, and the
judge's score must be the same on every row of an output (one system's output for one document);
``human`` is the human score, empty where no human scored the output. Optional: ``annotator`` (who gave
the human score; without it each human score is one observation) and ``judge_name`` (several judges in
one table, each analysed on its own rows). Judge and human may use different scales (a 1-10 judge, 1-5
humans): the analysis (:mod:`simdesign.realdata.judge_analysis`) corrects for it and says so.

A table is of this kind when it has ``judge`` and ``human`` columns (or one of them beside ``system`` and
``document``) and no annotation method recognises it (``score``, ``rank``, pairwise): :func:`is_judge_table`.
Every problem is reported at once, naming the column and the file's lines (JSON: records), and what is allowed
(:func:`check_judge_table`).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd

from simdesign.core.checks import missing_file_problem
from simdesign.core.errors import ConfigError, DataError
from simdesign.core.suggest import did_you_mean, suggestions

REQUIRED = ("system", "document", "judge", "human")
OPTIONAL = ("annotator", "judge_name")
JSON_SUFFIXES = (".json", ".jsonl", ".ndjson")
EXAMPLES_SHOWN = 5
# A judge whose observed scores span less than this share of the humans' range is on another scale.
NARROW_SCALE = 0.5
TABLE_TEXT = ("one row per judged output and human: system, document, judge (the judge's score), human (the human "
              "score, empty where no human scored the output), optionally annotator and judge_name")


def _method_table(names: set) -> bool:
    """Whether an annotation method (Likert, Rank, Pairwise, plug-ins) recognises a table with these columns."""
    from simdesign.methods import all_methods

    for method in all_methods():
        recognises = getattr(method, "recognises", None)  # a method may know its table by more than one column
        if recognises(names) if callable(recognises) else method.value_column in names:
            return True
    return False


def is_judge_table(columns) -> bool:
    """Whether a table with these (mapped) column names is a judge-plus-human table.

    It is when no annotation method recognises it (a ``score``, ``rank`` or pairwise column) and it has both
    ``judge`` and ``human``, or one of them beside ``system`` and ``document`` (then the other is reported
    missing). An Arena battle log's ``judge`` column (who voted) beside its ``winner`` stays a pairwise table.

    >>> is_judge_table(["system", "document", "judge", "human"]), is_judge_table(["annotator", "score", "judge"])
    (True, False)
    """
    names = set(columns)
    if _method_table(names):
        return False
    return {"judge", "human"} <= names or (bool({"judge", "human"} & names) and {"system", "document"} <= names)


def parse_judge_columns(text) -> dict:
    """``--columns`` of a judge table, 'judge=gpt4,human=mean' -> {'gpt4': 'judge', 'mean': 'human'}.

    >>> parse_judge_columns("judge=gpt4, document=input")
    {'gpt4': 'judge', 'input': 'document'}
    """
    if not text:
        return {}
    if isinstance(text, dict):
        return dict(text)
    mapping = {}
    for item in str(text).split(","):
        ours, _, theirs = (part.strip() for part in item.partition("="))
        if ours not in (*REQUIRED, *OPTIONAL) or not theirs:
            raise ConfigError(f"--columns takes NAME=COLUMN items with NAME one of {[*REQUIRED, *OPTIONAL]} for a "
                              f"judge-plus-human table; got {item!r}{did_you_mean(ours, [*REQUIRED, *OPTIONAL])}")
        mapping[theirs] = ours
    return mapping


def _loose_mapping(columns) -> dict:
    """File -> our names from a dict or ``--columns`` text, without judging the names (for recognising a table)."""
    if isinstance(columns, dict):
        return dict(columns)
    items = [item.partition("=") for item in str(columns or "").split(",") if "=" in item]
    return {theirs.strip(): ours.strip() for ours, _, theirs in items}


def source_is_judge_table(source, columns=None) -> bool:
    """Whether a DataFrame or a file is a judge-plus-human table (:func:`is_judge_table` of its columns).

    Only a CSV file's header line, or a JSON Lines file's first record, is read; a file that cannot be read is
    left to the ordinary reader's message.
    """
    mapping = _loose_mapping(columns)
    if isinstance(source, pd.DataFrame):
        return is_judge_table(mapping.get(c, c) for c in source.columns)
    if not isinstance(source, (str, os.PathLike)):
        return False
    header = _header(Path(source))
    return header is not None and is_judge_table(mapping.get(c, c) for c in header)


def _header(path: Path) -> list | None:
    """The column names of a CSV, JSON or JSON Lines file (:func:`simdesign.tables.records.read_header`: a CSV's
    header line, a JSON Lines file's first record), or None when unreadable: the ordinary reader says why."""
    from simdesign.tables.records import read_header

    try:
        return read_header(path)
    except (OSError, UnicodeDecodeError, ValueError, TypeError):  # json.JSONDecodeError is a ValueError
        return None


def _json_records(path: Path, text: str) -> tuple[list, list, str]:
    """(records, their line or record numbers, 'line' or 'record') of a JSON or JSON Lines file."""
    if path.suffix.lower() == ".json":
        try:
            records = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}: line {exc.lineno} is not valid JSON ({exc.msg})") from None
        if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
            raise DataError(f"{path}: a JSON table must be a list of objects, one per row ({TABLE_TEXT}); "
                            "or write JSON Lines (.jsonl), one object per line")
        return records, list(range(1, len(records) + 1)), "record"
    records, lines = [], []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}: line {number} is not valid JSON ({exc.msg})") from None
        if not isinstance(record, dict):
            raise DataError(f"{path}: line {number} is not a JSON object (one object per line: {TABLE_TEXT})")
        records.append(record)
        lines.append(number)
    return records, lines, "line"


def _renamed(frame: pd.DataFrame, mapping: dict, path) -> pd.DataFrame:
    problems = [f"--columns maps {ours}={theirs}, but {path} has no column '{theirs}' (its columns: "
                f"{list(frame.columns)})" for theirs, ours in mapping.items() if theirs not in frame.columns]
    if problems:
        raise DataError(problems)
    return frame.rename(columns=mapping)


def read_judge_table(path, columns=None) -> pd.DataFrame:
    """Read a judge-plus-human table from CSV, JSON (a list of objects) or JSON Lines, unchecked.

    Parameters
    ----------
    path : str or path-like
        ``.json`` is a JSON list of row objects, ``.jsonl``/``.ndjson`` one object per line, anything else CSV.
    columns : dict or str, optional
        File column -> ours (``{'gpt4': 'judge'}`` or ``--columns`` text ``judge=gpt4``).

    Returns
    -------
    pandas.DataFrame
        ``attrs['lines']``: each row's line (JSON: record number); ``attrs['unit']``: 'line' or 'record';
        ``attrs['source']``: the path.
    """
    from simdesign.tables.judgements import _decode, read_table_csv

    path = Path(path)
    mapping = parse_judge_columns(columns)
    if path.suffix.lower() not in JSON_SUFFIXES:
        frame = read_table_csv(path, mapping, required=REQUIRED)
        frame.attrs.update(unit="line", source=str(path))
        return frame
    problem = missing_file_problem(path, "judge-plus-human", "JSON")
    if problem:
        raise DataError(problem)
    records, lines, unit = _json_records(path, _decode(path))
    if not records:
        raise DataError(f"{path} holds no rows: it needs {TABLE_TEXT}")
    frame = _renamed(pd.DataFrame.from_records(records), mapping, path)
    frame.attrs.update(lines=lines, unit=unit, source=str(path))
    return frame


def _where(frame: pd.DataFrame, mask) -> str:
    """'line(s) 3, 7 and 2 more' (or records, or rows of a DataFrame) for the rows a mask selects."""
    mask = np.asarray(mask, bool)
    lines = frame.attrs.get("lines")
    unit = frame.attrs.get("unit", "row")
    if lines is None or len(lines) != len(frame):
        lines, unit = np.arange(len(frame)), "row"
    chosen = np.asarray(lines)[mask]
    more = len(chosen) - EXAMPLES_SHOWN
    return (f"{unit}{'s' if len(chosen) > 1 else ''} " + ", ".join(str(int(v)) for v in chosen[:EXAMPLES_SHOWN])
            + (f" and {more} more" if more > 0 else ""))


def _numbers(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(numbers, empty): each value as a float (NaN when it is not a finite number), and which were empty."""
    empty = values.isna().to_numpy() | (values.astype(str).str.strip() == "").to_numpy()
    booleans = values.map(lambda v: isinstance(v, (bool, np.bool_))).to_numpy(bool)  # JSON true is not a score
    numbers = pd.to_numeric(values.where(~booleans & ~empty), errors="coerce").to_numpy(float, copy=True)
    numbers[~np.isfinite(numbers)] = np.nan
    return numbers, empty


def _column_problems(frame: pd.DataFrame) -> list:
    missing = [c for c in REQUIRED if c not in frame.columns]
    if not missing:
        return []
    extra = [c for c in frame.columns if c not in (*REQUIRED, *OPTIONAL)]
    return [f"The judge-plus-human table lacks the column(s) {missing} (its columns: {list(frame.columns)}); it "
            f"needs {TABLE_TEXT}; --columns maps other names, e.g. judge=gpt4{suggestions(missing, extra)}"]


def _value_problems(frame: pd.DataFrame) -> tuple[pd.DataFrame, list]:
    """The table with typed columns, and the problems of single values (empty ids, scores that are not numbers)."""
    problems, typed = [], pd.DataFrame(index=frame.index)
    for column in ("system", "document", *[c for c in OPTIONAL if c in frame.columns]):
        # object dtype, not pandas' arrow-backed strings: the checks and the analysis select rows many times
        missing = frame[column].isna().to_numpy()
        text = frame[column].astype(str).str.strip().to_numpy(dtype=object)
        text[missing] = ""
        empty = text == ""
        typed[column] = pd.Series(text, index=frame.index, dtype=object)
        if column == "annotator":
            continue  # needed only beside a human score (below)
        if empty.any():
            problems.append(f"The '{column}' column is empty on {_where(frame, empty)}: every row needs its {column}")
    for column in ("judge", "human"):
        numbers, empty = _numbers(frame[column])
        bad = np.isnan(numbers) & (~empty if column == "human" else True)
        if bad.any():
            example = frame[column][bad].iloc[0]
            shown = "an empty value" if empty[bad][0] else repr(getattr(example, "item", lambda: example)())
            allowed = ("a finite number on every row (the judge scored every output)" if column == "judge" else
                       "a finite number, or nothing where no human scored the output")
            verb = "holds" if bad.sum() == 1 else "hold"
            problems.append(f"The '{column}' column must hold {allowed}, but {_where(frame, bad)} {verb} {shown}"
                            f"{' and others' if bad.sum() > 1 else ''}")
        typed[column] = numbers
    if "annotator" in frame.columns:
        nameless = np.isfinite(typed["human"].to_numpy()) & (typed["annotator"] == "").to_numpy(bool)
        if nameless.any():
            problems.append(f"The 'annotator' column is empty beside a human score on {_where(frame, nameless)}: "
                            "name who gave each human score (or drop the column: each score is then one observation)")
    return typed, problems


def _judge_problems(frame: pd.DataFrame, typed: pd.DataFrame, rows: np.ndarray, label: str) -> list:
    """Problems of one judge's rows (``rows``, a mask over the whole table; ``label`` names the judge)."""
    own = typed[rows]
    scored = rows & np.isfinite(typed["human"].to_numpy())
    problems = []
    if not scored.any():
        return [f"The table has no human-judged rows{label}: the 'human' column is empty on every row. PPI corrects "
                "the judge with human scores of some outputs; give at least 2 human scores per system"]
    judge = own["judge"].to_numpy()
    if np.ptp(judge) == 0:
        problems.append(f"The 'judge' column holds the same value ({judge[0]:g}) on every row{label}: a constant "
                        "judge says nothing about the outputs (PPI would be the human-only mean); check the column, "
                        "or analyse the human scores alone (`simdesign analyse` on a table with a 'score' column)")
    keys = [typed["system"], typed["document"]] + ([typed["judge_name"]] if "judge_name" in typed else [])
    spread = typed["judge"].groupby(keys, dropna=False).transform("nunique").to_numpy()
    mixed = rows & (spread > 1)
    if mixed.any():
        problems.append(f"The judge's score differs between rows of the same output (system and document){label} on "
                        f"{_where(frame, mixed)}: give each output one judge score (average repeated calls, or name "
                        "the judges in a judge_name column)")
    if "annotator" in typed:
        twice = scored & typed.duplicated(["system", "document", "annotator", *(["judge_name"] if "judge_name" in typed
                                                                               else [])], keep=False).to_numpy()
        if twice.any():
            problems.append(f"An annotator scored the same output twice{label} on {_where(frame, twice)}: keep one "
                            "human score per annotator and output")
    counts = own.loc[np.isfinite(own["human"].to_numpy()), "system"].value_counts()
    for system in pd.unique(own["system"]):
        found = int(counts.get(system, 0))
        if found < 2:
            theirs = rows & (typed["system"] == system).to_numpy()
            what = "no human-judged rows" if found == 0 else "only one human score"
            problems.append(f"System {system!r} has {what}{label} (its rows: {_where(frame, theirs)}): PPI estimates a "
                            "system's mean from its own human scores, at least 2 of them; add human scores of its "
                            "outputs or leave the system out")
    return problems


def scale_note(judge: np.ndarray, human: np.ndarray) -> str | None:
    """A sentence when judge and human scores look like different scales (None when they look alike).

    They differ when the judge's observed range is not inside the humans' or spans less than half of it.

    >>> scale_note(np.array([1.0, 10.0]), np.array([1.0, 5.0]))[:60]
    "the judge's scores range 1..10 and the human scores 1..5: th"
    >>> scale_note(np.array([2.0, 5.0]), np.array([1.0, 5.0])) is None
    True
    """
    low, high = float(np.min(judge)), float(np.max(judge))
    human_low, human_high = float(np.min(human)), float(np.max(human))
    inside = human_low <= low and high <= human_high
    if inside and (high - low) >= NARROW_SCALE * (human_high - human_low):
        return None
    return (f"the judge's scores range {low:g}..{high:g} and the human scores {human_low:g}..{human_high:g}: the "
            "scales differ. That is allowed: PPI's rectifier (the mean human-minus-judge difference on the "
            "human-scored outputs) puts every PPI estimate on the human scale and removes the judge's offset, and "
            "PPI++'s weight lam absorbs a difference in spread (PPI with lam = 1 stays valid but gains less). The "
            "judge-only column is on the judge's scale and the judge's bias mixes scale and bias: compare neither "
            "with human scores")


def check_judge_table(frame: pd.DataFrame, systems=None) -> tuple[pd.DataFrame, dict]:
    """Check a judge-plus-human table (module docstring) and type its columns.

    Parameters
    ----------
    frame : pandas.DataFrame
        As read by :func:`read_judge_table` (or built in Python: rows are then named by position).
    systems : sequence of str, optional
        The systems' order: exactly the table's systems (default: first appearance).

    Returns
    -------
    table : pandas.DataFrame
        ``system, document`` (stripped text), ``judge``, ``human`` (floats, NaN = no human score), and
        ``annotator``, ``judge_name`` when present.
    info : dict
        ``systems`` (the order), ``judges`` (names; ``[None]`` without a judge_name column), ``notes`` per judge
        (the scales), ``annotators`` (True when the column is there).

    Raises
    ------
    DataError
        Every problem at once, naming the column and the lines: missing columns, empty ids, scores that are not
        numbers, no human-judged rows, a system without (or with one) human score, a constant judge, an output
        with two judge scores, an annotator scoring an output twice.
    """
    if not isinstance(frame, pd.DataFrame):
        raise DataError("The judge-plus-human table must be a pandas DataFrame or a file path; got "
                        f"{type(frame).__name__}")
    problems = _column_problems(frame)
    if problems:
        raise DataError(problems)
    typed, problems = _value_problems(frame)
    if problems:
        raise DataError(problems)
    judges = list(pd.unique(typed["judge_name"])) if "judge_name" in typed else [None]
    notes = {}
    for judge in judges:
        rows = np.ones(len(typed), bool) if judge is None else (typed["judge_name"] == judge).to_numpy(bool)
        problems += _judge_problems(frame, typed, rows, "" if judge is None else f" (judge {judge!r})")
        scored = typed[rows & np.isfinite(typed["human"].to_numpy())]
        if not problems:
            notes[judge] = scale_note(typed.loc[rows, "judge"].to_numpy(), scored["human"].to_numpy())
    order = _system_order(typed, systems, problems)
    if problems:
        raise DataError(problems)
    return typed, {"systems": order, "judges": judges, "scale_notes": notes, "annotators": "annotator" in typed}


def _system_order(typed: pd.DataFrame, systems, problems: list) -> list:
    found = list(pd.unique(typed["system"]))
    if systems is None:
        return found
    systems = [str(s) for s in systems]
    if sorted(systems) != sorted(found):
        strays = [s for s in systems if s not in found]
        problems.append(f"systems {systems} do not match the table's {found}: name each of its systems once"
                        f"{suggestions(strays, found)}")
    return systems
