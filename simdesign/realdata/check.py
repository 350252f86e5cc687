"""Predictive check of a fitted model against the data it was fitted to.

Simulate many studies from the model *with the data's own design* (the
observed (annotator, document) assignment, reused in every simulation, with
fresh random effects and noise), compute the same statistics on each, and
see where the observed statistics fall among the simulated ones:

* the score distribution of every system (the paper's Figure 2),
* the system means,
* the spread of annotator means (sd over annotators: annotator leniency),
* the spread of document means (sd over documents: document difficulty),
* Krippendorff's alpha (ordinal) and, with two or more blocks, SHR.

The simulations plug in the fitted parameters (a parametric-bootstrap
predictive check rather than a Bayesian posterior predictive one: parameter
uncertainty is not propagated), so the ranges are slightly too narrow. They
are pointwise 95% ranges: with 40-odd statistics, two or so outside them
are expected from chance alone.

Examples
--------
>>> import numpy as np
>>> from simdesign import BlockDesign, load_model
>>> model = load_model("coherence")
>>> frame = model.sample(BlockDesign(4, 5, 3), np.random.default_rng(1)).to_frame().drop(columns="block")
>>> table, _ = predictive_check(model, frame, trials=20, seed=1)
>>> list(table.columns[:4])
['statistic', 'system', 'category', 'observed']
"""
from __future__ import annotations

import warnings

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from simdesign.runner.progress import progress_bar
from simdesign.core.designs import Assignment
from simdesign.core.errors import ConfigError, DataError
from simdesign.core.suggest import suggestions
from simdesign.core.judgements import _blocks_from_shared_documents
from simdesign.core.seeds import check_rng, stream
from simdesign.model import OrdinalMixedModel
from simdesign.stats.reliability import UndefinedReliability, alpha_from_units, split_half_from_block_sums

RANGE = (2.5, 97.5)


@dataclass(frozen=True)
class ObservedDesign:
    """The data's own assignment as a design: :meth:`assign` returns it unchanged every time.

    Attributes
    ----------
    assignment : Assignment
    observed : ndarray of bool, shape (n_pairs, n_systems)
        Which system outputs each (annotator, document) pair actually scored;
        simulated scores elsewhere are discarded, so an incomplete table is
        simulated exactly as incomplete (judgements are independent given the
        random effects, so simulating and then dropping a cell is the same as
        never simulating it).
    label : str
    """

    assignment: Assignment
    observed: np.ndarray
    label: str = "observed"

    def assign(self, rng: np.random.Generator) -> Assignment:
        return self.assignment


@dataclass(frozen=True)
class _Study:
    """One study in the wide layout, with NaN for unobserved cells."""

    scores: np.ndarray  # (n_pairs, S) float
    annotator: np.ndarray
    document: np.ndarray
    block: np.ndarray


def observed_design(frame: pd.DataFrame, systems) -> tuple[ObservedDesign, np.ndarray]:
    """The assignment of a long judgements table, and its scores in the wide layout.

    Parameters
    ----------
    frame : pandas.DataFrame
        Columns ``annotator, document, system, score``.
    systems : sequence of str
        The model's systems; the table's must be the same set.

    Returns
    -------
    design : ObservedDesign
    scores : ndarray of float, shape (n_pairs, n_systems)
        NaN where a pair did not score a system.
    """
    systems = list(systems)
    found = set(frame["system"].astype(str))
    if found != set(systems):
        strays = sorted(found - set(systems))
        raise DataError(f"The judgements' systems {sorted(found)} differ from the model's {sorted(systems)}"
                        f"{suggestions(strays, sorted(set(systems) - found) or systems)}")
    wide = frame.assign(system=frame["system"].astype(str)).pivot(
        index=["annotator", "document"], columns="system", values="score").reindex(columns=systems)
    annotator, _ = pd.factorize(wide.index.get_level_values("annotator"), sort=True)
    document, _ = pd.factorize(wide.index.get_level_values("document"), sort=True)
    block = _blocks_from_shared_documents(annotator.astype(np.int64), document.astype(np.int64))
    n_blocks = int(block.max()) + 1 if block.min() >= 0 else 0
    assignment = Assignment(annotator=annotator.astype(np.int64), document=document.astype(np.int64),
                            block=block, n_annotators=int(annotator.max()) + 1,
                            n_documents=int(document.max()) + 1, n_blocks=n_blocks)
    scores = wide.to_numpy(dtype=float)
    return ObservedDesign(assignment, ~np.isnan(scores)), scores


