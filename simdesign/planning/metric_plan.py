"""How many systems and inputs for a metric validation: the cheapest simulated (systems, documents) cell that
reaches a target interval width or a target power (issue 32 part 2's planner question).

A metric-validation study (``simdesign run configs/metric_validation.yaml``) or the comparison-power study
(``scripts/metric_comparison_power.py``) estimates, per (systems, documents) cell, the mean width of each
interval and the rejection rate of each test, with Monte-Carlo intervals. :func:`metric_plan` reads such a
summary and answers with the cheapest cell whose estimate reaches the target (``reached``) and the cheapest
whose whole Monte-Carlo interval does (``reached_surely``); cost is systems x documents (the outputs humans
judge) unless a ``cost`` function is given. Cells between the simulated ones are not interpolated.
"""
from __future__ import annotations

import pandas as pd

from simdesign.core.errors import ConfigError


def metric_plan(summary: pd.DataFrame, target: float, value: str = "value", smaller_is_better: bool = False,
                cost=None, **filters) -> pd.DataFrame:
    """The (systems, documents) cells of ``summary`` in order of cost, with whether each reaches ``target``.

    Parameters
    ----------
    summary : pandas.DataFrame
        Columns systems, documents, ``value``, ci_low, ci_high, and those named in ``filters``.
    target : float
        A width to stay under (``smaller_is_better=True``) or a power to reach.
    value : str, default 'value'
        The estimate's column ('value' in a metric-validation summary, 'rejection_rate' in the comparison-power
        table).
    smaller_is_better : bool, default False
    cost : callable, optional
        cost(systems, documents); default systems x documents.
    **filters
        Column == value selections, e.g. estimand='width', method='pearson', scheme='BOOT-BOTH'.

    Returns
    -------
    pandas.DataFrame
        One row per cell: systems, documents, cost, the estimate and its interval, reached, reached_surely;
        cheapest first. ``.attrs['answer']`` is the cheapest reached row as a dict (None when none is).

    Raises
    ------
    ConfigError
        A filter or value column the table lacks, or a selection that leaves no row or several per cell.
    """
    missing = [c for c in ["systems", "documents", value, "ci_low", "ci_high", *filters] if c not in summary]
    if missing:
        raise ConfigError(f"The summary has no column(s) {missing}; its columns: {list(summary.columns)}")
    rows = summary
    for column, wanted in filters.items():
        rows = rows[rows[column].astype(str) == str(wanted)]
    if rows.empty:
        raise ConfigError(f"No row of the summary has {filters}")
    if rows.duplicated(["systems", "documents"]).any():
        raise ConfigError(f"The selection {filters} leaves several rows per (systems, documents): select by more "
                          "columns (e.g. estimand, method, scheme, test)")
    price = cost or (lambda systems, documents: systems * documents)
    out = rows[["systems", "documents", value, "ci_low", "ci_high"]].copy()
    out.insert(2, "cost", [price(s, d) for s, d in zip(out["systems"], out["documents"])])
    if smaller_is_better:
        out["reached"], out["reached_surely"] = out[value] <= target, out["ci_high"] <= target
    else:
        out["reached"], out["reached_surely"] = out[value] >= target, out["ci_low"] >= target
    out = out.sort_values(["cost", "systems"], kind="stable", ignore_index=True)
    reached = out[out["reached"]]
    out.attrs["answer"] = reached.iloc[0].to_dict() if len(reached) else None
    return out
