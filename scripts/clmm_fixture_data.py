"""Write the data sets behind the R reference fits of ``simdesign.clmm``.

Writes, under ``tests/fixtures/clmm_r/``, one CSV per data set (columns
``annotator, document, system, score``) and ``manifest.json``, the list of
(data set, structure) fits that ``scripts/r/clmm_fixtures.R`` runs with
``ordinal::clmm``, in priority order (the paper's data first, the slow R
maximal fits of the paper's 1500 judgements last).

Data sets: the paper's Likert judgements for both tasks (Steen & Markert,
2021, EACL; copied with only the four model columns), and small simulated
studies (300-600 judgements, to keep R's maximal fits to about a minute)
from both presets in nested, crossed and block designs.

Usage::

    .venv/bin/python scripts/clmm_fixture_data.py [--shared ../shared]
"""
from __future__ import annotations

import argparse
import os
import json
from pathlib import Path

from _bench_util import CLMM_FIXTURES as FIXTURES
import numpy as np
import pandas as pd

from simdesign import BlockDesign, load_model

REFERENCE = "__REFERENCE__"

# (preset, shape, design, seed). Sizes keep R's maximal fits short (400-450 judgements).
SIMULATED = [
    ("coherence", "nested", BlockDesign(blocks=20, docs_per_block=4, annotators_per_block=1), 11),
    ("coherence", "crossed", BlockDesign(blocks=1, docs_per_block=30, annotators_per_block=3), 12),
    ("coherence", "block", BlockDesign(blocks=6, docs_per_block=5, annotators_per_block=3), 13),
    ("repetition", "nested", BlockDesign(blocks=20, docs_per_block=4, annotators_per_block=1), 21),
    ("repetition", "crossed", BlockDesign(blocks=1, docs_per_block=30, annotators_per_block=3), 22),
    ("repetition", "block", BlockDesign(blocks=6, docs_per_block=5, annotators_per_block=3), 23),
]


def system_order(systems, reference: str) -> list[str]:
    """The order simdesign.clmm uses: the reference, then the others in Python's sorted order."""
    return [reference] + sorted(s for s in set(systems) if s != reference)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=Path("/work/shared"),
                        help="the shared directory holding data/steen-markert-2021")
    args = parser.parse_args()
    FIXTURES.mkdir(parents=True, exist_ok=True)
    datasets, jobs_fast, jobs_slow = [], [], []

    for task in ("coherence", "repetition"):
        source = args.shared / "data" / "steen-markert-2021" / "judgements" / f"likert_{task}_cnn_dm.csv"
        frame = pd.read_csv(source)[["annotator", "document", "system", "score"]]
        name = f"paper_{task}"
        # The paper's data are not ours to redistribute (no licence): link to ../shared, which sits
        # beside every checkout (CI included), instead of copying it.
        link = FIXTURES / f"{name}.csv"
        link.unlink(missing_ok=True)
        link.symlink_to(os.path.relpath(source.resolve(), FIXTURES.resolve()))
        datasets.append({"name": name, "csv": f"{name}.csv", "reference": REFERENCE,
                         "systems": system_order(frame["system"], REFERENCE), "shape": "block",
                         "source": "Steen & Markert (2021), EACL: likert_" + task + "_cnn_dm.csv"})
        jobs_fast.append([name, "intercepts"])
        jobs_slow.append([name, "maximal"])

    for preset, shape, design, seed in SIMULATED:
        model = load_model(preset)
        frame = model.sample(design, np.random.default_rng(seed), effect="fitted").to_frame()
        frame = frame[["annotator", "document", "system", "score"]]
        name = f"sim_{preset}_{shape}"
        frame.to_csv(FIXTURES / f"{name}.csv", index=False)
        datasets.append({"name": name, "csv": f"{name}.csv", "reference": REFERENCE,
                         "systems": system_order(frame["system"], REFERENCE), "shape": shape,
                         "source": f"load_model({preset!r}).sample({design.label}, default_rng({seed}), "
                                   "effect='fitted')"})
        jobs_fast.append([name, "intercepts"])
        # Nested: the paper's structure drops the document term (maximal would be barely identified).
        jobs_fast.append([name, "paper" if shape == "nested" else "maximal"])

    # The paper's coherence maximal fit is the most important check, so it runs before the simulated ones.
    jobs = jobs_fast[:2] + jobs_slow[:1] + jobs_fast[2:] + jobs_slow[1:]
    manifest = {"datasets": datasets, "fits": jobs}
    (FIXTURES / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"wrote {len(datasets)} data sets and {len(jobs)} fits to {FIXTURES}")


if __name__ == "__main__":
    main()
