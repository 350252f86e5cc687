"""Side-by-side comparison of ``simdesign.clmm`` with the stored ``ordinal::clmm`` fits.

For every R fixture ``tests/fixtures/clmm_r/<data set>__<structure>.json``
(written by ``scripts/r/clmm_fixtures.R``), refits the same data with the
native implementation and prints the largest differences: thresholds and
fixed effects (absolute), log-likelihood (native minus R; positive means the
native optimum is higher), random-effect SDs (relative, absolute below 0.05),
pairwise Wald z (relative), the fit statuses and the seconds each took.

``--write-native-parameters`` also stores the native optima in
``native_parameters.json``, at which ``scripts/r/clmm_fixtures.R
--evaluate-native`` evaluates ordinal's own Laplace objective (a check of the
likelihood that does not depend on either optimiser).

Usage::

    .venv/bin/python scripts/compare_clmm.py [--detail] [--write-native-parameters]
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from _bench_util import CLMM_FIXTURES as FIXTURES  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from simdesign import clmm  # noqa: E402
from simdesign.significance.base import relative_cholesky_is_singular, wald_contrasts  # noqa: E402

# Below this an SD is compared absolutely (relative differences of near-zero boundary SDs mean nothing).
SD_ABSOLUTE_FLOOR = 0.05


def r_status(reference: dict) -> str:
    if reference["optimizer_convergence"] != 0:
        return "not_converged"
    if not reference.get("fixed_effects_cov"):
        return "error (vcov: Hessian not PD)"
    covs = [np.asarray(reference["random_effects_cov"][name], float) for name in reference["random_effects_cov"]]
    return "singular" if any(relative_cholesky_is_singular(np.atleast_2d(c)) for c in covs) else "ok"


def agreement(result: clmm.ClmmResult, reference: dict) -> dict:
    """Largest differences between a native fit and an R fixture (the quantities the tests bound)."""
    systems = reference["systems"]
    if result.systems != systems:
        raise ValueError(f"system order differs: native {result.systems}, R {systems}")
    r_beta = np.array([reference["fixed_effects"][s] for s in systems])
    # R's vcov fails when its Hessian is not positive definite: then no z to compare.
    r_cov = (np.atleast_2d(np.asarray(reference["fixed_effects_cov"], float)) if reference.get("fixed_effects_cov")
             else np.full((len(systems) - 1, len(systems) - 1), np.nan))
    native_beta = result.effects
    sd_diffs = []
    for name in result.terms:
        r_sd = np.atleast_1d(np.asarray(reference["random_effects_sd"][name], float))
        sd = result.random_effects_sd[name]
        scale = np.maximum(r_sd, SD_ABSOLUTE_FLOOR)
        sd_diffs.append(np.abs(sd - r_sd) / scale)
    r_est, r_se, _ = wald_contrasts(r_beta, r_cov)
    table = result.contrasts()
    native_z = table["z"].to_numpy()
    r_z = r_est / r_se
    return {
        "thresholds": float(np.abs(result.thresholds - np.asarray(reference["thresholds"])).max()),
        "fixed_effects": float(np.abs(native_beta - r_beta).max()),
        "loglik": float(result.loglik - reference["loglik"]),
        "sd_relative": float(np.concatenate(sd_diffs).max()),
        "z_relative": float(np.nanmax(np.abs(native_z - r_z) / np.maximum(np.abs(r_z), 1.0)))
        if np.isfinite(r_z).any() else float("nan"),
        "se_relative": float(np.nanmax(np.abs(table["se"].to_numpy() / r_se - 1.0)))
        if np.isfinite(r_se).any() else float("nan"),
    }


def parameters_record(fit_name: str, reference: dict, result: clmm.ClmmResult) -> dict:
    """The native optimum in ordinal's parameterisation (Cholesky lower elements column-major)."""
    cholesky = {}
    for name, factor in result.cholesky_factors.items():
        cols, rows = np.triu_indices(factor.shape[0], 1)
        cholesky[name] = {"diagonal": np.diag(factor).tolist(), "lower": factor[rows, cols].tolist()}
    return {"fit": fit_name, "dataset": reference["dataset"], "structure": reference["structure"],
            "systems": result.systems, "thresholds": result.thresholds.tolist(),
            "effects": result.effects[1:].tolist(), "cholesky": cholesky, "loglik": result.loglik}


def fixture_paths() -> list[Path]:
    return sorted(FIXTURES.glob("*__*.json"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--detail", action="store_true", help="also print every parameter side by side")
    parser.add_argument("--write-native-parameters", action="store_true",
                        help=f"write the native optima to {FIXTURES.name}/native_parameters.json")
    args = parser.parse_args()
    rows, native_parameters = [], []
    for path in fixture_paths():
        reference = json.loads(path.read_text())
        frame = pd.read_csv(FIXTURES / f"{reference['dataset']}.csv")
        result = clmm.fit(frame, reference["structure"], reference["systems"][0])
        diff = agreement(result, reference)
        native_parameters.append(parameters_record(path.stem, reference, result))
        rows.append({"fit": path.stem, "n": reference["n_judgements"], **diff,
                     "status_native": result.status, "status_R": r_status(reference),
                     "loglik_native": result.loglik, "loglik_R": reference["loglik"],
                     "sec_native": result.seconds, "sec_R": reference["seconds"]})
        if args.detail:
            print(f"\n== {path.stem}")
            side = pd.DataFrame({"native": np.concatenate([result.thresholds, result.effects[1:]]),
                                 "R": np.concatenate([reference["thresholds"],
                                                      [reference["fixed_effects"][s] for s in reference["systems"][1:]]])},
                                index=[f"theta{i + 1}" for i in range(len(result.thresholds))] + reference["systems"][1:])
            for name in result.terms:
                for k, (a, b) in enumerate(zip(result.random_effects_sd[name],
                                               np.atleast_1d(reference["random_effects_sd"][name]))):
                    side.loc[f"sd[{name}][{k}]"] = [a, b]
            print(side.to_string(float_format=lambda v: f"{v:.5f}"))
    if args.write_native_parameters:
        (FIXTURES / "native_parameters.json").write_text(json.dumps(native_parameters, indent=1) + "\n")
    table = pd.DataFrame(rows)
    pd.set_option("display.width", 250)
    print(table.to_string(index=False, float_format=lambda v: f"{v:.2g}" if abs(v) < 0.1 else f"{v:.4f}"))
    print("\nTolerances: thresholds/fixed effects 0.005 (abs), loglik 0.01, SDs 2% (abs below "
          f"{SD_ABSOLUTE_FLOOR}), pairwise z 1% (abs below |z| = 1).")


if __name__ == "__main__":
    main()
