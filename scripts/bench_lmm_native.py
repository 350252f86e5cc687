"""``lmm_native`` against ``lmer`` (R: lme4 and lmerTest) on the paper's crossed design, timed in one invocation.

    .venv/bin/python scripts/bench_lmm_native.py [--studies 20] [--repeats 3] [--seed 2021] [--no-r]

Time per simulated study, data generation included, on the paper's crossed design (coherence model, 3
annotators x 100 documents, 5 systems: 1,500 judgements), one BLAS thread: ``lmm_native`` and ``lmer`` with
Satterthwaite df (the default of both), for the intercepts and maximal structures. The two run on the same
studies, interleaved (one repeat of each in turn); each prints the median over ``--repeats`` of the mean
milliseconds per study, the load average around the runs, the ratio lmer / lmm_native and the largest
difference of their p-values (zero to rounding where both reach the same optimum; the maximal fits may not).
Without R (or with ``--no-r``) only ``lmm_native`` is timed.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simdesign import BlockDesign, load_model  # noqa: E402
from simdesign.significance import ANALYSES, run_analysis  # noqa: E402
from simdesign.core.threads import single_threaded  # noqa: E402


def _time(info, studies, structure) -> tuple[float, list]:
    """Mean milliseconds per study, drawing each study inside the timing, and the results."""
    model, design, seeds = studies
    results = []
    start = time.perf_counter()
    for seed in seeds:
        study = model.sample(design, np.random.default_rng(seed))
        results.append(run_analysis(info, study, None, {"structure": structure}))
    return (time.perf_counter() - start) / len(seeds) * 1000, results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=2021)
    parser.add_argument("--no-r", action="store_true")
    args = parser.parse_args()
    with_r = not args.no_r
    if with_r:
        from simdesign.significance.rsession import r_available

        with_r, message = r_available()
        if not with_r:
            print(f"R not available ({message}): lmm_native alone")
    studies = (load_model("coherence"), BlockDesign(1, 100, 3), range(args.seed, args.seed + args.studies))
    tools = {"lmm_native": ANALYSES["lmm_native"]} | ({"lmer": ANALYSES["lmer"]} if with_r else {})
    print(f"{args.studies} studies of 3 annotators x 100 documents x 5 systems, one thread, "
          f"median of {args.repeats} interleaved repeats; load average before {os.getloadavg()}")
    with single_threaded():
        for info in tools.values():  # start-up (imports, R) outside the timings
            run_analysis(info, studies[0].sample(studies[1], np.random.default_rng(0)), None, {"structure": "intercepts"})
        for structure in ("intercepts", "maximal"):
            times = {name: [] for name in tools}
            results = {}
            for _ in range(args.repeats):
                for name, info in tools.items():
                    milliseconds, results[name] = _time(info, studies, structure)
                    times[name].append(milliseconds)
            medians = {name: statistics.median(values) for name, values in times.items()}
            line = f"{structure:10s} " + "  ".join(f"{name} {value:8.1f} ms/study" for name, value in medians.items())
            if "lmer" in medians:
                line += f"  ratio lmer / lmm_native {medians['lmer'] / medians['lmm_native']:.1f}"
                usable = [(a, b) for a, b in zip(results["lmm_native"], results["lmer"])
                          if a.fit_status in ("ok", "singular") and b.fit_status in ("ok", "singular")]
                if usable:  # lmer's fits may stop at another boundary optimum (maximal): a spread, not an error
                    line += (f"; largest p-value difference over {len(usable)} studies both fitted "
                             f"{max(np.nanmax(np.abs(a.p_value - b.p_value)) for a, b in usable):.1e}")
            print(line, flush=True)
    print(f"load average after {os.getloadavg()}")


if __name__ == "__main__":
    main()
