"""CPU seconds per ``clmm_native`` fit, this checkout against a git revision, and whether the fits agree bit for bit.

For changes to the mixed model's kernels or glue that must not change a fit. The data sets are made
once, by this checkout, and both versions fit the same ones:

- the Figure-5/7 designs (both tasks, the fitted effects, structure ``paper``; ``--per-design``
  studies each, seeds as in ``scripts/bench_figures.py``), split into crossed designs (annotator and
  document terms: random-effects dimensions (5, 5)) and nested ones (the annotator term only), each
  study fitted as the revision's ``clmm_native`` analysis fits it (its preparation included);
- the paper's two Likert data sets (Steen & Markert 2021; ``tests/fixtures/clmm_r``), structures
  ``maximal`` and ``intercepts``, each fitted ``--paper-repeats`` times.

Each version runs in its own process, one BLAS thread: this checkout as it is, the baseline as its
``simdesign`` package exported with ``git archive`` into a folder under the system's temp directory
(kept, so that its numba cache survives between runs). The two alternate for ``--rounds`` rounds; a
group's time is the smallest over the rounds of its mean CPU seconds per fit, after one untimed fit
per group (imports and compilation are not timed). The speed-up is baseline / current. The fits of
the first round are compared bit for bit (status, log-likelihood, thresholds, effects and their
covariance, Cholesky factors), once per distinct data set, and their mean number of Laplace
evaluations is printed beside (a change that drops repeated evaluations leaves the fits as they were).
The load average is printed: on a shared machine the speed-up is the number to read.

Usage::

    PYTHONPATH=. .venv/bin/python scripts/bench_clmm_revisions.py [--baseline 43b2ebf] [--per-design 1] [--rounds 3]
"""
from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"

import argparse  # noqa: E402
import pickle  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from _bench_util import CLMM_FIXTURES as FIXTURES, FIGURE_DESIGNS  # noqa: E402
from bench_type1 import PROJECT_ROOT, export_revision  # noqa: E402


def make_datasets(per_design: int, paper_repeats: int) -> dict:
    """Group name -> list of (a table or a simulated study, structure, reference), made by this checkout."""
    from bench_figures import figure_study
    from simdesign import load_model

    models = {task: load_model(task) for task in ("coherence", "repetition")}
    groups = {"figures, crossed": [], "figures, nested": [], "paper data, maximal": [],
              "paper data, intercepts": []}
    for designs in FIGURE_DESIGNS.values():
        for t, task in enumerate(models):
            for d, design in enumerate(designs):
                for trial in range(per_design):
                    judgements = figure_study(models[task], t, d, design, trial)
                    nested = design[2] == 1  # one annotator per block: structure "paper" drops the document term
                    groups["figures, nested" if nested else "figures, crossed"].append(
                        (judgements, "paper", judgements.systems[0]))
    for name in ("paper_coherence", "paper_repetition"):
        frame = pd.read_csv(FIXTURES / f"{name}.csv")
        for structure in ("maximal", "intercepts"):
            groups[f"paper data, {structure}"] += [(frame, structure, None)] * paper_repeats
    return groups


def fingerprint(result) -> tuple:
    """Everything a fit reports that a decision or a table could read (None where a revision lacks it)."""
    cholesky = getattr(result, "cholesky_factors", None)
    return (result.status, result.loglik, np.asarray(result.thresholds), dict(result.fixed_effects),
            np.asarray(result.fixed_effects_cov), None if cholesky is None else
            {k: np.asarray(v) for k, v in cholesky.items()}, getattr(result, "n_evaluations", None))


def worker(datasets_path: str, output_path: str) -> None:
    """Time every group with the simdesign on PYTHONPATH; write mean CPU seconds per fit and the fingerprints.

    A simulated study is fitted as that revision's engine fits it (``clmm_native``'s ``_fit``: a table built
    first, or the study itself), a table with ``clmm.fit``.
    """
    from threadpoolctl import threadpool_limits

    from simdesign import clmm
    from simdesign.analyses.mixed_native import _fit as fit_study

    import inspect

    # one start, as revisions before the refit rule fit (and as clmm_native fits in simulations)
    single = {"starts": "single"} if "starts" in inspect.signature(clmm.fit).parameters else {}

    def fit(data, structure, reference):
        if isinstance(data, pd.DataFrame):
            return clmm.fit(data, structure, reference, **single)
        return fit_study(data, structure)  # the reference is the study's first system there too

    groups = pickle.loads(Path(datasets_path).read_bytes())
    seconds, prints = {}, {}
    with threadpool_limits(limits=1):
        for cases in groups.values():
            fit(*cases[0])  # imports, compilation
        for name, cases in groups.items():
            started = time.process_time()
            results = [fit(data, structure, reference) for data, structure, reference in cases]
            seconds[name] = (time.process_time() - started) / len(cases)
            prints[name] = [fingerprint(result) for result in results]
    Path(output_path).write_bytes(pickle.dumps({"seconds": seconds, "fingerprints": prints}))


