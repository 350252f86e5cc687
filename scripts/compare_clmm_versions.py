"""Agreement of the current ``simdesign.clmm`` with the implementation before issue 15 (commit d44f140).

The old module is read from git history (``simdesign/clmm.py`` at commit d44f140, by
``scripts/_bench_util.load_baseline``) and imported under another name, so both
run in one process on the same data. Data: every fixture in
``tests/fixtures/clmm_r`` (with the structure of its R fit) and ``--datasets``
simulated studies of the Figure 5 and Figure 7 designs (both tasks, the fitted
effects, structure ``paper``), drawn round-robin over the 34 (task, design)
cells with seeds from ``SeedSequence([2021, cell, trial])``.

Prints, per group and overall: the largest log-likelihood deficit
(old - new; must be <= 1e-6), the largest difference of a parameter away
from a boundary (thresholds, effects, and the Cholesky elements of columns
whose diagonal is above 1e-3 in both fits; must be <= 1e-4), the largest
difference of a contrast's z, the statuses that differ, and the CPU seconds
per fit of each (one thread; the machine may be shared, so see the wall and
CPU columns of scripts/bench_clmm.py for timing claims). Parameter differences
are also split by convergence: fits whose projected gradient is below 1e-4 in
both versions, and the others (the optimiser accepts up to 1e-3, which along a
flat direction leaves parameters uncertain to about 1e-3 in either version).

Usage::

    PYTHONPATH=. .venv/bin/python scripts/compare_clmm_versions.py [--datasets 200] [--numpy] [--detail] [--control]

``--numpy`` runs the new code without its compiled kernels (numba), to check
the numpy path too.
"""
from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"

import argparse  # noqa: E402
import json  # noqa: E402

from _bench_util import CLMM_FIXTURES as FIXTURES, FIGURE_DESIGNS, load_baseline, timed  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from simdesign import BlockDesign, clmm, load_model  # noqa: E402

LOGLIK_TOLERANCE = 1e-6
PARAMETER_TOLERANCE = 1e-4
TIGHT_GRADIENT = 1e-4
BOUNDARY = 1e-3  # Cholesky columns with a diagonal below this (in either fit) are not compared


def timed_fit(module, frame, structure, reference):
    _, cpu_seconds, result = timed(module.fit, frame, structure, reference)
    return result, cpu_seconds


def compare(old, new) -> dict:
    """Differences between two fits of the same data."""
    row = {"old_status": old.status, "new_status": new.status,
           "loglik_deficit": float(old.loglik - new.loglik) if np.isfinite(old.loglik) else float("nan")}
    row["max_gradient"] = float(max(old.max_gradient, new.max_gradient))
    if old.status == "error" or new.status == "error":
        row.update(parameter_diff=float("nan"), fixed_diff=float("nan"), z_diff=float("nan"))
        return row
    row["fixed_diff"] = float(max(np.abs(old.thresholds - new.thresholds).max(),
                                  np.abs(old.effects - new.effects).max()))
    diffs = [row["fixed_diff"]]
    for name in old.terms:
        a, b = old.cholesky_factors[name], new.cholesky_factors[name]
        interior = (np.diag(a) > BOUNDARY) & (np.diag(b) > BOUNDARY)
        if interior.any():
            diffs.append(np.abs(a[:, interior] - b[:, interior]).max())
    row["parameter_diff"] = float(max(diffs))
    z_old, z_new = old.contrasts()["z"].to_numpy(), new.contrasts()["z"].to_numpy()
    row["z_diff"] = float(np.nanmax(np.abs(z_old - z_new))) if np.isfinite(z_old).any() else float("nan")
    return row


def fixture_cases():
    for path in sorted(FIXTURES.glob("*__*.json")):
        reference = json.loads(path.read_text())
        yield (f"fixture {path.stem}", pd.read_csv(FIXTURES / f"{reference['dataset']}.csv"),
               reference["structure"], reference["systems"][0])


def simulated_cases(count: int):
    designs = [design for figure_designs in FIGURE_DESIGNS.values() for design in figure_designs]
    cells = [(task, design) for task in ("coherence", "repetition") for design in designs]
    models = {task: load_model(task) for task in ("coherence", "repetition")}
    for k in range(count):
        cell, trial = k % len(cells), k // len(cells)
        task, (blocks, docs, annotators) = cells[cell]
        rng = np.random.default_rng(np.random.SeedSequence([2021, cell, trial]))
        judgements = models[task].sample(BlockDesign(blocks, docs, annotators), rng, effect="fitted")
        yield (f"sim {task} B{blocks}-D{docs}-A{annotators} #{trial}", judgements.to_frame(), "paper",
               judgements.systems[0])


