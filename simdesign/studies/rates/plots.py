"""Figures from summary tables: a rate against a design size, with Wilson bands."""
from __future__ import annotations

import logging
from pathlib import Path

import matplotlib
import matplotlib.ticker
import matplotlib.transforms
import numpy as np
import pandas as pd
# Figures are drawn on matplotlib.figure.Figure objects, never through pyplot: library code neither needs nor
# switches a backend (savefig renders files by itself; a notebook shows a returned Figure with its own backend).
from matplotlib.figure import Figure

from simdesign.studies.rates.config import FigureSpec
from simdesign.core.designs import DESIGN_KINDS, shape_markers, shape_of_row
from simdesign.core.estimands import estimand_label, is_rate
from simdesign.studies.rates.summary import failure_state

AXIS_NAMES = {"annotators": "annotators in total", "judgements": "judgements in total", "docs": "documents",
              "blocks": "blocks", "annotators_per_block": "annotators per block",
              "judgements_per_output": "judgements per output"}
LINESTYLES = ("-", "--", ":", "-.")

log = logging.getLogger(__name__)


def save_png(fig: Figure, out_base, dpi: int = 130) -> Path:
    """Write ``fig`` as ``out_base.png`` (its folder created) and return the path."""
    path = Path(out_base).with_suffix(".png")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)
    return path


def design_shape(row) -> str:
    """docs/designs.md: block designs are nested (A = 1) or crossed (A > 1); pools are their own shape."""
    return shape_of_row(row)


def plot_summary(summary: pd.DataFrame, figure: FigureSpec, estimand: str, title: str, out_base: Path,
                 alpha: float | None = None, designs: dict | None = None) -> list[Path]:
    """Draw ``estimand`` against ``figure.x``, one line per test (or per shape and test).

    Parameters
    ----------
    summary : pandas.DataFrame
        Output of :func:`simdesign.studies.rates.summary.summarise`.
    figure : FigureSpec
    estimand : str
    title : str
    out_base : Path
        Written as ``out_base.png`` and ``out_base.pdf``, and the rows drawn
        (:func:`figure_rows`) as ``out_base.csv``.
    alpha : float, optional
        Draws the nominal level as a horizontal line (type I error figures).
    designs : dict, optional
        Design label -> design object: lets :func:`design_series` join designs by their kind's fields.

    Returns
    -------
    list of Path
        The PNG, the PDF and the CSV.
    """
    fig, notes = draw_summary(summary, figure, estimand, title, alpha, designs)
    paths = []
    out_base.parent.mkdir(parents=True, exist_ok=True)
    for suffix in (".png", ".pdf"):
        path = out_base.with_suffix(suffix)
        fig.savefig(path, dpi=150)
        paths.append(path)
    for note in notes:
        log.warning("%s: %s", out_base.with_suffix(".png"), note)
    return paths + [write_figure_table(summary, figure, estimand, out_base)]


def figure_rows(summary: pd.DataFrame, figure: FigureSpec, estimand: str) -> pd.DataFrame:
    """The rows of ``summary`` a figure of ``estimand`` draws, with the summary's columns and order.

    Designs with no value on ``figure.x`` are left out, as in the figure itself.
    """
    rows = summary[summary["estimand"] == estimand]
    return rows[rows[figure.x].notna()].reset_index(drop=True)


def write_figure_table(summary: pd.DataFrame, figure: FigureSpec, estimand: str, out_base: Path) -> Path:
    """``out_base.csv``: the figure's numbers beside its picture, so they can be read without the results."""
    path = out_base.with_suffix(".csv")
    figure_rows(summary, figure, estimand).to_csv(path, index=False)
    return path


