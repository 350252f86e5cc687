"""Time one fit of each model-based analysis on the paper's design.

    .venv/bin/python scripts/bench_mixed.py [--repeats 3] [--with-slow] [--data CSV] [--no-r]

Data: the coherence model sampled on the paper's design (20 blocks x 5
documents x 3 annotators, 1500 judgements), a fresh data set per repeat; or,
with ``--data``, one real judgements file (e.g. the paper's
``likert_coherence_cnn_dm.csv``), fitted ``--repeats`` times.
Prints wall and CPU seconds per fit (medians over repeats) for simdesign's own
``clmm_native``, R's clmm, lme4 + lmerTest called directly through rpy2
(what the ``lmer`` analysis does), the same model through pymer4, and
statsmodels' clm; ``intercepts`` and ``paper`` (on this crossed design the
same as ``maximal``) structures. clmm with the maximal structure takes
minutes per fit, so it runs once, and only with ``--with-slow``. Start-up
costs (R, pymer4's import, clmm_native's first call) are timed separately
and kept out of the per-fit numbers. The machine's core count and load
average are printed first: on a shared machine the numbers depend on them.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

from simdesign import BlockDesign, load_model
from simdesign.significance import mixed_r
from simdesign.significance.mixed_native import clmm_native_analysis
from simdesign.tables.judgements import read_judgements
from simdesign.core.judgements import Judgements
from simdesign.significance.rsession import r_available


def simulate(seed: int):
    return load_model("coherence").sample(BlockDesign(20, 5, 3), np.random.default_rng(seed))


def real_data(path):
    """A judgements file as Judgements; the reference is the paper's __REFERENCE__ if present, else the first in
    sorted order (as in ``simdesign fit``)."""
    frame, _ = read_judgements(path)
    systems = sorted(frame["system"].unique(), key=lambda name: (name != "__REFERENCE__", name))
    return Judgements.from_frame(frame, systems=systems)


def machine_line() -> str:
    load = " ".join(f"{value:.2f}" for value in os.getloadavg())
    return f"machine: {os.cpu_count()} cores, load average {load} (1, 5, 15 min)"


def pymer4_fitter():
    """A function fitting the ``lmer`` model through pymer4, and pymer4's import time."""
    start = time.perf_counter()
    import polars
    from pymer4.models import lmer as Pymer4Lmer
    import_seconds = time.perf_counter() - start

    def fit(judgements, structure):
        formula = mixed_r.formula_for(judgements, structure)
        frame = judgements.to_frame()[["annotator", "document", "system", "score"]]
        model = Pymer4Lmer(formula, data=polars.from_pandas(frame))
        model.set_factors({"system": list(judgements.systems)})
        with contextlib.redirect_stdout(io.StringIO()):  # pymer4 prints R's notes for every fit
            model.fit()
        return "fitted (pymer4)"

    return fit, import_seconds


def time_fits(label, fit, datasets, repeats):
    """Print the median wall time and CPU time of one fit.

    CPU time is this process's (R runs in it, BLAS on one thread): on a
    machine shared with other jobs it grows far less with the load than
    wall time (though it grows: caches and cores are shared too).
    """
    seconds, cpu_seconds, statuses = [], [], []
    for judgements in datasets[:repeats]:
        start, cpu_start = time.perf_counter(), time.process_time()
        status = fit(judgements)
        seconds.append(time.perf_counter() - start)
        cpu_seconds.append(time.process_time() - cpu_start)
        statuses.append(status)
    counts = {s: statuses.count(s) for s in dict.fromkeys(statuses)}
    print(f"{label:<34} {statistics.median(seconds):>9.3f} s  {statistics.median(cpu_seconds):>9.3f} s   "
          f"(n={len(seconds)}, wall min {min(seconds):.3f}, max {max(seconds):.3f}; "
          f"{', '.join(f'{k} x{v}' for k, v in counts.items())})", flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3, help="fits per backend and structure (median reported)")
    parser.add_argument("--seed", type=int, default=2021, help="first data seed; repeat k uses seed + k")
    parser.add_argument("--with-slow", action="store_true", help="also time clmm with the maximal structure (minutes)")
    parser.add_argument("--no-pymer4", action="store_true", help="skip pymer4 (its import costs ~10 s and 650 MB)")
    parser.add_argument("--no-r", action="store_true", help="time only the analyses that need no R")
    parser.add_argument("--no-clmm", action="store_true", help="skip R's clmm (8-11 s per intercepts fit)")
    parser.add_argument("--data", help="a judgements CSV (annotator, document, system, score) instead of simulated data")
    args = parser.parse_args(argv)

    print(machine_line())
    if args.data:
        datasets = [real_data(args.data)] * args.repeats
        print(f"data: {args.data}", end="; ")
    else:
        datasets = [simulate(args.seed + k) for k in range(args.repeats)]
        print("design: BlockDesign(20, 5, 3)", end=", ")
    print(f"{datasets[0].n_pairs * datasets[0].n_systems} judgements; "
          f"formula for 'paper': {mixed_r.formula_for(datasets[0], 'paper')}")

    print(f"{'backend / structure':<34} {'wall/fit':>11} {'CPU/fit':>10}   (medians)")
    # One BLAS thread, as in the engine's workers (simdesign.studies.rates.engine.simulate_chunk).
    with threadpool_limits(limits=1):
        start = time.perf_counter()
        clmm_native_analysis(datasets[0], structure="intercepts")
        print(f"{'clmm_native first call':<34} {time.perf_counter() - start:>9.3f} s (once per process)")
        for structure in ("intercepts", "paper"):
            time_fits(f"clmm_native / {structure}",
                      lambda j: clmm_native_analysis(j, structure=structure).fit_status, datasets, args.repeats)
        time_fits("clm (statsmodels)", lambda j: mixed_r.clm_analysis(j).fit_status, datasets, args.repeats)
    if args.no_r:
        print(machine_line())
        return 0

    start = time.perf_counter()
    ok, message = r_available()
    if not ok:
        print(f"R is not available: {message}", file=sys.stderr)
        return 1
    mixed_r.lmer_analysis(datasets[0], structure="intercepts")  # loads lme4 and lmerTest
    print(f"{'R start-up + first fit':<34} {time.perf_counter() - start:>9.3f} s (once per process)")

    for structure in ("intercepts", "paper"):
        time_fits(f"lmer direct (rpy2) / {structure}",
                  lambda j: mixed_r.lmer_analysis(j, structure=structure).fit_status, datasets, args.repeats)
    if not args.no_pymer4:
        try:
            pymer4_fit, import_seconds = pymer4_fitter()
        except Exception as exc:  # noqa: BLE001 -- report and go on with the other backends
            print(f"pymer4 does not import: {type(exc).__name__}: {exc}")
        else:
            print(f"{'pymer4 import':<34} {import_seconds:>9.3f} s (once per process)")
            for structure in ("intercepts", "paper"):
                time_fits(f"lmer via pymer4 / {structure}", lambda j: pymer4_fit(j, structure), datasets,
                          args.repeats)
    if args.no_clmm:
        print(machine_line())
        return 0
    time_fits("clmm / intercepts", lambda j: mixed_r.clmm_analysis(j, structure="intercepts").fit_status,
              datasets, args.repeats)
    if args.with_slow:
        time_fits("clmm / paper (maximal)", lambda j: mixed_r.clmm_analysis(j, structure="paper").fit_status,
                  datasets, 1)
    else:
        print("clmm / paper (maximal): skipped (190-400 s per fit; pass --with-slow)")
    print(machine_line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
