"""Tables of judgements with one value per output (Likert scores, ranks): reading and checking them.

The reader every method's table goes through (CSV with named columns, encodings, line numbers in messages);
the checks name the offending rows by their line in the file.
"""
from __future__ import annotations

import csv
import hashlib
import io
from pathlib import Path

import numpy as np
import pandas as pd

from simdesign.core.checks import missing_file_problem
from simdesign.core.errors import ConfigError, DataError
from simdesign.core.suggest import did_you_mean

REQUIRED_COLUMNS = ("annotator", "document", "system", "score")
# How many offending rows an error message lists before it says "and N more".
EXAMPLES_SHOWN = 5
# Scores are points of an ordinal scale; far beyond any scale a value is a typo or a unit mix-up, and
# 1e30 would overflow the integers the fit works with.
MAX_SCORE = 1e6



def _value_columns() -> list:
    """Every registered method's judgement column (a misspelt ``--columns rnak=...`` gets 'rank' suggested)."""
    from simdesign.methods import all_methods

    return [m.value_column for m in all_methods()]


def parse_scale(text: str) -> tuple:
    """'1..7' or '1,2,3,4,5' -> (1, ..., 7): the ordered score values of a scale.

    Raises
    ------
    ConfigError
        Not integers, fewer than two values, or not increasing.
    """
    text = str(text).strip()
    try:
        if ".." in text:
            low, high = (int(part) for part in text.split(".."))
            values = tuple(range(low, high + 1))
        else:
            values = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError as exc:
        raise ConfigError(f"The scale must be 'LOW..HIGH' (e.g. 1..7) or a comma-separated list of integers; "
                          f"got {text!r}") from exc
    if len(values) < 2 or list(values) != sorted(set(values)):
        raise ConfigError(f"The scale must have at least two increasing values; got {text!r}")
    return values


def parse_columns(text: str | None) -> dict:
    """'annotator=worker,score=rating' -> {'worker': 'annotator', 'rating': 'score'} (file name -> ours)."""
    if not text:
        return {}
    mapping = {}
    for item in text.split(","):
        ours, _, theirs = item.partition("=")
        ours, theirs = ours.strip(), theirs.strip()
        if ours not in REQUIRED_COLUMNS or not theirs:
            raise ConfigError(f"--columns takes NAME=COLUMN items with NAME one of {list(REQUIRED_COLUMNS)}; "
                              f"got {item!r}{did_you_mean(ours, [*REQUIRED_COLUMNS, *_value_columns()])}")
        mapping[theirs] = ours
    return mapping


def _line_numbers(frame: pd.DataFrame) -> np.ndarray:
    """The file line of every row: recorded by :func:`read_judgements`, else header = line 1, no blank lines."""
    lines = frame.attrs.get("lines")
    if lines is not None and len(lines) == len(frame):
        return np.asarray(lines)
    return np.arange(len(frame)) + 2


def _rows(frame: pd.DataFrame, mask, limit: int = EXAMPLES_SHOWN) -> str:
    """File line numbers of the rows selected by a boolean mask, shortened."""
    lines = _line_numbers(frame)[np.asarray(mask, dtype=bool)]
    shown = ", ".join(str(int(line)) for line in lines[:limit])
    more = len(lines) - limit
    return shown + (f" and {more} more" if more > 0 else "")


def _near_duplicate_names(frame: pd.DataFrame, column: str, fold_case: bool) -> list:
    """Messages for ids that differ from another id of the column only in surrounding spaces (or case).

    ' seneca' beside 'seneca', or 'bart' beside 'BART', is almost always a typo that would
    otherwise become a system (or annotator, document) of its own.
    """
    values = frame[column].dropna().astype(str)
    key = values.str.strip()
    if fold_case:
        key = key.str.casefold()
    messages = []
    for _, names in values.groupby(key):
        distinct = list(pd.unique(names))
        if len(distinct) < 2:
            continue
        counts = names.value_counts()
        odd = [name for name in distinct if name != counts.index[0]]
        where = frame[column].isin(odd).to_numpy()
        messages.append(f"The '{column}' column has {distinct!r}, which differ only in "
                        f"{'case or ' if fold_case else ''}surrounding spaces; the less frequent "
                        f"{odd!r} (lines {_rows(frame, where)}) is probably a typo: spell each the same way")
    return messages


