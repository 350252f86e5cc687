"""Benchmark: the Figure-4 grid (8 designs x trials x 10 pairs x 4 tests, 1000 ART resamples), against a baseline.

Runs the whole grid through the engine (``run_simulation``, all workers, results written to a
temporary store) with this checkout's code and with a baseline's code (a git revision, exported to a
temporary directory and run in a subprocess with that directory as PYTHONPATH), alternately, and
prints for each: wall seconds, trials per second, and CPU seconds per trial of the coordinator and
of its worker processes (CPU seconds are the steadier measure on a shared machine; the load average
is printed beside each run). The ratios new/baseline close the report. Also prints the trials per
second of each test alone (one worker, in this process) and the ratio against the paper's own code
(about 0.74 s per trial single-threaded for all four tests, the figure quoted in the project's issue 2).

    python scripts/bench_type1.py [--config CONFIG] [--trials 1000] [--jobs 2] [--baseline REV] [--repeats 1]
                                  [--backend loky|fork]

``--baseline none`` skips the baseline. The default baseline is the last commit before the grid's
speed-ups of issue 15 (shared unit differences, no generator for the t-tests, float32 ART in place,
100-trial chunks).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _bench_util import export_package  # scripts/ is on sys.path when a script runs

# The default config is the project's, wherever the script is run from (a relative --config is the caller's).
PROJECT_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CONFIG = PROJECT_ROOT / "configs" / "paper_fig4_coherence.yaml"
DEFAULT_BASELINE = "13773a3"
try:
    import simdesign  # noqa: F401 -- installed (pip install -e .) or on PYTHONPATH
except ImportError:  # a checkout without the package installed: use the one next to this script
    sys.path.insert(0, str(PROJECT_ROOT))

PAPER_SECONDS_PER_TRIAL = 0.74
TARGET_TRIALS_PER_SECOND = 1000  # issue 15, on 2 cores


def grid_run(config_path: str, trials: int, jobs: int, backend: str = "loky") -> dict:
    """Run the grid through the engine once; wall time, CPU of this process and of its workers, load."""
    import resource
    try:
        import psutil  # installed with dask's distributed; without it the workers' CPU is not reported
    except ImportError:
        psutil = None

    load_config, run_simulation = _engine("load_config", "run_simulation")
    config = load_config(config_path, {"trials": trials})
    raw = {"name": config.name, "model": config.model_source, "effect": config.effect, "trials": trials,
           "seed": config.seed, "tests": [spec.name for spec in config.analyses]}
    load = os.getloadavg()[0]
    ended = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory() as out:
        cpu, start = time.process_time(), time.perf_counter()
        run_simulation(config, out, raw, jobs=jobs, progress=False, backend=backend)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    # workers that ended with the run (the fork backend's) were reaped: their CPU is in RUSAGE_CHILDREN
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    reaped_cpu = reaped.ru_utime + reaped.ru_stime - ended.ru_utime - ended.ru_stime
    # loky keeps its workers for the next call: they are alive, and they did nothing before this run
    workers = reaped_cpu if psutil or reaped_cpu else float("nan")
    for child in psutil.Process().children(recursive=True) if psutil else ():
        try:
            times = child.cpu_times()
            workers += times.user + times.system
        except psutil.NoSuchProcess:
            pass
    return {"trials": trials * len(config.designs), "wall": wall, "coordinator_cpu": cpu, "worker_cpu": workers,
            "load_before": load, "load_after": os.getloadavg()[0]}


def _engine(*names):
    """The rate engine's functions from this package or from a baseline revision laid out before issue 40 (where
    the rate engine was ``simdesign.simulation``)."""
    import importlib

    try:
        modules = [importlib.import_module(f"simdesign.studies.rates.{m}") for m in ("config", "engine")]
    except ImportError:
        modules = [importlib.import_module(f"simdesign.simulation.{m}") for m in ("config", "engine")]
    return [getattr(modules[0], name) if hasattr(modules[0], name) else getattr(modules[1], name) for name in names]


def fresh_process_run(package_root: Path, config_path: str, trials: int, jobs: int, backend: str = "loky") -> dict:
    """:func:`grid_run` in a new process importing simdesign from ``package_root``."""
    command = [sys.executable, __file__, "--grid-json", "--config", config_path, "--trials", str(trials),
               "--jobs", str(jobs), "--backend", backend]
    env = {**os.environ, "PYTHONPATH": str(package_root)}
    output = subprocess.run(command, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(output.strip().splitlines()[-1])


def describe(name: str, run: dict) -> str:
    trials = run["trials"]
    return (f"  {name:<10} {run['wall']:6.1f} s wall, {trials / run['wall']:6.1f} trials/s; CPU ms/trial: coordinator "
            f"{1e3 * run['coordinator_cpu'] / trials:5.2f}, workers {1e3 * run['worker_cpu'] / trials:5.2f}, total "
            f"{1e3 * (run['coordinator_cpu'] + run['worker_cpu']) / trials:5.2f}  (load {run['load_before']:.2f} "
            f"-> {run['load_after']:.2f})")


def per_test_throughput(config_path: str, per_test_trials: int) -> None:
    load_config, Chunk, simulate_chunk = _engine("load_config", "Chunk", "simulate_chunk")
    config = load_config(config_path)
    print(f"per-test throughput, one worker, {per_test_trials} trials per design, all {len(config.designs)} designs:")
    for spec in config.analyses:
        start = time.perf_counter()
        for design in config.designs:
            simulate_chunk(config.model, config.effect, config.seed, Chunk(design, 0, per_test_trials, (spec,)))
        elapsed = time.perf_counter() - start
        trials = per_test_trials * len(config.designs)
        print(f"  {spec.label:<10} {trials / elapsed:8.1f} trials/s  (data generation included)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default=str(DEFAULT_CONFIG),
                        help="config to time (default: the project's configs/paper_fig4_coherence.yaml)")
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--per-test-trials", type=int, default=100, help="0 skips the per-test timings")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--baseline", default=DEFAULT_BASELINE,
                        help=f"git revision to compare with (default {DEFAULT_BASELINE}); 'none' skips it")
    parser.add_argument("--repeats", type=int, default=1, help="alternating grid runs of each version")
    parser.add_argument("--backend", default="loky",
                        help="backend(s) of this checkout's runs, comma-separated (default loky; e.g. loky,fork); "
                             "the baseline always uses loky")
    parser.add_argument("--grid-json", action="store_true", help=argparse.SUPPRESS)  # the baseline's subprocess
    args = parser.parse_args()
    config_path = str(Path(args.config).resolve())
    if args.grid_json:
        print(json.dumps(grid_run(config_path, args.trials, args.jobs, args.backend)))
        return
    if args.per_test_trials:
        per_test_throughput(config_path, args.per_test_trials)
    compare = args.baseline.lower() != "none"
    backends = args.backend.split(",")
    runs: dict[str, list] = {"baseline": [], **{backend: [] for backend in backends}}
    with tempfile.TemporaryDirectory() as baseline_dir:
        for _ in range(args.repeats):
            if compare:
                root = export_package(args.baseline, Path(baseline_dir))
                runs["baseline"].append(fresh_process_run(root, config_path, args.trials, args.jobs))
            # the new code in a fresh process too, so both start alike
            for backend in backends:
                runs[backend].append(fresh_process_run(PROJECT_ROOT, config_path, args.trials, args.jobs, backend))
    report(runs, args)


def report(runs: dict, args) -> None:
    backends = [name for name in runs if name != "baseline"]
    trials = runs[backends[0]][0]["trials"]
    print(f"whole grid through the engine: {trials // args.trials} designs x {args.trials} trials, "
          f"{args.jobs} workers (each run in a fresh process; the baseline with loky):")
    for name, name_runs in runs.items():
        for run in name_runs:
            print(describe(args.baseline if name == "baseline" else f"new {name}", run))
    if args.repeats > 1:
        # this machine's speed drifts from minute to minute: the spread says more than any single run
        for name in backends:
            rates = sorted(run["trials"] / run["wall"] for run in runs[name])
            reached = sum(rate >= TARGET_TRIALS_PER_SECOND for rate in rates)
            print(f"  new {name}: median {statistics.median(rates):.0f} trials/s (min {rates[0]:.0f}, "
                  f"max {rates[-1]:.0f}); {reached} of {len(rates)} runs at or above issue 15's "
                  f"{TARGET_TRIALS_PER_SECOND} trials/s")
    best_new = min((run for name in backends for run in runs[name]), key=lambda run: run["wall"])
    paper = trials * PAPER_SECONDS_PER_TRIAL
    print(f"paper's code at {PAPER_SECONDS_PER_TRIAL} s/trial single-threaded: {paper / 60:.0f} min; "
          f"ratio {paper / best_new['wall']:.0f}x")
    if runs["baseline"]:
        def total(run):
            return run["coordinator_cpu"] + run["worker_cpu"]
        for name in backends:
            wall = min(r["wall"] for r in runs["baseline"]) / min(r["wall"] for r in runs[name])
            cpu = min(map(total, runs["baseline"])) / min(map(total, runs[name]))
            print(f"ratio baseline/new {name} (best of {args.repeats}): wall {wall:.2f}x, CPU {cpu:.2f}x")


if __name__ == "__main__":
    main()
