"""Coverage of bootstrap intervals of Bradley-Terry strengths over simulated Arena-style battle logs (issue 42).

    PYTHONPATH=$PWD python scripts/pairwise_bootstrap_coverage.py [--logs N] [--results results] [--figures figures]

Reads ``configs/pairwise_bootstrap_coverage.yaml``: the model (coherence preset, every pairwise value assumed),
the effect (fitted), the battle design (2,000 battles drawing prompts from a pool of 500 and judges from 50),
the number of logs (its ``trials``, 1000) and the seed.

**The target.** Each log draws fresh prompt and judge effects (random effects), so what a log's Bradley-Terry
strengths estimate, and what intervals resampling prompts and judges are for, is the strengths of the
*population* of prompts and judges: the limit of the Bradley-Terry fit (ties half a win) as the log and both
pools grow. The target is the fit of one log of :data:`TARGET_DESIGN` (1,000,000 battles, prompts from a pool of
200,000 and judges from 20,000: 5 battles a prompt, 50 a judge) drawn from the same model and effect, whose own
two-way cluster-robust standard errors (prompt and judge) are reported beside it (about 1/50 of the intervals'
half-widths). It is *not* the fit of a log with the design's own pools (500 prompts, 50 judges): those pools'
effects are a sample, which the intervals must cover too.

**The intervals.** Per log, :func:`simdesign.stats.preferences.bootstrap_strengths` (ties half, 1000 resamples,
95%) resampling prompts and judges (two-way, the main result) and, for comparison, prompts only. From the same
draws: the percentile interval (the function's), the basic interval (2 estimate - quantiles), the normal interval
(estimate +- 1.96 bootstrap SD), and a simultaneous band (estimate +- c SD, c the 95% quantile over draws of the
largest |draw - estimate| / SD over systems). Coverage per system; simultaneous coverage: every system covered
at once (of the per-system intervals, expected below 95%, and of the band).

Streams: each log from ``simdesign.core.seeds.data_rng(seed, design label, log, ('pairwise',))`` (the study the
engine would draw for that trial), each bootstrap from ``analysis_rng(seed, design label, log, 'bootstrap ' +
scheme)``, the target from ``data_rng(seed, target label, 0, ('pairwise', 'target'))``.

Writes ``<figures>/pairwise_bootstrap_coverage.csv`` (one row per scheme, interval and system, plus the
simultaneous rows: coverage with its 95% Wilson interval over the logs, MCSE, mean width, the estimates' bias and
SD against the mean bootstrap SD, failed resamples, and the target) and keeps per-log results in
``<results>/pairwise-bootstrap-coverage/logs.csv`` (resumable).
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from simdesign.core.designs import BattleDesign
from simdesign.core.seeds import analysis_rng, data_rng
from simdesign.methods import get_method
from simdesign.studies.rates.config import load_config
from simdesign.stats.montecarlo import normal_quantile, wilson_interval
from simdesign.stats.preferences import bootstrap_strengths, bradley_terry, robust_covariance

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "configs" / "pairwise_bootstrap_coverage.yaml"
TARGET_DESIGN = BattleDesign(battles=1_000_000, prompts=200_000, judges=20_000)
N_RESAMPLES = 1000
LEVEL = 0.95
# scheme -> (resample prompts, resample judges)
SCHEMES = {"prompts_and_judges": (True, True), "prompts": (True, False), "judges": (False, True)}
INTERVALS = ("percentile", "basic", "normal", "band")
SAVE_EVERY = 50


def comparisons(model, design, rng, effect):
    found = model.sample(design, rng, effect=effect, method="pairwise").comparisons()
    return found["first"], found["second"], found["outcome"], found["document"], found["annotator"]


def target(config, cache: Path) -> dict:
    """The Bradley-Terry strengths (ties half) of one TARGET_DESIGN log and their two-way robust SEs."""
    if cache.exists():
        return json.loads(cache.read_text())
    started = time.time()
    method = get_method("pairwise")
    rng = data_rng(config.seed, TARGET_DESIGN.label, 0, method.stream_suffix + ("target",))
    first, second, outcome, prompt, judge = comparisons(config.model, TARGET_DESIGN, rng, config.effect)
    fit = bradley_terry(first, second, outcome, config.model.n_systems)
    assert fit.converged, fit.message
    covariance = robust_covariance(fit, first, second, outcome, [prompt, judge])
    found = {"strength": fit.strength.tolist(), "se": np.sqrt(np.diag(covariance)).tolist(),
             "ties": float(np.mean(outcome == 0.5)), "seconds": time.time() - started}
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(found))
    return found


def intervals(estimate: np.ndarray, draws: np.ndarray) -> dict:
    """(lower, upper) per interval kind from one log's bootstrap draws."""
    low_q, high_q = np.quantile(draws, [(1 - LEVEL) / 2, (1 + LEVEL) / 2], axis=0)
    sd = draws.std(axis=0, ddof=1)
    z = normal_quantile(LEVEL)
    largest = np.max(np.abs(draws - estimate) / sd, axis=1)
    c = np.quantile(largest, LEVEL)
    return {"percentile": (low_q, high_q), "basic": (2 * estimate - high_q, 2 * estimate - low_q),
            "normal": (estimate - z * sd, estimate + z * sd), "band": (estimate - c * sd, estimate + c * sd)}