def draw_summary(summary: pd.DataFrame, figure: FigureSpec, estimand: str, title: str,
                 alpha: float | None = None, designs: dict | None = None) -> tuple[Figure, list[str]]:
    """The figure of :func:`plot_summary`, not yet saved, and notes on designs it leaves out.

    Designs of different kinds (block, pool) are never joined by one line:
    with ``colour: test`` each kind has its own line style and marker, with
    ``colour: shape`` its own colour. A design without a value on the x axis
    (a pool design has no blocks, so no ``blocks`` or
    ``annotators_per_block``) is left out, and a note says which and why;
    the figure's title says so too.

    Returns
    -------
    figure : matplotlib.figure.Figure
    notes : list of str
    """
    rows = summary[summary["estimand"] == estimand].copy()
    if rows.empty:
        raise ValueError(f"the summary has no rows for the estimand {estimand!r}")
    rows["shape"] = rows.apply(design_shape, axis=1)
    if "method" in rows and rows["method"].nunique() > 1:  # one line per (test, method): Likert vs Rank
        rows["test"] = [f"{test}, {method}" if test else method for test, method in zip(rows["test"], rows["method"])]
    if "criterion" in rows and rows["criterion"].nunique() > 1:  # one line per (test, criterion)
        rows["test"] = [f"{test}, {criterion}" if test else criterion
                        for test, criterion in zip(rows["test"], rows["criterion"])]
    rows, left_out, notes = _rows_on_x_axis(rows, figure.x)
    rows, not_rates = _blank_failed_cells(rows)
    if not_rates:
        notes.append(f"not drawn, every test failed (no rate): {', '.join(not_rates)}")
    fig = Figure(figsize=(6.4, 4.4), constrained_layout=True)
    ax = fig.subplots()
    _draw_lines(ax, rows, figure, estimand, designs)
    if alpha is not None:
        ax.axhline(alpha, color="black", linewidth=0.8, linestyle=":", label=f"nominal {alpha:g}")
    _label_axes(ax, rows, figure, estimand, title, left_out, not_rates)
    return fig, notes


def _blank_failed_cells(rows: pd.DataFrame) -> tuple[pd.DataFrame, list]:
    """The rows with the rate of every design x test whose tests all failed set to NaN, and those cells named.

    Such a rate is 0 by construction (a failed test never rejects), not a measurement: drawn, it would sit
    at 0 and a line would join it to its neighbours as if the design had that rate. NaN leaves a gap.
    """
    state = failure_state(rows)
    blank = state.isin(["degenerate", "failed"])
    rows = rows.copy()
    rows.loc[blank, ["rate", "ci_low", "ci_high"]] = np.nan
    named = [f"{design} / {test} ({kind})" for design, test, kind
             in zip(rows.loc[blank, "design"], rows.loc[blank, "test"], state[blank])]
    return rows, named


def _rows_on_x_axis(rows: pd.DataFrame, x: str) -> tuple[pd.DataFrame, list, list]:
    """The rows with a value on the x axis, the designs left out, and a note saying why."""
    notes, left_out = [], []
    no_x = rows[x].isna()
    if no_x.any():
        left_out = list(dict.fromkeys(rows.loc[no_x, "design"]))
        kinds = sorted(set(rows.loc[no_x, "kind"]))
        notes.append(f"{len(left_out)} design(s) left out of the figure: {', '.join(left_out)} "
                     f"({'/'.join(kinds)} designs have no {x!r}, the figure's x axis); "
                     f"draw them with figure.x: annotators, judgements, docs or judgements_per_output")
        rows = rows[~no_x]
        if rows.empty:
            raise ValueError(f"no design has a value on the figure's x axis {x!r}: {notes[0]}")
    return rows, left_out, notes


