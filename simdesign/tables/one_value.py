"""Tables of any method whose judgement is one value per output (``annotator, document, system, <its column>``)
that gives no table steps of its own: a plug-in method is read, oriented and described as a Likert table is,
its values on the integer scale they show (:func:`simdesign.tables.recognise.read_table` falls back to these).
"""
from __future__ import annotations

import pandas as pd

from simdesign.tables.likert import orient_likert, read_likert_table

SCORE = "score"  # the column the Likert steps read a value from


def read_one_value(method, path, columns: dict, scale=None) -> tuple[pd.DataFrame, dict]:
    """Read and check ``path`` as a table of ``method`` (its value column read as scores, then kept under its own
    name beside ``score``)."""
    renamed = dict(columns or {})
    if method.value_column not in renamed.values():  # the file's own column, unless --columns maps another to it
        renamed[method.value_column] = SCORE
    else:
        renamed = {theirs: (SCORE if ours == method.value_column else ours) for theirs, ours in renamed.items()}
    frame, info = read_likert_table(path, renamed, scale)
    frame[method.value_column] = frame[SCORE]
    return frame, {**info, "method": method.name}


def orient_one_value(method, frame: pd.DataFrame, scale=None) -> tuple[pd.DataFrame, dict]:
    """An in-memory table of ``method``, checked, with integer values under ``score`` and its own column."""
    out, info = orient_likert(frame.rename(columns={method.value_column: SCORE}) if SCORE not in frame else frame,
                              scale=scale)
    out[method.value_column] = out[SCORE]
    return out, {**info, "method": method.name}


def describe_one_value(method, info: dict) -> str:
    """One line saying how such a table was read."""
    return f"{method.label or method.name} values ('{method.value_column}'), scale {list(info['scale'])}"