def one_log(config, design, log: int, truth: np.ndarray) -> list[dict]:
    method = get_method("pairwise")
    rng = data_rng(config.seed, design.label, log, method.stream_suffix)
    first, second, outcome, prompt, judge = comparisons(config.model, design, rng, config.effect)
    n = config.model.n_systems
    fit = bradley_terry(first, second, outcome, n)
    estimate = fit.strength
    rows = []

    def add(scheme, kind, lower, upper, sd, n_failed):
        for s in range(n):
            rows.append({"log": log, "scheme": scheme, "interval": kind, "system": s,
                         "covered": bool(lower[s] <= truth[s] <= upper[s]), "width": upper[s] - lower[s],
                         "estimate": estimate[s], "boot_sd": sd[s], "n_failed": n_failed})

    for scheme, (with_prompts, with_judges) in SCHEMES.items():
        # judges only: all comparisons in one prompt cluster, drawn once in every resample
        units = prompt if with_prompts else np.zeros_like(prompt)
        result = bootstrap_strengths(first, second, outcome, n, prompts=units, judges=judge if with_judges else None,
                                     rng=analysis_rng(config.seed, design.label, log, f"bootstrap {scheme}"),
                                     n_resamples=N_RESAMPLES, level=LEVEL)
        sd = result.draws.std(axis=0, ddof=1)
        for kind, (lower, upper) in intervals(estimate, result.draws).items():
            if kind == "percentile":
                np.testing.assert_allclose(lower, result.lower)
            add(scheme, kind, lower, upper, sd, result.n_failed)
    # no resampling: the Wald interval with the two-way cluster-robust SEs the bradley_terry test uses
    se = np.sqrt(np.diag(robust_covariance(fit, first, second, outcome, [prompt, judge])))
    z = normal_quantile(LEVEL)
    add("two_way_robust", "wald", estimate - z * se, estimate + z * se, se, 0)
    return rows


def run_logs(config, design, truth, n_logs: int, path: Path) -> pd.DataFrame:
    done = pd.read_csv(path) if path.exists() else pd.DataFrame(columns=["log"])
    have = set(done["log"].unique())
    rows, started = [], time.time()
    todo = [log for log in range(n_logs) if log not in have]
    for k, log in enumerate(todo, 1):
        rows += one_log(config, design, log, truth)
        if k % SAVE_EVERY == 0 or k == len(todo):
            done = pd.concat([done, pd.DataFrame(rows)], ignore_index=True) if len(done) else pd.DataFrame(rows)
            done.to_csv(path, index=False)
            rows = []
            print(f"{k} of {len(todo)} logs in {time.time() - started:.0f} s", flush=True)
    return done[done["log"] < n_logs]