def summarise(label: str, table: pd.DataFrame) -> bool:
    deficit = table["loglik_deficit"].max()
    parameter = table["parameter_diff"].max()
    status_differs = int((table["old_status"] != table["new_status"]).sum())
    ok = bool((deficit <= LOGLIK_TOLERANCE or np.isnan(deficit)) and (parameter <= PARAMETER_TOLERANCE
                                                                       or np.isnan(parameter))
              and status_differs == 0)
    statuses = ", ".join(f"{k} x{v}" for k, v in table["new_status"].value_counts().items())
    # The optimiser stops once the projected gradient is below ~1e-3 (RESTART_GRADIENT): along flat
    # directions such a stop pins parameters only to ~1e-3, whichever code computes the gradient.
    tight = table[table["max_gradient"] < TIGHT_GRADIENT]
    loose = table[~(table["max_gradient"] < TIGHT_GRADIENT)]
    print(f"{label:10s} fits with max|projected gradient| < {TIGHT_GRADIENT:g} in both: n={len(tight)}, "
          f"max param diff {tight['parameter_diff'].max():.2e}; others: n={len(loose)}, "
          f"max param diff {loose['parameter_diff'].max():.2e}, max thresholds/effects diff "
          f"{loose['fixed_diff'].max():.2e}, max loglik deficit {loose['loglik_deficit'].max():+.2e}")
    print(f"{label:10s} n={len(table):4d}  max loglik deficit (old-new) {deficit:+.2e}  "
          f"max param diff {parameter:.2e}  max |z diff| {table['z_diff'].max():.2e}  "
          f"status differs {status_differs}  ({statuses})  "
          f"CPU s/fit old {table['old_cpu'].mean():.4f} new {table['new_cpu'].mean():.4f} "
          f"(ratio {table['old_cpu'].sum() / table['new_cpu'].sum():.2f})  {'OK' if ok else 'FAIL'}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=50, help="simulated Figure-5/7 data sets")
    parser.add_argument("--numpy", action="store_true", help="run the new code without numba")
    parser.add_argument("--detail", action="store_true", help="print every fit")
    parser.add_argument("--control", action="store_true",
                        help="also refit with the old code on the rows in another order (the same likelihood, "
                             "other rounding) and print old vs old-reordered: the reproducibility floor")
    args = parser.parse_args()
    accelerated = clmm.set_accelerator(not args.numpy)
    print(f"new code: {'compiled kernels (numba)' if accelerated else 'numpy'}; old code: simdesign/clmm.py at d44f140 (git history)")
    baseline = load_baseline()
    rows = []
    with threadpool_limits(limits=1):
        for group, cases in (("fixtures", fixture_cases()), ("simulated", simulated_cases(args.datasets))):
            for name, frame, structure, reference in cases:
                if not rows or rows[-1]["group"] != group:
                    timed_fit(clmm, frame, structure, reference)  # compile / warm up outside the timings
                old, old_cpu = timed_fit(baseline, frame, structure, reference)
                new, new_cpu = timed_fit(clmm, frame, structure, reference)
                row = {"group": group, "name": name, "structure": structure, **compare(old, new),
                       "old_cpu": old_cpu, "new_cpu": new_cpu}
                if args.control:
                    order = np.random.default_rng(0).permutation(len(frame))
                    reordered, _ = timed_fit(baseline, frame.iloc[order].reset_index(drop=True), structure, reference)
                    control = compare(old, reordered)
                    row["control_parameter_diff"] = control["parameter_diff"]
                    row["control_loglik_diff"] = abs(control["loglik_deficit"])
                rows.append(row)
                if args.detail:
                    print(f"  {name:45s} {structure:10s} deficit {row['loglik_deficit']:+.1e} "
                          f"param {row['parameter_diff']:.1e} fixed {row['fixed_diff']:.1e} "
                          f"grad {row['max_gradient']:.1e} {row['old_status']}/{row['new_status']} "
                          f"{old_cpu:.3f}s -> {new_cpu:.3f}s", flush=True)
    table = pd.DataFrame(rows)
    if args.control:
        for group, part in table.groupby("group", sort=False):
            print(f"{group:10s} control, old vs old on reordered rows: max param diff "
                  f"{part['control_parameter_diff'].max():.2e}, max |loglik diff| {part['control_loglik_diff'].max():.2e}; "
                  f"fits where new-vs-old exceeds {PARAMETER_TOLERANCE:g}: "
                  f"{int((part['parameter_diff'] > PARAMETER_TOLERANCE).sum())}, of which the control also does: "
                  f"{int(((part['parameter_diff'] > PARAMETER_TOLERANCE) & (part['control_parameter_diff'] > PARAMETER_TOLERANCE)).sum())}")
    ok = all([summarise(group, part) for group, part in table.groupby("group", sort=False)])
    ok = summarise("all", table) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
