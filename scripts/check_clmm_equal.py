"""Check that ``clmm_native`` fits as a baseline revision does: log-likelihoods and p-value decisions.

Issue 41 made the native ordinal mixed model faster without changing its results. This fits the same simulated
studies with this checkout and with a baseline revision (exported once to a cache directory and run in a
subprocess, so both versions run their own code and compiled kernels), with the clmm_native analysis as
simulations run it (``starts: single``; p-values of the default t with containment df and of Wald z), and
compares study by study: the log-likelihood (|difference| at most ``--tolerance``), the fit status, and
every pair's decision at alpha 0.05. Studies: both presets (coherence, repetition) on the paper's Figure-4
designs (100 documents in 1 to 100 blocks of 3 annotators), ``--per-design`` seeds each (13 by default: 208
studies per structure).

    .venv/bin/python scripts/check_clmm_equal.py [--structures intercepts,maximal] [--per-design 13]
                                                 [--baseline REV]

Exit status 1 when any study differs.
"""
from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_variable] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_clmm_study import DEFAULT_BASELINE, PROJECT_ROOT, export_revision  # noqa: E402

FIGURE_4 = list(zip([1, 2, 4, 5, 10, 20, 50, 100], [100, 50, 25, 20, 10, 5, 2, 1]))
PRESETS = ("coherence", "repetition")
ALPHA = 0.05


def fit_studies(structure: str, per_design: int) -> list[dict]:
    """Every study's log-likelihood, status, p-values and CPU seconds, with the simdesign on the path."""
    from simdesign import BlockDesign, load_model
    from simdesign.significance.mixed_native import clmm_native_analysis
    from simdesign.core.threads import single_threaded

    records = []
    with single_threaded():
        for preset in PRESETS:
            model = load_model(preset)
            for blocks, docs in FIGURE_4:
                design = BlockDesign(blocks, docs, 3)
                for k in range(per_design):
                    study = model.sample(design, np.random.default_rng(1000 * blocks + k))
                    started = time.process_time()
                    with_df = clmm_native_analysis(study, structure=structure, df="design")
                    seconds = time.process_time() - started
                    wald_z = clmm_native_analysis(study, structure=structure, df="z")
                    records.append({"study": f"{preset} B{blocks}-D{docs} seed {1000 * blocks + k}",
                                    "loglik": with_df.fit_details["loglik"], "status": with_df.fit_details["status"],
                                    "p_design": [float(p) for p in with_df.p_value],
                                    "p_z": [float(p) for p in wald_z.p_value], "seconds": seconds})
    return records


def in_process(package_root: Path, structure: str, per_design: int) -> list[dict]:
    command = [sys.executable, __file__, "--worker", structure, "--per-design", str(per_design)]
    env = {**os.environ, "PYTHONPATH": str(package_root)}
    output = subprocess.run(command, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(output.strip().splitlines()[-1])


def compare(structure: str, old: list[dict], new: list[dict], tolerance: float) -> int:
    """Print the comparison; return the number of studies that differ."""
    differing = 0
    largest = 0.0
    flips = {"p_design": 0, "p_z": 0}
    largest_dp = 0.0
    for a, b in zip(old, new):
        assert a["study"] == b["study"]
        gap = abs(a["loglik"] - b["loglik"]) if np.isfinite(a["loglik"]) or np.isfinite(b["loglik"]) else 0.0
        largest = max(largest, gap)
        flipped = 0
        for key in flips:
            pa, pb = np.array(a[key], float), np.array(b[key], float)
            changed = int(np.sum((pa < ALPHA) != (pb < ALPHA)) + np.sum(np.isnan(pa) != np.isnan(pb)))
            flips[key] += changed
            flipped += changed
            both = np.isfinite(pa) & np.isfinite(pb)
            largest_dp = max(largest_dp, float(np.max(np.abs(pa[both] - pb[both]), initial=0.0)))
        if gap > tolerance or a["status"] != b["status"] or flipped:
            differing += 1
            print(f"  differs: {a['study']}: loglik {a['loglik']:.9f} vs {b['loglik']:.9f}, status {a['status']} vs "
                  f"{b['status']}, {flipped} decision(s)")
    seconds_old = 1e3 * np.median([a["seconds"] for a in old])
    seconds_new = 1e3 * np.median([b["seconds"] for b in new])
    print(f"{structure}: {len(new)} studies; |loglik difference| at most {largest:.3g} (tolerance {tolerance:g}); "
          f"decisions at alpha {ALPHA} that differ: {flips['p_design']} (t, containment df) and {flips['p_z']} "
          f"(Wald z) "
          f"of {sum(len(b['p_z']) for b in new)} each; largest |p difference| {largest_dp:.3g}; median CPU per fit "
          f"{seconds_old:.1f} ms (baseline) vs {seconds_new:.1f} ms; studies that differ: {differing}")
    return differing


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--structures", default="intercepts,maximal")
    parser.add_argument("--per-design", type=int, default=13, help="seeds per preset and design")
    parser.add_argument("--baseline", default=DEFAULT_BASELINE, help="git revision to compare with")
    parser.add_argument("--tolerance", type=float, default=1e-6, help="largest |log-likelihood difference|")
    parser.add_argument("--worker", help=argparse.SUPPRESS)  # fit the studies with the simdesign on the path
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(fit_studies(args.worker, args.per_design)))
        return 0
    baseline = export_revision(args.baseline)
    print(f"clmm_native, this checkout against {args.baseline[:12]}; load average {os.getloadavg()[0]:.2f}")
    differing = 0
    for structure in args.structures.split(","):
        old = in_process(baseline, structure, args.per_design)
        new = in_process(PROJECT_ROOT, structure, args.per_design)
        differing += compare(structure, old, new, args.tolerance)
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
