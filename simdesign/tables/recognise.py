"""Judgements tables of any annotation method: which method a table is, reading it, orienting it.

Each method owns its table (:mod:`simdesign.methods`): the column its judgements come in
(:attr:`~simdesign.methods.AnnotationMethod.value_column`: ``score`` for Likert, ``rank`` for Rank) and
the steps that read, check and orient it (``read_table``, ``orient``, ``describe``). This module finds
the method and asks it; every method's table comes back in one form, with a ``score`` column where
higher is better (for ranks the reversed rank), so every test reads every method alike.
"""
from __future__ import annotations

import pandas as pd

from simdesign.core.errors import ConfigError, DataError
from simdesign.methods import all_methods, get_method, method_names
from simdesign.tables.judgements import parse_columns
from simdesign.tables.one_value import describe_one_value, orient_one_value, read_one_value
from simdesign.tables.records import read_header, read_records

# The column every oriented table carries its judgements in (higher = better), whatever the method.
ORIENTED_COLUMN = "score"


def infer_method(columns, method: str | None = None, mapping: dict | None = None) -> str:
    """The method of a table: the one whose judgement column the table has (or ``method``, checked).

    Parameters
    ----------
    columns : iterable of str
        The file's column names.
    method : str, optional
        Given by the user: checked, not inferred.
    mapping : dict, optional
        File column -> our name (``--columns``), applied before looking.

    Raises
    ------
    ConfigError
        Unknown method (with the closest name).
    DataError
        No method's column, or several, and no ``method``.
    """
    if method is not None:
        return get_method(method, "--method").name
    ours = {(mapping or {}).get(column, column) for column in columns}
    found = [m.name for m in all_methods() if m.recognises(ours)]
    if len(found) == 1:
        return found[0]
    what = (f"the columns {[get_method(m).value_column for m in found]} of both {' and '.join(found)}" if found else
            f"none of the columns {[m.value_column for m in all_methods()]} (one per method: "
            f"{', '.join(m.name for m in all_methods())})")
    raise DataError(f"Cannot tell the method: the table has {what} (columns {list(columns)}); say "
                    f"--method {' or --method '.join(method_names())} (map names with --columns score=... or "
                    "rank=...)")


def parse_columns_any(text: str | None) -> dict:
    """``--columns`` for any method's table: :func:`simdesign.tables.judgements.parse_columns`, plus each method's
    judgement column (``rank=COLUMN``)."""
    if not text:
        return {}
    own = {m.value_column for m in all_methods()} - {ORIENTED_COLUMN}
    method_items = [item for item in text.split(",") if item.partition("=")[0].strip() in own]
    others = ",".join(item for item in text.split(",") if item not in method_items)
    mapping = parse_columns(others)
    for item in method_items:
        ours, _, theirs = (part.strip() for part in item.partition("="))
        if not theirs:
            raise ConfigError(f"--columns takes NAME=COLUMN items; got {item!r}")
        mapping[theirs] = ours
    return mapping


def read_table(path, method: str | None = None, columns: dict | None = None,
               scale=None) -> tuple[pd.DataFrame, dict]:
    """Read and check a judgements table of any registered method: CSV, or JSON (a list of records) or JSON Lines
    by the file's suffix (:func:`simdesign.tables.records.read_records`; battle logs come so).

    Parameters
    ----------
    path : str or path-like
    method : str, optional
        Default: inferred from the table's columns (:func:`infer_method`).
    columns : dict, optional
        File column -> our name (:func:`parse_columns_any`).
    scale : sequence of int, optional
        Likert only: the scale's values.

    Returns
    -------
    frame : pandas.DataFrame
        Columns ``annotator, document, system, score``; for Rank tables ``score`` is the reversed rank
        (1..S, S = best) and the 1-based rank (1 = best) is kept in ``rank``.
    info : dict
        ``method``, ``scale`` (tuple), and for Rank ``base`` (0 or 1, the file's) and ``n_systems``.

    Raises
    ------
    ConfigError, DataError
        Unreadable file, or any problem the method's checks find (with line numbers).
    """
    columns = dict(columns or {})
    # a method given reads (and refuses) the file itself: an empty file's message then names its own columns
    header = () if method is not None else read_records(path, required=_any_columns()).columns
    found = get_method(infer_method(header, method, columns))
    load_steps()
    if _without_table_steps(found):
        return read_one_value(found, path, columns, scale)
    return found.step("read_table")(path, columns, scale)