def _statistics(study: _Study, scale: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """All checked statistics of one study as one vector (order: :func:`_statistic_labels`)."""
    scores = study.scores
    observed = ~np.isnan(scores)
    n_systems = scores.shape[1]
    # Score distribution per system: shares of each scale value.
    shares = np.stack([(scores == value).sum(axis=0) for value in scale], axis=1) / observed.sum(axis=0)[:, None]
    means = np.nanmean(scores, axis=0)
    filled = np.where(observed, scores, 0.0)
    row_sum, row_count = filled.sum(axis=1), observed.sum(axis=1)
    annotator_means = (np.bincount(study.annotator, row_sum) / np.bincount(study.annotator, row_count))
    document_means = (np.bincount(study.document, row_sum) / np.bincount(study.document, row_count))
    units = (study.document[:, None] * n_systems + np.arange(n_systems)[None, :])[observed]
    try:
        alpha = alpha_from_units(units, scores[observed], scale)
    except UndefinedReliability:
        alpha = np.nan
    shr = np.nan
    if study.block.min() >= 0 and study.block.max() >= 1:
        n_blocks = int(study.block.max()) + 1
        sums = np.zeros((n_blocks, n_systems))
        np.add.at(sums, study.block, filled)
        counts = np.zeros((n_blocks, n_systems))
        np.add.at(counts, study.block, observed.astype(float))
        try:
            shr = split_half_from_block_sums(sums, counts, rng).value
        except UndefinedReliability:
            pass
    return np.concatenate([shares.ravel(), means,
                           [np.std(annotator_means, ddof=1), np.std(document_means, ddof=1), alpha, shr]])


def _statistic_labels(systems, scale) -> list[tuple]:
    labels = [("share", system, int(value)) for system in systems for value in scale]
    labels += [("mean", system, None) for system in systems]
    labels += [("annotator_mean_sd", "", None), ("document_mean_sd", "", None), ("krippendorff_alpha", "", None),
               ("shr", "", None)]
    return labels


def predictive_check(model: OrdinalMixedModel, frame: pd.DataFrame, trials: int = 200, seed: int = 0,
                     progress: bool = False):
    """Compare the observed statistics with those of ``trials`` studies simulated from ``model``.

    Parameters
    ----------
    model : OrdinalMixedModel
        Usually fitted to ``frame`` (``simdesign fit``).
    frame : pandas.DataFrame
        The judgements, columns ``annotator, document, system, score``.
    trials : int
    seed : int
        Root seed; simulated study t draws from ``check_rng(seed, "check/trial", t)``, the observed
        statistics' own draws (SHR's splits) from ``stream(seed, "check/observed")``
        (:mod:`simdesign.core.seeds`).
    progress : bool
        Show the simulated studies' progress (a bar on a terminal, plain lines in a log).

    Returns
    -------
    table : pandas.DataFrame
        One row per statistic: ``statistic, system, category, observed,
        sim_mean, sim_low, sim_high`` (the central 95% of the simulations),
        ``inside`` and ``p_two_sided`` (twice the smaller tail share,
        capped at 1). SHR rows are absent without two or more blocks.
    simulated : ndarray, shape (trials, n_statistics)
        Every simulated statistic, in the table's row order (before SHR is
        dropped), for figures.
    """
    if trials < 2:
        raise ConfigError(f"The check needs at least 2 simulated studies; got {trials}")
    scale = np.asarray(model.scale)
    values = pd.to_numeric(frame["score"])
    outside = sorted({int(v) if float(v).is_integer() else float(v) for v in values.unique()} - set(scale.tolist()))
    if outside:
        raise DataError(f"Scores {outside} are not on the model's scale {scale.tolist()}"
                        f" ({model.name!r}); a table on another scale needs a model fitted to it")
    design, observed_scores = observed_design(frame, model.systems)
    assignment = design.assignment
    observed_study = _Study(observed_scores, assignment.annotator, assignment.document, assignment.block)
    observed = _statistics(observed_study, scale, stream(seed, "check/observed"))
    simulated = np.empty((trials, observed.size))
    with progress_bar(trials, f"predictive check of {model.name!r}", enabled=progress, unit="study") as bar:
        for trial in range(trials):
            rng = check_rng(seed, "check/trial", trial)
            sample = model.sample(design, rng)
            scores = np.where(design.observed, sample.scores, np.nan)
            simulated[trial] = _statistics(_Study(scores, assignment.annotator, assignment.document,
                                                  assignment.block), scale, rng)
            bar.update(1)
    labels = _statistic_labels(model.systems, scale)
    with warnings.catch_warnings():
        # a statistic the design never defines (NaN in every simulated study) has no range: NaN, not a warning
        warnings.simplefilter("ignore", RuntimeWarning)
        low, high = np.nanpercentile(simulated, RANGE, axis=0)
        simulated_mean = np.nanmean(simulated, axis=0)
    below = (simulated <= observed).mean(axis=0)
    above = (simulated >= observed).mean(axis=0)
    table = pd.DataFrame({
        "statistic": [lab[0] for lab in labels], "system": [lab[1] for lab in labels],
        "category": pd.array([lab[2] for lab in labels], dtype="Int64"),
        "observed": observed, "sim_mean": simulated_mean, "sim_low": low, "sim_high": high,
    })
    table["inside"] = (table["observed"] >= table["sim_low"]) & (table["observed"] <= table["sim_high"])
    table["p_two_sided"] = np.minimum(1.0, 2 * np.minimum(below, above))
    keep = table["observed"].notna().to_numpy()
    return table[keep].reset_index(drop=True), simulated[:, keep]


def plot_check(table: pd.DataFrame, simulated: np.ndarray, title: str, path) -> Path:
    """The check as one figure: per-system score distributions, system means, spreads, reliability.

    Observed values are black; simulated 95% ranges are grey bars (distributions, means) or
    histograms with the range shaded (single statistics).
    """
    from matplotlib.figure import Figure  # never pyplot: library code neither needs nor switches a backend

    systems = list(dict.fromkeys(table.loc[table["statistic"] == "share", "system"]))
    singles = [s for s in ("annotator_mean_sd", "document_mean_sd", "krippendorff_alpha", "shr")
               if (table["statistic"] == s).any()]
    columns = max(len(systems), len(singles) + 1)
    fig = Figure(figsize=(2.6 * columns, 5.6), constrained_layout=True)
    axes = fig.subplots(2, columns, squeeze=False)
    for ax in axes.ravel():
        ax.set_visible(False)
    for k, system in enumerate(systems):
        ax = axes[0, k]
        ax.set_visible(True)
        rows = table[(table["statistic"] == "share") & (table["system"] == system)]
        x = rows["category"].astype(int).to_numpy()
        ax.bar(x, rows["observed"], color="0.2", width=0.6, label="observed")
        ax.errorbar(x, rows["sim_mean"], yerr=[rows["sim_mean"] - rows["sim_low"], rows["sim_high"] - rows["sim_mean"]],
                    fmt="o", color="tab:orange", markersize=3, capsize=2, label="simulated 95%")
        ax.set_title(system, fontsize=9)
        ax.set_xticks(x)
        ax.set_xlabel("score", fontsize=8)
        if k == 0:
            ax.set_ylabel("share of judgements")
            ax.legend(fontsize=7)
    ax = axes[1, 0]
    ax.set_visible(True)
    rows = table[table["statistic"] == "mean"]
    position = np.arange(len(rows))
    ax.errorbar(position, rows["sim_mean"], yerr=[rows["sim_mean"] - rows["sim_low"], rows["sim_high"] - rows["sim_mean"]],
                fmt="o", color="tab:orange", capsize=3, label="simulated 95%")
    ax.plot(position, rows["observed"], "ks", markersize=5, label="observed")
    ax.set_xticks(position, rows["system"], rotation=45, ha="right", fontsize=7)
    ax.set_title("system means", fontsize=9)
    names = {"annotator_mean_sd": "sd of annotator means", "document_mean_sd": "sd of document means",
             "krippendorff_alpha": "Krippendorff's alpha", "shr": "split-half reliability"}
    for k, statistic in enumerate(singles, start=1):
        ax = axes[1, k]
        ax.set_visible(True)
        index = int(np.flatnonzero(table["statistic"].to_numpy() == statistic)[0])
        row = table.iloc[index]
        values = simulated[:, index]
        ax.hist(values[np.isfinite(values)], bins=30, color="tab:orange", alpha=0.6)
        ax.axvspan(row["sim_low"], row["sim_high"], color="tab:orange", alpha=0.12)
        ax.axvline(row["observed"], color="black", linewidth=2)
        ax.set_title(f"{names[statistic]}\nobserved {row['observed']:.3f}", fontsize=9)
        ax.set_yticks([])
    fig.suptitle(title, fontsize=10)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130)
    return path


