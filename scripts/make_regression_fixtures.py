"""Write the regression fixtures of tests/test_regression.py: summaries and a plan as the code gives them now.

    .venv/bin/python scripts/make_regression_fixtures.py

Run it only when a change is *meant* to alter results (and say so in the commit): the test exists so
that a restructuring of the code that should change nothing is seen to change nothing. The cases are
committed configs at small trial counts (the classical tests, the native mixed model, a pool design
with wilcoxon_doc under an effect), the other study kinds (a Rank config, a replication, a panel study
with its tests, a metric validation, a sweep) and a small plan.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import tempfile  # noqa: E402

from test_regression import FIXTURES, PLAN_COLUMNS, plan_case, study_cases, summary_cases  # noqa: E402


def main() -> int:
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for name, summary in summary_cases().items():
        summary.to_csv(FIXTURES / f"{name}.csv", index=False)
        print(f"wrote {FIXTURES / f'{name}.csv'} ({len(summary)} rows)")
    with tempfile.TemporaryDirectory(prefix="simdesign-regression-") as directory:
        for name, summary in study_cases(Path(directory)).items():
            summary.to_csv(FIXTURES / f"{name}.csv", index=False)
            print(f"wrote {FIXTURES / f'{name}.csv'} ({len(summary)} rows)")
    table, recommendation = plan_case()
    table[list(PLAN_COLUMNS)].to_csv(FIXTURES / "plan.csv", index=False)
    (FIXTURES / "plan_recommendation.txt").write_text(recommendation + "\n")
    print(f"wrote {FIXTURES / 'plan.csv'} and the recommendation: {recommendation}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
