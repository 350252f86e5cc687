"""Coverage of `simdesign analyse`'s 95% intervals on the paper's design, by simulation.

Simulates studies from a preset (the ordinal mixed model fitted to the paper's
Likert data) on the paper's block design (20 blocks x 5 documents x 3
annotators), computes each system's interval as `simdesign.realdata.analyse` does, and
counts how often it covers the true mean score (the model's expected score,
integrated over annotators and documents). Also reports, for comparison, the
plain percentile block bootstrap and the two-way (pigeonhole) bootstrap that
`analyse` uses for designs with fewer than 10 blocks; `--designs` adds two such
designs of the same effort (1500 judgements), where that fallback is the
interval `analyse` gives: 4 blocks of 25 documents, and a pool of 60 annotators
over 100 documents, 3 judgements per output.

The study is the unit: a rate's MCSE is the SD over studies of the share of the
5 systems covered, over sqrt(studies); per-system rates get Wilson intervals.

    PYTHONPATH=$PWD python scripts/check_bootstrap_coverage.py --studies 1000 --bootstrap 1000 --jobs 2 \
        --designs paper,few_blocks,pool --out results/bootstrap_coverage.csv
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from statsmodels.stats.proportion import proportion_confint

from simdesign import BlockDesign, PoolDesign, load_model
from simdesign.realdata.analyse import _block_bootstrap_t, _two_way_bootstrap

PRESETS = ("coherence", "repetition")
# Designs of the paper's effort (1500 judgements): its own, and two where analyse falls back to the two-way bootstrap.
DESIGNS = {"paper": BlockDesign(20, 5, 3), "few_blocks": BlockDesign(4, 25, 3), "pool": PoolDesign(100, 60, 3)}


def _percentile_block(sums, counts, repetitions, rng):
    n_blocks = sums.shape[0]
    weights = rng.multinomial(n_blocks, np.full(n_blocks, 1.0 / n_blocks), size=repetitions).astype(float)
    boot = (weights @ sums) / (weights @ counts)
    return np.quantile(boot, 0.025, axis=0), np.quantile(boot, 0.975, axis=0)


def one_study(preset: str, index: int, design: str, study: int, bootstrap: int, seed: int) -> list[dict]:
    model = load_model(preset)
    truth = model.expected_scores("fitted")
    design_index = list(DESIGNS).index(design)
    streams = np.random.SeedSequence([seed, index, design_index, study]).spawn(4)
    judgements = model.sample(DESIGNS[design], np.random.default_rng(streams[0]))
    n_systems = judgements.n_systems
    frame = judgements.to_frame()
    system_code = np.tile(np.arange(n_systems), judgements.n_pairs)
    two_way = _two_way_bootstrap(frame["score"].to_numpy(float), frame["annotator"].to_numpy(),
                                 frame["document"].to_numpy(), system_code, n_systems, bootstrap,
                                 np.random.default_rng(streams[3]))
    if design != "paper":
        return _rows(preset, design, study, model.systems, truth, {"two-way percentile (analyse)": two_way})
    n_blocks = int(judgements.block.max()) + 1
    sums = np.zeros((n_blocks, n_systems))
    np.add.at(sums, judgements.block, judgements.scores.astype(float))
    counts = np.zeros_like(sums)
    np.add.at(counts, judgements.block, 1.0)
    intervals = {
        "block_t (analyse)": _block_bootstrap_t(sums, counts, bootstrap, np.random.default_rng(streams[1])),
        "block percentile": _percentile_block(sums, counts, bootstrap, np.random.default_rng(streams[2])),
        "two-way percentile": two_way,
    }
    return _rows(preset, design, study, model.systems, truth, intervals)


def _rows(preset, design, study, systems, truth, intervals) -> list[dict]:
    rows = []
    for scheme, (low, high) in intervals.items():
        for s, system in enumerate(systems):
            rows.append({"preset": preset, "design": design, "scheme": scheme, "study": study, "system": system,
                         "covered": bool(low[s] <= truth[s] <= high[s]), "width": float(high[s] - low[s])})
    return rows


def summarise(rows: pd.DataFrame) -> pd.DataFrame:
    out = []
    for (preset, design, scheme), group in rows.groupby(["preset", "design", "scheme"], sort=False):
        per_study = group.groupby("study")["covered"].mean()
        n = len(per_study)
        rate = float(per_study.mean())
        systems = group.groupby("system")["covered"].agg(["sum", "count"])
        low, high = proportion_confint(systems["sum"], systems["count"], method="wilson")
        out.append({"preset": preset, "design": design, "scheme": scheme, "studies": n, "coverage": rate,
                    "mcse": float(per_study.std(ddof=1) / np.sqrt(n)),
                    "per_system": "; ".join(f"{s} {c / k:.3f} [{lo:.3f}, {hi:.3f}]" for (s, (c, k)), lo, hi
                                            in zip(systems.iterrows(), low, high)),
                    "mean_width": float(group["width"].mean())})
    return pd.DataFrame(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=200)
    parser.add_argument("--bootstrap", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--seed", type=int, default=20211)
    parser.add_argument("--designs", default="paper", help=f"comma-separated, of {list(DESIGNS)}")
    parser.add_argument("--out", default="results/bootstrap_coverage.csv")
    args = parser.parse_args()
    start = time.time()
    designs = [d.strip() for d in args.designs.split(",")]
    unknown = sorted(set(designs) - set(DESIGNS))
    if unknown:
        parser.error(f"unknown designs {unknown}; choose from {list(DESIGNS)}")
    tasks = [(preset, index, design, study) for index, preset in enumerate(PRESETS) for design in designs
             for study in range(args.studies)]
    results = Parallel(n_jobs=args.jobs)(delayed(one_study)(p, i, d, s, args.bootstrap, args.seed)
                                         for p, i, d, s in tasks)
    rows = pd.DataFrame([row for study_rows in results for row in study_rows])
    table = summarise(rows)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False)
    with pd.option_context("display.width", 250, "display.max_colwidth", 200):
        print(table.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    print(f"{args.studies} studies per preset x {args.bootstrap} bootstrap resamples, seed {args.seed}, "
          f"{time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
