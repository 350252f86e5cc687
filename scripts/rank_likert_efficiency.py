"""Rank vs Likert efficiency at equal annotation time: the real data's Figure 3 beside the models' (issue 30 part 3).

    PYTHONPATH=$PWD python scripts/rank_likert_efficiency.py [--studies 200] [--repetitions 20]
        [--real-repetitions 200] [--seed 2021] [--out figures/rank_vs_likert_efficiency]

Figure 3's protocol (scripts/paper_real_figures.py): samples of k of the study's 20 blocks (k = 2..19) and
Pearson's r between the sample's system means and the full study's, against the sample's capped annotation
time. Here it is run three ways for each task and method:

* ``real``: on the paper's files and times (the same resampling function, seed and repetitions as Figure 3);
* ``joint``: on ``--studies`` full studies of the paper's design (20 blocks of 5 documents, 3 annotators)
  simulated from the joint model (the preset's Likert model; Rank from its ``rank_noise``);
* ``separate``: the same from the separately fitted models (Likert preset; Rank from the rank-only fit,
  ``model: {preset: TASK, rank_model: TASK}``), the model the Rank-vs-Likert figure and the method plans use.

Simulated annotators take the paper's capped mean seconds per judged output (Likert 30.53 / 25.10 s,
Rank 26.67 / 19.48 s per output, coherence / repetition), so a block costs 75 outputs at that rate; the
real samples take each annotator's own capped time. The efficiency of Rank at k Rank blocks is the
Likert annotation time that reaches the same mean r (interpolated along Likert's curve) divided by the
Rank time: 2 means Likert needs twice the time for the same agreement with its full study. Simulated
values are means over studies (study = unit) with a 95% interval; the ratio's MCSE is from 10 batches
of studies. Writes ``<out>.csv`` (curves and ratios) and ``<out>.png``.
"""
from __future__ import annotations

import argparse
import warnings
from importlib import resources
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import yaml  # noqa: E402

from simdesign.core.designs import BlockDesign  # noqa: E402
from simdesign.model import load_model  # noqa: E402
from simdesign.model.method_pair import likert_rank_model  # noqa: E402
from simdesign.tables.recognise import read_table  # noqa: E402
from simdesign.realdata.resample import (StudyTable, capped_annotation_seconds, mean_with_interval, resample)  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "steen-markert-2021"
TASKS = ("coherence", "repetition")
METHODS = ("likert", "rank")
SIZES = range(2, 20)
ORDER = ["BART", "__REFERENCE__", "abssentrw", "onmt_pg", "seneca"]  # as scripts/paper_real_figures.py
DESIGN = BlockDesign(20, 5, 3)
BATCHES = 10
RANK_BLOCKS_REPORTED = (2, 3, 4, 6)


def seconds_per_output(method: str, task: str) -> float:
    times = yaml.safe_load(resources.files("simdesign.model.presets").joinpath("annotation_times.yaml").read_text())
    return float(times[method][task]["capped_mean_seconds"])


def real_curve(task: str, method: str, repetitions: int, seed: int) -> pd.DataFrame:
    """Figure 3's draws on the real file, summarised per k: mean hours, mean r and its t interval."""
    frame, info = read_table(DATA / "judgements" / f"{method}_{task}_cnn_dm.csv", method)
    times = pd.read_csv(DATA / "times" / f"{method}_{task}_cnn_dm.csv", dtype={"annotator": str})
    seconds = capped_annotation_seconds(times, info["n_systems"] if method == "rank" else 1)
    draws = resample(StudyTable.from_frame(frame, systems=ORDER), "blocks", SIZES, repetitions, seed, seconds=seconds)
    rows = []
    for size, group in draws.groupby("size"):
        rows.append({"k": size, "hours": group["seconds"].mean() / 3600, **mean_with_interval(group["estimate"])})
    return pd.DataFrame(rows)


def simulated_r(model, method: str, studies: int, repetitions: int, seed: int) -> np.ndarray:
    """Mean r per (study, k): shape (studies, len(SIZES)); each study is the paper's design drawn afresh."""
    values = np.empty((studies, len(SIZES)))
    streams = np.random.SeedSequence([seed, METHODS.index(method)]).spawn(studies)
    for study, stream in enumerate(streams):
        data = model.sample(DESIGN, np.random.default_rng(stream), "fitted", method)
        n_annotators = int(data.annotator.max()) + 1
        sums = np.zeros((n_annotators, data.n_systems))
        np.add.at(sums, data.annotator, data.scores.astype(float))
        counts = np.zeros_like(sums)
        np.add.at(counts, data.annotator, 1.0)
        block = np.zeros(n_annotators, dtype=np.int64)
        block[data.annotator] = data.block
        table = StudyTable(tuple(str(a) for a in range(n_annotators)), block, sums, counts, data.systems)
        draws = resample(table, "blocks", SIZES, repetitions, int(stream.generate_state(1)[0]))
        values[study] = draws.groupby("size")["estimate"].mean().to_numpy()
    return values


