"""Test decisions of the current ``clmm_native`` against the code before issue 15, on the Figure-5/7 trials.

For every design of ``configs/paper_fig5_{coherence,repetition}.yaml`` and
``configs/paper_fig7_{coherence,repetition}.yaml`` and trials ``--first``,
``--first`` + 1, ... (``--trials`` of them), re-creates the trial's study from
its seed exactly as ``simdesign run`` does (so these are the data of the
committed figures' trials), and analyses it twice with the config's
``clmm_native`` options: with the current :func:`simdesign.clmm.fit` (through
the registry, as a run does) and with the implementation before issue 15
(``simdesign/clmm.py`` at commit d44f140, read from git history), whose fit goes through the
same contrast guard (``simdesign.analyses.mixed_native._result_from_fit``).

A (trial, pair) decision is one of: failed (status in FAILURES, never a
p-value), reject with the estimate positive, reject with it negative, keep
(p >= the config's alpha). Prints per (task, design) and overall: the share
of identical decisions, the failures of each version, the trials where only
the new code fails ("extra failures") or only the old one does, and the CPU
seconds per fit of each version (one thread per process; the machine may be
shared). Exit status 0 when the overall share is at least 99.5% and the new
code has no more failures than the old, else 1.

Finished chunks of 10 trials are kept under ``--cache`` (default
``results/compare_decisions``), so an interrupted comparison continues
where it stopped, and a larger ``--trials`` adds only the missing chunks.
The old code's decisions depend only on the trial (its data come from the
seed), so ``--old-from`` takes them (and their CPU seconds) from the chunks
of an earlier comparison instead of fitting the old code again: after a
change to the current code, compare it in a fresh ``--cache`` in about a
fifth of the time.

Usage::

    PYTHONPATH=. .venv/bin/python scripts/compare_decisions.py [--trials 200] [--jobs 2] [--only fig5_coherence]
        [--cache DIR] [--old-from results/compare_decisions] [--failed-in RESULTS_DIR ...]
"""
from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"

import argparse  # noqa: E402
import functools  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from joblib import Parallel, delayed  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = Path(__file__).resolve().parent
CONFIGS = [ROOT / "configs" / f"paper_{figure}_{task}.yaml"
           for figure in ("fig5", "fig7") for task in ("coherence", "repetition")]
CHUNK = 10
TARGET_IDENTICAL = 0.995


@functools.lru_cache(maxsize=None)
def _config(path: str):
    from simdesign.simulation.config import load_config

    config = load_config(path)
    spec = next(s for s in config.analyses if s.name == "clmm_native")
    return config, spec


@functools.lru_cache(maxsize=1)
def _baseline():
    # loky workers do not have scripts/ on their path
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))
    from _bench_util import load_baseline

    return load_baseline()


@functools.lru_cache(maxsize=1)
def _warm_up(config_path: str) -> None:
    """One small fit with each version, so that compiling the kernels and loading the old module (once per
    process) stay out of the CPU seconds per fit."""
    from simdesign.core.designs import BlockDesign

    config, spec = _config(config_path)
    judgements = config.model.sample(BlockDesign(2, 5, 3), np.random.default_rng(0), config.effect)
    _new_result(judgements, spec)
    _old_result(judgements, spec)


def decisions(p_value, estimate, status, alpha: float) -> np.ndarray:
    """'failed', 'reject+', 'reject-' or 'keep' for each pair."""
    from simdesign.analyses.base import FAILURES

    failed = np.isin(np.asarray(status, dtype=str), list(FAILURES))
    reject = (np.asarray(p_value, dtype=float) < alpha) & ~failed
    sign = np.where(np.asarray(estimate, dtype=float) > 0, "reject+", "reject-")
    return np.where(failed, "failed", np.where(reject, sign, "keep"))


def _new_result(judgements, spec):
    from simdesign.analyses.mixed_native import clmm_native_analysis

    return clmm_native_analysis(judgements, **spec.options)


def _old_result(judgements, spec):
    from simdesign.analyses.mixed_native import _result_from_fit

    fit = _baseline().fit(judgements.to_frame(), structure=spec.options.get("structure", "paper"),
                          reference=judgements.systems[0])
    return _result_from_fit(fit, judgements.systems, spec.options.get("adjust", "none"))


def _earlier_old(old_from: Path | None, name: str) -> dict:
    """{(trial, pair): (old decision, old CPU seconds)} from an earlier comparison's chunk (empty if none)."""
    if old_from is None or not (old_from / name).exists():
        return {}
    earlier = pd.read_csv(old_from / name)
    return {(int(t), int(p)): (o, c) for t, p, o, c in
            earlier[["trial", "pair", "old", "old_cpu"]].itertuples(index=False)}


