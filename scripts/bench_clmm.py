"""Benchmark ``simdesign.clmm`` against its pre-issue-15 version and ``ordinal::clmm``, on one core.

Fits the paper's Likert data (1500 judgements, Steen & Markert 2021) with
the native implementation in three forms in the same run: the current code
with its compiled kernels (numba, if installed), the current code without
them (numpy), and the implementation before issue 15 (commit d44f140, kept as
``simdesign/clmm.py`` read from git history); and with R's ``ordinal::clmm`` (through
``Rscript``). Native times are medians over ``--repeats`` rounds after one
warm-up fit (compilation, imports); in each round the versions run one after
the other on the same data, so a load change on a shared machine hits them
alike. Wall and CPU (process) seconds are both printed: on a machine shared
with other jobs, CPU seconds are the steadier measure. R times are the
elapsed time of the ``clmm()`` call alone (not R's start-up or data loading).
``ratio`` compares wall times, ``cpu_ratio`` CPU times (user + system).
Everything is pinned to one thread (OMP/OpenBLAS/MKL variables, and
threadpoolctl for the Python side).

Targets: issue 4, at least 300x R on the maximal model and 50x on intercepts
only; issue 15, under 0.08 s per maximal fit and 0.015 s per intercepts-only
fit (cold start: the default starting values).

R's maximal fit takes 3-7 minutes per data set, so by default it runs on the
coherence data only (``--r-maximal all`` adds repetition, ``none`` skips R's
maximal fits).

Usage::

    PYTHONPATH=. .venv/bin/python scripts/bench_clmm.py [--repeats 5] [--r-maximal coherence|all|none] [--no-r]
"""
from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402

from _bench_util import CLMM_FIXTURES as FIXTURES, load_baseline, timed  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from simdesign import clmm  # noqa: E402

REFERENCE = "__REFERENCE__"
TARGETS = {"maximal": 300.0, "intercepts": 50.0}
# Issue 15: seconds per fit (one thread, cold start); judged here on CPU seconds, the steadier measure.
SECONDS_TARGETS = {"maximal": 0.08, "intercepts": 0.015}

R_PROGRAM = r"""
suppressPackageStartupMessages({library(ordinal); library(jsonlite)})
jobs <- fromJSON(commandArgs(trailingOnly = TRUE)[[1]], simplifyVector = FALSE)
for (job in jobs) {
  d <- read.csv(job$csv, colClasses = c(annotator = "character", document = "character", system = "character"))
  d$system <- factor(d$system, levels = unlist(job$systems))
  d$annotator <- factor(d$annotator)
  d$document <- factor(d$document)
  d$score <- factor(d$score, ordered = TRUE)
  form <- if (job$structure == "intercepts") {
    score ~ system + (1 | annotator) + (1 | document)
  } else {
    score ~ system + (1 + system | annotator) + (1 + system | document)
  }
  timing <- system.time(fit <- clmm(form, data = d, link = "logit", Hess = TRUE))
  cat(toJSON(list(name = job$name, structure = job$structure, seconds = timing[["elapsed"]],
                  cpu_seconds = timing[["user.self"]] + timing[["sys.self"]],
                  loglik = as.numeric(logLik(fit))), auto_unbox = TRUE, digits = NA), "\n")
  flush.console()
}
"""




def _timed(fit, frame, structure):
    return timed(fit, frame, structure, REFERENCE)


def _fit_single(frame, structure, reference):
    """The current fit with one start, as the old code fits (and clmm_native in simulations; docs/model.md, "Starts")."""
    return clmm.fit(frame, structure, reference, starts="single")


def _fit_without_kernels(frame, structure, reference):
    clmm.set_accelerator(False)
    try:
        return clmm.fit(frame, structure, reference, starts="single")
    finally:
        clmm.set_accelerator(True)


def native_seconds(frame: pd.DataFrame, structure: str, repeats: int, versions: dict) -> dict:
    """Median wall and CPU seconds per version over ``repeats`` interleaved rounds, after a warm-up fit each."""
    times = {name: ([], [], None) for name in versions}
    for fit in versions.values():
        fit(frame, structure, REFERENCE)  # warm-up: imports, compilation, caches
    for _ in range(repeats):
        for name, fit in versions.items():
            wall, cpu, result = _timed(fit, frame, structure)
            times[name][0].append(wall)
            times[name][1].append(cpu)
            times[name] = (times[name][0], times[name][1], result)
    return {name: (float(np.median(wall)), float(np.median(cpu)), result) for name, (wall, cpu, result) in times.items()}


