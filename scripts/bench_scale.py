"""Throughput of the chunk backends, and the fixed cost each chunk pays.

Usage::

    .venv/bin/python scripts/bench_scale.py [--trials 600] [--tiny-chunks 300] [--workers 1 2] [--repeat 3]
                                            [--chunk-size 10]

For each backend (loky: local processes, where ``jobs=1`` means joblib runs
the chunks in the coordinating process itself; dask: a LocalCluster of
single-threaded worker processes) and each worker count, runs one config
into fresh results directories and prints trials per second (fastest of
``--repeat`` runs: on a shared machine the minimum is the least disturbed)
and the speed-up over one worker. Cluster start-up is timed separately (it is paid once per
run, or never with a long-running scheduler).

The overhead per chunk is measured with many tiny chunks (one trial, one
cheap test) on one worker: (wall time of the run - in-process compute time of
the same chunks) / chunks. It covers everything the engine adds to a chunk:
shipping the task, returning the frame, and the coordinator's atomic Parquet
write.

Results are identical across backends by construction (seeds per design and
trial); the script checks that too.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
from threadpoolctl import threadpool_limits

from simdesign.studies.backends import own_libpython_for_children
from simdesign.studies.rates.config import parse_config
from simdesign.studies.rates.engine import plan_chunks, run_simulation, simulate_chunk

# The paper's design (20 blocks of 5 documents, 3 annotators each) with the four classical tests.
WORKLOAD = {
    "name": "bench-scale", "model": "coherence", "effect": "zero", "seed": 3, "chunk_size": 10,
    "designs": [{"kind": "block", "blocks": 20, "docs_per_block": 5, "annotators_per_block": 3}],
    "tests": ["ttest", "ttest_doc", "art", "art_doc"],
}
# One cheap trial per chunk: the chunk's fixed cost dominates.
TINY = {
    "name": "bench-tiny", "model": "coherence", "effect": "zero", "seed": 3, "chunk_size": 1,
    "designs": [{"kind": "block", "blocks": 1, "docs_per_block": 4, "annotators_per_block": 2}],
    "tests": ["ttest"],
}


def timed_run(raw: dict, out: Path, repeat: int = 1, **backend) -> tuple[float, pd.DataFrame]:
    """Fastest of ``repeat`` runs into fresh directories (on a shared machine the minimum is the least noisy)."""
    config = parse_config(raw)
    best = float("inf")
    for attempt in range(repeat):
        start = time.perf_counter()
        store = run_simulation(config, out / str(attempt), raw, progress=False, **backend)
        best = min(best, time.perf_counter() - start)
    return best, store.read_trials().drop(columns="fit_seconds")


def serial_compute_seconds(raw: dict, repeat: int = 1) -> float:
    """In-process time to compute every chunk of ``raw``, without workers or storage (fastest of ``repeat``)."""
    config = parse_config(raw)
    chunks = plan_chunks(config, None, config.trials)
    simulate_chunk(config.model, config.effect, config.seed, chunks[0])  # first-call imports and caches
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for chunk in chunks:
            simulate_chunk(config.model, config.effect, config.seed, chunk)
        best = min(best, time.perf_counter() - start)
    return best


class LocalDask:
    """A LocalCluster of ``n`` single-threaded worker processes, with its start-up time."""

    def __init__(self, n: int):
        self.n = n

    def __enter__(self):
        from dask.distributed import Client, LocalCluster

        start = time.perf_counter()
        with own_libpython_for_children():
            self.cluster = LocalCluster(n_workers=self.n, threads_per_worker=1, processes=True,
                                        dashboard_address=":0")
        self.client = Client(self.cluster, set_as_default=False)
        self.client.wait_for_workers(self.n, timeout=120)
        # Import simdesign on every worker before timing, as a warm pool would have it.
        self.client.run(lambda: __import__("simdesign.studies.rates.engine"))
        self.startup = time.perf_counter() - start
        return self

    def __exit__(self, *exc_info):
        self.client.close()
        self.cluster.close()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=600)
    parser.add_argument("--tiny-chunks", type=int, default=300)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeat", type=int, default=3, help="time each run this often, keep the fastest")
    parser.add_argument("--chunk-size", type=int, default=WORKLOAD["chunk_size"], help="trials per chunk")
    args = parser.parse_args(argv)
    # loky and Dask workers run numpy with one BLAS thread; so does this process here, otherwise the
    # in-process runs (jobs=1) would time BLAS threads fighting over 2 cores instead of the backends.
    threadpool_limits(1)
    workload = {**WORKLOAD, "trials": args.trials, "chunk_size": args.chunk_size}
    tiny = {**TINY, "trials": args.tiny_chunks}
    print(f"machine: {os.cpu_count()} cores, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"workload: {args.trials} trials of block-B20-D5-A3, tests {', '.join(WORKLOAD['tests'])}, "
          f"{args.chunk_size} trials per chunk")
    serial = serial_compute_seconds(workload, args.repeat)
    print(f"in-process compute, no workers: {serial:.2f} s = {args.trials / serial:.1f} trials/s\n")

    rows = []
    reference = None
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        for backend in ("loky", "dask"):
            for n in args.workers:
                if backend == "loky":
                    # Warm the process pool so that both backends are timed without start-up.
                    run_simulation(parse_config({**tiny, "trials": 2 * n}), root / f"warm-{n}",
                                   {**tiny, "trials": 2 * n}, jobs=n, progress=False)
                    seconds, table = timed_run(workload, root / f"loky-{n}", args.repeat, jobs=n)
                    tiny_seconds = timed_run(tiny, root / f"tiny-loky-{n}", args.repeat, jobs=n)[0] if n == 1 else None
                    startup = float("nan")
                else:
                    with LocalDask(n) as dask:
                        address = dask.cluster.scheduler_address
                        seconds, table = timed_run(workload, root / f"dask-{n}", args.repeat, backend="dask",
                                                   scheduler=address)
                        tiny_seconds = (timed_run(tiny, root / f"tiny-dask-{n}", args.repeat, backend="dask",
                                                  scheduler=address)[0]
                                        if n == 1 else None)
                        startup = dask.startup
                if reference is None:
                    reference = table
                identical = table.equals(reference)
                rows.append({"backend": backend, "workers": n, "seconds": seconds, "trials/s": args.trials / seconds,
                             "startup s": startup, "identical": identical, "tiny": tiny_seconds})

    table = pd.DataFrame(rows)
    for backend, group in table.groupby("backend", sort=False):
        base = group.loc[group["workers"] == min(args.workers), "trials/s"].iloc[0]
        table.loc[group.index, "speed-up"] = group["trials/s"] / base
    print(table.drop(columns="tiny").to_string(index=False, float_format=lambda v: f"{v:.2f}"))

    tiny_compute = serial_compute_seconds(tiny, args.repeat)
    print(f"\noverhead per chunk ({args.tiny_chunks} chunks of 1 trial, 1 worker; in-process compute "
          f"{1000 * tiny_compute / args.tiny_chunks:.1f} ms per chunk):")
    for row in table[table["tiny"].notna()].itertuples():
        overhead = (row.tiny - tiny_compute) / args.tiny_chunks
        print(f"  {row.backend:<5} {1000 * overhead:6.1f} ms per chunk (run {row.tiny:.2f} s)")
    if not table["identical"].all():
        print("ERROR: results differ between backends", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