def compare_chunk(config_path: str, design_label: str, first: int, stop: int, cache: Path,
                  old_from: Path | None = None) -> Path:
    """Analyse trials [first, stop) of one design with both versions; write the rows to a CSV in ``cache``.

    With ``old_from``, the old version's decisions come from that directory's chunk of the same name
    where it has them.
    """
    from threadpoolctl import threadpool_limits

    from simdesign.core.seeds import data_rng
    from simdesign.simulation.engine import analyse

    config, spec = _config(config_path)
    _warm_up(config_path)
    design = next(d for d in config.designs if d.label == design_label)
    path = cache / f"{config.name}__{design_label}__{first:07d}-{stop:07d}.csv"
    earlier = _earlier_old(old_from, path.name)
    rows = []
    with threadpool_limits(limits=1):
        for trial in range(first, stop):
            judgements = config.model.sample(design, data_rng(config.seed, design_label, trial), config.effect)
            started = time.process_time()
            new = analyse(judgements, spec, config.seed, design_label, trial)  # as `simdesign run` does
            new_cpu = time.process_time() - started
            new_decision = decisions(new.p_value, new.estimate, new.status, config.alpha)
            if all((trial, pair) in earlier for pair in range(len(new_decision))):
                old_decision = [earlier[(trial, pair)][0] for pair in range(len(new_decision))]
                old_cpu = earlier[(trial, 0)][1]
            else:
                started = time.process_time()
                old = _old_result(judgements, spec)
                old_cpu = time.process_time() - started
                old_decision = decisions(old.p_value, old.estimate, old.status, config.alpha)
            for pair, (a, b) in enumerate(zip(new_decision, old_decision)):
                rows.append({"config": config.name, "design": design_label, "trial": trial, "pair": pair,
                             "new": a, "old": b, "new_cpu": new_cpu, "old_cpu": old_cpu})
    temporary = path.with_suffix(".tmp")
    pd.DataFrame(rows).to_csv(temporary, index=False)
    os.replace(temporary, path)  # a chunk file appears only complete
    return path


def plan(args, cache: Path) -> tuple[list[tuple], list[Path]]:
    """The chunks still to compute and the paths of every chunk of the request."""
    todo, paths = [], []
    for config_path in CONFIGS:
        if args.only and not any(word in config_path.stem for word in args.only):
            continue
        config, _ = _config(str(config_path))
        for design in config.designs:
            for first in range(args.first, args.first + args.trials, CHUNK):
                stop = min(first + CHUNK, args.first + args.trials)
                path = cache / f"{config.name}__{design.label}__{first:07d}-{stop:07d}.csv"
                paths.append(path)
                if not path.exists():
                    todo.append((str(config_path), design.label, first, stop))
    return todo, paths


def failed_trials(stores: list[Path], cache: Path) -> tuple[list[tuple], list[Path]]:
    """One-trial chunks for every trial whose clmm_native test failed in the given results stores.

    Failures are rare (about 1 trial in 200), so a sample of trials seldom holds
    one; this checks on the trials of a finished run whether the old code fails
    on the same ones.
    """
    from simdesign.analyses.base import FAILURES
    from simdesign.simulation.store import ResultsStore

    by_name = {_config(str(path))[0].name: path for path in CONFIGS}
    todo, paths = [], []
    for store_dir in stores:
        store = ResultsStore(store_dir)
        name = store.manifest()["config"]["name"]
        config, spec = _config(str(by_name[name]))
        rows = store.read_trials(designs=[d.label for d in config.designs], tests=[spec.label])
        failed = rows.loc[rows["status"].isin(list(FAILURES)), ["design", "trial"]].drop_duplicates()
        for design, trial in failed.itertuples(index=False):
            path = cache / f"{config.name}__{design}__{trial:07d}-{trial + 1:07d}.csv"
            paths.append(path)
            if not path.exists():
                todo.append((str(by_name[name]), design, int(trial), int(trial) + 1))
    return todo, paths


