"""Probe: how many outer Newton steps would a ``clmm_native`` fit need with the exact Hessian?

Issue 15's per-fit targets (0.08 s) are about 2x away, and an analytic Hessian of the Laplace
objective looked like the way there: Newton steps instead of about 57 L-BFGS-B evaluations, and no
35-40 evaluations for the final numerical Hessian. Before building one (days of work), this measures
what it could buy, with the numerical Hessian standing in for the analytic one: a projected Newton
method (Cholesky diagonals held at their bound 0 while their gradient pushes outwards; a shifted
Hessian where it is not positive definite; Armijo backtracking) from the fit's own start, on the
Figure-5/7 designs (both tasks, structure ``paper``, the studies of ``scripts/bench_figures.py``).

Prints per data set the L-BFGS-B fit's evaluations and the Newton iterations (to the projected
gradient ``--tolerance``, and to within 1e-6 of the L-BFGS-B optimum when it gets there), and the
difference of the two optima. An analytic Hessian costing H gradient evaluations makes a Newton fit
cost about iterations x (1 + H) evaluations plus its line searches, against the L-BFGS-B fit's
evaluations (final Hessian included). Uses the package's private fitting pieces on purpose: it is an
experiment on the algorithm, not a user of the API.

Usage::

    PYTHONPATH=. .venv/bin/python scripts/probe_newton_outer.py [--per-design 1] [--tolerance 1e-6]
"""
from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"

import argparse  # noqa: E402

import numpy as np  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from _bench_util import FIGURE_DESIGNS  # noqa: E402
from bench_figures import figure_study  # noqa: E402
from simdesign import clmm, load_model  # noqa: E402
from simdesign.clmm.layout import _Layout, _Objective  # noqa: E402
from simdesign.clmm.optimise import _numerical_hessian, _starting_values  # noqa: E402
from simdesign.clmm.prepare import _prepare  # noqa: E402

ARMIJO = 1e-4
MAX_ITERATIONS = 60
SAME_OPTIMUM = 1e-6


class _InOptimiserCoordinates:
    """The objective in the optimiser's coordinates, in the form the fit's ``_numerical_hessian`` differentiates.

    Newton steps are taken where L-BFGS-B takes them (thresholds as log increments, so they stay ordered).
    """

    def __init__(self, objective: _Objective):
        self.objective = objective

    def natural(self, point, with_gradient=True):
        return self.objective.optimiser(point)


def projected_newton(frame, reference, tolerance: float, target_nll: float) -> dict:
    problem = _prepare(frame, "paper", reference)
    layout = _Layout(problem)
    objective = _Objective(problem, layout)
    point = layout.to_optimiser(_starting_values(problem, layout))
    diagonal, fixed = layout.diagonal_mask(), layout.fixed_mask()
    value, gradient = objective.optimiser(point)
    iterations, hessian_evaluations, reached = 0, 0, None
    while iterations < MAX_ITERATIONS:
        if reached is None and value <= target_nll + SAME_OPTIMUM:
            reached = iterations
        free = ~fixed & ~(diagonal & (point <= 0.0) & (gradient > 0.0))
        if np.abs(np.where(free, gradient, 0.0)).max() < tolerance:
            break
        before = objective.evaluations
        # the fit's own forward differences (leaving the warm mode at ``point``)
        hessian, index = _numerical_hessian(_InOptimiserCoordinates(objective), point, free)
        hessian_evaluations += objective.evaluations - before
        eigenvalues = np.linalg.eigvalsh(hessian)
        shift = 0.0
        if eigenvalues.min() <= 1e-8 * np.abs(eigenvalues).max():
            shift = 1e-4 * np.abs(eigenvalues).max() - eigenvalues.min()
        step = np.zeros_like(point)
        step[index] = -np.linalg.solve(hessian + shift * np.eye(len(index)), gradient[index])
        length = 1.0
        while True:
            trial = point + length * step
            trial[diagonal] = np.maximum(trial[diagonal], 0.0)
            trial_value, trial_gradient = objective.optimiser(trial)
            if trial_value <= value + ARMIJO * gradient @ (trial - point) or length < 1e-6:
                break
            length *= 0.5
        point, value, gradient = trial, trial_value, trial_gradient
        iterations += 1
    return {"nll": value, "iterations": iterations, "reached": reached, "evaluations": objective.evaluations,
            "hessian_evaluations": hessian_evaluations}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-design", type=int, default=1, help="simulated studies per design and task")
    parser.add_argument("--tolerance", type=float, default=1e-6, help="Newton's projected-gradient tolerance")
    args = parser.parse_args()
    clmm.set_accelerator(True)
    models = {task: load_model(task) for task in ("coherence", "repetition")}
    rows = []
    with threadpool_limits(limits=1):
        for designs in FIGURE_DESIGNS.values():
            for t, task in enumerate(models):
                for d, (blocks, docs, annotators) in enumerate(designs):
                    for trial in range(args.per_design):
                        judgements = figure_study(models[task], t, d, (blocks, docs, annotators), trial)
                        frame, reference = judgements.to_frame(), judgements.systems[0]
                        fit = clmm.fit(frame, "paper", reference)
                        newton = projected_newton(frame, reference, args.tolerance, -fit.loglik)
                        rows.append((fit.n_evaluations, newton["iterations"], newton["reached"],
                                     newton["evaluations"], newton["nll"] + fit.loglik))
                        print(f"{task:10s} B{blocks:<2d} D{docs:<3d} A{annotators} trial {trial}: L-BFGS-B "
                              f"{fit.n_evaluations:3d} evaluations ({fit.status}) | Newton {newton['iterations']:2d} "
                              f"iterations (L-BFGS-B's optimum after {newton['reached']}), "
                              f"{newton['evaluations']} evaluations of which {newton['hessian_evaluations']} "
                              f"for Hessians; nll Newton - L-BFGS-B {newton['nll'] + fit.loglik:+.2e}", flush=True)
    evaluations, iterations, reached, _, difference = zip(*rows)
    reached_counts = [r for r in reached if r is not None]
    print(f"\n{len(rows)} data sets: L-BFGS-B {np.mean(evaluations):.1f} evaluations per fit (final Hessian "
          f"included); Newton {np.mean(iterations):.1f} iterations (median {np.median(iterations):.0f}, max "
          f"{max(iterations)}); reached L-BFGS-B's optimum in {len(reached_counts)} of {len(rows)} "
          f"(after {np.mean(reached_counts) if reached_counts else float('nan'):.1f} iterations on average); "
          f"Newton's optimum worse by more than 1e-3 in {sum(d > 1e-3 for d in difference)}, better by more than "
          f"1e-3 in {sum(d < -1e-3 for d in difference)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
