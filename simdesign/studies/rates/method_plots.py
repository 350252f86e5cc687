"""Figures comparing annotation methods: one subplot per (estimand, test), one line per method (issue 13)."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display on servers and CI
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from simdesign.core.estimands import estimand_label, has_nominal_level  # noqa: E402
from simdesign.studies.rates.plots import AXIS_NAMES  # noqa: E402

from simdesign.methods import get_method  # noqa: E402


def plot_method_grid(summary: pd.DataFrame, estimands, title: str, out_base: Path, x: str = "annotators",
                     alpha: float | None = None) -> list[Path]:
    """Rows = estimands, columns = tests, colour = method, with the summary's 95% interval bands.

    Parameters
    ----------
    summary : pandas.DataFrame
        Summary rows (:func:`simdesign.studies.rates.summary.summarise`) with a ``method`` column,
        possibly of several runs (e.g. effect zero and fitted).
    estimands : sequence of str
        One row of subplots each, e.g. ``["type1", "power"]``.
    title : str
    out_base : Path
        Written as ``out_base.png``.
    x : str
        Design column on the (log) x axis.
    alpha : float, optional
        Nominal level, drawn on ``type1`` subplots.

    Returns
    -------
    list of Path
    """
    tests = list(dict.fromkeys(summary.loc[summary["test"] != "", "test"]))
    fig, axes = plt.subplots(len(estimands), len(tests), figsize=(3.6 * len(tests), 3.0 * len(estimands)),
                             squeeze=False, sharex=True, constrained_layout=True)
    for row, estimand in enumerate(estimands):
        for column, test in enumerate(tests):
            _draw_subplot(axes[row][column], summary[(summary["estimand"] == estimand) & (summary["test"] == test)],
                        x, alpha if has_nominal_level(estimand) else None)
            axes[row][column].set_title(f"{test}: {estimand_label(estimand)}", fontsize=9)
            if column == 0:
                axes[row][column].set_ylabel(estimand_label(estimand))
            if row == len(estimands) - 1:
                axes[row][column].set_xlabel(AXIS_NAMES.get(x, x))
    fig.suptitle(title, fontsize=9)
    out_base.parent.mkdir(parents=True, exist_ok=True)
    path = out_base.with_suffix(".png")
    fig.savefig(path, dpi=150)
    plt.close(fig)
    return [path]


def _draw_subplot(ax, rows: pd.DataFrame, x: str, alpha: float | None) -> None:
    for method in dict.fromkeys(rows["method"]):
        part = rows[rows["method"] == method].sort_values(x)
        values = part[x].astype(float).to_numpy()
        colour = get_method(method).colour
        trials = sorted(set(part["trials"].astype(int)))
        label = f"{get_method(method).label} ({'/'.join(map(str, trials))} trials)"
        ax.plot(values, part["rate"], "-o", markersize=3, color=colour, label=label)
        ax.fill_between(values, part["ci_low"].astype(float), part["ci_high"].astype(float), color=colour,
                        alpha=0.2, linewidth=0)
    if alpha is not None:
        ax.axhline(alpha, color="black", linewidth=0.8, linestyle=":", label=f"nominal {alpha:g}")
    ax.set_xscale("log")
    ticks = sorted(set(rows[x].astype(float)))
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
