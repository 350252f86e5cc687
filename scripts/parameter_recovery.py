"""Parameter recovery of the native fitter: simulate from a preset, refit, repeat.

    python scripts/parameter_recovery.py --model coherence --rounds 200 --structure paper --jobs 2 --out recovery.csv
    # a nested pilot (60 annotators x 5 documents of their own), truth with a document intercept only:
    python scripts/parameter_recovery.py --blocks 60 --annotators-per-block 1 --document intercept \
        --structure auto --rounds 100 --jobs 2

Prints, per parameter, the truth, the mean estimate, its Monte-Carlo standard
error, the bias and the coverage of the 95% Wald interval (thresholds and
effects), on the paper's design (20 blocks x 5 documents x 3 annotators)
unless --blocks/--docs-per-block/--annotators-per-block say otherwise.
With ``--document intercept`` the truth keeps only the model's document
intercept variance (no document slopes): the model a nested pilot can
identify, so its document SD can be checked.
"""
from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np
import pandas as pd

from simdesign import BlockDesign, load_model
from simdesign.realdata.fit import parameter_recovery


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="coherence")
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--structure", default="paper")
    parser.add_argument("--document", choices=["model", "intercept"], default="model",
                        help="the truth's document covariance: the model's, or its intercept variance only")
    parser.add_argument("--blocks", type=int, default=20)
    parser.add_argument("--docs-per-block", type=int, default=5)
    parser.add_argument("--annotators-per-block", type=int, default=3)
    parser.add_argument("--seed", type=int, default=2021)
    parser.add_argument("--jobs", type=int, default=-1, help="joblib workers (results do not depend on it)")
    parser.add_argument("--out", help="write the table as CSV")
    args = parser.parse_args()
    design = BlockDesign(args.blocks, args.docs_per_block, args.annotators_per_block)
    started = time.perf_counter()
    model = load_model(args.model)
    if args.document == "intercept":
        document_cov = np.zeros_like(model.document_cov)
        document_cov[0, 0] = model.document_cov[0, 0]
        model = dataclasses.replace(model, document_cov=document_cov)
    table = parameter_recovery(model, design, args.rounds, args.seed,
                               structure=args.structure, jobs=args.jobs)
    seconds = time.perf_counter() - started
    with pd.option_context("display.width", 160):
        print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print(f"{args.rounds} rounds of {design.label}, structure {args.structure}, document truth {args.document}: "
          f"{seconds:.0f} s; "
          f"failed rounds: {table.attrs['failures'] or 'none'}")
    if args.out:
        table.to_csv(args.out, index=False)


if __name__ == "__main__":
    main()
