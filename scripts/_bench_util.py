"""Helpers shared by the clmm benchmark and comparison scripts (run as `python scripts/NAME.py`)."""
from __future__ import annotations

import subprocess
import sys
import time
import types
from pathlib import Path

# The R fits of the paper's data and simulated studies (scripts/clmm_fixture_data.py writes the data sets).
CLMM_FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "clmm_r"
# The designs of Steen & Markert (2021), Figures 5 and 7, as (blocks, docs_per_block, annotators_per_block):
# configs/paper_fig{5,7}_*.yaml, in their order.
FIGURE_DESIGNS = {
    "Figure 5": [(b, 100 // b, 3) for b in (1, 2, 4, 5, 10, 20, 25)],
    "Figure 7": [(b, 5, 1) for b in (3, 15, 30, 45, 60)] + [(b, 5, 3) for b in (1, 5, 10, 15, 20)],
}

# simdesign.clmm before issue 15: one module, simdesign/clmm.py, at this commit.
BASELINE_COMMIT = "d44f140"
BASELINE_PATH = "simdesign/clmm.py"


def export_package(revision: str, directory) -> Path:
    """The package ``simdesign`` of git revision ``revision`` exported under ``directory`` (once, so a kept
    directory keeps its kernel cache): a baseline that a benchmark or comparison imports through PYTHONPATH."""
    directory = Path(directory)
    if not (directory / "simdesign").is_dir():
        directory.mkdir(parents=True, exist_ok=True)
        root = Path(__file__).resolve().parents[1]
        archive = subprocess.run(["git", "-C", str(root), "archive", revision, "simdesign"], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(directory)], input=archive, check=True)
    return directory


def load_baseline():
    """simdesign.clmm before issue 15 (commit d44f140), read from the repository's history.

    Read with ``git show`` rather than kept as a copy, so the project holds one copy of the
    old code (its history). It imported ``simdesign.errors``, since moved to
    ``simdesign.core.errors``: that name is aliased for the old module. Needs a clone with
    history (``git fetch --unshallow`` in a shallow one).
    """
    root = Path(__file__).resolve().parents[1]
    try:
        source = subprocess.run(["git", "show", f"{BASELINE_COMMIT}:{BASELINE_PATH}"], cwd=root, check=True,
                                capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = getattr(exc, "stderr", "") or str(exc)
        sys.exit(f"The baseline (simdesign.clmm at commit {BASELINE_COMMIT}) is read from git history, which is "
                 f"not available here ({detail.strip()}); run in a full clone (git fetch --unshallow).")
    import simdesign.core.errors

    sys.modules.setdefault("simdesign.errors", simdesign.core.errors)
    module = types.ModuleType("clmm_baseline")
    module.__file__ = f"{BASELINE_COMMIT}:{BASELINE_PATH}"
    sys.modules["clmm_baseline"] = module
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module


def load_clmm_at(commit: str, name: str = "clmm_at_commit"):
    """The package ``simdesign.clmm`` as it was at ``commit``, read from git history, importable as ``name``.

    For benchmarks that compare the current fitter with an earlier one in the same process
    (after issue 15 the fitter is a package: every module is read and its imports of
    ``simdesign.clmm`` are pointed at ``name``). Shares the compiled kernels
    (``simdesign._clmm_numba``) with the current code.
    """
    import importlib
    import tempfile

    root = Path(__file__).resolve().parents[1]
    try:
        listing = subprocess.run(["git", "ls-tree", "--name-only", f"{commit}:simdesign/clmm"], cwd=root, check=True,
                                 capture_output=True, text=True).stdout.split()
        sources = {file: subprocess.run(["git", "show", f"{commit}:simdesign/clmm/{file}"], cwd=root, check=True,
                                        capture_output=True, text=True).stdout
                   for file in listing if file.endswith(".py")}
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = getattr(exc, "stderr", "") or str(exc)
        sys.exit(f"simdesign/clmm at commit {commit} is read from git history, which is not available here "
                 f"({detail.strip()}); run in a full clone (git fetch --unshallow).")
    folder = Path(tempfile.mkdtemp(prefix="clmm_at_")) / name
    folder.mkdir()
    for file, source in sources.items():
        (folder / file).write_text(source.replace("simdesign.clmm", name))
    sys.path.insert(0, str(folder.parent))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(folder.parent))


def timed(function, *args, **kwargs):
    """(wall seconds, CPU seconds of this process, result) of one call."""
    started, started_cpu = time.perf_counter(), time.process_time()
    result = function(*args, **kwargs)
    return time.perf_counter() - started, time.process_time() - started_cpu, result
