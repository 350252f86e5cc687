"""The exact-replication figure: significance F1 against power as the design grows."""
from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib
import matplotlib.ticker
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from simdesign.core.estimands import headline_estimand
from simdesign.studies.rates.plots import save_png
from simdesign.studies.replication.replication import (F1_UNDEFINED, MATCHING_ACCURACY, REPLICATION_R,
                                                       SIGNIFICANCE_F1, SIGNIFICANCE_REPRODUCED)


def figure_estimands() -> tuple[str, ...]:
    """The estimands the figure's table holds: the tests' headline rates and the replication's own."""
    return (headline_estimand(is_null=False), headline_estimand(is_null=True), SIGNIFICANCE_F1.name,
            SIGNIFICANCE_REPRODUCED.name, F1_UNDEFINED.name, REPLICATION_R.name, MATCHING_ACCURACY.name)


def replication_table(summary: pd.DataFrame) -> pd.DataFrame:
    """The summary rows the figure draws (columns as ``summary.csv``), designs in order of size."""
    table = summary[summary["estimand"].isin(figure_estimands())].copy()
    return table.sort_values(["judgements", "test", "estimand"], kind="stable", ignore_index=True)


def _errorbar(ax, x_rows: pd.DataFrame, y_rows: pd.DataFrame, **style):
    xs, ys = x_rows["rate"].to_numpy(), y_rows["rate"].to_numpy()
    ax.errorbar(xs, ys, xerr=[xs - x_rows["ci_low"].to_numpy(), x_rows["ci_high"].to_numpy() - xs],
                yerr=[ys - y_rows["ci_low"].to_numpy(), y_rows["ci_high"].to_numpy() - ys], capsize=2, **style)


def plot_replication(summary: pd.DataFrame, out_base: Path, title: str, main_test: str = "ttest_doc") -> list[Path]:
    """F1 against power per test (left); per design, r, matching accuracy and F1 of ``main_test`` (right).

    Parameters
    ----------
    summary : pandas.DataFrame
        A summary with replication estimands (:func:`simdesign.studies.rates.summary.summarise`).
    out_base : Path
        Written as ``out_base.png``.
    title : str
        Should carry the trial count.
    main_test : str
        The test whose estimands the right panel follows.

    Returns
    -------
    list of Path
    """
    table = replication_table(summary)
    fig = Figure(figsize=(12, 5.6))
    left, right = fig.subplots(1, 2)
    tests = [t for t in dict.fromkeys(table["test"]) if t]
    for colour, test in zip(matplotlib.rcParams["axes.prop_cycle"].by_key()["color"], tests):
        rows = table[table["test"] == test]
        power = rows[rows["estimand"] == headline_estimand(is_null=False)].set_index("design")
        f1 = rows[rows["estimand"] == SIGNIFICANCE_F1.name].set_index("design")
        designs = [d for d in power.index if d in f1.index]
        if not designs:
            continue
        _errorbar(left, power.loc[designs], f1.loc[designs], fmt="-o", color=colour, ms=4, label=test)
        if test == main_test:
            for position, design in enumerate(designs):
                # alternate sides so that neighbouring designs' labels do not overlap
                left.annotate(f"{int(power.loc[design, 'annotators'])} ann., {int(power.loc[design, 'docs'])} docs",
                              (power.loc[design, "rate"], f1.loc[design, "rate"]), textcoords="offset points",
                              xytext=(6, -10) if position % 2 == 0 else (-78, 5), fontsize=7)
    left.plot([0, 1], [0, 1], ":", color="grey", label="F1 = power")
    left.set(xlabel="power of the original study (right direction)",
             ylabel="significance F1 of the replication (original = gold)", xlim=(0, 1.02), ylim=(0, 1.02))
    left.legend(fontsize=8, loc="upper left")
    left.grid(alpha=0.3)
    _right_panel(right, table, main_test)
    fig.suptitle(textwrap.fill(title, 140), fontsize=10)
    fig.tight_layout()
    return [save_png(fig, out_base, dpi=150)]


def _right_panel(ax, table: pd.DataFrame, main_test: str) -> None:
    lines = (("", REPLICATION_R.name, REPLICATION_R.label, "black"),
             ("", MATCHING_ACCURACY.name, MATCHING_ACCURACY.label, "grey"),
             (main_test, SIGNIFICANCE_F1.name, f"{SIGNIFICANCE_F1.label} ({main_test})", "tab:blue"),
             (main_test, SIGNIFICANCE_REPRODUCED.name, f"{SIGNIFICANCE_REPRODUCED.label} ({main_test})", "tab:red"),
             (main_test, headline_estimand(is_null=False), f"power of the original ({main_test})", "tab:green"))
    for test, estimand, label, colour in lines:
        rows = table[(table["test"] == test) & (table["estimand"] == estimand)].sort_values("judgements")
        if rows.empty:
            continue
        x = rows["judgements"].to_numpy()
        ax.plot(x, rows["rate"], "-o", color=colour, ms=4, label=label)
        ax.fill_between(x, rows["ci_low"], rows["ci_high"], color=colour, alpha=0.15, lw=0)
    designs = table.drop_duplicates("design").sort_values("judgements")
    ax.set(xscale="log", xlabel="judgements per study (annotators, documents)", ylabel="mean over trials",
           ylim=(0, 1.02))
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xticks(designs["judgements"].to_numpy(),
                  [f"{j}\n{a} ann.\n{d} docs" for j, a, d in designs[["judgements", "annotators", "docs"]].itertuples(
                      index=False)], fontsize=7)
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(alpha=0.3)


def trial_counts(table: pd.DataFrame) -> str:
    """'N trials' or 'N-M trials' for a title."""
    counts = np.unique(table["trials"].dropna().astype(int))
    return f"{counts[0]} trials" if counts.size == 1 else f"{counts.min()}-{counts.max()} trials"