def _draw_lines(ax, rows: pd.DataFrame, figure: FigureSpec, estimand: str, designs: dict | None) -> None:
    """Per (shape or kind, test): lines with interval bands along real series, labelled points otherwise.

    Kinds are never joined (each has its own style), and within a kind only a real series is
    (:func:`design_series`)."""
    tests = list(dict.fromkeys(rows["test"]))
    shapes = list(dict.fromkeys(rows["shape"]))
    kinds = list(dict.fromkeys(rows["kind"]))
    colours = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    labelled: set = set()  # designs drawn as points whose label is already written
    if figure.colour == "shape":
        groups = [(shape, None, test) for shape in shapes for test in tests]
    else:
        groups = [(None, kind, test) for kind in kinds for test in tests]
    for shape, kind, test in groups:
        if shape:
            part = rows[(rows["test"] == test) & (rows["shape"] == shape)]
        else:
            part = rows[(rows["test"] == test) & (rows["kind"] == kind)]
        part = part.sort_values(figure.x)
        if part.empty or part["rate"].isna().all():  # e.g. SHR of one-block designs: undefined, noted in the CSV
            continue
        if shape:
            colour = colours[shapes.index(shape) % len(colours)]
            style = LINESTYLES[tests.index(test) % len(LINESTYLES)]
            marker = shape_markers().get(shape, "o")
            label = f"{shape}, {test}" if test else shape
        else:
            # Reliability estimands have no test (their 'test' is empty): label the line by the estimand.
            colour = colours[tests.index(test) % len(colours)]
            # with colour by test, design kinds are told apart by line style and marker (each kind's plot_style),
            # so designs of different kinds are never joined by one line
            style, marker = DESIGN_KINDS[kind].plot_style if kind in DESIGN_KINDS else ("-", "o")
            label = test or estimand
            if len(kinds) > 1:
                label = f"{label} ({kind})"
        lines, points = design_series(part, figure.x, designs)
        for series in lines:
            x = series[figure.x].astype(float).to_numpy()
            ax.plot(x, series["rate"], style, marker=marker, markersize=3.5, color=colour, label=label)
            ax.fill_between(x, series["ci_low"].astype(float), series["ci_high"].astype(float), color=colour,
                            alpha=0.15, linewidth=0)
            label = None  # one legend entry per group
        if not points.empty:
            # each test's points a little apart, so that tests of one design at one x do not hide each other
            shift = (tests.index(test) - (len(tests) - 1) / 2) * 4
            _draw_points(ax, points, figure.x, colour, marker, label, labelled, shift,
                         (rows[figure.x].min(), rows[figure.x].max()))


# Sizes a series may hold fixed besides the annotators per output: documents in total (the paper's
# Figure 4: blocks and documents per block vary together), documents per block (its Figure 7), annotators.
HELD_SIZES = ("docs", "docs_per_block", "annotators")


def design_series(rows: pd.DataFrame, x: str, designs: dict | None = None) -> tuple[list, pd.DataFrame]:
    """Split one test's rows into real series (drawn as lines) and single designs (drawn as points).

    A line claims a trend along ``x``, so it joins only designs of one kind that differ in one size,
    with distinct values on ``x``: either the same judgements per output and the same value of one
    of :data:`HELD_SIZES`, or (given ``designs``) every field of their kind but one the same (an
    overlap design's shared documents and annotators, say). Ways of grouping are taken greedily, the
    one that joins the most designs not yet on a line first; a design may end two lines (a ladder that
    turns a corner) but no grouping is drawn that joins no new design, so a grid is not drawn as a
    mesh. A crossed design with 3 annotators and a nested one with 20 share no series: they are drawn
    as labelled points, not joined by a trend that does not exist.

    Parameters
    ----------
    rows : pandas.DataFrame
        Summary rows of one test (and one kind).
    x : str
        The figure's x column.
    designs : dict, optional
        Design label -> design object, for the kinds' own fields.

    Returns
    -------
    lines : list of pandas.DataFrame
        Each series sorted by ``x`` (at least two designs).
    points : pandas.DataFrame
        The designs on no line.
    """
    candidates = [_series_of(rows, x, [rows["kind"], rows["judgements_per_output"], rows[held]])
                  for held in HELD_SIZES if held != x and held in rows and rows[held].notna().all()]
    for kind in dict.fromkeys(rows["kind"]) if designs else ():
        fields = DESIGN_KINDS[kind].fields
        for varying in fields:
            keys = [rows["design"].map(lambda label, f=f: getattr(designs.get(label), f, label))
                    for f in fields if f != varying]
            candidates.append(_series_of(rows[rows["kind"] == kind], x, keys))
    lines, joined = [], set()
    while candidates:
        gains = [len({d for group in found for d in group["design"]} - joined) for found in candidates]
        best = max(range(len(candidates)), key=lambda i: gains[i])  # first of the largest: HELD_SIZES order
        if gains[best] == 0:
            break
        found = candidates.pop(best)
        lines += [group for group in found if not set(group["design"]) <= joined]
        joined |= {d for group in found for d in group["design"]}
    return lines, rows[~rows["design"].isin(joined)]


