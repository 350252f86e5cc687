"""Summary of a panel study: mean Spearman's rho per k with its MCSE, and the knee of each curve.

The trial is the Monte-Carlo unit: for each (setting, method, target, k)
the per-trial values (each already a mean over subsamples) give the mean,
MCSE = sd (ddof 1) / sqrt(trials) and a normal 95% interval. The knee
(Kneedle, :func:`simdesign.stats.knee.kneedle`) is found on the mean curve;
its interval is the 2.5 and 97.5 percentiles of the knees of the mean
curves of ``bootstrap`` resamples of the trials (the same resampled trials
for every method, target and setting's curve), and its ``mcse`` column holds
the bootstrap standard deviation.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from simdesign.core.estimands import Estimand, register_estimand
from simdesign.core.seeds import analysis_rng
from simdesign.stats.knee import kneedle
from simdesign.stats.montecarlo import normal_quantile

if TYPE_CHECKING:  # the config is only annotated here; panel_study imports this module (its summary columns)
    from simdesign.studies.panels.panel_study import PanelStudyConfig

SUMMARY_COLUMNS = ("setting", "noise", "slope_sd", "spammer_share", "method", "target", "estimand", "k", "trials",
                   "mean", "ci_low", "ci_high", "mcse", "n_undefined")


def curve_rows(trials: pd.DataFrame) -> pd.DataFrame:
    """Mean rho per (setting, method, target, k) with MCSE and normal 95% interval (trial = unit).

    The rule of :func:`simdesign.stats.montecarlo.mean_interval`, vectorised over the groups: with a
    single trial the MCSE and the interval are undefined (NaN).
    """
    grouped = trials.groupby(["setting", "method", "target", "k"], sort=False)
    table = grouped["spearman"].agg(mean="mean", sd="std", trials="count").reset_index()
    table["n_undefined"] = grouped["n_undefined"].sum().to_numpy()
    table["mcse"] = table["sd"] / np.sqrt(table["trials"])
    z = normal_quantile(0.95)
    table["ci_low"] = table["mean"] - z * table["mcse"]
    table["ci_high"] = table["mean"] + z * table["mcse"]
    table["estimand"] = SPEARMAN.name
    return table.drop(columns="sd")


def knee_rows(trials: pd.DataFrame, bootstrap: int, rng: np.random.Generator) -> pd.DataFrame:
    """The Kneedle knee of each mean curve, with a percentile interval from resampling trials."""
    rows = []
    for (setting, method, target), group in trials.groupby(["setting", "method", "target"], sort=False):
        # trials x k matrix (a trial missing a k would be a bug upstream: every trial has every k)
        matrix = group.pivot(index="trial", columns="k", values="spearman")
        ks = matrix.columns.to_numpy()
        values = matrix.to_numpy()
        knee = kneedle(ks, np.nanmean(values, axis=0))
        picks = rng.integers(0, len(values), size=(bootstrap, len(values)))
        knees = np.array([kneedle(ks, np.nanmean(values[pick], axis=0)) for pick in picks])
        finite = knees[np.isfinite(knees)]
        low, high = (np.percentile(finite, [2.5, 97.5]) if finite.size else (np.nan, np.nan))
        rows.append({"setting": setting, "method": method, "target": target, "estimand": KNEE.name, "k": np.nan,
                     "trials": len(values), "mean": knee, "ci_low": low, "ci_high": high,
                     "mcse": float(finite.std(ddof=1)) if finite.size > 1 else np.nan,
                     "n_undefined": int(bootstrap - finite.size)})
    return pd.DataFrame(rows)


def summarise_panel_study(config: PanelStudyConfig, trials: pd.DataFrame) -> pd.DataFrame:
    """One row per (setting, method, target, k) ('spearman') and per (setting, method, target) ('knee').

    Columns :data:`SUMMARY_COLUMNS`; the crowd
    setting's noise, slope_sd and spammer_share are repeated in every row.
    """
    # The knee's bootstrap draws come from a stream of their own, so a summary is reproducible.
    rng = analysis_rng(config.seed, config.name, 0, "knee-bootstrap")
    table = pd.concat([curve_rows(trials), knee_rows(trials, config.bootstrap, rng)], ignore_index=True)
    settings = {label: panels[config.crowd] for label, panels in config.settings()}
    for column in ("noise", "slope_sd", "spammer_share"):
        table[column] = table["setting"].map({label: getattr(spec, column) for label, spec in settings.items()})
    return table[list(SUMMARY_COLUMNS)]


# The panel study's estimands, in the estimand registry (both come from summarise_panel_study).
SPEARMAN = register_estimand(Estimand(
    "spearman", ("panels",), "value", "Spearman's rho with the expert panel", summarise_panel_study,
    "mean over trials of Spearman's rho between the crowd panel's and the experts' system ranking, per k"))
KNEE = register_estimand(Estimand(
    "knee", ("panels",), "count", "knee of the rho curve (workers k)", summarise_panel_study,
    "the Kneedle knee of the mean rho curve, with a bootstrap percentile interval over trials"))
