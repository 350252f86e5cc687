"""Predictive check of a rank model (joint Likert/Rank or rank-only) against a Rank table.

As :mod:`simdesign.realdata.check` does for Likert: simulate rank studies from the model with the
data's own (annotator, document) assignment, compute the same statistics on each, and place the
observed ones among the simulated (pointwise central 95% ranges; parameters plugged in, so the
ranges are slightly too narrow). The statistics of a ranking study:

* the distribution of ranks of every system (``share``; ``category`` = rank, 1 = best),
* the mean rank of every system (1 = best),
* the pairwise preference rates: the share of rankings placing ``system`` above ``other``,
* Krippendorff's alpha (ordinal, on reversed ranks; unit = document x system) and, with two or
  more blocks, SHR (split-half reliability of system mean ranks).

Annotator and document mean spreads, part of the Likert check, are left out: every ranking has the
same mean rank, so they are zero by construction.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from simdesign.core.errors import ConfigError
from simdesign.core.seeds import check_rng, stream
from simdesign.realdata.check import (RANGE, _statistic_labels, _statistics, _Study, check_title, observed_design,
                                      write_check)
from simdesign.realdata.rank_noise import pair_index

DROPPED = ("annotator_mean_sd", "document_mean_sd")


def _rank_statistics(scores: np.ndarray, assignment, rng) -> np.ndarray:
    """The Likert check's statistics on reversed ranks, then the pairwise preference rates."""
    n_systems = scores.shape[1]
    base = _statistics(_Study(scores.astype(float), assignment.annotator, assignment.document, assignment.block),
                       np.arange(1, n_systems + 1), rng)
    s, t = pair_index(n_systems)
    return np.concatenate([base, (scores[:, s] > scores[:, t]).mean(axis=0)])


def _labels(systems) -> pd.DataFrame:
    n_systems = len(systems)
    rows = []
    for statistic, system, category in _statistic_labels(systems, range(1, n_systems + 1)):
        if statistic == "share":
            category = n_systems + 1 - category  # reversed rank -> rank, 1 = best
        rows.append((statistic if statistic != "mean" else "mean_rank", system, "", category))
    s, t = pair_index(n_systems)
    rows += [("prefer", systems[i], systems[j], None) for i, j in zip(s, t)]
    return pd.DataFrame(rows, columns=["statistic", "system", "other", "category"])


def rank_predictive_check(model, frame: pd.DataFrame, trials: int = 200, seed: int = 0):
    """Compare a Rank table's statistics with those of ``trials`` rank studies simulated from ``model``.

    Parameters
    ----------
    model : OrdinalMixedModel with ``rank_noise``, or RankOnlyModel
    frame : pandas.DataFrame
        A checked Rank table (:func:`simdesign.tables.recognise.read_table`: ``score`` = reversed rank).
    trials : int
    seed : int
        Root seed; simulated study t draws from ``check_rng(seed, "rank_check/trial", t)``, the observed
        SHR's splits from ``stream(seed, "rank_check/observed")`` (:mod:`simdesign.core.seeds`).

    Returns
    -------
    table : pandas.DataFrame
        ``statistic, system, other, category, observed, sim_mean, sim_low, sim_high, inside, p_two_sided``.
    simulated : ndarray, shape (trials, n_rows)
        Every simulated statistic in the table's row order.
    """
    if trials < 2:
        raise ConfigError(f"The check needs at least 2 simulated studies; got {trials}")
    if "rank" not in model.methods:
        raise ConfigError(f"Model '{model.name}' cannot generate rankings: a Likert model needs 'rank_noise' "
                          "(fit it with 'simdesign fit RANKS.csv --likert-model MODEL')")
    design, observed_scores = observed_design(frame, model.systems)
    if np.isnan(observed_scores).any():
        raise ConfigError("Every (annotator, document) of a Rank table must rank every system")
    assignment = design.assignment
    observed = _rank_statistics(observed_scores, assignment, stream(seed, "rank_check/observed"))
    simulated = np.empty((trials, observed.size))
    for trial in range(trials):
        rng = check_rng(seed, "rank_check/trial", trial)
        sample = model.sample(design, rng, method="rank")
        simulated[trial] = _rank_statistics(sample.scores, assignment, rng)
    table = _labels(model.systems)
    n_systems = model.n_systems
    means = (table["statistic"] == "mean_rank").to_numpy()
    observed[means] = n_systems + 1 - observed[means]  # mean reversed rank -> mean rank (1 = best)
    simulated[:, means] = n_systems + 1 - simulated[:, means]
    low, high = np.nanpercentile(simulated, RANGE, axis=0)
    table["category"] = pd.array(table["category"], dtype="Int64")
    table = table.assign(observed=observed, sim_mean=np.nanmean(simulated, axis=0), sim_low=low, sim_high=high)
    table["inside"] = (table["observed"] >= table["sim_low"]) & (table["observed"] <= table["sim_high"])
    below, above = (simulated <= observed).mean(axis=0), (simulated >= observed).mean(axis=0)
    table["p_two_sided"] = np.minimum(1.0, 2 * np.minimum(below, above))
    keep = (table["observed"].notna() & ~table["statistic"].isin(DROPPED)).to_numpy()
    return table[keep].reset_index(drop=True), simulated[:, keep]


def run_rank_check(model, frame: pd.DataFrame, out_dir, trials: int = 200, seed: int = 0,
                   name: str = "check") -> tuple[pd.DataFrame, list[Path]]:
    """Run :func:`rank_predictive_check`; write ``<name>.csv`` and ``<name>.png`` into ``out_dir``."""
    table, simulated = rank_predictive_check(model, frame, trials=trials, seed=seed)
    title = check_title(f"rank model '{model.name}'", trials, table, " (distributions: x = rank, 1 = best)")
    # The Likert check's figure shows the rank distributions, mean ranks, alpha and SHR.
    plotted = table["statistic"].isin(["share", "krippendorff_alpha", "shr", "mean_rank"]).to_numpy()
    return table, write_check(table, simulated, out_dir, name, title, plotted)
