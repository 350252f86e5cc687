"""Every study kind on every backend, and SIGKILL/resume for every kind (issue 27): identical rows.

Slow tier: each kind runs with one worker, loky with two, threading, fork and one shared Dask
LocalCluster; a run killed with SIGKILL mid-way and resumed gives the rows of an uninterrupted run.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

import plugin_study_kind  # noqa: F401 -- registers the coin-flips kind
import simdesign
from simdesign.studies.kinds import DRIVERS  # and registers the built-in kinds
from simdesign.cli import main
from simdesign.runner.study import REGISTERED
from simdesign.testing import without_clock

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
# Every registered study kind's examples (StudyKind.examples), plug-ins included, and the drivers' (a sweep runs
# its runs' kinds): no hand-written list of kinds.
RUNNABLE = [*REGISTERED.values(), *DRIVERS.values()]
KINDS = {label: mapping for kind in RUNNABLE for label, mapping in kind.examples().items()}
MODULES = {label: type(kind).__module__ for kind in RUNNABLE for label in kind.examples()}
# Trials that make a run of an example last long enough to be killed mid-way (others: 25 times the example's).
KILL_TRIALS = {"rates": 1500, "rates-pairwise": 400, "replication": 600, "panels": 300, "metric-validation": 400,
               "crowd": 150, "tac": 200, "judge": 150, "coin-flips": 2000}
def rows_of(result) -> pd.DataFrame:
    """The per-trial rows (a sweep's: its summary) without wall-clock columns, in a fixed order."""
    return without_clock(result.rows).reset_index(drop=True)


@pytest.fixture(scope="module")
def dask_scheduler():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        yield cluster.scheduler_address


BACKENDS = [("loky", 2, {}), ("threading", 2, {}), ("fork", 2, {}), ("dask", 2, "shared")]


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_kind_gives_the_same_rows_on_every_backend(tmp_path, kind, dask_scheduler):
    mapping = KINDS[kind]
    reference = rows_of(simdesign.simulate(mapping, out_dir=tmp_path / "one", jobs=1, progress=False))
    assert len(reference)
    for backend, jobs, options in BACKENDS:
        options = {"scheduler": dask_scheduler} if options == "shared" else options
        result = simdesign.simulate(mapping, out_dir=tmp_path / backend, jobs=jobs, backend=backend,
                                    progress=False, **options)
        pd.testing.assert_frame_equal(rows_of(result), reference, obj=f"{kind} on {backend}")


def chunk_files(out: Path) -> list[Path]:
    return [p for p in out.rglob("*") if p.suffix in (".parquet", ".csv") and "trials" in p.parts or
            "chunks" in p.parts]


def test_every_registered_kind_has_an_example():
    assert sorted(kind.name for kind in REGISTERED.values() if not kind.examples()) == []


def _killed_mid_way(kind: str, path: Path, out: Path) -> bool:
    """Start ``simdesign run`` of the config at ``path`` and SIGKILL it once chunks appear; False if it ended."""
    process = subprocess.Popen(
        [sys.executable, "-c", f"import sys, {MODULES[kind]}; from simdesign.cli import main; "
         "sys.exit(main(sys.argv[1:]))", "run", str(path), "--out", str(out), "--jobs", "2", "--quiet"],
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and len(chunk_files(out)) < 3 and process.poll() is None:
        time.sleep(0.05)
    if process.poll() is not None:
        return False
    process.send_signal(signal.SIGKILL)
    process.wait()
    return True


@pytest.mark.parametrize("kind", [label for label in KINDS if "sweep" not in label])  # a sweep: its runs' kinds
def test_sigkill_then_resume_gives_the_rows_of_an_uninterrupted_run(tmp_path, kind):
    trials = KILL_TRIALS.get(kind, 25 * KINDS[kind]["trials"])
    for attempt in range(3):  # a run that ends before it is killed (a fast kind on an idle machine): a longer one
        mapping = {**KINDS[kind], "trials": trials * 4 ** attempt}
        path = tmp_path / f"config{attempt}.yaml"
        path.write_text(yaml.safe_dump(mapping, sort_keys=False))  # panels draw in their order: keep it
        out = tmp_path / f"killed{attempt}"
        if _killed_mid_way(kind, path, out):
            break
    else:
        pytest.fail(f"every run of {kind} ended before it could be killed, the last with {mapping['trials']} trials")
    # Resumed and clean runs on two workers (rows do not depend on the number: the backend test above)
    assert main(["run", str(path), "--out", str(out), "--jobs", "2", "--quiet"]) == 0  # resume
    resumed = rows_of(simdesign.simulate(path, out_dir=out, jobs=1, progress=False))  # reads, simulates nothing
    clean = rows_of(simdesign.simulate(path, out_dir=tmp_path / "clean", jobs=2, progress=False))
    pd.testing.assert_frame_equal(resumed, clean)