def validate_judgements(frame: pd.DataFrame, scale=None, *, names: dict | None = None, as_ranks: bool = False) -> tuple:
    """Check a judgements table; return its scale. Every problem is reported, nothing is dropped.

    The one check of every command that reads judgements (``fit``, ``check``,
    ``reliability``), so a table one command refuses is refused by all.

    Parameters
    ----------
    frame : pandas.DataFrame
        Columns ``annotator, document, system, score`` (others are ignored).
    scale : sequence of int, optional
        The scale's score values. When given, every score must be one of
        them and every value must occur (a category nobody used leaves its
        thresholds unidentified). Default: the observed values.
    names : dict, optional
        Our column name -> the file's, so messages name the file's columns.
    as_ranks : bool
        The 'score' column holds ranks (:func:`simdesign.tables.ranks.check_ranks` reuses these checks):
        the rules on a Likert scale's shape are left out.

    Returns
    -------
    tuple of int
        The scale.

    Raises
    ------
    ConfigError
        With one message per problem, naming lines: missing columns, missing
        values, non-integer scores, duplicate judgements (an annotator scoring
        the same system's output for a document twice), fewer than two
        systems, a system with a single judgement, ids that differ only in
        surrounding spaces (system names also in case), scores outside the
        scale, unused scale values; without ``scale``, observed scores that
        are not a contiguous range of integers (a typo such as 9 on a 1..7
        scale would become a category of its own) or that look like ranks
        (every annotator gives each document's systems a permutation of
        1..S: a Rank file whose column is named 'score').
    """
    names = names or {}
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise DataError(f"The judgements table lacks the column(s) {missing}; it has {list(frame.columns)} "
                          "(map other names with --columns annotator=...,document=...,system=...,score=...)")
    if frame.empty:
        raise DataError("The judgements table has no rows")
    score = pd.to_numeric(frame["score"], errors="coerce")
    errors = _value_errors(frame, score, names) + _identity_errors(frame, names)
    given = scale is not None
    scale, scale_errors = _scale_and_errors(frame, score, scale)
    errors += scale_errors
    if not given and not as_ranks and not errors:
        errors += _scale_shape_errors(frame, score, scale, names)
    if len(scale) < 2 and not errors:
        errors.append(f"The 'score' column needs at least two distinct values; got {list(scale)}")
    if errors:
        raise DataError(errors)
    return scale


def _scale_shape_errors(frame: pd.DataFrame, score: pd.Series, scale: tuple, names: dict) -> list:
    """Without ``--scale``: observed scores must be a contiguous range and must not look like ranks.

    One rule for every command that reads Likert judgements (fit, check, reliability, analyse), so a
    table one refuses is refused by all; ``--scale`` says what the scale is and lifts both.
    """
    column = _column_text("score", names)
    counts = score.value_counts().sort_index()
    shown = ", ".join(f"{int(value)}: {int(count)}" for value, count in counts.items())
    if len(scale) >= 2 and scale[-1] - scale[0] + 1 != len(scale):
        gaps = sorted(set(range(scale[0], scale[-1] + 1)) - set(scale))
        bordering = [value for value in counts.index if value - 1 in gaps or value + 1 in gaps]
        rare = min(bordering, key=lambda value: counts[value])  # the likeliest typo: rare, beside a gap
        return [f"The {column} column's values are not a contiguous range of integers (counts {{{shown}}}; "
                f"{_short_list(gaps)} never occur): a typo such as {int(rare)} (lines "
                f"{_rows(frame, (score == rare).to_numpy())}) would become a category of its own. Correct it, "
                "or say which values the scale has with --scale (API: scale=): it refuses scores outside it, "
                f"and --scale {','.join(map(str, scale))} accepts every observed value"]
    if _looks_like_ranks(frame, score):
        n_systems = frame["system"].nunique()
        theirs = names.get("score", "score")
        return [f"The {column} column looks like ranks, not Likert scores: every annotator gives each document's "
                f"{n_systems} systems the values {scale[0]}..{scale[-1]} once each (counts {{{shown}}}). Read as "
                "Likert, a rank of 1 (best) would count as the lowest score, reversing the conclusions. If these "
                f"are ranks, say --method rank --columns rank={theirs} (or name the column 'rank'); if they are "
                f"Likert scores, give the scale: --scale {scale[0]}..{scale[-1]}"]
    return []


