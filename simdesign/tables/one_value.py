"""Tables of any method whose judgement is one value per output (``annotator, document, system, <its column>``)
that gives no table steps of its own: a plug-in method is read, oriented and described as a Likert table is,
its values on the integer scale they show (:func:`simdesign.tables.recognise.read_table` falls back to these).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from simdesign.tables.judgements import read_judgements, validate_judgements

SCORE = "score"  # the column the shared checks read a value from


def read_one_value(method, path, columns: dict, scale=None) -> tuple[pd.DataFrame, dict]:
    """Read and check ``path`` as a table of ``method`` (its value column read as scores, then kept under its own
    name beside ``score``)."""
    renamed = dict(columns or {})
    if method.value_column not in renamed.values():  # the file's own column, unless --columns maps another to it
        renamed[method.value_column] = SCORE
    else:
        renamed = {theirs: (SCORE if ours == method.value_column else ours) for theirs, ours in renamed.items()}
    frame, scale = read_judgements(path, renamed, scale)
    frame[method.value_column] = frame[SCORE]
    return frame, {"method": method.name, "scale": tuple(scale)}


def orient_one_value(method, frame: pd.DataFrame, scale=None) -> tuple[pd.DataFrame, dict]:
    """An in-memory table of ``method``, checked, with integer values under ``score`` and its own column."""
    as_scores = frame.rename(columns={method.value_column: SCORE}) if SCORE not in frame else frame
    scale = validate_judgements(as_scores, scale)
    out = as_scores[["annotator", "document", "system", SCORE]].copy()
    out[SCORE] = pd.to_numeric(out[SCORE]).round().astype(np.int64)
    out[method.value_column] = out[SCORE]
    return out, {"method": method.name, "scale": tuple(scale)}


def describe_one_value(method, info: dict) -> str:
    """One line saying how such a table was read."""
    return f"{method.label or method.name} values ('{method.value_column}'), scale {list(info['scale'])}"
