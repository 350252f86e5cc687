"""Parameter recovery of the two rank fits: simulate from known parameters, fit, report bias and coverage.

* ``rank_noise``: the joint preset (coherence or repetition) with its fitted rank_noise is the truth;
  each replicate simulates a rank study with the paper's design (20 blocks of 5 documents, 3
  annotators per block: 300 rankings), refits rank_noise given the (true) Likert parameters with a
  parametric-bootstrap SE, and records whether ``estimate +- 1.96 SE`` and the percentile interval
  cover the truth.
* rank-only: the rank-only model fitted to the paper's coherence rank file is the truth; each
  replicate simulates the paper's design, refits by Laplace maximum likelihood, and records beta,
  its Wald interval and the slope SDs.

Replicate r uses ``SeedSequence([seed, r])``. Rows are appended to CSV files as they finish, so a
run cut short still gives a table (``--summarise`` prints it).

    PYTHONPATH=$PWD python scripts/rank_recovery.py noise --task coherence --replicates 100 --bootstrap 40
    PYTHONPATH=$PWD python scripts/rank_recovery.py rank_only --replicates 100
    PYTHONPATH=$PWD python scripts/rank_recovery.py summarise
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from simdesign.core.designs import BlockDesign
from simdesign.model import load_model
from simdesign.realdata.rank_fit import RankFitError, fit_rank_only
from simdesign.realdata.rank_noise import fit_rank_noise
from simdesign.tables.recognise import read_table

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / ".." / "shared" / "data" / "steen-markert-2021" / "judgements"
OUT = ROOT / "results" / "rank_recovery"
PAPER_DESIGN = BlockDesign(20, 5, 3)


def _append(path: Path, row: dict) -> None:
    frame = pd.DataFrame([row])
    frame.to_csv(path, mode="a", header=not path.exists(), index=False)


def recover_noise(task: str, replicates: int, bootstrap: int, seed: int) -> None:
    truth = load_model(task)  # the preset's rank_noise is the truth
    path = OUT / f"noise_{task}.csv"
    done = len(pd.read_csv(path)) if path.exists() else 0
    for replicate in range(done, replicates):
        started = time.process_time()
        rng = np.random.default_rng(np.random.SeedSequence([seed, replicate]))
        frame = truth.sample(PAPER_DESIGN, rng, method="rank").to_frame()
        fit = fit_rank_noise(truth, frame, bootstrap=bootstrap, seed=seed + 1000 + replicate)
        _append(path, {"replicate": replicate, "truth": truth.rank_noise, "estimate": fit.rank_noise, "se": fit.se,
                       "p_low": fit.percentile_interval[0], "p_high": fit.percentile_interval[1], "at_bound": fit.at_bound,
                       "cpu_seconds": time.process_time() - started})


def recover_rank_only(replicates: int, seed: int) -> None:
    frame, _ = read_table(DATA / "rank_coherence_cnn_dm.csv")
    truth = fit_rank_only(frame, reference="__REFERENCE__", name="truth", standard_errors=False).model
    path = OUT / "rank_only_coherence.csv"
    done = len(pd.read_csv(path)) if path.exists() else 0
    sds = {"a": np.sqrt(np.diag(truth.annotator_slope_cov)), "d": np.sqrt(np.diag(truth.document_slope_cov))}
    for replicate in range(done, replicates):
        started = time.process_time()
        rng = np.random.default_rng(np.random.SeedSequence([seed, replicate]))
        sample = truth.sample(PAPER_DESIGN, rng).to_frame()
        row = {"replicate": replicate}
        try:
            fit = fit_rank_only(sample, reference=truth.systems[0])
        except RankFitError as exc:
            row["status"] = f"failed: {exc}"
            _append(path, row)
            continue
        row["status"] = fit.status
        order = [fit.model.systems.index(s) for s in truth.systems]
        for k, system in enumerate(truth.systems[1:], start=1):
            j = order[k]
            row |= {f"beta_{system}_truth": truth.effects[k], f"beta_{system}": fit.model.effects[j],
                    f"beta_{system}_se": fit.beta_se[j]}
        fitted = {"a": np.sqrt(np.diag(fit.model.annotator_slope_cov)), "d": np.sqrt(np.diag(fit.model.document_slope_cov))}
        for factor, label in (("a", "annotator"), ("d", "document")):
            for k, system in enumerate(truth.systems[1:], start=1):
                row |= {f"sd_{label}_{system}_truth": sds[factor][k - 1], f"sd_{label}_{system}": fitted[factor][order[k] - 1]}
        row["cpu_seconds"] = time.process_time() - started
        _append(path, row)


def _rate(hits: np.ndarray) -> str:
    p = hits.mean()
    return f"{p:.3f} ± {np.sqrt(p * (1 - p) / len(hits)):.3f}"


def summarise() -> None:
    for path in sorted(OUT.glob("noise_*.csv")):
        table = pd.read_csv(path)
        truth = table["truth"].iloc[0]
        wald = (np.abs(table["estimate"] - truth) <= 1.96 * table["se"]).to_numpy()
        low, high = (table["p_low"], table["p_high"]) if "p_low" in table else (table["low"], table["high"])
        percentile = ((low <= truth) & (truth <= high)).to_numpy()
        basic = ((2 * table["estimate"] - high <= truth) & (truth <= 2 * table["estimate"] - low)).to_numpy()
        print(f"{path.stem}: {len(table)} replicates, truth {truth:.3f}: mean estimate {table['estimate'].mean():.3f}, "
              f"bias {table['estimate'].mean() - truth:+.3f} (MCSE {table['estimate'].std(ddof=1) / np.sqrt(len(table)):.3f}), "
              f"SD of estimates {table['estimate'].std(ddof=1):.3f}, mean SE {table['se'].mean():.3f}; coverage "
              f"Wald {_rate(wald)}, percentile {_rate(percentile)}, basic {_rate(basic)}; at bound {int(table['at_bound'].sum())}; "
              f"{table['cpu_seconds'].mean():.1f} s CPU per replicate")
    path = OUT / "rank_only_coherence.csv"
    if path.exists():
        table = pd.read_csv(path)
        ok = table[~table["status"].astype(str).str.startswith("failed")]
        print(f"rank_only_coherence: {len(table)} replicates, {len(table) - len(ok)} failed, "
              f"{(ok['status'] == 'singular').sum()} singular; {ok['cpu_seconds'].mean():.1f} s CPU per fit")
        for column in [c for c in ok.columns if c.startswith(("beta_", "sd_")) and c.endswith("_truth")]:
            name = column[:-len("_truth")]
            truth, estimate = ok[column].iloc[0], ok[name]
            text = (f"  {name}: truth {truth:.3f}, mean {estimate.mean():.3f}, bias {estimate.mean() - truth:+.3f} "
                    f"(MCSE {estimate.std(ddof=1) / np.sqrt(len(ok)):.3f}), SD {estimate.std(ddof=1):.3f}")
            if name.startswith("beta_"):
                se = ok[f"{name}_se"]
                text += f", mean SE {se.mean():.3f}, Wald coverage {_rate((np.abs(estimate - truth) <= 1.96 * se).to_numpy())}"
            print(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["noise", "rank_only", "summarise"])
    parser.add_argument("--task", default="coherence", choices=["coherence", "repetition"])
    parser.add_argument("--replicates", type=int, default=100)
    parser.add_argument("--bootstrap", type=int, default=40)
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    if args.what == "noise":
        recover_noise(args.task, args.replicates, args.bootstrap, args.seed)
    elif args.what == "rank_only":
        recover_rank_only(args.replicates, args.seed)
    summarise()


if __name__ == "__main__":
    main()