def _without_table_steps(method) -> bool:
    """A method of one value per output that registered no table steps (a plug-in): read as a Likert table is
    (:mod:`simdesign.tables.one_value`). A method of rankings or pairs must bring its own reader."""
    return method.covers == "output" and "read_table" not in method.steps


def _any_columns() -> tuple:
    """The columns a table of some registered method has, for the message on an empty file."""
    values = [m.value_column for m in all_methods()]
    return ("annotator", "document", "system", f"{', '.join(values[:-1])} or {values[-1]}")


def load_steps() -> None:
    """Give the built-in methods their table steps (:mod:`simdesign.tables.steps`), imported here and not at the
    top: those modules import this one."""
    import simdesign.tables.steps  # noqa: F401


def orient(frame: pd.DataFrame, method: str | None, base: int | None = None, scale=None,
           read_form: bool = False) -> tuple[pd.DataFrame, dict]:
    """An in-memory table in the form :func:`read_table` returns (checked; Rank tables get ``score`` reversed).

    Parameters
    ----------
    frame : pandas.DataFrame
        The method's columns (Likert: ``annotator, document, system, score``; Rank: ``... rank``).
    method : str, optional
        Default: inferred from the columns.
    base : int, optional
        Rank only: the base of ``rank``.
    scale : sequence of int, optional
        Likert only: the scale's values.
    read_form : bool
        ``frame`` is already what :func:`read_table` returned (only checked again).
    """
    found = get_method(infer_method(frame.columns, method))
    load_steps()
    if _without_table_steps(found):
        return orient_one_value(found, frame, scale)
    return found.step("orient")(frame, base=base, scale=scale, read_form=read_form)


def orient_any(frame: pd.DataFrame, method: str | None, scale=None) -> tuple[pd.DataFrame, dict]:
    """:func:`orient` of a DataFrame in its method's own columns or in the form :func:`read_table` returns
    (Rank: ``score`` beside a 1-based ``rank``, the file's base kept in attrs for the report)."""
    read_form = read_form_method(frame)
    if read_form is not None and method in (None, read_form):
        return orient(frame, read_form, scale=scale, read_form=True)
    return orient(frame, method, scale=scale)


def read_form_method(frame: pd.DataFrame) -> str | None:
    """The method of a table in :func:`read_table`'s form: ``score`` beside another method's column (else None)."""
    if ORIENTED_COLUMN not in frame.columns:
        return None
    found = [m.name for m in all_methods() if m.value_column != ORIENTED_COLUMN and m.value_column in frame.columns]
    return found[0] if len(found) == 1 else None


def read_table_args(args) -> tuple[pd.DataFrame, dict]:
    """:func:`read_table` from the CLI's ``judgements``, ``--columns``, ``--scale`` and ``--method`` options."""
    from simdesign.tables.judgements import parse_scale

    scale = parse_scale(args.scale) if getattr(args, "scale", None) else None
    return read_table(args.judgements, getattr(args, "method", None), parse_columns_any(getattr(args, "columns", None)),
                      scale)


def describe(info: dict) -> str:
    """One line saying how a table was read (shown by the CLI commands)."""
    load_steps()
    found = get_method(info["method"])
    if _without_table_steps(found):
        return describe_one_value(found, info)
    return found.step("describe")(info)


def table_method(args):
    """The method object of the table a ``fit``/``check``/``reliability`` command was given (its steps loaded)."""
    load_steps()
    if getattr(args, "method", None):
        return get_method(args.method, "--method")
    header = read_records(args.judgements, required=_any_columns()).columns
    return get_method(infer_method(header, None, parse_columns_any(getattr(args, "columns", None))))


def source_method(source, method: str | None = None, columns: dict | None = None):
    """The registered method whose table ``source`` is (a DataFrame by its columns, a file by its header:
    :func:`simdesign.tables.records.read_header`), its steps loaded; None when that cannot be told. Never raises:
    reading the table says what is wrong with it."""
    load_steps()
    try:
        if method is not None:
            return get_method(method)
        header = list(source.columns) if isinstance(source, pd.DataFrame) else read_header(source)
        return get_method(infer_method(header, None, columns))
    except (ConfigError, OSError, ValueError, TypeError, AttributeError):
        return None


__all__ = ["infer_method", "parse_columns_any", "read_table", "orient", "read_form_method", "read_table_args",
           "describe", "table_method", "source_method"]
