"""Likert tables (``annotator, document, system, score``): the Likert method's steps of the pilot layer.

The checks are those of :func:`simdesign.tables.judgements.validate_judgements` (every judgements table gets them);
this module gives them the form :func:`simdesign.tables.recognise.read_table` returns for every method.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from simdesign.tables.judgements import read_judgements, validate_judgements


def read_likert_table(path, columns: dict, scale=None) -> tuple[pd.DataFrame, dict]:
    """Read and check a Likert table (the Likert method's ``read_table`` step)."""
    frame, scale = read_judgements(path, columns, scale)
    return frame, {"method": "likert", "scale": tuple(scale)}


def orient_likert(frame: pd.DataFrame, base=None, scale=None, read_form: bool = False) -> tuple[pd.DataFrame, dict]:
    """An in-memory Likert table, checked, with integer scores (the Likert method's ``orient`` step)."""
    scale = validate_judgements(frame, scale)
    out = frame[["annotator", "document", "system", "score"]].copy()
    out["score"] = pd.to_numeric(out["score"]).round().astype(np.int64)
    return out, {"method": "likert", "scale": tuple(scale)}


def describe_likert(info: dict) -> str:
    """One line saying how a Likert table was read (the Likert method's ``describe`` step)."""
    return f"Likert scores, scale {list(info['scale'])}"