def _series_of(rows: pd.DataFrame, x: str, keys: list) -> list:
    """The groups of ``rows`` with equal ``keys`` that can be lines: two designs or more, distinct x values."""
    keys = [key.loc[rows.index] for key in keys]
    return [group.sort_values(x) for _, group in rows.groupby(keys, sort=False, dropna=False)
            if len(group) > 1 and group[x].notna().all() and group[x].nunique() == len(group)]


def _draw_points(ax, points: pd.DataFrame, x: str, colour, marker: str, label, labelled: set, shift: float,
                 x_range: tuple) -> None:
    """Single designs: a marker with its interval as an error bar, shifted ``shift`` points sideways, and the
    design's label above it (once per design; starting at the leftmost designs and ending at the rightmost,
    so that it stays inside the axes)."""
    xs = points[x].astype(float).to_numpy()
    rates = points["rate"].astype(float).to_numpy()
    below = np.clip(rates - points["ci_low"].astype(float).to_numpy(), 0, None)
    above = np.clip(points["ci_high"].astype(float).to_numpy() - rates, 0, None)
    moved = matplotlib.transforms.offset_copy(ax.transData, fig=ax.figure, x=shift, units="points")
    ax.errorbar(xs, rates, yerr=[below, above], fmt="none", ecolor=colour, elinewidth=0.8, capsize=2,
                transform=moved)
    ax.plot(xs, rates, marker=marker, markersize=4, color=colour, linestyle="none", label=label, transform=moved)
    # artists drawn through a shifted transform do not extend the data limits by themselves
    corners = np.column_stack([np.r_[xs, xs], np.r_[rates - below, rates + above]])
    ax.update_datalim(corners[np.isfinite(corners).all(axis=1)])
    ax.autoscale_view()
    for design, x_value, top in zip(points["design"], xs, rates + above):
        if design not in labelled and np.isfinite(top):
            labelled.add(design)
            align = "right" if x_value >= x_range[1] else "left" if x_value <= x_range[0] else "center"
            ax.annotate(design, (x_value, top), xytext=(0, 4), textcoords="offset points", fontsize=6,
                        color="dimgrey", ha=align, bbox={"facecolor": "white", "alpha": 0.7, "edgecolor": "none",
                                                         "pad": 0.5})


def _label_axes(ax, rows: pd.DataFrame, figure: FigureSpec, estimand: str, title: str, left_out: list,
                not_rates: list = ()) -> None:
    """Axes, ticks, legend, and a title that gives the trials, the interval kind and any designs left out."""
    if figure.log_x:
        ax.set_xscale("log")
        ticks = sorted(set(rows[figure.x].astype(float)))
        ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_xlabel(AXIS_NAMES.get(figure.x, figure.x))
    ax.set_ylabel(estimand_label(estimand))
    # a value (not a rate) is not clipped at 0 and has normal intervals of its mean
    if is_rate(estimand):
        ax.set_ylim(bottom=0)
    trials = rows["trials"]
    trial_text = f"{int(trials.min())}" if trials.min() == trials.max() else f"{int(trials.min())}-{int(trials.max())}"
    band = "Wilson intervals (trial = unit)" if is_rate(estimand) else "normal intervals of the mean"
    caption = f"{title}\n{trial_text} trials per point; bands: 95% {band}"
    if left_out:
        caption += f"\nnot shown (no {AXIS_NAMES.get(figure.x, figure.x)}): {', '.join(left_out)}"
    if not_rates:
        caption += f"\nnot drawn, every test failed: {', '.join(not_rates)}"
    ax.set_title(caption, fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
