"""Views of results for people: wide tables, notebook HTML, short numbers.

The long summary (:func:`simdesign.studies.rates.summary.summarise`) has one row per design x test x
estimand and 22 columns: right for files and code, hard to read. :func:`wide_table` turns one
estimand of it into designs by tests with "rate [low, high]" cells; the HTML views show it in a
notebook. Nothing here computes a rate: every number comes from the summary as it is.
"""
from __future__ import annotations

import html
import math

import pandas as pd

from simdesign.core.estimands import headline_estimand
from simdesign.studies.rates.method_specs import DEFAULT_METHODS
from simdesign.studies.rates.summary import failure_state

# Summary columns that describe a design, shown beside its label in a wide table (when present).
DESIGN_INFO = ("kind", "annotators", "docs", "judgements_per_output", "judgements")


def significant(value, digits: int = 3) -> str:
    """A number with ``digits`` significant digits (no exponent for ordinary sizes); 'n/a' for a missing one.

    >>> significant(0.22108750305794422)
    '0.221'
    >>> significant(1234.5), significant(0.000123456), significant(float("nan"))
    ('1230', '0.000123', 'n/a')
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    value = float(value)
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    places = digits - 1 - math.floor(math.log10(abs(value)))  # decimal places of the last significant digit
    return f"{round(value, places):.{max(0, places)}f}"


def interval_text(rate, low, high, digits: int = 3) -> str:
    """'rate [low, high]' with ``digits`` decimals; 'n/a' when the rate is undefined.

    >>> interval_text(0.0475, 0.0351, 0.064)
    '0.048 [0.035, 0.064]'
    """
    if rate is None or pd.isna(rate):
        return "n/a"
    return f"{rate:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def column_label(row) -> str:
    """The wide table's column of a summary row: its test (with the method when the summary has several),
    or the estimand for a per-trial reliability estimand (which has no test)."""
    test = row["test"] if isinstance(row["test"], str) and row["test"] else row["estimand"]
    method = row.get("method")
    test = f"{test}, {method}" if isinstance(method, str) and method and method not in DEFAULT_METHODS else test
    criterion = row.get("criterion")  # several criteria per study (simulation/criteria.py)
    return f"{test}, {criterion}" if isinstance(criterion, str) and criterion else test


def wide_table(summary: pd.DataFrame, estimand: str, digits: int = 3, design_info: bool = False) -> pd.DataFrame:
    """One estimand of a summary as designs (rows) by tests (columns), cells "rate [low, high]".

    Parameters
    ----------
    summary : pandas.DataFrame
        :func:`simdesign.studies.rates.summary.summarise` output (``SimulationResult.summary()``).
    estimand : str
        E.g. 'type1', 'power', 'familywise', 'failure_rate', 'krippendorff_alpha'.
    digits : int
        Decimals of the rate and its 95% interval.
    design_info : bool
        Also show each design's kind, annotators, documents and judgements (first columns).

    Returns
    -------
    pandas.DataFrame
        Index: design labels in the summary's order; one column per test in the summary's order.
        A design x test the summary has no row for is empty ('').

    Raises
    ------
    ValueError
        If the summary has no row for ``estimand`` (the message lists those it has).

    Examples
    --------
    >>> result.table("type1")                         # doctest: +SKIP
                          ttest             ttest_doc  ...
    design
    block-B1-D100-A3  0.497 [0.421, 0.574]  ...
    """
    rows = summary[summary["estimand"] == estimand]
    if rows.empty:
        present = list(dict.fromkeys(summary["estimand"]))
        raise ValueError(f"the results have no rows for the estimand {estimand!r}; they have {present}")
    rows = rows.assign(_column=[column_label(row) for _, row in rows.iterrows()], _cell=cell_texts(rows, digits))
    designs = list(dict.fromkeys(rows["design"]))
    columns = list(dict.fromkeys(rows["_column"]))
    table = rows.pivot(index="design", columns="_column", values="_cell").reindex(index=designs, columns=columns)
    table = table.fillna("")
    table.columns.name = None
    if design_info:
        info = rows.drop_duplicates("design").set_index("design").reindex(designs)
        for position, column in enumerate(c for c in DESIGN_INFO if c in info):
            table.insert(position, column, info[column].to_numpy())
    return table


def cell_texts(rows: pd.DataFrame, digits: int = 3) -> list[str]:
    """A wide table's cells: "rate [low, high]", marked where tests failed (:func:`failure_state`).

    Where every test behind a rate failed, the rate is 0 by construction (a failed test never rejects), so
    the cell shows no number: 'degenerate (every test)' when the test is undefined for the design (e.g. a
    block-level test with one block), 'failed (every test)' otherwise; some failures add "(N failed)".
    """
    cells = []
    for (_, row), state in zip(rows.iterrows(), failure_state(rows)):
        if state in ("degenerate", "failed"):
            cells.append(f"{state} (every test)")
            continue
        text = interval_text(row["rate"], row["ci_low"], row["ci_high"], digits)
        cells.append(f"{text} ({int(row['n_failed'])} failed)" if state == "partial" else text)
    return cells


def default_estimand(summary: pd.DataFrame, effect) -> str:
    """The estimand a result is read by first: type I error under the null, power otherwise."""
    present = list(dict.fromkeys(summary["estimand"]))
    wanted = headline_estimand(effect == "zero")
    return wanted if wanted in present else present[0]


def result_html(result) -> str:
    """A :class:`~simdesign.api.SimulationResult` in a notebook: what was run, the main estimand wide, failures."""
    config = result.config
    summary = result.summary()
    estimand = default_estimand(summary, config.effect)
    table = wide_table(summary, estimand, design_info=True)
    failed = int(summary.loc[summary["estimand"] == estimand, "n_failed"].fillna(0).sum()) \
        if "n_failed" in summary else 0
    others = [e for e in dict.fromkeys(summary["estimand"]) if e != estimand]
    head = (f"<p><b>{html.escape(config.name)}</b>: model {html.escape(config.model.name)}, effect "
            f"{html.escape(str(config.effect))}, {len(config.designs)} design(s), {config.trials} trials, "
            f"alpha {config.alpha:g}. <b>{html.escape(estimand)}</b>, rate [95% interval], trial = unit:</p>")
    foot = (f"<p>{failed} failed test(s) (counted, never turned into p-values: <code>failures()</code>). "
            f"Other estimands: {html.escape(', '.join(others)) or 'none'} "
            f"(<code>table(estimand)</code>; every column: <code>summary()</code>).</p>")
    return head + table.to_html(escape=True) + foot


def reliability_text(reliability) -> str:
    """A study's reliability in one short line per measure, to 3 significant digits (its notes after)."""
    parts = []
    if reliability.krippendorff_alpha is not None:
        parts.append(f"Krippendorff's alpha (ordinal) {significant(reliability.krippendorff_alpha)}")
    split = reliability.split_half
    if split is not None:
        how = f"all {split.n_splits} splits" if split.exact else f"{split.n_splits} random splits"
        parts.append(f"split-half reliability {significant(split.value)} ({split.n_blocks} blocks, {how})")
    text = "; ".join(parts) or "no measure defined"
    return f"<Reliability: {text}" + "".join(f"; {note}" for note in reliability.notes) + ">"