def efficiency(likert_hours, likert_r, rank_hours, rank_r) -> np.ndarray:
    """Likert hours for Rank's r (interpolated along Likert's increasing curve) / Rank hours; NaN off the curve."""
    order = np.argsort(likert_r)
    needed = np.interp(rank_r, np.asarray(likert_r)[order], np.asarray(likert_hours)[order],
                       left=np.nan, right=np.nan)
    return needed / np.asarray(rank_hours)


def task_rows(task: str, args) -> pd.DataFrame:
    rows = []
    curves = {}
    for method in METHODS:
        curve = real_curve(task, method, args.real_repetitions, args.seed)
        curves["real", method] = curve
        rows += [{"task": task, "source": "real", "method": method, "estimand": "mean_r", **row}
                 for row in curve.to_dict("records")]
    hours_per_block = {m: 3 * 25 * seconds_per_output(m, task) / 3600 for m in METHODS}
    models = {"joint": load_model(task), "separate": likert_rank_model(task, task)}
    batches = {}
    for source, model in models.items():
        for method in METHODS:
            values = simulated_r(model, method, args.studies, args.repetitions, args.seed)
            batches[source, method] = np.array([part.mean(axis=0) for part in np.array_split(values, BATCHES)])
            hours = np.array(SIZES) * hours_per_block[method]
            mean = values.mean(axis=0)
            half = 1.96 * values.std(axis=0, ddof=1) / np.sqrt(len(values))
            curves[source, method] = pd.DataFrame({"k": list(SIZES), "hours": hours, "mean": mean})
            rows += [{"task": task, "source": source, "method": method, "estimand": "mean_r", "k": k, "hours": h,
                      "mean": m, "ci_low": m - e, "ci_high": m + e, "n": len(values)}
                     for k, h, m, e in zip(SIZES, hours, mean, half)]
    for source in ("real", *models):
        likert, rank = curves[source, "likert"], curves[source, "rank"]
        ratio = efficiency(likert["hours"], likert["mean"], rank["hours"], rank["mean"])
        mcse = np.full(len(ratio), np.nan)
        if source in models:
            per_batch = [efficiency(likert["hours"], bl, rank["hours"], br)
                         for bl, br in zip(batches[source, "likert"], batches[source, "rank"])]
            with warnings.catch_warnings():  # a k whose ratio is off the Likert curve in every batch: NaN, said so
                warnings.simplefilter("ignore", RuntimeWarning)
                mcse = np.nanstd(per_batch, axis=0, ddof=1) / np.sqrt(np.sum(np.isfinite(per_batch), axis=0))
        rows += [{"task": task, "source": source, "method": "rank", "estimand": "time_efficiency", "k": k,
                  "hours": h, "mean": value, "mcse": e}
                 for k, h, value, e in zip(rank["k"], rank["hours"], ratio, mcse)]
    return pd.DataFrame(rows)


def plot(table: pd.DataFrame, path: Path) -> None:
    figure, axes = plt.subplots(1, 2, figsize=(11, 4))
    styles = {"real": "-", "joint": ":", "separate": "--"}
    colours = {"likert": "tab:blue", "rank": "tab:orange"}
    for ax, task in zip(axes, TASKS):
        part = table[(table["task"] == task) & (table["estimand"] == "mean_r")]
        for (source, method), group in part.groupby(["source", "method"]):
            ax.plot(group["hours"], group["mean"], styles[source], color=colours[method],
                    label=f"{method.capitalize()}, {source}")
        ax.set_xscale("log")
        ax.set_title(task, fontsize=10)
        ax.set_xlabel("annotation time of the sample (hours, log scale)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("mean Pearson r with the full study's system means")
    axes[0].legend(fontsize=7)
    figure.suptitle("Rank vs Likert at equal annotation time: real data (Figure 3 protocol) and two models "
                    "(joint: rank_noise; separate: rank-only fit)", fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=130)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=200)
    parser.add_argument("--repetitions", type=int, default=20)
    parser.add_argument("--real-repetitions", type=int, default=200)
    parser.add_argument("--seed", type=int, default=2021)
    parser.add_argument("--out", default="figures/rank_vs_likert_efficiency")
    args = parser.parse_args(argv)
    table = pd.concat([task_rows(task, args) for task in TASKS], ignore_index=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(out.with_suffix(".csv"), index=False)
    plot(table, out.with_suffix(".png"))
    shown = table[(table["estimand"] == "time_efficiency") & table["k"].isin(RANK_BLOCKS_REPORTED)]
    print(shown.pivot_table(index=["task", "k"], columns="source", values="mean").round(2).to_string())
    print(f"wrote {out.with_suffix('.csv')} and {out.with_suffix('.png')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
