"""Figures of a crowd study: correlation with the experts against k per method; each method's difference from
MOS and its chance to beat MOS in a study across the grid; the knee beside the Spearman-Brown knee."""
from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from simdesign.studies.panels.panel_plots import METHOD_LABELS
from simdesign.studies.panels.panel_summary import KNEE
from simdesign.studies.rates.plots import save_png
from simdesign.stats.knee import spearman_brown_knee


def _label(method: str) -> str:
    return METHOD_LABELS.get(method, method)


def _curves(axis, table: pd.DataFrame, cell: str, criterion: str) -> None:
    rows = table[(table["cell"] == cell) & (table["criterion"] == criterion) & (table["quantity"] == "rho_expert")]
    knees = table[(table["cell"] == cell) & (table["criterion"] == criterion) & (table["quantity"] == KNEE.name)]
    for index, (method, curve) in enumerate(rows.groupby("method", sort=False)):
        curve = curve.sort_values("k")
        knee = knees[knees["method"] == method]
        text = f" (knee {knee['mean'].iloc[0]:g})" if len(knee) and np.isfinite(knee["mean"].iloc[0]) else ""
        axis.plot(curve["k"], curve["mean"], marker="o", markersize=3, color=f"C{index}",
                  label=_label(method) + text)
        axis.fill_between(curve["k"], curve["ci_low"], curve["ci_high"], color=f"C{index}", alpha=0.2, linewidth=0)
    axis.set_xlabel("workers per item k")
    axis.set_ylabel("Spearman's rho with the experts' mean")
    axis.set_title(f"{cell}, {criterion}", fontsize=9)
    axis.legend(fontsize=7)


def grid_positions(config) -> dict:
    """cell label -> (value of the grid's first key, label of the other keys' values or '')."""
    keys = list(config.grid)
    combos = itertools.product(*(config.grid[key] for key in keys))
    return {label: (values[0], ", ".join(f"{key} {value}" for key, value in zip(keys[1:], values[1:])))
            for (label, _), values in zip(config.settings(), combos)}


COMPETENCE_MODELS = ("mace", "dawid_skene")


def _against_grid(axes, config, table: pd.DataFrame, criterion: str, quantity: str, rests: list) -> None:
    """A competence model's difference from MOS (or chance to beat it) against the grid's first key, per k, one
    colour per value of the grid's other keys (and per competence model)."""
    key = list(config.grid)[0]
    positions = grid_positions(config)
    ks = [k for k in (1, 3, 9, 24) if k in config.ks] or list(config.ks)[:4]
    methods = [m for m in config.aggregations if m in COMPETENCE_MODELS]
    for index, (method, rest) in enumerate(itertools.product(methods, rests)):
        cells = [cell for cell, (_, other) in positions.items() if other == rest]
        for style, k in zip(("-", "--", ":", "-."), ks):
            rows = table[(table["quantity"] == quantity) & (table["method"] == method) & (table["k"] == k)
                         & (table["criterion"] == criterion) & table["cell"].isin(cells)]
            rows = rows.assign(x=rows["cell"].map(lambda c: positions[c][0])).sort_values("x")
            axes.errorbar(rows["x"], rows["mean"], yerr=[rows["mean"] - rows["ci_low"], rows["ci_high"] - rows["mean"]],
                          color=f"C{index + 2}", linestyle=style, marker="o", markersize=3, capsize=2,
                          label=f"{_label(method)}{', ' + rest if rest else ''}, k = {k}")
    axes.axhline(0.0 if quantity == "minus_mos" else 0.5, color="grey", linewidth=0.8)
    axes.set_xlabel(f"workers.{key}")
    axes.set_ylabel("rho with experts minus MOS's (95% CI)" if quantity == "minus_mos"
                    else "P(beats MOS in one study) (95% CI)")
    axes.set_title(", ".join(rests) if len(rests) == 1 and rests[0] else criterion, fontsize=9)
    axes.legend(fontsize=6, ncol=2)


def _knees(axis, config, table: pd.DataFrame) -> None:
    grid = np.linspace(0.02, 0.95, 94)
    axis.plot(grid, [spearman_brown_knee(r, config.ks) for r in grid], color="grey",
              label="Spearman-Brown knee (curve family alone)")
    knees = table[table["quantity"] == KNEE.name]
    for index, (method, rows) in enumerate(knees.groupby("method", sort=False)):
        axis.errorbar(rows["rho_1"], rows["mean"], yerr=[rows["mean"] - rows["ci_low"], rows["ci_high"] - rows["mean"]],
                      fmt="o", markersize=4, capsize=2, color=f"C{index}", label=f"simulated knee, {_label(method)}")
    axis.set_xlabel("single-worker reliability rho_1")
    axis.set_ylabel(f"knee (Kneedle over k = {', '.join(map(str, config.ks))})")
    axis.legend(fontsize=6)


def draw_crowd_study(config, summary: pd.DataFrame, out_base: Path) -> list[Path]:
    """The study's figure as ``out_base.png`` and its summary as ``out_base.csv``; return both paths.

    Without a grid: the curves and the knees. With one: per value of the grid's other keys, the curves at the
    grid's last value and MACE's (Dawid-Skene's) difference from MOS against the grid's first key; then the knees
    and the chance to beat MOS in one study.
    """
    criterion = config.criteria[0].name
    cells = [label for label, _ in config.settings()]
    if not config.grid:
        fig = Figure(figsize=(10.4, 4.4))
        axes = fig.subplots(1, 2)
        _curves(axes[0], summary, cells[0], criterion)
        _knees(axes[1], config, summary)
    else:
        positions = grid_positions(config)
        rests = list(dict.fromkeys(other for _, other in positions.values()))
        fig = Figure(figsize=(5.2 * len(rests) + 5.2, 8.8))
        axes = fig.subplots(2, len(rests) + 1, squeeze=False)
        for column, rest in enumerate(rests):
            last = [cell for cell, (_, other) in positions.items() if other == rest][-1]
            _curves(axes[0][column], summary, last, criterion)
            _against_grid(axes[1][column], config, summary, criterion, "minus_mos", [rest])
        _knees(axes[0][-1], config, summary)
        _against_grid(axes[1][-1], config, summary, criterion, "p_beats_mos", rests)
    fig.suptitle(f"{config.name}: {config.structure.n_items(config.model)} items, {config.workers.workers} workers, "
                 f"up to {config.workers.per_item} per item", fontsize=10)
    fig.tight_layout()
    png = save_png(fig, out_base)
    csv = Path(out_base).with_suffix(".csv")
    summary.to_csv(csv, index=False)
    return [png, csv]
