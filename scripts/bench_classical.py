"""CPU seconds per trial of the classical Figure-4 grid, current code vs the plain numpy/scipy code, in one run.

For the designs of ``configs/paper_fig4_coherence.yaml`` (tests ttest, ttest_doc, art,
art_doc, 1000 ART resamples) simulates ``--trials`` trials per design through the engine's
chunk function (data generation and bookkeeping included, one process, one BLAS
thread) twice: with the current code, and with the code before issue 15's speed-ups
put back in place for the duration (``rng.integers`` signs and a +-1 float64 product
in ART, ``scipy.stats.ttest_1samp`` in the t-tests). Checks that both give identical
result rows, and prints CPU seconds per trial, the ratio, and the grid's throughput
projected for 2 idle cores (2 / CPU seconds per trial; the engine's coordination is
not included, see scripts/bench_type1.py for the wall time through the engine). CPU
seconds are reported because the machine may be shared; the load average is printed.

Usage::

    PYTHONPATH=. .venv/bin/python scripts/bench_classical.py [--trials 100] [--repeats 2]
"""
from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"

import argparse  # noqa: E402
import contextlib  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy import stats  # noqa: E402

from simdesign.significance import classical  # noqa: E402
from simdesign.studies.rates.config import load_config  # noqa: E402
from simdesign.studies.rates.engine import Chunk, simulate_chunk  # noqa: E402

CONFIG = Path(__file__).resolve().parents[1] / "configs" / "paper_fig4_coherence.yaml"


def _plain_exceedances(rng, resamples, values, integer, threshold, combination=None):
    # the plain code forms the product for every column: the combination (a shortcut) is not used
    signs = rng.integers(0, 2, size=(resamples, values.shape[0]), dtype=np.int8).astype(float) * 2.0 - 1.0
    return (np.abs(signs @ values) >= threshold).sum(axis=0)


def _plain_t(columns):
    return stats.ttest_1samp(columns, 0.0, axis=0).pvalue


@contextlib.contextmanager
def plain_code():
    """The arithmetic before the speed-ups, in place of the current helpers."""
    saved = (classical.flip_exceedances, classical.one_sample_t_pvalues)
    classical.flip_exceedances, classical.one_sample_t_pvalues = _plain_exceedances, _plain_t
    try:
        yield
    finally:
        classical.flip_exceedances, classical.one_sample_t_pvalues = saved


def run_grid(config, trials: int, specs) -> tuple[float, pd.DataFrame]:
    started = time.process_time()
    frames = [simulate_chunk(config.model, config.effect, config.seed, Chunk(design, 0, trials, specs))
              for design in config.designs]
    return time.process_time() - started, pd.concat(frames, ignore_index=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=100, help="trials per design (default 100)")
    parser.add_argument("--repeats", type=int, default=2, help="alternating timings of each version")
    args = parser.parse_args()
    config = load_config(CONFIG)
    specs = tuple(config.analyses)
    run_grid(config, 2, specs)  # imports and caches outside the timings
    print(f"{len(config.designs)} designs x {args.trials} trials, tests {[s.label for s in specs]}, "
          f"load average {os.getloadavg()[0]:.2f} at start", flush=True)
    seconds = {"new": [], "old": []}
    for _ in range(args.repeats):
        cpu, new_rows = run_grid(config, args.trials, specs)
        seconds["new"].append(cpu)
        with plain_code():
            cpu, old_rows = run_grid(config, args.trials, specs)
        seconds["old"].append(cpu)
        columns = [c for c in new_rows.columns if c != "fit_seconds"]
        pd.testing.assert_frame_equal(new_rows[columns], old_rows[columns])  # identical results, bit for bit
    trials = args.trials * len(config.designs)
    old, new = min(seconds["old"]) / trials, min(seconds["new"]) / trials
    for test in specs:  # per test, one repeat each, for where the time goes
        one = (test,)
        new_cpu, _ = run_grid(config, args.trials, one)
        with plain_code():
            old_cpu, _ = run_grid(config, args.trials, one)
        print(f"  {test.label:10s} CPU ms/trial (data generation included) old {1e3 * old_cpu / trials:6.2f} "
              f"new {1e3 * new_cpu / trials:6.2f}  ratio {old_cpu / new_cpu:4.2f}")
    print(f"all four tests: CPU ms/trial old {1e3 * old:.2f}, new {1e3 * new:.2f} (best of {args.repeats}), "
          f"ratio {old / new:.2f}; results identical. Projected on 2 idle cores: old {2 / old:.0f}, "
          f"new {2 / new:.0f} trials/s. Load average {os.getloadavg()[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