def check_title(what: str, trials: int, table: pd.DataFrame, note: str = "") -> str:
    """A predictive check figure's title: what was simulated, and how many statistics fall outside."""
    outside = int((~table["inside"]).sum())
    return (f"Predictive check of {what}: {trials} studies simulated with the data's design; "
            f"{outside} of {len(table)} statistics outside the simulated 95% range{note}")


def write_check(table: pd.DataFrame, simulated: np.ndarray, out_dir, name: str, title: str,
                plotted: np.ndarray | None = None) -> list[Path]:
    """Write a check's table as ``<name>.csv`` and its figure as ``<name>.png`` into ``out_dir``.

    ``plotted``: a boolean mask of the table's rows to draw (default all; the table is written whole).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path = out_dir / f"{name}.csv"
    table.to_csv(csv_path, index=False)
    if plotted is None:
        plotted = np.ones(len(table), dtype=bool)
    shown = table[plotted].replace({"statistic": {"mean_rank": "mean"}}).reset_index(drop=True)
    png_path = plot_check(shown, simulated[:, plotted], title, out_dir / f"{name}.png")
    return [csv_path, png_path]


def run_check(model: OrdinalMixedModel, frame: pd.DataFrame, out_dir, trials: int = 200, seed: int = 0,
              name: str = "check") -> tuple[pd.DataFrame, list[Path]]:
    """Run :func:`predictive_check` and write ``<name>.csv`` and ``<name>.png`` into ``out_dir``."""
    table, simulated = predictive_check(model, frame, trials=trials, seed=seed, progress=True)
    return table, write_check(table, simulated, out_dir, name, check_title(f"model '{model.name}'", trials, table))
