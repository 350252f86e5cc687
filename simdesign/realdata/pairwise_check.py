"""Predictive check of a model's pairwise judgements against a pairwise table or battle log.

As :mod:`simdesign.realdata.check` does for Likert scores and :mod:`simdesign.realdata.rank_check` for rankings:
simulate studies from the model *with the data's own design* (the same annotators, documents, pairs and orders of
presentation, fresh random effects and noise: :func:`simdesign.realdata.pairwise_fit.observed_simulator`), compute
the same statistics on each, and place the observed ones among the simulated (pointwise central 95% ranges;
parameters plugged in, so the ranges are slightly too narrow). The statistics:

* ``tie_rate``: the share of ties; ``first_preferred``: the share of decisive comparisons won by the output
  shown first (the position bias);
* per pair of systems (model order): ``win_rate``, the first system's share of the pair's comparisons (ties
  half), and ``pair_tie_rate``;
* ``agreement``: over the (document, pair) cells judged more than once, the share of pairs of judgements that give
  the same verdict; ``annotator_agreement_sd``: the spread over annotators of each one's agreement with the others
  on those cells (a model with one noise for every annotator predicts how much they differ; spammers or experts
  among them make it larger); ``annotator_tie_rate_sd``: the spread of annotators' tie rates (one tie band for
  all). The per-annotator statistics need a table that names its judges.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from simdesign.core.errors import ConfigError
from simdesign.core.seeds import check_rng
from simdesign.realdata.check import RANGE, check_title
from simdesign.realdata.pairwise_fit import observed_simulator
from simdesign.tables.pairwise import comparisons_of

# An annotator's share of ties (or agreement) is counted in the spread only with this many comparisons.
MIN_ANNOTATOR_COMPARISONS = 5


def _agreement(cell: np.ndarray, verdict: np.ndarray, annotator: np.ndarray, n_annotators: int
               ) -> tuple[float, np.ndarray, np.ndarray]:
    """Overall agreement over cells judged more than once, and per annotator (agreeing pairs, pairs)."""
    counts = np.bincount(cell * 3 + verdict, minlength=(cell.max() + 1) * 3).reshape(-1, 3)
    total = counts.sum(axis=1)
    agreeing_pairs = (counts * (counts - 1) / 2).sum()
    all_pairs = (total * (total - 1) / 2).sum()
    overall = agreeing_pairs / all_pairs if all_pairs else np.nan
    # each judgement agrees with (n_v - 1) of the other (n - 1) judgements of its cell
    same = counts[cell, verdict] - 1.0
    others = total[cell] - 1.0
    return (overall, np.bincount(annotator, same, minlength=n_annotators),
            np.bincount(annotator, others, minlength=n_annotators))


def _spread(numerator: np.ndarray, denominator: np.ndarray) -> float:
    usable = denominator >= MIN_ANNOTATOR_COMPARISONS
    return float(np.std(numerator[usable] / denominator[usable], ddof=1)) if usable.sum() >= 2 else np.nan


def statistics(comparisons, outcome: np.ndarray) -> np.ndarray:
    """The checked statistics of a study whose comparisons have these outcomes (order: :func:`statistic_labels`)."""
    pair, low_first = comparisons.pair_codes()
    n_pairs = comparisons.n_systems * (comparisons.n_systems - 1) // 2
    low = np.where(low_first, outcome, 1.0 - outcome)
    tie = outcome == 0.5
    decisive = ~tie
    first_preferred = (outcome[decisive] == 1.0).mean() if decisive.any() else np.nan
    shown = np.bincount(pair, minlength=n_pairs).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        win = np.bincount(pair, low, minlength=n_pairs) / shown
        pair_ties = np.bincount(pair, tie, minlength=n_pairs) / shown
    verdict = np.where(tie, 2, np.where(low == 1.0, 0, 1))
    cell = comparisons.document * n_pairs + pair
    n_annotators = len(comparisons.annotators)
    overall, same, others = _agreement(np.unique(cell, return_inverse=True)[1], verdict, comparisons.annotator,
                                       n_annotators)
    singles = [tie.mean(), first_preferred, overall]
    if comparisons.judges:
        judged = np.bincount(comparisons.annotator, minlength=n_annotators).astype(float)
        singles += [_spread(same, others), _spread(np.bincount(comparisons.annotator, tie, n_annotators), judged)]
    return np.concatenate([singles, win, pair_ties])


def statistic_labels(systems, judges: bool) -> pd.DataFrame:
    """``statistic, system, other`` of every entry of :func:`statistics`."""
    rows = [("tie_rate", "", ""), ("first_preferred", "", ""), ("agreement", "", "")]
    if judges:
        rows += [("annotator_agreement_sd", "", ""), ("annotator_tie_rate_sd", "", "")]
    first, second = np.triu_indices(len(systems), k=1)
    for statistic in ("win_rate", "pair_tie_rate"):
        rows += [(statistic, systems[i], systems[j]) for i, j in zip(first, second)]
    return pd.DataFrame(rows, columns=["statistic", "system", "other"])


def pairwise_predictive_check(model, frame: pd.DataFrame, trials: int = 200, seed: int = 0):
    """Compare a pairwise table's statistics with those of ``trials`` studies simulated from ``model``.

    Parameters
    ----------
    model : OrdinalMixedModel with a ``preferences`` mapping
        Usually fitted to the table (``simdesign fit PAIRS.csv --likert-model M``).
    frame : pandas.DataFrame
        A checked pairwise table (:func:`simdesign.tables.pairwise.read_pairwise_table`).
    trials : int
    seed : int
        Trial t simulates from ``check_rng(seed, "pairwise_check/trial", t)`` (:mod:`simdesign.core.seeds`).

    Returns
    -------
    table : pandas.DataFrame
        ``statistic, system, other, observed, sim_mean, sim_low, sim_high, inside, p_two_sided`` (statistics
        the data leave undefined, e.g. a pair never compared, are left out).
    simulated : ndarray, shape (trials, n_rows)
        Every simulated statistic in the table's row order.
    """
    if trials < 2:
        raise ConfigError(f"The check needs at least 2 simulated studies; got {trials}")
    comparisons = comparisons_of(frame, list(model.systems), judges=True)
    simulate = observed_simulator(model, comparisons)
    observed = statistics(comparisons, comparisons.outcome)
    simulated = np.empty((trials, observed.size))
    for trial in range(trials):
        simulated[trial] = statistics(comparisons, simulate(check_rng(seed, "pairwise_check/trial", trial)))
    table = statistic_labels(list(model.systems), comparisons.judges)
    with np.errstate(invalid="ignore"):
        low, high = np.nanpercentile(simulated, RANGE, axis=0)
        table = table.assign(observed=observed, sim_mean=np.nanmean(simulated, axis=0), sim_low=low, sim_high=high)
    table["inside"] = (table["observed"] >= table["sim_low"]) & (table["observed"] <= table["sim_high"])
    below, above = (simulated <= observed).mean(axis=0), (simulated >= observed).mean(axis=0)
    table["p_two_sided"] = np.minimum(1.0, 2 * np.minimum(below, above))
    keep = table["observed"].notna().to_numpy()
    return table[keep].reset_index(drop=True), simulated[:, keep]


def plot_pairwise_check(table: pd.DataFrame, title: str, path) -> Path:
    """Every statistic's simulated 95% range (bar) and observed value (black), one row each."""
    from matplotlib.figure import Figure

    labels = [f"{r.statistic} {r.system} vs {r.other}" if r.system else r.statistic for r in table.itertuples()]
    figure = Figure(figsize=(7, 0.28 * len(table) + 1.4), constrained_layout=True)
    ax = figure.subplots()
    y = np.arange(len(table))[::-1]
    ax.hlines(y, table["sim_low"], table["sim_high"], color="tab:orange", linewidth=5, alpha=0.6,
              label="simulated 95%")
    ax.plot(table["observed"], y, "ks", markersize=4, label="observed")
    ax.set_yticks(y, labels, fontsize=7)
    ax.set_xlabel("share (sd for the spreads over annotators)")
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title(title, fontsize=9)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=130)
    return path


def run_pairwise_check(model, frame: pd.DataFrame, out_dir, trials: int = 200, seed: int = 0,
                       name: str = "check") -> tuple[pd.DataFrame, list[Path]]:
    """Run :func:`pairwise_predictive_check`; write ``<name>.csv`` and ``<name>.png`` into ``out_dir``."""
    table, _ = pairwise_predictive_check(model, frame, trials=trials, seed=seed)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path = out_dir / f"{name}.csv"
    table.to_csv(csv_path, index=False)
    title = check_title(f"the pairwise judgements of '{model.name}'", trials, table)
    return table, [csv_path, plot_pairwise_check(table, title, out_dir / f"{name}.png")]


__all__ = ["pairwise_predictive_check", "run_pairwise_check", "statistics", "statistic_labels"]
