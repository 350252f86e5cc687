"""Rank tables: reading, checking and orienting rankings of system outputs.

In a Rank study each annotator ranks the S outputs for a document from best
to worst (Steen & Markert 2021 ran every study with Likert scores and with
ranks). A Rank table has the columns ``annotator, document, system, rank``,
one row per ranked output.

Checks (every problem is reported with file line numbers, header = line 1;
nothing is dropped):

* the checks every judgements table gets (:func:`simdesign.tables.judgements.validate_judgements`:
  missing values, non-integers, an output ranked twice by one annotator);
* the ranks of every (annotator, document) are a permutation of 0..S-1 or
  of 1..S (no rank used twice, none outside the range, no system missing),
  with the same base in the whole file.

Orientation: on every method a higher latent value is better. Rank 1 is the
best output, so models and tests use the *reversed* rank ``S + 1 - rank``
(1-based), which makes positive effects mean better, as for Likert; tables
report mean ranks 1-based (1 = best), as the paper does.

Examples
--------
>>> import pandas as pd
>>> frame = pd.DataFrame({"annotator": ["a"] * 6, "document": ["d"] * 3 + ["e"] * 3,
...                       "system": ["x", "y", "z"] * 2, "rank": [0, 2, 1, 1, 0, 2]})
>>> check_ranks(frame)
0
>>> reversed_ranks(frame["rank"], base=0, n_systems=3).tolist()
[3, 1, 2, 2, 3, 1]
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from simdesign.core.errors import ConfigError, DataError
from simdesign.tables.judgements import _rows, read_table_csv, validate_judgements

RANK_COLUMNS = ("annotator", "document", "system", "rank")

# Names this module re-exported from simdesign.tables.recognise until issue 40: kept one release as deprecated
# aliases. Resolved when asked for (not imported here: tables -> method_steps -> ranks would be a cycle).
_MOVED_TO_TABLES = ("infer_method", "orient", "parse_columns_any", "read_table", "read_table_args", "describe")


def __getattr__(name: str):
    if name in _MOVED_TO_TABLES:
        import importlib
        import warnings

        warnings.warn(f"simdesign.tables.ranks.{name} moved to simdesign.tables.recognise.{name}; the old name goes in "
                      "the next release", DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module("simdesign.tables.recognise"), name)
    raise AttributeError(f"module 'simdesign.tables.ranks' has no attribute {name!r}")


def check_ranks(frame: pd.DataFrame, names: dict | None = None) -> int:
    """Check that each (annotator, document) ranks all systems with a permutation; return the base (0 or 1).

    Parameters
    ----------
    frame : pandas.DataFrame
        Columns ``annotator, document, system, rank``; the index gives line
        numbers (row i is file line i + 2).
    names : dict, optional
        Our column name -> the file's, for messages.

    Returns
    -------
    int
        0 when the ranks run 0..S-1 (0 = best), 1 when they run 1..S.

    Raises
    ------
    ConfigError
        Every problem found, with line numbers: the generic judgements
        checks, ranks outside 0..S-1 / 1..S, a rank used twice within one
        (annotator, document), a system missing from a ranking, or a file
        mixing both bases.
    """
    names = dict(names or {})
    rank_column = names.get("rank", "rank")
    missing = [c for c in RANK_COLUMNS if c not in frame.columns]
    if missing:
        raise DataError(f"The rank table lacks the column(s) {missing}; it has {list(frame.columns)} "
                          "(map other names with --columns annotator=...,document=...,system=...,rank=...)")
    errors = _generic_rank_errors(frame, names, rank_column)
    table = _usable_ranks(frame, errors)
    systems = sorted(table["system"].astype(str).unique())
    groups = table.groupby(["annotator", "document"], sort=False)
    base = _rank_base(frame, table, groups, rank_column, len(systems), errors)
    value_errors = _rank_value_errors(frame, table, base, len(systems))
    errors += value_errors + _incomplete_ranking_errors(frame, table, groups, systems)
    if value_errors and _mostly_not_rankings(table, len(systems)):
        errors.append(f"The {rank_column!r} column looks like Likert scores rather than ranks (values "
                      f"{sorted(int(v) for v in table['rank'].unique())[:10]} for {len(systems)} systems): if they are scores, say --method likert --columns score={rank_column} "
                      "(or name the column 'score')")
    if errors:
        raise DataError(errors)
    return base


def _mostly_not_rankings(table: pd.DataFrame, n_systems: int) -> bool:
    """True when at most half the (annotator, document) groups rank their systems 0..S-1 or 1..S, each once.

    Likert scores in a rank column almost never form such permutations (5 scores on a 7-point scale repeat or
    skip values), while a genuine rank table with a tie, a gap, a stray rank or rankings of both bases has
    most rankings intact: only the first deserves the remark that the column looks like Likert scores.
    """
    bases = [np.arange(start, start + n_systems) for start in (0, 1)]
    intact = [any(np.array_equal(np.sort(group.to_numpy()), ranks) for ranks in bases)
              for _, group in table.groupby(["annotator", "document"], sort=False)["rank"]]
    return sum(intact) <= len(intact) / 2


def _generic_rank_errors(frame: pd.DataFrame, names: dict, rank_column: str) -> list:
    """fit's judgements checks (missing values, non-integers, repeated outputs), worded for ranks.

    One validator for every table keeps a rank file and a score file refused for the same reasons.
    """
    as_scores = frame.rename(columns={"rank": "score"})
    try:
        validate_judgements(as_scores, names={**names, "score": rank_column}, as_ranks=True)
    except ConfigError as exc:
        return [message.replace("'score'", "'rank'").replace("'rank' (file column 'rank')", "'rank'")
                .replace("scores are points of an ordinal scale", "ranks are whole numbers")
                for message in exc.messages]
    return []


def _usable_ranks(frame: pd.DataFrame, errors: list) -> pd.DataFrame:
    """The rows with ids and a whole-number rank (the others are already reported), ranks as integers."""
    rank = pd.to_numeric(frame["rank"], errors="coerce")
    usable = frame.index[rank.notna() & (rank == rank.round()) & frame[["annotator", "document", "system"]]
                         .notna().all(axis=1)]
    if len(usable) == 0:
        raise DataError(errors or ["The rank table has no usable rows"])
    table = frame.loc[usable, ["annotator", "document", "system"]].copy()
    table["rank"] = rank[usable].astype(np.int64)
    return table


def _rank_base(frame: pd.DataFrame, table: pd.DataFrame, groups, rank_column: str, n_systems: int,
               errors: list) -> int:
    """0 or 1, from the lowest rank of each ranking; a file mixing both is reported in ``errors``."""
    lowest = groups["rank"].transform("min")
    bases = sorted(set(int(v) for v in groups["rank"].min()) & {0, 1})
    if bases == [0, 1]:
        ones = table.index[lowest == 1]
        errors.append(f"The {rank_column!r} column mixes bases: some rankings start at 0 and others at 1 "
                      f"(rankings starting at 1 on lines {_rows(frame, frame.index.isin(ones))}); use 0..{n_systems - 1} or 1..{n_systems} "
                      "in the whole file")
    return 0 if 0 in bases else 1


def _rank_value_errors(frame: pd.DataFrame, table: pd.DataFrame, base: int, n_systems: int) -> list:
    """Messages for ranks outside base..base+S-1 and for a rank used twice within one ranking."""
    errors = []
    allowed = range(base, base + n_systems)
    outside = table.index[~table["rank"].between(base, base + n_systems - 1)]
    if len(outside):
        errors.append(f"{len(outside)} rank(s) outside {base}..{base + n_systems - 1} ({n_systems} systems, "
                      f"ranks {'0 = best' if base == 0 else '1 = best'}) on lines {_rows(frame, frame.index.isin(outside))}, "
                      f"e.g. {int(table.loc[outside[0], 'rank'])}")
    repeated = table.index[table.duplicated(["annotator", "document", "rank"], keep=False)
                           & table["rank"].isin(allowed)]
    if len(repeated):
        first = table.loc[repeated[0]]
        errors.append(f"{len(repeated)} rows reuse a rank within one (annotator, document) (lines {_rows(frame, frame.index.isin(repeated))}; "
                      f"e.g. annotator {first['annotator']!r}, document {first['document']!r} gives rank "
                      f"{int(first['rank'])} twice); each ranking must use every rank once")
    return errors


def _incomplete_ranking_errors(frame: pd.DataFrame, table: pd.DataFrame, groups, systems: list) -> list:
    """A message for rankings that leave out some system (with up to three examples)."""
    n_systems = len(systems)
    per_ranking = groups["system"].agg(lambda s: frozenset(s.astype(str)))
    incomplete = per_ranking[per_ranking.map(len) < n_systems]
    if not len(incomplete):
        return []
    examples = []
    lines = []
    for (annotator, document), present in incomplete.items():
        rows = table.index[(table["annotator"] == annotator) & (table["document"] == document)]
        lines.extend(rows)
        if len(examples) < 3:
            examples.append(f"annotator {annotator!r}, document {document!r} lacks "
                            f"{sorted(set(systems) - present)}")
    return [f"{len(incomplete)} ranking(s) do not rank all {n_systems} systems {systems} (lines "
            f"{_rows(frame, frame.index.isin(lines))}; {'; '.join(examples)}); every (annotator, document) must rank "
            "every system"]


def one_based(rank, base: int) -> np.ndarray:
    """Ranks on 1..S (1 = best), whatever the file's base."""
    return np.asarray(rank, dtype=np.int64) - int(base) + 1


