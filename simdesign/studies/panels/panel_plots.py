"""Figures of a panel study: rho against k per method (knee marked), and the knee against crowd settings."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from simdesign.studies.panels.panel_summary import KNEE, SPEARMAN
from simdesign.studies.rates.plots import save_png

TARGET_TITLES = {"expert": "crowd aggregate vs expert panel mean", "truth": "crowd aggregate vs true expected score"}
METHOD_LABELS = {"mean": "mean (MOS)", "median": "median", "majority": "majority vote", "dawid_skene": "Dawid-Skene",
                 "mace": "MACE"}


def _knee_text(knee: pd.Series) -> str:
    if not np.isfinite(knee["mean"]):
        return "no knee"
    return f"knee {knee['mean']:g} [{knee['ci_low']:g}, {knee['ci_high']:g}]"


def plot_curves(summary: pd.DataFrame, title: str, base: Path, setting: str | None = None) -> list[Path]:
    """Mean Spearman's rho against k with 95% intervals, one line per method, knees marked; one panel per target."""
    setting = setting or summary["setting"].iloc[0]
    table = summary[summary["setting"] == setting]
    targets = [t for t in TARGET_TITLES if t in set(table["target"])]
    fig = Figure(figsize=(6.2 * len(targets), 4.6))
    axes = fig.subplots(1, len(targets), sharey=True, squeeze=False)
    for axis, target in zip(axes[0], targets):
        for index, method in enumerate(dict.fromkeys(table["method"])):
            colour = f"C{index}"
            curve = table[(table["target"] == target) & (table["method"] == method)
                          & (table["estimand"] == SPEARMAN.name)].sort_values("k")
            knee = table[(table["target"] == target) & (table["method"] == method)
                         & (table["estimand"] == KNEE.name)].iloc[0]
            axis.plot(curve["k"], curve["mean"], color=colour, marker="o", markersize=3,
                      label=f"{METHOD_LABELS.get(method, method)}: {_knee_text(knee)}")
            axis.fill_between(curve["k"], curve["ci_low"], curve["ci_high"], color=colour, alpha=0.2, linewidth=0)
            if np.isfinite(knee["mean"]):
                at = curve[curve["k"] == knee["mean"]]["mean"].iloc[0]
                axis.plot([knee["mean"]], [at], marker="D", markersize=9, color=colour, markeredgecolor="black")
                axis.axvspan(knee["ci_low"], knee["ci_high"], color=colour, alpha=0.06)
        axis.set_title(TARGET_TITLES[target], fontsize=10)
        axis.set_xlabel("crowd workers per output k (random subsamples)")
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8, loc="lower right")
    axes[0][0].set_ylabel("Spearman's rho across outputs (mean over trials, 95% CI)")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return [save_png(fig, base)]


def plot_knee_sensitivity(summary: pd.DataFrame, title: str, base: Path, method: str = "mean") -> list[Path]:
    """The knee of the ``method`` curve against crowd noise, one line per spammer share; one panel per target."""
    knees = summary[(summary["estimand"] == KNEE.name) & (summary["method"] == method)]
    targets = [t for t in TARGET_TITLES if t in set(knees["target"])]
    fig = Figure(figsize=(6.2 * len(targets), 4.6))
    axes = fig.subplots(1, len(targets), sharey=True, squeeze=False)
    shares = sorted(knees["spammer_share"].unique())
    for axis, target in zip(axes[0], targets):
        for index, share in enumerate(shares):
            rows = knees[(knees["target"] == target) & (knees["spammer_share"] == share)].sort_values("noise")
            offset = (index - (len(shares) - 1) / 2) * 0.02 * float(np.ptp(knees["noise"]) or 1.0)
            axis.errorbar(rows["noise"] + offset, rows["mean"],
                          yerr=[rows["mean"] - rows["ci_low"], rows["ci_high"] - rows["mean"]],
                          color=f"C{index}", marker="o", capsize=3, label=f"spammer share {share:g}")
        axis.set_title(f"{TARGET_TITLES[target]}; knee of the {METHOD_LABELS.get(method, method)} curve", fontsize=10)
        axis.set_xlabel("crowd noise (scale of the latent logistic error)")
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8)
    axes[0][0].set_ylabel("knee: workers per output k (Kneedle, 95% bootstrap interval)")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return [save_png(fig, base)]


def crowd_description(config) -> str:
    """One line naming the panels' settings, for figure titles."""
    parts = []
    for name, spec in config.panels.items():
        size = (f"{spec.annotators} judging all" if spec.judges_all
                else f"pool {spec.pool}, {spec.per_output} per output")
        parts.append(f"{name}: {size}, noise {spec.noise:g}, slope_sd {spec.slope_sd:g}, "
                     f"spammers {spec.spammer_share:g}")
    return "; ".join(parts)


def draw_panel_study(config, summary: pd.DataFrame, base: Path) -> list[Path]:
    """The panel study's figure: its curves (one crowd setting) or the knee against the settings (a grid)."""
    settings = config.settings()
    title = (f"{config.name}: model {config.model.name}, {config.docs} documents x {config.model.n_systems} systems, "
             f"{config.trials} trials x {config.subsamples} subsamples")
    if len(settings) > 1:
        return plot_knee_sensitivity(summary, title + f", {len(settings)} crowd settings", base)
    return plot_curves(summary, title + "\n" + crowd_description(config), base)
