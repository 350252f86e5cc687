"""Sizes and workers (issue 29): huge trial counts are planned lazily or refused, --jobs is capped at the
cores, and no local worker outlives a coordinator killed with SIGKILL."""
from __future__ import annotations

import logging
import os
import random
import signal
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest
import yaml

from simdesign.cli import main
from simdesign.runner.limits import MAX_TRIALS
from simdesign.runner.workers import available_cores, local_jobs
from simdesign.studies.rates.config import parse_config
from simdesign.studies.rates.engine import Chunk, _design_chunks, iter_chunks

ROOT = Path(__file__).resolve().parents[1]
SMALL = {"name": "small", "model": "coherence", "effect": "zero",
         "designs": [{"kind": "block", "blocks": 4, "docs_per_block": 5, "annotators_per_block": 3}],
         "tests": ["ttest_doc"], "trials": 20, "seed": 1}


def old_design_chunks(design, work, done, trials, chunk_size):
    """The planning rule as it was written before it was made lazy (one tuple per trial): the oracle."""
    missing_per_trial = [tuple(spec for spec in work if trial not in done.get(spec.label, ()))
                         for trial in range(trials)]
    chunks, start = [], 0
    while start < trials:
        wanted = missing_per_trial[start]
        stop = start + 1
        while stop < trials and stop - start < chunk_size and missing_per_trial[stop] == wanted:
            stop += 1
        if wanted:
            chunks.append(Chunk(design, start, stop, wanted))
        start = stop
    return chunks


def test_lazy_planning_cuts_the_chunks_the_old_rule_cut():
    config = parse_config({**SMALL, "tests": ["ttest_doc", "wilcoxon_doc", "art_doc"]})
    design, work = config.designs[0], tuple(config.work_specs)
    rng = random.Random(3)
    for _ in range(200):
        trials, chunk_size = rng.randint(1, 60), rng.randint(1, 12)
        done = {spec.label: {t for t in range(trials + 5) if rng.random() < rng.choice([0, 0.1, 0.5, 0.9])}
                for spec in work if rng.random() < 0.8}
        assert list(_design_chunks(design, work, done, trials, chunk_size)) == \
            old_design_chunks(design, work, done, trials, chunk_size)


def test_a_huge_trial_count_is_planned_with_flat_memory():
    """At the ceiling, the first chunks come at once and planning them allocates next to nothing."""
    config = parse_config({**SMALL, "trials": MAX_TRIALS})
    tracemalloc.start()
    started = time.perf_counter()
    chunks = iter_chunks(config, None, MAX_TRIALS)
    first = [next(chunks) for _ in range(1000)]
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert time.perf_counter() - started < 5
    assert peak < 5_000_000, peak  # a list of all trials would need gigabytes
    assert (first[0].first_trial, first[-1].stop_trial) == (0, 1000 * first[0].trials)


@pytest.mark.parametrize("option", [["--trials", "1000000000000"], []], ids=["--trials", "config"])
def test_a_trial_count_above_the_ceiling_is_refused_at_once(tmp_path, capsys, option):
    path = tmp_path / "huge.yaml"
    path.write_text(yaml.safe_dump({**SMALL, "trials": 100000000000000000000 if not option else 20}))
    started = time.perf_counter()
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--jobs", "1", "--quiet", *option]) == 2
    err = capsys.readouterr().err
    assert time.perf_counter() - started < 10
    size = "1,000,000,000,000" if option else "100,000,000,000,000,000,000"
    assert f"asks for {size} trials per cell; the ceiling is {MAX_TRIALS:,}" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.slow  # a second or more: the fast tier stays under a minute
def test_jobs_far_above_the_cores_are_capped_with_a_note(tmp_path, caplog):
    cores = available_cores()
    with caplog.at_level(logging.WARNING):
        assert local_jobs(100000) == cores
    assert f"--jobs 100000 is more than the {cores} core(s)" in caplog.text
    assert local_jobs(-1) == -1 and local_jobs(1) == 1
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(SMALL))
    caplog.clear()
    started = time.perf_counter()
    with caplog.at_level(logging.WARNING):
        assert main(["run", str(path), "--out", str(tmp_path / "out"), "--jobs", "99999", "--quiet"]) == 0
    assert time.perf_counter() - started < 60
    assert caplog.text.count(f"--jobs 99999 is more than the {cores} core(s)") == 1  # noted once
    assert f"using {cores} loky workers" in caplog.text


def children(pid: int) -> set[int]:
    """The processes whose parent is ``pid`` (from /proc)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.add(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("backend", ["loky", "fork"])
def test_no_local_worker_outlives_a_killed_coordinator(tmp_path, backend):
    path = tmp_path / "long.yaml"
    path.write_text(yaml.safe_dump({**SMALL, "trials": 2_000_000, "chunk_size": 50}))
    coordinator = subprocess.Popen(
        [sys.executable, "-c", "import sys; from simdesign.cli import main; sys.exit(main(sys.argv[1:]))", "run",
         str(path), "--out", str(tmp_path / "out"), "--jobs", "2", "--backend", backend, "--quiet"],
        env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not list((tmp_path / "out" / "trials").glob("*/*.parquet")):
            time.sleep(0.2)  # workers are computing once chunks appear
        workers = children(coordinator.pid)
        assert len(workers) >= 2, workers
        grandchildren = {pid for worker in workers for pid in children(worker)}
    finally:
        coordinator.send_signal(signal.SIGKILL)
        coordinator.wait()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(alive(pid) for pid in workers | grandchildren):
        time.sleep(0.1)
    left = sorted(pid for pid in workers | grandchildren if alive(pid))
    for pid in left:  # leave nothing behind whatever the outcome
        os.kill(pid, signal.SIGKILL)
    assert left == [], f"still alive 5 s after the coordinator was killed: {left}"


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_no_explorer_worker_outlives_a_killed_server():
    """The explorer's own worker pool (spawned processes) ends with its server, even one killed with SIGKILL."""
    pytest.importorskip("flask")
    server = subprocess.Popen(
        [sys.executable, "-c", "import sys; from simdesign.cli import main; sys.exit(main(sys.argv[1:]))", "explore",
         "--port", "0", "--workers", "2"],
        env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        workers: set[int] = set()
        while time.monotonic() < deadline and len(workers) < 2:
            time.sleep(0.3)  # the pool starts its workers while the server starts
            workers = {pid for pid in children(server.pid) if "python" in (Path("/proc") / str(pid) / "cmdline")
                       .read_bytes().decode(errors="replace")}
        assert len(workers) >= 2, workers
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(alive(pid) for pid in workers):
        time.sleep(0.1)
    left = sorted(pid for pid in workers if alive(pid))
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert left == [], f"explorer workers still alive 5 s after the server was killed: {left}"
