"""Benchmark ``simdesign.clmm`` against ``ordinal::clmm`` on the paper's design, on one core.

Fits the paper's Likert data (1500 judgements, Steen & Markert 2021) with the
native implementation and with R's ``ordinal::clmm`` (through ``Rscript``) in
the same run, and prints the seconds of each and their ratio. Native times
are the median of ``--repeats`` fits after one warm-up fit; R times are the
elapsed time of the ``clmm()`` call alone (not R's start-up or data loading).
``ratio`` compares wall times, ``cpu_ratio`` CPU times (user + system), which
are less disturbed by other processes on a shared machine.
Both sides are pinned to one thread (OMP/OpenBLAS/MKL variables, and
threadpoolctl for the Python side).

R's maximal fit takes 3-7 minutes per data set, so by default it runs on the
coherence data only (``--r-maximal all`` adds repetition, ``none`` skips R's
maximal fits). The targets (issue 4): at least 300x on the maximal model, at
least 50x on intercepts only.

Usage::

    .venv/bin/python scripts/bench_clmm.py [--repeats 5] [--r-maximal coherence|all|none] [--no-r]
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
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from simdesign import clmm  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "clmm_r"
REFERENCE = "__REFERENCE__"
TARGETS = {"maximal": 300.0, "intercepts": 50.0}

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


def native_seconds(frame: pd.DataFrame, structure: str, repeats: int) -> tuple[float, float, clmm.ClmmResult]:
    """Median wall and CPU seconds of ``repeats`` fits after a warm-up fit."""
    clmm.fit(frame, structure, REFERENCE)  # warm-up: imports, caches, first-touch allocations
    wall, cpu, result = [], [], None
    for _ in range(repeats):
        started, started_cpu = time.perf_counter(), time.process_time()
        result = clmm.fit(frame, structure, REFERENCE)
        wall.append(time.perf_counter() - started)
        cpu.append(time.process_time() - started_cpu)
    return float(np.median(wall)), float(np.median(cpu)), result


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

    rows = []
    with threadpool_limits(limits=1):
        for name, structure in cases:
            frame = pd.read_csv(FIXTURES / f"{name}.csv")
            seconds, cpu_seconds, result = native_seconds(frame, structure, args.repeats)
            rows.append({"data": name, "structure": structure, "n": len(frame), "native_s": seconds,
                         "native_cpu_s": cpu_seconds, "native_status": result.status,
                         "native_loglik": result.loglik})
            print(f"native {name:17s} {structure:10s} {seconds:8.3f} s wall, {cpu_seconds:8.3f} s CPU "
                  f"({result.status})", flush=True)

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
    table = pd.DataFrame(rows)
    pd.set_option("display.width", 200)
    print()
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))


if __name__ == "__main__":
    main()
