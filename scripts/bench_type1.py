"""Benchmark: the Figure-4 grid (8 designs x trials x 10 pairs x 4 tests, 1000 ART resamples).

Prints trials per second for each test alone (one worker, in this process), the whole grid's wall
time through the engine with all workers, and the ratio against the paper's own code (about 0.74 s
per trial single-threaded for all four tests, the figure quoted in the project's issue 2).

    python scripts/bench_type1.py [--config CONFIG] [--trials 1000] [--jobs 2]   (from any directory)
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

# The default config is the project's, wherever the script is run from (a relative --config is the caller's).
PROJECT_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CONFIG = PROJECT_ROOT / "configs" / "paper_fig4_coherence.yaml"
try:
    import simdesign  # noqa: F401 -- installed (pip install -e .) or on PYTHONPATH
except ImportError:  # a checkout without the package installed: use the one next to this script
    sys.path.insert(0, str(PROJECT_ROOT))

from simdesign.simulation.config import load_config  # noqa: E402
from simdesign.simulation.engine import Chunk, run_simulation, simulate_chunk  # noqa: E402

PAPER_SECONDS_PER_TRIAL = 0.74


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default=str(DEFAULT_CONFIG),
                        help="config to time (default: the project's configs/paper_fig4_coherence.yaml)")
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--per-test-trials", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    config = load_config(args.config, {"trials": args.trials})

    print(f"per-test throughput, one worker, {args.per_test_trials} trials per design, all {len(config.designs)} designs:")
    for spec in config.analyses:
        start = time.perf_counter()
        for design in config.designs:
            simulate_chunk(config.model, config.effect, config.seed, Chunk(design, 0, args.per_test_trials, (spec,)))
        elapsed = time.perf_counter() - start
        trials = args.per_test_trials * len(config.designs)
        print(f"  {spec.label:<10} {trials / elapsed:8.1f} trials/s  (data generation included)")

    raw = {"name": config.name, "model": config.model_source, "effect": config.effect, "trials": args.trials,
           "seed": config.seed, "designs": [{k: v for k, v in d.columns().items() if k in ("kind", "blocks",
                                             "docs_per_block", "annotators_per_block")} for d in config.designs],
           "tests": [spec.name for spec in config.analyses], "art_resamples": config.art_resamples}
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        run_simulation(config, out, raw, jobs=args.jobs, progress=False)
        elapsed = time.perf_counter() - start
    total_trials = args.trials * len(config.designs)
    paper = total_trials * PAPER_SECONDS_PER_TRIAL
    print(f"whole grid through the engine: {len(config.designs)} designs x {args.trials} trials x "
          f"{len(config.analyses)} tests, {args.jobs} workers: {elapsed:.1f} s "
          f"({total_trials / elapsed:.1f} trials/s, all tests per trial)")
    print(f"paper's code at {PAPER_SECONDS_PER_TRIAL} s/trial single-threaded: {paper / 60:.0f} min; "
          f"ratio {paper / elapsed:.0f}x (target: grid under 120 s)")


if __name__ == "__main__":
    main()
