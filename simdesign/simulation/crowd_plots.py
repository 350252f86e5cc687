"""Figures of a crowd study: correlation with the experts against k per method; each method's difference from
MOS and its chance to beat MOS in a study across the grid; the knee beside the Spearman-Brown knee."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from simdesign.simulation.panel_plots import METHOD_LABELS
from simdesign.simulation.plots import save_png


def _label(method: str) -> str:
    return METHOD_LABELS.get(method, method)


def _curves(axis, table: pd.DataFrame, cell: str, criterion: str) -> None:
    rows = table[(table["cell"] == cell) & (table["criterion"] == criterion) & (table["quantity"] == "rho_expert")]
    knees = table[(table["cell"] == cell) & (table["criterion"] == criterion) & (table["quantity"] == "knee")]
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


def _against_grid(axes, config, table: pd.DataFrame, criterion: str) -> None:
    key = list(config.grid)[0]
    values = dict(zip((label for label, _ in config.settings()), config.grid[key]))
    ks = [k for k in (1, 3, 9, 24) if k in config.ks] or list(config.ks)[:3]
    methods = [m for m in config.aggregations if m != "mean"]
    for quantity, axis, ylabel in (("minus_mos", axes[0], "rho with experts minus MOS's (mean over studies)"),
                                   ("p_beats_mos", axes[1], "P(beats MOS in a study)")):
        for index, method in enumerate(methods):
            for style, k in zip(("-", "--", ":", "-."), ks):
                rows = table[(table["quantity"] == quantity) & (table["method"] == method) & (table["k"] == k)
                             & (table["criterion"] == criterion)].assign(x=lambda t: t["cell"].map(values))
                rows = rows.sort_values("x")
                axis.errorbar(rows["x"], rows["mean"], yerr=[rows["mean"] - rows["ci_low"], rows["ci_high"] - rows["mean"]],
                              color=f"C{index + 1}", linestyle=style, marker="o", markersize=3, capsize=2,
                              label=f"{_label(method)}, k = {k}")
        axis.axhline(0.0 if quantity == "minus_mos" else 0.5, color="grey", linewidth=0.8)
        axis.set_xlabel(f"workers.{key}")
        axis.set_ylabel(ylabel)
    axes[0].legend(fontsize=6, ncol=2)


def _knees(axis, config, table: pd.DataFrame) -> None:
    from simdesign.simulation.crowd_study import spearman_brown_knee

    grid = np.linspace(0.02, 0.95, 94)
    axis.plot(grid, [spearman_brown_knee(r, config.ks) for r in grid], color="grey",
              label="Spearman-Brown knee (curve family alone)")
    knees = table[table["quantity"] == "knee"]
    for index, (method, rows) in enumerate(knees.groupby("method", sort=False)):
        axis.errorbar(rows["rho_1"], rows["mean"], yerr=[rows["mean"] - rows["ci_low"], rows["ci_high"] - rows["mean"]],
                      fmt="o", markersize=4, capsize=2, color=f"C{index}", label=f"simulated knee, {_label(method)}")
    axis.set_xlabel("single-worker reliability rho_1")
    axis.set_ylabel(f"knee (Kneedle over k = {', '.join(map(str, config.ks))})")
    axis.legend(fontsize=6)


def draw_crowd_study(config, summary: pd.DataFrame, out_base: Path) -> list[Path]:
    """The study's figure as ``out_base.png`` and its summary as ``out_base.csv``; return both paths."""
    criterion = config.criteria[0].name
    cells = [label for label, _ in config.settings()]
    panels = 4 if config.grid else 2
    fig = Figure(figsize=(5.2 * panels, 4.4))
    axes = fig.subplots(1, panels)
    _curves(axes[0], summary, cells[-1] if config.grid else cells[0], criterion)
    if config.grid:
        _against_grid(axes[1:3], config, summary, criterion)
    _knees(axes[-1], config, summary)
    fig.suptitle(f"{config.name}: {config.structure.n_items(config.model)} items, {config.workers.workers} workers, "
                 f"up to {config.workers.per_item} per item", fontsize=10)
    fig.tight_layout()
    png = save_png(fig, out_base)
    csv = Path(out_base).with_suffix(".csv")
    summary.to_csv(csv, index=False)
    return [png, csv]
