"""CPU microseconds per trial of each part of a Figure-4 grid trial, this checkout against a baseline revision.

Parts: sampling a study (its data stream included), one analysis generator, each test alone on a
fresh study, the four tests in order on one study (as the engine runs them: later tests reuse what
earlier ones computed), and a whole trial through the engine's chunk function (100-trial chunks,
result frame included). For every (design, study) a part's time is the minimum over ``--repeats``
calls, then averaged over the designs of ``configs/paper_fig4_coherence.yaml`` and ``--studies``
studies each: minima of short calls are what a shared, loaded machine disturbs least. Each version
runs in its own process (the baseline's package exported from git, as in ``bench_type1.py``), one
BLAS thread, and the two alternate ``--rounds`` times; the table shows the best of the rounds.

    python scripts/bench_grid_components.py [--baseline REV] [--studies 4] [--repeats 15] [--rounds 2]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_type1 import DEFAULT_BASELINE, DEFAULT_CONFIG, PROJECT_ROOT, export_revision  # noqa: E402


def measure(studies_per_design: int, repeats: int) -> dict:
    """Microseconds per trial of each part (this process's simdesign)."""
    import numpy as np
    from threadpoolctl import threadpool_limits

    from simdesign.core.judgements import Judgements
    from simdesign.core.seeds import analysis_rng, data_rng
    from simdesign.simulation.config import load_config
    from simdesign.simulation.engine import Chunk, analyse, simulate_chunk

    config = load_config(DEFAULT_CONFIG)
    keys = [(design, trial) for design in config.designs for trial in range(studies_per_design)]
    parts: dict[str, float] = {}

    def fresh(study):
        return Judgements(scores=study.scores, annotator=study.annotator, document=study.document,
                          block=study.block, systems=study.systems)

    def part(name, function):
        best_per_key = []
        for design, trial in keys:
            best = float("inf")
            for _ in range(repeats):
                study = fresh(studies[design.label, trial])
                start = time.process_time()
                function(design, trial, study)
                best = min(best, time.process_time() - start)
            best_per_key.append(best)
        parts[name] = 1e6 * float(np.mean(best_per_key))

    with threadpool_limits(limits=1):
        studies = {(d.label, t): config.model.sample(d, data_rng(config.seed, d.label, t), config.effect)
                   for d, t in keys}
        part("sample a study", lambda d, t, j: config.model.sample(d, data_rng(config.seed, d.label, t), config.effect))
        part("one analysis generator", lambda d, t, j: analysis_rng(config.seed, d.label, t, "art"))
        for spec in config.analyses:
            part(f"{spec.label} alone", lambda d, t, j, spec=spec: analyse(j, spec, config.seed, d.label, t))
        part("4 tests in order", lambda d, t, j: [analyse(j, s, config.seed, d.label, t) for s in config.analyses])
    chunk_times = []
    for design in config.designs:
        chunk = Chunk(design, 0, 100, tuple(config.analyses))
        best = float("inf")
        for _ in range(max(2, repeats // 5)):
            start = time.process_time()
            simulate_chunk(config.model, config.effect, config.seed, chunk)
            best = min(best, time.process_time() - start)
        chunk_times.append(best / 100)
    parts["whole trial (engine chunk)"] = 1e6 * float(np.mean(chunk_times))
    return parts


def run_in(package_root: Path, args) -> dict:
    command = [sys.executable, __file__, "--json", "--studies", str(args.studies), "--repeats", str(args.repeats)]
    env = {**os.environ, "PYTHONPATH": str(package_root), "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    output = subprocess.run(command, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(output.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", default=DEFAULT_BASELINE, help=f"git revision (default {DEFAULT_BASELINE})")
    parser.add_argument("--studies", type=int, default=4, help="studies per design")
    parser.add_argument("--repeats", type=int, default=15, help="calls per (design, study); the minimum counts")
    parser.add_argument("--rounds", type=int, default=2, help="alternating runs of each version")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.json:
        print(json.dumps(measure(args.studies, args.repeats)))
        return
    print(f"load average {os.getloadavg()[0]:.2f} at start")
    results: dict[str, list] = {"baseline": [], "new": []}
    with tempfile.TemporaryDirectory() as directory:
        root = export_revision(args.baseline, Path(directory))
        for _ in range(args.rounds):
            results["baseline"].append(run_in(root, args))
            results["new"].append(run_in(PROJECT_ROOT, args))
    print(f"CPU us per trial, best of {args.rounds} rounds (baseline {args.baseline}); load average "
          f"{os.getloadavg()[0]:.2f} at the end")
    print(f"  {'part':<28} {'baseline':>9} {'new':>9} {'ratio':>6}")
    for name in results["new"][0]:
        old = min(run[name] for run in results["baseline"])
        new = min(run[name] for run in results["new"])
        print(f"  {name:<28} {old:9.0f} {new:9.0f} {old / new:6.2f}")


if __name__ == "__main__":
    main()