def reversed_ranks(rank, base: int, n_systems: int) -> np.ndarray:
    """S + 1 - (1-based rank): 1..S with S = best, the orientation models and tests use."""
    return n_systems + 1 - one_based(rank, base)


def read_rank_table(path, columns: dict, scale=None) -> tuple[pd.DataFrame, dict]:
    """Read and check a Rank table (the Rank method's ``read_table`` step; see :func:`read_table`).

    Returns the table with ``score`` the reversed rank (1..S, S = best) and ``rank`` the 1-based rank
    (1 = best), and ``info`` with ``method``, ``scale``, ``base`` (0 or 1, the file's) and ``n_systems``.
    """
    header = read_table_csv(path, required=("annotator", "document", "system", "score or rank")).columns
    if scale is not None:
        raise ConfigError("--scale applies to Likert tables; a Rank table's scale is 1..S (S = number of systems)")
    rank_source = next((theirs for theirs, ours in columns.items() if ours == "rank"), "rank")
    if "rank" not in {columns.get(column, column) for column in header}:
        raise DataError(f"--method rank needs a 'rank' column; {path} has {list(header)}"
                        + (" (its 'score' column: if it holds ranks, say --columns rank=score; if Likert scores, "
                           "--method likert)" if "score" in header else "")
                        + " (map another name with --columns rank=COLUMN)")
    if "score" in header and columns.get("score", "score") == "score" and "score" not in columns.values():
        columns["score"] = "likert_score_unused"  # an unrelated 'score' column must not clash with ours
    raw = read_table_csv(path, columns, required=RANK_COLUMNS)
    names = {ours: theirs for theirs, ours in columns.items()}
    names.setdefault("rank", rank_source)
    base = check_ranks(raw, names)
    frame = raw[list(RANK_COLUMNS)].copy()
    n_systems = frame["system"].nunique()
    rank = pd.to_numeric(frame["rank"]).round().astype(np.int64)
    frame["rank"] = one_based(rank, base)
    frame["score"] = reversed_ranks(rank, base, n_systems)
    frame = frame[["annotator", "document", "system", "score", "rank"]].copy()
    frame.attrs["rank_base"] = base
    return frame, {"method": "rank", "scale": tuple(range(1, n_systems + 1)), "base": base, "n_systems": n_systems}


