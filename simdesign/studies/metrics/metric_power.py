"""Power of the tests comparing two metrics against the difference of their correlations (issue 32, part 2).

A metric-validation config with two metrics (:mod:`simdesign.studies.metrics.metric_validation`)
is run once per value of the second metric's ``system_correlation`` (the first metric's
stays), each run resumable in its own results directory. For each run and test
(PERM-SYSTEMS, PERM-INPUTS, PERM-BOTH, the paired bootstrap on BOOT-BOTH resamples,
Williams' test; two-sided at the config's alpha) the share of trials that reject
"equal system-level Pearson correlations" is its power, plotted against the difference
of the two metrics' population system-level correlations (their targets,
:func:`~simdesign.studies.metrics.metric_validation.system_level_targets`); at a difference
of 0 it is the type I error. A second null config without metric-specific system
biases (``system_correlation: 1`` for both) gives each test's type I error when the
metrics' scores are exchangeable output by output.

``scripts/metric_comparison_power.py`` runs it and writes the figure and its table.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd

from simdesign.studies.metrics.metric_validation import (COMPARISON_ESTIMANDS, COMPARISON_TEST_NAMES,
                                                         parse_metric_config, run_metric_validation,
                                                         summarise_metric_validation, system_level_targets)

TEST_NAMES = COMPARISON_TEST_NAMES  # the name each comparison estimand has in the table
TEST_ORDER = ("PERM-SYSTEMS", "Williams", "paired bootstrap", "PERM-BOTH", "PERM-INPUTS")


def comparison_table(rows: pd.DataFrame, config) -> pd.DataFrame:
    """Rejection rates of every comparison test, per cell, with the population difference of correlations."""
    summary = summarise_metric_validation(rows, config)
    summary = summary[summary["estimand"].isin(list(COMPARISON_ESTIMANDS))].copy()
    summary["test"] = [TEST_NAMES[e] or s for e, s in zip(summary["estimand"], summary["scheme"])]
    first = system_level_targets(config)["pearson"]
    second = system_level_targets(dataclasses.replace(config, metrics=config.metrics[1:2]))["pearson"]
    summary["second_system_correlation"] = config.metrics[1].system_correlation
    summary["difference"] = first - second
    return summary[["systems", "documents", "second_system_correlation", "difference", "test", "value", "ci_low",
                    "ci_high", "mcse", "trials"]].rename(columns={"value": "rejection_rate"})


def run_power_curve(raw: dict, second_correlations, out_root, jobs: int = 1, base_dir: Path | None = None,
                    progress: bool = False) -> pd.DataFrame:
    """Run ``raw`` (a metric-validation mapping with a second metric) once per second-metric system correlation.

    Parameters
    ----------
    raw : dict
        The config mapping; its ``second_metric.system_correlation`` is replaced by each value.
    second_correlations : sequence of float
    out_root : path-like
        Each run's results directory is ``out_root/<name>-r<value>`` (resumable).
    jobs : int
    base_dir : Path, optional
        Where a model file named by the config is looked up.

    Returns
    -------
    pandas.DataFrame
        :func:`comparison_table` of every run, stacked.
    """
    tables = []
    for value in second_correlations:
        name = f"{raw.get('name', 'metric-validation')}-r{value:g}"
        config = parse_metric_config({**raw, "name": name,
                                      "second_metric": {**raw["second_metric"], "system_correlation": value}},
                                     base_dir)
        rows = run_metric_validation(config, Path(out_root) / name, jobs=jobs, progress=progress)
        tables.append(comparison_table(rows, config))
    return pd.concat(tables, ignore_index=True)


def plot_power_curves(curves: pd.DataFrame, out_base, exchangeable: pd.DataFrame | None = None,
                      alpha: float = 0.05, title: str = ""):
    """Rejection rate against the difference of correlations, a subplot per number of systems (Wilson bands).

    ``exchangeable``: the type I errors without metric-specific system bias, drawn as hollow markers at 0.
    """
    from matplotlib.figure import Figure

    from simdesign.studies.rates.plots import save_png

    systems = sorted(curves["systems"].unique())
    figure = Figure(figsize=(4.2 * len(systems), 3.6))
    axes = figure.subplots(1, len(systems), squeeze=False, sharey=True)[0]
    for axis, n_systems in zip(axes, systems):
        cell = curves[curves["systems"] == n_systems]
        for index, test in enumerate([t for t in TEST_ORDER if (cell["test"] == t).any()]):
            line = cell[cell["test"] == test].sort_values("difference")
            drawn, = axis.plot(line["difference"], line["rejection_rate"], marker="o", label=test)
            axis.fill_between(line["difference"], line["ci_low"], line["ci_high"], color=drawn.get_color(),
                              alpha=0.15)
            if exchangeable is not None:
                null = exchangeable[(exchangeable["systems"] == n_systems) & (exchangeable["test"] == test)]
                # hollow markers just left of 0, side by side, so that the five tests do not hide each other
                axis.errorbar(np.full(len(null), -0.006 * (index + 1)), null["rejection_rate"],
                              yerr=[null["rejection_rate"] - null["ci_low"], null["ci_high"] - null["rejection_rate"]],
                              fmt="o", mfc="white", color=drawn.get_color(), capsize=2)
        axis.axhline(alpha, color="grey", linestyle="--", linewidth=1)
        documents = ", ".join(str(d) for d in sorted(cell["documents"].unique()))
        axis.set_title(f"{n_systems} systems, {documents} documents", fontsize=9)
        axis.set_xlabel("difference of population system-level correlations")
        axis.grid(alpha=0.3)
    axes[0].set_ylabel(f"rejection rate at alpha {alpha:g} (two-sided)")
    axes[0].legend(fontsize=7)
    if title:
        figure.suptitle(title, fontsize=9)
    figure.tight_layout()
    return save_png(figure, out_base)
