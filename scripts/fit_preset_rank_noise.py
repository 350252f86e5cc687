"""Fit the presets' rank_noise (joint Likert/Rank model) to the paper's rank files.

For each task: the composite-likelihood estimate (simdesign.realdata.rank_noise) with a parametric
bootstrap SE conditional on the preset's Likert parameters, and a two-stage bootstrap that also
propagates the Likert parameters' uncertainty: each replicate simulates a Likert study with the
Likert file's own assignment from the preset, refits the Likert model (native CLMM, the paper's
structure), simulates a rank study with the rank file's assignment from the joint preset at the
estimate, and refits rank_noise given the refitted Likert model.

    PYTHONPATH=$PWD python scripts/fit_preset_rank_noise.py --bootstrap 500 --two-stage 100
"""
from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

import numpy as np

from simdesign.model import load_model
from simdesign.realdata.check import observed_design
from simdesign.realdata.fit import FitError, fit_model
from simdesign.tables.judgements import read_judgements
from simdesign.realdata.rank_noise import _estimate, fit_rank_noise, wide_ranks, win_counts
from simdesign.tables.recognise import read_table

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "steen-markert-2021" / "judgements"


def two_stage(task: str, estimate: float, replicates: int, seed: int) -> np.ndarray:
    preset = load_model(task)
    likert_frame, _ = read_judgements(DATA / f"likert_{task}_cnn_dm.csv")
    rank_frame, _ = read_table(DATA / f"rank_{task}_cnn_dm.csv")
    likert_design, _ = observed_design(likert_frame, preset.systems)
    rank_design, _ = observed_design(rank_frame, preset.systems)
    joint = dataclasses.replace(preset, rank_noise=estimate)
    values = []
    for stream in np.random.SeedSequence([seed, 2]).spawn(replicates):
        rng = np.random.default_rng(stream)
        likert = preset.sample(likert_design, rng).to_frame().drop(columns="block")
        ranks = joint.sample(rank_design, rng, method="rank")
        try:
            refit = fit_model(likert, structure="paper", reference=preset.systems[0], scale=preset.scale).model
        except FitError:
            continue
        # The refit orders systems reference-first then sorted, unlike the preset: match by name.
        wins, n_rankings = win_counts(wide_ranks(ranks.to_frame(), refit.systems))
        values.append(_estimate(refit, wins, n_rankings)[0])
    return np.asarray(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", type=int, default=500)
    parser.add_argument("--two-stage", type=int, default=100)
    parser.add_argument("--seed", type=int, default=2021)
    parser.add_argument("--tasks", default="coherence,repetition")
    args = parser.parse_args()
    for task in args.tasks.split(","):
        started = time.time()
        frame, _ = read_table(DATA / f"rank_{task}_cnn_dm.csv")
        fit = fit_rank_noise(load_model(task), frame, bootstrap=args.bootstrap, seed=args.seed)
        print(f"{task}: {fit.describe()}; MCSE of the SE {fit.se / np.sqrt(2 * (len(fit.bootstrap) - 1)):.3f}; "
              f"bootstrap mean {fit.bootstrap.mean():.3f}; {time.time() - started:.0f} s", flush=True)
        print(fit.pairs.to_string(index=False, float_format=lambda v: f"{v:.3f}"), flush=True)
        if args.two_stage:
            started = time.time()
            values = two_stage(task, fit.rank_noise, args.two_stage, args.seed)
            se = values.std(ddof=1)
            print(f"{task}: two-stage bootstrap ({len(values)} of {args.two_stage} replicates fitted): SE "
                  f"{se:.3f} (MCSE {se / np.sqrt(2 * (len(values) - 1)):.3f}), 95% interval "
                  f"{np.percentile(values, 2.5):.3f}..{np.percentile(values, 97.5):.3f}, mean {values.mean():.3f}; "
                  f"{time.time() - started:.0f} s", flush=True)


if __name__ == "__main__":
    main()
