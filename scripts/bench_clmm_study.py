"""Time per simulated study of ``clmm_native`` (data generation, fit and tests), this checkout against a baseline.

Issue 41 measures the native ordinal mixed model per study, as a power analysis pays for it: the engine's
chunk of trials (``simulate_chunk``: each trial's data drawn, fitted and tested with the default t test with
containment df) on the paper's crossed design of 3 annotators x 100 documents x 5 systems (1,500 judgements),
with ``structure: intercepts`` and ``structure: maximal``. The baseline (a git revision, by default the code
before issue 41's speed-ups) is exported once to a cache directory (its compiled kernels are cached there, so
only the first run compiles them) and each version runs in its own fresh process, one thread, alternately:
``--rounds`` interleaved rounds, each timing ``--trials`` studies after one warm-up chunk. Printed per round:
CPU and wall milliseconds per study and the load average; then the medians over rounds and the ratios
baseline / this checkout (CPU seconds are the steadier measure on a shared machine).

    .venv/bin/python scripts/bench_clmm_study.py [--trials 40] [--rounds 3] [--baseline REV] [--model coherence]
"""
from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_variable] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from _bench_util import export_package  # noqa: E402 -- scripts/ is on sys.path when a script runs

PROJECT_ROOT = Path(__file__).resolve().parents[1]
# simdesign.clmm before issue 41 (the last commit before its kernels and fit loop changed)
DEFAULT_BASELINE = "593879866b8aebc53882ba99e3cf364316a94a02"
STRUCTURES = ("intercepts", "maximal")
DESIGN = {"kind": "block", "blocks": 1, "docs_per_block": 100, "annotators_per_block": 3}


def study_times(structure: str, trials: int, model: str) -> dict:
    """CPU and wall milliseconds per study through the engine's chunk function, in this process."""
    try:
        from simdesign.studies.rates.config import parse_config
        from simdesign.studies.rates.engine import Chunk, simulate_chunk
    except ImportError:  # a baseline laid out before issue 40
        from simdesign.simulation.config import parse_config
        from simdesign.simulation.engine import Chunk, simulate_chunk

    config = parse_config({"name": "bench", "model": model, "effect": "fitted", "trials": trials + 10, "seed": 41,
                           "designs": [DESIGN], "tests": [{"name": "clmm_native", "structure": structure}]})
    design = config.designs[0]
    simulate_chunk(config.model, config.effect, config.seed, Chunk(design, trials, trials + 2, config.analyses))
    load = os.getloadavg()[0]
    cpu, wall = time.process_time(), time.perf_counter()
    for first in range(0, trials, 10):  # the engine's chunks of clmm_native (chunk_trials 10)
        simulate_chunk(config.model, config.effect, config.seed,
                       Chunk(design, first, min(first + 10, trials), config.analyses))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return {"cpu_ms": 1e3 * cpu / trials, "wall_ms": 1e3 * wall / trials, "load": load}


def export_revision(revision: str) -> Path:
    """The package of ``revision`` exported once under the temporary directory (kept for its kernel cache)."""
    return export_package(revision, Path(tempfile.gettempdir()) / f"simdesign-bench-{revision[:12]}")


def fresh_process(package_root: Path, structure: str, trials: int, model: str) -> dict:
    command = [sys.executable, __file__, "--worker", structure, "--trials", str(trials), "--model", model]
    env = {**os.environ, "PYTHONPATH": str(package_root)}
    output = subprocess.run(command, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(output.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=40, help="studies timed per run (after a warm-up chunk)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved runs of each version (median reported)")
    parser.add_argument("--baseline", default=DEFAULT_BASELINE, help="git revision to compare with")
    parser.add_argument("--model", default="coherence", help="preset the studies are drawn from")
    parser.add_argument("--structures", default=",".join(STRUCTURES))
    parser.add_argument("--worker", help=argparse.SUPPRESS)  # one timing in this process, as JSON
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(study_times(args.worker, args.trials, args.model)))
        return 0
    baseline = export_revision(args.baseline)
    versions = {"baseline": baseline, "this checkout": PROJECT_ROOT}
    print(f"clmm_native per study on BlockDesign(1, 100, 3) x 5 systems (1500 judgements), model {args.model}, "
          f"{args.trials} studies per run, one thread; baseline {args.baseline[:12]}")
    for structure in args.structures.split(","):
        runs = {name: [] for name in versions}
        for round_number in range(args.rounds):
            for name, root in versions.items():
                run = fresh_process(root, structure, args.trials, args.model)
                runs[name].append(run)
                print(f"  {structure:<10} round {round_number + 1}  {name:<13} CPU {run['cpu_ms']:7.2f} ms  "
                      f"wall {run['wall_ms']:7.2f} ms  (load {run['load']:.2f})", flush=True)
        median = {name: {key: statistics.median(run[key] for run in rs) for key in ("cpu_ms", "wall_ms", "load")}
                  for name, rs in runs.items()}
        old, new = median["baseline"], median["this checkout"]
        print(f"{structure:<10} medians: baseline CPU {old['cpu_ms']:.2f} ms, wall {old['wall_ms']:.2f} ms; "
              f"this checkout CPU {new['cpu_ms']:.2f} ms, wall {new['wall_ms']:.2f} ms; ratio CPU "
              f"{old['cpu_ms'] / new['cpu_ms']:.2f}x, wall {old['wall_ms'] / new['wall_ms']:.2f}x "
              f"(load {new['load']:.2f})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