def identical(first, second) -> bool:
    if isinstance(first, dict):
        return first.keys() == second.keys() and all(identical(first[k], second[k]) for k in first)
    if isinstance(first, (tuple, list)):
        return len(first) == len(second) and all(identical(a, b) for a, b in zip(first, second))
    if isinstance(first, np.ndarray):
        return first.shape == second.shape and np.array_equal(first, second, equal_nan=True)
    if isinstance(first, float):
        return first == second or (np.isnan(first) and np.isnan(second))
    return first == second


def run_version(package_root: Path, datasets_path: Path, output_path: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(package_root)}
    subprocess.run([sys.executable, __file__, "--worker", str(datasets_path), str(output_path)], check=True, env=env)
    return pickle.loads(output_path.read_bytes())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="43b2ebf", help="git revision to compare with (default: before issue "
                        "15's dimension tokens)")
    parser.add_argument("--per-design", type=int, default=1, help="simulated studies per Figure-5/7 design and task")
    parser.add_argument("--paper-repeats", type=int, default=3, help="fits of each paper data set and structure")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per version")
    parser.add_argument("--worker", nargs=2, metavar=("DATASETS", "OUTPUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(*args.worker)
        return 0

    commit = subprocess.run(["git", "-C", str(PROJECT_ROOT), "rev-parse", "--short=12", f"{args.baseline}^{{commit}}"],
                            check=True, capture_output=True, text=True).stdout.strip()
    export_directory = Path(tempfile.gettempdir()) / f"simdesign-bench-{commit}"  # a moving ref gets a new folder
    export_directory.mkdir(parents=True, exist_ok=True)
    baseline_root = export_revision(commit, export_directory)
    with tempfile.TemporaryDirectory() as work:
        datasets_path = Path(work) / "datasets.pkl"
        groups = make_datasets(args.per_design, args.paper_repeats)
        datasets_path.write_bytes(pickle.dumps(groups))
        print(f"baseline {args.baseline} = {commit} (exported to {baseline_root}) against this checkout; "
              f"{sum(map(len, groups.values()))} fits per version and round, {args.rounds} rounds; "
              f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start", flush=True)
        runs = {"baseline": [], "current": []}
        for round_index in range(args.rounds):
            for version, root in (("baseline", baseline_root), ("current", PROJECT_ROOT)):
                runs[version].append(run_version(root, datasets_path, Path(work) / f"{version}-{round_index}.pkl"))
            print(f"round {round_index + 1} done, load average {os.getloadavg()[0]:.2f}", flush=True)

    print(f"\n{'group':24s} {'fits':>5s} {'baseline ms':>12s} {'current ms':>11s} {'speed-up':>9s}  "
          "bit-identical (distinct data sets)  evaluations per fit (baseline, current)")
    for name, cases in groups.items():
        base = min(run["seconds"][name] for run in runs["baseline"])
        current = min(run["seconds"][name] for run in runs["current"])
        first_of_each = {}  # the paper's data sets are fitted several times: compare each once
        for index, (frame, structure, _) in enumerate(cases):
            first_of_each.setdefault((id(frame), structure), index)
        pairs = [(runs["baseline"][0]["fingerprints"][name][i], runs["current"][0]["fingerprints"][name][i])
                 for i in first_of_each.values()]
        same = sum(identical(a[:-1], b[:-1]) for a, b in pairs)  # the last entry: the evaluations
        evaluations = [np.mean([print_[-1] for print_ in version if print_[-1] is not None] or [np.nan])
                       for version in zip(*pairs)]
        print(f"{name:24s} {len(cases):5d} {1e3 * base:12.1f} {1e3 * current:11.1f} {base / current:9.2f}  "
              f"{same:>4d} of {len(pairs):<4d}{'':29s}{evaluations[0]:6.1f} {evaluations[1]:6.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
