"""Tables of pairwise preferences: A/B judgements and Arena battle logs (the pairwise method's table steps).

Two file forms, from CSV, JSON (a list of records) or JSON Lines (:func:`simdesign.tables.records.read_records`):

* a **pairwise table**: ``annotator, document, system_a, system_b, preferred``, one row per comparison,
  ``preferred`` naming the row's ``system_a`` or ``system_b``, or ``tie``; ``system_a`` is the output shown
  first (what :meth:`simdesign.core.judgements.Judgements.comparisons_frame` writes);
* a **battle log** in the Chatbot Arena's form: ``question_id, model_a, model_b, winner`` with ``winner`` one of
  ``model_a``, ``model_b``, ``tie``, ``tie (bothbad)`` (both a tie here), and an optional ``judge`` column. The
  prompt (``question_id``) is the document and the judge the annotator; without a ``judge`` column every battle
  has a judge of its own (the analysis then resamples prompts only).

Both become one form (:data:`PAIR_COLUMNS`, ``preferred`` naming a system or ``tie``), checked whole: every
problem is reported with its file line and field, nothing is dropped. Refused: a missing column, an empty field,
a system compared with itself, a ``winner`` (``preferred``) value that names neither side nor a tie, a system
called ``tie`` (the word for a tie), rows that repeat another row in every field (the same battle twice), a
table with a single system, an empty file.

:func:`comparisons_of` turns a checked table into arrays (system indices in a given order) and
:func:`study_judgements` into a study's :class:`~simdesign.core.judgements.Judgements`, which the registered
pairwise tests read.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from simdesign.core.errors import ConfigError, DataError
from simdesign.core.judgements import Judgements
from simdesign.core.suggest import did_you_mean, suggestions
from simdesign.methods.pairwise import PAIRWISE, output_points, system_pair_indices
from simdesign.tables.judgements import _line_numbers, _rows
from simdesign.tables.records import read_records

PAIR_COLUMNS = ("annotator", "document", "system_a", "system_b", "preferred")
ARENA_COLUMNS = ("question_id", "model_a", "model_b", "winner")
ARENA_JUDGE = "judge"
# winner -> what it says: the side preferred, or a tie ('tie (bothbad)': both answers bad, a tie all the same)
ARENA_WINNERS = {"model_a": "a", "model_b": "b", "tie": "tie", "tie (bothbad)": "tie"}
TIE = "tie"
# Where a battle log has no judge column, each battle is judged by one of these (one per battle).
NO_JUDGE_PREFIX = "battle@line"


def read_pairwise_table(path, columns: dict, scale=None) -> tuple[pd.DataFrame, dict]:
    """Read and check a pairwise table or an Arena battle log (the pairwise method's ``read_table`` step).

    Returns
    -------
    frame : pandas.DataFrame
        :data:`PAIR_COLUMNS` (strings) and ``bothbad`` (an Arena 'tie (bothbad)'), ``attrs['lines']`` each row's
        file line.
    info : dict
        ``method``, ``format`` ('pairs' or 'arena'), ``judges`` (whether the file names who judged),
        ``n_systems``, ``file_format`` (csv, json, jsonl).
    """
    from simdesign.tables.records import file_format

    if scale is not None:
        raise ConfigError("--scale applies to Likert tables; a pairwise table has no scale (a comparison prefers "
                          "one output or ties)")
    raw = read_records(path, columns, required=PAIR_COLUMNS[:-1] + (
        f"{PAIR_COLUMNS[-1]} (or an Arena battle log's {', '.join(ARENA_COLUMNS)})",))
    frame, info = checked_pairs(raw, where=str(path))
    return frame, {**info, "file_format": file_format(path)}


def orient_pairwise(frame: pd.DataFrame, base=None, scale=None, read_form: bool = False) -> tuple[pd.DataFrame, dict]:
    """An in-memory pairwise table or battle log in :func:`read_pairwise_table`'s form, checked (the pairwise
    method's ``orient`` step); line numbers in messages count the header as line 1."""
    if scale is not None:
        raise ConfigError("A scale applies to Likert tables; a pairwise table has no scale")
    raw = pd.DataFrame({name: column.astype(str).astype(object).where(column.notna(), np.nan)
                        for name, column in frame.reset_index(drop=True).items()})
    raw.attrs["lines"] = frame.attrs.get("lines")
    found, info = checked_pairs(raw, where="the table")
    return found, {**info, "file_format": "DataFrame"}


def describe_pairwise(info: dict) -> str:
    """One line saying how a pairwise table was read (the pairwise method's ``describe`` step)."""
    if info.get("format") == "arena":
        judges = ("judges from the 'judge' column" if info.get("judges") else
                  "no 'judge' column: each battle counts as judged by a judge of its own")
        return (f"Arena battle log ({info.get('file_format', 'csv')}): question_id = prompt (document), "
                f"model_a shown first, winner 'tie' and 'tie (bothbad)' both ties; {judges}")
    return (f"pairwise table ({info.get('file_format', 'csv')}): one comparison per row, system_a shown first, "
            "preferred = a system of the row or 'tie'")


# ---------------------------------------------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------------------------------------------

def table_format(columns) -> str:
    """'pairs' or 'arena': which of the two forms a table's columns are (:data:`PAIR_COLUMNS` first).

    Raises
    ------
    DataError
        Neither form's columns are all there (naming what each lacks).
    """
    columns = set(columns)
    if set(PAIR_COLUMNS) <= columns:
        return "pairs"
    if set(ARENA_COLUMNS) <= columns:
        return "arena"
    lacks_pairs = [c for c in PAIR_COLUMNS if c not in columns]
    lacks_arena = [c for c in ARENA_COLUMNS if c not in columns]
    pairs = f"a pairwise table needs the columns {list(PAIR_COLUMNS)} (it lacks {lacks_pairs})"
    arena = (f"an Arena battle log needs {list(ARENA_COLUMNS)}, and an optional '{ARENA_JUDGE}' (it lacks "
             f"{lacks_arena})")
    looks_arena = bool(columns & (set(ARENA_COLUMNS) - set(PAIR_COLUMNS)))
    looks_pairs = bool(columns & {"system_a", "system_b", "preferred"})
    said = arena if looks_arena and not looks_pairs else pairs if looks_pairs and not looks_arena else \
        f"{pairs}, or {arena}"
    near = suggestions(lacks_pairs + lacks_arena, sorted(map(str, columns)))
    raise DataError(f"{said[0].upper()}{said[1:]}; the table has {sorted(map(str, columns))}{near}")


def checked_pairs(raw: pd.DataFrame, where: str = "the table") -> tuple[pd.DataFrame, dict]:
    """Check a table of strings in either form and return it in :data:`PAIR_COLUMNS` (see the module docstring).

    Raises
    ------
    DataError
        Every problem found, each naming the lines, the field and what is allowed.
    """
    form = table_format(raw.columns)
    # an array, not a list: pandas deep-copies attrs on every operation (a list of 10^5 lines costs seconds)
    raw.attrs["lines"] = np.asarray(_line_numbers(raw))
    if raw.empty:
        raise DataError(f"{where} has a header but no rows: it needs one row per comparison")
    fields = PAIR_COLUMNS if form == "pairs" else ARENA_COLUMNS + ((ARENA_JUDGE,) if ARENA_JUDGE in raw else ())
    problems = _empty_field_problems(raw, fields)
    if problems:  # the other checks read these fields
        raise DataError(problems)
    frame = _pairs_form(raw, form)
    problems = _value_problems(raw, frame, form) + _duplicate_problems(raw)
    systems = _systems_in_order(frame)
    if len(systems) < 2:
        problems.append(f"{where} compares a single system ({systems[0]!r}): Bradley-Terry strengths, win rates and "
                        "tests need at least two systems")
    if problems:
        raise DataError(problems)
    info = {"method": PAIRWISE.name, "format": form, "n_systems": len(systems),
            "judges": form == "pairs" or ARENA_JUDGE in raw.columns}
    return frame, info


def _empty_field_problems(raw: pd.DataFrame, fields) -> list:
    problems = []
    for field in fields:
        empty = raw[field].isna() | (raw[field].astype(str).str.strip() == "")
        if empty.any():
            problems.append(f"The '{field}' field is empty on line(s) {_rows(raw, empty)}: every comparison needs it")
    return problems


def _pairs_form(raw: pd.DataFrame, form: str) -> pd.DataFrame:
    """The table in :data:`PAIR_COLUMNS` (before the value checks: an unknown winner stays as written)."""
    strip = {name: raw[name].astype(str).str.strip() for name in raw.columns if name in PAIR_COLUMNS + ARENA_COLUMNS
             + (ARENA_JUDGE,)}
    if form == "pairs":
        frame = pd.DataFrame({name: strip[name] for name in PAIR_COLUMNS})
        frame["bothbad"] = False
    else:
        side = strip["winner"].map(ARENA_WINNERS)
        preferred = np.where(side == "a", strip["model_a"], np.where(side == "b", strip["model_b"],
                                                                      np.where(side == TIE, TIE, strip["winner"])))
        annotator = (strip[ARENA_JUDGE] if ARENA_JUDGE in strip else
                     pd.Series([f"{NO_JUDGE_PREFIX}{line}" for line in _line_numbers(raw)], index=raw.index))
        frame = pd.DataFrame({"annotator": annotator, "document": strip["question_id"], "system_a": strip["model_a"],
                              "system_b": strip["model_b"], "preferred": preferred,
                              "bothbad": strip["winner"] == "tie (bothbad)"})
    frame.attrs["lines"] = np.asarray(_line_numbers(raw))
    return frame


def _value_problems(raw: pd.DataFrame, frame: pd.DataFrame, form: str) -> list:
    problems = []
    same = frame["system_a"] == frame["system_b"]
    a, b = ("system_a", "system_b") if form == "pairs" else ("model_a", "model_b")
    if same.any():
        problems.append(f"A system is compared with itself ('{a}' equals '{b}') on line(s) {_rows(raw, same)}: "
                        "a comparison needs two different systems")
    if form == "arena":
        unknown = ~raw["winner"].astype(str).str.strip().isin(list(ARENA_WINNERS))
        if unknown.any():
            values = list(pd.unique(raw.loc[unknown, "winner"].astype(str)))[:5]
            problems.append(f"The 'winner' field holds {values} on line(s) {_rows(raw, unknown)}; allowed: "
                            f"{list(ARENA_WINNERS)}{did_you_mean(values[0], ARENA_WINNERS)}")
        return problems
    named_tie = (frame["system_a"] == TIE) | (frame["system_b"] == TIE)
    if named_tie.any():
        problems.append(f"A system is called '{TIE}' on line(s) {_rows(raw, named_tie)}: '{TIE}' is the "
                        "'preferred' column's word for a tie; rename the system")
    unknown = ~((frame["preferred"] == frame["system_a"]) | (frame["preferred"] == frame["system_b"])
                | (frame["preferred"] == TIE)) & ~same
    if unknown.any():
        first = int(np.flatnonzero(unknown.to_numpy())[0])
        row = frame.iloc[first]
        problems.append(f"The 'preferred' field names neither system of its row nor '{TIE}' on line(s) "
                        f"{_rows(raw, unknown)} (line {_line_numbers(raw)[first]}: {row['preferred']!r}; allowed "
                        f"there {row['system_a']!r}, {row['system_b']!r} or '{TIE}'"
                        f"{did_you_mean(row['preferred'], [row['system_a'], row['system_b'], TIE])})")
    return problems


def _duplicate_problems(raw: pd.DataFrame) -> list:
    """Rows equal to an earlier row in every field: the same comparison (battle) recorded twice."""
    repeated = raw.duplicated(keep="first").to_numpy()
    if not repeated.any():
        return []
    lines = _line_numbers(raw)
    firsts = raw.groupby(list(raw.columns), dropna=False, sort=False).ngroup().to_numpy()
    first_line = {}
    for group, line in zip(firsts, lines):
        first_line.setdefault(group, line)
    shown = ", ".join(f"{lines[k]} (as line {first_line[firsts[k]]})" for k in np.flatnonzero(repeated)[:5])
    more = int(repeated.sum()) - 5
    return [f"{int(repeated.sum())} row(s) repeat an earlier row in every field, the same comparison recorded twice: "
            f"line(s) {shown}{f' and {more} more' if more > 0 else ''}; drop the copies (judgements that really were "
            "given twice need a field that tells them apart, e.g. a judge or a time stamp)"]


# ---------------------------------------------------------------------------------------------------------------
# A checked table as arrays and as a study
# ---------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Comparisons:
    """A checked pairwise table as arrays, one entry per comparison.

    Attributes
    ----------
    systems : tuple of str
        The order the indices refer to.
    first, second : ndarray of int
        The systems shown first (``system_a``) and second.
    outcome : ndarray of float
        1 = ``first`` preferred, 0.5 a tie, 0 = ``second`` preferred.
    annotator, document : ndarray of int
        Dense codes of the judges and prompts (sorted names: ``annotators``, ``documents``).
    annotators, documents : ndarray of str
    judges : bool
        Whether the table says who judged (a battle log without a 'judge' column does not).
    """

    systems: tuple
    first: np.ndarray
    second: np.ndarray
    outcome: np.ndarray
    annotator: np.ndarray
    document: np.ndarray
    annotators: np.ndarray
    documents: np.ndarray
    judges: bool

    @property
    def n_systems(self) -> int:
        return len(self.systems)

    @property
    def size(self) -> int:
        return int(self.outcome.size)

    def pair_codes(self) -> tuple[np.ndarray, np.ndarray]:
        """Each comparison's pair (index into :func:`system_pair_indices`' order) and whether the pair's
        lower-indexed system was shown first."""
        low, high = np.minimum(self.first, self.second), np.maximum(self.first, self.second)
        n = self.n_systems
        return low * n - low * (low + 1) // 2 + (high - low - 1), self.first == low

    def low_outcome(self) -> np.ndarray:
        """The outcome for each pair's lower-indexed system (1 = it was preferred)."""
        return np.where(self.first < self.second, self.outcome, 1.0 - self.outcome)


def ordered_systems(frame: pd.DataFrame, systems=None) -> list:
    """The systems' order: ``systems`` (checked to be the table's, each once) or the order of first appearance."""
    found = list(_systems_in_order(frame))
    if systems is None:
        return found
    systems = [str(s) for s in systems]
    if sorted(systems) != sorted(found):
        strays = [s for s in systems if s not in set(found)]
        raise ConfigError(f"systems {systems} do not match the table's {sorted(found)}{suggestions(strays, found)}")
    return systems


def _systems_in_order(frame: pd.DataFrame) -> np.ndarray:
    """The systems in the order of first appearance (row by row, system_a before system_b)."""
    both = np.column_stack([frame["system_a"].to_numpy(object), frame["system_b"].to_numpy(object)])
    return pd.unique(both.ravel())


def comparisons_of(frame: pd.DataFrame, systems, judges: bool = True) -> Comparisons:
    """A checked table (:func:`checked_pairs`) as :class:`Comparisons` with the given system order."""
    index = {name: k for k, name in enumerate(systems)}
    missing = sorted(set(frame["system_a"]).union(frame["system_b"]) - set(index))
    if missing:
        raise DataError(f"The table's systems {missing} are not among {list(systems)}"
                        f"{suggestions(missing, list(systems))}")
    first = frame["system_a"].map(index).to_numpy(np.int64)
    second = frame["system_b"].map(index).to_numpy(np.int64)
    outcome = np.where(frame["preferred"] == frame["system_a"], 1.0,
                       np.where(frame["preferred"] == TIE, 0.5, 0.0))
    annotator, annotators = pd.factorize(frame["annotator"].astype(str), sort=True)
    document, documents = pd.factorize(frame["document"].astype(str), sort=True)
    return Comparisons(tuple(systems), first, second, outcome, annotator.astype(np.int64), document.astype(np.int64),
                       np.asarray(annotators), np.asarray(documents), bool(judges))


# A study's preference matrix is rows x pairs: beyond this many cells (about 0.5 GB) the layout is refused.
MAX_STUDY_CELLS = 60_000_000


@dataclass(frozen=True)
class StudyLayout:
    """Where each comparison sits in a study's (row, pair) layout: a row is one (annotator, document) and one
    occurrence of each pair in it (an annotator who compared a pair twice on a document fills two rows).

    Attributes
    ----------
    row, pair : ndarray of int
        Per comparison.
    low_first : ndarray of bool
        Per comparison: the pair's lower-indexed system was shown first.
    annotator, document, block : ndarray of int
        Per row (``block`` -1 without a block structure).
    """

    row: np.ndarray
    pair: np.ndarray
    low_first: np.ndarray
    annotator: np.ndarray
    document: np.ndarray
    block: np.ndarray

    @property
    def n_rows(self) -> int:
        return int(self.annotator.size)


def study_layout(comparisons: Comparisons) -> StudyLayout:
    """The (row, pair) layout of the comparisons (see :class:`StudyLayout`)."""
    pair, low_first = comparisons.pair_codes()
    n_pairs = comparisons.n_systems * (comparisons.n_systems - 1) // 2
    keys = pd.DataFrame({"a": comparisons.annotator, "d": comparisons.document, "q": pair})
    occurrence = keys.groupby(["a", "d", "q"], sort=False).cumcount().to_numpy()
    row, unique_rows = pd.factorize(pd.MultiIndex.from_arrays([keys["a"], keys["d"], occurrence]), sort=True)
    if len(unique_rows) * n_pairs > MAX_STUDY_CELLS:
        raise ConfigError(f"The table has {len(unique_rows)} (annotator, document) rows and {n_pairs} pairs of "
                          f"systems: {len(unique_rows) * n_pairs} cells, more than the {MAX_STUDY_CELLS} a study's "
                          "preference matrix holds here; analyse a subset of systems or prompts")
    annotator = unique_rows.get_level_values(0).to_numpy(np.int64)
    document = unique_rows.get_level_values(1).to_numpy(np.int64)
    block = shared_document_blocks(annotator, document) if comparisons.judges else np.full(annotator.size, -1)
    return StudyLayout(row.astype(np.int64), pair.astype(np.int64), low_first, annotator, document,
                       block.astype(np.int64))


def shared_document_blocks(annotator: np.ndarray, document: np.ndarray) -> np.ndarray:
    """Blocks as groups of annotators judging the same set of documents (-1 everywhere when sets overlap).

    The rule of :func:`simdesign.core.judgements._blocks_from_shared_documents`, in linear time (a battle log
    has many judges).
    """
    pairs = pd.DataFrame({"a": annotator, "d": document}).drop_duplicates()
    sets = pairs.groupby("a")["d"].agg(lambda d: frozenset(d.tolist()))
    distinct = list(dict.fromkeys(sets.tolist()))
    if sum(len(s) for s in distinct) != pairs["d"].nunique():
        return np.full(annotator.size, -1, dtype=np.int64)
    distinct.sort(key=min)
    number = {s: k for k, s in enumerate(distinct)}
    return sets.map(number).reindex(annotator).to_numpy(np.int64)


def study_judgements(comparisons: Comparisons, layout: StudyLayout | None = None) -> Judgements:
    """The comparisons as a study's :class:`~simdesign.core.judgements.Judgements` (what the tests read).

    Without a layout, the comparisons themselves (:meth:`Judgements.from_comparisons`: no dense matrix, so a
    log of any size); with one, the dense (row, pair) form a simulation of the data's design has.
    """
    if layout is None:
        block = (shared_document_blocks(comparisons.annotator, comparisons.document) if comparisons.judges
                 else np.full(comparisons.first.size, -1, dtype=np.int64))
        return Judgements.from_comparisons(comparisons.systems, comparisons.annotator, comparisons.document,
                                           block, comparisons.first, comparisons.second, comparisons.outcome,
                                           np.ones(comparisons.first.size, dtype=bool))
    n_pairs = comparisons.n_systems * (comparisons.n_systems - 1) // 2
    preferences = np.full((layout.n_rows, n_pairs), np.nan)
    preferences[layout.row, layout.pair] = comparisons.low_outcome()
    first_shown = np.zeros((layout.n_rows, n_pairs), dtype=bool)
    first_shown[layout.row, layout.pair] = layout.low_first
    return Judgements(scores=output_points(preferences, comparisons.n_systems), annotator=layout.annotator,
                      document=layout.document, block=layout.block, systems=comparisons.systems,
                      preferences=preferences, first_shown=first_shown)


__all__ = ["read_pairwise_table", "orient_pairwise", "describe_pairwise", "checked_pairs", "table_format",
           "Comparisons", "comparisons_of", "ordered_systems", "StudyLayout", "study_layout", "study_judgements",
           "shared_document_blocks", "system_pair_indices", "PAIR_COLUMNS", "ARENA_COLUMNS", "ARENA_WINNERS", "TIE"]
