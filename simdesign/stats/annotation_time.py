"""Annotation time per judged output, from a table of measured durations.

Annotators are paid for all the time they spend, so what a study costs
scales with the *mean* duration of a judgement, not the median. But a few
measured durations include breaks (in Steen & Markert's data up to about
3300 s for one Likert item), which would make a plain mean depend on who
went for coffee. The rule used everywhere in simdesign (the planner's cost
model, and any figure that puts annotation time on an axis) is therefore:

* every measured item is capped at ``CAP_SECONDS_PER_OUTPUT`` (300 s) per
  system output it covers: a Likert item judges one output (cap 300 s), a
  ranking of 5 outputs is one item capped at 1500 s;
* seconds per judged output = mean of the capped durations / outputs per item.

The median and the 10 % trimmed mean (of the uncapped durations) are
available for comparison; both understate total paid time.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from simdesign.core.errors import DataError
from simdesign.core.checks import is_integer

CAP_SECONDS_PER_OUTPUT = 300.0
TRIM_PROPORTION = 0.1  # cut from each tail for the trimmed mean
RULES = ("capped_mean", "median", "trimmed_mean")
DURATION_COLUMN = "time_stamp"  # the paper's name; it holds a duration in seconds, not a clock time


def capped_durations(durations, outputs_per_item: int = 1, cap_per_output: float = CAP_SECONDS_PER_OUTPUT,
                     column: str = DURATION_COLUMN) -> pd.Series:
    """Apply the capping rule: each item's duration capped at ``cap_per_output`` x its outputs.

    Parameters
    ----------
    durations : pandas.DataFrame, pandas.Series or array-like
        Seconds spent per item; a DataFrame is read from ``column``.
    outputs_per_item : int
        System outputs one item covers (1 for a Likert item, 5 for a
        ranking of five summaries).
    cap_per_output : float
        Cap in seconds per output (default 300 s).
    column : str
        Duration column of a DataFrame (the paper's files call it ``time_stamp``).

    Returns
    -------
    pandas.Series
        Capped durations in seconds per item (not yet divided by the outputs).

    Raises
    ------
    DataError
        (a ValueError) If the durations are missing, empty, not finite or negative.
    ValueError
        If ``outputs_per_item`` is not a positive integer.

    Examples
    --------
    >>> capped_durations([10.0, 20.0, 3000.0]).tolist()
    [10.0, 20.0, 300.0]
    >>> capped_durations([100.0, 2000.0], outputs_per_item=5).tolist()
    [100.0, 1500.0]
    """
    if isinstance(durations, pd.DataFrame):
        if column not in durations.columns:
            raise DataError(f"the times table has no {column!r} column (columns: {list(durations.columns)})")
        durations = durations[column]
    values = pd.Series(durations, dtype=float).reset_index(drop=True)
    if values.empty:
        raise DataError("the times table holds no durations")
    if not np.isfinite(values).all() or (values < 0).any():
        raise DataError("durations must be finite, non-negative seconds")
    if not is_integer(outputs_per_item, 1):
        raise ValueError(f"outputs_per_item must be a positive integer; got {outputs_per_item!r}")
    return values.clip(upper=cap_per_output * outputs_per_item)


def seconds_per_output(durations, rule: str = "capped_mean", outputs_per_item: int = 1,
                       column: str = DURATION_COLUMN) -> float:
    """Seconds per judged output under one of :data:`RULES`.

    Parameters
    ----------
    durations : pandas.DataFrame, pandas.Series or array-like
        Seconds per item (see :func:`capped_durations`).
    rule : {'capped_mean', 'median', 'trimmed_mean'}
        ``capped_mean``: mean after :func:`capped_durations` (the default:
        pay scales with total time); ``median`` and ``trimmed_mean``
        (10 % cut from each tail, :func:`scipy.stats.trim_mean`) of the raw
        durations.
    outputs_per_item : int
        System outputs per item; the result is per output.

    Returns
    -------
    float

    Examples
    --------
    >>> seconds_per_output([10.0, 20.0, 3000.0])
    110.0
    >>> seconds_per_output([10.0, 20.0, 3000.0], "median")
    20.0
    """
    if rule not in RULES:
        raise ValueError(f"rule must be one of {list(RULES)}; got {rule!r}")
    capped = capped_durations(durations, outputs_per_item, column=column)
    if rule == "capped_mean":
        per_item = float(capped.mean())
    else:
        raw = pd.Series(durations[column] if isinstance(durations, pd.DataFrame) else durations, dtype=float)
        per_item = float(raw.median()) if rule == "median" else float(stats.trim_mean(raw, TRIM_PROPORTION))
    return per_item / outputs_per_item


def describe_rule(rule: str, outputs_per_item: int = 1) -> str:
    """Plain words for a rule, as the planner's outputs state it."""
    if rule == "capped_mean":
        cap = CAP_SECONDS_PER_OUTPUT * outputs_per_item
        return f"mean with each item capped at {cap:g} s ({CAP_SECONDS_PER_OUTPUT:g} s per judged output)"
    if rule == "median":
        return "median"
    return f"{TRIM_PROPORTION:.0%} trimmed mean"