def _looks_like_ranks(frame: pd.DataFrame, score: pd.Series) -> bool:
    """Every (annotator, document) scores all S systems with a permutation of 0..S-1 or 1..S (at least 3 of them).

    By chance a Likert study does so with probability S!/K^S per (annotator, document) on a K-point
    scale (0.04 for 5 systems on 5 points): three or more all doing so is not chance.
    """
    n_systems = frame["system"].nunique()
    table = pd.DataFrame({"a": frame["annotator"], "d": frame["document"], "s": score})
    groups = table.groupby(["a", "d"], sort=False)["s"]
    if groups.ngroups < 3 or n_systems < 3:
        return False
    sizes, distinct, lowest, highest = groups.size(), groups.nunique(), groups.min(), groups.max()
    complete = (sizes == n_systems) & (distinct == n_systems) & (highest - lowest == n_systems - 1) \
        & lowest.isin([0, 1])
    return bool(complete.all()) and lowest.nunique() == 1


def _short_list(values: list, limit: int = 8) -> str:
    """``[2, 3]`` or ``[2, 3, ..., 99] (97 values)`` for a message."""
    if len(values) <= limit:
        return str(values)
    return f"[{', '.join(map(str, values[:limit // 2]))}, ..., {', '.join(map(str, values[-2:]))}] ({len(values)} values)"


def _column_text(column: str, names: dict) -> str:
    """A column for a message, with the file's own name when --columns mapped it, so users find it."""
    theirs = names.get(column, column)
    return f"'{column}'" if theirs == column else f"'{column}' (file column '{theirs}')"


def _value_errors(frame: pd.DataFrame, score: pd.Series, names: dict) -> list:
    """Messages for missing values and for scores that are not integers."""
    errors = []
    for column in REQUIRED_COLUMNS:
        absent = frame[column].isna().to_numpy()
        if absent.any():
            errors.append(f"The {_column_text(column, names)} column has {absent.sum()} missing value(s) (lines "
                          f"{_rows(frame, absent)}); fill or remove them: rows are never dropped silently")
    not_numeric = (score.isna() & frame["score"].notna()).to_numpy()
    if not_numeric.any():
        errors.append(f"The {_column_text('score', names)} column has {not_numeric.sum()} non-numeric value(s) "
                      f"(lines {_rows(frame, not_numeric)}), e.g. {frame['score'][not_numeric].iloc[0]!r}")
    huge = (score.notna() & ~(score.abs() <= MAX_SCORE)).to_numpy()  # inf and 1e30 too (NaN is caught above)
    if huge.any():
        errors.append(f"The {_column_text('score', names)} column has {huge.sum()} value(s) beyond +-{MAX_SCORE:g} "
                      f"(lines {_rows(frame, huge)}), e.g. {float(score[huge].iloc[0])!r}; scores are points of "
                      "an ordinal scale")
    fractional = (score.notna() & (score.abs() <= MAX_SCORE) & (score != score.round())).to_numpy()
    if fractional.any():
        errors.append(f"The {_column_text('score', names)} column has {fractional.sum()} non-integer value(s) "
                      f"(lines {_rows(frame, fractional)}), e.g. {float(score[fractional].iloc[0])!r}; scores are "
                      "points of an ordinal scale")
    return errors


