"""The refit rule ``starts='codings'`` of ``clmm.fit`` on the Figure 5 and Figure 7 designs: cost and effect.

For every design of ``configs/paper_fig5_*.yaml`` and ``configs/paper_fig7_*.yaml``
(both tasks, the fitted effects, structure ``paper``, reference = the model's first
system, as ``clmm_native`` fits), simulates ``--per-design`` studies (seeds
``SeedSequence([2021, task, design, trial])``, as ``scripts/bench_figures.py``) and fits
each three times, one after the other on the same data:

* ``base``: ``simdesign.clmm`` at commit 714c5db (before the rule), read from git history;
* ``single``: the current fitter with ``starts='single'`` (must equal ``base``);
* ``codings``: the current fitter with ``starts='codings'``.

Prints the mean wall and CPU seconds per fit of each and the ratio codings/base (the
rule's cost in simulations), how often the rule applied (singular or unconverged fits),
how often it kept another coding's optimum (and by how much the log-likelihood rose), and
whether any test decision (p < 0.05 of the 10 unadjusted pairwise Wald contrasts, as
``clmm_native`` stores them) or any fit status changed. ``--out`` writes one row per study.

Usage::

    PYTHONPATH=. .venv/bin/python scripts/bench_starts.py [--per-design 8] [--out starts.csv]
"""
from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"

import argparse  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from _bench_util import FIGURE_DESIGNS, load_clmm_at, timed  # noqa: E402
from bench_figures import figure_study  # noqa: E402
from simdesign import BlockDesign, clmm, load_model  # noqa: E402
from simdesign.significance.mixed_native import _result_from_fit  # noqa: E402

BASE_COMMIT = "714c5db"
ALPHA = 0.05


def with_start_fields(result):
    """A base result with the fields the refit rule added (one start), so the current analysis code reads it."""
    for name, value in (("starts", "single"), ("starts_tried", 1), ("start_kept", "default"), ("start_gain", 0.0),
                        ("starts_text", "1")):
        if not hasattr(result, name):
            setattr(result, name, value)
    return result


def decisions(fit, systems) -> np.ndarray:
    """Per pair: 1 rejected (p < ALPHA), 0 not rejected, -1 failed (no p-value), as the analysis stores them."""
    p_value = _result_from_fit(fit, systems, "none").p_value
    return np.where(np.isfinite(p_value), (p_value < ALPHA).astype(int), -1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-design", type=int, default=8, help="simulated studies per design and task")
    parser.add_argument("--out", help="CSV with one row per study")
    args = parser.parse_args()
    clmm.set_accelerator(True)
    base = load_clmm_at(BASE_COMMIT)
    base.set_accelerator(True)
    versions = {
        "base": lambda judgements: with_start_fields(base.fit(judgements, "paper", judgements.systems[0])),
        "single": lambda judgements: clmm.fit(judgements, "paper", judgements.systems[0], starts="single"),
        "codings": lambda judgements: clmm.fit(judgements, "paper", judgements.systems[0], starts="codings"),
    }
    print(f"base: simdesign/clmm at {BASE_COMMIT}; {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.2f} at start", flush=True)
    models = {task: load_model(task) for task in ("coherence", "repetition")}
    rows = []
    with threadpool_limits(limits=1):
        warm = models["coherence"].sample(BlockDesign(2, 5, 3), np.random.default_rng(0))
        for fit in versions.values():
            fit(warm)  # compile / warm up
        for figure, designs in FIGURE_DESIGNS.items():
            for t, task in enumerate(models):
                for d, design in enumerate(designs):
                    for trial in range(args.per_design):
                        judgements = figure_study(models[task], t, d, design, trial)
                        row = {"figure": figure, "task": task, "design": "B{}-D{}-A{}".format(*design), "trial": trial}
                        fits = {}
                        for name, fit in versions.items():
                            wall, cpu, fits[name] = timed(fit, judgements)
                            row.update({f"{name}_wall": wall, f"{name}_cpu": cpu,
                                        f"{name}_loglik": fits[name].loglik, f"{name}_status": fits[name].status})
                        made = {name: decisions(result, judgements.systems) for name, result in fits.items()}
                        row.update({"starts_tried": fits["codings"].starts_tried,
                                    "start_kept": fits["codings"].start_kept,
                                    "start_gain": fits["codings"].start_gain,
                                    "single_equals_base": bool(
                                        np.array_equal(fits["single"].effects, fits["base"].effects)
                                        and fits["single"].loglik == fits["base"].loglik),
                                    "decisions_changed": int((made["codings"] != made["base"]).sum()),
                                    "max_effect_change": float(np.max(np.abs(fits["codings"].effects
                                                                             - fits["base"].effects)))})
                        rows.append(row)
                    done = pd.DataFrame([r for r in rows if r["design"] == "B{}-D{}-A{}".format(*design)
                                         and r["task"] == task and r["figure"] == figure])
                    print(f"{figure} {task:10s} {done['design'].iloc[0]:12s} base {done['base_cpu'].mean():.3f} s CPU | "
                          f"codings {done['codings_cpu'].mean():.3f} s CPU | rule applied "
                          f"{(done['starts_tried'] > 1).sum()}/{len(done)} | other optimum kept "
                          f"{(done['start_kept'] != 'default').sum()} | decisions changed "
                          f"{done['decisions_changed'].sum()}", flush=True)
    table = pd.DataFrame(rows)
    if args.out:
        table.to_csv(args.out, index=False)
    n = len(table)
    mean = {name: (table[f"{name}_wall"].mean(), table[f"{name}_cpu"].mean()) for name in versions}
    applied = table["starts_tried"] > 1
    kept = table["start_kept"] != "default"
    print(f"\n{n} simulated studies ({args.per_design} per design and task, {len(FIGURE_DESIGNS['Figure 5'])} + "
          f"{len(FIGURE_DESIGNS['Figure 7'])} designs, 2 tasks)")
    for name in versions:
        print(f"  {name:8s} mean {mean[name][0]:.4f} s wall, {mean[name][1]:.4f} s CPU per fit")
    print(f"  cost codings / base: {mean['codings'][0] / mean['base'][0]:.2f}x wall, "
          f"{mean['codings'][1] / mean['base'][1]:.2f}x CPU;  single / base: "
          f"{mean['single'][1] / mean['base'][1]:.2f}x CPU")
    print(f"  single identical to base: {table['single_equals_base'].sum()}/{n}")
    print(f"  statuses base: {table['base_status'].value_counts().to_dict()}; "
          f"codings: {table['codings_status'].value_counts().to_dict()}")
    print(f"  rule applied (singular or not converged): {applied.sum()}/{n}; another coding's optimum kept: "
          f"{kept.sum()}/{n} (log-likelihood gain > 1e-4 in {(table['start_gain'] > 1e-4).sum()}, "
          f"max {table['start_gain'].max():.4g}; largest effect change {table['max_effect_change'].max():.3g})")
    changed = table["decisions_changed"] > 0
    print(f"  studies with a changed decision (p < {ALPHA}, 10 pairs each): {changed.sum()}/{n}; "
          f"pairs changed {table['decisions_changed'].sum()}/{10 * n}; status changed "
          f"{(table['base_status'] != table['codings_status']).sum()}/{n}")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
