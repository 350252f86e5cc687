"""Seconds per ``clmm_native`` fit on the Figure 5 and Figure 7 designs, old vs new, in one run.

For every design of ``configs/paper_fig5_*.yaml`` and ``configs/paper_fig7_*.yaml``
(both tasks, the fitted effects, structure ``paper``), simulates ``--per-design``
studies (seeds ``SeedSequence([2021, task, design, trial])``) and fits each with
the current ``simdesign.clmm`` and with the implementation before issue 15
(``simdesign/clmm.py`` at commit d44f140, read from git history), one after the other on the
same data, each as the engine's analysis calls it (the current code takes the study itself, the
old one the table ``Judgements.to_frame()``, made inside its timing). Prints the mean wall and CPU
seconds per fit for each design and version, and the fitting time of each figure at 1000 trials per point on
``--cores`` cores projected from the means (clmm fits only: simulation, ART
and bookkeeping come on top). On a machine shared with other jobs the CPU
seconds are the steadier measure; the load average is printed.

Usage::

    PYTHONPATH=. .venv/bin/python scripts/bench_figures.py [--per-design 3] [--cores 2]
"""
from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"

import argparse  # noqa: E402

from _bench_util import FIGURE_DESIGNS, load_baseline, timed  # noqa: E402
import numpy as np  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from simdesign import BlockDesign, clmm, load_model  # noqa: E402

TRIALS_PER_POINT = 1000


def figure_study(model, task_index: int, design_index: int, design: tuple, trial: int):
    """One simulated study of a figure design, ``(blocks, docs_per_block, annotators_per_block)``: its own seed."""
    blocks, docs, annotators = design
    rng = np.random.default_rng(np.random.SeedSequence([2021, task_index, design_index, trial]))
    return model.sample(BlockDesign(blocks, docs, annotators), rng, effect="fitted")


def timed_status(fit, judgements):
    wall, cpu, result = timed(fit, judgements, "paper", judgements.systems[0])
    return wall, cpu, result.status


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-design", type=int, default=3, help="simulated studies per design and task")
    parser.add_argument("--cores", type=int, default=2, help="cores for the projected figure times")
    args = parser.parse_args()
    compiled = clmm.set_accelerator(True)
    old_fit = load_baseline().fit
    # the engine's analysis fits the study itself now; before, it built the table first
    # the analysis's fit: one start (clmm_native's default in simulations; docs/model.md, "Starts")
    versions = {"new": lambda judgements, structure, reference: clmm.fit(judgements, structure, reference,
                                                                         starts="single"),
                "old": lambda judgements, structure, reference: old_fit(judgements.to_frame(), structure, reference)}
    print(f"new: {'compiled kernels (numba)' if compiled else 'numpy'}; old: simdesign/clmm.py at d44f140; "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start", flush=True)
    models = {task: load_model(task) for task in ("coherence", "repetition")}
    totals = {}
    with threadpool_limits(limits=1):
        warm = models["coherence"].sample(BlockDesign(2, 5, 3), np.random.default_rng(0))
        for fit in versions.values():
            fit(warm, "paper", warm.systems[0])  # compile / warm up
        for figure, designs in FIGURE_DESIGNS.items():
            for t, task in enumerate(models):
                for d, (blocks, docs, annotators) in enumerate(designs):
                    sums = {name: np.zeros(2) for name in versions}
                    statuses = {name: [] for name in versions}
                    for trial in range(args.per_design):
                        judgements = figure_study(models[task], t, d, (blocks, docs, annotators), trial)
                        for name, fit in versions.items():
                            wall, cpu, status = timed_status(fit, judgements)
                            sums[name] += (wall, cpu)
                            statuses[name].append(status)
                    means = {name: value / args.per_design for name, value in sums.items()}
                    for name in versions:
                        totals.setdefault((figure, task, name), np.zeros(2))
                        totals[(figure, task, name)] += means[name]
                    same = "same statuses" if statuses["new"] == statuses["old"] else "STATUSES DIFFER"
                    print(f"{figure} {task:10s} B{blocks:<2d} D{docs:<3d} A{annotators} "
                          f"({blocks * docs * annotators * 5:4d} judgements): "
                          f"new {means['new'][0]:.3f} s wall {means['new'][1]:.3f} s CPU | "
                          f"old {means['old'][0]:.3f} s wall {means['old'][1]:.3f} s CPU | "
                          f"old/new CPU {means['old'][1] / means['new'][1]:.2f}  ({same})", flush=True)
    print(f"\nProjected clmm fitting time per figure and task, {TRIALS_PER_POINT} trials per point on "
          f"{args.cores} cores (from the mean seconds above; fits only):")
    for figure in FIGURE_DESIGNS:
        for task in models:
            new, old = totals[(figure, task, "new")], totals[(figure, task, "old")]
            scale = TRIALS_PER_POINT / args.cores / 60.0
            print(f"  {figure} {task:10s} new {new[0] * scale:6.1f} min wall ({new[1] * scale:6.1f} min CPU) | "
                  f"old {old[0] * scale:6.1f} min wall ({old[1] * scale:6.1f} min CPU)")
    all_new = sum(v for (f, t, n), v in totals.items() if n == "new")
    all_old = sum(v for (f, t, n), v in totals.items() if n == "old")
    n_designs = sum(len(d) for d in FIGURE_DESIGNS.values()) * len(models)
    print(f"mean over all designs: new {all_new[0] / n_designs:.3f} s wall {all_new[1] / n_designs:.3f} s CPU per fit; "
          f"old {all_old[0] / n_designs:.3f} s wall {all_old[1] / n_designs:.3f} s CPU; "
          f"load average {os.getloadavg()[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