def coverage_row(covered: np.ndarray) -> dict:
    logs = covered.size
    rate = float(covered.mean())
    mcse = float(np.sqrt(rate * (1 - rate) / logs))
    low, high = wilson_interval(rate, mcse, logs, logs)
    verdict = "above 0.95" if low > LEVEL else ("contains 0.95" if high >= LEVEL else "below 0.95")
    return {"coverage": rate, "ci_low": low, "ci_high": high, "mcse": mcse, "logs": logs, "verdict": verdict}


def summarise(per_log: pd.DataFrame, config, design, truth: dict) -> pd.DataFrame:
    systems = config.model.systems
    out = []
    common = {"design": design.label, "battles": design.battles, "prompts": design.prompts, "judges": design.judges,
              "level": LEVEL, "n_resamples": N_RESAMPLES, "target_battles": TARGET_DESIGN.battles,
              "target_prompts": TARGET_DESIGN.prompts, "target_judges": TARGET_DESIGN.judges}
    for (scheme, kind), group in per_log.groupby(["scheme", "interval"], sort=False):
        for s, rows in group.groupby("system"):
            rows = rows.sort_values("log")
            estimates = rows["estimate"].to_numpy(float)
            out.append({**common, "scheme": scheme, "interval": kind, "system": systems[int(s)],
                        **coverage_row(rows["covered"].to_numpy(bool)), "mean_width": rows["width"].mean(),
                        "target": truth["strength"][int(s)], "target_se": truth["se"][int(s)],
                        "bias": estimates.mean() - truth["strength"][int(s)], "sd_estimates": estimates.std(ddof=1),
                        "mean_boot_sd": rows["boot_sd"].mean(), "failed_resamples": int(rows["n_failed"].sum())})
        every = group.groupby("log")["covered"].all().sort_index().to_numpy(bool)
        out.append({**common, "scheme": scheme, "interval": kind, "system": "all (simultaneous)",
                    **coverage_row(every), "mean_width": np.nan, "target": np.nan, "target_se": np.nan,
                    "bias": np.nan, "sd_estimates": np.nan, "mean_boot_sd": np.nan,
                    "failed_resamples": int(group.drop_duplicates("log")["n_failed"].sum())})
    return pd.DataFrame(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logs", type=int, default=None, help="default: the config's trials")
    parser.add_argument("--results", type=Path, default=ROOT / "results")
    parser.add_argument("--figures", type=Path, default=ROOT / "figures")
    args = parser.parse_args(argv)
    config = load_config(CONFIG)
    (design,) = config.designs
    n_logs = args.logs or config.trials
    work = args.results / config.name
    work.mkdir(parents=True, exist_ok=True)
    truth = target(config, work / "target.json")
    print(f"target ({TARGET_DESIGN.label}, {truth['seconds']:.0f} s): strengths {np.round(truth['strength'], 4)}, "
          f"two-way robust SE {np.round(truth['se'], 4)}, ties {truth['ties']:.3f}", flush=True)
    per_log = run_logs(config, design, np.asarray(truth["strength"]), n_logs, work / "logs.csv")
    table = summarise(per_log, config, design, truth)
    args.figures.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.figures / "pairwise_bootstrap_coverage.csv", index=False)
    shown = table[["scheme", "interval", "system", "coverage", "ci_low", "ci_high", "verdict", "mean_width", "bias",
                   "sd_estimates", "mean_boot_sd"]]
    with pd.option_context("display.width", 200, "display.max_rows", 200):
        print(shown.round(4).to_string(index=False))
    print(f"wrote {args.figures / 'pairwise_bootstrap_coverage.csv'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
