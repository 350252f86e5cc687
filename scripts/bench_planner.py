"""Adaptive versus exhaustive evaluation of a plan: trials used and decisions reached.

Runs the plan adaptively (screening, then more trials only where a decision
is still open), then evaluates every candidate's power and type I error at
max_trials in one look, and compares the recommendations, the decisions and
the trial counts. Both runs share one results directory: trial t of a design
has the same seed in both, so the exhaustive run reuses the adaptive run's
trials (its "new studies" count shows what it added).

    .venv/bin/python scripts/bench_planner.py configs/plan_example.yaml --jobs 2
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from simdesign.planning.plan_report import plan_table
from simdesign.planning.plan_search import run_plan
from simdesign.planning.planner import load_plan


def describe(result) -> str:
    best = result.recommended
    if best is None:
        return "no recommendation"
    return (f"{best.candidate.design.label} with {best.candidate.test.label}, cost {best.candidate.total_cost:.2f}, "
            f"power {best.power:.3f} [{best.ci_low:.3f}, {best.ci_high:.3f}]")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config", nargs="?", default="configs/plan_example.yaml")
    parser.add_argument("--out", default=None, help="results directory (default results/bench_<plan name>)")
    parser.add_argument("--max-trials", type=int, help="override max_trials (the exhaustive run costs candidates x this)")
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args()
    overrides = {"max_trials": args.max_trials} if args.max_trials else {}
    config = load_plan(args.config, overrides)
    out = Path(args.out or f"results/bench_{config.name}")

    started = time.perf_counter()
    adaptive = run_plan(config, out, jobs=args.jobs)
    adaptive_seconds = time.perf_counter() - started
    started = time.perf_counter()
    exhaustive = run_plan(config, out, jobs=args.jobs, exhaustive=True)
    exhaustive_seconds = time.perf_counter() - started

    simulated = sum(1 for c in config.candidates if not c.excluded)
    print(f"plan {config.name}: {simulated} simulated candidates (design x test), "
          f"screen {config.screen_trials}, max {config.max_trials} trials, type I check "
          f"{'off' if config.max_type1 is None else f'<= {config.max_type1:g}'}")
    print(f"adaptive:   {adaptive.adaptive_trials:>9,} candidate-trials, {adaptive.adaptive_studies:>9,} studies, "
          f"{len(adaptive.stages)} stages, {adaptive_seconds:6.1f} s (new studies {adaptive.new_studies:,})")
    print(f"exhaustive: {exhaustive.adaptive_trials:>9,} candidate-trials, {exhaustive.adaptive_studies:>9,} studies, "
          f"1 stage,  {exhaustive_seconds:6.1f} s (new studies {exhaustive.new_studies:,}, the rest reused)")
    print(f"adaptive uses {adaptive.adaptive_trials / exhaustive.adaptive_trials:.1%} of the exhaustive trials")
    print(f"recommendation, adaptive:   {describe(adaptive)}")
    print(f"recommendation, exhaustive: {describe(exhaustive)}")
    a = plan_table(adaptive).set_index(["design", "test"])
    e = plan_table(exhaustive).set_index(["design", "test"])
    decided = {"pass", "fail", "liberal", "recommended", "best", "worse"}
    both = a.index[a["decision"].isin(decided) & e.loc[a.index, "decision"].isin(decided)]
    same = (a.loc[both, "decision"].replace({"recommended": "pass", "best": "pass"})
            == e.loc[both, "decision"].replace({"recommended": "pass", "best": "pass"}))
    print(f"candidates decided by both: {len(both)}; same decision: {int(same.sum())}")
    for key in both[~same.to_numpy()]:
        print(f"  differs: {key}: adaptive {a.loc[key, 'decision']} (power {a.loc[key, 'power']:.3f}, "
              f"{a.loc[key, 'trials']} trials), exhaustive {e.loc[key, 'decision']} (power {e.loc[key, 'power']:.3f})")
    print(f"exhaustive decisions: {e['decision'].value_counts().to_dict()}")
    print(f"adaptive decisions:   {a['decision'].value_counts().to_dict()}")


if __name__ == "__main__":
    main()
