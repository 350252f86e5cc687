"""Dump the classical tests' result frames of many configs, or compare two dumps bit for bit.

A speed-up of the classical tests must leave every stored value unchanged. ``dump`` runs, through
the engine's own chunk function (``plan_chunks`` + ``simulate_chunk``, as ``simdesign run`` does),
the classical tests of every config under ``configs/`` that has any (mixed-model tests dropped),
plus a config of its own that covers every classical test and option (ART's resamples, exact
enumeration and ``exact: never``, bootstrap thresholds, block-level tests, the rank method) on
block, pool and overlap designs with a fitted effect, and writes each config's result frame
(``fit_seconds``, a timing, dropped) to a pickle. ``compare`` checks two such dumps for exact
equality: same rows, same columns and dtypes, every float equal bit for bit (NaN where NaN).

    PYTHONPATH=<checkout> python scripts/dump_classical_results.py dump OUT_DIR [--trials 30]
    python scripts/dump_classical_results.py compare DIR_A DIR_B

Run ``dump`` once with each version's package on PYTHONPATH (e.g. a ``git archive`` of the old
revision) and then ``compare``; exit status 1 on any difference.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from simdesign.core.yamlio import load_yaml

PROJECT_ROOT = Path(__file__).resolve().parents[1]
CLASSICAL = ("ttest", "ttest_doc", "ttest_block", "art", "art_doc", "art_block", "wilcoxon_doc", "ttest_unpaired")

# Every classical test and option, on designs of each kind, with a non-zero effect (rejections and ties both occur).
BLOCK_DESIGNS = [
    {"kind": "block", "blocks": [1, 2, 5, 20, 100], "docs_per_block": [30, 15, 6, 3, 1],
     "annotators_per_block": [3, 2, 3, 1, 3]},
    {"kind": "block", "blocks": [3, 6], "docs_per_block": 2, "annotators_per_block": 1},
]
SHARED_DESIGNS = [  # no blocks: the block-level tests do not apply
    {"kind": "pool", "docs": 40, "annotators": 12, "judgements_per_output": 3},
    {"kind": "overlap", "shared_docs": 10, "unique_docs_per_annotator": [0, 3, 30], "annotators": 3},
]
UNIT_TESTS = ["ttest", "ttest_doc", "art", "art_doc", "wilcoxon_doc", "ttest_unpaired",
              {"name": "art", "resamples": 16}, {"name": "art_doc", "resamples": 64},
              {"name": "art_doc", "exact": "never", "resamples": 5000},
              {"name": "ttest_doc", "threshold": "bootstrap", "bootstrap_resamples": 200},
              {"name": "wilcoxon_doc", "threshold": "bootstrap", "bootstrap_resamples": 100},
              {"name": "ttest_unpaired", "threshold": "bootstrap", "bootstrap_resamples": 100}]
BLOCK_TESTS = ["ttest_block", "art_block", {"name": "art_block", "resamples": 5000},
               {"name": "art_block", "exact": "never", "resamples": 7}]
BASE = {"model": "coherence", "effect": "fitted", "seed": 7, "alpha": 0.05, "art_resamples": 1000}
OWN_CONFIGS = {
    "_options_block": {**BASE, "name": "options-block", "designs": BLOCK_DESIGNS, "tests": UNIT_TESTS + BLOCK_TESTS},
    "_options_shared": {**BASE, "name": "options-shared", "designs": SHARED_DESIGNS, "tests": UNIT_TESTS},
    "_options_zero": {**BASE, "name": "options-zero", "effect": "zero", "seed": 11, "designs": BLOCK_DESIGNS,
                      "tests": UNIT_TESTS + BLOCK_TESTS},
    "_rank_block": {**BASE, "name": "rank-block", "methods": ["likert", "rank"], "designs": BLOCK_DESIGNS,
                    "tests": ["ttest", "ttest_doc", "art_doc", "art_block", "wilcoxon_doc"]},
    "_rank_shared": {**BASE, "name": "rank-shared", "methods": ["likert", "rank"], "designs": SHARED_DESIGNS,
                     "tests": ["ttest", "ttest_doc", "art_doc", "wilcoxon_doc"]},
}


def classical_only(raw: dict) -> dict | None:
    """The config with its classical tests only (None if it has none); estimands and replication dropped."""
    tests = [test for test in raw.get("tests", [])
             if (test if isinstance(test, str) else test.get("name")) in CLASSICAL]
    if not tests:
        return None
    kept = {key: value for key, value in raw.items() if key not in ("estimands", "replication", "figure")}
    return {**kept, "tests": tests}


def dump(out_dir: Path, trials: int) -> None:
    from simdesign.simulation.config import parse_config
    from simdesign.simulation.engine import plan_chunks, simulate_chunk

    out_dir.mkdir(parents=True, exist_ok=True)
    raws = dict(OWN_CONFIGS)
    for path in sorted((PROJECT_ROOT / "configs").glob("*.yaml")):
        raw = load_yaml(path.read_text())
        if isinstance(raw, dict) and "designs" in raw:
            raws[path.stem] = raw
    for name, raw in raws.items():
        raw = classical_only(raw)
        if raw is None:
            continue
        try:
            config = parse_config({**raw, "trials": trials}, base_dir=PROJECT_ROOT / "configs")
        except Exception as exc:  # a config this version cannot read is reported, not fatal
            print(f"{name}: skipped ({exc})")
            continue
        frames = [simulate_chunk(config.model, config.effect, config.seed, chunk)
                  for chunk in plan_chunks(config, None, trials)]
        frame = pd.concat(frames, ignore_index=True).drop(columns=["fit_seconds"])
        frame.to_pickle(out_dir / f"{name}.pkl")
        print(f"{name}: {len(config.designs)} designs, {frame['test'].nunique()} tests, {len(frame)} rows")


def frames_equal(first: pd.DataFrame, second: pd.DataFrame) -> str:
    """'' if equal bit for bit, else what differs."""
    if list(first.columns) != list(second.columns) or len(first) != len(second):
        return f"shape/columns differ: {first.shape} {list(first.columns)} vs {second.shape} {list(second.columns)}"
    for column in first.columns:
        a, b = first[column], second[column]
        if a.dtype != b.dtype:
            return f"{column}: dtype {a.dtype} vs {b.dtype}"
        if a.dtype.kind == "f":
            same = np.asarray(a).view(np.int64) == np.asarray(b).view(np.int64)
        else:
            same = np.asarray(a.astype(object).fillna("<NA>")) == np.asarray(b.astype(object).fillna("<NA>"))
        if not np.all(same):
            return f"{column}: {int((~same).sum())} values differ, first at row {int(np.argmin(same))}"
    return ""


def compare(first_dir: Path, second_dir: Path) -> int:
    names = sorted({path.name for path in first_dir.glob("*.pkl")} | {path.name for path in second_dir.glob("*.pkl")})
    failures = 0
    for name in names:
        if not (first_dir / name).exists() or not (second_dir / name).exists():
            print(f"{name}: missing in one dump")
            failures += 1
            continue
        first, second = pd.read_pickle(first_dir / name), pd.read_pickle(second_dir / name)
        problem = frames_equal(first, second)
        failures += bool(problem)
        print(f"{name}: {problem or 'identical'} ({len(first)} rows)")
    print(f"{len(names) - failures} of {len(names)} dumps identical")
    return 1 if failures else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    dumping = sub.add_parser("dump")
    dumping.add_argument("out_dir", type=Path)
    dumping.add_argument("--trials", type=int, default=30)
    comparing = sub.add_parser("compare")
    comparing.add_argument("first", type=Path)
    comparing.add_argument("second", type=Path)
    args = parser.parse_args()
    if args.command == "dump":
        dump(args.out_dir, args.trials)
    else:
        sys.exit(compare(args.first, args.second))


if __name__ == "__main__":
    main()