def orient_ranks(frame: pd.DataFrame, base: int | None = None, scale=None,
                 read_form: bool = False) -> tuple[pd.DataFrame, dict]:
    """An in-memory Rank table in :func:`read_rank_table`'s form (the Rank method's ``orient`` step).

    ``frame`` has ``annotator, document, system, rank`` with ranks 0..S-1 or 1..S (checked; ``base``
    default found by :func:`check_ranks`; a ``score`` column is ignored), or, with ``read_form``, is
    already in read_rank_table's form (``score`` beside a 1-based ``rank``, the file's base in ``attrs``).
    """
    if scale is not None:
        raise ConfigError("A scale applies to Likert tables; a Rank table's scale is 1..S (S = number of systems)")
    n_systems = frame["system"].nunique()
    if read_form:
        check_ranks(frame.drop(columns=["score"]))
        return frame.copy(), {"method": "rank", "scale": tuple(range(1, n_systems + 1)),
                              "base": int(frame.attrs.get("rank_base", 1)), "n_systems": n_systems}
    found = check_ranks(frame.drop(columns=["score"], errors="ignore"))
    base = found if base is None else int(base)
    out = frame[list(RANK_COLUMNS)].copy()
    rank = pd.to_numeric(out["rank"]).round().astype(np.int64)
    out["rank"] = one_based(rank, base)
    out["score"] = reversed_ranks(rank, base, n_systems)
    return out[["annotator", "document", "system", "score", "rank"]], {
        "method": "rank", "scale": tuple(range(1, n_systems + 1)), "base": base, "n_systems": n_systems}


def describe_ranks(info: dict) -> str:
    """One line saying how a Rank table was read (the Rank method's ``describe`` step)."""
    last = info["base"] + info["n_systems"] - 1
    return (f"Rank table: ranks {info['base']}..{last} ({info['base']} = best) in the file; analysed as reversed "
            f"ranks S + 1 - rank on 1..{info['n_systems']} (higher = better), mean ranks reported 1-based (1 = best)")