def report(table: pd.DataFrame) -> bool:
    """Print the comparison per (config, design) and overall; whether the targets hold."""
    table = table.assign(same=table["new"] == table["old"], new_failed=table["new"] == "failed",
                         old_failed=table["old"] == "failed")
    per_trial = table.groupby(["config", "design", "trial"], sort=False).agg(
        new_failed=("new_failed", "any"), old_failed=("old_failed", "any"),
        new_cpu=("new_cpu", "first"), old_cpu=("old_cpu", "first")).sort_index()
    lines = []
    for (config, design), part in table.groupby(["config", "design"], sort=False):
        trials = per_trial.loc[(config, design)]
        lines.append(_line(f"{config} {design}", part, trials))
    print(f"{'task / design':42s} {'trials':>6s} {'pairs':>6s} {'identical':>9s} {'differ':>6s} "
          f"{'fail old':>8s} {'fail new':>8s} {'only new':>8s} {'only old':>8s} {'CPU s/fit old':>13s} "
          f"{'new':>6s} {'ratio':>5s}")
    print("\n".join(lines))
    print(_line("all", table, per_trial))
    share = table["same"].mean()
    ok = bool(share >= TARGET_IDENTICAL and per_trial["new_failed"].sum() <= per_trial["old_failed"].sum())
    print(f"identical (trial, pair) decisions {share:.4%} (target >= {TARGET_IDENTICAL:.1%}); failed trials "
          f"old {int(per_trial['old_failed'].sum())}, new {int(per_trial['new_failed'].sum())}: "
          f"{'OK' if ok else 'FAIL'}")
    if not table["same"].all():
        changed = table.loc[~table["same"]].groupby(["old", "new"]).size()
        print("differing decisions (old -> new): " + ", ".join(f"{o} -> {n} x{k}" for (o, n), k in changed.items()))
    return ok


def _line(label: str, part: pd.DataFrame, trials: pd.DataFrame) -> str:
    only_new = int((trials["new_failed"] & ~trials["old_failed"]).sum())
    only_old = int((trials["old_failed"] & ~trials["new_failed"]).sum())
    return (f"{label:42s} {len(trials):6d} {len(part):6d} {part['same'].mean():9.4%} {int((~part['same']).sum()):6d} "
            f"{int(trials['old_failed'].sum()):8d} {int(trials['new_failed'].sum()):8d} {only_new:8d} {only_old:8d} "
            f"{trials['old_cpu'].mean():13.3f} {trials['new_cpu'].mean():6.3f} "
            f"{trials['old_cpu'].sum() / trials['new_cpu'].sum():5.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200, help="trials per design (default 200)")
    parser.add_argument("--first", type=int, default=0, help="first trial index (default 0)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--only", nargs="*", default=None,
                        help="configs whose name contains one of these words, e.g. fig5_coherence")
    parser.add_argument("--cache", type=Path, default=ROOT / "results" / "compare_decisions",
                        help="directory of finished chunks (default results/compare_decisions)")
    parser.add_argument("--old-from", type=Path, default=None,
                        help="directory of an earlier comparison's chunks: take the old code's decisions "
                             "from there instead of fitting it again")
    parser.add_argument("--failed-in", nargs="*", type=Path, default=[],
                        help="results directories of Figure-5/7 runs: also compare every trial whose "
                             "clmm_native test failed there")
    args = parser.parse_args()
    if args.trials < 1 or args.first < 0 or args.jobs < 1:
        parser.error("--trials and --jobs must be positive and --first non-negative")
    args.cache.mkdir(parents=True, exist_ok=True)
    todo, paths = plan(args, args.cache)
    if args.failed_in:
        extra_todo, extra_paths = failed_trials(args.failed_in, args.cache)
        todo += [item for item in extra_todo if item not in todo]
        paths += [path for path in extra_paths if path not in paths]
    print(f"{len(paths)} chunks of up to {CHUNK} trials, {len(todo)} to compute, {args.jobs} processes, "
          f"load average {os.getloadavg()[0]:.2f}", flush=True)
    # The workers import this file as a module (functions of __main__ would be pickled by value,
    # losing the per-process caches of the configs and the warm-up).
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SCRIPTS), os.environ.get("PYTHONPATH")]))
    sys.path.insert(0, str(SCRIPTS))
    import compare_decisions as module

    started = time.perf_counter()
    Parallel(n_jobs=args.jobs, verbose=5)(delayed(module.compare_chunk)(*item, args.cache, args.old_from)
                                         for item in todo)
    print(f"computed in {time.perf_counter() - started:.0f} s wall; load average {os.getloadavg()[0]:.2f}")
    table = pd.concat([pd.read_csv(path) for path in paths], ignore_index=True)
    # a failed trial of --failed-in may also lie in the sampled range: count it once
    table = table.drop_duplicates(["config", "design", "trial", "pair"])
    return 0 if report(table) else 1


if __name__ == "__main__":
    raise SystemExit(main())