def _identity_errors(frame: pd.DataFrame, names: dict) -> list:
    """Messages for repeated judgements, near-duplicate ids and too few systems (or judgements of one)."""
    errors = []
    keys = list(REQUIRED_COLUMNS[:3])
    duplicated = (frame.duplicated(keys, keep=False) & frame[keys].notna().all(axis=1)).to_numpy()
    if duplicated.any():
        first = frame.loc[duplicated, keys].iloc[0].to_dict()
        errors.append(f"{duplicated.sum()} rows repeat an (annotator, document, system) judgement (lines "
                      f"{_rows(frame, duplicated)}; e.g. {first}); keep one judgement per annotator and output")
    for column in keys:
        errors += _near_duplicate_names(frame, column, fold_case=column == "system")
    per_system = frame["system"].value_counts()
    lonely = sorted(per_system.index[per_system == 1].astype(str))
    if lonely:
        errors.append(f"The system(s) {lonely} have a single judgement (lines "
                      f"{_rows(frame, frame['system'].isin(lonely))}): too few to estimate anything about them; "
                      "a typo in a system name?")
    if frame["system"].nunique() < 2:
        errors.append(f"The {_column_text('system', names)} column needs at least two systems to compare; "
                      f"it has {list(pd.unique(frame['system'].dropna()))}")
    return errors


def _scale_and_errors(frame: pd.DataFrame, score: pd.Series, scale) -> tuple[tuple, list]:
    """The scale (given, else observed) and messages for scores outside it or values of it never used."""
    usable = score.notna() & (score.abs() <= MAX_SCORE) & (score == score.round())
    observed = np.unique(score[usable].to_numpy()).astype(np.int64)
    if scale is None:
        return tuple(int(v) for v in observed), []
    errors = []
    scale = tuple(int(v) for v in scale)
    outside = sorted(set(observed.tolist()) - set(scale))
    if outside:
        errors.append(f"Scores {outside} are outside the scale {list(scale)} (lines "
                      f"{_rows(frame, score.isin(outside))})")
    unused = sorted(set(scale) - set(observed.tolist()))
    if unused:
        remedy = "merge the unused categories into their neighbours"
        if not outside:
            remedy = f"fit on the observed values (--scale {','.join(str(v) for v in observed)}) or " + remedy
        errors.append(f"The scale value(s) {unused} of {list(scale)} never occur: the thresholds around them "
                      f"cannot be estimated; {remedy}")
    return scale, errors


