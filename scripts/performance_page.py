"""Regenerate docs/performance.md: today's benchmarks, each against a baseline measured in the same run.

    .venv/bin/python scripts/performance_page.py [--quick] [--out docs/performance.md]

Runs the project's benchmarks one after the other (about 20-25 minutes on 2 idle cores; ``--quick`` runs
smaller versions in a few minutes, for checking the page itself) and writes one page with today's date, the
commit, the machine and the load average around each benchmark, and each benchmark's own output, whose
ratios compare this checkout with a baseline revision run in the same invocation. The figures'
regeneration timings come from ``docs/figure-regeneration.csv`` (written by whoever regenerates a figure:
wall and CPU seconds, commit, date, load), listed separately because a benchmark does not re-run them.
History lives in git and the CHANGELOG, not on this page.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]

# (title, what it answers, arguments, quick arguments)
BENCHMARKS = [
    ("Classical tests: the Figure-4 grid through the engine",
     "Trials per second of the paper's Figure-4 grid (8 designs x 4 tests x 10 pairs, 1000 ART resamples) "
     "with 2 workers, against the code before the classical speed-ups (issue 15's baseline revision).",
     ["scripts/bench_type1.py", "--trials", "1000", "--jobs", "2", "--repeats", "3"],
     ["scripts/bench_type1.py", "--trials", "100", "--jobs", "2", "--repeats", "1", "--per-test-trials", "0"]),
    ("Classical tests: CPU per trial, current vs plain numpy/scipy code",
     "CPU milliseconds per trial of the same grid in one process, against the plain code, with identical results.",
     ["scripts/bench_classical.py", "--trials", "200", "--repeats", "2"],
     ["scripts/bench_classical.py", "--trials", "20", "--repeats", "1"]),
    ("The native mixed model on the paper's data",
     "Seconds per `clmm_native` fit of the paper's 1500 judgements (maximal and intercepts structures), "
     "against the implementation before the compiled kernels, one thread.",
     ["scripts/bench_clmm.py", "--no-r", "--repeats", "5"],
     ["scripts/bench_clmm.py", "--no-r", "--repeats", "1"]),
    ("The native mixed model on the Figure-5/7 designs",
     "Mean seconds per fit on simulated studies of every Figure-5/7 design, both tasks, against the same "
     "baseline, and the figures' fitting time projected on 2 cores.",
     ["scripts/bench_figures.py", "--per-design", "3"],
     ["scripts/bench_figures.py", "--per-design", "1"]),
    ("The native mixed model per simulated study",
     "Milliseconds per simulated study (data generation, fit and the default test) of `clmm_native` on the paper's "
     "3-annotator x 100-document crossed design, intercepts and maximal structures, through the engine's chunk "
     "function, one thread, interleaved with the code before issue 41's speed-ups (same results: "
     "scripts/check_clmm_equal.py).",
     ["scripts/bench_clmm_study.py", "--trials", "40", "--rounds", "3"],
     ["scripts/bench_clmm_study.py", "--trials", "10", "--rounds", "1"]),
    ("Kenward-Roger df for lmer (R)",
     "Seconds per Kenward-Roger adjusted covariance of a maximal lmer fit on 1500 judgements (3, 6 and 15 crossed "
     "annotators), simdesign's computation through the random effects' design against pbkrtest::vcovAdj on the "
     "same fit, with the largest relative differences of the covariance and the df. Needs R and pbkrtest.",
     ["scripts/bench_kenward_roger.py", "--blocks", "1", "2", "5"],
     ["scripts/bench_kenward_roger.py", "--blocks", "5"]),
    ("The native linear mixed model against lmer (R)",
     "Milliseconds per simulated study (generation included) of `lmm_native` and `lmer` (lme4 and lmerTest "
     "through R, the baseline), both with Satterthwaite df, on the paper's 3-annotator x 100-document crossed "
     "design, intercepts and maximal structures, one thread, interleaved; without R, lmm_native alone.",
     ["scripts/bench_lmm_native.py", "--studies", "20", "--repeats", "3"],
     ["scripts/bench_lmm_native.py", "--studies", "3", "--repeats", "1"]),
    ("Against MCPower, the fastest peer",
     "Milliseconds per simulated study (generation included), one thread each, of `lmm_native` and "
     "`clmm_native` against MCPower's crossed linear mixed model (MCPower 1.4.1 run from a throwaway venv named "
     "by MCPOWER_PYTHON, default /tmp/mcp/bin/python, never a dependency; without it simdesign alone), on the "
     "crossed intercepts, one-random-slope and nested designs of issue 41, with the ratios and the power both "
     "tools give on the linear model.",
     ["scripts/bench_peers.py", "--repeats", "3"],
     ["scripts/bench_peers.py", "--repeats", "1", "--seconds", "0.3", "--no-power"]),
]


def machine() -> str:
    model = "unknown CPU"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    memory = ""
    meminfo = Path("/proc/meminfo")
    if meminfo.exists():
        kib = int(meminfo.read_text().split()[1])
        memory = f", {kib / 2**20:.0f} GiB"
    return f"{os.cpu_count()} cores ({model}){memory}, {platform.system()} {platform.release()}, Python {platform.python_version()}"


def load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                           text=True).stdout.strip()
    return done.stdout.strip() + (" (with uncommitted changes)" if dirty else "")


def run_benchmark(arguments: list[str]) -> tuple[str, float, str, str]:
    before = load()
    start = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, *arguments], cwd=ROOT, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    output = done.stdout.strip()
    if done.returncode != 0:
        output += f"\n\n[exit code {done.returncode}]\n" + done.stderr.strip()[-3000:]
    return output, seconds, before, load()


def regeneration_section() -> list[str]:
    table = ROOT / "docs" / "figure-regeneration.csv"
    lines = ["## Regenerating the committed figures", ""]
    if not table.exists():
        return lines + ["No regeneration has been recorded (`docs/figure-regeneration.csv`).", ""]
    frame = pd.read_csv(table, keep_default_na=False)
    lines += ["The last regeneration of each figure from a fresh store (`simdesign run CONFIG --jobs 2`), as "
              "recorded by whoever ran it; not re-run by this page's command.", "",
              "| " + " | ".join(frame.columns) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(str(value) for value in row) + " |" for row in frame.itertuples(index=False)]
    return lines + [""]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small versions of every benchmark (checks the page)")
    parser.add_argument("--out", default=str(ROOT / "docs" / "performance.md"))
    args = parser.parse_args(argv)

    started = datetime.datetime.now(datetime.timezone.utc)
    lines = ["# Performance", "",
             f"Generated by `python scripts/performance_page.py{' --quick' if args.quick else ''}` on "
             f"{started:%Y-%m-%d %H:%M} UTC at commit {commit()}.", "",
             f"Machine: {machine()}. Load average (1, 5, 15 min) at the start: {load()}.", "",
             "Every benchmark runs this checkout's code and a baseline revision in the same invocation, one after "
             "the other, so the ratios are the numbers to compare across machines and days; absolute seconds "
             "depend on the machine and its load. Numbers from earlier days are in git history, not here.", ""]
    for title, answers, full, quick in BENCHMARKS:
        arguments = quick if args.quick else full
        print(f"[performance] {title}: python {' '.join(arguments)}", flush=True)
        output, seconds, before, after = run_benchmark(arguments)
        lines += [f"## {title}", "", answers, "",
                  f"`python {' '.join(arguments)}`: {seconds:.0f} s, load average {before} before and {after} after.",
                  "", "```text", output, "```", ""]
    lines += regeneration_section()
    Path(args.out).write_text("\n".join(lines).rstrip() + "\n")
    print(f"[performance] wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
