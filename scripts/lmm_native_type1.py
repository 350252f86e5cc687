"""The type I table of ``lmm_native`` on the Figure-4 grid (docs/model.md, "The linear mixed model").

Reads the tables that ``simdesign plot`` writes for ``configs/lmm_native_fig4_coherence.yaml`` (random
intercepts) and ``configs/lmm_native_fig4_maximal_coherence.yaml`` (the paper structure, maximal here), and
prints one markdown row per design: type I error +- its Monte-Carlo standard error for every test, with the
planner's verdict against 0.075 (``default_max_type1(0.05)``; ``level_verdict`` on the 95% interval) where it
does not hold, and the share of failed fits where there are any.

    simdesign run configs/lmm_native_fig4_coherence.yaml --out results/lmm-native-fig4-coherence
    simdesign plot results/lmm-native-fig4-coherence --out figures/lmm_native_fig4_coherence
    (the same for lmm_native_fig4_maximal_coherence)
    python scripts/lmm_native_type1.py [--figures figures]
"""
from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from simdesign.stats.montecarlo import default_max_type1, level_verdict

ROOT = Path(__file__).resolve().parents[1]
MAX_TYPE1 = default_max_type1(0.05)
TABLES = ("lmm_native_fig4_coherence.csv", "lmm_native_fig4_maximal_coherence.csv")


def cell(row) -> str:
    """'rate +- mcse' with the verdict where it does not hold, and the failed share of the tests."""
    if row.n_tests == row.n_failed:
        return "all fits failed"
    text = f"{row.rate:.3f} ± {row.mcse:.3f}"
    verdict = level_verdict(row.ci_low, row.ci_high, MAX_TYPE1)
    if verdict != "holds":
        text += f" ({verdict})"
    if row.n_failed:
        text += f" [{row.n_failed / row.n_tests:.1%} failed]"
    return text


def table(frame: pd.DataFrame) -> str:
    tests = list(dict.fromkeys(frame["test"]))
    lines = ["| annotators | " + " | ".join(f"`{test}`" for test in tests) + " |",
             "|---|" + "---|" * len(tests)]
    for annotators, rows in frame.groupby("annotators", sort=True):
        by_test = {row.test: row for row in rows.itertuples()}
        trials = int(rows["trials"].iloc[0])
        lines.append(f"| {annotators} ({trials}) | " + " | ".join(cell(by_test[t]) if t in by_test else ""
                                                             for t in tests) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--figures", type=Path, default=ROOT / "figures")
    args = parser.parse_args(argv)
    for name in TABLES:
        path = args.figures / name
        if not path.exists():
            print(f"{path}: not found (run and plot its config first)")
            continue
        frame = pd.read_csv(path)
        print(f"{name} (type I error ± MCSE at alpha 0.05, trials in brackets):\n")
        print(table(frame[frame["estimand"] == "type1"]) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
