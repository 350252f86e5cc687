"""Kenward-Roger's adjusted covariance for ``lmer`` (``df: kr``): simdesign's computation through the random
effects' design against ``pbkrtest::vcovAdj`` on the same fit, timed in the same invocation.

    .venv/bin/python scripts/bench_kenward_roger.py [--blocks 1 2 5] [--repeats 1] [--seed 2021]

One simulated study per design of the Figure-4 grid (coherence, 100 documents, 3 crossed annotators per block,
5 systems: 1,500 judgements), the maximal model fitted once by lme4 (REML); each computation is timed on that
fit, and the largest relative difference of the covariances and of the ten pair contrasts' df is printed with
the ratio of the times. Needs R with lme4 and pbkrtest (Debian: r-cran-lme4, r-cran-pbkrtest).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simdesign import BlockDesign, load_model  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, nargs="+", default=[1, 2, 5])
    parser.add_argument("--repeats", type=int, default=1, help="timings per computation (the minimum is shown)")
    parser.add_argument("--seed", type=int, default=2021)
    args = parser.parse_args()

    from simdesign.significance.mixed_r import _pair_contrast_rows, formula_for
    from simdesign.significance.rsession import kenward_roger_available, session

    ok, message = kenward_roger_available()
    if not ok:
        raise SystemExit(message)
    import rpy2.robjects as robjects

    r = session()
    fit_lmer = robjects.r("function(f, d) suppressMessages(lme4::lmer(stats::as.formula(f), data = d, REML = TRUE))")
    pbkrtest = robjects.r("pbkrtest::vcovAdj")
    compare = robjects.r("""function(ours, theirs, fit, rows) c(
        max(abs(as.matrix(ours) - as.matrix(theirs))) / max(abs(as.matrix(theirs))),
        max(abs(apply(rows, 1, function(L) pbkrtest::Lb_ddf(matrix(L, 1), vcov(fit), ours)) /
                apply(rows, 1, function(L) pbkrtest::Lb_ddf(matrix(L, 1), vcov(fit), theirs)) - 1)))""")
    model = load_model("coherence")
    print(f"{'design':<18} {'judgements':>10} {'simdesign s':>12} {'pbkrtest s':>11} {'ratio':>7} "
          f"{'rel. diff vcov':>15} {'rel. diff df':>13}")
    for blocks in args.blocks:
        design = BlockDesign(blocks, 100 // blocks, 3)
        study = model.sample(design, np.random.default_rng([args.seed, blocks]))
        with r.lock:
            fit = fit_lmer(formula_for(study, "maximal"), r.data_frame(study, ordinal=False))
            times = {}
            for name, function in (("ours", r.kenward_roger_vcov), ("theirs", pbkrtest)):
                best = float("inf")
                for _ in range(args.repeats):
                    started = time.perf_counter()
                    result = function(fit)
                    best = min(best, time.perf_counter() - started)
                times[name] = (best, result)
            vcov_diff, df_diff = compare(times["ours"][1], times["theirs"][1], fit,
                                         r.matrix(_pair_contrast_rows(study.n_systems)))
        ours, theirs = times["ours"][0], times["theirs"][0]
        print(f"{design.label:<18} {study.scores.size:>10} {ours:>12.2f} {theirs:>11.2f} {theirs / ours:>6.1f}x "
              f"{vcov_diff:>15.1e} {df_diff:>13.1e}")


if __name__ == "__main__":
    main()
