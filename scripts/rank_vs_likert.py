"""Type I error and power of Rank vs Likert on one grid of designs (issue 13), and its figure.

    PYTHONPATH=$PWD python scripts/rank_vs_likert.py [configs/rank_vs_likert_coherence.yaml]
        [--mixed-trials 50] [--mixed-step 10] [--jobs 2] [--results results] [--figures figures] [--title-note TEXT]

Runs the config (which must list methods [likert, rank]) twice, under ``effect: zero`` (type I
error) and under its own effect (power), into ``<results>/<name>-zero`` and ``<results>/<name>-<effect>``:
the classical tests at the config's ``trials`` per point, the tests that fit random effects (the
mixed model, seconds per fit) at ``--mixed-trials`` per point (0: none; the figure then shows what is
stored). Both are resumable (the store adds what is missing). Writes ``<figures>/<config stem>.png`` (rows: type I error, power; columns: tests;
colour: method) and ``<figures>/<config stem>.csv``, the summary rows of both runs.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd

import simdesign
from simdesign.significance import resolve_analysis
from simdesign.studies.rates.config import load_config
from simdesign.studies.rates.method_plots import plot_method_grid
from simdesign.studies.rates.store import rate_store


def rank_generator_text(model) -> str:
    """How the model generates rankings, for the title: its rank-only model, or the joint model's rank_noise."""
    rank_model = getattr(model, "rank_model", None)
    if rank_model is not None:
        return f"Rank from the rank-only fit {rank_model.name}"
    return f"rank_noise {model.rank_noise:g}"


def effect_overrides(path: Path, effect) -> dict:
    # The config's figure names power; under effect zero the figure estimand is left to the default (type1).
    return {"effect": effect, "figure": {"x": load_config(path).figure.x}}


def run_part(path: Path, effect, mixed: bool, trials: int, jobs: int, results: Path, methods=None) -> None:
    """Simulate the config's classical (or mixed-model) tests under ``effect`` at ``trials`` per point.

    ``methods``: only these of the config's methods (default all); the store keeps each (test, method) apart.
    """
    full = load_config(path, effect_overrides(path, effect))
    tests = [test for test, spec in zip(full.to_mapping()["tests"], full.analyses)
             if resolve_analysis(spec.name).random_effects == mixed]
    if not tests or trials < 1:
        return
    out_dir = results / f"{full.name}-{full.effect_label}"
    started = time.time()
    config = load_config(path, {**effect_overrides(path, effect), "tests": tests, "trials": trials,
                                **({"methods": list(methods)} if methods else {})})
    simdesign.simulate(config, out_dir=out_dir, jobs=jobs, progress=False)
    print(f"{out_dir}: {[s.label for s in config.analyses]} x {trials} trials in {time.time() - started:.0f} s",
          flush=True)


def stored_summary(path: Path, effect, results: Path) -> pd.DataFrame:
    """The summary of what is stored for ``effect`` (each test at the trials it has)."""
    full = load_config(path, effect_overrides(path, effect))
    out_dir = results / f"{full.name}-{full.effect_label}"
    # The manifest holds the last part's config; store the full one so `simdesign plot DIR` shows every test.
    rate_store(out_dir).prepare(full)
    return simdesign.load_results(out_dir, config=full).summary()


def with_reused_rows(summary: pd.DataFrame, earlier: pd.DataFrame) -> pd.DataFrame:
    """``summary`` with the earlier run's rows of every (design, test, method, effect) it has fewer trials of.

    The earlier run must be of the same config and model part (e.g. its Likert rows when only the rank
    model changed); a point simulated here with at least the earlier run's trials keeps this run's rows.
    """
    keys = ["design", "test", "method", "effect"]

    def trials_by_key(frame: pd.DataFrame) -> pd.Series:
        return frame.groupby(keys)["trials"].max()

    here, before = trials_by_key(summary), trials_by_key(earlier)
    taken = before[before > here.reindex(before.index).fillna(0)].index
    from_earlier = earlier.set_index(keys).index.isin(taken)
    replaced = summary.set_index(keys).index.isin(taken)
    if len(taken):
        print(f"reused the earlier rows of {len(taken)} (design, test, method, effect) points: "
              f"{sorted(set((test, method, effect) for _, test, method, effect in taken))}")
    return pd.concat([summary[~replaced], earlier[from_earlier]], ignore_index=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", nargs="?", default="configs/rank_vs_likert_coherence.yaml")
    parser.add_argument("--mixed-trials", type=int, default=50)
    parser.add_argument("--mixed-step", type=int, default=0, help="mixed-model trials added per pass (0: all at once)")
    parser.add_argument("--mixed-methods", nargs="+", default=None,
                        help="simulate the mixed model on these methods only (e.g. rank, when the Likert trials "
                             "are stored or given by --reuse-rows)")
    parser.add_argument("--reuse-rows", default=None,
                        help="a summary CSV of an earlier run of this config: its rows of every point this run has "
                             "fewer trials of replace this run's in the figure and its CSV (e.g. Likert rows, "
                             "which do not depend on the rank model)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--results", default="results")
    parser.add_argument("--figures", default="figures")
    parser.add_argument("--title-note", default="", help="added after rank_noise in the title, e.g. 'provisional'")
    args = parser.parse_args(argv)
    path = Path(args.config)
    effect = load_config(path).effect
    results = Path(args.results)
    # Classical tests first under both effects (minutes), then the mixed model (hours on a shared machine),
    # in passes of --mixed-step trials alternating the effects, so an interrupted run leaves both balanced.
    for value in ("zero", effect):
        run_part(path, value, False, load_config(path).trials, args.jobs, results)
    step = args.mixed_step or args.mixed_trials
    for trials in sorted({*range(step, args.mixed_trials, step), args.mixed_trials}) if step > 0 else []:
        for value in ("zero", effect):
            run_part(path, value, True, trials, args.jobs, results, args.mixed_methods)
    summary = pd.concat([stored_summary(path, value, results) for value in ("zero", effect)], ignore_index=True)
    if args.reuse_rows:
        summary = with_reused_rows(summary, pd.read_csv(args.reuse_rows))
    base = Path(args.figures) / path.stem
    base.parent.mkdir(parents=True, exist_ok=True)
    summary.to_csv(base.with_suffix(".csv"), index=False)
    config = load_config(path)
    note = f" ({args.title_note})" if args.title_note else ""
    title = (f"{config.name}: model {config.model.name}, {rank_generator_text(config.model)}{note}, "
             f"Rank vs Likert; bands: 95% Wilson intervals (trial = unit)")
    plot_method_grid(summary, ["type1", "power"], title, base, x=config.figure.x, alpha=config.alpha)
    print(f"wrote {base.with_suffix('.png')} and {base.with_suffix('.csv')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