def _decode(path: Path) -> str:
    """The file's text; bytes that are not UTF-8 are an error naming their line."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")  # a byte-order mark (spreadsheet export) is not part of the header
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise DataError(f"{path}: line {line} is not UTF-8 text (byte 0x{data[exc.start]:02x} at character "
                          f"{column}); save the file as UTF-8") from None


def _record_lines(text: str, path: Path) -> tuple[list, list]:
    """(header fields, [(first line, number of fields)] per non-blank record), as the csv module parses it.

    pandas reports neither where a row starts (quoted fields may span lines;
    blank lines are skipped) nor every row with a wrong number of fields, so
    the records are located once with the standard library's parser.
    """
    reader = csv.reader(io.StringIO(text, newline=""))
    header, records, previous_end = None, [], 0
    try:
        for row in reader:
            first_line, previous_end = previous_end + 1, reader.line_num
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            if header is None:
                header = row
            else:
                records.append((first_line, len(row)))
    except csv.Error as exc:
        raise DataError(f"{path}: line {reader.line_num} is not valid CSV ({exc})") from None
    return header or [], records


def read_table_csv(path, columns: dict | None = None, required=REQUIRED_COLUMNS) -> pd.DataFrame:
    """Read a judgements CSV as strings, with each row's file line, and apply ``--columns``.

    The CSV reading that every table of judgements (Likert or Rank) goes through, so that an
    unreadable file gets the same message whatever reads it.

    Parameters
    ----------
    path : str or path-like
    columns : dict, optional
        File column name -> our name (see :func:`parse_columns`).
    required : sequence of str
        Our column names, named in the message for an empty file.

    Returns
    -------
    pandas.DataFrame
        All columns as strings, renamed by ``columns``; ``attrs['lines']`` holds each row's line.

    Raises
    ------
    ConfigError
        A missing or empty file, bytes that are not UTF-8 (line named), rows with more or fewer
        fields than the header (lines named), ``columns`` naming a column the file lacks or mapping
        onto a name the file already has.
    """
    path = Path(path)
    problem = missing_file_problem(path, "judgements", "CSV")  # missing, or not a regular file
    if problem:
        raise DataError(problem)
    text = _decode(path)
    header, records = _record_lines(text, path)
    if not header:
        raise DataError(f"{path} is empty: it needs a header line naming the columns "
                          f"{', '.join(required)} and one row per judgement")
    ragged = [(line, n) for line, n in records if n != len(header)]
    if ragged:
        shown = ", ".join(f"line {line} has {n}" for line, n in ragged[:EXAMPLES_SHOWN])
        more = f" and {len(ragged) - EXAMPLES_SHOWN} more" if len(ragged) > EXAMPLES_SHOWN else ""
        raise DataError(f"{path}: the header has {len(header)} fields but {shown}{more} (a comma inside an "
                          "unquoted value?); quote such values or fix the rows")
    try:
        raw = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=True)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise DataError(f"{path} is not a readable CSV table: {exc}") from None
    lines = [line for line, _ in records] if len(records) == len(raw) else None
    columns = dict(columns or {})
    problems = []
    for theirs, ours in columns.items():
        if theirs not in raw.columns:
            problems.append(f"--columns maps {ours}={theirs}, but the file has no column '{theirs}' "
                            f"(its columns: {list(raw.columns)})")
        elif ours in raw.columns and ours != theirs and ours not in columns:
            problems.append(f"--columns maps {ours}={theirs}, but the file also has a column '{ours}': "
                            f"two '{ours}' columns; drop or rename one of them in the file")
    if problems:
        raise DataError(problems)
    raw = raw.rename(columns=columns)
    raw.attrs["lines"] = lines
    return raw


def read_judgements(path, columns: dict | None = None, scale=None):
    """Read and check a Likert judgements CSV: the reader of every command that reads judgements.

    Parameters
    ----------
    path : str or path-like
    columns : dict, optional
        File column name -> our name (see :func:`parse_columns`).
    scale : sequence of int, optional

    Returns
    -------
    frame : pandas.DataFrame
        Columns ``annotator, document, system, score`` (scores as int64;
        ids as strings, so '07' and '7' stay distinct); ``frame.attrs['lines']``
        holds each row's line in the file.
    scale : tuple of int

    Raises
    ------
    ConfigError
        Everything :func:`read_table_csv` and :func:`validate_judgements` check.
    """
    columns = dict(columns or {})
    raw = read_table_csv(path, columns)
    return checked_judgements(raw, scale, names={ours: theirs for theirs, ours in columns.items()})


def checked_judgements(raw: pd.DataFrame, scale=None, *, names: dict | None = None) -> tuple[pd.DataFrame, tuple]:
    """Validate a judgements table (:func:`validate_judgements`) and keep its four columns, scores as integers.

    Returns
    -------
    frame : pandas.DataFrame
    scale : tuple of int
    """
    scale = validate_judgements(raw, scale, names=names)
    frame = raw[list(REQUIRED_COLUMNS)].copy()
    frame["score"] = pd.to_numeric(frame["score"]).round().astype(np.int64)
    frame.attrs["lines"] = raw.attrs.get("lines")
    return frame, scale


def file_sha256(path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