def run_r(jobs: list[dict]) -> dict:
    """Fit the jobs in one Rscript process, one thread; returns (name, structure) -> R's record."""
    if not jobs:
        return {}
    if shutil.which("Rscript") is None:
        raise SystemExit("Rscript not found: install R with the ordinal package, or pass --no-r")
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    process = subprocess.run(["Rscript", "-e", R_PROGRAM, json.dumps(jobs)], capture_output=True, text=True,
                             env=env, check=False)
    if process.returncode != 0:
        raise SystemExit(f"Rscript failed:\n{process.stderr}")
    records = {}
    for line in process.stdout.splitlines():
        if line.strip().startswith("{"):
            record = json.loads(line)
            records[(record["name"], record["structure"])] = record
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="native fits per data set (median reported)")
    parser.add_argument("--r-maximal", choices=["coherence", "all", "none"], default="coherence",
                        help="which data sets R fits with the maximal model (3-7 minutes each)")
    parser.add_argument("--no-r", action="store_true", help="native timings only")
    args = parser.parse_args()

    manifest = {d["name"]: d for d in json.loads((FIXTURES / "manifest.json").read_text())["datasets"]}
    cases = [(name, structure) for structure in ("intercepts", "maximal")
             for name in ("paper_coherence", "paper_repetition")]
    r_jobs = []
    for name, structure in cases:
        wanted = structure == "intercepts" or args.r_maximal == "all" or (
            args.r_maximal == "coherence" and name == "paper_coherence")
        if wanted and not args.no_r:
            r_jobs.append({"name": name, "structure": structure, "csv": str(FIXTURES / f"{name}.csv"),
                           "systems": manifest[name]["systems"]})

    versions = {"new": _fit_single, "new_numpy": _fit_without_kernels, "old": load_baseline().fit}
    compiled = clmm.set_accelerator(True)
    if not compiled:
        del versions["new_numpy"]  # the same code path as "new"
    print(f"new: {'compiled kernels (numba)' if compiled else 'numpy (numba not installed)'}; "
          f"old: simdesign/clmm.py at d44f140; {args.repeats} interleaved rounds, medians", flush=True)
    if os.cpu_count() and hasattr(os, "getloadavg"):
        print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start", flush=True)
    rows = []
    with threadpool_limits(limits=1):
        for name, structure in cases:
            frame = pd.read_csv(FIXTURES / f"{name}.csv")
            timings = native_seconds(frame, structure, args.repeats, versions)
            seconds, cpu_seconds, result = timings["new"]
            old_seconds, old_cpu, old_result = timings["old"]
            row = {"data": name, "structure": structure, "n": len(frame), "native_s": seconds,
                   "native_cpu_s": cpu_seconds, "old_s": old_seconds, "old_cpu_s": old_cpu,
                   "speedup_cpu": old_cpu / cpu_seconds, "native_status": result.status,
                   "native_loglik": result.loglik, "loglik_minus_old": result.loglik - old_result.loglik}
            line = (f"{name:17s} {structure:10s} new {seconds:7.3f} s wall {cpu_seconds:7.3f} s CPU | "
                    f"old {old_seconds:7.3f} s wall {old_cpu:7.3f} s CPU | old/new CPU {old_cpu / cpu_seconds:5.2f}")
            if "new_numpy" in timings:
                row["numpy_s"], row["numpy_cpu_s"] = timings["new_numpy"][0], timings["new_numpy"][1]
                line += f" | new without numba {row['numpy_s']:7.3f} s wall {row['numpy_cpu_s']:7.3f} s CPU"
            rows.append(row)
            print(f"{line}  ({result.status})", flush=True)
    if hasattr(os, "getloadavg"):
        print(f"load average {os.getloadavg()[0]:.2f} at the end of the native timings", flush=True)

    print(f"running {len(r_jobs)} ordinal::clmm fits in R (one at a time, one thread) ...", flush=True)
    started = time.perf_counter()
    r_records = run_r(r_jobs)
    print(f"R done in {time.perf_counter() - started:.0f} s wall", flush=True)

    for row in rows:
        record = r_records.get((row["data"], row["structure"]))
        row["R_s"] = record["seconds"] if record else float("nan")
        row["R_cpu_s"] = record["cpu_seconds"] if record else float("nan")
        row["R_loglik"] = record["loglik"] if record else float("nan")
        row["ratio"] = row["R_s"] / row["native_s"]
        row["cpu_ratio"] = row["R_cpu_s"] / row["native_cpu_s"]
        row["target"] = TARGETS[row["structure"]]
        row["meets_target"] = bool(row["ratio"] >= row["target"]) if record else None
        row["target_cpu_s"] = SECONDS_TARGETS[row["structure"]]
        row["meets_target_s"] = bool(row["native_cpu_s"] < row["target_cpu_s"])
    table = pd.DataFrame(rows)
    pd.set_option("display.width", 200)
    print()
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))


if __name__ == "__main__":
    main()
